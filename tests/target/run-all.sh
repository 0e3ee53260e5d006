#!/bin/bash
# IN-GUEST: the real-target suites, in two parts that make test boots apart
# so that each boot stays well inside its limit on a slow machine:
#   run-all.sh plain       the plain build (build/out): a smoke, the tests
#                          the sanitized boot leaves out (waits, counts, what
#                          fio or the kernel reports), sweep, multipath,
#                          failover, fio's releases, SPDK, Python, valgrind;
#                          the link cut last
#   run-all.sh sanitized   core, cross-check, engine, faults, discovery, tool,
#                          passthru with ASan+UBSan (build/san), the library's
#                          failover sanitized, and ThreadSanitizer
#   run-all.sh             both, in one boot (by hand)
# Each suite runs under tests/suite with a limit of its own (seconds, about
# three times what it takes on this project's machine), so a hang names the
# suite. Exits non-zero if any suite failed.
cd "$(dirname "$0")/../.."
PART=${1:-all}
case $PART in plain|sanitized|all) ;; *) echo "usage: $0 [plain|sanitized|all]" >&2; exit 2;; esac
source tests/target/runner.sh

# NVMe/TCP: the suites' tests that exercise the wire, over the target's TCP
# port (the same number), digests off, then on for the data-moving ones.
TCP_CORE="identify_matches_testbed roundtrip_sizes_ns1_512 roundtrip_sizes_ns2_4k roundtrip_keyed_only
  four_queues_four_threads queue_full_and_batched_commit out_of_range_lba_names_the_status
  keep_alive_keeps_the_association reconnect_keeps_write_order_and_the_controller poll_group_of_four_queues
  poll_group_reconnects_every_queue idle_wait_sleeps_long_and_a_disconnect_wakes_it tcp_refuses_what_is_rdmas
  nobody_listening_on_port wrong_subsystem_nqn reconnect_takes_the_new_associations_in_capsule_size
  defaults_keep_the_controller_alive"
TCP_CORE_DIGESTS="roundtrip_sizes_ns2_4k roundtrip_keyed_only four_queues_four_threads
  tcp_disable_sqflow_reads_are_one_pdu_each"
# Several paths: both over TCP; then one RDMA and one TCP path (path 2 TCP), each lost in turn
TCP_MPATH="two_paths_two_hcas_one_namespace queue_depth_uses_both_with_verify ana_states_route_io
  port_removed_and_restored_under_io both_ports_removed_fails_naming_the_paths
  an_io_queues_loss_stops_keep_alive_and_drops_the_admin_queue
  an_io_queues_loss_recreates_the_association_after_the_delay path_cut_from_a_callback_holds_its_writes_and_loses_nothing"
MIXED_MPATH="two_paths_two_hcas_one_namespace round_robin_alternates_with_verify
  caller_memory_on_every_path_and_one_wait_over_two_queues port_removed_and_restored_under_io
  path2_port_removed_and_restored_under_io"
TCP_ENGINE="t_verify_write_then_read t_verify_randrw_4k_ns2 t_verify_md5_and_large_blocks_above_mdts
  t_fsync_is_flush t_trim_deallocates t_qpairs4_verify_in_threads t_tcp_refuses_rdma_options
  t_in_capsule_decides_where_small_writes_go t_digest_options_are_negotiated
  t_deep_queue_sleeps_with_nothing_left_behind t_qpairs_shared_four_jobs_two_pairs_verify
  t_qpairs_shared_depth_fits_every_job"

# The multipath tests the sanitized boot runs (the plain one all the others):
# the library's failover, and the engine's jobs sharing one multipath
SAN_MPATH="two_paths_two_hcas_one_namespace queue_depth_uses_both_with_verify ana_states_route_io
  port_removed_and_restored_under_io two_multipaths_at_once_one_is_made_the_other_refused_busy
  batched_submissions_ring_once_per_path caller_memory_on_every_path_and_one_wait_over_two_queues"
SAN_MPATH_SH="t_fio_jobs_sharing_paths_must_agree_on_iopolicy t_qp_sweep_over_both_hcas"

