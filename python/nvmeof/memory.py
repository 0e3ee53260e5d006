"""Registered memory: regions that commands name as (region, offset).

Controller.allocate, Controller.register and Controller.register_gpu make
these; close() (or the with block) deregisters. A region must be closed
before its controller, and must have no command in flight when closed.
"""
from __future__ import annotations

import ctypes
import mmap
import operator
from typing import Any, Optional

from . import _lib


class MemoryRegion:
    """What every region has: the controller, the length in bytes, the
    address, and close(); read()/write() copy bytes out of and into it."""

    _mr = None          # struct nvmeof_mr *, None once closed
    _controller = None
    _length = 0
    _address = 0
    is_gpu = False

    @property
    def controller(self) -> Any:
        """The Controller it is registered with."""
        return self._controller

    @property
    def length(self) -> int:
        """Its size in bytes."""
        return self._length

    @property
    def address(self) -> int:
        """The registered address (a CUDA device pointer for GPU regions)."""
        return self._address

    @property
    def closed(self) -> bool:
        """True once deregistered."""
        return self._mr is None

    # The low-level API's names (nvmeof.protocol puts them in keyed SGLs).
    @property
    def addr(self) -> int:
        """The registered address, as address."""
        return self._address

    @property
    def rkey(self) -> int:
        """The key the target's NIC uses to reach the region."""
        from .lowlevel import region_key
        return region_key(self, remote=True)

    @property
    def lkey(self) -> int:
        """The key for local verbs on the region."""
        from .lowlevel import region_key
        return region_key(self, remote=False)

    def close(self) -> None:
        """Deregisters. Raises nvmeof.Error (the region stays registered) if
        the library refuses."""
        if self._mr is not None:
            self._controller._release(self)
            self._after_release()

    def _after_release(self):
        pass

    def __enter__(self) -> "MemoryRegion":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _span(self, offset, length):
        if self._mr is None:
            raise ValueError("nvmeof: the memory region is closed")
        offset = _index(offset, "offset")
        if length is None:
            length = self._length - offset
        length = _index(length, "length")
        if offset < 0 or length < 0 or offset + length > self._length:
            raise ValueError("nvmeof: %d bytes at offset %d are outside the %d-byte region"
                             % (length, offset, self._length))
        return offset, length

    def read(self, length: Optional[int] = None, offset: int = 0) -> bytes:
        """The region's bytes (from offset, length bytes; default: all), copied."""
        offset, length = self._span(offset, length)
        return ctypes.string_at(self._address + offset, length)

    def write(self, data: Any, offset: int = 0) -> int:
        """Copies data (any bytes-like object) into the region at offset."""
        with memoryview(data) as mv:
            mv = mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv
            offset, n = self._span(offset, mv.nbytes)
            src = (ctypes.c_char * n).from_buffer_copy(mv) if n else b""
            ctypes.memmove(self._address + offset, src, n)
        return n

    def __repr__(self):
        state = "closed" if self.closed else "0x%x" % self._address
        return "<nvmeof.%s %d bytes %s>" % (type(self).__name__, self._length, state)


class HostMemory(MemoryRegion, mmap.mmap):
    """Page-aligned, zeroed host memory (an anonymous mapping), registered.
    It is a buffer: memoryview(region) and numpy.frombuffer(region) share its
    memory without a copy. While registered, the mapping is pinned: it cannot
    be resized or unmapped under the NIC. After close() it stays mapped as
    long as a view of it exists, so a view never dangles."""

    def __new__(cls, length):
        self = super().__new__(cls, -1, length)
        self._pin = (ctypes.c_char * length).from_buffer(self)
        self._address = ctypes.addressof(self._pin)
        self._length = length
        return self

    def __init__(self, length: int) -> None:
        pass

    def _after_release(self):
        self._pin = None
        try:
            mmap.mmap.close(self)
        except BufferError:
            pass  # views remain; the mapping goes with the last of them

    # mmap's own I/O and file methods do not apply to a region
    read = MemoryRegion.read
    write = MemoryRegion.write


class RegisteredMemory(MemoryRegion):
    """An existing host allocation, registered in place; obj is kept alive
    (and, for buffer-protocol objects, pinned against resizing) while
    registered."""

    def __init__(self, obj: Any, address: int, length: int, pin: Any) -> None:
        self.obj = obj
        self._pin = pin
        self._address = address
        self._length = length

    def _after_release(self):
        self._pin = None
        self.obj = None


