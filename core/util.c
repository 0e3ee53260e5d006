/* Clocks: vDSO reads, no system call. And the version. */
#include <time.h>

#include "internal.h"
#include "util.h"

/* The Makefile's VERSION, its only home: the build passes it in. */
#ifndef NVMEOF_VERSION_STR
#error "NVMEOF_VERSION_STR is not defined: build with the Makefile (it passes VERSION)"
#endif

const char *nvmeof_version(void)
{
	return NVMEOF_VERSION_STR;
}

#ifdef NVMEOF_VALGRIND
int nvmeof_on_valgrind;
__attribute__((constructor)) static void detect_valgrind(void) { nvmeof_on_valgrind = RUNNING_ON_VALGRIND; }
#endif

static uint64_t fake_ms;  /* 0: the real clock */
static uint32_t fake_step;

void nvmeof_clock_fake(uint64_t ms, uint32_t step_ms)
{
	__atomic_store_n(&fake_step, step_ms, __ATOMIC_RELAXED);
	__atomic_store_n(&fake_ms, ms, __ATOMIC_RELEASE);
}

uint64_t nvmeof_now_ms(void)
{
	if (unlikely(__atomic_load_n(&fake_ms, __ATOMIC_ACQUIRE)))
		return __atomic_fetch_add(&fake_ms, __atomic_load_n(&fake_step, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t nvmeof_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}


struct timespec nvmeof_ts_add_ms(struct timespec ts, uint32_t ms)
{
	uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)ms * 1000000u;
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	return ts;
}

struct timespec nvmeof_deadline_ts(uint32_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return nvmeof_ts_add_ms(ts, ms);
}
