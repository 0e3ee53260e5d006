#!/bin/bash
# tests/unit/exports.sh [BUILD_DIR]: the shared libraries export exactly
# their interface. libnvmeof.so: every function nvmeof.h
# declares, each in the library's version node, and nothing else; the
# installed static library defines the same and no other global.
# libnvmeof_fio.so: only `ioengine`, the one symbol fio 3.x looks up in an
# external engine (ioengines.c, dlopen_ioengine), nothing of the core.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/out}
# The version nodes of core/libnvmeof.map: 0.1, then one per release that
# added functions (NVMEOF_0.3: nvmeof_queue_connect_retries).
NODES=$(sed -n 's/^\(NVMEOF_[0-9A-Z_.]*\) {.*/\1/p' core/libnvmeof.map | tr '\n' ' ')
NODES_RE=$(echo $NODES | sed 's/\./\\./g; s/ /|/g')
source tests/tally.sh
NOFIO="fio is not installed (make setup installs it)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The header's functions, from the preprocessed header: macros such as
# nvmeof_ctrl_opts_init() are gone there, function-pointer typedefs do not
# match "name(". "(name)(" is a function a same-named macro wraps.
${CC:-cc} -E -P core/include/nvmeof.h | grep -oE '\bnvmeof_[a-z0-9_]*[[:space:]]*\(|\(nvmeof_[a-z0-9_]*\)\(' | tr -d '() \t' |
  sort -u > "$tmp/header"
[ "$(wc -l < "$tmp/header")" -ge 40 ] || { echo "exports: found only $(wc -l < "$tmp/header") functions in nvmeof.h"; exit 1; }

# same_as_header NAMES WHAT: file NAMES (sorted) holds exactly the header's
# functions; WHAT says which library and how it provides them.
same_as_header() {
  local extra missing
  extra=$(comm -13 "$tmp/header" "$1")
  missing=$(comm -23 "$tmp/header" "$1")
  if [ -z "$extra" ] && [ -z "$missing" ]; then
    ok "$2 the $(wc -l < "$tmp/header") functions of nvmeof.h and nothing else"
  else
    bad "$2 the functions of nvmeof.h and nothing else" \
      ${extra:+"not in nvmeof.h: $(echo $extra | cut -c1-300)"} \
      ${missing:+"in nvmeof.h, missing: $(echo $missing)"}
  fi
}

# Defined dynamic symbols, "name@@version" or "name" (the version node itself
# is an absolute symbol named like the node).
nm -D --defined-only "$B/libnvmeof.so" | awk '{print $3}' | sort > "$tmp/lib"
grep -vxE "$NODES_RE" "$tmp/lib" | sed 's/@.*//' | sort -u > "$tmp/lib.names"
same_as_header "$tmp/lib.names" "libnvmeof.so exports"
unversioned=$(grep -vxE "$NODES_RE" "$tmp/lib" | grep -vE "@@($NODES_RE)\$" || true)
if [ -z "$unversioned" ]; then
  ok "every export of libnvmeof.so is in a version node ($NODES)"
else
  bad "every export of libnvmeof.so is in a version node ($NODES)" "$(echo $unversioned)"
fi
soname=$(readelf -d "$B/libnvmeof.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" = libnvmeof.so.0 ] && [ -e "$B/$soname" ]; then
  ok "libnvmeof.so has soname libnvmeof.so.0, present in $B"
else
  bad "libnvmeof.so has soname libnvmeof.so.0, present in $B" "soname '${soname}'"
fi

# The installed static library: its global definitions are the header's
# functions too (the build's libnvmeof.a keeps the insides for the tests).
nm -g --defined-only "$B/libnvmeof-dist.a" | awk 'NF == 3 {print $3}' | sort -u > "$tmp/static"
same_as_header "$tmp/static" "the installed libnvmeof.a defines as globals"

# The engine: exactly one defined dynamic symbol, the ioengine_ops object.
eng=$(nm -D --defined-only "$B/libnvmeof_fio.so" | awk '{print $2, $3}')
if [ "$eng" = "D ioengine" ] || [ "$eng" = "B ioengine" ]; then
  ok "libnvmeof_fio.so exports only ioengine"
else
  bad "libnvmeof_fio.so exports only ioengine" "it exports: $(echo "$eng" | awk '{print $2}' | tr '\n' ' ')"
