/*
 * The waits, over one queue or a poll group: spin, a spin as long as the
 * recent gap between completions, yield, sleep on the completion channel.
 * The engine and the synchronous calls wait here, with their own timeout.
 */
#include <sched.h>
#include <time.h>

#include "qpriv.h"
#include "util.h"

/* How long a hybrid wait spins before it sleeps: spin_us when nothing is in
 * flight; with commands out and completions coming close together, about
 * two of the recent intervals between them, so at depth the next one is
 * caught spinning instead of through an arm, a sleep and a wake-up per I/O.
 * When they come further apart than SPIN_GAP_MAX_US a wake-up costs little
 * against the wait, and spinning would only take the CPU from whoever
 * produces the completion (on the test bed, the target itself). With one
 * command out (QD1, a latency run) nothing hides a wake-up: its whole cost
 * lands on that command's latency, so for gaps up to SPIN_ONE_MAX_US the
 * spin covers four of them, so the tail is caught too (BENCHMARKS.md,
 * "hybrid wait"). */
#define SPIN_GAP_MAX_US 500
#define SPIN_ONE_MAX_US 2000
#define SPIN_YIELD_US 300
uint64_t q_spin_budget(const struct q_waiter *w, uint32_t inflight)
{
	uint64_t b = w->spin_us, g = w->gap_us;
	if (inflight == 1 && g <= SPIN_ONE_MAX_US)
		g *= 4;
	else if (inflight && g <= SPIN_GAP_MAX_US)
		g *= 2;
	else
		g = 0;
	return g > b ? g : b;
}

int q_wait(struct q_waiter *w, uint32_t min, int timeout_ms)
{
	uint64_t t0 = nvmeof_now_us(), deadline = t0 + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000u;
	uint64_t spin_end = w->mode == NVMEOF_WAIT_HYBRID ? t0 + q_spin_budget(w, w->inflight(w->ctx)) : t0;
	uint32_t total = 0;
	uint64_t last_yield = t0;
	for (;;) {
		int rc = w->poll(w->ctx);
		if (rc < 0)
			return total ? (int)total : rc;
		uint64_t now = nvmeof_now_us();
		total += (uint32_t)rc;
		if (total >= min)
			return (int)total;
		if (now >= deadline)
			return (int)total;
		if (w->mode == NVMEOF_WAIT_POLL || !w->arm)
			continue;
		if (now < spin_end) {
			/* A long spin lets whatever else is runnable on this CPU
			 * go first: where the target shares the CPU, its own
			 * work, which a spinning thread kept waiting up to a
			 * scheduler tick (BENCHMARKS.md has the QD1 tails). */
			if (now - last_yield >= SPIN_YIELD_US) {
				sched_yield();
				last_yield = nvmeof_now_us();
			}
			continue;
		}
		if (w->reconnecting(w->ctx)) {
			/* no CQ to sleep on until the next attempt */
			struct timespec ts = {0, 2000000};
			nanosleep(&ts, NULL);
			continue;
		}
		if ((rc = w->arm(w->ctx)))
			return total ? (int)total : rc;
		/* A completion may have landed before the arm took effect. */
		rc = w->poll(w->ctx);
		if (rc < 0)
			return total ? (int)total : rc;
		total += (uint32_t)rc;
		if (total >= min)
			return (int)total;
		uint64_t left_ms = (deadline - now + 999) / 1000;
		if ((rc = w->sleep(w->ctx, (int)(left_ms < HOUSEKEEP_MS ? left_ms : HOUSEKEEP_MS))) < 0)
			return total ? (int)total : rc;
		w->st_sleeps++;
	}
}

int nvmeof_queue_wait(struct nvmeof_queue *q, uint32_t min, int timeout_ms)
{
	if (unlikely(!q->group || q->state == Q_FAILED || q->state == Q_CLOSING))
		return q_state_err(q);
	return nvmeof_poll_group_wait(q->group, min, timeout_ms);
}

static int gw_poll(void *c) { return nvmeof_poll_group_poll(c, 0); }
static int gw_arm(void *c)
{
	struct nvmeof_poll_group *g = c;
	return g->tr->arm(g->cqc);
}
static int gw_sleep(void *c, int ms)
{
	struct nvmeof_poll_group *g = c;
	return g->tr->sleep(g->cqc, ms);
}
static bool gw_reconnecting(void *c)
{
	struct nvmeof_poll_group *g = c;
	for (uint32_t i = 0; i < g->nmembers; i++)
		if (g->list[i]->state == Q_WAIT || g->list[i]->state == Q_REOPENING)
			return true;
	return false;
}
static uint32_t gw_inflight(void *c)
{
	struct nvmeof_poll_group *g = c;
	uint32_t n = 0;
	for (uint32_t i = 0; i < g->nmembers; i++)
		n += g->list[i]->depth - g->list[i]->nfree_reqs;
	return n;
}

int nvmeof_poll_group_wait(struct nvmeof_poll_group *g, uint32_t min, int timeout_ms)
{
	struct q_waiter *w = &g->waiter;
	if (!w->poll) {
		w->ctx = g;
		w->poll = gw_poll;
		w->arm = g->tr->arm ? gw_arm : NULL;
		w->sleep = gw_sleep;
		w->reconnecting = gw_reconnecting;
		w->inflight = gw_inflight;
	}
	return q_wait(w, min, timeout_ms);
}
