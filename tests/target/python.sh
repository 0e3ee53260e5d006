#!/bin/bash
# IN-GUEST: the Python package (python/nvmeof) against the real target with
# pytest: the seed README's examples, cross-checks with the kernel
# initiator, I/O above MDTS, read_many, errors. Plain build only: the
# sanitized library would need the ASan runtime preloaded into python3.
#   bash tests/target/python.sh [pytest args, e.g. -k read_many]
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${NVMEOF_BUILD:-build/out}
# pytest's exit 5 (nothing collected) fails here like any other non-zero;
# no cache or bytecode is written into the tree.
exec env NVMEOF_LIB="$PWD/$B/libnvmeof.so" NVMEOF_CUDA_LIB="$PWD/$B/tests/libcuda-double.so" \
  PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest -p no:cacheprovider -v -rfE \
  tests/python/target "$@"
