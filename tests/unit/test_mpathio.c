/*
 * The multipath queue (core/mpath_io.c) over two paths on the loopback
 * test wire: a loss placed at a chosen moment, ANA states set by hand (no
 * controller, no refresh thread). Faults here are ones the real target
 * cannot be made to produce at a chosen command.
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "fakewire.h"
#include "losses.h"
#include "mem.h"
#include "mpath_q.h"
#include "protocol.h"
#include "qpriv.h"
#include "util.h"

#define MAXC 64

struct path_rec {
	int n;
	uint8_t opc[MAXC];
	uint64_t slba[MAXC];
	uint64_t at_ms[MAXC];     /* when the command reached this path */
	int drop;                 /* never answer (a path that went silent) */
	uint16_t status;          /* answer every command with this status (SCT << 8 | SC) */
	/* per command, by arrival (a split write's chunks apart): answer
	 * command i with status_at[i] - 1 (0: as above), or never */
	uint16_t status_at[MAXC];
	bool drop_at[MAXC];
};

static enum fw_action responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge, uint8_t *cqe)
{
	(void)sge, (void)nsge, (void)cqe;
	struct path_rec *r = ctx;
	if (r->n < MAXC) {
		r->opc[r->n] = sqe[0];
		r->slba[r->n] = get_le64(sqe + 40);
		r->at_ms[r->n] = nvmeof_now_ms();
	}
	int i = r->n++;
	uint16_t st = i < MAXC && r->status_at[i] ? (uint16_t)(r->status_at[i] - 1) : r->status;
	if (st)
		put_le16(cqe + 14, (uint16_t)(st << 1));
	return r->drop || (i < MAXC && r->drop_at[i]) ? FW_DROP : FW_RESPOND;
}

static int count_opc(const struct path_rec *r, uint8_t opc)
{
	int n = 0;
	for (int i = 0; i < r->n && i < MAXC; i++)
		n += r->opc[i] == opc;
	return n;
}

struct done {
	int calls;
	struct nvmeof_cpl cpl;
	uint64_t at_ms;
	struct nvmeof_mpath_queue *destroy; /* the callback tries to destroy this queue */
	int destroy_rc;
	struct nvmeof_mpath_queue *poll;    /* the callback polls this queue (after the disconnect below) */
	int poll_rc;
	int disconnect;                     /* the callback disconnects path disconnect - 1 first (0: none) */
};

static void cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct done *d = arg;
	d->calls++;
	d->cpl = *cpl;
	d->at_ms = nvmeof_now_ms();
	if (d->destroy)
		d->destroy_rc = nvmeof_mpath_queue_destroy(d->destroy);
	if (d->poll && d->disconnect)
		nvmeof_mpath_queue_path_disconnect(d->poll, (uint32_t)d->disconnect - 1);
	if (d->poll)
		d->poll_rc = nvmeof_mpath_queue_poll(d->poll, 16);
}

struct two {
	struct nvmeof_mpath mp;
	struct path_rec rec[2];
	struct fake_wire *fw[2];
	struct nvmeof_mr mr[2];
	struct nvmeof_mpath_mr mmr;
	struct nvmeof_ns ns;
	struct nvmeof_mpath_queue *mq;
	char buf[4096];
};

/* bytes per command of the next two_paths' queues (0: no limit) */
static uint64_t next_max_xfer;

/* Path A (index 0) carries everything while it is usable (numa policy,
 * first of equals); B (1) takes over. */
static struct two *two_paths(uint32_t cmd_timeout_ms, uint32_t quiesce_ms, uint32_t anatt_ms)
{
	struct two *t = calloc(1, sizeof(*t));
	t->ns = (struct nvmeof_ns){.nsid = 1, .lba_size = 512, .lbads = 9, .nsze = 1ull << 30};
	nvmeof_mpath_opts_init(&t->mp.o);
	t->mp.o.nsid = 1;
	t->mp.o.iopolicy = NVMEOF_IOPOLICY_NUMA;
	t->mp.o.numa_node = 0;
	t->mp.o.quiesce_ms = quiesce_ms;
	t->mp.n = 2;
	pthread_mutex_init(&t->mp.lock, NULL);
	t->mmr.mp = &t->mp;
	t->mmr.addr = t->buf;
	t->mmr.len = sizeof(t->buf);
	struct nvmeof_queue *qs[2];
	for (int i = 0; i < 2; i++) {
		struct mp_path *p = &t->mp.p[i];
		p->mp = &t->mp;
		p->ns = &t->ns;
		p->anatt_ms = anatt_ms;
		p->numa_node = -1;
		p->ana = NVMEOF_ANA_OPTIMIZED;
		snprintf(p->traddr, sizeof(p->traddr), "10.0.0.%d", i + 1);
		snprintf(p->trsvcid, sizeof(p->trsvcid), "4420");
		snprintf(p->hca, sizeof(p->hca), "fake%d", i);
		struct q_params qp = {.qid = 1, .depth = 8, .cmd_timeout_ms = cmd_timeout_ms, .wait_mode = NVMEOF_WAIT_POLL,
				      .max_xfer = next_max_xfer};
		t->fw[i] = fw_new(8, responder, &t->rec[i]);
		if (q_open_fake(&qp, t->fw[i], &qs[i])) {
			fprintf(stderr, "q_open_fake: %s\n", nvmeof_errmsg());
			exit(1);
		}
		t->mr[i] = (struct nvmeof_mr){.addr = t->buf, .len = sizeof(t->buf), .lkey = 0x11, .rkey = 0xab0u + i};
		t->mmr.mr[i] = &t->mr[i];
	}
	next_max_xfer = 0;
	if (mq_create_over(&t->mp, qs, q_close, &t->mq)) {
		fprintf(stderr, "mq_create_over: %s\n", nvmeof_errmsg());
		exit(1);
	}
	return t;
}

