#!/bin/bash
# tests/unit/engine_opts.sh [BUILD_DIR]: the fio engine's options and
# filenames, without a target: what is wrong fails the job before anything
# connects, with the allowed values named, and a failed job looks failed in
# fio's JSON (its "error"), terse output and exit status alike. An empty
# $SYSFS_PATH hides any RDMA device this host has, so a job that gets as far
# as connecting fails at once (no RDMA device) wherever this runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/out}
ENG=$PWD/$B/libnvmeof_fio.so
command -v fio >/dev/null || { echo "engine_opts: skipped: fio is not installed"; exit 77; }
if readelf -d "$ENG" | grep -q 'NEEDED.*libasan'; then
  export LD_PRELOAD=$(${CC:-cc} -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SYSFS_PATH=$tmp/nosysfs
mkdir -p "$SYSFS_PATH"
source tests/tally.sh
FN='traddr=192.0.2.1 subnqn=nqn.2026-12.io.nvmeof\:x'
# run NAME ARGS...: fio with our engine; $out its stdout and stderr, $rc its status
run() {
  rc=0
  out=$(timeout 60 fio --name=t --ioengine=external:"$ENG" --rw=read --size=1m "$@" 2>&1) || rc=$?
}

# Values out of range, negative ones first (fio's integer parser reads "-5"
# as a range and kept "5", or wrapped it): refused with the range, no connect.
while read -r opt want; do
  run --filename="$FN" --verbose=1 "--$opt"
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -qF -- "nvmeof: $opt: expected $want" <<< "$out" &&
     ! grep -q 'trace.*connecting' <<< "$out"; then
    ok "$opt refused before connecting: expected $want"
  else
    bad "$opt refused before connecting: expected $want" "rc $rc: $(echo $out | cut -c1-300)"
  fi
done <<'V'
kato=-5 a time from 0 to 1d
spin_us=-1 a time from 0 to 1000000 us
qd_limit=-1 a whole number from 0 to 65535
comp_vector=-2 a whole number from -1 to 65535
gpu=-5 a whole number from -1 to 1023
ns=0 a whole number from 1 to 4294967294
qpairs=65 a whole number from 0 to 64
qpairs_shared=65 a whole number from 0 to 64
num_io_queues=0 a whole number from 1 to 65535
connect_retries=101 a whole number from 0 to 100
cmd_timeout=0 a time from 1ms to 1d
connect_timeout=5x a time from 1ms to 1d
reconnect_delay=250us a time from 0 to 1d, in whole milliseconds
ctrl_loss_tmo=2d a time from 0 to 1d
trsvcid=0 a whole number from 1 to 65535
trsvcid=99999 a whole number from 1 to 65535
tcp_priority=16 a whole number from -1 to 15
tcp_tos=-2 a whole number from -1 to 255
tcp_busy_poll=1000001 a whole number from 0 to 1000000
tcp_zerocopy=2g bytes from 0 to 1g
tcp_zerocopy=64x bytes from 0 to 1g
V

# Times: a bare number is seconds, as nvme-cli's; units as fio writes them.
run --filename="$FN" --verbose=1 --kato=5 --reconnect_delay=500ms --ctrl_loss_tmo=2m --cmd_timeout=10s \
  --connect_timeout=1500MS
if grep -q 'kato 5000 ms, reconnect_delay 500 ms, ctrl_loss_tmo 120000 ms, cmd_timeout 10000 ms, connect_timeout 1500 ms' <<< "$out"; then
  ok "time options: kato=5 is 5 s, units ms, s, m as fio's"
else
  bad "time options: kato=5 is 5 s, units ms, s, m as fio's" "$(grep trace <<< "$out" | head -1 | cut -c1-300)"
fi

# A bare number implausible as seconds (the tool's --timeout is milliseconds):
# refused with the milliseconds meant; with its unit it is taken.
for o in cmd_timeout=30000 kato=5000; do
  run --filename="$FN" --verbose=1 "--$o"
  if [ "$rc" != 0 ] && grep -qF "nvmeof: $o: a bare number is seconds" <<< "$out" &&
     grep -qF "did you mean ${o#*=}ms?" <<< "$out" && ! grep -q 'trace.*connecting' <<< "$out"; then
    ok "$o refused before connecting: did you mean ${o#*=}ms?"
  else
    bad "$o refused before connecting: did you mean ${o#*=}ms?" "rc $rc: $(echo $out | cut -c1-300)"
  fi
done
run --filename="$FN" --verbose=1 --cmd_timeout=30000ms --kato=999
if grep -q 'kato 999000 ms, .*cmd_timeout 30000 ms' <<< "$out"; then
  ok "cmd_timeout=30000ms and kato=999 (seconds) are taken"
else
  bad "cmd_timeout=30000ms and kato=999 (seconds) are taken" "$(grep trace <<< "$out" | head -1 | cut -c1-300)"
fi

# SPDK's NVMe-oF example filename has no subnqn: the refusal says how to get it.
# The engine asks the discovery controller there for the only subsystem:
# nothing listens on 127.0.0.1 port 4, and the refusal says that too.
run --filename='trtype=TCP adrfam=IPv4 traddr=127.0.0.1 trsvcid=4 ns=1'
if [ "$rc" != 0 ] && grep -qF 'no subnqn' <<< "$out" &&
   grep -qF 'nvmeof discover -t tcp -a 127.0.0.1 -s 4 -o fio' <<< "$out" &&
   grep -qF 'asking the discovery controller there for it: ' <<< "$out"; then
  ok "a filename without subnqn names nvmeof discover -o fio with its address"
else
  bad "a filename without subnqn names nvmeof discover -o fio with its address" "rc $rc: $(echo $out | cut -c1-300)"
fi

# No RDMA device here: the failure also points an NVMe/TCP user to trtype=TCP.
run --filename="$FN"
if [ "$rc" != 0 ] && grep -qF 'no RDMA device on this host' <<< "$out" && grep -qF 'NVMe/TCP target: trtype=TCP' <<< "$out"; then
  ok "no RDMA device: the message names trtype=TCP for an NVMe/TCP target"
else
  bad "no RDMA device: the message names trtype=TCP for an NVMe/TCP target" "rc $rc: $(echo $out | cut -c1-400)"
fi

# SPDK's digest_enable= is hdr_digest/data_digest: over RDMA the library
# refuses the digests it turned on; NONE turns none on; a bad value is named.
for v in BOTH header data none bogus; do
  run --filename="$FN" "--digest_enable=$v"
  case $v in
    none) want="no RDMA device on this host" ;;
    bogus) want="valid values: NONE" ;;
    *) want="header and data digests are NVMe/TCP's" ;;
  esac
  if [ "$rc" != 0 ] && grep -qF "$want" <<< "$out"; then
    ok "digest_enable=$v: $want"
  else
    bad "digest_enable=$v: $want" "rc $rc: $(echo $out | cut -c1-300)"
  fi
