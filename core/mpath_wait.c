/*
 * The multipath queue's wait and its per-path counters (mpath_q.h).
 */
#include <stddef.h>
#include <string.h>

#include "internal.h"
#include "mpath_q.h"
#include "queue.h"

/* The wait over multipath queues is the library's one wait policy
 * (q_wait): spin while completions come close together, then arm every
 * path's completion queue and sleep on all their channels, and their CM
 * channels, at once. A wait that only yielded between polls would never
 * sleep, and a two-path job would keep busy a CPU that the target shares
 * on the test bed (BENCHMARKS.md, one and two paths). While a request is
 * parked (a transition, a path coming back, a held write) or a path
 * reconnects, it sleeps on the paths still connected until the next step
 * no channel announces: the reconnect's next attempt, a held write's
 * release, or MW_PARKED_CHECK_MS for a request waiting for a path's ANA
 * state (the refresh thread's, which wakes nothing). */
#define MW_PARKED_CHECK_MS 10
struct mw {
	struct nvmeof_mpath_queue *const *mqs;
	uint32_t n, nq;
	struct nvmeof_queue *q[Q_SLEEP_MAX];
};

static int mw_poll(void *c)
{
	struct mw *m = c;
	uint32_t got = 0;
	for (uint32_t i = 0; i < m->n; i++) {
		int r = nvmeof_mpath_queue_poll(m->mqs[i], 64);
		if (r < 0)
			return r;
		got += (uint32_t)r;
	}
	return (int)got;
}
static int mw_arm(void *c)
{
	struct mw *m = c;
	return q_queues_arm(m->q, m->nq);
}
static void mw_flush(void *c)
{
	struct mw *m = c;
	q_queues_flush(m->q, m->nq);
}
static int mw_sleep(void *c, int ms)
{
	struct mw *m = c;
	return q_queues_sleep(m->q, m->nq, ms);
}
static bool mw_waiting(void *c)
{
	struct mw *m = c;
	for (uint32_t i = 0; i < m->n; i++)
		if (m->mqs[i]->nparked)
			return true;
	return q_queues_reconnecting(m->q, m->nq);
}
static int mw_next_step_ms(void *c)
{
	struct mw *m = c;
	int cap = HOUSEKEEP_MS;
	uint64_t now = nvmeof_now_ms();
	for (uint32_t i = 0; i < m->n; i++)
		for (uint32_t k = 0; k < m->mqs[i]->nparked; k++) {
			const struct mreq *r = &m->mqs[i]->reqs[m->mqs[i]->parked[k]];
			int ms = r->hold_until > now ? (int)(r->hold_until - now) : MW_PARKED_CHECK_MS;
			if (ms < cap)
				cap = ms;
		}
	return q_queues_next_step_ms(m->q, m->nq, cap);
}
static uint32_t mw_inflight(void *c)
{
	struct mw *m = c;
	uint32_t n = 0;
	for (uint32_t i = 0; i < m->n; i++)
		n += m->mqs[i]->inflight;
	return n;
}

int nvmeof_mpath_queues_wait(struct nvmeof_mpath_queue *const *mqs, uint32_t n, uint32_t min, int timeout_ms)
{
	if (!mqs || !n)
		return nvmeof_err(NVMEOF_EINVAL, "multipath wait: no queues");
	struct mw m = {.mqs = mqs, .n = n};
	for (uint32_t i = 0; i < n; i++) {
		if (!mqs[i])
			return nvmeof_err(NVMEOF_EINVAL, "multipath wait: queue %u is NULL", i);
		if (mqs[i]->closing)
			return nvmeof_err(NVMEOF_ECLOSED, "multipath wait: queue %u is being destroyed", i);
		for (uint32_t p = 0; p < mqs[i]->n; p++) {
			if (m.nq == Q_SLEEP_MAX)
				return nvmeof_err(NVMEOF_EINVAL, "multipath wait: more than %d path queues", Q_SLEEP_MAX);
			m.q[m.nq++] = mqs[i]->q[p];
		}
	}
	struct q_waiter *w = &mqs[0]->w;
	w->ctx = &m;
	w->poll = mw_poll;
	w->arm = q_queues_can_sleep(m.q, m.nq) ? mw_arm : NULL;
	w->flush = mw_flush;
	w->sleep = mw_sleep;
	w->slice_ms = NULL;
	w->reconnecting = mw_waiting;
	w->next_step_ms = mw_next_step_ms;
	w->inflight = mw_inflight;
	w->mode = m.q[0]->wait_mode;
	w->spin_us = m.q[0]->spin_us;
	int rc = q_wait(w, min, timeout_ms);
	w->ctx = NULL;
	return rc;
}

