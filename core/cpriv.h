/* The inside of a controller, shared by the files that each do one part of
 * it. Each calls only those listed before it (tests/unit/layers.sh):
 *   cfields.c   its fields as the others read them
 *   ctrl_mem.c  the public registration calls
 *   auth_run.c  in-band authentication of a queue after its Connect
 *   cstate.c    the state machine: LIVE, RESETTING, CONNECTING, DEAD...
 *   admin.c     bring-up commands on the admin queue
 *   adminio.c   admin commands for users and the namespace rescan
 *   aer.c       asynchronous events and their thread
 *   keepalive.c the keep-alive thread
 *   hostid.c    the host NQN and ID
 *   creset.c    re-creating the association, and the reset worker
 *   reassoc.c   an I/O queue's reconnect
 *   ctrl.c      connect, I/O queue creation, close
 */
#ifndef NVMEOF_CPRIV_H
#define NVMEOF_CPRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "ctrl.h"
#include "internal.h"
#include "mem.h"
#include "nstable.h"
#include "protocol.h"
#include "queue.h"
#include "auth.h"

#define MAX_NS 1024
#define SHUTDOWN_TIMEOUT_MS 5000

/* A controller's life (cstate.c); only ctrl_change_state moves it. */
enum ctrl_state {
	CTRL_NEW,        /* the first bring-up */
	CTRL_LIVE,       /* associated: keep-alive, events, admin commands go */
	CTRL_RESETTING,  /* the association is lost; the reset worker re-creates it after the delay */
	CTRL_CONNECTING, /* an attempt to re-create it runs (under admin_lock) */
	CTRL_DELETING,   /* being closed: nothing new starts */
	CTRL_DEAD,       /* lost for good: refused, ctrl_loss_tmo passed, or no reconnect configured */
};

/* Lock order: admin_lock before lock. A thread holding lock may try
 * admin_lock (trylock) but never waits for it: the admin queue may be
 * another thread's for up to a command timeout, and that thread takes
 * lock meanwhile (ctrl_fence, the Keep Alive from a wait). Whoever needs
 * admin_lock while holding lock lets lock go first (ctrl_fence_unlocked). */
struct tls_psk;
struct nvmeof_ctrl {
	pthread_mutex_t lock;       /* queue ids, counters, keep-alive state, the state */
	pthread_mutex_t admin_lock; /* the admin queue, after bring-up */
	struct nvmeof_ctrl_opts o;
	char subnqn[NVME_NQN_MAX + 1], hostnqn[NVME_NQN_MAX + 1];
	uint8_t hostid[16];
	struct sockaddr_storage dst, src;
	bool has_src;
	bool tcp;                    /* NVMe/TCP (opts.trtype): no PD, no device */
	struct nvmeof_queue *admin;
	struct ibv_pd *pd;           /* outlives reconnects: registrations stay valid */
	uint32_t assoc_gen;          /* bumped each time the association is re-created */
	uint64_t reassoc_failed_ms;  /* admin_lock: when the last attempt to re-create it failed (0: none) */
	bool assoc_stale;            /* an I/O queue's Connect named a controller the target no longer has */
	bool assoc_refused;          /* admin_lock: the target refused a new association with DNR */
	char assoc_refused_msg[512]; /* admin_lock: what it said */
	struct nvmeof_ctrl_info info;
	struct ns_table nst;         /* stable structs: events add and retire namespaces */
	struct aer *aer;             /* asynchronous events, when enabled (aer.c) */
	uint8_t *qid_used;
	struct mem_ctx mem;          /* the PD, and the regions registered in it */
	uint32_t nqueues, depth_limit, ngroups, qid_next;
	uint64_t hw_khz;            /* hw_timestamps: the HCA's clock (kHz); 0: off */
	uint64_t hw_mask;           /* its completion_timestamp_mask */
	uint32_t cc;
	/* keep-alive */
	pthread_t ka_thread;
	pthread_cond_t ka_cond;
	bool ka_running, ka_stop;
	int ka_err;
	char ka_msg[256];
	uint64_t ka_sent;
	/* A Keep Alive the thread asks the admin lock's holder to send (KA_*) */
	atomic_int ka_due;
	uint8_t ka_sqe[NVME_SQE_SIZE]; /* the holder's Keep Alive, until it is answered */
	bool ka_async_out;             /* under lock: that one is out, since ka_async_ms */
	uint64_t ka_async_ms;
	/* Traffic-based keep-alive (CTRATT.TBKAS, atomic): the controller
	 * restarts its KATO timer on every command it processes, so, as the
	 * kernel host does, no Keep Alive goes out in an interval in which I/O
	 * submitted since the last check completed (ka_mark, set by the I/O
	 * queues' polls, its epoch moved under lock): one the controller
	 * answers late while busy would end a live association. */
	bool tbkas;
	struct q_ka_mark ka_mark;
	uint64_t ka_skipped;           /* under lock: Keep Alives not sent for that */
	bool admin_live;               /* under admin_lock: connected and enabled */
	/* in-band authentication (auth_run.c): the secrets, parsed at connect */
	struct auth_key *host_key, *ctrl_key; /* NULL: none */
	struct tls_psk *tls;           /* NVMe/TCP over TLS: every queue's PSK; NULL: no TLS */
	uint16_t auth_tid;             /* the next transaction ID (atomic) */
	uint32_t auth_hashes, auth_dhgroups; /* offered in Negotiate (auth_offer_parse) */
	uint8_t admin_auth_hash, admin_auth_dh; /* under admin_lock: the admin queue's last */
	bool admin_auth_bidir;
	struct ctrl_reauth **reauth;   /* per I/O queue ID: a reconnect's transaction, on its poll */
	uint32_t nreauth;              /* its entries (I/O queue IDs + 1), set once at connect */
	/* the state machine (cstate.c), under lock */
	enum ctrl_state state;
	pthread_cond_t state_cond;     /* broadcast on every change */
	uint64_t lost_ms;              /* when the association was lost (0: live) */
	uint64_t next_reset_ms;        /* RESETTING: the reset worker's next attempt */
	char state_msg[512];           /* why it left LIVE */
	bool fence_due;                /* an I/O queue's loss: the admin queue is still to be torn down */
	pthread_t reset_thread;        /* creset.c, with reconnect_delay_ms */
	bool reset_running;
	/* the Zone Append Size Limit as nvmeof_zns_info last read it (zns.c),
	 * atomic: 0 not read yet, else 1 << 32 | the limit in bytes (0: MDTS) */
	uint64_t zns_zasl;
};

