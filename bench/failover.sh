#!/bin/bash
# IN-GUEST: failover time for one port loss, ours against the kernel host's
# native multipath, same boot, alternating, REPS repetitions: 4 KiB random
# reads at QD32 through both ports of subsystem M (iopolicy numa on both
# sides, so port 1 carries everything until it goes), port 1 removed on the
# target RUNTIME/2 s into the job. From each job's fio completion-latency
# log (every I/O): the longest latency, that of a read caught on port 1 at
# its removal and completed through port 2 (the removal, its detection,
# the failover and the read again), next to the job's median. For ours
# also the library's own measurement (the engine's end-of-job loss line:
# detection to first completion on the other path).
# Prints a Markdown table of medians.
#   tests/testbed/run bash bench/failover.sh        (REPS=3 RUNTIME=10 by default)
set -uo pipefail
cd "$(dirname "$0")/.."
source tests/testbed/guest/target-env.sh
source jobs/kdev.sh
B=${NVMEOF_BUILD:-build/out}
ENG=$PWD/$B/libnvmeof_fio.so
REPS=${REPS:-3} RUNTIME=${RUNTIME:-10}
NQN=${NVMEOF_TB_NQN_M//:/\\:}
TWO="trtype=RDMA traddr=$NVMEOF_TB_ADDR srcaddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_MPORT traddr=$NVMEOF_TB_ADDR2 srcaddr=$NVMEOF_TB_ADDR2 trsvcid=$NVMEOF_TB_MPORT subnqn=$NQN ns=1"
OUT=$(mktemp -d /tmp/failover-bench.XXXXXX)
LOSS_S=$((RUNTIME / 2))

kconnect() {
  timeout 30 nvme connect -t rdma -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_MPORT" -n "$NVMEOF_TB_NQN_M" >&2
  timeout 30 nvme connect -t rdma -a "$NVMEOF_TB_ADDR2" -s "$NVMEOF_TB_MPORT" -n "$NVMEOF_TB_NQN_M" >&2
  KDEV=$(kdev_find "$NVMEOF_TB_NQN_M" 1) || exit 1
  SUBSYS=$(dirname "$(grep -lx "$NVMEOF_TB_NQN_M" /sys/class/nvme-subsystem/*/subsysnqn | head -1)")
  echo numa > "$SUBSYS/iopolicy"
}
trap 'tb mpath-up 1; timeout 30 nvme disconnect -n "$NVMEOF_TB_NQN_M" >&2' EXIT

run_one() { # cfg rep
  local cfg=$1 rep=$2 A
  case $cfg in
    ours) A=(--ioengine=external:"$ENG" --filename="$TWO" --iopolicy=numa --reconnect_delay=500ms --ctrl_loss_tmo=60s) ;;
    kernel) kconnect; A=(--ioengine=libaio --direct=1 --filename="$KDEV") ;;
  esac
  timeout $((RUNTIME + 60)) fio --name=fo --thread=1 --rw=randread --bs=4k --iodepth=32 --size=56m \
    --time_based --runtime="$RUNTIME" --write_lat_log="$OUT/$cfg.$rep" --log_avg_msec=0 --per_job_logs=0 \
    "${A[@]}" > "$OUT/$cfg.$rep.out" 2>&1 &
  local pid=$!
  sleep "$LOSS_S"; tb mpath-down 1
  wait $pid || echo "bench: $cfg rep $rep failed: $(tail -2 "$OUT/$cfg.$rep.out")" >&2
  tb mpath-up 1
  [ "$cfg" != kernel ] || timeout 30 nvme disconnect -n "$NVMEOF_TB_NQN_M" >&2
  sleep 2 # the port's listener back before the next job connects
}

for rep in $(seq "$REPS"); do
  for cfg in ours kernel; do run_one $cfg "$rep"; done
done

python3 - "$OUT" "$REPS" <<'PY'
import glob, re, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def lat_ms(path):
    # fio's clat log: time (ms since the job's start), latency (ns), direction, ...
    v = sorted(int(l.split(",")[1]) for l in open(path) if l.strip())
    return (v[-1] / 1e6, v[len(v) // 2] / 1e6) if v else None
def ours_line(path):
    m = re.search(r"path 1 loss 1 \(queue pair 1\): \d+ command\(s\); from detection, first re-issued on another "
                  r"path after (-?\d+) ms, first completed there after (-?\d+) ms", open(path).read())
    return int(m.group(2)) if m else None
rows = []
for cfg in ("ours", "kernel"):
    mx, md, l = [], [], []
    for r in range(1, reps + 1):
        f = glob.glob(f"{out}/{cfg}.{r}_clat*.log")
        v = lat_ms(f[0]) if f else None
        if v:
            mx.append(v[0]); md.append(v[1])
        if cfg == "ours":
            x = ours_line(f"{out}/{cfg}.{r}.out")
            if x is not None:
                l.append(x)
    med = lambda v, f="{:.0f}": (f.format(statistics.median(v)) + ("" if len(v) == reps else f" ({len(v)} of {reps})")) if v else "-"
    rows.append((cfg, med(mx), med(md, "{:.2f}"), med(l) if cfg == "ours" else "-"))
print("| initiator (2 paths, numa) | longest read latency across the port's removal, ms | median read latency, ms | library: detection to first completion on the other path, ms |")
print("|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
PY
echo "logs: $OUT" >&2
