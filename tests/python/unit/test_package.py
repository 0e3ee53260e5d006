"""The package as a user meets it: its version is the library's, its
defaults are the library's, and its public API carries type hints and the
docstrings help() shows."""
import ctypes
import importlib.util
import inspect
import os
import re
import tomllib
import zipfile

import pytest

import nvmeof
from nvmeof import _structs as S

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def test_version_is_the_makefiles():
    with open(os.path.join(TOP, "Makefile")) as f:
        version = re.search(r"^VERSION = (\S+)$", f.read(), re.M).group(1)
    assert nvmeof.__version__ == version


def test_the_package_metadata_takes_the_same_version():
    with open(os.path.join(TOP, "python", "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    assert project["project"]["name"] == "nvmeof"
    assert "version" in project["project"]["dynamic"]
    # the build backend (python/_build) writes the metadata pip records
    assert project["build-system"] == {"requires": [], "build-backend": "nvmeof_build",
                                       "backend-path": ["_build"]}
    spec = importlib.util.spec_from_file_location(
        "nvmeof_build", os.path.join(TOP, "python", "_build", "nvmeof_build.py"))
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    assert backend._project()["version"] == nvmeof.__version__


def test_a_built_wheel_holds_the_package_and_its_metadata(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "nvmeof_build", os.path.join(TOP, "python", "_build", "nvmeof_build.py"))
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    name = backend.build_wheel(str(tmp_path))
    assert name == "nvmeof-%s-py3-none-any.whl" % nvmeof.__version__
    with zipfile.ZipFile(str(tmp_path / name)) as z:
        names = set(z.namelist())
        meta = z.read("nvmeof-%s.dist-info/METADATA" % nvmeof.__version__).decode()
        record = z.read("nvmeof-%s.dist-info/RECORD" % nvmeof.__version__).decode()
    src = {"nvmeof/" + f for f in os.listdir(os.path.join(TOP, "python", "nvmeof"))
           if f.endswith(".py") or f == "py.typed"}
    assert src <= names
    assert "Version: %s\n" % nvmeof.__version__ in meta
    assert {line.split(",")[0] for line in record.split()} == names


def test_no_default_is_repeated_from_the_library():
    # every connection keyword defaults to None, which means the library's own
    for name, p in inspect.signature(nvmeof.Controller).parameters.items():
        if p.kind is p.KEYWORD_ONLY:
            assert p.default is None, "Controller(%s=%r): a default of its own" % (name, p.default)
    o = S.CtrlOpts()
    nvmeof._lib.load().nvmeof_ctrl_opts_init_sz(ctypes.byref(o), ctypes.sizeof(o))
    d = nvmeof.connect_defaults()
    assert (d["port"], d["queue_depth"], d["keep_alive_ms"], d["timeout"]) == (
        int(o.trsvcid), o.queue_depth, o.kato_ms, o.cmd_timeout_ms / 1000.0)
    # and what connect_options fills when nothing is given is exactly that
    c = nvmeof.connect_options("h", "n")
    for f, _ in S.CtrlOpts._fields_:
        if f not in ("traddr", "subnqn"):
            assert getattr(c, f) == getattr(o, f), f


PUBLIC = [nvmeof.Controller, nvmeof.Queue, nvmeof.Namespace, nvmeof.MemoryRegion, nvmeof.HostMemory,
          nvmeof.GpuMemory]


def test_public_api_has_docstrings_and_type_hints():
    missing = []
    for fn in (nvmeof.library_path, nvmeof.cuda_available, nvmeof.status_name, nvmeof.strerror,
               nvmeof.connect_options, nvmeof.connect_defaults):
        if not fn.__doc__ or "return" not in fn.__annotations__:
            missing.append(fn.__name__)
    for cls in PUBLIC:
        assert cls.__doc__, cls.__name__
        for name, member in vars(cls).items():
            if name.startswith("_") and name != "__init__":
                continue
            fn = member.fget if isinstance(member, property) else member
            if not inspect.isfunction(fn):
                continue
            if name != "__init__" and not fn.__doc__:
                missing.append("%s.%s: docstring" % (cls.__name__, name))
            if "return" not in fn.__annotations__:
                missing.append("%s.%s: return type" % (cls.__name__, name))
    assert not missing, missing


def test_help_tells_how_to_install_the_library():
    assert "make install" in nvmeof.__doc__ and "NVMEOF_LIB" in nvmeof.__doc__
    assert "connect_defaults" in inspect.getdoc(nvmeof.Controller)


def test_examples_take_port_and_transport():
    """An NVMe/TCP user runs the examples as they are: --port and --transport
    reach the connect (nothing listens on 127.0.0.1 port 4: refused there)."""
    import subprocess
    import sys
    ex = os.path.join(os.path.dirname(__file__), "..", "..", "..", "python", "examples")
    for name, extra in (("read_blocks.py", []), ("write_read_back.py", ["--slba", "0"])):
        r = subprocess.run([sys.executable, os.path.join(ex, name), "127.0.0.1", "nqn.2026-12.io.nvmeof:x",
                            "--port", "4", "--transport", "tcp"] + extra, capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, PYTHONPATH=os.path.join(ex, "..")))
        assert r.returncode != 0 and "nothing listens on that port" in r.stderr, (name, r.stderr[-400:])


def test_discover_reaches_the_discovery_controller():
    """nvmeof.discover connects to the discovery controller it is given:
    nothing listens on 127.0.0.1 port 4, and the error says so."""
    with pytest.raises(nvmeof.ConnectionRejectedError, match="nothing listens on that port"):
        nvmeof.discover("127.0.0.1", port=4, transport="tcp")
