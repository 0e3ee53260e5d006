/* Reconnect: park what was in flight, connect anew, re-issue it in order. */
#include <stdio.h>

#include "qpriv.h"
#include "util.h"

/* After the QP is destroyed: every command slot comes back, and each
 * request still live starts over, whole, on the next connection (reads and
 * writes are idempotent; a write may land twice, never half). The waiting
 * FIFO is rebuilt in submission order, so what was on the wire before the
 * loss goes before what was submitted during the outage. */
void q_park_all(struct nvmeof_queue *q)
{
	uint32_t n = 0;
	for (uint32_t si = 0; si < q->depth; si++)
		if (q->slots[si].state != SLOT_FREE)
			q_release_slot(q, (uint16_t)si);
	q->replay_left = 0;
	q->replay_cur = NO_REQ;
	q->pend_head = q->pend_n = 0;
	for (uint32_t ri = 0; ri < q->depth; ri++) {
		struct req *r = &q->reqs[ri];
		if (!r->live)
			continue;
		r->queued = r->replay = false;
		r->outstanding = 0;
		if (r->kind == REQ_AER && !r->err)
			r->err = NVMEOF_ECLOSED; /* its owner re-arms events on the new association */
		if (r->err) {
			r->left = 0;
		} else {
			r->next_lba = r->slba0;
			r->next_off = r->off0;
			r->left = r->nlb0;
		}
		/* insertion sort by seq: a reconnect is rare, depth is small */
		uint32_t k = n++;
		while (k && q->reqs[q->park_tmp[k - 1]].seq > r->seq) {
			q->park_tmp[k] = q->park_tmp[k - 1];
			k--;
		}
		q->park_tmp[k] = (uint16_t)ri;
	}
	for (uint32_t k = 0; k < n; k++)
		q_pend_push(q, q->park_tmp[k]);
	/* internal commands end here; failed requests when the FIFO reaches them */
	struct req *rsv = &q->reqs[q->depth];
	if (rsv->live) {
		rsv->outstanding = 0;
		rsv->left = 0;
		if (!rsv->err)
			rsv->err = NVMEOF_ECLOSED;
		q_complete_req(q, (uint16_t)q->depth);
	}
}

int q_reopen(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms)
{
	q->tr->close(q); /* the old connection is gone: nothing can touch our memory */
	q_park_all(q);
	q->dead = true;
	q->wire_closed = false;
	return q->tr->reopen(q, cntlid, timeout_ms);
}

int q_try_reconnect(struct nvmeof_queue *q)
{
	uint64_t now = nvmeof_now_ms();
	if (now - q->lost_at_ms >= q->ctrl_loss_tmo_ms) {
		char why[256];
		snprintf(why, sizeof(why), "%s", nvmeof_errmsg());
		q->reconnecting = false;
		q->tr->close(q);
		q->wire_closed = true; /* no CQ to poll any more */
		q_fail_all(q, NVMEOF_ECLOSED);
		nvmeof_err(NVMEOF_ECLOSED, "queue %u: gave up reconnecting after %u ms (last: %s)", q->qid,
			   q->ctrl_loss_tmo_ms, why);
		return q->completed ? (int)q->completed : NVMEOF_ECLOSED;
	}
	if (now < q->next_try_ms)
		return 0;
	q->next_try_ms = now + q->reconnect_delay_ms;
	q->connecting = true;
	int rc = q->reconnect(q->ctrl, q);
	q->connecting = false;
	if (rc) {
		q->dead = true; /* stay parked; try again after the delay */
		return (int)q->completed;
	}
	q->reconnecting = false;
	/* everything waiting now goes first, one request at a time */
	for (uint32_t k = 0; k < q->pend_n; k++)
		q->reqs[q->pend[(q->pend_head + k) % q->depth]].replay = true;
	q->replay_left = q->pend_n;
	q->replay_cur = NO_REQ;
	q->st.reconnects++;
	if (now - q->lost_at_ms > q->st.outage_ms_max)
		q->st.outage_ms_max = now - q->lost_at_ms;
	q_refill(q);
	q_post_from_poll(q);
	return (int)q->completed;
}
