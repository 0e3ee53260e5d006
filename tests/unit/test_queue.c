/*
 * The queue's logic on the loopback test wire (core/fakewire.c): MDTS
 * splitting with more chunks than slots, errors in the middle of a split,
 * stale, duplicate and reordered completions, command timeouts, in-capsule
 * versus keyed SGL, queue full and batching, connection loss. Faults here
 * are ones the real target in the test bed cannot be made to produce.
 */
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "fakewire.h"
#include "mem.h"
#include "protocol.h"

#define MAXREC 512

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
};

static void cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct fixture *f = arg;
	f->calls++;
	f->last = *cpl;
}

static struct fixture *setup(uint32_t depth, uint64_t max_xfer, uint32_t icd_max, size_t buf,
			     uint32_t timeout_ms, bool batch)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct q_params p = {.qid = 1, .depth = depth, .cmd_timeout_ms = timeout_ms, .max_xfer = max_xfer,
			     .icd_max = icd_max, .wait_mode = NVMEOF_WAIT_POLL, .batch = batch};
	f->fw = fw_new(depth, responder, &f->rec);
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
	q_close(f->q);
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

static void sleep_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

TEST(timeout_fails_the_command_and_keeps_its_slot)
{
	struct fixture *f = setup(2, 1 << 20, 0, 8192, 150, false);
	struct nvmeof_queue_stats st;
	f->rec.hold = 1;
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 8, &f->mr, 0, cb, f), 0);
	for (int i = 0; i < 100 && !f->calls; i++) {
		sleep_ms(10);
		nvmeof_queue_poll(f->q, 0);
	}
	CHECK_EQ(f->calls, 1);
	CHECK_EQ(f->last.err, NVMEOF_ETIMEDOUT);
	nvmeof_queue_stats(f->q, &st);
	CHECK_EQ(st.timeouts, 1);
	CHECK_EQ(nvmeof_queue_inflight(f->q), 0);
	/* the target may still write into that buffer: its slot is not reused */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 8, 8, &f->mr, 4096, cb, f), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 16, 8, &f->mr, 4096, cb, f), NVMEOF_EQFULL);
	/* the late response releases it, without completing anything twice */
	CHECK_EQ(fw_inject(f->fw, f->rec.held[0]), 0);
	CHECK_EQ(fw_inject(f->fw, f->rec.held[1]), 0);
	f->rec.hold = 0;
	nvmeof_queue_poll(f->q, 0);
	CHECK_EQ(f->calls, 2);
	CHECK_EQ(f->last.err, 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 16, 8, &f->mr, 0, cb, f), 0);
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 24, 8, &f->mr, 4096, cb, f), 0);
	drain(f, 4);
	CHECK_EQ(f->calls, 4);
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
	/* a split request waiting for slots makes new submissions wait too */
	CHECK_EQ(nvmeof_read(f->q, &f->ns, 0, 16384, &f->mr, 0, cb, f), NVMEOF_EINVAL); /* 8 MiB > region */
	teardown(f);
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

TEST(deallocate_sends_one_range)
{
	struct fixture *f = setup(2, 1 << 20, 4096, 4096, 1000, false);
	q_set_owner(f->q, NULL, true);
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

int main(void)
{
	static const struct test_case t[] = {
		T(split_above_mdts_more_chunks_than_slots),
		T(error_in_a_chunk_fails_the_request_once_and_stops_issuing),
		T(duplicate_and_stale_completions_are_dropped),
		T(response_before_send_completion),
		T(timeout_fails_the_command_and_keeps_its_slot),
		T(in_capsule_writes_point_into_the_callers_region),
		T(queue_full_and_one_doorbell_per_batch),
		T(connection_loss_fails_everything_in_flight),
		T(bad_input_loses_nothing),
		T(deallocate_sends_one_range),
	};
	return run_tests("unit-queue", t, sizeof(t) / sizeof(t[0]));
}
