/*
 * A queue's connection state and everything that changes it: loss
 * detection (command timeouts, the CM's word, failed completions),
 * recovery (the connection goes down before anything in flight completes),
 * parking what was live for a new connection, reconnect attempts, giving
 * up, and teardown. Submission, completion and the waits read q->state;
 * only q_set_state writes it. States: qpriv.h.
 */
#include <stdio.h>
#include <string.h>

#include "connretry.h"
#include "qpriv.h"
#include "trace.h"
#include "util.h"

void q_set_state(struct nvmeof_queue *q, enum q_state to)
{
	q->state = (uint8_t)to;
	trace_q(q, "queue state: %s", q_state_str(q->state));
}

static bool may_reconnect(const struct nvmeof_queue *q)
{
	return q->reconnect && q->reconnect->prepare && q->reconnect_delay_ms;
}

void q_lose(struct nvmeof_queue *q)
{
	if (q->state != Q_LIVE && q->state != Q_CONNECTING)
		return;
	q->lost_live = q->state == Q_LIVE;
	if (q->state == Q_LIVE) { /* a new outage; a failed attempt keeps the first one's clock */
		q->lost_at_ms = nvmeof_now_ms();
		q->next_try_ms = q->lost_at_ms + q->reconnect_delay_ms;
	}
	q_set_state(q, Q_LOST);
	const char *why = q->tr->lost_why ? q->tr->lost_why(q->trc) : NULL;
	if (why) /* the transport's reason, before our own disconnect is one */
		trace_q(q, "connection lost: %s", why);
	q->tr->disconnect(q->trc); /* nothing more goes out; what was posted is flushed */
	q->wr_head = q->wr_tail = NULL;
}

void q_lose_for(struct nvmeof_queue *q, const char *why)
{
	if (q->state == Q_LIVE || q->state == Q_CONNECTING)
		snprintf(q->lose_why, sizeof(q->lose_why), "%s", why);
	q_lose(q);
}

void q_cut(struct nvmeof_queue *q)
{
	q->cut = true;
	q_lose(q);
}

/* Before what was in flight is parked or failed: every completion already
 * in the queue's own CQ (a group of one), so a command whose answer did
 * arrive completes with it (the kernel host drains its QP the same way). A
 * shared group's poll has already taken what its CQ held for this batch. */
static void drain_cq(struct nvmeof_queue *q)
{
	struct ibv_wc wc[POLL_BATCH];
	if (!q->own_group)
		return;
	for (uint32_t budget = q->depth + q->hrqsize + 1; budget;) {
		uint64_t ts[POLL_BATCH];
		int n = q->group->tr->poll(q->group->cqc, POLL_BATCH, wc, q->group->hw_ts ? ts : NULL);
		if (n <= 0)
			return;
		q_process_wcs(q, wc, q->group->hw_ts ? ts : NULL, n);
		budget = (uint32_t)n >= budget ? 0 : budget - (uint32_t)n;
	}
}

/* The attempt ends here, whatever finish kept goes (never while work runs). */
static void abandon(struct nvmeof_queue *q)
{
	if (q->reconnect && q->reconnect->abandon && !q->bg.working)
		q->reconnect->abandon(q->ctrl, q);
}

static void close_wire(struct nvmeof_queue *q)
{
	q->tr->close(q);
	q->wr_head = q->wr_tail = NULL;
	q->rwr_head = q->rwr_tail = NULL;
	abandon(q);
}

/* The connection is closed before any request in flight completes, so no
 * late RDMA can reach a buffer its owner already reuses; then what was live
 * waits for a new connection, or fails (with the thread's message as it
 * stands: what the callbacks' owners read). */
static void close_and_settle(struct nvmeof_queue *q)
{
	close_wire(q);
	if (may_reconnect(q)) {
		q_set_state(q, Q_WAIT);
		q_park_all(q);
	} else {
		q_set_state(q, Q_FAILED);
		if (q->fail_hook) /* before the callbacks: they may ask what the owner made of it */
			q->fail_hook(q->fail_hook_arg);
		q_fail_all(q, NVMEOF_ECLOSED);
	}
}

