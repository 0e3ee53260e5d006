#!/bin/bash
# IN-GUEST: why one job of the QP-scaling sweep's shape did nearly all the
# I/O (BENCHMARKS.md, "Why one job did the I/O"): 4 jobs of jobs/qp-scaling.fio
# (4 KiB random reads, QD4 per job, one queue pair per job, thread mode)
# without group_reporting, ours (wait=hybrid) and the kernel host, varying one
# thing at a time; prints each job's I/Os, job_runtime and mean latency.
#   tests/testbed/run bash bench/investigations/regions.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${REGIONS_OUT:-build/regions/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
. jobs/kdev.sh
kdev_setup || exit 1
trap kdev_teardown EXIT
echo "fio: $(fio --version); namespace 1: $(blockdev --getsize64 "$KDEV") bytes"
mk() { # $1 file, $2 extra [global] line
  printf '[global]\ninclude %s/jobs/common.fio.inc\ngroup_reporting=0\n%s\n[qp]\nrw=${RW}\nbs=${BS}\niodepth=${IODEPTH}\nnumjobs=${NUMJOBS}\noffset_increment=${OFFSET_INCREMENT}\n' "$PWD" "$2" > "$1"
}
mk "$OUT/thr.fio" ""
mk "$OUT/proc.fio" "thread=0"
base=(RUNTIME=3 RAMP=1 REGION=1g RW=randread BS=4k IODEPTH=4 OFFSET_INCREMENT=64m NUMJOBS=4)
# name | job file | variables changed from base
variants=(
  "base|thr.fio|"
  "noramp|thr.fio|RAMP=0"
  "oi0|thr.fio|OFFSET_INCREMENT=0"
  "region64m|thr.fio|REGION=64m"
  "region768m-oi4m|thr.fio|REGION=768m OFFSET_INCREMENT=4m"
  "processes|proc.fio|"
)
for v in "${variants[@]}"; do
  IFS='|' read -r name jf chg <<<"$v"
  for who in ours kernel; do
    if [ $who = kernel ]; then e=(INITIATOR=kernel); else e=(INITIATOR=ours ENGINE_OPTS=wait=hybrid QPAIRS=1); fi
    # shellcheck disable=SC2086
    env "${base[@]}" $chg "${e[@]}" jobs/run "$PWD/$OUT/$jf" --output-format=json > "$OUT/$name-$who.json" 2> "$OUT/$name-$who.err"
    python3 - "$OUT/$name-$who.json" "$name" "$who" <<'PY'
import json, sys
t = open(sys.argv[1]).read()
try:
    d = json.loads(t[t.index("{"):])
except Exception as e:
    print(f"{sys.argv[2]:16s} {sys.argv[3]:6s} no json: {e}"); sys.exit()
row = [f'{j["read"]["total_ios"]}/{j["job_runtime"]}ms/{j["read"]["lat_ns"]["mean"]/1000:.0f}us' for j in d["jobs"]]
print(f"{sys.argv[2]:16s} {sys.argv[3]:6s} ios/job_runtime/lat per job: {' '.join(row)}")
PY
  done
done
