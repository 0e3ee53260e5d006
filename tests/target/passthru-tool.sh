#!/bin/bash
# IN-GUEST: nvmeof io-passthru / admin-passthru against the test bed's
# target, checked against nvme-cli's passthru on the kernel initiator and
# the wrapped subcommands.
source "$(dirname "$0")/lib.sh"
B=${NVMEOF_BUILD:-build/out}
T=$B/nvmeof
NA=(-a "$NVMEOF_TB_ADDR" -n "$NVMEOF_TB_NQN_A")

# the hex number after "result" in nvme-cli's or our normal output
result_of() { python3 -c 'import re,sys; print(int(re.search(r"result:\s*(?:0x)?([0-9a-fA-F]+)", sys.stdin.read()).group(1), 16))'; }

t_io_passthru_read_agrees_with_nvme_cli() {
  local dev2
  head -c 16384 /dev/urandom > "$SCRATCH/in"
  "$T" write "${NA[@]}" --namespace-id=2 --start-block=40 --block-count=4 --data="$SCRATCH/in" || fail "write failed"
  "$T" io-passthru "${NA[@]}" --opcode=0x02 --namespace-id=2 --cdw10=40 --cdw12=3 --data-len=16384 --read -b \
    > "$SCRATCH/ours" || fail "io-passthru read failed"
  cmp "$SCRATCH/in" "$SCRATCH/ours" || fail "io-passthru read other bytes than were written"
  "$T" io-passthru "${NA[@]}" --opcode=0x02 --namespace-id=2 --cdw10=40 --cdw12=0 --data-len=4096 --read \
    > "$SCRATCH/ours.txt" || fail "io-passthru (hex dump) failed"
  grep -q '^NVMe command result:00000000' "$SCRATCH/ours.txt" || fail "no result line"
  grep -q '^0ff0:' "$SCRATCH/ours.txt" || fail "hex dump incomplete"
  tb kconnect rdma > /dev/null || fail "kernel connect failed"
  dev2=$(tb kdev "$NVMEOF_TB_NQN_A" 2)
  local rc=0
  nvme io-passthru "$dev2" --opcode=0x02 --namespace-id=2 --cdw10=40 --cdw12=3 --data-len=16384 --read -b \
    > "$SCRATCH/cli" 2>/dev/null || rc=$?
  tb kdisconnect
  [ $rc = 0 ] || fail "nvme io-passthru failed"
  # nvme-cli may print its result line before the bytes: the data is the tail
  python3 - "$SCRATCH/ours" "$SCRATCH/cli" <<'PY' || fail "io-passthru data differs from nvme-cli's"
import sys
o, c = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
assert len(o) == 16384 and c.endswith(o), (len(o), len(c))
print("    16384 bytes agree with nvme-cli io-passthru")
PY
}

t_io_passthru_write_then_wrapped_read() {
  head -c 8192 /dev/urandom > "$SCRATCH/in"
  "$T" io-passthru "${NA[@]}" --opcode=0x01 --namespace-id=2 --cdw10=60 --cdw12=1 --data-len=8192 --write \
    --input-file="$SCRATCH/in" > /dev/null || fail "io-passthru write failed"
  "$T" read "${NA[@]}" --namespace-id=2 --start-block=60 --block-count=2 --data="$SCRATCH/back" || fail "read failed"
  cmp "$SCRATCH/in" "$SCRATCH/back" || fail "read back other bytes than io-passthru wrote"
}

# nvme-cli's letters (-n NSID, -4 for --cdw10, -6 for --cdw12) and its data
# direction: a Write opcode's data comes from standard input without
# --write or --input-file; data without a direction is refused.
t_io_passthru_takes_nvme_cli_letters_and_direction() {
  local rc=0
  head -c 8192 /dev/urandom > "$SCRATCH/in"
  "$T" io-passthru "${NA[@]}" -O 0x01 -n 2 -4 70 -6 1 -l 8192 < "$SCRATCH/in" > /dev/null \
    || fail "io-passthru write from standard input failed"
  "$T" read "${NA[@]}" --namespace-id=2 --start-block=70 --block-count=2 --data="$SCRATCH/back" || fail "read failed"
  cmp "$SCRATCH/in" "$SCRATCH/back" || fail "read back other bytes than io-passthru wrote from standard input"
  "$T" io-passthru "${NA[@]}" -O 0x02 -n 2 -4 70 -6 1 -l 8192 -b > "$SCRATCH/ours" || fail "io-passthru read failed"
  cmp "$SCRATCH/in" "$SCRATCH/ours" || fail "io-passthru read other bytes than were written"
  "$T" io-passthru "${NA[@]}" -O 0xc0 -n 2 -l 512 2> "$SCRATCH/err" > /dev/null || rc=$?
  [ $rc = 2 ] && grep -q "data direction not given" "$SCRATCH/err" || fail "data without a direction: rc $rc, $(cat "$SCRATCH/err")"
}

