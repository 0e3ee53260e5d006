#!/bin/bash
# ISA-L's CRC32C (crc32_iscsi) against ours, end to end over NVMe/TCP with
# header and data digests on, natively: one commit built twice, with ISA-L
# (A, build/out where make found libisal-dev) and without (B, make
# O=build/noisal ISAL=0), run by bench/tcp-native.sh alternating cell by
# cell (SPDK's nvmf_tgt on CPU 1, the initiator on CPU 0): through fio
# ("ours" is A, "alt" is B) and through nvmeof perf ("ours_perf" A,
# "alt_perf" B). Then one perf record of each fio run (tcp-native.sh's
# PROFILE=1) and the CRC's share of the initiator's samples in each.
# Builds what is missing first, then takes the test bed's lock for the
# run alone. As root (hugepages); see BENCHMARKS.md, "CRC32C: ours against
# ISA-L's crc32_iscsi". `isal-ab.sh --report DIR` prints a run's table again.
#   REPS (5)  CELL_TIME (3 s)  RAMP (1 s)  PROFILE (1)
#   ORDER       the order within a cell (ours alt ours_perf alt_perf: A
#               first); a second run with "alt ours alt_perf ours_perf"
#               puts B first, so that going first or second favours neither
#   CELLS (qd32_randread_4k read_128k_qd16 write_128k_qd16)
#   A (build/out)  B (build/noisal)  BENCH_OUT (build/bench/isal-ab-<stamp>)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
die() { echo "isal-ab: $*" >&2; exit 1; }

# A against B per cell and figure: medians and spreads ((max - min) /
# median) of each, A/B of the medians, and the median and range of A/B
# within each repetition: A and B run back to back, so a repetition slowed
# by the machine's other load slows both, and the pair's ratio keeps what
# the medians of two noisy columns may lose. Then the CRC's share of each
# profile (self time of the symbols named crc32).
report() {
  python3 - "$1" <<'EOF'
import csv, os, re, statistics, sys
out = sys.argv[1]
runs = {}
for r in csv.DictReader(open(os.path.join(out, "results.csv"))):
    if r["digests"] == "on":
        runs.setdefault((r["cell"], r["initiator"]), {})[int(r["rep"])] = r
def med_spread(vals):
    m = statistics.median(vals)
    return m, (max(vals) - min(vals)) / m * 100
print("| cell | initiator | figure | ISA-L (A) | ours (B) | A/B of medians | spread A, B "
      "| A/B per repetition: median (min-max) | runs |")
print("|---|---|---|---|---|---|---|---|---|")
for cell in ("qd32_randread_4k", "read_128k_qd16", "write_128k_qd16"):
    for a, b, via in (("ours", "alt", "fio"), ("ours_perf", "alt_perf", "nvmeof perf")):
        ra, rb = runs.get((cell, a), {}), runs.get((cell, b), {})
        reps = sorted(set(ra) & set(rb))
        if not reps:
            continue
        figs = [("IOPS", "iops", 0)] if "4k" in cell else [("MiB/s", "mib_s", 0)]
        figs += [("p50 latency, us", "lat_p50_us", 1), ("CPU per I/O, us", "cpu_us_per_io", 2)]
        for fig, k, nd in figs:
            va, vb = [float(ra[i][k]) for i in reps], [float(rb[i][k]) for i in reps]
            (ma, sa), (mb, sb) = med_spread(va), med_spread(vb)
            pr = [x / y for x, y in zip(va, vb)]
            print(f"| {cell} | {via} | {fig} | {ma:,.{nd}f} | {mb:,.{nd}f} | {ma / mb:.3f} | {sa:.0f}%, {sb:.0f}% | "
                  f"{statistics.median(pr):.3f} ({min(pr):.2f}-{max(pr):.2f}) | {len(reps)} |")
print()
print("CRC32C's share of the initiator's samples (perf record -e cpu-clock, self time):")
for f in sorted(os.listdir(out)):
    m = re.match(r"profile-(.*)\.on\.(ours|alt)\.txt$", f)
    if not m:
        continue
    text = open(os.path.join(out, f)).read().split("# with callees")[0]
    share = sum(float(x) for x in re.findall(r"^\s+([\d.]+)%.*crc32", text, re.M | re.I))
    syms = sorted(set(re.findall(r"\] (\S*crc32\S*)", text, re.I)))
    who = "ISA-L (A)" if m.group(2) == "ours" else "ours (B)"
    print(f"- {m.group(1)}, {who}: {share:.1f} % ({', '.join(syms) or 'no crc32 symbol'})")
EOF
}
if [ "${1:-}" = --report ]; then
  [ -f "${2:-}/results.csv" ] || die "--report DIR: no results.csv in ${2:-}"
  report "$2"; exit
fi

A=${A:-build/out} B=${B:-build/noisal}
OUT=${BENCH_OUT:-build/bench/isal-ab-$(date +%Y%m%d-%H%M%S)}
[ -x "$A/nvmeof" ] || make -j2 O="$A" ISAL=1 > /dev/null || die "make O=$A ISAL=1 failed (libisal-dev installed?)"
[ -x "$B/nvmeof" ] || make -j2 O="$B" ISAL=0 > /dev/null || die "make O=$B ISAL=0 failed"
"$A/nvmeof" --version | grep -q '^crc32c: ISA-L' || die "$A is not built with ISA-L: $("$A/nvmeof" --version | tail -1)"
"$B/nvmeof" --version | grep -q '^crc32c: ISA-L' && die "$B is built with ISA-L: make O=$B ISAL=0"
mkdir -p "$OUT" || exit 1
{ echo "A (ours, ours_perf): $A, $("$A/nvmeof" --version | tail -1)"
  echo "B (alt, alt_perf): $B, $("$B/nvmeof" --version | tail -1)"; } > "$OUT/builds.txt"
flock /tmp/nvmeof-testbed.lock env REPS="${REPS:-5}" CELL_TIME="${CELL_TIME:-3}" RAMP="${RAMP:-1}" DIGESTS=on \
  CELLS="${CELLS:-qd32_randread_4k read_128k_qd16 write_128k_qd16}" INITIATORS="${ORDER:-ours alt ours_perf alt_perf}" \
  ENGINE="$PWD/$A/libnvmeof_fio.so" ALT_ENGINE="$PWD/$B/libnvmeof_fio.so" TOOL="$PWD/$A/nvmeof" ALT_TOOL="$PWD/$B/nvmeof" \
  PROFILE="${PROFILE:-1}" BENCH_OUT="$OUT" bash bench/tcp-native.sh > "$OUT/run.log" 2>&1
rc=$?
tail -1 "$OUT/run.log"
[ -f "$OUT/results.csv" ] || die "no results.csv in $OUT (run.log: $(tail -2 "$OUT/run.log"))"
report "$OUT" | tee "$OUT/ab.md"
exit $rc
