/*
 * The poll, the only one: a batch from the group's CQ handed down to each
 * member's completion processing, then each member's state (timeouts,
 * loss, recovery, reconnect attempts), then what may go out (retries,
 * refused posts, what waits) and one doorbell. Every queue is in a poll
 * group; a queue on its own is a group of one.
 */
#include "qpriv.h"
#include "util.h"

/* Traffic-based keep-alive (struct q_ka_mark): a new epoch (a check since
 * this queue's last look) sets the floor, and drops what was answered
 * meanwhile, which may have been submitted before the check; then an
 * answer to a command from the floor on marks the epoch. The mark's line
 * is written once per epoch: read first. */
static void q_ka_note(struct nvmeof_queue *q)
{
	struct q_ka_mark *m = q->traffic;
	uint32_t e = __atomic_load_n(&m->epoch, __ATOMIC_RELAXED);
	if (e != q->ka_epoch) {
		q->ka_epoch = e;
		q->ka_floor = q->seq;
		q->ka_fresh = false;
	} else if (q->ka_fresh && __atomic_load_n(&m->seen, __ATOMIC_RELAXED) != e) {
		__atomic_store_n(&m->seen, e, __ATOMIC_RELAXED);
	}
}

int q_poll_tail(struct nvmeof_queue *q)
{
	if (unlikely(!q_state_tick(q))) {
		if (q->state == Q_FAILED && !q->completed)
			return nvmeof_err(NVMEOF_ECLOSED, "queue %u lost its connection", q->qid);
		return (int)q->completed;
	}
	if (unlikely(q->nretry))
		q_send_due_retries(q, nvmeof_now_ms());
	/* before the refill, so no more of a refused request goes out */
	if (unlikely(q->nrefused))
		q_finish_refused(q);
	if (likely(q->state == Q_LIVE))
		q_refill(q); /* while CONNECTING, parked requests wait for the Fabrics Connect */
	q_post_from_poll(q);
	return (int)q->completed;
}

/* A queue that is not connected: an attempt when one is due, or why not. */
static int poll_unconnected(struct nvmeof_queue *q)
{
	if (q->state == Q_WAIT)
		return q_try_reconnect(q);
	if (q->state == Q_REOPENING)
		return q_reopen_progress(q);
	return q_state_err(q);
}

int nvmeof_queue_poll(struct nvmeof_queue *q, uint32_t max)
{
	if (unlikely(!q->group)) /* left it: being destroyed */
		return q_state_err(q);
	return nvmeof_poll_group_poll(q->group, max);
}

/* Hands each member its work completions (a queue's place is in each
 * wr_id): at once when the batch is all one member's, the usual case. */
static void dispatch(struct nvmeof_poll_group *g, const struct ibv_wc *wc, const uint64_t *ts, int n)
{
	struct ibv_wc mine[POLL_BATCH];
	uint64_t mine_ts[POLL_BATCH];
	uint32_t first = WRID_MEMBER(wc[0].wr_id);
	bool one = true;
	for (int i = 1; i < n && one; i++)
		one = WRID_MEMBER(wc[i].wr_id) == first;
	for (uint32_t j = 0; j < (one ? 1 : g->nmembers); j++) {
		struct nvmeof_queue *q = one ? g->members[first] : g->list[j];
		const struct ibv_wc *batch = wc;
		const uint64_t *bts = ts;
		int k = n;
		if (!q || !q_has_wire(q) || unlikely(q->cut))
			continue; /* left, or closed, or cut (q_cut): what its old connection left is stale */
		if (!one) {
			k = 0;
			for (int i = 0; i < n; i++)
				if (WRID_MEMBER(wc[i].wr_id) == q->member) {
					if (ts)
						mine_ts[k] = ts[i];
					mine[k++] = wc[i];
				}
			batch = mine;
			bts = ts ? mine_ts : NULL;
		}
		if (k && unlikely(!q_process_wcs(q, batch, bts, k)))
			q_lose(q);
	}
}

/* One member's lost connection fails that member's requests (through their
 * callbacks); the group reports an error only when every member has one, so
 * waits on healthy members carry on. A member's reconnect attempt never
 * polls the group itself: its first half runs on a worker, its Fabrics
 * Connect completes through this poll like any command. */
int nvmeof_poll_group_poll(struct nvmeof_poll_group *g, uint32_t max)
{
	struct ibv_wc wc[POLL_BATCH];
	uint64_t ts[POLL_BATCH];
	uint64_t *tsp = g->hw_ts ? ts : NULL;
	int want = (!max || max > POLL_BATCH) ? POLL_BATCH : (int)max;
	bool wired = false;
	uint32_t nq = g->nmembers;
	/* A callback may poll again: each member's count runs from the
	 * outermost poll, and each poll returns what completed during it, the
	 * nested polls' completions included (their callbacks ran while it
	 * ran). A reset in the nested poll hid the running one's completions. */
	bool outer = !g->polling;
	uint32_t before[GROUP_MAX];
	_Static_assert(GROUP_MAX <= 64, "seen holds one bit per place");
	uint64_t seen = 0; /* members by place whose count before[] holds */
	for (uint32_t i = 0; i < nq; i++) {
		struct nvmeof_queue *q = g->list[i];
		if (outer) {
			q->completed = 0;
		} else {
			before[q->member] = q->completed;
			seen |= 1ull << q->member;
		}
		wired |= q_has_wire(q);
	}
	g->polling++;
	/* No member connected: whatever the CQ holds is stale. A queue's own
	 * CQ is left alone then (its next connection discards it); a shared
	 * one is polled anyway, or failed attempts' flushes overrun it. */
	bool own = nq == 1 && g->list[0]->own_group;
	int n = wired || !own ? g->tr->poll(g->cqc, want, wc, tsp) : 0;
	if (likely(n > 0))
		dispatch(g, wc, tsp, n);
	/* n < 0, a CQ error: each queue finds its connection's state below */
	int total = 0, err = 0;
	uint32_t nerr = 0;
	/* a member's callback may destroy a queue of the group: from the end */
	for (uint32_t i = g->nmembers; i-- > 0;) {
		if (i >= g->nmembers)
			continue;
		struct nvmeof_queue *q = g->list[i];
		int rc;
		if (likely(q_has_wire(q)))
			rc = q_poll_tail(q);
		else
			rc = poll_unconnected(q);
		if (rc < 0) {
			err = err ? err : rc;
			nerr++;
		} else {
			/* an outer poll's counts started at 0; a nested one's from
			 * where each member stood, and a member that joined during
			 * the poll (maybe in a place one that left freed) from 0 */
			uint32_t b = !outer && seen >> q->member & 1 ? before[q->member] : 0;
			uint32_t done = q->completed >= b ? q->completed - b : q->completed;
			total += (int)done;
			if (done && q->traffic)
				q_ka_note(q);
		}
	}
	g->polling--;
	if (total && outer) /* whoever polls (outermost): the wait's spin follows the gaps */
		q_waiter_note(&g->waiter, (uint32_t)total);
	return total || nerr < nq ? total : err;
}
