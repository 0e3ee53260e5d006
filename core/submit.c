/*
 * Submission: a request is split at MDTS into commands issued while slots
 * are free, in order; each gets an SGL into the caller's registered region.
 * Nothing here allocates or makes a system call but the doorbell.
 */
#include <string.h>

#include "mem.h"
#include "protocol.h"
#include "qpriv.h"

int q_refused_err(const struct nvmeof_queue *q)
{
	return nvmeof_err(NVMEOF_ETRANSPORT, "ibv_post_send on queue %u: %s", q->qid,
			  strerror(q->refused_errno));
}

/* Fails what a post refused; from poll only. */
void q_finish_refused(struct nvmeof_queue *q)
{
	q_refused_err(q); /* the message the callbacks see */
	for (uint32_t si = 0; si < q->depth; si++)
		if ((q->slots[si].flags & SLOT_REFUSED) && q->slots[si].state != SLOT_FREE)
			q_finish_slot(q, (uint16_t)si, NVMEOF_ETRANSPORT);
}

int q_post_sends(struct nvmeof_queue *q)
{
	struct ibv_send_wr *bad = NULL;
	if (!q->wr_head)
		return 0;
	/* The association ended since these were chained (another queue's
	 * loss: a batch's commit, or a loss during this poll's callbacks): none
	 * goes to the old controller. Flagged as refused, they are not in
	 * doubt (never on the wire); the queue's next poll takes it off the
	 * association (q_state_tick), and its recovery parks them for the
	 * next one, whole, or fails them without one. */
	if (unlikely(q_assoc_moved(q)) && q->state == Q_LIVE) {
		for (struct ibv_send_wr *w = q->wr_head; w; w = w->next) {
			q->slots[(uint16_t)w->wr_id].flags |= SLOT_REFUSED;
			q->nrefused++;
		}
		q->wr_head = q->wr_tail = NULL;
		return 0;
	}
	int rc = q->tr->post_send(q->trc, q->wr_head, &bad);
	q->st.doorbells++;
	q->wr_head = q->wr_tail = NULL;
	if (likely(!rc))
		return 0;
	/* Nothing from bad onward reached the wire. Those fail from the next
	 * poll, not here: a submit that accepted its request must not also run
	 * its callback, and a caller of commit gets its completions where it
	 * expects them. */
	for (struct ibv_send_wr *w = bad; w; w = w->next) {
		q->slots[(uint16_t)w->wr_id].flags |= SLOT_REFUSED;
		q->nrefused++;
	}
	q->refused_errno = rc;
	return q_refused_err(q);
}

/* From a poll, where callbacks may run: what the post refuses fails now. */
void q_post_from_poll(struct nvmeof_queue *q)
{
	q_post_sends(q);
	/* (what a moved association held back is parked by the recovery the
	 * next poll starts: not failed here) */
	if (unlikely(q->nrefused) && !q_assoc_moved(q))
		q_finish_refused(q);
}

static void null_sgl(uint8_t *sqe) { nvme_sqe_sgl_keyed(sqe, 0, 0, 0); }

/* DPTR for len bytes at addr: in-capsule when the data goes to the target
 * and fits IOCCSZ (a second SGE straight from that memory: no copy), else a
 * keyed SGL the target RDMA-reads or -writes. Returns the SGE count. */
static int set_dptr(struct nvmeof_queue *q, struct slot *s, uint8_t *sqe, uint64_t addr,
		    uint32_t len, uint32_t lkey, uint32_t rkey, bool to_target)
{
	if (to_target && len <= q->icd_max) {
		nvme_sqe_sgl_incapsule(sqe, 0, len);
		s->sge[1] = (struct ibv_sge){.addr = addr, .length = len, .lkey = lkey};
		q->st.in_capsule++;
		return 2;
	}
	nvme_sqe_sgl_keyed(sqe, addr, len, rkey);
	return 1;
}