static void two_free(struct two *t)
{
	if (t->mq)
		CHECK_EQ(nvmeof_mpath_queue_destroy(t->mq), 0);
	for (int i = 0; i < 2; i++)
		fw_free(t->fw[i]);
	pthread_mutex_destroy(&t->mp.lock);
	free(t);
}

/* Polls until d has completed or ms passed (a bound far above what the
 * step needs: it only keeps a broken build from hanging). */
static void poll_until(struct two *t, const struct done *d, uint32_t ms)
{
	uint64_t end = nvmeof_now_ms() + ms;
	while (!d->calls && nvmeof_now_ms() < end) {
		nvmeof_mpath_queue_poll(t->mq, 16);
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
}

/* A write that timed out on A may still be executing behind A's
 * controller: it goes to B only after the quiesce time (NVMe Base 2.1,
 * 9.6), while a read lost with it goes to B at once. */
TEST(lost_write_waits_quiesce_time_read_goes_at_once)
{
	struct two *t = two_paths(100, 300, 1000);
	struct done w = {0}, r = {0};
	t->rec[0].drop = 1; /* A goes silent: both commands time out there */
	CHECK_EQ(nvmeof_mpath_write(t->mq, 4242, 1, &t->mmr, 0, 0, cb, &w), 0);
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 512, cb, &r), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	CHECK_EQ(t->rec[0].n, 2);
	poll_until(t, &r, 5000);
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.cpl.err, 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_READ), 1);
	/* the read is back; the write has not reached B */
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_WRITE), 0);
	CHECK_EQ(w.calls, 0);
	poll_until(t, &w, 5000);
	CHECK_EQ(w.calls, 1);
	CHECK_EQ(w.cpl.err, 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_WRITE), 1);
	CHECK_EQ(t->rec[1].slba[1], 4242);
	/* B saw the write a hold (300 ms) after A's loss was found, on the
	 * library's own clock: the loss's detected_ms, not when the read
	 * reached B (a preemption between the two took that margin) */
	struct nvmeof_path_loss l = {.size = sizeof(l)};
	CHECK_EQ(nvmeof_mpath_queue_path_loss(t->mq, 0, 0, &l), 1);
	CHECK(t->rec[1].at_ms[0] >= l.detected_ms);
	CHECK(t->rec[1].at_ms[1] - l.detected_ms >= 300);
	struct nvmeof_path_stats st = {.size = sizeof(st)};
	CHECK_EQ(nvmeof_mpath_queue_path_stats(t->mq, 0, &st), 0);
	CHECK_EQ(st.held, 1);
	CHECK(st.hold_max_ms >= 290);
	two_free(t);
}

/* A lost write still in its hold when the queue is destroyed fails to its
 * caller in doubt: it may still land behind the old controller. */
TEST(a_write_destroyed_during_its_hold_is_in_doubt)
{
	struct two *t = two_paths(100, 5000, 1000);
	struct done w = {0}, r = {0};
	t->rec[0].drop = 1;
	CHECK_EQ(nvmeof_mpath_write(t->mq, 4242, 1, &t->mmr, 0, 0, cb, &w), 0);
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 512, cb, &r), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	poll_until(t, &r, 5000); /* the loss was found: the read went to B */
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(w.calls, 0); /* held */
	CHECK_EQ(nvmeof_mpath_queue_destroy(t->mq), 0);
	t->mq = NULL;
	CHECK_EQ(w.calls, 1);
	CHECK_EQ(w.cpl.err, NVMEOF_ECLOSED);
	CHECK(w.cpl.in_doubt);
	two_free(t);
}

/* quiesce_ms 0 without CQT or keep-alive: no hold, as before. */
TEST(no_quiesce_time_no_hold)
{
	struct two *t = two_paths(100, 0, 1000);
	struct done w = {0};
	t->rec[0].drop = 1;
	CHECK_EQ(nvmeof_mpath_write(t->mq, 4242, 1, &t->mmr, 0, 0, cb, &w), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	poll_until(t, &w, 5000);
	CHECK_EQ(w.calls, 1);
	CHECK_EQ(w.cpl.err, 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_WRITE), 1);
	struct nvmeof_path_stats st = {.size = sizeof(st)};
	CHECK_EQ(nvmeof_mpath_queue_path_stats(t->mq, 0, &st), 0);
	CHECK_EQ(st.held, 0);
	two_free(t);
}

/* A answered Inaccessible while B still looks Inaccessible (its change
 * not read yet): both controllers are connected, so the command waits
 * for a path instead of failing; B turns Optimized and carries it. */
