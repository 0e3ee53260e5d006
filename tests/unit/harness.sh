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

# Many tests that end at once: none is a TIMEOUT, and nothing of their
# limits' timers outlives the suite holding its output open (a reader of
# the output, as tests/suite's tee is, waits for its end). Before, a test's
# timer could miss its stop when the test ended as the timer started: the
# test counted as a TIMEOUT after the limit's 20 s, and a sleep held the
# pipe for 20 s more.
cat > "$tmp/quick.sh" <<EOF
source "$PWD/tests/target/lib.sh"
TEST_LIMIT=20
for i in \$(seq 1 60); do eval "t_quick_\$i() { :; }"; done
run_tests
EOF
rc=0
out=$(env -u NVMEOF_TB_RUN timeout 15 bash "$tmp/quick.sh" 2>&1 | cat) || rc=$?
grep -q '^quick: 60 passed, 0 failed, 0 skipped$' <<< "$out" && ! grep -q TIMEOUT <<< "$out" &&
  ok "sixty tests that end at once pass, and the suite's output ends with it" ||
  bad "sixty tests that end at once pass, and the suite's output ends with it" "exit $rc: $(tail -3 <<< "$out")"

# The real-target C suites (tests/unit/check.h with check_limit_each_test):
# each test in a child of its own, with a limit (NVMEOF_TEST_LIMIT). A test
# blocked in the kernel that ignores TERM, with a child of its own, is ended
# with that child and named as TIMEOUT; a crash fails its test alone; the
# suite goes on and its closing line counts both as failures.
cat > "$tmp/csuite.c" <<EOF
#include "check.h"
TEST(a_blocks_in_the_kernel)
{
	pid_t c = fork();
	if (c == 0) { pause(); _exit(0); }
	FILE *f = fopen("$tmp/cchild", "w");
	fprintf(f, "%d %d\\n", (int)getpid(), (int)c);
	fclose(f);
	signal(SIGTERM, SIG_IGN);
	int p[2];
	char b;
	CHECK(pipe(p) == 0);
	CHECK(read(p[0], &b, 1) == 1); /* no writer will come */
}
TEST(b_runs_after_the_hang) { CHECK(1); }
TEST(c_crashes) { raise(SIGSEGV); }
TEST(d_fails) { CHECK(0); }
TEST(e_skips) { SKIP("nothing to test here"); }
static void after_kill(void) /* counts the calls */
{
	FILE *f = fopen("$tmp/after", "a");
	fputs("x\\n", f);
	fclose(f);
}
int main(void)
{
	static const struct test_case all[] = {T(a_blocks_in_the_kernel), T(b_runs_after_the_hang), T(c_crashes),
					       T(d_fails), T(e_skips)};
	check_limit_each_test();
	check_after_kill = after_kill;
	return run_tests("csuite", all, 5);
}
EOF
rc=0
if ${CC:-cc} -D_GNU_SOURCE -std=c11 -Wall -Wextra -Werror -Itests/unit -o "$tmp/csuite" "$tmp/csuite.c" 2> "$tmp/cc.out"; then
  # 60 s: far beyond the 3 s limit and the 10 s a killed test is given to go
  out=$(env -u NVMEOF_TB_RUN NVMEOF_TEST_LIMIT=3 timeout 60 "$tmp/csuite" 2>&1) || rc=$?
else
  out=$(cat "$tmp/cc.out") rc=compile
fi
echo "$out" | sed 's/^/    | /; s/\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed/\1 passed; \2 failed/'
read -r cp cc 2> /dev/null < "$tmp/cchild" || cp="" cc=""
[ "$rc" = 1 ] && grep -q '^TIMEOUT a_blocks_in_the_kernel (' <<< "$out" &&
  grep -q 'TIMEOUT: a_blocks_in_the_kernel ran past its limit of 3s' <<< "$out" &&
  [ -n "$cp" ] && gone "$cp" && gone "$cc" &&
  ok "a C suite's test blocked in the kernel is ended at its limit, with its child, and named" ||
  { [ -n "$cc" ] && kill -KILL "$cc" "$cp" 2> /dev/null
    bad "a C suite's test blocked in the kernel is ended at its limit, with its child, and named" "exit $rc"; }
