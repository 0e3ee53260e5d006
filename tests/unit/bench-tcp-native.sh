#!/bin/bash
# tests/unit/bench-tcp-native.sh: bench/report_tcp_native.py on a made-up
# result folder (no target, no timing): medians across repetitions, the
# ratio ours/SPDK's plugin, spdk_nvme_perf's text read, a failed run left out
# and said so, results.csv and summary.json written; nvmeof perf's JSON beside
# spdk_nvme_perf (its column and ratio); and bench/tcp-native.sh refusing,
# before it starts anything, where SPDK is absent or an initiator unknown, and
# its dry run: every cell's nvmeof perf runs spdk_nvme_perf's parameters.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/tally.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
R=$tmp/run
mkdir -p "$R"
# fio's JSON, the fields the report reads: NAME IOPS P50_US P99_US CPU_PCT [ERROR]
fio_json() {
  python3 - "$R/$1" "$2" "$3" "$4" "$5" "${6:-0}" <<'EOF'
import json, sys
path, iops, p50, p99, cpu, err = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
rt = 5000
ios = int(iops * rt / 1000)
d = {"io_bytes": ios * 4096, "bw_bytes": int(iops * 4096), "iops": iops, "total_ios": ios,
     "lat_ns": {"mean": p50 * 1000, "percentile": {"50.000000": p50 * 1000, "99.000000": p99 * 1000}},
     "clat_ns": {"mean": p50 * 1000}}
json.dump({"jobs": [{"jobname": "c", "error": err, "read": d, "write": {"io_bytes": 0, "iops": 0, "total_ios": 0},
                     "usr_cpu": cpu / 2, "sys_cpu": cpu / 2, "job_runtime": rt, "ctx": 10}]}, open(path, "w"))
EOF
}
# ours 90k, 100k, 110k IOPS; SPDK's plugin 80k, 80k, 100k: medians 100k and 80k
fio_json qd1_randread_4k.off.ours.1.json 90000 11 20 100
fio_json qd1_randread_4k.off.ours.2.json 110000 9 18 100
fio_json qd1_randread_4k.off.ours.3.json 100000 10 19 100
fio_json qd1_randread_4k.off.spdk.1.json 80000 12 21 100
fio_json qd1_randread_4k.off.spdk.2.json 100000 11 20 100
fio_json qd1_randread_4k.off.spdk.3.json 80000 12.5 22 100
# a failed run: its numbers must not count
fio_json qd1_randread_4k.off.spdk.4.json 1 1 1 100 111
cat > "$R/qd1_randread_4k.off.spdk_perf.1.txt" <<'EOF'
========================================================
Total                                                                            :   88000.60      343.75      11.30      10.01   200.00

Summary latency data for TCP (addr:127.0.0.1 subnqn:nqn.x) from core 0:
=================================================================================
 50.00000% :    11.123us
 99.00000% :    14.500us
EOF
echo "Initializing NVMe Controllers" > "$R/qd1_randread_4k.off.spdk_perf.2.txt"  # died before its table
out=$(python3 bench/report_tcp_native.py "$R" 2> "$tmp/err")
rc=$?
row() { grep -F "| 4 KiB randread QD1 | off | $1 |" <<< "$out"; }
if [ $rc = 0 ] && row IOPS | grep -qF "| 100,000 | 80,000 | 1.25 | 88,001 |" && row IOPS | grep -qF "| 3/3/1 |"; then
  ok "IOPS: medians of the repetitions, ratio ours/SPDK, spdk_nvme_perf's total, runs counted"
else bad "IOPS: medians of the repetitions, ratio ours/SPDK, spdk_nvme_perf's total, runs counted" "rc $rc" "$out" "$(cat "$tmp/err")"; fi
if row "p50 latency, us (lower is better)" | grep -qF "| 10.0 | 12.0 | 0.83 | 11.1 |"; then
  ok "p50 latency: medians, ratio, spdk_nvme_perf's -L percentile"
