/* Asynchronous events (aer.c), seen from the controller. */
#ifndef NVMEOF_AER_H
#define NVMEOF_AER_H

#include <stdint.h>

#include "nvmeof.h"

/* Event requests kept outstanding, of the admin queue's 31 slots. */
#define AER_MAX 4

struct aer;
/* Events to cb: enabled now, or, when a detached owner left them enabled,
 * handed to cb; NVMEOF_EBUSY while another callback has them. */
int aer_attach(struct nvmeof_ctrl *c, nvmeof_event_cb cb, void *arg);
/* No callback from now on, if arg's (another owner's stays); waits up to
 * timeout_ms for one that runs. */
int aer_detach(struct nvmeof_ctrl *c, const void *arg, uint32_t timeout_ms);
/* Joins the event thread; before the admin queue closes. */
void aer_stop(struct nvmeof_ctrl *c);
/* After the admin queue closed (its AER callbacks have run). */
void aer_free(struct nvmeof_ctrl *c);

#endif
