#!/bin/bash
# Several paths to one namespace in the guest: the engine's multipath jobs,
# the tool's ana-log against nvme-cli's, and the kernel host's native
# multipath reading back what we wrote through the same two ports. (The
# library's paths, ANA and failover are target_mpath's, a suite of its own
# in run-all.sh.)
source "$(dirname "$0")/lib.sh"
B=${NVMEOF_BUILD:-build/out}
T=$B/nvmeof
P1=(-a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_MPORT" --nqn="$NVMEOF_TB_NQN_M")

ENG=${NVMEOF_ENGINE:-$PWD/$B/libnvmeof_fio.so}
# fio is not instrumented: a sanitized engine needs the ASan runtime first
# Leaks are checked in fio's runs of the sanitized engine (as faults.sh
# does): fio's own allocations are dropped by lsan-fio.supp (their stack
# kept to the allocator and its caller); the engine's and the library's
# are reported. The preload reaches every command here, whose leaks are
# not ours: only fio's runs check.
FIO_ENV=()
if [ -n "${NVMEOF_ASAN_RT:-}" ]; then
  export LD_PRELOAD=$NVMEOF_ASAN_RT ASAN_OPTIONS=detect_leaks=0
  FIO_ENV=(ASAN_OPTIONS=detect_leaks=1:malloc_context_size=2:symbolize=0
    LSAN_OPTIONS=suppressions=$PWD/tests/target/lsan-fio.supp:print_suppressions=0)
fi
NQN_M_ESC=${NVMEOF_TB_NQN_M//:/\\:}
# both paths, each through its own HCA (srcaddr), one subsystem
FM="trtype=RDMA traddr=$NVMEOF_TB_ADDR srcaddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_MPORT traddr=$NVMEOF_TB_ADDR2 srcaddr=$NVMEOF_TB_ADDR2 subnqn=$NQN_M_ESC ns=1"
ours() { timeout 300 env "${FIO_ENV[@]}" /usr/bin/fio --ioengine=external:"$ENG" --output-format=normal "$@"; }
path_cmds() { # log path -> commands that path carried (end-of-job line)
  sed -n "s/^nvmeof: path $2 .* \([0-9]*\) command(s).*/\1/p" "$1" | head -1
}
expect_ok() { # log
  grep -q 'err= 0' "$1" || { tail -30 "$1"; fail "fio reported an error"; }
  ! grep -qE 'verify:|bad magic|crc32c.*wanted' "$1" || { grep -E 'verify|bad magic' "$1" | head; fail "verify failed"; }
}

t_fio_two_paths_randrw_verify() {
  local pol
  for pol in queue-depth round-robin numa; do
    ours --name=mp --filename="$FM" --iopolicy=$pol --rw=randrw --bs=4k --size=8m --iodepth=16 \
      --verify=crc32c --do_verify=1 --verify_backlog=64 > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio ($pol) exited non-zero"; }
    expect_ok "$SCRATCH/log"
    local a b; a=$(path_cmds "$SCRATCH/log" 1); b=$(path_cmds "$SCRATCH/log" 2)
    grep '^nvmeof: path' "$SCRATCH/log"
    case $pol in
      numa) [ "$a" -gt 0 ] && [ "$b" = 0 ] || fail "numa without NUMA nodes: path 1 $a, path 2 $b (the first path only)" ;;
      round-robin) [ "$a" -gt 0 ] && [ $((a - b)) -le 16 ] && [ $((b - a)) -le 16 ] || fail "round-robin: path 1 $a, path 2 $b" ;;
      *) [ "$a" -gt 0 ] && [ "$b" -gt 0 ] || fail "$pol: path 1 $a, path 2 $b commands" ;;
    esac
  done
}

# fio's syncs over several paths are Flushes, one each through one path
# (fio's sync before a verify pass failed the job with EOPNOTSUPP when it
# came): every command a path carried is a write or a flush, the writes
# 256, the flushes as many as fio counts syncs.
t_fio_two_paths_fsync_flushes() {
  ours --name=fs --filename="$FM" --iopolicy=round-robin --rw=write --bs=4k --size=1m --iodepth=4 \
    --fsync=8 > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio with fsync=8 over two paths failed"; }
  expect_ok "$SCRATCH/log"
  local a b syncs
  a=$(path_cmds "$SCRATCH/log" 1); b=$(path_cmds "$SCRATCH/log" 2)
  syncs=$(sed -n 's/.*issued rwts: total=0,256,0,\([0-9]*\) .*/\1/p' "$SCRATCH/log")
  grep -E '^nvmeof: path|issued rwts' "$SCRATCH/log"
  [ -n "$syncs" ] && [ "$syncs" -ge 32 ] || fail "fio issued ${syncs:-no} syncs with 256 writes, fsync=8"
  [ $((a + b)) = $((256 + syncs)) ] || fail "paths carried $a + $b commands for 256 writes and $syncs flushes"
}