/* LOST: what already came in completes, then the connection closes. */
static void recover(struct nvmeof_queue *q)
{
	if (!q->cut)
		drain_cq(q);
	q->cut = false;
	const char *why = q->tr->lost_why ? q->tr->lost_why(q->trc) : NULL;
	/* a queue that kept its connection says why it left: another queue's
	 * loss ended the association (or it was re-created) */
	if (!may_reconnect(q) && q->left_assoc)
		nvmeof_err(NVMEOF_ECLOSED, "queue %u left the controller: its association ended (another queue's loss "
			   "or a re-association; no reconnect configured)", q->qid);
	else if (!may_reconnect(q) && q->lose_why[0])
		nvmeof_err(NVMEOF_ECLOSED, "queue %u closed its connection: %s (no reconnect configured)", q->qid,
			   q->lose_why);
	else if (!may_reconnect(q))
		nvmeof_err(NVMEOF_ECLOSED, "queue %u lost its connection (no reconnect configured)%s%s", q->qid,
			   why ? ": " : "", why ? why : "");
	q->left_assoc = false;
	/* the owner first (the controller fences the association), then the
	 * callbacks, which may ask what it made of the loss. The hook may run
	 * others' callbacks (the admin queue's, failed by the fence): as in a
	 * callback of this queue, they may not destroy it under this poll
	 * (in_cb), and one that polls it again does not report the loss twice. */
	bool live = q->lost_live;
	q->lost_live = false;
	if (live && q->loss_hook) {
		q->in_cb++;
		q->loss_hook(q->loss_hook_arg, q);
		q->in_cb--;
	}
	q->lose_why[0] = 0; /* after the hook: it names the cause too (q_lose_reason) */
	close_and_settle(q);
}

/* A command the timeout applies to; an event request stays out until an
 * event comes. */
static bool timed(const struct nvmeof_queue *q, const struct slot *s)
{
	return s->state == SLOT_BUSY && q->reqs[s->req].kind != REQ_AER;
}

/* Command timeouts and the CM's word on the connection, every HOUSEKEEP_MS.
 * A command is stamped by the first pass that sees it out, so it times out
 * between cmd_timeout_ms and HOUSEKEEP_MS later. A target that stopped
 * answering would hold its buffers for good, and one that answers late may
 * still move data: as the kernel host's error recovery does, the
 * connection goes down first (q_lose), then the command fails. */
static void housekeep(struct nvmeof_queue *q, uint64_t now)
{
	q->next_housekeep_ms = now + HOUSEKEEP_MS;
	if (q->tr->disconnected && q->tr->disconnected(q->trc)) {
		q_lose(q);
		return;
	}
	bool expired = false;
	char why[128];
	for (uint32_t si = 0; si < q->depth; si++) {
		struct slot *s = &q->slots[si];
		if (!timed(q, s))
			continue;
		if (!s->t_submit_ms) {
			s->t_submit_ms = now;
		} else if (now - s->t_submit_ms >= q->cmd_timeout_ms) {
			s->flags |= SLOT_EXPIRED;
			q->st.timeouts++;
			if (!expired) { /* the first: what the failed requests' callbacks and a give-up report */
				uint8_t opc = q->sqes[(size_t)si * NVME_SQE_SIZE];
				snprintf(why, sizeof(why), "a %s (%s opcode 0x%02x) got no answer within %u ms",
					 q->qid ? q_io_opc_name(opc) : "command", q->qid ? "I/O" : "admin", opc,
					 q->cmd_timeout_ms);
				nvmeof_err(NVMEOF_ETIMEDOUT, "queue %u: %s", q->qid, why);
			}
			expired = true;
		}
	}
	if (expired)
		q_lose_for(q, why);
}

static void connect_answered(struct nvmeof_queue *q);
static bool work_progress(struct nvmeof_queue *q);
static void attempt_step(struct nvmeof_queue *q, int rc);
static int give_up(struct nvmeof_queue *q);
static int refused(struct nvmeof_queue *q);

/* ctrl_loss_tmo counts from the loss, whatever an attempt is doing. */
static bool past_loss_tmo(const struct nvmeof_queue *q)
{
	return may_reconnect(q) && nvmeof_now_ms() - q->lost_at_ms >= q->ctrl_loss_tmo_ms;
}

