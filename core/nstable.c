/* Namespace table: stable structs, an active list that events update. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "nstable.h"

#define NST_MAX 1024

int nst_init(struct ns_table *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->act = calloc(NST_MAX, sizeof(*t->act));
	if (!t->act)
		return nvmeof_err(NVMEOF_ENOMEM, "out of memory for the namespace table");
	return 0;
}

void nst_free(struct ns_table *t)
{
	if (!t->act && !t->all)
		return;
	for (uint32_t i = 0; i < t->nall; i++)
		free(t->all[i]);
	free(t->all);
	free(t->act);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

static struct nvmeof_ns *find_all(struct ns_table *t, uint32_t nsid)
{
	for (uint32_t i = 0; i < t->nall; i++)
		if (t->all[i]->nsid == nsid)
			return t->all[i];
	return NULL;
}

static int find_act(struct ns_table *t, uint32_t nsid)
{
	for (uint32_t i = 0; i < t->nact; i++)
		if (t->act[i]->nsid == nsid)
			return (int)i;
	return -1;
}

/* Users and I/O read the struct with no lock while the event thread
 * refreshes it: a field is written only when its value changed, so a
 * rescan that changed nothing (or only gone) races with no reader. */
#define SET(f)                                                            \
	do {                                                              \
		if (ns->f != fresh->f)                                    \
			__atomic_store_n(&ns->f, fresh->f, __ATOMIC_RELAXED); \
	} while (0)

static void update(struct nvmeof_ns *ns, const struct nvmeof_ns *fresh)
{
	SET(nsid);
	SET(lba_size);
	SET(lbads);
	SET(ms);
	SET(nsze);
	SET(ncap);
	SET(nuse);
	SET(dlfeat);
	SET(anagrpid);
	SET(nmic);
	if (memcmp(ns->nguid, fresh->nguid, sizeof(ns->nguid)))
		memcpy(ns->nguid, fresh->nguid, sizeof(ns->nguid));
	if (memcmp(ns->eui64, fresh->eui64, sizeof(ns->eui64)))
		memcpy(ns->eui64, fresh->eui64, sizeof(ns->eui64));
	if (ns->gone)
		__atomic_store_n(&ns->gone, false, __ATOMIC_RELAXED);
}
#undef SET

int nst_put(struct ns_table *t, const struct nvmeof_ns *fresh)
{
	int rc = 0;
	pthread_mutex_lock(&t->lock);
	struct nvmeof_ns *ns = find_all(t, fresh->nsid);
	if (!ns) {
		if (t->nall == t->cap) {
			uint32_t cap = t->cap ? 2 * t->cap : 16;
			struct nvmeof_ns **all = realloc(t->all, cap * sizeof(*all));
			if (!all) {
				rc = nvmeof_err(NVMEOF_ENOMEM, "out of memory for namespace %u", fresh->nsid);
				goto out;
			}
			t->all = all;
			t->cap = cap;
		}
		if (!(ns = calloc(1, sizeof(*ns)))) {
			rc = nvmeof_err(NVMEOF_ENOMEM, "out of memory for namespace %u", fresh->nsid);
			goto out;
		}
		t->all[t->nall++] = ns;
	}
	update(ns, fresh);
	if (find_act(t, fresh->nsid) < 0) {
		if (t->nact == NST_MAX) {
			rc = nvmeof_err(NVMEOF_ENOTSUP, "more than %d active namespaces", NST_MAX);
			goto out;
		}
		uint32_t i = t->nact;
		while (i > 0 && t->act[i - 1]->nsid > ns->nsid) {
			t->act[i] = t->act[i - 1];
			i--;
		}
		t->act[i] = ns;
		t->nact++;
	}
out:
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void nst_gone(struct ns_table *t, uint32_t nsid)
{
	pthread_mutex_lock(&t->lock);
	int i = find_act(t, nsid);
	if (i >= 0) {
		__atomic_store_n(&t->act[i]->gone, true, __ATOMIC_RELAXED);
		memmove(&t->act[i], &t->act[i + 1], (t->nact - (uint32_t)i - 1) * sizeof(*t->act));
		t->nact--;
	}
	pthread_mutex_unlock(&t->lock);
}

const struct nvmeof_ns *nst_get(struct ns_table *t, uint32_t nsid)
{
	pthread_mutex_lock(&t->lock);
	int i = find_act(t, nsid);
	const struct nvmeof_ns *ns = i >= 0 ? t->act[i] : NULL;
	pthread_mutex_unlock(&t->lock);
	return ns;
}

const struct nvmeof_ns *nst_at(struct ns_table *t, uint32_t idx)
{
	pthread_mutex_lock(&t->lock);
	const struct nvmeof_ns *ns = idx < t->nact ? t->act[idx] : NULL;
	pthread_mutex_unlock(&t->lock);
	return ns;
}

uint32_t nst_count(struct ns_table *t)
{
	pthread_mutex_lock(&t->lock);
	uint32_t n = t->nact;
	pthread_mutex_unlock(&t->lock);
	return n;
}

uint32_t nst_ids(struct ns_table *t, uint32_t *out, uint32_t max)
{
	pthread_mutex_lock(&t->lock);
	uint32_t n = t->nact;
	for (uint32_t i = 0; i < n && i < max; i++)
		out[i] = t->act[i]->nsid;
	pthread_mutex_unlock(&t->lock);
	return n;
}
