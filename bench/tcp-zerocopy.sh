#!/bin/bash
# IN-GUEST (make bench-tcp-zerocopy): whether MSG_ZEROCOPY pays for our NVMe/TCP
# writes: 128 KiB random writes at QD16 with tcp_zerocopy=0 and =64k, same
# boot, alternating run by run, REPS repetitions each; the medians of IOPS
# and of fio's CPU (usr+sys) per I/O, and the engine's end-of-job zerocopy
# counts (how many sends the kernel copied anyway). JSON and logs go to
# build/bench/tcp-zerocopy-<stamp>/.
#   ENGINE  the engine to measure (default: build/out/libnvmeof_fio.so)
set -uo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
export RUNTIME=${RUNTIME:-5} RAMP=${RAMP:-1} REGION=${REGION:-1g}
OUT=${BENCH_OUT:-build/bench/tcp-zerocopy-$(date +%Y%m%d-%H%M%S)}
ENG=${ENGINE:-$PWD/build/out/libnvmeof_fio.so}
mkdir -p "$OUT"
F="trtype=TCP adrfam=IPv4 traddr=$NVMEOF_TB_ADDR trsvcid=${NVMEOF_TB_PORT:-4420} subnqn=${NVMEOF_TB_NQN_A//:/\\:} ns=1"
echo "bench-tcp-zerocopy: results in $OUT; RUNTIME=${RUNTIME}s REPS=$REPS"
{ uname -r; nproc; grep -m1 'model name' /proc/cpuinfo; fio --version; ip -o link | awk '{print $2, $3}'; } > "$OUT/machine.txt"
for rep in $(seq "$REPS"); do
  for zc in 0 64k; do
    fio --name=zc --ioengine=external:"$ENG" --filename="$F" --thread=1 --direct=1 --time_based=1 \
      --runtime="$RUNTIME" --ramp_time="$RAMP" --size="$REGION" --norandommap=1 --randrepeat=0 \
      --rw=randwrite --bs=128k --iodepth=16 --tcp_zerocopy="$zc" --output-format=json \
      > "$OUT/zc$zc.$rep.json" 2> "$OUT/zc$zc.$rep.err" \
      || echo "bench-tcp-zerocopy: tcp_zerocopy=$zc rep $rep failed: $(tail -2 "$OUT/zc$zc.$rep.err")"
  done
  echo "bench-tcp-zerocopy: repetition $rep done"
done
python3 - "$OUT" "$REPS" <<'PY'
import json, os, re, statistics, sys
sys.path.insert(0, "jobs")
import sweeplib
out, reps = sys.argv[1], int(sys.argv[2])
print("tcp_zerocopy  IOPS (median, runs)            CPU us/IO (median)  zerocopy sends, copied by the kernel")
for zc in ("0", "64k"):
    iops, cpu, sends = [], [], []
    for rep in range(1, reps + 1):
        base = os.path.join(out, f"zc{zc}.{rep}")
        try:
            data, _ = sweeplib.load_json(base + ".json")
            m = sweeplib.combine([sweeplib.job_metrics(j) for j in data["jobs"]])
        except (ValueError, KeyError, IndexError, OSError) as e:
            print(f"  {base}: unreadable ({e})")
            continue
        iops.append(m["iops"])
        cpu.append(m["cpu_us_per_io"])
        s = c = 0
        for line in open(base + ".err", errors="replace"):
            g = re.search(r"zerocopy (\d+) send\(s\), (\d+) copied", line)
            if g:
                s += int(g.group(1)); c += int(g.group(2))
        sends.append(f"{s}/{c}")
    if iops:
        print(f"{zc:>12}  {statistics.median(iops):8.0f} ({', '.join(f'{x:.0f}' for x in iops)})"
              f"  {statistics.median(cpu):10.1f} ({', '.join(f'{x:.1f}' for x in cpu)})  {', '.join(sends)}")
PY
