"""Argument checks that run before the library is called, without a target."""
import array
import ctypes

import numpy as np
import pytest

import nvmeof
from nvmeof import _structs as S
from nvmeof.memory import cuda_buffer, host_buffer
from nvmeof.namespace import check_io

NSZE = 1000


@pytest.mark.parametrize("args,blocks", [
    ((0, None, 0), 8),            # the whole 4 KiB buffer
    ((992, 8, 0), 8),             # the last blocks of the namespace
    ((0, None, 512), 7),          # the rest after the offset
    ((0, 1, 4096 - 512), 1),
    ((np.int64(5), np.uint32(2), np.int16(0)), 2),  # integer-likes are integers
])
def test_valid_ranges(args, blocks):
    assert check_io(512, NSZE, 4096, *args) == blocks


@pytest.mark.parametrize("args,exc,words", [
    ((993, 8, 0), ValueError, "past the end of the namespace"),
    ((1000, None, 0), ValueError, "past the end"),
    ((-1, 1, 0), ValueError, "slba"),
    ((0, 0, 0), ValueError, "blocks must be"),
    ((0, 9, 0), ValueError, "overrun"),
    ((0, 8, 512), ValueError, "overrun"),
    ((0, None, 4096), ValueError, "not a whole number"),
    ((0, None, 100), ValueError, "not a whole number"),
    ((0, 1, -1), ValueError, "buffer_offset"),
    ((0, 1, 5000), ValueError, "buffer_offset"),
    ((0, 1 << 32, 0), ValueError, "blocks must be"),
    ((0.0, 1, 0), TypeError, "slba"),
    ((0, 1.0, 0), TypeError, "blocks"),
    ((0, True, 0), TypeError, "bool"),
    ((0, 1, "0"), TypeError, "buffer_offset"),
])
def test_invalid_ranges(args, exc, words):
    with pytest.raises(exc, match=words):
        check_io(512, NSZE, 4096, *args)


