#!/bin/bash
# The nvmeof command-line tool against the test bed's target, checked
# against nvme-cli and the kernel initiator in the same boot.
source "$(dirname "$0")/lib.sh"
B=${NVMEOF_BUILD:-build/out}
T=$B/nvmeof
A=(-a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_PORT")
# NVMEOF_TB_TRTYPE=tcp: ours and the kernel's initiator over the target's NVMe/TCP port
TR=(); KTR=rdma
if [ "${NVMEOF_TB_TRTYPE:-}" = tcp ]; then TR=(-t tcp); KTR=tcp; fi
NA=("${TR[@]}" -a "$NVMEOF_TB_ADDR" -n "$NVMEOF_TB_NQN_A")

# field-by-field equality of two JSON documents' records, python3 on stdin args
jcmp() { python3 - "$@" <<'PY'
import json, sys
ours, theirs, keys = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3].split(",")
def recs(d): return {(r["subtype"], r["subnqn"], r["trtype"], str(r["portid"])): r for r in d["records"]}
o, t = recs(ours), recs(theirs)
if set(o) != set(t):
    sys.exit("records differ: ours %s, nvme-cli %s" % (sorted(o), sorted(t)))
for k, r in o.items():
    for f in keys:
        if f in t[k] and str(r.get(f)) != str(t[k][f]):
            sys.exit("%s %s: ours %r, nvme-cli %r" % (k, f, r.get(f), t[k][f]))
print("    %d records agree on %s" % (len(o), ",".join(keys)))
PY
}

referral() { # add|del: a referral on the RDMA port to the TCP port
  local R=/sys/kernel/config/nvmet/ports/1/referrals/tcp
  if [ "$1" = add ]; then
    mkdir -p $R; echo tcp > $R/addr_trtype; echo ipv4 > $R/addr_adrfam
    echo "$NVMEOF_TB_ADDR" > $R/addr_traddr; echo "$NVMEOF_TB_PORT" > $R/addr_trsvcid
    echo 1 > $R/enable
  else [ ! -d $R ] || { echo 0 > $R/enable; rmdir $R; }; fi
}

t_discover_agrees_with_nvme_cli() {
  local f=rdma_prtype,rdma_qptype,rdma_cms,rdma_pkey,trtype,adrfam,subtype,treq,portid,trsvcid,subnqn,traddr,eflags
  referral add
  "$T" discover "${A[@]}" -q "$NVMEOF_TB_HOSTNQN_B" -o json > "$SCRATCH/ours.json" || { referral del; fail "discover failed"; }
  nvme discover -t rdma "${A[@]}" -q "$NVMEOF_TB_HOSTNQN_B" -o json > "$SCRATCH/cli.json" 2>/dev/null
  "$T" discover "${A[@]}" -q "$NVMEOF_TB_HOSTNQN_B" > "$SCRATCH/ours.txt"
  nvme discover -t rdma "${A[@]}" -q "$NVMEOF_TB_HOSTNQN_B" > "$SCRATCH/cli.txt" 2>/dev/null
  referral del
  jcmp "$SCRATCH/ours.json" "$SCRATCH/cli.json" $f || fail "discovery log differs from nvme discover"
  # both subsystems on the RDMA port, the TCP port as a referral
  grep -c '"subtype": "nvme subsystem"' "$SCRATCH/ours.json" | grep -qx 2 || fail "not two NVM subsystems"
  grep -q '"trtype": "tcp"' "$SCRATCH/ours.json" || fail "no TCP record"
  # the normal output reads like nvme-cli's, line for line (the generation counter moves between reads)
  diff <(sed 1,2d "$SCRATCH/ours.txt") <(sed 1,2d "$SCRATCH/cli.txt") || fail "normal output differs from nvme discover"
  # and the TCP port's own records, through nvme-cli, name the same subsystems
  nvme discover -t tcp "${A[@]}" -q "$NVMEOF_TB_HOSTNQN_B" -o json 2>/dev/null | grep -q "$NVMEOF_TB_NQN_B" || fail "nvme-cli sees no B on TCP"
}

