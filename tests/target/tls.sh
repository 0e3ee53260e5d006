#!/bin/bash
# NVMe/TCP over TLS 1.3 against nvmet, which does TLS on the 6.12 kernel
# (CONFIG_NVME_TARGET_TCP_TLS) through tlshd, the kernel's handshake agent:
#   NVMEOF_TB_STATE=build/testbed612 tests/testbed/run bash tests/target/tls.sh
# `tb tls up` starts tlshd and makes nvmet port 8 (NVMEOF_TB_TLS_PORT), which
# requires TLS, with subsystem A behind it; `tb tls key` puts the TLS PSKs
# of a configured key in the .nvme keyring by their identities, derived by
# tests/unit/tls_vectors.py (not by the library), where tlshd looks for them.
# The kernel's own host, connecting with `tls` through the same tlshd,
# cross-checks what we wrote and we what it wrote.
source "$(dirname "$0")/lib.sh"
B=${NVMEOF_BUILD:-build/out}
T=$B/nvmeof
TLSHD=build/testbed612/tlshd/tlshd
if ! [ -x "$TLSHD" ]; then
  # tlshd is built from ktls-utils' release archive beside the checkout
  # (tests/testbed/build-tlshd): absent there, this suite cannot run
  A=${NVMEOF_KTLS_UTILS:-../shared/ktls-utils/ktls-utils-1.4.0.tar.xz}
  if [ -f "$A" ]; then echo "tls: $A is there but $TLSHD was not built (make testbed612)" >&2; exit 1; fi
  echo "tls: no tlshd ($TLSHD) and no ktls-utils archive ($A): skipped"; exit 77