# A two-path job at depth coalesces doorbells per path as a one-path job
# does (engine.sh: t_doorbells_coalesce_at_depth): ringing once per
# command, a system call each on Soft-RoCE, held two paths to 0.67 of one
# (BENCHMARKS.md, "One and two paths").
path_cd() { # log path -> "commands doorbells" of that path (end-of-job line)
  sed -n "s/^nvmeof: path $2 .* \([0-9]*\) command(s), \([0-9]*\) doorbell(s).*/\1 \2/p" "$1" | head -1
}
t_fio_two_paths_coalesce_doorbells() {
  local p c d
  # a count of reads (4096, round robin: 2048 a path), not a time: the
  # judgement does not depend on the speed
  ours --name=db --filename="$FM" --iopolicy=round-robin --thread=1 --rw=randread --bs=4k --iodepth=32 \
    --size=56m --io_size=16m > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio failed"; }
  expect_ok "$SCRATCH/log"
  for p in 1 2; do
    read -r c d < <(path_cd "$SCRATCH/log" $p)
    echo "    path $p: ${c:-?} commands, ${d:-?} doorbells"
    [ "${c:-0}" -ge 1024 ] || { grep '^nvmeof: path' "$SCRATCH/log"; fail "path $p: too few commands to judge (${c:-none})"; }
    [ $((d * 4)) -lt $((c * 3)) ] || fail "path $p: $d doorbells for $c commands: not coalesced"
  done
}

# quiet=1 keeps one summary line per job over several paths too (the
# per-path lines are left out)
t_fio_quiet_two_paths_one_line_per_job() {
  ours --name=q --filename="$FM" --thread=1 --numjobs=2 --rw=randread --bs=4k --size=8m --iodepth=8 \
    --number_ios=400 --quiet=1 > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio exited non-zero"; }
  expect_ok "$SCRATCH/log"
  grep '^nvmeof' "$SCRATCH/log" | sed 's/^/    /'
  ! grep -q '^nvmeof: path ' "$SCRATCH/log" || fail "per-path lines under quiet=1"
  for n in 1 2; do
    grep -qE "^nvmeof: job q \($n\): 2 path\(s\), [1-9][0-9]* command\(s\), [0-9]+ failover\(s\), [0-9]+ path error\(s\), [0-9]+ write\(s\) held, 0 abandoned$" \
      "$SCRATCH/log" || fail "no summary line for job q ($n)"
    [ "$(grep -c "^nvmeof: job q ($n): " "$SCRATCH/log")" = 1 ] || fail "not one line for job q ($n)"
  done
}

# A job's paths share one subnqn=; the second path's port does not offer
# that subsystem (port 1 has A and B, not M): the job fails on that path's
# connect, naming it, and runs no I/O. (Paths that reach two subsystems
# are refused by the library: target_mpath's paths_to_two_subsystems_refused.)
t_fio_fails_when_a_paths_port_lacks_the_subsystem() {
  local f="trtype=RDMA traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_MPORT traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_PORT subnqn=$NQN_M_ESC ns=1"
  ! ours --name=x --filename="$f" --rw=read --bs=4k --size=1m > "$SCRATCH/log" 2>&1 || fail "fio accepted it"
  grep -F "path 2 ($NVMEOF_TB_ADDR): connect to $NVMEOF_TB_ADDR port $NVMEOF_TB_PORT subsystem $NVMEOF_TB_NQN_M: " "$SCRATCH/log" |
    grep 'Connect Invalid Parameters' || { cat "$SCRATCH/log"; fail "no refused Connect of path 2 ($NVMEOF_TB_ADDR:$NVMEOF_TB_PORT) reported"; }
  ! grep -q 'READ: bw=[1-9]' "$SCRATCH/log" || fail "I/O ran"
}

# A step of path 1's (the engine's verbose trace, from the controller at
# its address): the events a fault's next step waits for, rather than a
# fixed sleep that races the job's runtime.
P1_STEP="^nvmeof: trace ${NVMEOF_TB_ADDR//./\\.} .*: queue [0-9]+: "

