/* Clocks for timeouts and waits. */
#ifndef NVMEOF_UTIL_H
#define NVMEOF_UTIL_H

#include <stdint.h>
#include <time.h>

/* Monotonic milliseconds; CLOCK_MONOTONIC_COARSE is a vDSO read, no syscall. */
uint64_t nvmeof_now_ms(void);
/* Monotonic microseconds, for spins. */
uint64_t nvmeof_now_us(void);
/* CLOCK_MONOTONIC ms from now, for pthread_cond_timedwait on a condition
 * variable set to that clock. */
struct timespec nvmeof_deadline_ts(uint32_t ms);

#endif
