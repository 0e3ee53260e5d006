/*
 * Raw commands (nvmeof_io_raw) on the loopback test wire, for what the real
 * target cannot be made to do: leave a command unanswered (the timeout),
 * and show exactly which SQE bytes went out and which CQE bytes came back.
 */
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "fakewire.h"
#include "mem.h"
#include "protocol.h"
#include "qpriv.h"
#include "util.h"

struct rec {
	int n;
	uint8_t sqe[64];          /* the last command sent */
	int hold;                 /* answer nothing */
	uint32_t dw0;             /* put in every answer */
	uint16_t sqhd;
};

static enum fw_action responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge, uint8_t *cqe)
{
	struct rec *r = ctx;
	(void)sge;
	(void)nsge;
	memcpy(r->sqe, sqe, 64);
	r->n++;
	put_le32(cqe, r->dw0);
	put_le16(cqe + 8, r->sqhd);
	return r->hold ? FW_DROP : FW_RESPOND;
}

static int reopen_only(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	(void)c;
	return q_reopen_wire(q, 0, 0);
}
static const struct q_reconnect_ops fake_reconnect = {.prepare = reopen_only};

struct got {
	int calls;
	struct nvmeof_cpl cpl;
};
static void got_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct got *g = arg;
	g->calls++;
	g->cpl = *cpl;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

/* A caller's keyed SGL is checked against the caller's regions only: a
 * library buffer (a log being read) is never one, even at the caller's
 * key. Over NVMe/TCP (no PD) every key is 0, so the address alone would
 * otherwise do. */
TEST(caller_sgl_never_names_a_library_region)
{
	struct mem_ctx mc;
	struct nvmeof_mr *user = NULL, *lib = NULL;
	mem_ctx_init(&mc, NULL, false);
	MUST(mem_alloc(&mc, NULL, 8192, &user));
	MUST(mem_alloc_internal(&mc, NULL, 8192, &lib));
	pthread_mutex_lock(&mc.lock);
	CHECK(mem_find_locked(&mc, (uint64_t)(uintptr_t)user->addr + 4096, 4096, 0) == user);
	CHECK(mem_find_locked(&mc, (uint64_t)(uintptr_t)lib->addr, 4096, 0) == NULL);
	CHECK(mem_find_locked(&mc, (uint64_t)(uintptr_t)lib->addr + 4096, 4096, lib->rkey) == NULL);
	pthread_mutex_unlock(&mc.lock);
	MUST(nvmeof_mr_release(lib));
	MUST(nvmeof_mr_release(user));
out:
	mem_ctx_destroy(&mc);
}

/* A region that a request still holds is not released: EBUSY, the region
 * intact and still found; released once the count is back to 0. */
TEST(a_region_held_by_a_request_is_not_released)
{
	struct mem_ctx mc;
	struct nvmeof_mr *m = NULL;
	mem_ctx_init(&mc, NULL, false);
	MUST(mem_alloc(&mc, NULL, 4096, &m));
	m->inflight = 1;
	CHECK_EQ(nvmeof_mr_release(m), NVMEOF_EBUSY);
	CHECK(strstr(nvmeof_errmsg(), "1 command in flight") != NULL);
	CHECK_EQ(mem_ctx_count(&mc), 1);
	pthread_mutex_lock(&mc.lock);
	CHECK(mem_find_locked(&mc, (uint64_t)(uintptr_t)m->addr, 4096, 0) == m);
	pthread_mutex_unlock(&mc.lock);
	m->inflight = 0;
	MUST(nvmeof_mr_release(m));
	CHECK_EQ(mem_ctx_count(&mc), 0);
out:
	mem_ctx_destroy(&mc);
}

/* The library owns the CID and, given a region, the data pointer; every
 * other byte goes out as the caller wrote it, and the answer's CQE comes
 * back whole. */