# without "LIST" NAME...: LIST less NAME..., each of which it must hold
without() {
  local l=" $1 " n
  l=${l//$'\n'/ }
  shift
  for n; do
    [[ "$l" == *" $n "* ]] || { echo "run-all.sh: no test $n in the list" >&2; return 1; }
    l=${l/ $n / }
  done
  echo "$l"
}

# Each functional test runs once per make test, in the build where it checks
# the most. The sanitized boot (per_build san) runs every suite below with
# ASan+UBSan, less the tests SAN_SKIP_* name; the plain boot runs those
# (per_build plain), besides the suites only it runs (sweep, multipath,
# failover, fio's releases, SPDK, Python, valgrind) and a smoke of the
# shipped build: connect and verified I/O through the library over RDMA
# (valgrind's target_core) and TCP (plain/smoke-tcp), fio over both, the
# tool. The source is the same in both builds: a test run in both would
# check the same code twice. tests/unit/harness.sh checks that every test
# of every suite runs in some boot of make test.
#
# Left out of the sanitized run: the tests that measure waits or count them
# (a connect's timeouts and retries, keep-alive over idle seconds, CPU
# while the target is away, sleeps and doorbells) and those whose check is
# what fio or the kernel's host reports: under ASan+UBSan they check
# nothing more than in the plain build, and would add about 200 s.
# Nor, sanitized, the tests that run a code path again which another
# sanitized test runs (the sanitizers look for what a path does wrong,
# which a second pass with other sizes, counts or fio modes does not add
# to), nor those that mostly wait for a connect nobody answers (target_core's
# unreachable_address_fails_fast and unit_tcpsock run those timeouts
# sanitized): the queue pairs' verify in processes and round-robin (in
# threads stays; t_jobs_in_processes and t_qpair_select_rr_spreads_evenly
# run those modes), 64 queue pairs connecting (four do, the same
# connect), qpairs=0's count per CPU (its grant and sharing tests stay),
# a failed connect as fio's JSON error (the connect failures stay:
# t_refused_host_fails_clearly, t_wrong_nqn_fails_clearly), fio's JSON
# across a reconnect (faults.sh's reconnect and losses stay), the flush
# and deep-queue tests (engine.sh-tcp runs them sanitized), and faults.sh's
# one-controller job ending while the target is away (the two-controller
# one runs the same path for each). Of target_core (all its tests run
# over TCP too): keep-alive over idle seconds and the defaults' keep-alive
# (target_core-tcp runs both sanitized), the target ending an association
# whose keep-alives stopped (nvmet's doing), and 64 queue pairs connecting
# three times (four queues and the poll groups run the same connect).
SAN_SKIP_CORE="keep_alive_keeps_the_association defaults_keep_the_controller_alive
  target_ends_association_when_keep_alives_stop sixty_four_queue_pairs_connect_under_load_and_all_carry_io"
SAN_SKIP_ENGINE="t_connect_timeout_bounds_each_step t_connect_retries_is_the_number_of_tries_after_the_first
  t_kato_keeps_an_idle_job_connected t_verbose_logs_each_connection_step t_qd1_latency_accounting
  t_doorbells_coalesce_at_depth t_spin_us_decides_when_hybrid_sleeps t_wait_sleep_is_counted
  t_kernel_reads_what_fio_wrote t_json_and_terse_output_parse_in_threads_and_processes
  t_qpairs4_verify_in_processes t_qpairs4_verify_round_robin t_qpairs64_connect_while_another_job_runs_io
  t_qpairs_default_one_per_cpu t_a_failed_connect_is_the_jobs_error t_json_output_parses_across_a_reconnect
  t_fsync_is_flush t_deep_queue_sleeps_with_nothing_left_behind t_tcp_connect_nobody_answers_is_etimedout"
# over TCP: what engine.sh runs the same (it names trtype=TCP itself) and
# a second verify (t_verify_randrw_4k_ns2 stays); the plain build's run of
# t_verify_write_then_read is also its smoke of fio over TCP
SAN_SKIP_ENGINE_TCP="t_tcp_refuses_rdma_options t_verify_write_then_read"
# t_bad_arguments: 25 refusals, 33 s sanitized; its parsing ones run
# sanitized in secrets.sh's sweep (make unit SAN=1), its target's refusals
# in target_core (wrong_subsystem_nqn, host_refused_by_subsystem_b,
# nobody_listening_on_port, out_of_range_lba_names_the_status)
SAN_SKIP_TOOL="t_id_ctrl_agrees_with_kernel t_namespaces_agree_with_kernel t_discover_agrees_with_nvme_cli
  t_help_for_every_subcommand t_nvme_cli_letters_and_streams t_bad_arguments"
# (t_link_cut_during_io runs last in the plain boot, faults.sh-link-cut)
SAN_SKIP_FAULTS="t_two_controllers_wait_sleep_does_not_spin t_job_ends_while_target_away
  t_shared_pair_over_tcp_job_ends_while_target_away"

# per_build san: the suites with ASan+UBSan, less SAN_SKIP_*;
# per_build plain: the SAN_SKIP_* tests alone. $1 names the build in the
# suites' names.
per_build() {
  local b=$1
  # shellcheck disable=SC2206,SC2086 # the lists are space-separated test names
  if [ "$b" = plain ]; then
    run "$b/target_core" 600 "$NVMEOF_BUILD/tests/target_core" $SAN_SKIP_CORE
    # the shipped library's connect and verified I/O over TCP
    run "$b/smoke-tcp" 300 env NVMEOF_TB_TRTYPE=tcp "$NVMEOF_BUILD/tests/target_core" identify_matches_testbed \
      roundtrip_sizes_ns2_4k
    run "$b/engine.sh-tcp" 300 env NVMEOF_TB_TRTYPE=tcp bash tests/target/engine.sh $SAN_SKIP_ENGINE_TCP
    run "$b/engine.sh" 1200 bash tests/target/engine.sh $SAN_SKIP_ENGINE
    run "$b/faults.sh" 600 bash tests/target/faults.sh $SAN_SKIP_FAULTS
    run "$b/tool.sh" 300 bash tests/target/tool.sh $SAN_SKIP_TOOL
    return
  fi
  local tcp_engine
  tcp_engine=$(without "$TCP_ENGINE" $SAN_SKIP_ENGINE_TCP) || rc=1
  run "$b/target_core" 900 "$NVMEOF_BUILD/tests/target_core" --except $SAN_SKIP_CORE
  run "$b/target_core-tcp" 600 env NVMEOF_TB_TRTYPE=tcp "$NVMEOF_BUILD/tests/target_core" $TCP_CORE
  run "$b/target_core-tcp-digests" 300 env NVMEOF_TB_TRTYPE=tcp NVMEOF_TB_DIGESTS=1 \
    "$NVMEOF_BUILD/tests/target_core" $TCP_CORE_DIGESTS
  run "$b/engine.sh-tcp" 600 env NVMEOF_TB_TRTYPE=tcp bash tests/target/engine.sh $tcp_engine
  # written by ours, read by the kernel's nvme-tcp, and back
  run "$b/tool.sh-tcp" 300 env NVMEOF_TB_TRTYPE=tcp bash tests/target/tool.sh t_write_read_back_ours_and_kernel \
    t_write_zeroes_reads_back_zeroes t_perf_counts_ios_and_json_parses
  run "$b/target_gpu" 300 env NVMEOF_CUDA_LIB=$PWD/$NVMEOF_BUILD/tests/libcuda-double.so "$NVMEOF_BUILD/tests/target_gpu"
  run "$b/target_gpu-no-cuda" 300 "$NVMEOF_BUILD/tests/target_gpu" no-cuda
  run "$b/crosscheck.sh" 600 bash tests/target/crosscheck.sh
  run "$b/engine.sh" 1500 bash tests/target/engine.sh --except $SAN_SKIP_ENGINE
  run "$b/faults.sh" 900 bash tests/target/faults.sh --except $SAN_SKIP_FAULTS t_link_cut_during_io
  run "$b/target_disc" 600 "$NVMEOF_BUILD/tests/target_disc"
  run "$b/target_disc-tcp" 300 env NVMEOF_TB_TRTYPE=tcp "$NVMEOF_BUILD/tests/target_disc" \
    discovery_entry_connects_with_verified_io discovery_as_any_host_hides_subsystem_b tcp_discovery_defaults_to_port_8009
  run "$b/tool.sh" 600 bash tests/target/tool.sh --except $SAN_SKIP_TOOL
  run "$b/target_passthru" 300 "$NVMEOF_BUILD/tests/target_passthru"
  run "$b/target_passthru-tcp" 300 env NVMEOF_TB_TRTYPE=tcp "$NVMEOF_BUILD/tests/target_passthru"
  run "$b/passthru-tool.sh" 300 bash tests/target/passthru-tool.sh
  run "$b/selftest-double" 300 bash tests/gpu-check/selftest-double "$NVMEOF_BUILD"
}

plain() {
  export NVMEOF_BUILD=build/out
  unset NVMEOF_ASAN_RT
  run smoke.sh 300 bash tests/target/smoke.sh
  per_build plain
  # ours and the kernel's nvme-tcp reading each other's data, both with
  # header and data digests: each checks the CRC32C the other computed
  run crosscheck.sh-tcp-digests 600 env NVMEOF_TB_TRTYPE=tcp NVMEOF_TB_DIGESTS=1 bash tests/target/crosscheck.sh
  run sweep.sh 900 bash tests/target/sweep.sh
  # several paths: the library's (less what san/target_mpath runs sanitized),
  # then with the engine, the tool and the kernel's multipath (less what
  # san/mpath.sh runs)
  # shellcheck disable=SC2086 # test names
  run target_mpath 900 build/out/tests/target_mpath --except $SAN_MPATH
  # shellcheck disable=SC2086
  run mpath.sh 1200 bash tests/target/mpath.sh --except $SAN_MPATH_SH
  # no acknowledged write lost across partitions that heal, port removal,
  # ANA states and split writes (nvmeof failover-check; about 5 minutes)
  run failover.sh 900 bash tests/target/failover.sh
  # zoned namespaces (subsystem Z): the library's zone calls over RDMA, then
  # over TCP but the kernel host's cross-check (its connect is nvme-tcp either way)
  run target_zns 300 build/out/tests/target_zns
  run target_zns-tcp 300 env NVMEOF_TB_TRTYPE=tcp build/out/tests/target_zns --except kernel_host_reports_the_same_zones
  run target_mpath-tcp 600 env NVMEOF_TB_TRTYPE=tcp build/out/tests/target_mpath $TCP_MPATH
  run target_mpath-mixed 600 env NVMEOF_TB_TRTYPE2=tcp build/out/tests/target_mpath $MIXED_MPATH
  # the engine under fio's releases (make fio-release); skips only without their archives
  run fio-versions.sh 900 bash tests/target/fio-versions.sh
  run zns-engine.sh 300 bash tests/target/zns-engine.sh
  # SPDK's nvmf_tgt beside nvmet, where its prebuilt copy is beside the checkout;
  # then the huge pages it reserved (half the guest's memory) go back
  run spdk.sh 600 bash tests/target/spdk.sh
  run passthru-spdk.sh 300 bash tests/target/passthru-spdk.sh   # Compare, on SPDK's target (skips without it)
  [ -n "$DRY" ] || echo 0 > /proc/sys/vm/nr_hugepages
  run python.sh 600 bash tests/target/python.sh
  # the I/O tests over NVMe/TCP (the GPU ones are RDMA's: refused over TCP)
  run python.sh-tcp 300 env NVMEOF_TB_TRTYPE=tcp bash tests/target/python.sh \
    -k "not gpu and (64mib or read_many or queues_in_threads or keep_alive or connect_errors or sixty_four_in_flight)"
  # pip install ./python and its examples; make test installs it before the
  # boot (used where nothing of the library or the package is newer)
  if [ -f build/pypkg/prepared ] && [ ! build/out/libnvmeof.so -nt build/pypkg/prepared ] &&
     [ -z "$(find python -name __pycache__ -prune -o -newer build/pypkg/prepared -type f -print -quit)" ]; then
    run python-pkg.sh 600 bash tests/target/python-pkg.sh --use build/pypkg
  else
    run python-pkg.sh 600 bash tests/target/python-pkg.sh
  fi
  # "possibly lost" blocks are librdmacm's per-process device cache, by design.
  run valgrind-target_core 900 valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --error-exitcode=9 build/out/tests/target_core identify_matches_testbed roundtrip_keyed_only \
    four_queues_four_threads queue_full_and_batched_commit out_of_range_lba_names_the_status \
    host_refused_by_subsystem_b bad_arguments poll_group_of_four_queues
  # Last: after this fault the 6.1 target accepts no more connections.
  run faults.sh-link-cut 300 bash tests/target/faults.sh t_link_cut_during_io
}

sanitized() {
  export NVMEOF_BUILD=build/san
  # fio is not instrumented: the sanitized engine needs the ASan runtime first
  NVMEOF_ASAN_RT=$(cc -print-file-name=libasan.so)
  export NVMEOF_ASAN_RT
  per_build san
  # the library's failover, and the engine's jobs sharing one multipath
  # shellcheck disable=SC2086 # test names
  run san/target_mpath 900 build/san/tests/target_mpath $SAN_MPATH
  # shellcheck disable=SC2086
  run san/mpath.sh 900 bash tests/target/mpath.sh $SAN_MPATH_SH
  unset NVMEOF_ASAN_RT
  # four queues in four threads, the keep-alive thread; reconnect attempts'
  # workers against the poll, reassociation included; the event thread
  # refreshing namespaces under I/O
  run tsan/target_core 900 build/tsan/tests/target_core four_queues_four_threads keep_alive_keeps_the_association \
    poll_group_of_four_queues reconnect_keeps_write_order_and_the_controller poll_group_reconnects_every_queue
  run tsan/target_disc 600 build/tsan/tests/target_disc namespace_disabled_and_enabled_through_events \
    namespace_events_with_keep_alive
  # the multipath's ANA refresh threads against events and a busy controller;
  # two multipaths attaching to one controller's events at once
  run tsan/target_mpath 600 build/tsan/tests/target_mpath refresh_from_a_thread_while_events_arrive \
    a_busy_controller_delays_no_other_paths_ana_update two_multipaths_at_once_one_is_made_the_other_refused_busy
}

case $PART in
  plain) plain ;;
  sanitized) sanitized ;;
  all) sanitized; plain ;;
esac
exit $rc
