"""The package's build backend (PEP 517, PEP 660): pure standard library,
so that `pip install ./python` needs nothing downloaded and nothing beyond
Python itself -- no setuptools, no wheel -- in a plain `python3 -m venv`,
offline, with or without build isolation. The package is pure Python: a
wheel is a zip of nvmeof/ and its metadata (from pyproject.toml's [project];
the version from nvmeof/__init__.py's __version__)."""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = "nvmeof"


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        text = f.read().decode()
    try:
        import tomllib
        p = tomllib.loads(text)["project"]
    except ImportError:  # Python before 3.11: the few keys used, by pattern
        p = {k: re.search(r'^%s = "(.*)"$' % k, text, re.M).group(1)
             for k in ("name", "description", "requires-python")}
        p["classifiers"] = re.findall(r'^\s+"(.*::.*)",?$', text, re.M)
    with open(os.path.join(HERE, PKG, "__init__.py")) as f:
        p["version"] = re.search(r'^__version__ = "(.*)"$', f.read(), re.M).group(1)
    return p


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"],
             "Summary: " + p["description"], "Requires-Python: " + p["requires-python"]]
    lines += ["Classifier: " + c for c in p["classifiers"]]
    return "\n".join(lines) + "\n"


def _files():
    for name in sorted(os.listdir(os.path.join(HERE, PKG))):
        if name.endswith(".py") or name == "py.typed":
            yield PKG + "/" + name


def _wheel(wheel_directory, entries):
    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    info = base + ".dist-info/"
    entries = list(entries) + [
        (info + "METADATA", _metadata(p).encode()),
        (info + "WHEEL", b"Wheel-Version: 1.0\nGenerator: nvmeof_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = []
    name = base + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
        record.append(info + "RECORD,,")
        z.writestr(info + "RECORD", "\n".join(record) + "\n")
    return name


def _read(path):
    with open(os.path.join(HERE, path), "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, ((f, _read(f)) for f in _files()))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # the source folder on sys.path: edits take effect without reinstalling
    return _wheel(wheel_directory, [("_nvmeof_editable.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for f in ["pyproject.toml", "_build/nvmeof_build.py"] + list(_files()):
            t.add(os.path.join(HERE, f), base + "/" + f)
        data = ("%s" % _metadata(p)).encode()
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    return name
