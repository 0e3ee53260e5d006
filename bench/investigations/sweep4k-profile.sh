#!/bin/bash
# IN-GUEST: where the guest's CPU goes per I/O in sweep4k.sh's cell
# (jobs/qp-scaling.fio, 4 KiB sequential reads, QD4 per job, one queue pair per
# job, REGION=768m OFFSET_INCREMENT=4m), the kernel host against ours with the
# default wait, alternating, REPS times: perf record -a -e cpu-clock over each
# run, samples per 1,000 reads the target's nullb0 served, by symbol, with the
# share taken in fio's threads. Samples are comparable across the two as CPU per
# I/O, since both runs sample at the same rate.
#   tests/testbed/run bash -c 'NUMJOBS=32 REPS=2 bash bench/investigations/sweep4k-profile.sh'
# Results in build/sweep4k/profile-<stamp>/ (summary.txt).
ME=sweep4k-profile
. "$(dirname "$0")/sweep4k-cell.sh"
for rep in $(seq "${REPS:-2}"); do
  for ini in kernel ours; do
    echo "sweep4k-profile: $(date -u +%T) rep $rep, $NUMJOBS jobs, $ini"
    r0=$(awk '{print $1}' "$STAT")
    perf record -q -a -e cpu-clock -F 499 -o "$OUT/perf.data" -- \
      env INITIATOR=$ini jobs/run qp-scaling.fio --output-format=json > "$OUT/$ini-r$rep.json" 2> "$OUT/$ini-r$rep.err"
    echo "rc $? reads $(($(awk '{print $1}' "$STAT") - r0))" > "$OUT/$ini-r$rep.rc"
    perf report -i "$OUT/perf.data" --stdio -n --sort comm,sym 2> /dev/null | grep -E '^ +[0-9]' > "$OUT/$ini-r$rep.syms"
    rm -f "$OUT/perf.data"
  done
done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import collections, glob, os, re, statistics, sys
out = sys.argv[1]
per = collections.defaultdict(list)  # (ini, sym) -> [(all, in fio) per 1000 reads]
for f in sorted(glob.glob(os.path.join(out, "*.syms"))):
    ini = os.path.basename(f).split("-")[0]
    rc, reads = re.search(r"rc (\d+) reads (\d+)", open(f[:-5] + ".rc").read()).groups()
    if rc != "0" or not int(reads):
        print(f"{os.path.basename(f)}: exit {rc}, left out")
        continue
    c, fio = collections.Counter(), collections.Counter()
    for l in open(f):
        m = re.match(r"\s*[\d.]+%\s+(\d+)\s+(\S+)\s+\[(.)\]\s+(\S+)", l)
        if not m:
            continue
        n, comm, _, sym = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        c[sym] += n; c["(all)"] += n
        if comm.startswith("fio"):
            fio[sym] += n; fio["(all)"] += n
    for s in c:
        per[(ini, s)].append((1000 * c[s] / int(reads), 1000 * fio[s] / int(reads)))
med = lambda xs: statistics.median(xs) if xs else 0
syms = {s for _, s in per}
tot = {s: max(med([x[0] for x in per[(i, s)]]) for i in ("kernel", "ours")) for s in syms}
print("| symbol | kernel host: samples per 1,000 reads (in fio's threads) | ours |")
print("|---|---|---|")
for s in sorted(syms, key=lambda s: -tot[s])[:30]:
    k, o = per.get(("kernel", s), []), per.get(("ours", s), [])
    print(f"| `{s}` | {med([x[0] for x in k]):.1f} ({med([x[1] for x in k]):.1f}) | {med([x[0] for x in o]):.1f} ({med([x[1] for x in o]):.1f}) |")
PY
echo "sweep4k-profile: results in $OUT"
