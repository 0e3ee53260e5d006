"""RawQueue's bookkeeping, without a target: the CID a request is given at
submit, and the count and completed list against callbacks on another
thread (on the admin queue, the controller's keep-alive or event thread
runs them while the user's thread submits and polls).

The library is replaced by a test double that records submissions; the
test runs each completion callback on the thread it chooses. The races
are shown deterministically: one side runs traced opcode by opcode in
nvmeof/lowlevel.py and is stopped before its n-th opcode while the other
side runs whole, for every n."""
import ctypes
import sys
import threading

from nvmeof import _structs as S
from nvmeof import lowlevel, protocol

LOWLEVEL = lowlevel._on_complete.__code__.co_filename
# Bounds on waits for the other thread, which never takes this long: a
# hang (a deadlock the fix could bring) fails the test instead of stalling
# the suite.
WAIT_S = 30


class FakeLib:
    """nvmeof_io_raw[_cid] / nvmeof_admin_raw[_cid] and the polls: each
    submission takes the next CID (cid=None: the library has none to give,
    the command waits for its queue to reconnect)."""

    def __init__(self, cid=0x2A07):
        self.tokens = []
        self.cid = cid

    def _submit(self, token, cid_out):
        self.tokens.append(token)
        if cid_out is not None:
            cid_out._obj.value = lowlevel.CID_NONE if self.cid is None else self.cid
        if self.cid is not None:
            self.cid += 1
        return 0

    def nvmeof_io_raw_cid(self, h, raw, mr, off, length, flags, cb, token, cid):
        return self._submit(token, cid)

    def nvmeof_admin_raw_cid(self, h, raw, mr, off, length, flags, cb, token, cid):
        return self._submit(token, cid)

    # the calls without a CID, as the library had them before
    def nvmeof_io_raw(self, h, raw, mr, off, length, flags, cb, token):
        return self._submit(token, None)

    def nvmeof_admin_raw(self, h, raw, mr, off, length, flags, cb, token):
        return self._submit(token, None)

    def nvmeof_queue_commit(self, h):
        return 0

    def nvmeof_queue_poll(self, h, n):
        return 0

    def nvmeof_admin_poll(self, h, n):
        return 0


class Handle:
    closed, _h, _default = False, 1, None


def complete(token, cid):
    """The library's callback for the request of token, answered with cid."""
    cpl = S.Cpl()
    cpl.cid = cid
    lowlevel._on_complete(token, ctypes.pointer(cpl))


def test_command_id_is_known_at_submit_and_is_the_completions(monkeypatch):
    lib = FakeLib(cid=0x2A07)
    monkeypatch.setattr(lowlevel, "_declared", lib)
    for q in (lowlevel.RawQueue(Handle(), Handle()), lowlevel.RawQueue(Handle(), None, admin=True)):
        first = q.submit(protocol.flush(1))
        second = q.submit(protocol.flush(1))
        assert (first.command_id, second.command_id) == (lib.cid - 2, lib.cid - 1)
        complete(lib.tokens[-1], second.command_id)
        complete(lib.tokens[-2], first.command_id)
        assert q.poll() == [second, first]
        assert first.response.command_id == first.command_id
        assert second.response.command_id == second.command_id
    # none yet (waiting for a reconnect): the completion's, once answered
    lib.cid = None
    q = lowlevel.RawQueue(Handle(), Handle())
    req = q.submit(protocol.flush(1))
    assert req.command_id is None
    complete(lib.tokens[-1], 0x0105)
    assert q.poll() == [req] and req.command_id == 0x0105 == req.response.command_id


class Stopped(threading.Thread):
    """Runs fn traced opcode by opcode in lowlevel.py and stops before its
    step-th opcode, unless the queue's lock is held then (the other side
    would wait for it, not interleave); .reached is set once stopped or
    finished."""

    def __init__(self, fn, step, queue):
        super().__init__(daemon=True)
        self.fn, self.step, self.queue = fn, step, queue
        self.reached, self.resume = threading.Event(), threading.Event()
        self.stopped = False
        self.error = None
        self.result = None
        self._count = 0

    def _trace(self, frame, event, arg):
        if frame.f_code.co_filename != LOWLEVEL:
            return None
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            self._count += 1
            lock = getattr(self.queue, "_lock", None)
            if self._count == self.step and not (lock is not None and lock.locked()):
                self.stopped = True
                self.reached.set()
                self.resume.wait(WAIT_S)
        return self._trace

    def run(self):
        sys.settrace(self._trace)
        try:
            self.result = self.fn()
        except BaseException as e:  # reported by the test
            self.error = e
        finally:
            sys.settrace(None)
            self.reached.set()

    def finish(self):
        self.resume.set()
        self.join(WAIT_S)
        assert not self.is_alive()
        if self.error is not None:
            raise self.error


def every_step(scenario):
    """scenario(step) for step 1, 2, ... until the traced side no longer
    stops (it ran whole); at least one step stopped it."""
    step = 1
    while scenario(step):
        step += 1
    assert step > 1


def test_admin_callback_on_another_thread_against_poll(monkeypatch):
    # The callback, stopped anywhere, while the user's thread polls: the
    # request comes back from exactly one poll, the count ends at zero.
    def scenario(step):
        lib = FakeLib()
        monkeypatch.setattr(lowlevel, "_declared", lib)
        q = lowlevel.RawQueue(Handle(), None, admin=True)
        req = q.submit(protocol.flush(0))
        t = Stopped(lambda: complete(lib.tokens[0], req.command_id or 0), step, q)
        t.start()
        assert t.reached.wait(WAIT_S)
        # what the caller has when poll returns (a completion that lands in
        # that list later is one the caller never sees)
        got = list(q.poll())
        t.finish()
        got += q.poll()
        assert got == [req], "callback stopped before its opcode %d: polls returned %r" % (step, got)
        assert q.outstanding == 0, "callback stopped before its opcode %d" % step
        return t.stopped

    every_step(scenario)


def test_user_thread_stopped_in_submit_or_poll_while_admin_callback_runs(monkeypatch):
    # The user's submit or poll, stopped anywhere once the library has the
    # command, while the event thread runs its callback whole.
    for phase in ("submit", "poll"):
        def scenario(step):
            lib = FakeLib()
            monkeypatch.setattr(lowlevel, "_declared", lib)
            q = lowlevel.RawQueue(Handle(), None, admin=True)
            got = []
            if phase == "submit":
                t = Stopped(lambda: q.submit(protocol.flush(0)), step, q)
            else:
                q.submit(protocol.flush(0))
                t = Stopped(lambda: got.extend(list(q.poll())), step, q)
            t.start()
            assert t.reached.wait(WAIT_S)
            answered = bool(t.stopped and lib.tokens)
            if answered:
                complete(lib.tokens[0], 0x2A07)
            t.finish()
            if not answered:
                complete(lib.tokens[0], 0x2A07)
            got += q.poll()
            assert len(got) == 1 and got[0].command_id == 0x2A07, \
                "%s stopped before its opcode %d: polls returned %r" % (phase, step, got)
            assert q.outstanding == 0, "%s stopped before its opcode %d: outstanding %d" % (
                phase, step, q.outstanding)
            return t.stopped

        every_step(scenario)
