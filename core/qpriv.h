/*
 * The inside of a queue, shared by its files: docs/architecture.md's layout says
 * which file does what, in the order in which each calls only those above
 * it (tests/unit/layers.sh checks the order). Not installed; nothing here
 * is exported.
 */
#ifndef NVMEOF_QPRIV_H
#define NVMEOF_QPRIV_H

#include <poll.h>
#include <pthread.h>

#include "internal.h"
#include "mem.h"
#include "protocol.h"
#include "queue.h"
#include "rdma.h"
#include "transport.h"
#include "util.h"

#define SLOT_BITS 10
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define GROUP_MAX 64
#define GEN_MASK ((1u << (16 - SLOT_BITS)) - 1)
/* wr_id: [63] a receive, [55:48] the queue's place in its poll group,
 * [47:40] which connection of the queue posted it (a CQ shared by a group
 * outlives a queue's QP), [31:0] the receive buffer, or (generation << 16 |
 * slot) for a send. */
#define RECV_TAG (1ull << 63)
#define WRID_MEMBER(w) ((uint32_t)((w) >> 48) & 0xff)
#define WRID_EPOCH(w) ((uint32_t)((w) >> 40) & 0xff)
#define WRID_LOW(w) ((uint32_t)(w))
#define WRID_HIGH(q) ((uint64_t)(q)->member << 48 | (uint64_t)(q)->epoch << 40)
#define POLL_BATCH 32
#define HOUSEKEEP_MS 100
/* A sleeping wait's longest slice (wait.c): a command's timeout is seen
 * up to two of them and a housekeeping pass late. */
#define SLICE_MAX_MS 1000
#define MAX_RETRIES 5  /* as the kernel host's nvme_max_retries */
#define NO_REQ 0xffff
/* A send's wr_id carries the slot's generation, so a send completion that
 * arrives after its slot was released (and maybe reused) is recognised. */
#define SEND_WRID(q, gen, si) ((q)->wrid_high | (uint64_t)(gen) << 16 | (si))

enum slot_state { SLOT_FREE, SLOT_BUSY, SLOT_RETRY };
/* SLOT_REFUSED: its send was refused by the post; it completes, failed,
 * from the next poll (callbacks run from poll and wait only).
 * SLOT_EXPIRED: out past the command timeout; it fails with ETIMEDOUT once
 * the connection is down (qstate.c), never while the target could still
 * move data for it. */
enum { SLOT_SENT = 1, SLOT_RESP = 2, SLOT_REFUSED = 4, SLOT_EXPIRED = 8 };

/*
 * A queue's connection, as one state (qstate.c changes it, in one place):
 *   Q_LIVE        connected; commands go out
 *   Q_LOST        a failure was seen (a flushed or failed completion, the
 *                 CM's word, a command timeout); the poll's tail recovers
 *   Q_WAIT        the connection is closed, what was live is parked in
 *                 submission order; the next reconnect attempt is due at
 *                 next_try_ms (reconnect configured)
 *   Q_REOPENING   a reconnect attempt's first half, on a worker thread
 *                 (the association if needed, the CM steps): the poll
 *                 leaves the queue alone and returns at once, so no poll
 *                 or wait lasts as long as an attempt may
 *   Q_CONNECTING  the attempt's second half: a new connection, only
 *                 internal commands (the Fabrics Connect) go; the rest
 *                 waits
 *   Q_FAILED      closed for good (no reconnect, or it gave up): every
 *                 submission and poll fails with ECLOSED
 *   Q_CLOSING     being destroyed: nothing is accepted, the wire is gone
 */
enum q_state { Q_LIVE, Q_LOST, Q_WAIT, Q_CONNECTING, Q_FAILED, Q_CLOSING, Q_REOPENING };
static inline const char *q_state_str(uint8_t st)
{
	static const char *const names[] = {"live", "lost", "waiting to reconnect", "reconnecting", "failed",
					    "being destroyed", "reconnecting: a new connection"};
	return st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}
/* REQ_AER: an admin command that stays outstanding (no timeout, not the
 * reserved request); REQ_WZ: Write Zeroes, split at 65536 blocks. */