TEST(inaccessible_live_paths_wait_for_one)
{
	struct two *t = two_paths(1000, 0, 2000);
	struct done r = {0};
	uint64_t now = nvmeof_now_ms();
	mp_set_ana(&t->mp.p[0], NVMEOF_ANA_INACCESSIBLE, now);
	mp_set_ana(&t->mp.p[1], NVMEOF_ANA_INACCESSIBLE, now);
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 0, cb, &r), 0);
	nvmeof_mpath_queue_poll(t->mq, 16);
	CHECK_EQ(r.calls, 0);
	CHECK_EQ(nvmeof_mpath_queue_inflight(t->mq), 1);
	mp_set_ana(&t->mp.p[1], NVMEOF_ANA_OPTIMIZED, nvmeof_now_ms());
	poll_until(t, &r, 5000);
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.cpl.err, 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_READ), 1);
	CHECK_EQ(t->rec[0].n, 0);
	two_free(t);
}

/* ... but not for good: past the longest ANATT it fails, naming the paths. */
TEST(inaccessible_live_paths_wait_is_bounded)
{
	struct two *t = two_paths(1000, 0, 100);
	struct done r = {0};
	uint64_t now = nvmeof_now_ms();
	mp_set_ana(&t->mp.p[0], NVMEOF_ANA_INACCESSIBLE, now);
	mp_set_ana(&t->mp.p[1], NVMEOF_ANA_INACCESSIBLE, now);
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 0, cb, &r), 0);
	poll_until(t, &r, 5000);
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.cpl.err, NVMEOF_ECLOSED);
	CHECK(strstr(nvmeof_errmsg(), "no usable path") != NULL);
	CHECK_EQ(t->rec[0].n + t->rec[1].n, 0);
	two_free(t);
}

/* A callback that destroys its own multipath queue is refused (the poll
 * that runs it goes on using the queue), as a queue's own destroy is. */
TEST(destroy_from_callback_refused)
{
	struct two *t = two_paths(1000, 0, 1000);
	struct done r = {.destroy = t->mq};
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 0, cb, &r), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	poll_until(t, &r, 5000);
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.destroy_rc, NVMEOF_EBUSY);
	CHECK(strstr(nvmeof_errmsg(), "callback") != NULL);
	/* still whole: it carries the next command */
	struct done r2 = {0};
	CHECK_EQ(nvmeof_mpath_read(t->mq, 8, 1, &t->mmr, 0, cb, &r2), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	poll_until(t, &r2, 5000);
	CHECK_EQ(r2.calls, 1);
	CHECK_EQ(r2.cpl.err, 0);
	two_free(t);
}

/* A loss placed by the caller (the transport's disconnect, the target
 * untouched) is measured: the commands it took, when the first went out
 * and completed elsewhere, the write's hold; the failed-over commands'
 * latency. */
TEST(path_disconnect_is_measured)
{
	struct two *t = two_paths(10000, 200, 1000);
	struct done w = {0}, r = {0};
	struct nvmeof_path_loss l = {.size = sizeof(l)};
	/* A answers at once: the answers wait in its CQ, not yet polled, when
	 * the wire is cut; they must not be taken */
	CHECK_EQ(nvmeof_mpath_queue_path_loss(t->mq, 0, 0, &l), 0);
	CHECK_EQ(nvmeof_mpath_write(t->mq, 4242, 1, &t->mmr, 0, 0, cb, &w), 0);
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 512, cb, &r), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	CHECK_EQ(nvmeof_mpath_queue_path_disconnect(t->mq, 2), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_mpath_queue_path_disconnect(t->mq, 0), 0);
	poll_until(t, &w, 5000);
	poll_until(t, &r, 5000);
	CHECK_EQ(w.cpl.err, 0);
	CHECK_EQ(r.cpl.err, 0);
	CHECK_EQ(nvmeof_mpath_queue_path_loss(t->mq, 0, 0, &l), 1);
	CHECK_EQ(l.cmds, 2);
	CHECK(l.detected_ms > 0);
	CHECK(l.reissue_ms >= 0);
	CHECK(l.complete_ms >= l.reissue_ms);
	CHECK(l.hold_ms >= 190);
	CHECK_EQ(nvmeof_mpath_queue_path_loss(t->mq, 1, 0, &l), 0);
	double pct[2] = {50, 100};
	uint64_t ns[2], n = 0;
	CHECK_EQ(nvmeof_mpath_queue_failover_latency(t->mq, pct, 2, ns, &n), 0);
	CHECK_EQ(n, 2);
	CHECK(ns[1] >= 190000000ull * 15 / 16); /* the write waited its hold */
	/* a path already gone cannot be disconnected again */
	CHECK_EQ(nvmeof_mpath_queue_path_disconnect(t->mq, 0), NVMEOF_ECLOSED);
	/* a loss with nothing in flight is one too */
	CHECK_EQ(nvmeof_mpath_queue_path_disconnect(t->mq, 1), 0);
	nvmeof_mpath_queue_poll(t->mq, 16);
	CHECK_EQ(nvmeof_mpath_queue_path_loss(t->mq, 1, 0, &l), 1);
	CHECK_EQ(l.cmds, 0);
	CHECK_EQ(l.reissue_ms, -1);
	CHECK_EQ(l.complete_ms, -1);
	two_free(t);
}

/* Internal Path Error on the only usable path: the command goes again on
 * that path, paced, not at every poll, and fails past ANATT with what
 * the path said. */
