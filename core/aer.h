/* Asynchronous events (aer.c), seen from the controller. */
#ifndef NVMEOF_AER_H
#define NVMEOF_AER_H

#include <stdint.h>

#include "nvmeof.h"

struct aer;
/* No callback from now on; waits up to timeout_ms for one that runs. */
int aer_detach(struct nvmeof_ctrl *c, uint32_t timeout_ms);
/* Joins the event thread; before the admin queue closes. */
void aer_stop(struct nvmeof_ctrl *c);
/* After the admin queue closed (its AER callbacks have run). */
void aer_free(struct nvmeof_ctrl *c);

#endif
