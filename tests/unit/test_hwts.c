/*
 * NIC completion timestamps (hw_timestamps): the arithmetic, and what a
 * queue reports when its completions carry the NIC's clock, on the loopback
 * test wire, which stamps them as a timestamping HCA would (fw_clock). No
 * device here has completion timestamps: the hardware path (ibv_create_cq_ex,
 * ibv_wc_read_completion_ts) is not exercised.
 */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "fakewire.h"
#include "hwts.h"
#include "mem.h"
#include "protocol.h"
#include "qpriv.h"

TEST(ticks_to_ns)
{
	CHECK_EQ(hwts_ns(1234, 1000000), 1234);      /* 1 GHz: a tick is a ns */
	CHECK_EQ(hwts_ns(1000, 156250), 6400);       /* 156.25 MHz: 6.4 ns a tick */
	CHECK_EQ(hwts_ns(7, 0), 0);                  /* no clock: nothing */
	/* no overflow where ticks * 1e6 would not fit 64 bits: 2^60 ticks at 1 GHz */
	CHECK_EQ(hwts_ns(1ull << 60, 1000000), 1ull << 60);
	CHECK_EQ(hwts_ns((1ull << 60) + 3, 250000), ((1ull << 60) + 3) * 4);
}

TEST(percentiles_within_a_sixteenth)
{
	struct hwts_hist *h = calloc(1, sizeof(*h));
	CHECK_EQ(hwts_pct(h, 50), 0); /* nothing counted */
	/* 1..1000 ns, once each */
	for (uint64_t v = 1; v <= 1000; v++)
		hwts_add(h, 100, 100 + v, 1000000);
	CHECK_EQ(h->n, 1000);
	struct { double p; uint64_t want; } c[] = {{1, 10}, {10, 100}, {50, 500}, {99, 990}, {100, 1000}};
	for (unsigned int i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint64_t got = hwts_pct(h, c[i].p);
		if (got * 16 < c[i].want * 15 || got * 16 > c[i].want * 17) {
			fprintf(stderr, "    p%g: %llu ns, want %llu within 1/16\n", c[i].p, (unsigned long long)got,
				(unsigned long long)c[i].want);
			CHECK(0);
		}
	}
	CHECK_EQ(hwts_pct(h, 0.1), 1); /* exact below 16 ns */
	/* huge values land in the last bucket, not outside the array */
	hwts_add(h, 0, 1ull << 62, 1000000);
	CHECK_EQ(h->n, 1001);
	CHECK_EQ(h->bucket[HWTS_BUCKETS - 1], 1);
	free(h);
}

static enum fw_action answer(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge, uint8_t *cqe)
{
	(void)ctx, (void)sqe, (void)sge, (void)nsge, (void)cqe;
	return FW_RESPOND;
}

static int done;
static void cb(void *arg, const struct nvmeof_cpl *cpl)
{
	(void)arg;
	if (!cpl->err)
		done++;
}

static struct nvmeof_queue *open_queue(struct fake_wire *fw, uint64_t khz)
{
	struct nvmeof_queue *q = NULL;
	struct q_params p = {.qid = 1, .depth = 8, .cmd_timeout_ms = 1000, .wait_mode = NVMEOF_WAIT_POLL,
			     .hw_khz = khz};
	if (q_open_fake(&p, fw, &q))
		fprintf(stderr, "    q_open_fake: %s\n", nvmeof_errmsg());
	return q;
}

/* 90 commands whose response comes 5 us after the send completion and 10
 * after 80 us, on a 250 MHz clock (4 ns a tick), reported as percentiles. */
/* Responses clocked before their send completion (a late ACK) are left
 * out and counted apart: as 0 they pulled the percentiles down. */
TEST(early_responses_left_out)
{
	struct hwts_hist *h = calloc(1, sizeof(*h));
	for (int i = 0; i < 10; i++)
		hwts_add(h, 100, 1100, 1000000); /* 1000 ns */
	for (int i = 0; i < 10; i++)
		hwts_add(h, 500, 400, 1000000);
	CHECK_EQ(h->early, 10);
	CHECK_EQ(h->n, 10);
	CHECK_EQ(h->bucket[0], 0);
	uint64_t p10 = hwts_pct(h, 10);
	CHECK(p10 * 16 >= 1000 * 15 && p10 * 16 <= 1000 * 17);
	free(h);
}

/* A clock with 16 valid bits wraps at 0xffff: a response at 0x4 after a
 * send completion at 0xfffa is 10 ticks later, not early. */
TEST(timestamps_within_the_mask)
{
	struct hwts_hist *h = calloc(1, sizeof(*h));
	h->mask = 0xffff;
	hwts_add(h, 0xfffa, 0x4, 1000000);
	CHECK_EQ(h->early, 0);
	CHECK_EQ(h->n, 1);
	CHECK_EQ(hwts_pct(h, 100), 10);
	/* bits above the mask are not the clock's */
	hwts_add(h, 0xabc0000 | 0x100, 0x110, 1000000);
	CHECK_EQ(h->n, 2);
	CHECK_EQ(hwts_pct(h, 100), 16);
	hwts_add(h, 0x110, 0x100, 1000000); /* early within the mask too */
	CHECK_EQ(h->early, 1);
	free(h);
}

/* A bucket past 2^32 counts (70 minutes of one latency at 1M IOPS): a
 * 32-bit counter wrapped to 0 and the percentiles moved. */
