/*
 * The queue's logic on the loopback test wire (core/fakewire.c): MDTS
 * splitting with more chunks than slots, errors in the middle of a split,
 * stale, duplicate and reordered completions, command timeouts, in-capsule
 * versus keyed SGL, queue full and batching, connection loss. Faults here
 * are ones the real target in the test bed cannot be made to produce.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "fakewire.h"
#include "rdma.h"
#include "mem.h"
#include "protocol.h"
#include "qpriv.h"
#include "util.h"

#define MAXREC 1100

struct rec {
	int n;
	uint8_t sqe[MAXREC][64];
	struct ibv_sge sge[MAXREC][2];
	int nsge[MAXREC];
	uint8_t held[MAXREC][16]; /* responses kept back (FW_DROP) */
	int nheld;
	int hold;                 /* keep responses back instead of answering */
	int fail_at;              /* answer this command (1-based) with an error */
	enum fw_action action;
	int fail_first;           /* answer the first N commands with fail_status */
	uint16_t fail_status;
	int bad_cids;             /* commands sent with the reserved CID FFFFh */
	int inject_at;            /* at this command: deliver held[0], fail the next post */
	int break_at;             /* at this command: no answer, and the wire breaks */
	struct fake_wire *fw;
};

static enum fw_action responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				uint8_t *cqe)
{
	struct rec *r = ctx;
	if (r->n < MAXREC) {
		memcpy(r->sqe[r->n], sqe, 64);
		memcpy(r->sge[r->n], sge, (size_t)nsge * sizeof(*sge));
		r->nsge[r->n] = nsge;
	}
	r->n++;
	if (nvme_sqe_cid(sqe) == 0xffff)
		r->bad_cids++;
	if (r->fail_first >= r->n)
		put_le16(cqe + 14, (uint16_t)(r->fail_status << 1));
	if (r->break_at == r->n) {
		fw_break(r->fw);
		return FW_DROP;
	}
	if (r->inject_at == r->n) {
		fw_inject(r->fw, r->held[0]);
		fw_fail_next_post(r->fw);
	}
	if (r->fail_at == r->n)
		put_le16(cqe + 14, (uint16_t)((0x80 << 1) | (1 << 15))); /* LBA Out of Range, DNR */
	if (r->hold) {
		memcpy(r->held[r->nheld++], cqe, 16);
		return FW_DROP;
	}
	return r->action;
}

struct fixture {
	struct rec rec;
	struct fake_wire *fw;
	struct nvmeof_queue *q;
	struct nvmeof_mr mr;
	struct nvmeof_ns ns;
	int calls;
	struct nvmeof_cpl last;
	int resubmit;             /* callbacks that submit one more read */
	int resubmit_rc;
	int rewrite;              /* callbacks that submit one more write (LBA 4242) */
	bool poll_in_cb;          /* callbacks that poll the queue */
	int poll_rc;
	bool wire_closed_at_cb;   /* the connection was closed when the last callback ran */
	bool close_in_cb;         /* callbacks that try to destroy the queue */
	int close_rc;
};

static void cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct fixture *f = arg;
	f->calls++;
	f->last = *cpl;
	f->wire_closed_at_cb = fw_closed(f->fw);
	if (f->rewrite > 0) {
		f->rewrite--;
		f->resubmit_rc = nvmeof_write(f->q, &f->ns, 4242, 8, &f->mr, 0, cb, f);
	}
	if (f->poll_in_cb)
		f->poll_rc = nvmeof_queue_poll(f->q, 0);
	if (f->close_in_cb)
		f->close_rc = q_close(f->q);
	if (f->resubmit > 0) {
		f->resubmit--;
		f->resubmit_rc = nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f);
	}
}

static struct fixture *setup(uint32_t depth, uint64_t max_xfer, uint32_t icd_max, size_t buf,
			     uint32_t timeout_ms, bool batch)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct q_params p = {.qid = 1, .depth = depth, .cmd_timeout_ms = timeout_ms, .max_xfer = max_xfer,
			     .icd_max = icd_max, .wait_mode = NVMEOF_WAIT_POLL, .batch = batch};
	f->fw = fw_new(depth, responder, &f->rec);
	f->rec.fw = f->fw;
	if (q_open_fake(&p, f->fw, &f->q)) {
		fprintf(stderr, "q_open_fake: %s\n", nvmeof_errmsg());
		exit(1);
	}
	f->mr = (struct nvmeof_mr){.addr = malloc(buf), .len = buf, .lkey = 0x11, .rkey = 0xabc};
	memset(f->mr.addr, 0, buf);
	f->ns = (struct nvmeof_ns){.nsid = 1, .lba_size = 512, .lbads = 9, .nsze = 1ull << 30};
	return f;
}

static void teardown(struct fixture *f)
{
	nvmeof_clock_fake(0, 0); /* the real clock for the next test */
	q_close(f->q); /* NULL when the test destroyed it */
	fw_free(f->fw);
	free(f->mr.addr);
	free(f);
}

static void drain(struct fixture *f, int want_calls)
{
	for (int i = 0; i < 1000 && f->calls < want_calls; i++)
		nvmeof_queue_poll(f->q, 0);
}

static uint64_t sgl_addr(const uint8_t *sqe) { return get_le64(sqe + 24); }
static uint32_t sgl_len24(const uint8_t *sqe) { return sqe[32] | sqe[33] << 8 | sqe[34] << 16; }

TEST(split_above_mdts_more_chunks_than_slots)
{
	/* 64 MiB read, MDTS 1 MiB, 8 slots: 64 commands, 8 at a time, each
	 * placed at its own offset of the same region, one completion. */
	struct fixture *f = setup(8, 1 << 20, 0, (64 << 20) + 8192, 1000, false);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 1000, 131072, &f->mr, 4096, cb, f), 0);
	int rounds = 0;
	while (f->calls == 0 && rounds < 20) {
		CHECK(f->rec.nheld <= 8); /* never more on the wire than slots */
		int k = f->rec.nheld;
		uint8_t held[8][16];
		memcpy(held, f->rec.held, sizeof(uint8_t) * 16 * (size_t)k);
		f->rec.nheld = 0;
		for (int i = 0; i < k; i++)
			CHECK_EQ(fw_inject(f->fw, held[i]), 0);
		nvmeof_queue_poll(f->q, 0);
		rounds++;
	}
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, 0);
	CHECK_EQ(f->rec.n, 64);
	CHECK_EQ(rounds, 8);
	uint64_t base = (uint64_t)(uintptr_t)f->mr.addr + 4096;
	for (int i = 0; i < 64 && i < f->rec.n; i++) {
		const uint8_t *s = f->rec.sqe[i];
		CHECK_EQ(s[0], NVME_CMD_READ);
		CHECK_EQ(get_le64(s + 40), 1000 + (uint64_t)i * 2048);   /* SLBA */
		CHECK_EQ(get_le32(s + 48), 2047);                       /* NLB, 0-based */
		CHECK_EQ(sgl_addr(s), base + (uint64_t)i * (1 << 20));  /* same region, next offset */
		CHECK_EQ(sgl_len24(s), 1 << 20);
		CHECK_EQ(get_le32(s + 35), 0xabc);                      /* the region's rkey */
		CHECK_EQ(s[39], NVME_SGL_TYPE_KEYED_DATA);
	}
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	teardown(f);
}

TEST(error_in_a_chunk_fails_the_request_once_and_stops_issuing)
{
	struct fixture *f = setup(4, 1 << 20, 0, 16 << 20, 1000, false);
	f->rec.fail_at = 3;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 32768, &f->mr, 0, cb, f), 0); /* 16 chunks */
	drain(f, 1);
	for (int i = 0; i < 10; i++)
		nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ENVME);
	CHECK_EQ(NVMEOF_STATUS_SC(f->last.status), 0x80);
	CHECK_EQ(NVMEOF_STATUS_DNR(f->last.status), 1);
	CHECK(f->rec.n < 16); /* the rest of the split was not sent */
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	/* every slot came back: a full-depth batch goes through */
	f->rec.fail_at = 0;
	int before = f->calls;
	for (int i = 0; i < 4; i++)
		CHECK_EQ(nvmeof_read(f->q, &f->ns, (uint64_t)i, 1, &f->mr, 0, cb, f), 0);
	drain(f, before + 4);
	CHECK_EQ(f->calls, before + 4);
	teardown(f);
}

TEST(duplicate_and_stale_completions_are_dropped)
{
	struct fixture *f = setup(4, 1 << 20, 0, 4096, 1000, false);
	struct nvmeof_queue_stats st;
	f->rec.action = FW_DUPLICATE;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	drain(f, 1);
	nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 1);
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.stale_cqes, 1);
	/* the completed command's CID again (its generation is gone) */
	uint8_t cqe[16] = {0};
	put_le16(cqe + 12, nvme_sqe_cid(f->rec.sqe[0]));
	CHECK_EQ(fw_inject(f->fw, cqe), 0);
	/* a CID naming a slot past the queue's depth */
	put_le16(cqe + 12, 1000);
	CHECK_EQ(fw_inject(f->fw, cqe), 0);
	nvmeof_queue_poll(f->q, 0);
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.stale_cqes, 3);
	CHECK_EQ(f->calls, 1);
	/* the next command reuses slot 0 with a new generation */
	f->rec.action = FW_RESPOND;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	drain(f, 2);
	CHECK_EQ(f->calls, 2);
	CHECK(nvme_sqe_cid(f->rec.sqe[1]) != nvme_sqe_cid(f->rec.sqe[0]));
	CHECK_EQ(nvme_sqe_cid(f->rec.sqe[1]) & 0x3ff, nvme_sqe_cid(f->rec.sqe[0]) & 0x3ff);
	teardown(f);
}

TEST(response_before_send_completion)
{
	struct fixture *f = setup(2, 1 << 20, 4096, 4096, 1000, false);
	f->rec.action = FW_RESP_FIRST;
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	drain(f, 1);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, 0);
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	teardown(f);
}

/* The real clock, whatever nvmeof_clock_fake says: loops that wait for a
 * worker thread or a timer are bounded by it, generously (they end as
 * soon as what they wait for happened; only a broken build waits it out,
 * and a loaded machine or valgrind cannot make a correct one fail). */
#define WORKER_WAIT_MS 10000
static uint64_t real_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* The queue failed for good: nothing in flight, nothing accepted, its
 * closed connection never polled again, no callback beyond the calls. */
static void closed_for_good(struct fixture *f, int calls)
{
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 8, 8, &f->mr, 4096, cb, f), NVMEOF_ECLOSED);
	CHECK_EQ(nvmeof_queue_poll(f->q, 0), NVMEOF_ECLOSED);
	CHECK_EQ(fw_polls_after_close(f->fw), 0);
	CHECK_EQ(f->calls, calls);
}

/* Without reconnect a command timeout takes the connection down before
 * the timed-out request's callback runs: a late RDMA Write must not land in
 * a buffer its owner already reuses (the kernel host tears the queue down
 * first too). The queue is then closed for good. */
TEST(timeout_without_reconnect_closes_the_connection_before_the_callback)
{
	struct fixture *f = setup(2, 1 << 20, 0, 8192, 150, false);
	struct nvmeof_queue_stats st;
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	for (uint64_t t0 = real_ms(); !f->calls && real_ms() - t0 < WORKER_WAIT_MS;) {
		sleep_ms(10);
		nvmeof_queue_poll(f->q, 0);
	}
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ETIMEDOUT);
	CHECK(f->wire_closed_at_cb); /* was: the callback ran with the QP live */
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.timeouts, 1);
	closed_for_good(f, 1);
	teardown(f);
}

/* A queue being destroyed accepts nothing: a callback run by the teardown
 * that submits again is refused (was: accepted, never completed, or posted
 * on the destroyed QP), and one that polls touches no wire. */
TEST(destroy_refuses_what_its_callbacks_submit)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 8, 8, &f->mr, 4096, cb, f), 0);
	f->resubmit = 2;
	f->resubmit_rc = 0;
	f->poll_in_cb = true;
	q_close(f->q);
	CHECK_EQ(f->calls, 2); /* each once, none for the refused resubmissions */
	CHECK_EQ(f->last.err, NVMEOF_ECLOSED);
	CHECK_EQ(f->resubmit_rc, NVMEOF_ECLOSED);
	CHECK_EQ(f->poll_rc, NVMEOF_ECLOSED);
	CHECK(f->wire_closed_at_cb);
	CHECK_EQ(fw_polls_after_close(f->fw), 0);
	CHECK_EQ(f->rec.n, 2); /* nothing more went out */
	f->q = NULL;
	teardown(f);
}

/* A callback destroying its own queue: the poll that runs it goes on using
 * the queue afterwards, so the destroy is refused (was a use after free),
 * and the queue still works; when the queue is closed with a request in
 * flight, that request's callback trying again is refused too (was a
 * double free). */
