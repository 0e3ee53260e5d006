/*
 * Raw commands (nvmeof_io_raw, nvmeof_admin_raw) against the real target in
 * the test bed: the same bytes as the wrapped calls, the target's statuses
 * by name, and what the library refuses before anything is sent.
 *
 *   target_passthru            run every test
 *   target_passthru TEST...    run the named tests
 * NVMEOF_PT_NQN, NVMEOF_PT_PORT, NVMEOF_PT_NSID point the tests at another
 * subsystem (passthru-spdk.sh: SPDK's target, which implements Compare);
 * NVMEOF_TB_TRTYPE=tcp runs them over the target's NVMe/TCP port.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../unit/check.h"
#include "nvmeof.h"
#include "protocol.h"
#include "tbenv.h"

/* the file-backed namespace of subsystem A: it keeps what is written */
#define NSID ((uint32_t)atoi(getenv("NVMEOF_PT_NSID") ? getenv("NVMEOF_PT_NSID") : "2"))
#define LBA 4096u

static void opts_a(struct nvmeof_ctrl_opts *o)
{
	nvmeof_ctrl_opts_init(o);
	o->traddr = env("NVMEOF_TB_ADDR");
	o->trsvcid = getenv("NVMEOF_PT_PORT") ? getenv("NVMEOF_PT_PORT") : env("NVMEOF_TB_PORT");
	o->subnqn = getenv("NVMEOF_PT_NQN") ? getenv("NVMEOF_PT_NQN") : env("NVMEOF_TB_NQN_A");
	o->cmd_timeout_ms = 10000;
	const char *t = getenv("NVMEOF_TB_TRTYPE");
	if (t && !strcmp(t, "tcp"))
		o->trtype = "tcp";
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i += 8) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		memcpy(p + i, &x, n - i < 8 ? n - i : 8);
	}
}

/* A Read, Write or Compare of nlb blocks at slba, as a caller builds it;
 * CID 0xBEEF, which the library must replace with its own. */
static void rw_sqe(uint8_t *sqe, uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb)
{
	memset(sqe, 0, NVME_SQE_SIZE);
	sqe[0] = opc;
	put_le16(sqe + 2, 0xbeef);
	put_le32(sqe + 4, nsid);
	put_le64(sqe + 40, slba);
	put_le32(sqe + 48, nlb - 1);
}

struct cb_rec {
	int calls;
	struct nvmeof_cpl cpl;
};
static void rec_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct cb_rec *r = arg;
	r->calls++;
	r->cpl = *cpl;
}

struct fixture {
	struct nvmeof_ctrl *c;
	struct nvmeof_queue *q;
	struct nvmeof_mr *mr;
	const struct nvmeof_ns *ns;
};

static int setup(struct fixture *f, uint32_t depth, bool batch)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_queue_opts qo;
	memset(f, 0, sizeof(*f));
	opts_a(&o);
	nvmeof_queue_opts_init(&qo);
	qo.depth = depth;
	qo.batch = batch;
	int rc = nvmeof_ctrl_connect(&o, &f->c);
	if (!rc)
		rc = nvmeof_queue_create(f->c, &qo, &f->q);
	if (!rc)
		rc = nvmeof_mr_alloc(f->c, 64 * 1024, &f->mr);
	if (!rc && !(f->ns = nvmeof_ns_get(f->c, NSID)))
		rc = -1;
	if (rc) {
		fprintf(stderr, "    setup: %s\n", nvmeof_errmsg());
		/* a test that could not set up tested nothing: it fails */
		check_failed_in_test = 1;
	}
	return rc;
}

static void teardown(struct fixture *f)
{
	if (f->mr)
		nvmeof_mr_release(f->mr);
	if (f->q)
		nvmeof_queue_destroy(f->q);
	if (f->c)
		CHECK_EQ(nvmeof_ctrl_close(f->c), 0);
}

/* Raw Write, Read and Flush move the same bytes as the wrapped calls, the
 * completion carries the queue's SQ ID and the library's CID. */
