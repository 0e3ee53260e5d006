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