enum req_kind { REQ_IO, REQ_FLUSH, REQ_DSM, REQ_RAW, REQ_AER, REQ_WZ, REQ_USER };
/* REQ_USER: a caller's raw command (passthru.c). Its SQE, copied at
 * submission, and what its answer says beyond struct req's fields live in
 * a table beside the requests (q->user, by request), so the request every
 * read and write fills stays two cache lines. */
struct q_user {
	uint8_t sqe[NVME_SQE_SIZE];
	uint16_t sqhd, cid;       /* the answering CQE's SQ Head Pointer and CID */
	uint16_t wire_cid;        /* the CID it went out with; FFFFh until sent */
	bool caller_sgl;          /* the DPTR is the caller's (checked in passthru.c) */
};

struct slot {
	struct ibv_send_wr wr;
	struct ibv_sge sge[2];
	uint64_t t_submit_ms;     /* first seen out (0: not yet); SLOT_RETRY: when to send again */
	uint64_t ts_sent, ts_resp; /* NIC clock of its send completion and response (hw_khz) */
	uint32_t dw0, dw1;
	uint16_t gen, req, status;
	uint8_t state, flags, retries;
	uint16_t sqhd;            /* the response's SQ Head Pointer */
};

struct req {
	nvmeof_cb cb;
	void *arg;
	const struct nvmeof_ns *ns;
	struct nvmeof_mr *mr;
	const uint8_t *raw;       /* REQ_RAW: the caller's SQE */
	size_t off0;              /* where the request's data starts in mr */
	uint64_t slba0;           /* the request as submitted, to restart it whole */
	uint32_t nlb0;
	uint64_t next_lba;
	size_t next_off;
	uint32_t left;            /* blocks not yet issued */
	uint32_t outstanding;     /* commands issued, not yet finished */
	uint64_t seq;             /* submission order, kept across a reconnect */
	uint32_t dw0, dw1, data_len;
	uint32_t cdw12;           /* flags ORed into CDW12 (FUA, DEAC) */
	int err;
	uint16_t status;
	uint8_t kind, opc;
	uint8_t lbads;            /* the block size q_check_io bounded it with */
	bool queued;              /* in the pending FIFO */
	bool live;                /* submitted, not yet completed */
	bool replay;              /* waited through an outage: re-issued one at a time */
	bool in_doubt;            /* a command of it was on the wire when the connection went (q_mark_in_doubt) */
};

/* A wait over one queue or a poll group: spin, then sleep (see q_wait). */
struct q_waiter {
	void *ctx;
	int (*poll)(void *ctx);
	int (*arm)(void *ctx);        /* NULL: the wire cannot sleep */
	/* before a pause with no arm (the spin's yield, a reconnect's nap):
	 * sends what a poll held for the next submit. NULL: nothing held. */
	void (*flush)(void *ctx);
	int (*sleep)(void *ctx, int timeout_ms);
	int (*slice_ms)(void *ctx);   /* the longest sleep; NULL: HOUSEKEEP_MS */
	bool (*reconnecting)(void *ctx);
	/* While reconnecting: ms until the next step no channel announces (a
	 * reconnect attempt due, a held write's release); the wait sleeps on
	 * the channels that are still connected that long. NULL, or <= 0: a
	 * short nap between polls instead. */
	int (*next_step_ms)(void *ctx);
	uint32_t (*inflight)(void *ctx);
	enum nvmeof_wait_mode mode;
	uint32_t spin_us;
	uint64_t last_us, gap_us;     /* last completion; mean time between them */
	uint64_t st_sleeps;
	uint64_t st_sleep_timeouts; /* of them, those that ran to their end */
	/* NVMEOF_WAIT_ADAPTIVE (wait.c): the share of the hybrid spin it
	 * spins, of Q_SPIN_SCALE_MAX, and the least it came to; set at its
	 * first wait (adapting). pollers: the count of the process's polling
	 * poll groups, which this one is in until destroyed; NULL: not in it. */
	uint16_t spin_scale, spin_scale_min;
	bool adapting;
	uint32_t *pollers;
	uint32_t ncpus;               /* CPUs the process may run on, taken when counted */
	uint64_t st_empty_polls;      /* polls of its waits that found nothing */
};
int q_wait(struct q_waiter *w, uint32_t min, int timeout_ms);
/* wait.c: the arm and sleep of a wait over several queues, each in its own
 * poll group (a multipath wait polls them itself); at most Q_SLEEP_MAX. */