fi
HN=nqn.2014-08.org.nvmexpress:uuid:6e766d65-6f66-4000-8000-0000000000c1
HID=6e766d65-6f66-4000-8000-0000000000c1
C=(-t tcp -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_TLS_PORT" -n "$NVMEOF_TB_NQN_A" -q "$HN")
tb tls up
KEY=$("$T" gen-tls-key)
KEY2=$("$T" gen-tls-key --hmac=2)
(umask 077; echo "$KEY" > "$SCRATCH/key"; echo "$KEY2" > "$SCRATCH/key2")
# each test starts with the version 0 and 1 identities of both keys in the keyring
keys() { tb tls unkey; tb tls key "$KEY" "$HN"; tb tls key "$KEY2" "$HN"; }
# what tlshd (nvmet's side and the kernel host's) said last, for a failure
why() { echo "$(cat "$SCRATCH/out"); tlshd: $(tb tls log | tail -4 | tr '\n' ' ')"; }

nv() { timeout 60 "$T" "$@" > "$SCRATCH/out" 2>&1; }
must_fail() { # PATTERN ARGS...: fails within the timeout, saying PATTERN in one line, no key in it
  local pat=$1; shift
  local rc=0; nv "$@" || rc=$?
  [ "$rc" != 0 ] || fail "connected: $(why)"
  [ "$rc" != 124 ] || fail "hung past 60 s"
  grep -qE "$pat" "$SCRATCH/out" || fail "expected '$pat': $(why)"
  [ "$(grep -c "" "$SCRATCH/out")" = 1 ] || fail "more than one line: $(cat "$SCRATCH/out")"
  ! grep -qF "${KEY:16:20}" "$SCRATCH/out" || fail "the key in the message"
  echo "    $(cat "$SCRATCH/out")"
}

t_reads_and_writes_over_tls_both_hashes() {
  local k
  keys
  for k in key key2; do
    head -c 131072 /dev/urandom > "$SCRATCH/w"
    nv write "${C[@]}" --tls-key-file "$SCRATCH/$k" -B 1024 -d "$SCRATCH/w" || fail "write ($k): $(why)"
    nv read "${C[@]}" --tls-key-file "$SCRATCH/$k" -B 1024 -c 256 -d "$SCRATCH/r" || fail "read ($k): $(why)"
    cmp -s "$SCRATCH/w" "$SCRATCH/r" || fail "read back differs ($k)"
  done
  # the records were TLS: the handshakes went through tlshd, nvmet's agent
  [ "$(tb tls log | grep -c 'Handshake request succeeded')" -ge 4 ] || fail "tlshd saw no handshake: $(tb tls log | tail -5)"
}

# the kernel host with the same key (from the keyring, as nvme connect --tls)
kconnect_tls() {
  echo "transport=tcp,traddr=$NVMEOF_TB_ADDR,trsvcid=$NVMEOF_TB_TLS_PORT,nqn=$NVMEOF_TB_NQN_A,hostnqn=$HN,hostid=$HID,tls" \
    > /dev/nvme-fabrics || fail "the kernel host's TLS connect failed: $(dmesg | tail -3)"
  local dev=""
  for _ in $(seq 50); do dev=$(tb kdev "$NVMEOF_TB_NQN_A" 1 2>/dev/null) && break; sleep 0.2; done
  [ -n "$dev" ] || fail "no block device from the kernel host"
  echo "$dev"
}
t_kernel_host_over_tls_reads_what_we_wrote_and_we_what_it_wrote() {
  keys
  head -c 65536 /dev/urandom > "$SCRATCH/ours"
  head -c 65536 /dev/urandom > "$SCRATCH/its"
  nv write "${C[@]}" --tls-key-file "$SCRATCH/key" -B 2048 -d "$SCRATCH/ours" || fail "write: $(why)"
  local dev; dev=$(kconnect_tls)
  dd if="$dev" bs=512 skip=2048 count=128 iflag=direct status=none | cmp -s - "$SCRATCH/ours" || { tb kdisconnect; fail "the kernel host read other data"; }
  dd if="$SCRATCH/its" of="$dev" bs=512 seek=4096 oflag=direct conv=fsync status=none || { tb kdisconnect; fail "the kernel host's write failed"; }
  tb kdisconnect "$NVMEOF_TB_NQN_A" > /dev/null 2>&1
  nv read "${C[@]}" --tls-key-file "$SCRATCH/key" -B 4096 -c 128 -d "$SCRATCH/r" || fail "read: $(why)"
  cmp -s "$SCRATCH/its" "$SCRATCH/r" || fail "we read other data than the kernel host wrote"
}

t_wrong_key_fails_closed_in_one_line() {
  keys
  (umask 077; "$T" gen-tls-key > "$SCRATCH/other")
  must_fail "queue 0: TLS handshake: the controller (closed the connection|refused the PSK)" \
    id-ctrl "${C[@]}" --tls-key-file "$SCRATCH/other"
  # a host whose identity is in no keyring: the same, closed
  must_fail "queue 0: TLS handshake: the controller (closed the connection|refused the PSK)" \
    id-ctrl -t tcp -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_TLS_PORT" -n "$NVMEOF_TB_NQN_A" \
    -q "nqn.2014-08.org.nvmexpress:uuid:6e766d65-6f66-4000-8000-0000000000c2" --tls-key-file "$SCRATCH/key"
}

t_no_key_against_a_port_that_requires_tls_says_so() {
  keys
  must_fail "queue 0: .*(requires TLS|TLS key)" id-ctrl "${C[@]}"
}

# which PSK identity versions nvmet takes: tlshd looks the key up by
# whatever identity the host offers, so both, where the keyring holds
# them; OpenSSL's s_client offers each identity (with its TLS PSK) alone
# and tlshd's log counts the handshakes that succeeded. Ours offers
# version 0 (NVMe0R0H), which SPDK's target also takes: with only version
# 1's key in the keyring it is refused, with version 0's alone it connects.
handshakes() { tb tls log | grep -c 'Handshake request succeeded' || true; }
sclient() { # VERSION: a TLS 1.3 handshake with that identity's PSK alone
  local hex id n0
  read -r hex id < <(tb tls psk "$KEY" "$HN" "" "$1")
  n0=$(handshakes)
  # stdin at its end: s_client closes once the handshake is done
  timeout 20 openssl s_client -connect "$NVMEOF_TB_ADDR:$NVMEOF_TB_TLS_PORT" -tls1_3 \
    -ciphersuites TLS_AES_128_GCM_SHA256 -psk_identity "$id" -psk "$hex" < /dev/null > /dev/null 2>&1 || true
  for _ in $(seq 25); do [ "$(handshakes)" -gt "$n0" ] && return 0; sleep 0.2; done
  return 1
}
t_identity_versions() {
  tb tls unkey
  tb tls key "$KEY" "$HN" "" 1
  sclient 1 || fail "nvmet refused the version 1 identity with its key in the keyring: $(tb tls log | tail -3)"
  ! sclient 0 || fail "a version 0 identity without its key passed"
  must_fail "queue 0: TLS handshake: the controller (closed the connection|refused the PSK)" \
    id-ctrl "${C[@]}" --tls-key-file "$SCRATCH/key"
  tb tls unkey
  tb tls key "$KEY" "$HN" "" 0
  sclient 0 || fail "nvmet refused the version 0 identity with its key in the keyring: $(tb tls log | tail -3)"
  nv id-ctrl "${C[@]}" --tls-key-file "$SCRATCH/key" || fail "version 0 alone: $(why)"
}

run_tests "$@"
