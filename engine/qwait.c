/* qpairs_shared=: a job's completions from its shared pair (qshare.c).
 * A poll runs every callback of the pair, whichever job's request it was:
 * done_cb hands each completion to its job's ring (hring.h), and the job
 * takes its own from there.
 *
 * Waiting: with wait=poll each waiting job polls whenever it gets the
 * lock (trylock, so none queues up on it). Otherwise one job at a time
 * holds the pair's wait (polling, a flag): it polls under the lock, spins
 * per wait=, then arms the pair's completion channel and sleeps on its
 * descriptor without the lock, as blk-mq never sleeps holding a hardware
 * queue: the others' submissions wait only for a poll or a submit. The
 * others nap on the pair's condition variable until the holder hands them
 * a completion or lets go (when one takes over). A hand-off also kicks a
 * sleeping holder (an eventfd), since another job's poll may have taken
 * the completion its descriptor announced. Every sleep is bounded. */
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "qslot.h"

/* The longest a job that does not hold its pair's wait sleeps before it
 * looks again: a bound only (a hand-off or a letting go wakes it first). */
#define NAP_MS 10
/* The longest the holder sleeps on the channel before it polls again: the
 * descriptor says nothing of a lost connection or a timeout (nvmeof.h). */
#define CHANNEL_MS 100

void qslot_wake(struct qslot *p)
{
	if (__atomic_load_n(&p->holder_asleep, __ATOMIC_SEQ_CST)) {
		uint64_t one = 1;
		if (write(p->kick, &one, sizeof(one)) < 0) {
			/* EAGAIN only: the counter is full, the holder wakes anyway */
		}
	}
	if (!__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&p->wmu);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->wmu);
}

/* From done_cb, under the pair's lock (every poll is). */
bool qshare_done(struct job *j)
{
	__atomic_fetch_sub(&j->jq[0].qs_inflight, 1, __ATOMIC_RELAXED);
	return __atomic_load_n(&j->closing, __ATOMIC_SEQ_CST);
}

bool qshare_hand(struct job *j, struct io_u *io_u)
{
	/* cannot fail: the ring holds the job's iodepth, each io_u once; if
	 * it ever did, the loss is counted and the job's end line says so */
	if (hring_push(&j->handed, io_u))
		qslot_wake(j->jq[0].qs);
	else
		__atomic_fetch_add(&j->jq[0].qs_lost, 1, __ATOMIC_RELAXED);
	return true;
}

/* The job's completions from its ring into its events. */
static void take(struct job *j)
{
	struct io_u *io_u;
	while (j->nevents < 2 * j->nctx && (io_u = hring_pop(&j->handed)))
		j->events[j->nevents++] = io_u;
}

/* One poll of the pair, unless another job is at it: what it completed
 * (0 then), or a negative error. */
static int try_poll(struct qslot *p)
{
	int r = 0;
	if (!pthread_mutex_trylock(&p->lock)) {
		r = nvmeof_poll_group_poll(p->group, 0);
		pthread_mutex_unlock(&p->lock);
	}
	return r;
}

int qshare_poll(struct job *j)
{
	int r = try_poll(j->jq[0].qs);
	take(j);
	return r < 0 ? r : 0;
}

/* One round of the holder of the pair's wait: a poll under the lock; past
 * the spin, the channel armed (and a poll for what landed before), then,
 * with nothing to do, a sleep on the channel and kick without the lock, up
 * to ms. 0, or a negative error. */
static int hold_round(struct job *j, struct qslot *p, int ms, bool spun)
{
	pthread_mutex_lock(&p->lock);
	int r = nvmeof_poll_group_poll(p->group, 0);
	bool rest = r == 0 && spun && !hring_count(&j->handed);
	int fd = -1;
	if (rest && !nvmeof_queue_arm(p->q) && (fd = nvmeof_queue_fd(p->q)) >= 0) {
		r = nvmeof_poll_group_poll(p->group, 0);
		rest = r == 0 && !nvmeof_queue_pending(p->q);
	}
	pthread_mutex_unlock(&p->lock);
	if (r < 0 || !rest)
		return r < 0 ? r : 0;
	/* seq_cst against wake(): counted before the look at the ring, so a
	 * hand-off after the look kicks */
	__atomic_store_n(&p->holder_asleep, 1, __ATOMIC_SEQ_CST);
	if (!hring_count(&j->handed)) {
		/* no channel (a wire without one, or a queue away): a nap, then a poll */
		struct pollfd pf[2] = { { .fd = fd, .events = POLLIN }, { .fd = p->kick, .events = POLLIN } };
		int t = fd < 0 ? (ms < NAP_MS ? ms : NAP_MS) : (ms < CHANNEL_MS ? ms : CHANNEL_MS);
		__atomic_fetch_add(&p->sleeps, 1, __ATOMIC_RELAXED);
		if (poll(pf, 2, t) > 0 && (pf[1].revents & POLLIN)) {
			uint64_t v;
			if (read(p->kick, &v, sizeof(v)) < 0) {
				/* EAGAIN: another holder took it; nothing lost */
			}
		}
	}
	__atomic_store_n(&p->holder_asleep, 0, __ATOMIC_SEQ_CST);
	return 0;
}

/* Up to ms for a completion of this job's (see the top). 0, or a negative error. */
int qshare_wait(struct job *j, int ms)
{
	struct jqueue *jq = &j->jq[0];
	struct qslot *p = jq->qs;
	const struct nvmeof_ctrl_opts *o = &jq->sc->cfg.o;
	bool spin = o->wait_mode == NVMEOF_WAIT_POLL;
	uint64_t t0 = eng_mono_us();
	uint64_t until = t0 + (uint64_t)ms * 1000u;
	uint64_t spin_end = o->wait_mode == NVMEOF_WAIT_SLEEP ? t0 : t0 + o->spin_us;
	for (;;) {
		if (hring_count(&j->handed))
			break;
		uint64_t now = eng_mono_us();
		if (now >= until)
			break;
		int left = (int)((until - now + 999) / 1000);
		if (spin) {
			int r = try_poll(p);
			if (r < 0)
				return r;
			continue;
		}
		int free_ = 0;
		if (__atomic_compare_exchange_n(&p->polling, &free_, 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			int r = hold_round(j, p, left, now >= spin_end);
			__atomic_store_n(&p->polling, 0, __ATOMIC_SEQ_CST);
			qslot_wake(p); /* the next sleeper takes over the wait */
			if (r < 0)
				return r;
			continue;
		}
		/* seq_cst against wake(): a sleeper counted before it looks at the
		 * ring and the holder, so a hand-off or letting go after that
		 * look finds it and signals */
		pthread_mutex_lock(&p->wmu);
		__atomic_fetch_add(&p->sleepers, 1, __ATOMIC_SEQ_CST);
		if (!hring_count(&j->handed) && __atomic_load_n(&p->polling, __ATOMIC_SEQ_CST)) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts); /* the condition variable's clock (create) */
			int nap = left < NAP_MS ? left : NAP_MS;
			ts.tv_nsec += (long)nap * 1000000L;
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			jq->qs_naps++;
			if (pthread_cond_timedwait(&p->wake, &p->wmu, &ts) == ETIMEDOUT)
				jq->qs_naps_out++;
		}
		__atomic_fetch_sub(&p->sleepers, 1, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&p->wmu);
	}
	take(j);
	return 0;
}