#define Q_SLEEP_MAX 256
bool q_queues_can_sleep(struct nvmeof_queue *const *qs, uint32_t n);
int q_queues_arm(struct nvmeof_queue *const *qs, uint32_t n);
void q_queues_flush(struct nvmeof_queue *const *qs, uint32_t n); /* sends what polls held */
bool q_queues_reconnecting(struct nvmeof_queue *const *qs, uint32_t n);
/* ms (at least 1) until the earliest reconnect step of qs that no channel
 * wakes a sleep for (an attempt due; a worker's result, looked at every
 * Q_WORKER_CHECK_MS), capped at cap_ms. */
#define Q_WORKER_CHECK_MS 10
int q_queues_next_step_ms(struct nvmeof_queue *const *qs, uint32_t n, int cap_ms);
int q_queues_sleep(struct nvmeof_queue *const *qs, uint32_t n, int ms);
/* The group's transport holds work no descriptor would announce, and a
 * member is connected (wait.c) */
bool q_group_pending(const struct nvmeof_poll_group *g);
uint64_t q_spin_budget(const struct q_waiter *w, uint32_t inflight); /* us */
/* The adaptive wait's control (wait.c): a wait whose spin may find work
 * grows the share (doubles it, from nothing to 1/16), one whose polls would
 * find none of its own (more polling groups than CPUs) shrinks it (halves
 * it, below 1/16 to nothing). */
#define Q_SPIN_SCALE_MAX 1024
uint16_t q_spin_adapt(uint16_t scale, bool found_work);
/* More of the process's polling poll groups than CPUs to run them on. */
bool q_spin_crowded(uint32_t pollers, uint32_t ncpus);
/* A group's waiter leaves the process's count of polling groups (inline:
 * group.c sits below wait.c). */
static inline void q_waiter_uncount(struct q_waiter *w)
{
	if (w->pollers)
		__atomic_sub_fetch(w->pollers, 1, __ATOMIC_RELAXED);
	w->pollers = NULL;
}
#define Q_GAP_SAMPLE_MAX_US 4000 /* twice wait.c's longest QD1 spin gap */
/* A moving average of the time between completions (from the second on:
 * the first has no predecessor), fed by every poll that completes
 * something, whoever polls: a wait, after an arm or a sleep, or the caller
 * between waits. Fed by a wait's own polls only, it missed most
 * completions at QD1 and, its gaps spanning several I/Os, slept every
 * time. A sample counts at most Q_GAP_SAMPLE_MAX_US, so a pause (start-up,
 * a ramp) is forgotten within a few completions. */
static inline void q_waiter_note(struct q_waiter *w, uint32_t n)
{
	uint64_t now = nvmeof_now_us();
	if (w->last_us) {
		uint64_t d = (now - w->last_us) / n;
		w->gap_us = (7 * w->gap_us + (d < Q_GAP_SAMPLE_MAX_US ? d : Q_GAP_SAMPLE_MAX_US)) / 8;
	}
	w->last_us = now;
}


struct sub {
	uint8_t kind, opc, lbads;
	const struct nvmeof_ns *ns;
	uint64_t slba;
	uint32_t nlb;
	struct nvmeof_mr *mr;
	size_t off;
	const uint8_t *raw;
	uint32_t data_len;
	uint32_t cdw12;
	bool user_sgl;            /* REQ_USER: the DPTR is the caller's (checked) */
};