/* A free slot for a command of request ri; its CID in *cid. */
static inline struct slot *take_slot(struct nvmeof_queue *q, uint16_t ri, uint16_t *si_out, uint16_t *cid)
{
	uint16_t si = q->slot_free[--q->nfree_slots];
	struct slot *s = &q->slots[si];
	*cid = (uint16_t)(s->gen << SLOT_BITS | si);
	*si_out = si;
	s->state = SLOT_BUSY;
	s->flags = 0;
	s->retries = 0;
	s->req = ri;
	s->t_submit_ms = 0; /* stamped by the first housekeeping pass: no clock read per command */
	s->wr.wr_id = SEND_WRID(q, s->gen, si);
	return s;
}

/* The capsule alone goes inline in the send: in-capsule data is a second
 * SGE read from the caller's memory. */
static inline void send_slot(struct nvmeof_queue *q, struct slot *s, int nsge)
{
	s->wr.num_sge = nsge;
	s->wr.send_flags = nsge == 1 ? q->sqe_send_flags : IBV_SEND_SIGNALED;
	q->st.cmds++;
	q_chain_send(q, &s->wr);
}

/* Puts the next command of request ri into a free slot and chains its WR. */
static void issue(struct nvmeof_queue *q, uint16_t ri)
{
	struct req *r = &q->reqs[ri];
	uint16_t si, cid;
	struct slot *s = take_slot(q, ri, &si, &cid);
	uint8_t *sqe = q->sqes + (size_t)si * NVME_SQE_SIZE;
	int nsge = 1;

	switch (r->kind) {
	case REQ_IO: {
		uint32_t chunk = q->max_cmd_bytes >> r->lbads;
		uint32_t nlb = r->left < chunk ? r->left : chunk;
		uint32_t bytes = nlb << r->lbads;
		uint64_t addr = (uint64_t)(uintptr_t)r->mr->addr + r->next_off;
		nvme_sqe_rw(sqe, r->opc, cid, r->ns->nsid, r->next_lba, nlb);
		if (r->cdw12)
			put_le32(sqe + 48, get_le32(sqe + 48) | r->cdw12);
		nsge = set_dptr(q, s, sqe, addr, bytes, r->mr->lkey, r->mr->rkey, r->opc == NVME_CMD_WRITE);
		r->next_lba += nlb;
		r->next_off += bytes;
		r->left -= nlb;
		break;
	}
	case REQ_FLUSH:
		nvme_sqe_init(sqe, NVME_CMD_FLUSH, cid, r->ns->nsid);
		null_sgl(sqe);
		r->left = 0;
		break;
	case REQ_DSM: {
		uint8_t *range = q->aux + (size_t)si * NVME_DSM_RANGE_SIZE;
		nvme_dsm_range(range, r->next_lba, r->left);
		nvme_sqe_dsm_deallocate(sqe, cid, r->ns->nsid, 1);
		nsge = set_dptr(q, s, sqe, (uintptr_t)range, NVME_DSM_RANGE_SIZE, q->aux_lkey, q->aux_rkey, true);
		r->left = 0;
		break;
	}
	case REQ_RAW:
	case REQ_AER:
		memcpy(sqe, r->raw, NVME_SQE_SIZE);
		nvme_sqe_set_cid(sqe, cid);
		if (r->data_len && r->mr)
			nvme_sqe_sgl_keyed(sqe, (uintptr_t)r->mr->addr + r->off0, r->data_len, r->mr->rkey);
		else if (r->data_len)
			nvme_sqe_sgl_keyed(sqe, (uintptr_t)q_scratch_buf(q), r->data_len, q->aux_rkey);
		else
			null_sgl(sqe);
		r->left = 0;
		break;
	case REQ_USER:
		/* The caller's command; the CID is ours, and the DPTR too
		 * unless the caller wrote one (checked in passthru.c). */
		memcpy(sqe, q->user[ri].sqe, NVME_SQE_SIZE);
		nvme_sqe_set_cid(sqe, cid);
		q->user[ri].wire_cid = cid;
		if (!q->user[ri].caller_sgl) {
			sqe[1] = (uint8_t)((sqe[1] & 0x3f) | NVME_SQE_FLAGS_PSDT_SGL);
			if (r->mr)
				nvme_sqe_sgl_keyed(sqe, (uintptr_t)r->mr->addr + r->off0, r->data_len, r->mr->rkey);
			else
				null_sgl(sqe);
		}
		r->left = 0;
		break;
	case REQ_WZ: {
		uint32_t nlb = r->left < NVME_WZ_MAX_NLB ? r->left : NVME_WZ_MAX_NLB;
		nvme_sqe_write_zeroes(sqe, cid, r->ns->nsid, r->next_lba, nlb, r->cdw12);
		null_sgl(sqe);
		r->next_lba += nlb;
		r->left -= nlb;
		break;
	}
	}
	r->outstanding++;
	send_slot(q, s, nsge);
}