class GpuMemory(MemoryRegion):
    """CUDA device memory given by __cuda_array_interface__, registered for
    GPUDirect RDMA; obj is kept alive while registered. read()/write() copy
    through the host (for checking data, not the zero-copy path)."""

    is_gpu = True

    def __init__(self, obj: Any, address: int, length: int) -> None:
        self.obj = obj
        self._address = address
        self._length = length

    @property
    def registration(self) -> Optional[str]:
        """How it was registered: "dma-buf" or "peermem"."""
        if self._mr is None:
            return None
        r = _lib.load().nvmeof_mr_cuda_registration(self._mr)
        return r.decode() if r else None

    def _copy(self, offset, host, n, to_gpu):
        from .errors import from_code
        rc = _lib.load().nvmeof_cuda_copy(self._mr, offset, host, n, to_gpu)
        if rc:
            raise from_code(rc, _lib.errmsg())

    def read(self, length: Optional[int] = None, offset: int = 0) -> bytes:
        """The region's bytes, copied from the GPU through the host."""
        offset, length = self._span(offset, length)
        buf = ctypes.create_string_buffer(length)
        if length:
            self._copy(offset, buf, length, False)
        return buf.raw

    def write(self, data: Any, offset: int = 0) -> int:
        """Copies data to the GPU region at offset, through the host."""
        with memoryview(data) as mv:
            mv = mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv
            offset, n = self._span(offset, mv.nbytes)
            buf = ctypes.create_string_buffer(mv.tobytes(), n)
        if n:
            self._copy(offset, buf, n, True)
        return n

    def _after_release(self):
        self.obj = None


def _index(v, name):
    if isinstance(v, bool):
        raise TypeError("nvmeof: %s must be an integer, not bool" % name)
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError("nvmeof: %s must be an integer, not %s" % (name, type(v).__name__)) from None


def check_length(length):
    n = _index(length, "length")
    if n <= 0:
        raise ValueError("nvmeof: length must be positive, not %d" % n)
    return n


def host_buffer(obj):
    """(address, nbytes, pin) of a contiguous writable host buffer: through
    the buffer protocol (bytearray, numpy, array.array, mmap...) or
    __array_interface__ (e.g. a CPU tensor). pin holds the exporter's buffer
    for as long as it lives, or is None for __array_interface__."""
    if hasattr(obj, "__cuda_array_interface__"):
        raise TypeError("nvmeof: %s is CUDA memory: use Controller.register_gpu()" % type(obj).__name__)
    try:
        mv = memoryview(obj)
    except TypeError:
        mv = None
    if mv is not None:
        with mv:
            if mv.readonly:
                raise ValueError("nvmeof: %s is read-only: reads need writable memory" % type(obj).__name__)
            if not mv.c_contiguous:
                raise ValueError("nvmeof: %s is not contiguous: register a contiguous buffer"
                                 % type(obj).__name__)
            n = mv.nbytes
        if n == 0:
            raise ValueError("nvmeof: %s is empty" % type(obj).__name__)
        pin = (ctypes.c_char * n).from_buffer(obj)
        return ctypes.addressof(pin), n, pin
    iface = getattr(obj, "__array_interface__", None)
    if iface is None:
        raise TypeError("nvmeof: %s is neither a buffer nor has __array_interface__"
                        % type(obj).__name__)
    addr, n = interface_span(iface, "__array_interface__", type(obj).__name__)
    return addr, n, None


def cuda_buffer(obj):
    """(device pointer, nbytes) from obj.__cuda_array_interface__."""
    iface = getattr(obj, "__cuda_array_interface__", None)
    if iface is None:
        raise TypeError("nvmeof: %s has no __cuda_array_interface__ (host memory: use "
                        "Controller.register())" % type(obj).__name__)
    return interface_span(iface, "__cuda_array_interface__", type(obj).__name__)


def interface_span(iface, attr, what):
    """(address, nbytes) of a C-contiguous, writable array described by a
    numpy-style array interface dict (version 2 or 3)."""
    try:
        data = iface["data"]
        shape = tuple(int(d) for d in iface["shape"])
        typestr = iface["typestr"]
        itemsize = int(typestr[2:])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError("nvmeof: %s of %s is malformed: %r" % (attr, what, e)) from None
    if not isinstance(data, tuple) or len(data) != 2:
        raise ValueError("nvmeof: %s of %s: data must be (pointer, read_only)" % (attr, what))
    addr, readonly = int(data[0]), bool(data[1])
    if readonly:
        raise ValueError("nvmeof: %s is read-only: reads need writable memory" % what)
    if iface.get("mask") is not None:
        raise ValueError("nvmeof: %s is a masked array" % what)
    n = itemsize
    for d in shape:
        n *= d
    if n == 0:
        raise ValueError("nvmeof: %s is empty" % what)
    if not addr:
        raise ValueError("nvmeof: %s has a NULL data pointer" % what)
    strides = iface.get("strides")
    if strides is not None:
        want = itemsize
        for d, s in reversed(list(zip(shape, strides))):
            if d != 1 and s != want:
                raise ValueError("nvmeof: %s is not C-contiguous (strides %r)" % (what, tuple(strides)))
            want *= d
    return addr, n
