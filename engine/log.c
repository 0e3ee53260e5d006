/* Where the engine's informational lines go: fio's log beside its normal
 * output; on stderr when fio writes JSON or terse output, so that a program
 * reading fio's stdout gets one document. Errors go through fio's log_err,
 * where fio puts its own. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "engine.h"

void eng_info(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (output_format & FIO_OUTPUT_NORMAL)
		log_info("%s", line);
	else
		fputs(line, stderr);
}

void eng_trace_line(void *arg, uint16_t qid, uint64_t time_ns, const char *msg)
{
	const struct eng_trace *t = arg;
	uint64_t us = time_ns > t->t0_ns ? (time_ns - t->t0_ns) / 1000u : 0;
	eng_info("nvmeof: trace %s: +%llu.%03llu ms: queue %u: %s\n", t->who, (unsigned long long)(us / 1000),
		 (unsigned long long)(us % 1000), qid, msg);
}

int eng_errno(int rc)
{
	switch (rc) {
	case NVMEOF_EINVAL: return EINVAL;
	case NVMEOF_ENOMEM: return ENOMEM;
	case NVMEOF_ETIMEDOUT: return ETIMEDOUT;
	case NVMEOF_EREJECTED: return ECONNREFUSED;
	case NVMEOF_EUNREACHABLE: return EHOSTUNREACH;
	case NVMEOF_EBUSY: return EBUSY;
	case NVMEOF_ECLOSED: return ECONNRESET;
	case NVMEOF_ENOTSUP: return EOPNOTSUPP;
	case NVMEOF_ENODEV: return ENODEV;
	default: return EIO;
	}
}

