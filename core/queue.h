/* One NVMe/RDMA queue (admin or I/O) seen from the controller. */
#ifndef NVMEOF_QUEUE_H
#define NVMEOF_QUEUE_H

#include <infiniband/verbs.h>
#include <sys/socket.h>

#include "nvmeof.h"

#define NVMEOF_MAX_DEPTH 1024 /* slot index in the low 10 CID bits */
#define NVMEOF_ADMIN_DEPTH 31 /* NVMe/RDMA admin queue: HSQSIZE at most 31 */
#define Q_CTRL_LOSS_TMO_DEFAULT_MS 60000 /* ctrl_loss_tmo 0: the default */
#define Q_SCRATCH_SIZE 4096   /* each queue's registered buffer for admin and fabrics data */

struct conn_retry;

struct q_params {
	const struct sockaddr *dst, *src;
	struct ibv_pd *pd;          /* NULL: the queue allocates one, see q_pd() */
	uint16_t qid;
	uint32_t depth;             /* commands in flight */
	uint16_t cntlid;            /* for the CM private data */
	uint32_t connect_timeout_ms;
	uint32_t cmd_timeout_ms;
	uint32_t icd_max;           /* in-capsule write limit; 0 = never */
	uint64_t max_xfer;          /* bytes per command; 0 = only the SGL limit */
	enum nvmeof_wait_mode wait_mode;
	uint32_t spin_us;
	bool batch;
	uint16_t crdt[3];           /* Command Retry Delay Times, 100 ms units */
	struct nvmeof_poll_group *group; /* share its CQ, or NULL for one of our own */
	const struct nvmeof_ctrl_opts *copts; /* the controller's: its trace hook (trace.c); may be NULL */
	struct conn_retry *retry;   /* the connect's retry budget (connretry.h); NULL: one try */
	uint64_t hw_khz;            /* NIC completion timestamps at this clock (kHz); 0: none */
	uint64_t hw_mask;           /* and their valid bits (hwts_hist.mask) */
	bool hdgst, ddgst;          /* NVMe/TCP: header and data digests */
	uint32_t tcp_icd;           /* NVMe/TCP: the controller's in-capsule data size (IOCCSZ) */
	const struct tls_psk *tls;  /* NVMe/TCP: TLS with this PSK (the controller's); NULL: none */
};

/* Resolves, creates the QP, posts receives and CM-connects. The Fabrics
 * Connect command is the controller's business (q_exec). */
int q_open(const struct q_params *p, struct nvmeof_queue **out);
/* The same over NVMe/TCP (qtcp.c): TCP connect, ICReq/ICResp, receives. */
int q_open_tcp(const struct q_params *p, struct nvmeof_queue **out);
struct ibv_pd *q_pd(struct nvmeof_queue *q);
struct ibv_context *q_verbs(struct nvmeof_queue *q);
/* The queue's registered scratch buffer (Q_SCRATCH_SIZE) for admin and fabrics data. */
uint8_t *q_scratch(struct nvmeof_queue *q);
/* Runs one command built in sqe (its CID and DPTR are filled in here);
 * data_len bytes of the scratch buffer go with it (keyed SGL). */
int q_exec(struct nvmeof_queue *q, const uint8_t *sqe, uint32_t data_len, uint32_t timeout_ms,
	   struct nvmeof_cpl *cpl);
/* A reconnect attempt in two halves. prepare runs on a worker thread of
 * its own while the queue's owner goes on polling (the queue is parked and
 * nobody else touches it): whatever must come first (a new association),
 * then the new connection (q_reopen_wire), the limits it brings
 * (q_stage_limits) and the Fabrics Connect to send (q_stage_connect). It
 * may block; it must not poll or submit on this queue. finish runs in the
 * owner's poll once the Connect has completed (cpl; NULL when none was
 * staged) and says whether the queue goes live (0) or tries again later. */
