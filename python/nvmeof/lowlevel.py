"""The low-level API: raw 64-byte commands on a queue, submitted and polled
(Controller.io, Controller.admin, Queue.raw), over libnvmeof's
nvmeof_io_raw_cid / nvmeof_admin_raw_cid.

    with nvmeof.Controller.connect(host, nqn) as controller:
        with controller.allocate(4096) as buf:
            cmd = protocol.rw_command(protocol.NVME_CMD_READ, 1, 0, 8, buf, lba_size=512)
            request = controller.io.submit(cmd, data_owner=buf)
            while not request.done:
                controller.io.poll()
            request.response.raise_for_status()

The library owns the Command Identifier (it replaces the command's; a
Request's command_id is the one that went on the wire, known at submit) and
checks a command's keyed SGL against the controller's registered regions
before sending. A request is done once its command was sent and answered:
the library hands the completion over only then, so send_complete and
response arrive together.
"""
from __future__ import annotations

import ctypes
import itertools
import struct
import threading
from ctypes import POINTER, byref, c_int, c_size_t, c_uint32, c_void_p
from typing import Any, List, Optional

from . import _lib
from . import _structs as S
from . import protocol
from .errors import NVMeStatusError, QueueFullError, from_code

RAW_CALLER_SGL = 1

_declared = None
_decl_lock = threading.Lock()


def _raw_lib():
    """The library with the raw-command prototypes declared (once)."""
    global _declared
    if _declared is not None:
        return _declared
    lib = _lib.load()
    with _decl_lock:
        p = c_void_p
        cid = POINTER(ctypes.c_uint16)
        for name, args in (("nvmeof_io_raw_cid", (p, ctypes.c_char_p, p, c_size_t, c_uint32, c_uint32, S.CALLBACK,
                                                  c_void_p, cid)),
                           ("nvmeof_admin_raw_cid", (p, ctypes.c_char_p, p, c_size_t, c_uint32, c_uint32, S.CALLBACK,
                                                     c_void_p, cid)),
                           ("nvmeof_io_raw_sync", (p, ctypes.c_char_p, p, c_size_t, c_uint32, c_uint32,
                                                   POINTER(S.Cpl), c_uint32)),
                           ("nvmeof_admin_raw_sync", (p, ctypes.c_char_p, p, c_size_t, c_uint32, c_uint32,
                                                      POINTER(S.Cpl), c_uint32)),
                           ("nvmeof_admin_poll", (p, c_uint32)),
                           ("nvmeof_cmd_status_name", (ctypes.c_uint16, ctypes.c_bool, ctypes.c_uint8, ctypes.c_uint8))):
            f = getattr(lib, name)
            f.argtypes = list(args)
            f.restype = ctypes.c_char_p if name == "nvmeof_cmd_status_name" else c_int
        for name in ("nvmeof_mr_rkey", "nvmeof_mr_lkey"):
            f = getattr(lib, name)
            f.argtypes = [p]
            f.restype = c_uint32
        _declared = lib
    return lib


def region_key(region, remote: bool) -> int:
    if region._mr is None:
        raise ValueError("nvmeof: the memory region is closed")
    lib = _raw_lib()
    return (lib.nvmeof_mr_rkey if remote else lib.nvmeof_mr_lkey)(region._mr)