# discover -o fio: a filename per NVM subsystem that fio takes as it is
t_discover_o_fio_filenames_run_in_fio() {
  referral add
  "$T" discover "${A[@]}" -o fio > "$SCRATCH/fio.txt" || { referral del; fail "discover -o fio failed"; }
  referral del
  cat "$SCRATCH/fio.txt"
  grep -q 'subtype\|discovery' "$SCRATCH/fio.txt" && fail "discover -o fio printed more than filenames"
  local fn
  fn=$(grep -F "subnqn=${NVMEOF_TB_NQN_A//:/\\:} " "$SCRATCH/fio.txt" | head -1)
  [ -n "$fn" ] || fail "no filename for $NVMEOF_TB_NQN_A"
  [[ $fn == "trtype=RDMA adrfam=IPv4 traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_PORT "* ]] || fail "filename: $fn"
  # fio is not instrumented: a sanitized engine needs the ASan runtime first,
  # and its leaks are checked (fio's own dropped by lsan-fio.supp)
  local pre=()
  [ -z "${NVMEOF_ASAN_RT:-}" ] || pre=(env LD_PRELOAD="$NVMEOF_ASAN_RT" ASAN_OPTIONS=detect_leaks=1:malloc_context_size=2:symbolize=0
    LSAN_OPTIONS=suppressions=$PWD/tests/target/lsan-fio.supp:print_suppressions=0)
  timeout 120 "${pre[@]}" fio --name=pasted --ioengine=external:"$PWD/$B/libnvmeof_fio.so" --thread=1 --filename="$fn" \
    --rw=randread --bs=4k --size=16m --number_ios=64 > "$SCRATCH/fio.out" 2>&1 || { cat "$SCRATCH/fio.out"; fail "fio on the pasted filename failed"; }
  grep -q 'pasted: (groupid=0' "$SCRATCH/fio.out" || { cat "$SCRATCH/fio.out"; fail "no fio report"; }
}

t_id_ctrl_agrees_with_kernel() {
  local dev
  "$T" id-ctrl "${NA[@]}" -o json > "$SCRATCH/ours.json" || fail "id-ctrl failed"
  dev=$(tb kconnect $KTR) || fail "kernel connect failed"
  local rc=0
  nvme id-ctrl "$dev" -o json > "$SCRATCH/cli.json" || rc=$?
  tb kdisconnect
  [ $rc = 0 ] || fail "nvme id-ctrl failed"
  python3 - "$SCRATCH/ours.json" "$SCRATCH/cli.json" <<'PY' || fail "id-ctrl differs from nvme-cli's"
import json, sys
o, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
# every field nvme-cli prints, ours the same value; cntlid differs by
# design (another controller of the subsystem), and so may what counts time
differ = {"cntlid"}
missing = [f for f in t if f not in o]
if missing: sys.exit("fields nvme-cli prints that ours lacks: %s" % ", ".join(missing))
for f in t:
    a, b = o[f], t[f]
    if f in differ: continue
    if isinstance(b, str): a, b = str(a).strip(), b.strip()
    if a != b: sys.exit("%s: ours %r, nvme-cli %r" % (f, a, b))
print("    all %d fields agree with nvme-cli (sn %s, mn %s, mdts %d)" % (len(t), o["sn"].strip(), o["mn"].strip(), o["mdts"]))
PY
  "$T" id-ctrl "${NA[@]}" | grep -q "^sn *: $NVMEOF_TB_SERIAL" || fail "normal output lacks the serial"
}

