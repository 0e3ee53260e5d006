#!/bin/bash
# Failover that loses nothing, shown by `nvmeof failover-check` against
# subsystem M's two paths while a fault runs and ends: versioned writes
# from two queues, every acknowledged and in-doubt version kept, every block
# read back after the hold. Each scenario passes only with 0 lost updates,
# 0 versions never written and 0 torn blocks, and only when its fault
# reached the I/O (the timeline's counts say so). The timelines are printed.
# Partitions (tb cut) last longer than the short command timeout used here,
# so that writes on the cut path time out and fail over while the cut
# path's controller, and whatever the host left queued for it, live on.
source "$(dirname "$0")/lib.sh"
B=${NVMEOF_BUILD:-build/out}
T=$B/nvmeof
A1=$NVMEOF_TB_ADDR A2=$NVMEOF_TB_ADDR2 PORT=$NVMEOF_TB_MPORT NQN=$NVMEOF_TB_NQN_M

# fc LOG ARGS...: failover-check with these paths and faults; its output
# (the timeline, any offending LBA with its history, the verdict) printed
fc() {
  local log=$1 rc=0
  shift
  timeout 240 "$T" failover-check -n "$NQN" --units=32 --queues=2 --queue-depth=4 "$@" > "$log" 2>&1 || rc=$?
  sed 's/^/    /' "$log"
  return $rc
}
two_paths() { echo -t "$1" -a "$A1" -s "$PORT" -a "$A2" -s "$PORT"; }
# tc's modules loaded before the first cut, so that a cut takes effect
# when the timeline says it was asked for (a module load over 9p takes seconds)
modprobe -a sch_ingress cls_u32 act_gact
# path 3, over a veth pair, for partitions over RDMA; gone at the suite's end
tb wire-up
trap 'tb wire-down' EXIT
# path_errors LOG PATH: path PATH's path errors in the timeline (the fault bit)
path_errors() { sed -n "s/.*path $2: [0-9]* command(s), \([0-9]*\) path error(s).*/\1/p" "$1" | tail -1; }
# what a fault did to path N whether or not it caught a command: its
# queues' connection losses, its ANA state changes
path_losses() { sed -n "s/.*path $2: [0-9]* command(s), .* \([0-9]*\) loss(es), .*/\1/p" "$1" | tail -1; }
path_ana_changes() { sed -n "s/.*path $2: [0-9]* command(s), .* \([0-9]*\) ANA change(s).*/\1/p" "$1" | tail -1; }
expect_clean() { # log rc what
  grep -q '^verdict: 0 bad block(s)' "$1" && [ "$2" = 0 ] || fail "$3: failover-check found bad blocks (exit $2)"
}

# NVMe/TCP path 1 cut for 10 s (5 command timeouts) while both paths carry
# writes (round-robin: writes keep going into the cut path's socket until
# each queue's are all stuck there), then healed; writes stop at the heal,
# and the hold leaves 15 s for anything the cut path's connection still
# held to arrive (TCP's retransmission backs off to seconds). Cut toward
# the target only, the target has nothing of its own to resend, so what
# the host's socket held goes first when the path heals; cut both ways,
# the target's resent answers usually reach the host first, whose closed
# socket then resets the connection.
partition_tcp() { # direction kato_args...
  local rc=0 dir=$1
  shift
  fc "$SCRATCH/log" $(two_paths tcp) --iopolicy=round-robin --timeout=2000 "$@" --cut-cmd="tb cut 1 $dir" \
    --cut-at=2 --heal-cmd="tb heal 1" --heal-at=12 --runtime=12 --hold=15000 || rc=$?
  [ "$(path_errors "$SCRATCH/log" 1)" -gt 0 ] || fail "the cut reached no write on path 1"
  expect_clean "$SCRATCH/log" $rc "TCP partition of path 1 ($dir)"
}
t_tcp_partition_toward_the_target_then_healed_loses_no_update_kato_default() { partition_tcp to-target; }
t_tcp_partition_both_ways_then_healed_loses_no_update_kato_0() { partition_tcp both --kato=0; }

