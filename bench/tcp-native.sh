#!/bin/bash
# NATIVE (make bench-tcp-native, no guest): ours over NVMe/TCP against SPDK's
# initiator, both on this machine's real CPUs. SPDK's nvmf_tgt serves a
# malloc namespace on 127.0.0.1 pinned to TGT_CPU; each initiator runs pinned
# to INI_CPU, alternating cell by cell, REPS repetitions: ours (fio with our
# engine), SPDK's fio plugin, and without fio SPDK's own benchmark
# (spdk_nvme_perf: it polls one core) and ours (nvmeof perf, the same
# options, polling one core too). Cells: 4 KiB randread
# QD1 and QD32, 128 KiB read QD16, 4 KiB randwrite QD32, 128 KiB write QD16,
# each with digests off and on (header and data). Results (fio's JSON,
# nvmeof perf's JSON, spdk_nvme_perf's text) go to build/bench/tcp-native-<stamp>/;
# bench/report_tcp_native.py prints the table and writes results.csv and
# summary.json there. Needs root (hugepages) and ../shared/spdk-target.
#   REPS (3)  CELL_TIME (5 s)  RAMP (1 s)
#   CELLS       cell names to run (default all: qd1_randread_4k qd32_randread_4k
#               read_128k_qd16 qd32_randwrite_4k write_128k_qd16)
#   DIGESTS     "off on" (default), or one of them
#   INITIATORS  "ours spdk spdk_perf ours_perf" (default); "alt" is added with ALT_ENGINE
#   ENGINE      our engine (default build/out/libnvmeof_fio.so)
#   ALT_ENGINE  another build of the engine, run as initiator "alt" (a change's
#               before and after in one run)
#   ENGINE_OPTS more fio options for ours and alt (e.g. --wait=poll)
#   TOOL        our nvmeof tool, for ours_perf (default build/out/nvmeof)
#   PERF_OPTS   more nvmeof perf options for ours_perf (e.g. --tcp-busy-poll=50)
#   ALT_TOOL    another build of the tool, run as initiator "alt_perf" (nvmeof
#               perf's before and after in one run, as ALT_ENGINE for fio)
#   SPDK_DIR (../shared/spdk-target)  TGT_CPU (1)  INI_CPU (0)  PORT (4520)
#   HUGEPAGES   2 MiB pages to reserve for the run (1024); given back after
#   BENCH_OUT   the result folder (a second run can add to the same one)
#   PROFILE=1   then one profiled run (perf record) per cell and fio initiator
#   DRY=1       start nothing, need nothing: each run's command line is written
#               where its result would go (BENCH_OUT), to check what would run
set -uo pipefail
cd "$(dirname "$0")/.."
TOP=$PWD
REPS=${REPS:-3} CELL_TIME=${CELL_TIME:-5} RAMP=${RAMP:-1}
SPDK_DIR=${SPDK_DIR:-$TOP/../shared/spdk-target}
TGT_CPU=${TGT_CPU:-1} INI_CPU=${INI_CPU:-0} PORT=${PORT:-4520} NEED_PAGES=${HUGEPAGES:-1024}
ENGINE=${ENGINE:-$TOP/build/out/libnvmeof_fio.so}
TOOL=${TOOL:-$TOP/build/out/nvmeof}
NQN=nqn.2026-12.io.example:tcp-native
OUT=${BENCH_OUT:-build/bench/tcp-native-$(date +%Y%m%d-%H%M%S)}
ALL_CELLS="qd1_randread_4k qd32_randread_4k read_128k_qd16 qd32_randwrite_4k write_128k_qd16"
CELLS=${CELLS:-$ALL_CELLS} DIGESTS=${DIGESTS:-off on}
INITIATORS=${INITIATORS:-ours spdk spdk_perf ours_perf}
# ALT_ENGINE and ALT_TOOL add their initiator unless INITIATORS names it already
case " $INITIATORS " in *" alt "*) ;; *) INITIATORS+=${ALT_ENGINE:+ alt} ;; esac
case " $INITIATORS " in *" alt_perf "*) ;; *) INITIATORS+=${ALT_TOOL:+ alt_perf} ;; esac
DRY=${DRY:-0}
die() { echo "bench-tcp-native: $*" >&2; exit 1; }
for c in $CELLS; do case " $ALL_CELLS " in *" $c "*) ;; *) die "unknown cell $c (cells: $ALL_CELLS)" ;; esac; done
for d in $DIGESTS; do case $d in off|on) ;; *) die "DIGESTS: off, on (not $d)" ;; esac; done
for i in $INITIATORS; do case $i in ours|alt|spdk|spdk_perf|ours_perf|alt_perf) ;; *) die "unknown initiator $i (ours spdk spdk_perf ours_perf alt alt_perf)" ;; esac; done
if [ "$DRY" = 0 ]; then
[ -x "$SPDK_DIR/bin/nvmf_tgt" ] && [ -f "$SPDK_DIR/fio/spdk_nvme" ] && [ -x "$SPDK_DIR/bin/spdk_nvme_perf" ] \
  || die "SPDK's nvmf_tgt, fio plugin and spdk_nvme_perf are not in $SPDK_DIR (SPDK_DIR=...)"
