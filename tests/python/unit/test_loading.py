"""Where the package looks for libnvmeof.so, and what it says when it
cannot find it. Each case runs in a fresh interpreter on a copy of the
package, so nothing here depends on how this process loaded it."""
import os
import shutil
import subprocess
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
# the build under test (make unit sets it for its O; conftest defaults to build/out)
BUILT = os.environ["NVMEOF_LIB"]
PROBE = ("import nvmeof\n"
         "try:\n    print('LOADED', nvmeof.library_path())\n"
         "except nvmeof.LibraryNotFoundError as e:\n    print('ERROR', e)\n")


@pytest.fixture
def pkg(tmp_path):
    shutil.copytree(os.path.join(TOP, "python", "nvmeof"), tmp_path / "nvmeof",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return tmp_path


def probe(pkg, nvmeof_lib=None):
    env = {k: v for k, v in os.environ.items() if k not in ("NVMEOF_LIB", "LD_LIBRARY_PATH")}
    env.update(PYTHONPATH=str(pkg), PYTHONDONTWRITEBYTECODE="1")
    if nvmeof_lib is not None:
        env["NVMEOF_LIB"] = nvmeof_lib
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, cwd=str(pkg))
    assert r.returncode == 0, r.stderr  # importing works without the library
    return r.stdout


def system_has_it():
    import ctypes
    try:
        ctypes.CDLL("libnvmeof.so")
        return True
    except OSError:
        return False


def test_not_found_names_every_place_tried(pkg):
    out = probe(pkg)
    if system_has_it():
        assert out.startswith("LOADED libnvmeof.so")
        pytest.skip("a libnvmeof.so is installed in the system library path: nothing is missing to report")
    assert out.startswith("ERROR nvmeof: cannot load libnvmeof.so; tried:")
    assert "%s (next to the nvmeof package): no such file" % (pkg / "nvmeof" / "libnvmeof.so") in out
    assert "libnvmeof.so (the system library path): " in out
    assert "NVMEOF_LIB" in out  # and how to point at one


def test_next_to_the_package(pkg):
    os.symlink(BUILT, pkg / "nvmeof" / "libnvmeof.so")
    assert probe(pkg).strip() == "LOADED %s" % (pkg / "nvmeof" / "libnvmeof.so")


def test_env_var_wins_and_is_the_only_place_tried(pkg):
    os.symlink(BUILT, pkg / "nvmeof" / "libnvmeof.so")
    assert probe(pkg, BUILT).strip() == "LOADED " + BUILT
    out = probe(pkg, "/nonexistent/libnvmeof.so")
    assert "/nonexistent/libnvmeof.so ($NVMEOF_LIB): no such file" in out
    assert "next to the nvmeof package" not in out


def test_not_a_library(pkg):
    bogus = pkg / "libnvmeof.so"
    bogus.write_text("not an ELF file\n" * 20)
    out = probe(pkg, str(bogus))
    assert out.startswith("ERROR") and "($NVMEOF_LIB): " in out and "invalid ELF header" in out


def test_the_install_prefix(pkg, tmp_path):
    # `make install PREFIX=<a virtual environment>`: found there, by the soname
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (venv / "lib").mkdir(exist_ok=True)
    os.symlink(BUILT, venv / "lib" / "libnvmeof.so.0")
    env = {k: v for k, v in os.environ.items() if k not in ("NVMEOF_LIB", "LD_LIBRARY_PATH")}
    env.update(PYTHONPATH=str(pkg), PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([str(venv / "bin" / "python"), "-c", PROBE], env=env, capture_output=True,
                       text=True, cwd=str(pkg))
    assert r.stdout.strip() == "LOADED %s" % (venv / "lib" / "libnvmeof.so.0"), r.stdout + r.stderr


def test_not_found_says_how_to_install(pkg):
    out = probe(pkg, "/nonexistent/libnvmeof.so")
    assert "make install" in out and "PREFIX=" in out