TEST(internal_path_error_on_the_only_path_is_paced)
{
	struct two *t = two_paths(1000, 0, 300);
	struct done r = {0};
	mp_set_ana(&t->mp.p[1], NVMEOF_ANA_PERSISTENT_LOSS, nvmeof_now_ms());
	t->rec[0].status = 0x300; /* SCT 3h Path Related, SC 00h Internal Path Error, no DNR */
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 0, cb, &r), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	poll_until(t, &r, 5000);
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.cpl.err, NVMEOF_ENVME);
	CHECK_EQ(r.cpl.status, 0x300);
	CHECK_EQ(t->rec[1].n, 0);
	/* ANATT 300 ms: paced at MQ_PACE_MS (10 ms) that is about 30 sends;
	 * unpaced, one per poll of poll_until (every 0.2 ms), over a thousand.
	 * 150 leaves a slow machine room either way. */
	printf("    %d sends before it failed: %s\n", t->rec[0].n, nvmeof_errmsg());
	CHECK(t->rec[0].n >= 2);
	CHECK(t->rec[0].n < 150);
	two_free(t);
}

/* Flush through the multipath queue: one Flush on one path; lost with
 * that path, it goes again on the other at once. */
TEST(flush_goes_through_one_path_and_fails_over)
{
	struct two *t = two_paths(100, 1000, 1000);
	struct done f = {0}, g = {0};
	CHECK_EQ(nvmeof_mpath_flush(t->mq, cb, &f), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	poll_until(t, &f, 5000);
	CHECK_EQ(f.calls, 1);
	CHECK_EQ(f.cpl.err, 0);
	CHECK_EQ(count_opc(&t->rec[0], NVME_CMD_FLUSH) + count_opc(&t->rec[1], NVME_CMD_FLUSH), 1);
	t->rec[0].drop = 1;
	int before = t->rec[0].n;
	CHECK_EQ(nvmeof_mpath_flush(t->mq, cb, &g), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	CHECK_EQ(t->rec[0].n, before + 1);
	poll_until(t, &g, 5000);
	CHECK_EQ(g.calls, 1);
	CHECK_EQ(g.cpl.err, 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_FLUSH), 1);
	two_free(t);
}

/* Polls for ms, whatever completes. */
static void poll_for(struct two *t, uint32_t ms)
{
	uint64_t end = nvmeof_now_ms() + ms;
	while (nvmeof_now_ms() < end) {
		nvmeof_mpath_queue_poll(t->mq, 16);
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
}

/* A write split in two (above MDTS) whose first chunk is answered with
 * first_status while the second is still executing behind A's controller
 * when A's connection goes: the write is in doubt (that chunk may still
 * land), so it reaches B only after the hold, and never completes to the
 * caller before. */
static void split_write_in_doubt(uint16_t first_status, const char *what)
{
	printf("    first chunk: %s\n", what);
	next_max_xfer = 512;
	struct two *t = two_paths(10000, 300, 1000);
	struct done w = {0};
	t->rec[0].status_at[0] = (uint16_t)(first_status + 1);
	t->rec[0].drop_at[1] = true;
	CHECK_EQ(nvmeof_mpath_write(t->mq, 4242, 2, &t->mmr, 0, 0, cb, &w), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	CHECK_EQ(count_opc(&t->rec[0], NVME_CMD_WRITE), 2);
	poll_for(t, 20); /* the first chunk's answer is in */
	CHECK_EQ(w.calls, 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_WRITE), 0);
	uint64_t lost = nvmeof_now_ms();
	CHECK_EQ(nvmeof_mpath_queue_path_disconnect(t->mq, 0), 0);
	poll_for(t, 100);
	CHECK_EQ(w.calls, 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_WRITE), 0);
	poll_until(t, &w, 5000);
	CHECK_EQ(w.calls, 1);
	CHECK_EQ(w.cpl.err, 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_WRITE), 2);
	/* 300 ms from the loss (the ms clock takes a few off) */
	CHECK(t->rec[1].at_ms[0] - lost >= 290);
	struct nvmeof_path_stats st = {.size = sizeof(st)};
	CHECK_EQ(nvmeof_mpath_queue_path_stats(t->mq, 0, &st), 0);
	CHECK_EQ(st.held, 1);
	two_free(t);
}

TEST(split_write_path_status_and_loss_is_held)
{
	split_write_in_doubt(0x302, "Asymmetric Access Inaccessible, no DNR");
}

TEST(split_write_dnr_status_and_loss_is_held)
{
	split_write_in_doubt(0x4002, "Invalid Field in Command, DNR");
}

/* Commands that waited for a path and fail at once from one poll, the
 * first one's callback disconnecting B and polling: that nested poll
 * holds B's two lost writes while the outer poll still walks the ones
 * that waited. Each command completes once, and nothing stays in flight. */