[ "$(id -u)" = 0 ] || die "needs root: it reserves hugepages for SPDK's target and initiator"
[ -f "$ENGINE" ] || die "$ENGINE missing: run make"
case " $INITIATORS " in *" ours_perf "*) [ -x "$TOOL" ] || die "$TOOL missing: run make" ;; esac
[ -z "${ALT_ENGINE:-}" ] || [ -f "$ALT_ENGINE" ] || die "ALT_ENGINE $ALT_ENGINE missing"
[ -z "${ALT_TOOL:-}" ] || [ -x "$ALT_TOOL" ] || die "ALT_TOOL $ALT_TOOL missing"
command -v fio >/dev/null || die "fio not found"
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs (the target on one, the initiator on the other)"
if ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q .; then die "port $PORT is in use (PORT=...)"; fi
mkdir -p "$OUT" || exit 1

# --- hugepages, the target, and their teardown ----------------------------
PAGES_BEFORE=$(cat /proc/sys/vm/nr_hugepages)
MOUNTED=0 TGT_PID="" SOCK=$OUT/spdk.sock
ls /dev/hugepages 2>/dev/null | sort > "$OUT/.huge-before"
teardown() {
  if [ -n "$TGT_PID" ] && kill -0 "$TGT_PID" 2>/dev/null; then
    kill "$TGT_PID"
    for _ in $(seq 50); do kill -0 "$TGT_PID" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$TGT_PID" 2>/dev/null && kill -9 "$TGT_PID"
    wait "$TGT_PID" 2>/dev/null
  fi
  # an initiator killed by its timeout leaves its hugepage files behind:
  # remove the ones this run created whose process is gone
  ls /dev/hugepages 2>/dev/null | sort | comm -13 "$OUT/.huge-before" - | while read -r f; do
    pid=$(sed -n 's/^spdk_pid\([0-9]*\).*/\1/p' <<< "$f")
    [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && rm -f "/dev/hugepages/$f"
  done
  rm -f "$OUT/.huge-before" "$SOCK"
  echo "$PAGES_BEFORE" > /proc/sys/vm/nr_hugepages
  [ "$MOUNTED" = 0 ] || umount /dev/hugepages
  echo "bench-tcp-native: target stopped, hugepages back to $(cat /proc/sys/vm/nr_hugepages)"
}
trap teardown EXIT
trap 'exit 130' INT TERM
[ "$PAGES_BEFORE" -ge "$NEED_PAGES" ] || echo "$NEED_PAGES" > /proc/sys/vm/nr_hugepages
[ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" -ge "$NEED_PAGES" ] \
  || die "could not reserve $NEED_PAGES free hugepages ($(grep HugePages_Free /proc/meminfo))"
if ! mountpoint -q /dev/hugepages; then
  mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages && MOUNTED=1 || die "cannot mount hugetlbfs"
fi
"$SPDK_DIR/bin/nvmf_tgt" -m "$((1 << TGT_CPU))" -r "$SOCK" > "$OUT/nvmf_tgt.log" 2>&1 &
TGT_PID=$!
rpc() { timeout 30 "$SPDK_DIR/rpc" -s "$SOCK" "$@" > /dev/null || die "rpc $1 failed (nvmf_tgt: $(tail -2 "$OUT/nvmf_tgt.log"))"; }
for _ in $(seq 100); do
  [ -S "$SOCK" ] && timeout 5 "$SPDK_DIR/rpc" -s "$SOCK" spdk_get_version > /dev/null 2>&1 && break
  kill -0 "$TGT_PID" 2>/dev/null || die "nvmf_tgt exited: $(tail -3 "$OUT/nvmf_tgt.log")"
  sleep 0.2
done
rpc nvmf_create_transport -t TCP
rpc bdev_malloc_create -b M0 512 512   # 512 MiB, 512 B blocks
rpc nvmf_create_subsystem "$NQN" -a -s TCPNATIVE01
rpc nvmf_subsystem_add_ns "$NQN" M0
rpc nvmf_subsystem_add_listener "$NQN" -t tcp -a 127.0.0.1 -s "$PORT" -f ipv4

{ echo "date $(date -u '+%Y-%m-%d %H:%M UTC')"; echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- core engine || echo ' (with changes)')"
  uname -r; echo "cpus $(nproc): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"; fio --version
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"; echo "target CPU $TGT_CPU, initiators CPU $INI_CPU"
  echo "REPS $REPS CELL_TIME $CELL_TIME RAMP $RAMP ENGINE $ENGINE ENGINE_OPTS ${ENGINE_OPTS:-} ALT_ENGINE ${ALT_ENGINE:-} TOOL $TOOL ALT_TOOL ${ALT_TOOL:-} PERF_OPTS ${PERF_OPTS:-}"
} >> "$OUT/machine.txt"
echo "bench-tcp-native: nvmf_tgt on CPU $TGT_CPU, 127.0.0.1:$PORT; initiators on CPU $INI_CPU; results in $OUT"
else
  mkdir -p "$OUT" || exit 1
  echo "bench-tcp-native: dry run: each run's command line in $OUT"
fi
# DRY: a run's command line is its output
dry_cmd() { printf '%q ' "$@"; echo; }
RUN=
[ "$DRY" = 0 ] || RUN=dry_cmd

# --- the cells --------------------------------------------------------------
# cell -> rw bs iodepth
cell_args() {
  case $1 in
    qd1_randread_4k) echo randread 4096 1 ;;
    qd32_randread_4k) echo randread 4096 32 ;;
    read_128k_qd16) echo read 131072 16 ;;
    qd32_randwrite_4k) echo randwrite 4096 32 ;;
    write_128k_qd16) echo write 131072 16 ;;
  esac
}
FN="trtype=TCP adrfam=IPv4 traddr=127.0.0.1 trsvcid=$PORT subnqn=${NQN//:/\\:} ns=1"
LIMIT=$((CELL_TIME + RAMP + 60))
# ini cell digests out: one run, its output in $out.json (fio) or $out.txt
run_one() {
  local ini=$1 cell=$2 dg=$3 out=$4 rw bs qd
  read -r rw bs qd <<< "$(cell_args "$cell")"
  # the engine's options (digest_enable, ENGINE_OPTS) follow --ioengine: fio knows them only then
  local fio=(--name="$cell" --thread=1 --direct=1 --time_based=1 --runtime="$CELL_TIME"
             --ramp_time="$RAMP" --norandommap=1 --randrepeat=0 --cpus_allowed="$INI_CPU"
             --rw="$rw" --bs="$bs" --iodepth="$qd" --filename="$FN" --output-format=json
             --lat_percentiles=1)
  local dgopt=--digest_enable=$([ "$dg" = on ] && echo BOTH || echo NONE)
  case $ini in
    ours|alt)
      local eng=$ENGINE; [ "$ini" = ours ] || eng=$ALT_ENGINE
      # shellcheck disable=SC2086
      $RUN timeout "$LIMIT" taskset -c "$INI_CPU" fio "${fio[@]}" --ioengine="external:$eng" "$dgopt" ${ENGINE_OPTS:-} \
        > "$out.json" 2> "$out.err" ;;
    spdk)
      $RUN timeout "$LIMIT" taskset -c "$INI_CPU" env LD_PRELOAD="$SPDK_DIR/fio/spdk_nvme" fio "${fio[@]}" \
        --ioengine=spdk "$dgopt" \
        > "$out.json" 2> "$out.err" ;;
    spdk_perf)
      $RUN timeout "$LIMIT" "$SPDK_DIR/bin/spdk_nvme_perf" -c "$(printf 0x%x $((1 << INI_CPU)))" -q "$qd" -o "$bs" -w "$rw" \
        -t "$CELL_TIME" -a "$RAMP" -L $([ "$dg" = on ] && echo -H -I) \
        -r "trtype:TCP adrfam:IPv4 traddr:127.0.0.1 trsvcid:$PORT subnqn:$NQN ns:1" > "$out.txt" 2> "$out.err" ;;
    ours_perf|alt_perf)
      local tool=$TOOL; [ "$ini" = ours_perf ] || tool=$ALT_TOOL
      # spdk_nvme_perf's options, and its CPU as a mask; -o json its output
      # shellcheck disable=SC2046,SC2086
      $RUN timeout "$LIMIT" "$tool" perf -c "$(printf 0x%x $((1 << INI_CPU)))" -q "$qd" -o "$bs" -w "$rw" \
        -t "$CELL_TIME" --warmup "$RAMP" $([ "$dg" = on ] && echo -H -I) ${PERF_OPTS:-} \
        -r "trtype:TCP adrfam:IPv4 traddr:127.0.0.1 trsvcid:$PORT subnqn:$NQN ns:1" -o json > "$out.json" 2> "$out.err" ;;
  esac
}
for rep in $(seq "$REPS"); do
  for dg in $DIGESTS; do
    for cell in $CELLS; do
      for ini in $INITIATORS; do
        out=$OUT/$cell.$dg.$ini.$rep
        run_one "$ini" "$cell" "$dg" "$out" \
          || echo "bench-tcp-native: $cell digests $dg $ini rep $rep failed (rc $?): $(tail -2 "$out.err")"
        [ -s "$out.err" ] || rm -f "$out.err"
      done
    done
  done
  echo "bench-tcp-native: repetition $rep of $REPS done"
