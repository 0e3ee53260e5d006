"""ctypes mirrors of the structs in core/include/nvmeof.h.

Field for field, in the header's order and with the header's names:
tests/python/unit/test_layout.py compares names, offsets and sizes against
the C compiler's view of the header, so a change there fails a test instead
of silently corrupting memory here.
"""
import ctypes
from ctypes import c_bool, c_char, c_char_p, c_int, c_uint8, c_uint16, c_uint32, c_uint64

# C enums are int-sized on every ABI this library builds for.
c_enum = c_int

# enum nvmeof_error
OK = 0
EINVAL = -1
ENOMEM = -2
EQFULL = -3
ETIMEDOUT = -4
ENVME = -5
ETRANSPORT = -6
EREJECTED = -7
EUNREACHABLE = -8
EBUSY = -9
ECLOSED = -10
ENOTSUP = -11
ECUDA = -12
ENODEV = -13

# enum nvmeof_wait_mode
WAIT_HYBRID = 0
WAIT_POLL = 1
WAIT_SLEEP = 2
WAIT_ADAPTIVE = 3


class CtrlOpts(ctypes.Structure):
    """struct nvmeof_ctrl_opts"""
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("traddr", c_char_p),
        ("trsvcid", c_char_p),
        ("src_addr", c_char_p),
        ("subnqn", c_char_p),
        ("hostnqn", c_char_p),
        ("hostid", c_char_p),
        ("queue_depth", c_uint32),
        ("num_io_queues", c_uint32),
        ("cmd_timeout_ms", c_uint32),
        ("connect_timeout_ms", c_uint32),
        ("kato_ms", c_uint32),
        ("ka_interval_ms", c_uint32),
        ("reconnect_delay_ms", c_uint32),
        ("ctrl_loss_tmo_ms", c_uint32),
        ("in_capsule", c_bool),
        ("wait_mode", c_enum),
        ("spin_us", c_uint32),
        ("trace", ctypes.c_void_p),
        ("trace_arg", ctypes.c_void_p),
        ("connect_retries", c_uint32),  # 0.3
        # version 0.3: in-band authentication (DH-HMAC-CHAP)
        ("dhchap_secret", ctypes.c_char_p),
        ("dhchap_ctrl_secret", ctypes.c_char_p),
        ("strict_ordering", c_bool),  # 0.4: without PCIe relaxed ordering
        ("hw_timestamps", c_bool),  # 0.4: NIC completion timestamps
        # version 0.5: what in-band authentication accepts and offers
        ("allow_unauthenticated_ctrl", c_bool),
        ("dhchap_hashes", ctypes.c_char_p),
        ("dhchap_dhgroups", ctypes.c_char_p),
        # version 0.6: the transport ("rdma" or "tcp") and NVMe/TCP's digests
        ("trtype", ctypes.c_char_p),
        ("hdr_digest", c_bool),
        ("data_digest", c_bool),
        # version 0.6: NVMe/TCP socket options (-1, 0: the system's)
        ("tcp_priority", ctypes.c_int32),
        ("tcp_tos", ctypes.c_int32),
        ("tcp_busy_poll_us", ctypes.c_uint32),
        # version 0.6: write payloads this large go with MSG_ZEROCOPY; 0: none
        ("tcp_zerocopy", ctypes.c_uint32),
        # version 0.6: SQ flow control off on every Connect (NVMe/TCP)
        ("disable_sqflow", c_bool),
        # version 0.6: TLS 1.3 with a pre-shared key (NVMe/TCP)
        ("tls", c_bool),
        ("tls_key", ctypes.c_char_p),
        # version 0.6: the PSK from a kernel keyring, the identity's version,
        # nvme-cli's --compat derivation
        ("tls_keyring", ctypes.c_char_p),
        ("tls_identity", ctypes.c_uint8),
        ("tls_compat", c_bool),
    ]


class CtrlInfo(ctypes.Structure):
    """struct nvmeof_ctrl_info"""
    _fields_ = [
        ("serial", c_char * 21),
        ("model", c_char * 41),
        ("firmware", c_char * 9),
        ("subnqn", c_char * 257),
        ("vid", c_uint16),
        ("ssvid", c_uint16),
        ("cntlid", c_uint16),
        ("ver", c_uint32),
        ("cap", c_uint64),
        ("mdts", c_uint8),
        ("max_xfer", c_uint64),
        ("sgls", c_uint32),
        ("ioccsz", c_uint32),
        ("iorcsz", c_uint32),
        ("icdoff", c_uint16),
        ("maxcmd", c_uint16),
        ("nn", c_uint32),
        ("oncs", c_uint16),
        ("kas", c_uint16),
        ("vwc", c_uint8),
        ("mqes", c_uint16),
        ("max_io_queues", c_uint32),
        ("in_capsule_max", c_uint32),
        ("hca", c_char * 64),
        ("port_num", c_uint8),
        ("crdt", c_uint16 * 3),
        ("aerl", c_uint8),
        ("elpe", c_uint8),
        ("lpa", c_uint8),
        ("cntrltype", c_uint8),
        ("oaes", c_uint32),
        # version 0.3: in-band authentication of the admin queue
        ("auth_hash", c_uint8),
        ("auth_dhgroup", c_uint8),
        ("auth_bidirectional", ctypes.c_bool),
        ("auth_io_queues", c_uint32),
        ("comp_vectors", ctypes.c_int),  # 0.4
        ("cqt", c_uint16),  # 0.5
        ("acre", ctypes.c_bool),  # 0.5
        ("netdev", c_char * 32),  # 0.6: NVMe/TCP's network interface
    ]


