/*
 * A controller's fence (core/cstate.c) on the loopback test wire: the loss
 * of an I/O queue ends the association, and nothing of the host may keep
 * the old one alive afterwards (no Keep Alive once the fence is due), and
 * what the fence runs on the thread that saw the loss (the admin queue's
 * callbacks) leaves that thread's own callbacks their own message; and
 * a queue that reconnects to an association another queue re-created
 * takes that association's quiesce time. A due fence sends the other I/O
 * queues off at once and goes before any admin command; what the fence
 * runs cannot destroy the queue whose poll runs it; a new association
 * carries no fence of the old; a reconnect whose Connect was out when a
 * fence fell due does not join the old association, nor one whose
 * association ended while it read the controller, and a Connect staged
 * before the fence is not sent; a batch committed after it sends nothing;
 * no queue is created on an ended association; an answered event is not
 * re-armed once the fence is due. The
 * controller is a bare struct with its admin queue and one I/O queue on
 * test wires: no target, no threads but the keep-alive one under test.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adminio.h"
#include "aer.h"
#include "check.h"
#include "cpriv.h"
#include "fakewire.h"
#include "internal.h"
#include "protocol.h"
#include "qpriv.h"
#include "util.h"

#define OPC_KEEP_ALIVE 0x18
#define OPC_AER 0x0c
#define KA_DUE_VALUE 1 /* keepalive.c's KA_DUE: the thread waits for the admin lock */

struct admin_rec {
	int keep_alives, aers, others;
	bool ka_unanswered; /* a target too busy to answer Keep Alive */
	uint32_t ka_delay_ms; /* a slow answer: the Keep Alive's sender waits that long */
	uint64_t ka_ms[8];    /* when each of the first Keep Alives was sent */
	uint32_t ctratt;      /* the bring-up's Identify Controller CTRATT */
	uint16_t aer_cid; /* the last event request's */
	struct nvmeof_queue *bringup; /* set: answer a new association's bring-up on this admin queue */
};

/* A new association's admin commands, as a controller answers them: the
 * Connect a CNTLID, CSTS ready, Identify Controller keyed SGLs (written
 * where the host reads it: the test wire moves no data). */
static void bringup_answer(struct admin_rec *r, const uint8_t *sqe, uint8_t *cqe)
{
	uint32_t dw0 = 0;
	if (sqe[0] == NVME_FABRICS_OPCODE && sqe[4] == NVMF_FCTYPE_CONNECT)
		dw0 = 7;
	if (sqe[0] == NVME_FABRICS_OPCODE && sqe[4] == NVMF_FCTYPE_PROPERTY_GET && sqe[44] == NVME_REG_CSTS)
		dw0 = NVME_CSTS_RDY;
	if (sqe[0] == 0x06) { /* Identify */
		((uint8_t *)q_scratch(r->bringup))[536] = NVME_SGLS_KEYED;
		put_le32((uint8_t *)q_scratch(r->bringup) + 96, r->ctratt); /* bytes 99:96 */
	}
	memcpy(cqe, &dw0, 4);
}

/* The admin wire: Keep Alive answered, an event request never (as a
 * controller with nothing to report). */
static enum fw_action admin_responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				      uint8_t *cqe)
{
	(void)sge;
	(void)nsge;
	(void)cqe;
	struct admin_rec *r = ctx;
	if (sqe[0] == OPC_KEEP_ALIVE) {
		int n = __atomic_add_fetch(&r->keep_alives, 1, __ATOMIC_RELAXED);
		if (n <= 8)
			__atomic_store_n(&r->ka_ms[n - 1], nvmeof_now_ms(), __ATOMIC_RELAXED);
		if (r->ka_delay_ms)
			usleep(r->ka_delay_ms * 1000u);
		if (r->ka_unanswered)
			return FW_DROP;
	}
	if (sqe[0] == OPC_AER) {
		r->aer_cid = nvme_sqe_cid(sqe);
		__atomic_add_fetch(&r->aers, 1, __ATOMIC_RELAXED);
		return FW_DROP;
	}
	if (sqe[0] != OPC_KEEP_ALIVE)
		__atomic_add_fetch(&r->others, 1, __ATOMIC_RELAXED);
	if (r->bringup)
		bringup_answer(r, sqe, cqe);
	return FW_RESPOND;
}

/* The I/O wire: a Fabrics command (a reconnect's Connect) answered,
 * nothing else (a command on the wire at the loss). */
static enum fw_action io_responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				   uint8_t *cqe)
{
	(void)ctx;
	(void)sge;
	(void)nsge;
	(void)cqe;
	return sqe[0] == NVME_FABRICS_OPCODE ? FW_RESPOND : FW_DROP;
}

struct fctrl {
	struct nvmeof_ctrl *c;
	struct fake_wire *aw, *iw;
	struct nvmeof_queue *ioq;
	struct admin_rec ar;
};

/* The I/O queue's wire answered by io (io_responder unless a test needs
 * its own). */
static struct fctrl *fctrl_new_io(uint32_t kato_ms, fw_responder io)
{
	struct fctrl *f = calloc(1, sizeof(*f));
	struct nvmeof_ctrl *c = f->c = calloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->admin_lock, NULL);
	pthread_cond_init(&c->ka_cond, NULL);
	pthread_cond_init(&c->state_cond, NULL);
	c->o.kato_ms = kato_ms;
	c->o.ka_interval_ms = kato_ms / 2;
	c->o.cmd_timeout_ms = 30000;
	c->state = CTRL_LIVE;
	c->admin_live = true;
	f->aw = fw_new(8, admin_responder, &f->ar);
	f->iw = fw_new(8, io, NULL);
	struct q_params ap = {.qid = 0, .depth = 8, .cmd_timeout_ms = 30000, .wait_mode = NVMEOF_WAIT_POLL};
	struct q_params ip = {.qid = 1, .depth = 8, .cmd_timeout_ms = 30000, .wait_mode = NVMEOF_WAIT_POLL};
	CHECK_EQ(q_open_fake(&ap, f->aw, &c->admin), 0);
	CHECK_EQ(q_open_fake(&ip, f->iw, &f->ioq), 0);
	q_set_fail_hook(c->admin, ctrl_admin_lost, c);
	q_follow_assoc(f->ioq, &c->assoc_gen, c->assoc_gen);
	q_set_loss_hook(f->ioq, ctrl_io_lost, c);
	return f;
}

static struct fctrl *fctrl_new(uint32_t kato_ms) { return fctrl_new_io(kato_ms, io_responder); }

static void fctrl_free(struct fctrl *f)
{
	q_close(f->ioq);
	q_close(f->c->admin);
	fw_free(f->iw);
	fw_free(f->aw);
	pthread_cond_destroy(&f->c->state_cond);
	pthread_cond_destroy(&f->c->ka_cond);
	pthread_mutex_destroy(&f->c->admin_lock);
	pthread_mutex_destroy(&f->c->lock);
	free(f->c);
	free(f);
}

static bool fence_pending(struct nvmeof_ctrl *c)
{
	pthread_mutex_lock(&c->lock);
	bool due = c->fence_due;
	pthread_mutex_unlock(&c->lock);
	return due;
}

static struct io_done {
	int calls, err;
	char msg[512];
} iod;
static void io_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	(void)arg;
	iod.calls++;
	iod.err = cpl->err;
	snprintf(iod.msg, sizeof(iod.msg), "%s", nvmeof_errmsg());
}

/* The memory and namespace of every read and write here (the test wire
 * moves no data). */
static uint8_t rd_data[4096];
static struct nvmeof_mr rd_mr = {.addr = rd_data, .len = sizeof(rd_data), .lkey = 0x11, .rkey = 0xabc};
static const struct nvmeof_ns rd_ns = {.nsid = 1, .lba_size = 512, .lbads = 9, .nsze = 1ull << 30};