TEST(a_poll_from_a_callback_during_the_retry_of_waiting_commands)
{
	struct two *t = two_paths(10000, 300, 100);
	struct done w[2] = {{0}}, r[3] = {{0}};
	CHECK_EQ(nvmeof_mpath_queue_path_disconnect(t->mq, 0), 0);
	nvmeof_mpath_queue_poll(t->mq, 16); /* A is gone for good (no reconnect) */
	t->rec[1].drop = 1;
	for (int i = 0; i < 2; i++)
		CHECK_EQ(nvmeof_mpath_write(t->mq, 100 + (uint64_t)i, 1, &t->mmr, 0, 0, cb, &w[i]), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_WRITE), 2);
	/* B still connected but Inaccessible: reads wait, up to ANATT */
	mp_set_ana(&t->mp.p[1], NVMEOF_ANA_INACCESSIBLE, nvmeof_now_ms());
	r[0].poll = t->mq;
	r[0].disconnect = 2;
	for (int i = 0; i < 3; i++)
		CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 512, cb, &r[i]), 0);
	CHECK_EQ(t->mq->nparked, 3);
	poll_for(t, 200); /* past ANATT (100 ms): the reads fail, the writes are held, then fail */
	poll_until(t, &w[0], 2000);
	poll_until(t, &w[1], 2000);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(r[i].calls, 1);
		CHECK(r[i].cpl.err != 0);
	}
	for (int i = 0; i < 2; i++)
		CHECK_EQ(w[i].calls, 1);
	CHECK_EQ(nvmeof_mpath_queue_inflight(t->mq), 0);
	CHECK_EQ(t->mq->nfree, t->mq->nreqs);
	two_free(t);
}

/* Destroy completes what is in flight (on B, the second path queue
 * destroyed) and what waits for a path; their callbacks poll the queue
 * being destroyed, which refuses (its path queues are going), and each
 * completes once. */
TEST(callbacks_run_by_destroy_may_poll)
{
	struct two *t = two_paths(10000, 300, 1000);
	struct done w = {0}, r = {0};
	mp_set_ana(&t->mp.p[0], NVMEOF_ANA_INACCESSIBLE, nvmeof_now_ms());
	t->rec[1].drop = 1;
	w.poll = t->mq;
	w.poll_rc = 1;
	CHECK_EQ(nvmeof_mpath_write(t->mq, 100, 1, &t->mmr, 0, 0, cb, &w), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_WRITE), 1);
	mp_set_ana(&t->mp.p[1], NVMEOF_ANA_INACCESSIBLE, nvmeof_now_ms());
	r.poll = t->mq;
	r.poll_rc = 1;
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 512, cb, &r), 0);
	CHECK_EQ(t->mq->nparked, 1);
	CHECK_EQ(nvmeof_mpath_queue_destroy(t->mq), 0);
	t->mq = NULL;
	CHECK_EQ(w.calls, 1);
	CHECK_EQ(w.cpl.err, NVMEOF_ECLOSED);
	CHECK_EQ(w.poll_rc, NVMEOF_ECLOSED);
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.cpl.err, NVMEOF_ECLOSED);
	CHECK_EQ(r.poll_rc, NVMEOF_ECLOSED);
	two_free(t);
}

/* A path whose controller no longer has the namespace (detached from it
 * alone: gone in its table) carries none of its commands while another
 * path does, whatever its group's state. */
TEST(a_namespace_gone_from_one_path_is_served_by_the_other)
{
	struct two *t = two_paths(10000, 300, 1000);
	struct nvmeof_ns gone = t->ns;
	gone.gone = true;
	t->mp.p[0].ns = &gone;
	struct done r = {0};
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 512, cb, &r), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	poll_until(t, &r, 5000);
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.cpl.err, 0);
	CHECK_EQ(t->rec[0].n, 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_READ), 1);
	two_free(t);
}

/* The hold of a write lost on A, from what A's controller reports in
 * Identify Controller (CQT, bytes 387:386, parsed as the library reads
 * it) and its keep-alive timeout: the write reaches B no sooner than
 * want_ms after the loss, and not much later (1.5 s of slack for a slow
 * machine; the hold ends at the first poll after it). */
static void hold_from_ctrl_kas(uint32_t quiesce_ms, uint16_t cqt_ms, uint32_t kato_ms, uint16_t kas,
			       uint32_t want_ms)
{
	printf("    quiesce_time %u ms, CQT %u ms, KATO %u ms, KAS %u: hold %u ms\n", quiesce_ms, cqt_ms, kato_ms,
	       kas, want_ms);
	struct two *t = two_paths(10000, quiesce_ms, 1000);
	static uint8_t id[4096];
	memset(id, 0, sizeof(id));
	put_le16(id + 386, cqt_ms);
	put_le16(id + 320, kas);
	struct nvmeof_ctrl_info ci;
	nvme_id_ctrl_parse(id, &ci);
	mp_path_take_ctrl(&t->mp.p[0], &ci, kato_ms);
	struct done w = {0};
	t->rec[0].drop = 1;
	CHECK_EQ(nvmeof_mpath_write(t->mq, 4242, 1, &t->mmr, 0, 0, cb, &w), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	uint64_t lost = nvmeof_now_ms();
	CHECK_EQ(nvmeof_mpath_queue_path_disconnect(t->mq, 0), 0);
	poll_until(t, &w, 10000);
	CHECK_EQ(w.calls, 1);
	CHECK_EQ(w.cpl.err, 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_WRITE), 1);
	uint64_t at = t->rec[1].at_ms[0] - lost;
	printf("    the write reached B %llu ms after the loss\n", (unsigned long long)at);
	struct nvmeof_path_stats st = {.size = sizeof(st)};
	CHECK_EQ(nvmeof_mpath_queue_path_stats(t->mq, 0, &st), 0);
	if (want_ms) {
		CHECK(at >= want_ms - 5);
		CHECK(at < want_ms + 1500);
		CHECK_EQ(st.held, 1);
	} else {
		CHECK_EQ(st.held, 0);
	}
	two_free(t);
}

