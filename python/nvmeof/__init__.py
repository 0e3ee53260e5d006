"""nvmeof: the Python API of the seed project over libnvmeof (a userspace
NVMe over Fabrics RDMA initiator in C), through ctypes; standard library only.

    import nvmeof
    with nvmeof.Controller.connect("192.0.2.20", "nqn.2026-07.io.example:storage") as controller:
        namespace = controller.namespace(1)
        with controller.allocate(128 * 4096) as buffer:
            namespace.read(buffer, slba=0, blocks=128)
            payload = buffer.read()

The library is found through $NVMEOF_LIB, next to this package, or on the
system's library path (see nvmeof._lib).
"""
import ctypes as _ctypes

from . import _lib
from ._lib import LibraryNotFoundError
from .controller import Controller, ControllerInfo, Queue, QueueStats, connect_options
from .errors import (BusyError, ClosedError, ConnectionRejectedError, CudaError, Error,
                     InvalidArgumentError, NotSupportedError, NVMeStatusError, OutOfMemoryError,
                     QueueFullError, TimeoutError, TransportError, UnreachableError)
from .memory import GpuMemory, HostMemory, MemoryRegion, RegisteredMemory
from .namespace import Namespace, NamespaceInfo

__version__ = "0.1.0"


def library_path():
    """The libnvmeof.so in use (loading it if needed)."""
    return _lib.path()


def cuda_available():
    """(True, "") when the CUDA driver API loads, else (False, why)."""
    why = _ctypes.create_string_buffer(256)
    rc = _lib.load().nvmeof_cuda_available(why, len(why))
    return rc == 0, why.value.decode("utf-8", "replace")


def status_name(status):
    """The NVMe spec's name of a 15-bit Status Field ("LBA Out of Range")."""
    return _lib.load().nvmeof_status_name(status).decode()


def strerror(code):
    """The name of an NVMEOF_E* code."""
    return _lib.load().nvmeof_strerror(code).decode()