# The same over RDMA: path 1 and path 3 (its RoCEv2 crosses the veth pair,
# where the cut drops it by address), path 3 cut for 8 s.
partition_rdma() { # direction kato_args...
  local rc=0 dir=$1
  shift
  fc "$SCRATCH/log" -t rdma -a "$A1" -s "$PORT" -a "$NVMEOF_TB_ADDR3" -s "$PORT" -w "$NVMEOF_TB_SRC3" \
    --iopolicy=round-robin --timeout=2000 "$@" --cut-cmd="tb cut 3 $dir" --cut-at=2 --heal-cmd="tb heal 3" \
    --heal-at=10 --runtime=10 --hold=5000 || rc=$?
  [ "$(path_errors "$SCRATCH/log" 2)" -gt 0 ] || fail "the cut reached no write on path 3"
  expect_clean "$SCRATCH/log" $rc "RDMA partition of path 3 ($dir)"
}
t_rdma_partition_toward_the_target_then_healed_loses_no_update_kato_0() { partition_rdma to-target --kato=0; }
t_rdma_partition_both_ways_then_healed_loses_no_update_kato_default() { partition_rdma both; }

# A single controller over NVMe/TCP: the cut times its writes out; they
# fail to the writer in doubt, the queue reconnects after the heal and the
# writer's next versions go out on the new connection. The default
# keep-alive (5 s), so that the command timeout (2 s) finds the loss first
# (a short one finds it by keep-alive and the writes are replayed, not in
# doubt); the in-doubt writes' hold (1 s + 2 x KATO, from about 5 s) gates
# the reconnect, so the run lasts until the new versions come (about 17 s).
t_single_controller_reconnects_with_writes_in_doubt() {
  local rc=0
  fc "$SCRATCH/log" -t tcp -a "$A1" -s "$PORT" --timeout=2000 --reconnect-delay=500 --cut-cmd="tb cut 1 to-target" \
    --cut-at=2 --heal-cmd="tb heal 1" --heal-at=12 --runtime=20 --hold=15000 || rc=$?
  local tmo doubt rec
  tmo=$(sed -n 's/.*queues: \([0-9]*\) timeout(s).*/\1/p' "$SCRATCH/log" | tail -1)
  [ "${tmo:-0}" -gt 0 ] || fail "the cut timed out no write"
  doubt=$(sed -n 's/.*writes answered: [0-9]* acknowledged, \([0-9]*\) in doubt.*/\1/p' "$SCRATCH/log" | tail -1)
  [ "${doubt:-0}" -gt 0 ] || fail "no write failed in doubt"
  rec=$(sed -n 's/.*queues: [0-9]* timeout(s), \([0-9]*\) reconnect(s).*/\1/p' "$SCRATCH/log" | tail -1)
  [ "${rec:-0}" -gt 0 ] || fail "the queue did not reconnect"
  # the writer's next versions went out on the new connection: a second
  # of the timeline after the heal (12 s) acknowledged some
  awk '$2 == "s" && $1 >= 13.5 && $3 ~ /^\+[1-9][0-9]*$/ && $4 == "acknowledged," { n++ } END { exit !n }' "$SCRATCH/log" ||
    fail "no write acknowledged after the heal"
  expect_clean "$SCRATCH/log" $rc "single controller across a partition"
}

# Subsystem M taken off path 1's port (nvmet ends that port's controllers),
# then put back: over RDMA, and over NVMe/TCP. A KATO of 2 s: the writes
# lost with the port are held 1 s + 2 x KATO, 5 s instead of the default's
# 11 s; the default keep-alive is the partitions' subject above, not these
# faults'.
port_removal() { # trtype
  local rc=0
  NVMEOF_TB_TRTYPE=$1 fc "$SCRATCH/log" $(two_paths "$1") --timeout=2000 --kato=2000 --cut-cmd="tb mpath-down 1" --cut-at=2 \
    --heal-cmd="tb mpath-up 1" --heal-at=6 --runtime=8 --hold=3000 || rc=$?
  # nvmet completes what is in flight before it tears a removed port's
  # queues down: the removal may fail no command, but path 1 is lost
  [ "$(path_losses "$SCRATCH/log" 1)" -gt 0 ] || fail "path 1 saw no loss of its port"
  expect_clean "$SCRATCH/log" $rc "port removal ($1)"
}
t_rdma_port_removed_and_restored_loses_no_update() { port_removal rdma; }
t_tcp_port_removed_and_restored_loses_no_update() { port_removal tcp; }

