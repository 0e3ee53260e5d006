#!/bin/bash
# In-band authentication (DH-HMAC-CHAP) against nvmet, which checks it only
# on a kernel with CONFIG_NVME_TARGET_AUTH (Debian's 6.12, not 6.1): run as
#   NVMEOF_TB_STATE=build/testbed612 tests/testbed/run bash tests/target/auth.sh
# (tests/testbed/setup with NVMEOF_TB_KERNEL_PKG=linux-image-6.12...-amd64
# makes that state). Subsystem B admits only NVMEOF_TB_HOSTNQN_B (no
# allow_any_host, as nvmet needs for authentication): each test configures
# that host's keys, hash and group in configfs as a user would, then
# connects with our tool, the engine, or the kernel host.
# NVMEOF_TB_TRTYPE=tcp: all of it over the target's NVMe/TCP port (the same
# number), ours and the kernel host's.
source "$(dirname "$0")/lib.sh"
B=${NVMEOF_BUILD:-build/out}
T=$B/nvmeof
# fio and python are not instrumented: a sanitized build's engine and
# library need the ASan runtime loaded first (NVMEOF_ASAN_RT, as run-all.sh).
# Leaks are checked (LeakSanitizer's report: clean() reads it) in the
# sanitized tool, ours alone, and in fio as faults.sh does: an allocation's
# stack kept to its first caller, and lsan-fio.supp dropping those whose
# caller is fio itself (fio's job processes end in _exit, unchecked: its
# parent and thread-mode jobs are). Not in python, whose own leaks at exit
# have stacks that cannot be told from ours (some frames without symbols).
pre() { if [ -n "${NVMEOF_ASAN_RT:-}" ]; then LD_PRELOAD=$NVMEOF_ASAN_RT ASAN_OPTIONS=detect_leaks=0 "$@"; else "$@"; fi; }
prefio() { # timeout SECONDS fio ARGS...: timeout's own leaks unchecked, fio's checked
  if [ -n "${NVMEOF_ASAN_RT:-}" ]; then
    pre "$1" "$2" env ASAN_OPTIONS=detect_leaks=1:malloc_context_size=2:symbolize=0 \
      LSAN_OPTIONS=suppressions=$PWD/tests/target/lsan-fio.supp:print_suppressions=0 "${@:3}"
  else "$@"; fi
}
H=/sys/kernel/config/nvmet/hosts/$NVMEOF_TB_HOSTNQN_B
TR=rdma; [ "${NVMEOF_TB_TRTYPE:-}" = tcp ] && TR=tcp
export AUTH_TR=$TR # Python's transport
FT="trtype=${TR^^} " # the engine's filename
CONN=(-t "$TR" -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_PORT" -n "$NVMEOF_TB_NQN_B" -q "$NVMEOF_TB_HOSTNQN_B")

[ -e "$H/dhchap_key" ] || { echo "auth: this kernel's nvmet has no authentication (needs 6.12: see the header)"; exit 2; }
# nvme-cli makes the keys: what it writes is what our parser must read
HK=$(nvme gen-dhchap-key --key-length=32 --hmac=1 --nqn="$NVMEOF_TB_HOSTNQN_B")
CK=$(nvme gen-dhchap-key --key-length=48 --hmac=2 --nqn="$NVMEOF_TB_NQN_B")
OTHER=$(nvme gen-dhchap-key --key-length=32 --hmac=0)

target() { # HASH DHGROUP HOSTKEY [CTRLKEY]: every write checked, and read back
  echo "hmac($1)" > "$H/dhchap_hash" || fail "configfs: dhchap_hash hmac($1)"
  echo "$2" > "$H/dhchap_dhgroup" || fail "configfs: dhchap_dhgroup $2"
  echo "$3" > "$H/dhchap_key" || fail "configfs: dhchap_key"
  # nvmet refuses an empty key: a controller key once set stays, and the
  # host decides whether to ask for the controller's response
  [ -z "${4:-}" ] || echo "$4" > "$H/dhchap_ctrl_key" || fail "configfs: dhchap_ctrl_key"
  [ "$(cat "$H/dhchap_hash")" = "hmac($1)" ] || fail "configfs: dhchap_hash reads $(cat "$H/dhchap_hash")"
  [ "$(cat "$H/dhchap_dhgroup")" = "$2" ] || fail "configfs: dhchap_dhgroup reads $(cat "$H/dhchap_dhgroup")"
}
# negotiated HASHID DHGID BIDIR [HOSTSECRET [CTRLSECRET]]: connects through
# Python and asserts what the admin queue's transaction negotiated
negotiated() {
  NVMEOF_LIB=$PWD/$B/libnvmeof.so PYTHONPATH=python pre python3 - "$@" <<'PY' || fail "negotiated $*"
import os, sys, nvmeof
want = [set(int(v) for v in x.split("|")) for x in sys.argv[1:4]]
keys = dict(zip(("dhchap_secret", "dhchap_ctrl_secret"), sys.argv[4:]))
keys.update(dhchap_hashes=os.environ.get("NEG_HASHES"), dhchap_dhgroups=os.environ.get("NEG_DHGROUPS"))
with nvmeof.Controller(os.environ["NVMEOF_TB_ADDR"], os.environ["NVMEOF_TB_NQN_B"],
                       host_nqn=os.environ["NVMEOF_TB_HOSTNQN_B"], transport=os.environ["AUTH_TR"], **keys) as c:
    i = c.info
    got = (i.auth_hash, i.auth_dhgroup, int(i.auth_bidirectional))
    assert all(g in w for g, w in zip(got, want)), "negotiated %r, expected %r" % (got, want)
PY
}
# negotiated_each HOSTSECRET CTRLSECRET CASE...: each CASE "HASH DHGROUP
# HASHID DHGID BIDIR..." configured on nvmet as target() does (the
# controller key too: the host decides whether to ask for its response),
# then, for each BIDIR (0: the host secret alone, 1: both), a connect
# through Python asserting what the admin queue negotiated. One Python
# process for every case: under emulation, with the ASan runtime, each
# start of it takes seconds, more than the connect.
negotiated_each() {
  NVMEOF_LIB=$PWD/$B/libnvmeof.so PYTHONPATH=python AUTH_HOST_DIR=$H pre python3 - "$@" <<'PY' || fail "negotiated_each: ${*:3}" # (not the secrets)
import os, sys, nvmeof
hk, ck = sys.argv[1:3]
def path(name):
    return os.path.join(os.environ["AUTH_HOST_DIR"], name)
def put(name, value):
    with open(path(name), "w") as f:
        f.write(value + "\n")
def get(name):
    with open(path(name)) as f:
        return f.read().strip()
for case in sys.argv[3:]:
    h, g, hashid, dhgid, *bidirs = case.split()
    for name, value in (("dhchap_hash", "hmac(%s)" % h), ("dhchap_dhgroup", g), ("dhchap_key", hk), ("dhchap_ctrl_key", ck)):
        put(name, value)
    assert (get("dhchap_hash"), get("dhchap_dhgroup")) == ("hmac(%s)" % h, g), (case, get("dhchap_hash"), get("dhchap_dhgroup"))
    for bidir in bidirs:
        keys = dict(dhchap_secret=hk, dhchap_ctrl_secret=ck) if bidir == "1" else dict(dhchap_secret=hk)
        with nvmeof.Controller(os.environ["NVMEOF_TB_ADDR"], os.environ["NVMEOF_TB_NQN_B"],
                               host_nqn=os.environ["NVMEOF_TB_HOSTNQN_B"], transport=os.environ["AUTH_TR"], **keys) as c:
            i = c.info
            got = (i.auth_hash, i.auth_dhgroup, int(i.auth_bidirectional))
            assert got == (int(hashid), int(dhgid), int(bidir)), "%s: negotiated %r, expected %s" % (case, got, (hashid, dhgid, bidir))
    print("    %s %s: negotiated as configured (bidirectional: %s)" % (h, g, " ".join(bidirs)))
PY
}
clean() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@" || { grep -hE -A5 'Sanitizer|runtime error' "$@" | head -20; fail "sanitizer report"; }; }
idctrl() { timeout 60 "$T" id-ctrl "${CONN[@]}" -t 10000 "$@" > "$SCRATCH/out" 2>&1; }
must_pass() {
  idctrl "$@" || fail "$(cat "$SCRATCH/out")"
  grep -q '^sn ' "$SCRATCH/out" || fail "no Identify: $(head -3 "$SCRATCH/out")"
  clean "$SCRATCH/out" # the sanitized tool checks its leaks at exit
}
must_fail() { # PATTERN ARGS...: fails within the timeout, saying PATTERN, no secret in it
  local pat=$1; shift
  local rc=0; idctrl "$@" || rc=$?
  [ "$rc" != 0 ] || fail "connected"
  [ "$rc" != 124 ] || fail "hung past 60 s"
  grep -q "$pat" "$SCRATCH/out" || fail "expected '$pat': $(cat "$SCRATCH/out")"
  clean "$SCRATCH/out"
  ! grep -qF "${HK:10:20}" "$SCRATCH/out" && ! grep -qF "${CK:10:20}" "$SCRATCH/out" || fail "a secret in the message"
  echo "    $(tail -1 "$SCRATCH/out")"
}

# each case through the tool, then what each negotiated through Python
t_every_hash_null_and_ffdhe2048_uni_and_bidirectional() {
  local h g hi=0 gi cases=()
  for h in sha256 sha384 sha512; do
    hi=$((hi + 1)) gi=0
    for g in null ffdhe2048; do
      target $h $g "$HK"
      must_pass -S "$HK"
      target $h $g "$HK" "$CK"
      must_pass -S "$HK" -C "$CK"
      cases+=("$h $g $hi $gi 0 1")
      gi=$((gi + 1))
    done
  done
  negotiated_each "$HK" "$CK" "${cases[@]}"
}

t_larger_groups() {
  local g gi=1 cases=()
  for g in ffdhe3072 ffdhe4096 ffdhe6144 ffdhe8192; do
    gi=$((gi + 1))
    target sha512 $g "$HK" "$CK"
    must_pass --dhchap-secret="$HK" --dhchap-ctrl-secret="$CK"
    cases+=("sha512 $g 3 $gi 1")
  done
  negotiated_each "$HK" "$CK" "${cases[@]}"
}

# A controller secret means the controller must prove itself. Subsystem A
# requires no authentication (ATR clear): the host starts the transaction,
# nvmet cannot complete it (it holds no key for us), and the connect fails
# saying so; the opt-in connects without authenticating it, and a host
# secret alone asks nothing of the controller.
t_a_controller_secret_is_required_of_a_controller_that_does_not_ask() {
  local A=(-t "$TR" -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_PORT" -n "$NVMEOF_TB_NQN_A" -t 10000)
  local rc=0
  timeout 60 "$T" id-ctrl "${A[@]}" -S "$HK" -C "$CK" > "$SCRATCH/out" 2>&1 || rc=$?
  [ "$rc" != 0 ] || fail "connected to a controller that never proved the controller secret"
  [ "$rc" != 124 ] || fail "hung past 60 s"
  grep -q 'did not ask for authentication' "$SCRATCH/out" || fail "no reason: $(cat "$SCRATCH/out")"
  grep -q 'allow_unauthenticated_ctrl' "$SCRATCH/out" || fail "no way out named: $(cat "$SCRATCH/out")"
  ! grep -qF "${CK:10:20}" "$SCRATCH/out" || fail "a secret in the message"
  clean "$SCRATCH/out"
  echo "    $(grep 'did not ask' "$SCRATCH/out" | cut -c1-300)"
  timeout 60 "$T" id-ctrl "${A[@]}" -S "$HK" -C "$CK" --allow-unauthenticated-ctrl > "$SCRATCH/out" 2>&1 ||
    fail "the opt-in: $(cat "$SCRATCH/out")"
  grep -q '^sn ' "$SCRATCH/out" || fail "no Identify with the opt-in"
  timeout 60 "$T" id-ctrl "${A[@]}" -S "$HK" > "$SCRATCH/out" 2>&1 || fail "a host secret alone: $(cat "$SCRATCH/out")"
  # the engine says the same
  rc=0
  prefio timeout 120 fio --name=a --ioengine=external:"$PWD/$B/libnvmeof_fio.so" \
    --filename="${FT}traddr=$NVMEOF_TB_ADDR subnqn=${NVMEOF_TB_NQN_A//:/\\:} ns=1" \
    --dhchap_secret="$HK" --dhchap_ctrl_secret="$CK" --rw=read --size=1m > "$SCRATCH/fio" 2>&1 || rc=$?
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "fio against a controller that does not ask: rc $rc"
  grep -q 'did not ask for authentication' "$SCRATCH/fio" || fail "fio's message: $(grep nvmeof "$SCRATCH/fio" | head -3)"
  grep -q 'warning: dhchap_secret in the job' "$SCRATCH/fio" || fail "no warning for an inline secret"
  clean "$SCRATCH/fio"
}

# What the host offers: the controller must choose from it. nvmet falls
# back to a hash of the host's list when its configured one is not offered,
# but chooses its configured null group even when the host did not offer
# null: the host refuses that, so a user who leaves out null never goes
# without a DH exchange.
t_offered_hashes_and_groups_are_what_the_user_allows() {
  target sha384 null "$HK" "$CK"
  must_fail 'null), which we did not offer' -S "$HK" --dhchap-dhgroups=ffdhe2048,ffdhe3072
  target sha384 ffdhe3072 "$HK" "$CK"
  must_pass -S "$HK" -C "$CK" --dhchap-dhgroups=ffdhe2048,ffdhe3072 --dhchap-hashes=sha384
  NEG_HASHES=sha256,sha512 negotiated '1|3' 2 0 "$HK"
  NEG_DHGROUPS=ffdhe3072 NEG_HASHES=sha384 negotiated 2 2 1 "$HK" "$CK"
  must_fail "'md5' is none of" -S "$HK" --dhchap-hashes=sha256,md5
}

t_info_reports_how_it_authenticated() {
  target sha384 ffdhe2048 "$HK" "$CK"
  NVMEOF_LIB=$PWD/$B/libnvmeof.so PYTHONPATH=python pre python3 - "$HK" "$CK" <<'PY' || fail "info"
import os, sys, nvmeof
with nvmeof.Controller(os.environ["NVMEOF_TB_ADDR"], os.environ["NVMEOF_TB_NQN_B"],
                       host_nqn=os.environ["NVMEOF_TB_HOSTNQN_B"], transport=os.environ["AUTH_TR"],
                       dhchap_secret=sys.argv[1], dhchap_ctrl_secret=sys.argv[2]) as c:
    i = c.info
    assert (i.auth_hash, i.auth_dhgroup, i.auth_bidirectional) == (2, 1, True), (i.auth_hash, i.auth_dhgroup)
    assert (i.hca == "tcp") == (os.environ["AUTH_TR"] == "tcp"), i.hca  # the transport asked for
    ns = c.namespace(1)
    with c.allocate(4096) as buf:
        ns.read(buf, slba=0, blocks=4096 // ns.lba_size)  # an I/O queue, authenticated too
    assert c.info.auth_io_queues >= 1, c.info.auth_io_queues
PY
}

t_wrong_and_missing_secrets_fail_clearly() {
  target sha256 ffdhe2048 "$HK" "$CK"
  must_fail 'wrong host secret' --dhchap-secret="$OTHER"
  must_fail 'does not match the controller secret' --dhchap-secret="$HK" --dhchap-ctrl-secret="$OTHER"
  must_fail 'requires in-band authentication' # no secret at all
  must_fail 'CRC-32 mismatch' --dhchap-secret="${HK%?????}AAAA:"
}

# io-passthru and admin-passthru take the same secret options (and files) as
# the other subcommands: they reach an authenticating target, and refuse
# one by name without them; no message shows a secret
t_passthru_subcommands_authenticate() {
  target sha256 ffdhe2048 "$HK" "$CK"
  local rc=0
  timeout 60 "$T" admin-passthru "${CONN[@]}" -O 6 --cdw10=1 -l 4096 -r > "$SCRATCH/out" 2>&1 || rc=$?
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "admin-passthru without a secret: rc $rc"
  grep -q 'requires in-band authentication' "$SCRATCH/out" || fail "$(cat "$SCRATCH/out")"
  printf '%s\n' "$HK" > "$SCRATCH/hk"
  chmod 600 "$SCRATCH/hk"
  timeout 60 "$T" admin-passthru "${CONN[@]}" -O 6 --cdw10=1 -l 4096 -r --dhchap-secret-file="$SCRATCH/hk" \
    -C "$CK" > "$SCRATCH/out" 2>&1 || fail "admin-passthru with the secrets: $(cat "$SCRATCH/out")"
  grep -q 'NVMe command result:' "$SCRATCH/out" || fail "no result: $(head -3 "$SCRATCH/out")"
  timeout 60 "$T" io-passthru "${CONN[@]}" -n 1 -O 0 -S "$HK" --dhchap-ctrl-secret="$CK" > "$SCRATCH/out2" 2>&1 ||
    fail "io-passthru Flush with the secrets: $(cat "$SCRATCH/out2")"
  clean "$SCRATCH/out" "$SCRATCH/out2"
  ! grep -qF "${HK:10:20}" "$SCRATCH/out" "$SCRATCH/out2" && ! grep -qF "${CK:10:20}" "$SCRATCH/out" "$SCRATCH/out2" ||
    fail "a secret in the output"
}

t_kernel_host_with_the_same_secrets_reads_what_we_wrote() {
  target sha256 ffdhe2048 "$HK" "$CK"
  head -c 65536 /dev/urandom > "$SCRATCH/in"
  timeout 60 "$T" write "${CONN[@]}" -n 1 --start-block=64 --data="$SCRATCH/in" \
    --dhchap-secret="$HK" --dhchap-ctrl-secret="$CK" >/dev/null || fail "our write"
  timeout 60 nvme connect -t "$TR" -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_PORT" -n "$NVMEOF_TB_NQN_B" \
    -q "$NVMEOF_TB_HOSTNQN_B" --dhchap-secret="$HK" --dhchap-ctrl-secret="$CK" >/dev/null 2>&1 \
    || fail "the kernel host did not connect with the same secrets"
  local dev; dev=$(tb kdev "$NVMEOF_TB_NQN_B" 1) || { tb kdisconnect "$NVMEOF_TB_NQN_B"; fail "no kernel block device"; }
  local lba; lba=$(cat "/sys/block/$(basename "$dev")/queue/logical_block_size")
  dd if="$dev" of="$SCRATCH/kout" bs=$lba skip=64 count=$((65536 / lba)) iflag=direct status=none
  head -c 65536 /dev/urandom > "$SCRATCH/kin"
  dd if="$SCRATCH/kin" of="$dev" bs=$lba seek=4096 oflag=direct status=none
  tb kdisconnect "$NVMEOF_TB_NQN_B"
  cmp -s "$SCRATCH/in" "$SCRATCH/kout" || fail "the kernel read other data than we wrote"
  timeout 60 "$T" read "${CONN[@]}" -n 1 --start-block=4096 --block-count=$((65536 / lba)) --data="$SCRATCH/out2" \
    --dhchap-secret="$HK" --dhchap-ctrl-secret="$CK" >/dev/null || fail "our read"
  cmp -s "$SCRATCH/kin" "$SCRATCH/out2" || fail "we read other data than the kernel wrote"
}

t_fio_with_several_queue_pairs_verifies() {
  target sha512 ffdhe2048 "$HK" "$CK"
  printf '%s\n' "$HK" > "$SCRATCH/hk"
  printf '%s\n' "$CK" > "$SCRATCH/ck"
  chmod 644 "$SCRATCH/hk"
  chmod 600 "$SCRATCH/ck"
  prefio timeout 300 fio --name=auth --ioengine=external:"$PWD/$B/libnvmeof_fio.so" \
    --filename="${FT}traddr=$NVMEOF_TB_ADDR subnqn=${NVMEOF_TB_NQN_B//:/\\:} ns=1" --hostnqn="$NVMEOF_TB_HOSTNQN_B" \
    --dhchap_secret_file="$SCRATCH/hk" --dhchap_ctrl_secret_file="$SCRATCH/ck" --qpairs=3 --iodepth=12 \
    --rw=randwrite --bs=4k --size=4m --verify=crc32c --do_verify=1 --output-format=json \
    > "$SCRATCH/fio.json" 2> "$SCRATCH/fio.err" || fail "fio: $(tail -3 "$SCRATCH/fio.err")"
  ! grep -qF "${HK:10:20}" "$SCRATCH/fio.json" "$SCRATCH/fio.err" || fail "a secret in fio's output"
  grep -q "dhchap_secret_file '$SCRATCH/hk' is readable by group or others" "$SCRATCH/fio.err" ||
    fail "no warning for a 0644 secret file: $(grep nvmeof "$SCRATCH/fio.err" | head -3)"
  ! grep -q "dhchap_ctrl_secret_file.*readable" "$SCRATCH/fio.err" || fail "a warning for a 0600 file"
  # a wrong secret: fio exits non-zero
  printf '%s\n' "$OTHER" > "$SCRATCH/bad"
  local rc=0
  prefio timeout 120 fio --name=auth --ioengine=external:"$PWD/$B/libnvmeof_fio.so" \
    --filename="${FT}traddr=$NVMEOF_TB_ADDR subnqn=${NVMEOF_TB_NQN_B//:/\\:} ns=1" --hostnqn="$NVMEOF_TB_HOSTNQN_B" \
    --dhchap_secret_file="$SCRATCH/bad" --rw=read --size=1m > "$SCRATCH/fio2" 2>&1 || rc=$?
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "fio with a wrong secret: rc $rc"
  clean "$SCRATCH/fio.err" "$SCRATCH/fio2"
  grep -q 'wrong host secret' "$SCRATCH/fio2" || fail "fio's message: $(grep nvmeof "$SCRATCH/fio2" | head -2)"
}

# A reconnect across a port outage authenticates again (the I/O queues from
# their poll, the admin queue on the new association); with the key changed
# on the target meanwhile, the attempts fail by name until ctrl_loss_tmo,
# and fio ends non-zero instead of hanging. 32 MiB written and verified
# outlast the outage, which starts once the job has connected: a job
# that ended first would show no reconnect, which the tests require.
reconnect_job() { # LOG CTRL_LOSS_TMO
  prefio timeout 180 fio --name=rc --ioengine=external:"$PWD/$B/libnvmeof_fio.so" --thread=1 \
    --filename="${FT}traddr=$NVMEOF_TB_ADDR subnqn=${NVMEOF_TB_NQN_B//:/\\:} ns=1" --hostnqn="$NVMEOF_TB_HOSTNQN_B" \
    --dhchap_secret_file="$SCRATCH/hk" --dhchap_ctrl_secret_file="$SCRATCH/ck" --verbose=1 \
    --rw=randwrite --bs=4k --size=32m --iodepth=8 --verify=crc32c --do_verify=1 --qpairs=2 \
    --reconnect_delay=500ms --ctrl_loss_tmo="$2" --cmd_timeout=10s > "$1" 2>&1
}
t_reconnect_authenticates_again() {
  target sha256 ffdhe2048 "$HK" "$CK"
  printf '%s\n' "$HK" > "$SCRATCH/hk"
  printf '%s\n' "$CK" > "$SCRATCH/ck"
  reconnect_job "$SCRATCH/log" 30s &
  local pid=$!
  wait_connected "$SCRATCH/log" $pid
  kill -0 $pid 2>/dev/null || { tail "$SCRATCH/log"; fail "fio ended before the outage"; }
  tb port-down "$TR"; sleep 3; tb port-up "$TR"
  wait $pid || { grep -E 'nvmeof|err' "$SCRATCH/log" | tail -20; fail "fio failed across the outage"; }
  clean "$SCRATCH/log"
  grep -q 'reconnected' "$SCRATCH/log" || fail "no reconnect: did the outage happen during I/O?"
  grep -q 'authentication required after the reconnect' "$SCRATCH/log" || fail "an I/O queue reconnected without authenticating"
  # the DH step, tens of ms at the larger groups, left the queue's poll
  grep -q "the DH step (ffdhe2048) on the reconnect's worker" "$SCRATCH/log" || fail "the DH step did not run on the reconnect's worker"
  grep 'authenticated: DH-HMAC-CHAP' "$SCRATCH/log" | sort | uniq -c | sed 's/^/    /' | head -5
}
t_reconnect_with_a_changed_key_fails_clearly() {
  target sha256 null "$HK" "$CK"
  printf '%s\n' "$HK" > "$SCRATCH/hk"
  printf '%s\n' "$CK" > "$SCRATCH/ck"
  reconnect_job "$SCRATCH/log" 8s &
  local pid=$! t0 rc=0
  wait_connected "$SCRATCH/log" $pid
  kill -0 $pid 2>/dev/null || { tail "$SCRATCH/log"; fail "fio ended before the outage"; }
  tb port-down "$TR"
  echo "$OTHER" > "$H/dhchap_key"
  sleep 1; tb port-up "$TR"
  t0=$(date +%s)
  wait $pid || rc=$?
  [ $rc != 0 ] || fail "fio succeeded with the key changed on the target"
  [ $rc != 124 ] || fail "fio hung"
  # not a speed check: fio must give up at ctrl_loss_tmo (8 s) rather than
  # retry forever; 60 s is a loaded emulator's margin many times over
  [ $(( $(date +%s) - t0 )) -le 60 ] || fail "fio did not give up within 60 s (ctrl_loss_tmo 8 s)"
  clean "$SCRATCH/log"
  grep -q 'wrong host secret' "$SCRATCH/log" || { grep nvmeof "$SCRATCH/log" | tail -8; fail "no clear reason"; }
  ! grep -qF "${HK:10:20}" "$SCRATCH/log" || fail "a secret in the log"
  echo "    $(grep -m1 'wrong host secret' "$SCRATCH/log" | cut -c1-400)"
}

# A controller that fails the host's check after a reconnect (its key
# changed on the target during the outage: an impostor looks the same) is
# not asked again until ctrl_loss_tmo: the attempt that re-creates the
# association and authenticates the admin queue ends every queue's
# reconnect, saying that it is final.
t_reconnect_with_a_changed_controller_key_is_final() {
  target sha256 null "$HK" "$CK"
  printf '%s\n' "$HK" > "$SCRATCH/hk"
  printf '%s\n' "$CK" > "$SCRATCH/ck"
  reconnect_job "$SCRATCH/log" 30s &
  local pid=$! rc=0
  wait_connected "$SCRATCH/log" $pid
  kill -0 $pid 2>/dev/null || { tail "$SCRATCH/log"; fail "fio ended before the outage"; }
  tb port-down "$TR"
  echo "$OTHER" > "$H/dhchap_ctrl_key"
  sleep 1; tb port-up "$TR"
  wait $pid || rc=$?
  [ $rc != 0 ] || fail "fio succeeded with the controller key changed on the target"
  [ $rc != 124 ] || fail "fio hung"
  clean "$SCRATCH/log"
  # (sed reads to the end: head would leave grep a closed pipe on a long
  # log, and under pipefail the SIGPIPE ended the test here, unexplained)
  local why; why=$(grep -E 'reconnect|association|authentication|match|gave up' "$SCRATCH/log" | grep -v 'queue state' | sed -n 1,20p | cut -c1-400)
  grep -q 'does not match the controller secret' "$SCRATCH/log" || { echo "$why"; fail "no clear reason"; }
  grep -q 'the authentication failed, which is final' "$SCRATCH/log" ||
    { echo "$why"; fail "the failed authentication was not said to be final"; }
  ! grep -q 'gave up reconnecting' "$SCRATCH/log" || { echo "$why"; fail "retried until ctrl_loss_tmo"; }
  # attempts before it (the port still down) are fine; none after it, where
  # every reconnect_delay until ctrl_loss_tmo would try the same key again:
  # nothing after it reaches the target (re-creating the association is the
  # first thing any attempt on a lost association does) and nothing comes
  # back. (An I/O queue's "reconnect attempt" line may be printed just after
  # it, its attempt then ending at the refusal without a word to the target.)
  local first; first=$(grep -n -m1 'which is final' "$SCRATCH/log" | cut -d: -f1)
  ! tail -n +"$first" "$SCRATCH/log" | grep -qE 're-creating the association|reconnect done' ||
    { echo "$why"; fail "tried again after the final failure"; }
  ! grep -qF "${CK:10:20}" "$SCRATCH/log" || fail "a secret in the log"
  echo "    $(grep -m1 'which is final' "$SCRATCH/log" | cut -c1-400)"
}

run_tests "$@"
