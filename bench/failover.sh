#!/bin/bash
# IN-GUEST: failover time for one port loss, ours against the kernel host's
# native multipath, same boot, alternating, REPS repetitions: 4 KiB random
# reads at QD32 through both ports of subsystem M (iopolicy numa on both
# sides, so port 1 carries everything until it goes), port 1 removed on the
# target RUNTIME/2 s into the job. From each job's fio IOPS log at 100 ms
# intervals: the stall, from the last interval at full rate before the
# removal to the first interval with completions again after it (so within
# about 100 ms). For ours also the library's own measurement (the engine's
# end-of-job loss line: detection to first completion on the other path).
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
    ours) A=(--ioengine=external:"$ENG" --filename="$TWO" --iopolicy=numa --reconnect_delay=500 --ctrl_loss_tmo=60000) ;;
    kernel) kconnect; A=(--ioengine=libaio --direct=1 --filename="$KDEV") ;;
  esac
  timeout $((RUNTIME + 60)) fio --name=fo --thread=1 --rw=randread --bs=4k --iodepth=32 --size=56m \
    --time_based --runtime="$RUNTIME" --write_iops_log="$OUT/$cfg.$rep" --log_avg_msec=100 --per_job_logs=0 \
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
def stall_ms(path):
    # fio's iops log: time (ms since the job's start), iops, direction, ...
    t = [(int(l.split(",")[0]), float(l.split(",")[1])) for l in open(path) if l.strip()]
    if len(t) < 5:
        return None
    full = statistics.median(v for _, v in t)
    low = [i for i, (_, v) in enumerate(t) if v < full / 4]
    if not low:
        return 0
    a, b = low[0], low[0]
    while b + 1 < len(t) and t[b + 1][1] < full / 4:
        b += 1
    start = t[a - 1][0] if a else 0
    end = t[b + 1][0] if b + 1 < len(t) else t[b][0]
    return end - start
def ours_line(path):
    m = re.search(r"path 1 loss 1 \(queue pair 1\): \d+ command\(s\); from detection, first re-issued on another "
                  r"path after (-?\d+) ms, first completed there after (-?\d+) ms", open(path).read())
    return int(m.group(2)) if m else None
rows = []
for cfg in ("ours", "kernel"):
    s, l = [], []
    for r in range(1, reps + 1):
        f = glob.glob(f"{out}/{cfg}.{r}_iops*.log")
        v = stall_ms(f[0]) if f else None
        if v is not None:
            s.append(v)
        if cfg == "ours":
            x = ours_line(f"{out}/{cfg}.{r}.out")
            if x is not None:
                l.append(x)
    med = lambda v: f"{statistics.median(v):.0f}" + ("" if len(v) == reps else f" ({len(v)} of {reps})") if v else "-"
    rows.append((cfg, med(s), med(l) if cfg == "ours" else "-"))
print("| initiator (2 paths, numa) | stall in fio's 100 ms IOPS log, ms (median) | library: detection to first completion on the other path, ms |")
print("|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
PY
echo "logs: $OUT" >&2