TEST(destroy_from_its_own_callback_is_refused)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	f->close_in_cb = true;
	f->close_rc = 0;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	drain(f, 1);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, 0);
	CHECK_EQ(f->close_rc, NVMEOF_EBUSY);
	CHECK(strstr(nvmeof_errmsg(), "own completion callbacks") != NULL);
	f->close_in_cb = false;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 8, 8, &f->mr, 4096, cb, f), 0);
	drain(f, 2);
	CHECK_EQ(f->calls, 2);
	CHECK_EQ(f->last.err, 0);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 16, 8, &f->mr, 0, cb, f), 0);
	f->close_in_cb = true;
	f->close_rc = 0;
	CHECK_EQ(q_close(f->q), 0);
	CHECK_EQ(f->calls, 3);
	CHECK_EQ(f->last.err, NVMEOF_ECLOSED);
	CHECK_EQ(f->close_rc, NVMEOF_EBUSY);
	f->q = NULL;
	teardown(f);
}

TEST(in_capsule_writes_point_into_the_callers_region)
{
	struct fixture *f = setup(4, 1 << 20, 4096, 64 << 10, 1000, false);
	uint64_t base = (uint64_t)(uintptr_t)f->mr.addr;
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 10, 8, &f->mr, 512, cb, f), 0);   /* 4 KiB: in-capsule */
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 20, 16, &f->mr, 8192, cb, f), 0); /* 8 KiB: keyed */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 30, 1, &f->mr, 0, cb, f), 0);     /* reads: keyed */
	drain(f, 3);
	CHECK_EQ(f->rec.nsge[0], 2);
	CHECK_EQ(f->rec.sqe[0][39], NVME_SGL_TYPE_DATA_OFFSET);
	CHECK_EQ(get_le64(f->rec.sqe[0] + 24), 0);          /* offset 0 in the capsule (ICDOFF 0) */
	CHECK_EQ(get_le32(f->rec.sqe[0] + 32), 4096);
	CHECK_EQ(f->rec.sge[0][1].addr, base + 512);        /* no copy: the caller's bytes */
	CHECK_EQ(f->rec.sge[0][1].length, 4096);
	CHECK_EQ(f->rec.sge[0][1].lkey, 0x11);
	CHECK_EQ(f->rec.nsge[1], 1);
	CHECK_EQ(f->rec.sqe[1][39], NVME_SGL_TYPE_KEYED_DATA);
	CHECK_EQ(sgl_addr(f->rec.sqe[1]), base + 8192);
	CHECK_EQ(f->rec.nsge[2], 1);
	CHECK_EQ(f->rec.sqe[2][39], NVME_SGL_TYPE_KEYED_DATA);
	struct nvmeof_queue_stats st;
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.in_capsule, 1);
	teardown(f);
}

TEST(queue_full_and_one_doorbell_per_batch)
{
	struct fixture *f = setup(4, 1 << 20, 0, 64 << 10, 1000, true);
	struct nvmeof_queue_stats st;
	for (int i = 0; i < 4; i++)
		CHECK_EQ(nvmeof_read(f->q, &f->ns, (uint64_t)i * 8, 8, &f->mr, (size_t)i * 4096, cb, f), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 64, 8, &f->mr, 0, cb, f), NVMEOF_EQFULL);
	CHECK_EQ(f->rec.n, 0); /* nothing on the wire before the commit */
	CHECK_EQ(nvmeof_queue_commit(f->q), 0);
	CHECK_EQ(f->rec.n, 4);
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.doorbells, 1);
	drain(f, 4);
	CHECK_EQ(f->calls, 4);
	teardown(f);
}

TEST(split_request_waiting_for_slots_makes_new_submissions_wait)
{
	/* 4 slots, 4 KiB per command: A takes one slot, B (8 chunks) the
	 * other three and waits for more. A's callback runs with a slot free
	 * and B still waiting: its new request must not overtake B. */
	struct fixture *f = setup(4, 4096, 0, 64 << 10, 1000, false);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 100, 1, &f->mr, 0, cb, f), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 64, &f->mr, 0, cb, f), 0);
	CHECK_EQ(f->rec.n, 4);
	f->resubmit = 1;
	f->resubmit_rc = 12345;
	CHECK_EQ(fw_inject(f->fw, f->rec.held[0]), 0); /* A's answer */
	nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->resubmit_rc, NVMEOF_EQFULL);
	CHECK_EQ(f->rec.n, 5);
	CHECK_EQ(get_le64(f->rec.sqe[4] + 40), 24); /* B's fourth chunk took the slot */
	teardown(f);
}

TEST(stale_send_completion_after_loss_finishes_nothing_twice)
{
	/* The response arrives before the send completion; the connection
	 * breaks while that send completion still sits in the CQ. */
	struct fixture *f = setup(2, 1 << 20, 0, 8192, 1000, false);
	f->rec.action = FW_RESP_FIRST;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	CHECK_EQ(nvmeof_queue_poll(f->q, 1), 0); /* the response only */
	fw_break(f->fw);
	nvmeof_queue_poll(f->q, 0);
	nvmeof_queue_poll(f->q, 0);
	nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, 0); /* its answer had come: drained, not failed */
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	teardown(f);
}

/* A transport that knows why the connection ended (NVMe/TCP: the
 * controller's C2HTermReq and its Fatal Error Status) has it said in the
 * message the failed commands' owners read. */
TEST(a_lost_connection_fails_with_the_transports_reason)
{
	struct fixture *f = setup(4, 1 << 20, 0, 4096, 30000, false);
	f->rec.hold = 1; /* no answer: the read is out when the connection ends */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	nvmeof_queue_poll(f->q, 0);
	fw_break_why(f->fw, "the controller ended the connection: C2HTermReq, PDU Sequence Error (FEI 0)");
	for (int i = 0; i < 8 && !f->calls; i++)
		nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ECLOSED);
	CHECK(strstr(nvmeof_errmsg(), "lost its connection") != NULL);
	CHECK(strstr(nvmeof_errmsg(), "C2HTermReq, PDU Sequence Error") != NULL);
	teardown(f);
}

/* A synchronous call that gives up on a command still on the wire (here a
 * Keep Alive past its timeout) returns only once the connection is down:
 * an answer, or data, can no longer arrive for it. */
TEST(a_sync_call_that_gives_up_returns_with_the_connection_down)
{
	struct fixture *f = setup(4, 1 << 20, 0, 4096, 30000, false);
	struct nvmeof_queue_stats st;
	uint8_t sqe[64];
	nvme_sqe_keep_alive(sqe, 0);
	f->rec.hold = 1;
	CHECK_EQ(q_exec(f->q, sqe, 0, 50, NULL), NVMEOF_ETIMEDOUT);
	CHECK(fw_closed(f->fw)); /* was: the slot kept waiting on a live QP */
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.timeouts, 1);
	f->rec.hold = 0;
	CHECK_EQ(q_exec(f->q, sqe, 0, 1000, NULL), NVMEOF_ECLOSED);
	CHECK(strstr(nvmeof_errmsg(), "failed") != NULL);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), NVMEOF_ECLOSED);
	CHECK_EQ(f->calls, 0);
	teardown(f);
}

TEST(failed_sync_call_leaves_no_callback_into_its_stack)
{
	/* A (async) holds one of two slots; sync read B of 2 chunks gets the
	 * other. When B's first chunk goes out, A's answer is delivered and the
	 * next post (B's second chunk) fails. B's first chunk stays out: the
	 * call must not return while it can still be answered. Under ASan
	 * (detect_stack_use_after_return) a late answer would write into the
	 * returned frame. */
	struct fixture *f = setup(2, 4096, 0, 16384, 200, true);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 100, 1, &f->mr, 0, cb, f), 0);
	CHECK_EQ(nvmeof_queue_commit(f->q), 0);
	f->rec.inject_at = 2;
	int rc = nvmeof_read_sync(f->q, &f->ns, 0, 16, &f->mr, 4096, 0);
	CHECK_EQ(rc, NVMEOF_ETRANSPORT); /* the first failure of the request */
	CHECK_EQ(f->calls, 1);                   /* A completed */
	CHECK(fw_closed(f->fw)); /* B's first chunk timed out: returned with the connection down */
	CHECK_EQ(fw_inject(f->fw, f->rec.held[1]), 0);
	closed_for_good(f, 1);
	teardown(f);
}

/* ibv_post_send can refuse a send while the connection stays up (the fake
 * wire's ENOMEM; the real target cannot make our post fail). A submit that
 * accepted its request returns 0 and its callback runs from the next poll,
 * never inside the submit: it was both, an error return and a callback. */
TEST(refused_post_completes_from_the_next_poll_not_inside_submit)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	fw_fail_next_post(f->fw);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	CHECK_EQ(f->calls, 0);
	CHECK_EQ(nvmeof_queue_inflight(f->q), 1);
	CHECK_EQ(nvmeof_queue_poll(f->q, 0), 1);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ETRANSPORT);
	CHECK(strstr(nvmeof_errmsg(), "ibv_post_send on queue 1") != NULL);
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	/* nothing is left over, and the queue goes on */
	nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 1);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(nvmeof_read(f->q, &f->ns, (uint64_t)i, 1, &f->mr, 0, cb, f), 0);
	drain(f, 5);
	CHECK_EQ(f->calls, 5);
	CHECK_EQ(f->last.err, 0);
	teardown(f);
}

TEST(refused_commit_completes_each_request_once_from_poll)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, true);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 1, 1, &f->mr, 512, cb, f), 0);
	fw_fail_next_post(f->fw);
	CHECK_EQ(nvmeof_queue_commit(f->q), NVMEOF_ETRANSPORT); /* the doorbell's own error */
	CHECK_EQ(f->calls, 0);
	CHECK_EQ(nvmeof_queue_poll(f->q, 0), 2);
	CHECK_EQ(f->calls, 2);
	CHECK_EQ(f->last.err, NVMEOF_ETRANSPORT);
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	CHECK_EQ(f->q->nrefused, 0);
	/* a sync call refused at its doorbell returns the error at once */
	fw_fail_next_post(f->fw);
	CHECK_EQ(nvmeof_read_sync(f->q, &f->ns, 0, 1, &f->mr, 0, 0), NVMEOF_ETRANSPORT);
	CHECK(strstr(nvmeof_errmsg(), "ibv_post_send") != NULL);
	nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 2);
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	CHECK_EQ(nvmeof_read_sync(f->q, &f->ns, 0, 1, &f->mr, 0, 0), 0);
	teardown(f);
}

/* Reconnect hooks: their prepare runs on the queue's worker thread. */
static int reopen_only(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	(void)c;
	return q_reopen_wire(q, 0, 0);
}
static const struct q_reconnect_ops fake_reconnect = {.prepare = reopen_only};

static int reopen_smaller_mdts(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	static const uint16_t crdt[3];
	(void)c;
	q_stage_limits(q, 0, 4096, crdt, 0);
	return q_reopen_wire(q, 0, 0);
}
static const struct q_reconnect_ops fake_reconnect_smaller_mdts = {.prepare = reopen_smaller_mdts};

/* Polls until the queue has reconnected once more than when called (a
 * cumulative count would end a second wait at its first poll); returns
 * what the last poll, the one that reconnected, returned. A queue that has
 * not reconnected in 20 s (the fake reconnect is immediate: only a stalled
 * sanitizer run comes near) fails the test. */
static int wait_reconnected(struct fixture *f)
{
	struct nvmeof_queue_stats st;
	int rc = 0;
	nvmeof_queue_stats(f->q, &st);
	uint64_t before = st.reconnects;
	for (int i = 0; i < 20000; i++) {
		rc = nvmeof_queue_poll(f->q, 0);
		nvmeof_queue_stats(f->q, &st);
		if (st.reconnects > before)
			return rc;
		sleep_ms(1);
	}
	fprintf(stderr, "    no reconnect within 20 s\n");
	check_failed_in_test = 1;
	return rc;
}

/* The first post on the new connection is refused. */
static struct fake_wire *refuse_wire;
static int reopen_then_refuse(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	(void)c;
	int rc = q_reopen_wire(q, 0, 0);
	fw_fail_next_post(refuse_wire);
	return rc;
}
static const struct q_reconnect_ops fake_reconnect_then_refuse = {.prepare = reopen_then_refuse};

TEST(refused_post_after_a_reconnect_completes_in_that_poll)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	refuse_wire = f->fw;
	q_set_reconnect(f->q, &fake_reconnect_then_refuse, 1, 10000);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	nvmeof_queue_poll(f->q, 0); /* loss noticed */
	f->rec.hold = 0;
	int rc = wait_reconnected(f);
	struct nvmeof_queue_stats st;
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.reconnects, 1);
	/* the re-issued read was refused: it fails in the poll that sent it,
	 * which reports a completion, not an error with no callback run */
	CHECK_EQ(rc, 1);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ETRANSPORT);
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	teardown(f);
}

/* A synchronous call refused at its doorbell keeps no slot, even when
 * nothing polls before the next call. */
