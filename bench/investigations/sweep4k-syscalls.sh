#!/bin/bash
# IN-GUEST: the system calls and context switches per I/O of sweep4k.sh's cell
# (jobs/qp-scaling.fio, 4 KiB sequential reads, QD4 per job, one queue pair per
# job, REGION=768m OFFSET_INCREMENT=4m), the kernel host against ours with the
# default wait, alternating, REPS times: perf record -a of raw_syscalls:sys_enter
# and sched:sched_switch over each run, counted by system call and by task
# (fio's threads or the rest), per read the target's nullb0 served.
#   tests/testbed/run bash -c 'NUMJOBS=32 REPS=2 bash bench/investigations/sweep4k-syscalls.sh'
# Results in build/sweep4k/syscalls-<stamp>/ (summary.txt).
ME=sweep4k-syscalls
. "$(dirname "$0")/sweep4k-cell.sh"
for rep in $(seq "${REPS:-2}"); do
  for ini in kernel ours; do
    echo "sweep4k-syscalls: $(date -u +%T) rep $rep, $NUMJOBS jobs, $ini"
    r0=$(awk '{print $1}' "$STAT")
    perf record -q -a -e raw_syscalls:sys_enter -e sched:sched_switch -o "$OUT/perf.data" -- \
      env INITIATOR=$ini jobs/run qp-scaling.fio --output-format=json > "$OUT/$ini-r$rep.json" 2> "$OUT/$ini-r$rep.err"
    echo "rc $? reads $(($(awk '{print $1}' "$STAT") - r0))" > "$OUT/$ini-r$rep.rc"
    perf script -i "$OUT/perf.data" -F comm,event,trace 2> /dev/null | python3 -c '
import collections, re, sys
c = collections.Counter()
for l in sys.stdin:
    m = re.match(r"\s*(\S.*?)\s+(raw_syscalls:sys_enter|sched:sched_switch):\s*(.*)", l)
    if not m:
        continue
    who = "fio" if m.group(1).startswith("fio") else "other"
    if m.group(2) == "sched:sched_switch":
        c[(who, "switch")] += 1
    else:
        nr = re.match(r"NR (\d+)", m.group(3))
        c[(who, nr.group(1) if nr else "?")] += 1
for (who, k), n in c.most_common():
    print(who, k, n)
' > "$OUT/$ini-r$rep.counts"
    rm -f "$OUT/perf.data"
  done
done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import collections, glob, os, re, statistics, sys
out = sys.argv[1]
NAMES = {"0": "read", "1": "write", "7": "poll", "16": "ioctl", "24": "sched_yield", "35": "nanosleep",
         "202": "futex", "230": "clock_nanosleep", "232": "epoll_wait", "281": "epoll_pwait",
         "426": "io_uring_enter", "228": "clock_gettime", "271": "ppoll", "441": "epoll_pwait2",
         "switch": "context switches"}
per = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(os.path.join(out, "*.counts"))):
    ini = os.path.basename(f).split("-")[0]
    rc, reads = re.search(r"rc (\d+) reads (\d+)", open(f[:-7] + ".rc").read()).groups()
    if rc != "0" or not int(reads):
        print(f"{os.path.basename(f)}: exit {rc}, left out")
        continue
    c = collections.Counter()
    for l in open(f):
        who, k, n = l.split()
        c[(who, k)] += int(n)
    for key in set(c) | {k for v in per.values() for k in v}:
        per[ini][key].append(c.get(key, 0) / int(reads))
keys = sorted({k for v in per.values() for k in v}, key=lambda k: -max(statistics.median(per[i][k]) if per[i][k] else 0 for i in per))
print("| task | event | " + " | ".join(f"{i} per read" for i in sorted(per)) + " |")
print("|---|---|" + "---|" * len(per))
for who, k in keys:
    vals = [statistics.median(per[i][(who, k)]) if per[i][(who, k)] else 0 for i in sorted(per)]
    if max(vals) < 0.01:
        continue
    print(f"| {who} | {NAMES.get(k, 'NR ' + k)} | " + " | ".join(f"{v:.2f}" for v in vals) + " |")
PY
echo "sweep4k-syscalls: results in $OUT"
