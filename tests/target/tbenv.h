/* What every real-target test reads: the test bed's variables
 * (tests/testbed/guest/target-env.sh), which exist only inside the guest. */
#ifndef NVMEOF_TESTS_TARGET_TBENV_H
#define NVMEOF_TESTS_TARGET_TBENV_H
#include <stdio.h>
#include <stdlib.h>

static inline const char *env(const char *name)
{
	const char *v = getenv(name);
	if (!v) {
		fprintf(stderr, "missing %s: run inside tests/testbed/run\n", name);
		exit(2);
	}
	return v;
}

/* The target as the test bed made it (tests/target/lib.sh's tb_restore),
 * after a test ended at its limit or crashed (check.h's check_after_kill):
 * its cleanup did not run, and a port, path, link or namespace it took
 * away would fail every test after it. Nothing outside the test bed. */
static inline void tb_restore_target(void)
{
	fflush(stdout);
	if (system("bash -c '. tests/target/lib.sh && tb_restore; rm -rf \"$SCRATCH\"'") != 0)
		fprintf(stderr, "    tb_restore failed\n");
}
#endif
