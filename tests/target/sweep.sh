#!/bin/bash
# jobs/sweep and jobs/plot against the real target, and our engine under fio's
# client/server mode (two fio servers on the guest's loopback stand in for two
# initiator hosts). Runtimes are tiny: these check the plumbing, not speed.
source "$(dirname "$0")/lib.sh"
B=${NVMEOF_BUILD:-build/out}
ENG=$PWD/$B/libnvmeof_fio.so
export ENGINE=$ENG RUNTIME=1 RAMP=0 REGION=64m

# check.py CSV-or-SVG assertions, in Python so the CSV is parsed as CSV and the
# SVGs by an XML parser.
cat > "$SCRATCH/check.py" <<'EOF'
import csv, sys, xml.etree.ElementTree as ET
def die(m):
    print("    " + m); sys.exit(1)
what = sys.argv[1]
if what == "csv":  # csv path, expected rows, required columns..., then --ini list
    path, n = sys.argv[2], int(sys.argv[3])
    rows = list(csv.DictReader(open(path)))
    cols = sys.argv[4:]
    if len(rows) != n: die(f"{len(rows)} rows in {path}, expected {n}")
    for c in cols:
        if c not in rows[0]: die(f"column {c} missing from {path}: {list(rows[0])}")
    for r in rows:
        if r["status"] != "ok": die(f"run not ok: {r}")
        f = {k: float(r[k]) for k in ("iops", "bw_bytes", "clat_mean_us", "clat_p50_us", "clat_p99_us",
                                      "clat_p999_us", "lat_mean_us", "lat_p50_us", "lat_p99_us", "lat_p999_us",
                                      "cpu_us_per_io", "total_ios", "ctx")}
        if not (f["iops"] > 0 and f["bw_bytes"] > 0 and f["total_ios"] > 0): die(f"no I/O: {r}")
        for l in ("clat", "lat"):
            if not (0 < f[l + "_p50_us"] <= f[l + "_p99_us"] <= f[l + "_p999_us"]): die(f"{l} percentiles out of order: {r}")
        # every I/O's total latency includes its completion latency
        for k in ("mean_us", "p50_us", "p99_us"):
            if f["lat_" + k] < f["clat_" + k] * 0.99: die(f"lat_{k} below clat_{k}: {r}")
        if not (f["clat_mean_us"] > 0 and f["cpu_us_per_io"] > 0 and f["ctx"] >= 0): die(f"insane: {r}")
        # bandwidth is IOPS times the block size (within fio's rounding)
        bs = {"4k": 4096, "16k": 16384}.get(r.get("BS"), None)
        if bs and abs(f["bw_bytes"] / (f["iops"] * bs) - 1) > 0.02: die(f"bw != iops * bs: {r}")
    print("    " + "; ".join(f"{r['initiator']} {r.get('BS', r.get('NUMJOBS'))}: {float(r['iops']):.0f} IOPS "
                            f"lat p50 {r['lat_p50_us']} us p99 {r['lat_p99_us']} us" for r in rows))
elif what == "svg":  # svg path, strings that must be texts in it
    root = ET.parse(sys.argv[2]).getroot()
    if not root.tag.endswith("svg"): die(f"{sys.argv[2]}: root element {root.tag}")
    texts = " | ".join("".join(t.itertext()) for t in root.iter() if t.tag.endswith("text"))
    for s in sys.argv[3:]:
        if s not in texts: die(f"{sys.argv[2]}: no text '{s}' among: {texts[:600]}")
elif what == "topo":  # csv path: every row names the HCA and its placement
    for r in csv.DictReader(open(sys.argv[2])):
        if r["hca"] != "rxe0" or "software RDMA" not in r["relation"] or r["gpu_mem_reg"] != "peermem":
            die(f"topology fields: {r}")
        # the placement line: relaxed ordering on by default, normal pages, nodes as the guest has them
        if r["relaxed_ordering"] != "on" or r["mem_pages"] != "normal" or r["mem_numa"] == "" or r["cross_node"] not in ("yes", "no"):
            die(f"placement fields: {r}")
