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

#define GROUP_MAX 64

struct nvmeof_poll_group {
	struct tr_conn conn;              /* only its cq, cc, armed, unacked */
	const void *owner;                /* the controller whose queues may join */
	struct nvmeof_queue *members[GROUP_MAX];
	uint32_t nmembers, max_members;
	uint8_t next_epoch;               /* shared, so a place reused never repeats an epoch soon */
	struct q_waiter waiter;
};

uint8_t q_group_next_epoch(struct nvmeof_poll_group *g) { return ++g->next_epoch ? g->next_epoch : ++g->next_epoch; }

const struct tr_conn *q_group_conn(const struct nvmeof_poll_group *g) { return &g->conn; }

/* A lost connection flushes every WQE with a completion: a send per slot
 * (and the QP's one spare) and every receive (depth + 1). */
uint64_t q_group_cqes(uint32_t depth) { return 2ull * depth + 2; }

int q_group_create(struct ibv_context *verbs, const void *owner, uint32_t max_members, int cqe, int vector,
		   enum nvmeof_wait_mode mode, uint32_t spin_us, struct nvmeof_poll_group **out)
{
	struct nvmeof_poll_group *g = calloc(1, sizeof(*g));
	int rc;
	if (!g)
		return nvmeof_err(NVMEOF_ENOMEM, "create poll group: out of memory");
	if ((rc = tr_cq_create(&g->conn, verbs, cqe, vector))) {
		tr_cq_destroy(&g->conn);
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

bool q_group_owned_by(const struct nvmeof_poll_group *g, const void *owner) { return g->owner == owner; }

int nvmeof_poll_group_destroy(struct nvmeof_poll_group *g)
{
	if (!g)
		return nvmeof_err(NVMEOF_EINVAL, "destroy poll group: NULL group");
	if (g->nmembers)
		return nvmeof_err(NVMEOF_EBUSY, "destroy poll group: %u queue(s) still in it", g->nmembers);
	tr_cq_destroy(&g->conn);
	free(g);
	return 0;
}

int q_group_join(struct nvmeof_poll_group *g, struct nvmeof_queue *q)
{
	if (g->nmembers >= g->max_members)
		return nvmeof_err(NVMEOF_EBUSY, "poll group full: created for %u queue(s)", g->max_members);
	/* a lost connection flushes every member's WQEs into the one CQ: a
	 * member that would overrun it may not join */
	uint64_t need = 0, have = g->conn.cq->cqe > 0 ? (uint64_t)g->conn.cq->cqe : 0;
	for (uint32_t i = 0; i < GROUP_MAX; i++)
		if (g->members[i])
			need += q_group_cqes(g->members[i]->depth);
	if (need + q_group_cqes(q->depth) > have)
		return nvmeof_err(NVMEOF_EBUSY,
				  "poll group: a queue of depth %u needs %llu completion entries, %llu of the CQ's %llu are "
				  "taken (a lost connection flushes every send and receive)",
				  q->depth, (unsigned long long)q_group_cqes(q->depth), (unsigned long long)need,
				  (unsigned long long)have);
	for (uint32_t i = 0; i < GROUP_MAX; i++)
		if (!g->members[i]) {
			g->members[i] = q;
			g->nmembers++;
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
	g->nmembers--;
	q->group = NULL;
}

int nvmeof_poll_group_poll(struct nvmeof_poll_group *g, uint32_t max)
{
	struct ibv_wc wc[POLL_BATCH], mine[POLL_BATCH];
	int want = (!max || max > POLL_BATCH) ? POLL_BATCH : (int)max;
	for (uint32_t i = 0; i < GROUP_MAX; i++)
		if (g->members[i])
			g->members[i]->completed = 0;
	int n = ibv_poll_cq(g->conn.cq, want, wc);
	if (unlikely(n < 0))
		n = 0; /* a CQ error: each queue finds its connection's state below */
	if (n) {
		uint32_t first = WRID_MEMBER(wc[0].wr_id);
		bool one = true;
		for (int i = 1; i < n && one; i++)
			one = WRID_MEMBER(wc[i].wr_id) == first;
		if (one) {
			if (g->members[first])
				q_process_wcs(g->members[first], wc, n);
		} else {
			for (uint32_t m = 0; m < GROUP_MAX; m++) {
				int k = 0;
				if (!g->members[m])
					continue;
				for (int i = 0; i < n; i++)
					if (WRID_MEMBER(wc[i].wr_id) == m)
						mine[k++] = wc[i];
				if (k)
					q_process_wcs(g->members[m], mine, k);
			}
		}
	}
	/* One member's lost connection fails that member's requests (through
	 * their callbacks); the group reports an error only when every member
	 * has one, so waits on healthy members carry on. */
	int total = 0, err = 0, nerr = 0, nq = 0;
	for (uint32_t i = 0; i < GROUP_MAX; i++) {
		struct nvmeof_queue *q = g->members[i];
		if (!q)
			continue;
		nq++;
		int rc = unlikely(q->reconnecting) && !q->connecting ? q_try_reconnect(q) : q_poll_tail(q);
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

static int gw_poll(void *c) { return nvmeof_poll_group_poll(c, 0); }
static int gw_arm(void *c) { return tr_arm(&((struct nvmeof_poll_group *)c)->conn); }
static int gw_sleep(void *c, int ms) { return tr_sleep(&((struct nvmeof_poll_group *)c)->conn, ms); }
static bool gw_reconnecting(void *c)
{
	struct nvmeof_poll_group *g = c;
	for (uint32_t i = 0; i < GROUP_MAX; i++)
		if (g->members[i] && g->members[i]->reconnecting)
			return true;
	return false;
}
static uint32_t gw_inflight(void *c)
{
	struct nvmeof_poll_group *g = c;
	uint32_t n = 0;
	for (uint32_t i = 0; i < GROUP_MAX; i++)
		if (g->members[i])
			n += nvmeof_queue_inflight(g->members[i]);
	return n;
}

int nvmeof_poll_group_wait(struct nvmeof_poll_group *g, uint32_t min, int timeout_ms)
{
	struct q_waiter *w = &g->waiter;
	if (!w->poll) {
		w->ctx = g;
		w->poll = gw_poll;
		w->arm = gw_arm;
		w->sleep = gw_sleep;
		w->reconnecting = gw_reconnecting;
		w->inflight = gw_inflight;
	}
	return q_wait(w, min, timeout_ms);
}
