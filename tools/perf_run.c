/* nvmeof perf's run: one thread per CPU asked for, pinned there, each with
 * its own I/O queue and registered buffer (a slot of io_size bytes per
 * command in flight). The loop is spdk_nvme_perf's: keep qd commands in
 * flight, stamp each just before its submit (the doorbell follows, one per
 * loop, with the queue in batch mode), poll, submit again what completed.
 * Nothing is allocated and no system call is made in the loop beyond the
 * library's own (the transport's); the clock is the vDSO's. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "perf.h"

struct perf_slot {
	struct perf_worker *w;
	uint32_t idx;
	bool write;
	uint64_t stamp;
};

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint32_t hbucket(uint64_t v)
{
	if (v < 256)
		return (uint32_t)v;
	uint32_t msb = 63u - (uint32_t)__builtin_clzll(v), shift = msb - 7;
	return 256 + (msb - 8) * 128 + (uint32_t)((v >> shift) - 128);
}

/* A bucket's middle, ns. */
static uint64_t hvalue(uint32_t b)
{
	if (b < 256)
		return b;
	uint32_t msb = (b - 256) / 128 + 8, shift = msb - 7;
	uint64_t lo = ((uint64_t)(128 + (b - 256) % 128)) << shift;
	return lo + (1ull << shift) / 2;
}

uint64_t perf_hist_pct(const uint64_t *hist, uint64_t n, double pct)
{
	if (!n)
		return 0;
	/* the smallest value at or below which pct % of the samples lie */
	uint64_t want = (uint64_t)((double)n * pct / 100.0 + 0.999999);
	if (want < 1)
		want = 1;
	uint64_t seen = 0;
	for (uint32_t b = 0; b < PERF_HBUCKETS; b++)
		if ((seen += hist[b]) >= want)
			return hvalue(b);
	return hvalue(PERF_HBUCKETS - 1);
}

static inline uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void perf_cb(void *arg, const struct nvmeof_cpl *cpl);

static int submit(struct perf_worker *w, struct perf_slot *s)
{
	const struct perf_cfg *cfg = w->cfg;
	uint32_t nlb = cfg->io_size / w->ns->lba_size;
	uint64_t units = w->ns->nsze / nlb, lba;
	if (cfg->random) {
		lba = (xorshift(&w->rng) % units) * nlb;
	} else {
		lba = w->next_lba;
		w->next_lba = lba + nlb + nlb > units * nlb ? 0 : lba + nlb;
	}
	s->write = cfg->mixed ? xorshift(&w->rng) % 100 >= cfg->rwmix_read : cfg->write;
	size_t off = (size_t)s->idx * cfg->io_size;
	s->stamp = now_ns();
	int rc = s->write ? nvmeof_write(w->q, w->ns, lba, nlb, w->mr, off, perf_cb, s)
			  : nvmeof_read(w->q, w->ns, lba, nlb, w->mr, off, perf_cb, s);
	if (rc && !w->err[0])
		snprintf(w->err, sizeof(w->err), "queue %u: submit: %s", w->idx, nvmeof_errmsg());
	return rc;
}

static void perf_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct perf_slot *s = arg;
	struct perf_worker *w = s->w;
	uint64_t t = now_ns();
	if (cpl->err) {
		w->errors++;
		if (!w->err[0]) {
			char m[160];
			snprintf(w->err, sizeof(w->err), "queue %u: %s failed: %s", w->idx, s->write ? "write" : "read",
				 nvmeof_cpl_str(cpl, m, sizeof(m)));
		}
		w->stopping = true;
	} else if (s->stamp >= w->measure_from && t <= w->end) {
		uint64_t lat = t - s->stamp;
		w->ios++;
		*(s->write ? &w->writes : &w->reads) += 1;
		w->bytes += w->cfg->io_size;
		w->lat_sum_ns += lat;
		if (lat < w->lat_min_ns)
			w->lat_min_ns = lat;
		if (lat > w->lat_max_ns)
			w->lat_max_ns = lat;
		w->hist[hbucket(lat)]++;
	}
	w->done[w->ndone++] = s->idx;
}

