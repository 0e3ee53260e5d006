#!/bin/bash
# IN-GUEST (NVMEOF_TB_NUMA=2): where a job's memory goes and how it is
# registered, in a guest with two NUMA nodes. Each test runs once (as in
# run-all.sh): with the sanitized engine, all but the sweep; the sweep
# (jobs/sweep and its plots are Python; the engine's part of it is the
# other tests') with the plain one, whose smoke it is.
cd "$(dirname "$0")/../.."
source tests/target/runner.sh
PLAIN_ONLY="t_sweep_over_numa_node"
# shellcheck disable=SC2086 # test names
NVMEOF_BUILD=build/out run placement.sh 600 bash tests/target/placement.sh $PLAIN_ONLY
# shellcheck disable=SC2086
NVMEOF_BUILD=build/san NVMEOF_ASAN_RT=$(cc -print-file-name=libasan.so) \
  run san/placement.sh 600 bash tests/target/placement.sh --except $PLAIN_ONLY
exit $rc
