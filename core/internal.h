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

/* Sets this thread's message and returns code, so errors read
 * `return nvmeof_err(NVMEOF_EINVAL, "...")`. */
int nvmeof_err(int code, const char *fmt, ...) PRINTF(2, 3);
int nvmeof_err_prefix(int code, const char *fmt, ...) PRINTF(2, 3);

/* Monotonic milliseconds; CLOCK_MONOTONIC_COARSE is a vDSO read, no syscall. */
uint64_t nvmeof_now_ms(void);

#endif
