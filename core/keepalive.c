/*
 * Keep Alive from a thread of the controller: no user polling needed.
 *
 * The admin queue is one thread's at a time (admin_lock), and a thread may
 * hold it through a long synchronous command, up to the command timeout.
 * The kernel host does not serialise Keep Alive behind other admin
 * commands, and neither do we: the thread only tries the lock; when it is
 * held, the thread marks the Keep Alive due and the holder sends it, as a
 * command of its own on the admin queue, from its wait (ctrl_ka_on_wait).
 * The thread sends it itself once the lock is free and the holder has not.
 *
 * A Keep Alive the thread sends waits KATO for its answer, no longer: one
 * answered later than that (or not at all) takes the admin queue down
 * (sync.c abandons it), and the state machine ends the association, as
 * the kernel host's keep-alive timeout resets the controller (cstate.c:
 * re-created after reconnect_delay_ms, or dead without it). One sent from
 * a holder's wait is not waited for; unanswered after KATO it is reported
 * (nvmeof_ctrl_health), and the holder's command timeout bounds the rest.
 */
#include <stdio.h>

#include "cpriv.h"
#include "util.h"

enum { KA_IDLE, KA_DUE, KA_TAKEN };
#define KA_RETRY_MS 5
#define KA_HOOK_MAX_MS 100

uint32_t ctrl_ka_hook_ms(const struct nvmeof_ctrl *c)
{
	uint32_t ms = c->o.ka_interval_ms / 4;
	return ms < 1 ? 1 : ms > KA_HOOK_MAX_MS ? KA_HOOK_MAX_MS : ms;
}

/* lock held */
static void ka_record(struct nvmeof_ctrl *c, int rc, const char *why)
{
	/* What the health call reports: an error answer, or one from a
	 * holder's wait not answered within KATO (the thread's own, when late,
	 * has already ended the association: see the top). The next Keep
	 * Alive goes out on time regardless, and an answered one clears it. */
	if (rc) {
		c->ka_err = rc;
		snprintf(c->ka_msg, sizeof(c->ka_msg), "Keep Alive: %s", why);
	} else {
		c->ka_err = 0;
		c->ka_sent++;
	}
}

static void ka_async_done(void *arg, const struct nvmeof_cpl *cpl)
{
	struct nvmeof_ctrl *c = arg;
	char buf[160];
	pthread_mutex_lock(&c->lock);
	c->ka_async_out = false;
	ka_record(c, cpl->err, cpl->err ? nvmeof_cpl_str(cpl, buf, sizeof(buf)) : "");
	pthread_mutex_unlock(&c->lock);
}

void ctrl_ka_on_wait(void *arg)
{
	struct nvmeof_ctrl *c = arg;
	/* Not while the association is being made: before CC.EN the target
	 * refuses it, before the Fabrics Connect it would end the queue. */
	if (atomic_load(&c->ka_due) != KA_DUE || !c->admin_live || !q_connected(c->admin))
		return;
	pthread_mutex_lock(&c->lock);
	/* An I/O queue's loss ended the association: a Keep Alive now would
	 * keep the old controller's KATO timer satisfied past the fence. The
	 * lock stays held to the post (q_submit_aer runs no callback), so a
	 * loss either is seen here or comes after the Keep Alive left. */
	if (c->ka_async_out || c->fence_due) {
		pthread_mutex_unlock(&c->lock);
		return; /* one at a time: the thread reports one that stays unanswered */
	}
	nvme_sqe_keep_alive(c->ka_sqe, 0);
	/* A request of its own (the reserved one carries the holder's command),
	 * without a command timeout: the thread judges it against KATO. */
	if (q_submit_aer(c->admin, c->ka_sqe, ka_async_done, c)) {
		pthread_mutex_unlock(&c->lock);
		return; /* no slot: the next call, or the thread once the lock is free */
	}
	c->ka_async_out = true;
	c->ka_async_ms = nvmeof_now_ms();
	pthread_mutex_unlock(&c->lock);
	atomic_store(&c->ka_due, KA_TAKEN);
}

bool ctrl_ka_new_epoch(struct nvmeof_ctrl *c)
{
	uint32_t e = __atomic_load_n(&c->ka_mark.epoch, __ATOMIC_RELAXED);
	bool seen = e && __atomic_load_n(&c->ka_mark.seen, __ATOMIC_RELAXED) == e;
	/* 0 is never an epoch: a mark not yet set reads 0 */
	__atomic_store_n(&c->ka_mark.epoch, e + 1 ? e + 1 : 1, __ATOMIC_RELAXED);
	return seen;
}