TEST(refused_sync_calls_keep_no_slot)
{
	struct fixture *f = setup(2, 1 << 20, 0, 8192, 30000, false);
	for (int i = 0; i < 3; i++) {
		fw_fail_next_post(f->fw);
		CHECK_EQ(nvmeof_read_sync(f->q, &f->ns, 0, 1, &f->mr, 0, 0), NVMEOF_ETRANSPORT);
	}
	CHECK_EQ(nvmeof_read_sync(f->q, &f->ns, 0, 1, &f->mr, 0, 0), 0);
	CHECK_EQ(nvmeof_read_sync(f->q, &f->ns, 0, 1, &f->mr, 0, 0), 0);
	CHECK_EQ(f->calls, 0);
	CHECK_EQ(f->q->nrefused, 0); /* every refused slot counted off */
	teardown(f);
}

/* The tests of the quiesce hold run on the library's fake clock
 * (nvmeof_clock_fake), from T0: what may go out is asserted at the last
 * millisecond of the hold and at its end, whatever the scheduler does. T0
 * is ahead of the real clock the queue was opened on (its first
 * housekeeping pass is due by then); the fake clock stands still unless
 * step_ms says otherwise. */
static uint64_t T0;
static void fake_clock_from_now(uint32_t step_ms)
{
	nvmeof_clock_fake(0, 0);
	T0 = nvmeof_now_ms() + 1000;
	nvmeof_clock_fake(T0, step_ms);
}

/* Polls (a reconnect's first half runs on a worker thread) until the wire
 * has seen sent commands; whether it did within 5 s. */
static bool polls_until_sent(struct fixture *f, int sent)
{
	for (int i = 0; i < 5000; i++) {
		nvmeof_queue_poll(f->q, 0);
		if (f->rec.n >= sent)
			return true;
		sleep_ms(1);
	}
	return false;
}

/* The connection was lost at lost (the fake clock) with a write in doubt:
 * at lost + quiesce - 1 no reconnect has started and nothing went out,
 * however often the queue is polled; at lost + quiesce the write, the
 * wire's sent-th command, goes. */
static void held_for_the_quiesce_time(struct fixture *f, uint64_t lost, uint32_t quiesce, int sent)
{
	nvmeof_clock_fake(lost + quiesce - 1, 0);
	for (int i = 0; i < 50; i++) {
		nvmeof_queue_poll(f->q, 0);
		sleep_ms(1); /* time for an attempt's worker, had one started */
	}
	CHECK_EQ(f->q->state, Q_WAIT);
	CHECK_EQ(f->rec.n, sent - 1);
	nvmeof_clock_fake(lost + quiesce, 0);
	CHECK(polls_until_sent(f, sent));
	CHECK_EQ(f->rec.sqe[sent - 1][0], NVME_CMD_WRITE);
}

/* A write lost with the connection may still be executing on the
 * controller (NVMe Base 2.1, 9.6): the reconnect that replays it waits
 * the quiesce time from the loss. */
TEST(lost_write_is_replayed_after_the_quiesce_time)
{
	struct fixture *f = setup(4, 1 << 20, 0, 64 << 10, 30000, false);
	q_set_reconnect(f->q, &fake_reconnect, 1, 10000);
	q_set_quiesce(f->q, 200);
	fake_clock_from_now(0);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 4242, 8, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	nvmeof_queue_poll(f->q, 0);                                            /* loss noticed */
	CHECK_EQ(f->q->lost_at_ms, T0);
	int sent_before = f->rec.n;
	/* reconnect_delay is 1 ms: the replay waits for the quiesce time */
	held_for_the_quiesce_time(f, T0, 200, sent_before + 1);
	struct nvmeof_queue_stats st;
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.reconnects, 1);
	CHECK_EQ(f->rec.n, sent_before + 1);
	teardown(f);
}

/* A write that timed out on the wire fails to its caller, but may still
 * execute behind the controller: the caller's next write to the same
 * blocks, submitted from the failed one's callback, must not reach the
 * next connection before the quiesce time from the loss, as a replayed
 * write would not (reconnect_delay is 1 ms). */
TEST(a_timed_out_write_holds_the_next_write_for_the_quiesce_time)
{
	struct fixture *f = setup(4, 1 << 20, 0, 64 << 10, 100, false);
	q_set_reconnect(f->q, &fake_reconnect, 1, 10000);
	q_set_quiesce(f->q, 300);
	fake_clock_from_now(0);
	f->rec.hold = 1;
	f->rewrite = 1;
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 4242, 8, &f->mr, 0, cb, f), 0);
	for (int i = 0; i < 100; i++)
		nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 0); /* the command timeout is on the fake clock */
	nvmeof_clock_fake(T0 + 1000, 0);
	for (int i = 0; i < 1000 && !f->calls; i++)
		nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ETIMEDOUT);
	CHECK(f->last.in_doubt); /* on the wire at the loss: it may still land */
	CHECK_EQ(f->resubmit_rc, 0);
	CHECK_EQ(f->q->lost_at_ms, T0 + 1000); /* the loss is the timeout's */
	held_for_the_quiesce_time(f, T0 + 1000, 300, 2);
	teardown(f);
}

/* A write split in two whose first command was answered with an error
 * (DNR) while the second was still on the wire when the connection went:
 * it fails to its caller with that error, in doubt (the second may still
 * land), and the caller's next write waits the quiesce time too. */
TEST(a_split_write_failed_with_a_command_on_the_wire_holds_the_next_write)
{
	struct fixture *f = setup(4, 4096, 0, 64 << 10, 30000, false);
	q_set_reconnect(f->q, &fake_reconnect, 1, 10000);
	q_set_quiesce(f->q, 300);
	fake_clock_from_now(0);
	f->rec.hold = 1;
	f->rec.fail_at = 1;
	f->rewrite = 1;
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 4242, 16, &f->mr, 0, cb, f), 0);
	CHECK_EQ(f->rec.n, 2);
	f->rec.hold = 0;
	f->rec.fail_at = 0;
	CHECK_EQ(fw_inject(f->fw, f->rec.held[0]), 0); /* the first command's error */
	nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 0); /* the second is still out */
	fw_break(f->fw);
	for (int i = 0; i < 1000 && !f->calls; i++)
		nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ENVME);
	CHECK(f->last.in_doubt);
	CHECK_EQ(f->resubmit_rc, 0);
	CHECK_EQ(f->q->lost_at_ms, T0);
	held_for_the_quiesce_time(f, T0, 300, 3);
	teardown(f);
}

/* A write on the wire at the loss is parked for its replay; the queue is
 * closed before the replay (or its reconnect gives up): the write fails to
 * its caller in doubt, for it may still land behind the old controller. */
TEST(a_parked_write_failed_before_its_replay_is_in_doubt)
{
	struct fixture *f = setup(4, 1 << 20, 0, 64 << 10, 30000, false);
	q_set_reconnect(f->q, &fake_reconnect, 60000, 120000);
	q_set_quiesce(f->q, 300);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 4242, 8, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	for (int i = 0; i < 100; i++)
		nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 0); /* parked: it waits for the reconnect */
	CHECK_EQ(q_close(f->q), 0);
	f->q = NULL;
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ECLOSED);
	CHECK(f->last.in_doubt);
	teardown(f);
}

/* The same for a synchronous write that gave up while on the wire. */
TEST(an_abandoned_sync_write_holds_the_next_write_for_the_quiesce_time)
{
	struct fixture *f = setup(4, 1 << 20, 0, 64 << 10, 30000, false);
	q_set_reconnect(f->q, &fake_reconnect, 1, 10000);
	q_set_quiesce(f->q, 300);
	f->rec.hold = 1;
	/* each read of the clock 1 ms later: the call's 50 ms wait ends */
	fake_clock_from_now(1);
	CHECK_EQ(nvmeof_write_sync(f->q, &f->ns, 4242, 8, &f->mr, 0, 50), NVMEOF_ETIMEDOUT);
	uint64_t lost = f->q->lost_at_ms;
	nvmeof_clock_fake(lost, 0);
	CHECK(lost >= T0 + 50);
	CHECK(fw_closed(f->fw));
	f->rec.hold = 0;
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 4242, 8, &f->mr, 0, cb, f), 0);
	held_for_the_quiesce_time(f, lost, 300, 2);
	drain(f, 1);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, 0);
	teardown(f);
}

TEST(after_reconnect_what_waited_goes_one_at_a_time_in_order)
{
	struct fixture *f = setup(4, 1 << 20, 0, 64 << 10, 30000, false);
	q_set_reconnect(f->q, &fake_reconnect, 1, 10000);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);      /* W1: on the wire */
	fw_break(f->fw);
	nvmeof_queue_poll(f->q, 0);                                            /* loss noticed */
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 0, 8, &f->mr, 4096, cb, f), 0);   /* W2: same LBAs, later */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 8192, cb, f), 0);    /* R3 */
	int sent_before = f->rec.n;
	f->rec.nheld = 0;
	wait_reconnected(f);
	/* W1 again, alone */
	CHECK_EQ(f->rec.n, sent_before + 1);
	CHECK_EQ(f->rec.sqe[sent_before][0], NVME_CMD_WRITE);
	CHECK_EQ(sgl_addr(f->rec.sqe[sent_before]), (uint64_t)(uintptr_t)f->mr.addr);
	for (int k = 0; k < 3; k++) {
		CHECK_EQ(f->rec.nheld, 1);
		uint8_t cqe[16];
		memcpy(cqe, f->rec.held[0], 16);
		f->rec.nheld = 0;
		CHECK_EQ(fw_inject(f->fw, cqe), 0);
		nvmeof_queue_poll(f->q, 0);
		CHECK_EQ(f->calls, k + 1);
	}
	CHECK_EQ(f->rec.n, sent_before + 3);
	CHECK_EQ(sgl_addr(f->rec.sqe[sent_before + 1]), (uint64_t)(uintptr_t)f->mr.addr + 4096); /* W2 */
	CHECK_EQ(f->rec.sqe[sent_before + 2][0], NVME_CMD_READ);                                 /* R3 */
	/* and then back to normal: several in flight at once */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 8, 8, &f->mr, 0, cb, f), 0);
	CHECK_EQ(f->rec.n, sent_before + 5);
	teardown(f);
}

/* The trace hook (nvmeof_ctrl_opts.trace) hears each state change of a
 * reconnect, in order, with times that do not go back; and nothing of the
 * I/O on the live queue before it. */
struct traced {
	char lines[16][96];
	uint64_t t[16];
	int n;
};
static void trace_rec(void *arg, uint16_t qid, uint64_t time_ns, const char *msg)
{
	struct traced *tr = arg;
	if (qid == 1 && tr->n < 16) {
		snprintf(tr->lines[tr->n], sizeof(tr->lines[0]), "%s", msg);
		tr->t[tr->n++] = time_ns;
	}
}

/* An owner's finish that asks for work off the poll (an authentication's
 * DH step): the work blocks until the test, polling, lets it go. */
static struct {
	int calls, released, saw_release, finished;
	pthread_t thread;
} slow;
static int finish_wants_work(struct nvmeof_ctrl *c, struct nvmeof_queue *q, const struct nvmeof_cpl *cpl)
{
	(void)c, (void)q, (void)cpl;
	return Q_RECONNECT_WORK;
}
static int slow_work(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	(void)c, (void)q;
	slow.thread = pthread_self();
	__atomic_add_fetch(&slow.calls, 1, __ATOMIC_RELAXED);
	/* bounded: run in the poll instead, it would end after 10 s unreleased */
	for (int i = 0; i < 10000 && !__atomic_load_n(&slow.released, __ATOMIC_ACQUIRE); i++)
		sleep_ms(1);
	slow.saw_release = __atomic_load_n(&slow.released, __ATOMIC_ACQUIRE);
	__atomic_store_n(&slow.finished, 1, __ATOMIC_RELEASE);
	return 0;
}
static const struct q_reconnect_ops fake_reconnect_slow_work = {
	.prepare = reopen_only, .finish = finish_wants_work, .work = slow_work};

/* The poll hands the owner's work to a worker and goes on returning: the
 * queue goes live only once the work is done, and the work never ran on
 * the polling thread. */
TEST(reconnect_work_runs_off_the_poll)
{
	struct fixture *f = setup(4, 1 << 20, 0, 64 << 10, 30000, false);
	struct nvmeof_queue_stats st;
	memset(&slow, 0, sizeof(slow));
	q_set_reconnect(f->q, &fake_reconnect_slow_work, 1, 30000);
	fw_break(f->fw);
	for (int i = 0; i < 20000 && !__atomic_load_n(&slow.calls, __ATOMIC_RELAXED); i++) {
		nvmeof_queue_poll(f->q, 0);
		sleep_ms(1);
	}
	CHECK_EQ(__atomic_load_n(&slow.calls, __ATOMIC_RELAXED), 1);
	/* the work is under way and waits for us: the poll still returns */
	for (int i = 0; i < 5; i++)
		nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(__atomic_load_n(&slow.finished, __ATOMIC_ACQUIRE), 0);
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.reconnects, 0); /* not live before the work is done */
	__atomic_store_n(&slow.released, 1, __ATOMIC_RELEASE);
	wait_reconnected(f);
	CHECK_EQ(slow.saw_release, 1);
	CHECK(!pthread_equal(slow.thread, pthread_self()));
	CHECK_EQ(slow.calls, 1);
	/* the connection lost while the work runs: the loss waits for it,
	 * then the queue reconnects and serves a read */
	slow.released = slow.finished = 0;
	fw_break(f->fw);
	for (int i = 0; i < 20000 && __atomic_load_n(&slow.calls, __ATOMIC_RELAXED) < 2; i++) {
		nvmeof_queue_poll(f->q, 0);
		sleep_ms(1);
	}
	CHECK_EQ(__atomic_load_n(&slow.calls, __ATOMIC_RELAXED), 2);
	fw_break(f->fw);
	for (int i = 0; i < 5; i++)
		nvmeof_queue_poll(f->q, 0);
	__atomic_store_n(&slow.released, 1, __ATOMIC_RELEASE);
	CHECK_EQ(nvmeof_read_sync(f->q, &f->ns, 0, 1, &f->mr, 0, 0), 0);
	teardown(f);
}

