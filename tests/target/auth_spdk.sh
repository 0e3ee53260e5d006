#!/bin/bash
# In-band authentication against SPDK's target (a second, independent
# reading of DH-HMAC-CHAP: keys through its keyring, its own choice of hash
# and group), on the 6.12 test bed beside auth.sh:
#   NVMEOF_TB_STATE=build/testbed612 tests/testbed/run bash tests/target/auth_spdk.sh
# SPDK's nvmf_tgt is not part of the project: tests/target/spdk-dir.sh says
# where its prebuilt copy is, and when the suite skips.
# The tests run over RDMA (NVMEOF_TB_TRTYPE=tcp: over TCP), and the t_tcp_
# ones over SPDK's NVMe/TCP transport, from one start of the target: it
# serves both (each start costs tens of seconds under emulation).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/spdk-dir.sh"
B=${NVMEOF_BUILD:-build/out}
T=$B/nvmeof
spdk_dir auth_spdk
TR=rdma; [ "${NVMEOF_TB_TRTYPE:-}" = tcp ] && TR=tcp
PORT=4422 # not nvmet's 4420, nor 4421 (tool.sh expects nobody there)
NQN=nqn.2026-12.io.nvmeof:spdk-auth
OPEN=nqn.2026-12.io.nvmeof:spdk-open # any host, no authentication
HOST=$NVMEOF_TB_HOSTNQN_B
spdk_start "$SCRATCH/tgt.log" || { echo "auth_spdk: SPDK's target did not start"; exit 1; }
# ended with all it started, so that the next suite's target does not find
# this one still holding its cores
trap 'end_tree "$SPDK_PID"' EXIT
HK=$(nvme gen-dhchap-key --key-length=48 --hmac=2 --nqn="$HOST")
CK=$(nvme gen-dhchap-key --key-length=64 --hmac=3 --nqn="$NQN")
printf '%s\n' "$HK" > "$SCRATCH/hk"
printf '%s\n' "$CK" > "$SCRATCH/ck"
chmod 600 "$SCRATCH/hk" "$SCRATCH/ck" # SPDK's keyring refuses anything looser
# One rpc run for the whole setup: under emulation each run of SPDK's Python
# client takes about 5 s to start, the commands themselves next to nothing.
setup() {
  spdk_config <<EOF
nvmf_create_transport -t RDMA -u 8192 -c 4096
nvmf_create_transport -t TCP -u 8192 -c 4096
bdev_malloc_create -b M0 32 512
bdev_malloc_create -b M1 32 512
keyring_file_add_key key0 $SCRATCH/hk
keyring_file_add_key key1 $SCRATCH/ck
nvmf_create_subsystem $NQN -s SPDKAUTH0001
nvmf_subsystem_add_ns $NQN M0
nvmf_subsystem_add_listener $NQN -t rdma -a $NVMEOF_TB_ADDR -s $PORT
nvmf_subsystem_add_listener $NQN -t tcp -a $NVMEOF_TB_ADDR -s $PORT
nvmf_subsystem_add_host $NQN $HOST --dhchap-key key0 --dhchap-ctrlr-key key1
nvmf_create_subsystem $OPEN -a -s SPDKOPEN0001
nvmf_subsystem_add_ns $OPEN M1
nvmf_subsystem_add_listener $OPEN -t rdma -a $NVMEOF_TB_ADDR -s $PORT
nvmf_subsystem_add_listener $OPEN -t tcp -a $NVMEOF_TB_ADDR -s $PORT
EOF
} > "$SCRATCH/setup" 2>&1
setup || { cat "$SCRATCH/setup"; echo "auth_spdk: configuring SPDK's target failed"; exit 1; }

idctrl() { # SUBNQN ARGS...
  local n=$1; shift
  timeout 60 "$T" id-ctrl -t "$TR" -a "$NVMEOF_TB_ADDR" -s $PORT -n "$n" -q "$HOST" -t 10000 "$@" > "$SCRATCH/out" 2>&1
}

# each hash and group forced by offering only it; both directions
t_every_hash_and_group_bidirectional() {
  local h g
  for h in sha256 sha384 sha512; do
    for g in null ffdhe2048 ffdhe3072 ffdhe4096; do
      idctrl "$NQN" --dhchap-secret-file="$SCRATCH/hk" --dhchap-ctrl-secret-file="$SCRATCH/ck" \
        --dhchap-hashes=$h --dhchap-dhgroups=$g || fail "$h $g: $(tail -2 "$SCRATCH/out")"
      grep -q '^sn .*SPDKAUTH0001' "$SCRATCH/out" || fail "$h $g: no Identify"
    done
  done
}

# many DH exchanges: SPDK once sent values one byte short (about 1 in 256),
# which the host now reads left-padded
t_many_ffdhe2048_exchanges() {
  local i
  # (a value one byte short is checked deterministically in
  # tests/unit/test_auth.c; here, repeated exchanges with SPDK itself)
  for ((i = 0; i < 16; i++)); do
    idctrl "$NQN" --dhchap-secret-file="$SCRATCH/hk" --dhchap-ctrl-secret-file="$SCRATCH/ck" \
      --dhchap-dhgroups=ffdhe2048 || fail "exchange $i: $(tail -2 "$SCRATCH/out")"
  done
}

t_wrong_secrets_fail_by_name() {
  local other; other=$(nvme gen-dhchap-key --key-length=48 --hmac=2 --nqn="$HOST")
  printf '%s\n' "$other" > "$SCRATCH/other"
  chmod 600 "$SCRATCH/other"
  ! idctrl "$NQN" --dhchap-secret-file="$SCRATCH/other" || fail "connected with a wrong host secret"
  grep -q 'wrong host secret' "$SCRATCH/out" || fail "$(cat "$SCRATCH/out")"
  ! grep -qF "${other:10:20}" "$SCRATCH/out" || fail "a secret in the message"
}

# SPDK accepts a host-initiated transaction on a queue that did not ask;
# holding no key for this subsystem and host, it cannot complete it
t_a_controller_secret_is_required_of_a_controller_that_does_not_ask() {
  ! idctrl "$OPEN" -S "$HK" -C "$CK" || fail "connected without the controller proving its secret"
  grep -q 'did not ask for authentication' "$SCRATCH/out" || fail "$(cat "$SCRATCH/out")"
  idctrl "$OPEN" -S "$HK" -C "$CK" --allow-unauthenticated-ctrl || fail "the opt-in: $(cat "$SCRATCH/out")"
}

# over SPDK's NVMe/TCP transport: it answers an AUTH_Receive with the message
# alone, shorter than the buffer (SUCCESS on the data, no response)
t_tcp_every_hash_and_group_bidirectional() { TR=tcp t_every_hash_and_group_bidirectional; }
t_tcp_wrong_secrets_fail_by_name() { TR=tcp t_wrong_secrets_fail_by_name; }

run_tests "$@"
