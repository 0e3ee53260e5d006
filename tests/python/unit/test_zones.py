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