/* What the owner keeps between an attempt's steps (an authentication's
 * keys): finish begins it, the work stages the next command, and that
 * command's answer ends it. An attempt that ends otherwise (the connection
 * lost while the work ran) hands it to abandon, never while work runs. */
static struct {
	int kept, abandoned, abandoned_during_work, running;
} keep;
static int finish_keeps(struct nvmeof_ctrl *c, struct nvmeof_queue *q, const struct nvmeof_cpl *cpl)
{
	(void)c, (void)q;
	if (cpl && keep.kept) { /* the work's command answered: the transaction's end */
		keep.kept = 0;
		return cpl->err ? nvmeof_err(cpl->err, "step failed") : 0;
	}
	keep.kept = 1;
	return Q_RECONNECT_WORK;
}
static int slow_work_stages(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	uint8_t sqe[64];
	__atomic_store_n(&keep.running, 1, __ATOMIC_RELEASE);
	slow_work(c, q);
	__atomic_store_n(&keep.running, 0, __ATOMIC_RELEASE);
	nvme_sqe_keep_alive(sqe, 0);
	q_stage_connect(q, sqe, 0);
	return Q_RECONNECT_MORE;
}
static void abandon_kept(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	(void)c, (void)q;
	if (__atomic_load_n(&keep.running, __ATOMIC_ACQUIRE))
		keep.abandoned_during_work++;
	if (keep.kept)
		keep.abandoned++;
	keep.kept = 0;
}
static const struct q_reconnect_ops fake_reconnect_keeps = {
	.prepare = reopen_only, .finish = finish_keeps, .work = slow_work_stages, .abandon = abandon_kept};

TEST(an_attempt_lost_during_its_work_hands_what_it_kept_to_abandon)
{
	struct fixture *f = setup(4, 1 << 20, 0, 64 << 10, 30000, false);
	memset(&slow, 0, sizeof(slow));
	memset(&keep, 0, sizeof(keep));
	q_set_reconnect(f->q, &fake_reconnect_keeps, 1, 30000);
	fw_break(f->fw);
	for (int i = 0; i < 20000 && !__atomic_load_n(&slow.calls, __ATOMIC_RELAXED); i++) {
		nvmeof_queue_poll(f->q, 0);
		sleep_ms(1);
	}
	CHECK_EQ(__atomic_load_n(&slow.calls, __ATOMIC_RELAXED), 1);
	CHECK_EQ(keep.kept, 1);
	fw_break(f->fw); /* the new connection lost while the work runs */
	for (int i = 0; i < 5; i++)
		nvmeof_queue_poll(f->q, 0);
	__atomic_store_n(&slow.released, 1, __ATOMIC_RELEASE);
	/* the next attempt begins afresh and completes */
	CHECK_EQ(nvmeof_read_sync(f->q, &f->ns, 0, 1, &f->mr, 0, 0), 0);
	CHECK_EQ(keep.abandoned, 1);
	CHECK_EQ(keep.abandoned_during_work, 0);
	CHECK_EQ(keep.kept, 0);
	CHECK_EQ(__atomic_load_n(&slow.calls, __ATOMIC_RELAXED), 2);
	/* a close during an attempt's work hands it over too, after the work */
	__atomic_store_n(&slow.released, 0, __ATOMIC_RELEASE);
	slow.finished = 0;
	fw_break(f->fw);
	for (int i = 0; i < 20000 && __atomic_load_n(&slow.calls, __ATOMIC_RELAXED) < 3; i++) {
		nvmeof_queue_poll(f->q, 0);
		sleep_ms(1);
	}
	CHECK_EQ(keep.kept, 1);
	__atomic_store_n(&slow.released, 1, __ATOMIC_RELEASE);
	CHECK_EQ(q_close(f->q), 0);
	f->q = NULL;
	CHECK_EQ(keep.abandoned, 2);
	CHECK_EQ(keep.abandoned_during_work, 0);
	teardown(f);
}

TEST(trace_hook_hears_each_reconnect_state_and_no_io)
{
	struct fixture *f = setup(4, 1 << 20, 0, 64 << 10, 30000, false);
	struct traced tr = {.n = 0};
	struct nvmeof_ctrl_opts o;
	nvmeof_ctrl_opts_init(&o);
	o.trace = trace_rec;
	o.trace_arg = &tr;
	f->q->copts = &o;
	q_set_reconnect(f->q, &fake_reconnect, 1, 10000);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	drain(f, 1);
	CHECK_EQ(tr.n, 0); /* I/O on a live queue: not a word */
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	wait_reconnected(f);
	static const char *const want[] = {"queue state: lost", "queue state: waiting to reconnect",
					   "queue state: reconnecting: a new connection", "queue state: reconnecting",
					   "queue state: live"};
	int k = 0;
	for (int i = 0; i < tr.n && k < 5; i++)
		if (!strcmp(tr.lines[i], want[k]))
			k++;
	if (k < 5)
		for (int i = 0; i < tr.n; i++)
			fprintf(stderr, "    traced: %s\n", tr.lines[i]);
	CHECK_EQ(k, 5);
	for (int i = 1; i < tr.n; i++)
		CHECK(tr.t[i] >= tr.t[i - 1]);
	/* without a hook the same path calls nothing: the queue reconnects a
	 * second time (wait_reconnected checks), and the old hook hears none of it */
	o.trace = NULL;
	int before = tr.n;
	fw_break(f->fw);
	wait_reconnected(f);
	struct nvmeof_queue_stats st;
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.reconnects, 2);
	CHECK_EQ(tr.n, before);
	f->q->copts = NULL; /* o goes out of scope before teardown's close */
	teardown(f);
}

/* A target that stops answering a command (which the real target cannot be
 * made to do: the fake wire holds its response) must not keep the slot
 * forever: with reconnect configured, the timeout fails that request and
 * starts recovery, as the kernel host's error recovery does; the new
 * connection gives every slot back and re-issues the other request.
 * B is younger than A by 600 ms of the fake clock, of a 1 s timeout:
 * at A's timeout B is 400 ms old, whenever the test polls (it was 600 ms
 * of the real clock, which a loaded machine's scheduler ate into). */
TEST(timeout_with_reconnect_recovers_the_slot)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 1000, false);
	struct nvmeof_queue_stats st;
	uint8_t cqe[16];
	q_set_reconnect(f->q, &fake_reconnect, 1, 10000);
	f->rec.hold = 1;
	fake_clock_from_now(0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0); /* A: never answered */
	for (int i = 0; i < 10; i++)
		nvmeof_queue_poll(f->q, 0); /* A is seen out at T0 */
	nvmeof_clock_fake(T0 + 600, 0);
	for (int i = 0; i < 10; i++)
		nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 0); /* A still in flight */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 8, 8, &f->mr, 4096, cb, f), 0); /* B: younger, in flight */
	f->resubmit = 1; /* A's callback submits C */
	f->resubmit_rc = -1;
	for (int i = 0; i < 10; i++)
		nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 0);
	nvmeof_clock_fake(T0 + 1000, 0);
	for (int i = 0; i < 1000 && !f->calls; i++)
		nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ETIMEDOUT);
	CHECK_EQ(f->resubmit_rc, 0); /* C waits for the new connection */
	f->rec.nheld = 0;
	int sent = f->rec.n;
	nvmeof_clock_fake(T0 + 1001, 0); /* reconnect_delay is 1 ms */
	wait_reconnected(f);
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.timeouts, 1);
	CHECK_EQ(st.reconnects, 1);
	CHECK_EQ(f->calls, 1); /* B and C did not fail; A did not complete twice */
	/* B goes again first, alone, then C; A is not re-sent */
	CHECK_EQ(f->rec.n, sent + 1);
	CHECK_EQ(get_le64(f->rec.sqe[sent] + 40), 8);
	CHECK_EQ(f->rec.nheld, 1);
	memcpy(cqe, f->rec.held[0], 16);
	f->rec.nheld = 0;
	CHECK_EQ(fw_inject(f->fw, cqe), 0);
	nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 2);
	CHECK_EQ(f->last.err, 0);
	CHECK_EQ(f->rec.n, sent + 2);
	CHECK_EQ(get_le64(f->rec.sqe[sent + 1] + 40), 0);
	CHECK_EQ(f->rec.nheld, 1);
	memcpy(cqe, f->rec.held[0], 16);
	f->rec.hold = 0;
	f->rec.nheld = 0;
	CHECK_EQ(fw_inject(f->fw, cqe), 0);
	drain(f, 3);
	CHECK_EQ(f->calls, 3);
	CHECK_EQ(f->last.err, 0);
	/* every slot is free again */
	for (int k = 0; k < 4; k++)
		CHECK_EQ(nvmeof_read(f->q, &f->ns, 16 + 8 * (uint64_t)k, 8, &f->mr, 0, cb, f), 0);
	drain(f, 7);
	CHECK_EQ(f->calls, 7);
	teardown(f);
}

/* A synchronous call that gives up before the command timeout takes the
 * connection down; with reconnect configured the queue comes back and what
 * was submitted meanwhile goes out on the new connection. */
TEST(abandoned_sync_call_recovers_with_reconnect)
{
	struct fixture *f = setup(2, 1 << 20, 0, 8192, 30000, false);
	struct nvmeof_queue_stats st;
	q_set_reconnect(f->q, &fake_reconnect, 1, 10000);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read_sync(f->q, &f->ns, 0, 8, &f->mr, 0, 50), NVMEOF_ETIMEDOUT);
	CHECK(fw_closed(f->fw));
	f->rec.hold = 0;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 16, 8, &f->mr, 0, cb, f), 0); /* waits for the new connection */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 24, 8, &f->mr, 4096, cb, f), 0);
	wait_reconnected(f);
	drain(f, 2);
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.reconnects, 1);
	CHECK_EQ(st.timeouts, 1);
	CHECK_EQ(f->calls, 2); /* nothing of the abandoned call's comes back */
	CHECK_EQ(f->last.err, 0);
	CHECK_EQ(get_le64(f->rec.sqe[f->rec.n - 2] + 40), 16);
	teardown(f);
}

/* ctrl_loss_tmo 0 means the default, also when a reconnect hook re-arms
 * the queue with it after a reconnect (as the controller's does): a second
 * outage in the same run is recovered too (was: given up at once). */
static const struct q_reconnect_ops fake_reconnect_rearm_zero;
static int rearm_zero(struct nvmeof_ctrl *c, struct nvmeof_queue *q, const struct nvmeof_cpl *cpl)
{
	(void)c;
	(void)cpl;
	q_set_reconnect(q, &fake_reconnect_rearm_zero, 1, 0);
	return 0;
}
static const struct q_reconnect_ops fake_reconnect_rearm_zero = {.prepare = reopen_only, .finish = rearm_zero};

TEST(a_second_outage_is_recovered_too)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	struct nvmeof_queue_stats st;
	q_set_reconnect(f->q, &fake_reconnect_rearm_zero, 1, 0);
	for (int outage = 1; outage <= 2; outage++) {
		f->rec.hold = 1;
		CHECK_EQ(nvmeof_read(f->q, &f->ns, (uint64_t)outage, 1, &f->mr, 0, cb, f), 0);
		fw_break(f->fw);
		nvmeof_queue_poll(f->q, 0);
		f->rec.hold = 0;
		for (uint64_t t0 = real_ms(); f->calls < outage && real_ms() - t0 < WORKER_WAIT_MS;) {
			nvmeof_queue_poll(f->q, 0);
			sleep_ms(1);
		}
		CHECK_EQ(f->calls, outage);
		CHECK_EQ(f->last.err, 0);
	}
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.reconnects, 2);
	teardown(f);
}

TEST(after_reconnect_new_limits_apply_to_reissued_commands)
{
	struct fixture *f = setup(8, 1 << 20, 0, 64 << 10, 30000, false);
	q_set_reconnect(f->q, &fake_reconnect_smaller_mdts, 1, 10000);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 32, &f->mr, 0, cb, f), 0); /* 16 KiB, one command */
	CHECK_EQ(f->rec.n, 1);
	fw_break(f->fw);
	nvmeof_queue_poll(f->q, 0);
	f->rec.hold = 0;
	wait_reconnected(f);
	drain(f, 1);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, 0);
	CHECK_EQ(f->rec.n, 5); /* re-issued as four 4 KiB commands */
	for (int i = 1; i < 5; i++) {
		CHECK_EQ(get_le32(f->rec.sqe[i] + 48), 7);
		CHECK_EQ(get_le64(f->rec.sqe[i] + 40), (uint64_t)(i - 1) * 8);
	}
	teardown(f);
}

