"""No message of the binding (its own checks, or the library's errors it
raises) holds a secret, whatever keyword it was given to: a secret pasted
into the wrong place is named, never shown. No target: every case fails
before or at the connect."""
import inspect

import pytest

import nvmeof

# nvme-cli's test key, and a TLS PSK in the interchange format: no message
# may hold 16 characters of either body
KEYS = ["DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
        "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:",
        "dhhc-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:"]
# a secret's body alone, without its prefix: too long for any keyword's value
BARE = KEYS[0][10:-1]
KWARGS = [k for k in inspect.signature(nvmeof.Controller.__init__).parameters if k not in ("self",)]


def body_in(msg, key):
    body = key.split(":")[2] if key.count(":") >= 3 else key
    return any(body[i:i + 16] in msg for i in range(0, len(body) - 15, 4))


# an address or an NQN may be longer than a secret's body: there, only a
# secret's prefix hides a value
LONG_OK = ("host", "subsystem_nqn", "source", "host_nqn")


@pytest.mark.parametrize("kw,key", [(k, v) for k in KWARGS for v in KEYS + [BARE]
                                    if not (v == BARE and k in LONG_OK)])
def test_no_secret_in_any_message(kw, key):
    args = {"host": "127.0.0.1", "subsystem_nqn": "nqn.2026-12.io.example:none", "port": 1, "timeout": 2}
    args[kw] = key
    with pytest.raises(Exception) as e:
        c = nvmeof.Controller(args.pop("host"), args.pop("subsystem_nqn"), **args)
        c.close()
    msg = str(e.value) + repr(e.value.args)
    assert not body_in(msg, key), "%s=<secret>: %s" % (kw, msg)


def test_iopolicy_never_shows_a_secret():
    with pytest.raises(ValueError) as e:
        nvmeof.Paths([], 1, iopolicy=KEYS[0])
    assert not body_in(str(e.value), KEYS[0]) and "not shown" in str(e.value)
