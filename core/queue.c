/* A queue's buffers and arrays, its accessors, and teardown. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"
#include "qpriv.h"
#include "hwts.h"
#include "util.h"

uint8_t *q_scratch(struct nvmeof_queue *q) { return q_scratch_buf(q); }

struct ibv_pd *q_pd(struct nvmeof_queue *q) { return q->pd; }

void q_set_owner(struct nvmeof_queue *q, struct nvmeof_ctrl *ctrl, uint16_t oncs)
{
	q->ctrl = ctrl;
	q->oncs_dsm = oncs & NVME_ONCS_DSM;
	q->oncs_wz = oncs & NVME_ONCS_WRITE_ZEROES;
}

struct nvmeof_ctrl *q_owner(struct nvmeof_queue *q) { return q->ctrl; }

uint16_t nvmeof_queue_qid(const struct nvmeof_queue *q) { return q->qid; }

uint32_t nvmeof_queue_depth(const struct nvmeof_queue *q) { return q->usable; }

uint32_t nvmeof_queue_inflight(const struct nvmeof_queue *q) { return q->depth - q->nfree_reqs; }

uint32_t q_assoc_gen(const struct nvmeof_queue *q) { return q->assoc_gen; }

void q_set_limits(struct nvmeof_queue *q, uint32_t icd_max, uint64_t max_xfer, const uint16_t crdt[3])
{
	q->icd_max = q->qid ? icd_max : 0;
	q->max_cmd_bytes = max_xfer && max_xfer < NVME_KEYED_SGL_MAX_LEN ? (uint32_t)max_xfer
									   : NVME_KEYED_SGL_MAX_LEN;
	memcpy(q->crdt, crdt, sizeof(q->crdt));
}

uint32_t q_sqsize(const struct nvmeof_queue *q) { return q->depth; }

void q_take_pd(struct nvmeof_queue *q) { q->own_pd = false; }

void q_netdev(struct nvmeof_queue *q, char *out, size_t len)
{
	out[0] = 0;
	if (q->tr->netdev)
		q->tr->netdev(q->trc, out, len);
}

void q_set_wait_hook(struct nvmeof_queue *q, void (*fn)(void *), void *arg, uint32_t every_ms)
{
	q->wait_hook = fn;
	q->wait_hook_arg = arg;
	q->wait_hook_ms = every_ms ? every_ms : 1;
}

void q_set_fail_hook(struct nvmeof_queue *q, void (*fn)(void *), void *arg)
{
	q->fail_hook = fn;
	q->fail_hook_arg = arg;
}

void q_set_loss_hook(struct nvmeof_queue *q, void (*fn)(void *, struct nvmeof_queue *), void *arg)
{
	q->loss_hook = fn;
	q->loss_hook_arg = arg;
}

void q_note_traffic(struct nvmeof_queue *q, struct q_ka_mark *mark)
{
	q->traffic = mark;
	/* not the mark's epoch: the first poll takes it and its floor anew */
	q->ka_epoch = __atomic_load_n(&mark->epoch, __ATOMIC_RELAXED) + 1;
}

const char *q_lose_reason(const struct nvmeof_queue *q)
{
	return q->lose_why[0] ? q->lose_why : NULL;
}

void q_follow_assoc(struct nvmeof_queue *q, const uint32_t *now, uint32_t gen)
{
	q->assoc_now = now;
	q->assoc_gen = gen;
}

void nvmeof_queue_stats(const struct nvmeof_queue *q, struct nvmeof_queue_stats *out)
{
	*out = q->st;
	/* a queue's waits are its group's: one channel, one count */
	if (q->group)
		out->sleeps = q->group->waiter.st_sleeps;
}

uint64_t nvmeof_queue_sleep_timeouts(const struct nvmeof_queue *q)
{
	return q->group ? q->group->waiter.st_sleep_timeouts : 0;
}

static uint32_t spin_pct(const struct q_waiter *w, uint16_t scale)
{
	return w && w->adapting ? (uint32_t)scale * 100u / Q_SPIN_SCALE_MAX : 100u;
}

uint32_t nvmeof_queue_spin_share(const struct nvmeof_queue *q, uint32_t *lowest, uint64_t *empty_polls)
{
	const struct q_waiter *w = q && q->group ? &q->group->waiter : NULL;
	if (lowest)
		*lowest = spin_pct(w, w ? w->spin_scale_min : 0);
	if (empty_polls)
		*empty_polls = w ? w->st_empty_polls : 0;
	return spin_pct(w, w ? w->spin_scale : 0);
}

