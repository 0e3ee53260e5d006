#!/bin/bash
# NVMe/TCP over TLS 1.3 against nvmet, which does TLS on the 6.12 kernel
# (CONFIG_NVME_TARGET_TCP_TLS) through tlshd, the kernel's handshake agent:
#   NVMEOF_TB_STATE=build/testbed612 tests/testbed/run bash tests/target/tls.sh
# `tb tls up` starts tlshd and makes nvmet port 10 (NVMEOF_TB_TLS_PORT), which
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
# SHA-256 keys only: tlshd built against Debian 12's GnuTLS (3.7, without
# gnutls_psk_allocate_server_credentials2) takes every PSK for SHA-256, so a
# SHA-384 key's binder fails on nvmet's side ("illegal parameter"), the
# kernel host's as ours. SHA-384 runs against SPDK's target (tls-spdk.sh).
KEY=$("$T" gen-tls-key)
(umask 077; echo "$KEY" > "$SCRATCH/key")
# each test starts with the key's version 0 and 1 identities in the keyring
keys() { tb tls unkey; tb tls key "$KEY" "$HN"; }
# what tlshd (nvmet's side and the kernel host's) said last, for a failure
why() { echo "$(cat "$SCRATCH/out"); tlshd: $(tb tls log | tail -4 | tr '\n' ' ')"; }

handshakes() { tb tls log | grep -c 'Handshake request succeeded' || true; }
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

# The read, with kTLS, runs under tests/unit/tlsscan.c: at the tool's exit
# no TLS key is in its memory (as tls-spdk.sh checks for OpenSSL's
# records), the TLS PSK it read from the keyring and the keys handed to the
# kernel among those it looks for.
t_reads_and_writes_over_tls() {
  keys
  head -c 131072 /dev/urandom > "$SCRATCH/w"
  local n0; n0=$(handshakes)
  nv write "${C[@]}" --tls-key-file "$SCRATCH/key" -B 1024 -d "$SCRATCH/w" || fail "write: $(why)"
  # read back with the PSK from the .nvme keyring, where `tb tls key` put
  # it for tlshd (as nvme gen-tls-key --insert does), no key given
  python3 tests/unit/tlsscan_keys.py "$SCRATCH/key" "$HN" "$NVMEOF_TB_NQN_A" > "$SCRATCH/scan.keys"
  TLSSCAN_FILE=$SCRATCH/scan.keys LD_PRELOAD="$PWD/$B/tests/tlsscan.so" \
    nv read "${C[@]}" --keyring .nvme -B 1024 -c 256 -d "$SCRATCH/r" || fail "read, key from the keyring: $(why)"
  cmp -s "$SCRATCH/w" "$SCRATCH/r" || fail "read back differs"
  grep -q "tlsscan: scanned [1-9][0-9]* bytes" "$SCRATCH/out" || fail "the scan did not run: $(tail -3 "$SCRATCH/out")"
  grep -q "tlsscan: key kTLS TX key" "$SCRATCH/out" && grep -q "tlsscan: key kTLS RX key" "$SCRATCH/out" &&
    grep -q "tlsscan: key SERVER_TRAFFIC_SECRET_0" "$SCRATCH/out" ||
    fail "the keys were not caught: $(grep 'tlsscan: key' "$SCRATCH/out" | tr '\n' ' ')"
  ! grep -q "tlsscan: a copy" "$SCRATCH/out" || fail "$(grep 'tlsscan: a copy' "$SCRATCH/out" | head -4)"
  echo "    no TLS key left: $(grep -o 'scanned [0-9]* bytes in [0-9]* regions for [0-9]* keys' "$SCRATCH/out")"
  # the records were TLS: each queue's handshake went through tlshd, nvmet's agent
  [ "$(handshakes)" -ge $((n0 + 4)) ] || fail "tlshd saw $(($(handshakes) - n0)) handshakes: $(tb tls log | tail -5)"
}

