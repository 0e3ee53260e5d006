"""The ctypes mirrors in python/nvmeof/_structs.py against the C header:
the same fields in the same order, at the same offsets and sizes as the C
compiler lays them out, and the same error codes. A change to
core/include/nvmeof.h that the mirrors do not follow fails here."""
import ctypes
import os
import re
import subprocess

import pytest

from nvmeof import _structs as S
from nvmeof import errors

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HEADER = os.path.join(TOP, "core", "include", "nvmeof.h")


def header_text():
    with open(HEADER) as f:
        return re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)


def header_struct_fields(name):
    """Member names of struct name, in order, read from the header."""
    m = re.search(r"struct %s \{(.*?)\};" % name, header_text(), re.S)
    assert m, "struct %s not found in %s" % (name, HEADER)
    names = []
    for decl in m.group(1).split(";"):
        decl = re.sub(r"\[[^]]*\]", "", decl).strip()
        if not decl:
            continue
        first, *rest = decl.split(",")
        names.append(re.findall(r"\w+", first)[-1])
        names += [re.findall(r"\w+", r)[-1] for r in rest]
    return names


# Structs of the C API the binding does not use (discovery, log pages and
# events have no Python API yet): each new struct must be mirrored or named
# here, so a header change is never missed.
NOT_MIRRORED = {"nvmeof_log_req", "nvmeof_error_entry", "nvmeof_smart_log", "nvmeof_ana_group",
                "nvmeof_ns_ids", "nvmeof_disc_entry", "nvmeof_disc_log", "nvmeof_event",
                "nvmeof_ana_caps"}
NOT_MIRRORED |= {"nvmeof_ruhs_desc"}  # Flexible Data Placement: no Python API yet


def test_every_public_struct_is_mirrored():
    in_header = set(re.findall(r"^struct (nvmeof_\w+) \{", header_text(), re.M))
    assert in_header == set(S.MIRRORS) | NOT_MIRRORED


@pytest.mark.parametrize("cname", sorted(S.MIRRORS))
def test_field_names_and_order(cname):
    assert [f[0] for f in S.MIRRORS[cname]._fields_] == header_struct_fields(cname)


@pytest.fixture(scope="module")
def compiled_layout(tmp_path_factory):
    """sizeof and offsetof of every mirrored field, from the C compiler."""
    d = tmp_path_factory.mktemp("layout")
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "nvmeof.h"', "int main(void) {"]
    for cname, mirror in S.MIRRORS.items():
        lines.append('printf("%s - %%zu %%zu\\n", sizeof(struct %s), _Alignof(struct %s));'
                     % (cname, cname, cname))
        for f in mirror._fields_:
            lines.append('printf("%s %s %%zu %%zu\\n", offsetof(struct %s, %s), sizeof(((struct %s *)0)->%s));'
                         % (cname, f[0], cname, f[0], cname, f[0]))
    lines.append("return 0; }")
    src = d / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = d / "layout"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-I", os.path.dirname(HEADER), "-o", str(exe),
                    str(src)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    table = {}
    for line in out.splitlines():
        s, field, a, b = line.split()
        table[(s, field)] = (int(a), int(b))
    return table


@pytest.mark.parametrize("cname", sorted(S.MIRRORS))
def test_offsets_and_sizes_match_the_compiler(cname, compiled_layout):
    mirror = S.MIRRORS[cname]
    for f in mirror._fields_:
        name = f[0]
        assert (getattr(mirror, name).offset, getattr(mirror, name).size) == compiled_layout[(cname, name)], \
            "%s.%s: ctypes (offset, size) differs from C" % (cname, name)
    assert (ctypes.sizeof(mirror), ctypes.alignment(mirror)) == compiled_layout[(cname, "-")]


def test_error_codes_match_the_header():
    enum = re.search(r"enum nvmeof_error \{(.*?)\};", header_text(), re.S).group(1)
    codes = {n: int(v) for n, v in re.findall(r"NVMEOF_(\w+) = (-?\d+)", enum)}
    assert codes == {n: getattr(S, n) for n in codes}
    assert set(errors.BY_CODE) == {v for n, v in codes.items() if n != "OK"}
    waits = re.search(r"enum nvmeof_wait_mode \{(.*?)\};", header_text(), re.S).group(1)
    for n, v in re.findall(r"NVMEOF_(WAIT_\w+) = (\d+)", waits):
        assert getattr(S, n) == int(v)
