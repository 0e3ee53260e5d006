#!/bin/bash
# tests/unit/jobs.sh [BUILD_DIR]: jobs/run and jobs/sweep without a target.
# A fake fio first on PATH records what it was given (its arguments, the job
# file, the environment the job file expands), so a check can say what fio
# would have measured; where the engine itself must see an option, the real
# fio runs with our engine and an empty $SYSFS_PATH (no RDMA device: nothing
# connects), and the engine's refusal of a bad value proves the option arrived.
# - a workload variable the job file does not read, or a fio arg naming an
#   option the job file sets, is refused before fio starts; one it reads runs;
# - jobs/run --list names each job file with what it reads and fixes;
# - relative job paths, and a copy elsewhere that includes common.fio.inc,
#   run under jobs/run and jobs/sweep alike;
# - ENGINE_OPTS, the engine variables (QPAIRS, ...) and fio args that are
#   engine options reach the engine, whatever the job file;
# - INITIATOR=kernel refuses a KDEV that does not exist or is not an NVMe-oF
#   namespace, before fio starts (fio would create a file, or overwrite a disk);
# - REGION defaults to the whole namespace; an IPv6 TARGET is escaped;
# - jobs/plot's jobs axis says what the jobs ran on: a queue pair each, or
#   the pairs they share (QPAIRS_SHARED), fixed or swept.
set -uo pipefail
cd "$(dirname "$0")/../.."
TOP=$PWD
B=${1:-build/out}
ENG=$TOP/$B/libnvmeof_fio.so
source tests/tally.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/nosysfs" "$tmp/user" "$tmp/sys/class/nvme-subsystem"
cat > "$tmp/bin/fio" <<'EOF'
#!/bin/bash
[ "${1:-}" = --version ] && { echo fio-fake; exit 0; }
log=$FAKE_FIO_LOG
printf 'arg %s\n' "$@" > "$log"
echo "env RW=${RW:-} BS=${BS:-} REGION=${REGION:-} IOENGINE=${IOENGINE:-} FILENAME=${FILENAME:-}" >> "$log"
for a; do [ -f "$a" ] && cat "$a" > "$log.job"; done
[ -z "${FAKE_FIO_ERR:-}" ] || { echo "$FAKE_FIO_ERR" >&2; echo "fio: pid=0, err=111/file:x, error=Connection refused" >&2; exit 1; }
exit 0
EOF
chmod +x "$tmp/bin/fio"
REAL_FIO=$(command -v fio || true)
export FAKE_FIO_LOG=$tmp/fio.log KDEV_SYSFS=$tmp/sys SYSFS_PATH=$tmp/nosysfs
unset RW BS IODEPTH NUMJOBS OFFSET_INCREMENT CPUS RUNTIME RAMP REGION QPAIRS QPAIRS_SHARED ENGINE_OPTS KDEV PATHS \
  NVMEOF_TB_ADDR NVMEOF_TB_NQN_A FIO_CLIENTS INITIATOR HCA_EXPECT GPU NUMA_NODE HUGEPAGES
export TARGET=192.0.2.1 SUBNQN=nqn.2026-12.io.nvmeof:jobs ENGINE=$ENG
# jr [VAR=val...] -- ARGS: jobs/run with the fake fio; $out its stdout and
# stderr, $rc its status; $FAKE_FIO_LOG(.job) exist only if fio started
jr() {
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  rm -f "$FAKE_FIO_LOG" "$FAKE_FIO_LOG.job"
  rc=0
  out=$(cd "${JR_DIR:-$TOP}" && env PATH="$tmp/bin:$PATH" "${envs[@]}" timeout 60 "$TOP/jobs/run" "$@" 2>&1) || rc=$?
}
started() { [ -f "$FAKE_FIO_LOG" ]; }
# expect_refused WHAT NEEDLE: jobs/run exited 2 naming NEEDLE, fio never started
expect_refused() {
  if [ "$rc" = 2 ] && grep -qF -- "$2" <<< "$out" && ! started; then ok "$1"
  else bad "$1" "rc $rc, fio started: $(started && echo yes || echo no): $(head -c 400 <<< "$out")"; fi
}
# expect_ran WHAT PATTERN...: fio started, and its log (args, env, job file) matches each
expect_ran() {
  local what=$1 p miss=; shift
  if [ "$rc" != 0 ] || ! started; then bad "$what" "rc $rc: $(head -c 400 <<< "$out")"; return; fi
  for p; do grep -qsE -- "$p" "$FAKE_FIO_LOG" "$FAKE_FIO_LOG.job" || miss="$miss [$p]"; done
  [ -z "$miss" ] && ok "$what" || bad "$what" "missing:$miss" "$(cat "$FAKE_FIO_LOG" "$FAKE_FIO_LOG.job" | head -40)"
}

