/*
 * TEST DOUBLE of the CUDA driver API (libcuda.so.1), backed by host memory.
 * Loaded by libnvmeof through NVMEOF_CUDA_LIB in tests, so the whole GPU
 * code path (loading, allocation, the dma-buf attempt and its fallback,
 * registration, flush and synchronize ordering) runs against the real
 * target on machines without a GPU. It is not CUDA and proves nothing about
 * a real GPU or GPUDirect RDMA; see the README.
 *
 * Controls for tests (found with dlsym on the same handle):
 *   fakecuda_log()            the calls made so far, one name per line
 *   fakecuda_set(key, val)    "dmabuf": 1 = cuMemGetHandleForAddressRange
 *                             returns an fd (not a real dma-buf), 0 = NOT_SUPPORTED;
 *                             "badalloc": 1 = cuMemAlloc returns unmapped addresses
 *                             "pcie": the dma-buf PCIe mapping type (flag 1):
 *                             0 = an older driver (version 12020) that refuses
 *                             any flag with INVALID_VALUE, 1 = a 12.8 driver
 *                             that takes it (12080), 2 = a 12.8 driver that
 *                             refuses it; FAKECUDA_PCIE=N at cuInit too
 *   FAKECUDA_VERSION=N        at cuInit: cuDriverGetVersion says N instead
 *   FAKECUDA_PCI_BUS_ID=ADDR  cuDeviceGetPCIBusId says ADDR (read at each
 *                             call) instead of 0000:00:00.0
 *   FAKECUDA_LOG_FILE=PATH    the log is written there when the process
 *                             exits (for a program such as fio that cannot
 *                             call fakecuda_log)
 *   the log names cuMemGetHandleForAddressRange's flags: "...Range flags=1"
 *   fakecuda_launch_fill(p, n, byte)  a "kernel" whose writes land only at
 *                             the next cuCtxSynchronize
 *   fakecuda_watch(p, n)      checksum this range at every flush
 *   fakecuda_flush_sum()      the checksum taken by the last flush
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum { OK = 0, ERR_INVALID_VALUE = 1, ERR_NO_DEVICE = 100, ERR_INVALID_DEVICE = 101, ERR_NOT_SUPPORTED = 801 };

static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static char logbuf[1 << 16];
static size_t loglen;
static int opt_dmabuf, opt_badalloc, opt_pcie, opt_version;
static int the_ctx = 1; /* one primary context; its address is the handle */
static __thread void *current;
static struct { uint8_t *p; size_t n; int byte; int pending; } fill;
static struct { const uint8_t *p; size_t n; uint64_t sum; } watch;
static struct { uintptr_t p; size_t n; } allocs[256];

static void note(const char *name)
{
	pthread_mutex_lock(&lk);
	size_t l = strlen(name);
	if (loglen + l + 2 < sizeof(logbuf)) {
		memcpy(logbuf + loglen, name, l);
		loglen += l;
		logbuf[loglen++] = '\n';
		logbuf[loglen] = '\0';
	}
	pthread_mutex_unlock(&lk);
}

EXPORT const char *fakecuda_log(void) { return logbuf; }
__attribute__((destructor)) static void log_to_file(void)
{
	const char *path = getenv("FAKECUDA_LOG_FILE");
	FILE *f = path ? fopen(path, "w") : NULL;
	if (f) {
		pthread_mutex_lock(&lk);
		fputs(logbuf, f);
		pthread_mutex_unlock(&lk);
		fclose(f);
	}
}
EXPORT void fakecuda_set(const char *key, int val)
{
	if (!strcmp(key, "dmabuf")) opt_dmabuf = val;
	else if (!strcmp(key, "badalloc")) opt_badalloc = val;
	else if (!strcmp(key, "pcie")) opt_pcie = val;
}
EXPORT void fakecuda_launch_fill(void *p, size_t n, int byte)
{
	note("<kernel launched>");
	fill.p = p; fill.n = n; fill.byte = byte; fill.pending = 1;
}
EXPORT void fakecuda_watch(const void *p, size_t n) { watch.p = p; watch.n = n; }
EXPORT uint64_t fakecuda_flush_sum(void) { return watch.sum; }
EXPORT uint64_t fakecuda_checksum(const void *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const uint8_t *)p)[i]) * 1099511628211ull;
	return h;
}

