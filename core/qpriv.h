/*
 * The inside of a queue, shared by the files that each do one part of it:
 *   slots.c      command slots and CIDs, requests, the waiting FIFO
 *   submit.c     submission, MDTS splitting, SGLs, doorbells
 *   complete.c   completion processing, retries, timeouts, poll and wait
 *   sync.c       synchronous calls
 *   reconnect.c  parking what was in flight and re-issuing it in order
 *   queue.c      buffers, accessors, teardown
 *   qrdma.c      the queue over an RDMA connection (rdma.c)
 * Not installed; nothing here is exported.
 */
#ifndef NVMEOF_QPRIV_H
#define NVMEOF_QPRIV_H

#include "internal.h"
#include "queue.h"
#include "rdma.h"
#include "transport.h"

#define SLOT_BITS 10
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
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
#define SCRATCH_SIZE 4096
#define HOUSEKEEP_MS 100
#define MAX_RETRIES 5  /* as the kernel host's nvme_max_retries */
#define NO_REQ 0xffff
/* A send's wr_id carries the slot's generation, so a send completion that
 * arrives after its slot was released (and maybe reused) is recognised. */
#define SEND_WRID(q, gen, si) (WRID_HIGH(q) | (uint64_t)(gen) << 16 | (si))

enum slot_state { SLOT_FREE, SLOT_BUSY, SLOT_ZOMBIE, SLOT_RETRY };
/* SLOT_REFUSED: its send was refused by the post; it completes, failed,
 * from the next poll (callbacks run from poll and wait only). */
enum { SLOT_SENT = 1, SLOT_RESP = 2, SLOT_REFUSED = 4 };
/* REQ_AER: an admin command that stays outstanding (no timeout, not the
 * reserved request); REQ_WZ: Write Zeroes, split at 65536 blocks. */
enum req_kind { REQ_IO, REQ_FLUSH, REQ_DSM, REQ_RAW, REQ_AER, REQ_WZ };

struct slot {
	struct ibv_send_wr wr;
	struct ibv_sge sge[2];
	uint64_t t_submit_ms;     /* first seen out (0: not yet); SLOT_RETRY: when to send again */
	uint32_t dw0, dw1;
	uint16_t gen, req, status;
	uint8_t state, flags, retries;
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
	bool queued;              /* in the pending FIFO */
	bool live;                /* submitted, not yet completed */
	bool replay;              /* waited through an outage: re-issued one at a time */
};

/* A wait over one queue or a poll group: spin, then sleep (see q_wait). */
struct q_waiter {
	void *ctx;
	int (*poll)(void *ctx);
	int (*arm)(void *ctx);        /* NULL: the wire cannot sleep */
	int (*sleep)(void *ctx, int timeout_ms);
	bool (*reconnecting)(void *ctx);
	uint32_t (*inflight)(void *ctx);
	enum nvmeof_wait_mode mode;
	uint32_t spin_us;
	uint64_t last_us, gap_us;     /* last completion; mean time between them */
	uint64_t st_sleeps;
};
int q_wait(struct q_waiter *w, uint32_t min, int timeout_ms);
uint64_t q_spin_budget(const struct q_waiter *w, uint32_t inflight); /* us */
void q_waiter_note(struct q_waiter *w, uint32_t n);

struct sub {
	uint8_t kind, opc;
	const struct nvmeof_ns *ns;
	uint64_t slba;
	uint32_t nlb;
	struct nvmeof_mr *mr;
	size_t off;
	const uint8_t *raw;
	uint32_t data_len;
	uint32_t cdw12;
};

struct nvmeof_queue {
	const struct q_transport *tr; /* the wire: RDMA, or a test's loopback */
	struct nvmeof_poll_group *group; /* shares its CQ with other queues, or NULL */
	uint8_t member, epoch;    /* place in the group; connection count (wr_id) */
	bool inline_sqe;          /* the 64-byte capsule goes inline in the send */
	void *trc;                /* its connection, handed to every operation */
	struct tr_conn conn;      /* the RDMA transport's connection */
	struct nvmeof_ctrl *ctrl;
	struct ibv_pd *pd;
	bool own_pd, batch, dead, oncs_dsm;
	uint16_t qid;
	uint32_t depth, hrqsize;     /* SQSIZE (commands), HRQSIZE (our receive buffers) */
	uint32_t usable;          /* min(SQSIZE, the target's CRQSIZE): commands out at once */
	uint32_t cmd_timeout_ms, icd_max, spin_us;
	uint32_t max_cmd_bytes;   /* MDTS, capped by the 24-bit keyed SGL length */
	enum nvmeof_wait_mode wait_mode;