TEST(raw_read_write_flush_match_the_wrapped_calls)
{
	struct fixture f;
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	uint8_t *want = malloc(16384);
	if (setup(&f, 8, false))
		goto out;
	uint8_t *buf = nvmeof_mr_addr(f.mr);
	CHECK_EQ(f.ns->lba_size, LBA);
	/* raw write, wrapped read */
	fill(want, 16384, 1);
	memcpy(buf, want, 16384);
	rw_sqe(sqe, NVME_CMD_WRITE, NSID, 100, 4);
	MUST(nvmeof_io_raw_sync(f.q, sqe, f.mr, 0, 16384, 0, &cpl, 0));
	CHECK_EQ(cpl.err, 0);
	CHECK_EQ(cpl.sqid, nvmeof_queue_qid(f.q));
	CHECK((cpl.cid & 0x3ff) < 8); /* the slot's index: not the caller's 0xBEEF */
	CHECK_EQ(get_le16(sqe + 2), 0xbeef); /* the caller's SQE is left alone */
	memset(buf, 0, 16384);
	MUST(nvmeof_read_sync(f.q, f.ns, 100, 4, f.mr, 16384, 0));
	CHECK(memcmp(buf + 16384, want, 16384) == 0);
	/* wrapped write, raw read (asynchronous) at an offset in the region */
	fill(want, 16384, 2);
	memcpy(buf, want, 16384);
	MUST(nvmeof_write_sync(f.q, f.ns, 200, 4, f.mr, 0, 0));
	memset(buf + 32768, 0, 16384);
	struct cb_rec r = {0};
	rw_sqe(sqe, NVME_CMD_READ, NSID, 200, 4);
	MUST(nvmeof_io_raw(f.q, sqe, f.mr, 32768, 16384, 0, rec_cb, &r));
	while (!r.calls && nvmeof_queue_wait(f.q, 1, 5000) > 0)
		;
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.cpl.err, 0);
	CHECK_EQ(r.cpl.opc, NVME_CMD_READ);
	CHECK_EQ(r.cpl.sqid, nvmeof_queue_qid(f.q));
	CHECK(memcmp(buf + 32768, want, 16384) == 0);
	uint8_t cqe[16];
	nvmeof_cpl_cqe(&r.cpl, cqe);
	CHECK_EQ(get_le16(cqe + 10), nvmeof_queue_qid(f.q));
	CHECK_EQ(get_le16(cqe + 12), r.cpl.cid);
	/* raw flush, no data */
	memset(sqe, 0, sizeof(sqe));
	sqe[0] = NVME_CMD_FLUSH;
	put_le32(sqe + 4, NSID);
	MUST(nvmeof_io_raw_sync(f.q, sqe, NULL, 0, 0, 0, &cpl, 0));
	CHECK_EQ(cpl.err, 0);
	CHECK_EQ(nvmeof_queue_inflight(f.q), 0);
out:
	free(want);
	teardown(&f);
}