int nvmeof_mpath_queue_wait(struct nvmeof_mpath_queue *mq, uint32_t min, int timeout_ms)
{
	if (!mq)
		return nvmeof_err(NVMEOF_EINVAL, "multipath wait: no queue");
	return nvmeof_mpath_queues_wait(&mq, 1, min, timeout_ms);
}

uint32_t nvmeof_mpath_queue_inflight(const struct nvmeof_mpath_queue *mq) { return mq ? mq->inflight : 0; }

int nvmeof_mpath_queue_path_stats(const struct nvmeof_mpath_queue *mq, uint32_t idx, struct nvmeof_path_stats *out)
{
	if (!mq || !out || idx >= mq->n)
		return nvmeof_err(NVMEOF_EINVAL, "path stats: %s", !mq || !out ? "no queue or output" : "no such path");
	if (mq->closing)
		return nvmeof_err(NVMEOF_ECLOSED, "path stats: the queue is being destroyed");
	struct nvmeof_path_stats x = mq->st[idx];
	x.size = sizeof(x);
	x.live = q_is_live(mq->q[idx]);
	struct nvmeof_queue_stats qs;
	nvmeof_queue_stats(mq->q[idx], &qs);
	x.doorbells = qs.doorbells;
	/* size 0: the first layout (before doorbells), as the options' size 0 */
	size_t n = !out->size ? offsetof(struct nvmeof_path_stats, doorbells)
		   : out->size < sizeof(x) ? out->size : sizeof(x);
	x.size = n;
	memcpy(out, &x, n);
	return 0;
}


int nvmeof_mpath_queue_path_loss(const struct nvmeof_mpath_queue *mq, uint32_t path, uint32_t idx,
				 struct nvmeof_path_loss *out)
{
	if (!mq || path >= mq->n)
		return nvmeof_err(NVMEOF_EINVAL, "path loss: %s", !mq ? "no queue" : "no such path");
	uint32_t n = mq->nloss[path];
	if (!out || idx >= n || idx >= MQ_LOSS_MAX)
		return (int)n;
	const struct mq_loss *l = &mq->loss[path][idx];
	struct nvmeof_path_loss x = {
		.size = sizeof(x), .detected_ms = l->detected_ms,
		.reissue_ms = l->reissue_ms ? (int64_t)(l->reissue_ms - l->detected_ms) : -1,
		.complete_ms = l->complete_ms ? (int64_t)(l->complete_ms - l->detected_ms) : -1,
		.hold_ms = l->hold_ms, .cmds = l->cmds};
	size_t sz = out->size && out->size < sizeof(x) ? out->size : sizeof(x);
	x.size = sz;
	memcpy(out, &x, sz);
	return (int)n;
}

int nvmeof_mpath_queue_failover_latency(const struct nvmeof_mpath_queue *mq, const double *pct, unsigned int n,
					uint64_t *ns, uint64_t *count)
{
	if (!mq || (n && (!pct || !ns)))
		return nvmeof_err(NVMEOF_EINVAL, "failover latency: %s", !mq ? "no queue" : "no percentiles or output");
	for (unsigned int i = 0; i < n; i++)
		if (!(pct[i] >= 0 && pct[i] <= 100))
			return nvmeof_err(NVMEOF_EINVAL, "failover latency: percentile %g is not within 0 to 100", pct[i]);
	for (unsigned int i = 0; i < n; i++)
		ns[i] = hwts_pct(mq->fo_lat, pct[i]);
	if (count)
		*count = mq->fo_lat->n;
	return 0;
}

/* As the transport's own word that the connection went, and the wire
 * dead at once (q_cut): the queue's next poll closes it and hands back
 * every command in flight. */
int nvmeof_mpath_queue_path_disconnect(struct nvmeof_mpath_queue *mq, uint32_t path)
{
	if (!mq || path >= mq->n)
		return nvmeof_err(NVMEOF_EINVAL, "path disconnect: %s", !mq ? "no queue" : "no such path");
	if (mq->closing)
		return nvmeof_err(NVMEOF_ECLOSED, "path disconnect: the queue is being destroyed");
	struct nvmeof_queue *q = mq->q[path];
	if (q->state != Q_LIVE)
		return nvmeof_err(NVMEOF_ECLOSED, "path disconnect: path %u's queue is %s, not connected", path + 1,
				  q_state_str(q->state));
	q_cut(q);
	return 0;
}