EOF
chk() { python3 "$SCRATCH/check.py" "$@"; }
COLS="initiator rep iops bw_bytes clat_mean_us clat_p50_us clat_p99_us clat_p999_us lat_mean_us lat_p50_us
      lat_p99_us lat_p999_us cpu_us_per_io ctx hca gpu relation hca_numa gpu_numa cpu_numa mem_numa mem_pages
      relaxed_ordering cross_node nic_p50_us nic_p99_us nic_p999_us"

t_two_point_sweep_both_initiators_csv_json_svg() {
  local o=$SCRATCH/qd1
  timeout 300 jobs/sweep --initiator both --reps 1 --out "$o" qd1-latency.fio BS=4k,16k \
    > "$SCRATCH/log" 2>&1 || { tail -30 "$SCRATCH/log"; fail "sweep exited non-zero"; }
  grep -q "run 4 of 4: BS=16k kernel rep 1; time left" "$SCRATCH/log" || { cat "$SCRATCH/log"; fail "no progress lines"; }
  grep -qE '^ *16k +ours .* [0-9.]+ +[0-9.]+ *$' "$SCRATCH/log" || { cat "$SCRATCH/log"; fail "no summary row with ratios"; }
  [ "$(ls "$o"/runs/*.json | wc -l)" = 4 ] || fail "expected 4 JSON files: $(ls "$o/runs")"
  # the whole file: nothing of ours around fio's document
  for f in "$o"/runs/*.json; do python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" \
    || fail "$f is not one fio JSON document"; done
  chk csv "$o/results.csv" 4 BS $COLS || fail "CSV"
  [ "$(grep -c '^ours,' "$o/results.csv")" = 2 ] && [ "$(grep -c '^kernel,' "$o/results.csv")" = 2 ] || fail "not 2 runs per initiator"
  chk svg "$o/plots/iops.svg" ours kernel "IOPS (I/Os per second)" "emulated test bed" || fail "iops.svg"
  chk svg "$o/plots/bandwidth.svg" ours kernel "bandwidth (MiB/s)" || fail "bandwidth.svg"
  chk svg "$o/plots/cpu.svg" ours kernel "CPU time per I/O (fio's usr+sys, us)" || fail "cpu.svg"
  chk svg "$o/plots/latency.svg" "ours p50" "ours p99" "ours p99.9" "kernel p99.9" "block size" || fail "latency.svg"
  chk svg "$o/plots/latency-dist.svg" "ours BS=4k" "kernel BS=16k" "total latency (fio lat: submission to completion) (us, log scale)" \
    || fail "latency-dist.svg"
}

t_topology_fields_and_plot_alone() {
  # The GPU registration line (CUDA test double) carries the HCA's PCIe placement.
  local o=$SCRATCH/loc
  NVMEOF_CUDA_LIB=$PWD/$B/tests/libcuda-double.so GPU=0 timeout 300 jobs/sweep --no-plot --out "$o" \
    pcie-locality.fio NUMJOBS=1,2 > "$SCRATCH/log" 2>&1 || { tail -30 "$SCRATCH/log"; fail "sweep exited non-zero"; }
  chk csv "$o/results.csv" 2 NUMJOBS $COLS || fail "CSV"
  chk topo "$o/results.csv" || fail "topology not in the CSV"
  # --no-plot: the plots below are jobs/plot's alone (and the sweep's own
  # plots are t_two_point_sweep_both_initiators_csv_json_svg's)
  [ ! -e "$o/plots" ] || fail "jobs/sweep --no-plot drew plots: $(ls "$o/plots")"
  jobs/plot "$o" > "$SCRATCH/plog" 2>&1 || { cat "$SCRATCH/plog"; fail "jobs/plot alone failed"; }
  chk svg "$o/plots/bandwidth.svg" "ours [rxe0: HCA not on PCI (software RDMA)]" "fio jobs (NUMJOBS" || fail "bandwidth.svg"
  chk svg "$o/plots/latency.svg" "ours [rxe0: HCA not on PCI (software RDMA)] p99" || fail "latency.svg"
}

expect_usage_error() { # needle args...
  local needle=$1; shift
  local rc=0
  jobs/sweep "$@" > "$SCRATCH/elog" 2>&1 || rc=$?
  [ $rc = 2 ] || { cat "$SCRATCH/elog"; fail "jobs/sweep $* exited $rc, expected 2 (usage)"; }
  grep -q -- "$needle" "$SCRATCH/elog" || { cat "$SCRATCH/elog"; fail "no '$needle' for: jobs/sweep $*"; }
  echo "    $(grep -m1 -- "$needle" "$SCRATCH/elog")"
}

t_bad_arguments_say_what_is_wrong() {
  expect_usage_error "job file 'nosuch.fio' not found" nosuch.fio BS=4k
  expect_usage_error "is not VAR=v1,v2" qd1-latency.fio BS
  expect_usage_error "empty value" qd1-latency.fio BS=4k,,8k
  expect_usage_error "at most two" qd1-latency.fio BS=4k RW=read RUNTIME=1
  expect_usage_error "--reps 0: at least 1" --reps 0 qd1-latency.fio BS=4k
  expect_usage_error "unknown initiator 'spdk'" --initiator spdk qd1-latency.fio BS=4k
  expect_usage_error 'does not read ${RW}' iops.fio RW=read,write
  jobs/plot "$SCRATCH/nothing" > "$SCRATCH/elog" 2>&1 && fail "jobs/plot on a missing folder succeeded"
  grep -q "no such folder" "$SCRATCH/elog" || { cat "$SCRATCH/elog"; fail "jobs/plot error unclear"; }
}

# INITIATOR=kernel measures the kernel host's device of SUBNQN's namespace NS
# and nothing else: another namespace's device, or none, is refused before fio.
t_jobs_run_kernel_device_is_checked() {
  source jobs/kdev.sh
  kdev_setup || fail "the kernel host did not connect"
  local dev=$KDEV rc=0
  INITIATOR=kernel KDEV=$dev NS=1 REGION=16m jobs/run qd1-latency.fio --output-format=terse > "$SCRATCH/k" 2>&1 ||
    { kdev_teardown; cat "$SCRATCH/k"; fail "jobs/run on namespace 1's device $dev failed"; }
  INITIATOR=kernel KDEV=$dev NS=2 jobs/run qd1-latency.fio > "$SCRATCH/k2" 2>&1 || rc=$?
  INITIATOR=kernel KDEV=/dev/nvme99n1 jobs/run qd1-latency.fio > "$SCRATCH/k3" 2>&1 || rc=$((rc * 10 + $?))
  kdev_teardown
  cat "$SCRATCH/k2" "$SCRATCH/k3" | sed 's/^/    /'
  [ "$rc" = 22 ] || fail "exit statuses $rc, expected 2 and 2"
  grep -q "KDEV=$dev is namespace 1 of $NVMEOF_TB_NQN_A, not namespace 2" "$SCRATCH/k2" || fail "NS=2: not said"
  grep -q "KDEV=/dev/nvme99n1 does not exist" "$SCRATCH/k3" || fail "a missing device: not said"
  [ ! -e /dev/nvme99n1 ] || fail "fio created /dev/nvme99n1"
}

# The QP-scaling sweep's shape (jobs/qp-scaling.fio: 4 KiB random reads, QD4
# per job, one queue pair per job, thread mode) splits its I/O between its jobs
# when each job's region lies inside the namespace, as bench/plots.sh sets it:
# each of 4 jobs does at least a tenth of the mean, ours and the kernel host.
# A job whose region passes the end would stop at its first offset there (fio),
# and the run measure the others: such regions are refused, saying why.
qp_perjob() { # INITIATOR REGION OFFSET_INCREMENT -> fio's JSON in $SCRATCH/pj-$1.json
  printf '[global]\ninclude %s/jobs/common.fio.inc\ngroup_reporting=0\n[qp]\nrw=${RW}\nbs=${BS}\niodepth=${IODEPTH}\nnumjobs=${NUMJOBS}\noffset_increment=${OFFSET_INCREMENT}\n' \
    "$PWD" > "$SCRATCH/pj.fio"
  INITIATOR=$1 QPAIRS=1 REGION=$2 OFFSET_INCREMENT=$3 NUMJOBS=4 RW=randread BS=4k IODEPTH=4 RUNTIME=1 RAMP=0 \
    jobs/run "$SCRATCH/pj.fio" --output-format=json > "$SCRATCH/pj-$1.json" 2> "$SCRATCH/pj-$1.err"
}
t_qp_scaling_jobs_share_the_io_inside_the_namespace() {
  local who rc region oi rc1=0 rc2=0
  region=$(sed -n 's/.*QP_REGION:-\([0-9a-z]*\)}.*/\1/p' bench/plots.sh)
  oi=$(sed -n 's/.*QP_OFFSET_INCREMENT:-\([0-9a-z]*\)}.*/\1/p' bench/plots.sh)
  [ -n "$region" ] && [ -n "$oi" ] || fail "bench/plots.sh: no QP_REGION or QP_OFFSET_INCREMENT default"
  source jobs/kdev.sh
  kdev_setup || fail "the kernel host did not connect"
  for who in ours kernel; do
    rc=0; qp_perjob $who "$region" "$oi" || rc=$?
    [ $rc = 0 ] || { kdev_teardown; cat "$SCRATCH/pj-$who.err"; fail "$who: jobs/run exited $rc"; }
    python3 - "$SCRATCH/pj-$who.json" $who <<'PY' || { kdev_teardown; fail "$who: a job did less than a tenth of the mean"; }
import json, sys
t = open(sys.argv[1]).read()
ios = [j["read"]["total_ios"] for j in json.loads(t[t.index("{"):])["jobs"]]
print(f"    {sys.argv[2]}: per-job I/Os {ios}")
sys.exit(len(ios) != 4 or min(ios) < 0.1 * sum(ios) / len(ios))
PY
  done
  # the shape that once measured one job: 1 GiB regions 64 MiB apart on 1 GiB
  qp_perjob kernel 1g 64m || rc2=$?
  kdev_teardown
  qp_perjob ours 1g 64m || rc1=$?
  grep -h "passes the end" "$SCRATCH/pj-ours.err" "$SCRATCH/pj-kernel.err" | head -2 | sed 's/^/    /'
  [ $rc1 != 0 ] || fail "ours: regions past the end ran (exit 0)"
  [ $rc2 = 2 ] || fail "kernel: jobs/run exited $rc2, expected 2"
  grep -q "job qp.1: its region, offset 67108864 plus size 1073741824, passes the end of the namespace (1073741824 bytes)" \
    "$SCRATCH/pj-ours.err" || fail "ours: not said"
  grep -q "offset 201326592 plus size 1073741824, passes the end of /dev/nvme" "$SCRATCH/pj-kernel.err" || fail "kernel: not said"
}

