#!/bin/bash
# IN-GUEST: every real-target suite in one boot; exits non-zero if any failed.
# The core, cross-check and engine suites run twice: plain (build/out) and
# with ASan+UBSan (build/san); then the core suite once under valgrind.
cd "$(dirname "$0")/../.."
rc=0
run() { echo "=== $*"; "$@" || rc=1; }
run bash tests/target/smoke.sh
run bash tests/gpu-check/selftest-double   # both builds; data through the CUDA double
for B in build/out build/san; do
  export NVMEOF_BUILD=$B
  # fio is not instrumented: the sanitized engine needs the ASan runtime first
  [ $B = build/san ] && export NVMEOF_ASAN_RT=$(cc -print-file-name=libasan.so)
  run "$B/tests/target_core"
  run env NVMEOF_CUDA_LIB=$PWD/$B/tests/libcuda-double.so "$B/tests/target_gpu"
  run "$B/tests/target_gpu" no-cuda
  run bash tests/target/crosscheck.sh
  run bash tests/target/engine.sh
  run bash tests/target/faults.sh
  run "$B/tests/target_disc"
  run bash tests/target/tool.sh
done
run env NVMEOF_BUILD=build/out bash tests/target/sweep.sh
# several paths: once plain (with the tool and the kernel's multipath), the
# library's failover once more sanitized
run env NVMEOF_BUILD=build/out bash tests/target/mpath.sh
run build/san/tests/target_mpath two_paths_two_hcas_one_namespace queue_depth_uses_both_with_verify \
  ana_states_route_io port_removed_and_restored_under_io two_multipaths_at_once_one_gets_the_events \
  batched_submissions_ring_once_per_path
# and the engine's jobs sharing one multipath, sanitized
run env NVMEOF_BUILD=build/san NVMEOF_ASAN_RT=$(cc -print-file-name=libasan.so) bash tests/target/mpath.sh \
  t_fio_jobs_sharing_paths_must_agree_on_iopolicy t_qp_sweep_over_both_hcas
echo "=== ThreadSanitizer: four queues in four threads, keep-alive thread"
run build/tsan/tests/target_core four_queues_four_threads keep_alive_keeps_the_association poll_group_of_four_queues
echo "=== ThreadSanitizer: reconnect attempts' workers against the poll, reassociation included"
run build/tsan/tests/target_core reconnect_keeps_write_order_and_the_controller poll_group_reconnects_every_queue
echo "=== ThreadSanitizer: the event thread refreshes namespaces under I/O"
run build/tsan/tests/target_disc namespace_disabled_and_enabled_through_events namespace_events_with_keep_alive
echo "=== ThreadSanitizer: the paths' ANA refresh threads against the user's refresh"
run build/tsan/tests/target_mpath refresh_from_a_thread_while_events_arrive a_busy_controller_delays_no_other_paths_ana_update
echo "=== SPDK's nvmf_tgt beside nvmet (skipped without ../shared/spdk-target)"
run env NVMEOF_BUILD=build/out bash tests/target/spdk.sh
unset NVMEOF_ASAN_RT
export NVMEOF_BUILD=build/out
run bash tests/target/python.sh
run bash tests/target/python-pkg.sh   # pip install ./python, its examples
echo "=== valgrind memcheck: build/out/tests/target_core"
# "possibly lost" blocks are librdmacm's per-process device cache, by design.
if valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=9 \
     build/out/tests/target_core identify_matches_testbed roundtrip_keyed_only four_queues_four_threads \
     queue_full_and_batched_commit out_of_range_lba_names_the_status host_refused_by_subsystem_b \
     bad_arguments poll_group_of_four_queues > /tmp/valgrind.log 2>&1; then
  grep -E 'passed' /tmp/valgrind.log; echo "valgrind: clean"
else
  cat /tmp/valgrind.log; echo "valgrind: errors or leaks"; rc=1
fi
# Last: after this fault the 6.1 target accepts no more connections.
run bash tests/target/faults.sh t_link_cut_during_io
exit $rc
