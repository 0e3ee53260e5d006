# Shell test harness for real-target suites: each t_* function is one test,
# run in a subshell; `fail MSG` ends it. Prints "N passed, N failed".
set -uo pipefail
SCRATCH=$(mktemp -d /tmp/nvmeof-test.XXXXXX)
fail() { echo "    FAIL: $*" >&2; exit 1; }
job_ctrls() { # engine log -> "CNTLID QID" per queue pair of a job
  sed -n 's/^nvmeof: job .*: controller CNTLID \([0-9]*\), I\/O queue \([0-9]*\),.*/\1 \2/p' "$1"
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