static uint64_t tv_ns(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

static void *worker(void *arg)
{
	struct perf_worker *w = arg;
	const struct perf_cfg *cfg = w->cfg;
	if (w->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
			snprintf(w->err, sizeof(w->err), "queue %u: cannot run on CPU %d (not one this process may use)",
				 w->idx, w->cpu);
			return NULL;
		}
	}
	uint64_t t0 = now_ns();
	w->measure_from = t0 + (uint64_t)cfg->warmup_s * 1000000000u;
	w->end = w->measure_from + (uint64_t)cfg->time_s * 1000000000u;
	bool measuring = !cfg->warmup_s;
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	for (uint32_t i = 0; i < cfg->qd; i++)
		if (submit(w, &w->slots[i]))
			w->stopping = true;
	nvmeof_queue_commit(w->q);
	uint64_t t = t0;
	for (uint32_t idle = 0; !w->stopping;) {
		int n = cfg->wait == NVMEOF_WAIT_POLL ? nvmeof_queue_poll(w->q, cfg->qd)
						      : nvmeof_queue_wait(w->q, 1, 100);
		if (n < 0) {
			if (!w->err[0])
				snprintf(w->err, sizeof(w->err), "queue %u: poll: %s", w->idx, nvmeof_errmsg());
			break;
		}
		/* an empty poll reads the clock every 16th time only: the spin
		 * that waits for a completion stays the transport's poll */
		if (!n && cfg->wait == NVMEOF_WAIT_POLL && ++idle % 16)
			continue;
		t = now_ns();
		if (!measuring && t >= w->measure_from) {
			measuring = true;
			getrusage(RUSAGE_THREAD, &r0);
		}
		if (t >= w->end)
			break;
		uint32_t k = 0;
		for (; k < w->ndone && !w->stopping; k++)
			if (submit(w, &w->slots[w->done[k]]))
				w->stopping = true;
		w->ndone = 0;
		if (k)
			nvmeof_queue_commit(w->q);
	}
	getrusage(RUSAGE_THREAD, &r1);
	w->window_ns = (t < w->end ? t : w->end) - (w->measure_from < t ? w->measure_from : t);
	w->cpu_user_ns = tv_ns(r1.ru_utime) - tv_ns(r0.ru_utime);
	w->cpu_sys_ns = tv_ns(r1.ru_stime) - tv_ns(r0.ru_stime);
	/* what is still in flight completes uncounted (past the end) */
	for (uint64_t give_up = now_ns() + 30000000000ull; nvmeof_queue_inflight(w->q) && now_ns() < give_up;)
		if (nvmeof_queue_wait(w->q, nvmeof_queue_inflight(w->q), 1000) < 0)
			break;
	struct nvmeof_queue_stats st;
	nvmeof_queue_stats(w->q, &st);
	w->cmds = st.cmds;
	return NULL;
}

int perf_run(struct nvmeof_ctrl *c, const struct nvmeof_ns *ns, const struct perf_cfg *cfg, struct perf_worker *w)
{
	uint32_t nw = cfg->ncpus ? cfg->ncpus : 1, made = 0;
	int rc = 0;
	pthread_t th[PERF_MAX_CPUS];
	struct nvmeof_queue_opts qo;
	nvmeof_queue_opts_init(&qo);
	qo.depth = cfg->qd;
	qo.batch = true;
	qo.wait_mode = cfg->wait;
	qo.wait_mode_set = true;
	/* every queue and buffer before any thread starts: the setup's
	 * allocations and connects stay out of the measured time */
	for (; made < nw && !rc; made++) {
		struct perf_worker *x = &w[made];
		x->idx = made;
		x->cpu = cfg->ncpus ? cfg->cpus[made] : -1;
		x->cfg = cfg;
		x->ns = ns;
		x->lat_min_ns = UINT64_MAX;
		x->rng = 0x9e3779b97f4a7c15ull * (made + 1) ^ (uint64_t)now_ns();
		x->next_lba = ns->nsze / nw * made / (cfg->io_size / ns->lba_size) * (cfg->io_size / ns->lba_size);
		x->slots = calloc(cfg->qd, sizeof(*x->slots));
		x->done = calloc(cfg->qd, sizeof(*x->done));
		if (!x->slots || !x->done) {
			fprintf(stderr, "nvmeof perf: out of memory\n");
			rc = 1;
		} else if (nvmeof_queue_create(c, &qo, &x->q) ||
			   nvmeof_mr_alloc(c, (size_t)cfg->qd * cfg->io_size, &x->mr)) {
			fprintf(stderr, "nvmeof perf: queue %u: %s\n", made, nvmeof_errmsg());
			rc = 1;
		} else if (nvmeof_queue_depth(x->q) < cfg->qd) {
			fprintf(stderr, "nvmeof perf: queue %u: the controller allows %u commands in flight, not the "
				"%u of -q\n", made, nvmeof_queue_depth(x->q), cfg->qd);
			rc = 1;
		}
		for (uint32_t i = 0; x->slots && i < cfg->qd; i++)
			x->slots[i] = (struct perf_slot){.w = x, .idx = i};
	}
	uint32_t started = 0;
	for (; !rc && started < nw; started++)
		if (pthread_create(&th[started], NULL, worker, &w[started])) {
			fprintf(stderr, "nvmeof perf: cannot start thread %u\n", started);
			rc = 1;
		}
	for (uint32_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (uint32_t i = 0; i < made; i++) {
		if (w[i].err[0]) {
			fprintf(stderr, "nvmeof perf: %s\n", w[i].err);
			rc = 1;
		}
		if (w[i].q)
			nvmeof_queue_destroy(w[i].q);
		if (w[i].mr)
			nvmeof_mr_release(w[i].mr);
		free(w[i].slots);
		free(w[i].done);
		w[i].slots = NULL;
		w[i].done = NULL;
	}
	return rc;
}