TEST(raw_command_goes_out_as_written_but_for_cid_and_dptr)
{
	struct rec rec = {.dw0 = 0x12345678, .sqhd = 7};
	struct fake_wire *fw = fw_new(4, responder, &rec);
	struct q_params p = {.qid = 3, .depth = 4, .cmd_timeout_ms = 30000, .max_xfer = 1 << 20,
			     .wait_mode = NVMEOF_WAIT_POLL};
	struct nvmeof_queue *q = NULL;
	MUST(q_open_fake(&p, fw, &q));
	struct nvmeof_mr mr = {.addr = calloc(1, 8192), .len = 8192, .lkey = 0x11, .rkey = 0xabc};
	uint8_t sqe[64], cqe[16];
	for (int i = 0; i < 64; i++)
		sqe[i] = (uint8_t)(0x80 + i);
	sqe[0] = 0x05;
	sqe[1] = 0xbc; /* PSDT 10b, CDW0 bits 13:10 set, FUSE 00b */
	struct got g = {0};
	MUST(nvmeof_io_raw(q, sqe, &mr, 4096, 512, 0, got_cb, &g));
	for (int i = 0; i < 100 && !g.calls; i++)
		nvmeof_queue_poll(q, 0);
	CHECK_EQ(g.calls, 1);
	CHECK_EQ(rec.n, 1);
	CHECK_EQ(rec.sqe[0], 0x05);
	CHECK_EQ(rec.sqe[1], 0x7c); /* bits 13:8 kept, PSDT: SGL */
	CHECK(nvme_sqe_cid(rec.sqe) != get_le16(sqe + 2));
	CHECK(memcmp(rec.sqe + 4, sqe + 4, 20) == 0);  /* NSID, CDW2-3, MPTR */
	CHECK(memcmp(rec.sqe + 40, sqe + 40, 24) == 0); /* CDW10-15 */
	CHECK_EQ(get_le64(rec.sqe + 24), (uint64_t)(uintptr_t)mr.addr + 4096);
	CHECK_EQ(get_le32(rec.sqe + 32) & 0xffffff, 512);
	CHECK_EQ(get_le32(rec.sqe + 35), 0xabc);
	CHECK_EQ(g.cpl.err, 0);
	CHECK_EQ(g.cpl.cdw0, 0x12345678);
	CHECK_EQ(g.cpl.sqhd, 7);
	CHECK_EQ(g.cpl.sqid, 3);
	CHECK_EQ(g.cpl.cid, nvme_sqe_cid(rec.sqe));
	nvmeof_cpl_cqe(&g.cpl, cqe);
	CHECK_EQ(get_le32(cqe), 0x12345678);
	CHECK_EQ(get_le16(cqe + 8), 7);
	CHECK_EQ(get_le16(cqe + 10), 3);
	CHECK_EQ(get_le16(cqe + 12), nvme_sqe_cid(rec.sqe));
	CHECK_EQ(get_le16(cqe + 14), 0);
	/* no region: a null SGL, whatever the caller left in DPTR */
	MUST(nvmeof_io_raw_sync(q, sqe, NULL, 0, 0, 0, NULL, 0));
	CHECK_EQ(get_le64(rec.sqe + 24), 0);
	CHECK_EQ(get_le32(rec.sqe + 32) & 0xffffff, 0);
	/* above the transfer limit: refused, nothing sent */
	int n = rec.n;
	struct nvmeof_mr big = {.addr = mr.addr, .len = 4u << 20, .lkey = 1, .rkey = 2};
	CHECK_EQ(nvmeof_io_raw(q, sqe, &big, 0, 2u << 20, 0, got_cb, &g), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "split") != NULL);
	CHECK_EQ(rec.n, n);
	/* half of a fused pair: the queue cannot keep the halves together */
	for (uint8_t fuse = 1; fuse <= 3; fuse++) {
		sqe[1] = fuse;
		CHECK_EQ(nvmeof_io_raw(q, sqe, &mr, 0, 512, 0, got_cb, &g), NVMEOF_EINVAL);
		CHECK(strstr(nvmeof_errmsg(), "fused") != NULL);
		CHECK_EQ(nvmeof_io_raw_sync(q, sqe, NULL, 0, 0, 0, NULL, 0), NVMEOF_EINVAL);
	}
	CHECK_EQ(rec.n, n);
	CHECK_EQ(nvmeof_queue_inflight(q), 0);
out:
	q_close(q);
	fw_free(fw);
	free(mr.addr);
}

/* A synchronous raw command the target never answers times out; with
 * reconnect configured the queue comes back and carries the next one. */
TEST(timed_out_raw_sync_call_leaves_the_queue_usable)
{
	struct rec rec = {0};
	struct fake_wire *fw = fw_new(2, responder, &rec);
	struct q_params p = {.qid = 1, .depth = 2, .cmd_timeout_ms = 30000, .max_xfer = 1 << 20,
			     .wait_mode = NVMEOF_WAIT_POLL};
	struct nvmeof_queue *q = NULL;
	struct nvmeof_cpl cpl;
	MUST(q_open_fake(&p, fw, &q));
	q_set_reconnect(q, &fake_reconnect, 1, 10000);
	uint8_t sqe[64] = {0x05};
	/* the loopback wire has no completion channel for an event loop */
	CHECK_EQ(nvmeof_queue_fd(q), NVMEOF_ENOTSUP);
	CHECK_EQ(nvmeof_queue_arm(q), NVMEOF_ENOTSUP);
	rec.hold = 1;
	CHECK_EQ(nvmeof_io_raw_sync(q, sqe, NULL, 0, 0, 0, &cpl, 50), NVMEOF_ETIMEDOUT);
	CHECK(strstr(nvmeof_errmsg(), "opcode 0x05") != NULL);
	CHECK(fw_closed(fw));
	rec.hold = 0;
	struct got g = {0};
	MUST(nvmeof_io_raw(q, sqe, NULL, 0, 0, 0, got_cb, &g)); /* waits for the new connection */
	for (int i = 0; i < 200 && !g.calls; i++) {
		sleep_ms(1);
		nvmeof_queue_poll(q, 0);
	}
	CHECK_EQ(g.calls, 1);
	CHECK_EQ(g.cpl.err, 0);
	MUST(nvmeof_io_raw_sync(q, sqe, NULL, 0, 0, 0, &cpl, 5000));
	CHECK_EQ(nvmeof_queue_inflight(q), 0);
out:
	q_close(q);
	fw_free(fw);
}

