/* fio's zone hooks run between I/Os on the job's queue pair: a queue whose
 * slots are all in flight (qd_limit below iodepth, a request split at MDTS
 * waiting for slots, another CPU's spill) frees one as soon as a completion
 * is polled, so the call waits for one instead of failing fio's reset. */
#include <time.h>

#include "zretry.h"

#define SLICE_MS 10

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

int zretry(struct nvmeof_queue *q, int (*call)(struct nvmeof_queue *q, void *arg), void *arg, uint32_t timeout_ms)
{
	uint64_t end = 0;
	for (;;) {
		int rc = call(q, arg);
		if (rc != NVMEOF_EQFULL)
			return rc;
		uint64_t t = now_ms();
		if (!end)
			end = t + timeout_ms;
		if (t >= end)
			return rc;
		int w = nvmeof_queue_wait(q, 1, end - t < SLICE_MS ? (int)(end - t) : SLICE_MS);
		if (w < 0)
			return w;
	}
}
