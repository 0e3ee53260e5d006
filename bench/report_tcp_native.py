#!/usr/bin/env python3
"""The native NVMe/TCP table from a bench/tcp-native.sh result folder.

Files CELL.DIGESTS.INITIATOR.REP.json (fio's JSON: ours, alt, spdk; `nvmeof
perf -o json`'s: ours_perf, alt_perf) and CELL.DIGESTS.spdk_perf.REP.txt
(spdk_nvme_perf's output). Writes
results.csv (one row per run) and summary.json (medians, runs, spread per
cell, digests and initiator) into the folder and prints a Markdown table of
medians, ratio ours/SPDK's fio plugin and, without fio, nvmeof perf over
spdk_nvme_perf. Latency is fio's total latency (lat,
submission to completion); spdk_nvme_perf's is its own (-L). CPU per I/O is
fio's usr+sys of the job over its I/Os; spdk_nvme_perf polls one core
without sleeping, so its CPU per I/O is taken as one core's time over its
IOPS, and nvmeof perf's the same way, for the two to compare alike (both
poll; nvmeof perf's JSON has its threads' own usr+sys per I/O too, which
on a busy machine is lower: a preempted poller is not charged)."""
import csv
import json
import os
import re
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jobs"))
import sweeplib  # noqa: E402

CELLS = (("qd1_randread_4k", "4 KiB randread QD1"), ("qd32_randread_4k", "4 KiB randread QD32"),
         ("read_128k_qd16", "128 KiB read QD16"), ("qd32_randwrite_4k", "4 KiB randwrite QD32"),
         ("write_128k_qd16", "128 KiB write QD16"))
KEYS = ("iops", "mib_s", "lat_p50_us", "lat_p99_us", "cpu_us_per_io")
NAME = re.compile(r"^([a-z0-9_]+)\.(off|on)\.(ours|alt|spdk|spdk_perf|ours_perf|alt_perf)\.(\d+)\.(json|txt)$")


def fio_run(path):
    data, _ = sweeplib.load_json(path)
    failed = sweeplib.job_errors(data)
    if failed:
        raise ValueError("failed: " + "; ".join(failed))
    m = sweeplib.combine([sweeplib.job_metrics(j) for j in data["jobs"]])
    if not m["total_ios"]:
        raise ValueError("no I/O")
    return {"iops": m["iops"], "mib_s": m["bw_bytes"] / 2**20, "lat_p50_us": m["lat_p50_us"],
            "lat_p99_us": m["lat_p99_us"], "cpu_us_per_io": m["cpu_us_per_io"]}


def perf_run(path):
    """spdk_nvme_perf's 'Total : IOPS MiB/s avg min max' and its -L percentiles."""
    with open(path, errors="replace") as fh:
        text = fh.read()
    m = re.search(r"^Total\s*:\s*([\d.]+)\s+([\d.]+)", text, re.M)
    if not m or float(m.group(1)) <= 0:
        raise ValueError("no 'Total' line with IOPS")
    iops = float(m.group(1))
    pct = {float(p): float(v) for p, v in re.findall(r"^\s*([\d.]+)%\s*:\s*([\d.]+)us", text, re.M)}
    return {"iops": iops, "mib_s": float(m.group(2)), "lat_p50_us": pct.get(50.0, ""),
            "lat_p99_us": pct.get(99.0, ""), "cpu_us_per_io": 1e6 / iops}


def tool_run(path):
    """nvmeof perf -o json: its totals and latency_us percentiles."""
    with open(path) as fh:
        d = json.load(fh)
    if d.get("errors") or not d.get("ios"):
        raise ValueError(f"{d.get('errors')} errors, {d.get('ios')} I/Os")
    return {"iops": d["iops"], "mib_s": d["mib_s"], "lat_p50_us": d["latency_us"]["p50"],
            "lat_p99_us": d["latency_us"]["p99"], "cpu_us_per_io": 1e6 * max(1, len(d["queues"])) / d["iops"]}


def load(out):
    runs, rows = defaultdict(list), []
    for f in sorted(os.listdir(out)):
        m = NAME.match(f)
        if not m:
            continue
        cell, dg, ini, rep, ext = m.groups()
        try:
            path = os.path.join(out, f)
            r = perf_run(path) if ext == "txt" else tool_run(path) if ini in ("ours_perf", "alt_perf") else fio_run(path)
        except (ValueError, KeyError, IndexError, OSError) as e:
            print(f"report: {f}: left out ({e})", file=sys.stderr)
            continue
        runs[(cell, dg, ini)].append(r)
        rows.append(dict(cell=cell, digests=dg, initiator=ini, rep=int(rep), **r))
    return runs, rows


