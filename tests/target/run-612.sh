#!/bin/bash
# IN-GUEST, on the 6.12 kernel (NVMEOF_TB_STATE=build/testbed612), whose
# nvmet has in-band authentication: the authentication suite (sanitized,
# and plain for what the sanitized run leaves out), then the core and
# engine tests that exercise what a newer nvmet changes (bring-up, data,
# keep-alive, reconnect, poll groups).
#   run-612.sh "CORE_TESTS" "ENGINE_TESTS"   (the Makefile's lists)
cd "$(dirname "$0")/../.."
source tests/target/runner.sh
# Each test runs once (as in run-all.sh): sanitized, every hash and group
# both ways, the fio job, wrong secrets and reconnects; plain, the tests
# whose checks are the kernel host's or the option parsing's (which the
# unit tests sanitize), which the sanitizers add nothing to. The plain
# build's authentication also runs over TCP below and against SPDK.
AUTH_PLAIN_ONLY="t_kernel_host_with_the_same_secrets_reads_what_we_wrote t_offered_hashes_and_groups_are_what_the_user_allows
  t_info_reports_how_it_authenticated t_reconnect_with_a_changed_key_fails_clearly"
# shellcheck disable=SC2086 # test names
NVMEOF_BUILD=build/out run 6.12/auth.sh 300 bash tests/target/auth.sh $AUTH_PLAIN_ONLY
# shellcheck disable=SC2086
NVMEOF_BUILD=build/san NVMEOF_ASAN_RT=$(cc -print-file-name=libasan.so) \
  run 6.12/san/auth.sh 900 bash tests/target/auth.sh --except $AUTH_PLAIN_ONLY
# over NVMe/TCP: both ways with I/O, wrong and missing secrets, the kernel
# host reading what we wrote, a reconnect that authenticates again
NVMEOF_BUILD=build/out NVMEOF_TB_TRTYPE=tcp run 6.12/auth.sh-tcp 300 bash tests/target/auth.sh \
  t_info_reports_how_it_authenticated t_wrong_and_missing_secrets_fail_clearly t_passthru_subcommands_authenticate \
  t_kernel_host_with_the_same_secrets_reads_what_we_wrote t_reconnect_authenticates_again
# SPDK's target too, where its prebuilt copy is beside the checkout (exit 77:
# skipped, saying why), over RDMA and (its t_tcp_ tests) its NVMe/TCP transport
NVMEOF_BUILD=build/out run 6.12/auth_spdk.sh 600 bash tests/target/auth_spdk.sh
# NVMe/TCP over TLS 1.3 against nvmet through tlshd (tb tls), with the
# kernel host as the cross-check; skipped where no ktls-utils archive is
# beside the checkout to build tlshd from
NVMEOF_BUILD=build/out run 6.12/tls.sh 180 bash tests/target/tls.sh
[ -n "$DRY" ] || echo 0 > /proc/sys/vm/nr_hugepages # what SPDK's target reserved
# shellcheck disable=SC2086 # the lists are space-separated test names
run 6.12/target_core 600 build/out/tests/target_core $1
# shellcheck disable=SC2086
NVMEOF_BUILD=build/out run 6.12/engine.sh 600 bash tests/target/engine.sh $2
exit $rc
