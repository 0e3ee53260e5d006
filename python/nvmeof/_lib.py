"""Finds and loads libnvmeof once, and declares the C prototypes.

The package is pure Python; the library is the C one that `make install`
puts in PREFIX/lib (libnvmeof.so.0, the soname programs load). Where it
looks, in order:
  1. $NVMEOF_LIB, when set: an explicit choice wins, and nothing else is tried;
  2. libnvmeof.so next to this package (a copy that bundles it);
  3. the install prefix of this Python, sys.prefix/lib/libnvmeof.so.0
     (`make install PREFIX=$VIRTUAL_ENV` puts it there for a virtual environment);
  4. the loader's path (LD_LIBRARY_PATH, ld.so.cache: /usr/local/lib after
     `make install` as root): libnvmeof.so.0, then the development name
     libnvmeof.so (a build tree on LD_LIBRARY_PATH).
When none loads, the error names every place tried and why each failed, and
says how to install the library.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from ctypes import POINTER, c_bool, c_char_p, c_int, c_size_t, c_uint16, c_uint32, c_uint64, c_void_p

from . import _structs as S

LIBNAME = "libnvmeof.so"
SONAME = LIBNAME + ".0"
ENV = "NVMEOF_LIB"

HOW_TO_INSTALL = (
    "Install the C library from the nvmeof source tree: `make setup` once (as root, Debian), then "
    "`sudo make install` (to /usr/local/lib), or `make install PREFIX=%s` (this Python's prefix, no "
    "root needed in a virtual environment); or set %s to the path of a built libnvmeof.so "
    "(build/out/libnvmeof.so after `make lib`)." % (sys.prefix, ENV))


class LibraryNotFoundError(ImportError):
    """libnvmeof (the C library) could not be loaded from any of the places
    tried; the message lists them and says how to install it."""


_lock = threading.Lock()
_lib = None
_path = None


def candidates() -> list[tuple[str, str]]:
    """(path, why) pairs in the order they are tried."""
    explicit = os.environ.get(ENV)
    if explicit:
        return [(explicit, "$" + ENV)]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBNAME)
    return [(here, "next to the nvmeof package"),
            (os.path.join(sys.prefix, "lib", SONAME), "this Python's install prefix"),
            (SONAME, "the system library path"),
            (LIBNAME, "the system library path")]


def load() -> ctypes.CDLL:
    """The loaded library (ctypes.CDLL), loading it on first use; raises
    LibraryNotFoundError when it cannot."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path, where in candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append("%s (%s): no such file" % (path, where))
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append("%s (%s): %s" % (path, where, e))
                continue
            _declare(lib)
            _lib, _path = lib, path
            return lib
        raise LibraryNotFoundError(
            "nvmeof: cannot load %s; tried:\n  %s\n%s" % (LIBNAME, "\n  ".join(tried), HOW_TO_INSTALL))


def path() -> str:
    """Where the library was loaded from (loading it if needed)."""
    load()
    return _path


