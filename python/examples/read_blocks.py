#!/usr/bin/env python3
"""Reads 128 blocks from the start of a namespace into registered host memory
(the seed's host-memory example) and prints what the controller is and the
first bytes read. Reads only.

    python3 read_blocks.py TARGET_ADDR SUBSYSTEM_NQN [--port N] [--transport rdma|tcp]
        [--source LOCAL_ADDR] [--nsid N]
"""
import argparse

import nvmeof


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target")
    ap.add_argument("subnqn")
    ap.add_argument("--source", help="a local address: chooses the RDMA device")
    ap.add_argument("--port", type=int, help="the target's port (the library's default: 4420)")
    ap.add_argument("--transport", choices=("rdma", "tcp"), default="rdma", help="tcp for an NVMe/TCP target")
    ap.add_argument("--nsid", type=int, default=1)
    a = ap.parse_args()
    print("nvmeof %s, library %s" % (nvmeof.__version__, nvmeof.library_path()))
    with nvmeof.Controller.connect(a.target, a.subnqn, source=a.source, port=a.port,
                                   transport=a.transport) as controller:
        info = controller.info
        print("controller %d: %s, serial %s, namespaces %s"
              % (info.cntlid, info.model, info.serial, controller.namespaces))
        namespace = controller.namespace(a.nsid)
        with controller.allocate(128 * 4096) as buffer:
            namespace.read(buffer, slba=0, blocks=128)
            payload = buffer.read(128 * namespace.lba_size)
    print("read %d bytes (128 blocks of %d B) from namespace %d; first 16: %s"
          % (len(payload), namespace.lba_size, a.nsid, payload[:16].hex()))


if __name__ == "__main__":
    main()
