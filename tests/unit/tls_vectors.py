#!/usr/bin/env python3
"""Known-answer vectors for the NVMe/TCP TLS PSK derivation (tests/unit/test_tlskey.c).

Written from the NVMe/TCP Transport Specification's text (TP 8011 and NVMe/TCP
1.1 section 3.6.1.3) and RFC 5869/8446, with Python's hmac and hashlib only
(no OpenSSL KDF API, which the library uses), so that the library's result is
checked against an independent reading:

  configured PSK: NVMeTLSkey-1:HH:base64(key || CRC-32(key) little-endian):
  retained PSK   = HKDF-Expand-Label(HKDF-Extract(0, configured), "HostNQN", hostnqn, L)
                   (HH 00: the configured PSK itself)
  identity v0    = "NVMe0R" HH " " hostnqn " " subnqn
  TLS PSK v0     = HKDF-Expand-Label(HKDF-Extract(0, retained), "nvme-tls-psk", identity, L)
  digest         = base64(HMAC-H(retained, hostnqn " " subnqn " NVMe-over-Fabrics"))
  identity v1    = "NVMe1R" HH " " hostnqn " " subnqn " " digest
  TLS PSK v1     = HKDF-Expand-Label(HKDF-Extract(0, retained), "nvme-tls-psk", HH " " digest, L)

HH names the hash (01 SHA-256, 02 SHA-384) and L is its length. Run it to
print the C initializers the test holds.
"""
import base64, hashlib, hmac, struct, zlib

HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6"
SUBNQN = "nqn.2026-12.io.example:tls"
HASHES = {1: hashlib.sha256, 2: hashlib.sha384}


def interchange(key, hh):
    return "NVMeTLSkey-1:%02d:%s:" % (hh, base64.b64encode(key + struct.pack("<I", zlib.crc32(key))).decode())


def extract(h, ikm):
    return hmac.new(b"\0" * h().digest_size, ikm, h).digest()


def expand_label(h, prk, label, context, length):
    label = b"tls13 " + label
    info = struct.pack(">H", length) + bytes([len(label)]) + label + bytes([len(context)]) + context
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(prk, t + info + bytes([i]), h).digest()
        out += t
        i += 1
    return out[:length]


def derive(key, hh, hostnqn=HOSTNQN, subnqn=SUBNQN):
    h = HASHES[hh] if hh else HASHES[1 if len(key) == 32 else 2]
    cipher = hh or (1 if len(key) == 32 else 2)
    L = h().digest_size
    retained = expand_label(h, extract(h, key), b"HostNQN", hostnqn.encode(), L) if hh else key
    id0 = "NVMe0R%02d %s %s" % (cipher, hostnqn, subnqn)
    psk0 = expand_label(h, extract(h, retained), b"nvme-tls-psk", id0.encode(), L)
    digest = base64.b64encode(hmac.new(retained, ("%s %s NVMe-over-Fabrics" % (hostnqn, subnqn)).encode(), h).digest()).decode()
    id1 = "NVMe1R%02d %s %s %s" % (cipher, hostnqn, subnqn, digest)
    psk1 = expand_label(h, extract(h, retained), b"nvme-tls-psk", ("%02d %s" % (cipher, digest)).encode(), L)
    return retained, id0, psk0, id1, psk1


if __name__ == "__main__":
    keys = [(bytes(range(32)), 1), (bytes(range(48)), 2), (bytes(range(32)), 0)]
    for key, hh in keys:
        retained, id0, psk0, id1, psk1 = derive(key, hh)
        print('\t{"%s",' % interchange(key, hh))
        print('\t "%s",' % retained.hex())
        print('\t "%s",' % id0)
        print('\t "%s",' % psk0.hex())
        print('\t "%s",' % id1)
        print('\t "%s"},' % psk1.hex())
