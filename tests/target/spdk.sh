#!/bin/bash
# Interoperability with SPDK's nvmf_tgt, a second NVMe-oF target beside the
# kernel's nvmet, for what nvmet cannot show. Inside the test bed guest; the
# prebuilt target is found as tests/target/spdk-dir.sh says (../shared
# beside the checkout, or NVMEOF_SPDK).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/spdk-dir.sh"
B=${NVMEOF_BUILD:-build/out}
spdk_dir spdk
R=$SPDK/rpc
export NVMEOF_SPDK_PORT=4440   # neither nvmet's ports nor 4421 (tool.sh expects nobody there)
export NVMEOF_SPDK_NQN=nqn.2026-12.io.nvmeof:spdk
export NVMEOF_SPDK_CRDT1=3     # 300 ms
# over NVMe/TCP: a subsystem of its own, namespace 1 with 512 B blocks and 2
# with 4 KiB, on a TCP listener (same port number); MDTS 128 KiB and 4 KiB
# of in-capsule data, SPDK's defaults
export NVMEOF_SPDK_TCP_NQN=nqn.2026-12.io.nvmeof:spdk-tcp

# start_target: nvmf_tgt held before its subsystems start, as nvmf_set_crdt
# requires; then a 64 MiB malloc namespace behind an ANA-reporting
# subsystem on two RDMA listeners, one per HCA (two paths).
TGT_PID=
start_target() {
  [ "$(cat /proc/sys/vm/nr_hugepages)" -ge 512 ] || echo 1024 > /proc/sys/vm/nr_hugepages
  mountpoint -q /dev/hugepages || { mkdir -p /dev/hugepages; mount -t hugetlbfs nodev /dev/hugepages; }
  rm -f /var/tmp/spdk.sock
  "$SPDK/bin/nvmf_tgt" -m 0x3 --wait-for-rpc > "$SCRATCH/tgt.log" 2>&1 &
  TGT_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do
    [ -S /var/tmp/spdk.sock ] && break
    kill -0 $TGT_PID 2>/dev/null || { tail -5 "$SCRATCH/tgt.log"; return 1; }
    sleep 0.2
  done
  # one rpc run for all of it: under emulation each run of SPDK's Python
  # client takes about 5 s to start, the commands next to nothing
  # (-r: the socket is there before it accepts)
  "$R" -r 50 > /dev/null <<EOF
nvmf_set_crdt -t1 $NVMEOF_SPDK_CRDT1
framework_start_init
framework_wait_init
nvmf_create_transport -t RDMA -u 8192 -c 4096
bdev_malloc_create -b M0 64 512
nvmf_create_subsystem $NVMEOF_SPDK_NQN -a -s SPDK0001 -r
nvmf_subsystem_add_ns $NVMEOF_SPDK_NQN M0
nvmf_subsystem_add_listener $NVMEOF_SPDK_NQN -t rdma -a $NVMEOF_TB_ADDR -s $NVMEOF_SPDK_PORT
nvmf_subsystem_add_listener $NVMEOF_SPDK_NQN -t rdma -a $NVMEOF_TB_ADDR2 -s $NVMEOF_SPDK_PORT
nvmf_create_transport -t TCP -c 4096
bdev_malloc_create -b T1 64 512
bdev_malloc_create -b T2 64 4096
nvmf_create_subsystem $NVMEOF_SPDK_TCP_NQN -a -s SPDK0002
nvmf_subsystem_add_ns $NVMEOF_SPDK_TCP_NQN T1
nvmf_subsystem_add_ns $NVMEOF_SPDK_TCP_NQN T2
nvmf_subsystem_add_listener $NVMEOF_SPDK_TCP_NQN -t tcp -a $NVMEOF_TB_ADDR -s $NVMEOF_SPDK_PORT
EOF
}
# listener_ana ADDR STATE: the request written to SPDK's socket, not
# through its Python client, which takes 5 s to start under emulation and,
# with the target's reactors spinning on both CPUs, up to a minute: the
# state then came after a job's end, and a test timed a change it had not
# made. What the ANA change takes is then the target's doing alone.
listener_ana() {
  /usr/bin/python3 -S - "$NVMEOF_SPDK_NQN" "$1" "$NVMEOF_SPDK_PORT" "$2" <<'PY'
import json, socket, sys
nqn, addr, port, state = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect("/var/tmp/spdk.sock")
s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "nvmf_subsystem_listener_set_ana_state",
                      "params": {"nqn": nqn, "ana_state": state,
                                 "listen_address": {"trtype": "rdma", "traddr": addr, "trsvcid": port}}}).encode())
buf = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
    try:
        r = json.loads(buf)
        break
    except ValueError:
        continue
if "error" in r or r.get("result") is not True:
    sys.exit("listener ANA state %s for %s: %s" % (state, addr, r))
