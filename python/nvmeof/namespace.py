"""A namespace of a connected controller, and block I/O on it."""
from __future__ import annotations

import collections
from typing import Any, Optional, Sequence

from . import _io
from .memory import MemoryRegion, _index

NamespaceInfo = collections.namedtuple(
    "NamespaceInfo", "nsid size capacity utilization lba_size metadata_size nguid eui64")
NamespaceInfo.__doc__ = """Identify Namespace, as the library read it at connect:
size, capacity, utilization in logical blocks (NSZE, NCAP, NUSE); lba_size and
metadata_size (bytes per block); nguid, eui64 (bytes)."""

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

    def _run(self, ops):
        q = self.queue if self.queue is not None else self.controller._default_queue()
        q._run(ops)

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
