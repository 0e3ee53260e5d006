#!/usr/bin/env python3
"""Bandwidth and QD1 latency with the low-level API: raw Read or Write
commands built with nvmeof.protocol, submitted and polled on several I/O
queues at once, into host memory or (with --gpu) CUDA memory registered
with the controller. Prints one JSON object.

    lowlevel_bench.py ADDR SUBNQN [--nsid 1] [--queues 4] [--qd 16]
                      [--bs 131072] [--seconds 3] [--rw read|write] [--gpu N]

Writes overwrite the namespace's blocks from --slba on: use a scratch
namespace. With --gpu, reads are flushed to the GPU (the seed's rule for
the low-level path: the caller flushes GPUDirect writes before a kernel
reads the data) once per completion.
"""
import argparse
import json
import statistics
import sys
import time

import nvmeof
from nvmeof import lowlevel, protocol


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("addr")
    ap.add_argument("subnqn")
    ap.add_argument("--port", type=int, default=protocol.NVME_RDMA_PORT)
    ap.add_argument("--nsid", type=int, default=1)
    ap.add_argument("--queues", type=int, default=4)
    ap.add_argument("--qd", type=int, default=16, help="commands in flight per queue")
    ap.add_argument("--bs", type=int, default=131072, help="bytes per command")
    ap.add_argument("--seconds", type=float, default=3.0, help="for each of the two phases")
    ap.add_argument("--rw", choices=("read", "write"), default="read")
    ap.add_argument("--slba", type=int, default=0)
    ap.add_argument("--gpu", type=int, default=None, help="CUDA device (needs torch)")
    a = ap.parse_args()

    with nvmeof.Controller.connect(a.addr, a.subnqn, port=a.port) as ctrl:
        ns = ctrl.namespace(a.nsid)
        if a.bs % ns.lba_size or a.bs > ctrl.info.max_xfer:
            print("lowlevel_bench: --bs must be a multiple of %d B and at most MDTS (%d B)"
                  % (ns.lba_size, ctrl.info.max_xfer), file=sys.stderr)
            return 2
        blocks = a.bs // ns.lba_size
        span = max(1, min(ns.info.size - a.slba, (1 << 30) // ns.lba_size) // blocks)  # 1 GiB at most
        opcode = protocol.NVME_CMD_READ if a.rw == "read" else protocol.NVME_CMD_WRITE
        slots = a.queues * a.qd
        if a.gpu is None:
            buf = ctrl.allocate(slots * a.bs)
        else:
            import torch  # the seed's GPU path: a tensor registered as it is
            buf = ctrl.register_gpu(torch.empty(slots * a.bs, dtype=torch.uint8, device="cuda:%d" % a.gpu))
        queues = [ctrl.queue(depth=a.qd).raw for _ in range(a.queues)]
        nxt = [0]

        def command(slot):
            lba = a.slba + (nxt[0] % span) * blocks
            nxt[0] += 1
            return protocol.rw_command(opcode, a.nsid, lba, blocks, buf, lba_size=ns.lba_size,
                                       buffer_offset=slot * a.bs)

        def done(req):
            req.response.raise_for_status()
            if a.gpu is not None and a.rw == "read":
                lowlevel.flush_gpudirect_writes(buf)

        # QD1 on the first queue: each command's submit-to-completion time
        lat = []
        end = time.monotonic() + a.seconds
        while time.monotonic() < end:
            t0 = time.perf_counter_ns()
            req = queues[0].submit(command(0), data_owner=buf)
            while not req.done:
                queues[0].poll()
            lat.append(time.perf_counter_ns() - t0)
            done(req)

        # depth: qd commands in flight on every queue
        n = 0
        t0 = time.monotonic()
        end = t0 + a.seconds
        for qi, q in enumerate(queues):
            for k in range(a.qd):
                q.submit(command(qi * a.qd + k), data_owner=buf)
        while any(q.outstanding for q in queues):
            for qi, q in enumerate(queues):
                for req in q.poll():
                    done(req)
                    n += 1
                    if time.monotonic() < end:
                        q.submit(command(qi * a.qd + n % a.qd), data_owner=buf)
        secs = time.monotonic() - t0
        for q in queues:
            q.close()
        buf.close()

    lat.sort()
    print(json.dumps({
        "rw": a.rw, "bs": a.bs, "queues": a.queues, "qd": a.qd,
        "memory": "host" if a.gpu is None else "cuda:%d" % a.gpu,
        "qd1": {"ios": len(lat), "mean_us": statistics.fmean(lat) / 1000,
                "p50_us": lat[len(lat) // 2] / 1000, "p99_us": lat[min(len(lat) - 1, len(lat) * 99 // 100)] / 1000},
        "depth": {"ios": n, "seconds": secs, "iops": n / secs, "mib_per_s": n * a.bs / secs / 2**20},
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
