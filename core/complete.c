/*
 * Completions in batches, retries after the Command Retry Delay, command
 * timeouts and connection loss, and the waits (spin, sleep or both).
 */
#include <sched.h>
#include <string.h>
#include <time.h>

#include "protocol.h"
#include "qpriv.h"
#include "util.h"

/* An I/O command that failed with a status the controller says may succeed
 * if retried (DNR clear) goes again from the same slot, with a new CID,
 * after the Command Retry Delay its CRD field selects; at most MAX_RETRIES. */
static bool retry_slot(struct nvmeof_queue *q, uint16_t si)
{
	struct slot *s = &q->slots[si];
	uint16_t st = s->status;
	if (!st || NVMEOF_STATUS_DNR(st) || s->retries >= MAX_RETRIES || !q->qid || q->dead ||
	    s->state != SLOT_BUSY || q->reqs[s->req].kind == REQ_RAW || q->reqs[s->req].err)
		return false;
	unsigned crd = NVMEOF_STATUS_CRD(st);
	uint64_t delay = crd ? (uint64_t)q->crdt[crd - 1] * 100u : 0;
	if (delay > q->cmd_timeout_ms)
		delay = q->cmd_timeout_ms;
	s->retries++;
	s->flags = 0;
	s->state = SLOT_RETRY;
	s->t_submit_ms = nvmeof_now_ms() + delay;
	q_next_gen(s, si);
	nvme_sqe_set_cid(q->sqes + (size_t)si * NVME_SQE_SIZE, (uint16_t)(s->gen << SLOT_BITS | si));
	s->wr.wr_id = SEND_WRID(q, s->gen, si);
	q->nretry++;
	q->st.retries++;
	return true;
}


/* Sends the slots whose retry delay has passed. */
static void send_due_retries(struct nvmeof_queue *q, uint64_t now)
{
	for (uint32_t si = 0; si < q->depth && q->nretry; si++) {
		struct slot *s = &q->slots[si];
		if (s->state != SLOT_RETRY || s->t_submit_ms > now)
			continue;
		if (q->reqs[s->req].err) { /* another of its commands failed meanwhile */
			uint16_t ri = s->req;
			q_release_slot(q, (uint16_t)si);
			q_chunk_done(q, ri, 0, 0, 0, 0);
			continue;
		}
		s->state = SLOT_BUSY;
		s->t_submit_ms = now;
		q->nretry--;
		q->st.cmds++;
		q_chain_send(q, &s->wr);
	}
}

/* Both halves of a command are in: its response and its send completion. */
static void slot_done(struct nvmeof_queue *q, uint16_t si)
{
	if (unlikely(q->slots[si].status) && retry_slot(q, si))
		return;
	q_finish_slot(q, si, 0);
}

/* Its command went out and may still be answered: in flight, or timed out
 * or abandoned with its answer still due. A slot free or waiting to send a
 * retry has no command on the wire. */
static bool on_wire(const struct slot *s) { return s->state == SLOT_BUSY || s->state == SLOT_ZOMBIE; }

static void handle_resp(struct nvmeof_queue *q, const uint8_t *capsule)
{
	struct nvme_cqe c;
	DEVICE_WROTE(capsule, NVME_CQE_SIZE);
	nvme_cqe_parse(capsule, &c);
	uint16_t si = c.cid & SLOT_MASK;
	struct slot *s = &q->slots[si];
	/* A slot waiting to send a retry has a CID nobody has seen yet: an
	 * answer to it is forged or stale, and taking it would mark the slot
	 * answered before the retry goes out. */
	if (unlikely(si >= q->depth || !on_wire(s) ||
		     s->gen != (c.cid >> SLOT_BITS) || (s->flags & SLOT_RESP))) {
		q->st.stale_cqes++;
		return;
	}
	s->flags |= SLOT_RESP;
	s->status = c.status;
	s->dw0 = c.dw0;
	s->dw1 = c.dw1;
	if (s->flags & SLOT_SENT)
		slot_done(q, si);
}