struct nvmeof_queue {
	const struct q_transport *tr; /* the wire: RDMA, or a test's loopback */
	bool count_mr;            /* each request holds its region (nvmeof_mr.inflight): NVMe/TCP */
	struct nvmeof_poll_group *group; /* its CQ: shared with other queues, or its own group of one */
	bool own_group;           /* a group of one, made for it and destroyed with it */
	uint8_t member, epoch;    /* place in the group; connection count (wr_id) */
	uint64_t wrid_high;       /* WRID_HIGH of the current connection */
	uint32_t sqe_send_flags;  /* a capsule alone: signaled, and inline when the QP takes 64 bytes */
	void *trc;                /* its connection, handed to every operation */
	struct tr_conn conn;      /* the RDMA transport's connection */
	struct nvmeof_ctrl *ctrl;
	const struct nvmeof_ctrl_opts *copts; /* the controller's, for its trace hook (trace.c) */
	struct ibv_pd *pd;
	bool own_pd, batch, oncs_dsm, oncs_wz;
	bool failover;            /* one path of several (q_set_failover) */
	bool cut;                 /* q_cut: what the CQ holds at the loss is not taken */
	uint8_t state;            /* enum q_state; written by q_set_state only */
	uint16_t qid;
	uint32_t depth, hrqsize;     /* SQSIZE (commands), HRQSIZE (our receive buffers) */
	uint32_t usable;          /* min(SQSIZE, the target's CRQSIZE): commands out at once */
	uint32_t cmd_timeout_ms, icd_max, spin_us;
	uint32_t max_cmd_bytes;   /* MDTS, capped by the 24-bit keyed SGL length */
	enum nvmeof_wait_mode wait_mode;
	uint64_t hw_khz;          /* NIC timestamps' clock; 0: none (hwts.h) */
	uint64_t hw_mask;         /* its valid bits (completion_timestamp_mask) */
	struct hwts_hist *hw;     /* with hw_khz: send completion to response */

	struct slot *slots;
	uint16_t *slot_free;
	uint32_t nfree_slots;
	struct req *reqs;
	struct q_user *user;      /* REQ_USER's, by request (the reserved one has none) */
	uint16_t *req_free;
	uint32_t nfree_reqs;
	uint16_t *pend;           /* FIFO of requests with blocks not yet issued */
	uint32_t pend_head, pend_n;
	uint16_t *park_tmp;       /* reconnect: the FIFO re-sorted by submission order */
	uint64_t seq;
	uint32_t replay_left;     /* requests that waited through an outage, not yet done */
	uint16_t replay_cur;      /* the one of them on the wire, or NO_REQ */
	uint32_t nretry;          /* slots waiting out a Command Retry Delay */
	uint32_t nrefused;        /* slots flagged SLOT_REFUSED (q_release_slot counts them off) */
	int refused_errno;        /* what ibv_post_send said */
	uint16_t crdt[3];         /* CRDT1..3, 100 ms units */

	uint8_t *sqes, *rsps, *aux; /* aux: per-slot DSM range, then scratch */
	struct ibv_mr *sqe_mr, *rsp_mr, *aux_mr;
	uint32_t aux_lkey, aux_rkey;
	struct ibv_recv_wr *rwr;
	struct ibv_sge *rsge;
	struct ibv_send_wr *wr_head, *wr_tail;
	struct ibv_recv_wr *rwr_head, *rwr_tail;

	/* reconnect: the owner re-creates the connection (and, if nobody has
	 * yet, the association) while requests wait, parked */
	const struct sockaddr *dst, *src;
	const struct q_reconnect_ops *reconnect;
	uint32_t reconnect_delay_ms, ctrl_loss_tmo_ms, assoc_gen;
	uint32_t quiesce_ms;      /* a lost media-modifying command waits this long from the loss (q_set_quiesce) */
	bool rsv_busy;
	uint64_t lost_at_ms, next_try_ms;
	/* An attempt's worker (Q_REOPENING) and what it leaves for the poll:
	 * everything the poll applies is staged here, since the poll thread
	 * may read the queue's own fields meanwhile. bg_done is the only
	 * field both touch before the join. */
	struct {
		pthread_t thread;
		bool running;          /* poll thread: started, not yet joined */
		bool working;          /* CONNECTING: the worker runs the owner's work, not prepare */
		int done;              /* atomic: the worker has returned */
		int cancel;            /* atomic: the owner no longer wants the attempt */
		int rc;
		char msg[NVMEOF_ERRMSG_MAX]; /* its thread's error message */
		uint32_t usable;       /* the new connection's CRQSIZE */
		bool has_limits, has_cmd, has_wire_icd;
		uint32_t icd, assoc_gen, wire_icd;
		uint64_t max_xfer;
		uint16_t crdt[3];
		uint8_t sqe[NVME_SQE_SIZE]; /* the Fabrics Connect; its data in the scratch buffer */
		uint32_t data_len;
		bool answered;         /* the Connect has completed: cpl */
		struct nvmeof_cpl cpl;
		bool final;            /* the target refused for good: no next attempt */
	} bg;

