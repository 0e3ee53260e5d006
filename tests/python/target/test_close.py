"""Closing a controller with a live registration or queue raises the
library's busy error and loses nothing; registrations keep their objects
alive and pinned."""
import pytest

import nvmeof
from conftest import connect, pattern


def test_close_with_live_registration_is_busy_and_loses_nothing():
    c = connect()
    ns = c.namespace(1)
    want = pattern(65536, 40).tobytes()
    buf = c.allocate(65536)
    buf.write(want)
    ns.write(buf, 900000)
    with pytest.raises(nvmeof.BusyError) as e:
        c.close()
    assert e.value.code == -9 and "registered region" in str(e.value)
    assert not c.closed and not buf.closed
    buf.write(bytes(65536))
    ns.read(buf, 900000)  # the controller and the region still work
    assert buf.read() == want
    buf.close()
    c.close()
    assert c.closed


def test_close_with_live_queue_is_busy():
    c = connect()
    q = c.queue()
    with pytest.raises(nvmeof.BusyError):
        c.close()
    with c.allocate(4096) as buf:
        q.namespace(1).read(buf, 0)
    q.close()
    c.close()


def test_with_block_refuses_to_drop_a_live_registration():
    with pytest.raises(nvmeof.BusyError):
        with connect() as c:
            buf = c.allocate(4096)
    assert not c.closed
    buf.close()
    c.close()


def test_registration_pins_and_keeps_the_object(ctrl):
    data = bytearray(8192)
    region = ctrl.register(data)
    with pytest.raises(BufferError):
        data.extend(b"x")  # would move the memory under the NIC
    del data
    region.obj[:4] = b"abcd"  # still alive through the region
    assert region.read(4) == b"abcd"
    obj = region.obj
    region.close()
    obj.extend(b"x")  # released: free to resize again
    with ctrl.allocate(4096) as buf:
        with pytest.raises(BufferError):
            buf.resize(8192)
