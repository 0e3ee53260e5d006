#!/bin/bash
# tests/unit/harness.sh: the real-target suites' harness (tests/target/lib.sh)
# checked on itself, without a target: a test that hangs is ended at its own
# limit with everything it started and named, and the suite goes on; set -e
# binds inside a test; a skip is counted as one; the suite's closing line;
# and a suite killed at its own limit (tests/suite) takes the running test's
# processes with it, those in a process group of their own included; and
# the real-target C suites fail, test by test, where no target answers.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/tally.sh
tmp=$(mktemp -d /tmp/nvmeof-harness.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
gone() { # PID: no such process, or a zombie
  local s
  read -r s 2> /dev/null < "/proc/$1/stat" || return 0
  s=${s##*) }
  [ "${s%% *}" = Z ]
}

# A hanging test, with a child and a grandchild that would outlive it, then
# tests after it; the limit 5 s, every test's (on a loaded machine 2 s once
# ended the test after the hang, a bare `true`, before it had run).
cat > "$tmp/suite.sh" <<EOF
source "$PWD/tests/target/lib.sh"
TEST_LIMIT=5
t_a_hangs() {
  sleep 300 & echo \$! > "$tmp/child"
  bash -c 'sleep 300 & echo \$! > "$tmp/grandchild"; wait' &
  wait
}
t_b_runs_after_the_hang() { true; }
t_c_unchecked_failure() { false; echo "an unchecked failure did not end the test"; }
t_d_skips() { skip "nothing to test here"; }
run_tests
EOF
rc=0
# 60 s: far beyond the hang's 5 s limit and its 5 s grace, and far short of
# the 300 s the hang would take if nothing ended it
out=$(env -u NVMEOF_TB_RUN timeout 60 bash "$tmp/suite.sh" 2>&1) || rc=$?
# shown for the reader, its closing line reworded: tests/suite counts every
# "N passed, N failed" line of this script's output as this suite's own
echo "$out" | sed 's/^/    | /; s/\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed/\1 passed; \2 failed/'
[ "$rc" != 0 ] && [ "$rc" != 124 ] && ok "a suite with a hanging test ends, failed (exit $rc)" ||
  bad "a suite with a hanging test ends, failed" "exit $rc"
grep -q '^TIMEOUT t_a_hangs (' <<< "$out" && grep -q 'TIMEOUT: t_a_hangs ran past its limit of 5s' <<< "$out" &&
  ok "the hanging test is named, as a timeout" || bad "the hanging test is named, as a timeout"
grep -q '^ok     t_b_runs_after_the_hang' <<< "$out" && ok "the suite goes on after the hang" ||
  bad "the suite goes on after the hang"
grep -q '^FAILED t_c_unchecked_failure' <<< "$out" && ! grep -q 'did not end the test' <<< "$out" &&
  ok "set -e binds inside a test" || bad "set -e binds inside a test"
grep -q '^skip   t_d_skips' <<< "$out" && ok "a skip is a skip" || bad "a skip is a skip"
grep -q '^suite: 1 passed, 2 failed, 1 skipped$' <<< "$out" && ok "the closing line counts a timeout as a failure" ||
  bad "the closing line counts a timeout as a failure"
c=$(cat "$tmp/child" 2> /dev/null) g=$(cat "$tmp/grandchild" 2> /dev/null)
[ -n "$c" ] && [ -n "$g" ] && gone "$c" && gone "$g" && ok "the hanging test's child and grandchild are gone" ||
  bad "the hanging test's child and grandchild are gone" "child '$c', grandchild '$g'"

# The closing summary names what failed with the lines it printed before
# its verdict: CI shows the end of a run, and the middle is cut.
cat > "$tmp/suite3.sh" <<EOF
source "$PWD/tests/target/lib.sh"
t_e_passes() { echo "a passing test's line"; }
t_f_fails() { echo "the line that says why: byte 7 is 0x00"; false; }
run_tests "\$@"
EOF
sum=$tmp/summary.tsv
env -u NVMEOF_TB_RUN NVMEOF_SUMMARY="$sum" tests/suite sample3 60 bash "$tmp/suite3.sh" > /dev/null 2>&1
# a suite with no verdict lines that dies: its last lines stand in
env -u NVMEOF_TB_RUN NVMEOF_SUMMARY="$sum" tests/suite sample4 60 bash -c 'echo "Segmentation fault"; exit 139' \
  > /dev/null 2>&1
rc=0
sout=$(tests/summary "$sum" 2>&1) || rc=$?
echo "$sout" | sed 's/^/    | /; s/\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed/\1 passed; \2 failed/'
[ "$rc" = 1 ] && grep -q -- '^--- sample3: FAILED t_f_fails$' <<< "$sout" &&
  grep -q '^  the line that says why: byte 7 is 0x00$' <<< "$sout" && ! grep -q "a passing test's line" <<< "$sout" &&
  ok "the closing summary shows a failed test's own last lines, not a passing one's" ||
  bad "the closing summary shows a failed test's own last lines, not a passing one's" "exit $rc"
grep -q -- '^--- sample4: exit 139, no test named as failed' <<< "$sout" && grep -q '^  Segmentation fault$' <<< "$sout" &&
  ok "a suite that died without naming a test shows its last lines" ||
  bad "a suite that died without naming a test shows its last lines"

# --except: every test but those named; a name that is no test is an error
out=$(env -u NVMEOF_TB_RUN bash "$tmp/suite3.sh" --except t_f_fails 2>&1)
grep -q '^ok     t_e_passes' <<< "$out" && ! grep -q 't_f_fails' <<< "$out" &&
  ok "--except runs every test but those named" || bad "--except runs every test but those named" "$out"
rc=0
out=$(env -u NVMEOF_TB_RUN bash "$tmp/suite3.sh" --except t_no_such 2>&1) || rc=$?
[ "$rc" != 0 ] && grep -q 'run_tests --except: no test t_no_such' <<< "$out" &&
  ok "--except with a name that is no test fails" || bad "--except with a name that is no test fails" "exit $rc: $out"

# The suite itself killed at its limit (as tests/suite's timeout does) while
# a test waits on a `timeout CMD`, a process group of its own.
cat > "$tmp/suite2.sh" <<EOF
source "$PWD/tests/target/lib.sh"
t_waits() { timeout 300 bash -c 'echo \$\$ > "$tmp/inner"; sleep 300'; }
run_tests
EOF
rc=0
env -u NVMEOF_TB_RUN timeout 3 bash "$tmp/suite2.sh" > /dev/null 2>&1 || rc=$?
for i in $(seq 100); do [ -s "$tmp/inner" ] && gone "$(cat "$tmp/inner")" && break; sleep 0.1; done
inner=$(cat "$tmp/inner" 2> /dev/null)
[ "$rc" = 124 ] && [ -n "$inner" ] && gone "$inner" && ok "a suite killed at its limit takes its test's processes along" ||
  { [ -n "$inner" ] && kill "$inner" 2> /dev/null; bad "a suite killed at its limit takes its test's processes along" "exit $rc, inner '$inner'"; }

# end_tree on a daemon that is not our child (SPDK's target, left running by
# its start script) returns only once it is gone, though it does not end
# at once (this one ignores TERM, so it takes the KILL): the next suite's
# target would otherwise find the cores still held.
pid=$(bash -c 'bash -c "trap \"\" TERM; while :; do sleep 0.1; done" < /dev/null > /dev/null 2>&1 & echo $!')
if [[ $pid =~ ^[0-9]+$ ]] && ! gone "$pid"; then
  (source tests/target/lib.sh; end_tree "$pid")
  gone "$pid" && ok "end_tree returns once a daemon that is not its child is gone" ||
    { kill -KILL "$pid" 2> /dev/null; bad "end_tree returns once a daemon that is not its child is gone" "pid $pid still there"; }
else
  bad "end_tree returns once a daemon that is not its child is gone" "no daemon started: '$pid'"
fi

# With no target (TCP to a port where nothing listens), each real-target C
# suite's tests fail, but for those that need none: a test that could not
# set up tested nothing. A new test that needs no target joins this list.
NO_TARGET_OK="bad_arguments nobody_listening_on_port cuda_pci_bus_id_is_the_drivers_for_that_gpu"
for s in core disc mpath gpu passthru; do
  b=build/out/tests/target_$s
  [ -x "$b" ] || { bad "target_$s fails its tests without a target" "no $b: make first"; continue; }
  out=$(source tests/testbed/guest/target-env.sh
    export NVMEOF_TB_TRTYPE=tcp NVMEOF_TB_ADDR=127.0.0.1 NVMEOF_TB_ADDR2=127.0.0.1 NVMEOF_TB_UNREACHABLE=127.0.0.1 \
      NVMEOF_TB_PORT=9 NVMEOF_TB_MPORT=9 NVMEOF_CUDA_LIB=$PWD/build/out/tests/libcuda-double.so
    env -u NVMEOF_TB_RUN timeout 120 "$b" 2>&1)
  passed=$(sed -n 's/^ok  *\([^ ]*\).*/\1/p' <<< "$out" | while read -r t; do
    [[ " $NO_TARGET_OK " == *" $t "* ]] || echo "$t"; done)
  ran=$(grep -cE '^(ok|FAILED|skip|TIMEOUT) ' <<< "$out")
  [ -z "$passed" ] && [ "$ran" -gt 0 ] && ok "target_$s fails its $ran tests without a target, but for those that need none" ||
    bad "target_$s fails its tests without a target, but for those that need none" "passed without a target: $passed" \
      "($ran tests ran)"
done

tally harness
