#!/bin/bash
# IN-GUEST: where the time goes in the QP-scaling sweep.
# For 1 and 16 single-queue-pair jobs (jobs/qp-scaling.fio: 1 MiB reads,
# QD4 per job, thread mode), ours and the kernel's alternating in one boot:
#   perf stat -a: context switches, CPU migrations, CPU time (cpu-clock),
#     divided by the I/Os fio completed;
#   ours: the engine's end-of-job lines (doorbells, sleeps on the completion
#     channel, connect retries), summed;
#   perf record -a -g: the top symbols and the split by task.
# Then one job with qpairs=16 (what a user would otherwise do).
#   tests/testbed/run bash bench/investigations/qpscale-profile.sh
# Results in build/qpprof/<stamp>/ (summary.txt, profile-*.txt).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${QPPROF_OUT:-build/qpprof/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
. jobs/kdev.sh
. bench/perf-top.sh
kdev_setup || { echo "qpprof: kernel initiator did not connect"; exit 1; }
trap kdev_teardown EXIT
export RUNTIME=${RUNTIME:-5} RAMP=1 REGION=1g OFFSET_INCREMENT=64m
ios() { # fio json -> completed read I/Os of all jobs, and MB/s
  python3 - "$1" <<'PY'
import json, sys
t = open(sys.argv[1]).read()
d = json.loads(t[t.index("{"):])
n = sum(j["read"]["total_ios"] for j in d["jobs"])
bw = sum(j["read"]["bw_bytes"] for j in d["jobs"]) / 1e6
print(n, round(bw))
PY
}
one() { # label env... : perf stat, then perf record, of jobs/run qp-scaling.fio
  local label=$1; shift
  env "$@" perf stat -a -x, -e context-switches,cpu-migrations,cpu-clock -o "$OUT/$label.stat" -- \
    jobs/run "${JOB:-qp-scaling.fio}" --output-format=json > "$OUT/$label.json" 2> "$OUT/$label.err"
  read -r n bw < <(ios "$OUT/$label.json")
  local cs mig cpu
  cs=$(awk -F, '$3 == "context-switches" {print $1}' "$OUT/$label.stat")
  mig=$(awk -F, '$3 == "cpu-migrations" {print $1}' "$OUT/$label.stat")
  cpu=$(awk -F, '$3 ~ /cpu-clock/ {print $1}' "$OUT/$label.stat")
  local extra=""
  if grep -q 'nvmeof: queue' "$OUT/$label.err"; then
    extra=$(grep -E 'nvmeof: queue [0-9]+: [0-9]+ command' "$OUT/$label.err" |
      awk -v n="$n" '{ c += $4; d += $6; s += $8; for (i = 1; i <= NF; i++) if ($i == "connect") r += $(i - 1) }
        END { printf "  cmds %d doorbells/IO %.2f sleeps/IO %.2f connect-retries %d", c, d / n, s / n, r }')
  fi
  python3 -c "
n, cs, mig, cpu = $n, float('${cs:-0}'), float('${mig:-0}'), float('${cpu:-0}')
print('%-16s %6d MB/s  %7d IOs  cs/IO %.2f  migr/IO %.3f  CPU us/IO %.0f' % ('$label', $bw, n, cs / n, mig / n, cpu * 1000 / n), end='')
" | tee -a "$OUT/summary.txt"
  echo "$extra" | tee -a "$OUT/summary.txt"
  env "$@" perf record -q -a -g -e cpu-clock -F 499 -o "$OUT/perf.data" -- \
    jobs/run "${JOB:-qp-scaling.fio}" --output-format=json > /dev/null 2>&1
  {
    echo "# $label: perf record -a -e cpu-clock (guest, TCG)"
    perf_top "$OUT/perf.data" 25 10
  } > "$OUT/profile-$label.txt"
  rm -f "$OUT/perf.data"
}
for rep in 1 2; do
  for nj in 1 16; do
    one "j$nj-ours-r$rep" NUMJOBS=$nj INITIATOR=ours
    one "j$nj-kernel-r$rep" NUMJOBS=$nj INITIATOR=kernel
  done
done
# one job, 16 queue pairs round-robin, QD64: the 16 jobs' total depth
printf '[global]\ninclude %s/jobs/common.fio.inc\n[qp]\nrw=read\nbs=1m\niodepth=64\nnumjobs=1\nqpairs=16\nqpair_select=rr\n' \
  "$PWD" > "$OUT/q16.fio"
JOB=$PWD/$OUT/q16.fio one "q16-ours" NUMJOBS=1 INITIATOR=ours
echo "qpprof: results in $OUT"
