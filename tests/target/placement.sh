#!/bin/bash
# IN-GUEST, booted with NVMEOF_TB_NUMA=2 (two NUMA nodes: vCPU 0 on node 0,
# vCPU 1 on node 1): where the engine puts a job's I/O memory, and how it
# registers it. Placement is read from the kernel (move_pages(2) in query
# mode on every page of the buffer, /proc/PID/maps for its mapping), not
# from the engine's own line;
# the access flags from an LD_PRELOAD spy on rdma-core's registration calls
# (build/*/tests/libregspy.so, a test-only library).
source "$(dirname "$0")/lib.sh"
B=${NVMEOF_BUILD:-build/out}
ENG=${NVMEOF_ENGINE:-$PWD/$B/libnvmeof_fio.so}
SPY=$PWD/$B/tests/libregspy.so
DOUBLE=$PWD/$B/tests/libcuda-double.so
FIO=/usr/bin/fio
FA1="trtype=RDMA adrfam=IPv4 traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_PORT subnqn=${NVMEOF_TB_NQN_A//:/\\:} ns=1"
ours() { timeout 300 env "${FIO_ENV[@]}" "$FIO" --ioengine=external:"$ENG" --output-format=normal "$@"; }
# Leaks are checked in fio's runs of the sanitized engine (as faults.sh
# does): fio's own allocations are dropped by lsan-fio.supp (their stack
# kept to the allocator and its caller); the engine's and the library's
# are reported. The runtime is preloaded into fio's runs alone (FIO_ENV):
# in every other command (grep, python, tb) it cost about 0.1 s a process
# in the guest, seconds a Python.
FIO_ENV=()
if [ -n "${NVMEOF_ASAN_RT:-}" ]; then
  FIO_ENV=(LD_PRELOAD="$NVMEOF_ASAN_RT" ASAN_OPTIONS=detect_leaks=1:malloc_context_size=2:symbolize=0
    LSAN_OPTIONS=suppressions=$PWD/tests/target/lsan-fio.supp:print_suppressions=0)
fi
RELAXED=$((1 << 20)) # IBV_ACCESS_RELAXED_ORDERING (IBV_ACCESS_OPTIONAL_FIRST)
HP=/proc/sys/vm/nr_hugepages

expect_fio_ok() { # log
  grep -q 'err= 0' "$1" || { tail -30 "$1"; fail "fio reported an error"; }
  ! grep -qE 'verify:|bad magic' "$1" || fail "verify failed"
}
need_two_nodes() {
  [ -d /sys/devices/system/node/node1 ] || fail "one NUMA node: boot with NVMEOF_TB_NUMA=2"
}

