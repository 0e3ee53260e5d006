#!/usr/bin/env python3
"""tests/unit/tlsscan_keys.py KEYFILE HOSTNQN SUBNQN: the keys tests/unit/tlsscan.c
looks for in a process's memory after a TLS connection with that configured
key, "NAME HEX" a line: the configured PSK's bytes, a part of its interchange
text, the retained PSK and the version 0 TLS PSK (derived by tls_vectors.py,
not by the library)."""
import base64, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tls_vectors import derive

s = open(sys.argv[1]).read().strip()
hh = int(s.split(":")[1])
key = base64.b64decode(s.split(":")[2])[:-4]
retained, id0, psk0, id1, psk1 = derive(key, hh, sys.argv[2], sys.argv[3])
print("configured-PSK", key.hex())
print("interchange-text", s[16:48].encode().hex())
print("retained-PSK", retained.hex())
print("TLS-PSK", psk0.hex())