else bad "p50 latency: medians, ratio, spdk_nvme_perf's -L percentile" "$out"; fi
# fio's CPU: 100 % of 5 s over 5 s x IOPS I/Os, i.e. 1e6/IOPS us; spdk_nvme_perf: one core over its IOPS
if row "CPU per I/O, us (lower is better)" | grep -qF "| 10.00 | 12.50 | 0.80 | 11.36 |"; then
  ok "CPU per I/O: fio's usr+sys over its I/Os; spdk_nvme_perf one polling core"
else bad "CPU per I/O: fio's usr+sys over its I/Os; spdk_nvme_perf one polling core" "$out"; fi
if grep -q "qd1_randread_4k.off.spdk.4.json: left out (failed: job c: error 111" "$tmp/err" &&
   grep -q "qd1_randread_4k.off.spdk_perf.2.txt: left out" "$tmp/err"; then
  ok "a failed fio job and an spdk_nvme_perf without its table are left out, named"
else bad "a failed fio job and an spdk_nvme_perf without its table are left out, named" "$(cat "$tmp/err")"; fi
if [ "$(wc -l < "$R/results.csv")" = 8 ] &&
   python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['qd1_randread_4k']['off']; \
assert s['ours']['iops'] == 100000 and s['spdk']['runs'] == 3 and round(s['ours']['iops_spread_pct']) == 20" "$R/summary.json"; then
  ok "results.csv (a row per run) and summary.json (medians, runs, spread)"
else bad "results.csv (a row per run) and summary.json (medians, runs, spread)" "$(cat "$R/results.csv" "$R/summary.json")"; fi
if ! grep -q "128 KiB\|| on |" <<< "$out"; then ok "cells and digests not run have no rows"
else bad "cells and digests not run have no rows" "$out"; fi
# nvmeof perf's JSON (ours_perf) beside spdk_nvme_perf: 90k, 110k, 100k IOPS
# and a failed run; spdk_nvme_perf 88,000.60 (the text above)
P=$tmp/perf
mkdir -p "$P"
cp "$R/qd1_randread_4k.off.spdk_perf.1.txt" "$P/"
perf_json() { # NAME IOPS P50 P99 CPU ERRORS
  cat > "$P/$1" <<EOF
{"pattern": "randread", "io_size": 4096, "queue_depth": 1, "queues": [], "ios": $((${2%.*} * 5)),
 "reads": $((${2%.*} * 5)), "writes": 0, "bytes": 1, "errors": $6, "iops": $2, "mib_s": 1.0,
 "latency_us": {"mean": $3, "min": 1, "max": 99, "p50": $3, "p90": $3, "p99": $4, "p99_9": $4, "p99_99": $4},
 "cpu_us_per_io": $5, "cpu_user_s": 1, "cpu_sys_s": 4}
EOF
}
# its own CPU figure (5 us) aside: one polling core over its IOPS, as spdk_nvme_perf's
perf_json qd1_randread_4k.off.ours_perf.1.json 90000 10.5 20 5 0
perf_json qd1_randread_4k.off.ours_perf.2.json 110000 9.5 18 5 0
perf_json qd1_randread_4k.off.ours_perf.3.json 100000 10.0 19 5 0
perf_json qd1_randread_4k.off.ours_perf.4.json 1 1 1 1 3
out=$(python3 bench/report_tcp_native.py "$P" 2> "$tmp/err")
prow() { grep -F "| 4 KiB randread QD1 | off | $1 |" <<< "$out"; }
if grep -qF "| spdk_nvme_perf | nvmeof perf | perf/spdk_nvme_perf | spread perf, spdk_nvme_perf |" <<< "$out" &&
   prow IOPS | grep -qF "| 88,001 | 100,000 | 1.14 | 20%, 0% |" && prow IOPS | grep -qF "| 0/0/1/3 |" &&
   prow "p50 latency, us (lower is better)" | grep -qF "| 11.1 | 10.0 | 0.90 |" &&
   prow "CPU per I/O, us (lower is better)" | grep -qF "| 11.36 | 10.00 | 0.88 |"; then
  ok "nvmeof perf: its medians beside spdk_nvme_perf's, the ratio, spreads, CPU alike, runs counted"
