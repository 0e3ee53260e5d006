/*
 * The GPU code path against the real target, with the CUDA TEST DOUBLE
 * (tests/cuda-double, host memory behind the cu* API) in place of a GPU:
 * loading, allocation, the dma-buf attempt and its fallback, registration,
 * reads into and writes from "device" memory, and the ordering rules
 * (synchronize before a write, flush after a read). What this cannot show
 * is real GPUDirect RDMA on a NIC; see README.
 *
 *   gpu_test              run every test (NVMEOF_CUDA_LIB = the double)
 *   gpu_test no-cuda      without any CUDA driver: a clear error
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "nvmeof.h"

static void *dbl; /* the double, as the library loaded it */
static const char *(*fc_log)(void);
static void (*fc_set)(const char *, int);
static void (*fc_fill)(void *, size_t, int);
static void (*fc_watch)(const void *, size_t);
static uint64_t (*fc_sum)(void);
static uint64_t (*fc_checksum)(const void *, size_t);

static const char *env(const char *n)
{
	const char *v = getenv(n);
	if (!v) {
		fprintf(stderr, "missing %s\n", n);
		exit(2);
	}
	return v;
}


struct rig {
	struct nvmeof_ctrl *c;
	struct nvmeof_queue *q;
	const struct nvmeof_ns *ns;
	struct nvmeof_mr *host;
};

static int rig_up(struct rig *r)
{
	struct nvmeof_ctrl_opts o;
	memset(r, 0, sizeof(*r));
	nvmeof_ctrl_opts_init(&o);
	o.traddr = env("NVMEOF_TB_ADDR");
	o.subnqn = env("NVMEOF_TB_NQN_A");
	if (nvmeof_ctrl_connect(&o, &r->c) || nvmeof_queue_create(r->c, NULL, &r->q) ||
	    !(r->ns = nvmeof_ns_get(r->c, 1)) || nvmeof_mr_alloc(r->c, 8 << 20, &r->host)) {
		/* a test that could not set up tested nothing: it fails */
		fprintf(stderr, "    setup: %s\n", nvmeof_errmsg());
		check_failed_in_test = 1;
		return -1;
	}
	return 0;
}

/* n bytes of a pattern seeded by seed, written at slba from host memory */
static int put_pattern(struct rig *r, uint64_t slba, size_t n, unsigned seed)
{
	uint8_t *h = nvmeof_mr_addr(r->host);
	for (size_t i = 0; i < n; i++)
		h[i] = (uint8_t)(i * 13 + seed + (i >> 9));
	return nvmeof_write_sync(r->q, r->ns, slba, (uint32_t)(n / 512), r->host, 0, 0);
}

static size_t pattern_diffs(const uint8_t *p, size_t n, unsigned seed)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += p[i] != (uint8_t)(i * 13 + seed + (i >> 9));
	return bad;
}

static void rig_down(struct rig *r)
{
	if (r->host)
		nvmeof_mr_release(r->host);
	if (r->q)
		nvmeof_queue_destroy(r->q);
	if (r->c)
		CHECK_EQ(nvmeof_ctrl_close(r->c), 0);
}

TEST(alloc_tries_dmabuf_then_registers_and_reads_into_gpu)
{
	struct rig r;
	struct nvmeof_mr *g = NULL;
	const size_t n = 4 << 20; /* above MDTS: four commands into device memory */
	if (rig_up(&r))
		goto out;
	fc_set("dmabuf", 0);
	MUST(nvmeof_mr_alloc_cuda(r.c, 0, n, &g));
	CHECK_STR(nvmeof_mr_cuda_registration(g), "peermem");
	/* dma-buf was tried first, and the fallback came after it */
	CHECK(strstr(fc_log(), "cuMemGetHandleForAddressRange") != NULL);
	/* put a pattern on the namespace through host memory */
	uint8_t *h = nvmeof_mr_addr(r.host);
	for (size_t i = 0; i < n; i++)
		h[i] = (uint8_t)(i * 7 + 3);
	uint64_t want = fc_checksum(h, n);
	MUST(nvmeof_write_sync(r.q, r.ns, 4096, (uint32_t)(n / 512), r.host, 0, 0));
	fc_watch(nvmeof_mr_addr(g), n);
	size_t mark = strlen(fc_log());
	MUST(nvmeof_read_sync(r.q, r.ns, 4096, (uint32_t)(n / 512), g, 0, 0));
	/* the read flushed GPUDirect writes, and did so after the data landed */
	CHECK(strstr(fc_log() + mark, "cuFlushGPUDirectRDMAWrites") != NULL);
	CHECK_EQ(fc_sum(), want);
	CHECK(!memcmp(nvmeof_mr_addr(g), h, n)); /* the double's "device" memory is host memory */
out:
	fc_watch(NULL, 0);
	if (g)
		CHECK_EQ(nvmeof_mr_release(g), 0);
	rig_down(&r);
}

