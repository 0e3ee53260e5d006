# Sourced by bash: the kernel host's block device (/dev/nvmeXnY) of a
# namespace, for INITIATOR=kernel runs. The one lookup that jobs/sweep,
# bench/ and the test bed's tb share.
#
#   kdev_find NQN NSID [TRIES]  print the block device of namespace NSID of the
#                   subsystem NQN the kernel host is connected to (the
#                   multipath head); TRIES tenths of a second for udev (50)
#   kdev_setup      set and export KDEV: as given; else namespace $NS (1) of
#                   $SUBNQN (default: the test bed's subsystem A) if the
#                   kernel host is connected to it (nvme connect); else,
#                   inside the test bed, connect it (tb kconnect) and
#                   remember to disconnect; over $TRTYPE (rdma unless TCP)
#   kdev_teardown   disconnect what kdev_setup connected, nothing else
#   kdev_region DEV NUMJOBS OFFSET_INCREMENT SIZE  fail, saying why, when the
#                   last job's region (offset_increment times its number plus
#                   size=, both in bytes with k/m/g/t) passes DEV's end: fio
#                   would end that job at its first offset there
#   kdev_check DEV NQN NSID  succeed only when DEV is the kernel host's block
#                   device of namespace NSID of subsystem NQN (a mistyped
#                   device would otherwise be a file fio creates, or a local
#                   disk it overwrites); else say what DEV is

KDEV_SYSFS=${KDEV_SYSFS:-/sys}

kdev_find() {
  local nqn=$1 nsid=$2 tries=${3:-50} sd n i
  for ((i = 0; i < tries; i++)); do
    for sd in "$KDEV_SYSFS"/class/nvme-subsystem/*; do
      [ "$(cat "$sd/subsysnqn" 2>/dev/null)" = "$nqn" ] || continue
      for n in "$sd"/nvme*n*; do
        [ -e "$n" ] || continue
        [ "$(cat "$n/nsid" 2>/dev/null)" = "$nsid" ] && [ -b "/dev/${n##*/}" ] && { echo "/dev/${n##*/}"; return 0; }
      done
    done
    [ $((i + 1)) -lt "$tries" ] && sleep 0.1
  done
  echo "kdev: no kernel block device for $nqn nsid $nsid" >&2
  return 1
}

kdev_check() {
  local dev=$1 nqn=$2 nsid=$3 b sd n
  if [ ! -e "$dev" ]; then
    echo "kdev: KDEV=$dev does not exist (fio would create a file of that name and measure it)" >&2
    return 1
  fi
  [ -b "$dev" ] || { echo "kdev: KDEV=$dev is not a block device" >&2; return 1; }
  b=$(basename "$(readlink -f "$dev")")
  for sd in "$KDEV_SYSFS"/class/nvme-subsystem/*; do
    n=$sd/$b
    if [ -f "$n/nsid" ]; then
      if [ "$(cat "$sd/subsysnqn" 2>/dev/null)" = "$nqn" ] && [ "$(cat "$n/nsid" 2>/dev/null)" = "$nsid" ]; then
        return 0
      fi
      echo "kdev: KDEV=$dev is namespace $(cat "$n/nsid" 2>/dev/null) of $(cat "$sd/subsysnqn" 2>/dev/null), not namespace $nsid of $nqn" >&2
      return 1
    fi
  done
  n=$(kdev_find "$nqn" "$nsid" 1 2>/dev/null) && n=" (that namespace is $n)" || n=" (the kernel host is not connected to it: nvme connect)"
  echo "kdev: KDEV=$dev is not an NVMe-oF namespace the kernel host is connected to, so not namespace $nsid of $nqn$n" >&2
  return 1
}

# bytes in a fio size (1024-based k/m/g/t); nothing for a percentage or other forms
kdev_bytes() {
  local v=${1,,} m=1
  v=${v%ib}; v=${v%b}
  case $v in *k) m=1024 ;; *m) m=$((1024 ** 2)) ;; *g) m=$((1024 ** 3)) ;; *t) m=$((1024 ** 4)) ;; esac
  v=${v%[kmgt]}
  [[ $v =~ ^[0-9]+$ ]] && echo $((v * m))
}

kdev_region() {
  local dev=$1 nj=$2 oi sz end b
  oi=$(kdev_bytes "$3") && sz=$(kdev_bytes "$4") || return 0
  b=$(basename "$(readlink -f "$dev")")
  end=$(($(cat "$KDEV_SYSFS/class/block/$b/size" 2>/dev/null || echo 0) * 512))
  [ "$end" -gt 0 ] || return 0
  if [ $(((nj - 1) * oi + sz)) -gt "$end" ]; then
    echo "the last of $nj jobs' regions, offset $(((nj - 1) * oi)) plus size $sz, passes the end of $dev ($end bytes): fio would end that job at its first offset past the end; lower REGION or OFFSET_INCREMENT"
    return 1
  fi
}

kdev_setup() {
  [ -z "${KDEV:-}" ] || { export KDEV; return 0; }
  local nqn=${SUBNQN:-${NVMEOF_TB_NQN_A:-}} ns=${NS:-1}
  [ -n "$nqn" ] || { echo "kdev: set KDEV=/dev/nvmeXnY, or SUBNQN of a subsystem the kernel host is connected to" >&2; return 2; }
  if KDEV=$(kdev_find "$nqn" "$ns" 1 2>/dev/null); then
    export KDEV
    return 0
  fi
  if ! command -v tb >/dev/null; then
    echo "kdev: the kernel host is not connected to $nqn: nvme connect -t rdma -a TARGET -n $nqn first, or set KDEV=/dev/nvmeXnY" >&2
    return 1
  fi
  local t=rdma
  [ "${TRTYPE:-}" != TCP ] && [ "${TRTYPE:-}" != tcp ] || t=tcp
  tb kconnect $t "$nqn" >/dev/null || return 1
  KDEV_CONNECTED=$nqn
  KDEV=$(kdev_find "$nqn" "$ns") || return 1
  export KDEV KDEV_CONNECTED
}

kdev_teardown() {
  [ -z "${KDEV_CONNECTED:-}" ] || tb kdisconnect "$KDEV_CONNECTED"
  KDEV_CONNECTED=
}