# Path 1's port goes away under verified writes until its loss is seen and
# a reconnect failed, and comes back; then path 2 turns ANA-inaccessible, so
# the job's last seconds can only run on path 1: the returned path must
# carry the I/O for fio to succeed. kato=2s: the writes lost with the port
# wait a hold of 1 s + 2 x KATO, 5 s (the default's 11 s needed a runtime of
# 18 s to end inside the job).
t_fio_port_removed_and_back_under_verify() {
  ours --name=mp --filename="$FM" --iopolicy=round-robin --reconnect_delay=500ms --ctrl_loss_tmo=30s --verbose=1 \
    --rw=randwrite --bs=4k --size=8m --iodepth=16 --verify=crc32c --verify_backlog=32 --kato=2s \
    --time_based --runtime=14 > "$SCRATCH/log" 2>&1 &
  local pid=$! rc=0
  wait_connected "$SCRATCH/log" $pid
  tb mpath-down 1
  # the outage: until the loss was seen and a reconnect failed
  wait_log "$SCRATCH/log" $pid "${P1_STEP}reconnect failed" 1 "a failed reconnect of path 1" ||
    { kill $pid; fail "path 1's outage was not seen while the job ran"; }
  tb mpath-up 1
  # at once: I/O that finds path 1 still reconnecting waits for it
  kill -0 $pid 2> /dev/null || fail "the job ended before path 2 turned inaccessible"
  tb ana 2 inaccessible
  wait $pid || rc=$?
  tb ana 2 optimized
  [ $rc = 0 ] || { tail -30 "$SCRATCH/log"; fail "fio failed across the port's removal and return (exit $rc)"; }
  expect_ok "$SCRATCH/log"
  grep '^nvmeof: path' "$SCRATCH/log"
  # The loss reached the job, as a loss of its own path. Whether its
  # commands failed over is up to nvmet: it completes what is in flight
  # before it tears a removed port's queues down, so the loss may carry
  # none (then nothing fails over).
  grep -q '^nvmeof: path 1 loss 1 (queue pair [0-9]*): [0-9]* command(s)' "$SCRATCH/log" ||
    fail "the job saw no loss of path 1"
  grep -q '^nvmeof: path 2 .*: ANA inaccessible' "$SCRATCH/log" || fail "path 2 never turned inaccessible for the job"
}

# A verifying two-path randrw job through two losses of port 1 (with
# reconnect) and ANA flips of both paths: the job succeeds with zero verify
# errors and path 1 was lost twice. What it checks is that failover loses
# and corrupts nothing on this target; not the quiesce-time hold of writes
# in flight on a lost path: nvmet waits for in-flight commands when it
# tears a queue down, so a write re-issued at once is never overtaken here,
# and the job passes without the hold too. The hold is checked by the unit
# tests (test_mpathio.c, test_queue.c) and by the injected loss below,
# whose test requires held writes. kato=2s: each loss's writes wait a
# hold of 1 s + 2 x KATO, 5 s (the default's 11 s made the two losses and
# their flips last about as long as the job's 28 s). The job ends when the
# last flip's seconds are over (fio's trigger file; its state file goes to
# SCRATCH), its runtime only the bound.
t_fio_two_paths_randrw_verifies_across_two_losses_and_ana_flips() {
  ours --name=mp --filename="$FM" --iopolicy=round-robin --reconnect_delay=300ms --ctrl_loss_tmo=30s --verbose=1 \
    --rw=randrw --bs=4k --size=8m --iodepth=16 --verify=crc32c --verify_backlog=32 --kato=2s \
    --trigger-file="$SCRATCH/stop" --aux-path="$SCRATCH" --time_based --runtime=40 > "$SCRATCH/log" 2>&1 &
  local pid=$! k nf nl
  wait_connected "$SCRATCH/log" $pid
  kill -0 $pid 2>/dev/null || { cat "$SCRATCH/log"; fail "fio ended before the first loss"; }
  for k in 1 2; do
    # each loss lasts until it was seen (a reconnect failed), and I/O goes
    # on until path 1 is back (an I/O queue live again)
    nf=$(grep -cE "${P1_STEP}reconnect failed" "$SCRATCH/log" || true) # none yet: grep says 0, exits 1
    nl=$(grep -cE "${P1_STEP}queue state: live" "$SCRATCH/log" || true)
    tb mpath-down 1
    wait_log "$SCRATCH/log" $pid "${P1_STEP}reconnect failed" $((nf + 1)) "loss $k of path 1 was seen" ||
      { kill $pid; fail "loss $k of path 1 not seen while the job ran"; }
    tb mpath-up 1
    wait_log "$SCRATCH/log" $pid "${P1_STEP}queue state: live" $((nl + 1)) "path 1 was back after loss $k" ||
      { kill $pid; fail "path 1 not back after loss $k while the job ran"; }
    tb ana 2 inaccessible; sleep 1; tb ana 1 inaccessible; sleep 0.2; tb ana 2 optimized; sleep 1
    tb ana 1 optimized; sleep 2
  done
  touch "$SCRATCH/stop"
  local rc=0
  wait $pid || rc=$?
  tb mpath-up 1; tb ana 1 optimized; tb ana 2 optimized
  [ $rc = 0 ] || { tail -30 "$SCRATCH/log"; fail "fio failed across port losses and ANA flips"; }
  expect_ok "$SCRATCH/log"
  grep '^nvmeof: path' "$SCRATCH/log"
  grep -q '^nvmeof: path 1 loss 2 ' "$SCRATCH/log" || fail "path 1 was not lost twice (did it reconnect in between?)"
  # the flips reached the job: each path's state changed at least twice
  # after the first (events may fold the 0.2 s step into one)
  local p n
  for p in 1 2; do
    n=$(sed -n "s/^nvmeof: path $p .* ANA [a-z-]*, \([0-9]*\) ANA change(s).*/\1/p" "$SCRATCH/log" | head -1)
    [ "${n:-0}" -ge 3 ] || fail "path $p saw ${n:-no} ANA change(s)"
  done
}

