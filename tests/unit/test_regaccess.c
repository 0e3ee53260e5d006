/* The access flags each data region is registered with: PCIe relaxed
 * ordering exactly when the controller has it on, for host memory and for
 * GPU memory by both routes (dma-buf, peermem; the CUDA test double stands
 * in for the driver). The verbs registration calls are defined here, so the
 * library's own calls land in them: no RDMA device is needed, and what is
 * checked is what the library hands to rdma-core. */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "mem.h"

static struct {
	int calls;
	char fn[32];
	unsigned int access;
} seen;
static struct ibv_mr fake_mr;

static struct ibv_mr *record(const char *fn, unsigned int access)
{
	seen.calls++;
	snprintf(seen.fn, sizeof(seen.fn), "%s", fn);
	seen.access = access;
	return &fake_mr;
}
/* ibv_reg_mr is also a macro of verbs.h: the parentheses define the function */
struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	(void)pd, (void)addr, (void)length;
	return record("ibv_reg_mr", (unsigned int)access);
}
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	(void)pd, (void)addr, (void)length, (void)iova;
	return record("ibv_reg_mr_iova2", access);
}
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
				 int access)
{
	(void)pd, (void)offset, (void)length, (void)iova, (void)fd;
	return record("ibv_reg_dmabuf_mr", (unsigned int)access);
}
static atomic_int dereg_us; /* a deregistration is a system call: it takes time */
int ibv_dereg_mr(struct ibv_mr *mr)
{
	if (atomic_load(&dereg_us))
		usleep((useconds_t)atomic_load(&dereg_us));
	return mr == &fake_mr ? 0 : EINVAL;
}

#define REMOTE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)
static struct ibv_pd *const PD = (struct ibv_pd *)(uintptr_t)0x1000; /* never dereferenced */
static char double_path[PATH_MAX];

static void host_region(bool relaxed)
{
	struct mem_ctx mc;
	struct nvmeof_mr *m = NULL;
	static char buf[8192];
	mem_ctx_init(&mc, PD, relaxed);
	memset(&seen, 0, sizeof(seen));
	MUST(mem_register(&mc, NULL, buf, sizeof(buf), &m));
	CHECK_EQ(seen.calls, 1);
	CHECK_EQ(seen.access & REMOTE, REMOTE);
	CHECK_EQ(!!(seen.access & IBV_ACCESS_RELAXED_ORDERING), relaxed);
	MUST(nvmeof_mr_release(m));
	memset(&seen, 0, sizeof(seen));
	MUST(mem_alloc(&mc, NULL, 4096, &m));
	CHECK_EQ(!!(seen.access & IBV_ACCESS_RELAXED_ORDERING), relaxed);
	MUST(nvmeof_mr_release(m));
out:
	mem_ctx_destroy(&mc);
}

TEST(host_memory_relaxed_when_on)
{
	host_region(true);
}

TEST(host_memory_strict_when_off)
{
	host_region(false);
	/* a variable flag with an optional bit goes through the call that
	 * passes optional flags on (rdma-core's ibv_reg_mr macro) */
	host_region(true);
	CHECK_STR(seen.fn, "ibv_reg_mr_iova2");
}

static const char *(*fc_log)(void);
static int (*fc_set)(const char *, int);

/* dmabuf: the double exports an fd (dma-buf route) or refuses (peermem);
 * pcie: its answer to the PCIe mapping type (fakecuda.c). */
static void gpu_region_pcie(bool relaxed, int dmabuf, int pcie, const char *want_fn, const char *want_reg)
{
	struct mem_ctx mc;
	struct nvmeof_mr *m = NULL;
	void *h = dlopen(double_path, RTLD_NOW | RTLD_NOLOAD);
	fc_set = h ? (int (*)(const char *, int))dlsym(h, "fakecuda_set") : NULL;
	fc_log = h ? (const char *(*)(void))dlsym(h, "fakecuda_log") : NULL;
	if (h)
		dlclose(h);
	CHECK(fc_set && fc_log);
	if (!fc_set || !fc_log)
		return;
	fc_set("dmabuf", dmabuf);
	fc_set("pcie", pcie);
	mem_ctx_init(&mc, PD, relaxed);
	memset(&seen, 0, sizeof(seen));
	MUST(mem_alloc_cuda(&mc, NULL, 0, 65536, &m));
	CHECK_STR(seen.fn, want_fn);
	CHECK_STR(nvmeof_mr_cuda_registration(m), want_reg);
	CHECK_EQ(seen.access & REMOTE, REMOTE);
	CHECK_EQ(!!(seen.access & IBV_ACCESS_RELAXED_ORDERING), relaxed);
	MUST(nvmeof_mr_release(m));
out:
	mem_ctx_destroy(&mc);
}
static void gpu_region(bool relaxed, int dmabuf, const char *want_fn, const char *want_reg)
{
	gpu_region_pcie(relaxed, dmabuf, 1, want_fn, want_reg);
}