# kTLS: the kernel's tls module counts the sockets it took the keys of
# (/proc/net/tls_stat): nvmet's side always (tlshd hands them over), ours
# unless NVMEOF_KTLS=0 keeps the records in OpenSSL; each queue's socket
# then counts twice, once per end. 1 MiB (above MDTS) written and read
# back with kTLS, then written with kTLS and read with OpenSSL's records.
tls_stat() { awk -v k="$1" '$1 == k { print $2 }' /proc/net/tls_stat; }
t_ktls_takes_the_records_where_the_kernel_has_it() {
  keys
  head -c 1048576 /dev/urandom > "$SCRATCH/w"
  local tx0 rx0 tx1 rx1 tx2 rx2
  tx0=$(tls_stat TlsTxSw) rx0=$(tls_stat TlsRxSw)
  NVMEOF_KTLS=0 nv write "${C[@]}" --tls-key-file "$SCRATCH/key" -B 8192 -d "$SCRATCH/w" || fail "write, no kTLS: $(why)"
  tx1=$(tls_stat TlsTxSw) rx1=$(tls_stat TlsRxSw)
  nv write "${C[@]}" --tls-key-file "$SCRATCH/key" -B 8192 -d "$SCRATCH/w" || fail "write, kTLS: $(why)"
  tx2=$(tls_stat TlsTxSw) rx2=$(tls_stat TlsRxSw)
  [ $((tx1 - tx0)) -gt 0 ] && [ $((rx1 - rx0)) = $((tx1 - tx0)) ] || fail "nvmet's sockets: TX $((tx1 - tx0)), RX $((rx1 - rx0))"
  [ $((tx2 - tx1)) = $((2 * (tx1 - tx0))) ] && [ $((rx2 - rx1)) = $((2 * (rx1 - rx0))) ] ||
    fail "kTLS sockets with ours: TX $((tx2 - tx1)), RX $((rx2 - rx1)); nvmet's alone: $((tx1 - tx0))"
  nv read "${C[@]}" --tls-key-file "$SCRATCH/key" -B 8192 -c 2048 -d "$SCRATCH/r" || fail "read, kTLS: $(why)"
  cmp -s "$SCRATCH/w" "$SCRATCH/r" || fail "read back differs (kTLS)"
  head -c 1048576 /dev/urandom > "$SCRATCH/w"
  nv write "${C[@]}" --tls-key-file "$SCRATCH/key" -B 8192 -d "$SCRATCH/w" || fail "write, kTLS, again: $(why)"
  NVMEOF_KTLS=0 nv read "${C[@]}" --tls-key-file "$SCRATCH/key" -B 8192 -c 2048 -d "$SCRATCH/r" || fail "read, no kTLS: $(why)"
  cmp -s "$SCRATCH/w" "$SCRATCH/r" || fail "read back differs (written with kTLS, read without)"
  echo "    kTLS sockets per connection: nvmet's $((tx1 - tx0)), with ours $((tx2 - tx1))"
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
  # nor is it in ours: the lookup names the identities and the keyring
  must_fail "TLS PSK: no key for identity NVMe0R02 or NVMe0R01 nqn[^ ]*c2 $NVMEOF_TB_NQN_A in keyring .nvme" \
    id-ctrl -t tcp -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_TLS_PORT" -n "$NVMEOF_TB_NQN_A" \
    -q "nqn.2014-08.org.nvmexpress:uuid:6e766d65-6f66-4000-8000-0000000000c2" --keyring .nvme
}

t_no_key_against_a_port_that_requires_tls_says_so() {
  keys
  must_fail "queue 0: .*(requires TLS|TLS key)" id-ctrl "${C[@]}"
}

# which PSK identity versions nvmet takes: tlshd looks the key up by
# whatever identity the host offers, so both, where the keyring holds them
# (put there by `tb tls key`, derived by tests/unit/tls_vectors.py, not by
# the library). Ours offers version 0 (NVMe0R0H) unless told 1: with only
# version 1's key in the keyring, version 1 connects (its key given, or
# found in the keyring by host and subsystem) and version 0 is refused;
# with version 0's alone, version 0 connects.
t_identity_versions() {
  tb tls unkey
  tb tls key "$KEY" "$HN" "" 1
  nv id-ctrl "${C[@]}" --tls-key-file "$SCRATCH/key" --tls-identity 1 || fail "version 1, key given: $(why)"
  nv id-ctrl "${C[@]}" --keyring .nvme --tls-identity 1 || fail "version 1 from the keyring: $(why)"
  must_fail "queue 0: TLS handshake: the controller (closed the connection|refused the PSK)" \
    id-ctrl "${C[@]}" --tls-key-file "$SCRATCH/key"
  tb tls unkey
  tb tls key "$KEY" "$HN" "" 0
  nv id-ctrl "${C[@]}" --tls-key-file "$SCRATCH/key" || fail "version 0 alone: $(why)"
}

