"""The seed's README examples, as written, against the real target. What
differs: the test bed's address and subsystem in place of 192.0.2.20's; a
bytearray and a numpy array in place of a CPU tensor; for the GPU example a
tensor of the CUDA test double (host memory behind the cu* API) exposing
__cuda_array_interface__ in place of torch's, and no torch.cuda.device()
(nvmeof makes the region's own context current for its calls)."""
import os

import numpy as np
import pytest

import nvmeof
from conftest import ADDR, NQN_A, FakeCudaTensor, connect, pattern


def put(nsid, slba, data):
    """Stores data on the namespace through another controller, so the
    example itself only reads."""
    with connect() as c:
        with c.register(bytearray(data)) as r:
            c.namespace(nsid).write(r, slba)


def test_host_memory_example():
    lba = 512  # namespace 1 has 512-byte blocks: 128 of them fill 64 KiB of the buffer
    want = pattern(128 * lba, 1).tobytes()
    put(1, 0, want)

    # --- the seed's example ---
    with nvmeof.Controller.connect(
        ADDR,
        NQN_A,
        source=ADDR,  # the guest's own address on rxe0 (the seed: 192.0.2.21)
    ) as controller:
        namespace = controller.namespace(1)
        with controller.allocate(128 * 4096) as buffer:
            namespace.read(buffer, slba=0, blocks=128)
            payload = buffer.read()
    # ---

    assert namespace.lba_size == lba
    assert len(payload) == 128 * 4096
    assert payload[:128 * lba] == want
    assert payload[128 * lba:] == bytes(128 * 4096 - 128 * lba)  # allocate() zeroes, read stopped


def test_host_memory_example_with_4k_blocks_fills_the_buffer():
    want = pattern(128 * 4096, 2).tobytes()
    put(2, 0, want)
    with nvmeof.Controller.connect(ADDR, NQN_A, source=ADDR) as controller:
        namespace = controller.namespace(2)
        with controller.allocate(128 * 4096) as buffer:
            namespace.read(buffer, slba=0, blocks=128)
            payload = buffer.read()
            # the buffer protocol: views of the same memory, no copy
            view = np.frombuffer(buffer, dtype=np.uint8)
            assert memoryview(buffer).nbytes == 128 * 4096
            assert view[:8].tobytes() == want[:8]
            del view
    assert payload == want


@pytest.mark.parametrize("kind", ["bytearray", "numpy"])
def test_register_existing_allocation(kind, ctrl):
    want = pattern(64 * 1024, 3)
    put(1, 4096, want.tobytes())
    array_or_cpu_tensor = bytearray(64 * 1024) if kind == "bytearray" else np.zeros((16, 1024, 4), np.uint8)
    with ctrl.register(array_or_cpu_tensor) as region:
        assert region.length == 64 * 1024
        ctrl.namespace(1).read(region, slba=4096)  # blocks=None: the whole buffer
    got = bytes(array_or_cpu_tensor) if kind == "bytearray" else array_or_cpu_tensor.tobytes()
    assert got == want.tobytes()  # landed in the caller's own object, in place


def test_direct_gpu_memory_example(cuda):
    on_disk = pattern(128 * 4096, 4).tobytes()
    put(1, 0, on_disk)
    produced = 0x5A

    # --- the seed's example ---
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"

    tensor = FakeCudaTensor(cuda, 128 * 4096)  # torch.empty(128 * 4096, dtype=torch.uint8, device="cuda:0")

    with nvmeof.Controller.connect(
        ADDR, NQN_A
    ) as controller:
        namespace = controller.namespace(1)
        with controller.register_gpu(tensor) as gpu_mr:
            # Target NVMe -> target RDMA WRITE -> local GPU memory.
            # Namespace.read flushes completed GPUDirect writes before returning.
            mark = len(cuda.log())
            namespace.read(gpu_mr, slba=0, blocks=128)
            read_calls = cuda.log()[mark:]
            landed = tensor.host_bytes()

            # a "kernel" still producing the data when the write is issued
            cuda.lib.fakecuda_launch_fill(tensor.ptr, 128 * 512, produced)
            # Local GPU memory -> target RDMA READ -> target NVMe.
            # Namespace.write synchronizes the current CUDA context first.
            mark = len(cuda.log())
            namespace.write(gpu_mr, slba=1024, blocks=128)
            namespace.flush()
            write_calls = cuda.log()[mark:]
            assert gpu_mr.registration in ("dma-buf", "peermem")
    # ---

    tensor.free()
    assert landed[:128 * 512] == on_disk[:128 * 512]
    assert "cuFlushGPUDirectRDMAWrites" in read_calls
    assert "cuCtxSynchronize" in write_calls
    with connect() as c, c.allocate(128 * 512) as check:
        c.namespace(1).read(check, slba=1024)
        assert check.read() == bytes([produced]) * (128 * 512)  # the target got what the "kernel" made
