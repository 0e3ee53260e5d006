"""jobs/sweeplib.py reads the engine's end-of-job lines into the sweep's CSV:
the placement line in each form the engine prints (engine/iomem.c), checked
here without a target, so a change of wording shows before a sweep runs."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "jobs"))
import sweeplib  # noqa: E402


def fields(text):
    t = dict.fromkeys(sweeplib.TOPO, "")
    sweeplib.placement(text, t)
    return t


def test_placement_with_the_reason_for_the_node():
    t = fields("nvmeof: job sl: placement: 20480 bytes at 0x7f44c74c0000; CPUs on NUMA 0, I/O memory on "
               "NUMA 0 (normal pages, numa_node=auto: the job's CPUs' node, its HCAs' being unknown), "
               "HCA rxe0 (not PCI, NUMA ?), PCIe relaxed ordering on\n")
    assert (t["cpu_numa"], t["mem_numa"], t["mem_pages"], t["relaxed_ordering"], t["cross_node"]) == \
        ("0", "0", "normal", "on", "no")


def test_placement_huge_pages_cross_node():
    t = fields("nvmeof: job j: placement: 4096 bytes at 0x7f; CPUs on NUMA 1, I/O memory on NUMA 0 "
               "(huge pages), HCA rxe0 (not PCI, NUMA ?), PCIe relaxed ordering off\n"
               "nvmeof: job j: cross-node placement: the job's CPUs on NUMA 1, its I/O memory on NUMA 0\n")
    assert (t["cpu_numa"], t["mem_numa"], t["mem_pages"], t["relaxed_ordering"], t["cross_node"]) == \
        ("1", "0", "huge", "off", "yes")


def _job(error, iops):
    lat = {"mean": 1000.0, "percentile": {"50.000000": 1000, "99.000000": 2000, "99.900000": 3000}}
    return {"jobname": "j", "error": error, "job_runtime": 1000, "usr_cpu": 1.0, "sys_cpu": 1.0, "ctx": 10,
            "read": {"io_bytes": 4096 * iops, "iops": float(iops), "bw_bytes": 4096 * iops, "total_ios": iops,
                     "clat_ns": lat, "lat_ns": lat}}


def _run(tmp_path, name, error, iops, rc=0):
    import json
    base = tmp_path / name
    (tmp_path / (name + ".json")).write_text(json.dumps({"jobs": [_job(error, iops)]}))
    (tmp_path / (name + ".err")).write_text("nvmeof: connect to ...: no RDMA device on this host\n")
    return sweeplib.row_from_run(str(base), ["BS"], [("BS", "4k")], "ours", 1, rc)


def test_a_failed_job_is_a_failed_cell_whatever_the_exit_status(tmp_path):
    """fio's exit status does not carry a server's failure in client mode: the
    job's "error" in fio's JSON makes the cell failed, not a number."""
    row = _run(tmp_path, "bad", 19, 0, rc=0)
    assert row["status"].startswith("failed") and "job j: error 19" in row["status"], row["status"]
    assert row["iops"] == ""
    assert _run(tmp_path, "good", 0, 100)["status"] == "ok"


def test_bench_report_leaves_failed_runs_out(tmp_path):
    import subprocess
    _run(tmp_path, "iops_qd32_j1.ours.1", 0, 1000)
    _run(tmp_path, "iops_qd32_j1.ours.2", 0, 3000)
    _run(tmp_path, "iops_qd32_j1.ours.3", 19, 0)  # a zero would make the median 1000
    report = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "report.py")
    r = subprocess.run([sys.executable, report, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "iops_qd32_j1.ours.3.json: failed, left out: job j: error 19" in r.stderr
    row = [l for l in r.stdout.splitlines() if l.startswith("| 1 |")][0]
    assert row.split("|")[2].strip() == "2,000", row


def _script(name, args, env):
    import subprocess
    top = os.path.join(os.path.dirname(__file__), "..", "..", "..")
    return subprocess.run([os.path.join(top, "jobs", name)] + args, capture_output=True, text=True, timeout=60,
                          env=env)


def test_jobs_run_without_arguments_prints_its_usage():
    r = _script("run", [], dict(os.environ))
    assert r.returncode == 2
    assert "unbound variable" not in r.stderr and r.stderr.startswith("jobs/run JOBFILE"), r.stderr


def test_jobs_sweep_without_target_stops_at_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("TARGET", "NVMEOF_TB_ADDR", "PATHS")}
    out = tmp_path / "results"
    r = _script("sweep", ["--out", str(out), "iops.fio", "NUMJOBS=1,2"], env)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "set TARGET" in lines[0], r.stderr
    assert not out.exists() and "run 1 of" not in r.stdout


def test_each_row_names_its_setup(tmp_path):
    """The CSV says what was measured: transport ID, workload, region, CPUs,
    queue pairs, from the options fio reports (the job file as run)."""
    import json
    data = {"global options": {"ioengine": "external:/x/libnvmeof_fio.so", "size": "100%", "cpus_allowed": "0-3",
                               "filename": "trtype=TCP adrfam=IPv4 traddr=192.0.2.1 trsvcid=4420 "
                                           "subnqn=nqn.2026-12.io.x\\:a ns=2 srcaddr=192.0.2.9", "qpairs": "1"},
            "jobs": [dict(_job(0, 100), **{"job options": {"rw": "randwrite", "bs": "8k", "iodepth": "64",
                                                             "numjobs": "1"}})]}
    (tmp_path / "s.json").write_text(json.dumps(data))
    (tmp_path / "s.err").write_text("")
    row = sweeplib.row_from_run(str(tmp_path / "s"), ["BS"], [("BS", "8k")], "ours", 1, 0)
    want = {"trtype": "TCP", "traddr": "192.0.2.1", "trsvcid": "4420", "subnqn": "nqn.2026-12.io.x:a", "ns": "2",
            "srcaddr": "192.0.2.9", "rw_opt": "randwrite", "bs": "8k", "iodepth": "64", "region": "100%",
            "cpus": "0-3", "qpairs": "1", "device": ""}
    assert {k: row[k] for k in want} == want
    assert set(want) <= set(sweeplib.columns(["BS"]))


def test_a_failed_run_names_the_engine_line():
    err = ("nvmeof: job j (1): nqn.x: controller CNTLID 1, I/O queue 1\n"
           "nvmeof: connect to 127.0.0.1 port 4420 subsystem nqn.x:y: nothing listens on that port\n"
           "fio: pid=0, err=111/file:engine/probe.c:24, func=nvmeof connect, error=Connection refused\n")
    assert sweeplib.error_line(err).startswith("nvmeof: connect to 127.0.0.1 port 4420")
    assert sweeplib.error_line("jobs/run: iops.fio does not read RW\n").startswith("jobs/run:")