# Namespaces 1 and 2 of the subsystem, each multipathed over the same two
# controllers, as two files of one verifying job; port 1 goes and comes
# back under both. kato=2s: the writes lost with the port wait a hold of
# 1 s + 2 x KATO, 5 s, well inside the 9 s job (the default's 11 s needed 12).
t_fio_two_namespaces_in_one_job_get_a_multipath_each_and_verify_across_a_loss() {
  local fm2="${FM% ns=1} ns=2" n
  # ns 2's part of the job zeroed first: afterwards it must hold what the
  # job wrote there (not the other file's namespace)
  "$T" write "${P1[@]}" --namespace-id=2 --start-block=0 --block-count=128 --data=/dev/zero || fail "zeroing failed"
  ours --name=two --filename="$FM:$fm2" --iopolicy=round-robin --reconnect_delay=300ms --ctrl_loss_tmo=30s \
    --rw=randrw --bs=4k --size=16m --iodepth=16 --verify=crc32c --verify_backlog=32 --kato=2s \
    --time_based --runtime=9 > "$SCRATCH/log" 2>&1 &
  local pid=$! rc=0
  wait_connected "$SCRATCH/log" $pid
  kill -0 $pid 2>/dev/null || { cat "$SCRATCH/log"; fail "fio ended before the loss"; }
  tb mpath-down 1; sleep 2; tb mpath-up 1
  wait $pid || rc=$?
  tb mpath-up 1
  [ $rc = 0 ] || { tail -30 "$SCRATCH/log"; fail "fio failed with two multipath files (exit $rc)"; }
  expect_ok "$SCRATCH/log"
  grep '^nvmeof: path [12] [^l]' "$SCRATCH/log"
  n=$(grep -c '^nvmeof: path 1 [^l].*ANA' "$SCRATCH/log")
  [ "$n" = 2 ] || fail "$n multipath(s) reported, not one per namespace"
  grep -q '^nvmeof: path 1 loss 1 ' "$SCRATCH/log" || fail "the port's loss reached neither file's queues"
  "$T" read "${P1[@]}" --namespace-id=2 --start-block=0 --block-count=128 --data="$SCRATCH/ns2" || fail "read failed"
  [ "$(tr -d '\0' < "$SCRATCH/ns2" | head -c 1 | wc -c)" = 1 ] || fail "namespace 2 holds nothing the job wrote"
}

# One job, a single-path file (ns 2) and a multipath file (ns 1) at QD1
# with sleeping waits; file by file (file_service_type=sequential), so the
# multipath file idles while the single-path one is read: a wait must sleep
# on the single-path file's queue too, not only on the multipath's, or each
# of its reads waits out the engine's 1 s slice. 100 reads in 3 s is a
# generous floor (each takes well under 10 ms here; sleeping on the
# multipath's channels alone allows a few dozen).
t_fio_single_path_file_beside_a_multipath_one_waits_out_no_slice() {
  local single="trtype=RDMA traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_MPORT subnqn=$NQN_M_ESC ns=2" n
  ours --name=mixed --filename="$single:$FM" --file_service_type=sequential --rw=randread --bs=4k \
    --size=64m --iodepth=1 --wait=sleep \
    --time_based --runtime=3 > "$SCRATCH/log" 2>&1 || { tail -30 "$SCRATCH/log"; fail "fio failed"; }
  expect_ok "$SCRATCH/log"
  n=$(sed -n 's/.*issued rwts: total=\([0-9]*\).*/\1/p' "$SCRATCH/log" | head -1)
  echo "    $n reads in 3 s"
  [ "${n:-0}" -gt 100 ] || { tail -30 "$SCRATCH/log"; fail "only ${n:-0} reads in 3 s: a file's completions waited for a slice"; }
}