void q_set_connect_cost(struct nvmeof_queue *q, uint32_t retries, uint64_t ms)
{
	q->connect_retries = retries;
	q->connect_ms = ms;
}

uint32_t nvmeof_queue_connect_retries(const struct nvmeof_queue *q, uint64_t *ms)
{
	if (ms)
		*ms = q->connect_ms;
	return q->connect_retries;
}

static struct ibv_mr *reg(struct nvmeof_queue *q, void *p, size_t len, int access, const char *what)
{
	struct ibv_mr *mr = ibv_reg_mr(q->pd, p, len, access);
	if (!mr)
		nvmeof_err(NVMEOF_ETRANSPORT, "ibv_reg_mr of the %s (%zu bytes): %s", what, len, strerror(errno));
	return mr;
}

int q_post_all_recvs(struct nvmeof_queue *q)
{
	struct ibv_recv_wr *bad;
	/* in a group the epoch comes from the group, so a new member in a
	 * place just left never takes the old one's leftover completions */
	q->epoch = q_group_next_epoch(q->group);
	q->wrid_high = WRID_HIGH(q);
	for (uint32_t i = 0; i < q->hrqsize; i++) {
		q->rwr[i].wr_id = RECV_TAG | WRID_HIGH(q) | i;
		q->rwr[i].next = i + 1 < q->hrqsize ? &q->rwr[i + 1] : NULL;
	}
	q->rwr_head = q->rwr_tail = NULL;
	int rc = q->tr->post_recv(q->trc, q->rwr, &bad);
	return rc ? nvmeof_err(NVMEOF_ETRANSPORT, "queue %u: posting %u receives (%s): %s", q->qid, q->hrqsize,
			       q->tr->name, strerror(rc))
		  : 0;
}

void q_free(struct nvmeof_queue *q)
{
	if (q->tr && q->tr->release && q->trc)
		q->tr->release(q->trc);
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
	free(q->user);
	free(q->req_free);
	free(q->pend);
	free(q->park_tmp);
	free(q->rwr);
	free(q->hw);
	free(q->rsge);
	free(q);
}

void q_init(struct nvmeof_queue *q, const struct q_params *p)
{
	q->qid = p->qid;
	q->dst = p->dst;
	q->src = p->src;
	q->depth = p->depth;
	q->hrqsize = p->depth + 1;
	q->cmd_timeout_ms = p->cmd_timeout_ms;
	q->max_cmd_bytes = p->max_xfer && p->max_xfer < NVME_KEYED_SGL_MAX_LEN ? (uint32_t)p->max_xfer
									   : NVME_KEYED_SGL_MAX_LEN;
	q->icd_max = p->qid ? p->icd_max : 0;
	q->wait_mode = p->wait_mode;
	q->sqe_send_flags = IBV_SEND_SIGNALED;
	q->spin_us = p->spin_us;
	q->batch = p->batch;
	q->copts = p->copts;
	q->hw_khz = p->hw_khz;
	q->hw_mask = p->hw_mask;
	q->replay_cur = NO_REQ;
	memcpy(q->crdt, p->crdt, sizeof(q->crdt));
	q->next_housekeep_ms = nvmeof_now_ms() + HOUSEKEEP_MS;
}

