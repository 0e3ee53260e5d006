"""A namespace of a connected controller, and block I/O on it."""
from __future__ import annotations

import collections
import ctypes
from typing import Any, List, Optional, Sequence

from . import _io, _lib
from . import _structs as S
from .errors import from_code
from .memory import MemoryRegion, _index

NamespaceInfo = collections.namedtuple(
    "NamespaceInfo", "nsid size capacity utilization lba_size metadata_size nguid eui64")
NamespaceInfo.__doc__ = """Identify Namespace, as the library read it at connect:
size, capacity, utilization in logical blocks (NSZE, NCAP, NUSE); lba_size and
metadata_size (bytes per block); nguid, eui64 (bytes)."""

ZnsInfo = collections.namedtuple(
    "ZnsInfo", "zoned zone_size nr_zones max_open max_active zasl_bytes zoc ozcs")
ZnsInfo.__doc__ = """A namespace's Zoned Namespace data (nvmeof_zns_info): zoned (its
command set is CSI 02h); zone_size in blocks, nr_zones; max_open and
max_active (0: no limit); zasl_bytes, the controller's Zone Append Size Limit
(0: the transfer limit applies); zoc, ozcs."""
Zone = collections.namedtuple("Zone", "slba wp capacity state type attrs")
Zone.__doc__ = """A zone as Report Zones describes it: slba (its first block), wp
(the write pointer), capacity (blocks), state ("EMPTY", "IMP_OPENED",
"EXP_OPENED", "CLOSED", "READONLY", "FULL", "OFFLINE", as nvme-cli names them),
type (2: sequential write required), attrs."""
ZONE_STATES = {"all": 0, "empty": 1, "imp_opened": 2, "exp_opened": 3, "closed": 4, "full": 5,
               "readonly": 6, "offline": 7}
_ZSA = {"close": 1, "finish": 2, "open": 3, "reset": 4, "offline": 5}

MAX_NLB = 0xFFFFFFFF  # the library's nlb is a 32-bit count; it splits at MDTS


def check_io(lba_size, nsze, region_len, slba, blocks, buffer_offset):
    """Validates one block transfer before anything is sent; returns blocks
    (the whole rest of the region from buffer_offset when blocks is None).
    TypeError for a non-integer, ValueError for a range outside the
    namespace or the region."""
    slba = _index(slba, "slba")
    off = _index(buffer_offset, "buffer_offset")
    if slba < 0:
        raise ValueError("nvmeof: slba must be >= 0, not %d" % slba)
    if off < 0 or off > region_len:
        raise ValueError("nvmeof: buffer_offset %d is outside the %d-byte buffer" % (off, region_len))
    if blocks is None:
        avail = region_len - off
        if avail == 0 or avail % lba_size:
            raise ValueError("nvmeof: the buffer's %d bytes from offset %d are not a whole number of "
                             "%d-byte blocks; pass blocks=" % (avail, off, lba_size))
        blocks = avail // lba_size
    else:
        blocks = _index(blocks, "blocks")
        if blocks <= 0 or blocks > MAX_NLB:
            raise ValueError("nvmeof: blocks must be 1..%d, not %d" % (MAX_NLB, blocks))
        if blocks * lba_size > region_len - off:
            raise ValueError("nvmeof: %d blocks of %d B at buffer_offset %d overrun the %d-byte buffer"
                             % (blocks, lba_size, off, region_len))
    if slba + blocks > nsze:
        raise ValueError("nvmeof: blocks %d..%d are past the end of the namespace (%d blocks)"
                         % (slba, slba + blocks - 1, nsze))
    return blocks