# A path loss injected by the engine (path_loss=: the transport's
# disconnect of path 1's queue pairs, the target untouched) under random
# writes: no error, and the end-of-job lines measure it (detection to first
# re-issue and first completion elsewhere, the writes' hold, the
# failed-over commands' latency percentiles). Writes only, so that what is
# in flight at the loss includes writes to hold (a verifying job's read-back
# bursts could fill the queue at that moment; data across a loss is the
# verifying test's above). A one-path job refuses it.
# The hold is what quiesce_time= and kato= make it (nvmet reports no CQT):
# the longer of 1.5 s and CQT, plus two keep-alive timeouts of 1 s, 3.5 s;
# the end-of-job lines measure it from the loss to the re-issue, which the
# next poll after the hold makes (1 s of slack for a slow guest).
t_fio_injected_path_loss_is_measured() {
  ours --name=mp --filename="$FM" --iopolicy=round-robin --rw=randwrite --bs=4k --size=8m --iodepth=32 \
    --quiesce_time=1500ms --kato=1s --time_based --runtime=7 --path_loss=1@2000 > "$SCRATCH/log" 2>&1 ||
    { tail -30 "$SCRATCH/log"; fail "fio failed across the injected loss"; }
  expect_ok "$SCRATCH/log"
  grep '^nvmeof: path\|^nvmeof: queue pair .* failed over' "$SCRATCH/log"
  grep -q "^nvmeof: path_loss: path 1's queue pairs disconnected" "$SCRATCH/log" || fail "no injection reported"
  # a lost connection may still run its writes: they waited the quiesce time
  grep -q '^nvmeof: path 1 .* [1-9][0-9]* write(s) held for the quiesce time (longest [1-9]' "$SCRATCH/log" ||
    fail "path 1 shows no write held for the quiesce time"
  local hold
  hold=$(sed -n 's/^nvmeof: path 1 loss 1 .*writes held \([0-9]*\) ms$/\1/p' "$SCRATCH/log" | sort -n | tail -1)
  echo "longest hold: ${hold:-none} ms (quiesce_time 1.5 s + 2 x kato 1 s = 3.5 s)"
  [ -n "$hold" ] && [ "$hold" -ge 3500 ] && [ "$hold" -lt 4500 ] ||
    fail "the hold is ${hold:-none} ms, not 3500 ms (+ up to 1 s)"
  # every queue pair saw the loss; those with commands out measured their re-issue
  grep -q '^nvmeof: path 1 loss 1 (queue pair [0-9]*): [1-9][0-9]* command(s); from detection, first re-issued on another path after [0-9][0-9]* ms, first completed there after [0-9][0-9]* ms' "$SCRATCH/log" ||
    fail "the loss is not measured"
  grep -q '^nvmeof: queue pair [0-9]*: [1-9][0-9]* command(s) failed over, clat percentiles (usec): 1.00th=\[' "$SCRATCH/log" ||
    fail "no latency line for the failed-over commands"
  local f1="trtype=RDMA traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_MPORT subnqn=$NQN_M_ESC ns=1"
  ! ours --name=x --filename="$f1" --rw=read --bs=4k --size=1m --path_loss=1@100 > "$SCRATCH/log" 2>&1 ||
    fail "a one-path job accepted path_loss="
  grep -q 'path_loss= needs several paths' "$SCRATCH/log" || { tail -5 "$SCRATCH/log"; fail "no clear refusal"; }
}

# One job over an RDMA path and a TCP path to subsystem M (ports 3 and 6:
# each path's trtype before its traddr): verified random I/O on both, the
# TCP path's queue pairs disconnected by the engine a moment in
# (path_loss=), the job passes and both paths carried commands.
t_fio_rdma_and_tcp_paths_verify_across_a_loss() {
  local f="trtype=RDMA traddr=$NVMEOF_TB_ADDR srcaddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_MPORT trtype=TCP traddr=$NVMEOF_TB_ADDR2 srcaddr=$NVMEOF_TB_ADDR2 subnqn=$NQN_M_ESC ns=1"
  ours --name=mixed --filename="$f" --iopolicy=round-robin --rw=randrw --bs=4k --size=8m --iodepth=16 \
    --verify=crc32c --verify_backlog=32 --time_based --runtime=5 --path_loss=2@1500 > "$SCRATCH/log" 2>&1 ||
    { tail -30 "$SCRATCH/log"; fail "fio over RDMA and TCP paths failed"; }
  expect_ok "$SCRATCH/log"
  grep '^nvmeof: path [12] ' "$SCRATCH/log"
  grep -q "^nvmeof: path_loss: path 2's queue pairs disconnected" "$SCRATCH/log" || fail "no injection reported"
  grep -q "^nvmeof: path 1 .*(rxe0): .* [1-9][0-9]* command(s)" "$SCRATCH/log" || fail "path 1 (RDMA, rxe0) carried nothing"
  grep -q "^nvmeof: path 2 .*(tcp): .* [1-9][0-9]* command(s)" "$SCRATCH/log" || fail "path 2 (TCP) carried nothing"
}

