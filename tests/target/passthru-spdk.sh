#!/bin/bash
# IN-GUEST: raw commands against SPDK's nvmf_tgt (tests/target/spdk-dir.sh
# says where), which implements Compare where the kernel's nvmet does
# not: equal data succeeds, other data fails (SPDK v25.09 answers Internal
# Error rather than Compare Failure, on malloc and AIO bdevs alike).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/spdk-dir.sh"
B=${NVMEOF_BUILD:-build/out}
spdk_dir passthru-spdk
NQN=nqn.2026-12.io.nvmeof:spdk-passthru
PORT=4431

t_compare_on_spdk() {
  local pid rc=0
  local img=$SCRATCH/ns.img
  truncate -s 16M "$img"
  spdk_start "$SCRATCH/tgt.log" || fail "nvmf_tgt did not start"
  pid=$SPDK_PID
  spdk_config > /dev/null <<EOF || { end_tree "$pid"; fail "SPDK configuration failed: $(tail -3 "$SCRATCH/tgt.log")"; }
nvmf_create_transport -t RDMA -u 8192 -c 4096
bdev_aio_create $img M0 4096
nvmf_create_subsystem $NQN -a -s SPDKPT01
nvmf_subsystem_add_ns $NQN M0
nvmf_subsystem_add_listener $NQN -t rdma -a $NVMEOF_TB_ADDR -s $PORT
EOF
  NVMEOF_PT_NQN=$NQN NVMEOF_PT_PORT=$PORT NVMEOF_PT_NSID=1 "$B/tests/target_passthru" \
    compare_where_implemented_else_invalid_opcode raw_read_write_flush_match_the_wrapped_calls \
    vendor_opcode_is_answered_invalid_opcode_by_name > "$SCRATCH/out" 2>&1 || rc=$?
  end_tree "$pid"
  cat "$SCRATCH/out"
  [ $rc = 0 ] || fail "target_passthru against SPDK"
  grep -q "Compare is implemented" "$SCRATCH/out" || fail "SPDK's controller does not report Compare"
}

run_tests "$@"
