"""Namespace.zones() without a target: the library is replaced by a stub
whose Report Zones carries at most 3 zones a command, as a controller's
MDTS cuts a report of many zones; zones() asks again from the zone after
the last one returned until every zone is reported (or max_zones)."""
import pytest

from nvmeof import _lib
from nvmeof import namespace as N

ZSZE, NZONES, PER_CMD = 100, 10, 3


class Lib:
    def __init__(self):
        self.calls = []

    def nvmeof_zone_report_ext(self, h, ns, slba, f, partial, out, n, got, total, ms):
        self.calls.append(slba)
        first = slba // ZSZE
        # the zones from slba's in state f (0: all; 1: empty = the odd ones here)
        match = [i for i in range(first, NZONES) if f == 0 or i % 2]
        give = match[:min(n, PER_CMD)]
        for k, i in enumerate(give):
            out[k].zslba, out[k].wp, out[k].zcap = i * ZSZE, i * ZSZE + (0 if i % 2 else 5), ZSZE
            out[k].state, out[k].type = 1 if i % 2 else 2, 2
        got._obj.value = len(give)
        total._obj.value = len(give) if partial else len(match)
        return 0

    def nvmeof_zone_state_str(self, s):
        return {1: b"EMPTY", 2: b"IMP_OPENED"}[s]


class Queue:
    def _call(self, fn):
        return fn(1)


@pytest.fixture
def ns(monkeypatch):
    lib = Lib()
    monkeypatch.setattr(_lib, "load", lambda: lib)
    n = object.__new__(N.Namespace)
    n.nsid, n._ns, n.queue, n.controller = 1, None, Queue(), None
    n._zns = N.ZnsInfo(True, ZSZE, NZONES, 0, 0, 0, 0, 0)
    return n, lib


def test_every_zone_over_several_reports(ns):
    n, lib = ns
    z = n.zones()
    assert [x.slba for x in z] == [i * ZSZE for i in range(NZONES)]
    assert lib.calls == [0, 300, 600, 900]
    assert z[1].state == "EMPTY" and z[2].state == "IMP_OPENED" and z[2].wp == 205


def test_from_a_zone_and_at_most_max_zones(ns):
    n, lib = ns
    assert [x.slba for x in n.zones(250)] == [200, 300, 400, 500, 600, 700, 800, 900]
    assert [x.slba for x in n.zones(0, max_zones=5)] == [0, 100, 200, 300, 400]
    assert [x.slba for x in n.zones(0, max_zones=2)] == [0, 100]


def test_a_state_filter_goes_on_after_the_last_zone_returned(ns):
    n, lib = ns
    assert [x.slba for x in n.zones(state="empty")] == [100, 300, 500, 700, 900]
    assert [x.slba for x in n.zones(state="empty", partial=True)] == [100, 300, 500, 700, 900]
