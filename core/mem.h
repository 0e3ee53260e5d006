/* Registered memory regions (host memory; CUDA device memory later). */
#ifndef NVMEOF_MEM_H
#define NVMEOF_MEM_H

#include <infiniband/verbs.h>

#include "nvmeof.h"

struct nvmeof_mr {
	struct nvmeof_ctrl *ctrl;
	struct ibv_mr *mr;
	void *addr;
	size_t len;
	uint32_t lkey, rkey;
	bool owned;                 /* allocated by nvmeof_mr_alloc */
};

static inline struct nvmeof_ctrl *mem_ctrl(const struct nvmeof_mr *mr) { return mr->ctrl; }
/* Ordering hooks of the synchronous path: what must happen before a write
 * reads the region and after a read filled it. Nothing for host memory. */
static inline int mem_before_write(struct nvmeof_mr *mr) { (void)mr; return 0; }
static inline int mem_after_read(struct nvmeof_mr *mr) { (void)mr; return 0; }

#endif