	void (*wait_hook)(void *);  /* see q_set_wait_hook */
	void (*fail_hook)(void *);  /* see q_set_fail_hook */
	void *fail_hook_arg;
	void (*loss_hook)(void *, struct nvmeof_queue *); /* see q_set_loss_hook */
	void *loss_hook_arg;
	bool lost_live;             /* the loss being recovered ended a live connection */
	bool left_assoc;            /* ... not by a failure: its association ended (q_assoc_moved) */
	const uint32_t *assoc_now;  /* see q_follow_assoc */
	struct q_ka_mark *traffic;  /* see q_note_traffic */
	uint32_t ka_epoch;          /* the mark's epoch this queue's polls last saw */
	bool ka_fresh;              /* answered: a command from seq ka_floor on */
	uint64_t ka_floor;          /* q->seq when the polls first saw ka_epoch */
	void *wait_hook_arg;
	uint32_t wait_hook_ms;
	uint64_t next_housekeep_ms;
	uint64_t cm_wakes;        /* sleeps its CM channel's news ended (wait.c; tests read it) */
	uint32_t completed;       /* requests completed since the outermost poll began */
	uint32_t in_cb;           /* callbacks of this queue running now (nested) */
	struct nvmeof_queue_stats st;
	uint8_t conn_class;       /* enum cr_class of the transport's last failed connect (connretry.h) */
	uint32_t connect_retries; /* what its first connect took: retries, ms */
	uint64_t connect_ms;
	/* cold, at the end: the hot fields above stay on few cache lines */
	char lose_why[160];       /* q_lose_for: why we closed the connection ourselves (a command's
				   * timeout), what the loss's messages say instead of a lost link */
};

/* slots.c */
void q_complete_req(struct nvmeof_queue *q, uint16_t ri);
void q_chunk_done(struct nvmeof_queue *q, uint16_t ri, int err, uint16_t status, uint32_t dw0,
		  uint32_t dw1);
/* CID FFFFh is never handed out: the specification reserves it (an Error
 * Information entry uses it for "no command"). */
/* An I/O command's name in the NVM Command Set, for messages */
static inline const char *q_io_opc_name(uint8_t opc)
{
	return opc == NVME_CMD_READ ? "Read" : opc == NVME_CMD_WRITE ? "Write" : opc == NVME_CMD_FLUSH ? "Flush"
		: opc == 0x08 ? "Write Zeroes" : opc == 0x09 ? "Dataset Management" : "command";
}

static inline void q_next_gen(struct slot *s, uint16_t si)
{
	s->gen = (uint16_t)((s->gen + 1) & GEN_MASK);
	if (unlikely((uint16_t)(s->gen << SLOT_BITS | si) == 0xffff))
		s->gen = 0;
}
static inline void q_release_slot(struct nvmeof_queue *q, uint16_t si)
{
	struct slot *s = &q->slots[si];
	if (unlikely(s->state == SLOT_RETRY))
		q->nretry--;
	if (unlikely(s->flags & SLOT_REFUSED))
		q->nrefused--;
	s->state = SLOT_FREE;
	s->flags = 0;
	q_next_gen(s, si);
	q->slot_free[q->nfree_slots++] = si;
}
void q_finish_slot(struct nvmeof_queue *q, uint16_t si, int err);
/* A request's end, whichever path completed it: the request goes back to
 * its free list, then its callback runs with cpl. */
