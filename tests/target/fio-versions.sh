#!/bin/bash
# IN-GUEST: the engine under other fio releases beside the installed one:
# each of fio 3.39 (Debian 13) and 3.42 (the newest release), built from the
# upstream archives by make fio-release into build/fio-VERSION, the engine
# built against it in build/fio-VERSION-out. Under each, the engine suite's
# connect, verify, JSON and terse output and refused-connect tests, a zoned
# job through its zone hooks and fdp=1 on a namespace without it; then
# every fio refuses, in one line, the engine built for each other fio.
#   tests/testbed/run bash tests/target/fio-versions.sh [VERSION...]
# The archives are not part of the project: where their folder
# (NVMEOF_FIO_RELEASES, else ../shared/fio-releases beside the checkout) is
# absent the suite skips, saying why (tests/skips); where it is there and a
# release was not built, that fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
REL=${NVMEOF_FIO_RELEASES:-../shared/fio-releases}
VERSIONS=${*:-3.39 3.42}
pass=0 fail=0
ok() { echo "ok     $1"; pass=$((pass + 1)); }
bad() { echo "FAILED $1"; shift; printf '    %s\n' "$@"; fail=$((fail + 1)); }
[ -d "$REL" ] || { echo "fio-versions: skipped: no fio release archives at $REL (NVMEOF_FIO_RELEASES)"; exit 77; }
# fio and the engine built for it, each line "FIO ENGINE"
pairs=("/usr/bin/fio build/out/libnvmeof_fio.so")
for v in $VERSIONS; do
  F=build/fio-$v
  if ! [ -x "$F/fio" ] || ! [ -f "$F-out/libnvmeof_fio.so" ]; then
    bad "fio $v and the engine built against it" "no $F/fio or $F-out/libnvmeof_fio.so: make fio-release failed (build/fio-release.log)"
    continue
  fi
  pairs+=("$F/fio $F-out/libnvmeof_fio.so")
  fv=$("$F/fio" --version)
  if NVMEOF_FIO=$PWD/$F/fio NVMEOF_BUILD=$F-out bash tests/target/engine.sh t_verify_write_then_read \
       t_verify_randrw_4k_ns2 t_json_and_terse_output_parse_in_threads_and_processes t_wrong_nqn_fails_clearly; then
    ok "the engine suite's connect, verify, JSON and failure tests under $fv"
  else
    bad "the engine suite's connect, verify, JSON and failure tests under $fv"
  fi
  # the zone hooks of this release (3.39: active zones, finishing; 3.42:
  # moving a write pointer)
  if NVMEOF_FIO=$PWD/$F/fio NVMEOF_BUILD=$F-out bash tests/target/zns-engine.sh t_zbd_sequential_write_verifies_across_zones; then
    ok "zonemode=zbd's sequential write with verify across zones under $fv"
  else
    bad "zonemode=zbd's sequential write with verify across zones under $fv"
  fi
  # fdp=1 (3.39 and later) on nvmet, which has no Flexible Data Placement:
  # the job fails, one line naming the command and the status
  fdp=$(timeout 120 "$F/fio" --ioengine=external:"$PWD/$F-out/libnvmeof_fio.so" --name=fdp --rw=write --bs=4k --size=1m \
    --fdp=1 --filename="trtype=RDMA traddr=$NVMEOF_TB_ADDR trsvcid=$NVMEOF_TB_PORT subnqn=${NVMEOF_TB_NQN_A//:/\\:} ns=1" 2>&1)
  fdp_rc=$?
  if [ $fdp_rc != 0 ] && grep -q "fdp=1 needs the namespace's placement identifiers: namespace 1: I/O Management Receive (reclaim unit handle status) nsid 1: Invalid Command Opcode" <<< "$fdp"; then
    ok "fdp=1 on a namespace without data placement fails in one line under $fv"
  else
    bad "fdp=1 on a namespace without data placement fails in one line under $fv" "exit $fdp_rc: $(tail -4 <<< "$fdp")"
  fi
done

# each engine under each other fio: one line, and fio runs nothing
# (each fio's --version asked once: a start of fio takes a second or two
# under emulation)
declare -A ver
for a in "${pairs[@]}"; do
  read -r fa ea <<< "$a"
  ver[$fa]=$("$fa" --version)
done
cross() { # fio engine-built-for-it fio-the-engine-was-built-for
  local out rc
  out=$("$1" --name=x --ioengine=external:"$PWD/$2" --filename='traddr=192.0.2.1 subnqn=nqn.x ns=1' \
    --rw=read --size=4k 2>&1); rc=$?
  if [ $rc != 0 ] && [ "$(grep -c "^nvmeof engine: built for $3 but loaded by ${ver[$1]}," <<< "$out")" = 1 ]; then
    ok "${ver[$1]} refuses the engine built for $3, in one line"
  else
    bad "${ver[$1]} refuses the engine built for $3" "exit $rc: $(head -5 <<< "$out")"
  fi
}
for a in "${pairs[@]}"; do
  for b in "${pairs[@]}"; do
    read -r fa ea <<< "$a"; read -r fb eb <<< "$b"
    [ "$fa" = "$fb" ] && continue
    if [ "${ver[$fa]}" = "${ver[$fb]}" ]; then
      bad "$fa and $fb are different fio releases" "both ${ver[$fa]}"
      continue
    fi
    cross "$fa" "$eb" "${ver[$fb]}"
  done
done
echo "fio-versions: $pass passed, $fail failed"
[ "$fail" = 0 ]