static int reopen_fails(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	(void)c;
	(void)q;
	return nvmeof_err(NVMEOF_EUNREACHABLE, "the target stays away");
}
static const struct q_reconnect_ops fake_reconnect_fails = {.prepare = reopen_fails};

TEST(after_giving_up_the_closed_connection_is_never_polled)
{
	struct fixture *f = setup(4, 1 << 20, 0, 4096, 30000, false);
	q_set_reconnect(f->q, &fake_reconnect_fails, 1, 30);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	for (uint64_t t0 = real_ms(); !f->calls && real_ms() - t0 < WORKER_WAIT_MS;) {
		nvmeof_queue_poll(f->q, 0);
		sleep_ms(2);
	}
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ECLOSED);
	for (int i = 0; i < 5; i++) /* was: ibv_poll_cq on the destroyed CQ */
		CHECK_EQ(nvmeof_queue_poll(f->q, 0), NVMEOF_ECLOSED);
	CHECK_EQ(fw_polls_after_close(f->fw), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), NVMEOF_ECLOSED);
	teardown(f);
}

TEST(a_failed_unanswered_command_reports_no_stale_status)
{
	struct fixture *f = setup(1, 1 << 20, 0, 4096, 30000, false);
	f->rec.fail_at = 1; /* LBA Out of Range, DNR: the slot keeps that status */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	drain(f, 1);
	CHECK_EQ(f->last.err, NVMEOF_ENVME);
	f->rec.hold = 1; /* the next command in the same slot gets no answer */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	drain(f, 2);
	CHECK_EQ(f->last.err, NVMEOF_ECLOSED);
	CHECK_EQ(f->last.status, 0);
	teardown(f);
}

TEST(a_retry_is_not_sent_once_its_request_failed)
{
	struct q_params p = {.qid = 1, .depth = 2, .cmd_timeout_ms = 30000, .max_xfer = 4096,
			     .wait_mode = NVMEOF_WAIT_POLL, .crdt = {2, 0, 0}};
	struct fixture *f = setup(2, 4096, 0, 8192, 30000, false);
	q_close(f->q);
	fw_reset(f->fw);
	CHECK_EQ(q_open_fake(&p, f->fw, &f->q), 0);
	f->rec.fail_first = 1;
	f->rec.fail_status = 1 << 11 | 0x82; /* chunk 1: retry after CRDT1 (200 ms) */
	f->rec.fail_at = 2;                  /* chunk 2: fails for good (DNR) */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 16, &f->mr, 0, cb, f), 0); /* two 4 KiB commands */
	for (uint64_t t0 = real_ms(); !f->calls && real_ms() - t0 < WORKER_WAIT_MS;) {
		nvmeof_queue_poll(f->q, 0);
		sleep_ms(5);
	}
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ENVME);
	CHECK_EQ(NVMEOF_STATUS_SC(f->last.status), 0x80);
	CHECK_EQ(f->rec.n, 2); /* was: chunk 1 sent again for a request already failed */
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	teardown(f);
}

static int reconnect_attempts;
/* A connect command (a Keep Alive stands in for it) staged for the poll. */
static int reopen_and_connect(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	uint8_t sqe[64];
	(void)c;
	int rc = q_reopen_wire(q, 0, 0);
	if (rc)
		return rc;
	__atomic_add_fetch(&reconnect_attempts, 1, __ATOMIC_RELAXED);
	nvme_sqe_keep_alive(sqe, 0);
	q_stage_connect(q, sqe, 0);
	return 0;
}
static int connect_answer(struct nvmeof_ctrl *c, struct nvmeof_queue *q, const struct nvmeof_cpl *cpl)
{
	(void)c;
	(void)q;
	return cpl->err ? nvmeof_err(cpl->err, "connect failed") : 0;
}
/* the first attempt's connect breaks the wire (break_at) */
static const struct q_reconnect_ops fake_reconnect_lost_during_connect = {.prepare = reopen_and_connect,
									   .finish = connect_answer};

TEST(a_loss_during_the_reconnect_keeps_what_waits)
{
	struct fixture *f = setup(4, 1 << 20, 0, 4096, 30000, false);
	reconnect_attempts = 0;
	q_set_reconnect(f->q, &fake_reconnect_lost_during_connect, 1, 10000);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	nvmeof_queue_poll(f->q, 0);
	f->rec.hold = 0;
	f->rec.break_at = 2; /* command 1 was the read; 2 is the first attempt's connect */
	for (uint64_t t0 = real_ms(); !f->calls && real_ms() - t0 < WORKER_WAIT_MS;) {
		nvmeof_queue_poll(f->q, 0);
		sleep_ms(2);
	}
	CHECK(reconnect_attempts >= 2);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, 0); /* was: failed with the first attempt's loss */
	teardown(f);
}

/* finish may stage more commands on the new connection (an authentication
 * after the Connect): each goes out from the poll, its answer comes back to
 * finish, and the queue is live only when finish says so. */
static int more_steps, more_fail_at;
static int connect_then_more(struct nvmeof_ctrl *c, struct nvmeof_queue *q, const struct nvmeof_cpl *cpl)
{
	uint8_t sqe[64];
	(void)c;
	CHECK(cpl != NULL);
	if (cpl->err)
		return nvmeof_err(cpl->err, "step failed");
	CHECK(!q_connected(q)); /* nothing of the caller's goes out meanwhile */
	int n = ++more_steps;
	if (n == more_fail_at) {
		more_fail_at = 0;
		more_steps = 0;
		return nvmeof_err(NVMEOF_EINVAL, "authentication refused");
	}
	if (n == 3)
		return 0;
	nvme_sqe_keep_alive(sqe, 0);
	q_stage_connect(q, sqe, 0);
	return Q_RECONNECT_MORE;
}
static const struct q_reconnect_ops fake_reconnect_with_steps = {.prepare = reopen_and_connect,
								 .finish = connect_then_more};

TEST(finish_may_stage_more_commands_before_the_queue_is_live)
{
	for (int fail = 0; fail <= 1; fail++) {
		struct fixture *f = setup(4, 1 << 20, 0, 4096, 30000, false);
		struct nvmeof_queue_stats st;
		reconnect_attempts = 0;
		more_steps = 0;
		more_fail_at = fail ? 2 : 0; /* the first attempt's second step fails: a new attempt */
		q_set_reconnect(f->q, &fake_reconnect_with_steps, 1, 10000);
		f->rec.hold = 1;
		CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
		fw_break(f->fw);
		nvmeof_queue_poll(f->q, 0);
		f->rec.hold = 0;
		for (uint64_t t0 = real_ms(); !f->calls && real_ms() - t0 < WORKER_WAIT_MS;) {
			nvmeof_queue_poll(f->q, 0);
			sleep_ms(2);
		}
		nvmeof_queue_stats(f->q, &st);
		CHECK_EQ(more_steps, 3);
		CHECK_EQ(reconnect_attempts, 1 + fail);
		CHECK_EQ(st.reconnects, 1);
		CHECK_EQ(f->calls, 1);
		CHECK_EQ(f->last.err, 0);
		CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
		teardown(f);
	}
}

TEST(receives_are_reposted_before_callbacks_run)
{
	struct fixture *f = setup(4, 1 << 20, 0, 4096, 1000, false);
	f->rec.hold = 1;
	for (int i = 0; i < 4; i++)
		CHECK_EQ(nvmeof_read(f->q, &f->ns, (uint64_t)i, 1, &f->mr, 0, cb, f), 0);
	f->rec.hold = 0;
	f->resubmit = 4; /* each callback submits again, answered at once */
	for (int i = 0; i < 4; i++)
		CHECK_EQ(fw_inject(f->fw, f->rec.held[i]), 0);
	nvmeof_queue_poll(f->q, 0);
	drain(f, 8);
	CHECK_EQ(f->calls, 8);
	CHECK_EQ(fw_rnr_count(f->fw), 0); /* never a command out without a receive for it */
	teardown(f);
}

TEST(short_response_fails_the_connection)
{
	struct fixture *f = setup(2, 1 << 20, 0, 4096, 1000, false);
	struct nvmeof_queue_stats st;
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	CHECK_EQ(fw_inject_len(f->fw, f->rec.held[0], 8), 0);
	nvmeof_queue_poll(f->q, 0);
	nvmeof_queue_poll(f->q, 0);
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.bad_rsps, 1);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ECLOSED);
	teardown(f);
}

/* How long a hybrid wait spins before it sleeps. */
TEST(hybrid_spin_follows_the_completion_gap)
{
	struct q_waiter w = {.mode = NVMEOF_WAIT_HYBRID, .spin_us = 20};
	CHECK_EQ(q_spin_budget(&w, 0), 20);  /* nothing out: spin_us */
	w.gap_us = 100;
	CHECK_EQ(q_spin_budget(&w, 8), 200); /* at depth: two gaps */
	w.gap_us = 700;
	CHECK_EQ(q_spin_budget(&w, 8), 20);  /* far apart at depth: a sleep costs little */
	CHECK_EQ(q_spin_budget(&w, 1), 2800); /* one out (QD1): a wake-up is all latency */
	w.gap_us = 3000;
	CHECK_EQ(q_spin_budget(&w, 1), 20);  /* a long command: sleep */
	/* a pause of a second (start-up) weighs as 4 ms, not 1 s */
	w.gap_us = 500;
	w.last_us = nvmeof_now_us() - 1000000;
	q_waiter_note(&w, 1);
	CHECK(w.gap_us >= 900 && w.gap_us <= 950);
}

/* wait=adaptive's control: a wait whose spin may find work grows the share
 * of the hybrid spin, one whose polls would find none of their own (the
 * process's polling groups outnumber its CPUs) shrinks it; both bounded. */
TEST(adaptive_spin_shrinks_on_nothing_and_grows_on_work)
{
	uint16_t s = Q_SPIN_SCALE_MAX;
	CHECK_EQ(q_spin_adapt(s, true), Q_SPIN_SCALE_MAX); /* never above the hybrid spin */
	CHECK_EQ(q_spin_adapt(s, false), Q_SPIN_SCALE_MAX / 2);
	int n = 0;
	while (s && n < 100)
		s = q_spin_adapt(s, false), n++;
	CHECK_EQ(s, 0);
	CHECK_EQ(n, 5); /* 1024 > 512 > 256 > 128 > 64 > nothing: a few waits */
	CHECK_EQ(q_spin_adapt(0, false), 0);
	/* from nothing it grows back: a sixteenth, then doubling to the whole */
	s = q_spin_adapt(0, true);
	CHECK_EQ(s, Q_SPIN_SCALE_MAX / 16);
	for (n = 0; s < Q_SPIN_SCALE_MAX && n < 100; n++)
		s = q_spin_adapt(s, true);
	CHECK_EQ(s, Q_SPIN_SCALE_MAX);
	CHECK_EQ(n, 4);
	CHECK_EQ(q_spin_adapt(Q_SPIN_SCALE_MAX / 2 + 1, true), Q_SPIN_SCALE_MAX); /* clamped */
	/* crowded: more polling groups than CPUs; 0 CPUs, unknown: never */
	CHECK(!q_spin_crowded(2, 2));
	CHECK(q_spin_crowded(3, 2));
	CHECK(q_spin_crowded(64, 2));
	CHECK(!q_spin_crowded(64, 0));
}

/* A crowded adaptive waiter's spin shrinks wait after wait even while its
 * completions come quickly, and grows back once it is not crowded. */
static int fake_poll_one(void *ctx) { return ++*(int *)ctx % 2 == 0; } /* nothing, then one */
static int fake_arm(void *ctx) { (void)ctx; return 0; }
static int fake_sleep(void *ctx, int ms) { (void)ctx; (void)ms; return 1; }
static bool fake_no(void *ctx) { (void)ctx; return false; }
static uint32_t fake_inflight(void *ctx) { (void)ctx; return 4; }
TEST(adaptive_wait_judges_each_wait)
{
	int calls = 0;
	struct q_waiter w = {.ctx = &calls, .poll = fake_poll_one, .arm = fake_arm, .sleep = fake_sleep,
			     .reconnecting = fake_no, .inflight = fake_inflight, .mode = NVMEOF_WAIT_ADAPTIVE,
			     .spin_us = 1000000};
	/* each wait's first poll finds nothing, its second a completion:
	 * well within the (1 s) hybrid spin, so the share stays whole */
	for (int i = 0; i < 8; i++)
		CHECK_EQ(q_wait(&w, 1, 1000), 1);
	CHECK(w.adapting);
	CHECK_EQ(w.spin_scale, Q_SPIN_SCALE_MAX);
	CHECK_EQ(w.st_empty_polls, 8);
	/* counted among more polling groups than CPUs: each wait shrinks it */
	uint32_t pollers = 2; /* this one and another group, on one CPU */
	w.pollers = &pollers;
	w.ncpus = 1;
	for (int i = 0; i < 8; i++)
		CHECK_EQ(q_wait(&w, 1, 1000), 1);
	CHECK_EQ(w.spin_scale, 0);
	CHECK_EQ(w.spin_scale_min, 0);
	pollers = 1;
	/* alone again: quick completions grow it back */
	for (int i = 0; i < 5; i++)
		CHECK_EQ(q_wait(&w, 1, 1000), 1);
	CHECK_EQ(w.spin_scale, Q_SPIN_SCALE_MAX);
	CHECK_EQ(w.spin_scale_min, 0);
}