# Path 1's ANA group Inaccessible, then Optimized again, over RDMA.
t_ana_inaccessible_and_back_loses_no_update() {
  local rc=0
  fc "$SCRATCH/log" $(two_paths rdma) --timeout=2000 --cut-cmd="tb ana 1 inaccessible" --cut-at=2 \
    --heal-cmd="tb ana 1 optimized" --heal-at=5 --runtime=7 --hold=2000 || rc=$?
  # the target's event may tell the host before any command meets the
  # status: path 1's state changed, with or without a path error (each
  # path counts its first state read as a change: path 2, untouched, has
  # only that one)
  [ "$(path_ana_changes "$SCRATCH/log" 1)" -gt "$(path_ana_changes "$SCRATCH/log" 2)" ] ||
    fail "path 1 never saw Inaccessible"
  expect_clean "$SCRATCH/log" $rc "ANA Inaccessible and back"
}

# Writes of 2 MiB (512 blocks of 4 KiB, above nvmet-rdma's 1 MiB MDTS:
# each goes as chunks), round-robin over path 1 and path 3 (RDMA), while
# path 3 is cut both ways and path 1 turns Inaccessible, then both come
# back. The cut strands whatever chunks path 3 had on the wire: they time
# out in doubt, and their writes must be held, not re-sent at once. (A
# removed port cannot show this: nvmet completes what is in flight before
# it tears the port's queues down, so the loss often carries no chunk.)
# Path 1's state change is often learnt from the target's event before a
# chunk meets its status and leaves no trace in the counts; it is there so
# that for a while no path is usable and the held writes wait with the rest.
t_writes_above_mdts_lose_no_update_across_a_partition_and_inaccessible() {
  local rc=0
  # the heal 10 s after the cut is asked for: tc's filters can take seconds
  # to be in place on a loaded machine (5 s seen), and the chunks they strand
  # need the command timeout (4 s) after that to fail
  printf '%s\n' "1 tb cut 3 both" "2 tb ana 1 inaccessible" "5 tb ana 1 optimized" "11 tb heal 3" \
    > "$SCRATCH/faults"
  timeout 240 "$T" failover-check -n "$NQN" -t rdma -a "$A1" -s "$PORT" -a "$NVMEOF_TB_ADDR3" -s "$PORT" \
    -w "$NVMEOF_TB_SRC3" --iopolicy=round-robin --units=8 --block-count=512 --queues=2 --queue-depth=2 \
    --timeout=4000 --kato=2000 --fault-script="$SCRATCH/faults" --runtime=11 --hold=3000 \
    > "$SCRATCH/log" 2>&1 || rc=$?
  sed 's/^/    /' "$SCRATCH/log"
  [ "$(path_errors "$SCRATCH/log" 2)" -gt 0 ] || fail "the cut reached no write on path 3"
  local held
  held=$(sed -n 's/.*path 2: [0-9]* command(s), .* \([0-9]*\) write(s) held.*/\1/p' "$SCRATCH/log" | tail -1)
  [ "${held:-0}" -gt 0 ] || fail "no split write stranded on path 3 was held"
  expect_clean "$SCRATCH/log" $rc "split writes under a partition and a path status"
}

# The checker itself sees a loss: the blocks are overwritten behind its back
# (zeroes, through another controller) during the hold, so every unit holds
# data older than its newest acknowledged version.
t_the_checker_reports_a_lost_update_it_did_not_cause() {
  local rc=0
  head -c 4096 /dev/zero > "$SCRATCH/zero"
  fc "$SCRATCH/log" -t tcp -a "$A1" -s "$PORT" --units=4 --queues=1 --runtime=2 --hold=0 \
    --fault-script=<(echo "2.5 $T write -t tcp -a $A1 -s $PORT -n $NQN --start-block=1 --data=$SCRATCH/zero") \
    || rc=$?
  [ "$rc" = 1 ] || fail "exit $rc, not 1"
  grep -q '^LBA 1: lost update: holds version 0' "$SCRATCH/log" || fail "LBA 1 not reported as a lost update"
  grep -q '^verdict: 1 bad block(s): 1 lost update(s)' "$SCRATCH/log" || fail "the verdict does not count it"
  "$T" failover-check -n "$NQN" -t tcp -a "$A1" -s "$PORT" --units=2 --queues=1 --runtime=1 --hold=0 -o json \
    > "$SCRATCH/json" 2> /dev/null || fail "a clean run exits non-zero"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["lost_updates"] == 0 and d["bad_blocks"] == 0 and d["writes_acknowledged"] > 0 and d["timeline"], d' "$SCRATCH/json"
}

run_tests "$@"