TEST(dmabuf_refused_by_hca_falls_back_to_peermem)
{
	struct rig r;
	struct nvmeof_mr *g = NULL;
	if (rig_up(&r))
		goto out;
	fc_set("dmabuf", 1); /* the driver exports an fd; rxe cannot import it */
	MUST(nvmeof_mr_alloc_cuda(r.c, 0, 1 << 20, &g));
	CHECK_STR(nvmeof_mr_cuda_registration(g), "peermem");
	/* and the fallback registration does carry data */
	MUST(put_pattern(&r, 40000, 64 << 10, 5));
	MUST(nvmeof_read_sync(r.q, r.ns, 40000, 128, g, 4096, 0));
	CHECK_EQ(pattern_diffs((uint8_t *)nvmeof_mr_addr(g) + 4096, 64 << 10, 5), 0);
out:
	fc_set("dmabuf", 0);
	if (g)
		CHECK_EQ(nvmeof_mr_release(g), 0);
	rig_down(&r);
}

TEST(write_synchronizes_the_context_first)
{
	struct rig r;
	struct nvmeof_mr *g = NULL;
	const size_t n = 256 << 10;
	if (rig_up(&r))
		goto out;
	MUST(nvmeof_mr_alloc_cuda(r.c, 0, n, &g));
	/* a "kernel" is still producing the data when the write is issued */
	fc_fill(nvmeof_mr_addr(g), n, 0x5a);
	size_t mark = strlen(fc_log());
	MUST(nvmeof_write_sync(r.q, r.ns, 20000, (uint32_t)(n / 512), g, 0, 0));
	CHECK(strstr(fc_log() + mark, "cuCtxSynchronize") != NULL);
	memset(nvmeof_mr_addr(r.host), 0, n);
	MUST(nvmeof_read_sync(r.q, r.ns, 20000, (uint32_t)(n / 512), r.host, 0, 0));
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += ((uint8_t *)nvmeof_mr_addr(r.host))[i] != 0x5a;
	CHECK_EQ(bad, 0); /* the target got what the kernel produced */
out:
	if (g)
		CHECK_EQ(nvmeof_mr_release(g), 0);
	rig_down(&r);
}

static int done_calls;
static void done(void *arg, const struct nvmeof_cpl *cpl)
{
	(void)arg;
	done_calls += !cpl->err;
}

