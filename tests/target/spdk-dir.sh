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