class Completion:
    """One completion queue entry (16 bytes): result (DW0), result_dw1,
    sq_head, sq_id, command_id and status_field (DW3 bits 31:16: the phase
    bit, then the 15-bit status)."""

    __slots__ = ("result", "result_dw1", "sq_head", "sq_id", "command_id", "status_field", "opcode", "admin")

    def __init__(self, result: int = 0, sq_head: int = 0, sq_id: int = 0, command_id: int = 0,
                 status_field: int = 0, result_dw1: int = 0, opcode: Optional[int] = None,
                 admin: bool = False) -> None:
        self.result, self.sq_head, self.sq_id = result, sq_head, sq_id
        self.command_id, self.status_field, self.result_dw1 = command_id, status_field, result_dw1
        self.opcode, self.admin = opcode, admin

    @classmethod
    def from_bytes(cls, data: bytes) -> "Completion":
        if len(data) < protocol.CQE_SIZE:
            raise ValueError("nvmeof: a completion is 16 bytes, not %d" % len(data))
        dw0, dw1, sqhd, sqid, cid, sf = struct.unpack_from("<IIHHHH", data)
        return cls(dw0, sqhd, sqid, cid, sf, dw1)

    def to_bytes(self) -> bytes:
        return struct.pack("<IIHHHH", self.result, self.result_dw1, self.sq_head, self.sq_id, self.command_id,
                           self.status_field)

    @property
    def status(self) -> int:
        """The 15-bit Status Field (as nvmeof.status_name takes it)."""
        return self.status_field >> 1

    @property
    def status_code(self) -> int:
        return (self.status_field >> 1) & 0xFF

    @property
    def status_type(self) -> int:
        return (self.status_field >> 9) & 0x7

    @property
    def do_not_retry(self) -> bool:
        return bool(self.status_field >> 15)

    @property
    def succeeded(self) -> bool:
        return self.status_code == 0 and self.status_type == 0

    def status_name(self) -> str:
        lib = _raw_lib()
        if self.opcode is None:
            return lib.nvmeof_status_name(self.status).decode()
        return lib.nvmeof_cmd_status_name(self.status, self.admin, self.opcode, 0).decode()

    def raise_for_status(self) -> "Completion":
        """Raises NVMeStatusError (an OSError; .completion is this) unless
        the command succeeded; returns self."""
        if self.succeeded:
            return self
        what = "command 0x%02x" % self.opcode if self.opcode is not None else "command"
        e = NVMeStatusError(S.ENVME, "%s on queue %d (CID 0x%04x): %s (SCT 0x%x, SC 0x%02x%s)" % (
            what, self.sq_id, self.command_id, self.status_name(), self.status_type, self.status_code,
            ", DNR" if self.do_not_retry else ""), self.status)
        e.completion = self
        raise e

    def __repr__(self) -> str:
        return "<nvmeof.Completion cid=0x%04x sq=%d result=0x%x status=0x%04x>" % (
            self.command_id, self.sq_id, self.result, self.status_field)


def _completion(cpl, opcode) -> Completion:
    return Completion(cpl.cdw0, cpl.sqhd, cpl.sqid, cpl.cid, (cpl.status & 0x7FFF) << 1, cpl.cdw1, opcode,
                      bool(cpl.admin))


# The library's "no CID yet": the command waits for its queue to reconnect.
CID_NONE = 0xFFFF


class Request:
    """A submitted command: command_id (the CID it went out with, as its
    Completion carries it; None only while it waits for a reconnecting
    queue, then set from its completion), data_owner (kept alive until done), send_complete, response (a
    Completion), done; error: the library's exception when the command got
    no answer (timed out, connection closed)."""

    __slots__ = ("command", "command_id", "data_owner", "send_complete", "response", "error", "_token")

    def __init__(self, command, data_owner):
        self.command = bytes(command)
        self.command_id = None
        self.data_owner = data_owner
        self.send_complete = False
        self.response = None
        self.error = None
        self._token = 0

    @property
    def done(self) -> bool:
        return self.error is not None or (self.send_complete and self.response is not None)

    def __repr__(self) -> str:
        return "<nvmeof.Request opcode=0x%02x %s>" % (self.command[0], "done" if self.done else "in flight")


# token -> (queue, request): callbacks run on the thread that polls, holding the GIL
_pending = {}
_tokens = itertools.count(1)


def _on_complete(arg, cpl_p):
    item = _pending.pop(arg, None)
    if item is None:
        return
    rq, req = item
    c = cpl_p[0]
    if c.err in (0, S.ENVME):
        req.response = _completion(c, req.command[0])
        if req.command_id is None:
            req.command_id = c.cid
        req.send_complete = True
    else:
        req.error = from_code(c.err, "raw command 0x%02x: %s" % (req.command[0], _lib.errmsg()))
    rq._completion_done(req)


_CALLBACK = S.CALLBACK(_on_complete)  # module lifetime: late completions may still call it