EXPORT CUresult cuInit(unsigned flags)
{
	(void)flags;
	note("cuInit");
	const char *e = getenv("FAKECUDA_DMABUF");
	opt_dmabuf = e && *e == '1';
	e = getenv("FAKECUDA_PCIE");
	opt_pcie = e ? atoi(e) : 0;
	e = getenv("FAKECUDA_VERSION");
	opt_version = e ? atoi(e) : 0;
	return OK;
}
EXPORT CUresult cuDriverGetVersion(int *v)
{
	note("cuDriverGetVersion");
	*v = opt_version ? opt_version : opt_pcie ? 12080 : 12020;
	return OK;
}
EXPORT CUresult cuDeviceGet(int *dev, int ordinal)
{
	note("cuDeviceGet");
	if (ordinal != 0) return ERR_INVALID_DEVICE;
	*dev = 0;
	return OK;
}
EXPORT CUresult cuDeviceGetPCIBusId(char *buf, int len, int dev)
{
	const char *a = getenv("FAKECUDA_PCI_BUS_ID");
	note("cuDeviceGetPCIBusId");
	if (dev != 0) return ERR_INVALID_DEVICE;
	snprintf(buf, (size_t)len, "%s", a ? a : "0000:00:00.0");
	return OK;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)dev; note("cuDevicePrimaryCtxRetain"); *ctx = &the_ctx; return OK; }
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; note("cuDevicePrimaryCtxRelease"); return OK; }
EXPORT CUresult cuCtxPushCurrent_v2(void *ctx) { current = ctx; return ctx == &the_ctx ? OK : ERR_INVALID_VALUE; }
EXPORT CUresult cuCtxPopCurrent_v2(void **ctx) { if (ctx) *ctx = current; current = NULL; return OK; }
EXPORT CUresult cuCtxSynchronize(void)
{
	note("cuCtxSynchronize");
	if (current != &the_ctx) return ERR_INVALID_VALUE; /* must be in the owning context */
	if (fill.pending) {
		memset(fill.p, fill.byte, fill.n); /* the "kernel" finishes now */
		fill.pending = 0;
	}
	return OK;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t n)
{
	note("cuMemAlloc");
	if (current != &the_ctx) return ERR_INVALID_VALUE;
	void *p;
	if (opt_badalloc) {
		/* an address nothing is mapped at: registration must fail */
		p = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) return 2;
		munmap(p, n);
	} else {
		p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
		if (!p) return 2;
		memset(p, 0, n);
	}
	for (int i = 0; i < 256; i++)
		if (!allocs[i].p) { allocs[i].p = (uintptr_t)p; allocs[i].n = n; break; }
	*d = (CUdeviceptr)(uintptr_t)p;
	return OK;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr d)
{
	note("cuMemFree");
	for (int i = 0; i < 256; i++)
		if (allocs[i].p == d) {
			if (watch.p && (uintptr_t)watch.p >= d && (uintptr_t)watch.p < d + allocs[i].n)
				watch.p = NULL; /* never checksum freed memory */
			if (!opt_badalloc) free((void *)(uintptr_t)d);
			allocs[i].p = 0;
			return OK;
		}
	return ERR_INVALID_VALUE;
}
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) { note("cuMemcpyHtoD"); memcpy((void *)(uintptr_t)d, h, n); return OK; }
EXPORT CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) { note("cuMemcpyDtoH"); memcpy(h, (void *)(uintptr_t)d, n); return OK; }
EXPORT CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr d)
{
	note("cuPointerGetAttribute");
	for (int i = 0; i < 256; i++)
		if (allocs[i].p && d >= allocs[i].p && d < allocs[i].p + allocs[i].n) {
			if (attr == 1) { *(void **)data = &the_ctx; return OK; } /* CONTEXT */
			if (attr == 9) { *(int *)data = 0; return OK; }          /* DEVICE_ORDINAL */
			return ERR_INVALID_VALUE;
		}
	return ERR_INVALID_VALUE; /* not device memory */
}
EXPORT CUresult cuPointerSetAttribute(const void *v, int attr, CUdeviceptr d) { (void)v; (void)attr; (void)d; note("cuPointerSetAttribute"); return OK; }
EXPORT CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr d, size_t n, int type, unsigned long long flags)
{
	(void)d; (void)n;
	char what[64];
	snprintf(what, sizeof(what), "cuMemGetHandleForAddressRange flags=%llu", flags);
	note(what);
	if (flags > (opt_pcie == 1 ? 1u : 0u)) return ERR_INVALID_VALUE; /* 1: the PCIe mapping type */
	if (!opt_dmabuf || type != 1) return ERR_NOT_SUPPORTED;
	/* a plain memfd: an importer that checks for a dma-buf refuses it */
	*(int *)handle = memfd_create("fakecuda-not-a-dmabuf", 0);
	return *(int *)handle < 0 ? 2 : OK;
}
EXPORT CUresult cuFlushGPUDirectRDMAWrites(int target, int scope)
{
	(void)target;
	note("cuFlushGPUDirectRDMAWrites");
	if (current != &the_ctx || scope != 100) return ERR_INVALID_VALUE; /* owner scope, owning ctx */
	if (watch.p) watch.sum = fakecuda_checksum(watch.p, watch.n);
	return OK;
}
EXPORT CUresult cuGetErrorName(CUresult r, const char **s)
{
	switch (r) {
	case ERR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
	case ERR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
	case ERR_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
	case ERR_NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
	default: *s = "CUDA_ERROR_UNKNOWN";
	}
	return OK;
}
