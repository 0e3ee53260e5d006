#!/bin/bash
# tests/unit/tool.sh [BUILD_DIR]: the nvmeof tool's command line as a user
# of nvme-cli types it, without a target: what is refused is refused before
# anything connects, with a message that starts "nvmeof SUBCOMMAND:"; a
# failed connect reads no more input than the command transfers and leaves
# an existing output file as it was. (tests/target/tool.sh: the same tool
# against the test bed's target.) Nothing listens on 127.0.0.1:4 here, and
# without an RDMA device the connect fails at once: either way it fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/out}
T=$B/nvmeof
source tests/tally.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
A=(-a 127.0.0.1 -s 4)

# expect RC PATTERN CMD...: exit status RC and stderr+stdout matching PATTERN
expect() {
  local rc=$1 pat=$2; shift 2
  local out; out=$("$@" 2>&1); local got=$?
  if [ "$got" = "$rc" ] && grep -q -- "$pat" <<< "$out"; then ok "${*:2}"
  else bad "${*:2}" "exit $got (want $rc), output: $(head -c 400 <<< "$out")" "want: $pat"; fi
}

# nvme-cli's fabrics letters: -t transport, -a, -s, -q, -n
expect 1 "^nvmeof discover: .*connect" "$T" discover -t rdma -a 127.0.0.1 -s 4 -q nqn.2014-08.org.nvmexpress:uuid:0 -o json
expect 1 "^nvmeof id-ctrl: .*connect" "$T" id-ctrl -t rdma -a 127.0.0.1 -s 4 -n nqn.2026-12.io.nvmeof:x
expect 1 "^nvmeof id-ctrl: .*connect" "$T" id-ctrl "${A[@]}" -n nqn.2026-12.io.nvmeof:x -t 300
expect 2 "^nvmeof discover: --transport: 'fc' is not one this tool speaks: rdma or tcp" "$T" discover -t fc -a 127.0.0.1
# over TCP nobody listens on 127.0.0.1 port 4: a connect error, not a usage one
expect 1 "^nvmeof id-ctrl: .*TCP connect" "$T" id-ctrl -t tcp -a 127.0.0.1 -s 4 -n nqn.2026-12.io.nvmeof:x
# nvme-cli's digest letters reach the library: over rdma it refuses them,
# naming them, before anything connects; -g is --gpu where data moves
expect 1 "^nvmeof id-ctrl: .*digests are NVMe/TCP's" "$T" id-ctrl "${A[@]}" -n nqn.2026-12.io.nvmeof:x -g
expect 1 "^nvmeof id-ctrl: .*digests are NVMe/TCP's" "$T" id-ctrl "${A[@]}" -n nqn.2026-12.io.nvmeof:x -G
expect 1 "^nvmeof discover: .*digests are NVMe/TCP's" "$T" discover "${A[@]}" --hdr-digest --data-digest
expect 1 "^nvmeof read: .*digests are NVMe/TCP's" "$T" read "${A[@]}" -n nqn.x --hdr-digest -c 1 -d /dev/null
expect 2 "^nvmeof read: --gpu: 'x' is not a number" "$T" read "${A[@]}" -n nqn.x -g x -c 1 -d /dev/null
# and over tcp they are asked for: the connect gets as far as TCP
expect 1 "^nvmeof id-ctrl: .*TCP connect" "$T" id-ctrl -t tcp "${A[@]}" -n nqn.2026-12.io.nvmeof:x -g -G
# NVMe/TCP socket options: set on the socket before its connect (which then
# fails as above), out of range a usage error, over RDMA the library's refusal
expect 1 "^nvmeof id-ctrl: .*TCP connect" "$T" id-ctrl -t tcp "${A[@]}" -n nqn.x --tcp-priority=3 --tcp-tos=184
expect 2 "^nvmeof id-ctrl: --tcp-tos: '256' is not a number from 0 to 255" "$T" id-ctrl -t tcp "${A[@]}" -n nqn.x --tcp-tos=256
expect 2 "^nvmeof id-ctrl: --tcp-priority: '16' is not a number from 0 to 15" "$T" id-ctrl -t tcp "${A[@]}" -n nqn.x --tcp-priority=16
expect 1 "^nvmeof id-ctrl: .*NVMe/TCP's socket options" "$T" id-ctrl -t rdma "${A[@]}" -n nqn.x --tcp-busy-poll=50
expect 1 "^nvmeof id-ctrl: .*disable_sqflow is NVMe/TCP's" "$T" id-ctrl -t rdma "${A[@]}" -n nqn.x --disable-sqflow
# ports as numbers from 1 to 65535, not whatever the resolver makes of them
for p in 0 65536 99999 abc 44x ''; do
  expect 2 "^nvmeof discover: --trsvcid: '$p' is not a port number from 1 to 65535" "$T" discover -a 127.0.0.1 -s "$p"
