#!/bin/bash
# IN-GUEST on the 6.12 test bed (make bench-tcp-tls): what TLS costs our
# NVMe/TCP, against nvmet: plain TCP (port NVMEOF_TB_PORT), TLS with
# OpenSSL's records (NVMEOF_KTLS=0) and TLS with the kernel's (kTLS), both
# on nvmet's TLS port (tb tls up; nvmet's side is kTLS through tlshd in
# both). 4 KiB random reads at QD1 and QD32, 128 KiB random reads at QD16;
# same boot, the three modes alternating run by run, REPS repetitions;
# medians of IOPS and of fio's CPU (usr+sys) per I/O. Emulated machine:
# compare ratios only. JSON and logs go to build/bench/tcp-tls-<stamp>/.
#   ENGINE  the engine to measure (default: build/out/libnvmeof_fio.so)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPS=${REPS:-3}
RUNTIME=${RUNTIME:-4} RAMP=${RAMP:-1}
OUT=${BENCH_OUT:-build/bench/tcp-tls-$(date +%Y%m%d-%H%M%S)}
ENG=${ENGINE:-$PWD/build/out/libnvmeof_fio.so}
HN=nqn.2014-08.org.nvmexpress:uuid:6e766d65-6f66-4000-8000-0000000000c3
mkdir -p "$OUT"
tb tls up
(umask 077; build/out/nvmeof gen-tls-key > "$OUT/key")
tb tls key "$(cat "$OUT/key")" "$HN" "" 0
echo "bench-tcp-tls: results in $OUT; RUNTIME=${RUNTIME}s REPS=$REPS"
{ uname -r; nproc; grep -m1 'model name' /proc/cpuinfo; fio --version; } > "$OUT/machine.txt"
for rep in $(seq "$REPS"); do
  for w in 4k:1 4k:32 128k:16; do
    for mode in plain tls ktls; do
      port=$NVMEOF_TB_TLS_PORT key=(--tls_key_file="$OUT/key") env=()
      [ $mode = plain ] && port=$NVMEOF_TB_PORT key=()
      [ $mode = tls ] && env=(NVMEOF_KTLS=0)
      F="trtype=TCP adrfam=IPv4 traddr=$NVMEOF_TB_ADDR trsvcid=$port subnqn=${NVMEOF_TB_NQN_A//:/\\:} ns=1 hostnqn=${HN//:/\\:}"
      b=$OUT/${w/:/-qd}.$mode.$rep
      env "${env[@]}" fio --name=tls --ioengine=external:"$ENG" --filename="$F" --thread=1 --direct=1 --time_based=1 \
        --runtime="$RUNTIME" --ramp_time="$RAMP" --size=512m --norandommap=1 --randrepeat=0 \
        --rw=randread --bs="${w%:*}" --iodepth="${w#*:}" "${key[@]}" --output-format=json > "$b.json" 2> "$b.err" \
        || echo "bench-tcp-tls: $mode $w rep $rep failed: $(tail -2 "$b.err")"
    done
  done
  echo "bench-tcp-tls: repetition $rep done"
done
python3 - "$OUT" "$REPS" <<'PY'
import os, statistics, sys
sys.path.insert(0, "jobs")
import sweeplib
out, reps = sys.argv[1], int(sys.argv[2])
print("workload    mode   IOPS (median; runs)              CPU us/IO (median; runs)    IOPS vs plain")
for w in ("4k-qd1", "4k-qd32", "128k-qd16"):
    base_iops = None
    for mode in ("plain", "tls", "ktls"):
        iops, cpu = [], []
        for rep in range(1, reps + 1):
            b = os.path.join(out, f"{w}.{mode}.{rep}")
            try:
                data, _ = sweeplib.load_json(b + ".json")
                m = sweeplib.combine([sweeplib.job_metrics(j) for j in data["jobs"]])
            except (ValueError, KeyError, IndexError, OSError) as e:
                print(f"  {b}: unreadable ({e})")
                continue
            iops.append(m["iops"]); cpu.append(m["cpu_us_per_io"])
        if not iops:
            continue
        mi = statistics.median(iops)
        base_iops = base_iops or (mi if mode == "plain" else None)
        ratio = f"{mi / base_iops:.2f}" if base_iops else "-"
        print(f"{w:<10}  {mode:<5}  {mi:8.0f} ({', '.join(f'{x:.0f}' for x in iops)})"
              f"  {statistics.median(cpu):8.1f} ({', '.join(f'{x:.1f}' for x in cpu)})  {ratio}")
PY
