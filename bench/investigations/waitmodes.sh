#!/bin/bash
# IN-GUEST: one job of ours, 4 KiB random reads at QD32, once per wait mode
# (REPS times each): IOPS, fio's context switches and CPU time per I/O. Shows
# whether the context switches of a run are our waits or the wire's.
#   tests/testbed/run bash bench/investigations/waitmodes.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
TMP=$(mktemp -d)
export RUNTIME=${RUNTIME:-3} RAMP=${RAMP:-1} REGION=${REGION:-1g} NUMJOBS=1
for v in hybrid poll sleep; do
  printf '[global]\ninclude %s/jobs/common.fio.inc\n[iops]\nrw=randread\nbs=4k\niodepth=32\nnumjobs=1\nwait=%s\n' \
    "$PWD" "$v" > "$TMP/iops-$v.fio"
  for rep in $(seq "${REPS:-2}"); do
    jobs/run "$TMP/iops-$v.fio" --output-format=json > "$TMP/out.json" 2> "$TMP/err" \
      || { echo "waitmodes: wait=$v failed: $(tail -2 "$TMP/err")"; continue; }
    python3 - "$v" "$TMP/out.json" <<'PY'
import json, sys
t = open(sys.argv[2]).read()
j = json.loads(t[t.index("{"):])["jobs"][0]
n = j["read"]["total_ios"]
cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] * 1000 / n
print(f"wait={sys.argv[1]}: IOPS {j['read']['iops']:.0f}, ctx/IO {j['ctx'] / n:.2f}, CPU {cpu:.1f} us/IO")
PY
  done
done
rm -rf "$TMP"
