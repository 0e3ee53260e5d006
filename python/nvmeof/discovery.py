"""Discovery: the subsystems a discovery controller lists (nvme discover),
so that a Python user finds an NQN without the tool."""
import ctypes
from ctypes import POINTER, Structure, byref, c_char, c_int, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p
from typing import Any, Dict, List, Optional, Union

from . import _lib
from . import _structs as S
from .controller import _check, connect_options

DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"


class _Entry(Structure):
    """struct nvmeof_disc_entry"""
    _fields_ = [("trtype", c_uint8), ("adrfam", c_uint8), ("subtype", c_uint8), ("treq", c_uint8),
                ("portid", c_uint16), ("cntlid", c_uint16), ("asqsz", c_uint16), ("eflags", c_uint16),
                ("trsvcid", c_char * 33), ("subnqn", c_char * 257), ("traddr", c_char * 257),
                ("rdma_qptype", c_uint8), ("rdma_prtype", c_uint8), ("rdma_cms", c_uint8),
                ("rdma_pkey", c_uint16), ("tcp_sectype", c_uint8)]


class _Log(Structure):
    """struct nvmeof_disc_log"""
    _fields_ = [("genctr", c_uint64), ("numrec", c_uint64), ("recfmt", c_uint16), ("nentries", c_uint32),
                ("entries", POINTER(_Entry))]


def _declare(lib):
    if getattr(lib, "_nvmeof_discovery_declared", False):
        return
    lib.nvmeof_discovery_connect.restype = c_int
    lib.nvmeof_discovery_connect.argtypes = [POINTER(S.CtrlOpts), POINTER(c_void_p)]
    lib.nvmeof_discover.restype = c_int
    lib.nvmeof_discover.argtypes = [c_void_p, POINTER(POINTER(_Log))]
    lib.nvmeof_disc_log_free.restype = None
    lib.nvmeof_disc_log_free.argtypes = [POINTER(_Log)]
    for f in ("nvmeof_trtype_str", "nvmeof_adrfam_str", "nvmeof_subtype_str"):
        getattr(lib, f).restype = ctypes.c_char_p
        getattr(lib, f).argtypes = [c_uint8]
    lib._nvmeof_discovery_declared = True


def discover(host: str, *, port: Union[int, str, None] = None, transport: Optional[str] = None,
             source: Optional[str] = None, host_nqn: Optional[str] = None, nqn: str = DISCOVERY_NQN,
             timeout: Optional[float] = None) -> List[Dict[str, Any]]:
    """The Discovery Log Page of the discovery controller at host (port: the
    library's default, 4420), as nvme discover reads it: one dict per entry
    with nvme-cli's field names and words (trtype, adrfam, subtype, portid,
    trsvcid, subnqn, traddr, cntlid). The entries of subtype "nvme subsystem"
    are the NQNs to give Controller(); transport "tcp" for NVMe/TCP."""
    lib = _lib.load()
    _declare(lib)
    o = connect_options(host, nqn, port, source, host_nqn, None, None, None, timeout, transport=transport)
    c = c_void_p()
    _check(lib.nvmeof_discovery_connect(byref(o), byref(c)), "discovery controller %s" % host)
    log = POINTER(_Log)()
    try:
        _check(lib.nvmeof_discover(c, byref(log)), "discover")
        out = []
        try:
            for i in range(log.contents.nentries):
                e = log.contents.entries[i]
                out.append({"trtype": lib.nvmeof_trtype_str(e.trtype).decode(),
                            "adrfam": lib.nvmeof_adrfam_str(e.adrfam).decode(),
                            "subtype": lib.nvmeof_subtype_str(e.subtype).decode(), "portid": e.portid,
                            "trsvcid": e.trsvcid.decode(), "subnqn": e.subnqn.decode(),
                            "traddr": e.traddr.decode(), "cntlid": e.cntlid})
        finally:
            lib.nvmeof_disc_log_free(log)
        return out
    finally:
        lib.nvmeof_ctrl_close(c)
