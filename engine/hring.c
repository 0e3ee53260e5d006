/* The hand-off ring (hring.h). The producer's release store of head
 * publishes the slot it wrote, and the consumer's release store of tail
 * gives the slot back; each side reads the other's index with acquire. */
#include <stdlib.h>

#include "hring.h"

int hring_init(struct hring *r, uint32_t cap)
{
	uint32_t n = 1;
	while (n < cap && n < (1u << 30))
		n <<= 1;
	r->slot = calloc(n, sizeof(*r->slot));
	r->mask = n - 1;
	r->head = r->tail = 0;
	return r->slot ? 0 : -1;
}

void hring_free(struct hring *r)
{
	free(r->slot);
	r->slot = NULL;
}

bool hring_push(struct hring *r, void *p)
{
	uint32_t h = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	if (h - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) > r->mask)
		return false;
	r->slot[h & r->mask] = p;
	/* seq_cst: the waker then reads the sleepers' count (qshare.c), a
	 * sleeper that counted itself reads head: one of them sees the other */
	__atomic_store_n(&r->head, h + 1, __ATOMIC_SEQ_CST);
	return true;
}

void *hring_pop(struct hring *r)
{
	uint32_t t = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
	if (t == __atomic_load_n(&r->head, __ATOMIC_ACQUIRE))
		return NULL;
	void *p = r->slot[t & r->mask];
	__atomic_store_n(&r->tail, t + 1, __ATOMIC_RELEASE);
	return p;
}

uint32_t hring_count(const struct hring *r)
{
	return __atomic_load_n(&r->head, __ATOMIC_SEQ_CST) - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
}
