/* The I/O queues' reconnect: the association first where it is gone (creset.c). */
#include <stdio.h>
#include <string.h>

#include "adminio.h"
#include "connretry.h"
#include "cpriv.h"
#include "trace.h"
#include "util.h"

/* An I/O queue's reconnect attempt, first half, on the queue's worker
 * thread: every queue reconnects itself; the association is re-created
 * first when this queue is the first to notice the loss, when the admin
 * queue is down (another queue's attempt may have re-created it and the
 * target dropped that one too), or when a Connect named a controller the
 * target no longer has. Otherwise a queue would Fabrics-Connect to a dead
 * CNTLID until ctrl_loss_tmo. After a new association the namespaces are
 * read again: one may have been removed, added, resized or reformatted
 * during the outage. Then the new connection and its Connect, which the
 * queue's poll sends. */
void (*reassoc_test_hook)(struct nvmeof_ctrl *c);
static int reconnect_prepare(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	int rc = 0;
	bool fresh = false;
	uint16_t qid = nvmeof_queue_qid(q);
	uint8_t sqe[NVME_SQE_SIZE];
	/* another queue's worker may be re-creating the association; a fence
	 * still due runs first (before anything else goes out on the old one) */
	ctrl_admin_take(c);
	if (q_reconnect_cancelled(q)) {
		pthread_mutex_unlock(&c->admin_lock);
		return nvmeof_err(NVMEOF_ECLOSED, "reconnect queue %u: given up", qid);
	}
	if (c->assoc_refused) {
		q_reconnect_final(q);
		rc = nvmeof_err(NVMEOF_ENVME, "%s", c->assoc_refused_msg); /* refused() names the queue */
		pthread_mutex_unlock(&c->admin_lock);
		return rc;
	}
	if (ctrl_state(c) == CTRL_DEAD) {
		q_reconnect_final(q); /* the controller gave up: so does each of its queues */
		rc = ctrl_reassociate(c, &fresh);
		pthread_mutex_unlock(&c->admin_lock);
		return rc;
	}
	/* Not LIVE: an I/O queue's loss ended the association (ctrl_io_lost
	 * moved the generation already, so this queue's no longer matches),
	 * and a Connect to the old CNTLID would join what is being fenced. */
	if (q_assoc_gen(q) == __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED) || !q_connected(c->admin) ||
	    ctrl_state(c) != CTRL_LIVE ||
	    __atomic_load_n(&c->assoc_stale, __ATOMIC_RELAXED)) {
		if ((rc = ctrl_reassociate(c, &fresh)) && c->assoc_refused)
			q_reconnect_final(q);
	}
	if (reassoc_test_hook)
		reassoc_test_hook(c);
	/* The state and the generation together: another queue's loss
	 * between a check of one and a read of the other would tag a Connect
	 * to the old CNTLID with the new generation, and the queue would go
	 * live on the controller being fenced. An association that ended
	 * here fails the attempt; the next, after the delay, runs the fence
	 * and re-creates it. */
	pthread_mutex_lock(&c->lock);
	bool live = c->state == CTRL_LIVE;
	uint16_t cntlid = c->info.cntlid;
	uint32_t gen = __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED);
	uint32_t icd = c->info.in_capsule_max, wire_icd = ctrl_wire_icd(&c->info);
	uint64_t max_xfer = c->info.max_xfer;
	uint16_t crdt[3] = {c->info.crdt[0], c->info.crdt[1], c->info.crdt[2]};
	uint16_t cqt = c->info.cqt, kas = c->info.kas;
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->admin_lock);
	if (rc)
		return rc;
	if (!live)
		return nvmeof_err(NVMEOF_ECLOSED, "reconnect queue %u: the association ended while it was read", qid);
	if (fresh && (rc = admin_ns_rescan(c, NULL, 0)))
		return nvmeof_err_prefix(rc, "re-read the namespaces after re-creating the association");
	if (q_reconnect_cancelled(q))
		return nvmeof_err(NVMEOF_ECLOSED, "reconnect queue %u: given up", qid);
	/* IOCCSZ and MDTS may differ on the new controller: they apply before
	 * anything is re-issued */
	q_stage_limits(q, icd, max_xfer, crdt, gen);
	/* the new controller's CQT holds what this connection loses next */
	q_set_quiesce(q, q_hold_rule(Q_QUIESCE_DEFAULT_MS, cqt, c->o.kato_ms, kas));
	q_stage_wire_icd(q, wire_icd);
	if ((rc = q_reopen_wire(q, cntlid, c->o.connect_timeout_ms)) ||
	    (rc = ctrl_connect_build(c, q, qid, (uint16_t)q_sqsize(q), cntlid, 0, sqe)))
		return nvmeof_err_prefix(rc, "reconnect queue %u", qid);
	q_stage_connect(q, sqe, NVMF_CONNECT_DATA_SIZE);
	return 0;
}

/* An I/O queue's authentication after its reconnect failed with rc (status
 * when NVMEOF_ENVME): a refusal, a failed check of the controller, or Do
 * Not Retry ends the reconnect (cr_reconnect_final), and the message says
 * so; anything else is tried again after the delay. */
static int auth_failed(struct nvmeof_ctrl *c, struct nvmeof_queue *q, int rc, uint16_t status)
{
	uint16_t qid = nvmeof_queue_qid(q);
	/* a failure from an association that ended since (another queue's
	 * loss) says nothing final of the next: tried again, as a Connect's */
	if (!cr_reconnect_final(rc, status) ||
	    q_staged_assoc_gen(q) != __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED))
		return nvmeof_err_prefix(rc, "reconnect queue %u", qid);
	q_reconnect_final(q);
	return nvmeof_err_prefix(rc, "reconnect queue %u: the authentication failed, which is final", qid);
}

