/* Shared by the library's own files; not installed. */
#ifndef NVMEOF_INTERNAL_H
#define NVMEOF_INTERNAL_H

#include "nvmeof.h"

#if defined(__GNUC__)
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define likely(x) (x)
#define unlikely(x) (x)
#define PRINTF(a, b)
#endif

/* Memory the RDMA device writes (response capsules, read data) is invisible
 * to valgrind; telling it keeps memcheck runs meaningful. Outside valgrind
 * one predicted branch on a flag set at load (util.c), not the client
 * request's instructions on every completion. */
#ifdef NVMEOF_VALGRIND
#include <valgrind/memcheck.h>
extern int nvmeof_on_valgrind;
#define DEVICE_WROTE(p, n)                                                                         \
	do {                                                                                       \
		if (unlikely(nvmeof_on_valgrind))                                                  \
			VALGRIND_MAKE_MEM_DEFINED((p), (n));                                       \
	} while (0)
#else
#define DEVICE_WROTE(p, n) do { (void)(p); (void)(n); } while (0)
#endif

/* Sets this thread's message and returns code, so errors read
 * `return nvmeof_err(NVMEOF_EINVAL, "...")`. */
int nvmeof_err(int code, const char *fmt, ...) PRINTF(2, 3);
/* The longest message nvmeof_errmsg() holds, terminator included: a copy
 * this long keeps a thread's message whole across work that sets another. */
#define NVMEOF_ERRMSG_MAX 512
int nvmeof_err_prefix(int code, const char *fmt, ...) PRINTF(2, 3);

#endif