/* Identify and Get Features through the admin queue's raw path. */
TEST(raw_identify_and_get_features_match_the_wrapped_calls)
{
	struct fixture f;
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	uint8_t *want = malloc(NVMEOF_IDENTIFY_SIZE);
	if (setup(&f, 8, false))
		goto out;
	uint8_t *buf = nvmeof_mr_addr(f.mr);
	for (int cns = 0; cns <= 1; cns++) {
		uint32_t nsid = cns ? 0 : NSID;
		MUST(nvmeof_identify(f.c, (uint8_t)cns, nsid, want));
		memset(sqe, 0, sizeof(sqe));
		sqe[0] = NVME_ADMIN_IDENTIFY;
		put_le32(sqe + 4, nsid);
		put_le32(sqe + 40, (uint32_t)cns);
		memset(buf, 0xa5, NVMEOF_IDENTIFY_SIZE);
		MUST(nvmeof_admin_raw_sync(f.c, sqe, f.mr, 0, NVMEOF_IDENTIFY_SIZE, 0, &cpl, 0));
		CHECK_EQ(cpl.sqid, 0);
		CHECK(memcmp(buf, want, NVMEOF_IDENTIFY_SIZE) == 0);
	}
	/* Get Features, Number of Queues: what the connect was granted */
	memset(sqe, 0, sizeof(sqe));
	sqe[0] = NVME_ADMIN_GET_FEATURES;
	put_le32(sqe + 40, 0x07);
	MUST(nvmeof_admin_raw_sync(f.c, sqe, NULL, 0, 0, 0, &cpl, 0));
	uint32_t nsq = (cpl.cdw0 & 0xffff) + 1, ncq = (cpl.cdw0 >> 16) + 1;
	uint32_t granted = nsq < ncq ? nsq : ncq;
	if (granted > 64)
		granted = 64; /* the connect asked for 64 (num_io_queues' default) */
	CHECK_EQ(granted, nvmeof_ctrl_info(f.c)->max_io_queues);
	/* an asynchronous admin command completes from nvmeof_admin_poll */
	struct cb_rec r = {0};
	MUST(nvmeof_admin_raw(f.c, sqe, NULL, 0, 0, 0, rec_cb, &r));
	for (int i = 0; i < 5000 && !r.calls; i++) {
		CHECK(nvmeof_admin_poll(f.c, 0) >= 0);
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.cpl.err, 0);
	CHECK_EQ(r.cpl.cdw0, cpl.cdw0);
	/* the CID said at submission is the one the target's answer carries,
	 * on the admin queue and on an I/O queue */
	uint16_t cid = NVMEOF_CID_NONE;
	struct cb_rec ra = {0}, ri = {0};
	MUST(nvmeof_admin_raw_cid(f.c, sqe, NULL, 0, 0, 0, rec_cb, &ra, &cid));
	CHECK(cid != NVMEOF_CID_NONE);
	for (int i = 0; i < 5000 && !ra.calls; i++) {
		CHECK(nvmeof_admin_poll(f.c, 0) >= 0);
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	CHECK_EQ(ra.calls, 1);
	CHECK_EQ(ra.cpl.err, 0);
	CHECK_EQ(ra.cpl.cid, cid);
	memset(sqe, 0, sizeof(sqe));
	sqe[0] = NVME_CMD_FLUSH;
	put_le32(sqe + 4, NSID);
	cid = NVMEOF_CID_NONE;
	MUST(nvmeof_io_raw_cid(f.q, sqe, NULL, 0, 0, 0, rec_cb, &ri, &cid));
	CHECK(cid != NVMEOF_CID_NONE);
	MUST(nvmeof_queue_wait(f.q, 1, 10000));
	CHECK_EQ(ri.calls, 1);
	CHECK_EQ(ri.cpl.err, 0);
	CHECK_EQ(ri.cpl.cid, cid);
out:
	free(want);
	teardown(&f);
}

/* Compare, which the library does not wrap: equal data succeeds, other
 * data fails with Compare Failure. A controller that does not implement
 * Compare (ONCS bit 0 clear: the kernel's nvmet) answers Invalid Command
 * Opcode, named as such: against nvmet only that half runs; the other runs
 * against SPDK's target (tests/target/passthru-spdk.sh). */
TEST(compare_where_implemented_else_invalid_opcode)
{
	struct fixture f;
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	if (setup(&f, 8, false))
		goto out;
	uint8_t *buf = nvmeof_mr_addr(f.mr);
	uint32_t lba = f.ns->lba_size, nlb = 8192 / lba;
	fill(buf, 8192, 3);
	MUST(nvmeof_write_sync(f.q, f.ns, 300, nlb, f.mr, 0, 0));
	rw_sqe(sqe, 0x05, NSID, 300, nlb);
	int rc = nvmeof_io_raw_sync(f.q, sqe, f.mr, 0, 8192, 0, &cpl, 0);
	if (!(nvmeof_ctrl_info(f.c)->oncs & 1)) {
		printf("  the controller does not implement Compare (ONCS 0x%x)\n", nvmeof_ctrl_info(f.c)->oncs);
		CHECK_EQ(rc, NVMEOF_ENVME);
		CHECK_EQ(cpl.status & 0x7ff, 0x001);
		CHECK(strstr(nvmeof_errmsg(), "Invalid Command Opcode") != NULL);
		goto out;
	}
	printf("  Compare is implemented (ONCS 0x%x)\n", nvmeof_ctrl_info(f.c)->oncs);
	CHECK_EQ(rc, 0);
	buf[4097] ^= 0xff;
	rc = nvmeof_io_raw_sync(f.q, sqe, f.mr, 0, 8192, 0, &cpl, 0);
	CHECK_EQ(rc, NVMEOF_ENVME);
	printf("  other data: %s\n", nvmeof_errmsg());
	/* SPDK v25.09 answers a miscompare with Internal Error (its bdev
	 * layer's compare reports a failure, not a miscompare): the name
	 * must then say so; Compare Failure is checked where answered. */
	if (NVMEOF_STATUS_SCT(cpl.status) == 0x2) {
		CHECK_EQ(NVMEOF_STATUS_SC(cpl.status), 0x85);
		CHECK(strstr(nvmeof_errmsg(), "Compare Failure") != NULL);
	} else {
		CHECK(strstr(nvmeof_errmsg(), nvmeof_status_name(cpl.status)) != NULL);
	}
	/* the same data compares equal again: the queue carries on */
	buf[4097] ^= 0xff;
	MUST(nvmeof_io_raw_sync(f.q, sqe, f.mr, 0, 8192, 0, &cpl, 0));
out:
	teardown(&f);
}

/* A vendor-specific opcode the target does not know, on either queue. */
TEST(vendor_opcode_is_answered_invalid_opcode_by_name)
{
	struct fixture f;
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	if (setup(&f, 8, false))
		goto out;
	/* each data direction the opcode's low bits name, with no buffer:
	 * no data moves (over NVMe/TCP: no in-capsule data, no R2T) */
	for (uint8_t opc = 0xc0; opc <= 0xc3; opc++) {
		char want[32];
		memset(sqe, 0, sizeof(sqe));
		sqe[0] = opc;
		put_le32(sqe + 4, NSID);
		CHECK_EQ(nvmeof_io_raw_sync(f.q, sqe, NULL, 0, 0, 0, &cpl, 0), NVMEOF_ENVME);
		CHECK_EQ(cpl.status & 0x7ff, 0x001);
		CHECK(strstr(nvmeof_errmsg(), "Invalid Command Opcode") != NULL);
		snprintf(want, sizeof(want), "opcode 0x%02x", opc);
		CHECK(strstr(nvmeof_errmsg(), want) != NULL);
		CHECK_EQ(nvmeof_queue_inflight(f.q), 0);
	}
	memset(sqe, 0, sizeof(sqe));
	sqe[0] = 0xc0;
	put_le32(sqe + 4, NSID);
	CHECK_EQ(nvmeof_admin_raw_sync(f.c, sqe, NULL, 0, 0, 0, &cpl, 0), NVMEOF_ENVME);
	CHECK(strstr(nvmeof_errmsg(), "Invalid Command Opcode") != NULL);
	/* both queues carry on */
	MUST(nvmeof_read_sync(f.q, f.ns, 0, 1, f.mr, 0, 0));
	MUST(nvmeof_identify(f.c, 1, 0, nvmeof_mr_addr(f.mr)));
out:
	teardown(&f);
}

/* A caller's keyed SGL goes out when it lies in a region registered with
 * this controller, and is refused, with nothing sent, when it does not. */
TEST(caller_sgl_checked_against_the_registered_regions)
{
	struct fixture f;
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	struct nvmeof_queue_stats s0, s1;
	uint8_t *want = malloc(8192);
	static uint8_t unregistered[8192];
	if (setup(&f, 8, false))
		goto out;
	uint8_t *buf = nvmeof_mr_addr(f.mr);
	uint32_t rkey = nvmeof_mr_rkey(f.mr);
	uint64_t base = (uint64_t)(uintptr_t)buf;
	fill(want, 8192, 4);
	memcpy(buf, want, 8192);
	MUST(nvmeof_write_sync(f.q, f.ns, 400, 2, f.mr, 0, 0));
	/* inside the region: read into its bytes 16 KiB to 24 KiB */
	rw_sqe(sqe, NVME_CMD_READ, NSID, 400, 2);
	sqe[1] = 0x40; /* PSDT: SGL */
	memset(buf + 16384, 0, 8192);
	put_le64(sqe + 24, base + 16384);
	put_le64(sqe + 32, 8192 | (uint64_t)rkey << 24 | 0x40ull << 56);
	MUST(nvmeof_io_raw_sync(f.q, sqe, NULL, 0, 0, NVMEOF_RAW_CALLER_SGL, &cpl, 0));
	CHECK(memcmp(buf + 16384, want, 8192) == 0);
	nvmeof_queue_stats(f.q, &s0);
	/* memory not registered at all */
	put_le64(sqe + 24, (uint64_t)(uintptr_t)unregistered);
	CHECK_EQ(nvmeof_io_raw_sync(f.q, sqe, NULL, 0, 0, NVMEOF_RAW_CALLER_SGL, &cpl, 0), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "lies in no region registered with this controller") != NULL);
	/* the region's address with another key */
	put_le64(sqe + 24, base);
	put_le64(sqe + 32, 8192 | (uint64_t)(rkey ^ 0x100) << 24 | 0x40ull << 56);
	CHECK_EQ(nvmeof_io_raw(f.q, sqe, NULL, 0, 0, NVMEOF_RAW_CALLER_SGL, rec_cb, NULL), NVMEOF_EINVAL);
	/* running past the region's end */
	put_le64(sqe + 24, base + 64 * 1024 - 4096);
	put_le64(sqe + 32, 8192 | (uint64_t)rkey << 24 | 0x40ull << 56);
	CHECK_EQ(nvmeof_io_raw(f.q, sqe, NULL, 0, 0, NVMEOF_RAW_CALLER_SGL, rec_cb, NULL), NVMEOF_EINVAL);
	/* not a keyed SGL at all (PRPs) */
	sqe[1] = 0;
	CHECK_EQ(nvmeof_io_raw(f.q, sqe, NULL, 0, 0, NVMEOF_RAW_CALLER_SGL, rec_cb, NULL), NVMEOF_EINVAL);
	/* a region given as well as the caller's SGL, data without a region,
	 * a Fabrics command, a transfer above MDTS */
	CHECK_EQ(nvmeof_io_raw(f.q, sqe, f.mr, 0, 4096, NVMEOF_RAW_CALLER_SGL, rec_cb, NULL), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_io_raw(f.q, sqe, NULL, 0, 4096, 0, rec_cb, NULL), NVMEOF_EINVAL);
	sqe[0] = 0x7f;
	CHECK_EQ(nvmeof_io_raw(f.q, sqe, NULL, 0, 0, 0, rec_cb, NULL), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "Fabrics") != NULL);
	CHECK_EQ(nvmeof_admin_raw(f.c, sqe, NULL, 0, 0, 0, rec_cb, NULL), NVMEOF_EINVAL);
	uint64_t mx = nvmeof_ctrl_info(f.c)->max_xfer;
	if (mx && mx < 64 * 1024) {
		rw_sqe(sqe, NVME_CMD_READ, NSID, 0, (uint32_t)(mx / LBA) + 1);
		CHECK_EQ(nvmeof_io_raw(f.q, sqe, f.mr, 0, (uint32_t)mx + LBA, 0, rec_cb, NULL), NVMEOF_EINVAL);
		CHECK(strstr(nvmeof_errmsg(), "MDTS") != NULL);
	}
	nvmeof_queue_stats(f.q, &s1);
	CHECK_EQ(s1.cmds, s0.cmds); /* nothing was sent */
	CHECK_EQ(nvmeof_queue_inflight(f.q), 0);