else bad "nvmeof perf: its medians beside spdk_nvme_perf's, the ratio, spreads, CPU alike, runs counted" "$out" "$(cat "$tmp/err")"; fi
if grep -q "qd1_randread_4k.off.ours_perf.4.json: left out (3 errors" "$tmp/err"; then
  ok "an nvmeof perf run with errors is left out, named"
else bad "an nvmeof perf run with errors is left out, named" "$(cat "$tmp/err")"; fi

mkdir "$tmp/empty"
if ! python3 bench/report_tcp_native.py "$tmp/empty" > /dev/null 2> "$tmp/err" && grep -q "no results" "$tmp/err"; then
  ok "a folder with no results: refused, said so"
else bad "a folder with no results: refused, said so" "$(cat "$tmp/err")"; fi

msg=$(SPDK_DIR=$tmp/nospdk BENCH_OUT=$tmp/b bash bench/tcp-native.sh 2>&1)
if [ $? != 0 ] && grep -q "not in $tmp/nospdk" <<< "$msg" && [ ! -e "$tmp/b" ]; then
  ok "tcp-native.sh without SPDK: refused before it reserves or starts anything"
else bad "tcp-native.sh without SPDK: refused before it reserves or starts anything" "$msg"; fi
msg=$(INITIATORS="ours frob" BENCH_OUT=$tmp/b2 bash bench/tcp-native.sh 2>&1)
if [ $? != 0 ] && grep -q "unknown initiator frob" <<< "$msg" && [ ! -e "$tmp/b2" ]; then
  ok "tcp-native.sh: an unknown initiator refused before anything starts"
else bad "tcp-native.sh: an unknown initiator refused before anything starts" "$msg"; fi
# the dry run: every cell and digest setting, each initiator's command line;
# nvmeof perf's parameters are spdk_nvme_perf's, its digests with theirs
D=$tmp/dry
msg=$(DRY=1 REPS=1 SPDK_DIR=$tmp/nospdk BENCH_OUT=$D INI_CPU=5 bash bench/tcp-native.sh 2>&1)
rc=$?
chk=$(python3 - "$D" <<'PY'
import os, shlex, sys
d = sys.argv[1]
cells = "qd1_randread_4k qd32_randread_4k read_128k_qd16 qd32_randwrite_4k write_128k_qd16".split()
def opts(argv, keys):
    return {k: argv[argv.index(k) + 1] if k in argv else None for k in keys}
bad = []
for c in cells:
    for dg in ("off", "on"):
        for ini in ("ours", "spdk"):
            if not os.path.exists(f"{d}/{c}.{dg}.{ini}.1.json"):
                bad.append(f"{c}.{dg}.{ini}: no command")
        sp = shlex.split(open(f"{d}/{c}.{dg}.spdk_perf.1.txt").read())
        op = shlex.split(open(f"{d}/{c}.{dg}.ours_perf.1.json").read())
        k = ("-c", "-q", "-o", "-w", "-t")
        a, b = opts(sp, k), opts(op, k)
        if a != b or b["-c"] != "0x20":
            bad.append(f"{c}.{dg}: spdk_nvme_perf {a}, nvmeof perf {b}")
        if ("-H" in op and "-I" in op) != (dg == "on") or ("-H" in sp) != (dg == "on"):
            bad.append(f"{c}.{dg}: digests")
        if op[op.index("--warmup") + 1] != sp[sp.index("-a") + 1] or op[-2:] != ["-o", "json"]:
            bad.append(f"{c}.{dg}: warm-up or output")
        if "perf" not in op or op[op.index("-r") + 1] != sp[sp.index("-r") + 1]:
            bad.append(f"{c}.{dg}: transport ID")
print("; ".join(bad) or "agree")
PY
)
if [ $rc = 0 ] && [ "$chk" = agree ] && [ "$(ls "$D" | wc -l)" = 40 ]; then
  ok "tcp-native.sh DRY=1: 5 cells x 2 digests x 4 initiators, nvmeof perf with spdk_nvme_perf's parameters"
else bad "tcp-native.sh DRY=1: 5 cells x 2 digests x 4 initiators, nvmeof perf with spdk_nvme_perf's parameters" \
  "rc $rc: $msg" "$chk" "$(ls "$D")"; fi
tally bench-tcp-native
