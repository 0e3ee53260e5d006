/* Registered memory regions: host memory, or CUDA device memory. */
#ifndef NVMEOF_MEM_H
#define NVMEOF_MEM_H

#include <infiniband/verbs.h>
#include <pthread.h>

#include "nvmeof.h"

/* What registration needs of a controller, and nothing more: its protection
 * domain, and a count of live regions so the controller can refuse to close
 * while any remain. */
struct mem_ctx {
	struct ibv_pd *pd;
	int access; /* every data region's access flags (mem_ctx_init) */
	pthread_mutex_t lock;
	uint32_t nmrs;
	struct nvmeof_mr *regs; /* the live regions, for checking a caller's keyed SGL (passthru.c) */
};
/* relaxed: the controller's PCIe ordering (nvmeof_ctrl_opts.strict_ordering) */
void mem_ctx_init(struct mem_ctx *mc, struct ibv_pd *pd, bool relaxed);
void mem_ctx_destroy(struct mem_ctx *mc);
uint32_t mem_ctx_count(struct mem_ctx *mc);
void mem_ctx_ref(struct mem_ctx *mc, int delta);

/* owner only tags the region (I/O on another controller's region is
 * refused); it is never dereferenced here. */
int mem_register(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, void *addr, size_t len,
		 struct nvmeof_mr **out);
int mem_alloc(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, size_t len, struct nvmeof_mr **out);
/* The same for the library's own use during one command (the event thread
 * reads logs this way whenever an event comes): never in the count that
 * keeps nvmeof_ctrl_close from closing, not even for an instant, or a
 * close racing the event thread fails with EBUSY. */
int mem_alloc_internal(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, size_t len, struct nvmeof_mr **out);
int mem_alloc_cuda(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, int gpu, size_t len,
		   struct nvmeof_mr **out);
int mem_register_cuda(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, void *dptr, size_t len,
		      struct nvmeof_mr **out);

struct nvmeof_mr {
	struct mem_ctx *mc;
	const struct nvmeof_ctrl *owner;
	struct ibv_mr *mr;
	void *addr;                 /* host address, or CUDA device pointer */
	size_t len;
	uint32_t lkey, rkey;
	bool owned;                 /* allocated by us */
	bool internal;              /* the library's own for one command: not counted */
	bool cuda;                  /* device memory (core/cuda.c) */
	void *cuda_ctx;             /* the context that owns it */
	int cuda_dev;
	unsigned long long cuda_base; /* what cuMemAlloc returned, for cuMemFree */
	const char *cuda_reg;       /* nvmeof_mr_cuda_registration's answer */
	struct nvmeof_mr *next_reg; /* mem_ctx.regs */
	uint32_t inflight;          /* NVMe/TCP requests using it (atomic): release refused while any */
};

/* The region list (under mc->lock): linked once registered, unlinked on
 * release; mem_find_locked returns the caller's region (never an internal
 * one) whose key is key and whose bytes hold [addr, addr + len), or NULL. */
void mem_link(struct mem_ctx *mc, struct nvmeof_mr *m);
void mem_unlink(struct mem_ctx *mc, struct nvmeof_mr *m);
struct nvmeof_mr *mem_find_locked(struct mem_ctx *mc, uint64_t addr, uint32_t len, uint32_t key);

static inline const struct nvmeof_ctrl *mem_ctrl(const struct nvmeof_mr *mr) { return mr->owner; }

/* The ordering rules of the synchronous path: kernels that produced the
 * data finish before a write reads the region; completed GPUDirect RDMA
 * writes are flushed before a read returns. Nothing for host memory. */
int nvmeof_cuda_flush(struct nvmeof_mr *m);
int nvmeof_cuda_sync(struct nvmeof_mr *m);
static inline int mem_before_write(struct nvmeof_mr *mr) { return mr->cuda ? nvmeof_cuda_sync(mr) : 0; }
static inline int mem_after_read(struct nvmeof_mr *mr) { return mr->cuda ? nvmeof_cuda_flush(mr) : 0; }
/* Frees device memory we allocated (core/cuda.c). */
int mem_cuda_release(struct nvmeof_mr *mr);

#endif