/* The library's clock reads, counted through the linker's --wrap (the
 * Makefile links this test with it); the test's own go to the real one. */
static uint64_t clock_reads;
int __real_clock_gettime(clockid_t c, struct timespec *ts);
int __wrap_clock_gettime(clockid_t c, struct timespec *ts);
/* fake_us, when set, is every clock's time on this thread (others', the
 * workers of earlier tests, keep the real one): a fake poll advances it by
 * what it costs, so a wait's end is exact, whatever the machine's load */
static _Thread_local uint64_t fake_us;
int __wrap_clock_gettime(clockid_t c, struct timespec *ts)
{
	__atomic_add_fetch(&clock_reads, 1, __ATOMIC_RELAXED);
	if (fake_us) {
		*ts = (struct timespec){.tv_sec = (time_t)(fake_us / 1000000u), .tv_nsec = (long)(fake_us % 1000000u) * 1000};
		return 0;
	}
	return __real_clock_gettime(c, ts);
}
static uint64_t real_us(void)
{
	struct timespec ts;
	__real_clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
static uint64_t spin_polls, spin_armed_at;
static int fake_poll_none(void *ctx) { (void)ctx; spin_polls++; return 0; }
static int fake_arm_note(void *ctx)
{
	(void)ctx;
	spin_armed_at = real_us();
	return 0;
}
static int fake_sleep_stop(void *ctx, int ms) { (void)ctx; (void)ms; return NVMEOF_ETIMEDOUT; }
static uint32_t fake_none_out(void *ctx) { (void)ctx; return 0; }

/* A spin reads the clock every 16th empty poll, not after each: it still
 * ends when its budget (spin_us) is spent, and a polling wait at its
 * timeout. The margin above the budget, 20 ms, is the shared machine's
 * scheduling; the reads' spacing adds 16 polls, microseconds. */
TEST(a_spin_reads_the_clock_every_16th_empty_poll_and_ends_on_time)
{
	for (int poll_mode = 0; poll_mode < 2; poll_mode++) {
		struct q_waiter w = {.poll = fake_poll_none, .arm = fake_arm_note, .sleep = fake_sleep_stop,
				     .reconnecting = fake_no, .inflight = fake_none_out,
				     .mode = poll_mode ? NVMEOF_WAIT_POLL : NVMEOF_WAIT_HYBRID, .spin_us = 5000};
		spin_polls = spin_armed_at = 0;
		uint64_t reads = __atomic_load_n(&clock_reads, __ATOMIC_RELAXED), t0 = real_us();
		int rc = q_wait(&w, 1, poll_mode ? 5 : 1000);
		uint64_t end = poll_mode ? real_us() : spin_armed_at;
		reads = __atomic_load_n(&clock_reads, __ATOMIC_RELAXED) - reads;
		CHECK_EQ(rc, poll_mode ? 0 : NVMEOF_ETIMEDOUT); /* the spin ended in the (stopping) sleep */
		CHECK(end >= t0 + 5000);
		CHECK(end < t0 + 5000 + 20000);
		CHECK(spin_polls > 1000);
		/* one read in 16 polls, and those after the spin's yields */
		CHECK(reads * 8 < spin_polls);
	}
}

/* Polls that find nothing but cost 50 us each (a large receive, a send of
 * 1 MiB): the clock's reads are spaced by their cost, not 16 polls apart,
 * so the spin ends at most about a poll (+ one poll of the estimate) past
 * its budget, and a polling wait as far past its timeout. On the fake
 * clock, exact: 16 polls apart it ended 650 us late. */
static int fake_poll_slow(void *ctx)
{
	(void)ctx;
	spin_polls++;
	fake_us += 50;
	return 0;
}
static int fake_arm_fake(void *ctx)
{
	(void)ctx;
	spin_armed_at = fake_us;
	return 0;
}
TEST(slow_empty_polls_end_the_spin_within_two_polls_of_its_budget)
{
	for (int poll_mode = 0; poll_mode < 2; poll_mode++)
		for (uint32_t budget = 200; budget <= 5000; budget += 4800) {
			struct q_waiter w = {.poll = fake_poll_slow, .arm = fake_arm_fake, .sleep = fake_sleep_stop,
					     .reconnecting = fake_no, .inflight = fake_none_out,
					     .mode = poll_mode ? NVMEOF_WAIT_POLL : NVMEOF_WAIT_HYBRID, .spin_us = budget};
			uint64_t t0 = fake_us = 1000000;
			spin_polls = spin_armed_at = 0;
			int rc = q_wait(&w, 1, poll_mode ? (int)budget / 100 : 1000); /* 2 and 50 ms */
			uint64_t end = poll_mode ? fake_us : spin_armed_at, want = poll_mode ? budget / 100 * 1000 : budget;
			fake_us = 0;
			CHECK_EQ(rc, poll_mode ? 0 : NVMEOF_ETIMEDOUT);
			CHECK(end >= t0 + want);
			CHECK(end <= t0 + want + 2 * 50);
		}
}

/* A poll may hold data for the caller's next submit (NVMe/TCP's H2CData
 * for an R2T); the controller waits for it. The pauses that do not arm,
 * the spin's yield and the nap while a member reconnects, send it first
 * (the waiter's flush): none may start with data held. */
static _Thread_local int held, flushes, pauses, pauses_held, nap_polls; /* the waiting thread's */
int __real_sched_yield(void);
int __wrap_sched_yield(void);
int __wrap_sched_yield(void)
{
	pauses++;
	pauses_held += held;
	return __real_sched_yield();
}
int __real_nanosleep(const struct timespec *req, struct timespec *rem);
int __wrap_nanosleep(const struct timespec *req, struct timespec *rem);
int __wrap_nanosleep(const struct timespec *req, struct timespec *rem)
{
	pauses++;
	pauses_held += held;
	return fake_us ? 0 : __real_nanosleep(req, rem);
}
static int fake_poll_holds(void *ctx)
{
	(void)ctx;
	fake_us += 50;
	held = 1;
	return ++nap_polls >= 100; /* a completion at the 100th poll */
}
static void fake_flush(void *ctx)
{
	(void)ctx;
	flushes++;
	held = 0;
}
static bool fake_yes(void *ctx) { (void)ctx; return true; }
TEST(no_yield_or_nap_with_data_held)
{
	for (int nap = 0; nap < 2; nap++) {
		struct q_waiter w = {.poll = fake_poll_holds, .arm = fake_arm, .flush = fake_flush, .sleep = fake_sleep_stop,
				     .reconnecting = nap ? fake_yes : fake_no, .inflight = fake_none_out,
				     .mode = nap ? NVMEOF_WAIT_SLEEP : NVMEOF_WAIT_HYBRID, .spin_us = 1000000};
		fake_us = 1000000;
		held = flushes = pauses = pauses_held = nap_polls = 0;
		int rc = q_wait(&w, 1, 5000);
		fake_us = 0;
		CHECK_EQ(rc, 1);
		/* the spin yields at clock reads 300 us apart or more (16
		 * polls, 800 us, here) in its 5 ms; with a member reconnecting
		 * (no step time) a sleeping wait naps after each poll */
		CHECK(pauses >= (nap ? 90 : 4));
		CHECK_EQ(pauses_held, 0);
		CHECK(flushes >= pauses);
	}
}

/* Completions a wait did not reap itself feed the gap too: polled between
 * waits, the caller's own reaping must not leave the average stale. */
TEST(every_poll_that_completes_feeds_the_wait)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	/* a stale average, as after a pause: completions reaped by the
	 * caller's polls, close together, must pull it down */
	f->q->group->waiter.gap_us = 3000;
	f->q->group->waiter.last_us = nvmeof_now_us();
	uint64_t before = f->q->group->waiter.last_us;
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
		drain(f, i + 1);
	}
	CHECK_EQ(f->calls, 3);
	CHECK(f->q->group->waiter.last_us >= before);
	/* three samples of far less than 3000 us: below 3000 * (7/8)^3 + 400 */
	CHECK(f->q->group->waiter.gap_us < 2450);
	teardown(f);
}

TEST(cid_ffff_is_never_used)
{
	/* slot 1023 with generation 63 would make CID FFFFh */
	struct fixture *f = setup(1024, 1 << 20, 0, 4096, 30000, false);
	f->rec.hold = 1;
	for (int round = 0; round < 65; round++) {
		f->rec.nheld = 0;
		for (int i = 0; i < 1024; i++)
			CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
		int k = f->rec.nheld;
		for (int i = 0; i < k; i++)
			fw_inject(f->fw, f->rec.held[i]);
		drain(f, (round + 1) * 1024);
	}
	CHECK_EQ(f->calls, 65 * 1024);
	CHECK_EQ(f->rec.bad_cids, 0);
	teardown(f);
}

TEST(status_without_dnr_is_retried)
{
	struct fixture *f = setup(2, 1 << 20, 0, 4096, 30000, false);
	struct nvmeof_queue_stats st;
	f->rec.fail_first = 2;
	f->rec.fail_status = 0x82; /* Namespace Not Ready, DNR clear */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	drain(f, 1);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, 0);
	CHECK_EQ(f->rec.n, 3);
	CHECK(nvme_sqe_cid(f->rec.sqe[1]) != nvme_sqe_cid(f->rec.sqe[0]));
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.retries, 2);
	/* DNR: no retry */
	f->rec.n = 0;
	f->rec.fail_first = 1;
	f->rec.fail_status = 1 << 14 | 0x82;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	drain(f, 2);
	CHECK_EQ(f->last.err, NVMEOF_ENVME);
	CHECK_EQ(f->rec.n, 1);
	/* always failing: MAX_RETRIES (5) retries, then the status */
	f->rec.n = 0;
	f->rec.fail_first = 100;
	f->rec.fail_status = 0x82;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	drain(f, 3);
	CHECK_EQ(f->calls, 3);
	CHECK_EQ(f->last.err, NVMEOF_ENVME);
	CHECK_EQ(NVMEOF_STATUS_SC(f->last.status), 0x82);
	CHECK_EQ(f->rec.n, 6);
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.retries, 7);
	teardown(f);
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

TEST(retry_waits_the_command_retry_delay)
{
	struct q_params p = {.qid = 1, .depth = 2, .cmd_timeout_ms = 30000, .max_xfer = 1 << 20,
			     .wait_mode = NVMEOF_WAIT_POLL, .crdt = {3, 0, 0}};
	struct fixture *f = setup(2, 1 << 20, 0, 4096, 30000, false);
	q_close(f->q);
	fw_reset(f->fw); /* the old queue's receives are gone with it */
	CHECK_EQ(q_open_fake(&p, f->fw, &f->q), 0);
	f->rec.fail_first = 1;
	f->rec.fail_status = 1 << 11 | 0x82; /* CRD 1: CRDT1 = 300 ms */
	double t0 = mono_s();
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->rec.n, 1); /* not sent again at once */
	for (int i = 0; i < 2000 && !f->calls; i++) { /* until it completes, at most 10 s */
		sleep_ms(5);
		nvmeof_queue_poll(f->q, 0);
	}
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, 0);
	CHECK_EQ(f->rec.n, 2);
	/* a lower bound: the retry waited its delay; a slow machine only adds */
	CHECK(mono_s() - t0 >= 0.29);
	teardown(f);
}

TEST(an_answer_to_a_retry_not_yet_sent_is_dropped)
{
	/* Found by fuzz_queue (with unsignaled sends, since withdrawn): a
	 * response naming the CID a retry will use, arriving while the retry
	 * waits out its delay, marked the slot answered before the retry went
	 * out. It is stale, and the retry completes once, with its own answer. */
	struct q_params p = {.qid = 1, .depth = 2, .cmd_timeout_ms = 30000, .max_xfer = 1 << 20,
			     .wait_mode = NVMEOF_WAIT_POLL, .crdt = {1, 0, 0}};
	struct fixture *f = setup(2, 1 << 20, 0, 4096, 30000, false);
	q_close(f->q);
	fw_reset(f->fw);
	CHECK_EQ(q_open_fake(&p, f->fw, &f->q), 0);
	f->rec.fail_first = 1;
	f->rec.fail_status = 1 << 11 | 0x82; /* CRD 1: CRDT1 = 100 ms */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	nvmeof_queue_poll(f->q, 0);
	uint16_t si = (uint16_t)(nvme_sqe_cid(f->rec.sqe[0]) & SLOT_MASK);
	CHECK_EQ(f->q->slots[si].state, SLOT_RETRY);
	uint8_t forged[16] = {0};
	put_le16(forged + 12, (uint16_t)(f->q->slots[si].gen << SLOT_BITS | si));
	put_le16(forged + 14, (uint16_t)((0x80 << 1) | (1 << 15))); /* LBA Out of Range, DNR */
	uint64_t stale0 = f->q->st.stale_cqes;
	CHECK_EQ(fw_inject(f->fw, forged), 0);
	nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->q->st.stale_cqes, stale0 + 1);
	CHECK_EQ(f->calls, 0);
	for (uint64_t t0 = real_ms(); !f->calls && real_ms() - t0 < WORKER_WAIT_MS;) {
		sleep_ms(5);
		nvmeof_queue_poll(f->q, 0);
	}
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, 0); /* the retry's answer, not the forged error */
	CHECK_EQ(f->rec.n, 2);
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	teardown(f);
}

