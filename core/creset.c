/*
 * Re-creating a lost association, as the kernel host's reset and reconnect
 * work (rdma.c: nvme_rdma_error_recovery, nvme_rdma_reconnect_ctrl_work):
 * the admin queue anew, Fabrics Connect for a new CNTLID, CC.EN, the same
 * controller answering; then, the association being new, the namespaces
 * again. Two callers, one at a time (admin_lock): the reset worker below,
 * which the state machine wakes when the admin queue is lost (cstate.c),
 * and an I/O queue's reconnect that finds the association gone
 * (reassoc.c). I/O queues still on the old association follow on their
 * own: a live one whose association was replaced reconnects
 * (q_follow_assoc), its commands parked and replayed as after any loss.
 * An I/O queue's loss tears the association down first (cstate.c,
 * ctrl_fence; the worker does it where the loss found the admin queue
 * busy), as the kernel host's error recovery does.
 */
#include <stdio.h>
#include <string.h>

#include "adminio.h"
#include "connretry.h"
#include "cpriv.h"
#include "trace.h"
#include "util.h"

#define RESET_IDLE_MS 1000 /* the worker's longest sleep while nothing is lost */

/* A new association after the old one was lost: admin queue, Fabrics
 * Connect for a new CNTLID, CC.EN; the same controller must answer.
 * Called with admin_lock held. */
static int reassociate(struct nvmeof_ctrl *c)
{
	struct nvmeof_ctrl_info ni;
	uint16_t cntlid;
	uint32_t granted = 0;
	uint16_t status = 0;
	int rc;
	pthread_mutex_lock(&c->lock);
	ni = c->info;
	pthread_mutex_unlock(&c->lock);
	trace_ctrl(&c->o, 0, "re-creating the association with %s", c->subnqn);
	bool final = false;
	if (!(rc = q_reopen(c->admin, NVMF_CNTLID_DYNAMIC, c->o.connect_timeout_ms))) {
		rc = ctrl_fabrics_connect(c, c->admin, 0, NVMEOF_ADMIN_DEPTH, NVMF_CNTLID_DYNAMIC, c->o.kato_ms,
					  &cntlid, &status);
		/* Do Not Retry on the admin Connect or its authentication (host
		 * not allowed, subsystem gone from the port), or an
		 * authentication refused or failed (a wrong secret, an impostor):
		 * every queue's attempt would meet the same answer until
		 * ctrl_loss_tmo; the kernel host stops here too. */
		final = rc && cr_reconnect_final(rc, status);
	}
	if (rc || (rc = ctrl_enable(c, &ni)) || (rc = ctrl_identify_ctrl(c, &ni))) {
		rc = nvmeof_err_prefix(rc, final && rc != NVMEOF_ENVME ? "re-create the association: the "
				       "authentication failed, which is final" : "re-create the association");
		if (final) {
			c->assoc_refused = true;
			snprintf(c->assoc_refused_msg, sizeof(c->assoc_refused_msg), "%s", nvmeof_errmsg());
		}
		return rc;
	}
	/* the same controller must answer: same subsystem, same serial */
	if (strcmp(ni.subnqn, c->info.subnqn) || strcmp(ni.serial, c->info.serial))
		return nvmeof_err(NVMEOF_ETRANSPORT,
				  "re-create the association: %s serial %s answered, not %s serial %s",
				  ni.subnqn, ni.serial, c->info.subnqn, c->info.serial);
	if ((rc = ctrl_set_num_queues(c, &granted)))
		return nvmeof_err_prefix(rc, "re-create the association");
	if (granted < c->info.max_io_queues)
		return nvmeof_err(NVMEOF_ETRANSPORT,
				  "re-create the association: the controller now grants %u I/O queues, not %u",
				  granted, c->info.max_io_queues);
	ni.cntlid = cntlid;
	ni.max_io_queues = c->info.max_io_queues;
	ni.auth_hash = c->admin_auth_hash;
	ni.auth_dhgroup = c->admin_auth_dh;
	ni.auth_bidirectional = c->admin_auth_bidir;
	pthread_mutex_lock(&c->lock);
	ni.auth_io_queues = c->info.auth_io_queues; /* I/O queues count under the lock */
	c->info = ni;
	c->ka_err = 0; /* keep-alives go to the new association */
	ctrl_ka_new_epoch(c); /* the old one's traffic restarted no timer of the new */
	/* A fence still due was the old association's: on the new one it
	 * would refuse Keep Alives and tear it down. */
	c->fence_due = false;
	/* read without the lock by a queue's finish; under it, so that a loss
	 * of an old queue (ctrl_io_lost) sees the new generation or the old
	 * state, never the new LIVE with the old generation */
	__atomic_add_fetch(&c->assoc_gen, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->lock);
	/* only now, the same controller having answered: events and user
	 * commands that waited go out on it */
	q_set_live(c->admin);
	return 0;
}