# ---- the workload asked for, or nothing --------------------------------------
jr RW=randwrite BS=8k -- iops.fio
expect_refused "RW= to iops.fio (which fixes rw=randread) is refused" "iops.fio does not read RW"
grep -qF "rw=randread" <<< "$out" && ok "the refusal says what the job file fixes" || bad "the refusal says what the job file fixes" "$out"
jr RUNTIME=5 -- verify.fio
expect_refused "RUNTIME= to verify.fio (whose runtime=0 overrides the runtime=\${RUNTIME} it includes) is refused" \
  "verify.fio does not read RUNTIME"
jr -- iops.fio --rw=randwrite
expect_refused "--rw= to iops.fio (the job file would win) is refused" "iops.fio sets rw=randread itself"
jr -- qd1-latency.fio --readwrite=randwrite
expect_refused "--readwrite= to qd1-latency.fio is refused, pointing to RW=" "set RW=randwrite instead"
jr -- qd1-latency.fio --iodepth=8
expect_refused "--iodepth= to qd1-latency.fio (iodepth=1 fixed) is refused" "qd1-latency.fio sets iodepth=1 itself"
jr -- qd1-latency.fio --iodepth=1
expect_ran "--iodepth=1 to qd1-latency.fio (its own value) runs" "^arg --iodepth=1"
jr RW=randwrite BS=8k -- qd1-latency.fio --output-format=json
expect_ran "RW= and BS= to qd1-latency.fio (which reads them) run" "env RW=randwrite BS=8k" "^rw=\\$\\{RW\\}" \
  "^arg --output-format=json"
jr NUMJOBS=2 RUNTIME=3 -- iops.fio
expect_ran "NUMJOBS= and RUNTIME= to iops.fio run" "^numjobs=\\$\\{NUMJOBS\\}"

# ---- the catalogue -----------------------------------------------------------
jr -- --list
if [ "$rc" = 0 ] && grep -A3 '^  iops.fio' <<< "$out" | grep -q 'fixes: rw=randread bs=4k iodepth=32' &&
   grep -A3 '^  qd1-latency.fio' <<< "$out" | grep -q 'reads: RW BS' &&
   [ "$(grep -c '^  [a-z0-9-]*\.fio$' <<< "$out")" = "$(ls jobs/*.fio | wc -l)" ]; then
  ok "jobs/run --list shows every job file with the variables it reads and what it fixes"
else
  bad "jobs/run --list shows every job file with the variables it reads and what it fixes" "rc $rc: $out"
fi
jr -- --help
grep -q 'jobs/run --list' <<< "$out" && ok "jobs/run --help names --list" || bad "jobs/run --help names --list" "$out"

# ---- paths -------------------------------------------------------------------
cp jobs/qd1-latency.fio "$tmp/user/my.fio"
JR_DIR=$tmp/user jr -- my.fio
expect_ran "a relative path outside jobs/ runs, its include found in jobs/" "^arg .*my.fio" "^ioengine=\\$\\{IOENGINE\\}"
jr -- jobs/iops.fio
expect_ran "jobs/iops.fio (a path from the checkout) runs" "^\\[iops\\]"
printf 'ioengine=${IOENGINE}\nfilename=${FILENAME}\ndescription=mine\n' > "$tmp/user/common.fio.inc"
JR_DIR=$tmp/user jr -- my.fio
expect_ran "an include next to the job file comes before jobs/'s" "^description=mine"
rm "$tmp/user/common.fio.inc"
jr -- nosuch.fio
[ "$rc" = 2 ] && grep -q "job file 'nosuch.fio' not found.*iops.fio" <<< "$out" && ! started &&
  ok "a missing job file is named, with the ones in jobs/" || bad "a missing job file is named, with the ones in jobs/" "rc $rc: $out"
# jobs/sweep takes the same relative file (its runs fail at once: fio is fake)
rc=0
out=$(cd "$tmp/user" && env PATH="$tmp/bin:$PATH" RUNTIME=1 RAMP=0 timeout 120 "$TOP/jobs/sweep" --no-plot \
  --out "$tmp/sw" my.fio BS=4k,8k 2>&1) || rc=$?
