"""Shared by jobs/sweep and jobs/plot: one CSV row per fio run, read from fio's
JSON and from the engine's topology line; medians per cell."""
import csv
import json
import os
import re
import statistics

PCTS = (("p50_us", "50.000000"), ("p99_us", "99.000000"), ("p999_us", "99.900000"))
TOPO = ("hca", "hca_pci", "hca_numa", "gpu", "gpu_numa", "relation", "gpu_mem_reg",
        # the engine's placement line (engine/iomem.c): where the job ran and its memory was
        "cpu_numa", "mem_numa", "mem_pages", "relaxed_ordering", "cross_node",
        # hw_timestamps=1: NIC time from send completion to response, the busiest queue's
        "nic_p50_us", "nic_p90_us", "nic_p99_us", "nic_p999_us")
# clat: fio's completion latency, from just before the doorbell (our engine)
# or io_uring's submit call to the completion; lat: total latency, submission
# to completion, what the plots use (jobs/sweep asks fio for lat_percentiles).
LATS = ("clat", "lat")
# What each run measured, from the options fio reports in its JSON (the job
# file as run, variables expanded): the filename's transport ID, the workload,
# the CPUs and the engine's queue pairs (qpairs: each job's, empty the engine's
# default, qpairs=0; qpairs_shared: how many the jobs share, empty none)
SETUP = ("trtype", "traddr", "trsvcid", "subnqn", "ns", "srcaddr", "device", "rw_opt", "bs", "iodepth",
         "numjobs", "region", "cpus", "qpairs", "qpairs_shared")
METRICS = ("iops", "bw_bytes") + tuple(f"{l}_{k}" for l in LATS for k in ("mean_us",) + tuple(k for k, _ in PCTS)) + (
    "cpu_us_per_io", "usr_cpu_pct", "sys_cpu_pct", "ctx", "total_ios", "runtime_ms")


def columns(names):
    return (["initiator"] + list(names) + ["rep", "host", "status", "rw"] + list(METRICS)
            + list(TOPO) + list(SETUP) + ["json"])


def setup(data):
    """The SETUP fields of fio's JSON document: its global options and its
    first job's options (a job's own value wins)."""
    opts = dict(data.get("global options", {}))
    js = [j for _, jl in entries(data) for j in jl]
    if js:
        opts.update(js[0].get("job options", {}))
    t = dict.fromkeys(SETUP, "")
    fn = opts.get("filename", "")
    if "=" in fn:  # our engine's transport ID; '\:' is an escaped ':'
        for tok in fn.split():
            k, _, v = tok.partition("=")
            k = {"hostaddr": "srcaddr"}.get(k.lower(), k.lower())
            if k in ("trtype", "traddr", "trsvcid", "subnqn", "ns", "srcaddr"):
                t[k] = (t[k] + " " if t[k] else "") + v.replace("\\:", ":")
    else:
        t["device"] = fn
    for k, o in (("rw_opt", "rw"), ("bs", "bs"), ("iodepth", "iodepth"), ("numjobs", "numjobs"),
                 ("region", "size"), ("cpus", "cpus_allowed"), ("qpairs", "qpairs"),
                 ("qpairs_shared", "qpairs_shared")):
        t[k] = opts.get(o, opts.get("readwrite", "") if o == "rw" else "")
    return t


def error_line(err):
    """The line that says why a run failed: the last of the engine's or
    jobs/run's lines, where fio's own says only an errno."""
    lines = [l.strip() for l in err.splitlines() if l.startswith(("nvmeof", "jobs/run:", "fio: "))]
    own = [l for l in lines if not l.startswith("fio: ")]
    return (own or lines or [""])[-1]


def run_name(cell, ini, rep):
    safe = "_".join(f"{n}-{re.sub(r'[^A-Za-z0-9.+-]', '-', v)}" for n, v in cell)
    return f"{safe}.{ini}.{rep}"