/* An attempt about to end well (rc 0: the queue goes live, and what it
 * holds goes out at once) whose Connect was built for an association that
 * has ended since: another queue's loss made a fence of it due
 * (ctrl_io_lost moved the generation), or it was re-created. The old
 * controller accepted the Connect, but a queue live there would send what
 * it holds to the controller being fenced, where a write could land after
 * the hold of a lost write on another path. The attempt fails instead:
 * the connection is dropped, and the next attempt, after the reconnect
 * delay, joins the new association. (From here to the queue's sends a
 * move is seen at its next poll, as by any live queue: q_follow_assoc.) */
static int joined_current(struct nvmeof_ctrl *c, struct nvmeof_queue *q, int rc, const char *while_what)
{
	if (rc || q_staged_assoc_gen(q) == __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED))
		return rc;
	return nvmeof_err(NVMEOF_ECLOSED, "reconnect queue %u: the association changed while %s",
			  nvmeof_queue_qid(q), while_what);
}

/* The second half, in the queue's poll: what the Connect answered, then,
 * when the controller asks for it, each step of the authentication (sent
 * from the poll too, Q_RECONNECT_MORE) until it ends. */
static int reconnect_finish(struct nvmeof_ctrl *c, struct nvmeof_queue *q, const struct nvmeof_cpl *cpl)
{
	uint16_t qid = nvmeof_queue_qid(q);
	char buf[128];
	if (cpl && (cpl->fctype == NVMF_FCTYPE_AUTH_SEND || cpl->fctype == NVMF_FCTYPE_AUTH_RECV)) {
		int arc = ctrl_auth_async_step(c, q, qid, cpl);
		if (arc < 0)
			arc = auth_failed(c, q, arc, arc == NVMEOF_ENVME ? cpl->status : 0);
		arc = joined_current(c, q, arc, "it authenticated");
		if (arc != Q_RECONNECT_MORE && arc != Q_RECONNECT_WORK)
			trace_ctrl(&c->o, qid, "reconnect %s%s", arc ? "failed: " : "done", arc ? nvmeof_errmsg() : "");
		return arc;
	}
	if (cpl->err == NVMEOF_ENVME)
		nvmeof_err(cpl->err, "%s", nvmeof_cpl_str(cpl, buf, sizeof(buf)));
	else if (cpl->err)
		nvmeof_err(cpl->err, "the Connect did not complete");
	/* A Connect built for an association another queue has since
	 * replaced says nothing about the new one. */
	bool current = q_staged_assoc_gen(q) == __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED);
	int rc = ctrl_connect_result(c, qid, cpl->err, cpl, current, NULL);
	/* Do Not Retry from the controller this queue belongs to (not a
	 * Connect to a controller the target has dropped since: the next
	 * attempt re-creates the association) ends the reconnect */
	if (rc == NVMEOF_ENVME && NVMEOF_STATUS_DNR(cpl->status) && current &&
	    !__atomic_load_n(&c->assoc_stale, __ATOMIC_RELAXED))
		q_reconnect_final(q);
	if (rc)
		rc = nvmeof_err_prefix(rc, "reconnect queue %u", qid);
	else if (!(rc = joined_current(c, q, 0, "its Connect was out"))) {
		if ((rc = ctrl_auth_async_start(c, q, qid, cpl->cdw0)) == Q_RECONNECT_MORE)
			return rc;
		if (rc) /* none sent yet: no status */
			rc = auth_failed(c, q, rc, 0);
	}
	trace_ctrl(&c->o, qid, "reconnect %s%s", rc ? "failed: " : "done", rc ? nvmeof_errmsg() : "");
	return rc;
}

/* On the worker: the attempt's steps are traced from its thread. */
/* A dead controller (refused, or past ctrl_loss_tmo) ends its queues'
 * attempts without a word to the target: the trace says so rather than
 * "attempt". */
static int reconnect_prepare_traced(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	bool dead = ctrl_state(c) == CTRL_DEAD;
	if (!dead)
		trace_ctrl(&c->o, nvmeof_queue_qid(q), "reconnect attempt");
	int rc = reconnect_prepare(c, q);
	if (rc)
		trace_ctrl(&c->o, nvmeof_queue_qid(q), "reconnect %s: %s",
			   dead ? "not attempted, the controller is dead" : "failed", nvmeof_errmsg());
	return rc;
}

/* On the worker too: an authentication's DH step (reconnect_finish said
 * Q_RECONNECT_WORK). */
static int reconnect_work(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	uint16_t qid = nvmeof_queue_qid(q);
	int rc = ctrl_auth_async_work(c, q, qid);
	if (rc < 0)
		rc = auth_failed(c, q, rc, 0); /* the DH step sends nothing: no status */
	rc = joined_current(c, q, rc, "it authenticated");
	if (rc < 0)
		trace_ctrl(&c->o, qid, "reconnect failed: %s", nvmeof_errmsg());
	else if (!rc)
		trace_ctrl(&c->o, qid, "reconnect done");
	return rc;
}

/* In the poll, the attempt over before its authentication ended. */
static void reconnect_abandon(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	ctrl_auth_async_abandon(c, q, nvmeof_queue_qid(q));
}

const struct q_reconnect_ops ctrl_reconnect_ops = {.prepare = reconnect_prepare_traced,
						   .finish = reconnect_finish,
						   .work = reconnect_work,
						   .abandon = reconnect_abandon};
