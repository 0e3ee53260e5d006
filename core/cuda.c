/*
 * CUDA device memory as the direct target of NVMe/RDMA reads and the source
 * of writes. The driver API (libcuda.so.1) is loaded at run time, so the
 * library builds and runs where there is no CUDA; asking for GPU memory
 * there is a clear error. NVMEOF_CUDA_LIB names another library (the test
 * double in tests/cuda-double, or a driver outside the loader's path).
 *
 * Ordering (GPUDirect RDMA): before a read into GPU memory is consumed, the
 * completed RDMA writes must be flushed into the GPU's view
 * (cuFlushGPUDirectRDMAWrites in the owning context); before a write from
 * GPU memory, the owning context is synchronized so kernels that produced
 * the data have finished. The synchronous calls do both; async callers use
 * nvmeof_cuda_flush() and nvmeof_cuda_sync().
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "mem.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

#define CU_POINTER_ATTRIBUTE_CONTEXT 1
#define CU_POINTER_ATTRIBUTE_SYNC_MEMOPS 6
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1
/* CUDA 12.8: map the dma-buf for a PCIe peer. Where the GPU also has a
 * coherent C2C link (Grace), the default mapping is one the NIC cannot use. */
#define CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE 1
#define CUDA_PCIE_MAPPING_VERSION 12080
#define CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX 0
#define CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER 100
#define GPU_PAGE (64u << 10) /* GPUDirect pins device memory in 64 KiB pages */

static struct {
	void *h;
	char why[256];
	CUresult (*cuInit)(unsigned);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDeviceGetPCIBusId)(char *, int, CUdevice);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
	CUresult (*cuCtxPushCurrent)(CUcontext);
	CUresult (*cuCtxPopCurrent)(CUcontext *);
	CUresult (*cuCtxSynchronize)(void);
	CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
	CUresult (*cuMemFree)(CUdeviceptr);
	CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
	CUresult (*cuPointerSetAttribute)(const void *, int, CUdeviceptr);
	CUresult (*cuMemGetHandleForAddressRange)(void *, CUdeviceptr, size_t, int, unsigned long long);
	CUresult (*cuFlushGPUDirectRDMAWrites)(int, int);
	CUresult (*cuGetErrorName)(CUresult, const char **);
	CUresult (*cuDriverGetVersion)(int *);
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void)
{
	const char *lib = getenv("NVMEOF_CUDA_LIB");
	cu.h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cu.h) {
		snprintf(cu.why, sizeof(cu.why), "the CUDA driver library could not be loaded: %s", dlerror());
		return;
	}
#define SYM(field, name, required)                                                             \
	do {                                                                                   \
		*(void **)&cu.field = dlsym(cu.h, name);                                       \
		if (!cu.field && (required)) {                                                 \
			snprintf(cu.why, sizeof(cu.why), "the CUDA driver lacks %s", name);     \
			dlclose(cu.h);                                                         \
			cu.h = NULL;                                                           \
			return;                                                                \
		}                                                                              \
	} while (0)
	SYM(cuInit, "cuInit", 1);
	SYM(cuDeviceGet, "cuDeviceGet", 1);
	SYM(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", 1);
	SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1);
	SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 0);
	if (!cu.cuDevicePrimaryCtxRelease)
		SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 1);
	SYM(cuCtxPushCurrent, "cuCtxPushCurrent_v2", 1);
	SYM(cuCtxPopCurrent, "cuCtxPopCurrent_v2", 1);
	SYM(cuCtxSynchronize, "cuCtxSynchronize", 1);
	SYM(cuMemAlloc, "cuMemAlloc_v2", 1);
	SYM(cuMemFree, "cuMemFree_v2", 1);
	SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2", 1);
	SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2", 1);
	SYM(cuPointerGetAttribute, "cuPointerGetAttribute", 1);
	SYM(cuPointerSetAttribute, "cuPointerSetAttribute", 0);
	SYM(cuMemGetHandleForAddressRange, "cuMemGetHandleForAddressRange", 0); /* CUDA 11.7 */
	SYM(cuFlushGPUDirectRDMAWrites, "cuFlushGPUDirectRDMAWrites", 0);       /* CUDA 11.3 */
	SYM(cuGetErrorName, "cuGetErrorName", 0);
	SYM(cuDriverGetVersion, "cuDriverGetVersion", 0);
