"""One namespace through several controllers of one subsystem (paths): the
library's nvmeof_mpath. Each command takes the path the iopolicy picks;
a path that fails it (a path status, a lost connection) hands it to another.

    a = nvmeof.Controller("192.0.2.1", nqn, port=4430, source="192.0.2.1")
    b = nvmeof.Controller("198.51.100.1", nqn, port=4430, source="198.51.100.1")
    with nvmeof.Paths([a, b], nsid=1, iopolicy="round-robin") as p:
        p.write(0, data)
        assert p.read(0, len(data) // p.block_size) == data
        print(p.paths())
"""
from __future__ import annotations

import ctypes
import itertools
import time
from ctypes import byref, c_void_p
from typing import Any, Dict, List, Optional, Sequence

from . import _lib
from . import _structs as S
from .errors import Error, TimeoutError, from_code
from .controller import _shown

POLICIES = {"queue-depth": 0, "round-robin": 1, "numa": 2}
_ANA = {1: "optimized", 2: "non-optimized", 3: "inaccessible", 4: "persistent-loss", 15: "change"}

_results = {}
_tokens = itertools.count(1)


def _done(arg, cpl):
    _results[arg] = (cpl[0].err, cpl[0].status)


_CB = S.CALLBACK(_done)  # module lifetime: a late completion may still call it


def _declare(lib):
    if getattr(lib, "_nvmeof_paths", False):
        return
    p = c_void_p
    for name, res, args in (
            ("nvmeof_mpath_opts_init_sz", None, (ctypes.POINTER(S.MpathOpts), ctypes.c_size_t)),
            ("nvmeof_mpath_create", ctypes.c_int, (ctypes.POINTER(c_void_p), ctypes.c_uint32,
                                                   ctypes.POINTER(S.MpathOpts), ctypes.POINTER(c_void_p))),
            ("nvmeof_mpath_destroy", ctypes.c_int, (p,)),
            ("nvmeof_mpath_count", ctypes.c_uint32, (p,)),
            ("nvmeof_mpath_ns", ctypes.POINTER(S.Ns), (p,)),
            ("nvmeof_mpath_path_info", ctypes.c_int, (p, ctypes.c_uint32, ctypes.POINTER(S.PathInfo))),
            ("nvmeof_mpath_mr_alloc", ctypes.c_int, (p, ctypes.c_size_t, ctypes.POINTER(c_void_p))),
            ("nvmeof_mpath_mr_release", ctypes.c_int, (p,)),
            ("nvmeof_mpath_mr_addr", c_void_p, (p,)),
            ("nvmeof_mpath_queue_create", ctypes.c_int, (p, c_void_p, ctypes.POINTER(c_void_p))),
            ("nvmeof_mpath_queue_destroy", ctypes.c_int, (p,)),
            ("nvmeof_mpath_read", ctypes.c_int, (p, ctypes.c_uint64, ctypes.c_uint32, p, ctypes.c_size_t,
                                                 S.CALLBACK, c_void_p)),
            ("nvmeof_mpath_write", ctypes.c_int, (p, ctypes.c_uint64, ctypes.c_uint32, p, ctypes.c_size_t,
                                                  ctypes.c_uint32, S.CALLBACK, c_void_p)),
            ("nvmeof_mpath_queue_wait", ctypes.c_int, (p, ctypes.c_uint32, ctypes.c_int)),
            ("nvmeof_mpath_queue_path_stats", ctypes.c_int, (p, ctypes.c_uint32, ctypes.POINTER(S.PathStats)))):
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = list(args)
    lib._nvmeof_paths = True


def _check(rc):
    if rc < 0:
        raise from_code(rc, _lib.errmsg())
    return rc