t_admin_passthru_get_features_agrees_with_nvme_cli() {
  local ours cli dev
  "$T" admin-passthru "${NA[@]}" --opcode=0x0a --cdw10=7 -o json > "$SCRATCH/ours.json" || fail "admin-passthru failed"
  ours=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["status"] == 0 and d["sq_id"] == 0; print(d["result"])' "$SCRATCH/ours.json") \
    || fail "bad JSON: $(cat "$SCRATCH/ours.json")"
  [ "$("$T" admin-passthru "${NA[@]}" --opcode=0x0a --cdw10=7 | result_of)" = "$ours" ] || fail "normal output differs from JSON"
  dev=$(tb kconnect rdma) || fail "kernel connect failed"
  local rc=0
  cli=$(nvme admin-passthru "$dev" --opcode=0x0a --cdw10=7 2>&1 | result_of) || rc=$?
  tb kdisconnect
  [ $rc = 0 ] || fail "nvme admin-passthru failed"
  [ "$ours" = "$cli" ] || fail "Number of Queues: ours $ours, nvme-cli $cli"
  echo "    Get Features Number of Queues: $(printf '0x%08x' "$ours") from both"
}

# Over NVMe/TCP (-t tcp, and both digests as nvme-cli's -g -G): a raw Flush
# with no data completes, a raw write's data reads back, a vendor opcode
# with no buffer is answered by name.
t_io_passthru_over_tcp_with_digests() {
  local err NT=(-t tcp -g -G "${NA[@]}")
  "$T" io-passthru "${NT[@]}" --opcode=0x00 --namespace-id=2 > "$SCRATCH/flush" || fail "raw Flush over TCP failed"
  grep -q '^NVMe command result:00000000' "$SCRATCH/flush" || fail "raw Flush: $(cat "$SCRATCH/flush")"
  head -c 8192 /dev/urandom > "$SCRATCH/in"
  "$T" io-passthru "${NT[@]}" --opcode=0x01 --namespace-id=2 --cdw10=80 --cdw12=1 --data-len=8192 --write \
    --input-file="$SCRATCH/in" > /dev/null || fail "io-passthru write over TCP failed"
  "$T" io-passthru "${NT[@]}" --opcode=0x02 --namespace-id=2 --cdw10=80 --cdw12=1 --data-len=8192 --read -b \
    > "$SCRATCH/back" || fail "io-passthru read over TCP failed"
  cmp "$SCRATCH/in" "$SCRATCH/back" || fail "read back over TCP other bytes than were written"
  err=$("$T" io-passthru "${NT[@]}" --opcode=0xc1 --namespace-id=2 2>&1 >/dev/null) && fail "vendor opcode succeeded"
  echo "$err" | grep -q "Invalid Command Opcode" || fail "vendor opcode over TCP: $err"
}

t_passthru_errors_by_name() {
  local err
  err=$("$T" io-passthru "${NA[@]}" --opcode=0xc0 --namespace-id=2 2>&1 >/dev/null) && fail "vendor opcode succeeded"
  echo "$err" | grep -q "Invalid Command Opcode" || fail "vendor opcode: $err"
  "$T" io-passthru "${NA[@]}" --opcode=0xc0 --namespace-id=2 -o json > "$SCRATCH/e.json" && fail "json: vendor opcode succeeded"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["status_code"] == 1 and d["status_name"] == "Invalid Command Opcode", d' \
    "$SCRATCH/e.json" || fail "json status"
  err=$("$T" admin-passthru "${NA[@]}" --opcode=0x7f 2>&1) && fail "a Fabrics command went out"
  echo "$err" | grep -q "Fabrics" || fail "Fabrics refusal: $err"
  local rc=0
  "$T" io-passthru "${NA[@]}" 2>/dev/null || rc=$?
  [ $rc = 2 ] || fail "missing --opcode accepted"
}

run_tests "$@"