/* A block larger than the transfer limit cannot be sent: the limit can
 * shrink under a waiting request when a reassociation re-reads MDTS. */
static bool too_big(const struct nvmeof_queue *q, const struct req *r)
{
	return r->kind == REQ_IO && (q->max_cmd_bytes >> r->lbads) == 0;
}

/* Issues pending chunks of split requests while slots are free, in order. */
void q_refill(struct nvmeof_queue *q)
{
	while (q->pend_n) {
		uint16_t ri = q->pend[q->pend_head];
		struct req *r = &q->reqs[ri];
		if (unlikely(too_big(q, r)) && r->left) {
			r->err = NVMEOF_EINVAL;
			r->left = 0;
		}
		if (unlikely(q->replay_left)) {
			/* After a reconnect, what waited goes one request at a time,
			 * in submission order: a re-issued write cannot land after a
			 * newer write to the same blocks. */
			if (!r->replay || (q->replay_cur != NO_REQ && q->replay_cur != ri))
				return;
			q->replay_cur = ri;
		}
		/* a parked request goes again only after the quiesce time: the
		 * lost copy can no longer land, its outcome is this one's */
		if (r->left && q->nfree_slots)
			r->in_doubt = false;
		while (r->left && q->nfree_slots)
			issue(q, ri);
		if (r->left)
			return;
		q_pend_pop(q);
		if (!r->outstanding)
			q_complete_req(q, ri); /* failed while waiting */
	}
}

/* Internal commands (connect, identify, keep-alive) go on a live queue and
 * during a reconnect's Fabrics Connect; the rest wait in the FIFO while the
 * queue is not live (they go again, or fail, with the queue's recovery). */
static int refuse(const struct nvmeof_queue *q, bool internal)
{
	if (q->state == Q_LIVE || (internal ? q->state == Q_CONNECTING
					    : q->state != Q_FAILED && q->state != Q_CLOSING))
		return 0;
	return q_state_err(q);
}

