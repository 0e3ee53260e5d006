#!/bin/bash
# tests/unit/python-venv.sh: docs/python.md's virtual-environment install, line
# for line as docs/python.md gives it (the block after "In a virtual
# environment, no root"), in a plain `python3 -m venv` with HOME in a
# temporary folder and no network use (pip may not download: --no-index
# through PIP_NO_INDEX, so a build requirement to fetch fails the test).
# Then the installed package loads the library that make install put in
# the environment, and both say this tree's version.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/tally.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version=$(sed -n 's/^VERSION = //p' Makefile)
# docs/python.md's block: the first ```sh fence after the line that introduces it
awk '/^In a virtual environment, no root/{f=1} f&&/^```sh/{g=1; next} g&&/^```/{exit} g' docs/python.md > "$tmp/block.sh"
if [ "$(grep -c . "$tmp/block.sh")" -ge 3 ] && grep -q 'pip install' "$tmp/block.sh"; then ok "docs/python.md's block: $(tr '\n' ';' < "$tmp/block.sh")"
else bad "docs/python.md's virtual-environment block found" "$(cat "$tmp/block.sh")"; echo "python-venv: $pass passed, $fail failed"; exit 1; fi
# make install writes build/out/nvmeof.pc for its PREFIX: keep the tree's
if env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$tmp" PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
     PIP_NO_CACHE_DIR=1 MAKEFLAGS=-s bash -e "$tmp/block.sh" > "$tmp/log" 2>&1; then
  ok "the block runs as written, offline"
else
  bad "the block runs as written, offline" "$(tail -6 "$tmp/log")"
fi
py=$tmp/nvmeof-venv/bin/python
got=$(cd "$tmp" && env -i PATH=/usr/bin:/bin "$py" -c 'import importlib.metadata as m, nvmeof
print(nvmeof.__version__, m.version("nvmeof"), nvmeof.library_version(), nvmeof.library_path())' 2>&1)
want="$version $version $version $tmp/nvmeof-venv/lib/libnvmeof.so.0"
if [ "$got" = "$want" ]; then ok "the package and the library it loads from the environment: $version"
else bad "the package and the library it loads from the environment" "got:  $got" "want: $want"; fi
make -s --no-print-directory build/out/nvmeof.pc > /dev/null 2>&1
tally "python-venv"