/* cstate.c: the controller's one state machine */
/* Moves the state to `to` where the transition is allowed (false, and
 * nothing changes, where not); lock not held. */
bool ctrl_change_state(struct nvmeof_ctrl *c, enum ctrl_state to);
enum ctrl_state ctrl_state(struct nvmeof_ctrl *c);
const char *ctrl_state_str(enum ctrl_state s);
/* The admin queue's fail hook (q_set_fail_hook): with admin_lock held, in
 * the poll that saw the loss. LIVE goes to RESETTING, or to DEAD without
 * reconnect_delay_ms. */
void ctrl_admin_lost(void *arg);
/* An I/O queue's loss hook (q_set_loss_hook), in the poll that recovers
 * it: as the kernel host's error recovery, the loss of any queue of the
 * association is the association's. LIVE goes to RESETTING, or to DEAD
 * without reconnect_delay_ms (keep-alive stops: the controller's KATO
 * runs), and the admin queue is torn down (ctrl_fence) now when it is
 * free, else by the reset worker or the keep-alive thread. A queue of an older association says
 * nothing of the current one. */
void ctrl_io_lost(void *arg, struct nvmeof_queue *q);
/* admin_lock held: after an I/O queue's loss (fence_due), the admin
 * queue's connection goes down. The other I/O queues left the old
 * association when the fence fell due (ctrl_io_lost moved assoc_gen):
 * they go at their next poll (reconnecting, where they do), and what is
 * submitted on one meanwhile waits rather than go out on the old one. */
void ctrl_fence(struct nvmeof_ctrl *c);
/* c->lock held: let go of it, fence under admin_lock, take it again (the
 * reset worker's and the keep-alive thread's way to a due fence). */
void ctrl_fence_unlocked(struct nvmeof_ctrl *c);
/* lock held: 0 when LIVE, else an error with the state's message in msg. */
int ctrl_state_health(struct nvmeof_ctrl *c, char *msg, size_t len);
/* The loss clock ran past ctrl_loss_tmo_ms (lock held). */
bool ctrl_past_loss_tmo(struct nvmeof_ctrl *c, uint64_t now);
/* creset.c: re-creating the association */
/* admin_lock held: re-creates the association (unless another attempt
 * failed within the reconnect delay), moving the state through
 * CONNECTING to LIVE, or back to RESETTING, or to DEAD; fresh: a new one
 * was made (the namespaces are to be read again). */
int ctrl_reassociate(struct nvmeof_ctrl *c, bool *fresh);
/* The reset worker: started once LIVE, with reconnect_delay_ms; stopped
 * (DELETING, joined) before the admin queue closes. */
