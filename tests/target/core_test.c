/*
 * libnvmeof against the real target in the test bed (kernel nvmet over
 * Soft-RoCE). Run inside the guest; the target's facts come from the
 * NVMEOF_TB_* variables the test bed exports.
 *
 *   target_core                 run every test
 *   target_core TEST...         run the named tests
 *   target_core load NSID SLBA FILE   write FILE's bytes to the namespace (ours)
 *   target_core dump NSID SLBA BYTES FILE  read into FILE (ours)
 * load and dump let the shell suite cross-check data with the kernel initiator.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "../unit/check.h"
#include "adminio.h"
#include "ctrl.h"
#include "nvmeof.h"
#include "tbenv.h"
#include "protocol.h"
#include "qpriv.h"
#include "queue.h"

/* The transport the tests run over: NVMEOF_TB_TRTYPE=tcp runs them over
 * the target's NVMe/TCP port (the same port number), with both digests
 * where NVMEOF_TB_DIGESTS=1; unset, over RDMA. */
static bool over_tcp(void)
{
	const char *t = getenv("NVMEOF_TB_TRTYPE");
	return t && !strcmp(t, "tcp");
}

static void opts_transport(struct nvmeof_ctrl_opts *o)
{
	if (!over_tcp())
		return;
	const char *d = getenv("NVMEOF_TB_DIGESTS");
	o->trtype = "tcp";
	o->hdr_digest = o->data_digest = d && !strcmp(d, "1");
}

static void opts_a(struct nvmeof_ctrl_opts *o)
{
	nvmeof_ctrl_opts_init(o);
	o->traddr = env("NVMEOF_TB_ADDR");
	o->trsvcid = env("NVMEOF_TB_PORT");
	o->subnqn = env("NVMEOF_TB_NQN_A");
	o->cmd_timeout_ms = 10000;
	opts_transport(o);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}


/* Deterministic bytes that differ per LBA and per run tag. */
static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i += 8) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		memcpy(p + i, &x, n - i < 8 ? n - i : 8);
	}
}

TEST(identify_matches_testbed)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	opts_a(&o);
	MUST(nvmeof_ctrl_connect(&o, &c));
	const struct nvmeof_ctrl_info *i = nvmeof_ctrl_info(c);
	CHECK_STR(i->serial, env("NVMEOF_TB_SERIAL"));
	CHECK_STR(i->model, env("NVMEOF_TB_MODEL"));
	CHECK_STR(i->subnqn, env("NVMEOF_TB_NQN_A"));
	/* nvmet: 1 MiB with 4 KiB pages over RDMA; over TCP no limit (0),
	 * which the library holds to 1 MiB */
	CHECK_EQ(i->mdts, over_tcp() ? 0 : 8);
	CHECK_EQ(i->max_xfer, 1u << 20);
	if (!over_tcp())
		CHECK(i->sgls & (1u << 2));   /* keyed SGL */
	CHECK(i->in_capsule_max >= 4096);     /* nvmet's default inline data size */
	CHECK(i->max_io_queues >= 4);
	CHECK(i->cntlid != 0xffff);
	CHECK_STR(i->hca, over_tcp() ? "tcp" : "rxe0");
	CHECK_EQ(nvmeof_ns_count(c), 2);
	const struct nvmeof_ns *n1 = nvmeof_ns_get(c, 1), *n2 = nvmeof_ns_get(c, 2);
	CHECK(n1 && n2);
	if (n1 && n2) {
		CHECK_EQ(n1->lba_size, strtoul(env("NVMEOF_TB_NS1_LBA"), NULL, 0));
		CHECK_EQ(n2->lba_size, strtoul(env("NVMEOF_TB_NS2_LBA"), NULL, 0));
		CHECK_EQ(n1->nsze * n1->lba_size, strtoull(env("NVMEOF_TB_NS1_BYTES"), NULL, 0));
		CHECK_EQ(n2->nsze * n2->lba_size, strtoull(env("NVMEOF_TB_NS2_BYTES"), NULL, 0));
	}
	CHECK(nvmeof_ns_get(c, 3) == NULL);
	CHECK(strstr(nvmeof_errmsg(), "namespace 3") != NULL);
	printf("    %s %s fw %s cntlid %u mdts %u ioccsz %u in-capsule %u max queues %u on %s\n",
	       i->model, i->serial, i->firmware, i->cntlid, i->mdts, i->ioccsz, i->in_capsule_max,
	       i->max_io_queues, i->hca);
out:
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

/* What needs the HCA is refused over NVMe/TCP, naming why, and digests
 * over RDMA; a TCP controller still works after each refusal. */
TEST(tcp_refuses_what_is_rdmas)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_mr *mr = NULL;
	struct nvmeof_poll_group *g = NULL;
	static uint8_t gpu_like[4096];
	opts_a(&o);
	o.trtype = "tcp";
	o.hw_timestamps = true;
	CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_ENOTSUP);
	CHECK(strstr(nvmeof_errmsg(), "hw_timestamps needs RDMA") != NULL);
	opts_a(&o);
	o.trtype = "rdma";
	o.data_digest = true;
	CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "digests are NVMe/TCP's") != NULL);
	o.trtype = "fc";
	CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "expected rdma or tcp") != NULL);
	opts_a(&o);
	o.trtype = "tcp";
	MUST(nvmeof_ctrl_connect(&o, &c));
	CHECK_EQ(nvmeof_mr_register_cuda(c, gpu_like, sizeof(gpu_like), &mr), NVMEOF_ENOTSUP);
	CHECK(strstr(nvmeof_errmsg(), "GPU buffers need RDMA") != NULL);
	CHECK_EQ(nvmeof_poll_group_create_on(c, 1, 0, &g), NVMEOF_ENOTSUP);
	CHECK(strstr(nvmeof_errmsg(), "completion vector is RDMA's") != NULL);
	MUST(nvmeof_poll_group_create(c, 1, &g));
	CHECK_STR(nvmeof_ctrl_info(c)->hca, "tcp");
out:
	if (g)
		nvmeof_poll_group_destroy(g);
	if (mr)
		nvmeof_mr_release(mr);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

/* disable_sqflow over NVMe/TCP against nvmet: each read completes with its
 * C2HData PDU's SUCCESS flag alone, no CapsuleResp (one PDU per read), the
 * data verifies, and writes still get their responses. Without it every
 * read gets a CapsuleResp and no SUCCESS flag. Over TCP whatever transport
 * the run chose; digests as the run says. */
static void sqflow_reads(bool disable, uint64_t *rsps, uint64_t *success)
{
	enum { READS = 16, NLB = 8 };
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *w = NULL, *r = NULL;
	uint64_t r0 = 0, s0 = 0, r1 = 0, s1 = 0, r2 = 0, s2 = 0;
	opts_a(&o);
	if (!over_tcp())
		o.trtype = "tcp";
	o.disable_sqflow = disable;
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_queue_create(c, NULL, &q));
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 1);
	CHECK(ns != NULL);
	if (!ns)
		goto out;
	size_t n = (size_t)NLB * ns->lba_size;
	MUST(nvmeof_mr_alloc(c, n * READS, &w));
	MUST(nvmeof_mr_alloc(c, n * READS, &r));
	fill(nvmeof_mr_addr(w), n * READS, disable ? 0x5f : 0x5e);
	memset(nvmeof_mr_addr(r), 0xee, n * READS);
	MUST(nvmeof_queue_tcp_completions(q, &r0, &s0));
	MUST(nvmeof_write_sync(q, ns, 4096, NLB * READS, w, 0, 0));
	MUST(nvmeof_queue_tcp_completions(q, &r1, &s1));
	for (int i = 0; i < READS; i++)
		MUST(nvmeof_read_sync(q, ns, 4096 + (uint64_t)i * NLB, NLB, r, (size_t)i * n, 0));
	MUST(nvmeof_queue_tcp_completions(q, &r2, &s2));
	CHECK(!memcmp(nvmeof_mr_addr(w), nvmeof_mr_addr(r), n * READS));
	CHECK_EQ(r1 - r0, 1); /* the write's response */
	CHECK_EQ(s1 - s0, 0);
	*rsps = r2 - r1;
	*success = s2 - s1;
	printf("    disable_sqflow %d: %d reads, %llu CapsuleResp, %llu C2HData SUCCESS\n", disable, READS,
	       (unsigned long long)*rsps, (unsigned long long)*success);
out:
	if (w)
		nvmeof_mr_release(w);
	if (r)
		nvmeof_mr_release(r);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

TEST(tcp_disable_sqflow_reads_are_one_pdu_each)
{
	uint64_t rsps = 99, success = 99;
	sqflow_reads(true, &rsps, &success);
	CHECK_EQ(rsps, 0);
	CHECK_EQ(success, 16);
	sqflow_reads(false, &rsps, &success);
	CHECK_EQ(rsps, 16);
	CHECK_EQ(success, 0);
}

/* Write a pattern at an offset inside a larger region, read it back into a
 * different offset of another region, compare; for each size. */
static void roundtrip(uint32_t nsid, const size_t *sizes, size_t nsizes, bool in_capsule)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *w = NULL, *r = NULL;
	size_t max = 0;
	opts_a(&o);
	o.in_capsule = in_capsule;
	for (size_t i = 0; i < nsizes; i++)
		if (sizes[i] > max)
			max = sizes[i];
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_queue_create(c, NULL, &q));
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, nsid);
	CHECK(ns != NULL);
	if (!ns)
		goto out;
	MUST(nvmeof_mr_alloc(c, max + 3 * 4096, &w));
	MUST(nvmeof_mr_alloc(c, max + 5 * 4096, &r));
	uint64_t slba = 8192;
	for (size_t i = 0; i < nsizes; i++) {
		size_t n = sizes[i];
		uint32_t nlb = (uint32_t)(n / ns->lba_size);
		size_t woff = 4096 + 512 * (i % 4), roff = 2 * 4096 + 512 * ((i + 1) % 4);
		struct nvmeof_queue_stats s0, s1;
		nvmeof_queue_stats(q, &s0);
		fill((uint8_t *)nvmeof_mr_addr(w) + woff, n, slba + n + nsid);
		memset((uint8_t *)nvmeof_mr_addr(r) + roff, 0xee, n);
		double t0 = now_s();
		MUST(nvmeof_write_sync(q, ns, slba, nlb, w, woff, 0));
		double t1 = now_s();
		MUST(nvmeof_read_sync(q, ns, slba, nlb, r, roff, 0));
		double t2 = now_s();
		nvmeof_queue_stats(q, &s1);
		bool same = !memcmp((uint8_t *)nvmeof_mr_addr(w) + woff, (uint8_t *)nvmeof_mr_addr(r) + roff, n);
		CHECK(same);
		uint64_t mx = nvmeof_ctrl_info(c)->max_xfer;
		CHECK(mx > 0); /* both targets report a limit, or the library sets one */
		uint64_t cmds = s1.cmds - s0.cmds, want = 2 * ((n + mx - 1) / mx);
		CHECK_EQ(cmds, want); /* split at MDTS (nvmet: 1 MiB, SPDK: 128 KiB), each way */
		uint64_t icd = s1.in_capsule - s0.in_capsule;
		/* over NVMe/TCP a write that fits goes in the capsule whatever
		 * in_capsule says (the target waits for it there), counted */
		if ((in_capsule || over_tcp()) && n <= nvmeof_ctrl_info(c)->in_capsule_max)
			CHECK_EQ(icd, 1);
		else
			CHECK_EQ(icd, 0);
		printf("    nsid %u %8zu B: write %.1f ms, read %.1f ms, %llu cmds, %s%s\n", nsid, n,
		       (t1 - t0) * 1e3, (t2 - t1) * 1e3, (unsigned long long)cmds,
		       icd ? "in-capsule" : "keyed SGL", same ? "" : " MISMATCH");
		slba += nlb + 64;
	}
	MUST(nvmeof_flush_sync(q, ns, 0));
