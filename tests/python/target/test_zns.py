"""Zoned namespaces from Python against subsystem Z of the test bed (a zoned
null_blk through nvmet: 16 zones of 1024 blocks of 4 KiB, ZASL 128 KiB)."""
import os

import pytest

import nvmeof

from conftest import ADDR, TRTYPE, pattern

NQN_Z = os.environ.get("NVMEOF_TB_NQN_Z")
ZPORT = os.environ.get("NVMEOF_TB_ZPORT")
ZONE = 1024


@pytest.fixture
def zns():
    c = nvmeof.Controller.connect(ADDR, NQN_Z, port=ZPORT, timeout=10.0, transport=TRTYPE)
    ns = c.namespace(1)
    ns.zone_reset(all=True)
    yield c, ns
    ns.zone_reset(all=True)
    c.close()


def test_zones_states_and_append_returning_the_lba(zns):
    c, ns = zns
    info = ns.zns_info()
    assert info.zoned and info.zone_size == ZONE and info.nr_zones == 16
    assert info.max_open == 4 and info.max_active == 6 and info.zasl_bytes == 128 * 1024
    zones = ns.zones()
    assert [z.slba for z in zones] == [i * ZONE for i in range(16)]
    assert {z.state for z in zones} == {"EMPTY"}
    ns.zone_open(ZONE)
    ns.zone_finish(2 * ZONE)
    assert ns.zones(ZONE, max_zones=1)[0].state == "EXP_OPENED"
    assert [z.slba for z in ns.zones(state="full")] == [2 * ZONE]
    ns.zone_close(ZONE)
    assert ns.zones(ZONE, max_zones=1)[0].state == "EMPTY"  # closed with nothing written: empty again
    buf = c.allocate(3 * 4096)
    data = pattern(3 * 4096, 7).tobytes()
    buf.write(data)
    lbas = [ns.append(buf, 3 * ZONE, 1, buffer_offset=i * 4096) for i in range(3)]
    assert lbas == [3 * ZONE, 3 * ZONE + 1, 3 * ZONE + 2]
    z = ns.zones(3 * ZONE, max_zones=1)[0]
    assert z.state == "IMP_OPENED" and z.wp == 3 * ZONE + 3
    out = c.allocate(3 * 4096)
    ns.read(out, 3 * ZONE, 3)
    assert out.read() == data
    with pytest.raises(nvmeof.InvalidArgumentError, match="Zone Append Size Limit"):
        big = c.allocate(33 * 4096)
        try:
            ns.append(big, 4 * ZONE, 33)
        finally:
            big.close()
    ns.zone_reset(3 * ZONE)
    assert ns.zones(3 * ZONE, max_zones=1)[0].wp == 3 * ZONE
    buf.close()
    out.close()


def test_async_zone_send_report_and_append(zns):
    """The async API's zone calls on one I/O queue: an open, a report (the
    state the open left), Zone Appends overlapped that each return where
    they landed (the data read back there), a reset of every zone."""
    import asyncio

    from nvmeof import aio

    c, ns = zns
    q = c.queue()
    report, buf, out = c.allocate(64 + 2 * 64), c.allocate(4 * 4096), c.allocate(4 * 4096)
    data = pattern(4 * 4096, 11).tobytes()
    buf.write(data)

    async def main():
        aq = aio.AsyncQueue(q)
        try:
            await aq.zone_send(1, 5 * ZONE, "open")
            opened = await aq.zones(1, 5 * ZONE, report)
            lbas = await asyncio.gather(*(aq.zone_append(1, 6 * ZONE, 1, buf, lba_size=4096, buffer_offset=i * 4096)
                                          for i in range(4)))
            after = await aq.zones(1, 6 * ZONE, report, length=128)
            await aq.read(1, 6 * ZONE, 4, out, lba_size=4096)
            await aq.zone_send(1, 0, "reset", all=True)
            empty = await aq.zones(1, 5 * ZONE, report, state="empty")
            return opened, lbas, after, empty
        finally:
            aq.close()

    try:
        opened, lbas, after, empty = asyncio.run(main())
        got = out.read()
    finally:
        for r in (report, buf, out):
            r.close()
        q.close()
    assert [(z.slba, z.state) for z in opened] == [(5 * ZONE, "EXP_OPENED"), (6 * ZONE, "EMPTY")]
    assert sorted(lbas) == [6 * ZONE + i for i in range(4)]
    assert len(after) == 1 and after[0].state == "IMP_OPENED" and after[0].wp == 6 * ZONE + 4
    # each block landed where its append said
    for i, lba in enumerate(lbas):
        k = lba - 6 * ZONE
        assert got[k * 4096:(k + 1) * 4096] == data[i * 4096:(i + 1) * 4096]
    assert [z.slba for z in empty] == [5 * ZONE, 6 * ZONE]