TEST(buckets_count_past_32_bits)
{
	struct hwts_hist *h = calloc(1, sizeof(*h));
	h->bucket[5] = UINT32_MAX;
	h->n = UINT32_MAX;
	hwts_add(h, 100, 105, 1000000); /* 5 ns: bucket 5 */
	CHECK_EQ(h->bucket[5], 1ull << 32);
	hwts_add(h, 100, 110, 1000000); /* one 10 ns */
	CHECK_EQ(hwts_pct(h, 50), 5);
	free(h);
}

TEST(queue_reports_send_completion_to_response)
{
	struct fake_wire *fw = fw_new(8, answer, NULL);
	struct nvmeof_queue *q = open_queue(fw, 250000);
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 512, .lbads = 9, .nsze = 1 << 20};
	static char buf[4096];
	struct nvmeof_mr mr = {.addr = buf, .len = sizeof(buf), .lkey = 1, .rkey = 2};
	double pct[] = {50, 90, 99};
	uint64_t ns_out[3] = {0}, n = 0;
	CHECK(q != NULL);
	if (!q)
		goto out;
	done = 0;
	for (int i = 0; i < 100; i++) {
		uint64_t t0 = 1000000 + (uint64_t)i * 100000, dt = i < 90 ? 1250 : 20000; /* ticks */
		fw_clock(fw, t0, t0 + dt);
		MUST(nvmeof_read(q, &ns, 0, 1, &mr, 0, cb, NULL));
		MUST(nvmeof_queue_poll(q, 0));
	}
	/* and 20 whose response the NIC clocked before the send completion:
	 * left out of the percentiles (as 0 they would make p10 0), counted */
	for (int i = 0; i < 20; i++) {
		uint64_t t0 = 50000000 + (uint64_t)i * 100000;
		fw_clock(fw, t0 + 100, t0);
		MUST(nvmeof_read(q, &ns, 0, 1, &mr, 0, cb, NULL));
		MUST(nvmeof_queue_poll(q, 0));
	}
	CHECK_EQ(done, 120);
	uint64_t early = 0, p10 = 0;
	MUST(nvmeof_queue_hw_early(q, &early));
	CHECK_EQ(early, 20);
	MUST(nvmeof_queue_hw_latency(q, (double[]){10}, 1, &p10, NULL));
	CHECK(p10 * 16 >= 5000 * 15 && p10 * 16 <= 5000 * 17);
	MUST(nvmeof_queue_hw_latency(q, pct, 3, ns_out, &n));
	CHECK_EQ(n, 100);
	CHECK(ns_out[0] * 16 >= 5000 * 15 && ns_out[0] * 16 <= 5000 * 17);
	CHECK(ns_out[1] * 16 >= 5000 * 15 && ns_out[1] * 16 <= 5000 * 17);
	CHECK(ns_out[2] * 16 >= 80000 * 15 && ns_out[2] * 16 <= 80000 * 17);
	if (check_failed_in_test)
		fprintf(stderr, "    p50 %llu p90 %llu p99 %llu ns\n", (unsigned long long)ns_out[0],
			(unsigned long long)ns_out[1], (unsigned long long)ns_out[2]);
out:
	q_close(q);
	fw_free(fw);
}

/* Percentiles outside 0 to 100, or NaN, are refused before any is used
 * (a NaN or negative one was undefined behaviour in the conversion). */
TEST(percentiles_outside_0_to_100_refused)
{
	struct fake_wire *fw = fw_new(8, answer, NULL);
	struct nvmeof_queue *q = open_queue(fw, 250000);
	double bad[] = {-1, 100.5, NAN, -INFINITY, INFINITY}, ok[] = {0, 100};
	uint64_t v[2] = {7, 7};
	CHECK(q != NULL);
	if (q) {
		for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			double p[2] = {50, bad[i]};
			CHECK_EQ(nvmeof_queue_hw_latency(q, p, 2, v, NULL), (unsigned long long)NVMEOF_EINVAL);
			CHECK(strstr(nvmeof_errmsg(), "is not within 0 to 100") != NULL);
		}
		CHECK_EQ(v[0], 7); /* nothing written */
		CHECK_EQ(nvmeof_queue_hw_latency(q, ok, 2, v, NULL), 0);
		CHECK_EQ(v[0], 0); /* nothing counted yet */
	}
	q_close(q);
	fw_free(fw);
}

TEST(without_timestamps_the_queue_says_so)
{
	struct fake_wire *fw = fw_new(8, answer, NULL);
	struct nvmeof_queue *q = open_queue(fw, 0);
	double pct = 50;
	uint64_t v;
	CHECK(q != NULL);
	if (q) {
		CHECK_EQ(nvmeof_queue_hw_latency(q, &pct, 1, &v, NULL), (unsigned long long)NVMEOF_ENOTSUP);
		CHECK(strstr(nvmeof_errmsg(), "hw_timestamps is off") != NULL);
		CHECK_EQ(nvmeof_queue_hw_early(q, &v), (unsigned long long)NVMEOF_ENOTSUP);
	}
	q_close(q);
	fw_free(fw);
}

int main(int argc, char **argv)
{
	static const struct test_case t[] = {
		T(ticks_to_ns),
		T(percentiles_within_a_sixteenth),
		T(buckets_count_past_32_bits),
		T(early_responses_left_out),
		T(timestamps_within_the_mask),
		T(queue_reports_send_completion_to_response),
		T(without_timestamps_the_queue_says_so),
		T(percentiles_outside_0_to_100_refused),
	};
	return run_named_tests("unit-hwts", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