bool q_state_tick(struct nvmeof_queue *q)
{
	if (unlikely(q->state != Q_LIVE)) {
		/* The worker's step is bounded (CPU only) and nothing is on the
		 * wire meanwhile: a loss seen during it (a flushed receive) is
		 * recovered after it, since the next attempt reuses bg. */
		if (q->bg.working && !work_progress(q))
			return false;
		if (q->state == Q_CONNECTING && q->bg.answered)
			connect_answered(q);
		if (q->state == Q_CONNECTING && past_loss_tmo(q)) {
			q->tr->close(q); /* the Connect's data is ours again */
			give_up(q);
			return false;
		}
		if (q->state == Q_LOST) {
			recover(q);
			return false;
		}
		if (q->state != Q_LIVE && q->state != Q_CONNECTING)
			return false;
	}
	/* Its association was replaced, or ended by another queue's loss: at
	 * once, not at the next housekeeping, since what waits (held at its
	 * submission) would otherwise go out to the old controller from this
	 * poll's refill. */
	if (unlikely(q->state == Q_LIVE && q_assoc_moved(q))) {
		trace_q(q, "queue %u: its association was replaced or ended", q->qid);
		q_lose(q);
		q->left_assoc = true;
		recover(q);
		return false;
	}
	uint64_t now = nvmeof_now_ms();
	if (unlikely(now >= q->next_housekeep_ms)) {
		housekeep(q, now);
		if (q->state == Q_LOST) {
			recover(q);
			return false;
		}
	}
	return true;
}

/* The attempt's owner found the refusal final (q_reconnect_final): the
 * message says so, and what waits fails now rather than at ctrl_loss_tmo. */
static int refused(struct nvmeof_queue *q)
{
	char why[512];
	snprintf(why, sizeof(why), "%s", nvmeof_errmsg());
	q_set_state(q, Q_FAILED);
	nvmeof_err(NVMEOF_ECLOSED, "queue %u: reconnect refused, not tried again: %s", q->qid, why);
	q_fail_all(q, NVMEOF_ECLOSED);
	return q->completed ? (int)q->completed : NVMEOF_ECLOSED;
}

static int give_up(struct nvmeof_queue *q)
{
	char why[256];
	snprintf(why, sizeof(why), "%s", nvmeof_errmsg());
	abandon(q);
	q_set_state(q, Q_FAILED);
	/* before the callbacks: what a synchronous caller among them reports */
	nvmeof_err(NVMEOF_ECLOSED, "queue %u: gave up reconnecting after %u ms (last: %s)", q->qid,
		   q->ctrl_loss_tmo_ms, why);
	q_fail_all(q, NVMEOF_ECLOSED);
	return q->completed ? (int)q->completed : NVMEOF_ECLOSED;
}

/* The attempt's first half, on its own thread: nothing here touches what
 * the poll reads; the poll picks the outcome up (q_reopen_progress). */