def summarize(runs):
    summ = {}
    for (cell, dg, ini), rs in runs.items():
        s = {"runs": len(rs)}
        for k in KEYS:
            vals = [r[k] for r in rs if r[k] != ""]
            if vals:
                med = statistics.median(vals)
                s[k] = med
                s[k + "_spread_pct"] = (max(vals) - min(vals)) / med * 100 if med else 0.0
        summ.setdefault(cell, {}).setdefault(dg, {})[ini] = s
    return summ


def fmt(v, nd):
    return "-" if v is None else f"{v:,.{nd}f}"


def main():
    out = sys.argv[1]
    runs, rows = load(out)
    if not rows:
        sys.exit(f"report: no results in {out}")
    with open(os.path.join(out, "results.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["cell", "digests", "initiator", "rep"] + list(KEYS))
        w.writeheader()
        w.writerows(rows)
    summ = summarize(runs)
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summ, fh, indent=1, sort_keys=True)
    alt = any(ini == "alt" for _, _, ini in runs)
    tool = any(ini == "ours_perf" for _, _, ini in runs)
    alt_tool = any(ini == "alt_perf" for _, _, ini in runs)
    head = ("| workload | digests | figure | ours (fio) | SPDK plugin (fio) | ours/SPDK | "
            + ("alt build (fio) | alt/SPDK | " if alt else "")
            + "spdk_nvme_perf | "
            + ("nvmeof perf | perf/spdk_nvme_perf | spread perf, spdk_nvme_perf | " if tool else "")
            + ("alt build (perf) | alt/spdk_nvme_perf | spread alt | " if alt_tool else "")
            + "spread ours, SPDK | runs |")
    print(head)
    print("|" + "---|" * head.count(" | ") + "---|")
    for cell, what in CELLS:
        figs = [("IOPS", "iops", 0)] if "4k" in cell else [("MiB/s", "mib_s", 0)]
        if cell.startswith("qd1"):
            figs += [("p50 latency, us (lower is better)", "lat_p50_us", 1),
                     ("p99 latency, us (lower is better)", "lat_p99_us", 1)]
        figs += [("CPU per I/O, us (lower is better)", "cpu_us_per_io", 2)]
        for dg in ("off", "on"):
            byini = summ.get(cell, {}).get(dg)
            if not byini:
                continue
            for fig, k, nd in figs:
                v = {ini: byini.get(ini, {}).get(k) for ini in ("ours", "spdk", "alt", "spdk_perf", "ours_perf", "alt_perf")}
                sp = {ini: byini.get(ini, {}).get(k + "_spread_pct")
                      for ini in ("ours", "spdk", "ours_perf", "spdk_perf", "alt_perf")}

                def ratio(a, b):
                    return "-" if a is None or not b else f"{a / b:.2f}"
                n = "/".join(str(byini.get(i, {}).get("runs", 0)) for i in ("ours", "spdk")
                             + (("alt",) if alt else ()) + ("spdk_perf",) + (("ours_perf",) if tool else ())
                             + (("alt_perf",) if alt_tool else ()))
                print(f"| {what} | {dg} | {fig} | {fmt(v['ours'], nd)} | {fmt(v['spdk'], nd)} | "
                      f"{ratio(v['ours'], v['spdk'])} | "
                      + (f"{fmt(v['alt'], nd)} | {ratio(v['alt'], v['spdk'])} | " if alt else "")
                      + f"{fmt(v['spdk_perf'], nd)} | "
                      + (f"{fmt(v['ours_perf'], nd)} | {ratio(v['ours_perf'], v['spdk_perf'])} | "
                         f"{fmt(sp['ours_perf'], 0)}%, {fmt(sp['spdk_perf'], 0)}% | " if tool else "")
                      + (f"{fmt(v['alt_perf'], nd)} | {ratio(v['alt_perf'], v['spdk_perf'])} | "
                         f"{fmt(sp['alt_perf'], 0)}% | " if alt_tool else "")
                      + f"{fmt(sp['ours'], 0)}%, {fmt(sp['spdk'], 0)}% | {n} |")


if __name__ == "__main__":
    main()