done
# usage errors name the subcommand
expect 2 "^nvmeof read: --start-block: 'x' is not a number" "$T" read "${A[@]}" -n nqn.x --start-block=x -c 1
expect 2 "^nvmeof id-ctrl: --output-format: 'xml' is not normal or json" "$T" id-ctrl "${A[@]}" -n nqn.x -o xml
expect 2 "^nvmeof id-ctrl: --timeout must be at least 1 ms" "$T" id-ctrl "${A[@]}" -n nqn.x --timeout=0
expect 2 "^nvmeof read: --block-count must be at least 1" "$T" read "${A[@]}" -n nqn.x -c 0
# nvme-cli's habits: taken where they mean the same, else the message says how it differs
expect 2 "counts from 1, unlike nvme-cli's -c: -c 1 reads one block" "$T" read "${A[@]}" -n nqn.x -c 0
expect 2 "^nvmeof read: -z/--data-size is nvme-cli's; here the size is --block-count" "$T" read "${A[@]}" -n nqn.x -z 4096
expect 2 "^nvmeof id-ns: -H (nvme-cli's human-readable decoding) is not here" "$T" id-ns "${A[@]}" -n nqn.x -H
expect 2 "^nvmeof id-ctrl: -H (nvme-cli's human-readable decoding) is not here" "$T" id-ctrl "${A[@]}" -n nqn.x -H
expect 2 "^nvmeof read: -g is --gpu=N here; nvme-cli's header digest is --hdr-digest" "$T" read "${A[@]}" -n nqn.x -c 1 -g
for sc in list-ns id-ctrl; do
  expect 2 "^nvmeof $sc: -n 1: a number is a namespace ID, and $sc takes none: -n is the subsystem NQN" \
    "$T" $sc "${A[@]}" -n 1
done
expect 2 "^nvmeof discover: -n 1: a number is a namespace ID, and discover takes none: -n is the discovery NQN" \
  "$T" discover "${A[@]}" -n 1
expect 0 "^usage: nvmeof discover" "$T" help discover
# write-zeroes moves no data: -g is nvme-cli's header digest there, --gpu is not its option
expect 1 "^nvmeof write-zeroes: .*digests are NVMe/TCP's" "$T" write-zeroes "${A[@]}" -n nqn.x -c 1 -g
expect 2 "^nvmeof write-zeroes: option --gpu is not one of this subcommand's" "$T" write-zeroes "${A[@]}" -n nqn.x -c 1 --gpu=0
expect 2 "^nvmeof id-ctrl: option --gpu is not one of this subcommand's" "$T" id-ctrl "${A[@]}" -n nqn.x --gpu=0
"$T" write-zeroes --help | grep -q -- '-g, --hdr-digest' && ok "write-zeroes --help shows -g, --hdr-digest" ||
  bad "write-zeroes --help shows -g, --hdr-digest" "$("$T" write-zeroes --help | grep digest)"
for sc in connect list; do
  expect 2 "^nvmeof: unknown subcommand '$sc': each subcommand connects and disconnects by itself" "$T" $sc -a 127.0.0.1
done
expect 2 "^nvmeof error-log: --log-entries must be at least 1" "$T" error-log "${A[@]}" -n nqn.x -e 0
# io-passthru with nvme-cli's letters: -t rdma beside -a, a number for -n is
# the namespace (the NQN stays), -4 and -6 are --cdw10 and --cdw12; data
# needs a direction (the opcode's, or --read/--write)
expect 1 "^nvmeof io-passthru: .*connect" "$T" io-passthru -t rdma "${A[@]}" -n nqn.x -n 2 -O 2 -4 7 -6 0 -l 512
# -t tcp, -g and -G as nvme-cli's, beside -a: the digests reach the library
expect 1 "^nvmeof io-passthru: .*TCP connect" "$T" io-passthru -t tcp "${A[@]}" -n nqn.x -g -G -O 0 -N 1
expect 1 "^nvmeof admin-passthru: .*digests are NVMe/TCP's" "$T" admin-passthru "${A[@]}" -n nqn.x -G -O 6
expect 2 "^nvmeof io-passthru: data direction not given" "$T" io-passthru "${A[@]}" -n nqn.x -O 0xc0 -l 512
expect 2 "^nvmeof admin-passthru: bad --timeout value '0'" "$T" admin-passthru "${A[@]}" -n nqn.x -O 6 -t 0
# the help says what the code does: smart-log and get-log default to the controller
for c in smart-log get-log; do
  expect 0 "namespace (0, the default: the controller)" "$T" $c --help