# The job's NVMe/TCP options in a file of RDMA and TCP paths are the TCP
# path's: its digests are negotiated, and the RDMA path, which would refuse
# them, connects without them.
t_fio_mixed_paths_take_tcp_options_on_the_tcp_path() {
  local f="trtype=RDMA traddr=$NVMEOF_TB_ADDR srcaddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_MPORT trtype=TCP traddr=$NVMEOF_TB_ADDR2 srcaddr=$NVMEOF_TB_ADDR2 subnqn=$NQN_M_ESC ns=1"
  ours --name=mixo --filename="$f" --rw=read --bs=4k --size=1m --hdr_digest=1 --data_digest=1 --tcp_tos=0 \
    --verbose=1 > "$SCRATCH/log" 2>&1 || { grep -v trace "$SCRATCH/log" | tail -20; fail "fio with TCP options over RDMA and TCP paths failed"; }
  expect_ok "$SCRATCH/log"
  grep -m2 'ICResp:' "$SCRATCH/log"
  grep -q 'ICResp: .*header digest on, data digest on' "$SCRATCH/log" || fail "the TCP path did not negotiate the digests"
  grep -q "^nvmeof: path 1 .*(rxe0): .* [1-9][0-9]* command(s)" "$SCRATCH/log" || fail "path 1 (RDMA) carried nothing"
}

t_python_paths_write_read_back() {
  PYTHONPATH=python NVMEOF_LIB=$PWD/$B/libnvmeof.so python3 - <<'PY' || fail "python Paths failed"
import os, nvmeof
e = os.environ
nqn, port = e["NVMEOF_TB_NQN_M"], e["NVMEOF_TB_MPORT"]
a = nvmeof.Controller(e["NVMEOF_TB_ADDR"], nqn, port=port, source=e["NVMEOF_TB_ADDR"])
b = nvmeof.Controller(e["NVMEOF_TB_ADDR2"], nqn, port=port, source=e["NVMEOF_TB_ADDR2"])
with nvmeof.Paths([a, b], 1, iopolicy="round-robin") as p:
    data = os.urandom(16 * p.block_size)
    for i in range(4):
        p.write(8192 + 16 * i, data)
        assert p.read(8192 + 16 * i, 16) == data
    ps = p.paths()
    print("   ", ps)
    assert [x["hca"] for x in ps] == ["rxe0", "rxe1"], ps
    assert all(x["commands"] == 4 for x in ps), ps
    assert all(x["ana_state"] == "optimized" for x in ps), ps
a.close(); b.close()
PY
}

t_fio_both_ports_removed_fails_naming_the_paths() {
  ours --name=mp --filename="$FM" --rw=randread --bs=4k --size=8m --iodepth=8 \
    --time_based --runtime=60 > "$SCRATCH/log" 2>&1 &
  local pid=$!
  wait_connected "$SCRATCH/log" $pid
  tb mpath-down 1; tb mpath-down 2
  local rc=0
  wait $pid || rc=$?
  tb mpath-up 1; tb mpath-up 2
  [ $rc != 0 ] || { tail -20 "$SCRATCH/log"; fail "fio succeeded with both ports gone"; }
  grep -m1 'no usable path' "$SCRATCH/log" || { tail -20 "$SCRATCH/log"; fail "the error does not say no path was usable"; }
  grep 'no usable path' "$SCRATCH/log" | grep -q "$NVMEOF_TB_ADDR:.*$NVMEOF_TB_ADDR2:" || fail "the error does not name both paths"
}