out:
	if (w)
		nvmeof_mr_release(w);
	if (r)
		nvmeof_mr_release(r);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

TEST(roundtrip_sizes_ns1_512)
{
	static const size_t sizes[] = {512, 4096, 128 << 10, 1 << 20, 4 << 20, 64 << 20};
	roundtrip(1, sizes, sizeof(sizes) / sizeof(sizes[0]), true);
}

TEST(roundtrip_sizes_ns2_4k)
{
	static const size_t sizes[] = {4096, 128 << 10, 1 << 20, 4 << 20};
	roundtrip(2, sizes, sizeof(sizes) / sizeof(sizes[0]), true);
}

TEST(roundtrip_keyed_only)
{
	static const size_t sizes[] = {512, 4096};
	roundtrip(1, sizes, sizeof(sizes) / sizeof(sizes[0]), false);
}

/* ---- four queues, four threads ---- */
struct worker {
	struct nvmeof_ctrl *c;
	const struct nvmeof_ns *ns;
	int id, failures, done;
	char msg[256];
};

static void count_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct worker *w = arg;
	w->done++;
	if (cpl->err)
		w->failures++;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	const uint32_t qd = 16, io = 8192, nlb = io / 512, rounds = 4;
	const size_t len = (size_t)qd * io;
	uint64_t base = 100000 + (uint64_t)w->id * 4096;
	if (nvmeof_queue_create(w->c, NULL, &q) || nvmeof_mr_alloc(w->c, 2 * len, &mr)) {
		snprintf(w->msg, sizeof(w->msg), "setup: %s", nvmeof_errmsg());
		w->failures++;
		goto out;
	}
	uint8_t *buf = nvmeof_mr_addr(mr);
	for (uint32_t r = 0; r < rounds && !w->failures; r++) {
		fill(buf, len, (uint64_t)w->id * 1000 + r);
		w->done = 0;
		for (uint32_t i = 0; i < qd; i++)
			if (nvmeof_write(q, w->ns, base + i * nlb, nlb, mr, (size_t)i * io, count_cb, w)) {
				snprintf(w->msg, sizeof(w->msg), "write: %s", nvmeof_errmsg());
				w->failures++;
			}
		while (w->done < (int)qd && !w->failures)
			if (nvmeof_queue_wait(q, 1, 5000) <= 0) {
				snprintf(w->msg, sizeof(w->msg), "wait for writes: %s", nvmeof_errmsg());
				w->failures++;
			}
		w->done = 0;
		for (uint32_t i = 0; i < qd; i++)
			if (nvmeof_read(q, w->ns, base + i * nlb, nlb, mr, len + (size_t)i * io, count_cb, w)) {
				snprintf(w->msg, sizeof(w->msg), "read: %s", nvmeof_errmsg());
				w->failures++;
			}
		while (w->done < (int)qd && !w->failures)
			if (nvmeof_queue_wait(q, 1, 5000) <= 0) {
				snprintf(w->msg, sizeof(w->msg), "wait for reads: %s", nvmeof_errmsg());
				w->failures++;
			}
		if (memcmp(buf, buf + len, len)) {
			snprintf(w->msg, sizeof(w->msg), "round %u: data read back differs", r);
			w->failures++;
		}
	}
out:
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	return NULL;
}

TEST(four_queues_four_threads)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct worker w[4];
	pthread_t t[4];
	opts_a(&o);
	MUST(nvmeof_ctrl_connect(&o, &c));
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){.c = c, .ns = nvmeof_ns_get(c, 1), .id = i};
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		if (w[i].failures)
			fprintf(stderr, "    worker %d: %s\n", i, w[i].msg);
		CHECK_EQ(w[i].failures, 0);
	}
out:
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

TEST(queue_full_and_batched_commit)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	struct worker w = {0};
	struct nvmeof_queue_opts qo = {.depth = 4, .batch = true};
	opts_a(&o);
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_queue_create(c, &qo, &q));
	CHECK_EQ(nvmeof_queue_depth(q), 4);
	MUST(nvmeof_mr_alloc(c, 5 * 4096, &mr));
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 1);
	struct nvmeof_queue_stats s0, s1;
	nvmeof_queue_stats(q, &s0);
	for (int i = 0; i < 4; i++)
		MUST(nvmeof_read(q, ns, (uint64_t)i * 8, 8, mr, (size_t)i * 4096, count_cb, &w));
	CHECK_EQ(nvmeof_read(q, ns, 32, 8, mr, 4 * 4096, count_cb, &w), NVMEOF_EQFULL);
	CHECK(strstr(nvmeof_errmsg(), "full") != NULL);
	CHECK_EQ(nvmeof_queue_inflight(q), 4);
	MUST(nvmeof_queue_commit(q));
	nvmeof_queue_stats(q, &s1);
	CHECK_EQ(s1.doorbells - s0.doorbells, 1); /* four commands, one doorbell */
	while (w.done < 4 && nvmeof_queue_wait(q, 1, 5000) > 0)
		;
	CHECK_EQ(w.done, 4);
	CHECK_EQ(w.failures, 0);
	CHECK_EQ(nvmeof_queue_inflight(q), 0);
	/* the slots came back: a fifth read goes through now */
	MUST(nvmeof_read_sync(q, ns, 32, 8, mr, 4 * 4096, 0));
	/* a region too small for the request is refused before anything is sent */
	CHECK_EQ(nvmeof_read(q, ns, 0, 48, mr, 0, count_cb, &w), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "overrun") != NULL);
	CHECK_EQ(nvmeof_queue_inflight(q), 0);
	/* the controller refuses to close while the queue and region exist */
	CHECK_EQ(nvmeof_ctrl_close(c), NVMEOF_EBUSY);
	CHECK(strstr(nvmeof_errmsg(), "1 I/O queue") != NULL);
out:
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

TEST(out_of_range_lba_names_the_status)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	opts_a(&o);
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_queue_create(c, NULL, &q));
	MUST(nvmeof_mr_alloc(c, 8192, &mr));
	/* nvmet 6.1 has no LBA range check of its own: the block backend
	 * (null_blk, ns1) fails the bio (Internal Error), the file backend
	 * (ns2) reports Capacity Exceeded. We must name what it sent. */
	static const char *want[] = {NULL, "Internal Error (SCT 0x0, SC 0x06, DNR)",
				     "Capacity Exceeded (SCT 0x0, SC 0x81, DNR)"};
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 1);
	for (uint32_t nsid = 1; nsid <= 2; nsid++) {
		const struct nvmeof_ns *x = nvmeof_ns_get(c, nsid);
		char op[64];
		/* ENVME: the target answered (a timeout would be ETIMEDOUT) */
		CHECK_EQ(nvmeof_read_sync(q, x, x->nsze, 1, mr, 0, 0), NVMEOF_ENVME);
		printf("    %s\n", nvmeof_errmsg());
		snprintf(op, sizeof(op), "read nsid %u slba %llu nlb 1: ", nsid, (unsigned long long)x->nsze);
		CHECK(strstr(nvmeof_errmsg(), op) != NULL);
		CHECK(strstr(nvmeof_errmsg(), want[nsid]) != NULL);
		CHECK_EQ(nvmeof_write_sync(q, x, x->nsze + 10, 1, mr, 0, 0), NVMEOF_ENVME);
		CHECK(strstr(nvmeof_errmsg(), want[nsid]) != NULL);
		/* a request that starts inside and runs past the end */
		CHECK_EQ(nvmeof_read_sync(q, x, x->nsze - 1, 2, mr, 0, 0), NVMEOF_ENVME);
	}
	/* the queue still works afterwards */
	MUST(nvmeof_read_sync(q, ns, ns->nsze - 1, 1, mr, 0, 0));
	CHECK_EQ(nvmeof_queue_inflight(q), 0);
out:
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

/* A refusal is the target's answer: reported as such, and never tried
 * again (a retried refusal's message counts its tries: "(5 tries, ...").
 * Its time is printed, not bounded: the tries, not a clock, show whether
 * it was retried. */
static void expect_connect_error(struct nvmeof_ctrl_opts *o, int want, const char *needle)
{
	struct nvmeof_ctrl *c = NULL;
	double t0 = now_s();
	int rc = nvmeof_ctrl_connect(o, &c);
	double dt = now_s() - t0;
	printf("    -> %s after %.2f s: %s\n", nvmeof_strerror(rc), dt, nvmeof_errmsg());
	CHECK_EQ(rc, want);
	CHECK(c == NULL);
	CHECK(strstr(nvmeof_errmsg(), needle) != NULL);
	CHECK(strstr(nvmeof_errmsg(), " tries, ") == NULL);
	CHECK(strstr(nvmeof_errmsg(), "no retries left") == NULL);
	if (c)
		nvmeof_ctrl_close(c);
}

TEST(wrong_subsystem_nqn)
{
	struct nvmeof_ctrl_opts o;
	opts_a(&o);
	o.subnqn = "nqn.2026-12.io.nvmeof:no-such-subsystem";
	/* the one status name of a Fabrics Connect's SC 82h, and its hint */
	expect_connect_error(&o, NVMEOF_ENVME, "Connect Invalid Parameters (SCT 0x1, SC 0x82");
	CHECK(strstr(nvmeof_errmsg(), ": wrong subsystem NQN") != NULL);
	CHECK(strstr(nvmeof_errmsg(), "Read Only") == NULL);
	CHECK(strstr(nvmeof_errmsg(), " / ") == NULL);
}

