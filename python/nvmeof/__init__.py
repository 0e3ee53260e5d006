"""nvmeof: NVMe over Fabrics RDMA block I/O from Python, into memory you
registered, with no kernel block layer: the Python API of the `nvmeof`
package (PyPI; pure Python over the ibverbs package), re-created over
libnvmeof, this project's C initiator, through ctypes.

    import nvmeof
    with nvmeof.Controller.connect("192.0.2.20", "nqn.2026-07.io.example:storage") as controller:
        namespace = controller.namespace(1)
        with controller.allocate(128 * 4096) as buffer:
            namespace.read(buffer, slba=0, blocks=128)
            payload = buffer.read()

Controller connects and owns queues and registered memory; Namespace reads,
writes and flushes; errors are nvmeof.Error subclasses, one per library
code. help(nvmeof.Controller) lists the connection options.

The package is pure Python and needs the C library, libnvmeof.so.0, at run
time: `make install` from the nvmeof source tree (into /usr/local, or
PREFIX=sys.prefix for a virtual environment), or NVMEOF_LIB=/path/to/it.
Importing works without it; the first call that needs it raises
nvmeof.LibraryNotFoundError (an ImportError) naming every place it looked
and how to install it (see nvmeof._lib).
"""
import ctypes as _ctypes

from . import _lib
from ._lib import LibraryNotFoundError
from .controller import (Controller, ControllerInfo, Queue, QueueStats, connect_defaults,
                         connect_options)
from .errors import (BusyError, ClosedError, ConnectionRejectedError, CudaError, Error,
                     InvalidArgumentError, NoDeviceError, NotSupportedError, NVMeStatusError,
                     OutOfMemoryError, QueueFullError, TimeoutError, TransportError, UnreachableError)
from .memory import GpuMemory, HostMemory, MemoryRegion, RegisteredMemory
from .namespace import Namespace, NamespaceInfo, ZnsInfo, Zone
from .paths import Paths
from .discovery import discover
from . import protocol
from .lowlevel import Completion, RawQueue, RDMAQueue, Request
from .protocol import NVME_RDMA_PORT

HostBuffer = HostMemory  # the seed's name: addr, length, rkey, lkey, read, write, close

# This package's own version, released with the C library's (the Makefile's
# VERSION; tests/unit/version.sh holds them equal); the package's metadata
# reads it from here (pyproject.toml). The library actually loaded says its
# own: library_version().
__version__ = "0.6.0"


def library_version() -> str:
    """The version of the libnvmeof.so loaded (nvmeof_version()), which may
    differ from this package's __version__ when another library is found."""
    lib = _lib.load()
    f = getattr(lib, "nvmeof_version", None)
    if f is None:  # a library from before nvmeof_version() existed
        return "older than 0.5"
    f.restype = _ctypes.c_char_p
    f.argtypes = []
    return f().decode()


def library_path() -> str:
    """The libnvmeof.so in use (loading it if needed)."""
    return _lib.path()


def cuda_available() -> "tuple[bool, str]":
    """(True, "") when the CUDA driver API loads, else (False, why)."""
    why = _ctypes.create_string_buffer(256)
    rc = _lib.load().nvmeof_cuda_available(why, len(why))
    return rc == 0, why.value.decode("utf-8", "replace")


def status_name(status: int) -> str:
    """The NVMe spec's name of a 15-bit Status Field ("LBA Out of Range")."""
    return _lib.load().nvmeof_status_name(status).decode()


def strerror(code: int) -> str:
    """The name of an NVMEOF_E* code."""
    return _lib.load().nvmeof_strerror(code).decode()
