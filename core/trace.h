/* Self-diagnosis: the caller's trace hook (nvmeof_ctrl_opts.trace), called
 * at each step of bringing up or recovering a connection. */
#ifndef NVMEOF_TRACE_H
#define NVMEOF_TRACE_H

#include "internal.h"

/* One step of queue qid under the controller options o (NULL, or no hook:
 * nothing happens, not even the formatting). */
void trace_ctrl(const struct nvmeof_ctrl_opts *o, uint16_t qid, const char *fmt, ...) PRINTF(3, 4);
/* The same for a queue, through its controller's options. */
struct nvmeof_queue;
void trace_q(const struct nvmeof_queue *q, const char *fmt, ...) PRINTF(2, 3);

#endif
