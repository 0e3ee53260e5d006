/* Host memory registration: once per buffer, never per I/O. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "mem.h"

void mem_ctx_init(struct mem_ctx *mc, struct ibv_pd *pd, bool relaxed)
{
	mc->pd = pd;
	/* The target reads writes' data and writes reads' data into these. */
	mc->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
		     (relaxed ? IBV_ACCESS_RELAXED_ORDERING : 0);
	mc->nmrs = 0;
	mc->regs = NULL;
	pthread_mutex_init(&mc->lock, NULL);
}

void mem_ctx_destroy(struct mem_ctx *mc) { pthread_mutex_destroy(&mc->lock); }

uint32_t mem_ctx_count(struct mem_ctx *mc)
{
	pthread_mutex_lock(&mc->lock);
	uint32_t n = mc->nmrs;
	pthread_mutex_unlock(&mc->lock);
	return n;
}

void mem_ctx_ref(struct mem_ctx *mc, int delta)
{
	pthread_mutex_lock(&mc->lock);
	mc->nmrs = (uint32_t)((int)mc->nmrs + delta);
	pthread_mutex_unlock(&mc->lock);
}

void mem_link(struct mem_ctx *mc, struct nvmeof_mr *m)
{
	pthread_mutex_lock(&mc->lock);
	m->next_reg = mc->regs;
	mc->regs = m;
	pthread_mutex_unlock(&mc->lock);
}

void mem_unlink(struct mem_ctx *mc, struct nvmeof_mr *m)
{
	pthread_mutex_lock(&mc->lock);
	for (struct nvmeof_mr **p = &mc->regs; *p; p = &(*p)->next_reg)
		if (*p == m) {
			*p = m->next_reg;
			break;
		}
	pthread_mutex_unlock(&mc->lock);
}

struct nvmeof_mr *mem_find_locked(struct mem_ctx *mc, uint64_t addr, uint32_t len, uint32_t key)
{
	for (struct nvmeof_mr *m = mc->regs; m; m = m->next_reg) {
		/* the library's own buffers (a log being read, say) are never a
		 * caller's: over NVMe/TCP every key is 0, so the address alone
		 * would let a caller's command aim the target's data at them */
		if (m->internal)
			continue;
		uint64_t base = (uint64_t)(uintptr_t)m->addr;
		if (m->rkey == key && addr >= base && addr - base <= m->len && len <= m->len - (addr - base))
			return m;
	}
	return NULL;
}

static int mr_new(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, void *addr, size_t len, bool owned,
		  bool internal, struct nvmeof_mr **out)
{
	struct nvmeof_mr *m = calloc(1, sizeof(*m));
	if (!m)
		return nvmeof_err(NVMEOF_ENOMEM, "register memory: out of memory");
	/* over NVMe/TCP (no PD) a region is only bookkeeping: the socket
	 * layer moves data to and from its address */
	m->mr = mc->pd ? ibv_reg_mr(mc->pd, addr, len, mc->access) : NULL;
	if (mc->pd && !m->mr) {
		int e = errno;
		free(m);
		return nvmeof_err(e == ENOMEM ? NVMEOF_ENOMEM : NVMEOF_ETRANSPORT,
				  "ibv_reg_mr of %zu bytes at %p: %s%s", len, addr, strerror(e),
				  e == ENOMEM ? " (raise RLIMIT_MEMLOCK: ulimit -l)" : "");
	}
	m->mc = mc;
	m->owner = owner;
	m->addr = addr;
	m->len = len;
	m->lkey = m->mr ? m->mr->lkey : 0;
	m->rkey = m->mr ? m->mr->rkey : 0;
	m->owned = owned;
	m->internal = internal;
	if (!internal)
		mem_ctx_ref(mc, 1);
	mem_link(mc, m);
	*out = m;
	return 0;
}

int mem_register(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, void *addr, size_t len,
		 struct nvmeof_mr **out)
{
	if (!addr || !len || !out)
		return nvmeof_err(NVMEOF_EINVAL, "register memory: %s",
				  !addr ? "NULL address" : !len ? "zero length" : "no output");
	*out = NULL;
	return mr_new(mc, owner, addr, len, false, false, out);
}

static int alloc(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, size_t len, bool internal,
		 struct nvmeof_mr **out)
{
	if (!len || !out)
		return nvmeof_err(NVMEOF_EINVAL, "allocate memory: %s", !len ? "zero length" : "no output");
	*out = NULL;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t rounded = (len + pg - 1) / pg * pg;
	void *p = NULL;
	if (posix_memalign(&p, pg, rounded))
		return nvmeof_err(NVMEOF_ENOMEM, "allocate %zu bytes: out of memory", len);
	memset(p, 0, rounded);
	int rc = mr_new(mc, owner, p, len, true, internal, out);
	if (rc)
		free(p);
	return rc;
}

int mem_alloc(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, size_t len, struct nvmeof_mr **out)
{
	return alloc(mc, owner, len, false, out);
}

int mem_alloc_internal(struct mem_ctx *mc, const struct nvmeof_ctrl *owner, size_t len, struct nvmeof_mr **out)
{
	return alloc(mc, owner, len, true, out);
}

int nvmeof_mr_release(struct nvmeof_mr *m)
{
	if (!m)
		return nvmeof_err(NVMEOF_EINVAL, "release memory: NULL region");
	/* over NVMe/TCP nothing revokes the region's address, as
	 * deregistration does a remote key: a command still in flight would
	 * have its data received into freed memory */
	uint32_t busy = __atomic_load_n(&m->inflight, __ATOMIC_ACQUIRE);
	if (busy)
		return nvmeof_err(NVMEOF_EBUSY, "release memory: %u command%s in flight on the region (NVMe/TCP): "
				  "release it once they have completed", busy, busy == 1 ? "" : "s");
	int rc = m->mr ? ibv_dereg_mr(m->mr) : 0;
	if (rc)
		return nvmeof_err(NVMEOF_ETRANSPORT, "ibv_dereg_mr: %s", strerror(rc));
	mem_unlink(m->mc, m);
	if (!m->internal)
		mem_ctx_ref(m->mc, -1);
	if (m->cuda)
		rc = mem_cuda_release(m);
	else if (m->owned)
		free(m->addr);
	free(m);
	return rc;
}

void *nvmeof_mr_addr(const struct nvmeof_mr *m) { return m ? m->addr : NULL; }
size_t nvmeof_mr_len(const struct nvmeof_mr *m) { return m ? m->len : 0; }
