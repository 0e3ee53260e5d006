/*
 * A queue in someone else's event loop (asyncio, epoll): the descriptor of
 * its poll group's completion channel, and the arm that makes the next
 * completion wake it. The loop sleeps in its own poll instead of ours.
 */
#include "qpriv.h"

int nvmeof_queue_fd(const struct nvmeof_queue *q)
{
	if (!q)
		return nvmeof_err(NVMEOF_EINVAL, "queue descriptor: no queue");
	const struct nvmeof_poll_group *g = q->group;
	if (!g || !g->tr->wait_fd || !g->tr->arm)
		return nvmeof_err(NVMEOF_ENOTSUP, "queue %u: no completion channel to wait on", q->qid);
	return g->tr->wait_fd(g->cqc);
}

int nvmeof_queue_arm(struct nvmeof_queue *q)
{
	if (!q)
		return nvmeof_err(NVMEOF_EINVAL, "arm: no queue");
	struct nvmeof_poll_group *g = q->group;
	if (!g || !g->tr->wait_fd || !g->tr->arm)
		return nvmeof_err(NVMEOF_ENOTSUP, "queue %u: no completion channel to arm", q->qid);
	/* The event that woke the caller, if any (the channel does not block):
	 * taken, so the descriptor is quiet until the next one. */
	if (g->tr->take_event)
		g->tr->take_event(g->cqc);
	return g->tr->arm(g->cqc);
}

bool nvmeof_queue_pending(const struct nvmeof_queue *q)
{
	return q && q->group && q_group_pending(q->group);
}
