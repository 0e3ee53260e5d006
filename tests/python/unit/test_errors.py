"""One exception class per library error code, and Python's own classes
where they mean the same thing."""
import pytest

import nvmeof
from nvmeof import _structs as S
from nvmeof.errors import BY_CODE, from_code


def test_each_code_has_its_class_under_error():
    assert len(set(BY_CODE.values())) == len(BY_CODE)
    for code, cls in BY_CODE.items():
        e = from_code(code, "op: what failed")
        assert type(e) is cls and isinstance(e, nvmeof.Error)
        assert (e.code, e.message, str(e)) == (code, "op: what failed", "op: what failed")
    assert type(from_code(-99, "x")) is nvmeof.Error


def test_python_classes_where_they_fit():
    assert isinstance(from_code(S.EINVAL, "x"), ValueError)
    assert isinstance(from_code(S.ETIMEDOUT, "x"), TimeoutError)
    assert isinstance(from_code(S.ENOMEM, "x"), MemoryError)
    assert isinstance(from_code(S.EBUSY, "x"), nvmeof.BusyError)
    # OSError's (errno, strerror) reading of two arguments must not leak in
    t = from_code(S.ETIMEDOUT, "read: no completion within 10 ms")
    assert t.errno is None and str(t) == "read: no completion within 10 ms"
    with pytest.raises(TimeoutError):
        raise t


def test_nvme_status_fields():
    e = from_code(S.ENVME, "read nsid 1 slba 9 nlb 1: LBA Out of Range", status=0x4080)
    assert (e.status, e.sct, e.sc, e.dnr) == (0x4080, 0x0, 0x80, True)
    # Fabrics Connect reports its status only as text: it is read back from it
    e = from_code(S.ENVME, "Fabrics Connect queue 0: Connect Invalid Host (SCT 0x1, SC 0x84, DNR)")
    assert (e.sct, e.sc, e.dnr) == (0x1, 0x84, True)
    e = from_code(S.ENVME, "x: Namespace Not Ready (SCT 0x0, SC 0x82)")
    assert (e.sct, e.sc, e.dnr) == (0x0, 0x82, False)
    e = from_code(S.ENVME, "no status in this one")
    assert e.status is None and e.sct is None


def test_library_names_agree():
    for code, cls in BY_CODE.items():
        assert nvmeof.strerror(code) not in ("", "unknown error"), code
    assert "LBA Out of Range" in nvmeof.status_name(0x80)


def test_no_rdma_device_is_this_hosts_problem():
    """With no RDMA device the connect fails as NoDeviceError, not as an
    unreachable target. libibverbs reads sysfs under $SYSFS_PATH: an empty
    one hides any device this host has (in a fresh interpreter, before the
    library's first verbs call)."""
    import os
    import subprocess
    import sys
    import tempfile
    assert nvmeof.strerror(S.ENODEV) == "no RDMA device"
    with tempfile.TemporaryDirectory() as empty:
        code = ("import nvmeof\n"
                "try:\n"
                "    nvmeof.Controller('192.0.2.1', 'nqn.2026-12.io.nvmeof:x')\n"
                "except nvmeof.Error as e:\n"
                "    print(type(e).__name__, isinstance(e, nvmeof.NoDeviceError), e)\n")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(os.environ, SYSFS_PATH=empty, PYTHONPATH=os.path.dirname(
                               os.path.dirname(os.path.abspath(nvmeof.__file__)))), timeout=60)
    assert r.stdout.startswith("NoDeviceError True "), r.stdout + r.stderr
    assert "no RDMA device on this host" in r.stdout