static void hold_from_ctrl(uint32_t quiesce_ms, uint16_t cqt_ms, uint32_t kato_ms, uint32_t want_ms)
{
	hold_from_ctrl_kas(quiesce_ms, cqt_ms, kato_ms, 0, want_ms);
}

/* CQT longer than quiesce_time: CQT decides. */
TEST(the_hold_is_the_controllers_cqt_where_longer)
{
	hold_from_ctrl(100, 400, 0, 400);
}

/* CQT shorter than quiesce_time: quiesce_time decides. */
TEST(the_hold_is_quiesce_time_where_longer_than_cqt)
{
	hold_from_ctrl(400, 50, 0, 400);
}

/* With keep-alive, two keep-alive timeouts more. */
TEST(the_hold_adds_two_keep_alive_timeouts)
{
	hold_from_ctrl(100, 0, 150, 400);
	hold_from_ctrl(100, 200, 100, 400);
}

/* The rule itself: the controller's keep-alive timer may run to KATO
 * rounded up to its granularity (KAS, 100 ms units, Identify Controller
 * bytes 321:320), so each keep-alive timeout counts as that. */
TEST(the_hold_rounds_kato_up_to_the_keep_alive_granularity)
{
	CHECK_EQ(q_hold_rule(1000, 0, 5000, 0), 11000);   /* no granularity reported: KATO as is */
	CHECK_EQ(q_hold_rule(1000, 0, 5000, 1), 11000);   /* a multiple of 100 ms already */
	CHECK_EQ(q_hold_rule(1000, 0, 150, 1), 1400);     /* 150 ms: 200 ms */
	CHECK_EQ(q_hold_rule(1000, 0, 5000, 30), 13000);  /* 3 s granularity: 6 s */
	CHECK_EQ(q_hold_rule(1000, 2000, 1, 10), 4000);   /* 1 ms: one 1 s unit */
	CHECK_EQ(q_hold_rule(1000, 0, 0, 10), 1000);      /* keep-alive off */
	CHECK_EQ(q_hold_rule(0, 2000, 5000, 10), 0);      /* quiesce_time 0: none */
	CHECK_EQ(q_hold_rule(1000, 0, UINT32_MAX, 0xffff), UINT32_MAX);
	/* and from Identify Controller as the library reads it */
	hold_from_ctrl_kas(100, 0, 150, 1, 500);
}

/* quiesce_time 0: no hold, whatever the controller reports. */
TEST(quiesce_time_0_holds_nothing_whatever_the_controller_reports)
{
	hold_from_ctrl(0, 400, 150, 0);
}

/* A CQT that a new association reports (read after the queue was
 * created) holds the next write that path loses. */
TEST(a_cqt_read_after_the_queue_was_created_holds_the_next_loss)
{
	struct two *t = two_paths(10000, 100, 1000);
	static uint8_t id[4096];
	memset(id, 0, sizeof(id));
	put_le16(id + 386, 400);
	struct nvmeof_ctrl_info ci;
	nvme_id_ctrl_parse(id, &ci);
	mp_path_take_ctrl(&t->mp.p[0], &ci, 0); /* after mq_create_over */
	struct done w = {0};
	t->rec[0].drop = 1;
	CHECK_EQ(nvmeof_mpath_write(t->mq, 4242, 1, &t->mmr, 0, 0, cb, &w), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	uint64_t lost = nvmeof_now_ms();
	CHECK_EQ(nvmeof_mpath_queue_path_disconnect(t->mq, 0), 0);
	poll_until(t, &w, 10000);
	CHECK_EQ(w.calls, 1);
	CHECK(t->rec[1].at_ms[0] - lost >= 395);
	two_free(t);
}

/* A write whose post A refused never reached the wire: it cannot land
 * late, so it goes to B at once, not held. A held write, re-issued on B
 * when its hold ends, counts as failed over from A as one re-routed at
 * once does. */
TEST(a_write_that_never_reached_the_wire_is_not_held)
{
	struct two *t = two_paths(10000, 300, 1000);
	struct done w1 = {0}, w2 = {0};
	fw_fail_next_post(t->fw[0]);
	CHECK_EQ(nvmeof_mpath_write(t->mq, 1000, 1, &t->mmr, 0, 0, cb, &w1), 0);
	nvmeof_mpath_queue_commit(t->mq); /* refused: it fails from A's poll */
	CHECK_EQ(t->rec[0].n, 0);
	poll_for(t, 100);
	CHECK_EQ(w1.calls, 1);
	CHECK_EQ(w1.cpl.err, 0);
	CHECK_EQ(t->rec[1].n, 1);
	struct nvmeof_path_stats st = {.size = sizeof(st)};
	CHECK_EQ(nvmeof_mpath_queue_path_stats(t->mq, 0, &st), 0);
	CHECK_EQ(st.held, 0);
	CHECK_EQ(st.failovers, 1);
	/* a write on the wire at A's loss: held, then re-issued on B */
	t->rec[0].drop = 1;
	CHECK_EQ(nvmeof_mpath_write(t->mq, 2000, 1, &t->mmr, 0, 0, cb, &w2), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	CHECK_EQ(t->rec[0].n, 1);
	CHECK_EQ(nvmeof_mpath_queue_path_disconnect(t->mq, 0), 0);
	poll_until(t, &w2, 5000);
	CHECK_EQ(w2.calls, 1);
	CHECK_EQ(w2.cpl.err, 0);
	CHECK_EQ(nvmeof_mpath_queue_path_stats(t->mq, 0, &st), 0);
	CHECK_EQ(st.held, 1);
	CHECK_EQ(st.failovers, 2);
	two_free(t);
}

/* A answers Inaccessible while B is Inaccessible too: the read waits,
 * then goes to B once B is usable, and counts as failed over from A. */
TEST(a_command_that_waited_for_a_path_counts_as_failed_over)
{
	struct two *t = two_paths(1000, 0, 2000);
	struct done r = {0};
	mp_set_ana(&t->mp.p[1], NVMEOF_ANA_INACCESSIBLE, nvmeof_now_ms());
	t->rec[0].status = 0x302; /* Asymmetric Access Inaccessible */
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 0, cb, &r), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	poll_for(t, 20);
	CHECK_EQ(r.calls, 0);
	CHECK_EQ(t->rec[0].n, 1);
	mp_set_ana(&t->mp.p[1], NVMEOF_ANA_OPTIMIZED, nvmeof_now_ms());
	poll_until(t, &r, 5000);
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.cpl.err, 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_READ), 1);
	struct nvmeof_path_stats st = {.size = sizeof(st)};
	CHECK_EQ(nvmeof_mpath_queue_path_stats(t->mq, 0, &st), 0);
	CHECK_EQ(st.path_errors, 1);
	CHECK_EQ(st.failovers, 1);
	two_free(t);
}