TEST(host_refused_by_subsystem_b)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	opts_a(&o);
	o.subnqn = env("NVMEOF_TB_NQN_B");
	o.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-0000000000ff";
	expect_connect_error(&o, NVMEOF_ENVME, "Connect Invalid Host (SCT 0x1, SC 0x84");
	CHECK(strstr(nvmeof_errmsg(), ": the subsystem does not allow this host NQN") != NULL);
	/* and the allowed host gets in, so the refusal was about the host */
	o.hostnqn = env("NVMEOF_TB_HOSTNQN_B");
	MUST(nvmeof_ctrl_connect(&o, &c));
	CHECK_EQ(nvmeof_ns_count(c), 1);
out:
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

TEST(unreachable_address_fails_fast)
{
	struct nvmeof_ctrl_opts o;
	opts_a(&o);
	o.traddr = env("NVMEOF_TB_UNREACHABLE");
	o.connect_timeout_ms = 1500;
	struct nvmeof_ctrl *c = NULL;
	double t0 = now_s();
	int rc = nvmeof_ctrl_connect(&o, &c);
	double dt = now_s() - t0;
	printf("    -> %s after %.2f s: %s\n", nvmeof_strerror(rc), dt, nvmeof_errmsg());
	CHECK(rc == NVMEOF_EUNREACHABLE || rc == NVMEOF_ETIMEDOUT);
	/* the connect timeout (1.5 s) bounds it: 4 times that, so only a
	 * connect that ignores its timeout, not a slow emulator, fails */
	CHECK(dt < 6);
	CHECK(strstr(nvmeof_errmsg(), "resolve") || strstr(nvmeof_errmsg(), "unreachable") ||
	      strstr(nvmeof_errmsg(), "connect"));
	if (c)
		nvmeof_ctrl_close(c);
}

TEST(nobody_listening_on_port)
{
	struct nvmeof_ctrl_opts o;
	opts_a(&o);
	o.trsvcid = "4999";
	expect_connect_error(&o, NVMEOF_EREJECTED, "rejected");
}

TEST(bad_arguments)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	char longnqn[300];
	opts_a(&o);
	o.subnqn = NULL;
	CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "subsystem NQN") != NULL);
	memset(longnqn, 'n', sizeof(longnqn) - 1);
	longnqn[sizeof(longnqn) - 1] = '\0';
	opts_a(&o);
	o.hostnqn = longnqn;
	CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "too long") != NULL);
	opts_a(&o);
	o.traddr = "not an address";
	CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_EINVAL);
	opts_a(&o);
	o.queue_depth = 5000;
	CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_EINVAL);
	CHECK(c == NULL);
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

TEST(keep_alive_keeps_the_association)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	char msg[256];
	opts_a(&o);
	o.kato_ms = 2000; /* nvmet counts whole seconds */
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_queue_create(c, NULL, &q));
	MUST(nvmeof_mr_alloc(c, 4096, &mr));
	sleep_s(6.5); /* three KATOs idle: only the keep-alive thread talks */
	/* one a second is the design (6 in 6.5 s; 12 with nvmet's traffic-
	 * based keep-alive, checked every KATO/4); one a KATO (3) is what
	 * keeps the association, which the health and the read below show:
	 * a count a loaded emulator does not fall under before the target
	 * itself would end the association */
	CHECK(nvmeof_ctrl_keep_alives(c) >= 3);
	CHECK_EQ(nvmeof_ctrl_health(c, msg, sizeof(msg)), 0);
	MUST(nvmeof_read_sync(q, nvmeof_ns_get(c, 1), 0, 8, mr, 0, 0));
	printf("    %llu keep-alives in 6.5 s with KATO 2 s; I/O still works\n",
	       (unsigned long long)nvmeof_ctrl_keep_alives(c));
out:
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		nvmeof_ctrl_close(c);
}

/* A thread that holds the admin queue through a long command must not keep
 * Keep Alive back past KATO, or the target ends the association. The long
 * command: an Asynchronous Event Request run synchronously (nvmet answers
 * it only when an event comes), for three KATOs. Had the target ended the
 * association, the wait would end early with the connection (ECLOSED); it
 * runs to its own timeout, after which, as after any command timeout, the
 * host takes the admin queue down itself. */
TEST(keep_alive_goes_out_during_a_long_admin_command)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	char msg[256];
	opts_a(&o);
	o.kato_ms = 2000; /* a Keep Alive every second */
	MUST(nvmeof_ctrl_connect(&o, &c));
	uint64_t before = nvmeof_ctrl_keep_alives(c);
	nvme_sqe_async_event(sqe, 0);
	pthread_mutex_lock(ctrl_admin_lock(c));
	double t0 = now_s();
	int rc = q_exec(ctrl_admin(c), sqe, 0, 6500, &cpl);
	double held = now_s() - t0;
	int health = nvmeof_ctrl_health(c, msg, sizeof(msg)); /* before the thread sends again */
	pthread_mutex_unlock(ctrl_admin_lock(c));
	uint64_t during = nvmeof_ctrl_keep_alives(c) - before;
	printf("    %llu keep-alives while the admin queue was held %.1f s (KATO 2 s): %s; health: %s\n",
	       (unsigned long long)during, held, rc ? nvmeof_errmsg() : "answered", msg);
	CHECK_EQ(rc, NVMEOF_ETIMEDOUT); /* not ECLOSED: the association lived */
	CHECK(held >= 6.4);
	/* one a second is the design (6 in 6.5 s); at least one a KATO (3)
	 * is what keeps the association, which the ETIMEDOUT above shows it
	 * did: a bound a slow emulator does not reach before the target
	 * itself would end the association */
	CHECK(during >= 3);
	(void)health; /* a Keep Alive out when the timeout took the queue down fails: not checked */
out:
	if (c)
		nvmeof_ctrl_close(c);
}

/* Keep-alive is on without asking, as on the Linux host (KATO 5 s, a
 * Keep Alive every 2.5 s): a controller behind a cut path ends its
 * association within KATO instead of living on, and the host's health
 * call sees a dead one. Counts: two within 10 s (four expected). */
TEST(defaults_keep_the_controller_alive)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	opts_a(&o);
	MUST(nvmeof_ctrl_connect(&o, &c));
	double t0 = now_s();
	struct timespec tick = {0, 100000000};
	while (nvmeof_ctrl_keep_alives(c) < 2 && now_s() - t0 < 10)
		nanosleep(&tick, NULL);
	printf("    %llu Keep Alive(s) in %.1f s with the default options\n",
	       (unsigned long long)nvmeof_ctrl_keep_alives(c), now_s() - t0);
	CHECK(nvmeof_ctrl_keep_alives(c) >= 2);
	CHECK_EQ(nvmeof_ctrl_health(c, NULL, 0), 0);
out:
	if (c)
		nvmeof_ctrl_close(c);
}

TEST(target_ends_association_when_keep_alives_stop)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	opts_a(&o);
	o.kato_ms = 2000;
	o.ka_interval_ms = 600000; /* a host that stops sending */
	o.cmd_timeout_ms = 4000;
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_queue_create(c, NULL, &q));
	MUST(nvmeof_mr_alloc(c, 4096, &mr));
	MUST(nvmeof_read_sync(q, nvmeof_ns_get(c, 1), 0, 8, mr, 0, 0));
	sleep_s(6.5);
	double t0 = now_s();
	int rc = nvmeof_read_sync(q, nvmeof_ns_get(c, 1), 0, 8, mr, 0, 0);
	printf("    after 6.5 s without keep-alives: %s in %.2f s: %s\n", nvmeof_strerror(rc), now_s() - t0,
	       nvmeof_errmsg());
	CHECK(rc == NVMEOF_ECLOSED || rc == NVMEOF_ETIMEDOUT);
	/* the command timeout (4 s) bounds it: 3 times that, so only a read
	 * that outlives its timeout (a hang), not a slow emulator, fails */
	CHECK(now_s() - t0 < 12);
out:
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		nvmeof_ctrl_close(c);
}

/* Counts completions and errors of asynchronous requests. */
struct grp_ctx {
	int done, errs;
};

static void grp_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct grp_ctx *g = arg;
	g->done++;
	g->errs += cpl->err != 0;
}

static void sh(const char *cmd)
{
	if (system(cmd) != 0)
		printf("    (%s failed)\n", cmd);
}

/* The I/O queues whose trace said "queue state: lost" (bit QID): the event
 * a test waits for after taking the port down, instead of a fixed sleep. */
static atomic_ullong lost_seen;
static void lost_trace(void *arg, uint16_t qid, uint64_t time_ns, const char *msg)
{
	(void)arg, (void)time_ns;
	if (qid && qid < 64 && !strcmp(msg, "queue state: lost"))
		atomic_fetch_or(&lost_seen, 1ull << qid);
}
/* Polls (the queue or the group) until N I/O queues have said they are lost;
 * false after 60 s (the loss shows within the keep-alive and CM events'
 * time, seconds even on a loaded emulator: 60 s only bounds a broken run). */
