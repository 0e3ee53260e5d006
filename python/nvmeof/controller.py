"""A connected NVMe/RDMA controller and its I/O queues.

Every option left at None takes the library's default (nvmeof_ctrl_opts_init,
nvmeof_queue_opts_init); connect_defaults() shows them. The binding repeats
none of them, so a default changed in the library is the default here.
"""
from __future__ import annotations

import collections
import ctypes
import threading
from ctypes import byref, c_void_p
from typing import Any, Dict, List, Optional, Union

from . import _io, _lib
from . import _structs as S
from .errors import BusyError, InvalidArgumentError, from_code
from .memory import GpuMemory, HostMemory, RegisteredMemory, check_length, cuda_buffer, host_buffer
from .namespace import Namespace

ControllerInfo = collections.namedtuple("ControllerInfo", [f[0] for f in S.CtrlInfo._fields_])
ControllerInfo.__doc__ = "struct nvmeof_ctrl_info (core/include/nvmeof.h), field for field."

QueueStats = collections.namedtuple("QueueStats", [f[0] for f in S.QueueStats._fields_])
QueueStats.__doc__ = "struct nvmeof_queue_stats: commands, in-capsule, doorbells, ..."

# Margin over the command timeout before a wait gives up: the library
# completes a command that ran past it within about 100 ms.
_STALL_MARGIN_MS = 1000


def _check(rc: int, what: Optional[str] = None) -> int:
    if rc < 0:
        msg = _lib.errmsg()
        raise from_code(rc, "%s: %s" % (what, msg) if what else msg)
    return rc


_SECRET_PREFIXES = ("dhhc-1", "nvmetlskey-1")


def _shown(v):
    """What a message may show of a value: its repr, or a placeholder when
    it may be a secret given in the wrong place (a secret's prefix, in any
    case, or longer than any legal value of a keyword shown this way)."""
    if isinstance(v, (str, bytes)):
        t = v.lower() if isinstance(v, str) else v.decode("latin-1").lower()
        if any(p in t for p in _SECRET_PREFIXES):
            return "<a secret, not shown>"
        if len(v) > 32:
            return "<a value too long to show>"
    return repr(v)


def _text(v, name, optional=False):
    if v is None and optional:
        return None
    if not isinstance(v, str) or not v:
        raise TypeError("nvmeof: %s must be a non-empty str, not %s" % (name, _shown(v)))
    if "\0" in v:
        raise ValueError("nvmeof: %s contains a NUL character" % name)
    return v.encode()


def _uint(v, name, lo, hi):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("nvmeof: %s must be an int, not %s" % (name, _shown(v)))
    if not lo <= v <= hi:
        raise ValueError("nvmeof: %s must be %d..%d, not %d" % (name, lo, hi, v))
    return v


def _library_ctrl_opts() -> S.CtrlOpts:
    """struct nvmeof_ctrl_opts as the library's nvmeof_ctrl_opts_init fills it."""
    o = S.CtrlOpts()
    _lib.load().nvmeof_ctrl_opts_init_sz(byref(o), ctypes.sizeof(o))
    return o


def connect_defaults() -> Dict[str, Any]:
    """What Controller() uses for each keyword left at None: the library's
    defaults (nvmeof_ctrl_opts_init), under the binding's names and units
    (port as int, timeout in seconds)."""
    o = _library_ctrl_opts()
    return {"port": int(o.trsvcid), "source": None, "host_nqn": None, "host_id": None,
            "queue_depth": o.queue_depth, "keep_alive_ms": o.kato_ms, "timeout": o.cmd_timeout_ms / 1000.0}