out:
	free(want);
	teardown(&f);
}

/* A full queue answers NVMEOF_EQFULL; the commands in it complete. */
TEST(queue_full_returns_eqfull)
{
	struct fixture f;
	uint8_t sqe[NVME_SQE_SIZE];
	struct cb_rec r = {0};
	if (setup(&f, 4, true))
		goto out;
	for (uint32_t i = 0; i < 4; i++) {
		rw_sqe(sqe, NVME_CMD_READ, NSID, i, 1);
		MUST(nvmeof_io_raw(f.q, sqe, f.mr, i * LBA, LBA, 0, rec_cb, &r));
	}
	rw_sqe(sqe, NVME_CMD_READ, NSID, 4, 1);
	CHECK_EQ(nvmeof_io_raw(f.q, sqe, f.mr, 4 * LBA, LBA, 0, rec_cb, &r), NVMEOF_EQFULL);
	CHECK(strstr(nvmeof_errmsg(), "full") != NULL);
	MUST(nvmeof_queue_commit(f.q));
	while (r.calls < 4 && nvmeof_queue_wait(f.q, 1, 5000) > 0)
		;
	CHECK_EQ(r.calls, 4);
	CHECK_EQ(r.cpl.err, 0);
	MUST(nvmeof_io_raw(f.q, sqe, f.mr, 4 * LBA, LBA, 0, rec_cb, &r));
	MUST(nvmeof_queue_commit(f.q));
	while (r.calls < 5 && nvmeof_queue_wait(f.q, 1, 5000) > 0)
		;
	CHECK_EQ(r.calls, 5);
out:
	teardown(&f);
}

