#!/bin/bash
# IN-GUEST: does the QP-scaling gap follow where the
# target's work runs? The sweep's 1 MiB QD4 single-queue-pair jobs with fio's
# default CPU policy (every job may run on both vCPUs) and with
# cpus_allowed_policy=split (job k pinned to vCPU k mod 2, as the kernel
# host's per-CPU queues are), 1, 16 and 64 jobs, ours and the kernel's
# alternating, REPS (2) times; MB/s and each vCPU's share of the target's
# completion workers (kworker/N:*H) from perf record -a.
#   tests/testbed/run bash bench/investigations/qpscale-split.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${QPPROF_OUT:-build/qpprof/split-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
. jobs/kdev.sh
kdev_setup || { echo "qpsplit: kernel initiator did not connect"; exit 1; }
trap kdev_teardown EXIT
export RUNTIME=${RUNTIME:-4} RAMP=1 REGION=256m OFFSET_INCREMENT=16m CPUS=0-1
for rep in $(seq "${REPS:-2}"); do
  for nj in ${NJOBS:-1 16 64}; do
    for pol in shared split; do
      for ini in ours kernel; do
        opt=description=kernel; [ $ini = ours ] && opt=qpairs=1
        printf '[global]\ninclude %s/jobs/common.fio.inc\n[qp]\nrw=read\nbs=1m\niodepth=4\nnumjobs=%s\noffset_increment=${OFFSET_INCREMENT}\ncpus_allowed_policy=%s\n%s\n' \
          "$PWD" "$nj" "$pol" "$opt" > "$OUT/j.fio"
        perf record -q -a -e cpu-clock -F 499 -o "$OUT/p.data" -- env INITIATOR=$ini jobs/run "$PWD/$OUT/j.fio" \
          --output-format=json > "$OUT/$nj-$pol-$ini-$rep.json" 2> "$OUT/$nj-$pol-$ini-$rep.err"
        bw=$(python3 -c "import json,sys; t=open(sys.argv[1]).read(); d=json.loads(t[t.index('{'):]); print(round(sum(j['read']['bw_bytes'] for j in d['jobs'])/1e6))" "$OUT/$nj-$pol-$ini-$rep.json" 2>/dev/null)
        split=$(perf report -i "$OUT/p.data" --sort comm --stdio 2>/dev/null | grep -E '^ +[0-9]' |
          awk '$2 ~ /^kworker\/0:.*H/ {a += $1} $2 ~ /^kworker\/1:.*H/ {b += $1} $2 == "swapper" {s += $1}
               END {printf "target workers vCPU0 %.0f%% vCPU1 %.0f%%, idle %.0f%%", a, b, s}')
        retr=$(grep -E 'nvmeof: queue [0-9]+: .*connect retr' "$OUT/$nj-$pol-$ini-$rep.err" |
          awk '{ for (i = 1; i <= NF; i++) if ($i == "connect") r += $(i - 1) } END { if (NR) printf " (%d queue pairs, %d connect retries)", NR, r }')
        printf '%-3s jobs %-6s %-6s rep %s: %5s MB/s  %s%s\n' "$nj" "$pol" "$ini" "$rep" "${bw:-FAILED}" "$split" "$retr" | tee -a "$OUT/summary.txt"
        rm -f "$OUT/p.data"
      done
    done
  done
done
echo "qpsplit: results in $OUT"