struct q_reconnect_ops {
	int (*prepare)(struct nvmeof_ctrl *, struct nvmeof_queue *);
	/* The staged command's answer (cpl; NULL when none was staged): 0
	 * the queue is live, an error, or Q_RECONNECT_MORE after staging the
	 * next command (q_stage_connect), which the poll sends on the same
	 * connection and whose answer comes here too (an authentication's
	 * AUTH_Send/AUTH_Receive after the Connect). */
	int (*finish)(struct nvmeof_ctrl *, struct nvmeof_queue *, const struct nvmeof_cpl *cpl);
	/* finish returned Q_RECONNECT_WORK: work that would stall the poll
	 * (an authentication's DH step), on a worker thread as prepare; it
	 * returns what finish would, and the poll goes on from there. */
	int (*work)(struct nvmeof_ctrl *, struct nvmeof_queue *);
	/* The attempt ended without finish's (or work's) last word: the
	 * connection lost or the queue given up or closed meanwhile. What the
	 * owner kept for finish (an authentication's keys) goes now; never
	 * while work runs. NULL: nothing kept. */
	void (*abandon)(struct nvmeof_ctrl *, struct nvmeof_queue *);
};
#define Q_RECONNECT_MORE 1
#define Q_RECONNECT_WORK 2
/* Reconnect on connection loss: after delay_ms, and every delay_ms until
 * loss_tmo_ms (0: Q_CTRL_LOSS_TMO_DEFAULT_MS), the queue runs an attempt
 * (from its poll) while requests wait. */
void q_set_reconnect(struct nvmeof_queue *q, const struct q_reconnect_ops *ops, uint32_t delay_ms,
		     uint32_t loss_tmo_ms);
/* For prepare, on its worker: the transport's new connection (CM steps,
 * QP, receives), nothing else of the queue. */
int q_reopen_wire(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms);
/* For prepare: limits (as q_set_limits) and the association generation
 * that apply from the new connection on. */
void q_stage_limits(struct nvmeof_queue *q, uint32_t icd_max, uint64_t max_xfer, const uint16_t crdt[3],
		    uint32_t assoc_gen);
/* For prepare: the new association's in-capsule data size (from IOCCSZ,
 * whether or not the queue's own writes use it) for a transport whose
 * framing follows it (NVMe/TCP: the controller takes data up to it only in
 * the capsule); applied with the limits. */
void q_stage_wire_icd(struct nvmeof_queue *q, uint32_t bytes);
/* For prepare, between its steps: the owner gave the attempt up (the queue
 * is being destroyed, or ctrl_loss_tmo passed); stop with an error. */
bool q_reconnect_cancelled(const struct nvmeof_queue *q);
/* For finish: the association generation the attempt's prepare staged. */
uint32_t q_staged_assoc_gen(const struct nvmeof_queue *q);
/* For prepare or finish, with the error they return: the target refused in
 * a way no retry changes (a status with DNR), so the queue fails now, with
 * that message, instead of trying again until ctrl_loss_tmo. */
void q_reconnect_final(struct nvmeof_queue *q);
/* For prepare: the command (the Fabrics Connect) the poll sends on the new
 * connection, its data_len bytes already in the scratch buffer; for finish,
 * the next one (Q_RECONNECT_MORE). */
void q_stage_connect(struct nvmeof_queue *q, const uint8_t *sqe, uint32_t data_len);
uint32_t q_assoc_gen(const struct nvmeof_queue *q);
/* The controller's limits, re-read after a reassociation, applied to a live
 * queue: they take effect for every command issued from now on, re-issued
 * ones included. */
void q_set_limits(struct nvmeof_queue *q, uint32_t icd_max, uint64_t max_xfer, const uint16_t crdt[3]);
uint32_t q_sqsize(const struct nvmeof_queue *q); /* the SQSIZE connected with */
/* Closes the old connection if one is left, parks what was in flight,
 * connects anew (CM only): the queue is then CONNECTING, and only internal
 * commands go until q_set_live. */
