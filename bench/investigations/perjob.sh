#!/bin/bash
# IN-GUEST: how the I/O of the QP-scaling sweep's shape (jobs/qp-scaling.fio,
# 4 KiB random reads, QD4 per job, one queue pair per job, thread mode) is
# split between its jobs: the same job file without group_reporting, 4 and
# 16 jobs, ours with each wait and the kernel host; prints each run's
# per-job I/O counts, smallest first (BENCHMARKS.md, "Adaptive waits").
#   tests/testbed/run bash bench/investigations/perjob.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${PERJOB_OUT:-build/perjob/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
. jobs/kdev.sh
kdev_setup || exit 1
trap kdev_teardown EXIT
# each job's region inside the 1 GiB namespace (its regions once passed the end:
# BENCHMARKS.md, "Why one job did the I/O")
export RUNTIME=3 RAMP=1 REGION=768m RW=randread BS=4k IODEPTH=4 OFFSET_INCREMENT=4m
printf '[global]\ninclude %s/jobs/common.fio.inc\ngroup_reporting=0\n[qp]\nrw=${RW}\nbs=${BS}\niodepth=${IODEPTH}\nnumjobs=${NUMJOBS}\noffset_increment=${OFFSET_INCREMENT}\n' "$PWD" > $OUT/pj.fio
for nj in 4 16; do
  for mode in hybrid adaptive sleep kernel; do
    if [ $mode = kernel ]; then e=(INITIATOR=kernel); else e=(INITIATOR=ours ENGINE_OPTS="wait=$mode" QPAIRS=1); fi
    env "${e[@]}" NUMJOBS=$nj jobs/run $PWD/$OUT/pj.fio --output-format=json > $OUT/pj-$nj-$mode.json 2> $OUT/pj-$nj-$mode.err
    python3 - $OUT/pj-$nj-$mode.json $nj $mode <<'PY'
import json, sys
t = open(sys.argv[1]).read()
try:
    d = json.loads(t[t.index("{"):])
except Exception as e:
    print(sys.argv[2], sys.argv[3], "no json", e); sys.exit()
ios = sorted(j["read"]["total_ios"] for j in d["jobs"])
print(f"{sys.argv[2]} jobs {sys.argv[3]:8s} per-job I/Os {ios}")
PY
  done
done
