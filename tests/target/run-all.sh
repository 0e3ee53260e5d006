#!/bin/bash
# IN-GUEST: every real-target suite in one boot; exits non-zero if any failed.
cd "$(dirname "$0")/../.."
rc=0
for s in tests/target/smoke.sh; do
  echo "=== $s"
  bash "$s" || rc=1
done
exit $rc
