#!/bin/bash
# IN-GUEST (make bench-tcp): ours over NVMe/TCP against the kernel's nvme-tcp
# block device (fio libaio), same boot, same namespace, alternating the
# initiators run by run, REPS repetitions: 4 KiB random reads at QD1
# (latency), 4 KiB random reads at QD32 (IOPS, CPU per I/O), 128 KiB
# sequential reads at QD16 (bandwidth). Then a system-wide cpu-clock
# profile of each cell with each initiator. JSON and profiles go to
# build/bench/tcp-<stamp>/; bench/report_tcp.py prints the table.
#   ENGINE      the engine to measure (default: build/out/libnvmeof_fio.so)
#   ALT_ENGINE  another build of the engine, run as a third initiator "alt"
#               beside the two (e.g. the commit before a change); no profile
#   PROFILE=0   no profiles
set -uo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
export RUNTIME=${RUNTIME:-5} RAMP=${RAMP:-1} REGION=${REGION:-1g}
export TRTYPE=TCP KERNEL_IOENGINE=libaio  # NUMJOBS: jobs/run's 1 (qd1-latency.fio would refuse it: it fixes numjobs=1)
OUT=${BENCH_OUT:-build/bench/tcp-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
. jobs/kdev.sh
. bench/perf-top.sh
kdev_setup || { echo "bench-tcp: the kernel's nvme-tcp did not connect"; exit 1; }
trap kdev_teardown EXIT
echo "bench-tcp: kernel nvme-tcp on $KDEV; results in $OUT; RUNTIME=${RUNTIME}s REPS=$REPS"
{ uname -r; nproc; grep -m1 'model name' /proc/cpuinfo; fio --version; } > "$OUT/machine.txt"
INIS="ours kernel${ALT_ENGINE:+ alt}"
# name jobfile VAR=val...
CELLS=("qd1_randread_4k qd1-latency.fio RW=randread BS=4k"
       "iops_qd32_4k iops.fio"
       "bw_read_128k bandwidth.fio RW=read BS=128k IODEPTH=16")
for rep in $(seq "$REPS"); do
  for c in "${CELLS[@]}"; do
    set -- $c
    name=$1 job=$2; shift 2
    for ini in $INIS; do
      eng=${ENGINE:-}
      [ "$ini" != alt ] || eng=$ALT_ENGINE
      env "$@" ${eng:+ENGINE=$eng} INITIATOR=${ini/alt/ours} jobs/run "$job" --output-format=json --lat_percentiles=1 \
        > "$OUT/$name.$ini.$rep.json" 2> "$OUT/$name.$ini.$rep.err" \
        || echo "bench-tcp: $name $ini rep $rep failed: $(tail -2 "$OUT/$name.$ini.$rep.err")"
    done
  done
  echo "bench-tcp: repetition $rep done"
done
# Where the CPU goes in each cell: perf record -a (the target's and the
# TCP stack's kernel work counts for both initiators).
if command -v perf >/dev/null && [ "${PROFILE:-1}" != 0 ]; then
  for c in "${CELLS[@]}"; do
    set -- $c
    name=$1 job=$2; shift 2
    for ini in ours kernel; do
      perf record -q -a -g -e cpu-clock -F 499 -o "$OUT/perf.data" -- \
        env "$@" INITIATOR=$ini jobs/run "$job" --output-format=json > /dev/null 2>&1
      {
        echo "# $name, initiator $ini: perf record -a -e cpu-clock (guest, TCG)"
        perf_top "$OUT/perf.data"
      } > "$OUT/profile-$name-$ini.txt"
      rm -f "$OUT/perf.data"
    done
  done
  echo "bench-tcp: profiles done"
fi
python3 bench/report_tcp.py "$OUT"