int q_submit(struct nvmeof_queue *q, const struct sub *sb, nvmeof_cb cb, void *arg,
		  uint16_t *ri_out)
{
	uint16_t ri;
	/* an ended association gets nothing more, not even until the next
	 * poll notices (another queue's loss moved the controller on) */
	bool hold = q->state != Q_LIVE || q->replay_left || unlikely(q_assoc_moved(q));
	int rc;
	if (unlikely(q->state != Q_LIVE) && (rc = refuse(q, sb->kind == REQ_RAW)))
		return rc;
	if (sb->kind == REQ_RAW) {
		/* Internal commands have a request of their own, so they run
		 * even with every user request parked. */
		if (unlikely(q->rsv_busy || !q->nfree_slots))
			return nvmeof_err(NVMEOF_EQFULL, "queue %u: no slot for an internal command", q->qid);
		ri = (uint16_t)q->depth;
		q->rsv_busy = true;
	} else {
		/* Earlier split requests go first; a full queue is reported,
		 * not queued, except while reconnecting or re-issuing what
		 * waited: then requests wait behind those. */
		if (unlikely(!q->nfree_reqs || (!hold && (!q->nfree_slots || q->pend_n))))
			return nvmeof_err(NVMEOF_EQFULL, "queue %u full (%u commands in flight)", q->qid,
					  q->usable - q->nfree_slots);
		ri = q->req_free[--q->nfree_reqs];
	}
	struct req *r = &q->reqs[ri];
	r->cb = cb;
	r->arg = arg;
	r->kind = sb->kind;
	r->opc = sb->opc;
	r->ns = sb->ns;
	r->mr = sb->mr;
	if (q->count_mr && r->mr)
		__atomic_add_fetch(&r->mr->inflight, 1, __ATOMIC_RELAXED);
	r->raw = sb->raw;
	if (sb->kind == REQ_USER) {
		struct q_user *u = &q->user[ri];
		memcpy(u->sqe, sb->raw, NVME_SQE_SIZE);
		u->caller_sgl = sb->user_sgl;
		u->wire_cid = NVMEOF_CID_NONE;
		r->raw = u->sqe;
	}
	r->data_len = sb->data_len;
	r->cdw12 = sb->cdw12;
	r->lbads = sb->lbads;
	r->next_lba = sb->slba;
	r->next_off = sb->off;
	r->off0 = sb->off;
	r->slba0 = sb->slba;
	r->left = r->nlb0 = sb->nlb ? sb->nlb : 1;
	r->live = true;
	r->outstanding = 0;
	r->err = 0;
	r->status = 0;
	r->dw0 = r->dw1 = 0;
	r->queued = false;
	r->replay = false;
	r->seq = q->seq++;
	while (r->left && q->nfree_slots && !(hold && sb->kind != REQ_RAW))
		issue(q, ri);
	if (r->left)
		q_pend_push(q, ri);
	if (ri_out)
		*ri_out = ri;
	if (!q->batch)
		q_post_sends(q); /* a refusal completes the request from the next poll */
	return 0;
}

int q_check_io(struct nvmeof_queue *q, const char *op, const struct nvmeof_ns *ns,
		    uint32_t nlb, const struct nvmeof_mr *mr, size_t off, uint8_t *lbads)
{
	if (unlikely(!q || !ns || !mr || !nlb))
		return nvmeof_err(NVMEOF_EINVAL, "%s: %s", op,
				  !q ? "no queue" : !ns ? "no namespace" : !mr ? "no memory region" : "zero blocks");
	if (unlikely(mem_ctrl(mr) != q->ctrl))
		return nvmeof_err(NVMEOF_EINVAL, "%s: memory region belongs to another controller", op);
	*lbads = __atomic_load_n(&ns->lbads, __ATOMIC_RELAXED);
	uint64_t bytes = (uint64_t)nlb << *lbads;
	if (unlikely(off > mr->len || bytes > mr->len - off))
		return nvmeof_err(NVMEOF_EINVAL,
				  "%s: %u blocks of %u B at offset %zu overrun the %zu-byte region", op,
				  nlb, 1u << *lbads, off, mr->len);
	if (unlikely((q->max_cmd_bytes >> *lbads) == 0))
		return nvmeof_err(NVMEOF_EINVAL, "%s: a block of %u B exceeds the %u-byte transfer limit (MDTS)",
				  op, 1u << *lbads, q->max_cmd_bytes);
	if (unlikely(ns->ms))
		return nvmeof_err(NVMEOF_ENOTSUP, "%s: namespace %u has %u bytes of metadata per block",
				  op, ns->nsid, ns->ms);
	return 0;
}

/* The usual read or write, in one pass: valid, one command's worth, on a
 * live queue with a free slot and nothing waiting ahead of it. It leaves
 * the request and the slot as q_submit and issue() would. */
static inline bool one_command(const struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint32_t nlb,
			       const struct nvmeof_mr *mr, size_t off, uint8_t lbads)
{
	return mem_ctrl(mr) == q->ctrl && off <= mr->len && ((uint64_t)nlb << lbads) <= mr->len - off &&
	       nlb <= (q->max_cmd_bytes >> lbads) && !ns->ms && q->state == Q_LIVE && !q->pend_n &&
	       !q->replay_left && q->nfree_slots && q->nfree_reqs && !q_assoc_moved(q);
}