static void handle_send(struct nvmeof_queue *q, uint64_t wr_id)
{
	uint16_t si = (uint16_t)(wr_id & 0xffff);
	struct slot *s = &q->slots[si];
	/* A send completion for a slot already released (failed over on a
	 * lost connection, or reused since) is not ours to finish. */
	if (unlikely(si >= q->depth || WRID_EPOCH(wr_id) != q->epoch ||
		     !on_wire(s) ||
		     s->gen != ((wr_id >> 16) & GEN_MASK) || (s->flags & SLOT_SENT))) {
		q->st.stale_cqes++;
		return;
	}
	s->flags |= SLOT_SENT;
	if (s->flags & SLOT_RESP)
		slot_done(q, si);
}

void q_post_recvs(struct nvmeof_queue *q)
{
	struct ibv_recv_wr *bad;
	if (!q->rwr_head)
		return;
	int rc = q->tr->post_recv(q->trc, q->rwr_head, &bad);
	q->rwr_head = q->rwr_tail = NULL;
	if (unlikely(rc))
		q_mark_dead(q); /* a QP that refuses receives has failed */
}


/* One batch of work completions. Receives are re-posted before any
 * callback runs: a callback may submit at once, and a command must never be
 * out without a receive waiting for its response (RNR back-off). The
 * capsules are copied out first, since a re-posted buffer may be refilled. */
void q_process_wcs(struct nvmeof_queue *q, const struct ibv_wc *wc, int n)
{
	uint8_t cqes[POLL_BATCH][NVME_CQE_SIZE];
	bool got[POLL_BATCH] = {false}; /* wc[i] brought the capsule next in cqes */
	int ncqe = 0;
	for (int i = 0; i < n; i++) {
		const struct ibv_wc *w = &wc[i];
		if (!(w->wr_id & RECV_TAG))
			continue;
		uint32_t idx = WRID_LOW(w->wr_id);
		if (unlikely(WRID_EPOCH(w->wr_id) != q->epoch))
			continue; /* from a connection already gone: not ours to re-post */
		if (unlikely(w->status != IBV_WC_SUCCESS || idx >= q->hrqsize)) {
			q_mark_dead(q);
			continue;
		}
		if (unlikely(w->byte_len < NVME_CQE_SIZE)) {
			/* a protocol error, not a completion: the kernel host
			 * fails the connection the same way */
			q->st.bad_rsps++;
			q_mark_dead(q);
			continue;
		}
		DEVICE_WROTE(q->rsps + (size_t)idx * NVME_CQE_SIZE, NVME_CQE_SIZE);
		memcpy(cqes[ncqe++], q->rsps + (size_t)idx * NVME_CQE_SIZE, NVME_CQE_SIZE);
		got[i] = true;
		struct ibv_recv_wr *rw = &q->rwr[idx];
		rw->next = NULL;
		if (q->rwr_tail)
			q->rwr_tail->next = rw;
		else
			q->rwr_head = rw;
		q->rwr_tail = rw;
	}
	if (!q->dead)
		q_post_recvs(q);
	int k = 0;
	for (int i = 0; i < n; i++) {
		const struct ibv_wc *w = &wc[i];
		if (w->wr_id & RECV_TAG) {
			if (got[i])
				handle_resp(q, cqes[k++]);
		} else if (unlikely(w->status != IBV_WC_SUCCESS)) {
			if (WRID_EPOCH(w->wr_id) == q->epoch)
				q_mark_dead(q);
		} else {
			handle_send(q, w->wr_id);
		}
	}
}

static int poll_wire(struct nvmeof_queue *q, int want, struct ibv_wc *wc)
{
	if (unlikely(q->wire_closed))
		return 0;
	return q->tr->poll(q->trc, want, wc);
}

