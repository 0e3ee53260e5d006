#!/bin/bash
# The core's structure, checked: the include graph has no cycle, no core file
# includes the test wire, the shipped libraries carry none of it, and every
# core source file stays small enough to have one job.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/out}
fail=0
edges=$(for f in core/*.c core/*.h core/include/*.h; do
  for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
    echo "$(basename "$f") $(basename "$h")"
  done
done)
if ! echo "$edges" | tsort >/dev/null 2>/tmp/layers.tsort; then
  echo "layers: include cycle:"; cat /tmp/layers.tsort; fail=1
fi
if grep -l 'fakewire\|fw_' core/*.c core/*.h; then
  echo "layers: core files above name the test wire"; fail=1
fi
for lib in "$B/libnvmeof.so" "$B/libnvmeof.a" "$B/libnvmeof_fio.so"; do
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
QFILES="slots submit complete qstate poll wait sync queue group qrdma"
if [ -f "$B/core/qstate.o" ]; then
  for g in $QFILES; do nm --defined-only "$B/core/$g.o" | awk -v g=$g '$2=="T"{print $3, g}'; done > /tmp/layers.defs
  for f in $QFILES; do nm -u "$B/core/$f.o" | awk -v f=$f '{print $2, f}'; done > /tmp/layers.uses
  calls=$(awk 'NR==FNR{d[$1]=$2;next} ($1 in d) && d[$1]!=$2 {print d[$1], $2}' /tmp/layers.defs /tmp/layers.uses | sort -u)
  if ! echo "$calls" | tsort >/dev/null 2>/tmp/layers.calls; then
    echo "layers: call cycle among the queue files (callee caller):"; cat /tmp/layers.calls; fail=1
  fi
else
  echo "layers: $B/core/qstate.o missing: build first"; fail=1
fi
# mem.c and cuda.c register memory in a context of their own
if grep -l '"ctrl.h"\|"queue.h"\|"qpriv.h"' core/mem.c core/cuda.c; then
  echo "layers: registration reaches into the controller or queue"; fail=1
fi
if [ $fail = 0 ]; then echo "layers: 1 passed, 0 failed"; else echo "layers: 0 passed, 1 failed"; fi
exit $fail
