#!/bin/bash
# IN-GUEST: where the work of one job at 128 KiB QD16 runs, per vCPU and
# task (perf record -a, software clock), with 1, 2 and 3 queue pairs: shows
# on which vCPU the target's completion work for our queues lands; the
# kernel host (its own two queues) first.
#   tests/testbed/run bash bench/investigations/cpusplit.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
command -v perf >/dev/null || { echo "cpusplit: perf missing (Debian's linux-perf)"; exit 1; }
export RUNTIME=4 RAMP=1 REGION=1g NUMJOBS=1 CPUS=0-1 RW=read BS=128k IODEPTH=16
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; kdev_teardown' EXIT
. jobs/kdev.sh
kdev_setup || exit 1
for qp in ${QPAIRS_LIST:-kernel 1 2 3}; do
  ini=ours opt=qpairs=$qp; [ "$qp" = kernel ] && ini=kernel opt=description=kernel
  printf '[global]\ninclude %s/jobs/common.fio.inc\n[bw]\nrw=${RW}\nbs=${BS}\niodepth=${IODEPTH}\nnumjobs=1\n%s\n' "$PWD" "$opt" > $TMP/j.fio
  perf record -q -a -e cpu-clock -F 499 -o $TMP/p.data -- env INITIATOR=$ini jobs/run $TMP/j.fio --output-format=terse > $TMP/o 2>/dev/null
  echo "== $ini $opt IOPS $(grep -v nvmeof $TMP/o | cut -d';' -f8)"
  perf report -i $TMP/p.data --sort cpu,comm --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -14
done
