#!/bin/bash
# IN-GUEST: every real-target suite in one boot; exits non-zero if any failed.
# The core, cross-check and engine suites run twice: plain (build/out) and
# with ASan+UBSan (build/san); then the core suite once under valgrind.
cd "$(dirname "$0")/../.."
rc=0
run() { echo "=== $*"; "$@" || rc=1; }
run bash tests/target/smoke.sh
for B in build/out build/san; do
  export NVMEOF_BUILD=$B
  # fio is not instrumented: the sanitized engine needs the ASan runtime first
  [ $B = build/san ] && export NVMEOF_ASAN_RT=$(cc -print-file-name=libasan.so)
  run "$B/tests/target_core"
  run bash tests/target/crosscheck.sh
  run bash tests/target/engine.sh
done
unset NVMEOF_ASAN_RT
export NVMEOF_BUILD=build/out
echo "=== valgrind memcheck: build/out/tests/target_core"
# "possibly lost" blocks are librdmacm's per-process device cache, by design.
if valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=9 \
     build/out/tests/target_core identify_matches_testbed roundtrip_keyed_only four_queues_four_threads \
     queue_full_and_batched_commit out_of_range_lba_names_the_status host_refused_by_subsystem_b \
     bad_arguments > /tmp/valgrind.log 2>&1; then
  grep -E 'passed' /tmp/valgrind.log; echo "valgrind: clean"
else
  cat /tmp/valgrind.log; echo "valgrind: errors or leaks"; rc=1
fi
exit $rc