done
[ "$DRY" != 0 ] || echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/machine.txt"
# PROFILE=1: then one run of each cell with each fio initiator under perf
# record (the initiator's process only: the target and the TCP stack's work
# on the target's CPU are not in it), its top symbols in profile-*.txt
if [ "${PROFILE:-0}" != 0 ] && [ "$DRY" = 0 ] && command -v perf > /dev/null; then
  for dg in $DIGESTS; do
    for cell in $CELLS; do
      for ini in $INITIATORS; do
        case $ini in spdk_perf|ours_perf|alt_perf) continue ;; esac
        out=$OUT/profile-$cell.$dg.$ini
        perf record -q -e cpu-clock -g -o "$out.data" -- bash -c "$(declare -f run_one cell_args); $(declare -p FN LIMIT \
          CELL_TIME RAMP INI_CPU ENGINE TOOL SPDK_DIR PORT NQN); ALT_ENGINE='${ALT_ENGINE:-}' ENGINE_OPTS='${ENGINE_OPTS:-}' \
          run_one $ini $cell $dg $out" > /dev/null 2>&1
        {
          echo "# $cell, digests $dg, $ini: perf record -e cpu-clock -g, the initiator's process (native)"
          perf report -i "$out.data" -g none --no-children --sort dso,symbol --stdio 2> /dev/null \
            | grep -E '^ +[0-9]' | sed 's/[ -]*$//' | head -30
          echo "# with callees"
          perf report -i "$out.data" -g none --children --sort symbol --stdio 2> /dev/null \
            | grep -E '^ +[0-9]' | sed 's/[ -]*$//' | head -30
        } > "$out.txt"
        rm -f "$out.data" "$out.json" "$out.err"
      done
    done
  done
  echo "bench-tcp-native: profiles in $OUT/profile-*.txt"
fi
[ "$DRY" = 0 ] || exit 0
python3 bench/report_tcp_native.py "$OUT" | tee "$OUT/table.md"