/* Over NVMe/TCP nothing revokes a region's address as deregistration
 * revokes an RDMA key: a region with a command in flight, the library's
 * own or the caller's keyed SGL into it, is not released (NVMEOF_EBUSY,
 * the region intact), and is once the command completed. Nothing is
 * polled between the submissions and the refusals, so the commands are
 * certainly in flight. Over RDMA the key's deregistration is the guard. */
TEST(a_region_with_a_command_in_flight_is_not_released_over_tcp)
{
	struct fixture f;
	uint8_t sqe[NVME_SQE_SIZE];
	struct cb_rec r = {0};
	const char *t = getenv("NVMEOF_TB_TRTYPE");
	if (setup(&f, 8, false))
		goto out;
	if (!t || strcmp(t, "tcp")) {
		printf("    (RDMA: deregistration revokes the key; nothing to count)\n");
		goto out;
	}
	uint8_t *buf = nvmeof_mr_addr(f.mr);
	MUST(nvmeof_read(f.q, f.ns, 0, 4, f.mr, 0, rec_cb, &r));
	rw_sqe(sqe, NVME_CMD_READ, NSID, 8, 2);
	sqe[1] = 0x40;
	put_le64(sqe + 24, (uint64_t)(uintptr_t)buf + 32768);
	put_le64(sqe + 32, 8192 | (uint64_t)nvmeof_mr_rkey(f.mr) << 24 | 0x40ull << 56);
	MUST(nvmeof_io_raw(f.q, sqe, NULL, 0, 0, NVMEOF_RAW_CALLER_SGL, rec_cb, &r));
	CHECK_EQ(nvmeof_mr_release(f.mr), NVMEOF_EBUSY);
	CHECK(strstr(nvmeof_errmsg(), "2 commands in flight") != NULL);
	while (r.calls < 1 && nvmeof_queue_wait(f.q, 1, 5000) > 0)
		;
	if (r.calls < 2) {
		/* one still out: still refused, naming one */
		CHECK_EQ(nvmeof_mr_release(f.mr), NVMEOF_EBUSY);
		CHECK(strstr(nvmeof_errmsg(), "1 command in flight") != NULL);
	}
	while (r.calls < 2 && nvmeof_queue_wait(f.q, 1, 5000) > 0)
		;
	CHECK_EQ(r.calls, 2);
	CHECK_EQ(r.cpl.err, 0);
	CHECK_EQ(nvmeof_mr_release(f.mr), 0);
	f.mr = NULL;
out:
	teardown(&f);
}

