"""One exception class per library error code, all under nvmeof.Error.

Where Python has its own class for the same meaning, the exception is also
an instance of it: a bad argument the library refused is a ValueError, a
timeout is a TimeoutError, running out of memory is a MemoryError. Checks
this package makes itself, before calling the library, raise plain
ValueError or TypeError.
"""
import builtins
import re
from typing import Optional

from . import _structs as S


class Error(Exception):
    """A libnvmeof call failed. code: the NVMEOF_E* value (negative int);
    message: the library's one-line account of what failed."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message


class InvalidArgumentError(Error, ValueError):
    """NVMEOF_EINVAL: bad argument; nothing was sent."""


class OutOfMemoryError(Error, MemoryError):
    """NVMEOF_ENOMEM (registration may need a higher RLIMIT_MEMLOCK)."""


class QueueFullError(Error):
    """NVMEOF_EQFULL: no free command slot."""


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 (nvmeof.TimeoutError)
    """NVMEOF_ETIMEDOUT: a wait or a command ran past its timeout."""


class NVMeStatusError(Error, OSError):
    """NVMEOF_ENVME: the target completed the command with an error status.
    status: the 15-bit Status Field; sct, sc: its Status Code Type and Status
    Code; dnr: Do Not Retry. status is None when the library reported the
    failure only as a message without SCT/SC."""

    def __init__(self, code: int, message: str, status: Optional[int] = None) -> None:
        super().__init__(code, message)
        if status is None:
            status = status_from_message(message)
        self.status = status
        self.sct = None if status is None else (status >> 8) & 0x7
        self.sc = None if status is None else status & 0xFF
        self.dnr = None if status is None else bool((status >> 14) & 0x1)
        self.completion = None  # the low-level API's Completion, when it raised this


class TransportError(Error):
    """NVMEOF_ETRANSPORT: an RDMA verb or CM step failed."""


class ConnectionRejectedError(Error):
    """NVMEOF_EREJECTED: the target rejected the RDMA CM connect."""


class UnreachableError(Error):
    """NVMEOF_EUNREACHABLE: address or route resolution failed, or nobody answered."""


class BusyError(Error):
    """NVMEOF_EBUSY: still in use (queues or registrations outstanding)."""


class ClosedError(Error):
    """NVMEOF_ECLOSED: the queue lost its connection."""


class NotSupportedError(Error):
    """NVMEOF_ENOTSUP: the target or this build cannot do it."""


class CudaError(Error):
    """NVMEOF_ECUDA: the CUDA driver API failed or is absent."""


class NoDeviceError(Error):
    """NVMEOF_ENODEV: this host has no RDMA device (or rdma_ucm is not loaded);
    a local problem, not the target's."""


BY_CODE = {
    S.EINVAL: InvalidArgumentError,
    S.ENOMEM: OutOfMemoryError,
    S.EQFULL: QueueFullError,
    S.ETIMEDOUT: TimeoutError,
    S.ENVME: NVMeStatusError,
    S.ETRANSPORT: TransportError,
    S.EREJECTED: ConnectionRejectedError,
    S.EUNREACHABLE: UnreachableError,
    S.EBUSY: BusyError,
    S.ECLOSED: ClosedError,
    S.ENOTSUP: NotSupportedError,
    S.ECUDA: CudaError,
    S.ENODEV: NoDeviceError,
}

# The library writes a status as nvmeof_cpl_str does: "(SCT 0x1, SC 0x84, DNR)".
_STATUS_RE = re.compile(r"\(SCT 0x([0-9a-fA-F]+), SC 0x([0-9a-fA-F]+)(, DNR)?")


def status_from_message(message: Optional[str]) -> Optional[int]:
    """The Status Field named in a library message, or None. Used where the
    library returns an NVMe failure only as text (Fabrics Connect)."""
    m = _STATUS_RE.search(message or "")
    if not m:
        return None
    return (int(m.group(1), 16) & 0x7) << 8 | (int(m.group(2), 16) & 0xFF) | (0x4000 if m.group(3) else 0)


def from_code(code: int, message: str, status: Optional[int] = None) -> Error:
    """The exception for library return code code (negative)."""
    cls = BY_CODE.get(code, Error)
    if cls is NVMeStatusError:
        return cls(code, message, status)
    return cls(code, message)