/* Before failing what is in flight on a lost connection: take every
 * completion already in the CQ, so a command whose answer did arrive
 * completes with it (the kernel host drains its QP the same way). Anything
 * later names a released slot's old generation and is dropped. */
static void drain_cq(struct nvmeof_queue *q)
{
	struct ibv_wc wc[POLL_BATCH];
	for (uint32_t budget = q->depth + q->hrqsize + 1; budget;) {
		int n = poll_wire(q, POLL_BATCH, wc);
		if (n <= 0)
			return;
		q_process_wcs(q, wc, n);
		budget = (uint32_t)n >= budget ? 0 : budget - (uint32_t)n;
	}
}

/* A lost connection is to be re-established: reconnect is configured, the
 * queue is not in a reconnect's Fabrics Connect, and has not given up. */
static bool may_reconnect(const struct nvmeof_queue *q)
{
	return q->reconnect && q->reconnect_delay_ms && !q->connecting && !q->wire_closed;
}

/* What is submitted from now on waits for the new connection. */
static void start_reconnect(struct nvmeof_queue *q, uint64_t now)
{
	q->reconnecting = true;
	q->lost_at_ms = now;
	q->next_try_ms = now + q->reconnect_delay_ms;
	q->wr_head = q->wr_tail = NULL;
}

/* A command the timeout applies to; an event request stays out until an
 * event comes. */
static bool timed(const struct nvmeof_queue *q, const struct slot *s)
{
	return s->state == SLOT_BUSY && q->reqs[s->req].kind != REQ_AER;
}

/* Out for at least the command timeout, on the clock the first pass that
 * saw it out started, so a timeout fires between cmd_timeout_ms and
 * HOUSEKEEP_MS later. */
static bool expired(const struct nvmeof_queue *q, const struct slot *s, uint64_t now)
{
	return s->t_submit_ms && now - s->t_submit_ms >= q->cmd_timeout_ms;
}

/* A slot a target has held past the command timeout: a command that timed
 * out now, or one already written off (timed out, or abandoned by a
 * synchronous call that gave up) whose response is overdue too. */
static bool overdue(struct nvmeof_queue *q, struct slot *s, uint64_t now)
{
	if (!timed(q, s) && s->state != SLOT_ZOMBIE)
		return false;
	if (!s->t_submit_ms) {
		s->t_submit_ms = now;
		return false;
	}
	return expired(q, s, now);
}

/* Command timeouts and connection loss, checked every HOUSEKEEP_MS. */
static void housekeep(struct nvmeof_queue *q, uint64_t now)
{
	q->next_housekeep_ms = now + HOUSEKEEP_MS;
	if (!q->dead && q->tr->disconnected && q->tr->disconnected(q->trc))
		q_mark_dead(q);
	bool stuck = false;
	for (uint32_t si = 0; si < q->depth; si++)
		stuck |= overdue(q, &q->slots[si], now);
	if (!stuck)
		return;
	/* A target that stopped answering would keep those slots for good:
	 * with reconnect configured, recover first, as the kernel host's error
	 * recovery does, so the connection is down before a timed-out
	 * request's owner gets its buffer back. The new connection returns
	 * every slot; the other requests go again. Without reconnect a slot
	 * waits for a late response or the queue's end. */
	if (!q->reconnecting && may_reconnect(q)) {
		q_mark_dead(q);
		start_reconnect(q, now);
	}
	for (uint32_t si = 0; si < q->depth; si++) {
		struct slot *s = &q->slots[si];
		if (!timed(q, s) || !expired(q, s, now))
			continue;
		/* The target may still move data for it: the slot stays taken
		 * until its response arrives or the queue goes away. */
		s->state = SLOT_ZOMBIE;
		q->st.timeouts++;
		q_chunk_done(q, s->req, NVMEOF_ETIMEDOUT, 0, 0, 0);
	}
}