grep -q '^ok     b_runs_after_the_hang (' <<< "$out" && grep -q '^FAILED c_crashes (' <<< "$out" &&
  grep -q 'killed by signal 11' <<< "$out" && grep -q '^FAILED d_fails (' <<< "$out" && grep -q '^skip   e_skips (' <<< "$out" &&
  grep -q '^csuite: 1 passed, 3 failed, 1 skipped$' <<< "$out" &&
  ok "a C suite goes on after a hang and a crash, and counts them as failures" ||
  bad "a C suite goes on after a hang and a crash, and counts them as failures"
# the suite's restore ran after the hang and the crash (their own cleanup
# did not run), not after a test that ended by itself
[ "$(grep -c x "$tmp/after" 2> /dev/null)" = 2 ] && ok "a C suite's restore runs after a test ended or crashed, only then" ||
  bad "a C suite's restore runs after a test ended or crashed, only then" "ran $(grep -c x "$tmp/after" 2> /dev/null) times"
for s in core disc mpath gpu passthru; do
  grep -q '^	check_limit_each_test();' "tests/target/${s}_test.c" ||
    bad "target_$s runs each test with a limit of its own" "its main() does not call check_limit_each_test()"
  [ $s = gpu ] || grep -q '^	check_after_kill = tb_restore_target;' "tests/target/${s}_test.c" ||
    bad "target_$s restores the target after a test ended at its limit" "no check_after_kill = tb_restore_target"
done

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
# the C suites' --except (tests/unit/check.h) the same, in a unit suite
cb=build/out/tests/unit_connretry
if [ -x "$cb" ]; then
  all=$("$cb" 2>&1 | awk '/^ok /{ print $2 }')
  first=$(head -1 <<< "$all") second=$(sed -n 2p <<< "$all")
  out=$("$cb" --except "$first" "$second" 2>&1); rc=$?
  [ "$rc" = 0 ] && [ "$(grep -c '^ok ' <<< "$out")" = $(($(wc -l <<< "$all") - 2)) ] &&
    ! grep -qE "^ok +($first|$second)$" <<< "$out" &&
    ok "a C suite's --except runs every test but those named" ||
    bad "a C suite's --except runs every test but those named" "exit $rc: $out"
  rc=0; out=$("$cb" --except no_such_test 2>&1) || rc=$?
  [ "$rc" = 2 ] && grep -q -- '--except: no test no_such_test' <<< "$out" &&
    ok "a C suite's --except with a name that is no test fails" ||
    bad "a C suite's --except with a name that is no test fails" "exit $rc: $out"
else bad "a C suite's --except" "no $cb: make first"; fi

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

# A suite that runs another inside one of its tests: the inner suite's
# closing line comes first; each test is counted once, as the outer suite's,
# and one failure inside is one failure.
sum=$tmp/nested.tsv
env -u NVMEOF_TB_RUN NVMEOF_SUMMARY="$sum" tests/suite nested 60 bash -c \
  'echo "inner: 26 passed, 1 failed, 0 skipped"; echo "FAILED t_inner"; echo "outer: 18 passed, 1 failed, 0 skipped"; exit 1' \
  > /dev/null 2>&1
grep -q '^suite nested [0-9]* 60 18 1 0 1$' "$sum" && ok "a nested suite's tests are counted once, as the outer suite's" ||
  bad "a nested suite's tests are counted once, as the outer suite's" "$(cat "$sum")"

# make unit: a stage that fails hides none after it; each runs and reports
# (a stand-in for tests/suite records the stages; every one fails).
printf '#!/bin/bash\necho "$1" >> %q\nexit 1\n' "$tmp/stages" > "$tmp/fakesuite"
chmod +x "$tmp/fakesuite"
rc=0
env -u MAKEFLAGS -u MAKELEVEL timeout 120 make -s unit SUITE="$tmp/fakesuite" UNIT_TESTS=/bin/false > "$tmp/make.log" 2>&1 || rc=$?
want="out/false out/selftest-double out/layers.sh out/exports.sh out/secrets.sh out/engine_opts.sh out/fio-version.sh
  out/list-rdma.sh out/version.sh out/docs.sh out/jobs.sh bench-tcp-native.sh out/tool.sh install.sh harness.sh python-venv.sh python-unit"