def _fn(lib, name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


def _declare(lib):
    p = c_void_p  # opaque handles: struct nvmeof_ctrl *, queue *, mr *
    ns_p = POINTER(S.Ns)
    _fn(lib, "nvmeof_errmsg", c_char_p)
    _fn(lib, "nvmeof_strerror", c_char_p, c_int)
    _fn(lib, "nvmeof_status_name", c_char_p, c_uint16)
    _fn(lib, "nvmeof_ctrl_opts_init_sz", None, POINTER(S.CtrlOpts), ctypes.c_size_t)
    _fn(lib, "nvmeof_queue_opts_init_sz", None, POINTER(S.QueueOpts), ctypes.c_size_t)
    _fn(lib, "nvmeof_ctrl_connect", c_int, POINTER(S.CtrlOpts), POINTER(c_void_p))
    _fn(lib, "nvmeof_ctrl_close", c_int, p)
    _fn(lib, "nvmeof_ctrl_info", POINTER(S.CtrlInfo), p)
    _fn(lib, "nvmeof_ctrl_health", c_int, p, c_char_p, c_size_t)
    _fn(lib, "nvmeof_ctrl_keep_alives", c_uint64, p)
    _fn(lib, "nvmeof_ns_get", ns_p, p, c_uint32)
    _fn(lib, "nvmeof_ns_count", c_uint32, p)
    _fn(lib, "nvmeof_ns_at", ns_p, p, c_uint32)
    _fn(lib, "nvmeof_mr_register", c_int, p, c_void_p, c_size_t, POINTER(c_void_p))
    _fn(lib, "nvmeof_mr_release", c_int, p)
    _fn(lib, "nvmeof_mr_addr", c_void_p, p)
    _fn(lib, "nvmeof_mr_len", c_size_t, p)
    _fn(lib, "nvmeof_cuda_available", c_int, c_char_p, c_size_t)
    _fn(lib, "nvmeof_mr_register_cuda", c_int, p, c_void_p, c_size_t, POINTER(c_void_p))
    _fn(lib, "nvmeof_cuda_flush", c_int, p)
    _fn(lib, "nvmeof_cuda_sync", c_int, p)
    _fn(lib, "nvmeof_cuda_copy", c_int, p, c_size_t, c_void_p, c_size_t, c_bool)
    _fn(lib, "nvmeof_mr_cuda_registration", c_char_p, p)
    _fn(lib, "nvmeof_queue_create", c_int, p, POINTER(S.QueueOpts), POINTER(c_void_p))
    _fn(lib, "nvmeof_queue_destroy", c_int, p)
    _fn(lib, "nvmeof_queue_qid", c_uint16, p)
    _fn(lib, "nvmeof_queue_depth", c_uint32, p)
    _fn(lib, "nvmeof_queue_inflight", c_uint32, p)
    _fn(lib, "nvmeof_cpl_str", c_char_p, POINTER(S.Cpl), c_char_p, c_size_t)
    io = (p, ns_p, c_uint64, c_uint32, p, c_size_t, S.CALLBACK, c_void_p)
    _fn(lib, "nvmeof_read", c_int, *io)
    _fn(lib, "nvmeof_write", c_int, *io)
    _fn(lib, "nvmeof_flush", c_int, p, ns_p, S.CALLBACK, c_void_p)
    _fn(lib, "nvmeof_queue_commit", c_int, p)
    _fn(lib, "nvmeof_queue_poll", c_int, p, c_uint32)
    _fn(lib, "nvmeof_queue_wait", c_int, p, c_uint32, c_int)
    _fn(lib, "nvmeof_queue_stats", None, p, POINTER(S.QueueStats))
    # zoned namespaces
    _fn(lib, "nvmeof_zns_info", c_int, p, c_uint32, POINTER(S.ZnsInfo))
    _fn(lib, "nvmeof_zone_state_str", c_char_p, ctypes.c_uint8)
    _fn(lib, "nvmeof_zone_report_ext", c_int, p, ns_p, c_uint64, ctypes.c_uint8, ctypes.c_bool,
        POINTER(S.Zone), c_uint32, POINTER(c_uint32), POINTER(c_uint64), c_uint32)
    _fn(lib, "nvmeof_zone_report_all", c_int, p, ns_p, c_uint64, c_uint64, ctypes.c_uint8, ctypes.c_bool,
        POINTER(S.Zone), c_uint32, POINTER(c_uint32), POINTER(c_uint64), c_uint32)
    _fn(lib, "nvmeof_zone_mgmt_send_sync", c_int, p, ns_p, c_uint64, ctypes.c_uint8, ctypes.c_bool, c_uint32)
    _fn(lib, "nvmeof_zone_append", c_int, p, ns_p, c_uint64, c_uint32, p, c_size_t, c_uint32, S.CALLBACK,
        c_void_p)


def errmsg() -> str:
    """The library's message for the last failure on this thread."""
    return load().nvmeof_errmsg().decode("utf-8", "replace")
