#!/bin/bash
# IN-GUEST: the fio engine on a zoned namespace (subsystem Z, 16 zones of
# 4 MiB, at most 4 open and 6 active, appends up to 128 KiB: zns-up), over
# RDMA and NVMe/TCP: fio's zonemode=zbd through the engine's zone hooks,
# Zone Append writes, a conventional namespace that reports no zones, and a
# zoned namespace over several paths refused. (fdp=1, fio 3.39's, is
# fio-versions.sh's.)
source "$(dirname "$0")/lib.sh"
B=${NVMEOF_BUILD:-build/out}
ENG=${NVMEOF_ENGINE:-$PWD/$B/libnvmeof_fio.so}
FIO=${NVMEOF_FIO:-/usr/bin/fio} # another fio release: tests/target/fio-versions.sh
ztid() { # trtype -> the zoned namespace's filename, ':' escaped for fio
  echo "trtype=$1 adrfam=IPv4 traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_ZPORT subnqn=${NVMEOF_TB_NQN_Z//:/\\:} ns=1"
}
FA1="trtype=RDMA adrfam=IPv4 traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_PORT subnqn=${NVMEOF_TB_NQN_A//:/\\:} ns=1"
ours() { timeout 120 "$FIO" --ioengine=external:"$ENG" --output-format=normal "$@"; }

expect_ok() { # log what
  grep -q 'err= 0' "$1" || { tail -20 "$1"; fail "$2: fio reported an error"; }
  ! grep -qE 'verify:|bad magic|crc32c.*wanted' "$1" || { grep -E 'verify|bad magic' "$1" | head -5; fail "$2: verify failed"; }
}
resets() { sed -n 's/.*; \([0-9]*\) zone resets.*/\1/p' "$1" | head -1; }
# nvmet's trace of the commands it received while fio ran: zone_cmds LOG OPCODE-NAME FIO-ARGS...
zone_cmds() {
  local T=/sys/kernel/tracing log=$1 what=$2 rc=0; shift 2
  [ -e $T/events ] || mount -t tracefs nodev $T
  echo 0 > $T/tracing_on; echo > $T/trace
  echo 1 > $T/events/nvmet/nvmet_req_init/enable; echo 1 > $T/tracing_on
  ours "$@" > "$log" 2>&1 || rc=$?
  echo 0 > $T/tracing_on; echo 0 > $T/events/nvmet/nvmet_req_init/enable
  grep -c "$what" $T/trace || true
  return $rc
}
ZBD=(--zonemode=zbd --direct=1 --qpairs=1) # one queue pair: a zone's writes arrive in order

# A sequential write over three zones, verified, over RDMA; the same over
# TCP on the same zones then finds them written, and fio resets each one
# (through reset_wp) before writing again. The start line names the geometry.
t_zbd_sequential_write_verifies_across_zones() {
  for tr in RDMA TCP; do
    ours --name=seq --filename="$(ztid $tr)" "${ZBD[@]}" --rw=write --bs=128k --size=12m --iodepth=4 \
      --verify=crc32c --do_verify=1 > "$SCRATCH/$tr" 2>&1 || { tail -20 "$SCRATCH/$tr"; fail "$tr: fio exited non-zero"; }
    expect_ok "$SCRATCH/$tr" "$tr"
    grep -q 'READ: bw=' "$SCRATCH/$tr" || fail "$tr: no verify read phase"
    grep -q "zoned namespace 1: 16 zones of 1024 LBAs (4 MiB), max open 4, max active 6, zone append at most 128 KiB" \
      "$SCRATCH/$tr" || { grep nvmeof: "$SCRATCH/$tr"; fail "$tr: no line naming the zones"; }
  done
  [ "$(resets "$SCRATCH/TCP")" = 3 ] || { grep -i 'zone' "$SCRATCH/TCP"; fail "the second job reset $(resets "$SCRATCH/TCP") zones, not the 3 it wrote"; }
}

