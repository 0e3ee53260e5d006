# Sourced by the SPDK suites (spdk.sh, passthru-spdk.sh, auth_spdk.sh): where
# SPDK's prebuilt target is, one rule for all three. NVMEOF_SPDK names its
# folder; else ../shared/spdk-target beside the checkout. Sets SPDK to an
# absolute path with bin/nvmf_tgt, start and rpc in it. The one case a suite
# skips (exit 77, saying why; tests/skips declares it) is a checkout with no
# ../shared beside it and no NVMEOF_SPDK: SPDK is not part of the project.
# A named or present folder without the target is a failure, not a skip.
spdk_dir() { # SUITE
  local d=${NVMEOF_SPDK:-}
  if [ -z "$d" ]; then
    if [ ! -d ../shared ]; then
      echo "$1: skipped: no ../shared beside the checkout, so no SPDK target (set NVMEOF_SPDK to its folder)"
      exit 77
    fi
    d=../shared/spdk-target
  fi
  local f
  for f in bin/nvmf_tgt start rpc; do
    [ -x "$d/$f" ] || { echo "$1: no SPDK target at $d: $d/$f is missing (NVMEOF_SPDK names its folder)"; exit 1; }
  done
  SPDK=$(cd "$d" && pwd)
}

# spdk_start LOG [CPU_MASK]: SPDK's nvmf_tgt in the background as this
# shell's child (SPDK_PID), huge pages reserved as SPDK's start script does,
# held before its subsystems start (--wait-for-rpc); returns once its RPC
# socket is there. spdk_config then sends the configuration from stdin in
# one run of SPDK's Python client, which starts the subsystems first and
# retries its connect until the target accepts: each start of that client
# takes seconds under emulation, and the start script spends one more only
# to ask whether the target is up.
spdk_start() {
  [ "$(cat /proc/sys/vm/nr_hugepages)" -ge 512 ] || echo 1024 > /proc/sys/vm/nr_hugepages
  mountpoint -q /dev/hugepages || { mkdir -p /dev/hugepages; mount -t hugetlbfs nodev /dev/hugepages; }
  rm -f /var/tmp/spdk.sock
  "$SPDK/bin/nvmf_tgt" -m "${2:-0x3}" --wait-for-rpc > "$1" 2>&1 &
  SPDK_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do
    [ -S /var/tmp/spdk.sock ] && return 0
    kill -0 "$SPDK_PID" 2> /dev/null || { echo "nvmf_tgt exited: $(tail -3 "$1")" >&2; return 1; }
    sleep 0.2
  done
  echo "nvmf_tgt made no RPC socket in 20 s: $(tail -3 "$1")" >&2
  return 1
}
spdk_config() { # < RPC commands, one a line
  { printf '%s\n' framework_start_init framework_wait_init; cat; } | "$SPDK/rpc" -r 50
}
