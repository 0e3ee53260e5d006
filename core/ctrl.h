/* What the rest of the library needs from a controller. */
#ifndef NVMEOF_CTRL_H
#define NVMEOF_CTRL_H

#include <infiniband/verbs.h>

#include "nvmeof.h"

struct ibv_pd *ctrl_pd(struct nvmeof_ctrl *c);
/* Counts registrations so close can refuse while any remain. */
void ctrl_ref_mr(struct nvmeof_ctrl *c, int delta);

#endif
