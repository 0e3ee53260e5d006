/*
 * A controller's fields as the files above it read them: the bottom of the
 * controller's files (README.md "Layout" gives their order), calling none
 * of them.
 */
#include <stddef.h>
#include <string.h>

#include "cpriv.h"

struct mem_ctx *ctrl_mem(struct nvmeof_ctrl *c) { return &c->mem; }

const struct nvmeof_ctrl_info *nvmeof_ctrl_info(const struct nvmeof_ctrl *c) { return &c->info; }

/* The layout before version 0.3 ended with oaes: what older programs'
 * structs hold (their size, padding included). */
#define CTRL_INFO_SIZE_01 \
	((offsetof(struct nvmeof_ctrl_info, oaes) + sizeof(uint32_t) + _Alignof(struct nvmeof_ctrl_info) - 1) / \
	 _Alignof(struct nvmeof_ctrl_info) * _Alignof(struct nvmeof_ctrl_info))

int nvmeof_ctrl_get_info_sz(struct nvmeof_ctrl *c, struct nvmeof_ctrl_info *out, size_t size)
{
	if (!c || !out)
		return nvmeof_err(NVMEOF_EINVAL, "controller info: %s", !c ? "no controller" : "no output");
	if (size < CTRL_INFO_SIZE_01)
		return nvmeof_err(NVMEOF_EINVAL, "controller info: a struct of %zu bytes, at least %zu expected", size,
				  (size_t)CTRL_INFO_SIZE_01);
	pthread_mutex_lock(&c->lock);
	struct nvmeof_ctrl_info ci = c->info;
	pthread_mutex_unlock(&c->lock);
	memcpy(out, &ci, size < sizeof(ci) ? size : sizeof(ci));
	if (size > sizeof(ci)) /* a newer header's fields this library does not know */
		memset((char *)out + sizeof(ci), 0, size - sizeof(ci));
	return 0;
}

int (nvmeof_ctrl_get_info)(struct nvmeof_ctrl *c, struct nvmeof_ctrl_info *out)
{
	return nvmeof_ctrl_get_info_sz(c, out, CTRL_INFO_SIZE_01);
}

/* The table has its own lock; the const API predates events changing it. */
uint32_t nvmeof_ns_count(const struct nvmeof_ctrl *c) { return nst_count((struct ns_table *)&c->nst); }
struct nvmeof_queue *ctrl_admin(struct nvmeof_ctrl *c) { return c->admin; }
const struct sockaddr_storage *ctrl_dst(const struct nvmeof_ctrl *c) { return &c->dst; }
pthread_mutex_t *ctrl_admin_lock(struct nvmeof_ctrl *c) { return &c->admin_lock; }
uint32_t ctrl_assoc_gen(const struct nvmeof_ctrl *c) { return __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED); }
uint32_t ctrl_cmd_timeout(const struct nvmeof_ctrl *c) { return c->o.cmd_timeout_ms; }
uint32_t ctrl_kato_ms(const struct nvmeof_ctrl *c) { return c->o.kato_ms; }
struct ns_table *ctrl_nst(struct nvmeof_ctrl *c) { return &c->nst; }
struct aer **ctrl_aer(struct nvmeof_ctrl *c) { return &c->aer; }

const struct nvmeof_ns *nvmeof_ns_at(const struct nvmeof_ctrl *c, uint32_t i)
{
	return nst_at((struct ns_table *)&c->nst, i);
}

const struct nvmeof_ns *nvmeof_ns_get(const struct nvmeof_ctrl *c, uint32_t nsid)
{
	if (!c) {
		nvmeof_err(NVMEOF_EINVAL, "namespace lookup: no controller");
		return NULL;
	}
	const struct nvmeof_ns *ns = nst_get((struct ns_table *)&c->nst, nsid);
	if (ns)
		return ns;
	nvmeof_err(NVMEOF_EINVAL, "namespace %u is not an active namespace of %s (%u active)", nsid,
		   c->subnqn, nvmeof_ns_count(c));
	return NULL;
}
