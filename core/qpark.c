/*
 * Parking a queue's requests when its connection is gone: every slot comes
 * back, and what was live waits for the next connection in submission
 * order, or fails. Called by the state machine (qstate.c) only.
 */
#include "qpriv.h"
#include "util.h"

/* Set by the controller at the queue's creation and by its reconnect
 * worker after each re-association (a new controller's CQT); read here,
 * by the poll. */
void q_set_quiesce(struct nvmeof_queue *q, uint32_t ms) { __atomic_store_n(&q->quiesce_ms, ms, __ATOMIC_RELAXED); }

/* Whether a command changes what is stored (NVM command set opcodes):
 * Flush, Read, Compare and Verify do not; a raw command is judged by its
 * opcode, an unknown one as if it did. */
static bool modifies_media(const struct req *r)
{
	uint8_t opc = r->kind == REQ_RAW && r->raw ? r->raw[0] : r->opc;
	switch (r->kind) {
	case REQ_WZ:
	case REQ_DSM:
		return true;
	case REQ_FLUSH:
	case REQ_AER:
		return false;
	default:
		return opc != NVME_CMD_FLUSH && opc != NVME_CMD_READ && opc != 0x05 && opc != 0x0c;
	}
}

/* After the connection is closed: every command slot comes back, and each
 * request still live starts over, whole, on the next connection (reads and
 * writes are idempotent; a write may land twice, never half). The waiting
 * FIFO is rebuilt in submission order, so what was on the wire before the
 * loss goes before what was submitted during the outage. A command past its
 * timeout fails its request with ETIMEDOUT, and failed requests complete
 * now, after the FIFO is rebuilt (their callbacks may submit again). */
void q_park_all(struct nvmeof_queue *q)
{
	uint32_t n = 0, nfailed = 0, nraw = 0;
	bool doubt = false;
	q_mark_in_doubt(q);
	for (uint32_t si = 0; si < q->depth; si++) {
		struct slot *s = &q->slots[si];
		struct req *r = &q->reqs[s->req];
		if (s->state == SLOT_BUSY && (s->flags & SLOT_EXPIRED) && r->live && !r->err) {
			r->err = NVMEOF_ETIMEDOUT;
			r->status = 0;
		}
		/* A caller's raw command that reached the wire is not sent again:
		 * whether running it twice is harmless is the caller's to judge. */
		if (s->state == SLOT_BUSY && !(s->flags & SLOT_REFUSED) && r->kind == REQ_USER && r->live && !r->err) {
			r->err = NVMEOF_ECLOSED;
			nraw++;
		}
		/* a caller's command on the wire at the loss: it may still land
		 * (below; the queue's own commands, a Connect, are not data) */
		if (s->state == SLOT_BUSY && !(s->flags & SLOT_REFUSED) && s->req < q->depth && r->live &&
		    modifies_media(r))
			doubt = true;
		if (s->state != SLOT_FREE)
			q_release_slot(q, (uint16_t)si);
	}
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
		if (q->failover && !r->err)
			r->err = NVMEOF_ECLOSED; /* another path carries it now; this one reconnects empty */
		if (r->err) {
			r->left = 0;
			q->park_tmp[q->depth - 1 - nfailed++] = (uint16_t)ri;
			continue;
		}
		r->next_lba = r->slba0;
		r->next_off = r->off0;
		r->left = r->nlb0;
		/* in doubt until it goes out again (submit.c): failed before that
		 * (a close, a reconnect given up) it may still land */
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
	/* A write it lost may still land on the controller: the replay, in
	 * order, starts no sooner than the quiesce time after the loss. So
	 * does the next connection when a write on the wire fails to its
	 * caller (timed out, abandoned by a synchronous wait, a raw command,
	 * another of its commands failed): the caller's next write must not
	 * overtake it there. A failover queue's lost writes are held by the
	 * multipath layer instead (another path may carry them). */
	bool modifies = doubt && !q->failover;
	for (uint32_t k = 0; k < n && !modifies; k++)
		modifies = modifies_media(&q->reqs[q->park_tmp[k]]);
	uint32_t quiesce = __atomic_load_n(&q->quiesce_ms, __ATOMIC_RELAXED);
	if (modifies && q->next_try_ms < q->lost_at_ms + quiesce)
		q->next_try_ms = q->lost_at_ms + quiesce;
	/* internal commands end here */
	struct req *rsv = &q->reqs[q->depth];
	if (rsv->live) {
		rsv->outstanding = 0;
		rsv->left = 0;
		if (!rsv->err)
			rsv->err = NVMEOF_ECLOSED;
		q_complete_req(q, (uint16_t)q->depth);
	}
	if (nraw)
		nvmeof_err(NVMEOF_ECLOSED, "queue %u lost its connection with %u raw command(s) on the wire: not sent "
			   "again", q->qid, nraw);
	for (uint32_t k = 0; k < nfailed; k++)
		q_complete_req(q, q->park_tmp[q->depth - 1 - k]);
}

