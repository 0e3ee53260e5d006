/* What the rest of the library needs from a controller. */
#ifndef NVMEOF_CTRL_H
#define NVMEOF_CTRL_H

#include "nvmeof.h"

struct mem_ctx;
/* The controller's registration context (its PD and region count). */
struct mem_ctx *ctrl_mem(struct nvmeof_ctrl *c);

#endif
