/* Self-diagnosis: one line per connection step to the caller's trace hook.
 * Only connection steps and state changes call here, never a live queue's
 * I/O, so a controller without a hook pays one test per step. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "qpriv.h"
#include "trace.h"

static void emit(const struct nvmeof_ctrl_opts *o, uint16_t qid, const char *fmt, va_list ap)
{
	char line[320];
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	vsnprintf(line, sizeof(line), fmt, ap);
	nvmeof_redact(line);
	o->trace(o->trace_arg, qid, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, line);
}

void trace_ctrl(const struct nvmeof_ctrl_opts *o, uint16_t qid, const char *fmt, ...)
{
	va_list ap;
	if (!o || !o->trace)
		return;
	va_start(ap, fmt);
	emit(o, qid, fmt, ap);
	va_end(ap);
}

void trace_q(const struct nvmeof_queue *q, const char *fmt, ...)
{
	va_list ap;
	if (!q->copts || !q->copts->trace)
		return;
	va_start(ap, fmt);
	emit(q->copts, q->qid, fmt, ap);
	va_end(ap);
}
