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
#endif
