/* Clocks for timeouts and waits. */
#ifndef NVMEOF_UTIL_H
#define NVMEOF_UTIL_H

#include <stdint.h>
#include <time.h>

/* Monotonic milliseconds; CLOCK_MONOTONIC_COARSE is a vDSO read, no syscall. */
uint64_t nvmeof_now_ms(void);
/* A test's clock (tests/unit; internal, never exported): from a non-zero
 * ms on, nvmeof_now_ms reads ms and each read adds step_ms, so a test of
 * what waits for time (the quiesce hold, timeouts) asserts order against a
 * clock it moves, not against the scheduler. step_ms lets a wait that
 * reads the clock until a deadline (a synchronous call) reach it. 0, 0:
 * the real clock again. nvmeof_now_us and waits' sleeps stay real. */
void nvmeof_clock_fake(uint64_t ms, uint32_t step_ms);
/* Monotonic microseconds, for spins. */
uint64_t nvmeof_now_us(void);
/* ts plus ms, normalized (a periodic deadline that keeps its pace) */
struct timespec nvmeof_ts_add_ms(struct timespec ts, uint32_t ms);
/* CLOCK_MONOTONIC ms from now, for pthread_cond_timedwait on a condition
 * variable set to that clock. */
struct timespec nvmeof_deadline_ts(uint32_t ms);

#endif
