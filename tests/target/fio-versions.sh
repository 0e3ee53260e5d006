#!/bin/bash
# IN-GUEST: the engine under a second fio release (make fio-release: Debian
# 13's fio, FIO2_SUITE=trixie, built from its source package into
# build/fio-trixie, the engine built against it in build/fio-trixie-out),
# beside the installed fio the rest of the suites use: a subset of the
# engine suite covering connect, verify, JSON and terse output and a
# refused connect; then each engine under the other fio refuses in one line.
#   tests/testbed/run bash tests/target/fio-versions.sh [SUITE]
set -uo pipefail
cd "$(dirname "$0")/../.."
SUITE=${1:-${FIO2_SUITE:-trixie}}
F2=build/fio-$SUITE
pass=0 fail=0
ok() { echo "ok     $1"; pass=$((pass + 1)); }
bad() { echo "FAILED $1"; shift; printf '    %s\n' "$@"; fail=$((fail + 1)); }
[ -x "$F2/fio" ] && [ -f "$F2-out/libnvmeof_fio.so" ] ||
  { echo "fio-versions: no $F2/fio or $F2-out/libnvmeof_fio.so: run make fio-release FIO2_SUITE=$SUITE first"; exit 1; }
v1=$(/usr/bin/fio --version) v2=$("$F2/fio" --version)
echo "fio-versions: the installed $v1 and $v2 from $SUITE"

if NVMEOF_FIO=$PWD/$F2/fio NVMEOF_BUILD=$F2-out bash tests/target/engine.sh t_verify_write_then_read \
     t_verify_randrw_4k_ns2 t_json_and_terse_output_parse_in_threads_and_processes t_wrong_nqn_fails_clearly; then
  ok "the engine suite's connect, verify, JSON and failure tests under $v2"
else
  bad "the engine suite's connect, verify, JSON and failure tests under $v2"
fi

# each engine under the other fio: one line, and fio runs nothing
cross() { # fio engine built-for
  local out rc
  out=$("$1" --name=x --ioengine=external:"$PWD/$2" --filename='traddr=192.0.2.1 subnqn=nqn.x ns=1' \
    --rw=read --size=4k 2>&1); rc=$?
  if [ $rc != 0 ] && [ "$(grep -c "^nvmeof engine: built for $3 but loaded by $("$1" --version)," <<< "$out")" = 1 ]; then
    ok "$("$1" --version) refuses the engine built for $3, in one line"
  else
    bad "$("$1" --version) refuses the engine built for $3" "exit $rc: $(head -5 <<< "$out")"
  fi
}
if [ "$v1" != "$v2" ]; then
  cross "$F2/fio" build/out/libnvmeof_fio.so "$v1"
  cross /usr/bin/fio "$F2-out/libnvmeof_fio.so" "$v2"
else
  echo "       (one version twice: no cross check)"
fi
echo "fio-versions: $pass passed, $fail failed"
[ "$fail" = 0 ]
