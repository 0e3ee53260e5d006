/*
 * Command slots, submission, batched completion processing, MDTS splitting.
 *
 * A logical request (what the caller submitted) becomes one or more NVMe
 * commands, each in a slot. A slot is reused only when both its send
 * completion and its response capsule have arrived, so neither the SQE
 * buffer nor in-capsule data from the caller's memory is touched early. The
 * CID is (generation << 10 | slot): a stale or duplicated response names a
 * generation that no longer lives and is dropped.
 *
 * Nothing here allocates or makes a system call after q_open, except the
 * verbs post/poll and, in waits and every 100 ms, the CM channel check.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fakewire.h"
#include "internal.h"
#include "mem.h"
#include "protocol.h"
#include "queue.h"

#define SLOT_BITS 10
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define GEN_MASK ((1u << (16 - SLOT_BITS)) - 1)
#define RECV_TAG (1ull << 63)
#define POLL_BATCH 32
#define SCRATCH_SIZE 4096
#define HOUSEKEEP_MS 100

enum slot_state { SLOT_FREE, SLOT_BUSY, SLOT_ZOMBIE };
enum { SLOT_SENT = 1, SLOT_RESP = 2 };
/* REQ_AER: an admin command that stays outstanding (no timeout, not the
 * reserved request); REQ_WZ: Write Zeroes, split at 65536 blocks. */
enum req_kind { REQ_IO, REQ_FLUSH, REQ_DSM, REQ_RAW, REQ_AER, REQ_WZ };

struct slot {
	struct ibv_send_wr wr;
	struct ibv_sge sge[2];
	uint64_t t_submit_ms;
	uint32_t dw0, dw1;
	uint16_t gen, req, status;
	uint8_t state, flags;
};

struct req {
	nvmeof_cb cb;
	void *arg;
	const struct nvmeof_ns *ns;
	struct nvmeof_mr *mr;
	const uint8_t *raw;       /* REQ_RAW: the caller's SQE */
	size_t off0;              /* where the request's data starts in mr */
	uint64_t slba0;           /* the request as submitted, to restart it whole */
	uint32_t nlb0;
	uint64_t next_lba;
	size_t next_off;
	uint32_t left;            /* blocks not yet issued */
	uint32_t chunk;           /* blocks per command */
	uint32_t outstanding;     /* commands issued, not yet finished */
	uint32_t dw0, dw1, data_len;
	uint32_t cdw12;           /* flags ORed into CDW12 (FUA, DEAC) */
	int err;
	uint16_t status;
	uint8_t kind, opc;
	bool queued;              /* in the pending FIFO */
	bool live;                /* submitted, not yet completed */
};

struct nvmeof_queue {
	struct tr_conn conn;
	struct fake_wire *fw;     /* tests only: the loopback wire instead of conn */
	struct nvmeof_ctrl *ctrl;
	struct ibv_pd *pd;
	bool own_pd, batch, dead, oncs_dsm;
	uint16_t qid;
	uint32_t depth, nrecv;
	uint32_t usable;          /* slots the target can take at once */
	uint32_t cmd_timeout_ms, icd_max, spin_us;
	uint32_t max_cmd_bytes;   /* MDTS, capped by the 24-bit keyed SGL length */
	enum nvmeof_wait_mode wait_mode;

	struct slot *slots;
	uint16_t *slot_free;
	uint32_t nfree_slots;
	struct req *reqs;
	uint16_t *req_free;
	uint32_t nfree_reqs;
	uint16_t *pend;           /* FIFO of requests with blocks not yet issued */
	uint32_t pend_head, pend_n;

	uint8_t *sqes, *rsps, *aux; /* aux: per-slot DSM range, then scratch */
	struct ibv_mr *sqe_mr, *rsp_mr, *aux_mr;
	uint32_t aux_lkey, aux_rkey;
	struct ibv_recv_wr *rwr;
	struct ibv_sge *rsge;
	struct ibv_send_wr *wr_head, *wr_tail;
	struct ibv_recv_wr *rwr_head, *rwr_tail;

	/* reconnect: the owner re-creates the connection (and, if nobody has
	 * yet, the association) while requests wait, parked */
	const struct sockaddr *dst, *src;
	int (*reconnect)(struct nvmeof_ctrl *, struct nvmeof_queue *);
	uint32_t reconnect_delay_ms, ctrl_loss_tmo_ms, assoc_gen;
	bool reconnecting, connecting, rsv_busy;
	uint64_t lost_at_ms, next_try_ms;

	uint64_t next_housekeep_ms;
	uint32_t completed;       /* requests completed by the current poll */
	struct nvmeof_queue_stats st;
};

uint64_t nvmeof_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- completion side ---- */

static void complete_req(struct nvmeof_queue *q, uint16_t ri)
{
	struct req *r = &q->reqs[ri];
	struct nvmeof_cpl cpl = {.err = r->err, .status = r->status, .cdw0 = r->dw0, .cdw1 = r->dw1};
	if (r->kind == REQ_IO && r->opc == NVME_CMD_READ && !r->err)
		DEVICE_WROTE((uint8_t *)r->mr->addr + r->off0, r->next_off - r->off0);
	else if (r->kind == REQ_RAW && r->data_len && !r->err)
		DEVICE_WROTE(r->mr ? (uint8_t *)r->mr->addr + r->off0 : q_scratch(q), r->data_len);
	nvmeof_cb cb = r->cb;
	void *arg = r->arg;
	r->live = false;
	if (ri == q->depth)
		q->rsv_busy = false; /* the reserved request of internal commands */
	else
		q->req_free[q->nfree_reqs++] = ri;
	q->completed++;
	/* Last: the callback may submit again and reuse this request. */
	if (cb)
		cb(arg, &cpl);
}