int ctrl_reset_start(struct nvmeof_ctrl *c);
void ctrl_reset_stop(struct nvmeof_ctrl *c);
/* hostid.c */
int ctrl_host_identity(struct nvmeof_ctrl *c);
/* admin.c */
int ctrl_prop_set(struct nvmeof_ctrl *c, uint32_t off, uint32_t val, const char *name);
int ctrl_wait_csts(struct nvmeof_ctrl *c, uint32_t mask, uint32_t want, uint32_t timeout_ms,
		   const char *what);
/* The Fabrics Connect and, when asked for, the authentication after it.
 * *status (when not NULL): the NVMe status of what failed with
 * NVMEOF_ENVME, the Connect or an AUTH_Send/AUTH_Receive; else 0. */
int ctrl_fabrics_connect(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid, uint16_t sqsize,
			 uint16_t cntlid, uint32_t kato, uint16_t *cntlid_out, uint16_t *status);
/* The Fabrics Connect command in sqe and its data in q's scratch buffer. */
int ctrl_connect_build(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid, uint16_t sqsize,
		       uint16_t cntlid, uint32_t kato, uint8_t *sqe);
/* What a Fabrics Connect's completion (rc, cpl) means, as an error naming
 * why; a Connect naming a CNTLID the target no longer has marks the
 * association stale when it was built for the current one (current). */
int ctrl_connect_result(struct nvmeof_ctrl *c, uint16_t qid, int rc, const struct nvmeof_cpl *cpl,
			bool current, uint16_t *cntlid_out);
int ctrl_enable(struct nvmeof_ctrl *c, struct nvmeof_ctrl_info *info);
int ctrl_identify_ctrl(struct nvmeof_ctrl *c, struct nvmeof_ctrl_info *info);
int ctrl_set_num_queues(struct nvmeof_ctrl *c, uint32_t *granted);
int ctrl_identify_all(struct nvmeof_ctrl *c);
/* auth_run.c: in-band authentication after a Fabrics Connect */
/* The secrets of opts into c, refused when malformed; before anything is sent. */
int ctrl_auth_setup(struct nvmeof_ctrl *c, const struct nvmeof_ctrl_opts *opts);
void ctrl_auth_free(struct nvmeof_ctrl *c);
/* The transaction on q, synchronously, when the Connect's DW0 (cdw0) asks
 * for it; an error naming why when it fails or cannot be done, with, when
 * that is NVMEOF_ENVME, the failed AUTH_Send/AUTH_Receive's status in
 * *status (NULL: not wanted). */
int ctrl_auth_sync(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid, uint32_t cdw0, uint16_t *status);
/* From a reconnect's finish, on the queue's poll: 0 when the Connect
 * (cdw0) needs no authentication; Q_RECONNECT_MORE with the first command
 * staged (q_stage_connect); an error. */
int ctrl_auth_async_start(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid, uint32_t cdw0);
/* The answer to a staged authentication command: the same three outcomes. */
int ctrl_auth_async_step(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid,
			 const struct nvmeof_cpl *cpl);
/* Q_RECONNECT_WORK from ctrl_auth_async_step: the DH step, on the
 * reconnect's worker; what ctrl_auth_async_step would return. */
int ctrl_auth_async_work(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid);
/* The reconnect attempt ended without the transaction's end (the queue
 * lost, given up or closed): its state is cleansed now. */
void ctrl_auth_async_abandon(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid);
/* keepalive.c */
void *ctrl_ka_main(void *arg);
void ctrl_ka_stop(struct nvmeof_ctrl *c);
/* Traffic-based keep-alive: whether I/O of the epoch now ending was
 * answered; a new epoch starts. lock held. */
bool ctrl_ka_new_epoch(struct nvmeof_ctrl *c);
/* For whoever holds admin_lock, from inside a synchronous command's wait:
 * sends the Keep Alive the thread found due (arg: the controller). */
void ctrl_ka_on_wait(void *arg);
/* How often a waiting holder should call ctrl_ka_on_wait. */
uint32_t ctrl_ka_hook_ms(const struct nvmeof_ctrl *c);
/* reassoc.c: the reconnect hook of I/O queues */
/* How an I/O queue reconnects (reassoc.c). */
extern const struct q_reconnect_ops ctrl_reconnect_ops;
/* Test-only: runs in an I/O queue's reconnect (reassoc.c), admin_lock
 * held, after the association was checked and before the Connect's
 * controller and generation are read. Never set outside tests. */
extern void (*reassoc_test_hook)(struct nvmeof_ctrl *c);

/* The controller's in-capsule data size in bytes (IOCCSZ less the SQE):
 * what NVMe/TCP frames a write's data by, whether or not in_capsule puts
 * the queue's own writes there. */
static inline uint32_t ctrl_wire_icd(const struct nvmeof_ctrl_info *i)
{
	return i->ioccsz > NVME_SQE_SIZE / 16 ? i->ioccsz * 16u - NVME_SQE_SIZE : 0;
}

#endif
