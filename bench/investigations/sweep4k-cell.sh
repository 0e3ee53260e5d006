# Sourced by sweep4k-profile.sh and sweep4k-syscalls.sh (IN-GUEST), with ME set
# to the script's name: perf, the result folder OUT, the kernel host connected,
# sweep4k.sh's cell exported, and STAT, the target's namespace 1 block
# statistics, whose first field counts the reads it served.
set -uo pipefail
cd "$(dirname "$0")/../.."
command -v perf >/dev/null || { echo "$ME: perf missing (Debian's linux-perf)"; exit 1; }
OUT=${SWEEP4K_OUT:-build/sweep4k/${ME#sweep4k-}-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
. jobs/kdev.sh
kdev_setup || { echo "$ME: kernel initiator did not connect"; exit 1; }
trap kdev_teardown EXIT
export RUNTIME=${RUNTIME:-3} RAMP=${RAMP:-1} REGION=768m OFFSET_INCREMENT=4m BS=4k IODEPTH=4 RW=read
export NUMJOBS=${NUMJOBS:-32}
dev=$(cat "/sys/kernel/config/nvmet/subsystems/$NVMEOF_TB_NQN_A/namespaces/1/device_path" 2>/dev/null)
STAT=/sys/block/$(basename "${dev:-none}")/stat
[ -r "$STAT" ] || { echo "$ME: no block statistics for namespace 1's device '${dev:-}'"; exit 1; }