#undef SYM
	CUresult r = cu.cuInit(0);
	if (r) {
		snprintf(cu.why, sizeof(cu.why), "cuInit failed: CUDA error %d (no GPU or driver?)", r);
		dlclose(cu.h);
		cu.h = NULL;
	}
}

/* 12080 for 12.8; 0 where the driver does not say */
static int cu_version(void)
{
	int v = 0;
	if (!cu.cuDriverGetVersion || cu.cuDriverGetVersion(&v))
		return 0;
	return v;
}

static const char *cu_name(CUresult r)
{
	const char *n = NULL;
	if (cu.cuGetErrorName && cu.cuGetErrorName(r, &n) == 0 && n)
		return n;
	return "CUDA error";
}

static int cu_ready(const char *op)
{
	pthread_once(&cu_once, cu_load);
	if (!cu.h)
		return nvmeof_err(NVMEOF_ECUDA, "%s: %s", op, cu.why);
	return 0;
}

int nvmeof_cuda_available(char *why, size_t len)
{
	int rc = cu_ready("CUDA");
	if (why && len)
		snprintf(why, len, "%s", rc ? nvmeof_errmsg() : "available");
	return rc;
}

/* Runs with ctx current, restoring the caller's context after. */
#define IN_CTX(ctx, call, res)                                                                 \
	do {                                                                                   \
		CUcontext prev_;                                                               \
		res = cu.cuCtxPushCurrent(ctx);                                                \
		if (!res) {                                                                    \
			res = (call);                                                          \
			cu.cuCtxPopCurrent(&prev_);                                            \
		}                                                                              \
	} while (0)

static int reg_device_memory(struct mem_ctx *mc, struct nvmeof_mr *m, const char *op)
{
	char dmabuf_why[160] = "", peer_why[160];
	int access = mc->access;
	CUdeviceptr d = (CUdeviceptr)(uintptr_t)m->addr;
	CUresult r;
	/* dma-buf first: no out-of-tree module, works with any HCA driver that
	 * imports dma-bufs. The range must start and end on a GPU page. */
	if (!cu.cuMemGetHandleForAddressRange) {
		snprintf(dmabuf_why, sizeof(dmabuf_why), "driver lacks cuMemGetHandleForAddressRange");
	} else {
		CUdeviceptr base = d & ~(CUdeviceptr)(GPU_PAGE - 1);
		size_t span = ((d + m->len + GPU_PAGE - 1) & ~(CUdeviceptr)(GPU_PAGE - 1)) - base;
		int fd = -1;
		bool pcie = false;
		/* The PCIe mapping where the driver offers it (12.8+, or a
		 * driver that does not say): a driver that refuses the flag
		 * gets the default mapping, as before. */
		int v = cu_version();
		if (!v || v >= CUDA_PCIE_MAPPING_VERSION) {
			IN_CTX(m->cuda_ctx, cu.cuMemGetHandleForAddressRange(&fd, base, span,
									      CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
									      CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE), r);
			pcie = !r;
		}
		if (!pcie)
			IN_CTX(m->cuda_ctx, cu.cuMemGetHandleForAddressRange(&fd, base, span,
									      CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0), r);
		if (r) {
			snprintf(dmabuf_why, sizeof(dmabuf_why), "cuMemGetHandleForAddressRange: %s (%d)",
				 cu_name(r), r);
		} else {
			m->mr = ibv_reg_dmabuf_mr(mc->pd, d - base, m->len, (uint64_t)d, fd, access);
			if (!m->mr)
				snprintf(dmabuf_why, sizeof(dmabuf_why), "ibv_reg_dmabuf_mr: %s", strerror(errno));
			close(fd); /* the registration holds its own reference */
			if (m->mr) {
				m->cuda_reg = pcie ? "dma-buf, PCIe mapping" : "dma-buf";
				return 0;
			}
		}
	}
	/* nvidia_peermem: the HCA driver resolves the device pointer itself. */
	m->mr = ibv_reg_mr(mc->pd, m->addr, m->len, access);
	if (m->mr) {
		m->cuda_reg = "peermem";
		return 0;
	}
	snprintf(peer_why, sizeof(peer_why), "ibv_reg_mr on the device pointer: %s%s", strerror(errno),
		 errno == EFAULT || errno == EINVAL ? " (is nvidia_peermem loaded?)" : "");
	return nvmeof_err(NVMEOF_ECUDA, "%s: GPU memory at 0x%llx (%zu bytes) could not be registered: "
			  "dma-buf: %s; peermem: %s", op, (unsigned long long)d, m->len, dmabuf_why, peer_why);
}

