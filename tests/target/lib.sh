# Shell test harness for real-target suites: each t_* function is one test,
# run in a subshell; `fail MSG` ends it. Prints "N passed, N failed".
set -uo pipefail
SCRATCH=$(mktemp -d /tmp/nvmeof-test.XXXXXX)
fail() { echo "    FAIL: $*" >&2; exit 1; }
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
  local pass=0 nfail=0 t names
  names=$(declare -F | awk '$3 ~ /^t_/{print $3}')
  [ $# -gt 0 ] && names="$*"
  for t in $names; do
    local s=$(date +%s.%N)
    if ( set -e; "$t" ); then pass=$((pass + 1)); r=ok; else nfail=$((nfail + 1)); r=FAILED; fi
    printf '%-6s %s (%.1fs)\n' "$r" "$t" "$(echo "$(date +%s.%N) - $s" | bc)"
  done
  echo "$(basename "$0" .sh): $pass passed, $nfail failed"
  rm -rf "$SCRATCH"
  [ $nfail = 0 ]
}