int q_reopen(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms);
/* A first connect: the transport's connection, tried again after a failure
 * the transport calls transient while r (NULL: one try) allows, closing
 * what a failed try made. The message of a final failure names the step,
 * and the tries and time where more than one was possible. */
int q_connect_tries(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms, uint32_t *usable,
		    struct conn_retry *r);
/* What the queue's connect took: retries after the first try, and ms. */
void q_set_connect_cost(struct nvmeof_queue *q, uint32_t retries, uint64_t ms);
/* The Fabrics Connect on a reopened queue succeeded: what waited goes out,
 * in submission order. */
void q_set_live(struct nvmeof_queue *q);
/* The controller keeps the PD: registrations outlive a queue's reconnects. */
void q_take_pd(struct nvmeof_queue *q);
/* The network interface the queue's connection leaves by (NVMe/TCP); ""
 * where the transport names no such thing. */
void q_netdev(struct nvmeof_queue *q, char *out, size_t len);
/* Fails what is in flight with NVMEOF_ECLOSED and releases everything;
 * NVMEOF_EBUSY, touching nothing, from inside one of q's own callbacks. */
int q_close(struct nvmeof_queue *q);
/* Poll groups (group.c): a CQ of cqe entries and a channel on verbs for up to
 * max_members (at most 64) queues of owner. */
struct q_transport;
/* The RDMA transport (qrdma.c), for a poll group's CQ. */
const struct q_transport *q_rdma_transport(void);
const struct q_transport *q_tcp_transport(void);
/* hw_ts: its CQ reports the NIC's clock for each completion */
int q_group_create(const struct q_transport *tr, void *dev, const void *owner, uint32_t max_members, int cqe, int vector,
		   bool hw_ts, enum nvmeof_wait_mode mode, uint32_t spin_us, struct nvmeof_poll_group **out);
/* Completion entries a queue of depth commands may need at once in a group's CQ. */
uint64_t q_group_cqes(uint32_t depth);
bool q_group_owned_by(const struct nvmeof_poll_group *g, const void *owner);
/* The controller that owns a queue, and the optional commands it supports
 * (ONCS), set by the controller. */
void q_set_owner(struct nvmeof_queue *q, struct nvmeof_ctrl *ctrl, uint16_t oncs);
struct nvmeof_ctrl *q_owner(struct nvmeof_queue *q);
/* q_exec with the data in a registered region instead of the scratch buffer. */
int q_exec_mr(struct nvmeof_queue *q, const uint8_t *sqe, struct nvmeof_mr *mr, size_t off,
	      uint32_t len, uint32_t timeout_ms, struct nvmeof_cpl *cpl);
/* An Asynchronous Event Request: no command timeout, a normal request (not
 * the reserved one), no data; *sqe must live until cb runs. On connection
 * loss it completes with NVMEOF_ECLOSED instead of being re-issued. */
int q_submit_aer(struct nvmeof_queue *q, const uint8_t *sqe, nvmeof_cb cb, void *arg);
bool q_connected(const struct nvmeof_queue *q);
/* By its owner: a live connection goes down now, as after a loss, and what
 * was out on it is parked or fails (the controller's fence, creset.c). */
void q_drop(struct nvmeof_queue *q);
/* One path of several to a namespace: a path status (SCT 3h) is never
 * retried on this queue, and on a connection loss what was in flight fails
 * with NVMEOF_ECLOSED instead of waiting for the reconnect, so the
 * multipath layer re-issues it on another path at once. */
void q_set_failover(struct nvmeof_queue *q);
/* NVMe Base 2.1, 9.6: a command that modifies media, lost with the
 * connection, may still be executing on the controller; the reconnect that
 * replays it waits until ms have passed since the loss (0: no wait). */