def load_json(path):
    """fio's JSON document, and the text fio's client printed before it for its
    servers. A local run's output is the document alone (the engine writes its
    own lines to stderr with --output-format=json); in client mode fio prints
    each server's text output as lines "<host> ...", ours among them."""
    with open(path, errors="replace") as fh:
        text = fh.read()
    try:
        return json.loads(text), ""
    except json.JSONDecodeError:
        pass
    m = re.search(r"^\{", text, re.M)
    pre = text[:m.start()] if m else text
    stray = [l for l in pre.splitlines() if l.strip() and not l.startswith("<")]
    if not m or stray:
        raise ValueError("fio's output is not one JSON document"
                         + (f": it begins with {stray[0][:100]!r}" if stray else ""))
    data, _ = json.JSONDecoder().raw_decode(text[m.start():])
    return data, pre


def node(s):
    """'NUMA 1' -> '1'; 'several NUMA nodes' -> 'several'; 'NUMA ?' -> ''"""
    m = re.match(r"NUMA (\d+)", s)
    return m.group(1) if m else "several" if s.startswith("several") else ""


def placement(text, t):
    """The engine's placement line and cross-node warning; the NIC's times
    (hw_timestamps) of the queue that carried the most commands."""
    m = re.search(r"placement: .*?; CPUs on ([^,]+), I/O memory on ([^(]+?) \((\w+) pages[,)].*?"
                  r"PCIe relaxed ordering (on|off)", text)
    if m:
        t.update(cpu_numa=node(m.group(1)), mem_numa=node(m.group(2)), mem_pages=m.group(3),
                 relaxed_ordering=m.group(4))
        t["cross_node"] = "yes" if "cross-node placement:" in text else "no"
    best = None
    for m in re.finditer(r"NIC time from send completion to response \(hw_timestamps\): p50 ([\d.]+) us, "
                         r"p90 ([\d.]+) us, p99 ([\d.]+) us, p99\.9 ([\d.]+) us over (\d+) command", text):
        if best is None or int(m.group(5)) > int(best.group(5)):
            best = m
    if best:
        t.update(nic_p50_us=best.group(1), nic_p90_us=best.group(2), nic_p99_us=best.group(3),
                 nic_p999_us=best.group(4))


def topology(text):
    """Fields of the engine's GPU registration and placement lines (engine/topo.c, engine/iomem.c)."""
    t = dict.fromkeys(TOPO, "")
    placement(text, t)
    m = re.search(r"GPU -?\d+ memory registered \(([^)]*)\)", text)
    if m:
        t["gpu_mem_reg"] = m.group(1)
    m = re.search(r"HCA (\S+) is not a PCI device \(software RDMA\)", text)
    if m:
        t.update(hca=m.group(1), relation="HCA not on PCI (software RDMA)")
        return t
    m = re.search(r"HCA (\S+) \(([^,()]+), NUMA (-?\d+)\) and GPU (\S+) \(NUMA (-?\d+)\): ([^\n]*)", text)
    if m:
        t.update(hca=m.group(1), hca_pci=m.group(2), hca_numa=m.group(3), gpu=m.group(4),
                 gpu_numa=m.group(5), relation=m.group(6).strip())
        return t
    m = re.search(r"HCA (\S+) \(([^)]*)\); GPU (\S+) not found in sysfs", text)
    if m:
        t.update(hca=m.group(1), hca_pci=m.group(2), gpu=m.group(3), relation="GPU not found in sysfs")
    return t


