"""Bad arguments raise before anything is sent: the queue's command and
doorbell counts do not move, the buffers are untouched."""
import numpy as np
import pytest

import nvmeof
from conftest import ADDR, NQN_A, connect


def test_bad_io_arguments_send_nothing(ctrl):
    other = connect()
    q = ctrl.queue()
    ns = q.namespace(1)
    buf = ctrl.allocate(8192)  # 16 blocks of 512 B
    foreign = other.allocate(8192)
    closed = ctrl.allocate(4096)
    closed.close()
    np.frombuffer(buf, dtype=np.uint8)[:] = 0x77
    end = ns.info.size
    before = q.stats()
    bad = [
        (ValueError, lambda: ns.read(buf, end - 1, 2)),            # past the namespace
        (ValueError, lambda: ns.write(buf, end)),                  # starts past it
        (ValueError, lambda: ns.read(buf, -1)),
        (ValueError, lambda: ns.read(buf, 0, 0)),
        (ValueError, lambda: ns.read(buf, 0, 17)),                 # past the buffer
        (ValueError, lambda: ns.read(buf, 0, 16, buffer_offset=512)),
        (ValueError, lambda: ns.read(buf, 0, buffer_offset=8192)),  # nothing left
        (ValueError, lambda: ns.read(buf, 0, buffer_offset=100)),   # not whole blocks
        (ValueError, lambda: ns.read(buf, 0, buffer_offset=-1)),
        (ValueError, lambda: ns.read(buf, 0, 1 << 32)),
        (TypeError, lambda: ns.read(buf, 1.5)),
        (TypeError, lambda: ns.read(buf, 0, "8")),
        (TypeError, lambda: ns.read(bytearray(8192), 0)),          # not registered
        (ValueError, lambda: ns.read(foreign, 0)),                 # another controller's
        (ValueError, lambda: ns.write(closed, 0)),
        (ValueError, lambda: ns.read_many([(buf, 0, 1), (buf, end, 1), (buf, 8, 1)])),
        (TypeError, lambda: ns.read_many([(buf,)])),
        (TypeError, lambda: ns.write_many([buf])),
    ]
    for exc, call in bad:
        with pytest.raises(exc) as e:
            call()
        assert "nvmeof" in str(e.value)
    assert q.stats() == before  # not one command, not one doorbell
    assert buf.read() == b"\x77" * 8192
    ns.read(buf, 0, 1)  # and the queue still works
    assert q.stats().cmds == before.cmds + 1
    for r in (buf, foreign):
        r.close()
    q.close()
    other.close()


def test_bad_namespace_and_registration_arguments(ctrl):
    with pytest.raises(nvmeof.InvalidArgumentError) as e:
        ctrl.namespace(99)  # not active: the library says so
    assert isinstance(e.value, ValueError) and e.value.code == -1
    with pytest.raises(ValueError):
        ctrl.namespace(0)
    with pytest.raises(TypeError):
        ctrl.namespace("1")
    with pytest.raises(ValueError):
        ctrl.allocate(0)
    with pytest.raises(ValueError):
        ctrl.register(b"read-only bytes")
    with pytest.raises(ValueError):
        ctrl.register(np.zeros((64, 64), np.uint8)[:, ::2])  # not contiguous
    with pytest.raises(ValueError):
        ctrl.register(bytearray())
    with pytest.raises(TypeError):
        ctrl.register(object())
    with pytest.raises(TypeError):
        ctrl.register_gpu(bytearray(4096))  # host memory is not CUDA memory
    with pytest.raises(ValueError):
        ctrl.queue(depth=0)


def test_bad_connect_arguments_raise_before_connecting():
    for kw, exc in [({"port": 0}, ValueError), ({"port": 70000}, ValueError),
                    ({"queue_depth": 0}, ValueError), ({"keep_alive_ms": -1}, ValueError),
                    ({"timeout": 0}, ValueError), ({"source": 5}, TypeError),
                    ({"host_nqn": ""}, TypeError)]:
        with pytest.raises(exc):
            nvmeof.Controller(ADDR, NQN_A, **kw)
    with pytest.raises(TypeError):
        nvmeof.Controller(None, NQN_A)