void q_set_quiesce(struct nvmeof_queue *q, uint32_t ms);
/* What a write lost with its connection waits, from the loss, before it
 * goes out again (docs/library.md, "Write ordering across a path loss"):
 * none when quiesce_ms is 0 (the caller's choice); else the longer of
 * quiesce_ms and the controller's Command Quiesce Time, plus, with
 * keep-alive on, two keep-alive timeouts: the controller's keep-alive
 * timer runs out at most KATO after the last command it received (two
 * where traffic counts and the timer is checked once per KATO, as nvmet
 * does), and that command reached it before the host saw the loss. The
 * controller's timer counts in its granularity, KAS (Identify Controller
 * bytes 321:320, 100 ms units), and may round KATO up to it:
 * each keep-alive timeout counts as KATO rounded up to a multiple of KAS. */
static inline uint32_t q_hold_rule(uint32_t quiesce_ms, uint32_t cqt_ms, uint32_t kato_ms, uint16_t kas)
{
	if (!quiesce_ms)
		return 0;
	uint64_t kato = kato_ms, unit = 100ull * kas;
	if (unit)
		kato = (kato + unit - 1) / unit * unit;
	uint64_t ms = (uint64_t)(quiesce_ms > cqt_ms ? quiesce_ms : cqt_ms) + 2 * kato;
	return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}
#define Q_QUIESCE_DEFAULT_MS 1000 /* as MP_QUIESCE_DEFAULT_MS: docs/library.md "Write ordering across a path loss" */
/* Commands go out now: LIVE, on the association it joined. */
bool q_is_live(const struct nvmeof_queue *q);
/* Closed for good: no reconnect will bring it back. */
bool q_is_dead(const struct nvmeof_queue *q);
/* Called every every_ms (at most) while a synchronous call on q waits, by
 * the thread that waits: the admin queue's holder sends a Keep Alive the
 * keep-alive thread found due (keepalive.c). */
void q_set_wait_hook(struct nvmeof_queue *q, void (*fn)(void *), void *arg, uint32_t every_ms);
/* Called, in the poll that found it, when q fails for good with no
 * reconnect of its own (the admin queue: the controller's state machine
 * takes it from there, cstate.c). */
void q_set_fail_hook(struct nvmeof_queue *q, void (*fn)(void *), void *arg);
/* Called, in the poll that recovers it, when q's live connection was lost
 * (not a reconnect attempt that failed), before what was in flight is
 * parked or failed: an I/O queue's controller tears its association down
 * (cstate.c). */
void q_set_loss_hook(struct nvmeof_queue *q, void (*fn)(void *, struct nvmeof_queue *), void *arg);
/* The association the controller has now (an atomic counter, *now; NULL:
 * none to follow) and the one this queue's Connect joined (gen): a live
 * queue whose association was replaced or ended (an I/O queue's loss
 * fences it) sends nothing more (what is submitted on it waits), is lost
 * at its next poll, and reconnects to the new
 * one where it may. The one place a new queue's association is set, with
 * or without reconnect; afterwards only a reconnect's successful Connect
 * moves it (q_stage_limits' assoc_gen), a failed one keeping the old. */
void q_follow_assoc(struct nvmeof_queue *q, const uint32_t *now, uint32_t gen);
/* Traffic-based keep-alive's mark, the controller's (atomic fields): its
 * keep-alive thread starts an epoch at each check; a queue's poll sets
 * seen = epoch once the target answered a command submitted after the poll
 * first saw that epoch, so that a late answer to an older command (one
 * the target processed before the check) never defers a Keep Alive. */
struct q_ka_mark {
	uint32_t epoch, seen;
};
void q_note_traffic(struct nvmeof_queue *q, struct q_ka_mark *mark);
/* In the loss hook: why we closed the connection ourselves (a command's
 * timeout, naming it); NULL for a connection the link or target ended. */
const char *q_lose_reason(const struct nvmeof_queue *q);

#endif