static bool wait_lost(struct nvmeof_queue *q, struct nvmeof_poll_group *g, int n)
{
	double t0 = now_s();
	while (__builtin_popcountll(atomic_load(&lost_seen)) < n && now_s() - t0 < 60) {
		if (g)
			nvmeof_poll_group_poll(g, 0);
		else
			nvmeof_queue_poll(q, 0);
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	return __builtin_popcountll(atomic_load(&lost_seen)) >= n;
}

/* Writes on the wire when the port goes down, then as many submitted
 * during the outage (parked), each of the second half to the same blocks
 * as one of the first, with its own data: after the reconnect every range
 * holds the later write's data (the replayed ones were issued before those
 * submitted during the outage), the same controller (serial, subsystem)
 * answered, and a namespace disabled during the outage is gone from the
 * table: the namespaces were read again, which only a new association
 * does. Some writes must be in flight at the loss, or nothing was replayed:
 * the first half is sent again as each completes until the loss is seen, so
 * the queue is full when it comes however fast the target drains it (6.12's
 * nvmet finishes a burst before a port removal takes effect). */
#define ORDER_WRITES 32 /* each half: 1 MiB each, in flight together */
struct order_w {
	int k, busy, done, errs;
};
static void order_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct order_w *o = arg;
	o->busy = 0;
	o->done++;
	o->errs += cpl->err != 0;
}
static void *order_down_main(void *arg)
{
	(void)arg;
	char cmd[512];
	sh(over_tcp() ? "tb port-down tcp" : "tb port-down rdma");
	snprintf(cmd, sizeof(cmd), "tb ns-disable %s 2", env("NVMEOF_TB_NQN_A"));
	sh(cmd);
	return NULL;
}
TEST(reconnect_keeps_write_order_and_the_controller)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	struct nvmeof_ctrl_info before, after;
	struct nvmeof_queue_stats st;
	struct order_w ow[ORDER_WRITES] = {{0}};
	bool disabled = false;
	pthread_t downer;
	bool downing = false;
	const size_t len = 1 << 20;
	char cmd[512];
	opts_a(&o);
	o.reconnect_delay_ms = 300;
	o.ctrl_loss_tmo_ms = 30000;
	/* A KATO of 2 s: the writes on the wire at the loss are replayed after
	 * a hold of 1 s + 2 x KATO, 5 s instead of the default's 11 s; what is
	 * checked here is their order and the controller, not the hold. */
	o.kato_ms = 2000;
	o.trace = lost_trace;
	atomic_store(&lost_seen, 0);
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_ctrl_get_info(c, &before));
	MUST(nvmeof_queue_create(c, NULL, &q));
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 1);
	CHECK(ns != NULL && nvmeof_ns_get(c, 2) != NULL);
	if (!ns)
		goto out;
	uint32_t nlb = (uint32_t)(len / ns->lba_size);
	/* write k at range k % half; its data seeded by k: each is told apart */
	const int half = ORDER_WRITES / 2;
	MUST(nvmeof_mr_alloc(c, (ORDER_WRITES + 1) * len, &mr));
	uint8_t *b = nvmeof_mr_addr(mr);
	for (int k = 0; k < ORDER_WRITES; k++) {
		fill(b + (size_t)k * len, len, 1000 + (uint64_t)k);
		ow[k].k = k;
	}
#define ORDER_SLBA(k) (4096 + (uint64_t)((k) % half) * nlb)
#define ORDER_SUBMIT(k)                                                                              \
	do {                                                                                         \
		ow[k].busy = 1;                                                                      \
		MUST(nvmeof_write(q, ns, ORDER_SLBA(k), nlb, mr, (size_t)(k) * len, order_cb, &ow[k])); \
	} while (0)
	for (int k = 0; k < half; k++)
		ORDER_SUBMIT(k);
	disabled = true; /* from here the thread may have disabled it */
	MUST(pthread_create(&downer, NULL, order_down_main, NULL) ? -1 : 0);
	downing = true;
	/* the first half again as each completes, until the queue is lost */
	double tl = now_s();
	while (!atomic_load(&lost_seen) && now_s() - tl < 60) {
		nvmeof_queue_poll(q, 0);
		for (int k = 0; k < half && !atomic_load(&lost_seen); k++)
			if (!ow[k].busy && !ow[k].errs)
				ORDER_SUBMIT(k);
	}
	CHECK(wait_lost(q, NULL, 1)); /* the I/O queue noticed the loss */
	pthread_join(downer, NULL);
	downing = false;
	/* not completed before the loss: parked, to be re-issued */
	uint32_t out_at_loss = nvmeof_queue_inflight(q);
	for (int k = half; k < ORDER_WRITES; k++)
		ORDER_SUBMIT(k);
#undef ORDER_SUBMIT
	sh(over_tcp() ? "tb port-up tcp" : "tb port-up rdma");
	int errs = 0, busy = 1;
	double t0 = now_s();
	while (busy && now_s() - t0 < 60) {
		nvmeof_queue_wait(q, 1, 100);
		busy = 0;
		for (int k = 0; k < ORDER_WRITES; k++)
			busy |= ow[k].busy;
	}
	for (int k = 0; k < ORDER_WRITES; k++)
		errs += ow[k].errs;
	CHECK_EQ(busy, 0);
	CHECK_EQ(errs, 0);
	nvmeof_queue_stats(q, &st);
	printf("    %u of %d writes parked by the loss; reconnects %llu, outage %llu ms\n", out_at_loss,
	       half, (unsigned long long)st.reconnects, (unsigned long long)st.outage_ms_max);
	CHECK(out_at_loss >= 1); /* else nothing on the wire was replayed */
	CHECK(st.reconnects >= 1);
	uint8_t *rb = b + (size_t)ORDER_WRITES * len;
	for (int j = 0; j < half; j++) { /* every range: the later write's data */
		memset(rb, 0, len);
		MUST(nvmeof_read_sync(q, ns, ORDER_SLBA(j), nlb, mr, (size_t)ORDER_WRITES * len, 0));
		if (memcmp(rb, b + (size_t)(j + half) * len, len)) {
			fprintf(stderr, "    range %d: %s\n", j,
				memcmp(rb, b + (size_t)j * len, len) ? "neither write's data" :
								       "the earlier write's data");
			check_failed_in_test = 1;
		}
	}
#undef ORDER_SLBA
	MUST(nvmeof_ctrl_get_info(c, &after));
	/* nvmet may give the new association the old CNTLID again: what shows
	 * that one was made is the namespace rescan below */
	CHECK_STR(after.serial, before.serial);
	CHECK_STR(after.subnqn, before.subnqn);
	CHECK_EQ(after.max_io_queues, before.max_io_queues);
	CHECK(nvmeof_ns_get(c, 2) == NULL); /* disabled during the outage: gone */
	CHECK(nvmeof_ns_get(c, 1) == ns);
out:
	if (downing)
		pthread_join(downer, NULL);
	if (disabled) {
		snprintf(cmd, sizeof(cmd), "tb ns-enable %s 2", env("NVMEOF_TB_NQN_A"));
		sh(cmd);
	}
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		nvmeof_ctrl_close(c);
}

/* The port's in-capsule data size (nvmet's param_inline_data_size, which
 * its IOCCSZ reports), set while the port is down: nvmet takes it then only. */
static const char *inline_size_file(void)
{
	return over_tcp() ? "/sys/kernel/config/nvmet/ports/2/param_inline_data_size"
			  : "/sys/kernel/config/nvmet/ports/1/param_inline_data_size";
}
static long inline_size(void)
{
	long v = -1;
	FILE *f = fopen(inline_size_file(), "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}
static bool set_inline_size(long v)
{
	FILE *f = fopen(inline_size_file(), "w");
	if (!f)
		return false;
	bool ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok;
}

/* A reconnect's new association may report another IOCCSZ: what the queue
 * frames by it is rebuilt from the new one. The port comes back with a
 * smaller in-capsule size than the queue was created with, and a write
 * between the two sizes must not go in the capsule (nvmet refuses that, and
 * over NVMe/TCP reads the data left on the stream as PDU headers); every
 * write after the reconnect completes and reads back. */
TEST(reconnect_takes_the_new_associations_in_capsule_size)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	struct nvmeof_ctrl_info info;
	const char *down = over_tcp() ? "tb port-down tcp" : "tb port-down rdma";
	const char *up = over_tcp() ? "tb port-up tcp" : "tb port-up rdma";
	long orig = inline_size();
	bool changed = false;
	/* writes of 1, 2 and 3 times a quarter of the old size: the last two
	 * above the new size, below the old */
	const uint32_t small = (uint32_t)(orig / 4) / 512 * 512, io = 3 * small;
	CHECK(small >= 512); /* nvmet's default: 16 KiB over TCP, a page or more over RDMA */
	if (small < 512)
		return;
	opts_a(&o);
	o.reconnect_delay_ms = 300;
	o.ctrl_loss_tmo_ms = 20000;
	o.trace = lost_trace;
	atomic_store(&lost_seen, 0);
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_queue_create(c, NULL, &q));
	MUST(nvmeof_mr_alloc(c, 2 * (size_t)io, &mr));
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 1);
	CHECK(ns != NULL);
	if (!ns)
		goto out;
	uint32_t nlb = io / ns->lba_size;
	uint8_t *b = nvmeof_mr_addr(mr);
	MUST(nvmeof_ctrl_get_info(c, &info));
	CHECK_EQ(info.in_capsule_max, (uint32_t)orig);
	sh(down);
	CHECK(wait_lost(q, NULL, 1));
	changed = true;
	CHECK(set_inline_size(small));
	CHECK_EQ(inline_size(), (long)small);
	sh(up);
	/* writes from below to above the new size, each read back */
	for (uint32_t k = 0; k < 3; k++) {
		uint32_t n = (k + 1) * small / ns->lba_size;
		fill(b, io, 77 + k);
		memset(b + io, 0, io);
		if (nvmeof_write_sync(q, ns, 8192 + k * nlb, n, mr, 0, 30000) ||
		    nvmeof_read_sync(q, ns, 8192 + k * nlb, n, mr, io, 30000)) {
			fprintf(stderr, "    %u-byte write after the reconnect: %s\n", n * ns->lba_size,
				nvmeof_errmsg());
			check_failed_in_test = 1;
			break;
		}
		CHECK(!memcmp(b, b + io, (size_t)n * ns->lba_size));
	}
	MUST(nvmeof_ctrl_get_info(c, &info));
	printf("    in-capsule size after the reconnect: %u (port %u, was %ld)\n", info.in_capsule_max, small,
	       orig);
	CHECK_EQ(info.in_capsule_max, small);
out:
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		nvmeof_ctrl_close(c);
	if (changed) { /* the port as the other tests know it */
		sh(down);
		CHECK(set_inline_size(orig));
		sh(up);
	}
}

/* A wait with nothing to complete sleeps in slices as long as a command
 * could take to time out (cmd_timeout_ms / 8, at most 1 s), not every
 * 100 ms; the CM channel is watched as well, so the port going away during
 * such a sleep still ends the wait at once, failed and saying why. That
 * the disconnect's CM event woke the sleep, rather than the slice's end,
 * is a count the queue keeps (its sleeps its CM channel ended), not a
 * clock: how soon the event comes after the port goes away is the
 * target's and the emulator's time (a bound of half a slice on it was
 * within reach of a loaded emulator). */
struct down_ctx {
	double t_down;
};
static void *port_down_main(void *arg)
{
	struct down_ctx *d = arg;
	struct timespec ts = {0, 200000000};
	nanosleep(&ts, NULL);
	sh(over_tcp() ? "tb port-down tcp" : "tb port-down rdma");
	d->t_down = now_s();
	return NULL;
}