static inline __attribute__((always_inline)) int submit_one(struct nvmeof_queue *q, uint8_t opc, const struct nvmeof_ns *ns, uint64_t slba,
		      uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t cdw12, uint8_t lbads,
		      nvmeof_cb cb, void *arg)
{
	uint16_t ri = q->req_free[--q->nfree_reqs];
	struct req *r = &q->reqs[ri];
	uint32_t bytes = nlb << lbads;
	r->cb = cb;
	r->arg = arg;
	r->ns = ns;
	r->mr = mr;
	if (q->count_mr)
		__atomic_add_fetch(&mr->inflight, 1, __ATOMIC_RELAXED);
	r->off0 = off;
	r->slba0 = slba;
	r->nlb0 = nlb;
	r->next_lba = slba + nlb;
	r->next_off = off + bytes;
	r->left = 0;
	r->outstanding = 1;
	r->seq = q->seq++;
	r->dw0 = r->dw1 = 0;
	r->cdw12 = cdw12;
	r->err = 0;
	r->status = 0;
	r->kind = REQ_IO;
	r->opc = opc;
	r->lbads = lbads;
	r->queued = false;
	r->live = true;
	r->replay = false;

	uint16_t si, cid;
	struct slot *s = take_slot(q, ri, &si, &cid);
	uint8_t *sqe = q->sqes + (size_t)si * NVME_SQE_SIZE;
	nvme_sqe_rw(sqe, opc, cid, ns->nsid, slba, nlb);
	if (cdw12)
		put_le32(sqe + 48, get_le32(sqe + 48) | cdw12);
	send_slot(q, s, set_dptr(q, s, sqe, (uint64_t)(uintptr_t)mr->addr + off, bytes, mr->lkey, mr->rkey,
				 opc == NVME_CMD_WRITE));
	if (!q->batch)
		q_post_sends(q); /* a refusal completes the request from the next poll */
	return 0;
}

static inline int submit_io(struct nvmeof_queue *q, uint8_t opc, const struct nvmeof_ns *ns, uint64_t slba,
			    uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t cdw12, nvmeof_cb cb,
			    void *arg)
{
	uint8_t lbads;
	if (likely(q && ns && mr && nlb)) {
		lbads = __atomic_load_n(&ns->lbads, __ATOMIC_RELAXED);
		if (likely(one_command(q, ns, nlb, mr, off, lbads)))
			return submit_one(q, opc, ns, slba, nlb, mr, off, cdw12, lbads, cb, arg);
	}
	int rc = q_check_io(q, opc == NVME_CMD_READ ? "read" : "write", ns, nlb, mr, off, &lbads);
	if (rc)
		return rc;
	struct sub sb = {.kind = REQ_IO, .opc = opc, .lbads = lbads, .ns = ns, .slba = slba, .nlb = nlb,
			 .mr = mr, .off = off, .cdw12 = cdw12};
	return q_submit(q, &sb, cb, arg, NULL);
}

int q_submit_io(struct nvmeof_queue *q, uint8_t opc, const struct nvmeof_ns *ns, uint64_t slba,
		uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t cdw12, nvmeof_cb cb, void *arg)
{
	return submit_io(q, opc, ns, slba, nlb, mr, off, cdw12, cb, arg);
}

int nvmeof_read(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		struct nvmeof_mr *mr, size_t off, nvmeof_cb cb, void *arg)
{
	return submit_io(q, NVME_CMD_READ, ns, slba, nlb, mr, off, 0, cb, arg);
}

int nvmeof_write(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		 struct nvmeof_mr *mr, size_t off, nvmeof_cb cb, void *arg)
{
	return submit_io(q, NVME_CMD_WRITE, ns, slba, nlb, mr, off, 0, cb, arg);
}