class Namespace:
    """An active namespace of a controller (Controller.namespace(nsid)).

    controller, nsid, lba_size (bytes per logical block), info
    (NamespaceInfo); read, write, flush, read_many and write_many run on
    queue: the controller's own I/O queue, or the one Queue.namespace()
    gave it. Buffers are registered regions of the same controller
    (Controller.allocate, register, register_gpu)."""

    def __init__(self, controller: Any, ns_ptr: Any, queue: Any = None) -> None:
        self.controller = controller
        self.queue = queue
        self._ns = ns_ptr
        n = ns_ptr.contents
        self.nsid = n.nsid
        self.lba_size = n.lba_size
        self.info = NamespaceInfo(n.nsid, n.nsze, n.ncap, n.nuse, n.lba_size, n.ms,
                                  bytes(n.nguid), bytes(n.eui64))

    def __repr__(self) -> str:
        return "<nvmeof.Namespace nsid %d: %d blocks of %d B>" % (self.nsid, self.info.size, self.lba_size)

    def _op(self, kind, buffer, slba, blocks, buffer_offset):
        if not isinstance(buffer, MemoryRegion):
            raise TypeError("nvmeof: %s needs a registered region (Controller.allocate, register or "
                            "register_gpu), not %s" % (kind, type(buffer).__name__))
        if buffer.closed:
            raise ValueError("nvmeof: %s: the memory region is closed" % kind)
        if buffer.controller is not self.controller:
            raise ValueError("nvmeof: %s: the memory region is registered with another controller" % kind)
        nlb = check_io(self.lba_size, self.info.size, buffer.length, slba, blocks, buffer_offset)
        return _io.Op(kind, self._ns, self.nsid, int(slba), nlb, buffer, int(buffer_offset))

    def _q(self):
        return self.queue if self.queue is not None else self.controller._default_queue()

    def _run(self, ops):
        return self._q()._run(ops)

    def read(self, buffer: MemoryRegion, slba: int, blocks: Optional[int] = None, *,
             buffer_offset: int = 0) -> None:
        """Reads blocks logical blocks from slba into buffer at buffer_offset;
        blocks=None: as many as fill the buffer from buffer_offset. Above
        MDTS the library splits it; every piece lands in place. For GPU
        memory, completed GPUDirect writes are flushed before it returns."""
        self._run([self._op(_io.READ, buffer, slba, blocks, buffer_offset)])

    def write(self, buffer: MemoryRegion, slba: int, blocks: Optional[int] = None, *,
              buffer_offset: int = 0) -> None:
        """Writes from buffer at buffer_offset to slba; as read(). For GPU
        memory, the owning CUDA context is synchronized first."""
        self._run([self._op(_io.WRITE, buffer, slba, blocks, buffer_offset)])

    def flush(self) -> None:
        """NVMe Flush: the target commits volatile data to media."""
        self.controller._check_open()
        self._run([_io.Op(_io.FLUSH, self._ns, self.nsid)])

    def _many(self, kind, requests):
        ops = []
        for i, r in enumerate(requests):
            if not isinstance(r, (tuple, list)) or not 2 <= len(r) <= 4:
                raise TypeError("nvmeof: %s_many request %d must be (buffer, slba[, blocks[, "
                                "buffer_offset]]), not %r" % (kind, i, r))
            buffer, slba = r[0], r[1]
            blocks = r[2] if len(r) > 2 else None
            off = r[3] if len(r) > 3 else 0
            try:
                ops.append(self._op(kind, buffer, slba, blocks, off))
            except (TypeError, ValueError) as e:
                raise type(e)("%s (%s_many request %d)" % (e, kind, i)) from None
        if ops:
            self._run(ops)

    def read_many(self, requests: Sequence[Sequence[Any]]) -> None:
        """Reads every (buffer, slba, blocks, buffer_offset) of requests
        (blocks and buffer_offset optional, as in read()). All are checked
        first, then submitted together and posted with one doorbell, and all
        are waited for; the first failure is raised after every request
        finished. Nothing is sent if any request is invalid."""
        self._many(_io.READ, requests)

    def write_many(self, requests: Sequence[Sequence[Any]]) -> None:
        """As read_many(), writing."""
        self._many(_io.WRITE, requests)

    # ---- zoned namespaces ----
    def zns_info(self) -> ZnsInfo:
        """The Zoned Namespace Identify data (admin queue); zoned False for a
        namespace of the NVM command set. Also what lets append() check the
        controller's Zone Append Size Limit."""
        self.controller._check_open()
        lib = _lib.load()
        z = S.ZnsInfo()
        rc = lib.nvmeof_zns_info(self.controller._h, self.nsid, ctypes.byref(z))
        if rc:
            raise from_code(rc, _lib.errmsg())
        self._zns = ZnsInfo(bool(z.zoned), z.zone_size, z.nr_zones, z.max_open, z.max_active, z.zasl_bytes,
                            z.zoc, z.ozcs)
        return self._zns

    def _zoned(self) -> ZnsInfo:
        z = getattr(self, "_zns", None) or self.zns_info()
        if not z.zoned:
            raise ValueError("nvmeof: namespace %d is not zoned (its command set is not CSI 02h)" % self.nsid)
        return z

    def zones(self, slba: int = 0, *, state: Any = "all", max_zones: Optional[int] = None,
              partial: bool = False) -> List[Zone]:
        """Report Zones from the zone holding slba: every zone, or those in
        state ("empty", "imp_opened", "exp_opened", "closed", "full",
        "readonly", "offline", or the reporting option's number), at most
        max_zones (default: every zone of the namespace). One command
        carries what fits the controller's MDTS; the library asks again
        from the zone after the last one returned until it has them all
        (nvmeof_zone_report_all)."""
        z = self._zoned()
        slba = _index(slba, "slba")
        f = ZONE_STATES.get(state, state) if isinstance(state, str) else _index(state, "state")
        if not isinstance(f, int) or not 0 <= f <= 7:
            raise ValueError("nvmeof: zones: state %r is none of %s or 0..7" % (state, ", ".join(ZONE_STATES)))
        n = z.nr_zones if max_zones is None else _index(max_zones, "max_zones")
        if n <= 0:
            raise ValueError("nvmeof: zones: max_zones must be at least 1")
        out = (S.Zone * n)()
        got, total = ctypes.c_uint32(0), ctypes.c_uint64(0)
        lib = _lib.load()

        def call(h):
            return lib.nvmeof_zone_report_all(h, self._ns, z.zone_size, slba, f, bool(partial), out, n,
                                              ctypes.byref(got), ctypes.byref(total), 0)
        rc = self._q()._call(call)
        if rc:
            raise from_code(rc, _lib.errmsg())
        return [Zone(d.zslba, d.wp, d.zcap, lib.nvmeof_zone_state_str(d.state).decode(), d.type, d.attrs)
                for d in out[:got.value]]

    def _zone_send(self, action, slba, select_all):
        self._zoned()
        slba = _index(slba, "slba")
        lib = _lib.load()
        rc = self._q()._call(lambda h: lib.nvmeof_zone_mgmt_send_sync(h, self._ns, slba, _ZSA[action],
                                                                      bool(select_all), 0))
        if rc:
            raise from_code(rc, _lib.errmsg())

    def zone_reset(self, slba: int = 0, *, all: bool = False) -> None:
        """Zone Management Send, reset: the zone at slba, or every zone (all=True)."""
        self._zone_send("reset", slba, all)

    def zone_open(self, slba: int = 0, *, all: bool = False) -> None:
        """Zone Management Send, open (all=True: every closed zone)."""
        self._zone_send("open", slba, all)

    def zone_close(self, slba: int = 0, *, all: bool = False) -> None:
        """Zone Management Send, close (all=True: every open zone)."""
        self._zone_send("close", slba, all)

    def zone_finish(self, slba: int = 0, *, all: bool = False) -> None:
        """Zone Management Send, finish (all=True: every open or closed zone)."""
        self._zone_send("finish", slba, all)

    def append(self, buffer: MemoryRegion, zslba: int, blocks: Optional[int] = None, *,
               buffer_offset: int = 0) -> int:
        """Zone Append of blocks from buffer at buffer_offset to the zone
        starting at zslba; returns the LBA the controller wrote them at. One
        command, never split: above the Zone Append Size Limit it is refused."""
        self._zoned()
        op = self._op(_io.APPEND, buffer, zslba, blocks, buffer_offset)
        cpl = self._run([op])[0]
        return cpl.cdw0 | cpl.cdw1 << 32
