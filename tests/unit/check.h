/* Minimal test harness: TEST(name) functions, CHECK* macros, SKIP(reason),
 * one summary line "N passed, N failed, N skipped" that CI reads. Inside the
 * test bed (NVMEOF_TB_RUN set) everything a test needs is present: a skip
 * there counts as a failure. */
#ifndef CHECK_H
#define CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static inline int run_tests(const char *suite, const struct test_case *t, size_t n)
{
	int pass = 0, fail = 0, skip = 0;
	int in_testbed = getenv("NVMEOF_TB_RUN") != NULL;
	for (size_t i = 0; i < n; i++) {
		check_failed_in_test = check_skipped_in_test = 0;
		t[i].fn();
		if (check_skipped_in_test && !check_failed_in_test && in_testbed) {
			fprintf(stderr, "    (a skip inside the test bed, where everything is present, fails)\n");
			check_failed_in_test = 1;
		}
		const char *r = check_failed_in_test ? "FAILED" : check_skipped_in_test ? "skip" : "ok";
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
	struct test_case pick[64];
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
		for (size_t i = 0; i < n && k < 64; i++) {
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
			if (!strcmp(argv[a], all[i].name) && k < 64)
				pick[k++] = all[i];
	if (k != (size_t)(argc - 1)) {
		fprintf(stderr, "unknown test name\n");
		return 2;
	}
	return run_tests(suite, pick, k);
}
#endif