TEST(idle_wait_sleeps_long_and_a_disconnect_wakes_it)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_queue_stats s0, s1;
	opts_a(&o); /* cmd_timeout_ms 10000: 1 s slices; no reconnect */
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_queue_create(c, NULL, &q));
	nvmeof_queue_stats(q, &s0);
	double t0 = now_s();
	CHECK_EQ(nvmeof_queue_wait(q, 1, 3000), 0);
	double dt = now_s() - t0;
	nvmeof_queue_stats(q, &s1);
	uint64_t sleeps = s1.sleeps - s0.sleeps;
	printf("    3 s idle wait: %.2f s, %llu sleep(s)\n", dt, (unsigned long long)sleeps);
	CHECK(dt >= 2.9);
	CHECK(sleeps >= 1 && sleeps <= 5); /* 100 ms slices: 30 */

	struct down_ctx d = {0};
	pthread_t th;
	bool started = pthread_create(&th, NULL, port_down_main, &d) == 0;
	CHECK(started);
	uint64_t woken0 = q->cm_wakes;
	t0 = now_s();
	int r = nvmeof_queue_wait(q, 1, 20000);
	double t_ret = now_s();
	if (started)
		pthread_join(th, NULL);
	printf("    port down %.2f s into the wait, the wait ended %.2f s later: %d (%s); %llu wake-up(s) by the CM channel\n",
	       d.t_down - t0, t_ret - d.t_down, r, nvmeof_errmsg(), (unsigned long long)(q->cm_wakes - woken0));
	CHECK(r < 0);
	/* the wait's own timeout is 20 s: half of it only fails a wait that
	 * missed the disconnect altogether */
	CHECK(t_ret - t0 < 10);
	/* noticed through the CM channel, not at the 1 s slice's end */
	/* the CM channel woke it (over TCP the socket's hang-up does, which the
	 * wait sees on the same epoll set as its data: no counter of its own) */
	if (!over_tcp())
		CHECK(q->cm_wakes - woken0 >= 1);
	sh(over_tcp() ? "tb port-up tcp" : "tb port-up rdma");
out:
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		nvmeof_ctrl_close(c);
}

/* The host identifier the target holds for a controller (Get Features,
 * Host Identifier, 128-bit): the one hostid= gave the Connect, for two
 * different ones, so that neither is a default that happened to match. */
static int target_hostid(struct nvmeof_ctrl *c, uint8_t out[16])
{
	uint8_t sqe[NVME_SQE_SIZE];
	nvme_sqe_init(sqe, 0x0a, 0, 0); /* Get Features */
	put_le32(sqe + 40, 0x81);        /* FID: Host Identifier */
	put_le32(sqe + 44, 1);           /* EXHID: the 128-bit one */
	return admin_exec(c, sqe, out, 16, NULL, "Get Features (Host Identifier)");
}

TEST(hostid_is_the_targets_host_identifier)
{
	static const char *const ids[2] = {"6e766d65-6f66-4000-8000-00000000a001",
					   "6e766d65-6f66-4000-8000-00000000b002"};
	for (int i = 0; i < 2; i++) {
		struct nvmeof_ctrl_opts o;
		struct nvmeof_ctrl *c = NULL;
		uint8_t got[16], want[16];
		opts_a(&o);
		o.hostid = ids[i];
		const char *p = ids[i];
		for (int k = 0; k < 16; k++, p += 2) {
			if (*p == '-')
				p++;
			unsigned v;
			sscanf(p, "%2x", &v);
			want[k] = (uint8_t)v;
		}
		MUST(nvmeof_ctrl_connect(&o, &c));
		MUST(target_hostid(c, got));
		printf("    hostid %s: the target holds %02x%02x..%02x%02x\n", ids[i], got[0], got[1], got[14],
		       got[15]);
		CHECK_MEM(got, want, 16);
	out:
		if (c)
			nvmeof_ctrl_close(c);
		if (check_failed_in_test)
			break;
	}
}

/* nvmeof_poll_group_create_on puts the group's CQ on the completion vector
 * asked for: the transport reports that vector for the CQ it made, and a
 * queue of the group carries verified I/O. A vector the HCA does not have
 * (its count, or below -1) is refused, naming the count, with nothing
 * made; -1 spreads as nvmeof_poll_group_create does, within the range. */
TEST(poll_group_on_a_chosen_completion_vector)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_poll_group *g = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	opts_a(&o);
	MUST(nvmeof_ctrl_connect(&o, &c));
	int nv = nvmeof_ctrl_info(c)->comp_vectors;
	printf("    %s: %d completion vector(s)\n", nvmeof_ctrl_info(c)->hca, nv);
	CHECK(nv >= 1);
	char want[64];
	snprintf(want, sizeof(want), "completion vector %d: %s has %d", nv, nvmeof_ctrl_info(c)->hca, nv);
	CHECK_EQ(nvmeof_poll_group_create_on(c, 1, nv, &g), NVMEOF_EINVAL);
	CHECK(g == NULL);
	CHECK(strstr(nvmeof_errmsg(), want) != NULL);
	CHECK_EQ(nvmeof_poll_group_create_on(c, 1, -2, &g), NVMEOF_EINVAL);
	CHECK(g == NULL);
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 2);
	CHECK(ns != NULL);
	if (!ns)
		goto out;
	MUST(nvmeof_mr_alloc(c, 2 * 4096, &mr));
	uint8_t *b = nvmeof_mr_addr(mr);
	int vs[3] = {nv - 1, 0, -1};
	for (int i = 0; i < 3; i++) {
		MUST(nvmeof_poll_group_create_on(c, 1, vs[i], &g));
		int got = nvmeof_poll_group_comp_vector(g);
		if (vs[i] >= 0)
			CHECK_EQ(got, vs[i]);
		CHECK(got >= 0 && got < nv);
		struct nvmeof_queue_opts qo = {.depth = 4, .group = g};
		MUST(nvmeof_queue_create(c, &qo, &q));
		fill(b, 4096, 70 + (uint64_t)i);
		memset(b + 4096, 0, 4096);
		MUST(nvmeof_write_sync(q, ns, 6000 + (uint64_t)i, 1, mr, 0, 0));
		MUST(nvmeof_read_sync(q, ns, 6000 + (uint64_t)i, 1, mr, 4096, 0));
		CHECK_MEM(b + 4096, b, 4096);
		MUST(nvmeof_queue_destroy(q));
		q = NULL;
		MUST(nvmeof_poll_group_destroy(g));
		g = NULL;
	}
out:
	if (q)
		nvmeof_queue_destroy(q);
	if (g)
		nvmeof_poll_group_destroy(g);
	if (mr)
		nvmeof_mr_release(mr);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0); /* nothing left registered or open */
}

/* Four queues on one poll group: I/O on every queue completes through the
 * group's one CQ, with data intact, and a group wait sleeps on one channel. */
TEST(poll_group_of_four_queues)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_poll_group *g = NULL;
	struct nvmeof_queue *q[4] = {0};
	struct nvmeof_mr *mr = NULL;
	struct grp_ctx gc = {0};
	opts_a(&o);
	MUST(nvmeof_ctrl_connect(&o, &c));
	CHECK_EQ(nvmeof_poll_group_create(c, 0, &g), NVMEOF_EINVAL);
	MUST(nvmeof_poll_group_create(c, 4, &g));
	struct nvmeof_queue_opts qo = {.depth = 16, .batch = true, .group = g};
	for (int i = 0; i < 4; i++)
		MUST(nvmeof_queue_create(c, &qo, &q[i]));
	/* its CQ was sized for four: a fifth queue is refused, clearly, and
	 * leaves nothing behind (was: joined, with a CQ a flush could overrun) */
	struct nvmeof_queue *fifth = NULL;
	CHECK_EQ(nvmeof_queue_create(c, &qo, &fifth), NVMEOF_EBUSY);
	CHECK(fifth == NULL);
	CHECK(strstr(nvmeof_errmsg(), "poll group full: created for 4 queue(s)") != NULL);
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 2);
	CHECK(ns != NULL);
	if (!ns)
		goto out;
	MUST(nvmeof_mr_alloc(c, 64 * 4096, &mr));
	uint64_t cmds0[4];
	for (int i = 0; i < 4; i++) {
		struct nvmeof_queue_stats st;
		nvmeof_queue_stats(q[i], &st);
		cmds0[i] = st.cmds; /* the Fabrics Connect */
	}
	uint8_t *b = nvmeof_mr_addr(mr);
	fill(b, 32 * 4096, 42);
	/* 8 writes per queue, one doorbell each, then wait on the group */
	for (int i = 0; i < 4; i++) {
		for (int k = 0; k < 8; k++)
			MUST(nvmeof_write(q[i], ns, 5000 + (uint64_t)(i * 8 + k), 1, mr,
					  (size_t)(i * 8 + k) * 4096, grp_cb, &gc));
		MUST(nvmeof_queue_commit(q[i]));
	}
	double t0 = now_s();
	while (gc.done < 32 && now_s() - t0 < 20)
		if (nvmeof_poll_group_wait(g, 32 - (uint32_t)gc.done, 1000) < 0)
			break;
	CHECK_EQ(gc.done, 32);
	CHECK_EQ(gc.errs, 0);
	/* read back through other queues than wrote them */
	memset(b + 32 * 4096, 0, 32 * 4096);
	gc.done = 0;
	for (int i = 0; i < 4; i++) {
		for (int k = 0; k < 8; k++)
			MUST(nvmeof_read(q[(i + 1) % 4], ns, 5000 + (uint64_t)(i * 8 + k), 1, mr,
					 (size_t)(32 + i * 8 + k) * 4096, grp_cb, &gc));
		MUST(nvmeof_queue_commit(q[(i + 1) % 4]));
	}
	t0 = now_s();
	while (gc.done < 32 && now_s() - t0 < 20)
		if (nvmeof_queue_wait(q[0], 1, 1000) < 0) /* a member's wait polls the group */
			break;
	CHECK_EQ(gc.done, 32);
	CHECK_MEM(b + 32 * 4096, b, 32 * 4096);
	for (int i = 0; i < 4; i++) {
		struct nvmeof_queue_stats st;
		nvmeof_queue_stats(q[i], &st);
		CHECK_EQ(st.cmds - cmds0[i], 16); /* every queue carried its own commands */
	}
	CHECK_EQ(nvmeof_poll_group_destroy(g), NVMEOF_EBUSY);
out:
	if (mr)
		nvmeof_mr_release(mr);
	for (int i = 0; i < 4; i++)
		if (q[i])
			nvmeof_queue_destroy(q[i]);
	if (g)
		CHECK_EQ(nvmeof_poll_group_destroy(g), 0);
	if (c)
		nvmeof_ctrl_close(c);
}

