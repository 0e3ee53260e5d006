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
# wait_connected LOG PID: until the fio job PID has connected its queue pairs
# (the engine's "controller CNTLID" line in LOG), at most 60 s, then 2 s of
# I/O. A fixed sleep before a fault was not enough for a sanitized fio on a
# busy guest: the fault came before the first connect.
wait_connected() {
  local i
  for ((i = 0; i < 300; i++)); do
    grep -q 'controller CNTLID' "$1" 2>/dev/null && break
    kill -0 "$2" 2>/dev/null || return 0
    sleep 0.2
  done
  sleep 2
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
    fi
    printf '%-6s %s (%.1fs)\n' "$r" "$t" "$(echo "$(date +%s.%N) - $s" | bc)"
  done
  echo "$(basename "$0" .sh): $pass passed, $nfail failed, $nskip skipped"
  rm -rf "$SCRATCH"
  [ $nfail = 0 ]
}
