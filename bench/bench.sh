#!/bin/bash
# IN-GUEST (make bench): every BENCHMARKS.md table, ours against the kernel's
# nvme-rdma block device (fio io_uring), same boot, same namespace,
# alternating initiators cell by cell, REPS repetitions. JSON results go to
# build/bench/<stamp>/ and bench/report.py prints the tables.
set -uo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
export RUNTIME=${RUNTIME:-2} RAMP=${RAMP:-1} REGION=${REGION:-1g}
OUT=${BENCH_OUT:-build/bench/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
. jobs/kdev.sh
kdev_setup || { echo "bench: kernel initiator did not connect"; exit 1; }
echo "bench: kernel initiator on $KDEV; results in $OUT; RUNTIME=${RUNTIME}s RAMP=${RAMP}s REPS=$REPS"
{ uname -r; nproc; grep -m1 'model name' /proc/cpuinfo; fio --version; } > "$OUT/machine.txt"

only() { # ONLY="qd1_ iops_": just the cells whose names start so (unset: all)
  [ -z "${ONLY:-}" ] && return 0
  local p
  for p in $ONLY; do [[ $1 == "$p"* ]] && return 0; done
  return 1
}
cell() { # name jobfile VAR=val...
  local name=$1 job=$2; shift 2
  only "$name" || return 0
  for rep in $(seq "$REPS"); do
    for ini in ours kernel; do
      env "$@" INITIATOR=$ini jobs/run "$job" --output-format=json --lat_percentiles=1 \
        > "$OUT/$name.$ini.$rep.json" 2> "$OUT/$name.$ini.$rep.err" \
        || echo "bench: $name $ini rep $rep failed: $(tail -2 "$OUT/$name.$ini.$rep.err")"
    done
  done
  echo "bench: $name done"
}
for rw in randread randwrite; do
  for bs in 4k 16k 64k 256k 1m; do cell "qd1_${rw}_$bs" qd1-latency.fio RW=$rw BS=$bs; done
done
for nj in 1 4; do cell "iops_qd32_j$nj" iops.fio NUMJOBS=$nj; done
# one job with a set number of queue pairs (ours: the default, qpairs=0, is
# one per CPU the job may run on; the kernel runs its usual blk-mq queues)
for qp in 1 2; do
  cell iops_qd32_qp$qp iops.fio NUMJOBS=1 QPAIRS=$qp
  cell bw_read_128k_qp$qp bandwidth.fio RW=read BS=128k IODEPTH=16 NUMJOBS=1 QPAIRS=$qp
done
for rw in read write; do
  for bs in 128k 1m; do cell "bw_${rw}_$bs" bandwidth.fio RW=$rw BS=$bs IODEPTH=16 NUMJOBS=1; done
done
# QP scaling (1 to 64 jobs, 4 KiB and 1 MiB): the sweep in bench/plots.sh
for bs in 4m 16m 64m; do cell "large_$bs" large-mdts.fio RW=read BS=$bs; done
# Both initiators pinned to the same single vCPU: rxe copies payloads per QP,
# so an unpinned kernel job that migrates spreads over both vCPUs' queues.
cell pin_qd1_randread_4k qd1-latency.fio RW=randread BS=4k CPUS=1
cell pin_iops_qd32_j1 iops.fio NUMJOBS=1 CPUS=1
cell pin_bw_read_1m bandwidth.fio RW=read BS=1m IODEPTH=16 NUMJOBS=1 CPUS=1
cell pin_bw_write_1m bandwidth.fio RW=write BS=1m IODEPTH=16 NUMJOBS=1 CPUS=1
cell pin_bw_read_128k bandwidth.fio RW=read BS=128k IODEPTH=16 NUMJOBS=1 CPUS=1
cell libaio_iops_qd32_j1 iops.fio NUMJOBS=1 KERNEL_IOENGINE=libaio
cell libaio_bw_read_128k bandwidth.fio RW=read BS=128k IODEPTH=16 NUMJOBS=1 KERNEL_IOENGINE=libaio
[ -n "${ONLY:-}" ] || REPS=$REPS BENCH_OUT=$OUT bash bench/plots.sh || echo "bench: plots failed"
# Where the CPU goes at 4 KiB QD32, one job, each initiator: a system-wide
# software-clock profile in the guest (PROFILE=0 skips it).
[ "${PROFILE:-1}" = 0 ] || bash bench/profile.sh "$OUT" || echo "bench: profile failed"
kdev_teardown
"$PWD/build/out/bench/percmd" > "$OUT/percmd.txt" 2>&1 || echo "bench: per-command micro-benchmark failed"
python3 bench/report.py "$OUT"
