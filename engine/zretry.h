/* A synchronous call on a queue pair that I/O keeps busy: tried again while
 * the queue has no free slot (NVMEOF_EQFULL), polling it in between. */
#ifndef ZRETRY_H
#define ZRETRY_H
#include <stdint.h>

#include "nvmeof.h"

/* call(q, arg) until it returns other than NVMEOF_EQFULL or timeout_ms has
 * passed (then its NVMEOF_EQFULL and message); q's completions run their
 * callbacks in between. A wait's error ends it too. */
int zretry(struct nvmeof_queue *q, int (*call)(struct nvmeof_queue *q, void *arg), void *arg, uint32_t timeout_ms);
#endif
