#!/usr/bin/env python3
"""Writes a pattern from an existing buffer (a bytearray, registered in
place) to --slba and reads it back into memory allocated by the library,
then compares. It OVERWRITES those blocks: use a disposable namespace.

    python3 write_read_back.py TARGET_ADDR SUBSYSTEM_NQN --slba N [--blocks N] [--nsid N]
        [--port N] [--transport rdma|tcp]
"""
import argparse
import os
import sys

import nvmeof


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target")
    ap.add_argument("subnqn")
    ap.add_argument("--slba", type=int, required=True, help="first block to overwrite")
    ap.add_argument("--blocks", type=int, default=64)
    ap.add_argument("--nsid", type=int, default=1)
    ap.add_argument("--source", help="a local address: chooses the RDMA device")
    ap.add_argument("--port", type=int, help="the target's port (the library's default: 4420)")
    ap.add_argument("--transport", choices=("rdma", "tcp"), default="rdma", help="tcp for an NVMe/TCP target")
    a = ap.parse_args()
    with nvmeof.Controller.connect(a.target, a.subnqn, source=a.source, port=a.port,
                                   transport=a.transport) as controller:
        namespace = controller.namespace(a.nsid)
        n = a.blocks * namespace.lba_size
        pattern = bytearray(os.urandom(n))
        with controller.register(pattern) as source:
            namespace.write(source, slba=a.slba, blocks=a.blocks)
        namespace.flush()
        with controller.allocate(n) as back:
            namespace.read(back, slba=a.slba, blocks=a.blocks)
            same = back.read() == pattern
    print("%d blocks at %d of namespace %d: %s" % (a.blocks, a.slba, a.nsid,
                                                    "read back the same" if same else "DIFFERENT"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
