/* The queue pairs the jobs of one process share (qpairs_shared=), inside
 * the engine's files that make them (qshare.c) and wait on them (qwait.c). */
#ifndef QSLOT_H
#define QSLOT_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "shreg.h"

struct qslot {
	pthread_mutex_t lock;   /* submit, commit, poll: the library's queue is one thread's at a time */
	struct nvmeof_poll_group *group;
	struct nvmeof_queue *q;
	int polling;            /* a job holds the pair's wait (atomic) */
	int sleepers;           /* jobs asleep on wake (atomic) */
	int holder_asleep;      /* the holder sleeps on the channel and kick (atomic) */
	int kick;               /* eventfd: a hand-off for a sleeping holder */
	uint64_t sleeps;        /* the holders' sleeps on the channel (atomic) */
	pthread_mutex_t wmu;
	pthread_cond_t wake;
	unsigned int jobs;      /* jobs that used it, for its end-of-job line */
};

/* What a job left on a pair: requests the library still holds (parked
 * for a reconnect, replayed after it) name its contexts, its memory
 * registration and its I/O memory, so these live until the pairs' queues
 * are destroyed, the point where the library lets go of the requests. */
struct qleft {
	struct qleft *next;
	struct ioctx *ctx;
	struct nvmeof_mr *mr;
	void *mem;
	size_t len;
};

/* The N pairs of one controller: an entry of qshare.c's registry (keyed
 * by the controller), made by the first job, held by each job using it. */
struct qshare {
	struct shreg_entry e;
	struct shared_ctrl *sc;
	unsigned int n;
	struct qleft *left;     /* under the registry's lock */
	struct qslot slot[MAX_QPAIRS];
};

/* Wakes the jobs napping on p (a hand-off, or the holder let go) and
 * kicks a holder asleep on the channel. */
void qslot_wake(struct qslot *p);

#endif
