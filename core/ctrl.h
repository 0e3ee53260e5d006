/* What the rest of the library needs from a controller. */
#ifndef NVMEOF_CTRL_H
#define NVMEOF_CTRL_H

#include <infiniband/verbs.h>
#include <pthread.h>

#include "nvmeof.h"

struct ibv_pd *ctrl_pd(struct nvmeof_ctrl *c);
/* Counts registrations so close can refuse while any remain. */
void ctrl_ref_mr(struct nvmeof_ctrl *c, int delta);
/* For admin commands after bring-up (admin.c, aer.c): the admin queue is
 * used only with its lock held. */
struct nvmeof_queue *ctrl_admin(struct nvmeof_ctrl *c);
pthread_mutex_t *ctrl_admin_lock(struct nvmeof_ctrl *c);
uint32_t ctrl_cmd_timeout(const struct nvmeof_ctrl *c);
struct ns_table *ctrl_nst(struct nvmeof_ctrl *c);
struct aer **ctrl_aer(struct nvmeof_ctrl *c);

#endif