# With two devices, what one could not show: srcaddr= picks the other HCA,
# and hca= refuses a connection that resolved to the wrong one.
t_srcaddr_picks_the_hca_and_hca_refuses_the_other() {
  local f2="trtype=RDMA traddr=$NVMEOF_TB_ADDR2 srcaddr=$NVMEOF_TB_ADDR2 trsvcid=$NVMEOF_TB_MPORT subnqn=$NQN_M_ESC ns=1"
  ours --name=h --filename="$f2" --hca=rxe1 --rw=read --bs=4k --size=1m > "$SCRATCH/log" 2>&1 ||
    { tail -20 "$SCRATCH/log"; fail "path 2 with hca=rxe1 failed"; }
  grep -q 'err= 0' "$SCRATCH/log" || fail "no clean run through rxe1"
  ! ours --name=h --filename="$f2" --hca=rxe0 --rw=read --bs=4k --size=1m > "$SCRATCH/log" 2>&1 ||
    fail "hca=rxe0 accepted a connection through rxe1"
  grep -m1 'resolved to HCA rxe1, not the expected rxe0' "$SCRATCH/log" | sed 's/^/    /' || true # shown only; the checks below say what is missing
  grep -q 'resolved to HCA rxe1, not the expected rxe0' "$SCRATCH/log" || { tail -10 "$SCRATCH/log"; fail "no clear refusal"; }
}

