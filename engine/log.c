/* Where the engine's informational lines go: fio's log beside its normal
 * output; on stderr when fio writes JSON or terse output, so that a program
 * reading fio's stdout gets one document. Errors go through fio's log_err
 * (eng_err), where fio puts its own; neither ever shows a secret. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>
#include <time.h>

#include "engine.h"

__thread bool eng_quiet;

static void say(const char *fmt, va_list ap)
{
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	nvmeof_redact(line);
	if (output_format & FIO_OUTPUT_NORMAL)
		log_info("%s", line);
	else
		fputs(line, stderr);
}

void eng_info(const char *fmt, ...)
{
	va_list ap;
	if (eng_quiet)
		return;
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

void eng_summary(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

/* A secret's prefixes (DH-HMAC-CHAP, the NVMe/TCP PSK interchange format),
 * any case: the engine's messages echo job options and filenames, where a
 * secret may have been put by mistake; none is ever shown. */
static const char *const secret_prefix[] = {"DHHC-1", "NVMeTLSkey-1"};

void eng_err(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	nvmeof_redact(line);
	log_err("%s", line);
}

const char *eng_shown(const char *v)
{
	if (!v)
		return "";
	for (size_t i = 0; i < sizeof(secret_prefix) / sizeof(secret_prefix[0]); i++)
		if (strcasestr(v, secret_prefix[i]))
			return "<a secret, not shown>";
	return strlen(v) > ENG_SHOWN_MAX ? "<a value too long to show>" : v;
}

void eng_trace_line(void *arg, uint16_t qid, uint64_t time_ns, const char *msg)
{
	struct eng_trace *t = arg;
	pthread_mutex_lock(&t->lock);
	snprintf(t->last, sizeof(t->last), "%s", msg);
	t->last_qid = qid;
	t->stepped = true;
	pthread_mutex_unlock(&t->lock);
	if (!t->verbose)
		return;
	uint64_t us = time_ns > t->t0_ns ? (time_ns - t->t0_ns) / 1000u : 0;
	eng_info("nvmeof: trace %s: +%llu.%03llu ms: queue %u: %s\n", t->who, (unsigned long long)(us / 1000),
		 (unsigned long long)(us % 1000), qid, msg);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *slow_watch(void *arg)
{
	struct eng_slow *w = arg;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ENG_SLOW_MS / 1000;
	pthread_mutex_lock(&w->lock);
	while (!w->done && pthread_cond_timedwait(&w->cond, &w->lock, &until) != ETIMEDOUT)
		;
	bool slow = !w->done;
	pthread_mutex_unlock(&w->lock);
	if (!slow)
		return NULL;
	char step[260];
	/* before the library's first trace line: RDMA resolves the address
	 * first, NVMe/TCP connects its socket (the address is numeric) */
	if (w->tcp)
		snprintf(step, sizeof(step), "its first step, the TCP connect (given up after connect_timeout, %u ms)",
			 w->step_ms);
	else
		snprintf(step, sizeof(step), "its first step, resolving the address");
	pthread_mutex_lock(&w->steps->lock);
	if (w->steps->stepped)
		snprintf(step, sizeof(step), "the step after \"%.200s\" (queue %u)", w->steps->last, w->steps->last_qid);
	pthread_mutex_unlock(&w->steps->lock);
	uint64_t spent = now_ms() - w->t0_ms;
	uint64_t left = w->bound_ms > spent ? w->bound_ms - spent : 0;
	eng_err("nvmeof: %s: still connecting after %llu.%llu s, waiting for %s; it succeeds or fails within "
		"about %llu s more\n", w->what, (unsigned long long)(spent / 1000), (unsigned long long)(spent % 1000 / 100),
		step, (unsigned long long)(left + 999) / 1000);
	return NULL;
}

uint64_t eng_connect_bound_ms(const struct nvmeof_ctrl_opts *o)
{
	uint64_t ct = o->connect_timeout_ms, tries = (uint64_t)o->connect_retries + 1;
	/* NVMe/TCP: the TCP connect and the ICReq/ICResp exchange, each
	 * within connect_timeout, the Fabrics Connect within cmd_timeout, a
	 * backoff of at most 1.6 s; then the admin commands after the last */
	if (o->trtype && !strcasecmp(o->trtype, "tcp"))
		return tries * (2 * ct + o->cmd_timeout_ms + 1600) + 2ull * o->cmd_timeout_ms;
	/* each try's four CM and Fabrics steps (address and route resolution
	 * take 500 ms more each) and a backoff of at most 1.6 s, then the
	 * admin commands after the last */
	return tries * (4 * ct + 1000 + 1600) + 2ull * o->cmd_timeout_ms;
}

void eng_slow_begin(struct eng_slow *w, struct eng_trace *steps, const struct nvmeof_ctrl_opts *o, const char *what)
{
	pthread_condattr_t ca;
	memset(w, 0, sizeof(*w));
	w->steps = steps;
	w->bound_ms = eng_connect_bound_ms(o);
	w->tcp = o->trtype && !strcasecmp(o->trtype, "tcp");
	w->step_ms = o->connect_timeout_ms;
	w->t0_ms = now_ms();
	snprintf(w->what, sizeof(w->what), "%s", what);
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	/* without the thread, no note: the connect itself is not held up */
	w->running = pthread_create(&w->th, NULL, slow_watch, w) == 0;
}

void eng_slow_end(struct eng_slow *w)
{
	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	if (w->running)
		pthread_join(w->th, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
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

