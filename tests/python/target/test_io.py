"""Block I/O beyond a single command: a 64 MiB read above MDTS into one
buffer, read_many with one doorbell, extra queues in threads, keep-alive,
and the NVMe status of a failed command."""
import threading
import time

import numpy as np
import pytest

import nvmeof
from conftest import ADDR, NQN_A, NQN_B, connect, pattern, tb

MiB = 1 << 20


def test_64mib_read_above_mdts_into_one_buffer(ctrl):
    mdts = ctrl.info.max_xfer
    assert 0 < mdts < 64 * MiB  # nvmet: 1 MiB, so the read is split
    slba = 1 << 20  # 512 MiB into namespace 1
    want = pattern(64 * MiB, 20)
    q = ctrl.queue()
    ns = q.namespace(1)
    # written piece by piece, one command each: the read's splitting is
    # checked against data that never went through it
    with ctrl.allocate(MiB) as piece:
        for i in range(64):
            piece.write(want[i * MiB:(i + 1) * MiB])
            ns.write(piece, slba + i * (MiB // 512))
    guard = 4096
    with ctrl.allocate(64 * MiB + 2 * guard) as buf:
        view = np.frombuffer(buf, dtype=np.uint8)
        view[:] = 0xEE
        before = q.stats()
        ns.read(buf, slba, 64 * MiB // 512, buffer_offset=guard)
        after = q.stats()
        assert after.cmds - before.cmds == 64 * MiB // mdts  # split at MDTS...
        assert np.array_equal(view[guard:guard + 64 * MiB], want)  # ...every piece in place
        assert (view[:guard] == 0xEE).all() and (view[guard + 64 * MiB:] == 0xEE).all()
        del view
    q.close()


def test_read_many_one_doorbell(ctrl):
    n, size = 16, 8192
    want = pattern(n * size, 21)
    slbas = [700000 + 97 * i for i in range(n)]  # scattered, not one range
    q = ctrl.queue()
    ns = q.namespace(1)
    with ctrl.register(want.copy()) as src:
        ns.write_many([(src, slbas[i], size // 512, i * size) for i in range(n)])
    with ctrl.allocate(n * size) as dst:
        before = q.stats()
        ns.read_many([(dst, slbas[i], size // 512, i * size) for i in range(n)])
        after = q.stats()
        assert after.cmds - before.cmds == n
        assert after.doorbells - before.doorbells == 1  # all posted at once
        assert dst.read() == want.tobytes()
    q.close()


def test_read_many_more_than_the_queue_holds(ctrl):
    n, size = 40, 4096
    want = pattern(n * size, 22).tobytes()
    with ctrl.queue(depth=8) as q, ctrl.allocate(n * size) as src, ctrl.allocate(n * size) as dst:
        ns = q.namespace(1)
        src.write(want)
        ns.write(src, 720000)
        # request i reads block range i into slot n-1-i: placement is checked
        ns.read_many([(dst, 720000 + i * 8, 8, (n - 1 - i) * size) for i in range(n)])
        got = dst.read()
        for i in range(n):
            assert got[(n - 1 - i) * size:(n - i) * size] == want[i * size:(i + 1) * size]


def test_queues_in_threads(ctrl):
    results = {}

    def worker(k):
        try:
            with ctrl.queue() as q, ctrl.allocate(2 * MiB) as buf:
                ns = q.namespace(1)
                want = pattern(2 * MiB, 30 + k).tobytes()
                slba = 800000 + k * 8192
                for _ in range(3):
                    buf.write(want)
                    ns.write(buf, slba)
                    buf.write(bytes(2 * MiB))
                    ns.read(buf, slba)
                    assert buf.read() == want
                results[k] = q.qid
        except BaseException as e:  # reported by the main thread
            results[k] = e

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for k in range(4):
        assert not isinstance(results.get(k), BaseException), results[k]
    assert len(set(results.values())) == 4  # four queues of their own


def test_keep_alive_works():
    # the seed negotiates KATO 0 and refuses anything else
    with connect(keep_alive_ms=1000) as c:
        # the keep-alive thread sends them on its own: wait for two, up to
        # 30 s (about 2 s here; the bound only ends a broken run)
        deadline = time.monotonic() + 30
        while c.keep_alives < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert c.keep_alives >= 2
        c.check_health()
        with c.allocate(4096) as buf:
            c.namespace(1).read(buf, 0)


def test_connect_errors_carry_the_nvme_status():
    with pytest.raises(nvmeof.NVMeStatusError) as e:
        nvmeof.Controller(ADDR, "nqn.2026-12.io.nvmeof:nope", timeout=5)
    assert (e.value.sct, e.value.sc, e.value.code) == (0x1, 0x82, -5)  # Connect Invalid Parameters
    with pytest.raises(nvmeof.NVMeStatusError) as e:
        nvmeof.Controller(ADDR, NQN_B, timeout=5)
    assert (e.value.sct, e.value.sc) == (0x1, 0x84)  # Connect Invalid Host
    assert "Connect Invalid Host" in str(e.value)


def test_io_error_carries_the_nvme_status(ctrl):
    ns = ctrl.namespace(2)
    with ctrl.allocate(4096) as buf:
        tb("ns-disable", NQN_A, "2")
        try:
            with pytest.raises(nvmeof.NVMeStatusError) as e:
                ns.read(buf, 0)
        finally:
            tb("ns-enable", NQN_A, "2")
        err = e.value
        # what nvmet 6.1 answers for a disabled namespace; the status comes
        # from the completion and agrees with the library's own text of it
        assert (err.sct, err.sc, err.dnr) == (0x3, 0x00, False)
        assert "Internal Path Error (SCT 0x3, SC 0x00)" in str(err)
        assert str(err).startswith("read nsid 2 slba 0 nlb 1: ")
        ns.read(buf, 0)  # enabled again: the same controller carries on