if grep -q 'run 2 of 2' <<< "$out" && ! grep -q 'not found' <<< "$out" && grep -q '"job"' "$tmp/sw/meta.json"; then
  ok "jobs/sweep runs the same relative job file"
else
  bad "jobs/sweep runs the same relative job file" "rc $rc: $(head -c 600 <<< "$out")"
fi

# a failed run shows the engine's line and where fio's stderr is; meta.json the setup
rc=0
out=$(env PATH="$tmp/bin:$PATH" RUNTIME=1 RAMP=0 TRTYPE=TCP QPAIRS=1 FAKE_FIO_ERR="nvmeof: connect to 192.0.2.1 port 4420: nothing listens on that port" \
  timeout 120 jobs/sweep --no-plot --out "$tmp/sw2" iops.fio NUMJOBS=1 2>&1) || rc=$?
if [ "$rc" = 1 ] && grep -q '^    nvmeof: connect to 192.0.2.1 port 4420: nothing listens on that port' <<< "$out" &&
   grep -qF "(fio's stderr: $tmp/sw2/runs/" <<< "$out"; then
  ok "a failed sweep run shows the engine's line and its stderr file"
else
  bad "a failed sweep run shows the engine's line and its stderr file" "rc $rc: $(head -c 600 <<< "$out")"
fi
python3 - "$tmp/sw2/meta.json" <<'PY' && ok "meta.json records the setup (transport, NQN, queue pairs)" || bad "meta.json records the setup (transport, NQN, queue pairs)" "$(cat "$tmp/sw2/meta.json")"
import json, sys
s = json.load(open(sys.argv[1]))["setup"]
assert s["TRTYPE"] == "TCP" and s["SUBNQN"] == "nqn.2026-12.io.nvmeof:jobs" and s["TARGET"] == "192.0.2.1" and s["QPAIRS"] == "1", s
PY

# ---- engine options ----------------------------------------------------------
jr ENGINE_OPTS='wait=poll spin_us=0' QPAIRS=2 -- qd1-latency.fio --delay_cmd_submit=1
if [ "$rc" = 0 ] && started && grep -A4 '^ioengine=' "$FAKE_FIO_LOG.job" | grep -q '^wait=poll$' &&
   grep -q '^spin_us=0$' "$FAKE_FIO_LOG.job" && grep -q '^qpairs=2$' "$FAKE_FIO_LOG.job" &&
   grep -q '^delay_cmd_submit=1$' "$FAKE_FIO_LOG.job" && ! grep -q '^arg --delay_cmd_submit' "$FAKE_FIO_LOG"; then
  ok "ENGINE_OPTS, QPAIRS and --delay_cmd_submit become engine lines after ioengine="
else
  bad "ENGINE_OPTS, QPAIRS and --delay_cmd_submit become engine lines after ioengine=" "rc $rc: $out" \
    "$(cat "$FAKE_FIO_LOG" "$FAKE_FIO_LOG.job" 2>/dev/null | head -40)"
fi
# QPAIRS_SHARED: the engine's qpairs_shared=, and qp-scaling.fio then sets no qpairs=1
jr QPAIRS_SHARED=2 -- qp-scaling.fio
if [ "$rc" = 0 ] && started && grep -q '^qpairs_shared=2$' "$FAKE_FIO_LOG.job" && ! grep -q '^qpairs=' "$FAKE_FIO_LOG.job"; then
  ok "QPAIRS_SHARED=2 becomes qpairs_shared=2, and qp-scaling.fio's qpairs=1 is left out"
else
  bad "QPAIRS_SHARED=2 becomes qpairs_shared=2, and qp-scaling.fio's qpairs=1 is left out" "rc $rc: $out" \
    "$(cat "$FAKE_FIO_LOG.job" 2>/dev/null | head -40)"