int nvmeof_queue_poll(struct nvmeof_queue *q, uint32_t max)
{
	struct ibv_wc wc[POLL_BATCH];
	int want = (!max || max > POLL_BATCH) ? POLL_BATCH : (int)max;
	if (q->group)
		return nvmeof_poll_group_poll(q->group, max);
	q->completed = 0;
	if (unlikely(q->reconnecting) && !q->connecting)
		return q_try_reconnect(q);
	int n = poll_wire(q, want, wc);
	if (unlikely(n < 0)) {
		q_mark_dead(q);
		n = 0;
	}
	q_process_wcs(q, wc, n);
	return q_poll_tail(q);
}

int q_poll_tail(struct nvmeof_queue *q)
{
	uint64_t now = nvmeof_now_ms();
	if (unlikely(now >= q->next_housekeep_ms))
		housekeep(q, now);
	/* lost, and reconnecting or about to: what is out waits for the new
	 * connection (the next poll tries it) */
	if (unlikely(q->dead) && (q->reconnecting ? !q->connecting && !q->wire_closed : may_reconnect(q))) {
		if (!q->reconnecting)
			start_reconnect(q, now);
		return (int)q->completed;
	}
	if (unlikely(q->dead)) {
		if (!q->group) /* a group's poll has already emptied the shared CQ */
			drain_cq(q);
		/* lost again during a reconnect's Fabrics Connect: only that
		 * command fails; what waits stays parked for the next attempt */
		if (q->connecting)
			q_fail_slots(q, NVMEOF_ECLOSED);
		else
			q_fail_all(q, NVMEOF_ECLOSED);
		q->wr_head = q->wr_tail = NULL;
		if (!q->completed)
			return nvmeof_err(NVMEOF_ECLOSED, "queue %u lost its connection", q->qid);
		return (int)q->completed;
	}
	if (unlikely(q->nretry))
		send_due_retries(q, now);
	/* before the refill, so no more of a refused request goes out */
	if (unlikely(q->nrefused))
		q_finish_refused(q);
	if (!q->connecting)
		q_refill(q); /* parked requests wait for the Fabrics Connect */
	q_post_from_poll(q);
	if (q->completed && !q->group)
		q_waiter_note(&q->waiter, q->completed);
	return (int)q->completed;
}

/* How long a hybrid wait spins before it sleeps: spin_us when nothing is in
 * flight; with commands out and completions coming close together, about
 * two of the recent intervals between them, so at depth the next one is
 * caught spinning instead of through an arm, a sleep and a wake-up per I/O.
 * When they come further apart than SPIN_GAP_MAX_US a wake-up costs little
 * against the wait, and spinning would only take the CPU from whoever
 * produces the completion (on the test bed, the target itself). With one
 * command out (QD1, a latency run) nothing hides a wake-up: its whole cost
 * lands on that command's latency, so for gaps up to SPIN_ONE_MAX_US the
 * spin covers four of them, so the tail (p99 about twice the median on the
 * test bed) is caught too. */
#define SPIN_GAP_MAX_US 500
#define SPIN_ONE_MAX_US 2000
#define SPIN_SAMPLE_MAX_US (2 * SPIN_ONE_MAX_US)
#define SPIN_YIELD_US 300
/* A moving average of the time between completions (from the second on:
 * the first has no predecessor), fed by every poll that completes
 * something, whoever polls: a wait, after an arm or a sleep, or the caller
 * between waits. Fed by a wait's own polls only, it missed most
 * completions at QD1 and, its gaps spanning several I/Os, slept every
 * time. A sample counts at most SPIN_SAMPLE_MAX_US, so a pause (start-up,
 * a ramp) is forgotten within a few completions. */
void q_waiter_note(struct q_waiter *w, uint32_t n)
{
	uint64_t now = nvmeof_now_us();
	if (w->last_us) {
		uint64_t d = (now - w->last_us) / n;
		w->gap_us = (7 * w->gap_us + (d < SPIN_SAMPLE_MAX_US ? d : SPIN_SAMPLE_MAX_US)) / 8;
	}
	w->last_us = now;
}

