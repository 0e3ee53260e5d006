/* nvmeof perf: what the command line asks (perf.c parses it, prints the
 * results) and what the run measures (perf_run.c: one pinned thread and one
 * queue per CPU, the library's asynchronous calls, a latency histogram). */
#ifndef NVMEOF_TOOL_PERF_H
#define NVMEOF_TOOL_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include "nvmeof.h"

#define PERF_MAX_CPUS 64
/* Latency histogram: exact below 256 ns, then 128 buckets per power of two
 * (each within 1/128 of its value), up to 2^64 ns. */
#define PERF_HBUCKETS (256 + 56 * 128)

struct perf_cfg {
	uint32_t qd;          /* commands in flight per queue */
	uint32_t io_size;     /* bytes per I/O */
	bool random, mixed;   /* random offsets; reads and writes mixed */
	bool write;           /* not mixed: every I/O a write */
	uint32_t rwmix_read;  /* mixed: percent of reads */
	uint32_t time_s, warmup_s;
	uint32_t ncpus;       /* workers; 0: one, not pinned */
	int cpus[PERF_MAX_CPUS];
	enum nvmeof_wait_mode wait;
	uint32_t nsid;
};

struct perf_worker {
	/* results, each worker's own */
	uint64_t ios, reads, writes, bytes, errors;
	uint64_t lat_sum_ns, lat_min_ns, lat_max_ns;
	uint64_t window_ns;          /* the measured time */
	uint64_t cmds;               /* NVMe commands the queue sent, warm-up and tail included */
	uint64_t cpu_user_ns, cpu_sys_ns; /* this thread's, over the window */
	uint64_t hist[PERF_HBUCKETS];
	char err[256];               /* the first error, else empty */
	/* the run's */
	int cpu;                     /* -1: not pinned */
	uint32_t idx;
	struct nvmeof_queue *q;
	struct nvmeof_mr *mr;
	const struct nvmeof_ns *ns;
	const struct perf_cfg *cfg;
	struct perf_slot *slots;
	uint32_t *done;              /* slots completed, to submit again */
	uint32_t ndone;
	uint64_t rng, next_lba;
	uint64_t measure_from, end;  /* CLOCK_MONOTONIC ns */
	bool stopping;
};

/* Runs the workload on the connected controller's namespace ns, one queue
 * per worker: 0, or 1 after printing why (a setup step, or an I/O error:
 * the workers' err). w[] has cfg->ncpus entries (one when 0). */
int perf_run(struct nvmeof_ctrl *c, const struct nvmeof_ns *ns, const struct perf_cfg *cfg, struct perf_worker *w);
/* The latency at percentile pct (0 to 100) of a histogram of n samples, ns. */
uint64_t perf_hist_pct(const uint64_t *hist, uint64_t n, double pct);

#endif
