/*
 * Completions in batches, and retries after the Command Retry Delay. What a
 * failed completion means for the connection is the state's business
 * (qstate.c): this file only reports it.
 */
#include <string.h>

#include "mem.h"
#include "protocol.h"
#include "qpriv.h"
#include "util.h"
#include "hwts.h"

#define NO_SLOT 0xffffu /* a completion for no slot of ours (stale) */

/* An I/O command that failed with a status the controller says may succeed
 * if retried (DNR clear) goes again from the same slot, with a new CID,
 * after the Command Retry Delay its CRD field selects; at most MAX_RETRIES. */
static bool retry_slot(struct nvmeof_queue *q, uint16_t si)
{
	struct slot *s = &q->slots[si];
	uint16_t st = s->status;
	/* A path status goes back to the multipath layer at once, which
	 * sends the command down another path (the kernel checks path errors
	 * before retrying, too). */
	if (q->failover && NVMEOF_STATUS_SCT(st) == 0x3)
		return false;
	if (!st || NVMEOF_STATUS_DNR(st) || s->retries >= MAX_RETRIES || !q->qid || q->state != Q_LIVE ||
	    s->state != SLOT_BUSY || q->reqs[s->req].kind == REQ_RAW || q->reqs[s->req].kind == REQ_USER || q->reqs[s->req].err)
		return false;
	unsigned crd = NVMEOF_STATUS_CRD(st);
	uint64_t delay = crd ? (uint64_t)q->crdt[crd - 1] * 100u : 0;
	if (delay > q->cmd_timeout_ms)
		delay = q->cmd_timeout_ms;
	s->retries++;
	s->flags = 0;
	s->state = SLOT_RETRY;
	s->t_submit_ms = nvmeof_now_ms() + delay;
	q_next_gen(s, si);
	nvme_sqe_set_cid(q->sqes + (size_t)si * NVME_SQE_SIZE, (uint16_t)(s->gen << SLOT_BITS | si));
	s->wr.wr_id = SEND_WRID(q, s->gen, si);
	q->nretry++;
	q->st.retries++;
	return true;
}


/* Sends the slots whose retry delay has passed. */
void q_send_due_retries(struct nvmeof_queue *q, uint64_t now)
{
	for (uint32_t si = 0; si < q->depth && q->nretry; si++) {
		struct slot *s = &q->slots[si];
		if (s->state != SLOT_RETRY || s->t_submit_ms > now)
			continue;
		if (q->reqs[s->req].err) { /* another of its commands failed meanwhile */
			uint16_t ri = s->req;
			q_release_slot(q, (uint16_t)si);
			q_chunk_done(q, ri, 0, 0, 0, 0);
			continue;
		}
		s->state = SLOT_BUSY;
		s->t_submit_ms = now;
		q->nretry--;
		q->st.cmds++;
		q_chain_send(q, &s->wr);
	}
}

/* The usual completion, in one pass: a successful read or write of one
 * command. It ends as q_finish_slot would end it. */
static inline bool complete_one(struct nvmeof_queue *q, struct slot *s, uint16_t si)
{
	uint16_t ri = s->req;
	struct req *r = &q->reqs[ri];
	if (unlikely(s->status || r->kind != REQ_IO || r->outstanding != 1 || r->left || r->err || r->queued ||
		     r->replay))
		return false;
	struct nvmeof_cpl cpl = {.cdw0 = s->dw0, .cdw1 = s->dw1, .opc = r->opc, .admin = q->qid == 0};
	q_release_slot(q, si);
	r->outstanding = 0;
	r->dw0 = cpl.cdw0;
	r->dw1 = cpl.cdw1;
	if (r->opc == NVME_CMD_READ)
		DEVICE_WROTE((uint8_t *)r->mr->addr + r->off0, r->next_off - r->off0);
	q_req_hand_back(q, ri, &cpl);
	return true;
}

/* Both halves of a command are in: its response and its send completion. */
static void slot_done(struct nvmeof_queue *q, uint16_t si)
{
	struct slot *s = &q->slots[si];
	/* the target answered it: traffic-based keep-alive counts it when it
	 * was submitted after the controller's last check (q_ka_note) */
	q->ka_fresh |= q->reqs[s->req].seq >= q->ka_floor;
	if (likely(complete_one(q, s, si)))
		return;
	if (unlikely(s->status) && retry_slot(q, si))
		return;
	q_finish_slot(q, si, 0);
}

/* Its command went out and may still be answered. A slot free or waiting
 * to send a retry has no command on the wire. */
static bool on_wire(const struct slot *s) { return s->state == SLOT_BUSY; }

