"""Shared by the unit tests (no target) and the target tests (in the test
bed): the package under test is the one in python/, and the library the
plain build's unless NVMEOF_LIB names another."""
import os
import signal
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "python"))
os.environ.setdefault("NVMEOF_LIB", os.path.join(TOP, "build", "out", "libnvmeof.so"))

import pytest  # noqa: E402


# Inside the test bed (NVMEOF_TB_RUN set) everything a test needs is
# present: a skip there is a failure, with its reason.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and os.environ.get("NVMEOF_TB_RUN") and not hasattr(rep, "wasxfail"):
        rep.outcome = "failed"
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.longrepr = "skipped inside the test bed, where everything is present: %s" % reason


# Each test has a time limit of its own (NVMEOF_TEST_LIMIT seconds, 300 by
# default, as the shell suites'): a test stuck in a call that returns at
# last (the kernel's O_DIRECT I/O on a target gone away ends in its I/O
# timeout) fails by name, instead of the whole suite being killed at its
# limit with the test unnamed.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    limit = int(os.environ.get("NVMEOF_TEST_LIMIT", "300"))

    def expired(signum, frame):
        raise TimeoutError("%s ran past its limit of %d s" % (item.nodeid, limit))

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(limit)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