servers_up() { # starts two fio servers on loopback ports 8765 and 8766
  ip link set lo up
  for p in 8765 8766; do
    fio --server=ip:127.0.0.1,$p --daemonize="$SCRATCH/srv$p.pid" > "$SCRATCH/srv$p.log" 2>&1
  done
  # until both listen (/proc/net/tcp: local port in hex, state 0A LISTEN), at most 10 s
  for i in $(seq 100); do
    listening 8765 && listening 8766 && return 0
    sleep 0.1
  done
  fail "the fio servers did not listen on 8765 and 8766 within 10 s"
}
listening() { awk -v p=":$(printf '%04X' "$1")" '$4 == "0A" && substr($2, length($2) - 4) == p {f = 1} END {exit !f}' /proc/net/tcp; }
servers_down() { # and until both are gone (their ports free for the next test), at most 10 s
  local p pid i
  for p in 8765 8766; do
    [ -s "$SCRATCH/srv$p.pid" ] || continue
    pid=$(cat "$SCRATCH/srv$p.pid")
    kill "$pid" 2>/dev/null || true
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  return 0
}

cs_job() { # thread (1|0) hca: one job file, with engine options in it, for both servers
  cat > "$SCRATCH/cs.fio" <<EOF
[global]
ioengine=external:$ENG
filename=trtype=RDMA adrfam=IPv4 traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_PORT subnqn=${NVMEOF_TB_NQN_A//:/\\:} ns=1
thread=$1
wait=poll
qd_limit=8
kato=5s
hca=$2
rw=randread
bs=4k
iodepth=8
size=64m
time_based=1
runtime=2
numjobs=2
group_reporting=1
[cs]
EOF
}

client_run() { # thread (1|0)
  local rc
  cs_job "$1" rxe0
  servers_up
  timeout 120 fio --client=ip:127.0.0.1,8765 "$SCRATCH/cs.fio" --client=ip:127.0.0.1,8766 "$SCRATCH/cs.fio" \
    > "$SCRATCH/clog" 2>&1 && rc=0 || rc=$?
  servers_down
  [ $rc = 0 ] || { tail -40 "$SCRATCH/clog"; fail "fio --client exited $rc"; }
  ! grep -qE "err= *[1-9]|nvmeof: .*(fail|error)" "$SCRATCH/clog" || { cat "$SCRATCH/clog"; fail "an error in the output"; }
  # each server answers the client's probe and sends its own job result; then fio's sum
  [ "$(grep -c '^hostname=' "$SCRATCH/clog")" = 2 ] || { cat "$SCRATCH/clog"; fail "not two servers answering"; }
  # (anywhere on a line: the two servers' progress output can run into each other)
  [ "$(grep -oE '\bcs: \(groupid=0, jobs=2\): err= 0' "$SCRATCH/clog" | wc -l)" = 2 ] ||
    { cat "$SCRATCH/clog"; fail "expected one result from each server"; }
  grep -q '^All clients: (groupid=0, jobs=2): err= 0' "$SCRATCH/clog" || { cat "$SCRATCH/clog"; fail "no sum of both servers"; }
  grep -E 'groupid=0|IOPS=' "$SCRATCH/clog" | sed 's/^/    /' | head -6 || true # shown only; the checks below say what is missing
}

t_client_server_thread_mode() { client_run 1; }

t_client_server_engine_options_reach_the_servers() {
  # hca= is checked by the engine on each server: a wrong one fails both jobs.
  local rc
  cs_job 1 mlx5_0
  servers_up
  timeout 120 fio --client=ip:127.0.0.1,8765 "$SCRATCH/cs.fio" --client=ip:127.0.0.1,8766 "$SCRATCH/cs.fio" \
    > "$SCRATCH/clog" 2>&1 && rc=0 || rc=$?
  servers_down
  [ $rc != 0 ] || { cat "$SCRATCH/clog"; fail "fio --client succeeded with hca=mlx5_0"; }
  [ "$(grep -c "not the expected mlx5_0" "$SCRATCH/clog")" -ge 2 ] || { cat "$SCRATCH/clog"; fail "not both servers refused hca=mlx5_0"; }
  echo "    $(grep -m1 "not the expected mlx5_0" "$SCRATCH/clog")"
}
t_client_server_process_mode() { client_run 0; }

t_sweep_on_fio_servers() {
  # The sweep runner drives the same two servers: one row per server and their sum.
  local o=$SCRATCH/cs rc
  servers_up
  timeout 300 jobs/sweep --client ip:127.0.0.1,8765 --client ip:127.0.0.1,8766 --out "$o" \
    iops.fio NUMJOBS=1,2 > "$SCRATCH/log" 2>&1 && rc=0 || rc=$?
  servers_down
  [ $rc = 0 ] || { tail -30 "$SCRATCH/log"; for f in "$o"/runs/*.err; do cat "$f"; done; fail "sweep on servers exited $rc"; }
  python3 - "$o/results.csv" <<'EOF' || fail "CSV of the client sweep"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
hosts = sorted({r["host"] for r in rows})
assert len(rows) == 6 and len(hosts) == 3 and "all" in hosts, (len(rows), hosts)
for nj in ("1", "2"):
    rs = {r["host"]: float(r["iops"]) for r in rows if r["NUMJOBS"] == nj}
    parts = [v for h, v in rs.items() if h != "all"]
    assert all(v > 0 for v in parts) and abs(rs["all"] - sum(parts)) < 1e-6 * rs["all"] + 1, rs
for r in rows:  # total-latency percentiles travel in the job file, not on the command line
    assert r["status"] == "ok" and 0 < float(r["lat_p50_us"]) <= float(r["lat_p99_us"]), r
print("    hosts:", hosts)
EOF
}

run_tests "$@"
