/* The controller's namespace table. Namespace structs handed to users are
 * never moved or freed while the controller lives: a namespace that goes
 * away is only taken off the active list and marked gone, and one that
 * comes back gets the same struct again. */
#ifndef NVMEOF_NSTABLE_H
#define NVMEOF_NSTABLE_H

#include <pthread.h>

#include "nvmeof.h"

struct ns_table {
	pthread_mutex_t lock;
	struct nvmeof_ns **act;   /* active, in NSID order */
	uint32_t nact;
	struct nvmeof_ns **all;   /* every struct ever handed out */
	uint32_t nall, cap;
};

int nst_init(struct ns_table *t);
void nst_free(struct ns_table *t);
/* Adds or refreshes an active namespace from its Identify data. */
int nst_put(struct ns_table *t, const struct nvmeof_ns *fresh);
/* Takes nsid off the active list; its struct stays, marked gone. */
void nst_gone(struct ns_table *t, uint32_t nsid);
const struct nvmeof_ns *nst_get(struct ns_table *t, uint32_t nsid);
const struct nvmeof_ns *nst_at(struct ns_table *t, uint32_t idx);
uint32_t nst_count(struct ns_table *t);
/* Copies up to max active NSIDs; returns how many are active. */
uint32_t nst_ids(struct ns_table *t, uint32_t *out, uint32_t max);

#endif
