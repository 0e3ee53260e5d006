# Sourced by the boots' runners (run-all.sh, run-612.sh, run-placement.sh):
# run NAME LIMIT CMD... runs one suite under tests/suite with its limit and
# sets rc=1 when it fails; with NVMEOF_TB_DRY set, each suite's name and
# command are printed, nothing run (tests/unit/harness.sh checks the lists).
DRY=${NVMEOF_TB_DRY:-}
rc=0
run() {
  local n=$1 l=$2
  shift 2
  if [ -n "$DRY" ]; then echo "suite $n: $*"; return; fi
  echo "=== $n: $*"
  tests/suite "$n" "$l" "$@" || rc=1
}
