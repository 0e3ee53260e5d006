/*
 * A controller's life as one state machine, as the kernel host's
 * nvme_change_ctrl_state: NEW, LIVE, RESETTING, CONNECTING, DELETING,
 * DEAD (cpriv.h). Only ctrl_change_state moves it, and every move is
 * checked against the table below, so a late or out-of-turn change (a
 * loss reported while the association is being re-created, a reset of a
 * controller being closed) changes nothing. Who moves it:
 *  - the admin queue's loss (ctrl_admin_lost, the queue's fail hook, in
 *    the poll that saw it: a command timeout or the connection's end):
 *    LIVE to RESETTING, or to DEAD where no reconnect is configured;
 *  - an I/O queue's loss (ctrl_io_lost, its loss hook): the same, and the
 *    admin queue is torn down with it (ctrl_fence);
 *  - an attempt to re-create the association (creset.c, from the reset
 *    worker or an I/O queue's reconnect): to CONNECTING, then LIVE, or
 *    back to RESETTING, or DEAD when refused with Do Not Retry or past
 *    ctrl_loss_tmo;
 *  - the close: DELETING.
 * What the threads may do in each state (ctrl_may): keep-alive and events
 * only while LIVE; an admin command waits, up to its timeout, while the
 * association is re-created, and fails at once when DEAD or DELETING.
 */
#include <stdio.h>
#include <string.h>

#include "cpriv.h"
#include "trace.h"
#include "util.h"