/* A read of the I/O queue's, completing to iod. */
static void start_read(struct fctrl *f)
{
	memset(&iod, 0, sizeof(iod));
	CHECK_EQ(nvmeof_read(f->ioq, &rd_ns, 0, 1, &rd_mr, 0, io_cb, NULL), 0);
}

/* One read on the wire of the I/O queue, then the connection's loss, seen
 * by this thread's poll: the loss hook (ctrl_io_lost) runs here. */
static void lose_io_queue(struct fctrl *f)
{
	start_read(f);
	nvmeof_queue_poll(f->ioq, 0);
	fw_break(f->iw);
	for (int i = 0; i < 100 && !iod.calls; i++)
		nvmeof_queue_poll(f->ioq, 0);
}

/* The same while another thread's long admin command holds the admin
 * queue (this thread takes its lock, the caller lets go): the fence is due
 * and stays so. */
static void lose_io_queue_held(struct fctrl *f)
{
	pthread_mutex_lock(&f->c->admin_lock);
	lose_io_queue(f);
	CHECK(fence_pending(f->c));
}

/* Room for a queue to be created on c (I/O queue 1 taken): the caller
 * frees c->qid_used. */
static void room_for_queues(struct nvmeof_ctrl *c)
{
	c->info.max_io_queues = 4;
	c->depth_limit = 8;
	c->o.queue_depth = 8;
	c->qid_used = calloc(c->info.max_io_queues + 1u, 1);
	c->qid_used[1] = 1;
}

/* What a new association's bring-up and a reconnect's Connect name. */
static void assoc_names(struct nvmeof_ctrl *c)
{
	c->o.connect_timeout_ms = 1000;
	snprintf(c->subnqn, sizeof(c->subnqn), "nqn.2014-08.org.example:fence");
	snprintf(c->hostnqn, sizeof(c->hostnqn), "nqn.2014-08.org.example:host");
}

/* The I/O queue reconnects as the controller's own do (reassoc.c), after a
 * delay of 1 ms. */
static void io_queue_reconnects(struct fctrl *f)
{
	struct nvmeof_ctrl *c = f->c;
	c->o.reconnect_delay_ms = 1; /* a loss: RESETTING, not DEAD */
	assoc_names(c);
	q_set_owner(f->ioq, c, 0);
	q_set_reconnect(f->ioq, &ctrl_reconnect_ops, 1, 60000);
}

/* The keep-alive thread, its ticks timed as the library times them
 * (ctrl.c: a monotonic condition variable). */
static void ka_start(struct nvmeof_ctrl *c)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_destroy(&c->ka_cond);
	pthread_cond_init(&c->ka_cond, &ca);
	pthread_condattr_destroy(&ca);
	c->ka_running = true;
	CHECK_EQ(pthread_create(&c->ka_thread, NULL, ctrl_ka_main, c), 0);
}

/* The keep-alive thread found a Keep Alive due while another thread held
 * the admin queue; an I/O queue is lost meanwhile (the fence is due, the
 * admin queue still held). Once the holder lets go, the thread fences: it
 * sends no Keep Alive first, which would keep the old association's KATO
 * timer satisfied past the fence. */
TEST(a_keep_alive_due_when_an_io_queue_is_lost_is_not_sent)
{
	struct fctrl *f = fctrl_new(200);
	struct nvmeof_ctrl *c = f->c;
	pthread_mutex_lock(&c->admin_lock); /* a long admin command of another thread */
	ka_start(c);
	/* the thread's Keep Alive is due and waits for the admin lock */
	for (int i = 0; i < 5000 && atomic_load(&c->ka_due) != KA_DUE_VALUE; i++)
		usleep(1000);
	CHECK_EQ(atomic_load(&c->ka_due), KA_DUE_VALUE);
	lose_io_queue(f);
	CHECK_EQ(iod.calls, 1);
	CHECK(fence_pending(c)); /* the admin queue was held: not fenced from this poll */
	CHECK_EQ(ctrl_state(c), CTRL_DEAD);
	pthread_mutex_unlock(&c->admin_lock);
	for (int i = 0; i < 5000 && fence_pending(c); i++)
		usleep(1000);
	CHECK(!fence_pending(c));
	/* the thread clears the flag before it drops the admin queue, which
	 * it does holding the admin lock: read the queue's state under it */
	pthread_mutex_lock(&c->admin_lock);
	CHECK(!q_connected(c->admin)); /* fenced */
	pthread_mutex_unlock(&c->admin_lock);
	ctrl_ka_stop(c);
	CHECK_EQ(__atomic_load_n(&f->ar.keep_alives, __ATOMIC_RELAXED), 0);
	fctrl_free(f);
}

/* The same from the holder's side: a holder whose wait finds a Keep Alive
 * due (ctrl_ka_on_wait) sends none once a fence is due. */
TEST(a_holders_wait_sends_no_keep_alive_once_a_fence_is_due)
{
	struct fctrl *f = fctrl_new(200);
	struct nvmeof_ctrl *c = f->c;
	lose_io_queue_held(f);
	atomic_store(&c->ka_due, KA_DUE_VALUE);
	ctrl_ka_on_wait(c);
	nvmeof_queue_poll(c->admin, 0);
	CHECK_EQ(__atomic_load_n(&f->ar.keep_alives, __ATOMIC_RELAXED), 0);
	ctrl_fence(c);
	CHECK(!q_connected(c->admin));
	pthread_mutex_unlock(&c->admin_lock);
	fctrl_free(f);
}

static struct admin_done {
	int calls, err;
	int lock_held; /* trylock of the admin lock from the callback: EBUSY */
	pthread_t thread;
} ad;
static struct nvmeof_ctrl *ad_ctrl;

/* An Asynchronous Event Request outstanding on the admin queue, with cb:
 * the admin command a fence completes on the thread that runs it. */
static int post_aer(struct nvmeof_ctrl *c, nvmeof_cb cb)
{
	static uint8_t sqe[NVME_SQE_SIZE]; /* q_submit_aer: lives until cb runs */
	memset(sqe, 0, sizeof(sqe));
	sqe[0] = OPC_AER;
	pthread_mutex_lock(&c->admin_lock);
	int rc = q_submit_aer(c->admin, sqe, cb, NULL);
	nvmeof_queue_poll(c->admin, 0);
	pthread_mutex_unlock(&c->admin_lock);
	return rc;
}

static void admin_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	(void)arg;
	ad.calls++;
	ad.err = cpl->err;
	ad.thread = pthread_self();
	int rc = pthread_mutex_trylock(&ad_ctrl->admin_lock);
	if (!rc)
		pthread_mutex_unlock(&ad_ctrl->admin_lock);
	ad.lock_held = rc;
}

/* The fence from the poll that saw an I/O queue's loss (the admin queue
 * free) runs the admin queue's callbacks on that thread, with the admin
 * lock held (as every admin callback); the I/O queue's own callbacks then
 * read their own queue's loss in nvmeof_errmsg(), not the admin queue's. */
TEST(admin_callbacks_run_by_a_fence_leave_the_io_callbacks_their_message)
{
	struct fctrl *f = fctrl_new(0);
	struct nvmeof_ctrl *c = f->c;
	memset(&ad, 0, sizeof(ad));
	ad_ctrl = c;
	CHECK_EQ(post_aer(c, admin_cb), 0);
	CHECK_EQ(f->ar.aers, 1);
	lose_io_queue(f);
	CHECK(!fence_pending(c));
	CHECK(!q_connected(c->admin));
	CHECK_EQ(ad.calls, 1);
	CHECK_EQ(ad.err, NVMEOF_ECLOSED);
	CHECK(pthread_equal(ad.thread, pthread_self()));
	CHECK_EQ(ad.lock_held, EBUSY);
	CHECK_EQ(iod.calls, 1);
	CHECK_EQ(iod.err, NVMEOF_ECLOSED);
	if (!strstr(iod.msg, "queue 1 "))
		fprintf(stderr, "    the read's message: %s\n", iod.msg);
	CHECK(strstr(iod.msg, "queue 1 ") != NULL);
	fctrl_free(f);
}