class Ns(ctypes.Structure):
    """struct nvmeof_ns"""
    _fields_ = [
        ("nsid", c_uint32),
        ("lba_size", c_uint32),
        ("lbads", c_uint8),
        ("ms", c_uint16),
        ("nsze", c_uint64),
        ("ncap", c_uint64),
        ("nuse", c_uint64),
        ("nguid", c_uint8 * 16),
        ("eui64", c_uint8 * 8),
        ("dlfeat", c_uint8),
        ("gone", c_bool),
        ("anagrpid", c_uint32),
        ("nmic", c_uint8),
    ]


class QueueOpts(ctypes.Structure):
    """struct nvmeof_queue_opts"""
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("depth", c_uint32),
        ("batch", c_bool),
        ("wait_mode", c_enum),
        ("wait_mode_set", c_bool),
        ("group", ctypes.c_void_p),
    ]


class Cpl(ctypes.Structure):
    """struct nvmeof_cpl"""
    _fields_ = [
        ("err", c_int),
        ("status", c_uint16),
        ("cdw0", c_uint32),
        ("cdw1", c_uint32),
        ("opc", c_uint8),
        ("fctype", c_uint8),
        ("admin", c_bool),
        # 0.5, raw commands: the rest of the completion queue entry
        ("sqhd", ctypes.c_uint16),
        ("sqid", ctypes.c_uint16),
        ("cid", ctypes.c_uint16),
        # 0.6: a command of it was on the wire when the connection went
        ("in_doubt", c_bool),
    ]


class QueueStats(ctypes.Structure):
    """struct nvmeof_queue_stats"""
    _fields_ = [
        ("cmds", c_uint64),
        ("in_capsule", c_uint64),
        ("doorbells", c_uint64),
        ("stale_cqes", c_uint64),
        ("timeouts", c_uint64),
        ("reconnects", c_uint64),
        ("outage_ms_max", c_uint64),
        ("retries", c_uint64),
        ("bad_rsps", c_uint64),
        ("sleeps", c_uint64),
    ]


class MpathOpts(ctypes.Structure):
    """struct nvmeof_mpath_opts"""
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("nsid", c_uint32),
        ("iopolicy", c_enum),
        ("numa_node", c_int),
        ("sysfs_root", ctypes.c_char_p),
        ("event_cb", ctypes.c_void_p),
        ("event_arg", ctypes.c_void_p),
        ("quiesce_ms", c_uint32),  # 0.5
    ]


class PathInfo(ctypes.Structure):
    """struct nvmeof_path_info"""
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("traddr", ctypes.c_char * 64),
        ("trsvcid", ctypes.c_char * 8),
        ("hca", ctypes.c_char * 64),
        ("cntlid", c_uint16),
        ("anagrpid", c_uint32),
        ("ana_state", c_uint8),
        ("numa_node", c_int),
        ("ana_changes", c_uint64),
        ("ana_reads", c_uint64),
    ]


class PathStats(ctypes.Structure):
    """struct nvmeof_path_stats"""
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("cmds", c_uint64),
        ("failovers", c_uint64),
        ("path_errors", c_uint64),
        ("live", c_bool),
        ("doorbells", c_uint64),
        ("held", c_uint64),  # 0.5
        ("hold_max_ms", c_uint32),
    ]


class PathLoss(ctypes.Structure):
    """struct nvmeof_path_loss"""
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("detected_ms", c_uint64),
        ("reissue_ms", ctypes.c_int64),
        ("complete_ms", ctypes.c_int64),
        ("hold_ms", c_uint32),
        ("cmds", c_uint32),
    ]


# C struct name -> mirror, for the layout test.
class ZnsInfo(ctypes.Structure):
    """struct nvmeof_zns_info"""
    _fields_ = [
        ("zoned", ctypes.c_bool),
        ("zone_size", ctypes.c_uint64),
        ("nr_zones", ctypes.c_uint64),
        ("max_open", ctypes.c_uint32),
        ("max_active", ctypes.c_uint32),
        ("zasl_bytes", ctypes.c_uint32),
        ("zoc", ctypes.c_uint16),
        ("ozcs", ctypes.c_uint16),
    ]


class Zone(ctypes.Structure):
    """struct nvmeof_zone"""
    _fields_ = [
        ("type", ctypes.c_uint8),
        ("state", ctypes.c_uint8),
        ("attrs", ctypes.c_uint8),
        ("zcap", ctypes.c_uint64),
        ("zslba", ctypes.c_uint64),
        ("wp", ctypes.c_uint64),
    ]


MIRRORS = {
    "nvmeof_ctrl_opts": CtrlOpts,
    "nvmeof_ctrl_info": CtrlInfo,
    "nvmeof_ns": Ns,
    "nvmeof_queue_opts": QueueOpts,
    "nvmeof_cpl": Cpl,
    "nvmeof_queue_stats": QueueStats,
    "nvmeof_mpath_opts": MpathOpts,
    "nvmeof_path_info": PathInfo,
    "nvmeof_path_stats": PathStats,
    "nvmeof_path_loss": PathLoss,
    "nvmeof_zns_info": ZnsInfo,
    "nvmeof_zone": Zone,
}

# typedef void (*nvmeof_cb)(void *arg, const struct nvmeof_cpl *cpl);
CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(Cpl))