const char *ctrl_state_str(enum ctrl_state s)
{
	static const char *const names[] = {"new", "live", "resetting", "connecting", "deleting", "dead"};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static bool allowed(enum ctrl_state from, enum ctrl_state to)
{
	switch (to) {
	case CTRL_LIVE:
		return from == CTRL_NEW || from == CTRL_CONNECTING;
	case CTRL_RESETTING:
		return from == CTRL_LIVE || from == CTRL_CONNECTING;
	case CTRL_CONNECTING:
		return from == CTRL_LIVE || from == CTRL_RESETTING;
	case CTRL_DEAD:
		return from == CTRL_LIVE || from == CTRL_RESETTING || from == CTRL_CONNECTING;
	case CTRL_DELETING:
		return from != CTRL_DELETING;
	default:
		return false;
	}
}

/* lock held */
static bool change_locked(struct nvmeof_ctrl *c, enum ctrl_state to)
{
	enum ctrl_state from = c->state;
	if (!allowed(from, to))
		return false;
	uint64_t now = nvmeof_now_ms();
	if (from == CTRL_LIVE && to != CTRL_DELETING)
		c->lost_ms = now; /* ctrl_loss_tmo counts from here */
	if (to == CTRL_LIVE)
		c->lost_ms = 0;
	if (to == CTRL_RESETTING)
		c->next_reset_ms = now + c->o.reconnect_delay_ms;
	c->state = to;
	pthread_cond_broadcast(&c->state_cond);
	trace_ctrl(&c->o, 0, "controller state: %s -> %s", ctrl_state_str(from), ctrl_state_str(to));
	return true;
}

bool ctrl_change_state(struct nvmeof_ctrl *c, enum ctrl_state to)
{
	pthread_mutex_lock(&c->lock);
	bool ok = change_locked(c, to);
	pthread_mutex_unlock(&c->lock);
	return ok;
}

enum ctrl_state ctrl_state(struct nvmeof_ctrl *c)
{
	pthread_mutex_lock(&c->lock);
	enum ctrl_state s = c->state;
	pthread_mutex_unlock(&c->lock);
	return s;
}

bool ctrl_may(struct nvmeof_ctrl *c, enum ctrl_act act)
{
	enum ctrl_state s = ctrl_state(c);
	switch (act) {
	case CTRL_DO_KEEP_ALIVE: /* to a lost association it only fails, and says nothing new */
	case CTRL_DO_EVENTS:     /* AERs are re-armed by the association that answers them */
		return s == CTRL_LIVE;
	case CTRL_DO_ADMIN:
		return s == CTRL_LIVE || s == CTRL_RESETTING || s == CTRL_CONNECTING;
	}
	return false;
}

void ctrl_admin_lost(void *arg)
{
	struct nvmeof_ctrl *c = arg;
	char why[384];
	snprintf(why, sizeof(why), "%s", nvmeof_errmsg());
	pthread_mutex_lock(&c->lock);
	if (c->state == CTRL_LIVE) {
		bool again = c->o.reconnect_delay_ms != 0;
		/* the queue's own words: it never reconnects, but the controller
		 * re-creates the association where it may */
		static const char none[] = " (no reconnect configured)";
		char *cut = again ? strstr(why, none) : NULL;
		if (cut)
			memmove(cut, cut + sizeof(none) - 1, strlen(cut + sizeof(none) - 1) + 1);
		snprintf(c->state_msg, sizeof(c->state_msg), "the admin queue was lost (%s)%s", why,
			 again ? "" : "; no reconnect is configured (reconnect_delay_ms)");
		change_locked(c, again ? CTRL_RESETTING : CTRL_DEAD);
	}
	pthread_mutex_unlock(&c->lock);
}

void ctrl_fence(struct nvmeof_ctrl *c)
{
	pthread_mutex_lock(&c->lock);
	bool due = c->fence_due && (c->state == CTRL_RESETTING || c->state == CTRL_DEAD);
	c->fence_due = false;
	pthread_mutex_unlock(&c->lock);
	if (!due)
		return;
	trace_ctrl(&c->o, 0, "an I/O queue was lost: tearing the association down");
	q_drop(c->admin);
	/* the live I/O queues that follow the association leave it too (they
	 * did when the fence fell due: this also sends off any that joined the
	 * old association since) */
	__atomic_add_fetch(&c->assoc_gen, 1, __ATOMIC_RELAXED);
}

void ctrl_admin_take(struct nvmeof_ctrl *c)
{
	pthread_mutex_lock(&c->admin_lock);
	ctrl_fence(c);
}

void ctrl_fence_unlocked(struct nvmeof_ctrl *c)
{
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_lock(&c->admin_lock);
	ctrl_fence(c);
	pthread_mutex_unlock(&c->admin_lock);
	pthread_mutex_lock(&c->lock);
}

/* Without it the old controller would never see the loss: the host's
 * Keep Alives would keep its KATO timer satisfied while it may still
 * execute what the lost queue had sent, and the hold of a lost write on
 * another path (which counts on keep-alive) would end before the
 * controller is even required to stop. */
void ctrl_io_lost(void *arg, struct nvmeof_queue *q)
{
	struct nvmeof_ctrl *c = arg;
	pthread_mutex_lock(&c->lock);
	/* the generation under the lock: a re-association moves it with the
	 * state (creset.c), and an old queue's loss must not fence the new */
	bool fence = c->state == CTRL_LIVE && q_assoc_gen(q) == __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED);
	if (fence) {
		bool again = c->o.reconnect_delay_ms != 0;
		/* a connection we closed ourselves says why (a command's timeout) */
		const char *why = q_lose_reason(q);
		snprintf(c->state_msg, sizeof(c->state_msg), "I/O queue %u %s%s%s, which ends the association%s",
			 nvmeof_queue_qid(q), why ? "closed its connection: " : "lost its connection", why ? why : "",
			 why ? ";" : "", again ? "" : "; no reconnect is configured (reconnect_delay_ms)");
		change_locked(c, again ? CTRL_RESETTING : CTRL_DEAD);
		c->fence_due = true;
		/* The other I/O queues leave the old association now, not when
		 * the fence runs: the admin queue may be another thread's for up
		 * to a command timeout, and their I/O meanwhile would reset the
		 * old controller's KATO timer as a Keep Alive does. */
		__atomic_add_fetch(&c->assoc_gen, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&c->lock);
	/* The admin queue may be a thread's for up to a command timeout: this
	 * poll does not wait for it; the reset worker or the keep-alive thread
	 * does. (With neither, no reconnect and no KATO, the admin queue stays
	 * up until the controller is closed: nothing tells it to stop.) */
	if (!fence)
		return;
	if (!pthread_mutex_trylock(&c->admin_lock)) {
		/* The fence fails what the admin queue carried: its callbacks run
		 * here, on this poll's thread, with the admin lock held
		 * (docs/library.md, "Threading rules"). The lost queue's own
		 * callbacks come after this hook and read this thread's message:
		 * their queue's loss, not the admin queue's. */
		char mine[NVMEOF_ERRMSG_MAX];
		snprintf(mine, sizeof(mine), "%s", nvmeof_errmsg());
		ctrl_fence(c);
		pthread_mutex_unlock(&c->admin_lock);
		nvmeof_err(0, "%s", mine);
		return;
	}
	pthread_mutex_lock(&c->lock);
	pthread_cond_signal(&c->ka_cond); /* the keep-alive thread, where there is one */
	pthread_mutex_unlock(&c->lock);
}

int ctrl_state_health(struct nvmeof_ctrl *c, char *msg, size_t len)
{
	if (c->state == CTRL_LIVE || c->state == CTRL_NEW)
		return 0;
	if (msg && len)
		snprintf(msg, len, "controller %s: %s", ctrl_state_str(c->state),
			 c->state_msg[0] ? c->state_msg : "being closed");
	return NVMEOF_ECLOSED;
}

bool ctrl_past_loss_tmo(struct nvmeof_ctrl *c, uint64_t now)
{
	uint32_t tmo = c->o.ctrl_loss_tmo_ms ? c->o.ctrl_loss_tmo_ms : Q_CTRL_LOSS_TMO_DEFAULT_MS;
	return c->lost_ms && now - c->lost_ms >= tmo;
}

int ctrl_wait_live(struct nvmeof_ctrl *c, uint32_t timeout_ms, const char *what)
{
	char msg[600];
	pthread_mutex_lock(&c->lock);
	struct timespec ts = nvmeof_deadline_ts(timeout_ms);
	while ((c->state == CTRL_RESETTING || c->state == CTRL_CONNECTING) &&
	       pthread_cond_timedwait(&c->state_cond, &c->lock, &ts) == 0)
		;
	int rc = ctrl_state_health(c, msg, sizeof(msg));
	pthread_mutex_unlock(&c->lock);
	return rc ? nvmeof_err(rc, "%s: %s", what, msg) : 0;
}