def job_metrics(j):
    """Metrics of one fio job entry (group_reporting: the whole group)."""
    dirs = [d for d in ("read", "write", "trim") if d in j]
    main = max(dirs, key=lambda d: j[d].get("io_bytes", 0))
    ios = sum(j[d].get("total_ios", 0) for d in dirs)
    runt = j.get("job_runtime", 0)
    cpu_s = (j.get("usr_cpu", 0) + j.get("sys_cpu", 0)) / 100.0 * runt / 1000.0
    m = {"rw": main, "iops": sum(j[d].get("iops", 0) for d in dirs),
         "bw_bytes": sum(j[d].get("bw_bytes", 0) for d in dirs),
         "cpu_us_per_io": cpu_s * 1e6 / ios if ios else "",
         "usr_cpu_pct": j.get("usr_cpu", ""), "sys_cpu_pct": j.get("sys_cpu", ""),
         "ctx": j.get("ctx", ""), "total_ios": ios, "runtime_ms": runt}
    for lat in LATS:
        st = j[main].get(lat + "_ns", {})
        pct = st.get("percentile", {})
        m[lat + "_mean_us"] = st["mean"] / 1000.0 if "mean" in st else ""
        for k, p in PCTS:
            m[f"{lat}_{k}"] = pct[p] / 1000.0 if p in pct else ""
    return m


def entries(data):
    """(host, job entries) per host: one local host, or each fio server in client mode."""
    if "client_stats" not in data:
        return [("", data.get("jobs", []))]
    hosts = {}
    for j in data["client_stats"]:
        if j.get("jobname") == "All clients":
            continue
        host = j.get("hostname", "?") + (f":{j['port']}" if "port" in j else "")
        hosts.setdefault(host, []).append(j)
    return sorted(hosts.items())


def job_errors(data):
    """The failed jobs of fio's JSON document, as "job NAME: error N": fio sets a
    job's "error" (an errno) when it failed, connecting or doing I/O; its
    numbers are then no measurement. In client mode fio's exit status does not
    say that a server's job failed: only this does."""
    out = []
    for host, js in entries(data):
        for j in js:
            if j.get("error"):
                err = j["error"]
                try:
                    why = os.strerror(int(err))
                except (ValueError, OverflowError):
                    why = "?"
                out.append(f"{host + ' ' if host else ''}job {j.get('jobname', '?')}: error {err} ({why})")
    return out


def combine(ms):
    """Several job entries of one run (no group_reporting, or several hosts): rates and
    counts add up; latency is that of the entry with the most I/Os."""
    if len(ms) == 1:
        return ms[0]
    top = max(ms, key=lambda m: m["total_ios"])
    out = dict(top)
    for k in ("iops", "bw_bytes", "ctx", "total_ios"):
        out[k] = sum(m[k] for m in ms if m[k] != "")
    cpu = [m["cpu_us_per_io"] * m["total_ios"] for m in ms if m["cpu_us_per_io"] != ""]
    out["cpu_us_per_io"] = sum(cpu) / out["total_ios"] if out["total_ios"] and cpu else ""
    out["runtime_ms"] = max(m["runtime_ms"] for m in ms)
    return out


def row_from_run(base, names, cell, ini, rep, rc):
    row = dict.fromkeys(columns(names), "")
    row.update(initiator=ini, rep=rep, json=os.path.join("runs", os.path.basename(base) + ".json"))
    row.update(dict(cell))
    try:
        with open(base + ".err", errors="replace") as fh:
            err = fh.read()
    except OSError:
        err = ""
    try:
        data, pre = load_json(base + ".json")
        per_host = [(h, combine([job_metrics(j) for j in js])) for h, js in entries(data) if js]
    except (ValueError, KeyError, OSError) as e:
        last = [l for l in err.strip().splitlines() if l.strip()][-1:] or [str(e)]
        row["status"] = f"failed (exit {rc}): {last[0][:200]}"
        return row
    row.update(topology(pre + err))
    row.update(setup(data))
    failed_jobs = job_errors(data)
    if failed_jobs:
        row["status"] = f"failed (exit {rc}): {'; '.join(failed_jobs)[:200]}"
        return row
    if rc != 0 or not per_host:
        last = [l for l in err.strip().splitlines() if l.strip()][-1:] or ["no job results"]
        row["status"] = f"failed (exit {rc}): {last[0][:200]}"
        return row
    row["status"] = "ok"
    row["_hosts"] = per_host
    return row