uint64_t q_spin_budget(const struct q_waiter *w, uint32_t inflight)
{
	uint64_t b = w->spin_us, g = w->gap_us;
	if (inflight == 1 && g <= SPIN_ONE_MAX_US)
		g *= 4;
	else if (inflight && g <= SPIN_GAP_MAX_US)
		g *= 2;
	else
		g = 0;
	return g > b ? g : b;
}

int q_wait(struct q_waiter *w, uint32_t min, int timeout_ms)
{
	uint64_t t0 = nvmeof_now_us(), deadline = t0 + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000u;
	uint64_t spin_end = w->mode == NVMEOF_WAIT_HYBRID ? t0 + q_spin_budget(w, w->inflight(w->ctx)) : t0;
	uint32_t total = 0;
	uint64_t last_yield = t0;
	for (;;) {
		int rc = w->poll(w->ctx);
		if (rc < 0)
			return total ? (int)total : rc;
		uint64_t now = nvmeof_now_us();
		total += (uint32_t)rc;
		if (total >= min)
			return (int)total;
		if (now >= deadline)
			return (int)total;
		if (w->mode == NVMEOF_WAIT_POLL || !w->arm)
			continue;
		if (now < spin_end) {
			/* A long spin lets whatever else is runnable on this CPU
			 * go first: on the test bed that is the target's own
			 * work, which a spinning thread kept waiting up to a
			 * scheduler tick (QD1's p99 at 3 to 4 ms). */
			if (now - last_yield >= SPIN_YIELD_US) {
				sched_yield();
				last_yield = nvmeof_now_us();
			}
			continue;
		}
		if (w->reconnecting(w->ctx)) {
			/* no CQ to sleep on until the next attempt */
			struct timespec ts = {0, 2000000};
			nanosleep(&ts, NULL);
			continue;
		}
		if ((rc = w->arm(w->ctx)))
			return total ? (int)total : rc;
		/* A completion may have landed before the arm took effect. */
		rc = w->poll(w->ctx);
		if (rc < 0)
			return total ? (int)total : rc;
		total += (uint32_t)rc;
		if (total >= min)
			return (int)total;
		uint64_t left_ms = (deadline - now + 999) / 1000;
		if ((rc = w->sleep(w->ctx, (int)(left_ms < HOUSEKEEP_MS ? left_ms : HOUSEKEEP_MS))) < 0)
			return total ? (int)total : rc;
		w->st_sleeps++;
	}
}

static int qw_poll(void *c) { return nvmeof_queue_poll(c, 0); }
static int qw_arm(void *c)
{
	struct nvmeof_queue *q = c;
	return q->tr->arm(q->trc);
}
static int qw_sleep(void *c, int ms)
{
	struct nvmeof_queue *q = c;
	return q->tr->sleep(q->trc, ms);
}
static bool qw_reconnecting(void *c) { return ((struct nvmeof_queue *)c)->reconnecting; }
static uint32_t qw_inflight(void *c) { return nvmeof_queue_inflight(c); }

int nvmeof_queue_wait(struct nvmeof_queue *q, uint32_t min, int timeout_ms)
{
	if (q->group)
		return nvmeof_poll_group_wait(q->group, min, timeout_ms);
	struct q_waiter *w = &q->waiter;
	if (!w->poll) {
		w->ctx = q;
		w->poll = qw_poll;
		w->arm = q->tr->arm ? qw_arm : NULL;
		w->sleep = qw_sleep;
		w->reconnecting = qw_reconnecting;
		w->inflight = qw_inflight;
	}
	w->mode = q->wait_mode;
	w->spin_us = q->spin_us;
	int rc = q_wait(w, min, timeout_ms);
	q->st.sleeps = w->st_sleeps;
	return rc;
}

