"""NVMe commands as 64-byte submission queue entries, for the low-level
API (Controller.io / Controller.admin: submit, poll, execute).

Every builder returns a bytearray of 64 bytes. A buffer argument is a
registered region (Controller.allocate / register / register_gpu): its
address, length and rkey go into a Keyed SGL Data Block descriptor, which
the library checks against the controller's registered regions before
sending. The Command Identifier is the library's: whatever a command holds
there is replaced at submission.
"""
from __future__ import annotations

import struct
from typing import Any, Optional

NVME_RDMA_PORT = 4420
SQE_SIZE = 64
CQE_SIZE = 16

# NVM command set (I/O queues)
NVME_CMD_FLUSH = 0x00
NVME_CMD_WRITE = 0x01
NVME_CMD_READ = 0x02
NVME_CMD_WRITE_UNCOR = 0x04
NVME_CMD_COMPARE = 0x05
NVME_CMD_WRITE_ZEROES = 0x08
NVME_CMD_DSM = 0x09
NVME_CMD_VERIFY = 0x0C
# Zoned Namespace command set (I/O queues)
NVME_CMD_ZONE_MGMT_SEND = 0x79
NVME_CMD_ZONE_MGMT_RECV = 0x7A
NVME_CMD_ZONE_APPEND = 0x7D
# Admin command set
NVME_ADMIN_GET_LOG_PAGE = 0x02
NVME_ADMIN_IDENTIFY = 0x06
NVME_ADMIN_ABORT = 0x08
NVME_ADMIN_SET_FEATURES = 0x09
NVME_ADMIN_GET_FEATURES = 0x0A
NVME_ADMIN_ASYNC_EVENT = 0x0C
NVME_ADMIN_KEEP_ALIVE = 0x18
NVME_FABRICS_COMMAND = 0x7F  # the library's own: refused on these queues

IDENTIFY_SIZE = 4096
ZONE_REPORT_HEADER = 64  # Report Zones: the count of zones, then descriptors
ZONE_DESCRIPTOR_SIZE = 64
# Zone Send Actions, Zone Receive Action Specific Field (the state filter)
ZONE_SEND_ACTIONS = {"close": 1, "finish": 2, "open": 3, "reset": 4, "offline": 5}
ZONE_REPORT_FILTERS = {"all": 0, "empty": 1, "imp_opened": 2, "exp_opened": 3, "closed": 4, "full": 5,
                       "readonly": 6, "offline": 7}
_PSDT_SGL = 0x40
_SGL_KEYED_DATA = 0x40


def command(opcode: int, nsid: int = 0, *, cdw2: int = 0, cdw3: int = 0, cdw10: int = 0, cdw11: int = 0,
            cdw12: int = 0, cdw13: int = 0, cdw14: int = 0, cdw15: int = 0) -> bytearray:
    """Any command: the opcode, the namespace and the command dwords; no data
    pointer (set_keyed_sgl adds one)."""
    c = bytearray(SQE_SIZE)
    c[0] = opcode & 0xFF
    struct.pack_into("<III", c, 4, nsid, cdw2, cdw3)
    struct.pack_into("<IIIIII", c, 40, cdw10, cdw11, cdw12, cdw13, cdw14, cdw15)
    return c


def _region(buffer):
    for name in ("addr", "address"):
        if hasattr(buffer, name):
            return int(getattr(buffer, name)), int(buffer.length), int(buffer.rkey)
    raise TypeError("nvmeof.protocol: %r is not a registered region" % (buffer,))


def set_keyed_sgl(command: Any, buffer: Any, length: Optional[int] = None, offset: int = 0) -> Any:
    """Points command's data pointer at length bytes (default: the rest of the
    buffer) at offset in the registered buffer; returns command."""
    addr, size, rkey = _region(buffer)
    if length is None:
        length = size - offset
    if offset < 0 or length < 0 or offset + length > size:
        raise ValueError("nvmeof.protocol: %d bytes at offset %d overrun the %d-byte buffer" % (length, offset, size))
    if length > 0xFFFFFF:
        raise ValueError("nvmeof.protocol: a keyed SGL carries at most 16 MiB - 1 bytes, not %d" % length)
    command[1] = (command[1] & 0x3F) | _PSDT_SGL
    struct.pack_into("<Q", command, 24, addr + offset)
    struct.pack_into("<Q", command, 32, length | rkey << 24 | _SGL_KEYED_DATA << 56)
    return command


def rw_command(opcode: int, nsid: int, slba: int, blocks: int, buffer: Any, *, lba_size: int,
               buffer_offset: int = 0) -> bytearray:
    """A Read, Write or Compare (any command with SLBA and NLB) of blocks
    logical blocks of lba_size bytes, its data at buffer_offset in buffer."""
    if blocks < 1 or blocks > 0x10000:
        raise ValueError("nvmeof.protocol: blocks must be 1 to 65536, not %d" % blocks)
    c = command(opcode, nsid, cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32, cdw12=blocks - 1)
    return set_keyed_sgl(c, buffer, blocks * lba_size, buffer_offset)