/* A raw command the connection loss caught on the wire fails instead of
 * going again on the new connection: the library cannot know whether the
 * target ran it, nor whether running it twice is harmless. One submitted
 * during the outage, never sent, goes on the new connection. */
TEST(raw_command_on_the_wire_at_a_loss_is_not_sent_again)
{
	struct rec rec = {.hold = 1};
	struct fake_wire *fw = fw_new(4, responder, &rec);
	struct q_params p = {.qid = 1, .depth = 4, .cmd_timeout_ms = 30000, .max_xfer = 1 << 20,
			     .wait_mode = NVMEOF_WAIT_POLL};
	struct nvmeof_queue *q = NULL;
	MUST(q_open_fake(&p, fw, &q));
	q_set_reconnect(q, &fake_reconnect, 1, 10000);
	uint8_t sqe[64] = {0x01}; /* a Write: whether it ran is unknown after the loss */
	put_le32(sqe + 4, 1);
	struct got g = {0}, g2 = {0};
	MUST(nvmeof_io_raw(q, sqe, NULL, 0, 0, 0, got_cb, &g));
	CHECK_EQ(rec.n, 1);
	rec.hold = 0;
	fw_break(fw);
	for (int i = 0; i < 100 && !g.calls; i++)
		nvmeof_queue_poll(q, 0);
	CHECK_EQ(g.calls, 1);
	CHECK_EQ(g.cpl.err, NVMEOF_ECLOSED);
	CHECK(strstr(nvmeof_errmsg(), "not sent again") != NULL);
	MUST(nvmeof_io_raw(q, sqe, NULL, 0, 0, 0, got_cb, &g2)); /* waits for the new connection */
	for (int i = 0; i < 2000 && !g2.calls; i++) {
		sleep_ms(1);
		nvmeof_queue_poll(q, 0);
	}
	CHECK_EQ(g2.calls, 1);
	CHECK_EQ(g2.cpl.err, 0);
	CHECK_EQ(rec.n, 2); /* the second command only: the first was not re-sent */
	CHECK_EQ(g.calls, 1);
	CHECK_EQ(nvmeof_queue_inflight(q), 0);
out:
	q_close(q);
	fw_free(fw);
}

/* A raw Abort of an admin command names one of the caller's raw admin
 * commands in flight, never a CID the library owns or that is not out:
 * refused before anything is sent. An Abort of an I/O queue's command is
 * the caller's business. */
TEST(raw_abort_names_only_the_callers_admin_commands)
{
	struct rec rec = {.hold = 1};
	struct fake_wire *fw = fw_new(16, responder, &rec);
	struct q_params p = {.qid = 0, .depth = 16, .cmd_timeout_ms = 30000, .max_xfer = 1 << 20,
			     .wait_mode = NVMEOF_WAIT_POLL};
	struct nvmeof_queue *q = NULL;
	MUST(q_open_fake(&p, fw, &q));
	uint8_t vs[64] = {0xc0}; /* vendor specific: held unanswered */
	uint16_t cid = NVMEOF_CID_NONE;
	struct got g = {0}, ga = {0};
	MUST(nvmeof_io_raw_cid(q, vs, NULL, 0, 0, 0, got_cb, &g, &cid));
	CHECK(cid != NVMEOF_CID_NONE);
	CHECK_EQ(rec.n, 1);
	uint8_t ab[64] = {NVME_ADMIN_ABORT};
	put_le16(ab + 40, 0);                 /* SQID: the admin queue */
	put_le16(ab + 42, (uint16_t)(cid + 1)); /* a CID no caller command has */
	CHECK_EQ(nvmeof_io_raw(q, ab, NULL, 0, 0, 0, got_cb, &ga), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "not a raw admin command of the caller in flight") != NULL);
	put_le16(ab + 42, NVMEOF_CID_NONE);
	CHECK_EQ(nvmeof_io_raw(q, ab, NULL, 0, 0, 0, got_cb, &ga), NVMEOF_EINVAL);
	CHECK_EQ(rec.n, 1); /* nothing was sent */
	rec.hold = 0;
	put_le16(ab + 42, cid);               /* the caller's own: goes out */
	MUST(nvmeof_io_raw(q, ab, NULL, 0, 0, 0, got_cb, &ga));
	CHECK_EQ(rec.n, 2);
	put_le16(ab + 40, 3);                 /* an I/O queue's command: the caller's */
	put_le16(ab + 42, 0x77);
	MUST(nvmeof_io_raw(q, ab, NULL, 0, 0, 0, got_cb, &ga));
	CHECK_EQ(rec.n, 3);
