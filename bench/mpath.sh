#!/bin/bash
# IN-GUEST: one and two paths to subsystem M, same boot,
# alternating, REPS repetitions, medians: ours with one path and with two
# under each iopolicy, the kernel host's native multipath device (both ports
# connected) under its numa and round-robin policies. 4 KiB random reads at
# QD32 and 128 KiB sequential reads at QD16. Prints a Markdown table.
#   tests/testbed/run bash bench/mpath.sh        (REPS=3 RUNTIME=6 by default)
# ENG_BEFORE=/path/libnvmeof_fio.so adds that build's two-path rows
# (before-2-*), to compare a change in the same boot.
set -uo pipefail
cd "$(dirname "$0")/.."
source tests/testbed/guest/target-env.sh
source jobs/kdev.sh
B=${NVMEOF_BUILD:-build/out}
ENG=$PWD/$B/libnvmeof_fio.so
REPS=${REPS:-3} RUNTIME=${RUNTIME:-6}
NQN=${NVMEOF_TB_NQN_M//:/\\:}
P1="traddr=$NVMEOF_TB_ADDR srcaddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_MPORT"
P2="traddr=$NVMEOF_TB_ADDR2 srcaddr=$NVMEOF_TB_ADDR2 trsvcid=$NVMEOF_TB_MPORT"
ONE="trtype=RDMA $P1 subnqn=$NQN ns=1"
TWO="trtype=RDMA $P1 $P2 subnqn=$NQN ns=1"
OUT=$(mktemp -d /tmp/mpath-bench.XXXXXX)

timeout 30 nvme connect -t rdma -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_MPORT" -n "$NVMEOF_TB_NQN_M" >&2
timeout 30 nvme connect -t rdma -a "$NVMEOF_TB_ADDR2" -s "$NVMEOF_TB_MPORT" -n "$NVMEOF_TB_NQN_M" >&2
KDEV=$(kdev_find "$NVMEOF_TB_NQN_M" 1) || exit 1
SUBSYS=$(dirname "$(grep -lx "$NVMEOF_TB_NQN_M" /sys/class/nvme-subsystem/*/subsysnqn | head -1)")
[ -f "$SUBSYS/iopolicy" ] || { echo "bench: no iopolicy in $SUBSYS (native multipath off?)" >&2; exit 1; }
trap 'timeout 30 nvme disconnect -n "$NVMEOF_TB_NQN_M" >&2' EXIT

# config name -> fio arguments (the filenames hold spaces: an array)
args_for() {
  case $1 in
    ours-1-path) A=(--ioengine=external:"$ENG" --filename="$ONE") ;;
    ours-2-*) A=(--ioengine=external:"$ENG" --filename="$TWO" --iopolicy="${1#ours-2-}") ;;
    before-2-*) A=(--ioengine=external:"$ENG_BEFORE" --filename="$TWO" --iopolicy="${1#before-2-}") ;;
    kernel-2-*) A=(--ioengine=libaio --direct=1 --filename="$KDEV") ;;
  esac
}
ORDER=(ours-1-path kernel-2-numa ours-2-queue-depth kernel-2-round-robin ours-2-round-robin ours-2-numa)
[ -z "${ENG_BEFORE:-}" ] || ORDER+=(before-2-queue-depth before-2-round-robin before-2-numa)
declare -A WL=([4k-qd32]="--rw=randread --bs=4k --iodepth=32" [128k-qd16]="--rw=read --bs=128k --iodepth=16")

for rep in $(seq "$REPS"); do
  for wl in 4k-qd32 128k-qd16; do
    for cfg in "${ORDER[@]}"; do
      case $cfg in kernel-2-*) echo "${cfg#kernel-2-}" > "$SUBSYS/iopolicy" ;; esac
      args_for "$cfg"
      # shellcheck disable=SC2086
      timeout 120 fio --name=mp --thread=1 --size=56m --time_based --runtime="$RUNTIME" \
        --output-format=json ${WL[$wl]} "${A[@]}" > "$OUT/$wl.$cfg.$rep.json" 2> "$OUT/$wl.$cfg.$rep.err" ||
        echo "bench: $wl $cfg rep $rep failed: $(tail -2 "$OUT/$wl.$cfg.$rep.err")" >&2
    done
  done
done

python3 - "$OUT" "$REPS" "${ORDER[@]}" <<'PY'
import json, statistics, sys, glob
out, reps, order = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def val(wl, cfg, cpu=False):
    v = []
    for r in range(1, reps + 1):
        try:
            t = open(f"{out}/{wl}.{cfg}.{r}.json").read()
            j = json.loads(t[t.index("{"):])["jobs"][0]
            if j.get("error"):  # a failed job's zeros are no measurement
                continue
            rd = j["read"]
            if cpu:  # fio's usr+sys per I/O, us
                v.append((j["usr_cpu"] + j["sys_cpu"]) / 100 * rd["runtime"] * 1000 / rd["total_ios"])
            else:
                v.append(rd["iops"] if wl.startswith("4k") else rd["bw"] / 1024)
        except Exception:
            pass
    return (statistics.median(v), len(v)) if v else (None, 0)
print("| configuration | 4 KiB randread QD32, IOPS | ratio to kernel numa | 128 KiB read QD16, MiB/s | ratio to kernel numa | fio CPU us/IO at 4 KiB |")
print("|---|---|---|---|---|---|")
ref = {wl: val(wl, "kernel-2-numa")[0] for wl in ("4k-qd32", "128k-qd16")}
for cfg in order:
    cells = []
    for wl in ("4k-qd32", "128k-qd16"):
        m, n = val(wl, cfg)
        cells.append("failed" if m is None else f"{m:.0f}" + ("" if n == reps else f" ({n} of {reps})"))
        cells.append("" if m is None or not ref[wl] else f"{m / ref[wl]:.2f}")
    c, _ = val("4k-qd32", cfg, cpu=True)
    cells.append("-" if c is None else f"{c:.0f}")
    print(f"| {cfg} | " + " | ".join(cells) + " |")
PY