/* A port outage under a group of two queues with reconnect: the I/O of both
 * queues is re-issued and completes. */
TEST(poll_group_reconnects_every_queue)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_poll_group *g = NULL;
	struct nvmeof_queue *q[2] = {0};
	struct nvmeof_mr *mr = NULL;
	struct grp_ctx gc = {0};
	opts_a(&o);
	o.reconnect_delay_ms = 300;
	o.ctrl_loss_tmo_ms = 30000;
	o.trace = lost_trace;
	atomic_store(&lost_seen, 0);
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_poll_group_create(c, 2, &g));
	struct nvmeof_queue_opts qo = {.depth = 8, .group = g};
	MUST(nvmeof_queue_create(c, &qo, &q[0]));
	MUST(nvmeof_queue_create(c, &qo, &q[1]));
	MUST(nvmeof_mr_alloc(c, 8 * 4096, &mr));
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 1);
	sh(over_tcp() ? "tb port-down tcp" : "tb port-down rdma");
	CHECK(wait_lost(NULL, g, 2)); /* both queues noticed */
	for (int k = 0; k < 4; k++) {
		MUST(nvmeof_read(q[0], ns, (uint64_t)k * 8, 8, mr, (size_t)k * 4096, grp_cb, &gc));
		MUST(nvmeof_read(q[1], ns, (uint64_t)k * 8, 8, mr, (size_t)(k + 4) * 4096, grp_cb, &gc));
	}
	sh(over_tcp() ? "tb port-up tcp" : "tb port-up rdma");
	double t0 = now_s();
	while (gc.done < 8 && now_s() - t0 < 30)
		nvmeof_poll_group_wait(g, 1, 200);
	CHECK_EQ(gc.done, 8);
	CHECK_EQ(gc.errs, 0);
	for (int i = 0; i < 2; i++) {
		struct nvmeof_queue_stats st;
		nvmeof_queue_stats(q[i], &st);
		CHECK(st.reconnects >= 1);
	}
out:
	if (mr)
		nvmeof_mr_release(mr);
	for (int i = 0; i < 2; i++)
		if (q[i])
			nvmeof_queue_destroy(q[i]);
	if (g)
		nvmeof_poll_group_destroy(g);
	if (c)
		nvmeof_ctrl_close(c);
}

/* The target refuses the new association for good (the host no longer
 * allowed: Invalid Host, DNR): the reconnect stops at that answer, with it
 * in the message, instead of trying until ctrl_loss_tmo (two minutes here). */
TEST(reconnect_refused_with_dnr_fails_at_once)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	char cmd[512];
	bool denied = false;
	opts_a(&o);
	o.reconnect_delay_ms = 300;
	o.ctrl_loss_tmo_ms = 120000;
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_queue_create(c, NULL, &q));
	MUST(nvmeof_mr_alloc(c, 4096, &mr));
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 1);
	MUST(nvmeof_read_sync(q, ns, 0, 8, mr, 0, 0));
	sh(over_tcp() ? "tb port-down tcp" : "tb port-down rdma");
	snprintf(cmd, sizeof(cmd), "tb host-deny %s", env("NVMEOF_TB_NQN_A"));
	sh(cmd);
	denied = true;
	sh(over_tcp() ? "tb port-up tcp" : "tb port-up rdma");
	double t0 = now_s();
	int rc = nvmeof_read_sync(q, ns, 0, 8, mr, 0, 0);
	double took = now_s() - t0;
	printf("    after %.1f s: %s: %s\n", took, nvmeof_strerror(rc), nvmeof_errmsg());
	CHECK(rc != 0);
	CHECK(strstr(nvmeof_errmsg(), "Invalid Host") != NULL);
	CHECK(strstr(nvmeof_errmsg(), "DNR") != NULL);
	CHECK(took < o.ctrl_loss_tmo_ms / 2000.0); /* stopped at the answer, not at the loss timeout */
	/* the queue stays failed: nothing is tried again behind the caller's back */
	CHECK(nvmeof_read_sync(q, ns, 0, 8, mr, 0, 0) != 0);
out:
	if (denied) {
		snprintf(cmd, sizeof(cmd), "tb host-allow %s", env("NVMEOF_TB_NQN_A"));
		sh(cmd);
	}
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		nvmeof_ctrl_close(c);
}

/* A program built before 0.3 passes the old, smaller struct to the plain
 * function: nothing past it is written (the 0.3 fields used to be); the
 * macro's size-aware call fills the whole struct. */
TEST(ctrl_get_info_writes_only_the_callers_struct)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	union {
		struct nvmeof_ctrl_info ci;
		unsigned char b[sizeof(struct nvmeof_ctrl_info) + 64];
	} u;
	const size_t old = offsetof(struct nvmeof_ctrl_info, auth_hash);
	opts_a(&o);
	MUST(nvmeof_ctrl_connect(&o, &c));
	memset(&u, 0xa5, sizeof(u));
	MUST((nvmeof_ctrl_get_info)(c, &u.ci)); /* the 0.1 symbol, as an old binary calls it */
	CHECK_STR(u.ci.subnqn, nvmeof_ctrl_info(c)->subnqn);
	size_t bad = 0;
	for (size_t i = (old + 7) / 8 * 8; i < sizeof(u); i++)
		bad += u.b[i] != 0xa5;
	CHECK_EQ(bad, 0);
	memset(&u, 0xa5, sizeof(u));
	MUST(nvmeof_ctrl_get_info(c, &u.ci));
	CHECK_EQ(u.ci.auth_hash, 0); /* no authentication on this subsystem */
	CHECK_EQ(u.ci.auth_io_queues, 0);
	CHECK_EQ(u.b[sizeof(u.ci)], 0xa5);
	CHECK_EQ(nvmeof_ctrl_get_info_sz(c, &u.ci, 16), NVMEOF_EINVAL);
out:
	if (c)
		nvmeof_ctrl_close(c);
}

/* A queue created right after one was destroyed connects: the QID just
 * released (still being torn down at the target) is not handed out again. */
TEST(queue_created_right_after_destroy)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	opts_a(&o);
	o.num_io_queues = 4;
	MUST(nvmeof_ctrl_connect(&o, &c));
	uint16_t last = 0;
	for (int i = 0; i < 12; i++) {
		struct nvmeof_queue *q = NULL;
		MUST(nvmeof_queue_create(c, NULL, &q));
		CHECK(nvmeof_queue_qid(q) != last);
		last = nvmeof_queue_qid(q);
		CHECK_EQ(nvmeof_queue_destroy(q), 0);
	}
out:
	if (c)
		nvmeof_ctrl_close(c);
}

/* Load while queues connect: a controller of its own reading at QD16 until
 * told to stop, as other fio jobs do while a sweep's job connects. */
struct loader {
	volatile int stop;
	int started, failures;
	uint64_t done;
	char msg[256];
};