t_namespaces_agree_with_kernel() {
  local dev dev2
  "$T" list-ns "${NA[@]}" -o json > "$SCRATCH/ours.json" || fail "list-ns failed"
  "$T" id-ns "${NA[@]}" -n 2 -o json > "$SCRATCH/ns2.json" || fail "id-ns failed"
  "$T" id-ns "${NA[@]}" --namespace-id=1 > "$SCRATCH/ns1.txt" || fail "id-ns (normal) failed"
  dev=$(tb kconnect $KTR) || fail "kernel connect failed"
  dev2=$(tb kdev "$NVMEOF_TB_NQN_A" 2)
  nvme list-ns "$dev" -o json > "$SCRATCH/cli.json"
  nvme id-ns "$dev2" -o json > "$SCRATCH/cli2.json"
  tb kdisconnect
  python3 - "$SCRATCH/ours.json" "$SCRATCH/cli.json" "$SCRATCH/ns2.json" "$SCRATCH/cli2.json" <<'PY' || fail "namespaces differ"
import json, sys
o, t, n, m = (json.load(open(p)) for p in sys.argv[1:5])
if o != t: sys.exit("list-ns: ours %r, nvme-cli %r" % (o, t))
for f in ["nsze", "ncap", "nsfeat", "nlbaf", "flbas", "dlfeat", "nmic", "anagrpid", "nguid", "eui64", "lbafs"]:
    if n[f] != m[f]: sys.exit("id-ns %s: ours %r, nvme-cli %r" % (f, n[f], m[f]))
print("    list-ns %s; ns2 nsze %d, lbads %d" % ([x["nsid"] for x in o["nsid_list"]], n["nsze"], n["lbafs"][0]["ds"]))
PY
  grep -q "lbads:9 .*(in use)" "$SCRATCH/ns1.txt" || fail "ns1 is not shown with 512-byte blocks in use"
}

t_write_read_back_ours_and_kernel() {
  local dev
  head -c 1048576 /dev/urandom > "$SCRATCH/in"
  "$T" write "${NA[@]}" -n 1 --start-block=30000 --data="$SCRATCH/in" || fail "write failed"
  "$T" read "${NA[@]}" -n 1 --start-block=30000 --block-count=2048 --data="$SCRATCH/out" || fail "read failed"
  cmp "$SCRATCH/in" "$SCRATCH/out" || fail "nvmeof read returns other bytes than nvmeof write wrote"
  "$T" read "${NA[@]}" -n 1 --start-block=30000 --block-count=8 --data=- | cmp - <(head -c 4096 "$SCRATCH/in") || fail "read to stdout differs"
  # FUA, and the 4 KiB namespace, from stdin
  head -c 65536 /dev/urandom > "$SCRATCH/in2"
  "$T" write "${NA[@]}" -n 2 --start-block=7 --data=- --force-unit-access < "$SCRATCH/in2" || fail "FUA write to ns2 failed"
  "$T" flush "${NA[@]}" -n 2 || fail "flush failed"
  dev=$(tb kconnect $KTR) || fail "kernel connect failed"
  dd if="$dev" bs=512 skip=30000 count=2048 iflag=direct status=none > "$SCRATCH/k1"
  dd if="$(tb kdev "$NVMEOF_TB_NQN_A" 2)" bs=4096 skip=7 count=16 iflag=direct status=none > "$SCRATCH/k2"
  tb kdisconnect
  cmp "$SCRATCH/in" "$SCRATCH/k1" || fail "the kernel reads other bytes on ns1"
  cmp "$SCRATCH/in2" "$SCRATCH/k2" || fail "the kernel reads other bytes on ns2"
}

# nvme-cli's habits: -t rdma -a -s; an endless input, read only as far as
# the blocks asked; a read into an existing file replaces it only with data
t_nvme_cli_letters_and_streams() {
  "$T" discover -t rdma "${A[@]}" -o json > "$SCRATCH/d.json" || fail "discover -t rdma -a -s failed"
  grep -q "\"subnqn\": \"$NVMEOF_TB_NQN_A\"" "$SCRATCH/d.json" || fail "discover -t rdma lists no subsystem A"
  "$T" id-ctrl -t rdma "${A[@]}" -n "$NVMEOF_TB_NQN_A" > /dev/null || fail "id-ctrl -t rdma -a -s -n failed"
  head -c 8192 /dev/urandom > "$SCRATCH/r"
  "$T" write "${NA[@]}" -n 1 --start-block=60000 --data="$SCRATCH/r" || fail "write failed"
  # an address-space limit bounds what it may read into memory (ASan's
  # shadow cannot live under one: the sanitized tool runs unbounded)
  local lim=400000
  readelf -d "$T" | grep -q 'NEEDED.*libasan' && lim=unlimited
  (ulimit -v $lim; "$T" write "${NA[@]}" -n 1 --start-block=60002 -c 8 -d /dev/zero) || fail "write -d /dev/zero -c 8 failed"
  printf 'old contents' > "$SCRATCH/keep.bin"
  "$T" read "${NA[@]}" -n 1 --start-block=60000 -c 12 -d "$SCRATCH/keep.bin" || fail "read into an existing file failed"
  { head -c 1024 "$SCRATCH/r"; head -c 4096 /dev/zero; tail -c +5121 "$SCRATCH/r" | head -c 1024; } > "$SCRATCH/want"
  cmp "$SCRATCH/want" "$SCRATCH/keep.bin" || fail "not 8 zero blocks from /dev/zero between the file's, or keep.bin not replaced"
  # a failed read (past the end) leaves it as it was
  ! "$T" read "${NA[@]}" -n 1 --start-block=2097150 -c 8 -d "$SCRATCH/keep.bin" 2> /dev/null || fail "read past the end succeeded"
  cmp "$SCRATCH/want" "$SCRATCH/keep.bin" || fail "a failed read changed keep.bin"
}