static int cuda_mr_new(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, CUdeviceptr d, size_t len,
		       bool owned, int dev,
		       CUcontext ctx, struct nvmeof_mr **out, const char *op)
{
	struct nvmeof_mr *m = calloc(1, sizeof(*m));
	CUresult r;
	unsigned one = 1;
	if (!m)
		return nvmeof_err(NVMEOF_ENOMEM, "%s: out of memory", op);
	m->mc = mc;
	m->owner = owner;
	m->addr = (void *)(uintptr_t)d;
	m->len = len;
	m->owned = owned;
	m->cuda = true;
	m->cuda_ctx = ctx;
	m->cuda_dev = dev;
	/* Memory operations on this range synchronize with RDMA to it. */
	if (cu.cuPointerSetAttribute)
		IN_CTX(ctx, cu.cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d), r);
	int rc = reg_device_memory(mc, m, op);
	if (rc) {
		free(m);
		return rc;
	}
	m->lkey = m->mr->lkey;
	m->rkey = m->mr->rkey;
	mem_ctx_ref(mc, 1);
	mem_link(mc, m);
	*out = m;
	return 0;
}

int mem_alloc_cuda(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, int gpu, size_t len,
		   struct nvmeof_mr **out)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d;
	CUresult r;
	int rc;
	if (!len || !out || gpu < 0)
		return nvmeof_err(NVMEOF_EINVAL, "allocate GPU memory: %s",
				  !len ? "zero length" : !out ? "no output" : "negative GPU index");
	*out = NULL;
	if ((rc = cu_ready("allocate GPU memory")))
		return rc;
	if ((r = cu.cuDeviceGet(&dev, gpu)))
		return nvmeof_err(NVMEOF_ECUDA, "allocate GPU memory: GPU %d: cuDeviceGet: %s (%d)", gpu, cu_name(r), r);
	if ((r = cu.cuDevicePrimaryCtxRetain(&ctx, dev)))
		return nvmeof_err(NVMEOF_ECUDA, "allocate GPU memory: GPU %d: cuDevicePrimaryCtxRetain: %s (%d)",
				  gpu, cu_name(r), r);
	/* Whole GPU pages, so the dma-buf range is exactly ours. */
	size_t rounded = (len + GPU_PAGE - 1) & ~(size_t)(GPU_PAGE - 1);
	IN_CTX(ctx, cu.cuMemAlloc(&d, rounded + GPU_PAGE), r);
	if (r) {
		cu.cuDevicePrimaryCtxRelease(dev);
		return nvmeof_err(NVMEOF_ECUDA, "allocate %zu bytes on GPU %d: cuMemAlloc: %s (%d)", len, gpu,
				  cu_name(r), r);
	}
	CUdeviceptr aligned = (d + GPU_PAGE - 1) & ~(CUdeviceptr)(GPU_PAGE - 1);
	rc = cuda_mr_new(mc, owner, aligned, rounded, true, dev, ctx, out, "allocate GPU memory");
	if (rc) {
		IN_CTX(ctx, cu.cuMemFree(d), r);
		cu.cuDevicePrimaryCtxRelease(dev);
		return rc;
	}
	(*out)->cuda_base = d;
	(*out)->len = len;
	return 0;
}

int mem_register_cuda(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, void *dptr, size_t len,
		      struct nvmeof_mr **out)
{
	CUcontext ctx = NULL;
	CUresult r;
	int rc;
	if (!dptr || !len || !out)
		return nvmeof_err(NVMEOF_EINVAL, "register GPU memory: %s",
				  !dptr ? "NULL pointer" : !len ? "zero length" : "no output");
	*out = NULL;
	/* GPUDirect is the NIC's DMA into the GPU; a socket's bytes pass
	 * through host memory, so a GPU buffer would need a staged copy */
	if (!mc->pd)
		return nvmeof_err(NVMEOF_ENOTSUP, "register GPU memory: GPU buffers need RDMA (GPUDirect); over "
				  "NVMe/TCP the data passes through host memory: use host buffers");
	if ((rc = cu_ready("register GPU memory")))
		return rc;
	/* The owning context, not whichever is current: flushes and
	 * synchronizations must go to the context that owns the memory. */
	if ((r = cu.cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)(uintptr_t)dptr)))
		return nvmeof_err(NVMEOF_ECUDA, "register GPU memory: %p is not CUDA device memory: %s (%d)",
				  dptr, cu_name(r), r);
	return cuda_mr_new(mc, owner, (CUdeviceptr)(uintptr_t)dptr, len, false, -1, ctx, out, "register GPU memory");
}

