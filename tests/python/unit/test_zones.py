"""Namespace.zones() without a target: the library is replaced by a stub
of nvmeof_zone_report_all (the report over as many commands as MDTS makes
it, tested in tests/unit/test_zns.c), which records what zones() passes:
the namespace's zone size, the start, the reporting option, room for every
zone by default; zones() returns the zones the library decoded."""
import pytest

from nvmeof import _lib
from nvmeof import namespace as N

ZSZE, NZONES = 100, 10


class Lib:
    def __init__(self, give=NZONES, rc=0):
        self.calls, self.give, self.rc = [], give, rc

    def nvmeof_zone_report_all(self, h, ns, zsze, slba, f, partial, out, n, got, total, ms):
        self.calls.append((zsze, slba, f, partial, n))
        k = min(n, self.give)
        for i in range(k):
            out[i].zslba, out[i].wp, out[i].zcap, out[i].state, out[i].type = i * ZSZE, i * ZSZE + 5, ZSZE, 2, 2
        got._obj.value, total._obj.value = k, NZONES
        return self.rc

    def nvmeof_zone_state_str(self, s):
        return {1: b"EMPTY", 2: b"IMP_OPENED"}[s]

    def nvmeof_errmsg(self):
        return b"Report Zones nsid 1 slba 0: Invalid Command Opcode"


class Queue:
    def _call(self, fn):
        return fn(1)


def namespace(monkeypatch, lib):
    monkeypatch.setattr(_lib, "load", lambda: lib)
    n = object.__new__(N.Namespace)
    n.nsid, n._ns, n.queue, n.controller = 1, None, Queue(), None
    n._zns = N.ZnsInfo(True, ZSZE, NZONES, 0, 0, 0, 0, 0)
    return n


def test_every_zone_by_default(monkeypatch):
    lib = Lib()
    z = namespace(monkeypatch, lib).zones()
    assert lib.calls == [(ZSZE, 0, 0, False, NZONES)]
    assert [x.slba for x in z] == [i * ZSZE for i in range(NZONES)]
    assert z[2].state == "IMP_OPENED" and z[2].wp == 205 and z[2].capacity == ZSZE


def test_start_state_limit_and_partial_reach_the_library(monkeypatch):
    lib = Lib(give=3)
    z = namespace(monkeypatch, lib).zones(250, state="empty", max_zones=5, partial=True)
    assert lib.calls == [(ZSZE, 250, 1, True, 5)]
    assert len(z) == 3


def test_a_failure_raises_with_the_librarys_message(monkeypatch):
    from nvmeof.errors import Error
    with pytest.raises(Error, match="Invalid Command Opcode"):
        namespace(monkeypatch, Lib(rc=-5)).zones()


class Region:
    addr, length, rkey = 0x10000, 4096, 0x1234


def test_zone_commands_carry_the_action_filter_and_length():
    """The async API's zone commands as the ZNS specification lays them out."""
    import struct

    from nvmeof import protocol as P
    c = P.zone_mgmt_send(1, 0x1_0000_0400, "reset", select_all=True)
    assert c[0] == 0x79 and struct.unpack_from("<IIII", c, 40) == (0x400, 1, 0, 0x104)
    c = P.report_zones(1, 2048, Region(), length=192, state="full")
    assert c[0] == 0x7A and struct.unpack_from("<IIII", c, 40) == (2048, 0, 192 // 4 - 1, 5 << 8 | 1 << 16)
    assert P.has_keyed_sgl(c) and int.from_bytes(c[32:35], "little") == 192
    c = P.zone_append(1, 1024, 3, Region(), lba_size=512)
    assert c[0] == 0x7D and struct.unpack_from("<III", c, 40) == (1024, 0, 2)
    with pytest.raises(ValueError, match="zone action 'rewind'"):
        P.zone_mgmt_send(1, 0, "rewind")
    with pytest.raises(ValueError, match="at least 64, not 60"):
        P.report_zones(1, 0, Region(), length=60)


def test_zone_report_parse_reads_no_more_than_the_count():
    from nvmeof import protocol as P
    d = bytearray(64 + 3 * 64)
    d[0] = 2  # two zones counted, room for three
    for i in range(3):
        o = 64 + i * 64
        d[o], d[o + 1] = 2, (0xE if i == 1 else 0x1) << 4
        d[o + 8:o + 32] = (ZSZE).to_bytes(8, "little") + (i * ZSZE).to_bytes(8, "little") + \
            (i * ZSZE + i).to_bytes(8, "little")
    total, zones = P.parse_zone_report(bytes(d))
    assert total == 2 and zones == [(2, 1, 0, ZSZE, 0, 0), (2, 0xE, 0, ZSZE, ZSZE, ZSZE + 1)]