TEST(async_write_without_sync_sends_stale_data)
{
	/* The control for the test above: the asynchronous API leaves the
	 * synchronization to its caller, and skipping it is visible. */
	struct rig r;
	struct nvmeof_mr *g = NULL;
	const size_t n = 64 << 10;
	if (rig_up(&r))
		goto out;
	MUST(nvmeof_mr_alloc_cuda(r.c, 0, n, &g));
	memset(nvmeof_mr_addr(g), 0x11, n);
	fc_fill(nvmeof_mr_addr(g), n, 0x77);
	done_calls = 0;
	MUST(nvmeof_write(r.q, r.ns, 30000, (uint32_t)(n / 512), g, 0, done, NULL));
	while (done_calls < 1 && nvmeof_queue_wait(r.q, 1, 5000) > 0)
		;
	MUST(nvmeof_read_sync(r.q, r.ns, 30000, (uint32_t)(n / 512), r.host, 0, 0));
	CHECK_EQ(((uint8_t *)nvmeof_mr_addr(r.host))[0], 0x11);
	/* with the documented call, the same sequence is right */
	MUST(nvmeof_cuda_sync(g));
	done_calls = 0;
	MUST(nvmeof_write(r.q, r.ns, 30000, (uint32_t)(n / 512), g, 0, done, NULL));
	while (done_calls < 1 && nvmeof_queue_wait(r.q, 1, 5000) > 0)
		;
	MUST(nvmeof_read_sync(r.q, r.ns, 30000, (uint32_t)(n / 512), r.host, 0, 0));
	CHECK_EQ(((uint8_t *)nvmeof_mr_addr(r.host))[n - 1], 0x77);
out:
	if (g)
		CHECK_EQ(nvmeof_mr_release(g), 0);
	rig_down(&r);
}

TEST(register_existing_device_allocation)
{
	struct rig r;
	struct nvmeof_mr *g = NULL;
	unsigned long long d = 0;
	void *ctx = NULL, *prev;
	int (*retain)(void **, int) = (int (*)(void **, int))dlsym(dbl, "cuDevicePrimaryCtxRetain");
	int (*push)(void *) = (int (*)(void *))dlsym(dbl, "cuCtxPushCurrent_v2");
	int (*pop)(void **) = (int (*)(void **))dlsym(dbl, "cuCtxPopCurrent_v2");
	int (*alloc)(unsigned long long *, size_t) = (int (*)(unsigned long long *, size_t))dlsym(dbl, "cuMemAlloc_v2");
	int (*mfree)(unsigned long long) = (int (*)(unsigned long long))dlsym(dbl, "cuMemFree_v2");
	if (rig_up(&r))
		goto out;
	CHECK_EQ(retain(&ctx, 0), 0);
	CHECK_EQ(push(ctx), 0);
	CHECK_EQ(alloc(&d, 1 << 20), 0);
	pop(&prev);
	MUST(nvmeof_mr_register_cuda(r.c, (void *)(uintptr_t)d, 1 << 20, &g));
	MUST(put_pattern(&r, 50000, 1 << 20, 9));
	MUST(nvmeof_read_sync(r.q, r.ns, 50000, 2048, g, 0, 0));
	/* the data landed in the caller's own allocation */
	CHECK_EQ(pattern_diffs((const uint8_t *)(uintptr_t)d, 1 << 20, 9), 0);
	/* host memory is refused with a reason */
	struct nvmeof_mr *bad = NULL;
	CHECK_EQ(nvmeof_mr_register_cuda(r.c, nvmeof_mr_addr(r.host), 4096, &bad), NVMEOF_ECUDA);
	CHECK(strstr(nvmeof_errmsg(), "not CUDA device memory") != NULL);
	CHECK(bad == NULL);
out:
	if (g)
		CHECK_EQ(nvmeof_mr_release(g), 0);
	if (d) {
		push(ctx);
		mfree(d);
		pop(&prev);
	}
	rig_down(&r);
}

TEST(both_registrations_failing_names_both_causes)
{
	struct rig r;
	struct nvmeof_mr *g = NULL;
	if (rig_up(&r))
		goto out;
	fc_set("badalloc", 1);
	CHECK_EQ(nvmeof_mr_alloc_cuda(r.c, 0, 1 << 20, &g), NVMEOF_ECUDA);
	printf("    %s\n", nvmeof_errmsg());
	CHECK(strstr(nvmeof_errmsg(), "dma-buf: ") != NULL);
	CHECK(strstr(nvmeof_errmsg(), "peermem: ibv_reg_mr") != NULL);
	CHECK(g == NULL);
	CHECK_EQ(nvmeof_mr_alloc_cuda(r.c, 3, 4096, &g), NVMEOF_ECUDA); /* no GPU 3 */
	CHECK(strstr(nvmeof_errmsg(), "GPU 3") != NULL);
out:
	fc_set("badalloc", 0);
	rig_down(&r); /* nothing leaked: close succeeds with no registrations left */
}