def connect_options(host: str, subsystem_nqn: str, port: Union[int, str, None] = None,
                    source: Optional[str] = None, host_nqn: Optional[str] = None,
                    host_id: Optional[str] = None, queue_depth: Optional[int] = None,
                    keep_alive_ms: Optional[int] = None, timeout: Optional[float] = None,
                    opts: Optional[S.CtrlOpts] = None, dhchap_secret: Optional[str] = None,
                    dhchap_ctrl_secret: Optional[str] = None,
                    allow_unauthenticated_ctrl: Optional[bool] = None,
                    dhchap_hashes: Optional[str] = None,
                    dhchap_dhgroups: Optional[str] = None, transport: Optional[str] = None,
                    hdr_digest: Optional[bool] = None, data_digest: Optional[bool] = None,
                    tcp_priority: Optional[int] = None, tcp_tos: Optional[int] = None,
                    tcp_busy_poll_us: Optional[int] = None, tcp_zerocopy: Optional[int] = None,
                    disable_sqflow: Optional[bool] = None, tls: Optional[bool] = None,
                    tls_key: Optional[str] = None, tls_keyring: Optional[str] = None,
                    tls_identity: Optional[int] = None, tls_compat: Optional[bool] = None) -> S.CtrlOpts:
    """Checks the arguments of Controller() and fills struct nvmeof_ctrl_opts:
    opts, or the library's defaults (nvmeof_ctrl_opts_init), with only the
    arguments that are not None put over them. Raises TypeError/ValueError
    before anything touches the network."""
    o = _library_ctrl_opts() if opts is None else opts
    o.traddr = _text(host, "host")
    o.subnqn = _text(subsystem_nqn, "subsystem_nqn")
    if port is not None:
        if isinstance(port, str) and port.isdigit():
            port = int(port)
        o.trsvcid = str(_uint(port, "port", 1, 65535)).encode()
    if source is not None:
        o.src_addr = _text(source, "source")
    if host_nqn is not None:
        o.hostnqn = _text(host_nqn, "host_nqn")
    if host_id is not None:
        o.hostid = _text(host_id, "host_id")
    if queue_depth is not None:
        o.queue_depth = _uint(queue_depth, "queue_depth", 1, 65535)
    if keep_alive_ms is not None:
        o.kato_ms = _uint(keep_alive_ms, "keep_alive_ms", 0, 0xFFFFFFFF)
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < 4e6:
            raise ValueError("nvmeof: timeout must be a positive number of seconds, not %s" % _shown(timeout))
        o.cmd_timeout_ms = max(1, int(timeout * 1000))
        # each connection step: the library's own limit, or less when timeout is shorter
        o.connect_timeout_ms = min(o.connect_timeout_ms, o.cmd_timeout_ms)
    if dhchap_secret is not None:
        o.dhchap_secret = _secret(dhchap_secret, "dhchap_secret")
    if dhchap_ctrl_secret is not None:
        o.dhchap_ctrl_secret = _secret(dhchap_ctrl_secret, "dhchap_ctrl_secret")
    if allow_unauthenticated_ctrl is not None:
        if not isinstance(allow_unauthenticated_ctrl, bool):
            raise TypeError("nvmeof: allow_unauthenticated_ctrl must be True or False")
        o.allow_unauthenticated_ctrl = allow_unauthenticated_ctrl
    # the library checks the names (and says which one it does not know)
    if dhchap_hashes is not None:
        o.dhchap_hashes = _text(dhchap_hashes, "dhchap_hashes")
    if dhchap_dhgroups is not None:
        o.dhchap_dhgroups = _text(dhchap_dhgroups, "dhchap_dhgroups")
    if transport is not None:
        if not isinstance(transport, str) or transport.lower() not in ("rdma", "tcp"):
            raise ValueError("nvmeof: transport must be 'rdma' or 'tcp', not %s" % _shown(transport))
        o.trtype = transport.lower().encode()
    if tls_key is not None:
        o.tls_key = _secret(tls_key, "tls_key", "a TLS PSK, NVMeTLSkey-1:HH:<base64>:")
        o.tls = True  # a key implies TLS, as nvme-cli's --tls-key
    if tls_keyring is not None:
        o.tls_keyring = _text(tls_keyring, "tls_keyring")
        o.tls = True
    if tls_identity is not None:
        o.tls_identity = _uint(tls_identity, "tls_identity", 0, 1)
    for name, v in (("hdr_digest", hdr_digest), ("data_digest", data_digest), ("disable_sqflow", disable_sqflow),
                    ("tls", tls), ("tls_compat", tls_compat)):
        if v is not None:
            if not isinstance(v, bool):
                raise TypeError("nvmeof: %s must be True or False" % name)
            setattr(o, name, v)
    # NVMe/TCP's socket options, as the C library and the engine take them
    # (the library refuses them over RDMA, and a value the kernel refuses)
    for name, v, lo, hi in (("tcp_priority", tcp_priority, -1, 15), ("tcp_tos", tcp_tos, -1, 255),
                            ("tcp_busy_poll_us", tcp_busy_poll_us, 0, 1000000),
                            ("tcp_zerocopy", tcp_zerocopy, 0, 1 << 30)):
        if v is not None:
            setattr(o, name, _uint(v, name, lo, hi))
    return o