static void chunk_done(struct nvmeof_queue *q, uint16_t ri, int err, uint16_t status, uint32_t dw0,
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
		complete_req(q, ri);
}

static void release_slot(struct nvmeof_queue *q, uint16_t si)
{
	struct slot *s = &q->slots[si];
	s->state = SLOT_FREE;
	s->gen = (uint16_t)((s->gen + 1) & GEN_MASK);
	q->slot_free[q->nfree_slots++] = si;
}

static void finish_slot(struct nvmeof_queue *q, uint16_t si, int err)
{
	struct slot *s = &q->slots[si];
	bool zombie = s->state == SLOT_ZOMBIE;
	uint16_t ri = s->req, st = s->status;
	uint32_t dw0 = s->dw0, dw1 = s->dw1;
	release_slot(q, si);
	if (zombie)
		return; /* its request already completed with a timeout */
	if (!err && st)
		err = NVMEOF_ENVME;
	chunk_done(q, ri, err, st, dw0, dw1);
}

static void handle_resp(struct nvmeof_queue *q, const uint8_t *capsule)
{
	struct nvme_cqe c;
	DEVICE_WROTE(capsule, NVME_CQE_SIZE);
	nvme_cqe_parse(capsule, &c);
	uint16_t si = c.cid & SLOT_MASK;
	struct slot *s = &q->slots[si];
	if (unlikely(si >= q->depth || s->state == SLOT_FREE || s->gen != (c.cid >> SLOT_BITS) ||
		     (s->flags & SLOT_RESP))) {
		q->st.stale_cqes++;
		return;
	}
	s->flags |= SLOT_RESP;
	s->status = c.status;
	s->dw0 = c.dw0;
	s->dw1 = c.dw1;
	if (s->flags & SLOT_SENT)
		finish_slot(q, si, 0);
}

static void pend_push(struct nvmeof_queue *q, uint16_t ri)
{
	q->reqs[ri].queued = true;
	q->pend[(q->pend_head + q->pend_n) % q->depth] = ri;
	q->pend_n++;
}

static uint16_t pend_pop(struct nvmeof_queue *q)
{
	uint16_t ri = q->pend[q->pend_head];
	q->pend_head = (q->pend_head + 1) % q->depth;
	q->pend_n--;
	q->reqs[ri].queued = false;
	return ri;
}

/* Everything in flight ends with err; only when the QP can no longer touch
 * our memory (flushed or destroyed). */
static void fail_all(struct nvmeof_queue *q, int err)
{
	for (uint32_t si = 0; si < q->depth; si++)
		if (q->slots[si].state != SLOT_FREE)
			finish_slot(q, (uint16_t)si, err);
	while (q->pend_n) {
		uint16_t ri = pend_pop(q);
		struct req *r = &q->reqs[ri];
		if (!r->err)
			r->err = err;
		r->left = 0;
		if (!r->outstanding)
			complete_req(q, ri);
	}
}


/* After the QP is destroyed: every command slot comes back, and each
 * request that was on the wire starts over, whole, on the next connection
 * (reads and writes are idempotent; a write may land twice, never half). */
static void park_all(struct nvmeof_queue *q)
{
	for (uint32_t si = 0; si < q->depth; si++)
		if (q->slots[si].state != SLOT_FREE)
			release_slot(q, (uint16_t)si);
	for (uint32_t ri = 0; ri <= q->depth; ri++) {
		struct req *r = &q->reqs[ri];
		if (!r->live || r->queued)
			continue;
		r->outstanding = 0;
		if (ri == q->depth || r->err || r->kind == REQ_AER) {
			/* internal commands and failed requests end here */
			if (!r->err)
				r->err = NVMEOF_ECLOSED;
			r->left = 0;
			complete_req(q, (uint16_t)ri);
			continue;
		}
		r->next_lba = r->slba0;
		r->next_off = r->off0;
		r->left = r->nlb0;
		pend_push(q, (uint16_t)ri);
	}
}

static void mark_dead(struct nvmeof_queue *q)
{
	if (q->dead)
		return;
	q->dead = true;
	tr_disconnect(&q->conn);
}

/* Command timeouts and connection loss, checked every HOUSEKEEP_MS. */
static void housekeep(struct nvmeof_queue *q, uint64_t now)
{
	q->next_housekeep_ms = now + HOUSEKEEP_MS;
	if (!q->dead && !q->fw && tr_disconnected(&q->conn))
		mark_dead(q);
	for (uint32_t si = 0; si < q->depth; si++) {
		struct slot *s = &q->slots[si];
		if (s->state != SLOT_BUSY || now - s->t_submit_ms < q->cmd_timeout_ms ||
		    q->reqs[s->req].kind == REQ_AER)
			continue;
		/* The target may still move data for it: the slot stays taken
		 * until its response arrives or the queue goes away. */
		s->state = SLOT_ZOMBIE;
		q->st.timeouts++;
		chunk_done(q, s->req, NVMEOF_ETIMEDOUT, 0, 0, 0);
	}
}

/* ---- submission side ---- */

static void chain_send(struct nvmeof_queue *q, struct ibv_send_wr *wr)
{
	wr->next = NULL;
	if (q->wr_tail)
		q->wr_tail->next = wr;
	else
		q->wr_head = wr;
	q->wr_tail = wr;
}