# Random writes under max_open_zones=2 over four zones, three times their
# size: zones fill and fio resets them to go on (its zone reset count);
# a job asking for more open zones than the namespace's 4 is refused by
# fio from the limit the engine reports.
t_zbd_random_writes_reset_zones_within_max_open() {
  for tr in RDMA TCP; do
    ours --name=rnd --filename="$(ztid $tr)" "${ZBD[@]}" --rw=randwrite --bs=16k --offset=16m --size=16m \
      --io_size=48m --iodepth=4 --max_open_zones=2 > "$SCRATCH/$tr" 2>&1 ||
      { tail -20 "$SCRATCH/$tr"; fail "$tr: fio exited non-zero"; }
    expect_ok "$SCRATCH/$tr" "$tr"
    n=$(resets "$SCRATCH/$tr")
    [ "${n:-0}" -gt 0 ] || { grep -i 'zone\|WRITE' "$SCRATCH/$tr"; fail "$tr: no zone reset counted"; }
  done
  ! ours --name=five --filename="$(ztid RDMA)" "${ZBD[@]}" --rw=randwrite --bs=16k --size=16m --max_open_zones=5 \
    > "$SCRATCH/five" 2>&1 || fail "max_open_zones=5 ran on a namespace of 4"
  grep -q 'max_open_zones (5) is larger than max (4)' "$SCRATCH/five" || { tail -5 "$SCRATCH/five"; fail "no limit message"; }
}

# Completions gathered between two getevents calls: fio frees several
# io_u's per reap (batch complete), queues one, and the zone reset its next
# write needs polls the queue pair, which completes the others too; the
# engine keeps them all and drops none (it would say so).
t_zbd_resets_amid_batched_completions() {
  ours --name=batch --filename="$(ztid RDMA)" "${ZBD[@]}" --rw=randwrite --bs=16k --iodepth=8 \
    --iodepth_batch_complete_min=2 --iodepth_batch_complete_max=8 --max_open_zones=1 --offset=40m --size=8m \
    --io_size=64m > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio exited non-zero"; }
  expect_ok "$SCRATCH/log" batch
  ! grep -q 'more completions than' "$SCRATCH/log" || fail "completions were dropped"
  n=$(resets "$SCRATCH/log")
  [ "${n:-0}" -gt 0 ] || fail "no zone reset counted"
}

# zonemode=zbd writes with the default qpairs: one queue pair, which the
# start line says, so a zone's writes arrive in order; qpairs=4 is refused.
t_zbd_writes_take_one_queue_pair() {
  ours --name=q --filename="$(ztid RDMA)" --zonemode=zbd --direct=1 --qpair_select=rr --rw=write --bs=4k \
    --iodepth=16 --offset=48m --size=8m > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio exited non-zero"; }
  expect_ok "$SCRATCH/log" qpairs=0
  grep -q 'queue pair 1 of 1 (qpairs=0: one, as zonemode=zbd writes to a zoned namespace must arrive in order)' \
    "$SCRATCH/log" || { grep 'queue pair' "$SCRATCH/log"; fail "not one queue pair, or not said why"; }
  ! ours --name=q4 --filename="$(ztid RDMA)" --zonemode=zbd --direct=1 --qpairs=4 --rw=write --bs=4k --size=4m \
    > "$SCRATCH/q4" 2>&1 || fail "qpairs=4 ran"
  grep -q 'qpairs=4 with zonemode=zbd writes to a zoned namespace: .*use qpairs=1' "$SCRATCH/q4" ||
    { tail -5 "$SCRATCH/q4"; fail "no reason given"; }
}

# zonemode=zbd trims are zone resets to fio: two written zones trimmed go
# out as Zone Management Send (nvmet's trace), no Deallocate.
t_zbd_trim_resets_zones() {
  ours --name=w --filename="$(ztid RDMA)" "${ZBD[@]}" --rw=write --bs=128k --offset=56m --size=8m > "$SCRATCH/w" 2>&1 ||
    { tail -20 "$SCRATCH/w"; fail "the write job exited non-zero"; }
  n=$(zone_cmds "$SCRATCH/log" nvme_cmd_zone_mgmt_send --name=t --filename="$(ztid RDMA)" "${ZBD[@]}" --rw=trim \
    --bs=4m --offset=56m --size=8m) || { tail -20 "$SCRATCH/log"; fail "the trim job exited non-zero"; }
  expect_ok "$SCRATCH/log" trim
  d=$(grep -c nvme_cmd_dsm /sys/kernel/tracing/trace || true)
  [ "$d" = 0 ] || fail "$d Dataset Management commands for a zoned trim"
  [ "$n" -ge 2 ] || fail "nvmet saw $n Zone Management Send, not a reset for each of the 2 zones"
}

