#!/bin/bash
# tests/unit/version.sh [BUILD_DIR]: one version, the Makefile's VERSION,
# said alike by everything that says one: the library (nvmeof_version()),
# its file name, the tool (nvmeof --version), pkg-config's nvmeof.pc, and
# the Python package (its own __version__, its metadata's source, and the
# loaded library's version as it reports it).
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/out}
PYTHON=${PYTHON:-/usr/bin/python3}
source tests/tally.sh
same() { if [ "$2" = "$version" ]; then ok "$1: $2"; else bad "$1 says '$2', the Makefile $version"; fi; }
version=$(sed -n 's/^VERSION = //p' Makefile)
[[ $version =~ ^0\.[0-9]+\.[0-9]+$ ]] || { echo "version: the Makefile's VERSION '$version' is not 0.MINOR.PATCH (soname major 0)"; exit 1; }

same "nvmeof --version" "$("$B/nvmeof" --version | sed -n 's/^nvmeof version //p')"
same "nvmeof_version()" "$("$PYTHON" -c 'import ctypes, sys
f = ctypes.CDLL(sys.argv[1]).nvmeof_version
f.restype = ctypes.c_char_p
print(f().decode())' "$B/libnvmeof.so.0")"
same "the library's file name" "$(readlink "$B/libnvmeof.so.0" | sed 's/^libnvmeof\.so\.//')"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s --no-print-directory "$B/nvmeof.pc" O="$B" PREFIX="$tmp" > /dev/null 2>&1
same "pkg-config --modversion" "$(PKG_CONFIG_PATH=$B pkg-config --modversion nvmeof 2>&1)"
py() { NVMEOF_LIB=$PWD/$B/libnvmeof.so PYTHONPATH=python PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -c "$1"; }
same "Python nvmeof.__version__" "$(py 'import nvmeof; print(nvmeof.__version__)')"
same "Python nvmeof.library_version()" "$(py 'import nvmeof; print(nvmeof.library_version())')"
# the package's metadata, what pip records: the build backend's
same "the Python package's metadata (python/_build)" "$(PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -c 'import sys
sys.path.insert(0, "python/_build")
import nvmeof_build
print(nvmeof_build._project()["version"])')"
# no document names a version that is not this one as the current one
if grep -n "libnvmeof\.so\.[0-9]*\.[0-9]*\.[0-9]" README.md docs/*.md man/* | grep -v "libnvmeof\.so\.$version" > "$tmp/stale"; then
  bad "a document names another library version" "$(cat "$tmp/stale")"
else ok "the documents' library file name carries $version"; fi
tally "version"
