#!/bin/bash
# IN-GUEST: fio's zonemode=zbd on the zoned namespace of subsystem Z (16
# zones of 4 MiB, 4 KiB blocks), ours against the kernel host's zoned block
# device of the same namespace (nvme connect over RDMA; the kernel puts
# mq-deadline on it for zoned writes), same boot, alternating, REPS
# repetitions, medians. 4 KiB sequential writes at QD1 (ours as Write and as
# Zone Append: zone_append=1), where fio resets each zone as it wraps, and
# 4 KiB random reads at QD16 over the written zones. Prints a Markdown table.
#   tests/testbed/run bash bench/zns.sh        (REPS=3 RUNTIME=6 by default)
set -uo pipefail
cd "$(dirname "$0")/.."
source tests/testbed/guest/target-env.sh
source jobs/kdev.sh
B=${NVMEOF_BUILD:-build/out}
ENG=$PWD/$B/libnvmeof_fio.so
REPS=${REPS:-3} RUNTIME=${RUNTIME:-6}
OURS="trtype=RDMA adrfam=IPv4 traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_ZPORT subnqn=${NVMEOF_TB_NQN_Z//:/\\:} ns=1"
OUT=$(mktemp -d /tmp/zns-bench.XXXXXX)

timeout 30 nvme connect -t rdma -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_ZPORT" -n "$NVMEOF_TB_NQN_Z" >&2
KDEV=$(kdev_find "$NVMEOF_TB_NQN_Z" 1) || exit 1
trap 'timeout 30 nvme disconnect -n "$NVMEOF_TB_NQN_Z" >&2' EXIT
echo "bench: kernel $KDEV: zoned=$(cat /sys/block/${KDEV#/dev/}/queue/zoned), scheduler $(cat /sys/block/${KDEV#/dev/}/queue/scheduler)" >&2

args_for() {
  case $1 in
    ours) A=(--ioengine=external:"$ENG" --filename="$OURS" --qpairs=1) ;;
    ours-append) A=(--ioengine=external:"$ENG" --filename="$OURS" --qpairs=1 --zone_append=1) ;;
    kernel) A=(--ioengine=libaio --filename="$KDEV") ;;
  esac
}
ORDER=(ours kernel ours-append)
declare -A WL=([4k-write-qd1]="--rw=write --bs=4k --iodepth=1" [4k-randread-qd16]="--rw=randread --bs=4k --iodepth=16")

for rep in $(seq "$REPS"); do
  for wl in 4k-write-qd1 4k-randread-qd16; do
    for cfg in "${ORDER[@]}"; do
      [ "$cfg" = ours-append ] && [ "$wl" != 4k-write-qd1 ] && continue
      args_for "$cfg"
      # shellcheck disable=SC2086
      timeout 120 fio --name=zbd --thread=1 --zonemode=zbd --direct=1 --max_open_zones=4 --size=64m \
        --time_based --runtime="$RUNTIME" --output-format=json ${WL[$wl]} "${A[@]}" \
        > "$OUT/$wl.$cfg.$rep.json" 2> "$OUT/$wl.$cfg.$rep.err" ||
        echo "bench: $wl $cfg rep $rep failed: $(tail -2 "$OUT/$wl.$cfg.$rep.err")" >&2
    done
  done
done

python3 - "$OUT" "$REPS" "${ORDER[@]}" <<'PY'
import json, statistics, sys
out, reps, order = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def val(wl, cfg):
    v = []
    for r in range(1, reps + 1):
        try:
            t = open(f"{out}/{wl}.{cfg}.{r}.json").read()
            j = json.loads(t[t.index("{"):])["jobs"][0]
            if j.get("error"):  # a failed job's zeros are no measurement
                continue
            v.append(j["write" if "write" in wl else "read"]["iops"])
        except Exception:
            pass
    return (statistics.median(v), len(v)) if v else (None, 0)
wls = ("4k-write-qd1", "4k-randread-qd16")
print("| configuration | 4 KiB write QD1 (zbd), IOPS | ratio to kernel | 4 KiB randread QD16 (zbd), IOPS | ratio to kernel |")
print("|---|---|---|---|---|")
ref = {wl: val(wl, "kernel")[0] for wl in wls}
for cfg in order:
    cells = []
    for wl in wls:
        m, n = val(wl, cfg)
        if cfg == "ours-append" and wl != "4k-write-qd1":
            cells += ["-", ""]
            continue
        cells.append("failed" if m is None else f"{m:.0f}" + ("" if n == reps else f" ({n} of {reps})"))
        cells.append("" if m is None or not ref[wl] else f"{m / ref[wl]:.2f}")
    print(f"| {cfg} | " + " | ".join(cells) + " |")
PY