/* The I/O thread sets Inaccessible (a status) while the refresh thread
 * sets Transition (the log): whichever comes second, the state and the
 * start of its transition are the same call's. The seam puts the refresh
 * thread's whole call where the I/O thread has decided to change the
 * state but stored nothing yet, and lets it run until it is done or
 * waits. A Transition left with no start was waited for without end; with
 * its start, a command waiting in it fails at ANATT. */
static struct ana_race {
	struct mp_path *p;
	pthread_t b;
	int armed, b_done, b_waiting;
	uint64_t b_now;
} race;

static void *race_refresh(void *arg)
{
	(void)arg;
	mp_set_ana(race.p, NVMEOF_ANA_CHANGE, race.b_now);
	__atomic_store_n(&race.b_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void race_seam(struct mp_path *p, bool waiting)
{
	if (p != race.p)
		return;
	if (waiting) {
		__atomic_store_n(&race.b_waiting, 1, __ATOMIC_RELEASE);
		return;
	}
	if (!race.armed)
		return;
	race.armed = 0;
	pthread_create(&race.b, NULL, race_refresh, NULL);
	while (!__atomic_load_n(&race.b_done, __ATOMIC_ACQUIRE) && !__atomic_load_n(&race.b_waiting, __ATOMIC_ACQUIRE))
		sched_yield();
}

TEST(a_transition_set_while_a_status_sets_inaccessible_keeps_its_start)
{
	struct two *t = two_paths(10000, 0, 100);
	struct done r = {0};
	uint64_t now = nvmeof_now_ms();
	mp_set_ana(&t->mp.p[1], NVMEOF_ANA_PERSISTENT_LOSS, now); /* B will not come back */
	mp_set_ana(&t->mp.p[0], NVMEOF_ANA_CHANGE, now);
	race = (struct ana_race){.p = &t->mp.p[0], .armed = 1, .b_now = nvmeof_now_ms()};
	mp_set_ana_seam = race_seam;
	mp_set_ana(&t->mp.p[0], NVMEOF_ANA_INACCESSIBLE, nvmeof_now_ms()); /* the I/O thread's */
	pthread_join(race.b, NULL);
	mp_set_ana_seam = NULL;
	CHECK_EQ(race.armed, 0);
	CHECK_EQ(mp_ana(&t->mp.p[0]), NVMEOF_ANA_CHANGE);
	CHECK_EQ(t->mp.p[0].change_since_ms, race.b_now);
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 0, cb, &r), 0);
	poll_until(t, &r, 5000);
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.cpl.err, NVMEOF_ETIMEDOUT);
	CHECK(strstr(nvmeof_errmsg(), "ANATT") != NULL);
	CHECK(r.at_ms >= race.b_now + 100); /* not before ANATT: the bound is counted from the transition's start */
	CHECK_EQ(t->rec[0].n + t->rec[1].n, 0);
	two_free(t);
}

/* The engine's end-of-job lines of a path's losses: the library keeps the
 * first MQ_LOSS_MAX and counts them all; a loss past those is said not
 * kept, not told with another loss's numbers. The losses are put in the
 * queue's record by hand: the fake wire does not reconnect, so a path is
 * lost once. */
static char said[16][256];
static int nsaid;

static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (nsaid < 16)
		vsnprintf(said[nsaid], sizeof(said[0]), fmt, ap);
	nsaid++;
	va_end(ap);
}

