#!/bin/bash
# IN-GUEST: the QP-scaling sweep's 4 KiB cells at 16 and 32 jobs (jobs/qp-scaling.fio,
# sequential reads, QD4 per job, one queue pair per job, thread mode, REGION=768m
# OFFSET_INCREMENT=4m as bench/plots.sh runs them), the kernel host against ours with
# each wait and with fio's completion batching, all alternating run by run, REPS
# times; medians of IOPS, fio's CPU (usr+sys) per I/O, and the whole guest's busy
# CPU per I/O and idle share. The guest's figures come from /proc/stat sampled every
# 0.2 s beside nullb0's read count (the target's backing device, so the same count
# for both initiators), over the samples in which reads flowed: fio's usr+sys counts
# Soft-RoCE's send work in our job threads (they post to it directly) but not in the
# kernel host's ksoftirqd, so only the whole guest compares the two.
#   tests/testbed/run bash -c 'REPS=3 RUNTIME=3 bash bench/investigations/sweep4k.sh'
# Results in build/sweep4k/<stamp>/ (summary.txt, runs/: fio JSON, stderr, samples);
# SUMMARY_ONLY=1 SWEEP4K_OUT=<that folder> prints the tables again from its runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${SWEEP4K_OUT:-build/sweep4k/$(date +%Y%m%d-%H%M%S)}
VARIANTS=${VARIANTS:-kernel hybrid adaptive sleep poll hybrid+bc sleep+bc kernel+bc}
summary() {
python3 - "$OUT" "$VARIANTS" <<'PY' | tee "$OUT/summary.txt"
import glob, os, re, statistics, sys
sys.path.insert(0, "jobs")
import sweeplib
out, variants = sys.argv[1], sys.argv[2].split()
HZ = os.sysconf("SC_CLK_TCK")

def guest(path):
    """Busy CPU µs per nullb0 read, idle share, and the busy split (user, system,
    softirq), over the samples whose interval read at least half the peak rate."""
    s = [l.split() for l in open(path)]
    s = [(float(x[0]), int(x[1]), [int(c) for c in x[2:]]) for x in s if len(x) > 6]
    rate = [(s[i + 1][1] - s[i][1]) / (s[i + 1][0] - s[i][0]) for i in range(len(s) - 1)]
    if not rate:
        return None
    peak = sorted(rate)[int(0.9 * (len(rate) - 1))]
    act = [i for i, r in enumerate(rate) if r >= 0.5 * peak and r > 0]
    if len(act) < 3:
        return None
    a, b = act[1], act[-1]  # the edge intervals, half in the I/O, left out
    reads = s[b][1] - s[a][1]
    d = [y - x for x, y in zip(s[a][2], s[b][2])]
    # /proc/stat: user nice system idle iowait irq softirq steal ...
    idle = d[3] + d[4]
    total = sum(d[:8])
    busy = total - idle
    us = lambda j: j / HZ * 1e6 / reads
    return {"busy": us(busy), "idle": 100.0 * idle / total, "usr": us(d[0] + d[1]),
            "sys": us(d[2]), "soft": us(d[5] + d[6]), "secs": s[b][0] - s[a][0],
            "tiops": reads / (s[b][0] - s[a][0])}

res = {}
for j in sorted(glob.glob(os.path.join(out, "runs", "*.json"))):
    base = j[:-5]
    nj, v, rep = re.fullmatch(r"j(\d+)-([\w]+)-r(\d+)", os.path.basename(base)).groups()
    v = v.replace("_", "+")
    rc = int(open(base + ".rc").read())
    r = sweeplib.expand_hosts(sweeplib.row_from_run(base, ["NUMJOBS"], [("NUMJOBS", nj)], v, rep, rc))[0]
    g = guest(base + ".stat") if r.get("status") == "ok" else None
    res.setdefault((int(nj), v), []).append((r, g))
    print(f"run {nj} jobs {v} rep {rep}: {r.get('status')}, IOPS {float(r.get('iops') or 0):,.0f}, "
          f"fio CPU {float(r.get('cpu_us_per_io') or 0):.1f} us/IO"
          + (f", guest {g['busy']:.1f} us/IO, idle {g['idle']:.1f}%, target {g['tiops']:,.0f} IOPS over {g['secs']:.1f} s"
             if g else ", no guest figures"))
med = lambda xs: statistics.median(xs) if xs else float("nan")
print()
print("| jobs | initiator, wait | runs ok | IOPS | / kernel | fio CPU µs/IO | / kernel | guest busy µs/IO | / kernel "
      "| guest idle % | guest µs/IO user, system, softirq | ctx/IO |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for nj in sorted({k[0] for k in res}):
    rows = {}
    for v in variants:
        runs = [(r, g) for r, g in res.get((nj, v), []) if r.get("status") == "ok" and g]
        rows[v] = dict(n=len(runs), of=len(res.get((nj, v), [])),
                       iops=med([float(r["iops"]) for r, _ in runs]),
                       cpu=med([float(r["cpu_us_per_io"]) for r, _ in runs]),
                       ctx=med([float(r["ctx"]) / float(r["total_ios"]) for r, _ in runs]),
                       **{k: med([g[k] for _, g in runs]) for k in ("busy", "idle", "usr", "sys", "soft")})
    k = rows.get("kernel")
    for v in variants:
        x = rows[v]
        name = "kernel host" if v == "kernel" else "kernel host, batched" if v == "kernel+bc" else f"ours, wait={v}"
        name = name.replace("+bc", ", batched")
        print(f"| {nj} | {name} | {x['n']} of {x['of']} | {x['iops']:,.0f} | {x['iops'] / k['iops']:.2f} | "
              f"{x['cpu']:.1f} | {x['cpu'] / k['cpu']:.2f} | {x['busy']:.1f} | {x['busy'] / k['busy']:.2f} | "
              f"{x['idle']:.1f} | {x['usr']:.0f}, {x['sys']:.0f}, {x['soft']:.0f} | {x['ctx']:.2f} |")
# The machine around the guest is shared, so its speed drifts from one repetition
# to the next by more than the variants differ: each run against the kernel
# host's run of the same repetition (a few seconds apart), median and range.
print()
print("| jobs | initiator, wait | IOPS / kernel's of the same repetition: median (each) | guest busy µs/IO / kernel's: median (each) |")
print("|---|---|---|---|")
for nj in sorted({k[0] for k in res}):
    by = {v: {int(r["rep"]): (float(r["iops"]), g["busy"]) for r, g in res.get((nj, v), [])
              if r.get("status") == "ok" and g} for v in variants}
    for v in variants:
        if v == "kernel":
            continue
        reps = sorted(set(by[v]) & set(by["kernel"]))
        ri = [by[v][p][0] / by["kernel"][p][0] for p in reps]
        rb = [by[v][p][1] / by["kernel"][p][1] for p in reps]
        name = ("kernel host" + v[6:] if v.startswith("kernel") else f"ours, wait={v}").replace("+bc", ", batched")
        print(f"| {nj} | {name} | {med(ri):.2f} ({', '.join(f'{x:.2f}' for x in ri)}) | "
              f"{med(rb):.2f} ({', '.join(f'{x:.2f}' for x in rb)}) |")
PY

}
# SUMMARY_ONLY=1: the tables of the runs already in SWEEP4K_OUT (a boot cut off)
if [ -n "${SUMMARY_ONLY:-}" ]; then summary; exit; fi
mkdir -p "$OUT/runs"
. jobs/kdev.sh
kdev_setup || { echo "sweep4k: kernel initiator did not connect"; exit 1; }
trap kdev_teardown EXIT
export RUNTIME=${RUNTIME:-3} RAMP=${RAMP:-1} REGION=768m OFFSET_INCREMENT=4m BS=4k IODEPTH=4 RW=read
JOBS=${JOBS:-16 32} REPS=${REPS:-3}
# fio's completion batching: wait for 2 of the job's 4 commands, take up to 4
BATCH="--iodepth_batch_complete_min=2 --iodepth_batch_complete_max=4"
dev=$(cat "/sys/kernel/config/nvmet/subsystems/$NVMEOF_TB_NQN_A/namespaces/1/device_path" 2>/dev/null)
STAT=/sys/block/$(basename "${dev:-none}")/stat
[ -r "$STAT" ] || { echo "sweep4k: no block statistics for namespace 1's device '${dev:-}'"; exit 1; }
cat > "$OUT/sampler.py" <<'PY'
import signal, sys, time
out, stat = open(sys.argv[1], "w"), sys.argv[2]
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
def sample():
    t = time.monotonic()
    with open("/proc/stat") as f:
        cpu = f.readline().split()[1:]
    with open(stat) as f:
        reads = f.read().split()[0]
    out.write(f"{t:.3f} {reads} {' '.join(cpu)}\n")
sample(); out.flush()
while not stop:
    time.sleep(0.2)
    sample()
out.close()
PY
run() { # name variant nj
  local name=$1 v=$2 nj=$3 spid args=() i
  case $v in *+bc) read -r -a args <<< "$BATCH" ;; esac
  python3 "$OUT/sampler.py" "$OUT/runs/$name.stat" "$STAT" & spid=$!
  for i in $(seq 50); do [ -s "$OUT/runs/$name.stat" ] && break; sleep 0.1; done
  case $v in
    kernel*) env INITIATOR=kernel NUMJOBS="$nj" jobs/run qp-scaling.fio --output-format=json "${args[@]}" ;;
    *) env INITIATOR=ours ENGINE_OPTS="wait=${v%+bc}" NUMJOBS="$nj" jobs/run qp-scaling.fio --output-format=json "${args[@]}" ;;
  esac > "$OUT/runs/$name.json" 2> "$OUT/runs/$name.err"
  echo $? > "$OUT/runs/$name.rc"
  kill -TERM "$spid"; wait "$spid"
}
read -r -a vs <<< "$VARIANTS"
for rep in $(seq "$REPS"); do
  for nj in $JOBS; do
    # each repetition starts the alternation one variant later, so no variant
    # always follows the same one
    for ((k = 0; k < ${#vs[@]}; k++)); do
      v=${vs[$(((k + rep - 1) % ${#vs[@]}))]}
      echo "sweep4k: $(date -u +%T) rep $rep, $nj jobs, $v"
      run "j$nj-${v/+/_}-r$rep" "$v" "$nj"
    done
  done
done
summary
echo "sweep4k: results in $OUT"