done

# The engine says its version and commit once per fio process, whatever the job count.
run --filename="$FN" --numjobs=3 --thread=1
ver=$(sed -n 's/^VERSION = //p' Makefile)
n=$(grep -cE "^nvmeof: engine $ver \(commit ([0-9a-f]{12}(-dirty)?|unknown)\), built for fio-" <<< "$out")
[ "$n" = 1 ] && ok "one 'nvmeof: engine $ver (commit ...)' line for three jobs" ||
  bad "one 'nvmeof: engine $ver (commit ...)' line for three jobs" "$n lines: $(echo $out | cut -c1-300)"

# A size as fio writes one: tcp_zerocopy=64k is taken, and reaches the
# library, which refuses it over RDMA (the filename's transport).
run --filename="$FN" --tcp_zerocopy=64k
if [ "$rc" != 0 ] && ! grep -q 'tcp_zerocopy=64k: expected' <<< "$out" && grep -q "NVMe/TCP's socket options" <<< "$out"; then
  ok "tcp_zerocopy=64k taken, refused over RDMA by the library"
else
  bad "tcp_zerocopy=64k taken, refused over RDMA by the library" "rc $rc: $(echo $out | cut -c1-300)"
fi

# keyring=, tls_identity= and tls_key_compat= reach the library on a TCP
# path: a keyring no process has is named before anything connects, and
# compat without a key to derive from is refused.
TFN='traddr=192.0.2.1 trtype=tcp subnqn=nqn.2026-12.io.nvmeof\:x'
run --filename="$TFN" --keyring=.nvmeof-none --tls_identity=1
if [ "$rc" != 0 ] && grep -q "no keyring .nvmeof-none visible" <<< "$out"; then
  ok "keyring= and tls_identity= taken, the keyring looked up at connect"