static inline void q_req_hand_back(struct nvmeof_queue *q, uint16_t ri, const struct nvmeof_cpl *cpl)
{
	struct req *r = &q->reqs[ri];
	nvmeof_cb cb = r->cb;
	void *arg = r->arg;
	r->live = false;
	if (q->count_mr && r->mr)
		__atomic_sub_fetch(&r->mr->inflight, 1, __ATOMIC_RELEASE);
	if (unlikely(ri == q->depth))
		q->rsv_busy = false; /* the reserved request of internal commands */
	else
		q->req_free[q->nfree_reqs++] = ri;
	q->completed++;
	/* Last: the callback may submit again and reuse this request. */
	if (cb) {
		q->in_cb++; /* the queue must outlive its callback: see q_close */
		cb(arg, cpl);
		q->in_cb--;
	}
}
void q_pend_push(struct nvmeof_queue *q, uint16_t ri);
uint16_t q_pend_pop(struct nvmeof_queue *q);
void q_mark_in_doubt(struct nvmeof_queue *q);
void q_fail_slots(struct nvmeof_queue *q, int err);
void q_fail_all(struct nvmeof_queue *q, int err);
/* A new connection of usable commands: every slot free again. */
void q_slots_reset(struct nvmeof_queue *q, uint32_t usable);
/* The 4 KiB scratch buffer after the per-slot DSM ranges. */
static inline uint8_t *q_scratch_buf(struct nvmeof_queue *q)
{
	return q->aux + (size_t)q->depth * NVME_DSM_RANGE_SIZE;
}
/* submit.c */
static inline void q_chain_send(struct nvmeof_queue *q, struct ibv_send_wr *wr)
{
	wr->next = NULL;
	if (q->wr_tail)
		q->wr_tail->next = wr;
	else
		q->wr_head = wr;
	q->wr_tail = wr;
}
int q_post_sends(struct nvmeof_queue *q);
int q_refused_err(const struct nvmeof_queue *q);
void q_finish_refused(struct nvmeof_queue *q);
void q_post_from_poll(struct nvmeof_queue *q);
void q_refill(struct nvmeof_queue *q);
int q_submit(struct nvmeof_queue *q, const struct sub *sb, nvmeof_cb cb, void *arg, uint16_t *ri_out);
/* Bounds a read or write with the namespace's block size as it is now,
 * which *lbads returns: the request is built with that one. */
int q_check_io(struct nvmeof_queue *q, const char *op, const struct nvmeof_ns *ns, uint32_t nlb,
	       const struct nvmeof_mr *mr, size_t off, uint8_t *lbads);
/* A read or write (cdw12: FUA) after q_check_io. */
int q_submit_io(struct nvmeof_queue *q, uint8_t opc, const struct nvmeof_ns *ns, uint64_t slba,
		uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t cdw12, nvmeof_cb cb, void *arg);
int q_write_flags(const char *op, uint32_t flags, uint32_t allowed, uint32_t *cdw12);
int q_check_wz(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint32_t nlb, uint32_t flags, uint32_t *cdw12);
/* sync.c: submit, then wait with a deadline */
int q_sync_run(struct nvmeof_queue *q, const struct sub *sb, uint32_t timeout_ms, struct nvmeof_cpl *out,
	       const char *what);
/* The same for a read or write, with the GPUDirect ordering rules. */
int q_sync_io(struct nvmeof_queue *q, uint8_t opc, const struct nvmeof_ns *ns, uint64_t slba,
	      uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t cdw12, uint32_t timeout_ms);
/* complete.c: one batch of work completions; false when one of them says
 * the connection failed (the caller tells the state) */
struct hwts_hist;
/* ts: each completion's NIC clock, or NULL */
bool q_process_wcs(struct nvmeof_queue *q, const struct ibv_wc *wc, const uint64_t *ts, int n);
void q_send_due_retries(struct nvmeof_queue *q, uint64_t now);
/* qpark.c: after the connection is closed, what was live is parked for the
 * next one (in submission order) or fails. */
void q_park_all(struct nvmeof_queue *q);
/* qstate.c */
void q_set_state(struct nvmeof_queue *q, enum q_state to);
/* A failure seen: the connection is taken down at once (nothing more is
 * sent on it) and the poll's tail recovers. */
void q_lose(struct nvmeof_queue *q);
/* As q_lose, for a reason of ours (a command's timeout, why: "Keep Alive
 * ... got no completion within 5000 ms"): the loss's message and the
 * owner's fail hook name it, not a lost connection. */
