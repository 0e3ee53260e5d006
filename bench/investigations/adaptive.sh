#!/bin/bash
# IN-GUEST: wait=adaptive (the default) against wait=hybrid (the default
# before it) and the kernel host, in the QP-scaling sweep's shape: 4 KiB
# random reads, QD4 per job, one queue pair per job (jobs/qp-scaling.fio),
# NUMJOBS 1, 4, 16; the three alternate run by run, REPS times; medians of
# IOPS and fio's CPU (usr+sys) per I/O. Then perf record -a -e cpu-clock of
# 16 jobs with each (the target's and Soft-RoCE's kernel work counted).
#   tests/testbed/run bash bench/investigations/adaptive.sh
# Results in build/adaptive/<stamp>/ (summary.txt, profile-*.txt, runs/).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${ADAPTIVE_OUT:-build/adaptive/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/runs"
. jobs/kdev.sh
. bench/perf-top.sh
kdev_setup || { echo "adaptive: kernel initiator did not connect"; exit 1; }
trap kdev_teardown EXIT
# each job's region inside the 1 GiB namespace (its regions once passed the end:
# BENCHMARKS.md, "Why one job did the I/O")
export RUNTIME=${RUNTIME:-4} RAMP=1 REGION=768m RW=randread BS=4k IODEPTH=4 OFFSET_INCREMENT=4m
JOBS=${JOBS:-1 4 16} REPS=${REPS:-3}
run() { # name mode nj [perf...]
  local name=$1 mode=$2 nj=$3; shift 3
  if [ "$mode" = kernel ]; then
    env INITIATOR=kernel NUMJOBS="$nj" "$@" jobs/run qp-scaling.fio --output-format=json
  else
    env INITIATOR=ours ENGINE_OPTS="wait=$mode" NUMJOBS="$nj" "$@" jobs/run qp-scaling.fio --output-format=json
  fi > "$OUT/runs/$name.json" 2> "$OUT/runs/$name.err"
  echo $? > "$OUT/runs/$name.rc"
}
for rep in $(seq "$REPS"); do
  for nj in $JOBS; do
    for mode in hybrid adaptive kernel; do
      echo "adaptive: rep $rep, $nj job(s), $mode"
      run "j$nj-$mode-r$rep" $mode "$nj"
    done
  done
done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import glob, os, re, statistics, sys
sys.path.insert(0, "jobs")
import sweeplib
out = sys.argv[1]
res = {}
for j in sorted(glob.glob(os.path.join(out, "runs", "*.json"))):
    base = j[:-5]
    nj, mode, rep = re.fullmatch(r"j(\d+)-(\w+)-r(\d+)", os.path.basename(base)).groups()
    rc = int(open(base + ".rc").read())
    rows = sweeplib.expand_hosts(sweeplib.row_from_run(base, ["NUMJOBS"], [("NUMJOBS", nj)], mode, rep, rc))
    r = rows[0]
    err = open(base + ".err", errors="replace").read()
    spin = [int(x) for x in re.findall(r"spin (\d+)% of hybrid's", err)]
    res.setdefault((int(nj), mode), []).append((r.get("status"), r.get("iops"), r.get("cpu_us_per_io"), spin))
print("| jobs | wait | runs ok | IOPS | CPU us/IO | IOPS / kernel | CPU/IO / kernel | spin at the end (jobs at 0%) |")
print("|---|---|---|---|---|---|---|---|")
med = {}
for (nj, mode), v in sorted(res.items(), key=lambda kv: (kv[0][0], ["hybrid", "adaptive", "kernel"].index(kv[0][1]))):
    ok = [x for x in v if x[0] == "ok"]
    iops = statistics.median(float(x[1]) for x in ok) if ok else 0
    cpu = statistics.median(float(x[2]) for x in ok) if ok else 0
    med[(nj, mode)] = (iops, cpu)
for (nj, mode), (iops, cpu) in med.items():
    k = med.get((nj, "kernel"), (0, 0))
    spins = [s for x in res[(nj, mode)] for s in x[3]]
    sp = f"{sum(1 for s in spins if s == 0)} of {len(spins)}" if mode == "adaptive" else "-"
    n_ok = sum(1 for x in res[(nj, mode)] if x[0] == "ok")
    print(f"| {nj} | {mode} | {n_ok} of {len(res[(nj, mode)])} | {iops:,.0f} | {cpu:.1f} | "
          f"{iops / k[0] if k[0] else 0:.2f} | {cpu / k[1] if k[1] else 0:.2f} | {sp} |")
PY
# where the CPU goes with 16 jobs
for mode in hybrid adaptive kernel; do
  run "prof-$mode" $mode 16 perf record -q -a -g -e cpu-clock -F 499 -o "$OUT/perf.data" --
  {
    echo "# 16 jobs, 4 KiB randread QD4 each, $mode: perf record -a -e cpu-clock (guest, TCG)"
    perf_top "$OUT/perf.data" 20
  } > "$OUT/profile-$mode.txt"
  rm -f "$OUT/perf.data"
  cat "$OUT/profile-$mode.txt"
done
echo "adaptive: results in $OUT"