# the guest's Soft-RoCE devices, their netdevs and the address the target is on
t_list_rdma_shows_the_testbed_devices() {
  "$T" list-rdma -o json > "$SCRATCH/l.json" || fail "list-rdma failed"
  python3 - "$SCRATCH/l.json" "$NVMEOF_TB_ADDR" <<'PY' || fail "list-rdma does not show the test bed's device"
import json, sys
d = json.load(open(sys.argv[1]))["devices"]
assert d and all(x["pci"] == "" and x["numa_node"] == -1 for x in d), d
p = [q for x in d for q in x["ports"] if sys.argv[2] in q["addresses"]]
assert p and p[0]["state"] == "ACTIVE" and p[0]["netdev"], d
print("    %s: %s" % (", ".join(x["name"] for x in d), ", ".join("%s on %s" % (q["netdev"], q["addresses"][0]) for x in d for q in x["ports"] if q["addresses"])))
PY
  "$T" list-rdma | grep -q "^rxe0: not a PCI device" || fail "list-rdma normal output"
}

t_write_zeroes_reads_back_zeroes() {
  local dev
  head -c 262144 /dev/urandom > "$SCRATCH/in"
  "$T" write "${NA[@]}" -n 1 --start-block=50000 --data="$SCRATCH/in" || fail "write failed"
  "$T" write-zeroes "${NA[@]}" -n 1 --start-block=50008 --block-count=496 || fail "write-zeroes failed"
  "$T" read "${NA[@]}" -n 1 --start-block=50000 --block-count=512 --data="$SCRATCH/out" || fail "read failed"
  { head -c 4096 "$SCRATCH/in"; head -c $((496 * 512)) /dev/zero; tail -c 4096 "$SCRATCH/in"; } > "$SCRATCH/want"
  cmp "$SCRATCH/want" "$SCRATCH/out" || fail "not zeroes where Write Zeroes went, or lost data around them"
  dev=$(tb kconnect $KTR) || fail "kernel connect failed"
  dd if="$dev" bs=512 skip=50000 count=512 iflag=direct status=none > "$SCRATCH/k"
  tb kdisconnect
  cmp "$SCRATCH/want" "$SCRATCH/k" || fail "the kernel does not read the zeroes"
}

t_logs_read() {
  "$T" smart-log "${NA[@]}" -o json > "$SCRATCH/smart.json" || fail "smart-log failed"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert int(d["host_read_commands"]) > 0, d; print("    SMART: %s host reads, %s data units read" % (d["host_read_commands"], d["data_units_read"]))' "$SCRATCH/smart.json" || fail "SMART log without reads"
  "$T" smart-log "${NA[@]}" | grep -q "^critical_warning" || fail "normal smart-log"
  "$T" error-log "${NA[@]}" -o json -e 4 | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["errors"]) == 4' || fail "error-log did not give 4 entries"
  [ "$("$T" error-log "${NA[@]}" -o json | grep -c error_count)" = 128 ] || fail "error-log did not give ELPE+1 (128) entries"
  [ "$("$T" get-log "${NA[@]}" --log-id=2 --log-len=512 -b | wc -c)" = 512 ] || fail "get-log raw is not 512 bytes"
  "$T" get-log "${NA[@]}" --log-id=2 --log-len=512 | grep -q "^01f0:" || fail "get-log hex dump"
}

