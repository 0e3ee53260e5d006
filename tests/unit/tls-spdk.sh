#!/bin/bash
# tests/unit/tls-spdk.sh [BUILD_DIR]: NVMe/TCP over TLS 1.3 (PSK) against
# SPDK's target, natively over 127.0.0.1 (no guest): nvmf_tgt of its own
# (its own RPC socket and ports, no hugepages), TLS listeners with
# --secure-channel, PSKs in its keyring. The tool connects with the right
# SHA-256 and SHA-384 keys and checks what it wrote by reading it back;
# a wrong key, no key, --tls without a key, a key of the other hash and a
# port without TLS each fail closed, with a message that names the step and
# never holds the key. Skips (77) only where no SPDK target is beside the
# checkout (tests/target/spdk-dir.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/out}
T=$(pwd)/$B/nvmeof
source tests/tally.sh
source tests/target/spdk-dir.sh
spdk_dir tls-spdk.sh
tmp=$(mktemp -d)
pid=
cleanup() {
  # only the nvmf_tgt this suite started
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
SOCK=/var/tmp/spdk-tls-$$.sock
R() { timeout 30 "$SPDK/rpc" -s "$SOCK" "$@" > "$tmp/rpc.out" 2>&1 || { echo "rpc $1 failed: $(tail -3 "$tmp/rpc.out")"; exit 1; }; }
# two free ports from 4460 on (another engineer's nvmf_tgt may hold others)
P=
for p in $(seq 4460 2 4498); do
  command -v ss > /dev/null || { P=$p; break; }
  if ! ss -Hltn "( sport = :$p or sport = :$((p + 1)) )" | grep -q .; then P=$p; break; fi
done
[ -n "$P" ] || { echo "tls-spdk.sh: no two free ports in 4460..4499"; exit 1; }
P2=$((P + 1))

"$SPDK/bin/nvmf_tgt" -m 0x1 -r "$SOCK" -s 512 --no-huge --disable-cpumask-locks > "$tmp/tgt.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  [ -S "$SOCK" ] && "$SPDK/rpc" -s "$SOCK" spdk_get_version > /dev/null 2>&1 && break
  kill -0 "$pid" 2> /dev/null || { echo "nvmf_tgt exited: $(tail -3 "$tmp/tgt.log")"; exit 1; }
  sleep 0.2
done
[ -S "$SOCK" ] || { echo "nvmf_tgt did not answer on $SOCK in 20 s: $(tail -3 "$tmp/tgt.log")"; exit 1; }

HOST=nqn.2014-08.org.nvmexpress:uuid:5b8e1c1e-5a7e-4c8e-9b35-0f4e2c6a7d10
S1=nqn.2026-12.io.example:tls256 S2=nqn.2026-12.io.example:tls384 S3=nqn.2026-12.io.example:plain
# interchange keys as nvme gen-tls-key writes them (random, each run)
key() { # HH BYTES
  python3 -c 'import base64,os,struct,sys,zlib; k=os.urandom(int(sys.argv[2]))
print("NVMeTLSkey-1:%s:%s:" % (sys.argv[1], base64.b64encode(k+struct.pack("<I", zlib.crc32(k))).decode()))' "$@"
}
K256=$(key 01 32) K384=$(key 02 48) KWRONG=$(key 01 32)
for k in K256 K384 KWRONG; do
  printf '%s' "${!k}" > "$tmp/$k"   # SPDK's keyring: no newline, mode 0600
  chmod 600 "$tmp/$k"
done
R nvmf_create_transport -t TCP
R bdev_malloc_create -b M1 16 512
R bdev_malloc_create -b M2 16 512
R bdev_malloc_create -b M3 16 512
R keyring_file_add_key k256 "$tmp/K256"
R keyring_file_add_key k384 "$tmp/K384"
for s in "$S1 M1" "$S2 M2" "$S3 M3"; do
  set -- $s
  R nvmf_create_subsystem "$1" -s SPDK0001
  R nvmf_subsystem_add_ns "$1" "$2"
done
R nvmf_subsystem_add_listener "$S1" -t tcp -a 127.0.0.1 -s "$P" --secure-channel
R nvmf_subsystem_add_listener "$S2" -t tcp -a 127.0.0.1 -s "$P" --secure-channel
R nvmf_subsystem_add_host "$S1" "$HOST" --psk k256
R nvmf_subsystem_add_host "$S2" "$HOST" --psk k384
R nvmf_subsystem_add_listener "$S3" -t tcp -a 127.0.0.1 -s "$P2"
R nvmf_subsystem_add_host "$S3" "$HOST"
# a discovery service on the plain port: its log lists the TLS listeners too
R nvmf_subsystem_add_listener nqn.2014-08.org.nvmexpress.discovery -t tcp -a 127.0.0.1 -s "$P2"

C=(-t tcp -a 127.0.0.1 -q "$HOST" --timeout=10000)
head -c $((192 * 1024)) /dev/urandom > "$tmp/data"

# holds KEYFILE OUTFILE: OUTFILE holds 12 characters of the key's base64
holds() {
  local k text i
  k=$(cut -d: -f3 "$1") text=$(cat "$2")
  for ((i = 0; i + 12 <= ${#k}; i += 4)); do [[ $text == *"${k:i:12}"* ]] && return 0; done
  return 1
}

# round_trip NAME SUBNQN KEYNAME: 192 KiB written (over MDTS 128 KiB: two
# commands; records of 16 KiB each) and read back the same
round_trip() {
  local name=$1 sub=$2 kf=$tmp/$3
  if ! timeout 60 "$T" write "${C[@]}" -s "$P" -n "$sub" --tls-key-file "$kf" -c 384 -d "$tmp/data" > "$tmp/w.out" 2>&1; then
    bad "$name" "write: $(head -3 "$tmp/w.out")"; return
  fi
  rm -f "$tmp/back"
  if ! timeout 60 "$T" read "${C[@]}" -s "$P" -n "$sub" --tls-key-file "$kf" -c 384 -d "$tmp/back" > "$tmp/r.out" 2>&1; then
    bad "$name" "read: $(head -3 "$tmp/r.out")"; return
  fi
  cmp -s "$tmp/data" "$tmp/back" && ok "$name" || bad "$name" "what was read back differs from what was written"
}
round_trip "SHA-256 key (TLS_AES_128_GCM_SHA256): 192 KiB written, read back the same" "$S1" K256
round_trip "SHA-384 key (TLS_AES_256_GCM_SHA384): 192 KiB written, read back the same" "$S2" K384

# the fio engine: tls_key_file=, verified random writes at depth 8 on four queues
if command -v fio > /dev/null; then
  # fio is not instrumented: a sanitized engine needs the ASan runtime first
  PRE=()
  readelf -d "$PWD/$B/libnvmeof_fio.so" | grep -q 'NEEDED.*libasan' &&
    PRE=(env LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0)
  F="trtype=TCP traddr=127.0.0.1 trsvcid=$P subnqn=${S2//:/\\:} hostnqn=${HOST//:/\\:} ns=1"
  if timeout 120 "${PRE[@]}" fio --name=tls --ioengine=external:"$(pwd)/$B/libnvmeof_fio.so" --thread=1 --filename="$F" \
      --tls_key_file="$tmp/K384" --rw=randwrite --bs=64k --size=4m --iodepth=8 --qpairs=4 --verify=crc32c \
      --do_verify=1 --verify_fatal=1 --verify_state_save=0 > "$tmp/fio.out" 2>&1 && grep -q "err= 0" "$tmp/fio.out" &&
      grep -q "READ: .*io=4096KiB" "$tmp/fio.out"; then
    ok "fio with tls_key_file (SHA-384): randwrite verified, four queues"
  else
    bad "fio with tls_key_file (SHA-384)" "$(grep -v '^ *$' "$tmp/fio.out" | tail -5)"
  fi
else
  skip "fio with tls_key_file" "no fio on this machine"
fi

# no TLS key outlives the connection: after id-ctrl over TLS (the controller
# disconnected and freed), tests/unit/tlsscan.c reads the tool's private
# memory at exit for the configured PSK (its raw bytes and its interchange
# text), the retained PSK, the TLS PSK, both traffic secrets (from OpenSSL's
# key log), the master secret (read from OpenSSL's object after the
# handshake: with the transcript hash it gives back the traffic secrets)
# and, under kTLS, the keys handed to the kernel. Plain builds (a
# sanitized tool needs libasan before any preload)
if ! readelf -d "$T" | grep -q 'NEEDED.*libasan'; then
  for pair in "$S1 K256" "$S2 K384"; do
    set -- $pair
    python3 tests/unit/tlsscan_keys.py "$tmp/$2" "$HOST" "$1" > "$tmp/scan.keys"
    what="no TLS key in the tool's memory after a TLS connection ($2)"
    TLSSCAN_FILE=$tmp/scan.keys LD_PRELOAD="$(pwd)/$B/tests/tlsscan.so" timeout 60 "$T" id-ctrl "${C[@]}" -s "$P" -n "$1" \
      --tls-key-file "$tmp/$2" > "$tmp/out" 2>&1; rc=$?
    n=$(grep -c "^tlsscan: key " "$tmp/out")
    if [ $rc != 0 ]; then bad "$what" "id-ctrl failed: $(grep -v tlsscan "$tmp/out" | head -3)"
    elif ! grep -q "tlsscan: scanned [1-9][0-9]* bytes" "$tmp/out"; then bad "$what" "the scan did not run: $(tail -3 "$tmp/out")"
    elif ! grep -q "tlsscan: key CLIENT_TRAFFIC_SECRET_0" "$tmp/out" || ! grep -q "tlsscan: key SERVER_TRAFFIC_SECRET_0" "$tmp/out" ||
         ! grep -q "tlsscan: key master_secret" "$tmp/out" || [ "$n" -lt 7 ]; then bad "$what" "the traffic secrets were not caught: $(grep "tlsscan: key" "$tmp/out" | tr '\n' ' ')"
    elif grep -q "tlsscan: a copy" "$tmp/out"; then bad "$what" "$(grep "tlsscan: a copy" "$tmp/out" | head -4 | tr '\n' ' ')"
    else ok "$what: $(grep -o 'scanned [0-9]* bytes in [0-9]* regions for [0-9]* keys' "$tmp/out")"; fi
  done
fi

# refused NAME PATTERN ARGS...: fails within its time, saying PATTERN, no key shown
refused() {
  local name=$1 pat=$2 rc=0; shift 2
  timeout 60 "$T" id-ctrl "${C[@]}" "$@" > "$tmp/out" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then bad "$name" "succeeded"; return; fi
  if [ "$rc" = 124 ]; then bad "$name" "hung"; return; fi
  for k in K256 K384 KWRONG; do
    holds "$tmp/$k" "$tmp/out" && { bad "$name" "the key in: $(head -3 "$tmp/out")"; return; }
  done
  grep -qE "$pat" "$tmp/out" && ok "$name: $(grep -v warning "$tmp/out" | head -1 | cut -c1-150)" ||
    bad "$name" "expected /$pat/: $(head -3 "$tmp/out")"
}
refused "a wrong key" "TLS handshake: the controller refused the PSK" -s "$P" -n "$S1" --tls-key-file "$tmp/KWRONG"
refused "a key of the other hash (SHA-384 where SHA-256 is set)" "refused the PSK identity 'NVMe0R02 " \
  -s "$P" -n "$S1" --tls-key-file "$tmp/K384"
refused "no key at all (no --tls) on a TLS port" "(closed|reset) the connection instead of answering the ICReq \(a port that requires TLS" -s "$P" -n "$S1"
refused "--tls without a key" "TLS needs a PSK" -s "$P" -n "$S1" --tls
# the key's first base64 character changed (to another: a random key's
# may be the one a fixed replacement writes, and then nothing changed)
k=$(cat "$tmp/K256") b64=${k#NVMeTLSkey-1:01:}
[ "${b64:0:1}" = A ] && c=B || c=A
refused "a key on the command line, malformed (CRC)" "CRC-32 mismatch" -s "$P" -n "$S1" \
  --tls-key "NVMeTLSkey-1:01:$c${b64:1}"
refused "--tls to a port without TLS" "TLS handshake: the controller (did not answer in TLS|closed)" \
  -s "$P2" -n "$S3" --tls-key-file "$tmp/K256"
# the same port and subsystem without TLS still work: the failures above are TLS's
timeout 60 "$T" id-ctrl "${C[@]}" -s "$P2" -n "$S3" > "$tmp/out" 2>&1 && ok "the port without TLS answers without it" ||
  bad "the port without TLS answers without it" "$(head -3 "$tmp/out")"
# discovery: SPDK's log gives the TLS port TREQ "required" and security type
# TLS 1.3 (TSAS), shown as nvme-cli shows them; a program connecting from the
# entry (tests/unit/tls_disc.c, through nvmeof_disc_entry_opts) gets TLS with
# a key, and without one is refused before connecting, in one line
timeout 60 "$T" discover "${C[@]}" -s "$P2" > "$tmp/out" 2>&1
if grep -A8 "^subnqn:  $S1\$" "$tmp/out" | grep -q "^sectype: tls13" &&
   grep -B4 "^subnqn:  $S1\$" "$tmp/out" | grep -q "^treq:    required"; then
  ok "discover shows the TLS port's entry: treq required, sectype tls13"
else bad "discover shows the TLS port's entry" "$(head -30 "$tmp/out")"; fi
D=$(pwd)/$B/tests/tls_disc
timeout 60 "$D" 127.0.0.1 "$P2" "$HOST" "$S1" "$tmp/K256" > "$tmp/out" 2>&1; rc=$?
[ $rc = 0 ] && grep -q "^entry: treq required, sectype tls13" "$tmp/out" && grep -q "^connected tls=1" "$tmp/out" &&
  ok "an entry that requires TLS, with a key: connected over TLS" ||
  bad "an entry that requires TLS, with a key: connected over TLS" "exit $rc: $(head -3 "$tmp/out")"
timeout 60 "$D" 127.0.0.1 "$P2" "$HOST" "$S1" > "$tmp/out" 2>&1; rc=$?
[ $rc = 3 ] && [ "$(grep -c "^tls_disc" "$tmp/out")" = 1 ] &&
  grep -q "^tls_disc: discovery entry for $S1 at 127.0.0.1 port $P: it requires TLS (TREQ required, security type TLS 1.3): give a TLS key" "$tmp/out" &&
  ok "an entry that requires TLS, without a key: refused in one line before connecting" ||
  bad "an entry that requires TLS, without a key: refused in one line" "exit $rc: $(head -3 "$tmp/out")"
timeout 60 "$D" 127.0.0.1 "$P2" "$HOST" "$S3" > "$tmp/out" 2>&1; rc=$?
[ $rc = 0 ] && grep -q "^connected tls=0" "$tmp/out" && ok "a plain entry: connected without TLS" ||
  bad "a plain entry: connected without TLS" "exit $rc: $(head -3 "$tmp/out")"
# SPDK knows only identity version 0 (NVMe0R0x): its log names our identity when it refuses one
grep -q "Could not find PSK for identity: NVMe0R02 $HOST $S1" "$tmp/tgt.log" &&
  ok "SPDK saw the version 0 identity NVMe0R02 <hostnqn> <subnqn> for the SHA-384 key" ||
  bad "SPDK saw the version 0 identity" "$(grep -i identity "$tmp/tgt.log" | tail -2)"
tally tls-spdk
