/* Asynchronous events (aer.c), seen from the controller. */
#ifndef NVMEOF_AER_H
#define NVMEOF_AER_H

#include <stdint.h>

#include "nvmeof.h"

/* Event requests kept outstanding, of the admin queue's 31 slots. */
#define AER_MAX 4
/* Owners of the library's own that take a controller's events at once. */
#define AER_LISTENERS 8

struct aer;
/* Events to cb as well (enabled now when they were not): every listener
 * gets each event. NVMEOF_EBUSY when the user's callback has them
 * (nvmeof_ctrl_events), a listener with the same key (a multipath's NSID)
 * has them, or AER_LISTENERS do. */
int aer_attach(struct nvmeof_ctrl *c, nvmeof_event_cb cb, void *arg, uint32_t key);
/* No callback from now on, if arg's (another owner's stays); waits up to
 * timeout_ms for one that runs. */
int aer_detach(struct nvmeof_ctrl *c, const void *arg, uint32_t timeout_ms);
/* Test-only fault: this many AER submissions fail as if the admin queue
 * had no free slot. Never set outside tests. */
extern uint32_t aer_fault_submits;
/* Joins the event thread; before the admin queue closes. */
void aer_stop(struct nvmeof_ctrl *c);
/* After the admin queue closed (its AER callbacks have run). */
void aer_free(struct nvmeof_ctrl *c);

#endif