static int post_sends(struct nvmeof_queue *q)
{
	struct ibv_send_wr *bad = NULL;
	if (!q->wr_head)
		return 0;
	int rc = unlikely(q->fw) ? fw_post_send(q->fw, q->wr_head, &bad)
				 : ibv_post_send(q->conn.qp, q->wr_head, &bad);
	q->st.doorbells++;
	q->wr_head = q->wr_tail = NULL;
	if (likely(!rc))
		return 0;
	/* Nothing from bad onward reached the wire: fail those at once. */
	for (struct ibv_send_wr *w = bad; w;) {
		struct ibv_send_wr *next = w->next;
		finish_slot(q, (uint16_t)w->wr_id, NVMEOF_ETRANSPORT);
		w = next;
	}
	return nvmeof_err(NVMEOF_ETRANSPORT, "ibv_post_send on queue %u: %s", q->qid, strerror(rc));
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

/* Puts the next command of request ri into a free slot and chains its WR. */
static void issue(struct nvmeof_queue *q, uint16_t ri)
{
	struct req *r = &q->reqs[ri];
	uint16_t si = q->slot_free[--q->nfree_slots];
	struct slot *s = &q->slots[si];
	uint16_t cid = (uint16_t)(s->gen << SLOT_BITS | si);
	uint8_t *sqe = q->sqes + (size_t)si * NVME_SQE_SIZE;
	int nsge = 1;

	s->state = SLOT_BUSY;
	s->flags = 0;
	s->req = ri;
	s->t_submit_ms = nvmeof_now_ms();
	switch (r->kind) {
	case REQ_IO: {
		uint32_t nlb = r->left < r->chunk ? r->left : r->chunk;
		uint32_t bytes = nlb << r->ns->lbads;
		uint64_t addr = (uint64_t)(uintptr_t)r->mr->addr + r->next_off;
		nvme_sqe_rw(sqe, r->opc, cid, r->ns->nsid, r->next_lba, nlb);
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
			nvme_sqe_sgl_keyed(sqe, (uintptr_t)q_scratch(q), r->data_len, q->aux_rkey);
		else
			null_sgl(sqe);
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
	s->wr.num_sge = nsge;
	r->outstanding++;
	q->st.cmds++;
	chain_send(q, &s->wr);
}

/* Issues pending chunks of split requests while slots are free, in order. */
static void refill(struct nvmeof_queue *q)
{
	while (q->pend_n) {
		uint16_t ri = q->pend[q->pend_head];
		struct req *r = &q->reqs[ri];
		while (r->left && q->nfree_slots)
			issue(q, ri);
		if (r->left)
			return;
		pend_pop(q);
		if (!r->outstanding)
			complete_req(q, ri); /* failed while waiting */
	}
}

struct sub {
	uint8_t kind, opc;
	const struct nvmeof_ns *ns;
	uint64_t slba;
	uint32_t nlb;
	struct nvmeof_mr *mr;
	size_t off;
	const uint8_t *raw;
	uint32_t data_len;
	uint32_t cdw12;
};

static int submit(struct nvmeof_queue *q, const struct sub *sb, nvmeof_cb cb, void *arg,
		  uint16_t *ri_out)
{
	uint16_t ri;
	if (sb->kind == REQ_RAW) {
		/* Internal commands (connect, identify, keep-alive) have a request
		 * of their own, so they run even with every user request parked. */
		if (unlikely(q->dead && !q->connecting))
			return nvmeof_err(NVMEOF_ECLOSED, "queue %u is disconnected", q->qid);
		if (unlikely(q->rsv_busy || !q->nfree_slots))
			return nvmeof_err(NVMEOF_EQFULL, "queue %u: no slot for an internal command", q->qid);
		ri = (uint16_t)q->depth;
		q->rsv_busy = true;
	} else {
		if (unlikely(q->dead && !q->reconnecting))
			return nvmeof_err(NVMEOF_ECLOSED, "queue %u is disconnected", q->qid);
		/* Earlier split requests go first; a full queue is reported,
		 * not queued, except while reconnecting: then requests wait. */
		if (unlikely(!q->nfree_reqs ||
			     (!q->reconnecting && (!q->nfree_slots || q->pend_n))))
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
	r->raw = sb->raw;
	r->data_len = sb->data_len;
	r->cdw12 = sb->cdw12;
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
	if (sb->kind == REQ_IO)
		r->chunk = q->max_cmd_bytes >> sb->ns->lbads;
	while (r->left && q->nfree_slots && !(q->reconnecting && sb->kind != REQ_RAW))
		issue(q, ri);
	if (r->left)
		pend_push(q, ri);
	if (ri_out)
		*ri_out = ri;
	return q->batch ? 0 : post_sends(q);
}

static int check_io(struct nvmeof_queue *q, const char *op, const struct nvmeof_ns *ns,
		    uint32_t nlb, const struct nvmeof_mr *mr, size_t off)
{
	if (unlikely(!q || !ns || !mr || !nlb))
		return nvmeof_err(NVMEOF_EINVAL, "%s: %s", op,
				  !q ? "no queue" : !ns ? "no namespace" : !mr ? "no memory region" : "zero blocks");
	if (unlikely(mem_ctrl(mr) != q->ctrl))
		return nvmeof_err(NVMEOF_EINVAL, "%s: memory region belongs to another controller", op);
	uint64_t bytes = (uint64_t)nlb << ns->lbads;
	if (unlikely(off > mr->len || bytes > mr->len - off))
		return nvmeof_err(NVMEOF_EINVAL,
				  "%s: %u blocks of %u B at offset %zu overrun the %zu-byte region", op,
				  nlb, ns->lba_size, off, mr->len);
	if (unlikely(ns->ms))
		return nvmeof_err(NVMEOF_ENOTSUP, "%s: namespace %u has %u bytes of metadata per block",
				  op, ns->nsid, ns->ms);
	return 0;
}

static int submit_io(struct nvmeof_queue *q, uint8_t opc, const struct nvmeof_ns *ns, uint64_t slba,
		     uint32_t nlb, struct nvmeof_mr *mr, size_t off, nvmeof_cb cb, void *arg)
{
	int rc = check_io(q, opc == NVME_CMD_READ ? "read" : "write", ns, nlb, mr, off);
	if (rc)
		return rc;
	struct sub sb = {.kind = REQ_IO, .opc = opc, .ns = ns, .slba = slba, .nlb = nlb, .mr = mr, .off = off};
	return submit(q, &sb, cb, arg, NULL);
}

int nvmeof_read(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		struct nvmeof_mr *mr, size_t off, nvmeof_cb cb, void *arg)
{
	return submit_io(q, NVME_CMD_READ, ns, slba, nlb, mr, off, cb, arg);
}

int nvmeof_write(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		 struct nvmeof_mr *mr, size_t off, nvmeof_cb cb, void *arg)
{
	return submit_io(q, NVME_CMD_WRITE, ns, slba, nlb, mr, off, cb, arg);
}

int nvmeof_flush(struct nvmeof_queue *q, const struct nvmeof_ns *ns, nvmeof_cb cb, void *arg)
{
	if (!q || !ns)
		return nvmeof_err(NVMEOF_EINVAL, "flush: %s", !q ? "no queue" : "no namespace");
	struct sub sb = {.kind = REQ_FLUSH, .ns = ns};
	return submit(q, &sb, cb, arg, NULL);
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
	return submit(q, &sb, cb, arg, NULL);
}

int nvmeof_queue_commit(struct nvmeof_queue *q) { return post_sends(q); }

/* ---- polling ---- */

static void post_recvs(struct nvmeof_queue *q)
{
	struct ibv_recv_wr *bad;
	if (!q->rwr_head)
		return;
	int rc = unlikely(q->fw) ? fw_post_recv(q->fw, q->rwr_head, &bad)
				 : ibv_post_recv(q->conn.qp, q->rwr_head, &bad);
	q->rwr_head = q->rwr_tail = NULL;
	if (unlikely(rc))
		mark_dead(q); /* a QP that refuses receives has failed */
}

static int try_reconnect(struct nvmeof_queue *q);

int nvmeof_queue_poll(struct nvmeof_queue *q, uint32_t max)
{
	struct ibv_wc wc[POLL_BATCH];
	int want = (!max || max > POLL_BATCH) ? POLL_BATCH : (int)max;
	q->completed = 0;
	if (unlikely(q->reconnecting) && !q->connecting)
		return try_reconnect(q);
	int n = unlikely(q->fw) ? fw_poll(q->fw, want, wc) : ibv_poll_cq(q->conn.cq, want, wc);
	if (unlikely(n < 0)) {
		mark_dead(q);
		n = 0;
	}
	for (int i = 0; i < n; i++) {
		const struct ibv_wc *w = &wc[i];
		if (w->wr_id & RECV_TAG) {
			uint32_t idx = (uint32_t)(w->wr_id & ~RECV_TAG);
			if (unlikely(w->status != IBV_WC_SUCCESS)) {
				mark_dead(q);
				continue;
			}
			handle_resp(q, q->rsps + (size_t)idx * NVME_CQE_SIZE);
			struct ibv_recv_wr *rw = &q->rwr[idx];
			rw->next = NULL;
			if (q->rwr_tail)
				q->rwr_tail->next = rw;
			else
				q->rwr_head = rw;
			q->rwr_tail = rw;
		} else {
			uint16_t si = (uint16_t)w->wr_id;
			struct slot *s = &q->slots[si];
			if (unlikely(w->status != IBV_WC_SUCCESS)) {
				mark_dead(q);
				continue;
			}
			s->flags |= SLOT_SENT;
			if (s->flags & SLOT_RESP)
				finish_slot(q, si, 0);
		}
	}
	if (!q->dead)
		post_recvs(q);
	uint64_t now = nvmeof_now_ms();
	if (unlikely(now >= q->next_housekeep_ms))
		housekeep(q, now);
	if (unlikely(q->dead) && q->reconnect && q->reconnect_delay_ms && !q->connecting) {
		q->reconnecting = true;
		q->lost_at_ms = now;
		q->next_try_ms = now + q->reconnect_delay_ms;
		q->wr_head = q->wr_tail = NULL;
		return (int)q->completed;
	}
	if (unlikely(q->dead)) {
		fail_all(q, NVMEOF_ECLOSED);
		q->wr_head = q->wr_tail = NULL;
		if (!q->completed)
			return nvmeof_err(NVMEOF_ECLOSED, "queue %u lost its connection", q->qid);
		return (int)q->completed;
	}
	if (!q->connecting)
		refill(q); /* parked requests wait for the Fabrics Connect */
	int rc = post_sends(q);
	return rc ? rc : (int)q->completed;
}

int nvmeof_queue_wait(struct nvmeof_queue *q, uint32_t min, int timeout_ms)
{
	uint64_t t0 = now_us(), deadline = t0 + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000u;
	uint64_t spin_end = q->wait_mode == NVMEOF_WAIT_HYBRID ? t0 + q->spin_us : t0;
	uint32_t total = 0;
	for (;;) {
		int rc = nvmeof_queue_poll(q, 0);
		if (rc < 0)
			return total ? (int)total : rc;
		total += (uint32_t)rc;
		if (total >= min)
			return (int)total;
		uint64_t now = now_us();
		if (now >= deadline)
			return (int)total;
		if (q->wait_mode == NVMEOF_WAIT_POLL || now < spin_end || q->fw)
			continue;
		if (q->reconnecting) {
			/* no CQ to sleep on until the next attempt */
			struct timespec ts = {0, 2000000};
			nanosleep(&ts, NULL);
			continue;
		}
		if ((rc = tr_arm(&q->conn)))
			return rc;
		/* A completion may have landed before the arm took effect. */
		rc = nvmeof_queue_poll(q, 0);
		if (rc < 0)
			return total ? (int)total : rc;
		total += (uint32_t)rc;
		if (total >= min)
			return (int)total;
		uint64_t left_ms = (deadline - now + 999) / 1000;
		if ((rc = tr_sleep(&q->conn, (int)(left_ms < HOUSEKEEP_MS ? left_ms : HOUSEKEEP_MS))) < 0)
			return rc;
	}
}

/* ---- synchronous calls ---- */

struct sync_ctx {
	struct nvmeof_cpl cpl;
	bool done;
};

static void sync_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct sync_ctx *c = arg;
	c->cpl = *cpl;
	c->done = true;
}

static int sync_run(struct nvmeof_queue *q, const struct sub *sb, uint32_t timeout_ms,
		    struct nvmeof_cpl *out, const char *what)
{
	struct sync_ctx c = {.done = false};
	uint16_t ri;
	/* By default the command timeout decides; the wait is a backstop. */
	uint32_t tmo = timeout_ms ? timeout_ms : q->cmd_timeout_ms + 2 * HOUSEKEEP_MS;
	uint64_t deadline = nvmeof_now_ms() + tmo;
	int rc = submit(q, sb, sync_cb, &c, &ri);
	if (rc)
		return nvmeof_err_prefix(rc, "%s", what);
	if (q->batch && (rc = post_sends(q)))
		return nvmeof_err_prefix(rc, "%s", what);
	while (!c.done) {
		uint64_t now = nvmeof_now_ms();
		if (now >= deadline) {
			q->reqs[ri].cb = NULL; /* c lives on our stack */
			return nvmeof_err(NVMEOF_ETIMEDOUT, "%s: no completion within %u ms", what, tmo);
		}
		rc = nvmeof_queue_wait(q, 1, (int)(deadline - now));
		if (rc < 0 && !c.done)
			return nvmeof_err_prefix(rc, "%s", what);
	}
	if (out)
		*out = c.cpl;
	if (c.cpl.err) {
		char buf[160];
		return nvmeof_err(c.cpl.err, "%s: %s", what, nvmeof_cpl_str(&c.cpl, buf, sizeof(buf)));
	}
	return 0;
}

static int sync_io(struct nvmeof_queue *q, uint8_t opc, const struct nvmeof_ns *ns, uint64_t slba,
		   uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t timeout_ms)
{
	const char *op = opc == NVME_CMD_READ ? "read" : "write";
	char what[128];
	int rc = check_io(q, op, ns, nlb, mr, off);
	if (rc)
		return rc;
	snprintf(what, sizeof(what), "%s nsid %u slba %llu nlb %u", op, ns->nsid,
		 (unsigned long long)slba, nlb);
	struct sub sb = {.kind = REQ_IO, .opc = opc, .ns = ns, .slba = slba, .nlb = nlb, .mr = mr,
			 .off = off};
	if (opc == NVME_CMD_WRITE && (rc = mem_before_write(mr)))
		return nvmeof_err_prefix(rc, "%s", what);
	rc = sync_run(q, &sb, timeout_ms, NULL, what);
	if (!rc && opc == NVME_CMD_READ && (rc = mem_after_read(mr)))
		return nvmeof_err_prefix(rc, "%s", what);
	return rc;
}

int nvmeof_read_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
		     uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t timeout_ms)
{
	return sync_io(q, NVME_CMD_READ, ns, slba, nlb, mr, off, timeout_ms);
}

int nvmeof_write_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
		      uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t timeout_ms)
{
	return sync_io(q, NVME_CMD_WRITE, ns, slba, nlb, mr, off, timeout_ms);
}

int nvmeof_flush_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint32_t timeout_ms)
{
	char what[64];
	if (!q || !ns)
		return nvmeof_err(NVMEOF_EINVAL, "flush: %s", !q ? "no queue" : "no namespace");
	snprintf(what, sizeof(what), "flush nsid %u", ns->nsid);
	struct sub sb = {.kind = REQ_FLUSH, .ns = ns};
	return sync_run(q, &sb, timeout_ms, NULL, what);
}

