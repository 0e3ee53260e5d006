#!/bin/bash
# IN-GUEST: one job of ours with engine-option variants against the kernel
# host, alternating in one boot, with what fio does not show: context
# switches of the whole guest per I/O, per-vCPU busy time, Soft-RoCE's
# counters that moved (retries, duplicates) and each queue pair's commands,
# doorbells and sleeps (guest-wide figures span the whole fio run, start-up
# included). Exploration, not a table of BENCHMARKS.md.
#   tests/testbed/run bash -c 'VARS="qpairs=2|wait=poll;spin_us=0" REPS=2 bash bench/investigations/variants.sh'
#   BS=128k IODEPTH=16 RW=read CPUS=1 ... ('|' separates variants, ';' job lines)
#   ALT_ENGINES="old=/tmp/old/build/out/libnvmeof_fio.so": rows for other
#   builds of the engine (an older commit), in the same boot
set -uo pipefail
cd "$(dirname "$0")/../.."
export RUNTIME=${RUNTIME:-3} RAMP=${RAMP:-1} REGION=1g NUMJOBS=1
. jobs/kdev.sh
kdev_setup || exit 1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; kdev_teardown' EXIT
run() { # label initiator extra-job-lines...
  local label=$1 ini=$2; shift 2
  { printf '[global]\ninclude %s/jobs/common.fio.inc\n[iops]\nrw=${RW}\nbs=${BS}\niodepth=${IODEPTH}\nnumjobs=1\n' "$PWD"; for l in "$@"; do echo "$l"; done; } > "$TMP/j.fio"
  local s0 s1; s0=$(head -1 /proc/stat); c0=$(awk '/^ctxt/{print $2}' /proc/stat); p0=$(grep '^cpu[0-9]' /proc/stat | awk '{print $2+$3+$4+$7+$8, $5+$6}' | tr '\n' ' ')
  local HC=$(ls -d /sys/class/infiniband/*/ports/1/hw_counters | head -1)
  for f in $HC/*; do echo "$(basename $f) $(cat $f)"; done > $TMP/hc0
  if ! INITIATOR=$ini jobs/run "$TMP/j.fio" --output-format=json > "$TMP/out.json" 2> "$TMP/err"; then
    echo "$label: failed: $(tail -2 "$TMP/err")"; return
  fi
  grep -h "nvmeof: queue" "$TMP/out.json" "$TMP/err" | tr "\n" " "; echo
  for f in $HC/*; do echo "$(basename $f) $(cat $f)"; done > $TMP/hc1
  paste -d' ' $TMP/hc0 $TMP/hc1 | awk '$4 != $2 {printf "%s+%d ", $1, $4-$2} END {print ""}'
  s1=$(head -1 /proc/stat); c1=$(awk '/^ctxt/{print $2}' /proc/stat); p1=$(grep '^cpu[0-9]' /proc/stat | awk '{print $2+$3+$4+$7+$8, $5+$6}' | tr '\n' ' ')
  python3 -c "import sys; a=list(map(int,sys.argv[1].split())); b=list(map(int,sys.argv[2].split())); d=[y-x for x,y in zip(a,b)]; print('   per-CPU busy:', ' '.join('%d%%' % (100*d[i]/(d[i]+d[i+1]+1e-9)) for i in range(0,len(d),2)))" "$p0" "$p1"
  python3 - "$label" "$TMP/out.json" "$s0" "$s1" "$c0" "$c1" <<'PY'
import json, sys
t = open(sys.argv[2]).read()
j = json.JSONDecoder().raw_decode(t[t.index("{"):])[0]["jobs"][0]
d = j["read"] if j["read"]["total_ios"] else j["write"]
n = d["total_ios"]
cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] * 1000 / n
a = [int(x) for x in sys.argv[3].split()[1:]]; b = [int(x) for x in sys.argv[4].split()[1:]]
dd = [y - x for x, y in zip(a, b)]; tot = sum(dd); idle = dd[3] + dd[4]
pc = d['clat_ns'].get('percentile', {})
print(f"{sys.argv[1]:40s} IOPS {d['iops']:7.0f} clat {d['clat_ns']['mean']/1000:8.0f}us p50/p99 {pc.get('50.000000',0)/1000:.0f}/{pc.get('99.000000',0)/1000:.0f}us ctx/IO {j['ctx']/n:5.2f} CPU {cpu:6.1f}us/IO usr {j['usr_cpu']:.0f}% sys {j['sys_cpu']:.0f}% guest-busy {100*(tot-idle)/tot:.0f}% softirq {100*dd[6]/tot:.0f}% sysctx/IO {(int(sys.argv[6])-int(sys.argv[5]))/n:.1f}")
PY
}
export BS=${BS:-4k} IODEPTH=${IODEPTH:-32} RW=${RW:-randread} CPUS=${CPUS:-0-1}
for rep in $(seq ${REPS:-2}); do
  run kernel kernel
  run ours ours
  IFS='|' read -ra VS <<< "${VARS-wait=poll}"
  for v in "${VS[@]}"; do IFS=';' read -ra L <<< "$v"; run "ours $v" ours "${L[@]}"; done
  for a in ${ALT_ENGINES:-}; do ENGINE=${a#*=} run "engine ${a%%=*}" ours; done
done