def expand_hosts(row):
    """One CSV row per host; with several hosts, also their sum as host 'all'."""
    hosts = row.pop("_hosts", None)
    if not hosts:
        return [row]
    if len(hosts) == 1:
        r = dict(row, **hosts[0][1])
        r["host"] = hosts[0][0]
        return [r]
    rows = [dict(row, host=h, **m) for h, m in hosts]
    return rows + [dict(row, host="all", **combine([m for _, m in hosts]))]


def write_csv(path, rows, names):
    cols = columns(names)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.10g}" if isinstance(v, float) else v) for k, v in r.items()})


def read_csv(path):
    with open(path, newline="") as fh:
        rd = csv.DictReader(fh)
        rows = list(rd)
    return rows, rd.fieldnames


def swept_names(fieldnames):
    i, j = fieldnames.index("initiator"), fieldnames.index("rep")
    return fieldnames[i + 1:j]


def ok_rows(rows):
    """Rows the summary and plots use: successful runs, one per run (hosts summed)."""
    runs = {}
    for r in rows:
        if r["status"] != "ok":
            continue
        key = (r["json"], r["rep"], r["initiator"])
        if r["host"] in ("", "all") or key not in runs:
            runs[key] = r
    return list(runs.values())


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def medians(rows, names, inis):
    """{(cell values..., initiator): {metric: (median, min, max)}} in the order swept."""
    cells = {}
    for r in ok_rows(rows):
        key = tuple(r[n] for n in names) + (r["initiator"],)
        cells.setdefault(key, []).append(r)
    out = {}
    for key, rs in cells.items():
        out[key] = {}
        for m in METRICS:
            vals = [num(r[m]) for r in rs if num(r[m]) is not None]
            out[key][m] = (statistics.median(vals), min(vals), max(vals)) if vals else None
        for t in TOPO:
            out[key][t] = rs[0].get(t, "")
        out[key]["n"] = len(rs)
    return out


def summary(rows, names, inis):
    med = medians(rows, names, inis)
    head = list(names) + ["initiator", "runs", "IOPS", "MiB/s", "clat p50 us", "clat p99 us",
                          "clat p99.9 us", "lat p50 us", "lat p99 us", "CPU us/IO"]
    both = "ours" in inis and "kernel" in inis
    if both:
        head += ["IOPS ours/kernel", "lat p50 ours/kernel"]
    lines = []
    seen = []
    for key in med:
        if key[:-1] not in seen:
            seen.append(key[:-1])
    for cell in seen:
        for ini in inis:
            m = med.get(cell + (ini,))
            if m is None:
                lines.append(list(cell) + [ini, "0"] + ["-"] * (len(head) - len(cell) - 2))
                continue

            def g(k, scale=1.0, nd=1):
                if m[k] is None:
                    return "-"
                v = m[k][0] / scale
                return f"{v:,.{nd}f}" if v >= 10 or nd == 0 else f"{v:.3g}"
            line = list(cell) + [ini, str(m["n"]), g("iops", nd=0), g("bw_bytes", 2**20), g("clat_p50_us"),
                                 g("clat_p99_us"), g("clat_p999_us"), g("lat_p50_us"), g("lat_p99_us"),
                                 g("cpu_us_per_io", nd=2)]
            if both:
                o, k = med.get(cell + ("ours",)), med.get(cell + ("kernel",))

                def ratio(key):
                    if not o or not k or not o[key] or not k[key] or not k[key][0]:
                        return "-"
                    return f"{o[key][0] / k[key][0]:.2f}"
                line += [ratio("iops"), ratio("lat_p50_us")] if ini == "ours" else ["", ""]
            lines.append(line)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = "  ".join("{:>%d}" % w for w in widths)
    text = "\nsweep: medians per cell\n" + fmt.format(*head) + "\n"
    for line in lines:
        text += fmt.format(*line) + "\n"
    return text
