#!/bin/bash
# IN-GUEST: the Python package as a user installs it. A virtual environment
# (with Debian's site packages: setuptools and wheel, nothing downloaded),
# `make install` of the plain build into that environment's prefix,
# `pip install ./python` offline, then the examples (python/examples) run
# against the real target from outside the tree, with neither NVMEOF_LIB nor
# LD_LIBRARY_PATH set: the package must find the library by its install
# prefix. Outside the test bed (no target) the examples are left out.
#   python-pkg.sh                 all of it
#   python-pkg.sh --prepare DIR   the environment made in DIR and checked, no
#                                 examples (make test, on the host: under the
#                                 test bed's emulation a venv and pip take a minute)
#   python-pkg.sh --use DIR       the examples, with the environment in DIR
set -uo pipefail
cd "$(dirname "$0")/../.."
TOP=$PWD
source tests/tally.sh
mode=all
case ${1:-} in
  --prepare|--use) mode=${1#--}; [ -n "${2:-}" ] || { echo "usage: $0 [--prepare DIR | --use DIR]" >&2; exit 2; } ;;
  "") ;;
  *) echo "usage: $0 [--prepare DIR | --use DIR]" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
venv=$tmp/venv
[ $mode = all ] || { mkdir -p "$2" && venv=$(cd "$2" && pwd)/venv; }
py=$venv/bin/python
version=$(sed -n 's/^VERSION = //p' Makefile)
# what a user's shell would not have
clean() { env -u NVMEOF_LIB -u LD_LIBRARY_PATH -u PYTHONPATH PYTHONDONTWRITEBYTECODE=1 "$@"; }

if [ $mode = use ]; then
  [ -x "$py" ] || { bad "the environment python-pkg.sh --prepare made" "no $py"; tally python-pkg; exit 1; }
else
rm -rf "$venv"
if ! /usr/bin/python3 -m venv --system-site-packages "$venv" > "$tmp/log" 2>&1; then
  bad "python3 -m venv" "$(tail -3 "$tmp/log")"
  tally python-pkg; exit 1
fi
if make -s --no-print-directory install PREFIX="$venv" > "$tmp/log" 2>&1; then
  ok "make install PREFIX=<the virtual environment>"
else
  bad "make install PREFIX=<the virtual environment>" "$(tail -5 "$tmp/log")"
fi
# pip builds in the source folder (build/, *.egg-info): a copy keeps the tree clean
cp -r python "$tmp/src"
if clean "$py" -m pip install --no-build-isolation --no-index --no-deps --no-cache-dir -q \
     --root-user-action=ignore "$tmp/src" > "$tmp/log" 2>&1; then
  ok "pip install --no-build-isolation ./python, offline"
else
  bad "pip install --no-build-isolation ./python, offline" "$(tail -8 "$tmp/log")"
fi

cd "$tmp"
got=$(clean "$py" -c 'import importlib.metadata as m, nvmeof
print(nvmeof.__version__, m.version("nvmeof"), nvmeof.library_path(), nvmeof.__file__)' 2>&1)
want="$version $version $venv/lib/libnvmeof.so.0 $venv/lib/"
if [[ $got == "$want"*"/site-packages/nvmeof/__init__.py" ]]; then
  ok "the installed package ($version, metadata too) loads the library from its prefix"
else
  bad "the installed package loads the library from its prefix" "got:  $got" "want: $want.../site-packages/nvmeof/__init__.py"
fi
# the page whole first: grep -q leaving early would end pydoc with SIGPIPE,
# which pipefail counts as the pipeline's failure
doc=$(clean "$py" -m pydoc nvmeof.Controller 2>&1)
if grep -q 'connect_defaults' <<< "$doc"; then
  ok "help(nvmeof.Controller) documents the connection options"
else
  bad "help(nvmeof.Controller) documents the connection options"
fi
fi # not --use
# prepared: what run-all.sh compares with the library and the package's source
[ $mode = prepare ] && { tally python-pkg && touch "${venv%/venv}/prepared"; exit; }

cd "$tmp"
if [ -n "${NVMEOF_TB_ADDR:-}" ]; then
  out=$(clean "$py" "$TOP/python/examples/read_blocks.py" "$NVMEOF_TB_ADDR" "$NVMEOF_TB_NQN_A" 2>&1)
  if grep -q "serial NVMEOFTB0001" <<< "$out" && grep -q "^read 65536 bytes (128 blocks of 512 B) from namespace 1" <<< "$out"; then
    ok "examples/read_blocks.py against the target"
  else
    bad "examples/read_blocks.py against the target" "$out"
  fi
  # namespace 2 (4 KiB blocks), near its end: the other suites use its first blocks
  out=$(clean "$py" "$TOP/python/examples/write_read_back.py" "$NVMEOF_TB_ADDR" "$NVMEOF_TB_NQN_A" \
    --nsid 2 --slba 61440 --blocks 64 2>&1)
  if [ "$out" = "64 blocks at 61440 of namespace 2: read back the same" ]; then
    ok "examples/write_read_back.py against the target"
  else
    bad "examples/write_read_back.py against the target" "$out"
  fi
  # the low-level API over four queues: reads only (namespace 1 is shared)
  out=$(clean "$py" "$TOP/python/examples/lowlevel_bench.py" "$NVMEOF_TB_ADDR" "$NVMEOF_TB_NQN_A" \
    --queues 4 --qd 8 --bs 65536 --seconds 1 2>&1)
  if clean "$py" -c 'import json, sys; r = json.loads(sys.argv[1])
assert r["qd1"]["ios"] > 0 and r["depth"]["ios"] > 0 and r["depth"]["mib_per_s"] > 0, r
assert (r["queues"], r["qd"], r["memory"]) == (4, 8, "host"), r' "$out" 2>&1; then
    ok "examples/lowlevel_bench.py against the target: $(tr -d '\n ' <<< "$out" | cut -c1-160)"
  else
    bad "examples/lowlevel_bench.py against the target" "$out"
  fi
else
  skip "examples/read_blocks.py against the target" "no target (NVMEOF_TB_ADDR unset)"
  skip "examples/lowlevel_bench.py against the target" "no target (NVMEOF_TB_ADDR unset)"
  skip "examples/write_read_back.py against the target" "no target (NVMEOF_TB_ADDR unset)"
fi
tally python-pkg