/* An event loop's wait: after the arm, a completion not yet in makes the
 * descriptor readable (5 s: a generous bound on one read in the guest). */
TEST(queue_fd_wakes_an_event_loop)
{
	struct fixture f;
	uint8_t sqe[NVME_SQE_SIZE];
	int woken = 0;
	if (setup(&f, 8, false))
		goto out;
	int fd = nvmeof_queue_fd(f.q);
	CHECK(fd >= 0);
	for (int i = 0; i < 20; i++) {
		struct cb_rec r = {0};
		rw_sqe(sqe, NVME_CMD_READ, NSID, (uint64_t)i, 1);
		MUST(nvmeof_io_raw(f.q, sqe, f.mr, 0, LBA, 0, rec_cb, &r));
		MUST(nvmeof_queue_arm(f.q));
		CHECK(nvmeof_queue_poll(f.q, 0) >= 0);
		if (!r.calls) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			CHECK_EQ(poll(&p, 1, 5000), 1);
			woken++;
			for (int k = 0; k < 1000 && !r.calls; k++)
				CHECK(nvmeof_queue_poll(f.q, 0) >= 0);
		}
		CHECK_EQ(r.calls, 1);
		CHECK_EQ(r.cpl.err, 0);
	}
	printf("  %d of 20 reads woke the descriptor (the rest were in before the arm's poll)\n", woken);
	/* Armed before the command goes out, its completion must wake the
	 * descriptor: the loop above may have seen every one in before it
	 * waited (in the test bed it usually does). */
	for (int i = 0; i < 3; i++) {
		struct cb_rec r = {0};
		struct pollfd p = {.fd = fd, .events = POLLIN};
		MUST(nvmeof_queue_arm(f.q));
		rw_sqe(sqe, NVME_CMD_READ, NSID, (uint64_t)i, 1);
		MUST(nvmeof_io_raw(f.q, sqe, f.mr, 0, LBA, 0, rec_cb, &r));
		CHECK_EQ(poll(&p, 1, 5000), 1);
		for (int k = 0; k < 1000 && !r.calls; k++)
			CHECK(nvmeof_queue_poll(f.q, 0) >= 0);
		CHECK_EQ(r.calls, 1);
		CHECK_EQ(r.cpl.err, 0);
	}