/* One Keep Alive, now. lock held; dropped meanwhile. */
static void ka_send(struct nvmeof_ctrl *c)
{
	if (c->ka_async_out && nvmeof_now_ms() - c->ka_async_ms >= c->o.kato_ms)
		ka_record(c, NVMEOF_ETIMEDOUT, "the last one sent from an admin command's wait is not answered "
					       "within KATO");
	/* I/O submitted since the last check completed: the controller
	 * (TBKAS) processed it after that check and restarted its timer. A
	 * Keep Alive now would only add a deadline a busy but live controller
	 * may miss. The answers also say it is alive: a Keep Alive's error
	 * goes, unless one sent from a holder's wait is still out. */
	if (__atomic_load_n(&c->tbkas, __ATOMIC_RELAXED) && ctrl_ka_new_epoch(c)) {
		c->ka_skipped++;
		if (!c->ka_async_out)
			c->ka_err = 0;
		return;
	}
	atomic_store(&c->ka_due, KA_DUE);
	/* Not once an I/O queue's loss has ended the association (ctrl_io_lost,
	 * seen while this waited for the admin lock): the fence comes instead
	 * (ctrl_ka_main), and a Keep Alive before it would keep the old
	 * controller's KATO timer satisfied. */
	while (!c->ka_stop && !c->fence_due && c->state == CTRL_LIVE) {
		pthread_mutex_unlock(&c->lock);
		if (!pthread_mutex_trylock(&c->admin_lock)) {
			int rc = 0;
			ctrl_fence(c); /* one due since the loop's test: it comes first */
			pthread_mutex_lock(&c->lock);
			bool gone = c->fence_due || c->state != CTRL_LIVE;
			pthread_mutex_unlock(&c->lock);
			/* A loss after this test still sees this one Keep Alive go
			 * out (q_exec waits and runs callbacks: not under the lock).
			 * It left before the loss was known, as one sent just before
			 * it would have: the hold counts 2 x KATO from the loss, and
			 * the fence stops everything after it. */
			/* unless the last holder sent it already */
			bool mine = !gone && atomic_exchange(&c->ka_due, KA_IDLE) == KA_DUE;
			if (gone)
				atomic_store(&c->ka_due, KA_IDLE);
			if (mine) {
				uint8_t sqe[NVME_SQE_SIZE];
				nvme_sqe_keep_alive(sqe, 0);
				/* the timeout is KATO: an answer later than that no longer helps */
				rc = q_exec(c->admin, sqe, 0, c->o.kato_ms, NULL);
			}
			pthread_mutex_unlock(&c->admin_lock);
			pthread_mutex_lock(&c->lock);
			if (mine)
				ka_record(c, rc, nvmeof_errmsg());
			return;
		}
		pthread_mutex_lock(&c->lock);
		if (atomic_load(&c->ka_due) == KA_TAKEN)
			break; /* the holder sent it; its answer is recorded when it comes */
		struct timespec ts = nvmeof_deadline_ts(KA_RETRY_MS);
		pthread_cond_timedwait(&c->ka_cond, &c->lock, &ts);
	}
	atomic_store(&c->ka_due, KA_IDLE);
}

/* The check's period. With TBKAS half the interval, as the kernel host's:
 * an I/O answered just after a check defers the Keep Alive by up to two
 * periods, so it still goes out within KATO/2 of that I/O. */
static uint32_t ka_period_ms(const struct nvmeof_ctrl *c)
{
	uint32_t ms = c->o.ka_interval_ms;
	if (__atomic_load_n(&c->tbkas, __ATOMIC_RELAXED))
		ms /= 2;
	return ms ? ms : 1;
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Keep Alive on the admin queue every ka_interval_ms, so the target keeps
 * the association without the user ever touching the admin queue. The
 * checks keep their pace from the first one, not from each one's end: a
 * Keep Alive's round trip (the thread waits for its answer) does not
 * space them further apart (SPDK's host schedules from the send, the
 * kernel's subtracts the round trip): one answered after the next check's
 * time has that check run at once. */
void *ctrl_ka_main(void *arg)
{
	struct nvmeof_ctrl *c = arg;
	pthread_mutex_lock(&c->lock);
	ctrl_ka_new_epoch(c); /* the first: I/O from now on counts at the first check */
	struct timespec ts = nvmeof_deadline_ts(ka_period_ms(c));
	while (!c->ka_stop) {
		while (!c->ka_stop && !c->fence_due && pthread_cond_timedwait(&c->ka_cond, &c->lock, &ts) == 0)
			;
		if (c->ka_stop)
			break;
		if (c->fence_due) { /* an I/O queue's loss found the admin queue busy (cstate.c) */
			ctrl_fence_unlocked(c);
			ts = nvmeof_deadline_ts(ka_period_ms(c));
			continue;
		}
		struct timespec now = nvmeof_deadline_ts(0);
		ts = nvmeof_ts_add_ms(ts, ka_period_ms(c));
		if (ts_before(&ts, &now)) /* this check came late: the next a period on */
			ts = nvmeof_deadline_ts(ka_period_ms(c));
		/* to a lost association it would only fail: the state machine
		 * re-creates it, and the health call says so meanwhile */
		pthread_mutex_unlock(&c->lock);
		bool may = ctrl_may(c, CTRL_DO_KEEP_ALIVE);
		pthread_mutex_lock(&c->lock);
		if (may)
			ka_send(c);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

void ctrl_ka_stop(struct nvmeof_ctrl *c)
{
	if (!c->ka_running)
		return;
	pthread_mutex_lock(&c->lock);
	c->ka_stop = true;
	pthread_cond_signal(&c->ka_cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->ka_thread, NULL);
	c->ka_running = false;
}

int nvmeof_ctrl_health(struct nvmeof_ctrl *c, char *msg, size_t len)
{
	pthread_mutex_lock(&c->lock);
	int rc = ctrl_state_health(c, msg, len); /* a lost association first: it says more */
	if (!rc && (rc = c->ka_err) && msg && len)
		snprintf(msg, len, "%s", c->ka_msg);
	else if (!rc && msg && len)
		snprintf(msg, len, "healthy");
	pthread_mutex_unlock(&c->lock);
	return rc;
}

uint64_t nvmeof_ctrl_keep_alives(struct nvmeof_ctrl *c)
{
	pthread_mutex_lock(&c->lock);
	uint64_t n = c->ka_sent;
	pthread_mutex_unlock(&c->lock);
	return n;
}