def test_host_buffers():
    b = bytearray(100)
    addr, n, pin = host_buffer(b)
    assert n == 100 and addr == ctypes.addressof(ctypes.c_char.from_buffer(b))
    with pytest.raises(BufferError):
        b.append(1)  # pinned while pin lives
    del pin
    b.append(1)
    a = np.zeros((4, 8), np.float32)
    assert host_buffer(a)[:2] == (a.ctypes.data, 128)
    assert host_buffer(array.array("I", [0] * 10))[1] == 40
    with pytest.raises(ValueError, match="read-only"):
        host_buffer(b"abc")
    ro = np.zeros(8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        host_buffer(ro)
    with pytest.raises(ValueError, match="contiguous"):
        host_buffer(np.zeros((8, 8))[:, 1])
    with pytest.raises(ValueError, match="empty"):
        host_buffer(np.zeros(0))
    with pytest.raises(TypeError):
        host_buffer(42)


class ArrayInterfaceOnly:
    """A CPU tensor that offers __array_interface__ but not the buffer protocol."""

    def __init__(self, arr, **over):
        self.arr = arr
        self.__array_interface__ = dict(arr.__array_interface__, **over)


def test_array_interface_objects():
    a = np.zeros((3, 5), np.int16)
    assert host_buffer(ArrayInterfaceOnly(a))[:2] == (a.ctypes.data, 30)
    with pytest.raises(ValueError, match="contiguous"):
        host_buffer(ArrayInterfaceOnly(a.T, strides=a.T.strides))
    with pytest.raises(ValueError, match="read-only"):
        host_buffer(ArrayInterfaceOnly(a, data=(a.ctypes.data, True)))


class Cuda:
    def __init__(self, **iface):
        self.__cuda_array_interface__ = dict({"shape": (16, 4), "typestr": "<f4", "version": 3,
                                              "data": (0x7000000000, False), "strides": None}, **iface)


def test_cuda_array_interface():
    assert cuda_buffer(Cuda()) == (0x7000000000, 256)
    assert cuda_buffer(Cuda(strides=(16, 4))) == (0x7000000000, 256)   # C order, explicit
    assert cuda_buffer(Cuda(shape=(1, 64), strides=(999, 4)))[1] == 256  # size-1 dims: any stride
    with pytest.raises(ValueError, match="contiguous"):
        cuda_buffer(Cuda(strides=(4, 64)))   # Fortran order
    with pytest.raises(ValueError, match="read-only"):
        cuda_buffer(Cuda(data=(0x7000000000, True)))
    with pytest.raises(ValueError, match="empty"):
        cuda_buffer(Cuda(shape=(0,)))
    with pytest.raises(ValueError, match="NULL"):
        cuda_buffer(Cuda(data=(0, False)))
    with pytest.raises(ValueError, match="malformed"):
        cuda_buffer(Cuda(typestr="f"))
    with pytest.raises(TypeError, match="register_gpu"):
        host_buffer(Cuda())  # CUDA memory is not host memory
    with pytest.raises(TypeError, match="__cuda_array_interface__"):
        cuda_buffer(bytearray(8))


def test_connect_options_fill_the_c_struct():
    o = nvmeof.connect_options("192.0.2.20", "nqn.2026-07.io.example:storage", port=4421,
                               source="192.0.2.21", queue_depth=64, keep_alive_ms=5000, timeout=2.5)
    assert (o.traddr, o.trsvcid, o.src_addr, o.subnqn) == (
        b"192.0.2.20", b"4421", b"192.0.2.21", b"nqn.2026-07.io.example:storage")
    assert (o.hostnqn, o.hostid) == (None, None)  # the library's defaults
    assert (o.queue_depth, o.kato_ms, o.cmd_timeout_ms) == (64, 5000, 2500)
    assert 0 < o.connect_timeout_ms <= 2500
    o = nvmeof.connect_options("h", "n", timeout=0.5)
    assert (o.cmd_timeout_ms, o.connect_timeout_ms) == (500, 500)


def test_secrets_reach_the_c_struct_and_are_checked_without_echo():
    k = "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:"
    o = nvmeof.connect_options("h", "n", dhchap_secret=k, dhchap_ctrl_secret=k)
    assert (o.dhchap_secret, o.dhchap_ctrl_secret) == (k.encode(), k.encode())
    assert nvmeof.connect_options("h", "n").dhchap_secret is None
    with pytest.raises(TypeError) as e:
        nvmeof.connect_options("h", "n", dhchap_secret=b"DHHC-1:00:c2VjcmV0:")
    assert "c2VjcmV0" not in str(e.value)


def test_a_malformed_secret_fails_before_connecting():
    # the library refuses it first: no address is resolved, nothing is sent
    bad = "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaS:"  # CRC off
    with pytest.raises(nvmeof.InvalidArgumentError) as e:
        nvmeof.Controller("nonexistent.invalid", "nqn.x", dhchap_secret=bad)
    assert "CRC" in str(e.value) and "AAECAwQF" not in str(e.value)


@pytest.mark.parametrize("kw,exc", [
    ({"port": 0}, ValueError), ({"port": 65536}, ValueError), ({"port": 4420.0}, TypeError),
    ({"queue_depth": 0}, ValueError), ({"keep_alive_ms": -1}, ValueError),
    ({"timeout": 0}, ValueError), ({"timeout": -1.0}, ValueError), ({"timeout": "30"}, ValueError),
    ({"source": ""}, TypeError), ({"host_id": 7}, TypeError), ({"host_nqn": "a\0b"}, ValueError),
])
def test_bad_connect_options(kw, exc):
    with pytest.raises(exc):
        nvmeof.connect_options("192.0.2.20", "nqn.x", **kw)


def test_bad_connect_arguments_raise_before_connecting():
    # the address is never contacted: the arguments are refused first
    with pytest.raises(ValueError):
        nvmeof.Controller("192.0.2.77", "nqn.x", port=0)
    with pytest.raises(TypeError):
        nvmeof.Controller("192.0.2.77", None)


def test_structs_start_from_the_library_defaults():
    o = S.CtrlOpts()
    nvmeof._lib.load().nvmeof_ctrl_opts_init_sz(ctypes.byref(o), ctypes.sizeof(o))
    assert (o.trsvcid, o.queue_depth, o.cmd_timeout_ms, o.connect_timeout_ms) == (b"4420", 128, 30000, 3000)


def test_transport_options():
    from nvmeof.controller import connect_options
    o = connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="tcp", hdr_digest=True)
    assert o.trtype == b"tcp" and o.hdr_digest and not o.data_digest
    assert connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x").trtype is None
    with pytest.raises(ValueError, match="'rdma' or 'tcp'"):
        connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="fc")
    # fio's filename says trtype=TCP and the tool takes -t TCP: any case
    assert connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="TCP").trtype == b"tcp"
    with pytest.raises(TypeError, match="data_digest"):
        connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", data_digest=1)


