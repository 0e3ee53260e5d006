#!/bin/bash
# IN-GUEST: QP scaling with the queue-pair count apart from the job count.
# qp-scaling.fio (sequential reads, QD4 per job, thread mode, every job's
# region inside the namespace: REGION=768m OFFSET_INCREMENT=4m as bench/plots.sh),
# NUMJOBS jobs sharing QPAIRS_SHARED queue pairs, ours and the kernel host
# alternating cell by cell; then ours with one queue pair per job (QPAIRS=1,
# qp-scaling.fio's default), which jobs/sweep cannot put on the same axis
# (QPAIRS_SHARED has no "per job" value). The kernel host ignores QPAIRS_SHARED:
# its runs repeat per value, all alternating with ours, and its medians pool them.
#   tests/testbed/run bash -c 'REPS=3 RUNTIME=3 bash bench/investigations/qpshared.sh'
# At 1 MiB the shared sweep (54 runs) takes about 13 min: QP_PARTS=shared, then
# QP_PARTS=perjob with the same BENCH_OUT, fits two boots of NVMEOF_TB_TIMEOUT=900.
# Results: build/bench/<stamp>/shared-<BS> and perjob-<BS> (results.csv,
# summary.txt, plots), table.txt: medians, ratios ours/kernel per (jobs, pairs).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${BENCH_OUT:-build/bench/$(date +%Y%m%d-%H%M%S)}
REPS=${REPS:-3}
export RUNTIME=${RUNTIME:-3} RAMP=${RAMP:-1} REGION=${QP_REGION:-768m} OFFSET_INCREMENT=${QP_OFFSET_INCREMENT:-4m}
NJ=${QP_NUMJOBS:-8,32,64} SHARED=${QP_SHARED:-1,2,4}
rc=0
PARTS=" ${QP_PARTS:-shared perjob} "
for bs in ${QP_BS:-1m}; do
  [[ $PARTS != *" shared "* ]] || BS=$bs jobs/sweep --initiator both --reps "$REPS" --out "$OUT/shared-$bs" \
    qp-scaling.fio NUMJOBS="$NJ" QPAIRS_SHARED="$SHARED" || rc=1
  [[ $PARTS != *" perjob "* ]] || BS=$bs jobs/sweep --initiator ours --reps "$REPS" --out "$OUT/perjob-$bs" \
    qp-scaling.fio NUMJOBS="$NJ" || rc=1
done
python3 - "$OUT" <<'PY' | tee "$OUT/table.txt"
import csv, glob, os, statistics, sys
from collections import defaultdict
v = defaultdict(list)  # (bs, jobs, pairs, initiator) -> [(MiB/s or IOPS, CPU us/IO)]
for f in glob.glob(os.path.join(sys.argv[1], "*", "results.csv")):
    bs = os.path.basename(os.path.dirname(f)).split("-", 1)[1]
    for r in csv.DictReader(open(f)):
        if r["status"] != "ok":
            continue
        pairs = "kernel" if r["initiator"] == "kernel" else r.get("QPAIRS_SHARED") or "per job"
        val = float(r["bw_bytes"]) / 2**20 if bs != "4k" else float(r["iops"])
        cpu = float(r["cpu_us_per_io"]) if r["cpu_us_per_io"] else float("nan")
        v[(bs, int(r["NUMJOBS"]), pairs)].append((val, cpu))
med = {k: (statistics.median(a for a, _ in x), statistics.median(c for _, c in x), len(x)) for k, x in v.items()}
for bs in sorted({k[0] for k in med}):
    unit = "IOPS" if bs == "4k" else "MiB/s"
    print(f"{bs}: jobs | pairs | ours {unit} | kernel | ratio | CPU us/IO ours | kernel | ratio | runs ours/kernel")
    for nj in sorted({k[1] for k in med if k[0] == bs}):
        k = med.get((bs, nj, "kernel"))
        for p in ("1", "2", "4", "per job"):
            o = med.get((bs, nj, p))
            if not o:
                continue
            r = f"{o[0] / k[0]:.2f}" if k else "-"
            cr = f"{o[1] / k[1]:.2f}" if k else "-"
            print(f"| {nj} | {p} | {o[0]:,.1f} | {k[0] if k else 0:,.1f} | {r} | {o[1]:,.1f} | "
                  f"{k[1] if k else 0:,.1f} | {cr} | {o[2]}/{k[2] if k else 0} |")
PY
exit $rc