out:
	teardown(&f);
}

/* What would upset the queue or the library's own work is refused before
 * anything is sent: half of a fused pair, a keyed SGL that asks the target
 * to invalidate the region's key, an Asynchronous Event Request (the
 * event thread's; the command timeout would end the admin queue), a Set
 * Features of the Keep Alive Timer (the keep-alive schedule's). The
 * region, the I/O queue and the admin queue all work afterwards. */
TEST(commands_that_would_upset_the_library_are_refused)
{
	struct fixture f;
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	struct nvmeof_queue_stats s0, s1;
	if (setup(&f, 8, false))
		goto out;
	uint64_t base = (uint64_t)(uintptr_t)nvmeof_mr_addr(f.mr);
	nvmeof_queue_stats(f.q, &s0);
	rw_sqe(sqe, NVME_CMD_READ, NSID, 0, 1);
	sqe[1] = 0x01; /* FUSE 01b: the first of a pair */
	CHECK_EQ(nvmeof_io_raw_sync(f.q, sqe, f.mr, 0, LBA, 0, &cpl, 0), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "fused") != NULL);
	sqe[1] = 0x40;
	put_le64(sqe + 24, base);
	put_le64(sqe + 32, LBA | (uint64_t)nvmeof_mr_rkey(f.mr) << 24 | 0x4full << 56); /* subtype Fh */
	CHECK_EQ(nvmeof_io_raw_sync(f.q, sqe, NULL, 0, 0, NVMEOF_RAW_CALLER_SGL, &cpl, 0), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "subtype 0xf") != NULL);
	nvmeof_queue_stats(f.q, &s1);
	CHECK_EQ(s1.cmds, s0.cmds);
	MUST(nvmeof_read_sync(f.q, f.ns, 0, 1, f.mr, 0, 0));
	memset(sqe, 0, sizeof(sqe));
	sqe[0] = 0x0c; /* Asynchronous Event Request */
	CHECK_EQ(nvmeof_admin_raw_sync(f.c, sqe, NULL, 0, 0, 0, &cpl, 2000), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "Asynchronous Event") != NULL);
	CHECK_EQ(nvmeof_admin_raw(f.c, sqe, NULL, 0, 0, 0, rec_cb, NULL), NVMEOF_EINVAL);
	sqe[0] = 0x09; /* Set Features, Keep Alive Timer 1 s */
	sqe[40] = 0x0f;
	put_le32(sqe + 44, 1000);
	CHECK_EQ(nvmeof_admin_raw_sync(f.c, sqe, NULL, 0, 0, 0, &cpl, 2000), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "Keep Alive Timer") != NULL);
	MUST(nvmeof_identify(f.c, 1, 0, nvmeof_mr_addr(f.mr)));
	CHECK_EQ(nvmeof_ctrl_health(f.c, NULL, 0), 0);
