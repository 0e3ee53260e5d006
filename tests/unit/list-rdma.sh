#!/bin/bash
# tests/unit/list-rdma.sh [BUILD_DIR]: nvmeof list-rdma on a fake sysfs tree
# shaped like a real one: a PCI HCA behind a PCIe switch with one GPU below
# the same switch, one on the same root complex through another root port,
# one on another root complex and NUMA node; and a Soft-RoCE device (no PCI
# device, its netdev named by "parent"). JSON field by field; the normal
# output's relations. (The test bed's real rxe devices: tests/target/tool.sh.)
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/out}
source tests/tally.sh
R=$(mktemp -d)
trap 'rm -rf "$R"' EXIT

pcidev() { # path-under-devices class node
  mkdir -p "$R/devices/$1" "$R/bus/pci/devices"
  echo "$2" > "$R/devices/$1/class"; echo "$3" > "$R/devices/$1/numa_node"
  ln -s "../../../devices/$1" "$R/bus/pci/devices/$(basename "$1")"
}
SW=pci0000:00/0000:00:01.0/0000:01:00.0
pcidev "$SW/0000:02:08.0/0000:05:00.0" 0x020000 0            # the HCA
pcidev "$SW/0000:02:10.0/0000:06:00.0" 0x030200 0            # GPU, same switch
pcidev "pci0000:00/0000:00:03.0/0000:07:00.0" 0x030000 0     # GPU, another root port
pcidev "pci0000:80/0000:80:01.0/0000:81:00.0" 0x030200 1     # GPU, another root complex
pcidev "pci0000:00/0000:00:1f.0" 0x060100 0                  # not a GPU
ib() { # name port state link_layer
  mkdir -p "$R/class/infiniband/$1/ports/$2/gid_attrs/ndevs"
  echo "$3" > "$R/class/infiniband/$1/ports/$2/state"; echo "$4" > "$R/class/infiniband/$1/ports/$2/link_layer"
}
ib mlx5_0 1 "4: ACTIVE" Ethernet
echo fakenet0 > "$R/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0"
ln -s "../../../devices/$SW/0000:02:08.0/0000:05:00.0" "$R/class/infiniband/mlx5_0/device"
ib rxe0 1 "1: DOWN" Ethernet
echo fakenet1 > "$R/class/infiniband/rxe0/parent"

if "$B/nvmeof" list-rdma --sysfs="$R" -o json > "$R/out.json" 2> "$R/err"; then ok "list-rdma -o json runs"
else bad "list-rdma -o json runs" "$(cat "$R/err")"; fi
if out=$(python3 - "$R/out.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))["devices"]
assert [x["name"] for x in d] == ["mlx5_0", "rxe0"], d
m, r = d
assert (m["pci"], m["numa_node"]) == ("0000:05:00.0", 0), m
assert m["ports"] == [{"port": 1, "state": "ACTIVE", "link_layer": "Ethernet", "netdev": "fakenet0", "addresses": []}], m["ports"]
g = {x["pci"]: (x["relation"], x["where"], x["numa_node"]) for x in m["gpus"]}
assert g == {"0000:06:00.0": ("same PCIe switch", "below 0000:01:00.0", 0),
             "0000:07:00.0": ("same root complex, different root ports", "pci0000:00", 0),
             "0000:81:00.0": ("different root complexes", "", 1)}, g
assert (r["pci"], r["numa_node"]) == ("", -1), r
assert r["ports"][0]["state"] == "DOWN" and r["ports"][0]["netdev"] == "fakenet1", r
assert all(x["relation"] == "no PCIe path (software RDMA)" for x in r["gpus"]) and len(r["gpus"]) == 3, r
print("mlx5_0: 3 GPUs related; rxe0: software, parent netdev")
PY
); then ok "JSON: $out"; else bad "JSON fields" "$out"; fi
"$B/nvmeof" list-rdma --sysfs="$R" > "$R/out.txt" 2>&1
for want in "mlx5_0: 0000:05:00.0, NUMA node 0" "  port 1: ACTIVE, Ethernet, netdev fakenet0, no address" \
    "  GPU 0000:06:00.0 (NUMA node 0): same PCIe switch below 0000:01:00.0" \
    "  GPU 0000:81:00.0 (NUMA node 1): different root complexes, across NUMA nodes" \
    "rxe0: not a PCI device (software RDMA), NUMA node unknown"; do
  if grep -qxF -- "$want" "$R/out.txt"; then ok "normal output: $want"; else bad "normal output: $want" "$(cat "$R/out.txt")"; fi
done
# no RDMA stack at all: an empty list and exit 0, said in words
out=$("$B/nvmeof" list-rdma --sysfs="$R/none" 2>&1); rc=$?
[ $rc = 0 ] && grep -q "no RDMA devices" <<< "$out" && ok "no devices: said, exit 0" || bad "no devices" "exit $rc: $out"
out=$("$B/nvmeof" list-rdma -a 192.0.2.1 2>&1); rc=$?
[ $rc = 2 ] && grep -q "^nvmeof list-rdma: option .* is not one of this subcommand's" <<< "$out" && ok "a target's option refused" ||
  bad "a target's option refused" "exit $rc: $out"
tally "list-rdma"
