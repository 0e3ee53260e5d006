#!/bin/bash
# IN-GUEST (tests/testbed/run): the README's main command. A verify pass and
# a short random-read run with our engine against the built-in target.
set -e
cd "$(dirname "$0")"
echo "### verify pass: 64 MiB random 4 KiB writes, read back and checked with crc32c"
REGION=64m ./run verify.fio --output-format=normal
echo "### random read: 4 KiB, QD32, 5 s"
REGION=1g RUNTIME=5 RAMP=1 NUMJOBS=1 ./run iops.fio --output-format=normal
