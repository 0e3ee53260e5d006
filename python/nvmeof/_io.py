"""Submits requests on one queue and waits for all of them.

Every I/O goes through here, one request or many: the requests are queued
on a batch queue, posted with one doorbell (nvmeof_queue_commit), and reaped
with nvmeof_queue_wait. The asynchronous API is used even for a single read
because its completion carries the NVMe status, which NVMeStatusError
reports; the GPUDirect ordering that the library's synchronous calls apply
themselves is applied here as its header prescribes for asynchronous
callers: nvmeof_cuda_sync before writes from GPU memory, nvmeof_cuda_flush
once per GPU region after reads into it completed.

Nothing returns while a request it submitted may still move data: on any
failure the requests already submitted are posted and waited for first.
"""
import ctypes
import itertools
import time

from . import _lib
from . import _structs as S
from .errors import Error, TimeoutError, from_code

# token -> list that receives the completion. Callbacks run on the thread
# that polls the queue, inside nvmeof_queue_wait, holding the GIL.
_boxes = {}
_tokens = itertools.count(1)


def _on_complete(arg, cpl):
    box = _boxes.pop(arg, None)
    if box is not None:
        c = cpl[0]
        box.append(S.Cpl(c.err, c.status, c.cdw0, c.cdw1))


_CALLBACK = S.CALLBACK(_on_complete)  # module lifetime: late completions may still call it

READ, WRITE, FLUSH, APPEND = "read", "write", "flush", "zone append"


class Op:
    """One request: kind, the namespace (struct nvmeof_ns *), and for I/O
    the block range and the region (a MemoryRegion) with the byte offset."""
    __slots__ = ("kind", "ns", "nsid", "slba", "nlb", "region", "off")

    def __init__(self, kind, ns, nsid, slba=0, nlb=0, region=None, off=0):
        self.kind, self.ns, self.nsid = kind, ns, nsid
        self.slba, self.nlb, self.region, self.off = slba, nlb, region, off

    def describe(self):
        if self.kind == FLUSH:
            return "flush nsid %d" % self.nsid
        return "%s nsid %d slba %d nlb %d" % (self.kind, self.nsid, self.slba, self.nlb)

    def submit(self, lib, q, token):
        if self.kind == FLUSH:
            return lib.nvmeof_flush(q, self.ns, _CALLBACK, token)
        if self.kind == APPEND:
            return lib.nvmeof_zone_append(q, self.ns, self.slba, self.nlb, self.region._mr, self.off, 0,
                                          _CALLBACK, token)
        fn = lib.nvmeof_read if self.kind == READ else lib.nvmeof_write
        return fn(q, self.ns, self.slba, self.nlb, self.region._mr, self.off, _CALLBACK, token)


def _now_ms():
    return time.monotonic() * 1000.0


def _raise(rc, what=None):
    msg = _lib.errmsg()
    raise from_code(rc, "%s: %s" % (what, msg) if what else msg)


def run(q, ops, stall_ms):
    """Submits ops on queue handle q with one doorbell and waits for all;
    returns their completions (Cpl), in order.
    stall_ms: how long to go without any completion before giving up (the
    library's command timeout completes a stuck command before that)."""
    lib = _lib.load()
    gpu_writes = {id(o.region): o.region for o in ops if o.kind in (WRITE, APPEND) and o.region.is_gpu}
    for r in gpu_writes.values():
        # the kernels that produce the data must have finished
        rc = lib.nvmeof_cuda_sync(r._mr)
        if rc:
            _raise(rc, "write from GPU memory: synchronize")
    submitted = []
    failure = None
    try:
        for op in ops:
            token = next(_tokens)
            box = []
            _boxes[token] = box
            try:
                _submit(lib, q, op, token, stall_ms)
            except BaseException:
                _boxes.pop(token, None)
                raise
            submitted.append((token, op, box))
        rc = lib.nvmeof_queue_commit(q)
        if rc:
            _raise(rc, "post %d request(s)" % len(submitted))
    except Error as e:
        failure = e
        if submitted:
            lib.nvmeof_queue_commit(q)  # what was queued must run to be reaped
    reap_error = _reap(lib, q, submitted, stall_ms)
    gpu_reads = {id(o.region): o.region for _, o, box in submitted
                 if o.kind == READ and o.region.is_gpu and box and not box[0].err}
    for r in gpu_reads.values():
        # GPUDirect writes the NIC made must be visible before the GPU consumes them
        rc = lib.nvmeof_cuda_flush(r._mr)
        if rc and not failure:
            failure = from_code(rc, "read into GPU memory: flush: " + _lib.errmsg())
    failure = failure or reap_error or _first_failure(lib, submitted)
    if failure:
        raise failure
    return [box[0] for _, _, box in submitted]


def _submit(lib, q, op, token, stall_ms):
    """Submits op; while the queue is full, posts what is batched and reaps
    completions to free slots."""
    last = _now_ms()
    while True:
        rc = op.submit(lib, q, token)
        if rc == 0:
            return
        if rc != S.EQFULL:
            _raise(rc)
        rc = lib.nvmeof_queue_commit(q)
        if rc:
            _raise(rc)
        n = lib.nvmeof_queue_wait(q, 1, 100)
        if n < 0:
            _raise(n)
        if n:
            last = _now_ms()
        elif _now_ms() - last > stall_ms:
            raise TimeoutError(S.ETIMEDOUT, "%s: queue full, no command completed within %d ms"
                               % (op.describe(), stall_ms))


def _reap(lib, q, submitted, stall_ms):
    """Waits until every submitted request completed; an exception (returned,
    not raised) when the queue failed or nothing completed for stall_ms."""
    last = _now_ms()
    while True:
        left = sum(1 for _, _, box in submitted if not box)
        if not left:
            return None
        n = lib.nvmeof_queue_wait(q, left, 200)
        if n > 0:
            last = _now_ms()
            continue
        if n < 0:
            err = from_code(n, _lib.errmsg())
        elif _now_ms() - last > stall_ms:
            err = TimeoutError(S.ETIMEDOUT, "%d of %d request(s) not completed within %d ms"
                               % (left, len(submitted), stall_ms))
        else:
            continue
        # this thread stops waiting: late completions are dropped
        for token, _, box in submitted:
            if not box:
                _boxes.pop(token, None)
        return err


def _first_failure(lib, submitted):
    failed = [(op, box[0]) for _, op, box in submitted if box and box[0].err]
    if not failed:
        return None
    op, cpl = failed[0]
    buf = ctypes.create_string_buffer(160)
    text = lib.nvmeof_cpl_str(ctypes.byref(cpl), buf, len(buf)).decode("utf-8", "replace")
    msg = "%s: %s" % (op.describe(), text)
    if len(failed) > 1:
        msg += " (and %d more of %d requests failed)" % (len(failed) - 1, len(submitted))
    return from_code(cpl.err, msg, cpl.status if cpl.err == S.ENVME else None)
