/*
 * A multipath queue's creation and destruction: a queue on every path,
 * the request array sized from their depths (the I/O path allocates
 * nothing), and at the end every command completed once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mpath.h"
#include "mpath_q.h"
#include "qpriv.h"
#include "queue.h"
#include "util.h"

static void queues_count(struct nvmeof_mpath *mp, int d)
{
	pthread_mutex_lock(&mp->lock);
	mp->nqueues += (uint32_t)d;
	pthread_mutex_unlock(&mp->lock);
}

static void free_mq(struct nvmeof_mpath_queue *mq)
{
	free(mq->reqs);
	free(mq->free_ix);
	free(mq->parked);
	free(mq->retrying);
	free(mq->fo_lat);
	free(mq);
}

int mq_create_over(struct nvmeof_mpath *mp, struct nvmeof_queue *const *qs, int (*qdestroy)(struct nvmeof_queue *),
		   struct nvmeof_mpath_queue **out)
{
	struct nvmeof_mpath_queue *mq = calloc(1, sizeof(*mq));
	if (!mq)
		return nvmeof_err(NVMEOF_ENOMEM, "multipath queue: out of memory");
	mq->mp = mp;
	mq->pol = mp->o.iopolicy;
	mq->qdestroy = qdestroy;
	const char *root = mp->o.sysfs_root ? mp->o.sysfs_root : "/sys";
	int node = mp->o.numa_node >= 0 ? mp->o.numa_node : mp_cpu_node(root, sched_getcpu());
	for (uint32_t i = 0; i < mp->n; i++) {
		mq->q[i] = qs[i];
		mq->n++;
		q_set_failover(mq->q[i]);
		mq->nreqs += nvmeof_queue_depth(mq->q[i]);
		int hn = mp->p[i].numa_node;
		mq->v[i].distance = hn < 0 || node < 0 ? 1 : hn == node ? 0 : 2;
		mq->was_live[i] = true;
	}
	mq->reqs = calloc(mq->nreqs, sizeof(*mq->reqs));
	mq->free_ix = calloc(mq->nreqs, sizeof(*mq->free_ix));
	mq->parked = calloc(mq->nreqs, sizeof(*mq->parked));
	mq->retrying = calloc(mq->nreqs, sizeof(*mq->retrying));
	mq->fo_lat = calloc(1, sizeof(*mq->fo_lat));
	if (!mq->reqs || !mq->free_ix || !mq->parked || !mq->retrying || !mq->fo_lat) {
		int rc = nvmeof_err(NVMEOF_ENOMEM, "multipath queue: %u requests", mq->nreqs);
		free_mq(mq);
		return rc;
	}
	for (uint32_t i = 0; i < mq->nreqs; i++)
		mq->free_ix[i] = mq->nreqs - 1 - i;
	mq->nfree = mq->nreqs;
	mq->cursor = mq->n - 1;
	queues_count(mp, 1);
	*out = mq;
	return 0;
}

int nvmeof_mpath_queue_create(struct nvmeof_mpath *mp, const struct nvmeof_queue_opts *opts,
			      struct nvmeof_mpath_queue **out)
{
	if (!mp || !out)
		return nvmeof_err(NVMEOF_EINVAL, "multipath queue: no multipath or output");
	if (opts && opts->group)
		return nvmeof_err(NVMEOF_EINVAL, "multipath queue: a poll group belongs to one controller, not to paths");
	*out = NULL;
	struct nvmeof_queue *qs[MP_MAX_PATHS] = {0};
	uint32_t n = 0;
	int rc = 0;
	for (; n < mp->n; n++)
		if ((rc = nvmeof_queue_create(mp->p[n].c, opts, &qs[n]))) {
			nvmeof_err_prefix(rc, "multipath queue on path %s:%s", mp->p[n].traddr, mp->p[n].trsvcid);
			break;
		}
	if (!rc)
		rc = mq_create_over(mp, qs, nvmeof_queue_destroy, out);
	if (rc) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", nvmeof_errmsg());
		for (uint32_t i = 0; i < n; i++)
			nvmeof_queue_destroy(qs[i]);
		return nvmeof_err(rc, "%s", msg);
	}
	return 0;
}

/* In-flight commands fail with NVMEOF_ECLOSED, as nvmeof_queue_destroy's. */
int nvmeof_mpath_queue_destroy(struct nvmeof_mpath_queue *mq)
{
	if (!mq)
		return 0;
	/* the poll or wait that runs the callback goes on using the queue */
	if (mq->in_cb)
		return nvmeof_err(NVMEOF_EBUSY, "destroy multipath queue: called from one of its completion callbacks; "
				  "destroy it after the poll returns");
	/* From here the callbacks that run (of what waits, then of what each
	 * path queue's destroy fails) find the queue refusing (poll, wait,
	 * commit, submissions: ECLOSED), not path queues already freed. */
	mq->closing = true;
	nvmeof_err(NVMEOF_ECLOSED, "multipath queue destroyed");
	uint64_t now = nvmeof_now_ms();
	uint32_t n = mq->nparked;
	mq->nparked = 0;
	for (uint32_t k = 0; k < n; k++) {
		struct mreq *r = &mq->reqs[mq->parked[k]];
		/* a lost write still in its hold may yet land behind the old controller */
		struct nvmeof_cpl c = {.err = NVMEOF_ECLOSED, .in_doubt = r->held_at && r->hold_until > now};
		mq_finish(mq, r, &c);
	}
	int first = 0;
	for (uint32_t i = 0; i < mq->n; i++) {
		int rc = mq->qdestroy(mq->q[i]);
		if (rc && !first)
			first = rc;
	}
	queues_count(mq->mp, -1);
	free_mq(mq);
	return first;
}