else
  bad "keyring= and tls_identity= taken, the keyring looked up at connect" "rc $rc: $(echo $out | cut -c1-300)"
fi
run --filename="$TFN" --keyring=.nvme --tls_key_compat=1
if [ "$rc" != 0 ] && grep -q "tls_compat needs tls_key" <<< "$out"; then
  ok "tls_key_compat=1 taken, refused without tls_key"
else
  bad "tls_key_compat=1 taken, refused without tls_key" "rc $rc: $(echo $out | cut -c1-300)"
fi

# disable_sqflow=1 reaches the library, which refuses it over RDMA by name.
run --filename="$FN" --disable_sqflow=1
if [ "$rc" != 0 ] && grep -q "disable_sqflow is NVMe/TCP's" <<< "$out"; then
  ok "disable_sqflow=1 taken, refused over RDMA by the library"
else
  bad "disable_sqflow=1 taken, refused over RDMA by the library" "rc $rc: $(echo $out | cut -c1-300)"
fi

# Numbers as fio writes them: 0x hex, k/m/g (1024 each, fio's default
# kb_base), and spin_us's time units; each taken (the job goes on to find no
# RDMA device here), or refused out of range after its multiplier, the
# message naming the forms taken.
for o in ns=0x1 qd_limit=1k qd_limit=0x20 spin_us=20us spin_us=1ms num_io_queues=2K connect_retries=0x0; do
  run --filename="$FN" "--$o"
  if [ "$rc" != 0 ] && ! grep -q "${o%%=*}=.*: expected" <<< "$out" && grep -qF 'no RDMA device on this host' <<< "$out"; then
    ok "$o taken as fio would"
  else
    bad "$o taken as fio would" "rc $rc: $(echo $out | cut -c1-300)"
  fi
done
while read -r opt want; do
  run --filename="$FN" "--$opt"
  if [ "$rc" != 0 ] && grep -qF -- "nvmeof: $opt: expected $want" <<< "$out"; then
    ok "$opt refused: expected $want"
  else
    bad "$opt refused: expected $want" "rc $rc: $(echo $out | cut -c1-300)"
  fi
done <<'V'
qd_limit=64k a whole number from 0 to 65535 (0: no limit; decimal, 0x hex, or with k, m, g: 1k is 1024)
ns=1.5 a whole number from 1 to 4294967294 (a namespace ID; decimal, 0x hex, or with k, m, g: 1k is 1024)
spin_us=2s a time from 0 to 1000000 us (a bare number is microseconds, or 20us, 1ms, 1s)
spin_us=5x a time from 0 to 1000000 us (a bare number is microseconds, or 20us, 1ms, 1s)
V

# --enghelp as the documents give it: the plain path (fio refuses external: there).
h=$(timeout 60 fio --enghelp="$ENG",qd_limit 2>&1)
grep -q 'qd_limit: ' <<< "$h" && ok "fio --enghelp=PATH,qd_limit shows the option" ||
  bad "fio --enghelp=PATH,qd_limit shows the option" "$(echo $h | cut -c1-200)"

# Filenames: a ':' that fio cut at, keys twice, ports: refused before any connect.
while IFS='|' read -r fn want; do
  run --filename="$fn" --verbose=1
  if [ "$rc" != 0 ] && grep -qF -- "$want" <<< "$out" && ! grep -q 'trace.*connecting' <<< "$out"; then
    ok "filename '$fn' refused: $want"
  else
    bad "filename '$fn' refused: $want" "rc $rc: $(echo $out | cut -c1-300)"
  fi
