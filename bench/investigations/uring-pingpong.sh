#!/bin/bash
# NATIVE (no test bed): would an io_uring socket path help NVMe/TCP here?
# Builds uring-pingpong.c (Debian's liburing-dev) and runs the loopback
# ping-pong, alternating the client modes (poll: non-blocking recvmsg +
# sendmsg; uring: re-armed recv + send in one ring, CQ reaped by spinning;
# ms: multishot recv into provided buffers), REPS repetitions of SECS s at
# QD 1 and 32; prints every run and the medians. Holds the test bed's lock
# so no guest boots (and busy-polls both vCPUs) during the run.
#   flock /tmp/nvmeof-testbed.lock bash bench/investigations/uring-pingpong.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-5} SECS=${SECS:-2}
out=build/bench/uring-pingpong
mkdir -p "$out"
gcc -O2 -Wall -Wextra -Werror -o "$out/uring-pingpong" bench/investigations/uring-pingpong.c -luring -lpthread
{ echo "# $(date -u '+%F %T UTC') kernel $(uname -r) commit $(git rev-parse --short HEAD) load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# mode qd round_trips p50_us p99_us cpu_us_per_rt client_cpu_pct rt_per_s syscalls_per_rt"
  for r in $(seq "$REPS"); do
    for qd in 1 32; do
      for m in poll uring ms; do "$out/uring-pingpong" "$m" "$qd" "$SECS"; done
    done
  done
  echo "# end $(date -u '+%T UTC') load: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/runs.txt"
echo "# medians of $REPS: mode qd p50_us p99_us cpu_us_per_rt rt_per_s syscalls_per_rt"
for qd in 1 32; do
  for m in poll uring ms; do
    med() { grep -v '^#' "$out/runs.txt" | awk -v m="$m" -v q="$qd" -v c="$1" '$1==m && $2==q {print $c}' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
    echo "$m $qd $(med 4) $(med 5) $(med 6) $(med 8) $(med 9)"
  done
done | tee "$out/medians.txt"
