#!/bin/sh
# ours against ISA-L's CRC32C on one CPU (needs Debian's libisal-dev; not part of make or make test)
cd "$(dirname "$0")/../.." && mkdir -p build && cc -O2 -Wall -Wextra -Werror -Icore -o build/crc32c-bench bench/investigations/crc32c.c core/tcp_crc32c.c -lisal && exec taskset -c "${CPU:-0}" build/crc32c-bench