# The QP-scaling sweep over both HCAs: jobs/sweep's PATHS gives each job a
# queue pair on each path, so every job's commands go through rxe0 and rxe1.
# Four jobs in thread mode share each path's controller and so one
# multipath (its events go to one owner): before they did, each made its
# own, and the run crashed.
t_qp_sweep_over_both_hcas() {
  local o=$SCRATCH/mpsweep nj p f lines
  PATHS="$NVMEOF_TB_ADDR/$NVMEOF_TB_ADDR $NVMEOF_TB_ADDR2/$NVMEOF_TB_ADDR2" TRSVCID=$NVMEOF_TB_MPORT \
    SUBNQN=$NVMEOF_TB_NQN_M ENGINE=$ENG REGION=8m OFFSET_INCREMENT=8m RUNTIME=1 RAMP=0 \
    timeout 300 jobs/sweep --initiator ours --reps 1 --no-plot --out "$o" qp-scaling.fio NUMJOBS=1,4 BS=4k \
    > "$SCRATCH/log" 2>&1 || { tail -30 "$SCRATCH/log"; tail -n 15 "$o"/runs/*.err; fail "the sweep failed"; }
  [ "$(grep -c '^ours,.*,ok,' "$o/results.csv")" = 2 ] || { cat "$o/results.csv"; fail "not two successful runs"; }
  for nj in 1 4; do
    f=$(ls "$o"/runs/NUMJOBS-${nj}_*.err) || fail "no log of the $nj-job run"
    for p in 1 2; do
      lines=$(grep "^nvmeof: path $p .*(rxe$((p - 1))): .* [1-9][0-9]* command(s)" "$f" | wc -l)
      [ "$lines" = "$nj" ] || { grep '^nvmeof: path' "$f"; fail "$nj jobs: $lines of them carried commands on path $p (rxe$((p - 1)))"; }
    done
    echo "    $nj job(s): every job carried commands on rxe0 and rxe1"
  done
}

# Jobs of one process share the multipath of their paths, so they share its
# policy: a second job asking for another is refused, and the refusal's
# cleanup (while the first job runs on) neither crashes nor stops the first.
t_fio_jobs_sharing_paths_must_agree_on_iopolicy() {
  local rc
  ours --thread=1 --filename="$FM" --rw=randread --bs=4k --size=8m --iodepth=4 --time_based --runtime=3 \
    --name=a --iopolicy=round-robin --name=b --iopolicy=queue-depth > "$SCRATCH/log" 2>&1 && rc=0 || rc=$?
  grep -m1 'already driven by another job with iopolicy' "$SCRATCH/log" | sed 's/^/    /' || true # shown only; the checks below say what is missing
  [ $rc -ne 0 ] && [ $rc -lt 128 ] || { tail -20 "$SCRATCH/log"; fail "fio exited $rc: expected a refusal, not success or a signal"; }
  grep -qE 'already driven by another job with iopolicy (round-robin|queue-depth)' "$SCRATCH/log" || { tail -20 "$SCRATCH/log"; fail "no reason given"; }
}

t_ana_log_agrees_with_nvme_cli() {
  tb ana 1 non-optimized   # P1 is port 3: path 1
  "$T" ana-log "${P1[@]}" -o json > "$SCRATCH/ours.json" || { tb ana 1 optimized; fail "ana-log failed"; }
  "$T" ana-log "${P1[@]}" > "$SCRATCH/ours.txt"
  timeout 30 nvme connect -t rdma -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_MPORT" -n "$NVMEOF_TB_NQN_M" >&2
  local dev; dev=$(kdev_find "$NVMEOF_TB_NQN_M" 1) || { tb ana 1 optimized; tb kdisconnect "$NVMEOF_TB_NQN_M"; fail "no kernel device"; }
  local ctrl=/dev/$(ls /sys/class/nvme-subsystem/*/ | grep -m1 -E '^nvme[0-9]+$')
  for c in /sys/class/nvme-subsystem/*; do
    [ "$(cat $c/subsysnqn)" = "$NVMEOF_TB_NQN_M" ] && ctrl=/dev/$(ls "$c" | grep -m1 -E '^nvme[0-9]+$')
  done
  nvme ana-log "$ctrl" -o json > "$SCRATCH/cli.json" 2>/dev/null
  tb kdisconnect "$NVMEOF_TB_NQN_M"
  tb ana 1 optimized
  cat "$SCRATCH/ours.txt"
  python3 - "$SCRATCH/ours.json" "$SCRATCH/cli.json" <<'PY' || fail "ana-log differs from nvme-cli's"
import json, sys
o, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
key = "ANA DESC LIST "
assert o["ngrps"] == t["ngrps"], (o["ngrps"], t["ngrps"])
def groups(d): return {g["grpid"]: g for g in d[key]}
og, tg = groups(o), groups(t)
assert set(og) == set(tg), (sorted(og), sorted(tg))
for gid, g in og.items():
    for f in ("nnsids", "state"):
        assert g[f] == tg[gid][f], (gid, f, g[f], tg[gid][f])
    assert [n["nsid"] for n in g["NSIDS"]] == [n["nsid"] for n in tg[gid]["NSIDS"]]
assert og[2]["state"] == "non-optimized" and og[2]["NSIDS"] == [{"nsid": 1}, {"nsid": 2}], og[2]
print("    %d groups agree with nvme-cli (group 2 non-optimized, NSIDs 1 and 2)" % len(og))
PY
}

t_kernel_multipath_reads_what_we_wrote() {
  head -c $((4096 * 256)) /dev/urandom > "$SCRATCH/in"   # M's namespace has 4 KiB blocks
  "$T" write "${P1[@]}" --namespace-id=1 --start-block=4096 --data="$SCRATCH/in" || fail "write failed"
  timeout 30 nvme connect -t rdma -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_MPORT" -n "$NVMEOF_TB_NQN_M" >&2
  timeout 30 nvme connect -t rdma -a "$NVMEOF_TB_ADDR2" -s "$NVMEOF_TB_MPORT" -n "$NVMEOF_TB_NQN_M" >&2
  local dev n; dev=$(kdev_find "$NVMEOF_TB_NQN_M" 1) || { tb kdisconnect "$NVMEOF_TB_NQN_M"; fail "no kernel device"; }
  for c in /sys/class/nvme-subsystem/*; do
    [ "$(cat $c/subsysnqn)" = "$NVMEOF_TB_NQN_M" ] && n=$(ls "$c" | grep -cE '^nvme[0-9]+$')
  done
  dd if="$dev" bs=4096 skip=4096 count=256 iflag=direct of="$SCRATCH/out" status=none
  tb kdisconnect "$NVMEOF_TB_NQN_M"
  echo "    kernel: $dev over $n controllers"
  [ "$n" = 2 ] || fail "the kernel host has $n controllers of subsystem M, not 2"
  cmp "$SCRATCH/in" "$SCRATCH/out" || fail "the kernel's multipath device reads other data"
}

# The Python package's Paths over an RDMA and a TCP controller of subsystem M
t_python_paths_over_rdma_and_tcp_read_back_and_both_carry() {
  PYTHONPATH=python NVMEOF_LIB=$PWD/$B/libnvmeof.so python3 - <<'PY' || fail "python Paths over RDMA and TCP failed"
import os, nvmeof
e = os.environ
nqn, port = e["NVMEOF_TB_NQN_M"], e["NVMEOF_TB_MPORT"]
a = nvmeof.Controller(e["NVMEOF_TB_ADDR"], nqn, port=port, source=e["NVMEOF_TB_ADDR"])
b = nvmeof.Controller(e["NVMEOF_TB_ADDR2"], nqn, port=port, source=e["NVMEOF_TB_ADDR2"], transport="tcp")
with nvmeof.Paths([a, b], 1, iopolicy="round-robin") as p:
    data = os.urandom(16 * p.block_size)
    for i in range(4):
        p.write(12288 + 16 * i, data)
        assert p.read(12288 + 16 * i, 16) == data
    ps = p.paths()
    print("   ", ps)
    assert [x["hca"] for x in ps] == ["rxe0", "tcp"], ps
    assert all(x["commands"] == 4 for x in ps), ps
a.close(); b.close()
PY
}

source "$(dirname "$0")/../../jobs/kdev.sh"
run_tests "$@"