done
expect 0 "namespace (1)" "$T" id-ns --help
expect 0 "^nvmeof version $(sed -n 's/^VERSION = //p' Makefile)$" "$T" --version
expect 0 "^nvmeof version " "$T" version
# the build's CRC32C for NVMe/TCP's digests: ISA-L's where it was built with it
expect 0 "^crc32c: \(ISA-L crc32_iscsi\|SSE4.2\|table\)$" "$T" --version

# gen-tls-key, check-tls-key: nvme-cli's, local (nothing connects).
# libnvme's test vector: these 32 bytes are this interchange key
LIBNVME_HEX=5512dbb6737d0106f65975b773dfb011ffc344bcf442e2dd6d8bc4870b5d5b03
LIBNVME_KEY="NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:"
expect 0 "^$LIBNVME_KEY\$" "$T" gen-tls-key --secret="$LIBNVME_HEX"
expect 0 "^$LIBNVME_KEY\$" "$T" gen-tls-key -m 1 -s "$LIBNVME_HEX"
hex48=$(printf '%02x' $(seq 0 47))
key48=$(python3 -c "import sys; sys.path.insert(0, 'tests/unit'); import tls_vectors as t; print(t.interchange(bytes(range(48)), 2))")
expect 0 "^$key48\$" "$T" gen-tls-key --hmac=2 --secret="$hex48"
expect 2 "^nvmeof gen-tls-key: --secret: 64 hex digits; --hmac 2 needs 96" "$T" gen-tls-key -m 2 -s "$LIBNVME_HEX"
expect 2 "^nvmeof gen-tls-key: --secret: not hex (digit 1)" "$T" gen-tls-key -s "x${LIBNVME_HEX:1}"
expect 2 "^nvmeof gen-tls-key: --hmac: '3' is not 1 or 2" "$T" gen-tls-key --hmac=3
# --insert (nvme-cli's): needs the subsystem and a keyring that is there,
# both checked before a key is made (no key printed, none lost)
expect 2 "^nvmeof gen-tls-key: --insert needs the subsystem: --subsysnqn" "$T" gen-tls-key --insert
expect 1 "^nvmeof gen-tls-key: TLS PSK: no keyring .nvmeof-none visible to this process" "$T" gen-tls-key --insert \
  -c nqn.x -n nqn.2014-08.org.nvmexpress:uuid:0 -k .nvmeof-none