static void *reopen_worker(void *arg)
{
	struct nvmeof_queue *q = arg;
	int rc = q->bg.working ? q->reconnect->work(q->ctrl, q) : q->reconnect->prepare(q->ctrl, q);
	q->bg.rc = rc;
	if (rc)
		snprintf(q->bg.msg, sizeof(q->bg.msg), "%s", nvmeof_errmsg());
	__atomic_store_n(&q->bg.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int start_worker(struct nvmeof_queue *q)
{
	__atomic_store_n(&q->bg.done, 0, __ATOMIC_RELAXED);
	int rc = pthread_create(&q->bg.thread, NULL, reopen_worker, q);
	q->bg.running = !rc;
	return rc;
}

/* An attempt is due: its first half (a new association, the CM steps, each
 * bounded by its own timeout but together up to minutes) goes to a worker,
 * so this poll, and every wait that polls, returns on time. */
int q_try_reconnect(struct nvmeof_queue *q)
{
	uint64_t now = nvmeof_now_ms();
	if (now - q->lost_at_ms >= q->ctrl_loss_tmo_ms)
		return give_up(q);
	if (now < q->next_try_ms)
		return (int)q->completed;
	q->next_try_ms = now + q->reconnect_delay_ms;
	memset(&q->bg, 0, sizeof(q->bg));
	q_set_state(q, Q_REOPENING);
	int rc = start_worker(q);
	if (rc) {
		q_set_state(q, Q_WAIT); /* again after the delay */
		nvmeof_err(NVMEOF_ENOMEM, "queue %u: reconnect: pthread_create: %s", q->qid, strerror(rc));
		return (int)q->completed;
	}
	return (int)q->completed;
}

static void join_worker(struct nvmeof_queue *q)
{
	if (q->bg.running) {
		pthread_join(q->bg.thread, NULL);
		q->bg.running = false;
	}
}

static void connect_done(void *arg, const struct nvmeof_cpl *cpl)
{
	struct nvmeof_queue *q = arg;
	q->bg.cpl = *cpl;
	q->bg.answered = true;
	q->completed--; /* the queue's own command: not a completion of the caller's */
}

/* The Fabrics Connect, or a command finish staged after it, answered (or
 * none was staged): the owner decides. */
static void connect_answered(struct nvmeof_queue *q)
{
	const struct nvmeof_cpl *cpl = q->bg.has_cmd ? &q->bg.cpl : NULL;
	int rc;
	q->bg.answered = false;
	if (q->reconnect->finish)
		rc = q->reconnect->finish(q->ctrl, q, cpl);
	else
		rc = cpl && cpl->err ? nvmeof_err(cpl->err, "queue %u: reconnect: the Connect failed", q->qid) : 0;
	if (q->state != Q_CONNECTING)
		return;
	if (rc == Q_RECONNECT_WORK) {
		/* on a worker, as the attempt's first half: the poll (and its
		 * group) goes on meanwhile; nothing of ours is on the wire */
		q->bg.working = true;
		if ((rc = start_worker(q)) == 0)
			return;
		q->bg.working = false;
		rc = nvmeof_err(NVMEOF_ENOMEM, "queue %u: reconnect: pthread_create: %s", q->qid, strerror(rc));
	}
	attempt_step(q, rc);
}

/* The worker of Q_RECONNECT_WORK: not done yet (false), or its outcome
 * taken as finish's. */
static bool work_progress(struct nvmeof_queue *q)
{
	if (!__atomic_load_n(&q->bg.done, __ATOMIC_ACQUIRE))
		return false;
	join_worker(q);
	q->bg.working = false;
	if (q->state != Q_CONNECTING) /* lost meanwhile: what it staged goes nowhere */
		return true;
	if (q->bg.rc < 0)
		nvmeof_err(q->bg.rc, "%s", q->bg.msg);
	attempt_step(q, q->bg.rc);
	return true;
}

/* The association the attempt staged its commands for has ended since
 * (another queue's loss, or a re-association): nothing staged for it goes
 * out, and the queue does not go live on it. Checked on the poll thread,
 * just before each: a move after the worker's or finish's own check. */
static bool staged_moved(const struct nvmeof_queue *q, const char *before)
{
	if (!q->bg.has_limits || !q->assoc_now ||
	    __atomic_load_n(q->assoc_now, __ATOMIC_RELAXED) == q->bg.assoc_gen)
		return false;
	nvmeof_err(NVMEOF_ECLOSED, "reconnect queue %u: the association changed before %s", q->qid, before);
	trace_q(q, "%s", nvmeof_errmsg());
	return true;
}

/* What finish (or work) said: the next command, an error, or live. */
static void attempt_step(struct nvmeof_queue *q, int rc)
{
	if ((rc == Q_RECONNECT_MORE || !rc) &&
	    staged_moved(q, rc ? "its authentication's next step went out" : "it went live")) {
		close_and_settle(q); /* parked again; the next try after the delay */
		return;
	}
	if (rc == Q_RECONNECT_MORE) {
		/* the owner staged another command for this connection (an
		 * authentication step): it goes out from here, never waited
		 * for here, and its answer comes back through finish */
		struct sub sb = {.kind = REQ_RAW, .raw = q->bg.sqe, .data_len = q->bg.data_len};
		q->bg.has_cmd = true;
		if (q_submit(q, &sb, connect_done, q, NULL))
			close_and_settle(q);
		else
			q_post_from_poll(q);
		return;
	}
	if (rc && q->bg.final && may_reconnect(q)) {
		close_wire(q);
		refused(q);
		return;
	}
	if (rc) {
		close_and_settle(q); /* parked again; the next try after the delay */
		return;
	}
	/* The association is this queue's only now: with a failed Connect
	 * the next attempt must not take the one another queue just made
	 * for its own and re-create it (dropping every queue on it). */
	if (q->bg.has_limits)
		q->assoc_gen = q->bg.assoc_gen;
	q_set_live(q);
}

int q_reopen_progress(struct nvmeof_queue *q)
{
	if (!__atomic_load_n(&q->bg.done, __ATOMIC_ACQUIRE)) {
		/* Nothing parked is on any wire: it may fail now, while the
		 * worker finishes its step (q_close joins it). */
		if (past_loss_tmo(q)) {
			__atomic_store_n(&q->bg.cancel, 1, __ATOMIC_RELAXED);
			return give_up(q);
		}
		return (int)q->completed;
	}
	join_worker(q);
	if (q->bg.rc) {
		nvmeof_err(q->bg.rc, "%s", q->bg.msg);
		q->tr->close(q); /* whatever the worker made of a connection */
		if (q->bg.final)
			return refused(q);
		q_set_state(q, Q_WAIT);
		return (int)q->completed;
	}
	if (staged_moved(q, "its Connect went out")) {
		q->tr->close(q);
		q_set_state(q, Q_WAIT);
		return (int)q->completed;
	}
	if (q->bg.has_limits) /* before anything goes out on the new connection */
		q_set_limits(q, q->bg.icd, q->bg.max_xfer, q->bg.crdt);
	if (q->bg.has_wire_icd && q->tr->set_wire_icd)
		q->tr->set_wire_icd(q->trc, q->bg.wire_icd);
	q_slots_reset(q, q->bg.usable);
	q_set_state(q, Q_CONNECTING);
	if (!q->bg.has_cmd) {
		connect_answered(q);
		return (int)q->completed;
	}
	struct sub sb = {.kind = REQ_RAW, .raw = q->bg.sqe, .data_len = q->bg.data_len};
	if (q_submit(q, &sb, connect_done, q, NULL)) {
		close_and_settle(q);
		return (int)q->completed;
	}
	q_post_from_poll(q);
	return (int)q->completed;
}

int q_reopen(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms)
{
	uint32_t usable = q->depth;
	q->tr->close(q); /* the old connection is gone: nothing can touch our memory */
	q_set_state(q, Q_CONNECTING);
	q_park_all(q);
	int rc = q->tr->reopen(q, cntlid, timeout_ms, &usable);
	if (rc) {
		close_and_settle(q); /* without reconnect, what park queued fails */
		return rc;
	}
	q_slots_reset(q, usable);
	return 0;
}

void q_set_live(struct nvmeof_queue *q)
{
	uint64_t now = nvmeof_now_ms();
	q_set_state(q, Q_LIVE);
	/* everything waiting now goes first, one request at a time */
	for (uint32_t k = 0; k < q->pend_n; k++)
		q->reqs[q->pend[(q->pend_head + k) % q->depth]].replay = true;
	q->replay_left = q->pend_n;
	q->replay_cur = NO_REQ;
	q->st.reconnects++;
	if (q->lost_at_ms && now - q->lost_at_ms > q->st.outage_ms_max)
		q->st.outage_ms_max = now - q->lost_at_ms;
	q->lost_at_ms = 0;
	q_refill(q);
	q_post_from_poll(q);
}

bool q_connected(const struct nvmeof_queue *q) { return q->state == Q_LIVE; }

void q_drop(struct nvmeof_queue *q)
{
	if (q->state != Q_LIVE)
		return;
	q_lose(q);
	q_state_tick(q); /* recovered at once: closed, then parked or failed */
}
/* A live queue whose association moved holds what it is given until its
 * next poll takes it off (q_state_tick): not live to whoever picks a queue
 * for a command (a multipath queue's route), which would otherwise wait
 * there for the recovery while another path could carry it now. */
bool q_is_live(const struct nvmeof_queue *q) { return q->state == Q_LIVE && !q_assoc_moved(q); }
bool q_is_dead(const struct nvmeof_queue *q) { return q->state == Q_FAILED || q->state == Q_CLOSING; }
void q_set_failover(struct nvmeof_queue *q) { q->failover = true; }

void q_set_reconnect(struct nvmeof_queue *q, const struct q_reconnect_ops *ops, uint32_t delay_ms,
		     uint32_t loss_tmo_ms)
{
	q->reconnect = ops;
	q->reconnect_delay_ms = delay_ms;
	q->ctrl_loss_tmo_ms = loss_tmo_ms ? loss_tmo_ms : Q_CTRL_LOSS_TMO_DEFAULT_MS;
}

/* CLOSING first: a callback run by the teardown that submits is refused,
 * and one that polls touches no wire. */
int q_close(struct nvmeof_queue *q)
{
	if (!q)
		return 0;
	/* Its caller's stack (a poll, a completion loop) goes on using the
	 * queue when the callback returns: it cannot be freed under it. */
	if (q->in_cb)
		return nvmeof_err(NVMEOF_EBUSY, "destroy queue %u: called from one of its own completion callbacks; "
				  "destroy it after the poll returns", q->qid);
	if (q->bg.running)
		__atomic_store_n(&q->bg.cancel, 1, __ATOMIC_RELAXED); /* prepare stops at its next step */
	join_worker(q);
	q->bg.working = false;
	q_set_state(q, Q_CLOSING);
	if (q->tr)
		q->tr->close(q); /* the connection is gone: nothing can touch our memory after this */
	abandon(q);
	q_group_leave(q);        /* nothing of ours is posted on the group's CQ now */
	if (q->slots)
		q_fail_all(q, NVMEOF_ECLOSED);
	q_free(q);
	return 0;
}
