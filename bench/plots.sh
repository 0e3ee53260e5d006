#!/bin/bash
# IN-GUEST (make bench, or alone: tests/testbed/run bash bench/plots.sh): the
# two small sweeps behind BENCHMARKS.md's plots, both initiators alternating
# cell by cell, drawn by jobs/plot. The SVGs are also copied to
# build/bench/plots/; BENCHMARKS.md shows the copies committed in bench/plots/
# (cp build/bench/plots/*.svg bench/plots/ when it is updated).
set -uo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-2}
export RUNTIME=${RUNTIME:-2} RAMP=${RAMP:-1} REGION=${REGION:-1g}
OUT=${BENCH_OUT:-build/bench/$(date +%Y%m%d-%H%M%S)}
rc=0
SWEEPS=${SWEEPS:-qp qd1}  # SWEEPS=qp: the QP-scaling sweep alone
has() { [[ " $SWEEPS " == *" $1 "* ]]; }
rm -rf build/bench/plots && mkdir -p build/bench/plots
if has qp; then
  # QP scaling as the seed published it: NUMJOBS jobs in thread mode, one
  # queue pair each (qp-scaling.fio), QD4 per job, to 64 (nvmet grants 128),
  # 4 KiB and 1 MiB reads; throughput and fio's CPU per I/O for each initiator.
  # Every job's region inside the 1 GiB namespace up to 64 jobs (63 * 4m + 768m):
  # fio ends a job at its first offset past the end, and the run measures the rest.
  REGION=${QP_REGION:-768m} OFFSET_INCREMENT=${QP_OFFSET_INCREMENT:-4m} jobs/sweep --initiator both --reps "$REPS" --out "$OUT/sweep-qp" \
    qp-scaling.fio NUMJOBS=${QP_NUMJOBS:-1,2,4,8,16,32,64} BS=4k,1m || rc=1
  for p in iops bandwidth cpu; do cp "$OUT/sweep-qp/plots/$p.svg" "build/bench/plots/qp-$p.svg" || rc=1; done
  cp "$OUT/sweep-qp/summary.txt" build/bench/plots/qp-summary.txt
fi
if has qd1; then
  # QD1 latency against the block size, and its distribution.
  RW=randread jobs/sweep --initiator both --reps "$REPS" --out "$OUT/sweep-qd1" \
    qd1-latency.fio BS=4k,16k,64k,256k || rc=1
  for p in latency latency-dist; do cp "$OUT/sweep-qd1/plots/$p.svg" "build/bench/plots/qd1-$p.svg" || rc=1; done
  cp "$OUT/sweep-qd1/summary.txt" build/bench/plots/qd1-summary.txt
fi
echo "bench: plots in build/bench/plots/ (from $OUT/sweep-*)"
exit $rc