static void *loader_main(void *arg)
{
	struct loader *l = arg;
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	struct grp_ctx gc = {0};
	const struct nvmeof_ns *ns;
	opts_a(&o);
	if (nvmeof_ctrl_connect(&o, &c) || !(ns = nvmeof_ns_get(c, 1)) ||
	    nvmeof_queue_create(c, NULL, &q) || nvmeof_mr_alloc(c, 16 * 65536, &mr)) {
		snprintf(l->msg, sizeof(l->msg), "%s", nvmeof_errmsg());
		l->failures++;
		goto out;
	}
	__atomic_store_n(&l->started, 1, __ATOMIC_RELEASE);
	uint64_t blocks = 65536 / ns->lba_size, k = 0;
	int out = 0;
	while (!l->stop || out) {
		while (!l->stop && out < 16) {
			if (nvmeof_read(q, ns, (k * blocks) % (ns->nsze - blocks), (uint32_t)blocks, mr,
					(size_t)(k % 16) * 65536, grp_cb, &gc))
				break;
			k++;
			out++;
		}
		int n = nvmeof_queue_wait(q, 1, 1000);
		if (n < 0) {
			snprintf(l->msg, sizeof(l->msg), "%s", nvmeof_errmsg());
			l->failures++;
			break;
		}
		out -= n;
		__atomic_store_n(&l->done, (uint64_t)gc.done, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&l->done, (uint64_t)gc.done, __ATOMIC_RELAXED);
	l->failures += gc.errs;
out:
	__atomic_store_n(&l->started, 1, __ATOMIC_RELEASE);
	if (q)
		nvmeof_queue_destroy(q);
	if (mr)
		nvmeof_mr_release(mr);
	if (c)
		nvmeof_ctrl_close(c);
	return NULL;
}

/* A controller's 64 I/O queues (or its grant, if smaller), in one
 * poll group as one fio job with qpairs=64 has them, connect every time
 * while another controller runs I/O, three times over, and every one of
 * them carries commands. Connect retries, where the load made any, are
 * printed per run. */
TEST(sixty_four_queue_pairs_connect_under_load_and_all_carry_io)
{
	enum { WANT = 64, PER_Q = 4, REPS = 3 };
	struct loader l = {0};
	pthread_t lt;
	bool loading = false;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_poll_group *g = NULL;
	struct nvmeof_queue *q[WANT] = {0};
	struct nvmeof_mr *mr = NULL;
	uint32_t n = 0;
	if (pthread_create(&lt, NULL, loader_main, &l) == 0)
		loading = true;
	for (int i = 0; i < 200 && loading && !__atomic_load_n(&l.started, __ATOMIC_ACQUIRE); i++)
		nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
	CHECK_EQ(l.failures, 0);
	for (int rep = 0; rep < REPS; rep++) {
		struct nvmeof_ctrl_opts o;
		struct grp_ctx gc = {0};
		opts_a(&o);
		MUST(nvmeof_ctrl_connect(&o, &c));
		n = nvmeof_ctrl_info(c)->max_io_queues < WANT ? nvmeof_ctrl_info(c)->max_io_queues : WANT;
		const struct nvmeof_ns *ns = nvmeof_ns_get(c, 1);
		CHECK(ns != NULL);
		if (!ns)
			goto out;
		MUST(nvmeof_poll_group_create(c, n, &g));
		MUST(nvmeof_mr_alloc(c, (size_t)n * PER_Q * 4096, &mr));
		struct nvmeof_queue_opts qo;
		nvmeof_queue_opts_init(&qo);
		qo.depth = 8;
		qo.batch = true;
		qo.group = g;
		double t0 = now_s();
		uint32_t retries = 0, retried = 0;
		uint64_t slowest = 0;
		for (uint32_t i = 0; i < n; i++) {
			MUST(nvmeof_queue_create(c, &qo, &q[i]));
			uint64_t ms = 0;
			uint32_t r = nvmeof_queue_connect_retries(q[i], &ms);
			retries += r;
			retried += r > 0;
			slowest = ms > slowest ? ms : slowest;
		}
		printf("    run %d: %u queue pairs connected in %.1f s under load (%llu reads by then), "
		       "%u connect retries on %u queues, slowest %llu ms\n", rep + 1, n, now_s() - t0,
		       (unsigned long long)__atomic_load_n(&l.done, __ATOMIC_RELAXED), retries, retried,
		       (unsigned long long)slowest);
		uint64_t cmds0[WANT];
		for (uint32_t i = 0; i < n; i++) {
			struct nvmeof_queue_stats st;
			nvmeof_queue_stats(q[i], &st);
			cmds0[i] = st.cmds; /* the Fabrics Connect */
		}
		uint32_t lba = 4096 / ns->lba_size;
		for (uint32_t i = 0; i < n; i++) {
			for (uint32_t k = 0; k < PER_Q; k++)
				MUST(nvmeof_read(q[i], ns, (uint64_t)(i * PER_Q + k) * lba, lba, mr,
						 (size_t)(i * PER_Q + k) * 4096, grp_cb, &gc));
			MUST(nvmeof_queue_commit(q[i]));
		}
		t0 = now_s();
		while (gc.done < (int)(n * PER_Q) && now_s() - t0 < 60)
			if (nvmeof_poll_group_wait(g, n * PER_Q - (uint32_t)gc.done, 1000) < 0)
				break;
		CHECK_EQ(gc.done, n * PER_Q);
		CHECK_EQ(gc.errs, 0);
		uint32_t carried = 0;
		for (uint32_t i = 0; i < n; i++) {
			struct nvmeof_queue_stats st;
			nvmeof_queue_stats(q[i], &st);
			carried += st.cmds - cmds0[i] == PER_Q; /* its own reads, on its own wire */
		}
		CHECK_EQ(carried, n);
		nvmeof_mr_release(mr);
		mr = NULL;
		for (uint32_t i = 0; i < n; i++) {
			nvmeof_queue_destroy(q[i]);
			q[i] = NULL;
		}
		CHECK_EQ(nvmeof_poll_group_destroy(g), 0);
		g = NULL;
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
		c = NULL;
	}
out:
	if (mr)
		nvmeof_mr_release(mr);
	for (uint32_t i = 0; i < WANT; i++)
		if (q[i])
			nvmeof_queue_destroy(q[i]);
	if (g)
		nvmeof_poll_group_destroy(g);
	if (c)
		nvmeof_ctrl_close(c);
	if (loading) {
		l.stop = 1;
		pthread_join(lt, NULL);
		if (l.failures)
			fprintf(stderr, "    loader: %s\n", l.msg);
		CHECK_EQ(l.failures, 0);
		CHECK(l.done > 0); /* the load was there */
	}
}

/* connect_retries is the number of tries after the first, for the admin
 * queue and each I/O queue alike. The target cannot be made to fail a CM
 * connect on purpose: the CM fault double linked into this program
 * (tests/cmfault) turns the next CM connects' answers into a CONNECT_ERROR,
 * a failure retried for any queue, or into silence, retried only once the
 * admin queue has reached the target. Two failed tries fail a connect
 * allowed one retry, saying so, and let one allowed two through. */
void cmfault_arm(unsigned skip, unsigned n, bool silent);
unsigned cmfault_left(void);
static atomic_int admin_tries_failed;
static void tries_trace(void *arg, uint16_t qid, uint64_t time_ns, const char *msg)
{
	(void)arg, (void)time_ns;
	if (!qid && !strncmp(msg, "connect try ", 12))
		atomic_fetch_add(&admin_tries_failed, 1);
}
static void expect_tries_failed(int rc, int want_rc, const char *step)
{
	printf("    -> %s: %s\n", nvmeof_strerror(rc), nvmeof_errmsg());
	CHECK_EQ(rc, want_rc);
	CHECK(strstr(nvmeof_errmsg(), step) != NULL);
	CHECK(strstr(nvmeof_errmsg(), "(2 tries, ") != NULL);
	CHECK(strstr(nvmeof_errmsg(), "no retries left") != NULL);
}
/* A target that never answers our disconnect request (the CM fault double
 * withholds every DISCONNECTED event; the real target always answers):
 * closing a connected queue does not wait for that answer, as the kernel
 * host's does not (rdma_disconnect flushes the QP; the CM finishes the
 * exchange on its own). It used to wait 1 s for it, holding the thread
 * that drives the queue's poll group, and every other queue in it. What
 * the close did is counted, not timed: it asked the CM for no event (a
 * wait for the answer asks for it), and the other member's reads, in
 * flight meanwhile, complete. */
void cmfault_mute_disconnect(bool on);
unsigned cmfault_events_asked(void);
TEST(close_never_waits_for_the_targets_disconnect_answer)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_poll_group *g = NULL;
	struct nvmeof_queue *q[2] = {0};
	struct nvmeof_mr *mr = NULL;
	struct grp_ctx gc = {0};
	opts_a(&o);
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_poll_group_create(c, 2, &g));
	struct nvmeof_queue_opts qo = {.depth = 8, .group = g};
	MUST(nvmeof_queue_create(c, &qo, &q[0]));
	MUST(nvmeof_queue_create(c, &qo, &q[1]));
	MUST(nvmeof_mr_alloc(c, 4 * 4096, &mr));
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 1);
	cmfault_mute_disconnect(true);
	for (int k = 0; k < 4; k++) /* in flight on the other member meanwhile */
		MUST(nvmeof_read(q[1], ns, (uint64_t)k * 8, 8, mr, (size_t)k * 4096, grp_cb, &gc));
	double t0 = now_s();
	unsigned asked0 = cmfault_events_asked();
	CHECK_EQ(nvmeof_queue_destroy(q[0]), 0);
	q[0] = NULL;
	unsigned asked = cmfault_events_asked() - asked0;
	printf("    a connected queue closed in %.0f ms, the target's answer withheld; CM events asked for: %u\n",
	       (now_s() - t0) * 1000, asked);
	CHECK_EQ(asked, 0);
	while (gc.done < 4 && now_s() - t0 < 10)
		nvmeof_poll_group_wait(g, 1, 200);
	CHECK_EQ(gc.done, 4);
	CHECK_EQ(gc.errs, 0);
	MUST(nvmeof_read_sync(q[1], ns, 0, 8, mr, 0, 0)); /* the other member carries on */
out:
	cmfault_mute_disconnect(false);
	if (mr)
		nvmeof_mr_release(mr);
	for (int i = 0; i < 2; i++)
		if (q[i])
			nvmeof_queue_destroy(q[i]);
	if (g)
		nvmeof_poll_group_destroy(g);
	if (c)
		nvmeof_ctrl_close(c);
}

TEST(connect_retries_is_the_number_of_tries_after_the_first)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	opts_a(&o);
	o.connect_timeout_ms = 1000; /* each silent try waits this long */
	o.trace = tries_trace;
	/* the admin queue, two connect errors: one retry is not enough */
	o.connect_retries = 1;
	cmfault_arm(0, 2, false);
	expect_tries_failed(nvmeof_ctrl_connect(&o, &c), NVMEOF_ETRANSPORT, "connect admin queue");
	CHECK(c == NULL);
	CHECK_EQ(cmfault_left(), 0);
	/* two retries are */
	o.connect_retries = 2;
	atomic_store(&admin_tries_failed, 0);
	cmfault_arm(0, 2, false);
	MUST(nvmeof_ctrl_connect(&o, &c));
	CHECK_EQ(cmfault_left(), 0);
	CHECK_EQ(atomic_load(&admin_tries_failed), 2);
	/* an I/O queue, two silent CM connects: the controller's budget of 2
	 * lets it through, and the queue says what it took */
	cmfault_arm(0, 2, true);
	MUST(nvmeof_queue_create(c, NULL, &q));
	CHECK_EQ(cmfault_left(), 0);
	uint64_t ms = 0;
	CHECK_EQ(nvmeof_queue_connect_retries(q, &ms), 2);
	printf("    I/O queue %u: 2 retries, connected in %llu ms\n", nvmeof_queue_qid(q), (unsigned long long)ms);
	CHECK(ms >= 2000); /* a lower bound: two tries waited out their 1 s */
	MUST(nvmeof_mr_alloc(c, 4096, &mr));
	MUST(nvmeof_read_sync(q, nvmeof_ns_get(c, 1), 0, 8, mr, 0, 0));
	nvmeof_mr_release(mr);
	mr = NULL;
	CHECK_EQ(nvmeof_queue_destroy(q), 0);
	q = NULL;
	CHECK_EQ(nvmeof_ctrl_close(c), 0);
	c = NULL;
	/* with one retry the same silence fails the queue, naming it */
	o.connect_retries = 1;
	MUST(nvmeof_ctrl_connect(&o, &c));
	cmfault_arm(0, 2, true);
	expect_tries_failed(nvmeof_queue_create(c, NULL, &q), NVMEOF_ETIMEDOUT, "CM connect: no answer within 1000 ms");
	CHECK(strstr(nvmeof_errmsg(), "I/O queue ") != NULL);
	CHECK(q == NULL);
	CHECK_EQ(nvmeof_ctrl_close(c), 0);
	c = NULL;
	/* silence at the first contact is not retried, whatever the budget:
	 * the address is wrong or down */
	o.connect_retries = 4;
	cmfault_arm(0, 1, true);
	int rc = nvmeof_ctrl_connect(&o, &c);
	printf("    -> %s: %s\n", nvmeof_strerror(rc), nvmeof_errmsg());
	CHECK_EQ(rc, NVMEOF_ETIMEDOUT);
	CHECK(strstr(nvmeof_errmsg(), " tries, ") == NULL);
	CHECK_EQ(cmfault_left(), 0);
out:
	cmfault_arm(0, 0, false);
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		nvmeof_ctrl_close(c);
}

/* ---- helpers for the shell cross-check ---- */
/* Advanced Command Retry Enable: asked for only where the controller
 * reports a Command Retry Delay Time. nvmet reports none; SPDK's target
 * reports the CRDT its nvmf_set_crdt was given (tests/target/spdk.sh sets
 * NVMEOF_SPDK_* to point this test at it, with CRDT1 in NVMEOF_SPDK_CRDT1),
 * and takes the Set Features Host Behavior Support. The kernel host does
 * the same (nvme_configure_acre). */
