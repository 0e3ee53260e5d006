/*
 * The poll: one batch from the wire handed down to completion processing,
 * then the state (timeouts, loss, recovery, reconnect attempts), then what
 * may go out (retries, refused posts, what waits) and one doorbell. A queue
 * in a poll group is polled through its group; a lone queue polls its own
 * CQ the same way.
 */
#include "qpriv.h"
#include "util.h"

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
	if (q->completed && !q->group)
		q_waiter_note(&q->waiter, q->completed);
	return (int)q->completed;
}

/* A queue that is not connected: an attempt when one is due, or why not. */
static int poll_unconnected(struct nvmeof_queue *q)
{
	if (q->state == Q_WAIT)
		return q_try_reconnect(q);
	return nvmeof_err(NVMEOF_ECLOSED, "queue %u is %s", q->qid, q_state_str(q->state));
}

int nvmeof_queue_poll(struct nvmeof_queue *q, uint32_t max)
{
	struct ibv_wc wc[POLL_BATCH];
	int want = (!max || max > POLL_BATCH) ? POLL_BATCH : (int)max;
	if (q->group)
		return nvmeof_poll_group_poll(q->group, max);
	q->completed = 0;
	if (unlikely(!q_has_wire(q)))
		return poll_unconnected(q);
	int n = q->tr->poll(q->trc, want, wc);
	if (unlikely(n < 0)) {
		q_lose(q);
		n = 0;
	}
	if (n && unlikely(!q_process_wcs(q, wc, n)))
		q_lose(q);
	return q_poll_tail(q);
}

/* One member's lost connection fails that member's requests (through their
 * callbacks); the group reports an error only when every member has one, so
 * waits on healthy members carry on. While one member's reconnect attempt
 * runs (its Fabrics Connect polls this group), no other member starts one. */
int nvmeof_poll_group_poll(struct nvmeof_poll_group *g, uint32_t max)
{
	struct ibv_wc wc[POLL_BATCH], mine[POLL_BATCH];
	int want = (!max || max > POLL_BATCH) ? POLL_BATCH : (int)max;
	bool attempting = false;
	for (uint32_t i = 0; i < GROUP_MAX; i++)
		if (g->members[i]) {
			g->members[i]->completed = 0;
			attempting |= g->members[i]->state == Q_CONNECTING;
		}
	int n = g->tr->poll(g->cqc, want, wc);
	if (unlikely(n < 0))
		n = 0; /* a CQ error: each queue finds its connection's state below */
	if (n) {
		uint32_t first = WRID_MEMBER(wc[0].wr_id);
		bool one = true;
		for (int i = 1; i < n && one; i++)
			one = WRID_MEMBER(wc[i].wr_id) == first;
		for (uint32_t m = one ? first : 0; m < (one ? first + 1 : GROUP_MAX); m++) {
			struct nvmeof_queue *q = g->members[m];
			const struct ibv_wc *batch = wc;
			int k = n;
			if (!q || !q_has_wire(q))
				continue; /* left, or closed: what its old connection left is stale */
			if (!one) {
				k = 0;
				for (int i = 0; i < n; i++)
					if (WRID_MEMBER(wc[i].wr_id) == m)
						mine[k++] = wc[i];
				batch = mine;
			}
			if (k && unlikely(!q_process_wcs(q, batch, k)))
				q_lose(q);
		}
	}
	int total = 0, err = 0, nerr = 0, nq = 0;
	for (uint32_t i = 0; i < GROUP_MAX; i++) {
		struct nvmeof_queue *q = g->members[i];
		if (!q)
			continue;
		nq++;
		int rc;
		if (likely(q_has_wire(q)))
			rc = q_poll_tail(q);
		else if (q->state == Q_WAIT && attempting)
			rc = (int)q->completed;
		else
			rc = poll_unconnected(q);
		if (rc < 0) {
			err = err ? err : rc;
			nerr++;
		} else {
			total += rc;
		}
	}
	if (total)
		q_waiter_note(&g->waiter, (uint32_t)total);
	return total || nerr < nq ? total : err;
}