def _secret(v, name, form="a DHHC-1:XX:<base64>: secret"):
    # the library checks the form (CRC included); here only the type,
    # and never the value in the message
    if not isinstance(v, str) or not v or "\0" in v:
        raise TypeError("nvmeof: %s must be %s (a non-empty str without NUL)" % (name, form))
    return v.encode()


class Controller:
    """A connected NVMe/RDMA controller: Controller(host, subsystem_nqn, ...)
    connects (RDMA CM, Fabrics Connect, enable, Identify); use it in a with
    block, or call close().

        with nvmeof.Controller("192.0.2.20", "nqn.2026-07.io.example:storage") as c:
            ns = c.namespace(1)
            with c.allocate(128 * 4096) as buf:
                ns.read(buf, slba=0, blocks=128)

    host, subsystem_nqn: the target's address and subsystem NQN.
    Keywords (None: the library's default, see nvmeof.connect_defaults()):
      port           the target's port (trsvcid)
      source         a local address: chooses the RDMA device (HCA)
      host_nqn, host_id   this host's identity (default /etc/nvme/hostnqn,
                     /etc/nvme/hostid, else one per process)
      queue_depth    commands in flight per queue (capped by the controller)
      keep_alive_ms  KATO (the library's default 5000; 0: none); a library
                     thread sends Keep Alive at half of it
      timeout        seconds: each command's timeout, and each connection
                     step's when shorter than the library's own limit
      dhchap_secret  the host's DH-HMAC-CHAP secret, DHHC-1:XX:<base64>: as
                     nvme gen-dhchap-key makes it: in-band authentication,
                     used when the target asks for it
      dhchap_ctrl_secret  the controller's secret: the controller proves it
                     too (bidirectional), also when it does not ask for
                     authentication (the host then starts the transaction,
                     and the connect fails when the controller cannot
                     prove it); needs dhchap_secret
      allow_unauthenticated_ctrl  True: accept a controller that does not
                     require authentication without authenticating it
      dhchap_hashes, dhchap_dhgroups  what the host offers, comma-separated
                     ("sha384,sha512"; "ffdhe3072,ffdhe4096"); default all
      transport      "rdma" (the default) or "tcp" (NVMe/TCP; any case)
      hdr_digest, data_digest  NVMe/TCP's header and data digests (CRC32C)
      tcp_priority, tcp_tos, tcp_busy_poll_us, tcp_zerocopy  NVMe/TCP's
                     socket options, as nvmeof_ctrl_opts has them:
                     SO_PRIORITY (0-15), IP_TOS/IPV6_TCLASS (0-255),
                     SO_BUSY_POLL (above 0: each read polls the NIC once),
                     MSG_ZEROCOPY for writes of at least this many bytes;
                     None (and -1 for the first two): the system's
      disable_sqflow NVMe/TCP: True asks every queue's Connect for SQ flow
                     control off (nvme-cli's --disable-sqflow): a read then
                     completes with its data PDU alone, no response capsule
      tls_key        NVMe/TCP over TLS 1.3: the PSK as nvme gen-tls-key prints
                     it (NVMeTLSkey-1:01:<base64>: or 02); implies tls=True
      tls_keyring    the PSK from this kernel keyring instead (".nvme", where
                     nvme gen-tls-key --insert puts it) when no tls_key is
                     given; implies tls=True
      tls_identity   the PSK identity offered: 0 (NVMe0R..., default) or 1
                     (NVMe1R... with the PSK's digest)
      tls_compat     True: derive the TLS PSK from tls_key as nvme-cli up to
                     2.14 did (its --compat)
      tls            True: TLS (needs tls_key or tls_keyring)
    Controller.connect(...) is the same call."""

    def __init__(self, host: str, subsystem_nqn: str, *, port: Union[int, str, None] = None,
                 source: Optional[str] = None, host_nqn: Optional[str] = None,
                 host_id: Optional[str] = None, queue_depth: Optional[int] = None,
                 keep_alive_ms: Optional[int] = None, timeout: Optional[float] = None,
                 dhchap_secret: Optional[str] = None, dhchap_ctrl_secret: Optional[str] = None,
                 allow_unauthenticated_ctrl: Optional[bool] = None, dhchap_hashes: Optional[str] = None,
                 dhchap_dhgroups: Optional[str] = None, transport: Optional[str] = None,
                 hdr_digest: Optional[bool] = None, data_digest: Optional[bool] = None,
                 tcp_priority: Optional[int] = None, tcp_tos: Optional[int] = None,
                 tcp_busy_poll_us: Optional[int] = None, tcp_zerocopy: Optional[int] = None,
                 disable_sqflow: Optional[bool] = None, tls: Optional[bool] = None,
                 tls_key: Optional[str] = None, tls_keyring: Optional[str] = None,
                 tls_identity: Optional[int] = None, tls_compat: Optional[bool] = None) -> None:
        lib = _lib.load()
        o = connect_options(host, subsystem_nqn, port, source, host_nqn, host_id, queue_depth,
                            keep_alive_ms, timeout, dhchap_secret=dhchap_secret,
                            dhchap_ctrl_secret=dhchap_ctrl_secret,
                            allow_unauthenticated_ctrl=allow_unauthenticated_ctrl,
                            dhchap_hashes=dhchap_hashes, dhchap_dhgroups=dhchap_dhgroups,
                            transport=transport, hdr_digest=hdr_digest, data_digest=data_digest,
                            tcp_priority=tcp_priority, tcp_tos=tcp_tos, tcp_busy_poll_us=tcp_busy_poll_us,
                            tcp_zerocopy=tcp_zerocopy, disable_sqflow=disable_sqflow, tls=tls,
                            tls_key=tls_key, tls_keyring=tls_keyring, tls_identity=tls_identity,
                            tls_compat=tls_compat)
        h = c_void_p()
        _check(lib.nvmeof_ctrl_connect(byref(o), byref(h)))
        self._h = h.value
        self._opts = o  # keeps the strings it points at alive
        self._lock = threading.RLock()
        self._default = None   # the controller's own I/O queue, made on first use
        self._queues = {}      # id -> Queue made by queue()
        self._regions = {}     # id -> registered MemoryRegion
        self.timeout: float = o.cmd_timeout_ms / 1000.0
        self._stall_ms = o.cmd_timeout_ms + _STALL_MARGIN_MS
        self.host, self.subsystem_nqn, self.port = host, subsystem_nqn, int(o.trsvcid)

    @classmethod
    def connect(cls, host: str, subsystem_nqn: str, **kwargs: Any) -> "Controller":
        """The same as Controller(host, subsystem_nqn, **kwargs)."""
        return cls(host, subsystem_nqn, **kwargs)

    def __enter__(self) -> "Controller":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<nvmeof.Controller %s:%s %s%s>" % (self.host, self.port, self.subsystem_nqn,
                                                   " closed" if self.closed else "")

    @property
    def closed(self) -> bool:
        """True once close() returned."""
        return self._h is None

    def _check_open(self):
        if self._h is None:
            raise ValueError("nvmeof: the controller is closed")

    def close(self) -> None:
        """Shuts the controller down and disconnects. Raises BusyError, and
        changes nothing, while regions or queue() queues remain open."""
        with self._lock:
            if self._h is None:
                return
            if self._queues or self._regions:
                # The library would refuse too, but only after our own queue
                # is gone, and making that again at once can fail: nvmet may
                # still be tearing down the QID ("Command Sequence Error").
                raise BusyError(S.EBUSY, "close: controller still has %d I/O queue(s) from queue() "
                                "and %d registered region(s)" % (len(self._queues), len(self._regions)))
            if self._default is not None:
                self._default._destroy()
                self._default = None
            lib = _lib.load()
            rc = lib.nvmeof_ctrl_close(self._h)
            if rc == S.EBUSY:
                _check(rc)
            self._h = None  # on any other outcome the library released everything
            _check(rc)

    # ---- identity ----
    @property
    def info(self) -> ControllerInfo:
        """ControllerInfo: serial, model, firmware, subnqn, cntlid, mdts,
        max_xfer, ... as struct nvmeof_ctrl_info."""
        self._check_open()
        c = _lib.load().nvmeof_ctrl_info(self._h).contents
        vals = []
        for name, typ in S.CtrlInfo._fields_:
            v = getattr(c, name)
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace").strip()
            vals.append(v)
        return ControllerInfo(*vals)

    @property
    def namespaces(self) -> List[int]:
        """The active namespace IDs."""
        self._check_open()
        lib = _lib.load()
        return [lib.nvmeof_ns_at(self._h, i).contents.nsid for i in range(lib.nvmeof_ns_count(self._h))]

    def namespace(self, nsid: int) -> Namespace:
        """The active namespace nsid (identified at connect; no command is
        sent). Its I/O runs on the controller's own I/O queue."""
        return self._namespace(nsid, None)

    identify_namespace = namespace

    def _namespace(self, nsid, queue):
        self._check_open()
        if isinstance(nsid, bool) or not isinstance(nsid, int):
            raise TypeError("nvmeof: nsid must be an int, not %r" % (nsid,))
        if not 1 <= nsid <= 0xFFFFFFFE:
            raise ValueError("nvmeof: nsid must be 1..0xfffffffe, not %d" % nsid)
        p = _lib.load().nvmeof_ns_get(self._h, nsid)
        if not p:
            raise InvalidArgumentError(S.EINVAL, _lib.errmsg())
        return Namespace(self, p, queue)

    # ---- health ----
    @property
    def keep_alives(self) -> int:
        """Keep Alive commands completed so far (with keep_alive_ms)."""
        self._check_open()
        return _lib.load().nvmeof_ctrl_keep_alives(self._h)

    def check_health(self) -> None:
        """Raises the error of the first failed keep-alive, if one failed."""
        self._check_open()
        buf = ctypes.create_string_buffer(256)
        rc = _lib.load().nvmeof_ctrl_health(self._h, buf, len(buf))
        if rc:
            raise from_code(rc, buf.value.decode("utf-8", "replace"))

    # ---- queues ----
    def queue(self, depth: Optional[int] = None) -> "Queue":
        """A new I/O queue of its own (QID), for another thread: a queue is
        used by one thread at a time, different queues run in parallel.
        depth None: the controller's queue_depth. Close it (or use a with
        block) before the controller."""
        with self._lock:
            self._check_open()
            q = Queue(self, depth)
            self._queues[id(q)] = q
            return q

    @property
    def io(self) -> "RawQueue":
        """The low-level API on the controller's I/O queue: a RawQueue
        (submit, poll, execute of raw 64-byte commands; nvmeof.protocol)."""
        with self._lock:
            if getattr(self, "_raw_io", None) is None or self._raw_io.closed:
                from .lowlevel import RawQueue
                self._raw_io = RawQueue(self, self._default_queue())
            return self._raw_io

    @property
    def admin(self) -> "RawQueue":
        """The low-level API on the admin queue: a RawQueue."""
        with self._lock:
            self._check_open()
            if getattr(self, "_raw_admin", None) is None:
                from .lowlevel import RawQueue
                self._raw_admin = RawQueue(self, None, admin=True)
            return self._raw_admin

    def _default_queue(self):
        with self._lock:
            self._check_open()
            if self._default is None:
                self._default = Queue(self, None)
            return self._default

    # ---- memory ----
    def allocate(self, length: int) -> HostMemory:
        """length bytes of zeroed, page-aligned host memory, registered:
        a HostMemory, which is also a buffer (memoryview, numpy.frombuffer)."""
        n = check_length(length)
        self._check_open()
        region = HostMemory(n)
        try:
            self._register(region, False)
        except BaseException:
            region._after_release()
            raise
        return region

    def register(self, obj: Any) -> RegisteredMemory:
        """Registers obj's memory in place: any contiguous writable buffer
        (bytearray, numpy array, CPU tensor through the buffer protocol or
        __array_interface__). obj stays alive while registered."""
        self._check_open()
        addr, n, pin = host_buffer(obj)
        region = RegisteredMemory(obj, addr, n, pin)
        self._register(region, False)
        return region

    def register_gpu(self, tensor: Any) -> GpuMemory:
        """Registers CUDA device memory given by tensor.__cuda_array_interface__
        (PyTorch, CuPy, Numba; none is imported). Reads into it flush
        completed GPUDirect writes before returning; writes from it
        synchronize its CUDA context first."""
        self._check_open()
        addr, n = cuda_buffer(tensor)
        region = GpuMemory(tensor, addr, n)
        self._register(region, True)
        return region

    def _register(self, region, cuda):
        lib = _lib.load()
        h = c_void_p()
        with self._lock:
            self._check_open()
            fn = lib.nvmeof_mr_register_cuda if cuda else lib.nvmeof_mr_register
            _check(fn(self._h, region._address, region._length, byref(h)))
            region._mr = h.value
            region._controller = self
            self._regions[id(region)] = region

    def _release(self, region):
        with self._lock:
            _check(_lib.load().nvmeof_mr_release(region._mr))
            region._mr = None
            self._regions.pop(id(region), None)