void q_lose_for(struct nvmeof_queue *q, const char *why);
/* As q_lose, and as if the wire had died at once: answers already in the
 * CQ are not taken, so everything in flight is lost (a failover study's
 * injected loss). */
void q_cut(struct nvmeof_queue *q);
/* After a batch: timeouts and loss, recovery and reconnect attempts. True
 * when commands may go out (LIVE or CONNECTING). */
bool q_state_tick(struct nvmeof_queue *q);
int q_try_reconnect(struct nvmeof_queue *q);
/* Q_REOPENING: whether the worker is done, and if so the attempt's second
 * half (or the wait for the next attempt). */
int q_reopen_progress(struct nvmeof_queue *q);
/* Why a queue refuses: ECLOSED, naming its state. */
static inline int q_state_err(const struct nvmeof_queue *q)
{
	return nvmeof_err(NVMEOF_ECLOSED, "queue %u is %s", q->qid, q_state_str(q->state));
}
/* The wire may be polled: a connection exists. */
static inline bool q_has_wire(const struct nvmeof_queue *q)
{
	return q->state == Q_LIVE || q->state == Q_LOST || q->state == Q_CONNECTING;
}
/* The association this queue joined was replaced or ended since
 * (q_follow_assoc): a live queue sends nothing more on it (what is
 * submitted waits) and its next poll takes it off. One relaxed load of the
 * controller's counter, which moves only at a loss or a re-association. */
static inline bool q_assoc_moved(const struct nvmeof_queue *q)
{
	return q->assoc_now && __atomic_load_n(q->assoc_now, __ATOMIC_RELAXED) != q->assoc_gen;
}
/* poll.c: after a batch, the state, then retries, refills and the doorbell.
 * The completions this poll counted, or an error. */
int q_poll_tail(struct nvmeof_queue *q);
/* queue.c: fields from the parameters, then the slot, request and buffer
 * arrays (registered when q->pd is set) */
void q_init(struct nvmeof_queue *q, const struct q_params *p);
int q_alloc(struct nvmeof_queue *q);
/* A new connection: the next epoch, every receive posted. */
int q_post_all_recvs(struct nvmeof_queue *q);
/* Poll groups: queues of one controller that share one completion queue
 * and one completion channel (group.c builds them; poll.c and wait.c drive
 * them through the transport's CQ operations on cqc). */
struct nvmeof_poll_group {
	const struct q_transport *tr;
	void *cqc;                        /* what the transport's poll, arm and sleep take */
	struct tr_conn conn;              /* the RDMA transport's: only its cq, cc, armed, unacked */
	const void *owner;                /* the controller whose queues may join */
	struct nvmeof_queue *members[GROUP_MAX]; /* by place (the wr_id's member field) */
	struct nvmeof_queue *list[GROUP_MAX];    /* the same, packed: nmembers of them */
	uint32_t nmembers, max_members;
	uint32_t polling;                 /* polls of the group running now (a callback's poll nests) */
	uint64_t cqe_cap;                 /* entries the CQ holds */
	int vector;                       /* the CQ's completion vector */
	bool hw_ts;                       /* its completions carry the NIC's clock */
	uint8_t next_epoch;               /* shared, so a place reused never repeats an epoch soon */
	struct q_waiter waiter;
	uint64_t cq_wakes;                /* sleeps its completion channel's event ended (wait.c; tests read it) */
	struct pollfd pfd[GROUP_MAX + 1]; /* a sleep's: the completion channel, each member's CM channel */
	struct nvmeof_queue *pfq[GROUP_MAX + 1];
};
/* queue.c: releases what q_alloc and q_init made */
void q_free(struct nvmeof_queue *q);
/* group.c */
int q_group_join(struct nvmeof_poll_group *g, struct nvmeof_queue *q);
/* A group of one for a queue on its own, on device dev of its transport. */
int q_group_of_one(struct nvmeof_queue *q, void *dev);
void q_group_leave(struct nvmeof_queue *q);
uint8_t q_group_next_epoch(struct nvmeof_poll_group *g);

#endif