# what check-tls-key --insert puts in .nvme (as nvme-cli: type psk, named by
# the identity, holding the TLS PSK) is what nvmet's tlshd uses: version 0,
# version 1, and the derivation of nvme-cli up to 2.14 (--compat), which
# ours must then use too
t_inserted_keys_serve_each_identity_and_derivation() {
  local ins=("$T" check-tls-key -d "$KEY" -n "$HN" -c "$NVMEOF_TB_NQN_A" --insert)
  tb tls unkey
  "${ins[@]}" > "$SCRATCH/ins" || fail "insert: $(cat "$SCRATCH/ins")"
  grep -qxE "Inserted TLS key [0-9a-f]{8}: NVMe0R01 $HN $NVMEOF_TB_NQN_A" "$SCRATCH/ins" || fail "insert said: $(cat "$SCRATCH/ins")"
  nv id-ctrl "${C[@]}" --tls-key-file "$SCRATCH/key" || fail "version 0, inserted by us: $(why)"
  tb tls unkey
  "${ins[@]}" -I 1 > "$SCRATCH/ins" || fail "insert -I 1: $(cat "$SCRATCH/ins")"
  grep -qE "^Inserted TLS key [0-9a-f]{8}: NVMe1R01 $HN $NVMEOF_TB_NQN_A [A-Za-z0-9+/]{43}=$" "$SCRATCH/ins" ||
    fail "insert -I 1 said: $(cat "$SCRATCH/ins")"
  nv id-ctrl "${C[@]}" --tls-key-file "$SCRATCH/key" --tls-identity 1 || fail "version 1, inserted by us: $(why)"
  tb tls unkey
  "${ins[@]}" --compat > /dev/null || fail "insert --compat"
  nv id-ctrl "${C[@]}" --tls-key-file "$SCRATCH/key" --tls-compat || fail "compat: $(why)"
  must_fail "queue 0: TLS handshake: the controller (closed the connection|refused the PSK)" \
    id-ctrl "${C[@]}" --tls-key-file "$SCRATCH/key"
}

# SHA-384 keys (NVMeTLSkey-1:02:) against this tlshd: built against Debian
# 12's GnuTLS 3.7.9, which has no gnutls_psk_allocate_server_credentials2,
# tlshd allocates its server PSK credentials without a hash and GnuTLS takes
# every PSK for SHA-256: the binder of a SHA-384 PSK (TLS_AES_256_GCM_SHA384,
# what the key's hash names) does not verify on its side, "illegal
# parameter" in its log, with the key in the keyring. Ours must fail closed,
# in one line, final. SHA-384 works against SPDK's target (tls-spdk.sh).
t_sha384_key_fails_closed_against_this_tlshd() {
  (umask 077; "$T" gen-tls-key -m 2 > "$SCRATCH/k384")
  local k n0; k=$(cat "$SCRATCH/k384")
  tb tls unkey; tb tls key "$k" "$HN" "" 0
  n0=$(tb tls log | grep -c "" || true)
  must_fail "queue 0: TLS handshake: the controller (refused the PSK|closed the connection)" \
    id-ctrl "${C[@]}" --tls-key-file "$SCRATCH/k384"
  ! grep -qF "${k:16:20}" "$SCRATCH/out" || fail "the SHA-384 key in the message"
  tb tls log | tail -n +$((n0 + 1)) | grep -q "gnutls: An illegal parameter has been received" ||
    fail "tlshd failed otherwise: $(tb tls log | tail -n +$((n0 + 1)) | tail -4 | tr '\n' ' ')"
}

# the kernel's kTLS here: a KeyUpdate ends the connection in one line, a
# session ticket is dropped (tests/unit/test_ktls.c, which skips where
# the kernel has no tls module)
t_ktls_key_update_ends_the_connection() {
  timeout 60 "$B/tests/unit_ktls" a_key_update_on_a_kernel_tls_socket_ends_the_connection > "$SCRATCH/out" 2>&1 ||
    fail "$(cat "$SCRATCH/out")"
  grep -q "1 passed, 0 failed, 0 skipped" "$SCRATCH/out" || fail "$(cat "$SCRATCH/out")"
  grep "KeyUpdate" "$SCRATCH/out"
}

run_tests "$@"
