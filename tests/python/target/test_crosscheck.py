"""Data written through Python is read back by the kernel's own initiator
(nvme-rdma) and the reverse, so the binding does not only agree with itself."""
import numpy as np

from conftest import KernelInitiator, connect, pattern

MiB = 1 << 20


def test_python_writes_kernel_reads():
    want = pattern(4 * MiB, 10).tobytes()
    slba = 300000
    with connect() as c:
        with c.allocate(4 * MiB) as buf:
            buf.write(want)
            c.namespace(1).write(buf, slba)
    with KernelInitiator() as k:
        got = k.read(1, slba * 512, 4 * MiB)
    assert got == want


def test_kernel_writes_python_reads_into_numpy():
    want = pattern(MiB, 11).tobytes()
    slba = 320000
    with KernelInitiator() as k:
        k.write(1, slba * 512, want)
    arr = np.zeros(MiB // 8, dtype=np.uint64)
    with connect() as c:
        with c.register(arr) as r:
            c.namespace(1).read(r, slba)
    assert arr.tobytes() == want


def test_4k_namespace_both_ways():
    ours = pattern(256 * 1024, 12).tobytes()
    theirs = pattern(256 * 1024, 13).tobytes()
    with connect() as c:
        ns = c.namespace(2)
        assert ns.lba_size == 4096
        with c.register(bytearray(ours)) as r:
            ns.write(r, 100)
    with KernelInitiator() as k:
        assert k.read(2, 100 * 4096, len(ours)) == ours
        k.write(2, 200 * 4096, theirs)
    with connect() as c, c.allocate(len(theirs)) as buf:
        c.namespace(2).read(buf, 200)
        assert buf.read() == theirs