TEST(retry_delay_enabled_only_where_the_controller_reports_one)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_ctrl_info ci;
	const char *spdk = getenv("NVMEOF_SPDK_PORT");
	opts_a(&o);
	if (spdk) {
		o.trsvcid = spdk;
		o.subnqn = env("NVMEOF_SPDK_NQN");
	}
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_ctrl_get_info(c, &ci));
	if (spdk) {
		CHECK_EQ(ci.crdt[0], strtoul(env("NVMEOF_SPDK_CRDT1"), NULL, 0));
		CHECK(ci.acre);
	} else {
		CHECK(!ci.crdt[0] && !ci.crdt[1] && !ci.crdt[2]);
		CHECK(!ci.acre);
	}
out:
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

/* One admin command that times out on the real target (an Asynchronous
 * Event Request run synchronously: nvmet answers it only when an event
 * comes) takes the admin queue down, as any command timeout does. The
 * controller re-creates the association on its own (a new CNTLID): its
 * health, keep-alives, ANA log reads and events come back, and the I/O
 * queue, whose association was replaced, reconnects and carries on. Events
 * are enabled after the timeout (nvmet takes four AERs at most: with the
 * event thread's out, the test's own would be refused, not held); a second
 * loss, the admin connection cut with the event thread's AERs out, shows
 * events come back too. */
static void count_event(void *arg, const struct nvmeof_event *ev)
{
	(void)ev;
	atomic_fetch_add((atomic_int *)arg, 1);
}
/* Until cond holds, polling q (its reconnect runs from its poll); false
 * after limit_s, which only bounds a broken run (seconds suffice). */
#define WAIT_UNTIL(cond, q, limit_s)                                                   \
	({                                                                              \
		double t0_ = now_s();                                                   \
		while (!(cond) && now_s() - t0_ < (limit_s)) {                          \
			nvmeof_queue_poll((q), 0);                                      \
			struct timespec ts_ = {0, 10000000};                            \
			nanosleep(&ts_, NULL);                                          \
		}                                                                       \
		(bool)(cond);                                                           \
	})
TEST(admin_timeout_recreates_the_association)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL, *back = NULL;
	struct nvmeof_ctrl_info ci;
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	static uint8_t log[4096];
	char msg[512], cmd[256];
	atomic_int events = 0;
	bool disabled = false;
	opts_a(&o);
	o.kato_ms = 2000;
	o.reconnect_delay_ms = 200;
	o.cmd_timeout_ms = 5000;
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_queue_create(c, NULL, &q));
	MUST(nvmeof_mr_alloc(c, 4096, &mr));
	MUST(nvmeof_mr_alloc(c, 4096, &back));
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 1);
	CHECK(ns != NULL);
	uint32_t nlb = 4096 / ns->lba_size;
	MUST(nvmeof_write_sync(q, ns, 4242, nlb, mr, 0, 0));
	MUST(nvmeof_ctrl_get_info(c, &ci));
	uint16_t cntlid0 = ci.cntlid;

	nvme_sqe_async_event(sqe, 0);
	pthread_mutex_lock(ctrl_admin_lock(c));
	int rc = q_exec(ctrl_admin(c), sqe, 0, 1000, &cpl);
	pthread_mutex_unlock(ctrl_admin_lock(c));
	CHECK_EQ(rc, NVMEOF_ETIMEDOUT);
	double t0 = now_s();
	bool healthy = WAIT_UNTIL(nvmeof_ctrl_health(c, msg, sizeof(msg)) == 0, q, 60);
	printf("    after the admin timeout: %s in %.1f s (%s)\n", healthy ? "healthy again" : "still lost",
	       now_s() - t0, msg);
	CHECK(healthy);
	MUST(nvmeof_ctrl_get_info(c, &ci));
	CHECK(ci.cntlid != cntlid0); /* a new association */
	uint16_t cntlid1 = ci.cntlid;
	MUST(nvmeof_get_log_ana(c, true, log, sizeof(log)));
	uint64_t ka = nvmeof_ctrl_keep_alives(c);
	CHECK(WAIT_UNTIL(nvmeof_ctrl_keep_alives(c) >= ka + 2, q, 30));
	MUST(nvmeof_ctrl_events(c, count_event, &events));
	/* the I/O queue: on the new association, writes and reads go */
	fill(nvmeof_mr_addr(mr), 4096, 33);
	MUST(nvmeof_write_sync(q, ns, 4242, nlb, mr, 0, 0));
	MUST(nvmeof_read_sync(q, ns, 4242, nlb, back, 0, 0));
	CHECK(!memcmp(nvmeof_mr_addr(mr), nvmeof_mr_addr(back), 4096));

	/* the second loss, with the event thread's AERs out */
	pthread_mutex_lock(ctrl_admin_lock(c));
	q_cut(ctrl_admin(c));
	nvmeof_queue_poll(ctrl_admin(c), 0);
	pthread_mutex_unlock(ctrl_admin_lock(c));
	CHECK(WAIT_UNTIL(nvmeof_ctrl_health(c, msg, sizeof(msg)) == 0, q, 60));
	MUST(nvmeof_ctrl_get_info(c, &ci));
	CHECK(ci.cntlid != cntlid1);
	int e0 = atomic_load(&events);
	snprintf(cmd, sizeof(cmd), "tb ns-disable %s 2", env("NVMEOF_TB_NQN_A"));
	sh(cmd);
	disabled = true;
	CHECK(WAIT_UNTIL(atomic_load(&events) > e0, q, 30));
	MUST(nvmeof_get_log_ana(c, true, log, sizeof(log)));
	/* the I/O queue follows each new association (its next housekeeping) */
	struct nvmeof_queue_stats st;
	CHECK(WAIT_UNTIL((nvmeof_queue_stats(q, &st), st.reconnects >= 2), q, 30));
	MUST(nvmeof_read_sync(q, ns, 4242, nlb, back, 0, 0));
	CHECK(!memcmp(nvmeof_mr_addr(mr), nvmeof_mr_addr(back), 4096));
	printf("    CNTLID %u -> %u -> %u; %d event(s); the I/O queue reconnected %llu time(s)\n", cntlid0, cntlid1, ci.cntlid,
	       atomic_load(&events) - e0, (unsigned long long)st.reconnects);
out:
	if (disabled) {
		snprintf(cmd, sizeof(cmd), "tb ns-enable %s 2", env("NVMEOF_TB_NQN_A"));
		sh(cmd);
	}
	if (mr)
		nvmeof_mr_release(mr);
	if (back)
		nvmeof_mr_release(back);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		nvmeof_ctrl_close(c);
}

static int load_dump(int argc, char **argv)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	bool load = !strcmp(argv[1], "load");
	if (argc < (load ? 5 : 6)) {
		fprintf(stderr, "usage: load NSID SLBA FILE | dump NSID SLBA BYTES FILE\n");
		return 2;
	}
	uint32_t nsid = (uint32_t)strtoul(argv[2], NULL, 0);
	uint64_t slba = strtoull(argv[3], NULL, 0);
	const char *path = argv[load ? 4 : 5];
	size_t n = load ? 0 : strtoull(argv[4], NULL, 0);
	FILE *f = fopen(path, load ? "rb" : "wb");
	int rc = 1;
	if (!f) {
		perror(path);
		return 1;
	}
	if (load) {
		fseek(f, 0, SEEK_END);
		n = (size_t)ftell(f);
		rewind(f);
	}
	opts_a(&o);
	const struct nvmeof_ns *ns;
	if (nvmeof_ctrl_connect(&o, &c) || !(ns = nvmeof_ns_get(c, nsid)) ||
	    nvmeof_queue_create(c, NULL, &q) || nvmeof_mr_alloc(c, n, &mr))
		goto out;
	if (n % ns->lba_size) {
		fprintf(stderr, "%zu bytes is not a whole number of %u-byte blocks\n", n, ns->lba_size);
		goto out;
	}
	if (load && fread(nvmeof_mr_addr(mr), 1, n, f) != n)
		goto out;
	if (load ? nvmeof_write_sync(q, ns, slba, (uint32_t)(n / ns->lba_size), mr, 0, 0)
		 : nvmeof_read_sync(q, ns, slba, (uint32_t)(n / ns->lba_size), mr, 0, 0))
		goto out;
	if (!load && fwrite(nvmeof_mr_addr(mr), 1, n, f) != n)
		goto out;
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "%s: %s\n", argv[1], nvmeof_errmsg());
	fclose(f);
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c && nvmeof_ctrl_close(c))
		rc = 1;
	return rc;
}

int main(int argc, char **argv)
{
	static const struct test_case all[] = {
		T(identify_matches_testbed), T(roundtrip_sizes_ns1_512), T(roundtrip_sizes_ns2_4k),
		T(roundtrip_keyed_only), T(four_queues_four_threads), T(queue_full_and_batched_commit),
		T(out_of_range_lba_names_the_status), T(wrong_subsystem_nqn), T(host_refused_by_subsystem_b),
		T(unreachable_address_fails_fast), T(nobody_listening_on_port), T(bad_arguments),
		T(keep_alive_keeps_the_association), T(target_ends_association_when_keep_alives_stop),
		T(reconnect_keeps_write_order_and_the_controller), T(reconnect_takes_the_new_associations_in_capsule_size), T(poll_group_of_four_queues), T(poll_group_on_a_chosen_completion_vector), T(hostid_is_the_targets_host_identifier),
		T(poll_group_reconnects_every_queue), T(close_never_waits_for_the_targets_disconnect_answer), T(reconnect_refused_with_dnr_fails_at_once), T(ctrl_get_info_writes_only_the_callers_struct),
		T(queue_created_right_after_destroy),
		T(sixty_four_queue_pairs_connect_under_load_and_all_carry_io),
		T(keep_alive_goes_out_during_a_long_admin_command), T(defaults_keep_the_controller_alive),
		T(idle_wait_sleeps_long_and_a_disconnect_wakes_it),
		T(retry_delay_enabled_only_where_the_controller_reports_one),
		T(admin_timeout_recreates_the_association),
		T(connect_retries_is_the_number_of_tries_after_the_first),
		T(tcp_refuses_what_is_rdmas), T(tcp_disable_sqflow_reads_are_one_pdu_each),
	};
	size_t n = sizeof(all) / sizeof(all[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && (!strcmp(argv[1], "load") || !strcmp(argv[1], "dump")))
		return load_dump(argc, argv);
	check_limit_each_test(); /* each test in a child, ended at its own limit */
	check_after_kill = tb_restore_target;
	return run_named_tests("target-core", all, n, argc, argv);
}
