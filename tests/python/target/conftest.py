"""Fixtures for tests against the test bed's real target (kernel nvmet over
Soft-RoCE): run them inside the guest, through tests/target/python.sh."""
import ctypes
import mmap
import os
import subprocess

import numpy as np
import pytest

import nvmeof

NEEDS = ("NVMEOF_TB_ADDR", "NVMEOF_TB_NQN_A", "NVMEOF_TB_NQN_B", "NVMEOF_CUDA_LIB")


def pytest_configure(config):
    missing = [n for n in NEEDS if not os.environ.get(n)]
    if missing:
        raise pytest.UsageError("missing %s: these tests run inside the test bed "
                                "(tests/testbed/run bash tests/target/python.sh)" % ", ".join(missing))


ADDR = os.environ.get("NVMEOF_TB_ADDR")
NQN_A = os.environ.get("NVMEOF_TB_NQN_A")
NQN_B = os.environ.get("NVMEOF_TB_NQN_B")


# NVMEOF_TB_TRTYPE=tcp: over the target's NVMe/TCP port (the same number)
TRTYPE = "tcp" if os.environ.get("NVMEOF_TB_TRTYPE") == "tcp" else "rdma"


def connect(**kw):
    kw.setdefault("timeout", 10.0)
    kw.setdefault("transport", TRTYPE)
    return nvmeof.Controller.connect(ADDR, NQN_A, **kw)


@pytest.fixture
def ctrl():
    """A controller on subsystem A; the test must leave nothing registered:
    closing it at the end fails the test otherwise."""
    c = connect()
    yield c
    c.close()


def pattern(n, seed):
    """n bytes that differ per test (seed) and per position."""
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def tb(*args):
    """The test bed's helper (tests/testbed/guest/tb): kernel initiator and target faults."""
    r = subprocess.run(["tb", *args], capture_output=True, text=True, timeout=60)
    if r.returncode:
        raise AssertionError("tb %s failed: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout.strip()


class KernelInitiator:
    """The kernel's nvme-rdma connected to subsystem A, for cross-checks."""

    def __enter__(self):
        self.dev1 = tb("kconnect", TRTYPE)
        return self

    def dev(self, nsid):
        return self.dev1 if nsid == 1 else tb("kdev", NQN_A, str(nsid))

    def read(self, nsid, offset, n):
        fd = os.open(self.dev(nsid), os.O_RDONLY | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, n)  # page-aligned, as O_DIRECT needs
            got = os.preadv(fd, [buf], offset)
            assert got == n, "kernel read %d of %d bytes" % (got, n)
            return bytes(buf)
        finally:
            os.close(fd)

    def write(self, nsid, offset, data):
        fd = os.open(self.dev(nsid), os.O_WRONLY | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, len(data))
            buf[:] = data
            assert os.pwritev(fd, [buf], offset) == len(data)
            os.fsync(fd)
        finally:
            os.close(fd)

    def __exit__(self, *exc):
        tb("kdisconnect")


class CudaDouble:
    """The CUDA test double (tests/cuda-double, host memory behind the cu*
    API) that the library loads through NVMEOF_CUDA_LIB: the same handle, so
    its log and controls see the library's calls."""

    def __init__(self):
        self.lib = ctypes.CDLL(os.environ["NVMEOF_CUDA_LIB"])
        self.lib.fakecuda_log.restype = ctypes.c_char_p
        self.lib.fakecuda_launch_fill.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t]
        self.lib.cuMemFree_v2.argtypes = [ctypes.c_ulonglong]
        assert self.lib.cuInit(0) == 0
        self.ctx = ctypes.c_void_p()
        assert self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), 0) == 0

    def log(self):
        return self.lib.fakecuda_log().decode().split()

    def _in_ctx(self, fn, *args):
        prev = ctypes.c_void_p()
        assert self.lib.cuCtxPushCurrent_v2(self.ctx) == 0
        try:
            return fn(*args)
        finally:
            self.lib.cuCtxPopCurrent_v2(ctypes.byref(prev))

    def alloc(self, n):
        d = ctypes.c_ulonglong()
        assert self._in_ctx(self.lib.cuMemAlloc_v2, ctypes.byref(d), n) == 0
        return d.value

    def free(self, d):
        self._in_ctx(self.lib.cuMemFree_v2, d)


class FakeCudaTensor:
    """Stands in for torch.empty(n, dtype=torch.uint8, device="cuda:0"): device
    memory of the double, described by __cuda_array_interface__ only."""

    def __init__(self, double, n):
        self.double, self.n = double, n
        self.ptr = double.alloc(n)

    @property
    def __cuda_array_interface__(self):
        return {"shape": (self.n,), "typestr": "|u1", "data": (self.ptr, False),
                "version": 3, "strides": None, "stream": None}

    def host_bytes(self):
        """The double's device memory is host memory: look at it directly."""
        return ctypes.string_at(self.ptr, self.n)

    def free(self):
        self.double.free(self.ptr)


@pytest.fixture(scope="session")
def cuda():
    return CudaDouble()