def zone_mgmt_send(nsid: int, slba: int, action: str, *, select_all: bool = False) -> bytearray:
    """Zone Management Send: action ("close", "finish", "open", "reset",
    "offline") on the zone at slba, or on every zone it applies to
    (select_all, which ignores slba)."""
    if action not in ZONE_SEND_ACTIONS:
        raise ValueError("nvmeof.protocol: zone action %r is none of %s" % (action, ", ".join(ZONE_SEND_ACTIONS)))
    return command(NVME_CMD_ZONE_MGMT_SEND, nsid, cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32,
                   cdw13=ZONE_SEND_ACTIONS[action] | (0x100 if select_all else 0))


def report_zones(nsid: int, slba: int, buffer: Any, *, length: Optional[int] = None, state: str = "all",
                 partial: bool = True, buffer_offset: int = 0) -> bytearray:
    """Zone Management Receive, Report Zones: the zones from the one holding
    slba, those in state (a ZONE_REPORT_FILTERS name), as many as length
    bytes of buffer hold (default: the rest of it; a multiple of 4, at least
    the 64-byte header). partial: the count in the header is of the zones
    returned, not of every matching zone. parse_zone_report reads it."""
    if state not in ZONE_REPORT_FILTERS:
        raise ValueError("nvmeof.protocol: zone state %r is none of %s" % (state, ", ".join(ZONE_REPORT_FILTERS)))
    if length is None:
        length = _region(buffer)[1] - buffer_offset
    if length < ZONE_REPORT_HEADER or length % 4:
        raise ValueError("nvmeof.protocol: a zone report needs a multiple of 4 bytes, at least %d, not %d"
                         % (ZONE_REPORT_HEADER, length))
    c = command(NVME_CMD_ZONE_MGMT_RECV, nsid, cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32, cdw12=length // 4 - 1,
                cdw13=ZONE_REPORT_FILTERS[state] << 8 | (1 << 16 if partial else 0))
    return set_keyed_sgl(c, buffer, length, buffer_offset)


def parse_zone_report(data: bytes) -> "tuple[int, list]":
    """A Report Zones' data: (the header's count of zones, the descriptors
    as (type, state, attrs, capacity, slba, wp) tuples, as many as the data
    holds and the count names). state is the Zone State code (1h empty,
    2h implicitly open, 3h explicitly open, 4h closed, Dh read only, Eh
    full, Fh offline)."""
    if len(data) < ZONE_REPORT_HEADER:
        raise ValueError("nvmeof.protocol: a zone report is at least %d bytes, not %d" % (ZONE_REPORT_HEADER, len(data)))
    total = struct.unpack_from("<Q", data, 0)[0]
    have = min(total, (len(data) - ZONE_REPORT_HEADER) // ZONE_DESCRIPTOR_SIZE)
    out = []
    for i in range(have):
        o = ZONE_REPORT_HEADER + i * ZONE_DESCRIPTOR_SIZE
        zt, zs, za = data[o] & 0xF, data[o + 1] >> 4, data[o + 2]
        zcap, zslba, wp = struct.unpack_from("<QQQ", data, o + 8)
        out.append((zt, zs, za, zcap, zslba, wp))
    return total, out


def zone_append(nsid: int, zslba: int, blocks: int, buffer: Any, *, lba_size: int,
                buffer_offset: int = 0) -> bytearray:
    """Zone Append of blocks to the zone starting at zslba; the completion's
    result (DW0, DW1) is the LBA the controller wrote them at."""
    return rw_command(NVME_CMD_ZONE_APPEND, nsid, zslba, blocks, buffer, lba_size=lba_size,
                      buffer_offset=buffer_offset)


def identify(data_buffer: Any, *, nsid: int = 0, controller: bool = False) -> bytearray:
    """Identify Controller (controller=True, CNS 01h) or Namespace nsid
    (CNS 00h), its 4096 bytes into data_buffer."""
    c = command(NVME_ADMIN_IDENTIFY, 0 if controller else nsid, cdw10=1 if controller else 0)
    return set_keyed_sgl(c, data_buffer, IDENTIFY_SIZE)


def get_features(feature_id: int, *, select: int = 0, cdw11: int = 0) -> bytearray:
    """Get Features: the value comes back in the completion's result (DW0)."""
    return command(NVME_ADMIN_GET_FEATURES, cdw10=(feature_id & 0xFF) | (select & 7) << 8, cdw11=cdw11)


def set_features(feature_id: int, value: int) -> bytearray:
    """Set Features feature_id to value (CDW11)."""
    return command(NVME_ADMIN_SET_FEATURES, cdw10=feature_id & 0xFF, cdw11=value & 0xFFFFFFFF)


def flush(nsid: int) -> bytearray:
    return command(NVME_CMD_FLUSH, nsid)


def has_keyed_sgl(command: Any) -> bool:
    """True when command's data pointer is a keyed SGL with a length."""
    return (command[1] >> 6) == 1 and (command[39] >> 4) == 4 and int.from_bytes(command[32:35], "little") != 0