int mem_cuda_release(struct nvmeof_mr *m)
{
	CUresult r = 0;
	if (m->owned) {
		IN_CTX(m->cuda_ctx, cu.cuMemFree(m->cuda_base), r);
		cu.cuDevicePrimaryCtxRelease(m->cuda_dev);
	}
	return r ? nvmeof_err(NVMEOF_ECUDA, "cuMemFree: %s (%d)", cu_name(r), r) : 0;
}

int nvmeof_cuda_flush(struct nvmeof_mr *m)
{
	CUresult r;
	if (!m || !m->cuda)
		return nvmeof_err(NVMEOF_EINVAL, "CUDA flush: not a GPU memory region");
	if (!cu.cuFlushGPUDirectRDMAWrites)
		return nvmeof_err(NVMEOF_ECUDA, "CUDA flush: the driver lacks cuFlushGPUDirectRDMAWrites (CUDA 11.3+)");
	IN_CTX(m->cuda_ctx, cu.cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
							   CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER), r);
	return r ? nvmeof_err(NVMEOF_ECUDA, "cuFlushGPUDirectRDMAWrites: %s (%d)", cu_name(r), r) : 0;
}

int nvmeof_cuda_sync(struct nvmeof_mr *m)
{
	CUresult r;
	if (!m || !m->cuda)
		return nvmeof_err(NVMEOF_EINVAL, "CUDA synchronize: not a GPU memory region");
	IN_CTX(m->cuda_ctx, cu.cuCtxSynchronize(), r);
	return r ? nvmeof_err(NVMEOF_ECUDA, "cuCtxSynchronize: %s (%d)", cu_name(r), r) : 0;
}

int nvmeof_cuda_copy(struct nvmeof_mr *m, size_t off, void *host, size_t len, bool to_gpu)
{
	CUresult r;
	if (!m || !m->cuda || off > m->len || len > m->len - off)
		return nvmeof_err(NVMEOF_EINVAL, "CUDA copy: not a GPU region, or outside it");
	CUdeviceptr d = (CUdeviceptr)(uintptr_t)m->addr + off;
	IN_CTX(m->cuda_ctx, to_gpu ? cu.cuMemcpyHtoD(d, host, len) : cu.cuMemcpyDtoH(host, d, len), r);
	return r ? nvmeof_err(NVMEOF_ECUDA, "%s: %s (%d)", to_gpu ? "cuMemcpyHtoD" : "cuMemcpyDtoH",
			      cu_name(r), r) : 0;
}

const char *nvmeof_mr_cuda_registration(const struct nvmeof_mr *m)
{
	return m && m->cuda ? m->cuda_reg : NULL;
}

int nvmeof_cuda_pci_bus_id(int gpu, char *buf, size_t len)
{
	CUdevice dev;
	CUresult r;
	int rc = cu_ready("GPU PCI address");
	if (rc)
		return rc;
	if ((r = cu.cuDeviceGet(&dev, gpu)) || (r = cu.cuDeviceGetPCIBusId(buf, (int)len, dev)))
		return nvmeof_err(NVMEOF_ECUDA, "GPU %d PCI address: %s (%d)", gpu, cu_name(r), r);
	return 0;
}

/* For a GPU machine without a target: allocation, dma-buf export, the
 * flush entry point, and a registration attempt on the first RDMA device
 * (which fails cleanly when there is none). A report line per step. */
