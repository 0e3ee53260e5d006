# Shell test harness for real-target suites: each t_* function is one test,
# run in a subshell under `set -e` (an unchecked command that fails ends the
# test as a failure); `fail MSG` ends it failed, `skip REASON` skipped.
# Prints "N passed, N failed, N skipped". Inside the test bed (NVMEOF_TB_RUN
# set) everything a test needs is present, so a skip there is a failure.
#
# Each test has a time limit of its own, TEST_LIMIT seconds (from
# NVMEOF_TEST_LIMIT; a suite may set TEST_LIMIT after sourcing this file):
# a test that hangs (blocked in the kernel, on a target that went away) is
# ended with everything it started and fails as TIMEOUT, naming itself, and
# the suite goes on, instead of the whole suite being killed at its limit
# (tests/suite) with the hanging test unnamed. 300 s is over seven times
# the longest test (under 40 s).
set -uo pipefail
SCRATCH=$(mktemp -d /tmp/nvmeof-test.XXXXXX)
TEST_LIMIT=${NVMEOF_TEST_LIMIT:-300}
fail() { echo "    FAIL: $*" >&2; exit 1; }
SKIP_RC=77
skip() { echo "    SKIP: $*" >&2; exit $SKIP_RC; }
job_ctrls() { # engine log -> "CNTLID QID" per queue pair of a job
  sed -n 's/^nvmeof: job .*: controller CNTLID \([0-9]*\), I\/O queue \([0-9]*\),.*/\1 \2/p' "$1"
}
# rdma_pkts: packets sent by every RDMA device of the guest (Soft-RoCE
# carries both the initiator's and the target's side).
rdma_pkts() {
  local f n=0
  for f in /sys/class/infiniband/*/ports/1/hw_counters/sent_pkts; do
    [ -e "$f" ] || fail "no RDMA packet counters ($f)"
    n=$((n + $(cat "$f")))
  done
  echo $n
}
# tcp_segs: TCP segments the guest sent (both ends of NVMe/TCP, loopback)
tcp_segs() {
  awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "OutSegs") c = i; h = 1 } else print $c }' /proc/net/snmp
}
# io_pkts: packets of the transport the suite runs over (NVMEOF_TB_TRTYPE)
io_pkts() { if [ "${NVMEOF_TB_TRTYPE:-}" = tcp ]; then tcp_segs; else rdma_pkts; fi; }
# wait_connected LOG PID: until the fio job PID has connected its queue pairs
# (the engine's "controller CNTLID" line in LOG), at most 60 s, then until
# its I/O is under way: 1000 more RDMA packets, or TCP segments over TCP
# (some hundred commands; an
# idle association sends a few keep-alives a second), at most 30 s. A fixed
# sleep before a fault was not enough for a sanitized fio on a busy guest:
# the fault came before the first connect. Fails, saying why, when the job
# ended before its I/O was under way or did not connect within 60 s: a
# fault then would hit nothing. I/O slower than that after a connect goes on.
wait_connected() {
  local i p0
  for ((i = 0; i < 300; i++)); do
    grep -q 'controller CNTLID' "$1" 2>/dev/null && break
    kill -0 "$2" 2>/dev/null || { echo "    wait_connected: the job ended before it connected" >&2; return 1; }
    sleep 0.2
  done
  grep -q 'controller CNTLID' "$1" 2>/dev/null ||
    { echo "    wait_connected: the job did not connect within 60 s" >&2; return 1; }
  p0=$(io_pkts)
  for ((i = 0; i < 300; i++)); do
    [ $(($(io_pkts) - p0)) -ge 1000 ] && return 0
    kill -0 "$2" 2>/dev/null || { echo "    wait_connected: the job ended before its I/O was under way" >&2; return 1; }
    sleep 0.1
  done
  return 0
}
# wait_log LOG PID PATTERN N WHAT: until LOG holds N lines matching PATTERN
# (grep -E), at most 60 s: the event a fault's next step waits for, instead
# of a fixed sleep that races the job's runtime. Fails, naming WHAT, when
# the job PID ended first or the time passed.
wait_log() {
  local i
  for ((i = 0; i < 600; i++)); do
    [ "$(grep -cE "$3" "$1" 2> /dev/null)" -ge "$4" ] && return 0
    kill -0 "$2" 2> /dev/null || { echo "    wait_log: the job ended before $5" >&2; return 1; }
    sleep 0.1
  done
  echo "    wait_log: no $5 within 60 s" >&2
  return 1
}
# After a failed test, the target as the test bed made it: a test that
# stopped half-way may have left a port, path, link or namespace away, and
# every test after it would fail for that.
tb_restore() {
  command -v tb > /dev/null || return 0
  { tb link-up; tb port-up rdma; tb port-up tcp; tb mpath-up 1; tb mpath-up 2; tb heal 1; tb heal 2; tb heal 3; tb ana 1 optimized
    tb ana 2 optimized; tb ns-enable "$NVMEOF_TB_NQN_A" 1; tb ns-enable "$NVMEOF_TB_NQN_A" 2
    tb host-allow "$NVMEOF_TB_NQN_A"; } > /dev/null 2>&1 || true
}
# children_of PID...: the processes whose parent is one of PID (read from
# /proc: the test bed has no ps)
children_of() {
  local f line rest ppid
  for f in /proc/[0-9]*/stat; do
    read -r line 2> /dev/null < "$f" || continue
    rest=${line##*) } # "STATE PPID ...": the name before it may hold anything
    ppid=${rest#* }
    ppid=${ppid%% *}
    [[ " $* " == *" $ppid "* ]] && echo "${line%% *}"
  done
  return 0
}
alive() { # PID: running or stopped, not a zombie
  local s
  read -r s 2> /dev/null < "/proc/$1/stat" || return 1
  s=${s##*) }
  [ "${s%% *}" != Z ]
}
# end_tree PID: PID and every process below it, each stopped as it is found
# (so none starts another meanwhile), then sent TERM; KILL for what is
# still there 5 s later, and up to 5 s more for it to be gone. PID need not
# be our child (a daemon a start script left behind): it returns once the
# processes are gone, so what they held (a port, a lock, a socket) is free.
# A process blocked in the kernel goes when it returns from there.
end_tree() {
  local all=" $1 " new p i left=""
  kill -STOP "$1" 2> /dev/null || return 0
  while :; do
    new=""
    for p in $(children_of $all); do
      [[ "$all" == *" $p "* ]] && continue
      kill -STOP "$p" 2> /dev/null && new+="$p "
    done
    [ -n "$new" ] || break
    all+=$new
  done
  for p in $all; do kill -TERM "$p" 2> /dev/null; kill -CONT "$p" 2> /dev/null; done
  for ((i = 0; i < 50; i++)); do
    left=""
    for p in $all; do alive "$p" && left+="$p "; done
    [ -n "$left" ] || return 0
    sleep 0.1
  done
  for p in $left; do kill -KILL "$p" 2> /dev/null; done
  for ((i = 0; i < 50; i++)); do
    alive_any $left || return 0
    sleep 0.1
  done
  return 0
}
alive_any() { local p; for p; do alive "$p" && return 0; done; return 1; }
_TPID=""
run_tests() {
  local pass=0 nfail=0 nskip=0 t names rc r wpid
  local timed_out=$SCRATCH.timed-out
  names=$(declare -F | awk '$3 ~ /^t_/{print $3}')
  # --except NAME...: every test but those (a build that adds nothing to
  # what a test checks, such as a wait measured under ASan, leaves it out)
  if [ "${1:-}" = --except ]; then
    shift
    local x
    for x in "$@"; do
      grep -qx "$x" <<< "$names" || { echo "run_tests --except: no test $x" >&2; return 1; }
      names=$(grep -vx "$x" <<< "$names")
    done
  elif [ $# -gt 0 ]; then
    names="$*"
  fi
  # killed at the suite's limit: the running test's processes go too (a
  # `timeout CMD` inside a test is a process group of its own, which a
  # kill of the suite's group does not reach)
  trap '[ -z "$_TPID" ] || end_tree "$_TPID"; exit 143' TERM INT
  for t in $names; do
    local s=$(date +%s.%N)
    rm -f "$timed_out"
    # In the background, waited for: bash would run no trap (the suite's
    # TERM) until a foreground test ended. The test's own shell, sent TERM
    # with the suite's process group, ends only when its command does, so
    # end_tree still finds what that command started. Not
    # `if ( set -e; "$t" )`: bash ignores set -e anywhere inside an if
    # condition, subshell included, so no unchecked command would count.
    ( trap 'exit 143' TERM; set -e; "$t" ) &
    _TPID=$!
    # The test's limit: a watchdog ends the test's whole tree unless a
    # line on a pipe of this test's own stops it first. Not a signal: a
    # TERM that came as the watchdog started its sleep was lost, and then
    # a test that had passed counted as a TIMEOUT, and the sleep held the
    # suite's output open. (A pipe opened read-write: nobody's exit closes it.)
    local cfd
    exec {cfd}<> <(:)
    ( read -r -t "$TEST_LIMIT" -u "$cfd" _ && exit 0
      : > "$timed_out"
      end_tree "$_TPID" ) &
    wpid=$!
    wait "$_TPID" 2> /dev/null && rc=0 || rc=$?
    echo stop >&"$cfd"
    wait "$wpid" 2> /dev/null || true
    exec {cfd}>&-
    _TPID=""
    if [ -e "$timed_out" ]; then
      echo "    TIMEOUT: $t ran past its limit of ${TEST_LIMIT}s: ended, with everything it started" >&2
      nfail=$((nfail + 1)); r=TIMEOUT
      tb_restore
    elif [ $rc = 0 ]; then pass=$((pass + 1)); r=ok
    elif [ $rc = $SKIP_RC ] && [ -z "${NVMEOF_TB_RUN:-}" ]; then nskip=$((nskip + 1)); r=skip
    else
      [ $rc = $SKIP_RC ] && echo "    (a skip inside the test bed, where everything is present, fails)" >&2
      nfail=$((nfail + 1)); r=FAILED
      tb_restore
    fi
    printf '%-6s %s (%.1fs)\n' "$r" "$t" "$(echo "$(date +%s.%N) - $s" | bc)"
  done
  trap - TERM INT
  echo "$(basename "$0" .sh): $pass passed, $nfail failed, $nskip skipped"
  rm -rf "$SCRATCH" "$timed_out"
  [ $nfail = 0 ]
}