out=$("$T" gen-tls-key --insert -c nqn.x -n nqn.2014-08.org.nvmexpress:uuid:0 -k .nvmeof-none 2>/dev/null)
[ -z "$out" ] && ok "gen-tls-key: a refused --insert prints no key" || bad "gen-tls-key: a refused --insert prints no key" "$out"
expect 2 "^nvmeof gen-tls-key: option --bogus is not one of" "$T" gen-tls-key --bogus
# --insert of an identity a key already has revokes that key, as nvme-cli's
# (libnvme's nvme_update_key): a host that holds the old serial sees it
# revoked. In a session keyring of its own, type user (no psk type needed).
if command -v keyctl >/dev/null && keyctl show @s >/dev/null 2>&1; then
  out=$(keyctl session - sh -c 'keyctl newring nvmeof-ins @s >/dev/null &&
    for i in 1 2; do "$0" check-tls-key -d "$1" -i -k nvmeof-ins -t user -c nqn.x \
      -n nqn.2014-08.org.nvmexpress:uuid:0 | sed -n "s/^Inserted TLS key \([0-9a-f]*\): .*/\1/p"; done |
    { read -r a; read -r b; echo "S: $a $b"; keyctl rdescribe "0x$a" 2>&1; keyctl rdescribe "0x$b" 2>&1; }' \
    "$T" "$LIBNVME_KEY" 2>&1)
  read -r _ s1 s2 <<< "$(grep "^S: " <<< "$out")"
  if [ -n "$s1" ] && [ "$s1" != "$s2" ] && grep -q "revoked" <<< "$out" && grep -q "user;.*;NVMe0R01 " <<< "$out"; then
    ok "--insert revokes the key it replaces"
  else
    bad "--insert revokes the key it replaces" "$out"
  fi
else
  skip "--insert revokes the key it replaces" "no keyctl or keyrings here"
fi
# two random keys: each valid (check-tls-key takes it), 32 bytes, not the same
k1=$("$T" gen-tls-key); k2=$("$T" gen-tls-key)
if [[ $k1 == NVMeTLSkey-1:01:*: && ${#k1} == 65 && $k1 != "$k2" ]]; then ok "gen-tls-key: random keys, each new"
else bad "gen-tls-key: random keys, each new" "$k1 / $k2"; fi
expect 0 "^valid: a 32-byte key, hash 01 (SHA-256), cipher suite TLS_AES_128_GCM_SHA256" "$T" check-tls-key -d "$k1"
expect 0 "^valid: a 48-byte key, hash 02" "$T" check-tls-key --keydata="$key48"
# the key on stdin (nvme-cli reads it there when --keydata is not given)
out=$(printf '%s\n' "$LIBNVME_KEY" | "$T" check-tls-key); rc=$?
[ $rc = 0 ] && grep -q "^valid: a 32-byte key" <<< "$out" && ok "check-tls-key: the key from stdin" ||
  bad "check-tls-key: the key from stdin" "exit $rc: $out"
# the PSK identity, versions 0 and 1, as tests/unit/tls_vectors.py reads the specification
H=nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6 S=nqn.2026-12.io.example:tls
expect 0 "^NVMe0R01 $H $S\$" "$T" check-tls-key -d "$LIBNVME_KEY" -n "$H" -c "$S"
id1=$(python3 -c "import sys; sys.path.insert(0, 'tests/unit'); import tls_vectors as t; print(t.derive(bytes(range(48)), 2)[3])")
expect 0 "^$(sed 's/[+/]/./g' <<< "$id1")\$" "$T" check-tls-key -d "$key48" --hostnqn="$H" --subsysnqn="$S" --identity=1
expect 2 "^nvmeof check-tls-key: --identity 1 needs the subsystem" "$T" check-tls-key -d "$key48" -I 1
expect 1 "^nvmeof check-tls-key: --keydata: CRC-32 mismatch" "$T" check-tls-key -d "${LIBNVME_KEY%?????}AAAA:"
expect 1 "^nvmeof check-tls-key: --keydata: not a TLS PSK" "$T" check-tls-key -d "DHHC-1:01:AAAA:"
expect 2 "^nvmeof check-tls-key: --insert needs the subsystem: --subsysnqn" "$T" check-tls-key -d "$LIBNVME_KEY" -i -k .nvme
expect 1 "^nvmeof check-tls-key: TLS PSK: no keyring .nvmeof-none visible" "$T" check-tls-key -d "$LIBNVME_KEY" -i \
  -c nqn.x -n nqn.2014-08.org.nvmexpress:uuid:0 -k .nvmeof-none
expect 0 "^usage: nvmeof check-tls-key" "$T" check-tls-key --help
# the identity holds the NQNs: a key typed as one is refused, not printed
out=$("$T" check-tls-key -d "$LIBNVME_KEY" -n "$H" -c "$LIBNVME_KEY" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "^nvmeof check-tls-key: -c: not an NQN" <<< "$out" && ! grep -q "VRLbtnN9" <<< "$out" &&
  ok "check-tls-key: a key as the subsystem NQN is refused, not shown" ||
  bad "check-tls-key: a key as the subsystem NQN is refused, not shown" "exit $rc: $out"

# perf: spdk_nvme_perf's letters where they mean the same; each refusal
# names the option before anything connects
P=(perf "${A[@]}" -n nqn.x)
expect 0 "^usage: nvmeof perf" "$T" perf --help
expect 2 "^nvmeof perf: the queue depth (-q N) is missing" "$T" "${P[@]}" -o 4096 -w read -t 1
expect 2 "^nvmeof perf: the I/O size (-o BYTES) is missing" "$T" "${P[@]}" -q 1 -w read -t 1 -o json
expect 2 "^nvmeof perf: the pattern (-w read|write" "$T" "${P[@]}" -q 1 -o 4k -t 1
expect 2 "^nvmeof perf: the time (-t SECONDS) is missing" "$T" "${P[@]}" -q 1 -o 4k -w read
expect 2 "^nvmeof perf: the subsystem NQN (-n NQN) is missing" "$T" perf "${A[@]}" -q 1 -o 4k -w read -t 1
expect 2 "^nvmeof perf: --queue-depth: '2000' is not a number from 1 to 1024" "$T" "${P[@]}" -q 2000 -o 4k -w read -t 1
expect 2 "^nvmeof perf: --io-size: '4x' is not a size" "$T" "${P[@]}" -q 1 -o 4x -w read -t 1
expect 2 "^nvmeof perf: --pattern: 'seq' is not read, write" "$T" "${P[@]}" -q 1 -o 4k --pattern=seq -t 1
expect 2 "^nvmeof perf: --time: '0' is not a number from 1" "$T" "${P[@]}" -q 1 -o 4k -w read -t 0
expect 2 "^nvmeof perf: --transport: 'fc' is not rdma or tcp" "$T" "${P[@]}" -q 1 -o 4k -w read -t fc
expect 2 "^nvmeof perf: --rwmixread is for -w rw or randrw, not read" "$T" "${P[@]}" -q 1 -o 4k -w read -t 1 -M 70
expect 2 "^nvmeof perf: --rwmixread: '101'" "$T" "${P[@]}" -q 1 -o 4k -w rw -t 1 -M 101
expect 2 "^nvmeof perf: --cpus: '0x0' is not a CPU mask" "$T" "${P[@]}" -q 1 -o 4k -w read -t 1 -c 0x0
expect 2 "^nvmeof perf: --cpus: '3-1' names a CPU past 63, or a range backwards" "$T" "${P[@]}" -q 1 -o 4k -w read -t 1 -c 3-1
expect 2 "^nvmeof perf: --cpus: '0,x' is not a CPU list" "$T" "${P[@]}" -q 1 -o 4k -w read -t 1 -c 0,x
expect 2 "^nvmeof perf: --wait: 'spin' is not poll, hybrid, sleep or adaptive" "$T" "${P[@]}" -q 1 -o 4k -w read -t 1 --wait=spin
expect 2 "^nvmeof perf: --trid trtype: 'PCIe' is not rdma or tcp" "$T" perf -q 1 -o 4k -w read -t 1 -r 'trtype:PCIe traddr:0000:01:00.0'
expect 2 "^nvmeof perf: --trid: 'priority' is not a key" "$T" perf -q 1 -o 4k -w read -t 1 -r 'trtype:TCP priority:1'
expect 2 "^nvmeof perf: --output-format: 'xml' is not normal or json" "$T" "${P[@]}" -q 1 -o 4k -w read -t 1 --output-format=xml
expect 2 "^nvmeof perf: unknown option --frob" "$T" "${P[@]}" -q 1 -o 4k -w read -t 1 --frob
expect 2 "^nvmeof perf: unexpected argument 'extra'" "$T" "${P[@]}" -q 1 -o 4k -w read -t 1 extra
# the words told apart by their form reach the connect: -r's address and
# port, -t tcp, -q NQN, -w ADDR (a local address nobody has: refused by the
# connect, not by the options)
expect 1 "^nvmeof perf: .*TCP connect" "$T" perf -q 1 -o 4k -w read -t 1 -r 'trtype:TCP adrfam:IPv4 traddr:127.0.0.1 trsvcid:4 subnqn:nqn.x ns:1'
expect 1 "^nvmeof perf: .*connect" "$T" "${P[@]}" -t tcp -q nqn.2014-08.org.nvmexpress:uuid:0 -q 8 -o 8k -w randrw -M 70 -t 1 -o json
expect 1 "^nvmeof perf: .*connect" "$T" "${P[@]}" -t tcp -w 192.0.2.77 -q 1 -o 4k -w write -t 1

# read: a failed connect leaves the output file as it was
printf 'keep me' > "$tmp/keep.bin"
expect 1 "^nvmeof read: .*connect" "$T" read "${A[@]}" -n nqn.x -c 8 -d "$tmp/keep.bin"
if [ "$(cat "$tmp/keep.bin")" = "keep me" ]; then ok "read: keep.bin untouched after a failed connect"
else bad "read: keep.bin untouched after a failed connect" "now: $(head -c 40 "$tmp/keep.bin" | od -c | head -2)"; fi
expect 1 "^nvmeof read: .*connect" "$T" read "${A[@]}" -n nqn.x -c 8 -d "$tmp/new.bin"
if [ ! -e "$tmp/new.bin" ]; then ok "read: no output file created by a failed connect"
else bad "read: no output file created by a failed connect"; fi
# write: an endless input is not read whole before connecting (a 300 MB
# address-space limit would run out long before /dev/zero does)
out=$(ulimit -v 300000; "$T" write "${A[@]}" -n nqn.x -d /dev/zero -c 8 2>&1); rc=$?
if [ $rc = 1 ] && grep -q "^nvmeof write: .*connect" <<< "$out" && ! grep -qi "memory" <<< "$out"; then
  ok "write -d /dev/zero -c 8 reads nothing before connecting"
else bad "write -d /dev/zero -c 8 reads nothing before connecting" "exit $rc: $out"; fi
tally "tool"
