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
# mem.c and cuda.c register memory in a context of their own
if grep -l '"ctrl.h"\|"queue.h"\|"qpriv.h"' core/mem.c core/cuda.c; then
  echo "layers: registration reaches into the controller or queue"; fail=1
fi
if [ $fail = 0 ]; then echo "layers: 1 passed, 0 failed"; else echo "layers: 0 passed, 1 failed"; fi
exit $fail