done <<'F'
traddr=192.0.2.1 subnqn=nqn.2016-06.io.spdk:cnode1 ns=1|'subnqn=nqn.2016-06.io.spdk' is cut at a ':'
traddr=fe80::1 subnqn=nqn.x|'traddr=fe80' is cut at a ':'
traddr=192.0.2.1 subnqn=a subnqn=b|subnqn given twice
traddr=192.0.2.1 subnqn=a ns=1 ns=2|ns given twice
traddr=192.0.2.1 traddr=192.0.2.1 subnqn=a|named twice
traddr=192.0.2.1 trsvcid=99999 subnqn=a|expected a port from 1 to 65535
F
run --filename='traddr=192.0.2.1 hostaddr=192.0.2.9 subnqn=nqn.x' --verbose=1
if grep -q 'connecting from 192.0.2.9 ' <<< "$out"; then
  ok "hostaddr= (SPDK's name) is the source address"
else
  bad "hostaddr= (SPDK's name) is the source address" "$(echo $out | cut -c1-300)"
fi

# qpairs_shared= with what cannot share: refused before connecting, naming
# the option that conflicts.
while IFS='|' read -r args want; do
  # shellcheck disable=SC2086 # args are words
  run --filename="$FN" --verbose=1 $args
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -qF -- "$want" <<< "$out" && ! grep -q 'trace.*connecting' <<< "$out"; then
    ok "$args refused before connecting: $want"
  else
    bad "$args refused before connecting: $want" "rc $rc: $(echo $out | cut -c1-300)"
  fi
done <<'Q'
--qpairs_shared=2|nvmeof: qpairs_shared=2 needs thread=1
--thread=1 --qpairs_shared=2 --qpairs=2|nvmeof: qpairs_shared=2 and qpairs= together
Q

# A failed job looks failed: fio's JSON "error", terse output and exit status.
for how in "--filename=$FN" "--filename=traddr=192.0.2.1 subnqn=a subnqn=b"; do
  rc=0
  timeout 60 fio --name=t --ioengine=external:"$ENG" --rw=read --size=1m "$how" --output-format=json,terse \
    > "$tmp/out" 2> "$tmp/err" || rc=$?
  jerr=$(python3 -c 'import json,sys; t=open(sys.argv[1]).read(); print(json.loads(t[t.index("{"):t.rindex("}")+1])["jobs"][0]["error"])' "$tmp/out" 2>&1)
  terr=$(grep -m1 '^3;' "$tmp/out" | cut -d';' -f5)
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$jerr" != 0 ] && [ "$jerr" = "$terr" ] &&
     ! grep -q 'still connecting' "$tmp/err"; then
    ok "a job that fails ($how) has error $jerr in JSON and terse output, exit $rc"
  else
    bad "a job that fails ($how) reports its error" "rc $rc, JSON error '$jerr', terse error '$terr'" "$(tail -3 "$tmp/err")"
  fi
done

# A connect that takes longer than 2 s says once, without verbose=1, what it
# waits for and how long it may take. The slow step is made here: a
# preloaded rdma_create_event_channel that takes 3 s before it answers.
cat > "$tmp/slowcm.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>
struct rdma_event_channel;
struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct rdma_event_channel *(*real)(void) =
		(struct rdma_event_channel *(*)(void))dlsym(RTLD_NEXT, "rdma_create_event_channel");
	sleep(3);
	return real();
}
C
${CC:-cc} -shared -fPIC -o "$tmp/slowcm.so" "$tmp/slowcm.c" -ldl
rc=0
LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$tmp/slowcm.so" timeout 60 fio --name=t --ioengine=external:"$ENG" --rw=read \
  --size=1m --filename="$FN" --output-format=json > "$tmp/out" 2> "$tmp/err" || rc=$?
n=$(grep -c 'nvmeof: connect to 192.0.2.1 port 4420 subsystem nqn.2026-12.io.nvmeof:x: still connecting after 2\.[0-9] s, waiting for its first step, resolving the address; it succeeds or fails within about [0-9]* s more' "$tmp/err")
if [ "$rc" != 0 ] && [ "$n" = 1 ] && ! grep -q trace "$tmp/err"; then
  ok "a connect slower than 2 s says once what it waits for, without verbose=1"
else
  bad "a connect slower than 2 s says once what it waits for, without verbose=1" "rc $rc, $n notes: $(head -3 "$tmp/err")"
fi

tally "engine_opts ($B)"