int q_exec(struct nvmeof_queue *q, const uint8_t *sqe, uint32_t data_len, uint32_t timeout_ms,
	   struct nvmeof_cpl *cpl)
{
	struct sub sb = {.kind = REQ_RAW, .raw = sqe, .data_len = data_len};
	char what[48];
	if (data_len > SCRATCH_SIZE)
		return nvmeof_err(NVMEOF_EINVAL, "command data of %u bytes exceeds %u", data_len, SCRATCH_SIZE);
	snprintf(what, sizeof(what), "%s opcode 0x%02x", sqe[0] == NVME_FABRICS_OPCODE ? "fabrics" : "admin",
		 sqe[0] == NVME_FABRICS_OPCODE ? sqe[4] : sqe[0]);
	return sync_run(q, &sb, timeout_ms, cpl, what);
}

/* ---- setup and teardown ---- */

uint8_t *q_scratch(struct nvmeof_queue *q)
{
	return q->aux + (size_t)q->depth * NVME_DSM_RANGE_SIZE;
}
struct ibv_pd *q_pd(struct nvmeof_queue *q) { return q->pd; }
struct ibv_context *q_verbs(struct nvmeof_queue *q) { return q->conn.id->verbs; }
void q_set_owner(struct nvmeof_queue *q, struct nvmeof_ctrl *ctrl, bool oncs_dsm)
{
	q->ctrl = ctrl;
	q->oncs_dsm = oncs_dsm;
}
struct nvmeof_ctrl *q_owner(struct nvmeof_queue *q) { return q->ctrl; }
uint16_t nvmeof_queue_qid(const struct nvmeof_queue *q) { return q->qid; }
uint32_t nvmeof_queue_depth(const struct nvmeof_queue *q) { return q->usable; }
uint32_t nvmeof_queue_inflight(const struct nvmeof_queue *q) { return q->depth - q->nfree_reqs; }
void q_set_reconnect(struct nvmeof_queue *q, int (*fn)(struct nvmeof_ctrl *, struct nvmeof_queue *),
		     uint32_t delay_ms, uint32_t loss_tmo_ms, uint32_t assoc_gen)
{
	q->reconnect = fn;
	q->reconnect_delay_ms = delay_ms;
	q->ctrl_loss_tmo_ms = loss_tmo_ms;
	q->assoc_gen = assoc_gen;
}
uint32_t q_assoc_gen(const struct nvmeof_queue *q) { return q->assoc_gen; }
uint32_t q_depth_asked(const struct nvmeof_queue *q) { return q->depth; }
void q_take_pd(struct nvmeof_queue *q) { q->own_pd = false; }
void nvmeof_queue_stats(const struct nvmeof_queue *q, struct nvmeof_queue_stats *out) { *out = q->st; }