int nvmeof_flush(struct nvmeof_queue *q, const struct nvmeof_ns *ns, nvmeof_cb cb, void *arg)
{
	if (!q || !ns)
		return nvmeof_err(NVMEOF_EINVAL, "flush: %s", !q ? "no queue" : "no namespace");
	struct sub sb = {.kind = REQ_FLUSH, .ns = ns};
	return q_submit(q, &sb, cb, arg, NULL);
}

int nvmeof_deallocate(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
		      uint32_t nlb, nvmeof_cb cb, void *arg)
{
	if (!q || !ns || !nlb)
		return nvmeof_err(NVMEOF_EINVAL, "deallocate: %s",
				  !q ? "no queue" : !ns ? "no namespace" : "zero blocks");
	if (!q->oncs_dsm)
		return nvmeof_err(NVMEOF_ENOTSUP,
				  "deallocate: the controller does not support Dataset Management (ONCS bit 2)");
	struct sub sb = {.kind = REQ_DSM, .ns = ns, .slba = slba, .nlb = nlb};
	return q_submit(q, &sb, cb, arg, NULL);
}

int nvmeof_queue_commit(struct nvmeof_queue *q) { return q_post_sends(q); }

/* Write flags (FUA; DEAC for Write Zeroes) as CDW12 bits, or an error. */
int q_write_flags(const char *op, uint32_t flags, uint32_t allowed, uint32_t *cdw12)
{
	if (flags & ~allowed)
		return nvmeof_err(NVMEOF_EINVAL, "%s: unknown flags 0x%x", op, flags & ~allowed);
	*cdw12 = (flags & NVMEOF_IO_FUA ? NVME_RW_FUA : 0) | (flags & NVMEOF_IO_DEAC ? NVME_WZ_DEAC : 0);
	return 0;
}

int nvmeof_write_ext(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		     struct nvmeof_mr *mr, size_t off, uint32_t flags, nvmeof_cb cb, void *arg)
{
	uint32_t cdw12;
	int rc = q_write_flags("write", flags, NVMEOF_IO_FUA, &cdw12);
	return rc ? rc : q_submit_io(q, NVME_CMD_WRITE, ns, slba, nlb, mr, off, cdw12, cb, arg);
}

int q_check_wz(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint32_t nlb, uint32_t flags, uint32_t *cdw12)
{
	if (!q || !ns || !nlb)
		return nvmeof_err(NVMEOF_EINVAL, "write zeroes: %s",
				  !q ? "no queue" : !ns ? "no namespace" : "zero blocks");
	int rc = q_write_flags("write zeroes", flags, NVMEOF_IO_FUA | NVMEOF_IO_DEAC, cdw12);
	if (rc)
		return rc;
	if (!q->oncs_wz)
		return nvmeof_err(NVMEOF_ENOTSUP,
				  "write zeroes: the controller does not support Write Zeroes (ONCS bit 3)");
	if ((flags & NVMEOF_IO_DEAC) && !(ns->dlfeat & NVME_DLFEAT_WZ_DEAC))
		return nvmeof_err(NVMEOF_ENOTSUP,
				  "write zeroes: namespace %u does not allow the deallocate bit (DLFEAT 0x%x)",
				  ns->nsid, ns->dlfeat);
	return 0;
}

int nvmeof_write_zeroes(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
			uint32_t nlb, uint32_t flags, nvmeof_cb cb, void *arg)
{
	uint32_t cdw12;
	int rc = q_check_wz(q, ns, nlb, flags, &cdw12);
	if (rc)
		return rc;
	struct sub sb = {.kind = REQ_WZ, .ns = ns, .slba = slba, .nlb = nlb, .cdw12 = cdw12};
	return q_submit(q, &sb, cb, arg, NULL);
}

int q_submit_aer(struct nvmeof_queue *q, const uint8_t *sqe, nvmeof_cb cb, void *arg)
{
	struct sub sb = {.kind = REQ_AER, .raw = sqe};
	return q_submit(q, &sb, cb, arg, NULL);
}

