#!/bin/bash
# IN-GUEST: 128 KiB reads QD16 with the defaults in
# fio's process mode against thread mode, ours and the kernel's alternating,
# REPS (3) times; then one profile of each of ours (by task and symbol), and
# for 16 single-queue-pair 1 MiB QD4 jobs, who switches how often
# (sched:sched_switch by task, perf record -a) and where the CPU goes.
#   tests/testbed/run bash bench/investigations/procmode.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${PM_OUT:-build/procmode/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
. jobs/kdev.sh
. bench/perf-top.sh
kdev_setup || { echo "procmode: kernel initiator did not connect"; exit 1; }
trap kdev_teardown EXIT
export RUNTIME=${RUNTIME:-5} RAMP=1 REGION=1g OFFSET_INCREMENT=64m
# common.fio.inc without its thread=1: fio's thread option has no off value
grep -v '^thread=' jobs/common.fio.inc > "$OUT/common-proc.inc"
cp jobs/common.fio.inc "$OUT/common-thread.inc"
for m in proc thread; do
  printf '[global]\ninclude %s/%s/common-%s.inc\n[bw]\nrw=read\nbs=128k\niodepth=16\nnumjobs=1\n' "$PWD" "$OUT" $m > "$OUT/bw-$m.fio"
  printf '[global]\ninclude %s/%s/common-%s.inc\n[qp]\nrw=read\nbs=1m\niodepth=4\nnumjobs=16\noffset_increment=64m\n${QPAIRS_OPT}\n' "$PWD" "$OUT" $m > "$OUT/qp-$m.fio"
done
mbs() { python3 -c "import json,sys; t=open(sys.argv[1]).read(); d=json.loads(t[t.index('{'):]); print(round(sum(j['read']['bw_bytes'] for j in d['jobs'])/1e6), sum(j['read']['total_ios'] for j in d['jobs']), round(sum(j['usr_cpu']+j['sys_cpu'] for j in d['jobs']),1))" "$1" 2>/dev/null || echo "FAILED 0 0"; }
for rep in $(seq "${REPS:-3}"); do
  for m in thread proc; do
    for ini in ours kernel; do
      INITIATOR=$ini jobs/run "$PWD/$OUT/bw-$m.fio" --output-format=json > "$OUT/bw-$m-$ini-$rep.json" 2> "$OUT/bw-$m-$ini-$rep.err"
      read -r bw n cpu < <(mbs "$OUT/bw-$m-$ini-$rep.json")
      printf '128k QD16 %-6s %-6s rep %s: %5s MB/s  fio cpu %s%%\n' $m $ini $rep "$bw" "$cpu" | tee -a "$OUT/summary.txt"
    done
  done
done
prof() { # label jobfile initiator [QPAIRS]
  local label=$1 job=$2 ini=$3
  env INITIATOR=$ini ${4:+QPAIRS=$4} perf record -q -a -g -e cpu-clock -F 499 -o "$OUT/p.data" -- \
    jobs/run "$PWD/$OUT/$job" --output-format=json > "$OUT/$label.json" 2> "$OUT/$label.err"
  read -r bw n cpu < <(mbs "$OUT/$label.json")
  {
    echo "# $label: $bw MB/s, $n I/Os; perf record -a -e cpu-clock (guest, TCG)"
    perf_top "$OUT/p.data" 30 12
  } > "$OUT/profile-$label.txt"
  env INITIATOR=$ini ${4:+QPAIRS=$4} perf record -q -a -e sched:sched_switch -o "$OUT/s.data" -- \
    jobs/run "$PWD/$OUT/$job" --output-format=json > "$OUT/$label-s.json" 2> "$OUT/$label-s.err"
  read -r bw2 n2 cpu2 < <(mbs "$OUT/$label-s.json")
  {
    echo "# $label: switches by task (sched:sched_switch samples, all of them), run of $n2 I/Os at $bw2 MB/s"
    perf report -i "$OUT/s.data" --sort comm --stdio -F overhead,sample,comm 2>/dev/null | grep -E '^ +[0-9]' | head -12
    perf script -i "$OUT/s.data" -F comm,trace 2>/dev/null | awk '{ for (i=1;i<=NF;i++) if ($i ~ /^prev_state=/) st[$i]++ } END { for (s in st) print "  " s, st[s] }'
  } > "$OUT/switch-$label.txt"
  rm -f "$OUT/p.data" "$OUT/s.data"
}
prof bw-thread-ours bw-thread.fio ours
prof bw-proc-ours bw-proc.fio ours
prof bw-proc-kernel bw-proc.fio kernel
prof qp16-ours qp-thread.fio ours 1
prof qp16-kernel qp-thread.fio kernel
echo "procmode: results in $OUT"