# every bad argument: a message and a non-zero exit
bad() { # expected-text cmd...
  local want=$1; shift
  if "$@" > "$SCRATCH/o" 2> "$SCRATCH/e"; then fail "'$*' succeeded"; fi
  grep -q -- "$want" "$SCRATCH/e" || { cat "$SCRATCH/e" >&2; fail "'$*' did not say '$want'"; }
  [ -s "$SCRATCH/o" ] && fail "'$*' printed to stdout"
  true
}
t_bad_arguments() {
  bad "usage" "$T"
  bad "unknown subcommand 'frob'" "$T" frob
  bad "target address is missing" "$T" id-ctrl -n "$NVMEOF_TB_NQN_A"
  bad "subsystem NQN is missing" "$T" id-ctrl -a "$NVMEOF_TB_ADDR"
  bad "is not normal or json" "$T" id-ctrl "${NA[@]}" -o xml
  bad "unknown option" "$T" id-ctrl "${NA[@]}" --frob
  bad "not one of this subcommand's" "$T" discover "${A[@]}" --block-count=3
  bad "needs a value" "$T" id-ctrl "${NA[@]}" -o
  bad "not a number" "$T" read "${NA[@]}" --start-block=x --block-count=1
  bad "not a number" "$T" id-ctrl "${NA[@]}" --timeout=soon
  bad "--block-count is required" "$T" read "${NA[@]}"
  bad "--log-id and --log-len are required" "$T" get-log "${NA[@]}" --log-id=2
  bad "dword" "$T" get-log "${NA[@]}" --log-id=2 --log-len=6
  bad "Invalid Log Page\|Invalid Field" "$T" get-log "${NA[@]}" --log-id=0xbf --log-len=512
  bad "namespace 9 is not an active namespace" "$T" read "${NA[@]}" -n 9 --block-count=1
  bad "past the end of namespace 1" "$T" read "${NA[@]}" --start-block=2097150 --block-count=8
  bad "unexpected argument" "$T" flush "${NA[@]}" extra
  printf 'abc' > "$SCRATCH/odd"
  bad "not a whole number of 512-byte blocks" "$T" write "${NA[@]}" --data="$SCRATCH/odd"
  bad "cannot open" "$T" write "${NA[@]}" --data=/nonexistent/file
  bad "Fabrics Connect" "$T" id-ctrl -a "$NVMEOF_TB_ADDR" -n nqn.2026-12.io.nvmeof:nobody
  bad "Connect Invalid Host" "$T" id-ctrl -a "$NVMEOF_TB_ADDR" -n "$NVMEOF_TB_NQN_B"
  bad "nothing listens\|reject" "$T" id-ctrl -a "$NVMEOF_TB_ADDR" -s 4421 -n "$NVMEOF_TB_NQN_A" --timeout=2000
  bad "CUDA" "$T" read "${NA[@]}" --block-count=1 --gpu=0 --data="$SCRATCH/g"
  bad "not a discovery controller" "$T" discover "${A[@]}" -n "$NVMEOF_TB_NQN_A"
}