missing=$(for w in $want; do grep -qx -- "$w" "$tmp/stages" 2> /dev/null || echo "$w"; done)
[ "$rc" != 0 ] && [ -z "$missing" ] && ok "make unit runs every stage when each fails, and fails" ||
  bad "make unit runs every stage when each fails, and fails" "exit $rc; not run:" $missing "$(tail -3 "$tmp/make.log")"

# A whole-suite skip (exit 77) inside the test bed fails unless tests/skips
# declares it by name; outside the bed it is a skip.
sum=$tmp/skips.tsv
rc1=0 rc2=0 rc3=0
NVMEOF_TB_RUN=1 NVMEOF_SUMMARY="$sum" tests/suite no-such-suite 60 bash -c 'echo "skipped: why"; exit 77' \
  > /dev/null 2>&1 || rc1=$?
NVMEOF_TB_RUN=1 NVMEOF_SUMMARY="$sum" tests/suite spdk.sh 60 bash -c 'echo "skipped: why"; exit 77' \
  > "$tmp/declared" 2>&1 || rc2=$?
env -u NVMEOF_TB_RUN NVMEOF_SUMMARY="$sum" tests/suite no-such-suite-host 60 bash -c 'exit 77' > /dev/null 2>&1 || rc3=$?
[ "$rc1" = 1 ] && grep -q '^suite no-such-suite [0-9]* 60 0 1 0 1$' "$sum" &&
  ok "a whole-suite skip inside the test bed that tests/skips does not declare fails" ||
  bad "a whole-suite skip inside the test bed that tests/skips does not declare fails" "exit $rc1: $(cat "$sum")"
[ "$rc2" = 0 ] && grep -q '^suite spdk.sh [0-9]* 60 0 0 1 0$' "$sum" && grep -q 'as tests/skips allows: SPDK' "$tmp/declared" &&
  ok "a declared whole-suite skip inside the test bed is a skip, with its reason" ||
  bad "a declared whole-suite skip inside the test bed is a skip, with its reason" "exit $rc2: $(cat "$sum")"
[ "$rc3" = 0 ] && grep -q '^suite no-such-suite-host [0-9]* 60 0 0 1 0$' "$sum" &&
  ok "a whole-suite skip outside the test bed is a skip" || bad "a whole-suite skip outside the test bed is a skip" "exit $rc3"