	struct slot *slots;
	uint16_t *slot_free;
	uint32_t nfree_slots;
	struct req *reqs;
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
	int (*reconnect)(struct nvmeof_ctrl *, struct nvmeof_queue *);
	uint32_t reconnect_delay_ms, ctrl_loss_tmo_ms, assoc_gen;
	bool reconnecting, connecting, rsv_busy;
	bool wire_closed;         /* given up: the connection is closed, never polled again */
	uint64_t lost_at_ms, next_try_ms;

	uint64_t next_housekeep_ms;
	uint32_t completed;       /* requests completed by the current poll */
	struct q_waiter waiter;
	struct nvmeof_queue_stats st;
};

/* slots.c */
void q_complete_req(struct nvmeof_queue *q, uint16_t ri);
void q_chunk_done(struct nvmeof_queue *q, uint16_t ri, int err, uint16_t status, uint32_t dw0,
		  uint32_t dw1);
void q_next_gen(struct slot *s, uint16_t si);
void q_release_slot(struct nvmeof_queue *q, uint16_t si);
void q_finish_slot(struct nvmeof_queue *q, uint16_t si, int err);
void q_pend_push(struct nvmeof_queue *q, uint16_t ri);
uint16_t q_pend_pop(struct nvmeof_queue *q);
void q_fail_slots(struct nvmeof_queue *q, int err);
void q_fail_all(struct nvmeof_queue *q, int err);
void q_mark_dead(struct nvmeof_queue *q);
/* submit.c */
void q_chain_send(struct nvmeof_queue *q, struct ibv_send_wr *wr);
int q_post_sends(struct nvmeof_queue *q);
int q_refused_err(const struct nvmeof_queue *q);
void q_finish_refused(struct nvmeof_queue *q);
void q_post_from_poll(struct nvmeof_queue *q);
void q_refill(struct nvmeof_queue *q);
int q_submit(struct nvmeof_queue *q, const struct sub *sb, nvmeof_cb cb, void *arg, uint16_t *ri_out);
int q_check_io(struct nvmeof_queue *q, const char *op, const struct nvmeof_ns *ns, uint32_t nlb,
	       const struct nvmeof_mr *mr, size_t off);
/* A read or write (cdw12: FUA) after q_check_io. */
int q_submit_io(struct nvmeof_queue *q, uint8_t opc, const struct nvmeof_ns *ns, uint64_t slba,
		uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t cdw12, nvmeof_cb cb, void *arg);
/* sync.c: submit, then wait with a deadline */
int q_sync_run(struct nvmeof_queue *q, const struct sub *sb, uint32_t timeout_ms, struct nvmeof_cpl *out,
	       const char *what);
/* The same for a read or write, with the GPUDirect ordering rules. */
int q_sync_io(struct nvmeof_queue *q, uint8_t opc, const struct nvmeof_ns *ns, uint64_t slba,
	      uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t cdw12, uint32_t timeout_ms);
/* complete.c */
void q_post_recvs(struct nvmeof_queue *q);
void q_process_wcs(struct nvmeof_queue *q, const struct ibv_wc *wc, int n);
/* After a batch: timeouts, connection loss, retries, what waits; then the
 * doorbell. The completions this poll counted, or an error. */
int q_poll_tail(struct nvmeof_queue *q);
/* reconnect.c */
void q_park_all(struct nvmeof_queue *q);
int q_try_reconnect(struct nvmeof_queue *q);
/* queue.c: fields from the parameters, then the slot, request and buffer
 * arrays (registered when q->pd is set) */
void q_init(struct nvmeof_queue *q, const struct q_params *p);
int q_alloc(struct nvmeof_queue *q);
/* A new connection: the next epoch, every receive posted. */
int q_post_all_recvs(struct nvmeof_queue *q);
/* group.c */
int q_group_join(struct nvmeof_poll_group *g, struct nvmeof_queue *q);
void q_group_leave(struct nvmeof_queue *q);
uint8_t q_group_next_epoch(struct nvmeof_poll_group *g);
const struct tr_conn *q_group_conn(const struct nvmeof_poll_group *g);

#endif