int ctrl_reassociate(struct nvmeof_ctrl *c, bool *fresh)
{
	*fresh = false;
	pthread_mutex_lock(&c->lock);
	enum ctrl_state s = c->state;
	char msg[sizeof(c->state_msg)];
	snprintf(msg, sizeof(msg), "%s", c->state_msg);
	pthread_mutex_unlock(&c->lock);
	if (s == CTRL_DEAD || s == CTRL_DELETING)
		return nvmeof_err(NVMEOF_ECLOSED, "re-create the association: controller %s: %s", ctrl_state_str(s),
				  msg[0] ? msg : "being closed");
	/* every queue's worker and the reset worker come here after the same
	 * loss: one attempt per reconnect delay, not one per caller (each
	 * refused attempt costs the target a connection) */
	uint64_t now = nvmeof_now_ms();
	if (c->reassoc_failed_ms && now - c->reassoc_failed_ms < c->o.reconnect_delay_ms) {
		pthread_mutex_lock(&c->lock);
		c->next_reset_ms = c->reassoc_failed_ms + c->o.reconnect_delay_ms; /* the reset worker's too */
		pthread_mutex_unlock(&c->lock);
		return nvmeof_err(NVMEOF_EUNREACHABLE, "re-create the association: another attempt failed %llu ms ago",
				  (unsigned long long)(now - c->reassoc_failed_ms));
	}
	ctrl_change_state(c, CTRL_CONNECTING);
	int rc = reassociate(c);
	if (!rc) {
		__atomic_store_n(&c->assoc_stale, false, __ATOMIC_RELAXED);
		c->reassoc_failed_ms = 0;
		*fresh = true;
		ctrl_change_state(c, CTRL_LIVE);
		return 0;
	}
	c->reassoc_failed_ms = nvmeof_now_ms(); /* when it failed: it may have taken seconds */
	char why[384];
	snprintf(why, sizeof(why), "%s", nvmeof_errmsg());
	pthread_mutex_lock(&c->lock);
	bool dead = c->assoc_refused || ctrl_past_loss_tmo(c, c->reassoc_failed_ms);
	if (dead)
		snprintf(c->state_msg, sizeof(c->state_msg), "%s: %s",
			 c->assoc_refused ? "refused, not tried again" : "gave up after ctrl_loss_tmo", why);
	pthread_mutex_unlock(&c->lock);
	ctrl_change_state(c, dead ? CTRL_DEAD : CTRL_RESETTING);
	nvmeof_err(rc, "%s", why);
	return rc;
}

/* Sleeps on the state until there is work: RESETTING and its next attempt
 * due, or the end (DELETING, DEAD). */
static void *reset_main(void *arg)
{
	struct nvmeof_ctrl *c = arg;
	pthread_mutex_lock(&c->lock);
	while (c->state != CTRL_DELETING && c->state != CTRL_DEAD) {
		if (c->fence_due) { /* the lost I/O queue's poll found the admin queue busy */
			ctrl_fence_unlocked(c);
			continue;
		}
		uint64_t now = nvmeof_now_ms();
		if (c->state != CTRL_RESETTING || now < c->next_reset_ms) {
			uint64_t ms = c->state == CTRL_RESETTING ? c->next_reset_ms - now : RESET_IDLE_MS;
			struct timespec ts = nvmeof_deadline_ts((uint32_t)(ms < RESET_IDLE_MS ? ms : RESET_IDLE_MS));
			pthread_cond_timedwait(&c->state_cond, &c->lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&c->lock);
		bool fresh = false;
		trace_ctrl(&c->o, 0, "reset: re-creating the association");
		ctrl_admin_take(c); /* a fence due since the loop's test first */
		/* an I/O queue's reconnect may have re-created it while this
		 * waited for the lock: a second one would end the new association
		 * and every queue that just joined it (another outage, another hold) */
		pthread_mutex_lock(&c->lock);
		bool due = c->state == CTRL_RESETTING;
		pthread_mutex_unlock(&c->lock);
		int rc = due ? ctrl_reassociate(c, &fresh) : 0;
		pthread_mutex_unlock(&c->admin_lock);
		if (rc)
			trace_ctrl(&c->o, 0, "reset failed: %s", nvmeof_errmsg());
		/* a namespace may have been removed, added or resized meanwhile */
		if (fresh && admin_ns_rescan(c, NULL, 0))
			trace_ctrl(&c->o, 0, "reset: re-reading the namespaces failed: %s", nvmeof_errmsg());
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int ctrl_reset_start(struct nvmeof_ctrl *c)
{
	int rc = pthread_create(&c->reset_thread, NULL, reset_main, c);
	if (rc)
		return nvmeof_err(NVMEOF_ENOMEM, "connect: reset thread: %s", strerror(rc));
	c->reset_running = true;
	return 0;
}

void ctrl_reset_stop(struct nvmeof_ctrl *c)
{
	ctrl_change_state(c, CTRL_DELETING);
	if (!c->reset_running)
		return;
	pthread_join(c->reset_thread, NULL);
	c->reset_running = false;
}
