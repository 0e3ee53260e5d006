"""register_gpu beyond the seed's example, with the CUDA test double."""
import pytest

import nvmeof
from conftest import FakeCudaTensor, pattern


def test_read_many_into_gpu_flushes_once_after_all(ctrl, cuda):
    want = pattern(4 * 65536, 50).tobytes()
    tensor = FakeCudaTensor(cuda, len(want))
    ns = ctrl.namespace(1)
    with ctrl.register(bytearray(want)) as src:
        ns.write(src, 950000)
    with ctrl.register_gpu(tensor) as g:
        mark = len(cuda.log())
        ns.read_many([(g, 950000 + i * 128, 128, i * 65536) for i in range(4)])
        calls = cuda.log()[mark:]
        assert calls.count("cuFlushGPUDirectRDMAWrites") == 1
        assert g.read() == want  # through cuMemcpyDtoH
        assert tensor.host_bytes() == want
    tensor.free()


def test_gpu_region_checks(ctrl, cuda):
    tensor = FakeCudaTensor(cuda, 4096)
    with pytest.raises(TypeError):
        ctrl.register(tensor)  # CUDA memory through the host path
    with ctrl.register_gpu(tensor) as g:
        assert g.is_gpu and g.length == 4096 and g.address == tensor.ptr
        g.write(b"\x01\x02")
        assert tensor.host_bytes()[:2] == b"\x01\x02"
    tensor.free()

    class HostPretendingToBeCuda:
        __cuda_array_interface__ = {"shape": (4096,), "typestr": "|u1", "version": 3,
                                    "data": (tensor.ptr + (1 << 40), False)}
    with pytest.raises(nvmeof.CudaError) as e:
        ctrl.register_gpu(HostPretendingToBeCuda())
    assert "not CUDA device memory" in str(e.value)