out:
	q_close(q);
	fw_free(fw);
}

/* nvmeof_io_raw_cid says at submission the CID the command goes out with,
 * the one its completion then carries: a caller can track its commands by
 * CID before they complete. One waiting for its queue to reconnect has
 * none yet. */
TEST(raw_command_cid_is_known_at_submission)
{
	struct rec rec = {0};
	struct fake_wire *fw = fw_new(4, responder, &rec);
	struct q_params p = {.qid = 2, .depth = 4, .cmd_timeout_ms = 30000, .max_xfer = 1 << 20,
			     .wait_mode = NVMEOF_WAIT_POLL};
	struct nvmeof_queue *q = NULL;
	MUST(q_open_fake(&p, fw, &q));
	/* a long delay: the queue stays reconnecting once broken */
	q_set_reconnect(q, &fake_reconnect, 60000, 120000);
	uint8_t sqe[64] = {0x00}; /* Flush */
	put_le32(sqe + 4, 1);
	struct got g[3] = {{0}};
	uint16_t cid[3];
	uint16_t seen[3];
	for (int i = 0; i < 3; i++) {
		MUST(nvmeof_io_raw_cid(q, sqe, NULL, 0, 0, 0, got_cb, &g[i], &cid[i]));
		CHECK_EQ(rec.n, i + 1);
		seen[i] = nvme_sqe_cid(rec.sqe);
		CHECK_EQ(cid[i], seen[i]);
		CHECK(cid[i] != NVMEOF_CID_NONE);
		CHECK(i == 0 || cid[i] != cid[i - 1]);
	}
	CHECK(cid[0] != cid[2]);
	for (int i = 0; i < 100 && g[2].calls == 0; i++)
		nvmeof_queue_poll(q, 0);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(g[i].calls, 1);
		CHECK_EQ(g[i].cpl.err, 0);
		CHECK_EQ(g[i].cpl.cid, cid[i]);
	}
	/* a slot used again goes out with a new generation: another CID */
	uint16_t again;
	struct got g2 = {0};
	MUST(nvmeof_io_raw_cid(q, sqe, NULL, 0, 0, 0, got_cb, &g2, &again));
	CHECK_EQ(again, nvme_sqe_cid(rec.sqe));
	CHECK(again != cid[0] && again != cid[1] && again != cid[2]);
	for (int i = 0; i < 100 && !g2.calls; i++)
		nvmeof_queue_poll(q, 0);
	CHECK_EQ(g2.cpl.cid, again);
	/* refused: no CID, whatever the variable held */
	sqe[1] = 1; /* half of a fused pair */
	again = 0x1234;
	CHECK_EQ(nvmeof_io_raw_cid(q, sqe, NULL, 0, 0, 0, got_cb, &g2, &again), NVMEOF_EINVAL);
	CHECK_EQ(again, NVMEOF_CID_NONE);
	sqe[1] = 0;
	/* accepted while the queue reconnects: it waits, with no CID yet */
	int n = rec.n;
	fw_break(fw);
	for (int i = 0; i < 100 && !fw_closed(fw); i++)
		nvmeof_queue_poll(q, 0);
	CHECK(fw_closed(fw));
	struct got gw = {0};
	again = 0x1234;
	MUST(nvmeof_io_raw_cid(q, sqe, NULL, 0, 0, 0, got_cb, &gw, &again));
	CHECK_EQ(again, NVMEOF_CID_NONE);
	CHECK_EQ(rec.n, n);
	CHECK_EQ(gw.calls, 0);
out:
	q_close(q);
	fw_free(fw);
}

int main(int argc, char **argv)
{
	static const struct test_case all[] = {
		T(caller_sgl_never_names_a_library_region),
		T(a_region_held_by_a_request_is_not_released),
		T(raw_command_goes_out_as_written_but_for_cid_and_dptr),
		T(raw_abort_names_only_the_callers_admin_commands),
		T(timed_out_raw_sync_call_leaves_the_queue_usable),
		T(raw_command_on_the_wire_at_a_loss_is_not_sent_again),
		T(raw_command_cid_is_known_at_submission),
	};
	return run_named_tests("unit-passthru", all, sizeof(all) / sizeof(all[0]), argc, argv);
}
