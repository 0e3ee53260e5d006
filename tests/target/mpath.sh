#!/bin/bash
# Several paths to one namespace (issue 23) in the guest: the library's
# paths, ANA and failover (target_mpath), the tool's ana-log against
# nvme-cli's, and the kernel host's native multipath reading back what we
# wrote through the same two ports.
source "$(dirname "$0")/lib.sh"
B=${NVMEOF_BUILD:-build/out}
T=$B/nvmeof
P1=(-a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_MPORT" --nqn="$NVMEOF_TB_NQN_M")

t_library_paths_ana_failover() {
  "$B/tests/target_mpath"
}

t_ana_log_agrees_with_nvme_cli() {
  tb ana 2 non-optimized
  "$T" ana-log "${P1[@]}" -o json > "$SCRATCH/ours.json" || { tb ana 2 optimized; fail "ana-log failed"; }
  "$T" ana-log "${P1[@]}" > "$SCRATCH/ours.txt"
  timeout 30 nvme connect -t rdma -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_MPORT" -n "$NVMEOF_TB_NQN_M" >&2
  local dev; dev=$(kdev_find "$NVMEOF_TB_NQN_M" 1) || { tb ana 2 optimized; tb kdisconnect "$NVMEOF_TB_NQN_M"; fail "no kernel device"; }
  local ctrl=/dev/$(ls /sys/class/nvme-subsystem/*/ | grep -m1 -E '^nvme[0-9]+$')
  for c in /sys/class/nvme-subsystem/*; do
    [ "$(cat $c/subsysnqn)" = "$NVMEOF_TB_NQN_M" ] && ctrl=/dev/$(ls "$c" | grep -m1 -E '^nvme[0-9]+$')
  done
  nvme ana-log "$ctrl" -o json > "$SCRATCH/cli.json" 2>/dev/null
  tb kdisconnect "$NVMEOF_TB_NQN_M"
  tb ana 2 optimized
  cat "$SCRATCH/ours.txt"
  python3 - "$SCRATCH/ours.json" "$SCRATCH/cli.json" <<'PY' || fail "ana-log differs from nvme-cli's"
import json, sys
o, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
key = "ANA DESC LIST "
assert o["ngrps"] == t["ngrps"], (o["ngrps"], t["ngrps"])
def groups(d): return {g["grpid"]: g for g in d[key]}
og, tg = groups(o), groups(t)
assert set(og) == set(tg), (sorted(og), sorted(tg))
for gid, g in og.items():
    for f in ("nnsids", "state"):
        assert g[f] == tg[gid][f], (gid, f, g[f], tg[gid][f])
    assert [n["nsid"] for n in g["NSIDS"]] == [n["nsid"] for n in tg[gid]["NSIDS"]]
assert og[2]["state"] == "non-optimized" and og[2]["NSIDS"] == [{"nsid": 1}], og[2]
print("    %d groups agree with nvme-cli (group 2 non-optimized, NSID 1)" % len(og))
PY
}

t_kernel_multipath_reads_what_we_wrote() {
  head -c $((512 * 2048)) /dev/urandom > "$SCRATCH/in"
  "$T" write "${P1[@]}" --namespace-id=1 --start-block=4096 --data="$SCRATCH/in" || fail "write failed"
  timeout 30 nvme connect -t rdma -a "$NVMEOF_TB_ADDR" -s "$NVMEOF_TB_MPORT" -n "$NVMEOF_TB_NQN_M" >&2
  timeout 30 nvme connect -t rdma -a "$NVMEOF_TB_ADDR2" -s "$NVMEOF_TB_MPORT" -n "$NVMEOF_TB_NQN_M" >&2
  local dev n; dev=$(kdev_find "$NVMEOF_TB_NQN_M" 1) || { tb kdisconnect "$NVMEOF_TB_NQN_M"; fail "no kernel device"; }
  for c in /sys/class/nvme-subsystem/*; do
    [ "$(cat $c/subsysnqn)" = "$NVMEOF_TB_NQN_M" ] && n=$(ls "$c" | grep -cE '^nvme[0-9]+$')
  done
  dd if="$dev" bs=512 skip=4096 count=2048 iflag=direct of="$SCRATCH/out" status=none
  tb kdisconnect "$NVMEOF_TB_NQN_M"
  echo "    kernel: $dev over $n controllers"
  [ "$n" = 2 ] || fail "the kernel host has $n controllers of subsystem M, not 2"
  cmp "$SCRATCH/in" "$SCRATCH/out" || fail "the kernel's multipath device reads other data"
}

source "$(dirname "$0")/../../jobs/kdev.sh"
run_tests "$@"
