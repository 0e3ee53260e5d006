/*
 * The inside of a multipath queue, shared by its files: mpath_io.c
 * (submission, failover), mpath_qlife.c (creation and destruction) and
 * mpath_wait.c (the wait and the counters), which call only into the
 * first.
 */
#ifndef NVMEOF_MPATH_Q_H
#define NVMEOF_MPATH_Q_H

#include "hwts.h"
#include "mpath.h"
#include "qpriv.h"

struct mreq {
	struct nvmeof_mpath_queue *mq;
	nvmeof_cb cb;
	void *arg;
	struct nvmeof_mpath_mr *mmr;
	uint64_t slba;
	size_t off;
	uint32_t nlb, flags;
	bool write, flush;
	bool failed_over;           /* a path failed it at least once */
	int path;                   /* where it is out now; -1 parked */
	uint64_t bouncing_since;    /* failed over from path to path since (0: not) */
	struct nvmeof_cpl last;     /* the last path failure, reported if no path is left */
	uint64_t waiting_since;     /* parked with no usable path since (0: not) */
	uint64_t hold_until;        /* a lost write: not issued again before (ms) */
	uint64_t held_at;           /* when its hold began */
	int held_path;              /* the path that lost it */
	int lost_from;              /* the path whose loss it is part of (-1: none) */
	int failed_path;            /* the path that failed it last, until it is out again (-1: none) */
	int loss_ix;                /* that loss's entry in loss[lost_from] (-1: past MQ_LOSS_MAX) */
	uint64_t t_submit_us;
};

/* One loss of a path (nvmeof_path_loss): times are ms since the epoch of
 * nvmeof_now_ms, 0 not yet. */
#define MQ_LOSS_MAX 8
/* A command the only usable path failed goes there again after this long. */
#define MQ_PACE_MS 10
struct mq_loss {
	uint64_t detected_ms, reissue_ms, complete_ms;
	uint32_t hold_ms, cmds;
};

struct nvmeof_mpath_queue {
	struct nvmeof_mpath *mp;
	uint32_t n;
	struct nvmeof_queue *q[MP_MAX_PATHS];
	struct mp_view v[MP_MAX_PATHS];
	bool was_live[MP_MAX_PATHS];
	struct nvmeof_path_stats st[MP_MAX_PATHS];
	uint32_t cursor;
	enum nvmeof_iopolicy pol;
	struct mreq *reqs;
	uint32_t nreqs, nfree, *free_ix;
	uint32_t *parked, nparked;
	uint32_t *retrying;        /* retry_parked's copy of parked */
	bool retrying_now;         /* retry_parked walks it (a nested poll leaves it alone) */
	uint32_t inflight, completed; /* completed: a running count (a poll returns its difference) */
	uint32_t dirty;             /* paths with submissions not yet posted (bit i: q[i]) */
	uint32_t in_cb;             /* a caller's callback runs (destroy refused) */
	struct mq_loss loss[MP_MAX_PATHS][MQ_LOSS_MAX];
	uint32_t nloss[MP_MAX_PATHS];   /* losses seen (the first MQ_LOSS_MAX kept) */
	bool loss_open[MP_MAX_PATHS];   /* the last loss goes on: the queue is not back */
	struct hwts_hist *fo_lat;       /* submission to completion of failed-over commands (ns) */
	bool closing;
	int (*qdestroy)(struct nvmeof_queue *q); /* the path queues' (tests: queues on the test wire) */
	struct q_waiter w;          /* the wait's policy and completion gaps (the first of a wait's queues) */
};


/* The loss a failed-over request is part of, if it is kept. */
static inline struct mq_loss *loss_of(struct nvmeof_mpath_queue *mq, const struct mreq *r)
{
	return r->lost_from >= 0 && r->loss_ix >= 0 ? &mq->loss[r->lost_from][r->loss_ix] : NULL;
}

/* Completes a request: back to the free list, then its callback. */
void mq_finish(struct nvmeof_mpath_queue *mq, struct mreq *r, const struct nvmeof_cpl *cpl);

/* A multipath queue over queues already open, one per path of mp, in its
 * order; on success they are the multipath queue's, closed by qdestroy. */
int mq_create_over(struct nvmeof_mpath *mp, struct nvmeof_queue *const *qs, int (*qdestroy)(struct nvmeof_queue *),
		   struct nvmeof_mpath_queue **out);

#endif
