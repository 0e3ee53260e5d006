/*
 * Controller calls (adminio.c) that must fail before the wire is touched,
 * without leaking what they allocated. A leak shows in the plain build as
 * heap growth over many calls and in build/san as LeakSanitizer's report.
 */
#include <malloc.h>

#include "check.h"
#include "nvmeof.h"

#define CALLS 64

TEST(ns_ids_without_output_leaks_nothing)
{
	struct mallinfo2 before = mallinfo2();
	for (int i = 0; i < CALLS; i++)
		CHECK_EQ(nvmeof_ns_ids(NULL, 1, NULL), NVMEOF_EINVAL);
	struct mallinfo2 after = mallinfo2();
	CHECK(strstr(nvmeof_errmsg(), "no output") != NULL);
	/* one 4 KiB Identify buffer per call before the fix */
	CHECK(after.uordblks < before.uordblks + CALLS * 1024);
}

int main(void)
{
	static const struct test_case t[] = {
		T(ns_ids_without_output_leaks_nothing),
	};
	return run_tests("unit-adminio", t, sizeof(t) / sizeof(t[0]));
}
