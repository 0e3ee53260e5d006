"""nvmeof.protocol's builders and Completion, without a target: the bytes
the NVMe specification lays out."""
import struct

import pytest

import nvmeof
from nvmeof import protocol


class Region:
    addr, length, rkey = 0x7F0000001000, 65536, 0xABCDEF12


def test_rw_command_layout():
    c = protocol.rw_command(protocol.NVME_CMD_READ, 3, 0x123456789, 8, Region(), lba_size=512, buffer_offset=4096)
    assert len(c) == 64 and c[0] == 0x02 and c[1] >> 6 == 1
    assert struct.unpack_from("<I", c, 4)[0] == 3
    assert struct.unpack_from("<QI", c, 40) == (0x123456789, 7)
    assert struct.unpack_from("<Q", c, 24)[0] == Region.addr + 4096
    assert int.from_bytes(c[32:35], "little") == 4096
    assert struct.unpack_from("<I", c, 35)[0] == Region.rkey
    assert c[39] == 0x40
    assert protocol.has_keyed_sgl(c)
    with pytest.raises(ValueError):
        protocol.rw_command(protocol.NVME_CMD_READ, 1, 0, 200, Region(), lba_size=512)


def test_identify_and_features():
    c = protocol.identify(Region(), controller=True)
    assert c[0] == 0x06 and struct.unpack_from("<I", c, 40)[0] == 1
    assert int.from_bytes(c[32:35], "little") == 4096
    c = protocol.identify(Region(), nsid=5)
    assert struct.unpack_from("<II", c, 4)[0] == 5 and struct.unpack_from("<I", c, 40)[0] == 0
    c = protocol.set_features(0x07, 0x00030003)
    assert c[0] == 0x09 and struct.unpack_from("<II", c, 40) == (7, 0x00030003)
    assert not protocol.has_keyed_sgl(c)
    assert nvmeof.NVME_RDMA_PORT == 4420


def test_completion_fields_and_status():
    raw = struct.pack("<IIHHHH", 0xDEAD, 1, 7, 2, 0x1234, (0x85 << 1) | (0x2 << 9) | (1 << 15))
    c = nvmeof.Completion.from_bytes(raw)
    assert (c.result, c.sq_head, c.sq_id, c.command_id) == (0xDEAD, 7, 2, 0x1234)
    assert (c.status_code, c.status_type, c.do_not_retry, c.succeeded) == (0x85, 2, True, False)
    assert c.to_bytes() == raw
    with pytest.raises(nvmeof.NVMeStatusError) as e:
        c.raise_for_status()
    assert isinstance(e.value, OSError) and e.value.completion is c
    assert e.value.sct == 2 and e.value.sc == 0x85
    assert nvmeof.Completion.from_bytes(bytes(16)).raise_for_status().succeeded


def test_execute_timeout_reaches_the_library_whole(monkeypatch):
    # ctypes keeps only the low 32 bits of an int for a uint32 argument:
    # 4294967.297 s must not become 1 ms. The library is replaced by a
    # recorder (the argument conversion is what is tested).
    from nvmeof import lowlevel

    seen = []

    class Lib:
        def nvmeof_io_raw_sync(self, h, raw, mr, off, length, flags, cpl, ms):
            seen.append(ms)
            return 0

    class Handle:
        closed, _h = False, 1

    monkeypatch.setattr(lowlevel, "_declared", Lib())
    q = lowlevel.RawQueue(Handle(), Handle())
    for timeout, want in ((4294967.297, 0xFFFFFFFF), (float("inf"), 0xFFFFFFFF), (2.5, 2500), (0, 1)):
        q.execute(protocol.flush(1), timeout=timeout)
        assert seen[-1] == want, (timeout, seen[-1])