fi
jr QPAIRS=2 -- nvmeof-example.fio
expect_refused "QPAIRS=2 to a job file that sets qpairs=0 itself is refused" "nvmeof-example.fio sets qpairs=0 itself"
jr ENGINE_OPTS='wait=poll' -- nvmeof-example.fio
expect_refused "ENGINE_OPTS wait=poll to a job file that sets wait=hybrid is refused" "sets wait=hybrid itself"
jr ENGINE_OPTS='wiat=poll' -- qd1-latency.fio
expect_refused "a misspelt ENGINE_OPTS option is refused" "'wiat' is not an option of our engine"
if [ -n "$REAL_FIO" ] && [ -f "$ENG" ]; then
  if readelf -d "$ENG" | grep -q 'NEEDED.*libasan'; then
    export LD_PRELOAD=$(${CC:-cc} -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0
  fi
  # realfio [VAR=val...] -- ARGS: jobs/run with the real fio and our engine
  realfio() {
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    rc=0
    out=$(env "${envs[@]}" RUNTIME=1 RAMP=0 REGION=1m timeout 60 jobs/run "$@" 2>&1) || rc=$?
  }
  for c in "ENGINE_OPTS=spin_us=-1|--|spin_us=-1: expected" "QPAIRS=65|--|qpairs=65: expected" \
           "X=1|--wait=bogus|valid values: hybrid" "X=1|--cmd_timeout=-1|cmd_timeout=-1: expected"; do
    IFS='|' read -r e a want <<< "$c"
    if [ "$a" = -- ]; then realfio "$e" -- qd1-latency.fio; else realfio "$e" -- qd1-latency.fio "$a"; fi
    if [ "$rc" != 0 ] && grep -qF -- "$want" <<< "$out" && ! grep -q 'ambiguous\|unrecognized option' <<< "$out"; then
      ok "the engine itself refuses $e $a (the option reached it)"
    else
      bad "the engine itself refuses $e $a (the option reached it)" "rc $rc: $(head -c 400 <<< "$out")"
    fi
  done
  unset LD_PRELOAD
else
  skip "engine options through the real fio" "fio or $ENG is missing"
fi

# ---- the kernel initiator's device -------------------------------------------
jr INITIATOR=kernel KDEV=$tmp/dev/nvme9n1 -- qd1-latency.fio
expect_refused "a KDEV that does not exist is refused" "does not exist"
[ ! -e "$tmp/dev/nvme9n1" ] && ok "and nothing is created in its place" || bad "and nothing is created in its place"
touch "$tmp/afile"
jr INITIATOR=kernel KDEV=$tmp/afile -- qd1-latency.fio
expect_refused "a KDEV that is a regular file is refused" "is not a block device"
blk=$(find /dev -maxdepth 1 -type b 2>/dev/null | head -1)
if [ -n "$blk" ]; then
  jr INITIATOR=kernel KDEV=$blk -- qd1-latency.fio
  expect_refused "a block device that is not namespace NS of SUBNQN ($blk) is refused" "is not an NVMe-oF namespace"
  # the same device as namespace 1 of another subsystem (a fake sysfs)
  d=$tmp/sys/class/nvme-subsystem/nvme-subsys7
  mkdir -p "$d/$(basename "$(readlink -f "$blk")")"
  echo nqn.2026-12.io.nvmeof:other > "$d/subsysnqn"
  echo 1 > "$d/$(basename "$(readlink -f "$blk")")/nsid"
  jr INITIATOR=kernel KDEV=$blk -- qd1-latency.fio
  expect_refused "the block device of another subsystem's namespace is refused, naming it" \
    "is namespace 1 of nqn.2026-12.io.nvmeof:other, not namespace 1 of $SUBNQN"
  # and of this one: it runs, on that device
  echo "$SUBNQN" > "$d/subsysnqn"
  jr INITIATOR=kernel KDEV=$blk -- qd1-latency.fio
  expect_ran "the block device of namespace NS of SUBNQN runs" "FILENAME=$blk\$"
  # jobs whose regions pass the device's end (1 GiB here): refused, as fio would
  # stop each such job at its first offset past the end
  mkdir -p "$tmp/sys/class/block/$(basename "$(readlink -f "$blk")")"
  echo 2097152 > "$tmp/sys/class/block/$(basename "$(readlink -f "$blk")")/size"
  jr INITIATOR=kernel KDEV=$blk NUMJOBS=4 OFFSET_INCREMENT=64m REGION=1g -- qp-scaling.fio
  expect_refused "jobs whose regions pass the device's end are refused, saying where" \
    "the last of 4 jobs' regions, offset 201326592 plus size 1073741824, passes the end of $blk (1073741824 bytes)"
  jr INITIATOR=kernel KDEV=$blk NUMJOBS=64 OFFSET_INCREMENT=4m REGION=768m -- qp-scaling.fio
  expect_ran "64 jobs' regions inside the device run" "FILENAME=$blk\$"
else
  skip "KDEV that is a block device but not the namespace" "no block device in /dev"
fi
jr INITIATOR=kernel KDEV=/dev/null SUBNQN= -- qd1-latency.fio
expect_refused "INITIATOR=kernel without SUBNQN is refused (KDEV cannot be checked)" "needs SUBNQN"

# ---- defaults ----------------------------------------------------------------
jr -- iops.fio
expect_ran "REGION defaults to the whole namespace" "env .*REGION=100%"
jr -- verify.fio
expect_ran "verify.fio keeps a 1 GiB region" "env .*REGION=1g"
jr TARGET=fd00::1 -- qd1-latency.fio
expect_ran "an IPv6 TARGET is escaped for fio, adrfam=IPv6" 'FILENAME=trtype=RDMA adrfam=IPv6 traddr=fd00\\:\\:1 '

# ---- the plots' jobs axis ----------------------------------------------------
# A results folder written as jobs/sweep writes one (sweeplib), drawn by
# jobs/plot with a stand-in gnuplot: the axis title is in the script it keeps.
printf '#!/bin/sh\nexit 0\n' > "$tmp/bin/gnuplot"
chmod +x "$tmp/bin/gnuplot"
# plot_axis DIR INITIATORS VARS SETUP ROW...: VARS "NAME=v1,v2 ..." swept,
# SETUP "K=V ..." meta.json's fixed settings, each ROW "VAR=v,...;col=v,..."
# (a run of every initiator); $out the iops plot's x axis title
plot_axis() {
  local d=$tmp/$1; shift
  python3 - "$d" "$@" <<'PY' || { out="(no results folder)"; return; }
import json, os, sys
sys.path.insert(0, "jobs")
import sweeplib
d, inis, swept, setup, specs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5:]
names = [v.split("=")[0] for v in swept]
os.makedirs(d, exist_ok=True)
json.dump({"vars": {v.split("=")[0]: v.split("=")[1].split(",") for v in swept}, "reps": 1,
           "setup": dict(kv.split("=", 1) for kv in setup)}, open(os.path.join(d, "meta.json"), "w"))
rows = []
for spec in specs:
    cell, _, cols = spec.partition(";")
    for ini in inis:
        r = dict.fromkeys(sweeplib.columns(names), "")
        r.update(dict(kv.split("=", 1) for kv in cell.split(",")), initiator=ini, rep="1", status="ok",
                 iops="1000", bw_bytes="4096000", json=f"runs/{len(rows)}.json")
        if ini == "ours" and cols:
            r.update(dict(kv.split("=", 1) for kv in cols.split(",")))
        rows.append(r)
sweeplib.write_csv(os.path.join(d, "results.csv"), rows, names)
PY
  out=$(env PATH="$tmp/bin:$PATH" jobs/plot "$d" 2>&1) &&
    out=$(sed -n 's/^set xlabel "\(.*\)"$/\1/p' "$d/plots/iops.gp" 2>&1)
}
plot_axis pl1 "ours kernel" NUMJOBS=1,4 "QPAIRS=1" "NUMJOBS=1;qpairs=1" "NUMJOBS=4;qpairs=1"
[ "$out" = "fio jobs (NUMJOBS; thread mode: one queue pair each)" ] &&
  ok "jobs/plot: a queue pair per job says so on the jobs axis" || bad "jobs/plot: a queue pair per job says so on the jobs axis" "$out"
