/*
 * Command slots and requests. A logical request (what the caller submitted)
 * becomes one or more NVMe commands, each in a slot. A slot is reused only
 * when both its send completion and its response capsule have arrived, so
 * neither the SQE buffer nor in-capsule data from the caller's memory is
 * touched early. The CID is (generation << 10 | slot): a stale or duplicated
 * response names a generation that no longer lives and is dropped.
 */
#include "mem.h"
#include "protocol.h"
#include "qpriv.h"

void q_complete_req(struct nvmeof_queue *q, uint16_t ri)
{
	struct req *r = &q->reqs[ri];
	struct nvmeof_cpl cpl = {.err = r->err, .status = r->status, .cdw0 = r->dw0, .cdw1 = r->dw1,
				 .opc = r->opc, .admin = q->qid == 0, .in_doubt = r->in_doubt && r->err};
	r->in_doubt = false;
	if ((r->kind == REQ_RAW || r->kind == REQ_AER || r->kind == REQ_USER) && r->raw) {
		cpl.opc = r->raw[0];
		cpl.fctype = r->raw[0] == NVME_FABRICS_OPCODE ? r->raw[4] : 0;
	}
	if (unlikely(r->replay)) {
		r->replay = false;
		q->replay_left--;
		if (q->replay_cur == ri)
			q->replay_cur = NO_REQ;
	}
	if (r->kind == REQ_USER) {
		cpl.sqhd = q->user[ri].sqhd;
		cpl.sqid = q->qid;
		cpl.cid = q->user[ri].cid;
	}
	if (r->kind == REQ_IO && r->opc == NVME_CMD_READ && !r->err)
		DEVICE_WROTE((uint8_t *)r->mr->addr + r->off0, r->next_off - r->off0);
	else if ((r->kind == REQ_RAW || r->kind == REQ_USER) && r->data_len && !r->err)
		DEVICE_WROTE(r->mr ? (uint8_t *)r->mr->addr + r->off0 : q_scratch_buf(q), r->data_len);
	q_req_hand_back(q, ri, &cpl);
}

void q_chunk_done(struct nvmeof_queue *q, uint16_t ri, int err, uint16_t status, uint32_t dw0,
		       uint32_t dw1)
{
	struct req *r = &q->reqs[ri];
	r->outstanding--;
	if (err && !r->err) {
		r->err = err;
		r->status = status;
		r->left = 0; /* issue no more of a failed request */
	} else if (!err) {
		r->dw0 = dw0;
		r->dw1 = dw1;
	}
	if (!r->outstanding && !r->left && !r->queued)
		q_complete_req(q, ri);
}

void q_finish_slot(struct nvmeof_queue *q, uint16_t si, int err)
{
	struct slot *s = &q->slots[si];
	uint16_t ri = s->req, st = s->status;
	uint32_t dw0 = s->dw0, dw1 = s->dw1;
	if (q->reqs[ri].kind == REQ_USER) {
		q->user[ri].sqhd = s->sqhd;
		q->user[ri].cid = (uint16_t)(s->gen << SLOT_BITS | si);
	}
	q_release_slot(q, si);
	if (!err && st)
		err = NVMEOF_ENVME;
	/* a status belongs to an NVMe error only: a slot failed some other way
	 * (unanswered, not posted) must not report what it last received */
	q_chunk_done(q, ri, err, err == NVMEOF_ENVME ? st : 0, dw0, dw1);
}

void q_pend_push(struct nvmeof_queue *q, uint16_t ri)
{
	q->reqs[ri].queued = true;
	q->pend[(q->pend_head + q->pend_n) % q->depth] = ri;
	q->pend_n++;
}

uint16_t q_pend_pop(struct nvmeof_queue *q)
{
	uint16_t ri = q->pend[q->pend_head];
	q->pend_head = (q->pend_head + 1) % q->depth;
	q->pend_n--;
	q->reqs[ri].queued = false;
	return ri;
}

/* A command on the wire when its connection goes may still execute behind
 * the controller, after the loss: its request is in doubt (told to its
 * caller if it fails: nvmeof_cpl.in_doubt). On a failover queue it ends as
 * lost (ETIMEDOUT past its timeout, ECLOSED otherwise), whatever another
 * of its commands said first (a path status, a DNR error): the multipath
 * layer holds a lost write until the controller has quiesced it, and a
 * status would have it re-sent at once, or failed to its caller, while a
 * part of it can still land. */
void q_mark_in_doubt(struct nvmeof_queue *q)
{
	for (uint32_t si = 0; si < q->depth; si++) {
		struct slot *s = &q->slots[si];
		struct req *r = &q->reqs[s->req];
		if (s->state != SLOT_BUSY || (s->flags & SLOT_REFUSED) || !r->live)
			continue;
		r->in_doubt = true;
		if (!q->failover || r->kind == REQ_USER)
			continue;
		if (s->flags & SLOT_EXPIRED)
			r->err = NVMEOF_ETIMEDOUT;
		else if (r->err != NVMEOF_ETIMEDOUT && r->err != NVMEOF_ETRANSPORT)
			r->err = NVMEOF_ECLOSED;
		r->status = 0;
	}
}

/* Every command on the wire ends with err (one past its timeout with
 * ETIMEDOUT); only when the connection can no longer touch our memory. */
void q_fail_slots(struct nvmeof_queue *q, int err)
{
	q_mark_in_doubt(q);
	for (uint32_t si = 0; si < q->depth; si++)
		if (q->slots[si].state != SLOT_FREE)
			q_finish_slot(q, (uint16_t)si, q->slots[si].flags & SLOT_EXPIRED ? NVMEOF_ETIMEDOUT : err);
}

/* The same, and what waits for a slot. */
void q_fail_all(struct nvmeof_queue *q, int err)
{
	q_fail_slots(q, err);
	while (q->pend_n) {
		uint16_t ri = q_pend_pop(q);
		struct req *r = &q->reqs[ri];
		if (!r->err)
			r->err = err;
		r->left = 0;
		if (!r->outstanding)
			q_complete_req(q, ri);
	}
}

void q_slots_reset(struct nvmeof_queue *q, uint32_t usable)
{
	q->usable = usable < q->depth ? usable : q->depth;
	q->nfree_slots = 0;
	for (uint32_t i = q->usable; i-- > 0;)
		if (q->slots[i].state == SLOT_FREE)
			q->slot_free[q->nfree_slots++] = (uint16_t)i;
}
