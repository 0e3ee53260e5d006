#!/bin/bash
# IN-GUEST: which completion vector nvmet gives each queue of one job of
# ours (a kprobe on ib_cq_pool_get: nr = CQEs, hint = vector, ctx 1 = nvmet's
# workqueue polling), for 1, 2, 2 and 3 queue pairs.
#   tests/testbed/run bash bench/investigations/cqvectors.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
T=/sys/kernel/tracing; [ -d $T/events ] || mount -t tracefs nodev $T
echo 'p:poolget ib_cq_pool_get nr=%si:s32 hint=%dx:s32 ctx=%cx:s32' > $T/kprobe_events || exit 1
echo 1 > $T/events/kprobes/poolget/enable
export RUNTIME=1 RAMP=0 REGION=1g NUMJOBS=1 CPUS=0-1 RW=read BS=128k IODEPTH=16
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; echo 0 > $T/events/kprobes/poolget/enable; echo > $T/kprobe_events' EXIT
for qp in 1 2 2 3; do
  echo > $T/trace
  printf '[global]\ninclude %s/jobs/common.fio.inc\n[bw]\nrw=${RW}\nbs=${BS}\niodepth=${IODEPTH}\nnumjobs=1\nqpairs=%s\n' "$PWD" $qp > $TMP/j.fio
  jobs/run $TMP/j.fio --output-format=terse > /dev/null 2>&1
  echo "== qpairs=$qp"; grep poolget $T/trace | sed 's/.*poolget: //' 
  sleep 1
done