plot_axis pl2 "ours kernel" NUMJOBS=1,4 "QPAIRS_SHARED=2" "NUMJOBS=1;qpairs_shared=2" "NUMJOBS=4;qpairs_shared=2"
[ "$out" = "fio jobs (NUMJOBS; thread mode: ours: the jobs share 2 queue pairs)" ] &&
  ok "jobs/plot: QPAIRS_SHARED=2 fixed: the jobs axis says they share 2 queue pairs" ||
  bad "jobs/plot: QPAIRS_SHARED=2 fixed: the jobs axis says they share 2 queue pairs" "$out"
# an older results.csv, without the qpairs_shared column: the swept variable says it
plot_axis pl3 ours "NUMJOBS=2,8 QPAIRS_SHARED=1,4" "" "NUMJOBS=2,QPAIRS_SHARED=1" "NUMJOBS=2,QPAIRS_SHARED=4" \
  "NUMJOBS=8,QPAIRS_SHARED=1" "NUMJOBS=8,QPAIRS_SHARED=4"
[ "$out" = "fio jobs (NUMJOBS; thread mode: the jobs share 1 or 4 queue pairs (a line per QPAIRS_SHARED))" ] &&
  ok "jobs/plot: QPAIRS_SHARED swept: the jobs axis names each value, a line each" ||
  bad "jobs/plot: QPAIRS_SHARED swept: the jobs axis names each value, a line each" "$out"

tally jobs