static struct ibv_mr *reg(struct nvmeof_queue *q, void *p, size_t len, int access, const char *what)
{
	struct ibv_mr *mr = ibv_reg_mr(q->pd, p, len, access);
	if (!mr)
		nvmeof_err(NVMEOF_ETRANSPORT, "ibv_reg_mr of the %s (%zu bytes): %s", what, len, strerror(errno));
	return mr;
}

void q_close(struct nvmeof_queue *q)
{
	if (!q)
		return;
	tr_close(&q->conn); /* destroys the QP: nothing can touch our memory after this */
	if (q->slots)
		fail_all(q, NVMEOF_ECLOSED);
	if (q->sqe_mr)
		ibv_dereg_mr(q->sqe_mr);
	if (q->rsp_mr)
		ibv_dereg_mr(q->rsp_mr);
	if (q->aux_mr)
		ibv_dereg_mr(q->aux_mr);
	if (q->own_pd && q->pd)
		ibv_dealloc_pd(q->pd);
	free(q->sqes);
	free(q->rsps);
	free(q->aux);
	free(q->slots);
	free(q->slot_free);
	free(q->reqs);
	free(q->req_free);
	free(q->pend);
	free(q->rwr);
	free(q->rsge);
	free(q);
}

static void q_init(struct nvmeof_queue *q, const struct q_params *p)
{
	q->qid = p->qid;
	q->dst = p->dst;
	q->src = p->src;
	q->depth = p->depth;
	q->nrecv = p->depth + 1;
	q->cmd_timeout_ms = p->cmd_timeout_ms;
	q->max_cmd_bytes = p->max_xfer && p->max_xfer < NVME_KEYED_SGL_MAX_LEN ? (uint32_t)p->max_xfer
									   : NVME_KEYED_SGL_MAX_LEN;
	q->icd_max = p->qid ? p->icd_max : 0;
	q->wait_mode = p->wait_mode;
	q->spin_us = p->spin_us;
	q->batch = p->batch;
	q->next_housekeep_ms = nvmeof_now_ms() + HOUSEKEEP_MS;
}

