# Counters for scripts of checks (rather than lib.sh's t_* functions):
# ok WHAT, bad WHAT DETAIL..., skip WHAT REASON, and the closing line
# "N passed, N failed, N skipped" that CI reads (tally NAME). Inside the
# test bed (NVMEOF_TB_RUN set) everything is present: a skip there fails.
pass=0 fail=0 nskip=0
ok() { echo "ok     $1"; pass=$((pass + 1)); }
bad() { echo "FAILED $1"; shift; printf '    %s\n' "$@"; fail=$((fail + 1)); }
skip() {
  if [ -n "${NVMEOF_TB_RUN:-}" ]; then
    bad "$1" "skipped inside the test bed, where everything is present: $2"
  else
    echo "skip   $1"; echo "    $2"; nskip=$((nskip + 1))
  fi
}
tally() { echo "$1: $pass passed, $fail failed, $nskip skipped"; [ "$fail" = 0 ]; }
