#!/bin/bash
# Data written by our initiator is read back by the kernel's nvme-rdma and
# the reverse, so we do not only agree with ourselves. NVMEOF_TB_TRTYPE=tcp:
# the same against the kernel's nvme-tcp, and with NVMEOF_TB_DIGESTS=1 both
# sides use NVMe/TCP's header and data digests (each computes the CRC32C the
# other checks).
source "$(dirname "$0")/lib.sh"
B=${NVMEOF_BUILD:-build/out}
TOOL=$B/tests/target_core
TR=rdma KARGS=()
[ "${NVMEOF_TB_TRTYPE:-}" = tcp ] && TR=tcp
[ "$TR" = tcp ] && [ "${NVMEOF_TB_DIGESTS:-0}" = 1 ] && KARGS=(-g -G)
kconnect() { tb kconnect "$TR" "$NVMEOF_TB_NQN_A" "${KARGS[@]}"; }

t_ours_write_kernel_reads() {
  local dev
  head -c 4194304 /dev/urandom > "$SCRATCH/ours"
  "$TOOL" load 1 20480 "$SCRATCH/ours" || fail "our write failed"
  dev=$(kconnect) || fail "kernel connect failed"
  dd if="$dev" bs=512 skip=20480 count=8192 iflag=direct status=none > "$SCRATCH/kread" || fail "kernel read failed"
  tb kdisconnect
  cmp "$SCRATCH/ours" "$SCRATCH/kread" || fail "kernel reads back different bytes than we wrote"
}

t_kernel_writes_ours_reads() {
  local dev
  head -c 1048576 /dev/urandom > "$SCRATCH/kern"
  dev=$(kconnect) || fail "kernel connect failed"
  dd if="$SCRATCH/kern" of="$dev" bs=4096 seek=$((40960 / 8)) oflag=direct status=none || fail "kernel write failed"
  tb kdisconnect
  "$TOOL" dump 1 40960 1048576 "$SCRATCH/oread" || fail "our read failed"
  cmp "$SCRATCH/kern" "$SCRATCH/oread" || fail "we read back different bytes than the kernel wrote"
}

t_ns2_4k_lbas_cross() {
  local dev
  head -c 262144 /dev/urandom > "$SCRATCH/ns2"
  "$TOOL" load 2 100 "$SCRATCH/ns2" || fail "our write to ns2 failed"
  dev=$(kconnect) || fail "kernel connect failed"
  dev2=$(tb kdev "$NVMEOF_TB_NQN_A" 2) || fail "no kernel device for ns2"
  [ "$(blockdev --getss "$dev2")" = 4096 ] || fail "ns2 is not 4 KiB formatted on the kernel side"
  dd if="$dev2" bs=4096 skip=100 count=64 iflag=direct status=none > "$SCRATCH/ns2k" || fail "kernel read failed"
  tb kdisconnect
  cmp "$SCRATCH/ns2" "$SCRATCH/ns2k" || fail "ns2 data differs"
}

run_tests "$@"
