#!/bin/bash
# IN-GUEST (bench/bench.sh): perf record, system-wide, software cpu-clock, while
# one fio job does 4 KiB random reads at QD32 with each initiator; the top of
# each profile goes to OUT/profile-<initiator>.txt for BENCHMARKS.md.
#   PROF_JOB=qd1-latency.fio PROF_WHAT="4 KiB randread QD1": another job file
#   (its variables from the environment: RW, BS, ...)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1
command -v perf >/dev/null || { echo "profile: perf missing (Debian's linux-perf)"; exit 1; }
. jobs/kdev.sh
. bench/perf-top.sh
kdev_setup || exit 1
trap kdev_teardown EXIT
export RUNTIME=${PROF_RUNTIME:-6} RAMP=1 REGION=${REGION:-1g}
JOB=${PROF_JOB:-iops.fio} WHAT=${PROF_WHAT:-4 KiB randread QD32}
for ini in ours kernel; do
  # -a: the target's and Soft-RoCE's kernel work counts too, as it does for the kernel host
  perf record -q -a -g -e cpu-clock -F 499 -o "$OUT/perf-$ini.data" -- \
    env INITIATOR=$ini jobs/run "$JOB" --output-format=json > "$OUT/profile-$ini.fiojson" 2>/dev/null
  {
    echo "# $WHAT, one job, initiator $ini: perf record -a -e cpu-clock (guest, TCG)"
    jq_iops=$(python3 -c "import json,sys; t=open(sys.argv[1]).read(); j=json.loads(t[t.index('{'):])['jobs'][0]; print('failed (error %d)' % j['error'] if j['error'] else round(j['read']['iops']))" "$OUT/profile-$ini.fiojson" 2>/dev/null)
    echo "# IOPS during the profile: ${jq_iops:-?}"
    perf_top "$OUT/perf-$ini.data" 30
  } > "$OUT/profile-$ini.txt"
  rm -f "$OUT/perf-$ini.data"
  echo "profile: $ini done"
done
