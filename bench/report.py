#!/usr/bin/env python3
"""Median tables with ratios from a bench/bench.sh result folder. fio's JSON
is read as jobs/sweep reads it (jobs/sweeplib.py), so a figure here and the
same figure in a sweep's CSV are computed the same way."""
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jobs"))
import sweeplib  # noqa: E402

out = sys.argv[1]
runs = defaultdict(list)  # (cell, initiator) -> [sweeplib metrics of one run]
for f in sorted(os.listdir(out)):
    if not f.endswith(".json") or f.count(".") != 3:
        continue
    cell, ini, _rep, _ = f.rsplit(".", 3)
    try:
        data, _ = sweeplib.load_json(os.path.join(out, f))
        failed = sweeplib.job_errors(data)
        if failed:  # a failed job's zeros are no measurement
            print(f"report: {f}: failed, left out: {'; '.join(failed)}", file=sys.stderr)
            continue
        runs[(cell, ini)].append(sweeplib.combine([sweeplib.job_metrics(j) for j in data["jobs"]]))
    except (ValueError, KeyError, IndexError, OSError) as e:
        print(f"report: {f}: unreadable ({e})", file=sys.stderr)


def med(cell, ini, fn):
    vals = []
    for m in runs.get((cell, ini), []):
        try:
            v = fn(m)
        except (KeyError, TypeError, ZeroDivisionError):
            continue
        if v is not None and v != "":
            vals.append(v)
    return statistics.median(vals) if vals else None


def pct(p):
    """total latency (lat) percentile p of sweeplib.PCTS, in us"""
    return lambda m: m[f"lat_{p}_us"]


def iops(m):
    return m["iops"]


def mibs(m):
    return m["bw_bytes"] / 2**20


def cpu_us_per_io(m):
    return m["cpu_us_per_io"]


def ctx_per_io(m):
    return m["ctx"] / m["total_ios"] if m["total_ios"] else None


def fmt(v, nd=1):
    return "-" if v is None else f"{v:,.{nd}f}"


def ratio(a, b):
    return "-" if a is None or not b else f"{a / b:.2f}"


def table(title, head, rows):
    print(f"\n### {title}\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")


rows = []
for rw in ("randread", "randwrite"):
    for bs in ("4k", "16k", "64k", "256k", "1m"):
        c = f"qd1_{rw}_{bs}"
        o50, k50 = med(c, "ours", pct("p50")), med(c, "kernel", pct("p50"))
        o99, k99 = med(c, "ours", pct("p99")), med(c, "kernel", pct("p99"))
        rows.append([rw, bs, fmt(o50), fmt(k50), ratio(o50, k50), fmt(o99), fmt(k99), ratio(o99, k99)])
table("QD1 latency (us, median of runs; ratio ours/kernel, lower is better)",
      ["rw", "bs", "p50 ours", "p50 kernel", "p50 ratio", "p99 ours", "p99 kernel", "p99 ratio"], rows)

rows = []
for nj in (1, 4):
    c = f"iops_qd32_j{nj}"
    o, k = med(c, "ours", iops), med(c, "kernel", iops)
    rows.append([str(nj), fmt(o, 0), fmt(k, 0), ratio(o, k)])
table("4 KiB random read IOPS at QD32 (ratio ours/kernel, higher is better)",
      ["jobs", "ours", "kernel", "ratio"], rows)

rows = []
for rw in ("read", "write"):
    for bs in ("128k", "1m"):
        c = f"bw_{rw}_{bs}"
        o, k = med(c, "ours", mibs), med(c, "kernel", mibs)
        rows.append([rw, bs, fmt(o), fmt(k), ratio(o, k)])
table("Sequential bandwidth, QD16 (MiB/s; ratio ours/kernel)", ["rw", "bs", "ours", "kernel", "ratio"], rows)

# QP scaling comes from bench/plots.sh's sweep (its own results folder and CSV)
qcsv = os.path.join(out, "sweep-qp", "results.csv")
if os.path.isfile(qcsv):
    qrows, qfields = sweeplib.read_csv(qcsv)
    qmed = sweeplib.medians(qrows, sweeplib.swept_names(qfields), ["ours", "kernel"])

    def qm(nj, bs, ini, metric):
        v = qmed.get((nj, bs, ini), {}).get(metric)
        return v[0] if v else None
    for bs, unit in (("4k", "IOPS"), ("1m", "MiB/s")):
        rows = []
        for nj in sorted({r["NUMJOBS"] for r in qrows}, key=int):
            if unit == "IOPS":
                o, k = qm(nj, bs, "ours", "iops"), qm(nj, bs, "kernel", "iops")
            else:
                o, k = ((v / 2**20 if v is not None else None) for v in
                        (qm(nj, bs, "ours", "bw_bytes"), qm(nj, bs, "kernel", "bw_bytes")))
            co, ck = qm(nj, bs, "ours", "cpu_us_per_io"), qm(nj, bs, "kernel", "cpu_us_per_io")
            rows.append([nj, fmt(o, 0 if unit == "IOPS" else 1), fmt(k, 0 if unit == "IOPS" else 1), ratio(o, k),
                         fmt(co), fmt(ck), ratio(co, ck)])
        table(f"QP scaling, {bs} reads, QD4 per job, one queue pair per job ({unit}; CPU us per I/O; ratios ours/kernel)",
              ["jobs", "ours", "kernel", "ratio", "CPU ours", "CPU kernel", "CPU ratio"], rows)

