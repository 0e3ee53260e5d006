#!/bin/bash
# Test-bed smoke suite (runs inside the guest): the target answers on both
# ports, the kernel initiator connects over RDMA, moves 1 MiB both ways and
# sees the serial the test bed configured.
source "$(dirname "$0")/lib.sh"

t_discover_both_ports() {
  local out
  out=$(timeout 30 nvme discover -t rdma -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_PORT") || fail "nvme discover over rdma failed"
  grep -q "subnqn:  *$NVMEOF_TB_NQN_A" <<<"$out" || fail "rdma discovery log lacks $NVMEOF_TB_NQN_A"
  out=$(timeout 30 nvme discover -t tcp -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_PORT") || fail "nvme discover over tcp failed"
  grep -q "subnqn:  *$NVMEOF_TB_NQN_A" <<<"$out" || fail "tcp discovery log lacks $NVMEOF_TB_NQN_A"
  grep -q "trtype:  *tcp" <<<"$out" || fail "tcp discovery log has no tcp entry"
}

t_kernel_rdma_roundtrip_and_serial() {
  local dev sn
  dev=$(tb kconnect rdma) || fail "kernel nvme-rdma connect failed"
  head -c 1048576 /dev/urandom > "$SCRATCH/pattern"
  dd if="$SCRATCH/pattern" of="$dev" bs=1M count=1 oflag=direct status=none || fail "write of 1 MiB to $dev failed"
  # read back through a fresh connection, so nothing comes from a host cache
  tb kdisconnect
  dev=$(tb kconnect rdma) || fail "reconnect failed"
  dd if="$dev" bs=1M count=1 iflag=direct status=none | cmp - "$SCRATCH/pattern" || fail "1 MiB read back differs"
  sn=$(nvme id-ctrl "$dev" | awk '$1=="sn"{print $3}')
  [ "$sn" = "$NVMEOF_TB_SERIAL" ] || fail "Identify serial is '$sn', configured '$NVMEOF_TB_SERIAL'"
  tb kdisconnect
}

run_tests "$@"