/* How many times the log so far names s. */
static int count(const char *s)
{
	int n = 0;
	for (const char *p = fc_log(); (p = strstr(p, s)); p += strlen(s))
		n++;
	return n;
}

TEST(dmabuf_pcie_mapping_type_where_the_driver_offers_it)
{
	char why[256];
	if (nvmeof_cuda_available(why, sizeof(why))) {
		fprintf(stderr, "    the CUDA test double did not load: %s\n", why);
		CHECK(0);
		return;
	}
	/* 12.8 taking the flag: asked once, with it */
	int f1 = count("flags=1"), f0 = count("flags=0");
	gpu_region_pcie(true, 1, 1, "ibv_reg_dmabuf_mr", "dma-buf, PCIe mapping");
	CHECK_EQ(count("flags=1") - f1, 1);
	CHECK_EQ(count("flags=0") - f0, 0);
	/* 12.8 refusing it: asked with it, then without, the default mapping */
	f1 = count("flags=1"), f0 = count("flags=0");
	gpu_region_pcie(true, 1, 2, "ibv_reg_dmabuf_mr", "dma-buf");
	CHECK_EQ(count("flags=1") - f1, 1);
	CHECK_EQ(count("flags=0") - f0, 1);
	/* an older driver: the flag is not offered, so never asked */
	f1 = count("flags=1"), f0 = count("flags=0");
	gpu_region_pcie(true, 1, 0, "ibv_reg_dmabuf_mr", "dma-buf");
	CHECK_EQ(count("flags=1") - f1, 0);
	CHECK_EQ(count("flags=0") - f0, 1);
	/* no dma-buf at all: peermem after the attempts */
	gpu_region_pcie(true, 0, 1, "ibv_reg_mr_iova2", "peermem");
}

TEST(gpu_memory_by_dmabuf_and_peermem_either_way)
{
	char why[256];
	/* loads the double (NVMEOF_CUDA_LIB), so fakecuda_set can be found */
	if (nvmeof_cuda_available(why, sizeof(why))) {
		fprintf(stderr, "    the CUDA test double did not load: %s\n", why);
		CHECK(0);
		return;
	}
	gpu_region(true, 1, "ibv_reg_dmabuf_mr", "dma-buf, PCIe mapping");
	gpu_region(false, 1, "ibv_reg_dmabuf_mr", "dma-buf, PCIe mapping");
	gpu_region(true, 0, "ibv_reg_mr_iova2", "peermem");
	gpu_region(false, 0, "ibv_reg_mr_iova2", "peermem");
}

/* The event thread reads a log into a region of its own while a user may
 * be closing the controller: that region must never show in the count
 * close checks (a close that saw it failed with EBUSY, "still has 1
 * registered region(s)", when the count went up at allocation and back
 * down a moment later, across the deregistration's system call). */
static struct mem_ctx churn_mc;
static atomic_bool churn_stop;
static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&churn_stop)) {
		struct nvmeof_mr *m = NULL;
		if (mem_alloc_internal(&churn_mc, NULL, 8192, &m) || nvmeof_mr_release(m))
			break;
	}
	return NULL;
}

TEST(the_librarys_own_regions_never_count_against_close)
{
	pthread_t th;
	uint32_t seen_busy = 0;
	mem_ctx_init(&churn_mc, PD, false);
	atomic_store(&dereg_us, 50);
	atomic_store(&churn_stop, false);
	CHECK_EQ(pthread_create(&th, NULL, churn, NULL), 0);
	for (int i = 0; i < 20000; i++) {
		seen_busy += mem_ctx_count(&churn_mc) != 0;
		usleep(5);
	}
	atomic_store(&churn_stop, true);
	pthread_join(th, NULL);
	atomic_store(&dereg_us, 0);
	CHECK_EQ(seen_busy, 0);
	/* a user's region still counts */
	struct nvmeof_mr *m = NULL;
	MUST(mem_alloc(&churn_mc, NULL, 4096, &m));
	CHECK_EQ(mem_ctx_count(&churn_mc), 1);
	MUST(nvmeof_mr_release(m));
	CHECK_EQ(mem_ctx_count(&churn_mc), 0);
out:
	mem_ctx_destroy(&churn_mc);
}

int main(int argc, char **argv)
{
	/* the double sits beside this test in the build folder */
	char self[PATH_MAX];
	snprintf(self, sizeof(self), "%s", argv[0]);
	snprintf(double_path, sizeof(double_path), "%s/libcuda-double.so", dirname(self));
	setenv("NVMEOF_CUDA_LIB", double_path, 1);
	static const struct test_case t[] = {
		T(host_memory_relaxed_when_on),
		T(host_memory_strict_when_off),
		T(gpu_memory_by_dmabuf_and_peermem_either_way),
		T(dmabuf_pcie_mapping_type_where_the_driver_offers_it),
		T(the_librarys_own_regions_never_count_against_close),
	};
	return run_named_tests("unit-regaccess", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
