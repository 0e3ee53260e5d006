#!/bin/bash
# IN-GUEST: the QP-scaling sweep as make bench runs it (bench/plots.sh, SWEEPS=qp:
# jobs 1 to 64, 4 KiB and 1 MiB reads, ours and the kernel host alternating, REPS
# repetitions), then a cpu-clock profile (bench/profile.sh) of the 4 KiB and the
# 1 MiB cell where ours is furthest below the kernel host, if any is.
#   tests/testbed/run bash -c 'REPS=3 RUNTIME=3 bash bench/investigations/qpsweep.sh'
# Results: build/bench/<stamp>/sweep-qp (results.csv, summary.txt, plots) and
# profile-<BS>-<jobs>/profile-<initiator>.txt beside it.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${BENCH_OUT:-build/bench/$(date +%Y%m%d-%H%M%S)}; export BENCH_OUT=$OUT
SWEEPS=qp bash bench/plots.sh
python3 - "$OUT/sweep-qp/results.csv" <<'PY' > "$OUT/worst.txt"
import csv, statistics, sys
from collections import defaultdict
v = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] == "ok":
        v[(r["BS"], int(r["NUMJOBS"]), r["initiator"])].append(float(r["iops"]))
worst = {}
for (bs, nj, ini), x in v.items():
    if ini != "ours" or not v.get((bs, nj, "kernel")):
        continue
    ratio = statistics.median(x) / statistics.median(v[(bs, nj, "kernel")])
    if ratio < 1 and (bs not in worst or ratio < worst[bs][1]):
        worst[bs] = (nj, ratio)
for bs, (nj, ratio) in sorted(worst.items()):
    print(bs, nj, f"{ratio:.2f}")
PY
while read -r bs nj ratio; do
  echo "qpsweep: profiling $bs, $nj jobs (ours / kernel IOPS $ratio)"
  mkdir -p "$OUT/profile-$bs-$nj"
  PROF_JOB=qp-scaling.fio PROF_WHAT="$bs reads, $nj jobs, QD4 each (ours / kernel IOPS $ratio in the sweep)" \
    PROF_RUNTIME=${RUNTIME:-3} NUMJOBS=$nj BS=$bs REGION=${QP_REGION:-768m} OFFSET_INCREMENT=${QP_OFFSET_INCREMENT:-4m} \
    bash bench/profile.sh "$OUT/profile-$bs-$nj"
done < "$OUT/worst.txt"
