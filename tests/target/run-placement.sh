#!/bin/bash
# IN-GUEST (NVMEOF_TB_NUMA=2): where a job's memory goes and how it is
# registered, in a guest with two NUMA nodes, with the plain and the
# sanitized engine.
cd "$(dirname "$0")/../.."
rc=0
echo "=== placement.sh: build/out"
NVMEOF_BUILD=build/out tests/suite placement.sh 600 bash tests/target/placement.sh || rc=1
# sanitized, all but the sweep (jobs/sweep and its plots are Python; the
# engine's part of it is the other tests')
echo "=== placement.sh: build/san"
NVMEOF_BUILD=build/san NVMEOF_ASAN_RT=$(cc -print-file-name=libasan.so) \
  tests/suite san/placement.sh 600 bash tests/target/placement.sh --except t_sweep_over_numa_node || rc=1
exit $rc
