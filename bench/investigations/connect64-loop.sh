#!/bin/bash
# IN-GUEST: LOOPS (100) runs of one fio job with 64 queue
# pairs (its own controller; nvmet grants up to 128 I/O queues), each
# connecting all 64 while another fio process keeps both vCPUs busy with
# 128 KiB reads, then 1 s of 4 KiB random reads spread over them. A run
# counts only if fio exits 0, all 64 queue pairs connected and every one
# carried commands (end-of-job lines). Prints one line per run and a summary
# with the connect retries and the slowest connect.
#   tests/testbed/run bash bench/investigations/connect64-loop.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/testbed/guest/target-env.sh
B=${NVMEOF_BUILD:-build/out}
ENG=$PWD/$B/libnvmeof_fio.so
LOOPS=${LOOPS:-100} N=${N:-64}
OUT=${C64_OUT:-build/connect64/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
FA1="trtype=RDMA adrfam=IPv4 traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_PORT subnqn=${NVMEOF_TB_NQN_A//:/\\:} ns=1"
ours() { timeout 120 /usr/bin/fio --ioengine=external:"$ENG" --output-format=normal "$@"; }

# the load: its own process, for the whole loop
# (not ours(): its 120 s timeout would end the load a dozen runs in)
timeout $((LOOPS * 30 + 60)) /usr/bin/fio --ioengine=external:"$ENG" --output-format=normal --name=load \
  --filename="$FA1" --rw=randread --bs=128k --iodepth=16 --qpairs=1 --size=256m --time_based \
  --runtime=$((LOOPS * 30)) > "$OUT/load.log" 2>&1 &
LOAD=$!
trap 'kill $LOAD 2>/dev/null; wait $LOAD 2>/dev/null' EXIT
sleep 3
ok=0 retries=0 slowest=0
for i in $(seq "$LOOPS"); do
  t0=$(date +%s.%N)
  ours --name=many --filename="$FA1" --rw=randread --bs=4k --iodepth=256 --qpairs="$N" --qpair_select=rr \
    --size=64m --time_based --runtime=1 > "$OUT/run-$i.log" 2>&1
  rc=$?
  wall=$(python3 -c "import time; print(round(time.time() - $t0, 1))")
  lines=$(grep -E 'nvmeof: queue [0-9]+: [0-9]+ command\(s\).*connect retr' "$OUT/run-$i.log")
  nq=$(grep -c . <<< "$lines")
  idle=$(awk '$4 + 0 < 2' <<< "$lines" | grep -c .)
  r=$(grep -oE '[0-9]+ connect retr' <<< "$lines" | awk '{ s += $1 } END { print s + 0 }')
  ms=$(grep -oE 'connected in [0-9]+ ms' <<< "$lines" | awk '{ if ($3 > m) m = $3 } END { print m + 0 }')
  retries=$((retries + r))
  [ "$ms" -gt "$slowest" ] && slowest=$ms
  if [ "$rc" = 0 ] && [ "$nq" = "$N" ] && [ "$idle" = 0 ] && grep -q 'err= 0' "$OUT/run-$i.log"; then
    ok=$((ok + 1)); v=ok
  else
    v=FAILED; grep -E 'nvmeof:.*(fail|error|no answer|refused)' "$OUT/run-$i.log" | head -3 | sed 's/^/    /'
  fi
  echo "run $i: $v, exit $rc, $nq queue pairs, $idle without I/O, $r connect retries, slowest connect $ms ms, wall ${wall}s"
done
kill -0 $LOAD 2>/dev/null && load="running throughout" || load="ENDED EARLY (see $OUT/load.log)"
echo "connect64: $ok of $LOOPS runs connected all $N queue pairs and every one carried I/O; $retries connect retries in all; slowest queue connect $slowest ms; load job $load" | tee "$OUT/summary.txt"