int nvmeof_cuda_selftest(int gpu, char *report, size_t len)
{
	size_t used = 0;
	int rc, fd = -1, ndev = 0;
	CUdevice dev;
	CUcontext ctx = NULL;
	CUdeviceptr d = 0;
	CUresult r;
	char pci[32] = "?";
#define SAY(...) (used += (size_t)snprintf(report + used, used < len ? len - used : 0, __VA_ARGS__))
	if (!report || !len)
		return nvmeof_err(NVMEOF_EINVAL, "CUDA self-test: no report buffer");
	report[0] = '\0';
	if ((rc = cu_ready("CUDA self-test"))) {
		SAY("load: %s\n", nvmeof_errmsg());
		return rc;
	}
	int v = cu_version();
	SAY("load: ok, driver %d.%d\n", v / 1000, v % 1000 / 10);
	if ((r = cu.cuDeviceGet(&dev, gpu)) || (r = cu.cuDevicePrimaryCtxRetain(&ctx, dev))) {
		SAY("GPU %d: %s (%d)\n", gpu, cu_name(r), r);
		return nvmeof_err(NVMEOF_ECUDA, "CUDA self-test: GPU %d: %s", gpu, cu_name(r));
	}
	cu.cuDeviceGetPCIBusId(pci, sizeof(pci), dev);
	SAY("GPU %d: PCI %s\n", gpu, pci);
	IN_CTX(ctx, cu.cuMemAlloc(&d, 2 * GPU_PAGE), r);
	if (r) {
		SAY("allocate: cuMemAlloc: %s (%d)\n", cu_name(r), r);
		cu.cuDevicePrimaryCtxRelease(dev);
		return nvmeof_err(NVMEOF_ECUDA, "CUDA self-test: cuMemAlloc: %s", cu_name(r));
	}
	CUdeviceptr a = (d + GPU_PAGE - 1) & ~(CUdeviceptr)(GPU_PAGE - 1);
	SAY("allocate: ok, 0x%llx\n", (unsigned long long)a);
	if (!cu.cuMemGetHandleForAddressRange) {
		SAY("dma-buf export: driver lacks cuMemGetHandleForAddressRange (CUDA < 11.7)\n");
	} else {
		IN_CTX(ctx, cu.cuMemGetHandleForAddressRange(&fd, a, GPU_PAGE, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
							      CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE), r);
		if (!r) {
			SAY("dma-buf export: ok, PCIe mapping type, fd %d\n", fd);
		} else {
			SAY("dma-buf export with the PCIe mapping type: %s (%d)\n", cu_name(r), r);
			IN_CTX(ctx, cu.cuMemGetHandleForAddressRange(&fd, a, GPU_PAGE, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0), r);
			if (r)
				SAY("dma-buf export: %s (%d)\n", cu_name(r), r);
			else
				SAY("dma-buf export: ok, default mapping type, fd %d\n", fd);
		}
	}
	SAY("flush entry point: %s\n", cu.cuFlushGPUDirectRDMAWrites ? "present" : "missing (CUDA < 11.3)");
	struct ibv_device **list = ibv_get_device_list(&ndev);
	if (!list || ndev == 0) {
		SAY("registration: not attempted: no RDMA device (ibv_get_device_list found %d)\n", ndev);
	} else {
		struct ibv_context *vc = ibv_open_device(list[0]);
		struct ibv_pd *pd = vc ? ibv_alloc_pd(vc) : NULL;
		int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_RELAXED_ORDERING; /* as every region the library registers by default */
		if (!pd) {
			SAY("registration on %s: cannot open it: %s\n", ibv_get_device_name(list[0]), strerror(errno));
		} else {
			struct ibv_mr *mr = fd >= 0 ? ibv_reg_dmabuf_mr(pd, 0, GPU_PAGE, (uint64_t)a, fd, acc) : NULL;
			SAY("registration on %s via dma-buf, relaxed ordering: %s\n", ibv_get_device_name(list[0]),
			    mr ? "ok" : fd < 0 ? "skipped (no dma-buf)" : strerror(errno));
			if (mr)
				ibv_dereg_mr(mr);
			mr = ibv_reg_mr(pd, (void *)(uintptr_t)a, GPU_PAGE, acc);
			SAY("registration on %s via peermem, relaxed ordering: %s\n", ibv_get_device_name(list[0]),
			    mr ? "ok" : strerror(errno));
			if (mr)
				ibv_dereg_mr(mr);
			ibv_dealloc_pd(pd);
		}
		if (vc)
			ibv_close_device(vc);
	}
	if (list)
		ibv_free_device_list(list);
	if (fd >= 0)
		close(fd);
	IN_CTX(ctx, cu.cuMemFree(d), r);
	cu.cuDevicePrimaryCtxRelease(dev);
#undef SAY
	return 0;
}
