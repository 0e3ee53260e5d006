#!/bin/bash
# The core's structure, checked: the include graph has no cycle, no core file
# includes the test wire, the shipped libraries carry none of it, and every
# core source file stays small enough to have one job. The engine's: its
# files call each other in the one order engine/engine.h lists, and reach
# the core only through nvmeof.h.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/out}
# its scratch files are its own: two runs at once (two builds, two checkouts)
# must not read each other's
TMP=$(mktemp -d /tmp/layers.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail=0
edges=$(for f in core/*.c core/*.h core/include/*.h; do
  for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
    echo "$(basename "$f") $(basename "$h")"
  done
done)
if ! echo "$edges" | tsort >/dev/null 2>$TMP/tsort; then
  echo "layers: include cycle:"; cat $TMP/tsort; fail=1
fi
if grep -l 'fakewire\|fw_' core/*.c core/*.h; then
  echo "layers: core files above name the test wire"; fail=1
fi
for lib in "$B/libnvmeof.so" "$B/libnvmeof.a" "$B/libnvmeof_fio.so"; do
  # a library not built is not one without the test wire
  [ -f "$lib" ] || { echo "layers: no $lib to check for the test wire (build first)"; fail=1; continue; }
  if nm "$lib" 2>/dev/null | grep -qE ' [TtDdBbRr] (fw_|q_open_fake)'; then
    echo "layers: $lib contains the test wire"; fail=1
  fi
done
for f in core/*.c; do
  n=$(wc -l < "$f")
  [ "$n" -le 550 ] || { echo "layers: $f has $n lines"; fail=1; }
done
# The queue's files call only those below them (slots, then submit and
# completion processing, then the state, then the poll, the waits and the
# synchronous calls): from each object's undefined symbols to the queue
# object that defines them, the graph has no cycle.
QFILES="slots submit complete qstage qpark qstate poll wait sync queue group qrdma"
if [ -f "$B/core/qstate.o" ]; then
  for g in $QFILES; do nm --defined-only "$B/core/$g.o" | awk -v g=$g '$2=="T"{print $3, g}'; done > $TMP/defs
  for f in $QFILES; do nm -u "$B/core/$f.o" | awk -v f=$f '{print $2, f}'; done > $TMP/uses
  calls=$(awk 'NR==FNR{d[$1]=$2;next} ($1 in d) && d[$1]!=$2 {print d[$1], $2}' $TMP/defs $TMP/uses | sort -u)
  if ! echo "$calls" | tsort >/dev/null 2>$TMP/calls; then
    echo "layers: call cycle among the queue files (callee caller):"; cat $TMP/calls; fail=1
  fi
else
  echo "layers: $B/core/qstate.o missing: build first"; fail=1
fi
# The controller's files likewise, in the order core/cpriv.h lists them:
# each calls only those before it (from each object's undefined symbols to
# the controller file that defines them).
CFILES="cfields ctrl_mem auth_run cstate admin adminio aer keepalive hostid creset reassoc ctrl"
corder=$(sed -n 's/^ \*   \([a-z_]*\)\.c .*/\1/p' core/cpriv.h | tr '\n' ' ')
[ "$corder" = "$CFILES " ] || { echo "layers: core/cpriv.h lists '$corder', not '$CFILES '"; fail=1; }
if [ -f "$B/core/cstate.o" ]; then
  rank=0
  for f in $CFILES; do
    nm --defined-only "$B/core/$f.o" | awk -v f=$f -v r=$rank '$2 ~ /^[TDBR]$/ {print $3, f, r}'
    rank=$((rank + 1))
  done > $TMP/cdefs
  for f in $CFILES; do nm -u "$B/core/$f.o" | awk -v f=$f '{print $2, f}'; done > $TMP/cuses
  while read -r callee crank caller rrank sym; do
    [ "$crank" -lt "$rrank" ] ||
      { echo "layers: core/$caller.c calls $sym of core/$callee.c, listed after it in core/cpriv.h"; fail=1; }
  done < <(awk 'NR==FNR{d[$1]=$2; r[$1]=$3; rk[$2]=$3; next} ($1 in d) && d[$1]!=$2 {print d[$1], r[$1], $2, rk[$2], $1}' \
    $TMP/cdefs $TMP/cuses | sort -u)
else
  echo "layers: $B/core/cstate.o missing: build first"; fail=1
fi
# mem.c and cuda.c register memory in a context of their own
if grep -l '"ctrl.h"\|"queue.h"\|"qpriv.h"' core/mem.c core/cuda.c; then
  echo "layers: registration reaches into the controller or queue"; fail=1
fi
# The engine is a library user: its files include no core header but
# nvmeof.h, and call only functions nvmeof.h declares (libnvmeof.map).
if grep -n '#include "\(internal\|opts\|queue\|qpriv\|cpriv\|ctrl\|protocol\|util\|mem\|transport\|rdma\)\.h"' engine/*.c engine/*.h; then
  echo "layers: engine files include core headers beyond nvmeof.h"; fail=1
fi
ENGINE_FILES="log ctrl_share options probe zones files paths qplan qshare qwait qpairs iomem job reap fio_nvmeof"
if [ -f "$B/engine/fio_nvmeof.o" ]; then
  nm --defined-only "$B"/core/*.o | awk 'NF==3 && $2 ~ /^[TDBR]$/ {print $3}' | sort -u > $TMP/core
  sed -n 's/^[[:space:]]*\(nvmeof_[a-z0-9_]*\);.*/\1/p' core/libnvmeof.map | sort -u > $TMP/api
  for f in $ENGINE_FILES tid optval topo qmap hring shreg irq losses zdesc zretry; do
    bad=$(nm -u "$B/engine/$f.o" | awk '{print $2}' | sort -u | comm -12 - $TMP/core | comm -23 - $TMP/api)
    [ -z "$bad" ] || { echo "layers: engine/$f.c calls the core's insides: $(echo $bad)"; fail=1; }
  done
  # Each engine file calls only those listed before it in engine/engine.h
  # (tid, optval, topo, qmap, hring, shreg, losses, zdesc and zretry, which know nothing of fio, below them all).
  order=$(sed -n 's/^ \*   \([a-z_]*\)\.c .*/\1/p' engine/engine.h | tr '\n' ' ')
  [ "$order" = "$ENGINE_FILES " ] || { echo "layers: engine/engine.h lists '$order', not '$ENGINE_FILES '"; fail=1; }
  rank=0
  for f in tid optval topo qmap hring shreg losses zdesc zretry irq $ENGINE_FILES; do
    nm --defined-only "$B/engine/$f.o" | awk -v f=$f -v r=$rank '$2 ~ /^[TDBR]$/ {print $3, f, r}'
    case $f in tid|optval|topo|qmap|hring|shreg|losses|zdesc|zretry) ;; *) rank=$((rank + 1));; esac
  done > $TMP/edefs
  for f in tid optval topo qmap hring shreg losses zdesc zretry irq $ENGINE_FILES; do nm -u "$B/engine/$f.o" | awk -v f=$f '{print $2, f}'; done > $TMP/euses
  ecalls=$(awk 'NR==FNR{d[$1]=$2; r[$2]=$3; next} ($1 in d) && d[$1]!=$2 {print d[$1], $2, $1}' \
    $TMP/edefs $TMP/euses | sort -u)
  while read -r callee caller sym; do
    [ -n "$callee" ] || continue
    rc=$(awk -v f=$callee '$2==f {print $3; exit}' $TMP/edefs)
    rr=$(awk -v f=$caller '$2==f {print $3; exit}' $TMP/edefs)
    [ "${rc:-0}" -lt "${rr:-0}" ] || [ "$callee" = tid ] || [ "$callee" = optval ] || [ "$callee" = topo ] || [ "$callee" = qmap ] || [ "$callee" = hring ] || [ "$callee" = shreg ] || [ "$callee" = losses ] || [ "$callee" = zdesc ] || [ "$callee" = zretry ] ||
      { echo "layers: engine/$caller.c calls $sym of engine/$callee.c, listed after it in engine.h"; fail=1; }
  done <<< "$ecalls"
  if ! echo "$ecalls" | awk 'NF {print $1, $2}' | tsort >/dev/null 2>$TMP/ecalls; then
    echo "layers: call cycle among the engine files:"; cat $TMP/ecalls; fail=1
  fi
else
  echo "layers: $B/engine/fio_nvmeof.o missing: build first"; fail=1
fi
for f in engine/*.c; do
  n=$(wc -l < "$f")
  [ "$n" -le 400 ] || { echo "layers: $f has $n lines"; fail=1; }
done
if [ $fail = 0 ]; then echo "layers: 1 passed, 0 failed, 0 skipped"; else echo "layers: 0 passed, 1 failed, 0 skipped"; fi
exit $fail
