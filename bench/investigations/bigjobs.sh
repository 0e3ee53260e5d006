#!/bin/bash
# IN-GUEST: the QP-scaling sweep's many-job 1 MiB cells (jobs/qp-scaling.fio,
# thread mode: the jobs share one controller, one queue pair each), ours only,
# REPS times each, to catch the association ending while the jobs bring up
# their queues. Each run keeps fio's output and stderr (verbose=1: every
# controller state change and queue step) and the guest's kernel messages
# of that run (nvmet: keep-alive expiry, queue errors).
#   tests/testbed/run bash bench/investigations/bigjobs.sh
#   (JOBS="32 64" REPS=3 RUNTIME=3 RAMP=1 VERBOSE=1)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${BIGJOBS_OUT:-build/bigjobs/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
JOBS=${JOBS:-32 64} REPS=${REPS:-3}
export BS=1m REGION=${QP_REGION:-768m} OFFSET_INCREMENT=${QP_OFFSET_INCREMENT:-4m}
export RUNTIME=${RUNTIME:-3} RAMP=${RAMP:-1} INITIATOR=ours
[ "${VERBOSE:-1}" = 1 ] && export ENGINE_OPTS='verbose=1'
fails=0 runs=0
for r in $(seq "$REPS"); do
  for n in $JOBS; do
    f=$OUT/jobs$n.$r
    dmesg -c > /dev/null 2>&1 || true
    NUMJOBS=$n timeout 300 jobs/run qp-scaling.fio > "$f.out" 2> "$f.err"
    rc=$?
    dmesg > "$f.dmesg" 2>&1 || true
    runs=$((runs + 1))
    bad=$(cat "$f.err" "$f.out" | grep -cE 'controller is (dead|resetting)|init failed|err= *[1-9]|state: live -> (dead|resetting)|no completion within')
    abandoned=$(cat "$f.err" "$f.out" | grep -c 'still waiting when the job ended were abandoned')
    states=$(cat "$f.err" "$f.out" | grep -oE 'controller state: [a-z]+ -> [a-z]+' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
    kmsg=$(grep -ciE 'keep.?alive|nvmet_rdma|nvmet:.*(error|timeout|fail)' "$f.dmesg")
    if [ "$rc" != 0 ] || [ "$bad" != 0 ]; then
      fails=$((fails + 1)); v=FAILED
    else
      v=ok
    fi
    echo "bigjobs: $n jobs, rep $r: $v (exit $rc, $bad error line(s), $abandoned queue(s) with requests abandoned at the job's end, state changes: ${states:-none}, $kmsg nvmet kernel message(s))"
    if [ "$v" = FAILED ]; then
      grep -E 'controller is|ended|lost|timed out|Keep Alive|controller state|init failed|err=|error' "$f.err" "$f.out" | grep -v 'err= 0' | head -12 | sed 's/^/    /'
      grep -iE 'keep.?alive|nvmet' "$f.dmesg" | head -8 | sed 's/^/    dmesg: /'
    fi
  done
done
echo "bigjobs: $fails of $runs runs failed; logs in $OUT" | tee "$OUT/summary.txt"