class Paths:
    """Paths(controllers, nsid, iopolicy="queue-depth"): the controllers
    (nvmeof.Controller, connected, of one subsystem) stay the caller's:
    close this first. Refused (nvmeof.Error naming both paths) when they
    are not one subsystem or the namespace's identifiers differ."""

    def __init__(self, controllers: Sequence[Any], nsid: int, iopolicy: str = "queue-depth",
                 timeout: float = 30.0) -> None:
        if iopolicy not in POLICIES:
            raise ValueError("nvmeof: iopolicy %s: one of %s" % (_shown(iopolicy), ", ".join(POLICIES)))
        lib = _lib.load()
        _declare(lib)
        self._lib, self._mp, self._mq, self._mr, self._len = lib, None, None, None, 0
        self.timeout = timeout
        hs = (c_void_p * len(controllers))(*[c._h for c in controllers])
        o = S.MpathOpts()
        lib.nvmeof_mpath_opts_init_sz(byref(o), ctypes.sizeof(o))
        o.nsid, o.iopolicy = nsid, POLICIES[iopolicy]
        mp = c_void_p()
        _check(lib.nvmeof_mpath_create(hs, len(controllers), byref(o), byref(mp)))
        self._mp = mp.value
        mq = c_void_p()
        try:
            _check(lib.nvmeof_mpath_queue_create(self._mp, None, byref(mq)))
        except Error:
            lib.nvmeof_mpath_destroy(self._mp)
            raise
        self._mq = mq.value
        self.block_size = lib.nvmeof_mpath_ns(self._mp)[0].lba_size

    def __enter__(self) -> "Paths":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        lib = self._lib
        if self._mq:
            lib.nvmeof_mpath_queue_destroy(self._mq)
            self._mq = None
        if self._mr:
            lib.nvmeof_mpath_mr_release(self._mr)
            self._mr = None
        if self._mp:
            _check(lib.nvmeof_mpath_destroy(self._mp))
            self._mp = None

    def _buffer(self, n):
        if n > self._len:
            if self._mr:
                self._lib.nvmeof_mpath_mr_release(self._mr)
                self._mr = None
            mr = c_void_p()
            _check(self._lib.nvmeof_mpath_mr_alloc(self._mp, n, byref(mr)))
            self._mr, self._len = mr.value, n
        return self._lib.nvmeof_mpath_mr_addr(self._mr)

    def _run(self, submit, what):
        token = next(_tokens)
        _check(submit(token))
        end = time.monotonic() + self.timeout
        while token not in _results:
            if time.monotonic() > end:
                raise TimeoutError(S.ETIMEDOUT, "%s: no completion within %.1f s" % (what, self.timeout))
            _check(self._lib.nvmeof_mpath_queue_wait(self._mq, 1, 100))
        err, status = _results.pop(token)
        if err:
            raise from_code(err, "%s: %s" % (what, _lib.errmsg()))

    def read(self, slba: int, blocks: int) -> bytes:
        n = blocks * self.block_size
        addr = self._buffer(n)
        self._run(lambda t: self._lib.nvmeof_mpath_read(self._mq, slba, blocks, self._mr, 0, _CB, t),
                  "read slba %d nlb %d" % (slba, blocks))
        return ctypes.string_at(addr, n)

    def write(self, slba: int, data: bytes) -> None:
        if len(data) % self.block_size:
            raise ValueError("nvmeof: %d bytes are not whole %d-byte blocks" % (len(data), self.block_size))
        addr = self._buffer(len(data))
        ctypes.memmove(addr, data, len(data))
        blocks = len(data) // self.block_size
        self._run(lambda t: self._lib.nvmeof_mpath_write(self._mq, slba, blocks, self._mr, 0, 0, _CB, t),
                  "write slba %d nlb %d" % (slba, blocks))

    def paths(self) -> List[Dict[str, Any]]:
        """Per path: address, HCA, ANA state, and what this object's queue sent on it."""
        out = []
        for i in range(self._lib.nvmeof_mpath_count(self._mp)):
            pi = S.PathInfo(size=ctypes.sizeof(S.PathInfo))
            st = S.PathStats(size=ctypes.sizeof(S.PathStats))
            _check(self._lib.nvmeof_mpath_path_info(self._mp, i, byref(pi)))
            _check(self._lib.nvmeof_mpath_queue_path_stats(self._mq, i, byref(st)))
            out.append({"traddr": pi.traddr.decode(), "trsvcid": pi.trsvcid.decode(), "hca": pi.hca.decode(),
                        "cntlid": pi.cntlid, "anagrpid": pi.anagrpid,
                        "ana_state": _ANA.get(pi.ana_state, "invalid state"), "ana_changes": pi.ana_changes,
                        "commands": st.cmds, "doorbells": st.doorbells, "failovers": st.failovers,
                        "path_errors": st.path_errors, "live": bool(st.live), "held": st.held,
                        "hold_max_ms": st.hold_max_ms})
        return out