def test_help_names_the_tcp_keywords():
    import nvmeof
    doc = nvmeof.Controller.__doc__
    for k in ("transport", "hdr_digest", "data_digest"):
        assert "      " + k in doc or ", " + k in doc or k + "," in doc, k


def test_tcp_socket_options_as_the_library_and_the_engine_take_them():
    from nvmeof.controller import connect_options
    o = connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="tcp", tcp_priority=5, tcp_tos=184,
                        tcp_busy_poll_us=50, tcp_zerocopy=65536)
    assert (o.tcp_priority, o.tcp_tos, o.tcp_busy_poll_us, o.tcp_zerocopy) == (5, 184, 50, 65536)
    d = connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x")
    assert (d.tcp_priority, d.tcp_tos, d.tcp_busy_poll_us, d.tcp_zerocopy) == (-1, -1, 0, 0)  # the system's
    for kw, bad in (("tcp_priority", 16), ("tcp_tos", 256), ("tcp_busy_poll_us", 1000001),
                    ("tcp_zerocopy", (1 << 30) + 1), ("tcp_priority", -2)):
        with pytest.raises(ValueError, match=kw):
            connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="tcp", **{kw: bad})
    with pytest.raises(TypeError, match="tcp_tos"):
        connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="tcp", tcp_tos="184")
    # the library refuses them over RDMA, before anything is sent
    with pytest.raises(nvmeof.Error, match="NVMe/TCP's socket options"):
        nvmeof.Controller("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="rdma", tcp_priority=3)


def test_disable_sqflow_as_the_library_and_the_engine_take_it():
    from nvmeof.controller import connect_options
    assert connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="tcp", disable_sqflow=True).disable_sqflow
    assert not connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x").disable_sqflow  # off by default
    with pytest.raises(TypeError, match="disable_sqflow"):
        connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="tcp", disable_sqflow=1)
    # the library refuses it over RDMA, before anything is sent
    with pytest.raises(nvmeof.Error, match="disable_sqflow is NVMe/TCP's"):
        nvmeof.Controller("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="rdma", disable_sqflow=True)


def test_tls_key_implies_tls_and_is_type_checked_without_its_value():
    from nvmeof.controller import connect_options
    k = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:"
    o = connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="tcp", tls_key=k)
    assert o.tls is True and o.tls_key == k.encode()
    o = connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="tcp")
    assert o.tls is False and o.tls_key is None
    with pytest.raises(TypeError) as e:
        connect_options("192.0.2.1", "nqn.x", transport="tcp", tls_key=k.encode())
    assert "NVMeTLSkey-1:HH" in str(e.value) and "VRLbtnN9" not in str(e.value)
    with pytest.raises(TypeError):
        connect_options("192.0.2.1", "nqn.x", transport="tcp", tls="yes")


def test_tls_keyring_identity_and_compat_reach_the_options_and_the_library():
    from nvmeof.controller import connect_options
    o = connect_options("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="tcp", tls_keyring=".nvme",
                        tls_identity=1)
    assert o.tls is True and o.tls_keyring == b".nvme" and o.tls_identity == 1 and o.tls_compat is False
    with pytest.raises(ValueError):
        connect_options("192.0.2.1", "nqn.x", transport="tcp", tls_keyring=".nvme", tls_identity=2)
    with pytest.raises(TypeError):
        connect_options("192.0.2.1", "nqn.x", transport="tcp", tls_compat=1)
    # the library's checks, before anything is sent: compat derives from a key given
    with pytest.raises(nvmeof.Error, match="tls_compat needs tls_key"):
        nvmeof.Controller("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="tcp", tls_keyring=".nvme",
                          tls_compat=True)
    with pytest.raises(nvmeof.Error, match="no keyring .nvmeof-none"):
        nvmeof.Controller("192.0.2.1", "nqn.2026-12.io.nvmeof:x", transport="tcp", tls_keyring=".nvmeof-none")