TEST(cm_connect_asks_no_rdma_read_resources_of_the_target)
{
	struct ibv_device_attr da = {.max_qp_rd_atom = 16, .max_qp_init_rd_atom = 128};
	struct rdma_conn_param p;
	uint8_t priv[32] = {0};
	tr_conn_param(&da, priv, sizeof(priv), &p);
	CHECK_EQ(p.initiator_depth, 0);        /* the host issues no RDMA Reads */
	CHECK_EQ(p.responder_resources, 16);   /* the target's reads of our write data */
	CHECK_EQ(p.private_data_len, 32);
	CHECK_EQ(p.rnr_retry_count, 7);
}

TEST(connection_loss_fails_everything_in_flight)
{
	struct fixture *f = setup(4, 1 << 20, 0, 64 << 10, 1000, false);
	f->rec.hold = 1;
	for (int i = 0; i < 3; i++)
		CHECK_EQ(nvmeof_read(f->q, &f->ns, (uint64_t)i * 8, 8, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	int rc = nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(rc, 3);
	CHECK_EQ(f->calls, 3);
	CHECK_EQ(f->last.err, NVMEOF_ECLOSED);
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), NVMEOF_ECLOSED);
	CHECK_EQ(nvmeof_queue_poll(f->q, 0), NVMEOF_ECLOSED);
	teardown(f);
}

TEST(bad_input_loses_nothing)
{
	struct fixture *f = setup(2, 1 << 20, 0, 4096, 1000, false);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 0, &f->mr, 0, cb, f), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 9, &f->mr, 0, cb, f), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "overrun") != NULL);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 4000, cb, f), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, (size_t)-1, cb, f), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_read(f->q, NULL, 0, 1, &f->mr, 0, cb, f), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 0, 1, NULL, 0, cb, f), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_deallocate(f->q, &f->ns, 0, 8, cb, f), NVMEOF_ENOTSUP);
	CHECK(strstr(nvmeof_errmsg(), "ONCS") != NULL);
	struct nvmeof_ns meta = f->ns;
	meta.ms = 8;
	CHECK_EQ(nvmeof_read(f->q, &meta, 0, 1, &f->mr, 0, cb, f), NVMEOF_ENOTSUP);
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	CHECK_EQ(f->rec.n, 0);
	/* both slots still free */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 1, 1, &f->mr, 512, cb, f), 0);
	drain(f, 2);
	CHECK_EQ(f->calls, 2);
	teardown(f);
}

/* A block larger than the transfer limit is refused up front (was: zero-
 * length commands with NLB 0xFFFF), and the block size a request was
 * bounded with is the one its commands are built with, even if the
 * namespace is reformatted while it waits for slots. */
TEST(blocks_larger_than_mdts_are_refused_and_the_checked_block_size_is_used)
{
	struct fixture *f = setup(1, 4096, 0, 64 << 10, 30000, false);
	struct nvmeof_ns big = f->ns;
	big.lba_size = 8192;
	big.lbads = 13;
	CHECK_EQ(nvmeof_read(f->q, &big, 0, 1, &f->mr, 0, cb, f), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "MDTS") != NULL);
	CHECK_EQ(f->rec.n, 0);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 16, &f->mr, 0, cb, f), 0); /* 8 KiB: two commands, one slot */
	CHECK_EQ(f->rec.n, 1);
	f->ns.lbads = 12; /* reformatted to 4 KiB blocks meanwhile */
	f->ns.lba_size = 4096;
	f->rec.hold = 0;
	CHECK_EQ(fw_inject(f->fw, f->rec.held[0]), 0);
	drain(f, 1);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->rec.n, 2);
	CHECK_EQ(get_le32(f->rec.sqe[1] + 48), 7);        /* 8 blocks of 512 B */
	CHECK_EQ(get_le64(f->rec.sqe[1] + 40), 8);
	CHECK_EQ(sgl_len24(f->rec.sqe[1]), 4096);         /* within the region checked */
	teardown(f);
}

/* The flags reach the SQE: FUA (CDW12 bit 30) on a write and a Write
 * Zeroes, the deallocate hint (bit 25) on a Write Zeroes, nothing else. */
TEST(fua_and_deac_reach_the_wire)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 1000, false);
	q_set_owner(f->q, NULL, NVME_ONCS_WRITE_ZEROES);
	f->ns.dlfeat = NVME_DLFEAT_WZ_DEAC;
	CHECK_EQ(nvmeof_write_ext(f->q, &f->ns, 8, 2, &f->mr, 0, NVMEOF_IO_FUA, cb, f), 0);
	CHECK_EQ(nvmeof_write(f->q, &f->ns, 8, 2, &f->mr, 0, cb, f), 0);
	CHECK_EQ(nvmeof_write_zeroes(f->q, &f->ns, 16, 4, NVMEOF_IO_FUA | NVMEOF_IO_DEAC, cb, f), 0);
	CHECK_EQ(nvmeof_write_ext(f->q, &f->ns, 8, 2, &f->mr, 0, 0x80, cb, f), NVMEOF_EINVAL);
	drain(f, 3);
	CHECK_EQ(f->calls, 3);
	CHECK_EQ(f->last.err, 0);
	CHECK_EQ(f->rec.n, 3);
	CHECK_EQ(f->rec.sqe[0][0], NVME_CMD_WRITE);
	CHECK_EQ(get_le32(f->rec.sqe[0] + 48), NVME_RW_FUA | 1);
	CHECK_EQ(get_le32(f->rec.sqe[1] + 48), 1);
	CHECK_EQ(f->rec.sqe[2][0], NVME_CMD_WRITE_ZEROES);
	CHECK_EQ(get_le32(f->rec.sqe[2] + 48), NVME_RW_FUA | NVME_WZ_DEAC | 3);
	CHECK_EQ(nvmeof_write_zeroes_sync(f->q, &f->ns, 16, 4, 0, 0), 0);
	CHECK_EQ(get_le32(f->rec.sqe[3] + 48), 3);
	teardown(f);
}

/* Two queues in one poll group on the loopback wire: one CQ, each work
 * completion handed to its own queue. */
struct pair {
	struct fake_wire *cqw;
	struct nvmeof_poll_group *g;
	struct fixture *f[2];
};

static void pair_setup(struct pair *pr, const struct q_reconnect_ops *hook)
{
	pr->cqw = fw_new(64, NULL, NULL);
	CHECK_EQ(fw_group_create(pr->cqw, 2, &pr->g), 0);
	for (int i = 0; i < 2; i++) {
		struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
		struct q_params p = {.qid = (uint16_t)(1 + i), .depth = 4, .cmd_timeout_ms = 30000,
				     .max_xfer = 1 << 20, .wait_mode = NVMEOF_WAIT_POLL, .group = pr->g};
		q_close(f->q);
		fw_reset(f->fw);
		CHECK_EQ(q_open_fake(&p, f->fw, &f->q), 0);
		if (hook)
			q_set_reconnect(f->q, hook, 1, 10000);
		pr->f[i] = f;
	}
}

static void pair_teardown(struct pair *pr)
{
	for (int i = 0; i < 2; i++)
		teardown(pr->f[i]);
	CHECK_EQ(nvmeof_poll_group_destroy(pr->g), 0);
	fw_free(pr->cqw);
}

TEST(a_poll_group_on_the_loopback_wire_hands_each_queue_its_completions)
{
	struct pair pr;
	pair_setup(&pr, NULL);
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 2; i++)
			CHECK_EQ(nvmeof_read(pr.f[i]->q, &pr.f[i]->ns, (uint64_t)k, 1, &pr.f[i]->mr, 0, cb, pr.f[i]), 0);
	for (int n = 0; n < 100 && (pr.f[0]->calls < 3 || pr.f[1]->calls < 3); n++)
		CHECK(nvmeof_poll_group_poll(pr.g, 0) >= 0);
	CHECK_EQ(pr.f[0]->calls, 3);
	CHECK_EQ(pr.f[1]->calls, 3);
	CHECK_EQ(pr.f[0]->last.err, 0);
	CHECK_EQ(pr.f[1]->last.err, 0);
	CHECK_EQ(nvmeof_queue_inflight(pr.f[0]->q) + nvmeof_queue_inflight(pr.f[1]->q), 0);
	pair_teardown(&pr);
}

/* One member's lost connection fails that member's requests, not the
 * other's; the group's poll reports no error while a member is healthy. */
TEST(a_members_loss_leaves_the_other_member_running)
{
	struct pair pr;
	pair_setup(&pr, NULL);
	pr.f[0]->rec.hold = 1;
	CHECK_EQ(nvmeof_read(pr.f[0]->q, &pr.f[0]->ns, 0, 1, &pr.f[0]->mr, 0, cb, pr.f[0]), 0);
	fw_break(pr.f[0]->fw);
	CHECK_EQ(nvmeof_read(pr.f[1]->q, &pr.f[1]->ns, 0, 1, &pr.f[1]->mr, 0, cb, pr.f[1]), 0);
	for (int n = 0; n < 100 && (!pr.f[0]->calls || !pr.f[1]->calls); n++)
		CHECK(nvmeof_poll_group_poll(pr.g, 0) >= 0);
	CHECK_EQ(pr.f[0]->calls, 1);
	CHECK_EQ(pr.f[0]->last.err, NVMEOF_ECLOSED);
	CHECK(pr.f[0]->wire_closed_at_cb);
	CHECK_EQ(pr.f[1]->calls, 1);
	CHECK_EQ(pr.f[1]->last.err, 0);
	CHECK_EQ(nvmeof_read(pr.f[1]->q, &pr.f[1]->ns, 1, 1, &pr.f[1]->mr, 0, cb, pr.f[1]), 0);
	for (int n = 0; n < 100 && pr.f[1]->calls < 2; n++)
		CHECK(nvmeof_poll_group_poll(pr.g, 0) >= 0);
	CHECK_EQ(pr.f[1]->calls, 2);
	CHECK_EQ(nvmeof_read(pr.f[0]->q, &pr.f[0]->ns, 0, 1, &pr.f[0]->mr, 0, cb, pr.f[0]), NVMEOF_ECLOSED);
	pair_teardown(&pr);
}

/* Both members lose their connection and come back: each attempt's first
 * half on a worker, each Connect through the group's poll (no attempt
 * polls the group inside another's stack, as they did when an attempt ran
 * its Connect synchronously). */
TEST(group_members_both_reconnect)
{
	struct pair pr;
	reconnect_attempts = 0;
	pair_setup(&pr, &fake_reconnect_lost_during_connect);
	for (int i = 0; i < 2; i++) {
		pr.f[i]->rec.hold = 1;
		CHECK_EQ(nvmeof_read(pr.f[i]->q, &pr.f[i]->ns, 0, 1, &pr.f[i]->mr, 0, cb, pr.f[i]), 0);
		fw_break(pr.f[i]->fw);
	}
	nvmeof_poll_group_poll(pr.g, 0); /* both losses noticed */
	for (int i = 0; i < 2; i++)
		pr.f[i]->rec.hold = 0;
	for (int n = 0; n < 300 && (!pr.f[0]->calls || !pr.f[1]->calls); n++) {
		nvmeof_poll_group_poll(pr.g, 0);
		sleep_ms(1);
	}
	CHECK_EQ(pr.f[0]->calls, 1);
	CHECK_EQ(pr.f[1]->calls, 1);
	CHECK_EQ(pr.f[0]->last.err, 0); /* re-issued on the new connections */
	CHECK_EQ(pr.f[1]->last.err, 0);
	CHECK_EQ(__atomic_load_n(&reconnect_attempts, __ATOMIC_RELAXED), 2);
	for (int i = 0; i < 2; i++) /* the read, its Connect, the read again */
		CHECK_EQ(pr.f[i]->rec.sqe[1][0], NVME_ADMIN_KEEP_ALIVE);
	pair_teardown(&pr);
}

/* Defect 7: an attempt's first half (a new association, the CM steps) may
 * take minutes; a wait of 10 ms must not last as long. The hook takes 2 s
 * (a stand-in for CM timeouts); the wait returns before the hook has. */