class RawQueue:
    """A queue for raw commands: the controller's I/O queue
    (Controller.io), its admin queue (Controller.admin), or any Queue
    (Queue.raw). One thread at a time; on the admin queue the callbacks
    may run on the controller's keep-alive or event thread (whichever
    polls the admin queue), so the count and the completed list are kept
    under a lock, never held across a library call (a callback runs inside
    one, under the library's admin lock)."""

    def __init__(self, controller, queue=None, admin: bool = False) -> None:
        self._controller = controller
        self._queue = queue
        self._admin = admin
        self._lock = threading.Lock()
        self._outstanding = 0
        self._completed: List[Request] = []
        self._closed = False

    def _completion_done(self, req: Request) -> None:
        with self._lock:
            self._outstanding -= 1
            self._completed.append(req)

    def _handle(self):
        if self._closed or self._controller.closed or (self._queue is not None and self._queue.closed):
            raise ValueError("nvmeof: the queue is closed")
        return self._controller._h if self._admin else self._queue._h

    @property
    def closed(self) -> bool:
        return self._closed or self._controller.closed or (self._queue is not None and self._queue.closed)

    @property
    def outstanding(self) -> int:
        """Requests submitted and not yet completed."""
        return self._outstanding

    @property
    def qid(self) -> int:
        return 0 if self._admin else self._queue.qid

    def _data(self, command, data_owner):
        """The library's data arguments for command: a data pointer the
        command carries is the caller's, for the library to check (a keyed
        SGL in a registered region goes; anything else, PRPs included, is
        refused before sending); none (DPTR all zero) means no data."""
        if len(command) != protocol.SQE_SIZE:
            raise ValueError("nvmeof: a command is 64 bytes, not %d" % len(command))
        raw = bytes(command)
        return (RAW_CALLER_SGL if any(raw[24:40]) else 0), raw

    def submit(self, command: Any, data_owner: Any = None) -> Request:
        """Sends command (64 bytes) now; QueueFullError when no slot is free."""
        lib = _raw_lib()
        h = self._handle()
        flags, raw = self._data(command, data_owner)
        req = Request(raw, data_owner)
        req._token = next(_tokens)
        cid = ctypes.c_uint16(CID_NONE)
        _pending[req._token] = (self, req)
        # counted before the call: an admin callback on another thread may
        # complete the request before the call returns
        with self._lock:
            self._outstanding += 1
        if self._admin:
            rc = lib.nvmeof_admin_raw_cid(h, raw, None, 0, 0, flags, _CALLBACK, req._token, byref(cid))
        else:
            rc = lib.nvmeof_io_raw_cid(h, raw, None, 0, 0, flags, _CALLBACK, req._token, byref(cid))
            if rc == 0:
                lib.nvmeof_queue_commit(h)  # a refused post completes the request from the next poll
        if rc:
            _pending.pop(req._token, None)
            with self._lock:
                self._outstanding -= 1
            msg = _lib.errmsg()
            if rc == S.EQFULL:
                raise QueueFullError(rc, msg)
            raise from_code(rc, msg)
        if cid.value != CID_NONE and req.command_id is None:
            req.command_id = cid.value
        return req

    def poll(self, max_entries: Optional[int] = None) -> List[Request]:
        """Without blocking: the requests that completed since the last poll."""
        lib = _raw_lib()
        h = self._handle()
        if self._admin:
            rc = lib.nvmeof_admin_poll(h, max_entries or 0)
        else:
            rc = lib.nvmeof_queue_poll(h, max_entries or 0)
        if rc < 0:
            raise from_code(rc, _lib.errmsg())
        with self._lock:
            done, self._completed = self._completed, []
        return done

    def execute(self, command: Any, data_owner: Any = None, timeout: float = 30.0) -> Completion:
        """Sends command and waits up to timeout seconds for its completion;
        raises NVMeStatusError on an error status."""
        lib = _raw_lib()
        h = self._handle()
        flags, raw = self._data(command, data_owner)
        cpl = S.Cpl()
        # the library takes 32-bit ms, and ctypes would silently keep the low
        # 32 bits of more (a long timeout becoming a few ms)
        ms = 0xFFFFFFFF if timeout * 1000 >= 0xFFFFFFFF else max(1, int(timeout * 1000))
        fn = lib.nvmeof_admin_raw_sync if self._admin else lib.nvmeof_io_raw_sync
        rc = fn(h, raw, None, 0, 0, flags, byref(cpl), ms)
        if rc and rc != S.ENVME:
            raise from_code(rc, _lib.errmsg())
        return _completion(cpl, raw[0]).raise_for_status()

    def close(self) -> None:
        """Closes the queue: a queue made for it (Queue.raw keeps its Queue)
        is destroyed; the admin queue stays the controller's."""
        if self._closed:
            return
        if self._queue is not None and self._queue is self._controller._default and not self._admin:
            pass  # the controller's own queue lives as long as the controller
        self._closed = True

    def __repr__(self) -> str:
        return "<nvmeof.RawQueue qid=%s outstanding=%d%s>" % (
            "closed" if self.closed else self.qid, self._outstanding, " closed" if self.closed else "")


RDMAQueue = RawQueue  # the seed's name


def flush_gpudirect_writes(region: Any) -> None:
    """After reads into GPU memory completed through submit/poll, before GPU
    work consumes the data: flushes the NIC's GPUDirect writes (nothing
    for host memory)."""
    if getattr(region, "is_gpu", False):
        rc = _lib.load().nvmeof_cuda_flush(region._mr)
        if rc:
            raise from_code(rc, _lib.errmsg())


def synchronize(region: Any) -> None:
    """Before submitting a write from GPU memory: waits for the CUDA
    context's work (the kernels that produced the data)."""
    if getattr(region, "is_gpu", False):
        rc = _lib.load().nvmeof_cuda_sync(region._mr)
        if rc:
            raise from_code(rc, _lib.errmsg())