/* Slot and request arrays, buffers; registration when pd is set. */
static int q_alloc(struct nvmeof_queue *q)
{
	if (!q->depth || q->depth > NVMEOF_MAX_DEPTH)
		return nvmeof_err(NVMEOF_EINVAL, "queue %u: depth %u outside 1..%d", q->qid, q->depth,
				  NVMEOF_MAX_DEPTH);
	size_t aux_len = (size_t)q->depth * NVME_DSM_RANGE_SIZE + SCRATCH_SIZE;
	q->slots = calloc(q->depth, sizeof(*q->slots));
	q->slot_free = calloc(q->depth, sizeof(*q->slot_free));
	q->reqs = calloc(q->depth + 1u, sizeof(*q->reqs)); /* + the reserved one */
	q->req_free = calloc(q->depth, sizeof(*q->req_free));
	q->pend = calloc(q->depth, sizeof(*q->pend));
	q->rwr = calloc(q->nrecv, sizeof(*q->rwr));
	q->rsge = calloc(q->nrecv, sizeof(*q->rsge));
	q->sqes = aligned_alloc(64, (size_t)q->depth * NVME_SQE_SIZE);
	q->rsps = aligned_alloc(64, ((size_t)q->nrecv * NVME_CQE_SIZE + 63) & ~(size_t)63);
	q->aux = aligned_alloc(4096, (aux_len + 4095) & ~(size_t)4095);
	if (!q->slots || !q->slot_free || !q->reqs || !q->req_free || !q->pend || !q->rwr ||
	    !q->rsge || !q->sqes || !q->rsps || !q->aux)
		return nvmeof_err(NVMEOF_ENOMEM, "queue %u: out of memory for %u slots", q->qid, q->depth);
	memset(q->aux, 0, aux_len);
	if (q->pd &&
	    (!(q->sqe_mr = reg(q, q->sqes, (size_t)q->depth * NVME_SQE_SIZE, 0, "SQE array")) ||
	     !(q->rsp_mr = reg(q, q->rsps, (size_t)q->nrecv * NVME_CQE_SIZE, IBV_ACCESS_LOCAL_WRITE,
			       "response capsules")) ||
	     !(q->aux_mr = reg(q, q->aux, aux_len,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
			       "scratch buffer"))))
		return NVMEOF_ETRANSPORT;
	uint32_t sqe_lkey = q->sqe_mr ? q->sqe_mr->lkey : 0, rsp_lkey = q->rsp_mr ? q->rsp_mr->lkey : 0;
	q->aux_lkey = q->aux_mr ? q->aux_mr->lkey : 0;
	q->aux_rkey = q->aux_mr ? q->aux_mr->rkey : 0;
	for (uint32_t i = 0; i < q->depth; i++) {
		struct slot *s = &q->slots[i];
		s->sge[0] = (struct ibv_sge){.addr = (uintptr_t)(q->sqes + (size_t)i * NVME_SQE_SIZE),
					     .length = NVME_SQE_SIZE, .lkey = sqe_lkey};
		s->wr = (struct ibv_send_wr){.wr_id = i, .sg_list = s->sge, .num_sge = 1,
					     .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
		q->slot_free[i] = (uint16_t)(q->depth - 1 - i);
		q->req_free[i] = (uint16_t)(q->depth - 1 - i);
	}
	q->nfree_slots = q->nfree_reqs = q->usable = q->depth;
	for (uint32_t i = 0; i < q->nrecv; i++) {
		q->rsge[i] = (struct ibv_sge){.addr = (uintptr_t)(q->rsps + (size_t)i * NVME_CQE_SIZE),
					      .length = NVME_CQE_SIZE, .lkey = rsp_lkey};
		q->rwr[i] = (struct ibv_recv_wr){.wr_id = RECV_TAG | i, .sg_list = &q->rsge[i],
						 .num_sge = 1, .next = i + 1 < q->nrecv ? &q->rwr[i + 1] : NULL};
	}
	return 0;
}

/* Connects q->conn anew on the same device and PD: resolve, QP, receives,
 * CM connect. Slots and requests are the caller's business. */
static int q_connect(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms)
{
	uint8_t priv[NVME_RDMA_CM_REQ_SIZE];
	struct ibv_recv_wr *bad;
	uint16_t crqsize;
	int rc;
	if ((rc = tr_resolve(&q->conn, q->dst, q->src, (int)timeout_ms)))
		return rc;
	if (q->pd && q->pd->context != q->conn.id->verbs)
		return nvmeof_err(NVMEOF_ETRANSPORT,
				  "the route for queue %u goes through %s, not the controller's device %s",
				  q->qid, ibv_get_device_name(q->conn.id->verbs->device),
				  ibv_get_device_name(q->pd->context->device));
	if (!q->pd) {
		if (!(q->pd = ibv_alloc_pd(q->conn.id->verbs)))
			return nvmeof_err(NVMEOF_ETRANSPORT, "ibv_alloc_pd: %s", strerror(errno));
		q->own_pd = true;
	}
	if (!q->slots && (rc = q_alloc(q)))
		return rc;
	if ((rc = tr_create_qp(&q->conn, q->pd, q->depth + 1, q->nrecv, 2)))
		return rc;
	for (uint32_t i = 0; i < q->nrecv; i++)
		q->rwr[i].next = i + 1 < q->nrecv ? &q->rwr[i + 1] : NULL;
	q->rwr_head = q->rwr_tail = NULL;
	q->wr_head = q->wr_tail = NULL;
	if ((rc = ibv_post_recv(q->conn.qp, q->rwr, &bad)))
		return nvmeof_err(NVMEOF_ETRANSPORT, "ibv_post_recv of %u receives: %s", q->nrecv, strerror(rc));
	/* HSQSIZE is 0-based; HRQSIZE counts our receive buffers. */
	nvme_rdma_cm_req(priv, q->qid, (uint16_t)q->nrecv, (uint16_t)q->depth, cntlid);
	if ((rc = tr_connect(&q->conn, priv, sizeof(priv), (int)timeout_ms, &crqsize)))
		return rc;
	/* The target may have fewer receive buffers than we asked for: never
	 * have more commands out than it can take. */
	q->usable = crqsize < q->depth ? crqsize : q->depth;
	q->nfree_slots = 0;
	for (uint32_t i = q->usable; i-- > 0;)
		if (q->slots[i].state == SLOT_FREE)
			q->slot_free[q->nfree_slots++] = (uint16_t)i;
	q->dead = false;
	return 0;
}

int q_reopen(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms)
{
	tr_close(&q->conn); /* the old QP is gone: nothing can touch our memory */
	park_all(q);
	q->dead = true;
	return q_connect(q, cntlid, timeout_ms);
}

static int try_reconnect(struct nvmeof_queue *q)
{
	uint64_t now = nvmeof_now_ms();
	if (now - q->lost_at_ms >= q->ctrl_loss_tmo_ms) {
		char why[256];
		snprintf(why, sizeof(why), "%s", nvmeof_errmsg());
		q->reconnecting = false;
		tr_close(&q->conn);
		fail_all(q, NVMEOF_ECLOSED);
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
	q->st.reconnects++;
	if (now - q->lost_at_ms > q->st.outage_ms_max)
		q->st.outage_ms_max = now - q->lost_at_ms;
	refill(q);
	rc = post_sends(q);
	return rc ? rc : (int)q->completed;
}

int q_open_fake(const struct q_params *p, struct fake_wire *fw, struct nvmeof_queue **out)
{
	struct nvmeof_queue *q = calloc(1, sizeof(*q));
	struct ibv_recv_wr *bad;
	int rc;
	*out = NULL;
	if (!q)
		return nvmeof_err(NVMEOF_ENOMEM, "queue: out of memory");
	q->fw = fw;
	q_init(q, p);
	if ((rc = q_alloc(q)) || (rc = fw_post_recv(fw, q->rwr, &bad) ? NVMEOF_ETRANSPORT : 0)) {
		q_close(q);
		return rc;
	}
	*out = q;
	return 0;
}

int q_open(const struct q_params *p, struct nvmeof_queue **out)
{
	struct nvmeof_queue *q = calloc(1, sizeof(*q));
	int rc;
	*out = NULL;
	if (!q)
		return nvmeof_err(NVMEOF_ENOMEM, "queue %u: out of memory", p->qid);
	q_init(q, p);
	q->pd = p->pd;
	if ((rc = q_connect(q, p->cntlid, p->connect_timeout_ms))) {
		q_close(q);
		return rc;
	}
	*out = q;
	return 0;
}

/* ---- FUA, Write Zeroes, admin commands for log pages and events ---- */

static int check_write_flags(struct nvmeof_queue *q, const char *op, uint32_t flags, uint32_t allowed)
{
	if (flags & ~allowed)
		return nvmeof_err(NVMEOF_EINVAL, "%s: unknown flags 0x%x", op, flags & ~allowed);
	(void)q;
	return 0;
}

static uint32_t cdw12_of(uint32_t flags)
{
	return (flags & NVMEOF_IO_FUA ? NVME_RW_FUA : 0) | (flags & NVMEOF_IO_DEAC ? NVME_WZ_DEAC : 0);
}

int nvmeof_write_ext(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		     struct nvmeof_mr *mr, size_t off, uint32_t flags, nvmeof_cb cb, void *arg)
{
	int rc = check_io(q, "write", ns, nlb, mr, off);
	if (rc || (rc = check_write_flags(q, "write", flags, NVMEOF_IO_FUA)))
		return rc;
	struct sub sb = {.kind = REQ_IO, .opc = NVME_CMD_WRITE, .ns = ns, .slba = slba, .nlb = nlb,
			 .mr = mr, .off = off, .cdw12 = cdw12_of(flags)};
	return submit(q, &sb, cb, arg, NULL);
}

int nvmeof_write_ext_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
			  uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t flags,
			  uint32_t timeout_ms)
{
	char what[128];
	int rc = check_io(q, "write", ns, nlb, mr, off);
	if (rc || (rc = check_write_flags(q, "write", flags, NVMEOF_IO_FUA)))
		return rc;
	snprintf(what, sizeof(what), "write%s nsid %u slba %llu nlb %u", flags & NVMEOF_IO_FUA ? " (FUA)" : "",
		 ns->nsid, (unsigned long long)slba, nlb);
	struct sub sb = {.kind = REQ_IO, .opc = NVME_CMD_WRITE, .ns = ns, .slba = slba, .nlb = nlb,
			 .mr = mr, .off = off, .cdw12 = cdw12_of(flags)};
	if ((rc = mem_before_write(mr)))
		return nvmeof_err_prefix(rc, "%s", what);
	return sync_run(q, &sb, timeout_ms, NULL, what);
}

static int check_wz(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint32_t nlb, uint32_t flags)
{
	if (!q || !ns || !nlb)
		return nvmeof_err(NVMEOF_EINVAL, "write zeroes: %s",
				  !q ? "no queue" : !ns ? "no namespace" : "zero blocks");
	int rc = check_write_flags(q, "write zeroes", flags, NVMEOF_IO_FUA | NVMEOF_IO_DEAC);
	if (rc)
		return rc;
	if (!q->ctrl || !(nvmeof_ctrl_info(q->ctrl)->oncs & NVME_ONCS_WRITE_ZEROES))
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
	int rc = check_wz(q, ns, nlb, flags);
	if (rc)
		return rc;
	struct sub sb = {.kind = REQ_WZ, .ns = ns, .slba = slba, .nlb = nlb, .cdw12 = cdw12_of(flags)};
	return submit(q, &sb, cb, arg, NULL);
}

int nvmeof_write_zeroes_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
			     uint32_t nlb, uint32_t flags, uint32_t timeout_ms)
{
	char what[128];
	int rc = check_wz(q, ns, nlb, flags);
	if (rc)
		return rc;
	snprintf(what, sizeof(what), "write zeroes nsid %u slba %llu nlb %u", ns->nsid,
		 (unsigned long long)slba, nlb);
	struct sub sb = {.kind = REQ_WZ, .ns = ns, .slba = slba, .nlb = nlb, .cdw12 = cdw12_of(flags)};
	return sync_run(q, &sb, timeout_ms, NULL, what);
}

int q_exec_mr(struct nvmeof_queue *q, const uint8_t *sqe, struct nvmeof_mr *mr, size_t off,
	      uint32_t len, uint32_t timeout_ms, struct nvmeof_cpl *cpl)
{
	struct sub sb = {.kind = REQ_RAW, .raw = sqe, .data_len = len, .mr = mr, .off = off};
	char what[48];
	snprintf(what, sizeof(what), "admin opcode 0x%02x", sqe[0]);
	return sync_run(q, &sb, timeout_ms, cpl, what);
}

int q_submit_aer(struct nvmeof_queue *q, const uint8_t *sqe, nvmeof_cb cb, void *arg)
{
	struct sub sb = {.kind = REQ_AER, .raw = sqe};
	return submit(q, &sb, cb, arg, NULL);
}

bool q_connected(const struct nvmeof_queue *q) { return !q->dead; }