out:
	teardown(&f);
}

/* Raw admin commands submitted without polling fill the admin queue only
 * up to the slots the library keeps for Keep Alive, events and its own
 * commands: a synchronous library call still goes through, and every raw
 * command completes. */
TEST(raw_admin_commands_leave_slots_for_the_library)
{
	struct fixture f;
	uint8_t sqe[NVME_SQE_SIZE] = {0x0a};
	struct cb_rec r = {0};
	int accepted = 0, rc = 0;
	if (setup(&f, 8, false))
		goto out;
	sqe[40] = 0x07; /* Get Features, Number of Queues */
	for (int i = 0; i < 64 && !(rc = nvmeof_admin_raw(f.c, sqe, NULL, 0, 0, 0, rec_cb, &r)); i++)
		accepted++;
	CHECK_EQ(rc, NVMEOF_EQFULL);
	CHECK(strstr(nvmeof_errmsg(), "kept for Keep Alive") != NULL);
	printf("  %d raw admin commands accepted before the queue said full\n", accepted);
	MUST(nvmeof_identify(f.c, 1, 0, nvmeof_mr_addr(f.mr)));
	/* 10 s: a generous bound on answers the target already sent */
	for (time_t t0 = time(NULL); r.calls < accepted && time(NULL) - t0 < 10;)
		CHECK(nvmeof_admin_poll(f.c, 0) >= 0);
	CHECK_EQ(r.calls, accepted);
	CHECK_EQ(r.cpl.err, 0);
	CHECK_EQ(nvmeof_ctrl_health(f.c, NULL, 0), 0);
out:
	teardown(&f);
}

int main(int argc, char **argv)
{
	static const struct test_case all[] = {
		T(raw_read_write_flush_match_the_wrapped_calls),
		T(raw_identify_and_get_features_match_the_wrapped_calls),
		T(compare_where_implemented_else_invalid_opcode),
		T(vendor_opcode_is_answered_invalid_opcode_by_name),
		T(caller_sgl_checked_against_the_registered_regions),
		T(queue_full_returns_eqfull),
		T(a_region_with_a_command_in_flight_is_not_released_over_tcp),
		T(queue_fd_wakes_an_event_loop),
		T(commands_that_would_upset_the_library_are_refused),
		T(raw_admin_commands_leave_slots_for_the_library),
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	check_limit_each_test(); /* each test in a child, ended at its own limit */
	check_after_kill = tb_restore_target;
	return run_named_tests("target-passthru", all, sizeof(all) / sizeof(all[0]), argv ? argc : 0, argv);
}