/* A single-queue controller's I/O queue holds what it loses for the
 * quiesce time of the association it is on: after another queue re-created
 * the association (a new generation, a controller that now reports CQT
 * 3 s and a keep-alive granularity of 100 ms), this queue's reconnect
 * (the controller's own, reassoc.c) takes the new CQT and KAS, not the
 * values it was created with. */
TEST(a_reconnect_to_a_new_association_takes_its_quiesce_time)
{
	struct fctrl *f = fctrl_new(150);
	struct nvmeof_ctrl *c = f->c;
	io_queue_reconnects(f); /* its controller set: no read here, its region would be checked */
	/* as created on an association whose controller reported no CQT */
	q_set_quiesce(f->ioq, q_hold_rule(Q_QUIESCE_DEFAULT_MS, 0, c->o.kato_ms, 0));
	CHECK_EQ(f->ioq->quiesce_ms, 1300);
	/* another queue's reconnect re-created the association meanwhile */
	pthread_mutex_lock(&c->admin_lock);
	pthread_mutex_lock(&c->lock);
	c->info.cqt = 3000;
	c->info.kas = 1;
	pthread_mutex_unlock(&c->lock);
	__atomic_add_fetch(&c->assoc_gen, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->admin_lock);
	fw_break(f->iw);
	for (int i = 0; i < 5000 && !(q_is_live(f->ioq) && f->ioq->st.reconnects > 0); i++) {
		nvmeof_queue_poll(f->ioq, 0);
		usleep(1000);
	}
	CHECK(q_is_live(f->ioq));
	CHECK_EQ(f->ioq->st.reconnects, 1);
	CHECK_EQ(q_assoc_gen(f->ioq), 1);
	/* max(1 s, CQT 3 s) + 2 x KATO 150 ms rounded up to 200 ms */
	CHECK_EQ(f->ioq->quiesce_ms, 3400);
	CHECK(q_connected(c->admin)); /* no fence: the lost queue was on the old association */
	fctrl_free(f);
}

/* The second I/O queue's wire: counts what reaches it, answers everything. */
static int q2_cmds;
static enum fw_action q2_responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				   uint8_t *cqe)
{
	(void)ctx;
	(void)sqe;
	(void)sge;
	(void)nsge;
	(void)cqe;
	q2_cmds++;
	return FW_RESPOND;
}

static int q2_calls, q2_err, q2_doubt;
static char q2_msg[NVMEOF_ERRMSG_MAX];
static void q2_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	(void)arg;
	snprintf(q2_msg, sizeof(q2_msg), "%s", nvmeof_errmsg());
	q2_err = cpl->err;
	q2_doubt += cpl->in_doubt;
	q2_calls++;
}

/* A second I/O queue of the controller on its association of now, whose
 * loss ends that association (as ctrl.c wires each I/O queue); batch:
 * submissions wait for a commit. Its wire in *w2. */
static struct nvmeof_queue *open_q2(struct nvmeof_ctrl *c, bool batch, struct fake_wire **w2)
{
	*w2 = fw_new(8, q2_responder, NULL);
	struct q_params p2 = {.qid = 2, .depth = 8, .cmd_timeout_ms = 30000, .wait_mode = NVMEOF_WAIT_POLL,
			      .batch = batch};
	struct nvmeof_queue *q2 = NULL;
	CHECK_EQ(q_open_fake(&p2, *w2, &q2), 0);
	q_follow_assoc(q2, &c->assoc_gen, __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED));
	q_set_loss_hook(q2, ctrl_io_lost, c);
	return q2;
}

/* A read on the second queue, answered: it works on the association. */
static void q2_read_answered(struct nvmeof_queue *q2)
{
	q2_cmds = q2_calls = 0;
	CHECK_EQ(nvmeof_read(q2, &rd_ns, 0, 1, &rd_mr, 0, q2_cb, NULL), 0);
	for (int i = 0; i < 100 && !q2_calls; i++)
		nvmeof_queue_poll(q2, 0);
	CHECK_EQ(q2_cmds, 1);
}

/* The second queue and f, at a test's end. */
static void q2_free(struct fctrl *f, struct nvmeof_queue *q2, struct fake_wire *w2)
{
	q_close(q2);
	fw_free(w2);
	fctrl_free(f);
}

/* A fence that is due (the loss seen while another thread holds the admin
 * queue, for up to its command timeout) already sends the association's
 * other I/O queues off it: a second queue leaves at its next poll
 * and puts no more commands on the old association's wire, which would
 * reset the old controller's KATO timer as a Keep Alive does. */
TEST(a_due_fence_stops_the_other_io_queues_before_it_runs)
{
	struct fctrl *f = fctrl_new(0);
	struct nvmeof_ctrl *c = f->c;
	struct fake_wire *w2;
	struct nvmeof_queue *q2 = open_q2(c, false, &w2);
	q2_read_answered(q2);
	lose_io_queue_held(f);
	/* at its next poll */
	for (int i = 0; i < 3000 && q_is_live(q2); i++) {
		nvmeof_queue_poll(q2, 0);
		usleep(1000);
	}
	CHECK(!q_is_live(q2));
	q2_calls = 0;
	nvmeof_read(q2, &rd_ns, 0, 1, &rd_mr, 0, q2_cb, NULL); /* refused, or failed: not sent */
	for (int i = 0; i < 100; i++)
		nvmeof_queue_poll(q2, 0);
	CHECK_EQ(q2_cmds, 1);
	CHECK(fence_pending(c)); /* the admin queue is still held */
	pthread_mutex_unlock(&c->admin_lock);
	q2_free(f, q2, w2);
}

/* Between a fence falling due and the other I/O queues' next poll, a
 * read or write submitted on one of them is not sent to the old
 * association: it waits, and the queue's next poll takes it off the
 * ended association (failed here, with no reconnect; parked for the new
 * association with one). The old controller sees nothing more of it. */
TEST(a_live_queue_sends_nothing_once_its_association_ended)
{
	struct fctrl *f = fctrl_new(0);
	struct nvmeof_ctrl *c = f->c;
	struct fake_wire *w2;
	struct nvmeof_queue *q2 = open_q2(c, false, &w2);
	q2_read_answered(q2);
	/* no housekeeping in the poll below: the check at each poll is what
	 * takes the queue off, however long between polls */
	q2->next_housekeep_ms = UINT64_MAX;
	lose_io_queue_held(f);
	/* no poll of the second queue since: it is still LIVE, but no longer
	 * live to whoever picks a queue for a command (a multipath route) */
	CHECK_EQ(q2->state, Q_LIVE);
	CHECK(!q_is_live(q2));
	q2_calls = 0;
	CHECK_EQ(nvmeof_read(q2, &rd_ns, 0, 1, &rd_mr, 0, q2_cb, NULL), 0);
	CHECK_EQ(nvmeof_write(q2, &rd_ns, 1, 1, &rd_mr, 0, q2_cb, NULL), 0);
	CHECK_EQ(q2_cmds, 1);
	nvmeof_queue_poll(q2, 0);
	CHECK(!q_is_live(q2));
	CHECK_EQ(q2_cmds, 1);
	CHECK_EQ(q2_calls, 2); /* failed, never sent */
	/* the queue kept its connection: its message says what ended */
	const char *why = "queue 2 left the controller: its association ended";
	if (!strstr(q2_msg, why))
		fprintf(stderr, "    the callbacks' message: %s\n", q2_msg);
	CHECK(strstr(q2_msg, why) != NULL);
	pthread_mutex_unlock(&c->admin_lock);
	q2_free(f, q2, w2);
}