rc=0
sout=$(tests/summary "$sum" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -q 'spdk.sh .* SKIPPED' <<< "$sout" && ok "the summary fails the run and marks the skipped suites" ||
  bad "the summary fails the run and marks the skipped suites" "exit $rc" "$sout"
# every name tests/skips declares is a suite some runner names
for n in $(awk '!/^#/ && NF { print $1 }' tests/skips); do
  grep -rqF -- "$n" tests/target/run-all.sh tests/target/run-612.sh tests/target/run-placement.sh Makefile ||
    bad "tests/skips: $n is a suite that runs" "no runner names it"
done

# The SPDK suites find SPDK in one place (tests/target/spdk-dir.sh): they skip
# only where no ../shared is beside the checkout; a ../shared without the
# target, or an NVMEOF_SPDK without it, is a failure.
mkdir -p "$tmp/co/repo" "$tmp/co2/repo" "$tmp/co2/shared" "$tmp/co/nospdk"
spdk_rc() { (cd "$1" && source "$OLDPWD/tests/target/spdk-dir.sh" && spdk_dir t > /dev/null); echo $?; }
r1=$(unset NVMEOF_SPDK; spdk_rc "$tmp/co/repo") r2=$(unset NVMEOF_SPDK; spdk_rc "$tmp/co2/repo")
r3=$(NVMEOF_SPDK=$tmp/co/nospdk spdk_rc "$tmp/co/repo")
[ "$r1" = 77 ] && [ "$r2" = 1 ] && [ "$r3" = 1 ] &&
  ok "SPDK's suites skip only without ../shared; a ../shared or NVMEOF_SPDK without the target fails" ||
  bad "SPDK's suites skip only without ../shared; a ../shared or NVMEOF_SPDK without the target fails" \
    "no ../shared: $r1, ../shared without it: $r2, NVMEOF_SPDK without it: $r3"
for f in spdk.sh passthru-spdk.sh auth_spdk.sh; do
  grep -q '^spdk_dir ' "tests/target/$f" && ! grep -q 'exit 77' "tests/target/$f" ||
    bad "tests/target/$f finds SPDK through spdk-dir.sh alone"
done

# fio's releases (tests/target/fio-versions.sh, engine/build-fio-release):
# the suite skips only without the archives' folder; with it, a release not
# built fails; an archive that does not match its checksum is not built.
rc1=0 rc2=0 rc3=0
NVMEOF_FIO_RELEASES=$tmp/no-such-folder bash tests/target/fio-versions.sh > /dev/null 2>&1 || rc1=$?
mkdir -p "$tmp/rel"
NVMEOF_FIO_RELEASES=$tmp/rel bash tests/target/fio-versions.sh 9.99 > "$tmp/rel.out" 2>&1 || rc2=$?
echo "not fio" > "$tmp/rel/fio-9.99.tar.xz"
echo "0000000000000000000000000000000000000000000000000000000000000000  fio-9.99.tar.xz" > "$tmp/rel/SHA256SUMS"
NVMEOF_FIO_RELEASES=$tmp/rel engine/build-fio-release 9.99 "$tmp/fio-9.99" > "$tmp/bfr.out" 2>&1 || rc3=$?
[ "$rc1" = 77 ] && [ "$rc2" = 1 ] && grep -q '^FAILED fio 9.99' "$tmp/rel.out" &&
  ok "fio-versions.sh skips only without the archives; a release not built fails" ||
  bad "fio-versions.sh skips only without the archives; a release not built fails" "no folder: exit $rc1; not built: exit $rc2"
[ "$rc3" = 1 ] && grep -q 'does not match SHA256SUMS' "$tmp/bfr.out" && [ ! -e "$tmp/fio-9.99" ] &&
  ok "build-fio-release refuses an archive that does not match its checksum" ||
  bad "build-fio-release refuses an archive that does not match its checksum" "exit $rc3: $(cat "$tmp/bfr.out")"

# wait_connected fails when the job never connected: it ended first, or it
# did not connect within its limit; it returns 0 once the job connected
# and its I/O is under way.
: > "$tmp/noconn.log"
sleep 0.1 & dead=$!; wait $dead
rc=0
(source tests/target/lib.sh; io_pkts() { echo 0; }; wait_connected "$tmp/noconn.log" $dead) > "$tmp/wc.out" 2>&1 || rc=$?
[ "$rc" != 0 ] && ok "wait_connected fails when the job ended without connecting" ||
  bad "wait_connected fails when the job ended without connecting" "exit $rc: $(cat "$tmp/wc.out")"
echo "nvmeof: job x: controller CNTLID 1, I/O queue 1," > "$tmp/conn.log"
echo 0 > "$tmp/pkts"
rc=0
(source tests/target/lib.sh
  io_pkts() { local v=$(($(cat "$tmp/pkts") + 600)); echo $v > "$tmp/pkts"; echo $v; }
  timeout 20 bash -c "$(declare -f wait_connected io_pkts); tmp=$tmp; wait_connected $tmp/conn.log $$") > /dev/null 2>&1 || rc=$?
[ "$rc" = 0 ] && ok "wait_connected returns 0 once the job connected and its I/O flows" ||
  bad "wait_connected returns 0 once the job connected and its I/O flows" "exit $rc"

# Leaks are checked in every sanitized fio run of the engine: a target suite
# that turns leak detection off for itself (the preload reaches every
# command) turns it back on, with lsan-fio.supp, in each run of fio with
# our engine (FIO_ENV, or auth.sh's prefio).
for f in $(grep -l 'detect_leaks=0' tests/target/*.sh); do
  off=$(grep -nE '(fio|"\$FIO") .*--ioengine=external|^ours\(\)' "$f" | grep -v 'FIO_ENV\|prefio\|^[0-9]*: *#')
  [ -z "$off" ] && grep -q 'detect_leaks=1' "$f" && grep -q 'lsan-fio.supp' "$f" ||
    bad "$f checks leaks in its sanitized fio runs" "without leak detection:" "$off"
done
ok "every suite that turns leak detection off turns it on for fio's runs of the engine"

# make test stopped by a signal (CI's limit on the whole run) still prints
# the summary of what finished, the stop counted as a failure, and ends the
# stage that was running (tests/stages).
sum=$tmp/stages.tsv
NVMEOF_SUMMARY=$sum timeout -k 5 60 tests/stages "$sum" "tests/suite quick 60 true" \
  "echo \$\$ > $tmp/stage2; touch $tmp/stage2.go; sleep 300" > "$tmp/stages.out" 2>&1 &
spid=$!
for i in $(seq 100); do [ -e "$tmp/stage2.go" ] && break; sleep 0.1; done
kill -TERM $spid 2> /dev/null
rc=0; wait $spid || rc=$?
s2=$(cat "$tmp/stage2" 2> /dev/null)
[ "$rc" = 143 ] && grep -q '^  quick ' "$tmp/stages.out" && grep -q 'stopped-by-SIGTERM .* 1 failed' "$tmp/stages.out" &&
  grep -q '^total: 1 passed, 1 failed' "$tmp/stages.out" && [ -n "$s2" ] && gone "$s2" &&
  ok "make test stopped by a signal prints the summary of what finished, and ends the running stage" ||
  { [ -n "$s2" ] && kill "$s2" 2> /dev/null
    bad "make test stopped by a signal prints the summary of what finished, and ends the running stage" \
      "exit $rc, stage 2 '$s2'" "$(tail -5 "$tmp/stages.out")"; }

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

# python.sh-tcp runs the Python tests that -k names (run-all.sh): each word
# there must name a test, else a renamed test drops out of the TCP run
# without a word.
k=$(sed -n 's/.*python\.sh.* -k "not gpu and (\(.*\))".*/\1/p; /python\.sh-tcp/{n; s/.*-k "not gpu and (\(.*\))".*/\1/p}' \
  tests/target/run-all.sh | head -1)
missing=""
for w in ${k// or / }; do
  grep -qE "^(async )?def test_[a-z0-9_]*$w" tests/python/target/*.py || missing+=" $w"
done
[ -n "$k" ] && [ -z "$missing" ] && ok "every name in python.sh-tcp's -k list is a Python test's" ||
  bad "every name in python.sh-tcp's -k list is a Python test's" "list '$k'; no test:$missing"


# tests/testbed/run boots again, once, a guest whose kernel died before the
# test bed's init ran (nothing of ours ran), and reports the command's
# status; a guest that dies so twice, or after the init, is not retried.
# A stand-in for QEMU plays the guest: it dies in early boot the first N
# times, then says the init is up and reports the status through the run
# folder as the init does (tbrun= on its kernel command line).
fq=$tmp/fakeqemu
mkdir -p "$fq/bin" "$fq/state/kernel"
echo 6.1.0-test > "$fq/state/kernel/version"
echo kernel > "$fq/state/kernel/vmlinux"
echo initrd > "$fq/state/initramfs.cpio.gz"
cat > "$fq/bin/qemu-system-x86_64" <<'EOF2'
#!/bin/bash
n=$(cat "$FQ_COUNT" 2> /dev/null || echo 0); echo $((n + 1)) > "$FQ_COUNT"
if [ "$n" -lt "$FQ_DIE" ]; then
  echo "[    1.55] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI"
  echo "[    1.56] Kernel panic - not syncing: Fatal exception in interrupt"
  exit 0
fi
run=$(sed -n 's/.* tbrun=\([^ ]*\) .*/\1/p' <<< "$*")
echo "tb-init: guest up at 0.1s"
[ "$FQ_AFTER_INIT" = 1 ] && { echo "[    9.0] Kernel panic - not syncing: late"; exit 0; }
echo 7 > "$run/rc"
EOF2
chmod +x "$fq/bin/qemu-system-x86_64"
# Its boot rows go to a summary of its own: make test's (NVMEOF_SUMMARY)
# would count these stand-in boots as the run's own, failed.
tbrun() { # DIE AFTER_INIT -> the run's exit status; its stderr in $fq/err
  rm -f "$fq/count" "$fq/summary"
  NVMEOF_SUMMARY=$fq/summary FQ_COUNT=$fq/count FQ_DIE=$1 FQ_AFTER_INIT=$2 PATH=$fq/bin:$PATH NVMEOF_TB_STATE=$fq/state \
    NVMEOF_TB_LOCK=$fq/lock NVMEOF_TB_TIMEOUT=60 timeout 120 tests/testbed/run --no-target true > /dev/null 2> "$fq/err"
}
rc=0; tbrun 1 0 || rc=$?
[ "$rc" = 7 ] && [ "$(cat "$fq/count")" = 2 ] && grep -q 'died before the test bed.s init ran.*booting again' "$fq/err" &&
  grep -q 'Oops: int3' "$fq/err" && ok "a guest that died in early boot is booted again, once, saying so" ||
  bad "a guest that died in early boot is booted again, once, saying so" "exit $rc, $(cat "$fq/count") boot(s): $(tail -3 "$fq/err")"
rc=0; tbrun 2 0 || rc=$?
[ "$rc" = 125 ] && [ "$(cat "$fq/count")" = 2 ] && grep -q '^boot guest [0-9]* 60 125$' "$fq/summary" &&
  ok "dying so twice fails the boot (125), and the summary it was given says so" ||
  bad "dying so twice fails the boot (125), and the summary it was given says so" \
    "exit $rc, $(cat "$fq/count") boot(s), summary: $(cat "$fq/summary" 2> /dev/null)"
rc=0; tbrun 0 1 || rc=$?
[ "$rc" = 125 ] && [ "$(cat "$fq/count")" = 1 ] && ok "a guest that died after the init ran is not booted again" ||
  bad "a guest that died after the init ran is not booted again" "exit $rc, $(cat "$fq/count") boot(s)"

# Every test of every real-target suite runs in some boot of make test: the
# suites run-all.sh, run-placement.sh and run-612.sh (with the Makefile's
# lists) run, printed by NVMEOF_TB_DRY, each with the names it selects (all;
# all --except some; or those named), against each shell suite's t_
# functions and each C suite's table. Each boot leaves out what another
# runs (run-all.sh's rule); this finds a test left out of all of them, and a
# name in a list that is no test.
l612=$(make -s --no-print-directory --eval='print-612: ; @echo "$(TESTS_612_CORE)|$(TESTS_612_ENGINE)"' print-612)
{ NVMEOF_TB_DRY=1 bash tests/target/run-all.sh all
  NVMEOF_TB_DRY=1 bash tests/target/run-placement.sh
  NVMEOF_TB_DRY=1 bash tests/target/run-612.sh "${l612%|*}" "${l612#*|}"; } > "$tmp/boots" 2>&1
for f in tests/target/*.sh; do # suite, then each test it has
  n=$(sed -n 's/^\(t_[a-z0-9_]*\)() *{.*/\1/p' "$f")
  [ -z "$n" ] || echo "$(basename "$f")" $n
done > "$tmp/suites"
for f in tests/target/*_test.c; do
  b=$(basename "$f" _test.c)
  echo "target_$b" $(sed -n '/^int main/,$p' "$f" | grep -o '\bT([a-z0-9_]*)' | sed 's/^T(\(.*\))$/\1/')
done >> "$tmp/suites"
# the tests each line selects, one "SUITE TEST" a line; "?" for a name that is no test
awk 'NR == FNR { for (i = 2; i <= NF; i++) has[$1, $i] = 1; all[$1] = $0; next }
  /^suite / { s = ""
    for (i = 3; i <= NF; i++) {
      if ($i ~ /^tests\/target\/[a-z0-9_-]+\.sh$/) { s = $i; sub(/.*\//, "", s); break }
      if ($i ~ /\/tests\/target_[a-z]+$/) { s = $i; sub(/.*\//, "", s); break }
    }
    if (s == "" || !(s in all)) next
    if (s == "target_gpu" && $(i + 1) == "no-cuda") next
    # faults.sh alone leaves one test out by default (faults.sh-link-cut runs it)
    delete ex; if (i == NF && s == "faults.sh") ex["t_link_cut_during_io"] = 1
    if (i == NF || $(i + 1) == "--except") {
      for (j = i + 2; j <= NF; j++) { if (!has[s, $j]) print "?", s, $j; ex[$j] = 1 }
      n = split(all[s], t, " "); for (j = 2; j <= n; j++) if (!(t[j] in ex)) print s, t[j]
    } else for (j = i + 1; j <= NF; j++) print (has[s, $j] ? "" : "? ") s, $j
  }' "$tmp/suites" "$tmp/boots" | sort -u > "$tmp/selected"
lost=$(awk '{ for (i = 2; i <= NF; i++) print $1, $i }' "$tmp/suites" | sort -u | comm -23 - "$tmp/selected")
typos=$(grep '^? ' "$tmp/selected")
[ "$(wc -l < "$tmp/suites")" -ge 15 ] && [ -z "$lost" ] && [ -z "$typos" ] &&
  ok "every test of the real-target suites runs in some boot of make test, and every name listed is a test" ||
  bad "every test of the real-target suites runs in some boot of make test, and every name listed is a test" \
    "run in no boot: ${lost:-none}; no such test: ${typos:-none}; $(grep -v '^suite ' "$tmp/boots" | head -3)"

# The 6.12 bed's tlshd is built from a release archive into the state folder
# make names relatively (build/testbed612): the build runs in a directory of
# its own, and the binary must still land under the caller's folder. A stand-in
# archive whose build makes a script, and no packages to install.
mkdir -p "$tmp/ku/ktls-utils-0/src/tlshd"
printf '#!/bin/sh\n' > "$tmp/ku/ktls-utils-0/autogen.sh"
cat > "$tmp/ku/ktls-utils-0/configure" << 'STUB'
#!/bin/sh
printf 'all:\n\tprintf "#!/bin/sh\\n" > src/tlshd/tlshd\n' > Makefile
STUB
chmod +x "$tmp/ku/ktls-utils-0/autogen.sh" "$tmp/ku/ktls-utils-0/configure"
tar -cJf "$tmp/ku.tar.xz" -C "$tmp/ku" ktls-utils-0
rel=build/harness-tlshd-$$
(NVMEOF_KTLS_UTILS="$tmp/ku.tar.xz" NVMEOF_TLSHD_PKGS= tests/testbed/build-tlshd "$rel") > "$tmp/tlshd.out" 2>&1
[ -f "$rel/tlshd/tlshd" ] && ok "tlshd built for a state folder named relatively lands in that folder" ||
  bad "tlshd built for a state folder named relatively lands in that folder" "$(tail -3 "$tmp/tlshd.out")"
rm -rf "$rel"

# Every service port of the bed's target is its own: two suites' ports on one
# number meet only when both are up (the TLS port on the zoned subsystem's).
dups=$(sed -n 's/^export \(NVMEOF_TB_[A-Z0-9_]*PORT\)=\([0-9]*\).*/\2 \1/p' tests/testbed/guest/target-env.sh |
  sort -n | awk '$1 == last { print lastname, "and", $2, "on", $1 } { last = $1; lastname = $2 }')
n=$(grep -c '^export NVMEOF_TB_[A-Z0-9_]*PORT=' tests/testbed/guest/target-env.sh)
[ "$n" -ge 4 ] && [ -z "$dups" ] && ok "the test bed's $n target ports are distinct" ||
  bad "the test bed's target ports are distinct" "${dups:-only $n found}"

tally harness