# More zones open than a job's max_open_zones: fio resets the extra ones at
# setup, in its parent, before any job has a queue pair; the engine sends
# that reset from a connection of its own. Two zones left open (128 KiB
# written in each, plain writes after a zoned trim empties them), then a
# max_open_zones=1 job over them: nvmet sees the reset, and the job fills
# both zones (leaving none open for the tests after it).
t_zbd_open_zones_over_max_open_are_reset_at_setup() {
  ours --name=t --filename="$(ztid RDMA)" "${ZBD[@]}" --rw=trim --bs=4m --offset=56m --size=8m \
    --name=a --stonewall --filename="$(ztid RDMA)" --direct=1 --rw=write --bs=128k --offset=56m --size=128k \
    --name=b --filename="$(ztid RDMA)" --direct=1 --rw=write --bs=128k --offset=60m --size=128k \
    > "$SCRATCH/prep" 2>&1 || { tail -20 "$SCRATCH/prep"; fail "opening two zones failed"; }
  n=$(zone_cmds "$SCRATCH/log" nvme_cmd_zone_mgmt_send --name=one --filename="$(ztid RDMA)" "${ZBD[@]}" \
    --rw=write --bs=128k --offset=56m --size=8m --max_open_zones=1) || { tail -20 "$SCRATCH/log"; fail "fio exited non-zero"; }
  expect_ok "$SCRATCH/log" max_open_zones=1
  [ "$n" -ge 1 ] || { tail -20 "$SCRATCH/log"; fail "nvmet saw no Zone Management Send for the zone over the limit"; }
}

# A Zone Append is never split: a block size above the namespace's 128 KiB
# (ZASL) is refused at setup, naming the limit.
t_zone_append_above_zasl_is_refused() {
  ! ours --name=big --filename="$(ztid RDMA)" "${ZBD[@]}" --rw=write --bs=256k --offset=32m --size=4m \
    --zone_append=1 > "$SCRATCH/log" 2>&1 || fail "zone_append=1 with bs=256k ran"
  grep -q 'zone_append=1: bs=262144 is above the 128 KiB a Zone Append may carry (ZASL).*use bs=128k or less' \
    "$SCRATCH/log" || { tail -5 "$SCRATCH/log"; fail "no refusal naming the limit"; }
}

# zone_append=1: the writes go out as Zone Append (nvmet's trace counts
# them, and no plain write), each lands where fio expected, and the data
# reads back.
t_zone_append_writes_verify() {
  for tr in RDMA TCP; do
    n=$(zone_cmds "$SCRATCH/$tr" nvme_cmd_zone_append --name=za --filename="$(ztid $tr)" "${ZBD[@]}" --rw=write \
      --bs=64k --offset=32m --size=8m --verify=crc32c --do_verify=1 --zone_append=1) ||
      { tail -20 "$SCRATCH/$tr"; fail "$tr: fio exited non-zero"; }
    expect_ok "$SCRATCH/$tr" "$tr"
    grep -q "writes as Zone Append" "$SCRATCH/$tr" || fail "$tr: the start line does not say Zone Append"
    [ "$n" -ge 128 ] || fail "$tr: nvmet saw $n zone appends, not the 128 of the job"
  done
}

# A conventional namespace: the engine reports no zones (fio emulates them
# at zonesize=) and says nothing of zones; zone_append=1 is refused by name.
t_conventional_namespace_reports_no_zones() {
  ours --name=conv --filename="$FA1" "${ZBD[@]}" --zonesize=1m --rw=write --bs=64k --size=4m \
    --verify=crc32c --do_verify=1 > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio exited non-zero"; }
  expect_ok "$SCRATCH/log" conventional
  ! grep -q 'zoned namespace' "$SCRATCH/log" || fail "a zone line for a conventional namespace"
  ! ours --name=za --filename="$FA1" --rw=write --bs=64k --size=1m --zone_append=1 > "$SCRATCH/za" 2>&1 ||
    fail "zone_append=1 ran on a conventional namespace"
  grep -q 'zone_append=1: namespace 1 of .* is not zoned' "$SCRATCH/za" || { tail -5 "$SCRATCH/za"; fail "no reason given"; }
}

# A filename with several paths to a zoned namespace is refused before any
# I/O: a write lost with one path and sent again on another could land
# behind a later one in its zone. (The refusal comes once the first path
# named the namespace zoned: the second need not answer.)
t_zoned_over_several_paths_is_refused() {
  local two="trtype=RDMA traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_ZPORT traddr=$NVMEOF_TB_ADDR2 trsvcid=$NVMEOF_TB_ZPORT subnqn=${NVMEOF_TB_NQN_Z//:/\\:} ns=1"
  ! ours --name=mp --filename="$two" "${ZBD[@]}" --rw=write --bs=64k --size=4m > "$SCRATCH/log" 2>&1 ||
    fail "a zoned job over two paths ran"
  grep -q 'a zoned namespace over several paths is not supported: a failover may reorder writes; name one path' "$SCRATCH/log" ||
    { tail -5 "$SCRATCH/log"; fail "no reason given"; }
}

run_tests "$@"