/* Slot and request arrays, buffers; registration when pd is set. */
int q_alloc(struct nvmeof_queue *q)
{
	if (!q->depth || q->depth > NVMEOF_MAX_DEPTH)
		return nvmeof_err(NVMEOF_EINVAL, "queue %u: depth %u outside 1..%d", q->qid, q->depth,
				  NVMEOF_MAX_DEPTH);
	size_t aux_len = (size_t)q->depth * NVME_DSM_RANGE_SIZE + Q_SCRATCH_SIZE;
	q->slots = calloc(q->depth, sizeof(*q->slots));
	q->slot_free = calloc(q->depth, sizeof(*q->slot_free));
	q->reqs = calloc(q->depth + 1u, sizeof(*q->reqs)); /* + the reserved one */
	q->user = calloc(q->depth, sizeof(*q->user));
	q->req_free = calloc(q->depth, sizeof(*q->req_free));
	q->pend = calloc(q->depth, sizeof(*q->pend));
	q->park_tmp = calloc(q->depth, sizeof(*q->park_tmp));
	q->rwr = calloc(q->hrqsize, sizeof(*q->rwr));
	if (q->hw_khz && !(q->hw = calloc(1, sizeof(*q->hw))))
		return nvmeof_err(NVMEOF_ENOMEM, "queue %u: out of memory", q->qid);
	if (q->hw)
		q->hw->mask = q->hw_mask;
	q->rsge = calloc(q->hrqsize, sizeof(*q->rsge));
	q->sqes = aligned_alloc(64, (size_t)q->depth * NVME_SQE_SIZE);
	q->rsps = aligned_alloc(64, ((size_t)q->hrqsize * NVME_CQE_SIZE + 63) & ~(size_t)63);
	q->aux = aligned_alloc(4096, (aux_len + 4095) & ~(size_t)4095);
	if (!q->slots || !q->slot_free || !q->reqs || !q->user || !q->req_free || !q->pend || !q->park_tmp || !q->rwr ||
	    !q->rsge || !q->sqes || !q->rsps || !q->aux)
		return nvmeof_err(NVMEOF_ENOMEM, "queue %u: out of memory for %u slots", q->qid, q->depth);
	memset(q->aux, 0, aux_len);
	if (q->pd &&
	    (!(q->sqe_mr = reg(q, q->sqes, (size_t)q->depth * NVME_SQE_SIZE, 0, "SQE array")) ||
	     !(q->rsp_mr = reg(q, q->rsps, (size_t)q->hrqsize * NVME_CQE_SIZE, IBV_ACCESS_LOCAL_WRITE,
			       "response capsules")) ||
	     /* the target reads and writes it: ordered as the controller's data
	      * regions. Its key stays valid for the queue's life, as a data
	      * region's does (SPDK keeps persistent keys too; the kernel
	      * invalidates per command, at a work request per I/O): a target
	      * may write into it at any time, so every parser of what it holds
	      * (Identify, DH-HMAC-CHAP messages) reads each length or index
	      * once, copying it out before checking it, never twice. */
	     !(q->aux_mr = reg(q, q->aux, aux_len,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
				       (q->copts && !q->copts->strict_ordering ? IBV_ACCESS_RELAXED_ORDERING : 0),
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
	for (uint32_t i = 0; i < q->hrqsize; i++) {
		q->rsge[i] = (struct ibv_sge){.addr = (uintptr_t)(q->rsps + (size_t)i * NVME_CQE_SIZE),
					      .length = NVME_CQE_SIZE, .lkey = rsp_lkey};
		q->rwr[i] = (struct ibv_recv_wr){.wr_id = RECV_TAG | i, .sg_list = &q->rsge[i],
						 .num_sge = 1, .next = i + 1 < q->hrqsize ? &q->rwr[i + 1] : NULL};
	}
	return 0;
}

int nvmeof_queue_hw_latency(const struct nvmeof_queue *q, const double *pct, unsigned int n, uint64_t *ns,
			    uint64_t *count)
{
	if (!q || (n && (!pct || !ns)))
		return nvmeof_err(NVMEOF_EINVAL, "NIC latency: %s", !q ? "NULL queue" : "no percentiles or output");
	/* before any is used: a NaN or negative one is undefined in the
	 * conversion to a count, one above 100 would name the top bucket */
	for (unsigned int i = 0; i < n; i++)
		if (!(pct[i] >= 0 && pct[i] <= 100))
			return nvmeof_err(NVMEOF_EINVAL, "NIC latency of queue %u: percentile %g is not within 0 to 100",
					  q->qid, pct[i]);
	if (!q->hw)
		return nvmeof_err(NVMEOF_ENOTSUP, "NIC latency of queue %u: hw_timestamps is off", q->qid);
	for (unsigned int i = 0; i < n; i++)
		ns[i] = hwts_pct(q->hw, pct[i]);
	if (count)
		*count = q->hw->n;
	return 0;
}

int nvmeof_queue_hw_early(const struct nvmeof_queue *q, uint64_t *early)
{
	if (!q || !early)
		return nvmeof_err(NVMEOF_EINVAL, "NIC latency: %s", !q ? "NULL queue" : "no output");
	if (!q->hw)
		return nvmeof_err(NVMEOF_ENOTSUP, "NIC latency of queue %u: hw_timestamps is off", q->qid);
	*early = q->hw->early;
	return 0;
}
