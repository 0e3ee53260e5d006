# Shell test harness for real-target suites: each t_* function is one test,
# run in a subshell under `set -e` (an unchecked command that fails ends the
# test as a failure); `fail MSG` ends it failed, `skip REASON` skipped.
# Prints "N passed, N failed, N skipped". Inside the test bed (NVMEOF_TB_RUN
# set) everything a test needs is present, so a skip there is a failure.
set -uo pipefail
SCRATCH=$(mktemp -d /tmp/nvmeof-test.XXXXXX)
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
# wait_connected LOG PID: until the fio job PID has connected its queue pairs
# (the engine's "controller CNTLID" line in LOG), at most 60 s, then until
# its I/O is under way: 1000 more RDMA packets (some hundred commands; an
# idle association sends a few keep-alives a second), at most 30 s. A fixed
# sleep before a fault was not enough for a sanitized fio on a busy guest:
# the fault came before the first connect.
wait_connected() {
  local i p0
  for ((i = 0; i < 300; i++)); do
    grep -q 'controller CNTLID' "$1" 2>/dev/null && break
    kill -0 "$2" 2>/dev/null || return 0
    sleep 0.2
  done
  p0=$(rdma_pkts)
  for ((i = 0; i < 300; i++)); do
    [ $(($(rdma_pkts) - p0)) -ge 1000 ] && return 0
    kill -0 "$2" 2>/dev/null || return 0
    sleep 0.1
  done
}
# After a failed test, the target as the test bed made it: a test that
# stopped half-way may have left a port, path, link or namespace away, and
# every test after it would fail for that.
tb_restore() {
  command -v tb > /dev/null || return 0
  { tb link-up; tb port-up rdma; tb port-up tcp; tb mpath-up 1; tb mpath-up 2; tb ana 1 optimized
    tb ana 2 optimized; tb ns-enable "$NVMEOF_TB_NQN_A" 1; tb ns-enable "$NVMEOF_TB_NQN_A" 2
    tb host-allow "$NVMEOF_TB_NQN_A"; } > /dev/null 2>&1 || true
}
run_tests() {
  local pass=0 nfail=0 nskip=0 t names rc r
  names=$(declare -F | awk '$3 ~ /^t_/{print $3}')
  [ $# -gt 0 ] && names="$*"
  for t in $names; do
    local s=$(date +%s.%N)
    # Not `if ( set -e; "$t" )`: bash ignores set -e anywhere inside an if
    # condition, subshell included, so no unchecked command would count.
    ( set -e; "$t" ); rc=$?
    if [ $rc = 0 ]; then pass=$((pass + 1)); r=ok
    elif [ $rc = $SKIP_RC ] && [ -z "${NVMEOF_TB_RUN:-}" ]; then nskip=$((nskip + 1)); r=skip
    else
      [ $rc = $SKIP_RC ] && echo "    (a skip inside the test bed, where everything is present, fails)" >&2
      nfail=$((nfail + 1)); r=FAILED
      tb_restore
    fi
    printf '%-6s %s (%.1fs)\n' "$r" "$t" "$(echo "$(date +%s.%N) - $s" | bc)"
  done
  echo "$(basename "$0" .sh): $pass passed, $nfail failed, $nskip skipped"
  rm -rf "$SCRATCH"
  [ $nfail = 0 ]
}