PY
}
stop_target() {
  [ -n "$TGT_PID" ] || return 0
  kill $TGT_PID 2>/dev/null
  wait $TGT_PID 2>/dev/null
}
trap stop_target EXIT

t_retry_delay_enabled_only_where_the_controller_reports_one() {
  "$B/tests/target_core" retry_delay_enabled_only_where_the_controller_reports_one ||
    fail "Advanced Command Retry not enabled against a controller reporting CRDT1 $NVMEOF_SPDK_CRDT1"
}

# A path's listener Inaccessible, 5 s later Optimized again, under a
# verifying two-path job: the job passes and the path is back (optimized)
# by its end, through SPDK's notices or the host's periodic re-read of an
# inaccessible path's log.
t_path_back_after_inaccessible_then_optimized() {
  local eng=${NVMEOF_ENGINE:-$PWD/$B/libnvmeof_fio.so} nqn=${NVMEOF_SPDK_NQN//:/\\:}
  local f="trtype=RDMA traddr=$NVMEOF_TB_ADDR srcaddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_SPDK_PORT traddr=$NVMEOF_TB_ADDR2 srcaddr=$NVMEOF_TB_ADDR2 subnqn=$nqn ns=1"
  timeout 120 fio --ioengine=external:"$eng" --output-format=normal --name=mp --filename="$f" \
    --iopolicy=round-robin --rw=randrw --bs=4k --size=8m --iodepth=16 --verify=crc32c --verify_backlog=32 \
    --time_based --runtime=20 > "$SCRATCH/log" 2>&1 &
  local pid=$!
  wait_connected "$SCRATCH/log" $pid
  listener_ana "$NVMEOF_TB_ADDR" inaccessible || fail "SPDK refused the Inaccessible state"
  sleep 5
  listener_ana "$NVMEOF_TB_ADDR" optimized || fail "SPDK refused the Optimized state"
  wait $pid || { tail -30 "$SCRATCH/log"; fail "fio failed across the ANA changes"; }
  grep '^nvmeof: path' "$SCRATCH/log"
  grep -q '^nvmeof: path 1 .*: ANA optimized,' "$SCRATCH/log" || fail "path 1 is not back to optimized at the end"
  # its first read, Inaccessible, Optimized again: the job saw both changes
  local n
  n=$(sed -n 's/^nvmeof: path 1 .*: ANA [a-z-]*, \([0-9]*\) ANA change(s).*/\1/p' "$SCRATCH/log")
  [ "${n:-0}" -ge 3 ] || fail "path 1 saw ${n:-no} ANA change(s), not the Inaccessible state and back"
}

# NVMe/TCP against a second implementation of its PDU layer: connect and
# Identify (SPDK's serial, MDTS 128 KiB over TCP, unlike nvmet's none), then
# target_core's round trips with both digests: reads and writes below and
# above the in-capsule size and MDTS (split into 128 KiB commands), writes
# SPDK asks for with R2T, four queues with R2Ts outstanding at once.
spdk_tcp() { # target_core's tests against SPDK's TCP subsystem, digests on
  NVMEOF_TB_TRTYPE=tcp NVMEOF_TB_DIGESTS=1 NVMEOF_TB_PORT=$NVMEOF_SPDK_PORT NVMEOF_TB_NQN_A=$NVMEOF_SPDK_TCP_NQN \
    "$B/tests/target_core" "$@"
}
t_tcp_identify() {
  timeout 60 "$B/nvmeof" id-ctrl -t tcp -a "$NVMEOF_TB_ADDR" -s $NVMEOF_SPDK_PORT -n "$NVMEOF_SPDK_TCP_NQN" \
    > "$SCRATCH/id" 2>&1 || fail "id-ctrl over TCP: $(tail -3 "$SCRATCH/id")"
  grep -E '^(sn|mn|mdts|ioccsz|subnqn) ' "$SCRATCH/id" | sed 's/^/    /'
  grep -qE '^sn +: SPDK0002' "$SCRATCH/id" || fail "not SPDK's serial: $(grep '^sn' "$SCRATCH/id")"
  grep -qE '^mdts +: 5$' "$SCRATCH/id" || fail "MDTS: $(grep '^mdts' "$SCRATCH/id") (128 KiB is 5)"
}
t_tcp_reads_and_writes_with_digests() {
  spdk_tcp roundtrip_sizes_ns2_4k roundtrip_keyed_only || fail "round trips over TCP with digests"
}
t_tcp_r2t_on_four_queues_with_digests() {
  spdk_tcp four_queues_four_threads || fail "four queues over TCP with digests"
}

start_target || { tail -20 "$SCRATCH/tgt.log"; echo "spdk: the SPDK target did not start"; exit 1; }
run_tests "$@"