TEST(the_engine_tells_each_kept_loss_by_its_own_numbers_and_no_more)
{
	struct two *t = two_paths(1000, 0, 1000);
	t->mq->nloss[0] = MQ_LOSS_MAX + 2;
	for (uint32_t k = 0; k < MQ_LOSS_MAX; k++)
		t->mq->loss[0][k] = (struct mq_loss){.detected_ms = 1000 * (k + 1), .reissue_ms = 1000 * (k + 1) + k,
						    .complete_ms = 1000 * (k + 1) + 2 * k, .hold_ms = 10 * k, .cmds = k + 1};
	nsaid = 0;
	losses_tell(t->mq, 0, 2, say);
	CHECK_EQ(nsaid, MQ_LOSS_MAX + 1);
	char want[256];
	for (uint32_t k = 0; k < MQ_LOSS_MAX; k++) {
		snprintf(want, sizeof(want), "nvmeof: path 1 loss %u (queue pair 3): %u command(s); from detection, first "
			 "re-issued on another path after %u ms, first completed there after %u ms; writes held %u ms\n",
			 k + 1, k + 1, k, 2 * k, 10 * k);
		CHECK_EQ(strcmp(said[k], want), 0);
	}
	CHECK_EQ(strcmp(said[MQ_LOSS_MAX], "nvmeof: path 1 loss 9 (queue pair 3): not kept (the first 8 are)\n"), 0);
	if (nsaid > MQ_LOSS_MAX && strcmp(said[MQ_LOSS_MAX], "nvmeof: path 1 loss 9 (queue pair 3): not kept (the first 8 are)\n"))
		fprintf(stderr, "    said: %s", said[MQ_LOSS_MAX]);
	nsaid = 0; /* a path never lost: nothing */
	losses_tell(t->mq, 1, 0, say);
	CHECK_EQ(nsaid, 0);
	two_free(t);
}

/* Path A's association moved (another queue of its controller lost its
 * connection, or the controller re-associated): A's queue is still LIVE
 * until its next poll takes it off, but sends nothing more on the old
 * association. A command routed then goes to B, which carries it now, not
 * into A's queue to wait for A's recovery (was: A counted as live, the read
 * was accepted there and reached no wire). */
TEST(a_path_whose_association_moved_is_not_chosen)
{
	struct two *t = two_paths(30000, 0, 1000);
	static uint32_t assoc_now = 1; /* A's controller's association counter */
	q_follow_assoc(t->mq->q[0], &assoc_now, 1);
	struct done r = {0};
	CHECK_EQ(nvmeof_mpath_read(t->mq, 7, 1, &t->mmr, 0, cb, &r), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	CHECK_EQ(count_opc(&t->rec[0], NVME_CMD_READ), 1); /* A while its association holds */
	poll_until(t, &r, 5000);
	CHECK_EQ(r.calls, 1);
	__atomic_store_n(&assoc_now, 2, __ATOMIC_RELAXED); /* A's association moves */
	struct done r2 = {0};
	CHECK_EQ(nvmeof_mpath_read(t->mq, 8, 1, &t->mmr, 512, cb, &r2), 0);
	CHECK_EQ(nvmeof_mpath_queue_commit(t->mq), 0);
	CHECK_EQ(count_opc(&t->rec[1], NVME_CMD_READ), 1); /* was: 0, the read waited in A's queue */
	CHECK_EQ(count_opc(&t->rec[0], NVME_CMD_READ), 1);
	poll_until(t, &r2, 5000);
	CHECK_EQ(r2.calls, 1);
	CHECK_EQ(r2.cpl.err, 0);
	struct nvmeof_path_stats st = {.size = sizeof(st)};
	CHECK_EQ(nvmeof_mpath_queue_path_stats(t->mq, 0, &st), 0);
	CHECK_EQ(st.cmds, 1);      /* the second read was never A's */
	CHECK_EQ(st.failovers, 0); /* routed to B, not failed over from A */
	two_free(t);
}

int main(int argc, char **argv)
{
	static const struct test_case t[] = {
		T(lost_write_waits_quiesce_time_read_goes_at_once), T(a_write_destroyed_during_its_hold_is_in_doubt),
		T(no_quiesce_time_no_hold),
		T(inaccessible_live_paths_wait_for_one), T(inaccessible_live_paths_wait_is_bounded),
		T(destroy_from_callback_refused), T(path_disconnect_is_measured),
		T(internal_path_error_on_the_only_path_is_paced), T(flush_goes_through_one_path_and_fails_over),
		T(split_write_path_status_and_loss_is_held), T(split_write_dnr_status_and_loss_is_held),
		T(a_poll_from_a_callback_during_the_retry_of_waiting_commands), T(callbacks_run_by_destroy_may_poll),
		T(a_namespace_gone_from_one_path_is_served_by_the_other),
		T(the_hold_is_the_controllers_cqt_where_longer), T(the_hold_rounds_kato_up_to_the_keep_alive_granularity),
		T(the_hold_is_quiesce_time_where_longer_than_cqt),
		T(the_hold_adds_two_keep_alive_timeouts), T(quiesce_time_0_holds_nothing_whatever_the_controller_reports),
		T(a_cqt_read_after_the_queue_was_created_holds_the_next_loss),
		T(a_write_that_never_reached_the_wire_is_not_held), T(a_command_that_waited_for_a_path_counts_as_failed_over),
		T(a_transition_set_while_a_status_sets_inaccessible_keeps_its_start),
		T(the_engine_tells_each_kept_loss_by_its_own_numbers_and_no_more),
		T(a_path_whose_association_moved_is_not_chosen),
	};
	return run_named_tests("unit-mpathio", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