class Queue:
    """An I/O queue pair of its own (Controller.queue()). namespace(nsid)
    gives a Namespace whose I/O runs on this queue."""

    def __init__(self, controller: Controller, depth: Optional[int]) -> None:
        lib = _lib.load()
        qo = S.QueueOpts()
        lib.nvmeof_queue_opts_init_sz(byref(qo), ctypes.sizeof(qo))
        if depth is not None:
            qo.depth = _uint(depth, "depth", 1, 65535)
        qo.batch = True  # every submission waits for the one doorbell of commit
        h = c_void_p()
        _check(lib.nvmeof_queue_create(controller._h, byref(qo), byref(h)))
        self._h = h.value
        self.controller = controller
        self._lock = threading.Lock()

    def __enter__(self) -> "Queue":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True once close() returned."""
        return self._h is None

    def _open_handle(self):
        if self._h is None:
            raise ValueError("nvmeof: the queue is closed")
        return self._h

    @property
    def qid(self) -> int:
        """The queue's NVMe queue ID."""
        return _lib.load().nvmeof_queue_qid(self._open_handle())

    @property
    def depth(self) -> int:
        """Commands in flight at most (what the controller and CRQSIZE allow)."""
        return _lib.load().nvmeof_queue_depth(self._open_handle())

    def stats(self) -> QueueStats:
        """QueueStats: commands sent, in-capsule, doorbells, stale CQEs, ..."""
        s = S.QueueStats()
        _lib.load().nvmeof_queue_stats(self._open_handle(), byref(s))
        return QueueStats(*(getattr(s, f[0]) for f in S.QueueStats._fields_))

    @property
    def raw(self) -> "RawQueue":
        """The low-level API on this queue: a RawQueue."""
        self._open_handle()
        if getattr(self, "_raw", None) is None:
            from .lowlevel import RawQueue
            self._raw = RawQueue(self.controller, self)
        return self._raw

    def namespace(self, nsid: int) -> Namespace:
        """The active namespace nsid, its I/O on this queue."""
        self._open_handle()
        return self.controller._namespace(nsid, self)

    def _run(self, ops):
        with self._lock:
            return _io.run(self._open_handle(), ops, self.controller._stall_ms)

    def _call(self, fn):
        """fn(queue handle), a synchronous call of the library, under the lock."""
        with self._lock:
            return fn(self._open_handle())

    def _destroy(self):
        with self._lock:
            if self._h is not None:
                _check(_lib.load().nvmeof_queue_destroy(self._h))
                self._h = None

    def close(self) -> None:
        """Destroys the queue (in-flight commands are failed)."""
        with self.controller._lock:
            self._destroy()
            self.controller._queues.pop(id(self), None)