/* A response capsule for its slot; true when the slot has both halves. */
static bool take_resp(struct nvmeof_queue *q, const uint8_t *capsule, uint16_t *si_out)
{
	struct nvme_cqe c;
	nvme_cqe_parse(capsule, &c);
	uint16_t si = c.cid & SLOT_MASK;
	struct slot *s = &q->slots[si];
	/* A slot waiting to send a retry has a CID nobody has seen yet: an
	 * answer to it is forged or stale, and taking it would mark the slot
	 * answered before the retry goes out. */
	if (unlikely(si >= q->depth || !on_wire(s) ||
		     s->gen != (c.cid >> SLOT_BITS) || (s->flags & SLOT_RESP))) {
		q->st.stale_cqes++;
		return false;
	}
	s->flags |= SLOT_RESP;
	s->status = c.status;
	s->dw0 = c.dw0;
	s->dw1 = c.dw1;
	s->sqhd = c.sqhd;
	*si_out = si;
	return s->flags & SLOT_SENT;
}

/* A send completion for its slot; true when the slot has both halves. */
static bool take_send(struct nvmeof_queue *q, uint64_t wr_id, uint16_t *si_out)
{
	uint16_t si = (uint16_t)(wr_id & 0xffff);
	struct slot *s = &q->slots[si];
	/* A send completion for a slot already released (failed over on a
	 * lost connection, or reused since) is not ours to finish. */
	if (unlikely(si >= q->depth || WRID_EPOCH(wr_id) != q->epoch ||
		     !on_wire(s) ||
		     s->gen != ((wr_id >> 16) & GEN_MASK) || (s->flags & SLOT_SENT))) {
		q->st.stale_cqes++;
		return false;
	}
	s->flags |= SLOT_SENT;
	*si_out = si;
	return s->flags & SLOT_RESP;
}

/* False when the QP refuses them: it has failed. */
static bool post_recvs(struct nvmeof_queue *q)
{
	struct ibv_recv_wr *bad;
	if (!q->rwr_head)
		return true;
	int rc = q->tr->post_recv(q->trc, q->rwr_head, &bad);
	q->rwr_head = q->rwr_tail = NULL;
	return !rc;
}

/* One batch of work completions, in one pass that runs no callback: each
 * capsule goes to its slot (parsed before its buffer is re-posted, where
 * it may be refilled), each send marks its slot, and the slots with both
 * halves are noted. Then the receives are re-posted, and only then do the
 * noted slots complete: a callback may submit at once, and a command must
 * never be out without a receive waiting for its response (RNR back-off). */
bool q_process_wcs(struct nvmeof_queue *q, const struct ibv_wc *wc, const uint64_t *ts, int n)
{
	struct {
		uint16_t si, gen;
	} done[POLL_BATCH];
	int ndone = 0;
	bool ok = true;
	for (int i = 0; i < n; i++) {
		const struct ibv_wc *w = &wc[i];
		uint16_t si = NO_SLOT;
		if (!(w->wr_id & RECV_TAG)) {
			if (unlikely(w->status != IBV_WC_SUCCESS)) {
				if (WRID_EPOCH(w->wr_id) == q->epoch)
					ok = false;
			} else if (take_send(q, w->wr_id, &si)) {
				done[ndone].si = si;
				done[ndone++].gen = q->slots[si].gen;
			}
			if (ts && si != NO_SLOT)
				q->slots[si].ts_sent = ts[i];
			continue;
		}
		uint32_t idx = WRID_LOW(w->wr_id);
		if (unlikely(WRID_EPOCH(w->wr_id) != q->epoch))
			continue; /* from a connection already gone: not ours to re-post */
		if (unlikely(w->status != IBV_WC_SUCCESS || idx >= q->hrqsize)) {
			ok = false;
			continue;
		}
		if (unlikely(w->byte_len < NVME_CQE_SIZE)) {
			/* a protocol error, not a completion: the kernel host
			 * fails the connection the same way */
			q->st.bad_rsps++;
			ok = false;
			continue;
		}
		const uint8_t *capsule = q->rsps + (size_t)idx * NVME_CQE_SIZE;
		DEVICE_WROTE(capsule, NVME_CQE_SIZE);
		if (take_resp(q, capsule, &si)) {
			done[ndone].si = si;
			done[ndone++].gen = q->slots[si].gen;
		}
		if (ts && si != NO_SLOT)
			q->slots[si].ts_resp = ts[i];
		struct ibv_recv_wr *rw = &q->rwr[idx];
		rw->next = NULL;
		if (q->rwr_tail)
			q->rwr_tail->next = rw;
		else
			q->rwr_head = rw;
		q->rwr_tail = rw;
	}
	if (ok && q->state != Q_LOST)
		ok = post_recvs(q);
	else
		q->rwr_head = q->rwr_tail = NULL; /* the next connection posts them all */
	/* A callback may poll this queue, and that poll may find the
	 * connection lost and release the slots still noted here (or reuse
	 * them): only a slot still busy with the same command is finished. */
	for (int i = 0; i < ndone; i++) {
		const struct slot *s = &q->slots[done[i].si];
		if (likely(s->state == SLOT_BUSY && s->gen == done[i].gen)) {
			/* both halves clocked by the NIC: the fabric and the target */
			if (ts && q->hw)
				hwts_add(q->hw, s->ts_sent, s->ts_resp, q->hw_khz);
			slot_done(q, done[i].si);
		}
	}
	return ok;
}