fi
# What fio calls in it must be found, not hidden: the ops table points at the
# engine's functions, so a load and an option listing prove it whole.
# A sanitized engine needs its runtime loaded first, as in engine.sh (fio
# itself is not instrumented).
if readelf -d "$B/libnvmeof_fio.so" | grep -q 'NEEDED.*libasan'; then
  export LD_PRELOAD=$(${CC:-cc} -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0
elif readelf -d "$B/libnvmeof_fio.so" | grep -q 'NEEDED.*libtsan'; then
  export LD_PRELOAD=$(${CC:-cc} -print-file-name=libtsan.so)
fi
if command -v fio >/dev/null; then
  help=$(fio --enghelp="$PWD/$B/libnvmeof_fio.so" 2>&1 || true)
  if grep -q '^traddr *:' <<< "$help"; then
    ok "fio loads libnvmeof_fio.so and lists its options"
  else
    bad "fio loads libnvmeof_fio.so and lists its options" "$(head -3 <<< "$help")"
  fi
else
  skip "fio loads libnvmeof_fio.so and lists its options" "$NOFIO"
fi
# fio --enghelp shows, for each option the library owns, the library's
# default (nvmeof_ctrl_opts_init), not a copy that could drift from it.
if command -v fio >/dev/null; then
  cat > "$tmp/defaults.c" <<'C'
#include <stdio.h>
#include "nvmeof.h"
static void time_opt(const char *name, unsigned ms)
{
	if (ms % 1000)
		printf("%s %ums\n", name, ms);
	else
		printf("%s %us\n", name, ms / 1000);
}
int main(void)
{
	static const char *wait[] = {"hybrid", "poll", "sleep", "adaptive"};
	struct nvmeof_ctrl_opts o;
	nvmeof_ctrl_opts_init(&o);
	printf("trsvcid %s\nin_capsule %d\nwait %s\nnum_io_queues %u\nspin_us %u\nconnect_retries %u\n",
	       o.trsvcid, o.in_capsule, wait[o.wait_mode], o.num_io_queues, o.spin_us, o.connect_retries);
	printf("hdr_digest %d\ndata_digest %d\n", o.hdr_digest, o.data_digest);
	/* the time options, as a user writes them (a bare number is seconds) */
	time_opt("kato", o.kato_ms);
	time_opt("reconnect_delay", o.reconnect_delay_ms);
	time_opt("ctrl_loss_tmo", o.ctrl_loss_tmo_ms);
	time_opt("cmd_timeout", o.cmd_timeout_ms);
	time_opt("connect_timeout", o.connect_timeout_ms);
	return 0;
}
C
  ${CC:-cc} -Icore/include -o "$tmp/defaults" "$tmp/defaults.c" "$B/libnvmeof.a" -lrdmacm -libverbs -lssl -lcrypto -lpthread -ldl \
    $([ "$(cat "$B/isal.stamp" 2>/dev/null)" = 1 ] && echo -lisal) \
    ${LD_PRELOAD:+-fsanitize=address,undefined}
  "$tmp/defaults" | sort > "$tmp/lib.defaults"
  sed -n 's/^\([a-z_]*\) *:.*; default \([^ ]*\)$/\1 \2/p' <<< "$help" | sort > "$tmp/help.defaults"
  if [ "$(wc -l < "$tmp/lib.defaults")" = 13 ] && cmp -s "$tmp/lib.defaults" "$tmp/help.defaults"; then
    ok "fio --enghelp shows the library's default of each of its 13 options"
  else
    bad "fio --enghelp shows the library's default of each of its options" \
      "$(diff "$tmp/lib.defaults" "$tmp/help.defaults" | tr '\n' ' ')"
  fi
  # and the engine's own options still carry fio defaults of their own
  dhelp=$(fio --enghelp="$PWD/$B/libnvmeof_fio.so,ns" 2>&1 || true)
  dlib=$(fio --enghelp="$PWD/$B/libnvmeof_fio.so,cmd_timeout" 2>&1 || true)
  if grep -q 'default: 1$' <<< "$dhelp" && grep -q 'default: no default' <<< "$dlib"; then
    ok "the library's options have no fio default (unset means the library's), the engine's do"
  else
    bad "the library's options have no fio default, the engine's do" "$(echo $dhelp | cut -c1-200)" "$(echo $dlib | cut -c1-200)"
  fi
else
  skip "fio --enghelp shows the library's default of each of its options" "$NOFIO"
  skip "the library's options have no fio default (unset means the library's), the engine's do" "$NOFIO"
fi
# A malformed DH-HMAC-CHAP secret, given inline or in a file, ends the job
# before anything is sent (the address below answers nothing), with fio
# failing and the reason named, never the secret.
if command -v fio >/dev/null; then
  badkey='DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaS:' # CRC off by one bit
  goodkey='DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:'
  printf '%s\n' "$badkey" > "$tmp/secret"
  for how in "--dhchap_secret=$badkey" "--dhchap_secret_file=$tmp/secret" \
             "--dhchap_secret=$goodkey --dhchap_ctrl_secret_file=$tmp/secret"; do
    rc=0
    # shellcheck disable=SC2086 # $how is one or two options
    out=$(timeout 60 fio --name=auth --ioengine=external:"$PWD/$B/libnvmeof_fio.so" --rw=read --size=1m \
      --filename="traddr=192.0.2.1 subnqn=nqn.x" $how 2>&1) || rc=$?
    what=${how##* }
    what=${what%%=*}
    name=${what#--}
    if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "(${name%_file}): CRC-32 mismatch" <<< "$out" &&
       ! grep -q 'AAECAwQF' <<< "$out"; then
      ok "fio $what: a malformed secret fails the job by name, without the secret"
    else
      bad "fio $what: a malformed secret fails the job by name, without the secret" "rc $rc: $(echo $out | cut -c1-300)"
    fi
  done
else
  skip "fio: a malformed secret (inline, in a file, the controller's) fails the job by name" "$NOFIO"
fi
tally "exports ($B)"