/* A write chained in batch mode before another queue's loss ended the
 * association, rung out by the commit after it: nothing goes to the old
 * controller, and the write, never on the wire, is not in doubt (here, no
 * reconnect: it fails at the next poll). */
TEST(a_batch_committed_after_its_association_ended_is_not_sent)
{
	struct fctrl *f = fctrl_new(0);
	struct nvmeof_ctrl *c = f->c;
	struct fake_wire *w2;
	struct nvmeof_queue *q2 = open_q2(c, true, &w2);
	q2_cmds = q2_calls = q2_doubt = 0;
	CHECK_EQ(nvmeof_write(q2, &rd_ns, 0, 1, &rd_mr, 0, q2_cb, NULL), 0); /* chained, not rung */
	CHECK_EQ(q2_cmds, 0);
	lose_io_queue_held(f);
	nvmeof_queue_commit(q2);
	CHECK_EQ(q2_cmds, 0);
	for (int i = 0; i < 10 && !q2_calls; i++)
		nvmeof_queue_poll(q2, 0);
	CHECK_EQ(q2_cmds, 0);
	CHECK(!q_is_live(q2));
	CHECK_EQ(q2_calls, 1);
	CHECK(q2_err != 0);
	CHECK_EQ(q2_doubt, 0);
	pthread_mutex_unlock(&c->admin_lock);
	q2_free(f, q2, w2);
}

static int held_rc = -1;
static void *admin_thread(void *arg)
{
	struct nvmeof_ctrl *c = arg;
	uint8_t sqe[NVME_SQE_SIZE];
	memset(sqe, 0, sizeof(sqe));
	sqe[0] = 0x0a; /* Get Features, no data */
	held_rc = admin_exec(c, sqe, NULL, 0, NULL, "get features");
	return NULL;
}

/* An admin command of a thread that passed the wait for a live controller
 * before an I/O queue's loss, then waited for the admin lock, does not go
 * out on the old association once it has the lock: the due fence runs
 * first, and the command fails. */
TEST(an_admin_command_behind_the_admin_lock_is_not_sent_once_a_fence_is_due)
{
	struct fctrl *f = fctrl_new(0);
	struct nvmeof_ctrl *c = f->c;
	pthread_mutex_lock(&c->admin_lock);
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, admin_thread, c), 0);
	usleep(100000); /* it passes the live wait and blocks on the admin lock */
	lose_io_queue(f);
	CHECK(fence_pending(c));
	pthread_mutex_unlock(&c->admin_lock);
	pthread_join(t, NULL);
	CHECK_EQ(__atomic_load_n(&f->ar.others, __ATOMIC_RELAXED), 0);
	CHECK(held_rc != 0);
	CHECK(!fence_pending(c));
	CHECK(!q_connected(c->admin));
	fctrl_free(f);
}

/* What an admin callback run by the fence did to the I/O queue whose
 * poll runs the fence: it polls it (nested), then tries to destroy it. */
static struct {
	struct nvmeof_queue *ioq;
	int hook_calls, close_rc, freed;
} nest;
static void counting_loss_hook(void *arg, struct nvmeof_queue *q)
{
	nest.hook_calls++;
	ctrl_io_lost(arg, q);
}
static void nesting_admin_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	(void)arg;
	(void)cpl;
	nvmeof_queue_poll(nest.ioq, 0);
	/* the queue's poll is below this frame: a close must be refused; not
	 * called where it would not be (it would free the queue under it) */
	if (nest.ioq->in_cb)
		nest.close_rc = q_close(nest.ioq);
	else
		nest.freed = 1;
}

/* The loss hook runs the fence, which fails the admin queue's event
 * request on this thread: a callback that polls the lost I/O queue again
 * does not make its loss reported twice, and one that destroys it is
 * refused (its poll is still running), as from one of its own callbacks. */
TEST(an_admin_callback_run_by_the_fence_cannot_destroy_the_polling_queue)
{
	struct fctrl *f = fctrl_new(0);
	struct nvmeof_ctrl *c = f->c;
	memset(&nest, 0, sizeof(nest));
	nest.ioq = f->ioq;
	q_set_loss_hook(f->ioq, counting_loss_hook, c);
	CHECK_EQ(post_aer(c, nesting_admin_cb), 0);
	lose_io_queue(f);
	CHECK(!q_connected(c->admin)); /* fenced from the I/O queue's poll */
	CHECK_EQ(nest.freed, 0);
	CHECK_EQ(nest.close_rc, NVMEOF_EBUSY);
	CHECK_EQ(nest.hook_calls, 1);
	CHECK_EQ(iod.calls, 1);
	fctrl_free(f);
}

/* A fence due on an association that is then re-created (its I/O queue's
 * loss seen while the state machine was already moving) is the old
 * association's: the new LIVE one carries none, which would refuse its
 * Keep Alives and tear it down. */
TEST(a_new_association_carries_no_fence_of_the_old)
{
	struct fctrl *f = fctrl_new(0);
	struct nvmeof_ctrl *c = f->c;
	assoc_names(c);
	f->ar.bringup = c->admin;
	pthread_mutex_lock(&c->lock);
	c->state = CTRL_RESETTING;
	c->fence_due = true;
	pthread_mutex_unlock(&c->lock);
	uint32_t gen = c->assoc_gen;
	bool fresh = false;
	pthread_mutex_lock(&c->admin_lock);
	int rc = ctrl_reassociate(c, &fresh);
	pthread_mutex_unlock(&c->admin_lock);
	if (rc)
		fprintf(stderr, "    re-association: %s\n", nvmeof_errmsg());
	CHECK_EQ(rc, 0);
	CHECK(fresh);
	CHECK_EQ(ctrl_state(c), CTRL_LIVE);
	CHECK_EQ(c->assoc_gen, gen + 1);
	CHECK(!fence_pending(c));
	fctrl_free(f);
}

/* Another queue's reconnect re-created the association (controller 5)
 * while the I/O queue was on the old one. */
static void new_association_5(struct nvmeof_ctrl *c)
{
	pthread_mutex_lock(&c->admin_lock);
	pthread_mutex_lock(&c->lock);
	c->info.cntlid = 5;
	__atomic_add_fetch(&c->assoc_gen, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->admin_lock);
}

/* The reconnecting I/O queue's wire (the next test): its first Connect is
 * held (the test answers it, fw_inject), later ones are answered; each
 * Connect's CNTLID, and how many other commands had reached the wire when
 * it went out, are kept; every other command is counted and answered. */
static struct {
	struct nvmeof_queue *q;
	int connects, io;
	uint16_t held_cid, cntlid[4];
	int io_before[4];
} rq;
static enum fw_action rq_responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				   uint8_t *cqe)
{
	(void)ctx;
	(void)sge;
	(void)nsge;
	if (sqe[0] != NVME_FABRICS_OPCODE || sqe[4] != NVMF_FCTYPE_CONNECT) {
		rq.io++;
		return FW_RESPOND;
	}
	/* the Connect's data, where the host wrote it */
	uint16_t cntlid = get_le16(q_scratch(rq.q) + NVMF_CONNECT_DATA_CNTLID_OFF);
	if (rq.connects < 4) {
		rq.cntlid[rq.connects] = cntlid;
		rq.io_before[rq.connects] = rq.io;
	}
	if (rq.connects++ == 0) {
		rq.held_cid = nvme_sqe_cid(sqe);
		return FW_DROP;
	}
	put_le32(cqe, cntlid); /* DW0: the controller it joined */
	return FW_RESPOND;
}