rows = []
for bs in ("4m", "16m", "64m"):
    c = f"large_{bs}"
    o, k = med(c, "ours", mibs), med(c, "kernel", mibs)
    rows.append([bs, fmt(o), fmt(k), ratio(o, k)])
table("Transfers larger than MDTS (1 MiB), reads, QD2 (MiB/s; ratio ours/kernel)",
      ["bs", "ours", "kernel", "ratio"], rows)

rows = []
for c, label in (("qd1_randread_4k", "4k randread QD1"), ("iops_qd32_j1", "4k randread QD32"),
                 ("bw_read_128k", "128k read QD16"), ("bw_read_1m", "1m read QD16")):
    o, k = med(c, "ours", cpu_us_per_io), med(c, "kernel", cpu_us_per_io)
    rows.append([label, fmt(o, 2), fmt(k, 2), ratio(o, k)])
table("CPU time per I/O of the fio job (usr+sys, us; ratio ours/kernel, lower is better)",
      ["workload", "ours", "kernel", "ratio"], rows)

rows = []
for c, label, fn, nd in (("pin_qd1_randread_4k", "4k randread QD1 p50 latency (us)", pct("p50"), 1),
                         ("pin_iops_qd32_j1", "4k randread QD32 IOPS", iops, 0),
                         ("pin_bw_read_128k", "128k read QD16 MiB/s", mibs, 1),
                         ("pin_bw_read_1m", "1m read QD16 MiB/s", mibs, 1),
                         ("pin_bw_write_1m", "1m write QD16 MiB/s", mibs, 1)):
    o, k = med(c, "ours", fn), med(c, "kernel", fn)
    ocpu, kcpu = med(c, "ours", cpu_us_per_io), med(c, "kernel", cpu_us_per_io)
    rows.append([label, fmt(o, nd), fmt(k, nd), ratio(o, k), fmt(ocpu, 2), fmt(kcpu, 2)])
table("Both initiators pinned to one vCPU (cpus_allowed=1)",
      ["workload", "ours", "kernel", "ratio", "CPU us/IO ours", "CPU us/IO kernel"], rows)

rows = []
for c, label, fn, nd in (("iops_qd32_j1", "4k randread QD32 IOPS, engine defaults", iops, 0),
                         ("libaio_iops_qd32_j1", "4k randread QD32 IOPS, engine defaults (kernel: libaio)", iops, 0),
                         ("iops_qd32_qp1", "4k randread QD32 IOPS, qpairs=1", iops, 0),
                         ("iops_qd32_qp2", "4k randread QD32 IOPS, qpairs=2", iops, 0),
                         ("bw_read_128k", "128k read QD16 MiB/s, engine defaults", mibs, 1),
                         ("libaio_bw_read_128k", "128k read QD16 MiB/s, engine defaults (kernel: libaio)", mibs, 1),
                         ("bw_read_128k_qp1", "128k read QD16 MiB/s, qpairs=1", mibs, 1),
                         ("bw_read_128k_qp2", "128k read QD16 MiB/s, qpairs=2", mibs, 1)):
    o, k = med(c, "ours", fn), med(c, "kernel", fn)
    if o is None and k is None:
        continue
    ocpu, kcpu = med(c, "ours", cpu_us_per_io), med(c, "kernel", cpu_us_per_io)
    octx, kctx = med(c, "ours", ctx_per_io), med(c, "kernel", ctx_per_io)
    rows.append([label, fmt(o, nd), fmt(k, nd), ratio(o, k), fmt(ocpu, 2), fmt(kcpu, 2), fmt(octx, 2),
                 fmt(kctx, 2)])
table("One fio job at depth: queue pairs per job (ours/kernel; kernel io_uring unless named)",
      ["workload", "ours", "kernel", "ratio", "CPU us/IO ours", "CPU us/IO kernel", "ctx/IO ours",
       "ctx/IO kernel"], rows)

p = os.path.join(out, "percmd.txt")
if os.path.exists(p):
    print("\n### Per-command cost of the core, wire taken out (inside the TCG guest)\n")
    print("```")
    print(open(p).read().rstrip())
    print("```")
