/* Minimal test harness: TEST(name) functions, CHECK* macros, SKIP(reason),
 * one summary line "N passed, N failed, N skipped" that CI reads. Inside the
 * test bed (NVMEOF_TB_RUN set) everything a test needs is present: a skip
 * there counts as a failure. */
#ifndef CHECK_H
#define CHECK_H
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int check_failed_in_test, check_skipped_in_test;
/* SKIP("reason"): the test cannot run here; ends the test function (use it
 * before anything that needs cleanup). */
#define SKIP(reason)                                                                        \
	do {                                                                                \
		fprintf(stderr, "    skipped: %s\n", (reason));                                \
		check_skipped_in_test = 1;                                                  \
		return;                                                                     \
	} while (0)
#define CHECK(c)                                                                            \
	do {                                                                                \
		if (!(c)) {                                                                 \
			fprintf(stderr, "    %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); \
			check_failed_in_test = 1;                                           \
		}                                                                           \
	} while (0)
#define CHECK_EQ(a, b)                                                                      \
	do {                                                                                \
		unsigned long long va_ = (unsigned long long)(a), vb_ = (unsigned long long)(b); \
		if (va_ != vb_) {                                                           \
			fprintf(stderr, "    %s:%d: %s == 0x%llx, expected %s == 0x%llx\n", __FILE__, \
				__LINE__, #a, va_, #b, vb_);                                \
			check_failed_in_test = 1;                                           \
		}                                                                           \
	} while (0)
#define CHECK_STR(a, b)                                                                     \
	do {                                                                                \
		if (strcmp((a), (b))) {                                                     \
			fprintf(stderr, "    %s:%d: \"%s\", expected \"%s\"\n", __FILE__, __LINE__, (a), (b)); \
			check_failed_in_test = 1;                                           \
		}                                                                           \
	} while (0)
#define CHECK_MEM(a, b, n)                                                                  \
	do {                                                                                \
		const unsigned char *pa_ = (const void *)(a), *pb_ = (const void *)(b);         \
		for (size_t i_ = 0; i_ < (n); i_++)                                        \
			if (pa_[i_] != pb_[i_]) {                                           \
				fprintf(stderr, "    %s:%d: byte %zu is 0x%02x, expected 0x%02x\n", \
					__FILE__, __LINE__, i_, pa_[i_], pb_[i_]);          \
				check_failed_in_test = 1;                                   \
				break;                                                      \
			}                                                                   \
	} while (0)

/* For tests of the nvmeof API: a call that must succeed, else the test
 * fails with the library's message and jumps to its `out:` cleanup. */
#define MUST(call)                                                                       \
	do {                                                                             \
		int rc_ = (call);                                                        \
		if (rc_ < 0) {                                                           \
			fprintf(stderr, "    %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, \
				nvmeof_strerror(rc_), nvmeof_errmsg());                  \
			check_failed_in_test = 1;                                        \
			goto out;                                                        \
		}                                                                        \
	} while (0)

typedef void (*test_fn)(void);
struct test_case { const char *name; test_fn fn; };
#define TEST(name) static void name(void)
#define T(name) {#name, name}

/* A per-test limit, for the real-target suites (tests/target): each test
 * runs in a child process of its own, in a process group of its own, ended
 * with everything it started at check_test_limit seconds. A test blocked in
 * the kernel on a target that went away is then named as TIMEOUT and the
 * suite goes on, instead of the suite being killed at its own limit with
 * the tests after it unrun; a test that crashes fails alone. 0 (the unit
 * tests): every test in this process. */
static unsigned check_test_limit;
/* Run after a test so ended, or crashed: its own cleanup did not run (the
 * real-target suites put the target back as the test bed made it). */
static void (*check_after_kill)(void);

#ifdef NVMEOF_VALGRIND
#include <valgrind/valgrind.h>
#endif
/* NVMEOF_TEST_LIMIT seconds, 300 by default, as the shell and Python
 * suites'. Not under valgrind: there every test runs in this process, as
 * memcheck's leak check at each child's exit cost about 9 s a test in the
 * emulated guest (valgrind-target_core's 21 s would be 80); the suite's own
 * limit (tests/suite) bounds it. */
static inline void check_limit_each_test(void)
{
#ifdef NVMEOF_VALGRIND
	if (RUNNING_ON_VALGRIND)
		return;
#endif
	const char *v = getenv("NVMEOF_TEST_LIMIT");
	check_test_limit = v && atoi(v) > 0 ? (unsigned)atoi(v) : 300;
}

/* Waits for PID until DEADLINE (CLOCK_MONOTONIC); 1 once it is gone (its
 * status in *st), 0 at the deadline. The suite's own end (TERM, INT, HUP:
 * tests/suite's limit) ends the child's group too, then this process. */
static inline int check_wait_child(pid_t pid, const struct timespec *deadline, const sigset_t *set,
				   const sigset_t *old, int *st)
{
	for (;;) {
		if (waitpid(pid, st, WNOHANG) == pid)
			return 1;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long long left = (deadline->tv_sec - now.tv_sec) * 1000000000LL + (deadline->tv_nsec - now.tv_nsec);
		if (left <= 0)
			return 0;
		struct timespec ts = {left / 1000000000LL, left % 1000000000LL};
		int sig = sigtimedwait(set, NULL, &ts); /* SIGCHLD, a stop, or the time */
		if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
			kill(-pid, SIGKILL);
			signal(sig, SIG_DFL);
			sigprocmask(SIG_SETMASK, old, NULL);
			raise(sig);
			_exit(128 + sig);
		}
	}
}

/* T in a child; its verdict: "ok", "FAILED", "skip" or "TIMEOUT" */
static inline const char *check_run_child(const struct test_case *t)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	fflush(stdout); /* else the child prints what this process had buffered once more */
	fflush(stderr);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid_t pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "    fork: %s\n", strerror(errno));
		return "FAILED";
	}
	if (pid == 0) {
		setpgid(0, 0);
		sigprocmask(SIG_SETMASK, &old, NULL);
		check_failed_in_test = check_skipped_in_test = 0;
		t->fn();
		exit(check_failed_in_test ? 1 : check_skipped_in_test ? 77 : 0); /* exit: leak checks run */
	}
	setpgid(pid, pid); /* both sides: the group exists before either goes on */
	struct timespec end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += check_test_limit;
	int st = 0;
	const char *r;
	if (check_wait_child(pid, &end, &set, &old, &st)) {
		if (WIFEXITED(st) && WEXITSTATUS(st) <= 1)
			r = WEXITSTATUS(st) ? "FAILED" : "ok";
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
			r = "skip";
		else {
			if (WIFEXITED(st))
				fprintf(stderr, "    the test's process exited %d\n", WEXITSTATUS(st));
			else
				fprintf(stderr, "    the test's process was killed by signal %d (%s)\n", WTERMSIG(st),
					strsignal(WTERMSIG(st)));
			r = "FAILED";
		}
	} else {
		kill(-pid, SIGKILL);
		fprintf(stderr, "    TIMEOUT: %s ran past its limit of %us: ended, with everything it started\n",
			t->name, check_test_limit);
		/* a process blocked in the kernel goes when it returns from there:
		 * 10 s for that, then the suite goes on without it */
		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += 10;
		if (!check_wait_child(pid, &end, &set, &old, &st))
			fprintf(stderr, "    (its process %d is still in the kernel; left behind)\n", (int)pid);
		r = "TIMEOUT";
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (check_after_kill && (!strcmp(r, "TIMEOUT") || WIFSIGNALED(st)))
		check_after_kill();
	return r;
}

static inline int run_tests(const char *suite, const struct test_case *t, size_t n)
{
	int pass = 0, fail = 0, skip = 0;
	int in_testbed = getenv("NVMEOF_TB_RUN") != NULL;
	for (size_t i = 0; i < n; i++) {
		const char *r = NULL;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		check_failed_in_test = check_skipped_in_test = 0;
		if (check_test_limit) {
			r = check_run_child(&t[i]);
			check_failed_in_test = strcmp(r, "ok") && strcmp(r, "skip");
			check_skipped_in_test = !strcmp(r, "skip");
		} else
			t[i].fn();
		if (check_skipped_in_test && !check_failed_in_test && in_testbed) {
			fprintf(stderr, "    (a skip inside the test bed, where everything is present, fails)\n");
			check_failed_in_test = 1;
		}
		if (!r || strcmp(r, "TIMEOUT"))
			r = check_failed_in_test ? "FAILED" : check_skipped_in_test ? "skip" : "ok";
		if (check_test_limit) { /* each test's time, as the shell suites print it */
			clock_gettime(CLOCK_MONOTONIC, &t1);
			printf("%-6s %s (%.1fs)\n", r, t[i].name,
			       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
		} else
			printf("%-6s %s\n", r, t[i].name);
		if (check_failed_in_test) fail++; else if (check_skipped_in_test) skip++; else pass++;
	}
	printf("%s: %d passed, %d failed, %d skipped\n", suite, pass, fail, skip);
	return fail ? 1 : 0;
}

/* Every test, or only those named on the command line, or with --except
 * every test but those named (as lib.sh's run_tests: a build that adds
 * nothing to what a test checks leaves it out, and a new test still runs);
 * 2: an unknown name. */
static inline int run_named_tests(const char *suite, const struct test_case *all, size_t n, int argc,
				  char **argv)
{
	if (argc <= 1)
		return run_tests(suite, all, n);
	struct test_case pick[n]; /* a VLA: as many as the suite has, never a silent cap */
	size_t k = 0;
	if (!strcmp(argv[1], "--except")) {
		for (int a = 2; a < argc; a++) {
			size_t i = 0;
			while (i < n && strcmp(argv[a], all[i].name))
				i++;
			if (i == n) {
				fprintf(stderr, "--except: no test %s\n", argv[a]);
				return 2;
			}
		}
		for (size_t i = 0; i < n; i++) {
			int a = 2;
			while (a < argc && strcmp(argv[a], all[i].name))
				a++;
			if (a == argc)
				pick[k++] = all[i];
		}
		return run_tests(suite, pick, k);
	}
	for (int a = 1; a < argc; a++)
		for (size_t i = 0; i < n; i++)
			if (!strcmp(argv[a], all[i].name) && k < n)
				pick[k++] = all[i];
	if (k != (size_t)(argc - 1)) {
		fprintf(stderr, "unknown test name\n");
		return 2;
	}
	return run_tests(suite, pick, k);
}
#endif