/* A GPU's PCI address is what the driver says for that GPU (the engine
 * matches it against the HCA's for placement): two addresses the double
 * is told to say come back as they are, and a GPU the driver does not
 * have is an error naming the GPU and the driver's status. Needs no
 * target. */
TEST(cuda_pci_bus_id_is_the_drivers_for_that_gpu)
{
	char b[32];
	setenv("FAKECUDA_PCI_BUS_ID", "0000:3b:00.0", 1);
	MUST(nvmeof_cuda_pci_bus_id(0, b, sizeof(b)));
	CHECK_STR(b, "0000:3b:00.0");
	setenv("FAKECUDA_PCI_BUS_ID", "0000:af:00.0", 1);
	MUST(nvmeof_cuda_pci_bus_id(0, b, sizeof(b)));
	CHECK_STR(b, "0000:af:00.0");
	CHECK_EQ(nvmeof_cuda_pci_bus_id(1, b, sizeof(b)), NVMEOF_ECUDA);
	printf("    GPU 1: %s\n", nvmeof_errmsg());
	CHECK(strstr(nvmeof_errmsg(), "GPU 1 PCI address") != NULL);
	CHECK(strstr(nvmeof_errmsg(), "INVALID_DEVICE") != NULL);
out:
	unsetenv("FAKECUDA_PCI_BUS_ID");
}

static int no_cuda(void)
{
	struct rig r;
	struct nvmeof_mr *g = NULL;
	char why[256];
	if (rig_up(&r)) {
		printf("no-cuda: 0 passed, 1 failed, 0 skipped\n");
		return 1;
	}
	int rc = nvmeof_mr_alloc_cuda(r.c, 0, 4096, &g);
	printf("no-cuda: %s: %s\n", nvmeof_strerror(rc), nvmeof_errmsg());
	int ok = rc == NVMEOF_ECUDA && g == NULL && strstr(nvmeof_errmsg(), "could not be loaded") &&
		 nvmeof_cuda_available(why, sizeof(why)) == NVMEOF_ECUDA;
	rig_down(&r);
	printf("no-cuda: %s\n", ok ? "1 passed, 0 failed, 0 skipped" : "0 passed, 1 failed, 0 skipped");
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct test_case all[] = {
		T(alloc_tries_dmabuf_then_registers_and_reads_into_gpu),
		T(dmabuf_refused_by_hca_falls_back_to_peermem),
		T(write_synchronizes_the_context_first),
		T(async_write_without_sync_sends_stale_data),
		T(register_existing_device_allocation),
		T(both_registrations_failing_names_both_causes),
		T(cuda_pci_bus_id_is_the_drivers_for_that_gpu),
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "no-cuda"))
		return no_cuda();
	char why[256];
	if (nvmeof_cuda_available(why, sizeof(why))) {
		fprintf(stderr, "gpu_test: %s (set NVMEOF_CUDA_LIB to the test double)\n", why);
		return 1;
	}
	dbl = dlopen(env("NVMEOF_CUDA_LIB"), RTLD_NOW | RTLD_NOLOAD);
	if (!dbl || !(fc_log = (const char *(*)(void))dlsym(dbl, "fakecuda_log"))) {
		fprintf(stderr, "gpu_test: NVMEOF_CUDA_LIB is not the test double\n");
		return 1;
	}
	fc_set = (void (*)(const char *, int))dlsym(dbl, "fakecuda_set");
	fc_fill = (void (*)(void *, size_t, int))dlsym(dbl, "fakecuda_launch_fill");
	fc_watch = (void (*)(const void *, size_t))dlsym(dbl, "fakecuda_watch");
	fc_sum = (uint64_t (*)(void))dlsym(dbl, "fakecuda_flush_sum");
	fc_checksum = (uint64_t (*)(const void *, size_t))dlsym(dbl, "fakecuda_checksum");
	check_limit_each_test(); /* each test in a child, ended at its own limit */
	return run_tests("target-gpu", all, sizeof(all) / sizeof(all[0]));
}