# Zoned namespaces (subsystem Z): the zns plugin's subcommands, their states
# and the LBA an append got, checked against our own report
t_zone_subcommands() {
  local Z=("${TR[@]}" -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_ZPORT" -n "$NVMEOF_TB_NQN_Z") out
  "$T" zone-mgmt-send "${Z[@]}" --zsa=reset --select-all > /dev/null || fail "reset all failed"
  out=$("$T" id-ns "${Z[@]}" --csi 2 -o json) || fail "id-ns --csi 2 failed"
  [ "$(jq -r '.mor, .mar, .zasl, .lbafe[0].zsze' <<< "$out" | tr '\n' ' ')" = "3 5 5 1024 " ] ||
    fail "id-ns --csi 2: $out"
  head -c 12288 /dev/urandom > "$SCRATCH/app"
  out=$("$T" zone-append "${Z[@]}" --zslba=2048 -d "$SCRATCH/app") || fail "zone-append failed"
  [ "$out" = "Success appended data to LBA 800" ] || fail "zone-append said: $out"
  out=$("$T" zone-append "${Z[@]}" --zslba=2048 -d "$SCRATCH/app") || fail "second zone-append failed"
  [ "$out" = "Success appended data to LBA 803" ] || fail "second zone-append said: $out"
  "$T" read "${Z[@]}" -B 2048 -c 3 -d "$SCRATCH/back" 2> /dev/null || fail "read back failed"
  cmp "$SCRATCH/app" "$SCRATCH/back" || fail "the appended data did not read back"
  "$T" zone-mgmt-send "${Z[@]}" --zsa=open --start-lba=4096 > /dev/null || fail "open failed"
  out=$("$T" report-zones "${Z[@]}" -o json) || fail "report-zones failed"
  [ "$(jq -r '.nr_zones, (.zone_list[2] | .state, .wp), .zone_list[4].state, .zone_list[0].type' <<< "$out" |
    tr '\n' ' ')" = "16 IMP_OPENED 2054 EXP_OPENED SEQWRITE_REQ " ] || fail "report-zones: $out"
  out=$("$T" report-zones "${Z[@]}" --state=3) || fail "report-zones --state=3 failed"
  grep -q '^nr_zones: 1$' <<< "$out" && grep -q '^SLBA: 0x1000 .*State: EXP_OPENED' <<< "$out" ||
    fail "report-zones --state=3: $out"
  out=$("$T" zone-append "${Z[@]}" --zslba=0 -c 33 -d /dev/zero 2>&1) && fail "an append above ZASL went: $out"
  grep -q "Zone Append Size Limit" <<< "$out" || fail "above ZASL: $out"
  "$T" zone-mgmt-send "${Z[@]}" --zsa=reset --select-all > /dev/null || fail "reset all failed"
}

# report-zones against nvme-cli's zns plugin through the kernel's host on the
# same namespace: the same zones, field by field, in mixed states
t_report_zones_matches_the_kernel_hosts() {
  local Z=("${TR[@]}" -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_ZPORT" -n "$NVMEOF_TB_NQN_Z") dev f
  f='{nr_zones, zone_list: [.zone_list[] | {slba, wp, cap, state, type}]}'
  "$T" zone-mgmt-send "${Z[@]}" --zsa=reset --select-all > /dev/null || fail "reset all failed"
  "$T" zone-mgmt-send "${Z[@]}" --zsa=finish --start-lba=0 > /dev/null || fail "finish failed"
  "$T" zone-append "${Z[@]}" --zslba=1024 -c 5 -d /dev/zero > /dev/null || fail "append failed"
  "$T" zone-append "${Z[@]}" --zslba=2048 -c 7 -d /dev/zero > /dev/null || fail "append failed"
  "$T" zone-mgmt-send "${Z[@]}" --zsa=close --start-lba=2048 > /dev/null || fail "close failed"
  "$T" zone-mgmt-send "${Z[@]}" --zsa=open --start-lba=3072 > /dev/null || fail "open failed"
  "$T" report-zones "${Z[@]}" -o json | jq -S "$f" > "$SCRATCH/ours.json" || fail "report-zones failed"
  timeout 30 nvme connect -t tcp -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_ZPORT" -n "$NVMEOF_TB_NQN_Z" > /dev/null ||
    fail "the kernel's host did not connect"
  dev=$(tb kdev "$NVMEOF_TB_NQN_Z" 1)
  nvme zns report-zones "$dev" -o json | jq -S "$f" > "$SCRATCH/kernel.json"
  timeout 30 nvme disconnect -n "$NVMEOF_TB_NQN_Z" > /dev/null
  "$T" zone-mgmt-send "${Z[@]}" --zsa=reset --select-all > /dev/null || fail "reset all failed"
  [ "$(jq '.zone_list | length' "$SCRATCH/ours.json")" = 16 ] || fail "ours: $(head -c 300 "$SCRATCH/ours.json")"
  grep -q '"EXP_OPENED"' "$SCRATCH/ours.json" && grep -q '"CLOSED"' "$SCRATCH/ours.json" &&
    grep -q '"FULL"' "$SCRATCH/ours.json" && grep -q '"IMP_OPENED"' "$SCRATCH/ours.json" ||
    fail "not the mixed states asked for: $(head -c 600 "$SCRATCH/ours.json")"
  diff "$SCRATCH/ours.json" "$SCRATCH/kernel.json" || fail "our report and the kernel host's differ"
}

# perf: I/O at a depth for a time; its counts agree with each other and
# with the commands the queue sent (no warm-up: the only commands not
# counted are those in flight at the end, at most the depth per queue, and
# the queue's Fabrics Connect);
# -t is the measured time (within 1%); over TCP with both digests
t_perf_counts_ios_and_json_parses() {
  local dg=() ncpu
  [ "${NVMEOF_TB_TRTYPE:-}" = tcp ] && dg=(-H -I)
  ncpu=$(nproc); [ "$ncpu" -gt 2 ] && ncpu=2
  "$T" perf "${NA[@]}" "${dg[@]}" -q 4 -o 4096 -w randrw -M 70 -t 1 -c "0-$((ncpu - 1))" -o json > "$SCRATCH/perf.json" \
    || fail "perf failed"
  python3 - "$SCRATCH/perf.json" "$ncpu" <<'PY' || fail "perf's JSON does not add up"
import json, sys
d, n = json.load(open(sys.argv[1])), int(sys.argv[2])
q, lat = d["queues"], d["latency_us"]
assert d["errors"] == 0 and d["ios"] > 0, d
assert len(q) == n and sum(x["ios"] for x in q) == d["ios"], q
assert d["reads"] + d["writes"] == d["ios"] and d["reads"] > 0 and d["writes"] > 0, d
assert d["bytes"] == d["ios"] * 4096 and d["io_size"] == 4096 and d["queue_depth"] == 4, d
for x in q:
    assert 1 <= x["commands"] - x["ios"] <= 4 + 1, x
    assert 0.99 <= x["window_s"] <= 1.0, x
    assert abs(x["iops"] - x["ios"] / x["window_s"]) <= 0.1 + x["iops"] * 1e-3, x
# percentiles are buckets' middles, within 1% of the samples
assert lat["min"] * 0.99 <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"] <= lat["max"] * 1.01, lat
assert lat["min"] <= lat["mean"] <= lat["max"] and d["cpu_us_per_io"] > 0, d
print("    %d I/Os (%d reads), %.0f IOPS, p50 %.1f us, p99 %.1f us, CPU %.1f us per I/O"
      % (d["ios"], d["reads"], d["iops"], lat["p50"], lat["p99"], d["cpu_us_per_io"]))
PY
}

# perf's normal output, sequential 64 KiB reads sleeping between
# completions; a size of no whole blocks refused once the block size is known
t_perf_normal_output_and_block_size() {
  "$T" perf "${NA[@]}" -q 2 -o 64k -w read -t 1 --wait=sleep > "$SCRATCH/perf.txt" || fail "perf -w read failed"
  grep -q "^total: .* IOPS, .* MiB/s, [1-9][0-9]* I/Os ([1-9][0-9]* reads, 0 writes), 0 errors" "$SCRATCH/perf.txt" \
    || { cat "$SCRATCH/perf.txt"; fail "perf's normal output has no total"; }
  grep -q "^latency, us: mean .* p99_9 " "$SCRATCH/perf.txt" || fail "perf's normal output has no latency"
  # a size that is not whole blocks is refused after the connect, naming the block size
  bad "not a whole number of namespace 1's 512-byte blocks" "$T" perf "${NA[@]}" -q 1 -o 1000 -w read -t 1
}

t_help_for_every_subcommand() {
  local c
  for c in discover id-ctrl id-ns list-ns smart-log error-log get-log read write write-zeroes flush perf; do
    "$T" $c --help | grep -q "^usage: nvmeof $c" || fail "$c --help"
  done
  "$T" --help | grep -q write-zeroes || fail "nvmeof --help lists no subcommands"
}

run_tests "$@"