# Every data-region registration (remote read and write) in the spy's log
# has the relaxed-ordering bit ($2 = 1) or none has it ($2 = 0).
check_access() { # spylog want
  local n=0 bad=0 a
  while read -r fn len acc; do
    a=$(( ${acc#access=} ))
    (( (a & 7) == 7 )) || continue
    n=$((n + 1))
    (( !!(a & RELAXED) == $2 )) || { echo "    $fn $len $acc"; bad=$((bad + 1)); }
  done < "$1"
  [ $n -gt 0 ] || { cat "$1"; fail "no data region was registered through the spy"; }
  [ $bad = 0 ] || fail "$bad of $n registrations without the expected relaxed-ordering bit ($2)"
  echo "    $n data registration(s), relaxed ordering bit $2: $(grep -m1 'access=0x[0-9a-f]*7$' "$1")"
}

spy() { # spylog fio-args...: fio under the spy
  local log=$1; shift
  rm -f "$log"
  local FIO_ENV=("${FIO_ENV[@]}" LD_PRELOAD="${NVMEOF_ASAN_RT:+$NVMEOF_ASAN_RT }$SPY") # the ASan runtime first
  NVMEOF_REGSPY=$log ours "$@"
}

t_relaxed_ordering_on_by_default() {
  spy "$SCRATCH/spy" --name=r --filename="$FA1" --thread=1 --rw=write --bs=64k --size=8m --iodepth=4 \
    --verify=crc32c --do_verify=1 > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio failed"; }
  expect_fio_ok "$SCRATCH/log"
  check_access "$SCRATCH/spy" 1
  grep -q "PCIe relaxed ordering on" "$SCRATCH/log" || { cat "$SCRATCH/log"; fail "placement line does not say it is on"; }
}

t_relaxed_ordering_off() {
  spy "$SCRATCH/spy" --name=r --filename="$FA1" --thread=1 --relaxed_ordering=0 --rw=write --bs=64k \
    --size=8m --iodepth=4 --verify=crc32c --do_verify=1 > "$SCRATCH/log" 2>&1 \
    || { tail -20 "$SCRATCH/log"; fail "fio failed"; }
  expect_fio_ok "$SCRATCH/log"
  check_access "$SCRATCH/spy" 0
  grep -q "PCIe relaxed ordering off" "$SCRATCH/log" || fail "placement line does not say it is off"
}

t_relaxed_ordering_gpu_region_through_the_double() {
  # the double's dma-buf is no dma-buf: rxe refuses it, peermem takes over;
  # both registrations carry the flag
  FAKECUDA_DMABUF=1 NVMEOF_CUDA_LIB=$DOUBLE spy "$SCRATCH/spy" --name=g --filename="$FA1" --thread=1 \
    --gpu=0 --gpu_copy=1 --rw=randwrite --bs=16k --size=4m --offset=600m --iodepth=4 --verify=crc32c \
    --do_verify=1 > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio failed"; }
  expect_fio_ok "$SCRATCH/log"
  grep -q "^ibv_reg_dmabuf_mr .*access=0x10000" "$SCRATCH/spy" || { cat "$SCRATCH/spy"; fail "no dma-buf attempt with the flag"; }
  check_access "$SCRATCH/spy" 1
}

# The NUMA node of each page of pid's range [addr, addr + len), as the
# kernel answers move_pages(2) in query mode (libnuma's numa_move_pages):
# "N0=129" (node=pages), "N-14=3" for pages with no node (-EFAULT).
page_nodes() { # pid hexaddr len
  env -u LD_PRELOAD python3 - "$@" <<'PY'
import collections, ctypes, sys
pid, addr, length = int(sys.argv[1]), int(sys.argv[2], 16), int(sys.argv[3])
numa = ctypes.CDLL("libnuma.so.1")
n = (length + 4095) // 4096
pages = (ctypes.c_void_p * n)(*[addr + i * 4096 for i in range(n)])
status = (ctypes.c_int * n)()
rc = numa.numa_move_pages(pid, ctypes.c_ulong(n), pages, None, status, 0)
if rc:
    sys.exit("numa_move_pages: %d" % rc)
print(" ".join("N%d=%d" % kv for kv in sorted(collections.Counter(status).items())))
PY
}

# fio in the background until the engine's placement line names the
# buffer's address; then the kernel's account of that range: its mapping
# (/proc/PID/maps) and the node of every page. (Not numa_maps: it walks
# every mapping, and the sanitized fio's shadow takes minutes under TCG.)
# The job runs until that reading is done, then is stopped (SIGINT: fio
# ends its jobs, reports and exits 128): no runtime has to outlast a
# reading whose length is the guest's (with 3 s the sanitized fio had
# ended first).
# Each node's 2 MiB huge page pool, "H0=FREE/TOTAL" ...: a huge page a job
# took shows as one fewer free on its node.
hp_by_node() {
  local d n
  for d in /sys/devices/system/node/node[0-9]*/hugepages/hugepages-2048kB; do
    n=${d#/sys/devices/system/node/node}
    echo "H${n%%/*}=$(cat "$d/free_hugepages")/$(cat "$d/nr_hugepages")"
  done
}
kernel_view_of_job() { # out fio-args...
  local maps=$1 i; shift
  rm -f "$SCRATCH/err"
  timeout 300 env "${FIO_ENV[@]}" "$FIO" --ioengine=external:"$ENG" --output-format=json "$@" \
    --time_based --runtime=240 > "$SCRATCH/json" 2> "$SCRATCH/err" &
  local pid=$! fpid=""
  for i in $(seq 600); do grep -q "placement: .* at 0x" "$SCRATCH/err" 2>/dev/null && break; sleep 0.1; done
  # fio is timeout's child
  fpid=$(env -u LD_PRELOAD pgrep -P $pid | head -1)
  [ -n "$fpid" ] || { kill $pid; fail "no fio process under $pid"; }
  local addr len
  read -r len addr < <(sed -n 's/.*placement: \([0-9]*\) bytes at 0x\([0-9a-f]*\);.*/\1 \2/p' "$SCRATCH/err" | head -1)
  [ -n "$addr" ] || { kill $pid; cat "$SCRATCH/err"; fail "no placement line"; }
  { grep "^0*$addr-" /proc/$fpid/maps || echo "no mapping"; page_nodes $fpid $addr $len; hp_by_node; } > "$maps" \
    || { kill $pid; cat "$maps"; fail "the kernel's account of $addr failed"; }
  kill -INT $fpid
  local rc=0
  wait $pid || rc=$?
  # stopped by us, and the job had no error until then
  [ $rc = 128 ] && grep -qs "terminating on signal 2" "$SCRATCH/json" "$SCRATCH/err" && grep -q '"error" : 0,' "$SCRATCH/json" &&
    ! grep -q '"error" : [1-9]' "$SCRATCH/json" || { cat "$SCRATCH/err"; fail "fio failed (exit $rc)"; }
  echo "    $(tr '\n' ' ' < "$maps")"
}

t_numa_node_places_the_buffer_on_each_node() {
  need_two_nodes
  for n in 0 1; do
    kernel_view_of_job "$SCRATCH/maps" --name=n --filename="$FA1" --thread=1 --numa_node=$n --rw=randread \
      --bs=64k --iodepth=8 --size=64m
    local other=$((1 - n))
    [ "$(grep -oE "N-?[0-9]+=" "$SCRATCH/maps" | sort -u)" = "N$n=" ] || fail "numa_node=$n: pages not all on node $n"
    ours --name=v --filename="$FA1" --thread=1 --numa_node=$n --rw=randwrite --bs=16k --size=8m \
      --offset=$((100 + n * 16))m --iodepth=8 --verify=crc32c --do_verify=1 > "$SCRATCH/log" 2>&1 \
      || { tail -20 "$SCRATCH/log"; fail "verify with numa_node=$n failed"; }
    expect_fio_ok "$SCRATCH/log"
    grep -q "I/O memory on NUMA $n" "$SCRATCH/log" || fail "placement line does not say node $n"
  done
}

t_numa_node_auto_follows_the_jobs_cpus() {
  # rxe has no NUMA node, so auto takes the node of the job's CPUs
  need_two_nodes
  kernel_view_of_job "$SCRATCH/maps" --name=a --filename="$FA1" --thread=1 --cpus_allowed=1 --rw=randread \
    --bs=64k --iodepth=4 --size=64m
  [ "$(grep -oE "N-?[0-9]+=" "$SCRATCH/maps" | sort -u)" = "N1=" ] || fail "auto did not follow CPU 1 to node 1"
  ! grep -q "cross-node" "$SCRATCH/err" || fail "a warning where nothing is across nodes"
}

t_cross_node_placement_says_so() {
  need_two_nodes
  ours --name=x --filename="$FA1" --thread=1 --cpus_allowed=1 --numa_node=0 --rw=read --bs=64k --size=4m \
    > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio failed"; }
  expect_fio_ok "$SCRATCH/log"
  [ "$(grep -c "cross-node placement" "$SCRATCH/log")" = 1 ] || { cat "$SCRATCH/log"; fail "not one cross-node line"; }
  grep -m1 "cross-node placement: the job's CPUs on NUMA 1, its I/O memory on NUMA 0" "$SCRATCH/log" \
    || fail "the line does not name the nodes"
}

t_numa_node_out_of_range_refused() {
  ours --name=x --filename="$FA1" --thread=1 --numa_node=7 --rw=read --bs=4k --size=1m > "$SCRATCH/log" 2>&1 \
    && fail "fio succeeded"
  grep -m1 "numa_node=7: not auto or a NUMA node with memory" "$SCRATCH/log" || { cat "$SCRATCH/log"; fail "no message"; }
}

t_mem_option_refused_by_fio() {
  ours --name=m --filename="$FA1" --thread=1 --mem=malloc --rw=read --bs=4k --size=1m > "$SCRATCH/log" 2>&1 \
    && fail "fio accepted mem= with an engine that allocates its own memory"
  grep -m1 "fio: option 'mem/iomem' conflicts with specified IO engine" "$SCRATCH/log" \
    || { cat "$SCRATCH/log"; fail "not fio's message"; }
}

t_hugepages_none_reserved_falls_back() {
  echo 0 > $HP
  ours --name=h --filename="$FA1" --thread=1 --hugepages=1 --rw=write --bs=64k --size=4m --iodepth=4 \
    --verify=crc32c --do_verify=1 > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio failed"; }
  expect_fio_ok "$SCRATCH/log"
  grep -m1 "hugepages=1: no 2048 kB huge pages free.*using normal pages" "$SCRATCH/log" \
    || { cat "$SCRATCH/log"; fail "no fallback message"; }
  grep -q "(normal pages[,)]" "$SCRATCH/log" || fail "placement line does not say normal pages"
}

t_hugepages_reserved_are_used() {
  echo 16 > $HP
  kernel_view_of_job "$SCRATCH/maps" --name=h --filename="$FA1" --thread=1 --hugepages=1 --numa_node=0 \
    --rw=randread --bs=64k --iodepth=4 --size=64m
  echo 0 > $HP
  grep -q "anon_hugepage" "$SCRATCH/maps" || fail "the buffer is not a huge page mapping"
  # move_pages answers -EFAULT (-14) for hugetlb pages on some kernels: a node it does name must be 0
  local nodes=$(grep -oE "N-?[0-9]+=" "$SCRATCH/maps" | sort -u | tr '\n' ' ') h f t
  [ "$nodes" = "N0= " ] || [ "$nodes" = "N-14= " ] || fail "the huge page is not on node 0: $nodes"
  # and whatever move_pages says, the pools: node 0's gave the job its
  # pages while it ran, no other node's did
  for h in $(grep -oE "^H[0-9]+=[0-9]+/[0-9]+$" "$SCRATCH/maps"); do
    f=${h#*=} t=${f#*/} f=${f%/*}
    if [ "${h%%=*}" = H0 ]; then [ "$f" -lt "$t" ] || fail "node 0's huge pages all free while the job ran ($h)"
    else [ "$f" = "$t" ] || fail "huge pages taken from another node's pool ($h)"; fi
  done
  grep -q "^H0=" "$SCRATCH/maps" || fail "no huge page pool of node 0 read"
  grep -q "(huge pages[,)]" "$SCRATCH/err" || fail "placement line does not say huge pages"
}

t_comp_vector_out_of_range_refused_with_the_count() {
  ours --name=c --filename="$FA1" --thread=1 --comp_vector=9 --rw=read --bs=4k --size=1m > "$SCRATCH/log" 2>&1 \
    && fail "fio succeeded"
  local m
  m=$(grep -m1 "comp_vector=9: create poll group: completion vector 9: rxe0 has [0-9]* (0 to [0-9]*)" "$SCRATCH/log") \
    || { cat "$SCRATCH/log"; fail "no message with the device's count"; }
  echo "    $m"
  # the count is the device's: the vector one below it is accepted
  local n=$(sed 's/.* has \([0-9]*\) (.*/\1/' <<< "$m")
  ours --name=c --filename="$FA1" --thread=1 --comp_vector=$((n - 1)) --rw=read --bs=4k --size=1m \
    > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "comp_vector=$((n - 1)) refused"; }
  grep -q "completion vector $((n - 1)) (comp_vector=)" "$SCRATCH/log" || { cat "$SCRATCH/log"; fail "not in the end-of-job line"; }
}

t_comp_vector_in_the_end_of_job_line() {
  ours --name=c --filename="$FA1" --thread=1 --qpairs=2 --rw=randread --bs=4k --size=4m --iodepth=4 \
    > "$SCRATCH/log" 2>&1 || { tail -20 "$SCRATCH/log"; fail "fio failed"; }
  # rxe's vectors have no IRQs: spread, as before
  [ "$(grep -c "nvmeof: queue [0-9]*: .*; completion vector [0-9]* (spread)" "$SCRATCH/log")" = 2 ] \
    || { grep "nvmeof: queue" "$SCRATCH/log"; fail "not one vector per queue in the end-of-job lines"; }
}

t_hw_timestamps_refused_on_soft_roce() {
  # rxe clocks no completions: refused at connect, saying why (the hardware
  # path is not verifiable here; the arithmetic is unit_hwts's, on the test wire)
  ours --name=h --filename="$FA1" --thread=1 --hw_timestamps=1 --rw=read --bs=4k --size=1m > "$SCRATCH/log" 2>&1 \
    && fail "fio succeeded with hw_timestamps=1 on Soft-RoCE"
  grep -m1 "hw_timestamps: rxe0 reports no NIC completion timestamps (completion_timestamp_mask 0x0, hca_core_clock 0 kHz): Soft-RoCE has none" \
    "$SCRATCH/log" || { cat "$SCRATCH/log"; fail "no clear refusal"; }
}

t_sweep_over_numa_node() {
  # jobs/sweep over the memory's node: the CSV's mem_numa (from the engine's
  # placement line) follows NUMA_NODE in every row
  need_two_nodes
  local o=$SCRATCH/sw san=() # a sanitized engine: the ASan runtime in fio (and the sweep's Python)
  [ -z "${NVMEOF_ASAN_RT:-}" ] || san=(LD_PRELOAD="$NVMEOF_ASAN_RT" ASAN_OPTIONS=detect_leaks=0)
  env "${san[@]}" ENGINE=$ENG RUNTIME=1 RAMP=0 REGION=64m timeout 300 jobs/sweep --initiator ours --no-plot --out "$o" \
    pcie-locality.fio NUMA_NODE=0,1 > "$SCRATCH/log" 2>&1 || { tail -30 "$SCRATCH/log"; fail "sweep failed"; }
  python3 - "$o/results.csv" <<'PY' || fail "CSV placement columns"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2, rows
for r in rows:
    assert r["status"] == "ok", r
    assert r["mem_numa"] == r["NUMA_NODE"] and r["relaxed_ordering"] == "on" and r["mem_pages"] == "normal", r
print("    " + "; ".join(f"NUMA_NODE={r['NUMA_NODE']}: mem_numa {r['mem_numa']}, cpu_numa {r['cpu_numa']}, "
                        f"cross_node {r['cross_node']}" for r in rows))
PY
}

run_tests "$@"
