#!/bin/bash
# tests/unit/fio-version.sh [BUILD_DIR]: the engine refuses, in one line, a
# fio of another version than the source it was built against, and loads
# under its own (tests/unit/fio_version.c stands in for fio; the real fio
# of another release: tests/target/fio-versions.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/out}
source tests/tally.sh
built=$(strings "$B/engine/fiover.o" | grep -m1 '^fio-[0-9]')
[ -n "$built" ] || { echo "fio-version: no fio version in $B/engine/fiover.o"; exit 1; }
# ASan's runtime must come first when a sanitized engine is loaded into fio
rt=${NVMEOF_ASAN_RT:-}
# (ldd's whole output read first: grep -q may stop before ldd's last line,
# and pipefail then sees ldd's SIGPIPE, which read as "no ASan" now and then)
if [ -z "$rt" ] && grep -q libasan <<< "$(ldd "$B/libnvmeof_fio.so" 2>/dev/null)"; then rt=$(${CC:-cc} -print-file-name=libasan.so); fi
pre=${rt:+LD_PRELOAD=$rt}

out=$("$B/tests/fio_version" "$B/libnvmeof_fio.so" "$built" 2>&1)
read -r got want <<< "$(tail -1 <<< "$out")"
if [ "$got" = "$want" ] && [ "$(wc -l <<< "$out")" = 1 ]; then ok "under $built (its own): loads, silent"
else bad "under $built (its own): loads, silent" "$out"; fi

out=$("$B/tests/fio_version" "$B/libnvmeof_fio.so" fio-3.99 2>&1)
read -r got want <<< "$(tail -1 <<< "$out")"
if [ "$got" != "$want" ] && [ "$(grep -c . <<< "$out")" = 2 ] &&
   grep -qx "nvmeof engine: built for $built but loaded by fio-3.99, .*rebuild it against this fio's source.*" <<< "$out"; then
  ok "under fio-3.99: one line, and an ioops version fio refuses ($got)"
else bad "under fio-3.99: one line, and an ioops version fio refuses" "$out"; fi

# and the real fio, when it is the one the engine was built for, loads it
# (another fio, or none: said, as a skip)
if ! command -v fio >/dev/null; then
  skip "$built itself loads it" "fio is not installed"
elif [ "$(fio --version)" != "$built" ]; then
  skip "$built itself loads it" "the installed fio is $(fio --version), not $built"
else
  out=$(env $pre ASAN_OPTIONS=detect_leaks=0 fio --enghelp="$PWD/$B/libnvmeof_fio.so" 2>&1)
  if grep -q '^traddr' <<< "$out" && ! grep -q "nvmeof engine: built for" <<< "$out"; then ok "$built itself loads it"
  else bad "$built itself loads it" "$(head -3 <<< "$out")"; fi
fi
# Each optional hook is in the ops table from the FIO_IOOPS_VERSION of the
# fio release that added it to ioengines.h (axboe/fio's history: 3.34 is
# 32, 3.36 is 33, 3.40 is 37): a higher gate leaves it NULL under the
# releases between, where fio falls back to opening the filename as a
# block device. Every hook a fio source here declares is in the table.
declare -A first=([finish_zone]=32 [fdp_fetch_ruhs]=32 [get_max_active_zones]=33 [move_zone_wp]=37)
gates=$(awk '/^#if FIO_IOOPS_VERSION >= / {g=$4} /^#endif/ {g=""} /^\t\.[a-z_]+ = / && g {sub(/^\t\./, ""); print $1, g}' \
  engine/fio_nvmeof.c)
for h in "${!first[@]}"; do
  g=$(awk -v h="$h" '$1 == h {print $2}' <<< "$gates")
  if [ "$g" = "${first[$h]}" ]; then ok "hook $h from FIO_IOOPS_VERSION ${first[$h]}"
  else bad "hook $h from FIO_IOOPS_VERSION ${first[$h]}" "engine/fio_nvmeof.c gates it at '${g:-none}'"; fi
done
for src in build/fio-src build/fio-3.39 build/fio-3.42; do
  [ -f "$src/ioengines.h" ] || continue
  for h in $(grep -oE '\(\*(finish_zone|fdp_fetch_ruhs|get_max_active_zones|move_zone_wp|[a-z_]*zone[a-z_]*)\)' \
      "$src/ioengines.h" | tr -d '(*)' | sort -u); do
    if grep -qE "^\s*\.$h = " engine/fio_nvmeof.c; then ok "$src's hook $h is in the ops table"
    else bad "$src's hook $h is in the ops table" "engine/fio_nvmeof.c leaves it NULL"; fi
  done
done
tally "fio-version"