/* An I/O queue's reconnect sent its Connect to the association of the
 * time (controller 5); before the answer came, another I/O queue's loss
 * made a fence of that association due (the admin queue another thread's
 * meanwhile). The old controller's success does not make the queue live
 * there: nothing it holds (a read here; a write could land after the
 * hold) goes to the controller being fenced, the attempt fails saying
 * why, and the next, after the reconnect delay, joins the association
 * re-created meanwhile (controller 7), where the read then goes. */
TEST(a_connect_answered_after_a_fence_fell_due_does_not_join_the_old_association)
{
	struct fctrl *f = fctrl_new_io(0, rq_responder);
	struct nvmeof_ctrl *c = f->c;
	memset(&rq, 0, sizeof(rq));
	rq.q = f->ioq;
	io_queue_reconnects(f);
	f->ar.bringup = c->admin; /* the re-association at the end */
	new_association_5(c);
	/* a second I/O queue, on the current association */
	struct fake_wire *w2;
	struct nvmeof_queue *q2 = open_q2(c, false, &w2);
	/* this queue's connection is lost (no fence: it was on the old
	 * association); its reconnect sends a Connect to controller 5 */
	fw_break(f->iw);
	for (int i = 0; i < 5000 && !rq.connects; i++) {
		nvmeof_queue_poll(f->ioq, 0);
		usleep(1000);
	}
	CHECK_EQ(rq.connects, 1);
	CHECK_EQ(rq.cntlid[0], 5);
	CHECK_EQ(f->ioq->state, Q_CONNECTING);
	/* a read waits for the connection */
	struct nvmeof_mr mr = rd_mr;
	mr.owner = c;
	memset(&iod, 0, sizeof(iod));
	CHECK_EQ(nvmeof_read(f->ioq, &rd_ns, 0, 1, &mr, 0, io_cb, NULL), 0);
	/* the second queue is lost while another thread holds the admin
	 * queue: the fence is due, the association's generation moved */
	pthread_mutex_lock(&c->admin_lock);
	fw_break(w2);
	for (int i = 0; i < 100 && q_is_live(q2); i++)
		nvmeof_queue_poll(q2, 0);
	CHECK(fence_pending(c));
	CHECK_EQ(__atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED), 2);
	/* controller 5 accepts the Connect */
	uint8_t cqe[NVME_CQE_SIZE] = {0};
	put_le32(cqe, 5);
	put_le16(cqe + 12, rq.held_cid);
	CHECK_EQ(fw_inject(f->iw, cqe), 0);
	nvmeof_queue_poll(f->ioq, 0);
	char msg[NVMEOF_ERRMSG_MAX];
	snprintf(msg, sizeof(msg), "%s", nvmeof_errmsg());
	/* (a next attempt may start: it waits for the admin queue) */
	for (int i = 0; i < 20; i++)
		nvmeof_queue_poll(f->ioq, 0);
	CHECK(!q_is_live(f->ioq));
	CHECK_EQ(rq.io, 0);
	CHECK_EQ(iod.calls, 0); /* still waiting, not failed */
	if (!strstr(msg, "reconnect queue 1: the association changed while its Connect was out"))
		fprintf(stderr, "    the poll's message: %s\n", msg);
	CHECK(strstr(msg, "reconnect queue 1: the association changed while its Connect was out") != NULL);
	/* the holder lets go; the reset worker's work, here: the fence, then
	 * a new association (controller 7) */
	ctrl_fence(c);
	bool fresh = false;
	int rc = ctrl_reassociate(c, &fresh);
	pthread_mutex_unlock(&c->admin_lock);
	if (rc)
		fprintf(stderr, "    re-association: %s\n", nvmeof_errmsg());
	CHECK_EQ(rc, 0);
	for (int i = 0; i < 5000 && !iod.calls; i++) {
		nvmeof_queue_poll(f->ioq, 0);
		usleep(1000);
	}
	CHECK(q_is_live(f->ioq));
	CHECK_EQ(rq.connects, 2);
	CHECK_EQ(rq.cntlid[1], 7);
	CHECK_EQ(rq.io_before[1], 0);
	CHECK_EQ(q_assoc_gen(f->ioq), __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED));
	CHECK_EQ(iod.calls, 1);
	CHECK_EQ(iod.err, 0);
	CHECK_EQ(rq.io, 1);
	q2_free(f, q2, w2);
}

/* The Connect's controller, as a controller answers it: accepted. */
static struct {
	int connects, io;
	uint16_t cntlid[4];
} lp;
static enum fw_action lp_responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				   uint8_t *cqe)
{
	(void)ctx;
	(void)sge;
	(void)nsge;
	if (sqe[0] != NVME_FABRICS_OPCODE || sqe[4] != NVMF_FCTYPE_CONNECT) {
		lp.io++;
		return FW_RESPOND;
	}
	uint16_t cntlid = get_le16(q_scratch(rq.q) + NVMF_CONNECT_DATA_CNTLID_OFF);
	if (lp.connects < 4)
		lp.cntlid[lp.connects] = cntlid;
	lp.connects++;
	put_le32(cqe, cntlid);
	return FW_RESPOND;
}
static struct fake_wire *lp_w2;
static struct nvmeof_queue *lp_q2;
/* another queue's loss, just after the reconnect checked the association
 * (once) */
static void lose_q2_in_prepare(struct nvmeof_ctrl *c)
{
	(void)c;
	reassoc_test_hook = NULL;
	fw_break(lp_w2);
	for (int i = 0; i < 100 && q_is_live(lp_q2); i++)
		nvmeof_queue_poll(lp_q2, 0);
}

/* An I/O queue's reconnect found the association of the time (controller
 * 5) live; then, before it read that controller and the association's
 * generation, another queue's loss ended it (the reconnect holds the admin
 * queue, so the fence stays due). The Connect does not go to controller 5
 * tagged as the new association's: the attempt fails, and the next joins
 * the association re-created after the fence (controller 7). */
TEST(a_loss_while_a_reconnect_reads_the_association_sends_no_connect_to_the_old)
{
	struct fctrl *f = fctrl_new_io(0, lp_responder);
	struct nvmeof_ctrl *c = f->c;
	memset(&rq, 0, sizeof(rq));
	memset(&lp, 0, sizeof(lp));
	rq.q = f->ioq;
	io_queue_reconnects(f);
	f->ar.bringup = c->admin;
	new_association_5(c);
	lp_q2 = open_q2(c, false, &lp_w2);
	reassoc_test_hook = lose_q2_in_prepare;
	fw_break(f->iw); /* no fence: this queue was on the old association */
	for (int i = 0; i < 5000 && !(q_is_live(f->ioq) && f->ioq->st.reconnects > 0); i++) {
		nvmeof_queue_poll(f->ioq, 0);
		usleep(1000);
	}
	reassoc_test_hook = NULL;
	CHECK(q_is_live(f->ioq));
	CHECK(lp.connects >= 1);
	for (int i = 0; i < lp.connects && i < 4; i++)
		CHECK_EQ(lp.cntlid[i], 7);
	CHECK(!fence_pending(c));
	CHECK_EQ(q_assoc_gen(f->ioq), __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED));
	q2_free(f, lp_q2, lp_w2);
}

/* An I/O queue's reconnect staged its Connect for the association of the
 * time (controller 5); before the queue's poll sent it, another queue's
 * loss ended that association (the admin queue another thread's). The
 * Connect is not sent to the controller being fenced: the attempt ends,
 * and the next, after the delay, starts over. */
