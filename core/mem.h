/* Registered memory regions: host memory, or CUDA device memory. */
#ifndef NVMEOF_MEM_H
#define NVMEOF_MEM_H

#include <infiniband/verbs.h>

#include "nvmeof.h"

struct nvmeof_mr {
	struct nvmeof_ctrl *ctrl;
	struct ibv_mr *mr;
	void *addr;                 /* host address, or CUDA device pointer */
	size_t len;
	uint32_t lkey, rkey;
	bool owned;                 /* allocated by us */
	bool cuda;                  /* device memory (core/cuda.c) */
	void *cuda_ctx;             /* the context that owns it */
	int cuda_dev;
	unsigned long long cuda_base; /* what cuMemAlloc returned, for cuMemFree */
	const char *cuda_reg;       /* "dma-buf" or "peermem" */
};

static inline struct nvmeof_ctrl *mem_ctrl(const struct nvmeof_mr *mr) { return mr->ctrl; }

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
