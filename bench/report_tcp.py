#!/usr/bin/env python3
"""The NVMe/TCP table from a bench/tcp.sh result folder: medians of the runs
of each initiator, ratios ours/kernel (fio's JSON read as jobs/sweeplib.py
reads it)."""
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jobs"))
import sweeplib  # noqa: E402

out = sys.argv[1]
runs = defaultdict(list)
for f in sorted(os.listdir(out)):
    if not f.endswith(".json") or f.count(".") != 3:
        continue
    cell, ini, _rep, _ = f.rsplit(".", 3)
    try:
        data, _ = sweeplib.load_json(os.path.join(out, f))
        failed = sweeplib.job_errors(data)
        if failed:
            print(f"report: {f}: failed, left out: {'; '.join(failed)}", file=sys.stderr)
            continue
        runs[(cell, ini)].append(sweeplib.combine([sweeplib.job_metrics(j) for j in data["jobs"]]))
    except (ValueError, KeyError, IndexError, OSError) as e:
        print(f"report: {f}: unreadable ({e})", file=sys.stderr)


def med(cell, ini, key, scale=1.0):
    vals = [m[key] * scale for m in runs.get((cell, ini), []) if m.get(key) not in (None, "")]
    return (statistics.median(vals), len(vals)) if vals else (None, 0)


def fmt(v, nd=1):
    return "-" if v is None else f"{v:,.{nd}f}"


def ratio(a, b):
    return "-" if a is None or not b else f"{a / b:.2f}"


rows = [("4 KiB randread QD1", "qd1_randread_4k", "p50 latency, us", "lat_p50_us", 1.0, 1),
        ("4 KiB randread QD1", "qd1_randread_4k", "p99 latency, us", "lat_p99_us", 1.0, 1),
        ("4 KiB randread QD32", "iops_qd32_4k", "IOPS", "iops", 1.0, 0),
        ("4 KiB randread QD32", "iops_qd32_4k", "CPU per I/O (fio usr+sys), us", "cpu_us_per_io", 1.0, 2),
        ("128 KiB read QD16", "bw_read_128k", "MiB/s", "bw_bytes", 1.0 / 2**20, 1),
        ("128 KiB read QD16", "bw_read_128k", "CPU per I/O (fio usr+sys), us", "cpu_us_per_io", 1.0, 2)]
alt = any(ini == "alt" for _, ini in runs)  # bench/tcp.sh ALT_ENGINE: another build of ours
print("| workload | figure | ours (TCP) | kernel nvme-tcp (libaio) | ratio ours/kernel | "
      + ("alt build | ratio alt/kernel | " if alt else "") + "runs |")
print("|---|---|---|---|---|" + ("---|---|" if alt else "") + "---|")
for what, cell, fig, key, scale, nd in rows:
    (o, no), (k, nk) = med(cell, "ours", key, scale), med(cell, "kernel", key, scale)
    (a, na) = med(cell, "alt", key, scale)
    extra = f"{fmt(a, nd)} | {ratio(a, k)} | " if alt else ""
    print(f"| {what} | {fig} | {fmt(o, nd)} | {fmt(k, nd)} | {ratio(o, k)} | {extra}{no}/{nk}"
          + (f"/{na}" if alt else "") + " |")