TEST(a_connect_staged_before_a_fence_fell_due_is_not_sent)
{
	struct fctrl *f = fctrl_new_io(0, rq_responder);
	struct nvmeof_ctrl *c = f->c;
	memset(&rq, 0, sizeof(rq));
	rq.q = f->ioq;
	io_queue_reconnects(f);
	new_association_5(c);
	struct fake_wire *w2;
	struct nvmeof_queue *q2 = open_q2(c, false, &w2);
	fw_break(f->iw);
	/* the attempt starts; its worker stages the Connect, no poll sends it */
	for (int i = 0; i < 5000 && f->ioq->state != Q_REOPENING; i++) {
		nvmeof_queue_poll(f->ioq, 0);
		usleep(1000);
	}
	CHECK_EQ(f->ioq->state, Q_REOPENING);
	for (int i = 0; i < 5000 && !__atomic_load_n(&f->ioq->bg.done, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	CHECK_EQ(f->ioq->bg.rc, 0);
	CHECK_EQ(f->ioq->bg.assoc_gen, 1);
	CHECK_EQ(rq.connects, 0);
	pthread_mutex_lock(&c->admin_lock);
	fw_break(w2);
	for (int i = 0; i < 100 && q_is_live(q2); i++)
		nvmeof_queue_poll(q2, 0);
	CHECK(fence_pending(c));
	nvmeof_queue_poll(f->ioq, 0);
	char msg[NVMEOF_ERRMSG_MAX];
	snprintf(msg, sizeof(msg), "%s", nvmeof_errmsg());
	CHECK_EQ(rq.connects, 0);
	CHECK(f->ioq->state != Q_CONNECTING && !q_is_live(f->ioq));
	if (!strstr(msg, "the association changed before"))
		fprintf(stderr, "    the poll's message: %s\n", msg);
	CHECK(strstr(msg, "reconnect queue 1: the association changed before its Connect went out") != NULL);
	pthread_mutex_unlock(&c->admin_lock);
	q2_free(f, q2, w2);
}

/* A queue created once an I/O queue's loss ended the association (here
 * while another thread holds the admin queue, the fence due) does not
 * join the old one: the create fails, naming the operation, the
 * controller's state and what ended the association (the lost queue, not
 * just "its association ended"); so does one on a controller that gave up
 * (DEAD). */
TEST(a_queue_is_not_created_on_an_association_that_ended)
{
	for (int dead = 0; dead < 2; dead++) {
		struct fctrl *f = fctrl_new(0);
		struct nvmeof_ctrl *c = f->c;
		c->o.reconnect_delay_ms = dead ? 0 : 1000;
		room_for_queues(c);
		lose_io_queue_held(f);
		pthread_mutex_unlock(&c->admin_lock);
		CHECK_EQ(ctrl_state(c), dead ? CTRL_DEAD : CTRL_RESETTING);
		struct nvmeof_queue *q = NULL;
		int rc = nvmeof_queue_create(c, NULL, &q);
		const char *want = dead ? "create queue: the controller is dead" : "create queue: the controller is resetting";
		if (!strstr(nvmeof_errmsg(), want))
			fprintf(stderr, "    the create's message: %s\n", nvmeof_errmsg());
		CHECK_EQ(rc, NVMEOF_ECLOSED);
		CHECK(q == NULL);
		CHECK(strstr(nvmeof_errmsg(), want) != NULL);
		const char *cause = "I/O queue 1 lost its connection, which ends the association";
		if (!strstr(nvmeof_errmsg(), cause))
			fprintf(stderr, "    the create's message names no cause: %s\n", nvmeof_errmsg());
		CHECK(strstr(nvmeof_errmsg(), cause) != NULL);
		CHECK_EQ(c->qid_used[2], 0);
		free(c->qid_used);
		fctrl_free(f);
	}
}

/* The keep-alive thread's Keep Alives go unanswered until the association
 * ends (5 s at most); the thread stopped. */
static void ka_unanswered_until_ended(struct fctrl *f)
{
	f->ar.ka_unanswered = true;
	ka_start(f->c);
	for (int i = 0; i < 5000 && ctrl_state(f->c) == CTRL_LIVE; i++)
		usleep(1000);
	ctrl_ka_stop(f->c);
}

/* The keep-alive thread's Keep Alive is not answered within KATO: the
 * association ends (no reconnect: dead), and a queue created afterwards,
 * as a job of a shared controller does long after, fails naming that
 * cause, the Keep Alive's timeout, not just "its association ended". */
TEST(a_queue_created_after_a_keep_alive_timeout_names_it)
{
	struct fctrl *f = fctrl_new(200);
	struct nvmeof_ctrl *c = f->c;
	room_for_queues(c);
	ka_unanswered_until_ended(f);
	CHECK_EQ(ctrl_state(c), CTRL_DEAD);
	CHECK(__atomic_load_n(&f->ar.keep_alives, __ATOMIC_RELAXED) >= 1);
	struct nvmeof_queue *q = NULL;
	int rc = nvmeof_queue_create(c, NULL, &q);
	CHECK_EQ(rc, NVMEOF_ECLOSED);
	CHECK(q == NULL);
	const char *want[] = {"create queue: the controller is dead", "the admin queue was lost", "Keep Alive",
			      "no completion within 200 ms"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (!strstr(nvmeof_errmsg(), want[i]))
			fprintf(stderr, "    no \"%s\" in the create's message: %s\n", want[i], nvmeof_errmsg());
		CHECK(strstr(nvmeof_errmsg(), want[i]) != NULL);
	}
	free(c->qid_used);
	fctrl_free(f);
}

/* The same with a reconnect configured: the controller is re-created,
 * and its message does not say the admin queue's "no reconnect
 * configured" (the admin queue itself never reconnects: the controller
 * re-creates the association). */
TEST(a_keep_alive_timeout_with_reconnect_says_no_word_of_no_reconnect)
{
	struct fctrl *f = fctrl_new(200);
	struct nvmeof_ctrl *c = f->c;
	c->o.reconnect_delay_ms = 60000;
	ka_unanswered_until_ended(f);
	CHECK_EQ(ctrl_state(c), CTRL_RESETTING);
	char msg[512];
	pthread_mutex_lock(&c->lock);
	snprintf(msg, sizeof(msg), "%s", c->state_msg);
	pthread_mutex_unlock(&c->lock);
	if (strstr(msg, "no reconnect") || !strstr(msg, "Keep Alive"))
		fprintf(stderr, "    the controller's message: %s\n", msg);
	CHECK(strstr(msg, "the admin queue was lost") != NULL);
	CHECK(strstr(msg, "Keep Alive") != NULL);
	CHECK(strstr(msg, "no reconnect") == NULL);
	fctrl_free(f);
}

/* Every I/O command answered. */
static enum fw_action io_all_responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				       uint8_t *cqe)
{
	(void)ctx;
	(void)sqe;
	(void)sge;
	(void)nsge;
	(void)cqe;
	return FW_RESPOND;
}

static uint64_t ka_skipped(struct nvmeof_ctrl *c)
{
	pthread_mutex_lock(&c->lock);
	uint64_t n = c->ka_skipped;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* A controller whose I/O queue's answers count as its keep-alive traffic
 * (with tbkas: the controller reports TBKAS). */
static struct fctrl *fctrl_new_tbkas(uint32_t kato_ms, fw_responder io, bool tbkas)
{
	struct fctrl *f = fctrl_new_io(kato_ms, io);
	f->c->tbkas = tbkas;
	q_note_traffic(f->ioq, &f->c->ka_mark);
	return f;
}

/* The keep-alive thread's check, called here: whether traffic since the
 * last one stood in for a Keep Alive. */
static bool ka_check(struct nvmeof_ctrl *c)
{
	pthread_mutex_lock(&c->lock);
	bool traffic = ctrl_ka_new_epoch(c);
	pthread_mutex_unlock(&c->lock);
	return traffic;
}

static int keep_alives(struct fctrl *f) { return __atomic_load_n(&f->ar.keep_alives, __ATOMIC_RELAXED); }

/* One read, answered, polled to its end. */
static void one_read(struct fctrl *f)
{
	start_read(f);
	for (int i = 0; i < 1000 && !iod.calls; i++)
		nvmeof_queue_poll(f->ioq, 0);
	CHECK_EQ(iod.calls, 1);
	CHECK_EQ(iod.err, 0);
}

/* A controller with traffic-based keep-alive (CTRATT.TBKAS) restarts its
 * KATO timer on every command: while I/O completes, the thread sends no
 * Keep Alive (whose late answer from a busy controller would end a live
 * association: 32 jobs at 1 MiB on nvmet over Soft-RoCE); once the I/O
 * stops, Keep Alive goes out again. A Keep Alive's error reported before
 * clears once a check finds I/O answered: nvmeof_ctrl_health does not stay
 * bad while no Keep Alive is sent. Without TBKAS, Keep Alives go out
 * during the I/O as before. */
TEST(no_keep_alive_while_io_completes_on_a_traffic_based_controller)
{
	for (int tbkas = 1; tbkas >= 0; tbkas--) {
		/* TBKAS: a check every 250 ms; an I/O every 2 ms leaves each many */
		struct fctrl *f = fctrl_new_tbkas(tbkas ? 1000 : 300, io_all_responder, tbkas);
		struct nvmeof_ctrl *c = f->c;
		if (tbkas) { /* a Keep Alive error before: the answered I/O shows the controller alive */
			c->ka_err = NVMEOF_ETIMEDOUT;
			snprintf(c->ka_msg, sizeof(c->ka_msg), "Keep Alive: an error");
		}
		ka_start(c);
		uint64_t t0 = nvmeof_now_ms();
		while (nvmeof_now_ms() - t0 < (tbkas ? 800u : 500u)) { /* three checks with TBKAS; two ticks without */
			one_read(f);
			usleep(2000);
		}
		int during = keep_alives(f);
		uint64_t skipped = ka_skipped(c);
		char health[256];
		int hrc = nvmeof_ctrl_health(c, health, sizeof(health));
		if (hrc)
			fprintf(stderr, "    health during the I/O: %s\n", health);
		CHECK_EQ(hrc, 0);
		for (int i = 0; i < 3000 && keep_alives(f) == during; i++)
			usleep(1000); /* idle: the next tick sends one */
		int idle = keep_alives(f) - during;
		ctrl_ka_stop(c);
		fprintf(stderr, "    TBKAS %d: %d Keep Alive(s) during the I/O, %llu skipped, %d once idle\n", tbkas,
			during, (unsigned long long)skipped, idle);
		if (tbkas) {
			CHECK_EQ(during, 0);
			CHECK(skipped >= 2);
		} else {
			CHECK(during >= 2);
			CHECK_EQ(skipped, 0);
		}
		CHECK(idle >= 1);
		CHECK_EQ(ctrl_state(c), CTRL_LIVE);
		fctrl_free(f);
	}
}

/* The controller restarted its timer when it processed the last I/O (at
 * its submission, at the latest): with TBKAS the next Keep Alive goes out
 * within KATO/2 of it, as without, although that I/O came just after a
 * check (the kernel host checks twice per interval for this). KATO 1 s:
 * it must go within 500 ms (150 ms margin for a loaded machine's
 * scheduling); a check per interval would send it after about 980 ms. */
TEST(with_tbkas_the_keep_alive_after_the_last_io_comes_within_half_kato)
{
	struct fctrl *f = fctrl_new_tbkas(1000, io_all_responder, true);
	struct nvmeof_ctrl *c = f->c;
	ka_start(c);
	uint64_t t0 = nvmeof_now_ms(), skipped_at = 0, last = 0;
	while (nvmeof_now_ms() - t0 < 3000) { /* until a check skipped, then 20 ms more */
		last = nvmeof_now_ms();
		one_read(f);
		if (!skipped_at && ka_skipped(c))
			skipped_at = nvmeof_now_ms();
		if (skipped_at && nvmeof_now_ms() - skipped_at >= 20)
			break;
		usleep(2000);
	}
	CHECK(skipped_at != 0);
	int before = keep_alives(f);
	for (int i = 0; i < 3000 && keep_alives(f) == before; i++)
		usleep(1000);
	ctrl_ka_stop(c);
	CHECK(keep_alives(f) > before);
	CHECK(before < 8);
	uint64_t sent = __atomic_load_n(&f->ar.ka_ms[before], __ATOMIC_RELAXED);
	fprintf(stderr, "    the Keep Alive went %llu ms after the last I/O's submission\n",
		(unsigned long long)(sent - last));
	CHECK(sent - last <= 500 + 150);
	fctrl_free(f);
}

/* The I/O wire: reads answered, but one the test asks for held (its CID
 * kept) for the test to answer later. */
static struct {
	bool hold;
	uint16_t held_cid;
} hr;
static enum fw_action hold_responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				     uint8_t *cqe)
{
	(void)ctx;
	(void)sge;
	(void)nsge;
	(void)cqe;
	if (!hr.hold)
		return FW_RESPOND;
	hr.hold = false;
	hr.held_cid = nvme_sqe_cid(sqe);
	return FW_DROP;
}

/* With TBKAS only a command submitted after the last check restarts the
 * controller's timer after it: the answer, after a check, to a read sent
 * before it (a long-running command) does not count as traffic, while
 * other I/O goes on, and the next check sends a Keep Alive. Reads sent
 * after the check do count. The checks are the thread's
 * (ctrl_ka_new_epoch), called here in order. */
TEST(with_tbkas_a_late_answer_to_a_command_sent_before_the_check_is_no_traffic)
{
	memset(&hr, 0, sizeof(hr));
	struct fctrl *f = fctrl_new_tbkas(1000, hold_responder, true);
	struct nvmeof_ctrl *c = f->c;
	ka_check(c);
	one_read(f);
	hr.hold = true;
	start_read(f);
	nvmeof_queue_poll(f->ioq, 0);
	CHECK_EQ(iod.calls, 0);
	ka_check(c); /* a check, the read still out */
	one_read(f); /* the first answer the queue sees after it sets where fresh ones start */
	uint8_t cqe[NVME_CQE_SIZE] = {0};
	put_le16(cqe + 12, hr.held_cid);
	CHECK_EQ(fw_inject(f->iw, cqe), 0);
	for (int i = 0; i < 100 && !iod.calls; i++)
		nvmeof_queue_poll(f->ioq, 0);
	CHECK_EQ(iod.calls, 1);
	CHECK_EQ(iod.err, 0);
	for (int i = 0; i < 10; i++)
		nvmeof_queue_poll(f->ioq, 0);
	CHECK(!ka_check(c));
	one_read(f); /* sent after that check */
	one_read(f);
	CHECK(ka_check(c));
	fctrl_free(f);
}

/* Re-create the association of f's controller, its bring-up answered with
 * CTRATT ctratt. */
static void reassociate(struct fctrl *f, uint32_t ctratt)
{
	struct nvmeof_ctrl *c = f->c;
	assoc_names(c);
	f->ar.bringup = c->admin;
	f->ar.ctratt = ctratt;
	pthread_mutex_lock(&c->lock);
	c->state = CTRL_RESETTING;
	pthread_mutex_unlock(&c->lock);
	bool fresh = false;
	pthread_mutex_lock(&c->admin_lock);
	int rc = ctrl_reassociate(c, &fresh);
	pthread_mutex_unlock(&c->admin_lock);
	if (rc)
		fprintf(stderr, "    re-association: %s\n", nvmeof_errmsg());
	CHECK_EQ(rc, 0);
	CHECK_EQ(ctrl_state(c), CTRL_LIVE);
}

/* TBKAS is Identify Controller's CTRATT bit 6 (bytes 99:96): the
 * controller's answer sets it, and a controller without it keeps the
 * plain Keep Alive (the I/O's mark is never taken for traffic). */
TEST(tbkas_is_read_from_identify_controllers_ctratt)
{
	for (int on = 0; on < 2; on++) {
		struct fctrl *f = fctrl_new(0);
		f->c->tbkas = !on;
		reassociate(f, on ? 0x40 : 0xbf);
		CHECK_EQ(f->c->tbkas, on);
		fctrl_free(f);
	}
}

/* I/O of the old association completed (answers drained at the loss, say)
 * just before a re-association: the new association's controller did not
 * see it, and its first check sends a Keep Alive. */
TEST(a_new_association_takes_no_traffic_of_the_old_for_its_first_keep_alive)
{
	struct fctrl *f = fctrl_new_tbkas(0, io_all_responder, true);
	struct nvmeof_ctrl *c = f->c;
	ka_check(c);
	one_read(f);
	one_read(f);
	CHECK_EQ(c->ka_mark.seen, c->ka_mark.epoch); /* marked */
	reassociate(f, 0x40);
	CHECK(c->tbkas);
	CHECK(!ka_check(c));
	fctrl_free(f);
}

/* The controller answers each Keep Alive after 0.4 x KATO: the thread,
 * which waits for the answer, still sends them an interval apart (KATO
 * 800 ms: 400 ms, 150 ms margin), not an interval plus the round trip
 * (720 ms), which would let the controller's timer expire. */
TEST(slow_keep_alive_answers_do_not_space_keep_alives_further_apart)
{
	struct fctrl *f = fctrl_new(800);
	f->ar.ka_delay_ms = 320;
	ka_start(f->c);
	for (int i = 0; i < 4000 && keep_alives(f) < 3; i++)
		usleep(1000);
	ctrl_ka_stop(f->c);
	CHECK(keep_alives(f) >= 3);
	for (int i = 1; i < 3; i++) {
		uint64_t gap = f->ar.ka_ms[i] - f->ar.ka_ms[i - 1];
		if (gap > 550)
			fprintf(stderr, "    Keep Alives %d and %d went %llu ms apart\n", i, i + 1,
				(unsigned long long)gap);
		CHECK(gap <= 400 + 150);
	}
	CHECK_EQ(ctrl_state(f->c), CTRL_LIVE);
	fctrl_free(f);
}

/* An I/O command timed out: the queue closed its connection itself. The
 * controller's message, which a queue created afterwards (a job of a
 * shared controller) reports, says so and names the command, not "lost
 * its connection". */
TEST(an_io_command_timeout_is_named_as_the_associations_end)
{
	struct fctrl *f = fctrl_new(0); /* reads never answered */
	struct nvmeof_ctrl *c = f->c;
	room_for_queues(c);
	f->ioq->cmd_timeout_ms = 200;
	start_read(f);
	for (int i = 0; i < 3000 && !iod.calls; i++) {
		nvmeof_queue_poll(f->ioq, 0);
		usleep(1000);
	}
	CHECK_EQ(iod.calls, 1);
	CHECK_EQ(ctrl_state(c), CTRL_DEAD);
	struct nvmeof_queue *q = NULL;
	CHECK_EQ(nvmeof_queue_create(c, NULL, &q), NVMEOF_ECLOSED);
	const char *want = "I/O queue 1 closed its connection: a Read (I/O opcode 0x02) got no answer within 200 ms";
	if (!strstr(nvmeof_errmsg(), want))
		fprintf(stderr, "    the create's message: %s\n", nvmeof_errmsg());
	CHECK(strstr(nvmeof_errmsg(), want) != NULL);
	free(c->qid_used);
	fctrl_free(f);
}

static void ev_cb(void *arg, const struct nvmeof_event *ev)
{
	(void)arg;
	(void)ev;
}

/* An event's answer (an AER completion) that the admin queue's holder
 * polls once the fence fell due does not re-arm the event requests: an
 * AER is a command on the old association, which keeps its controller's
 * keep-alive timer satisfied as a Keep Alive does. */
TEST(an_event_answered_once_a_fence_is_due_is_not_rearmed)
{
	struct fctrl *f = fctrl_new(0);
	struct nvmeof_ctrl *c = f->c;
	CHECK_EQ(aer_attach(c, ev_cb, NULL, 1), 0);
	CHECK_EQ(__atomic_load_n(&f->ar.aers, __ATOMIC_RELAXED), 1);
	lose_io_queue_held(f); /* the event thread's, or any thread's, admin command */
	uint8_t cqe[NVME_CQE_SIZE] = {0};
	put_le32(cqe, 0x00010002); /* a notice */
	put_le16(cqe + 12, f->ar.aer_cid);
	CHECK_EQ(fw_inject(f->aw, cqe), 0);
	for (int i = 0; i < 10; i++)
		nvmeof_queue_poll(c->admin, 0);
	CHECK_EQ(__atomic_load_n(&f->ar.aers, __ATOMIC_RELAXED), 1);
	pthread_mutex_unlock(&c->admin_lock);
	aer_stop(c);
	q_close(c->admin);
	c->admin = NULL;
	aer_free(c);
	fctrl_free(f);
}

int main(void)
{
	static const struct test_case t[] = {
		T(a_keep_alive_due_when_an_io_queue_is_lost_is_not_sent),
		T(a_holders_wait_sends_no_keep_alive_once_a_fence_is_due),
		T(admin_callbacks_run_by_a_fence_leave_the_io_callbacks_their_message),
		T(a_reconnect_to_a_new_association_takes_its_quiesce_time),
		T(a_due_fence_stops_the_other_io_queues_before_it_runs),
		T(a_live_queue_sends_nothing_once_its_association_ended),
		T(a_batch_committed_after_its_association_ended_is_not_sent),
		T(an_admin_command_behind_the_admin_lock_is_not_sent_once_a_fence_is_due),
		T(an_admin_callback_run_by_the_fence_cannot_destroy_the_polling_queue),
		T(a_new_association_carries_no_fence_of_the_old),
		T(a_connect_answered_after_a_fence_fell_due_does_not_join_the_old_association),
		T(a_loss_while_a_reconnect_reads_the_association_sends_no_connect_to_the_old),
		T(a_connect_staged_before_a_fence_fell_due_is_not_sent),
		T(a_queue_is_not_created_on_an_association_that_ended),
		T(an_event_answered_once_a_fence_is_due_is_not_rearmed),
		T(a_queue_created_after_a_keep_alive_timeout_names_it),
		T(a_keep_alive_timeout_with_reconnect_says_no_word_of_no_reconnect),
		T(no_keep_alive_while_io_completes_on_a_traffic_based_controller),
		T(with_tbkas_the_keep_alive_after_the_last_io_comes_within_half_kato),
		T(with_tbkas_a_late_answer_to_a_command_sent_before_the_check_is_no_traffic),
		T(tbkas_is_read_from_identify_controllers_ctratt),
		T(a_new_association_takes_no_traffic_of_the_old_for_its_first_keep_alive),
		T(slow_keep_alive_answers_do_not_space_keep_alives_further_apart),
		T(an_io_command_timeout_is_named_as_the_associations_end),
	};
	return run_tests("unit-fence", t, sizeof(t) / sizeof(t[0]));
}
