#!/bin/bash
# IN-GUEST: every real-target suite in one boot; exits non-zero if any failed.
# NVMEOF_BUILD selects the build (build/out, or build/san for the sanitizers).
cd "$(dirname "$0")/../.."
B=${NVMEOF_BUILD:-build/out}
rc=0
run() { echo "=== $*"; "$@" || rc=1; }
run bash tests/target/smoke.sh
run "$B/tests/target_core"
run bash tests/target/crosscheck.sh
exit $rc