static int slow_hook_done;
static int slow_hook_ran_out; /* the attempt ended on its own, not given up */
static int reopen_slowly(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	(void)c;
	/* 2 s of steps, checking between them whether the owner gave up */
	for (int ms = 0; ms < 2000; ms += 10) {
		if (q_reconnect_cancelled(q)) {
			__atomic_store_n(&slow_hook_done, 1, __ATOMIC_RELEASE);
			return nvmeof_err(NVMEOF_ECLOSED, "given up");
		}
		sleep_ms(10);
	}
	int rc = q_reopen_wire(q, 0, 0);
	__atomic_store_n(&slow_hook_ran_out, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&slow_hook_done, 1, __ATOMIC_RELEASE);
	return rc;
}
static const struct q_reconnect_ops slow_reconnect = {.prepare = reopen_slowly};

TEST(a_slow_reconnect_attempt_does_not_hold_a_wait)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	struct nvmeof_queue_stats st;
	slow_hook_done = 0;
	q_set_reconnect(f->q, &slow_reconnect, 1, 60000);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	nvmeof_queue_poll(f->q, 0); /* loss noticed: parked */
	f->rec.hold = 0;
	sleep_ms(5);                /* the attempt is due */
	for (int k = 0; k < 3; k++) {
		CHECK_EQ(nvmeof_queue_wait(f->q, 1, 10), 0);
		CHECK_EQ(__atomic_load_n(&slow_hook_done, __ATOMIC_ACQUIRE), 0); /* was: only after it */
	}
	CHECK_EQ(f->calls, 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 8, 8, &f->mr, 4096, cb, f), 0); /* accepted: waits */
	for (int i = 0; i < 400 && f->calls < 2; i++)
		nvmeof_queue_wait(f->q, 2, 10);
	CHECK_EQ(f->calls, 2); /* both on the new connection */
	CHECK_EQ(f->last.err, 0);
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.reconnects, 1);
	teardown(f);
}

/* Destroyed while an attempt's first half runs: the worker is joined, what
 * waited fails, nothing is left running. */
TEST(destroy_during_a_reconnect_attempt)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	slow_hook_done = 0;
	q_set_reconnect(f->q, &slow_reconnect, 1, 60000);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	nvmeof_queue_poll(f->q, 0);
	sleep_ms(5);
	CHECK_EQ(nvmeof_queue_wait(f->q, 1, 10), 0); /* the worker started */
	CHECK_EQ(f->calls, 0);
	q_close(f->q);
	f->q = NULL;
	CHECK_EQ(__atomic_load_n(&slow_hook_done, __ATOMIC_ACQUIRE), 1);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ECLOSED);
	teardown(f);
}


/* A callback that polls its queue, and in that poll finds the connection
 * lost, releases slots the outer poll has already noted as finished: the
 * outer poll must not finish them again (a double release, and requests
 * re-issued after a reconnect completed with no answer). */
static int nest_calls, nest_done;
static void nest_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct fixture *f = arg;
	f->calls++;
	f->last = *cpl;
	nest_calls++;
	if (!nest_done) {
		nest_done = 1;
		fw_break(f->fw);            /* the target goes away now */
		nvmeof_queue_poll(f->q, 0); /* a callback that polls */
	}
}

TEST(a_poll_inside_a_callback_leaves_the_batchs_other_slots_alone)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	nest_calls = nest_done = 0;
	for (int i = 0; i < 3; i++)
		CHECK_EQ(nvmeof_read(f->q, &f->ns, (uint64_t)i, 1, &f->mr, 0, nest_cb, f), 0);
	nvmeof_queue_poll(f->q, 0);
	CHECK(f->q->nfree_slots <= f->q->depth);
	CHECK_EQ(nest_calls, 3); /* the first succeeded, the other two failed with the loss */
	CHECK_EQ(f->last.err, NVMEOF_ECLOSED);
	teardown(f);
}

/* A poll from a callback counts from its own start; the poll that ran the
 * callback counts every completion of its run (a multipath queue's poll
 * counts the same way). Was: the nested poll zeroed the running poll's
 * count, so a poll whose two reads both completed returned 0, and a wait
 * on them slept to its timeout. */
TEST(a_poll_inside_a_callback_leaves_the_running_polls_count_alone)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 8, 8, &f->mr, 4096, cb, f), 0);
	f->poll_in_cb = true;
	f->poll_rc = -1;
	CHECK_EQ(nvmeof_queue_poll(f->q, 0), 2);
	CHECK_EQ(f->calls, 2);
	CHECK_EQ(f->poll_rc, 0); /* the nested poll found nothing of its own */
	f->poll_in_cb = false;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	CHECK_EQ(nvmeof_queue_wait(f->q, 1, 5000), 1); /* the count starts again at the next poll */
	CHECK_EQ(f->calls, 3);
	teardown(f);
}

TEST(a_poll_inside_a_callback_then_a_reconnect_completes_nothing_unanswered)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	q_set_reconnect(f->q, &fake_reconnect, 1, 10000);
	nest_calls = nest_done = 0;
	for (int i = 0; i < 3; i++)
		CHECK_EQ(nvmeof_read(f->q, &f->ns, (uint64_t)i, 1, &f->mr, 0, nest_cb, f), 0);
	nvmeof_queue_poll(f->q, 0);
	f->rec.hold = 1; /* the re-issued reads get no answer */
	for (int i = 0; i < 100 && nest_calls < 3; i++) {
		nvmeof_queue_poll(f->q, 0);
		sleep_ms(1);
	}
	CHECK_EQ(nest_calls, 1); /* was: 3, two of them never answered */
	f->rec.hold = 0;
	teardown(f);
}

/* The association generation staged by an attempt is the queue's only once
 * its Connect succeeded; a failed Connect leaves the old one, so the next
 * attempt does not re-create an association another queue just made. */
static int stage_gen_prepare(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	static const uint16_t crdt[3];
	uint8_t sqe[64];
	(void)c;
	q_stage_limits(q, 0, 1 << 20, crdt, 7);
	int rc = q_reopen_wire(q, 0, 0);
	nvme_sqe_keep_alive(sqe, 0);
	q_stage_connect(q, sqe, 0);
	return rc;
}
static int refuse_connect(struct nvmeof_ctrl *c, struct nvmeof_queue *q, const struct nvmeof_cpl *cpl)
{
	(void)c;
	(void)q;
	(void)cpl;
	return nvmeof_err(NVMEOF_ENVME, "Connect refused");
}
static const struct q_reconnect_ops refused_connect_ops = {.prepare = stage_gen_prepare, .finish = refuse_connect};

TEST(a_failed_connect_keeps_the_queues_association_generation)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	q_set_reconnect(f->q, &refused_connect_ops, 1000, 60000);
	q_follow_assoc(f->q, NULL, 3); /* joined association 3; no controller's counter to follow */
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 1, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	nvmeof_queue_poll(f->q, 0);
	f->rec.hold = 0;
	for (int i = 0; i < 2000 && !(f->q->state == Q_WAIT && f->rec.n >= 2); i++) {
		nvmeof_queue_poll(f->q, 0);
		sleep_ms(1);
	}
	CHECK_EQ(f->q->state, Q_WAIT);
	CHECK_EQ(q_assoc_gen(f->q), 3); /* was: 7 */
	teardown(f);
}

/* ctrl_loss_tmo holds while an attempt runs: a worker still in its first
 * half when the loss is that old does not keep the parked requests. */
TEST(ctrl_loss_tmo_fails_what_waits_during_a_long_attempt)
{
	struct fixture *f = setup(4, 1 << 20, 0, 8192, 30000, false);
	slow_hook_done = slow_hook_ran_out = 0;
	q_set_reconnect(f->q, &slow_reconnect, 1, 300);
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	fw_break(f->fw);
	nvmeof_queue_poll(f->q, 0);
	f->rec.hold = 0;
	for (int i = 0; i < 200 && !f->calls; i++)
		nvmeof_queue_wait(f->q, 1, 10);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ECLOSED);
	/* before the attempt ended by itself (its worker may have seen the
	 * cancel and stopped since: that is the give-up working) */
	CHECK_EQ(__atomic_load_n(&slow_hook_ran_out, __ATOMIC_ACQUIRE), 0);
	CHECK(strstr(nvmeof_errmsg(), "gave up reconnecting") != NULL);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), NVMEOF_ECLOSED);
	teardown(f); /* joins the worker */
}

TEST(deallocate_sends_one_range)
{
	struct fixture *f = setup(2, 1 << 20, 4096, 4096, 1000, false);
	q_set_owner(f->q, NULL, NVME_ONCS_DSM);
	CHECK_EQ(nvmeof_deallocate(f->q, &f->ns, 0x1234, 100, cb, f), 0);
	drain(f, 1);
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->rec.sqe[0][0], NVME_CMD_DSM);
	CHECK_EQ(get_le32(f->rec.sqe[0] + 44), NVME_DSM_AD);
	CHECK_EQ(f->rec.nsge[0], 2); /* the range travels in-capsule */
	const uint8_t *range = (const uint8_t *)(uintptr_t)f->rec.sge[0][1].addr;
	CHECK_EQ(get_le32(range + 4), 100);
	CHECK_EQ(get_le64(range + 8), 0x1234);
	teardown(f);
}

int main(int argc, char **argv)
{
	static const struct test_case t[] = {
		T(split_above_mdts_more_chunks_than_slots),
		T(error_in_a_chunk_fails_the_request_once_and_stops_issuing),
		T(duplicate_and_stale_completions_are_dropped),
		T(response_before_send_completion),
		T(timeout_without_reconnect_closes_the_connection_before_the_callback),
		T(destroy_refuses_what_its_callbacks_submit), T(destroy_from_its_own_callback_is_refused),
		T(in_capsule_writes_point_into_the_callers_region),
		T(queue_full_and_one_doorbell_per_batch),
		T(connection_loss_fails_everything_in_flight),
		T(bad_input_loses_nothing),
		T(deallocate_sends_one_range),
		T(fua_and_deac_reach_the_wire),
		T(a_poll_group_on_the_loopback_wire_hands_each_queue_its_completions),
		T(a_members_loss_leaves_the_other_member_running),
		T(group_members_both_reconnect), T(a_slow_reconnect_attempt_does_not_hold_a_wait),
		  T(destroy_during_a_reconnect_attempt),
		T(a_poll_inside_a_callback_leaves_the_batchs_other_slots_alone),
		T(a_poll_inside_a_callback_leaves_the_running_polls_count_alone),
		T(a_poll_inside_a_callback_then_a_reconnect_completes_nothing_unanswered),
		T(a_failed_connect_keeps_the_queues_association_generation),
		T(ctrl_loss_tmo_fails_what_waits_during_a_long_attempt),
		T(blocks_larger_than_mdts_are_refused_and_the_checked_block_size_is_used),
		T(split_request_waiting_for_slots_makes_new_submissions_wait),
		T(stale_send_completion_after_loss_finishes_nothing_twice),
		T(a_sync_call_that_gives_up_returns_with_the_connection_down),
		T(a_lost_connection_fails_with_the_transports_reason),
		T(an_answer_to_a_retry_not_yet_sent_is_dropped),
		T(refused_post_completes_from_the_next_poll_not_inside_submit),
		T(refused_commit_completes_each_request_once_from_poll), T(hybrid_spin_follows_the_completion_gap),
		T(adaptive_spin_shrinks_on_nothing_and_grows_on_work), T(adaptive_wait_judges_each_wait),
		T(a_spin_reads_the_clock_every_16th_empty_poll_and_ends_on_time),
		T(slow_empty_polls_end_the_spin_within_two_polls_of_its_budget),
		T(no_yield_or_nap_with_data_held),
		T(every_poll_that_completes_feeds_the_wait),
		T(refused_post_after_a_reconnect_completes_in_that_poll), T(refused_sync_calls_keep_no_slot),
		T(failed_sync_call_leaves_no_callback_into_its_stack),
		T(after_reconnect_what_waited_goes_one_at_a_time_in_order), T(lost_write_is_replayed_after_the_quiesce_time),
		T(a_timed_out_write_holds_the_next_write_for_the_quiesce_time),
		T(an_abandoned_sync_write_holds_the_next_write_for_the_quiesce_time),
		T(a_parked_write_failed_before_its_replay_is_in_doubt),
		T(a_split_write_failed_with_a_command_on_the_wire_holds_the_next_write),
		T(trace_hook_hears_each_reconnect_state_and_no_io),
		T(reconnect_work_runs_off_the_poll),
		T(an_attempt_lost_during_its_work_hands_what_it_kept_to_abandon),
		T(timeout_with_reconnect_recovers_the_slot), T(abandoned_sync_call_recovers_with_reconnect),
		T(a_second_outage_is_recovered_too),
		T(after_reconnect_new_limits_apply_to_reissued_commands),
		T(receives_are_reposted_before_callbacks_run),
		T(a_failed_unanswered_command_reports_no_stale_status),
		T(a_retry_is_not_sent_once_its_request_failed),
		T(a_loss_during_the_reconnect_keeps_what_waits),
		T(finish_may_stage_more_commands_before_the_queue_is_live),
		T(after_giving_up_the_closed_connection_is_never_polled),
		T(short_response_fails_the_connection),
		T(cid_ffff_is_never_used),
		T(status_without_dnr_is_retried),
		T(retry_waits_the_command_retry_delay),
		T(cm_connect_asks_no_rdma_read_resources_of_the_target),
	};
	return run_named_tests("unit-queue", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
