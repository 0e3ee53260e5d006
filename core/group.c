/*
 * Poll groups: queues of one controller that share one completion queue and
 * one completion channel, polled and waited on as one (SPDK's poll group).
 * A thread that drives several queue pairs polls one CQ per batch and
 * sleeps on one channel, instead of once per queue. Each work completion
 * names its queue in its wr_id (see qpriv.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qpriv.h"

/* Atomic: a member's reconnect worker takes one while the group runs. */
uint8_t q_group_next_epoch(struct nvmeof_poll_group *g)
{
	uint8_t e = __atomic_add_fetch(&g->next_epoch, 1, __ATOMIC_RELAXED);
	return e ? e : __atomic_add_fetch(&g->next_epoch, 1, __ATOMIC_RELAXED);
}

/* A lost connection flushes every WQE with a completion: a send per slot
 * (and the QP's one spare) and every receive (depth + 1). */
uint64_t q_group_cqes(uint32_t depth) { return 2ull * depth + 2; }

int q_group_create(const struct q_transport *tr, void *dev, const void *owner, uint32_t max_members, int cqe,
		   int vector, bool hw_ts, enum nvmeof_wait_mode mode, uint32_t spin_us, struct nvmeof_poll_group **out)
{
	struct nvmeof_poll_group *g = calloc(1, sizeof(*g));
	int rc;
	if (!g)
		return nvmeof_err(NVMEOF_ENOMEM, "create poll group: out of memory");
	g->tr = tr;
	g->vector = vector; /* the transport's cq_open says which it took */
	g->hw_ts = hw_ts;
	if ((rc = tr->cq_open(g, dev, cqe, vector))) {
		tr->cq_close(g);
		free(g);
		return nvmeof_err_prefix(rc, "create poll group");
	}
	g->owner = owner;
	g->max_members = max_members;
	g->waiter.mode = mode;
	g->waiter.spin_us = spin_us;
	*out = g;
	return 0;
}

int q_group_of_one(struct nvmeof_queue *q, void *dev)
{
	struct nvmeof_poll_group *g;
	int rc = q_group_create(q->tr, dev, q->ctrl, 1, (int)q_group_cqes(q->depth), q->qid, q->hw_khz != 0, q->wait_mode,
				q->spin_us, &g);
	if (rc)
		return nvmeof_err_prefix(rc, "queue %u", q->qid);
	if ((rc = q_group_join(g, q))) {
		nvmeof_poll_group_destroy(g);
		return rc;
	}
	q->own_group = true;
	return 0;
}

bool q_group_owned_by(const struct nvmeof_poll_group *g, const void *owner) { return g->owner == owner; }

int nvmeof_poll_group_comp_vector(const struct nvmeof_poll_group *g) { return g ? g->vector : -1; }

int nvmeof_poll_group_destroy(struct nvmeof_poll_group *g)
{
	if (!g)
		return nvmeof_err(NVMEOF_EINVAL, "destroy poll group: NULL group");
	if (g->nmembers)
		return nvmeof_err(NVMEOF_EBUSY, "destroy poll group: %u queue(s) still in it", g->nmembers);
	q_waiter_uncount(&g->waiter);
	g->tr->cq_close(g);
	free(g);
	return 0;
}

int q_group_join(struct nvmeof_poll_group *g, struct nvmeof_queue *q)
{
	if (g->nmembers >= g->max_members)
		return nvmeof_err(NVMEOF_EBUSY, "poll group full: created for %u queue(s)", g->max_members);
	/* a lost connection flushes every member's WQEs into the one CQ: a
	 * member that would overrun it may not join */
	uint64_t need = 0, have = g->cqe_cap;
	for (uint32_t i = 0; i < g->nmembers; i++)
		need += q_group_cqes(g->list[i]->depth);
	if (need + q_group_cqes(q->depth) > have)
		return nvmeof_err(NVMEOF_EBUSY,
				  "poll group: a queue of depth %u needs %llu completion entries, %llu of the CQ's %llu are "
				  "taken (a lost connection flushes every send and receive)",
				  q->depth, (unsigned long long)q_group_cqes(q->depth), (unsigned long long)need,
				  (unsigned long long)have);
	for (uint32_t i = 0; i < GROUP_MAX; i++)
		if (!g->members[i]) {
			g->members[i] = q;
			g->list[g->nmembers++] = q;
			q->group = g;
			q->member = (uint8_t)i;
			return 0;
		}
	return nvmeof_err(NVMEOF_EBUSY, "poll group full (%d queues)", GROUP_MAX);
}

void q_group_leave(struct nvmeof_queue *q)
{
	struct nvmeof_poll_group *g = q->group;
	if (!g)
		return;
	g->members[q->member] = NULL;
	for (uint32_t i = 0; i < g->nmembers; i++)
		if (g->list[i] == q) {
			g->list[i] = g->list[--g->nmembers];
			break;
		}
	q->group = NULL;
	if (q->own_group) {
		q->own_group = false;
		nvmeof_poll_group_destroy(g);
	}
}

