/* The engine's NVMe/TCP socket options; see tcp_opts.h. */
#include "tcp_opts.h"

#include "engine.h"
#include "optval.h"

/* A value out of range fails the job before anything connects, naming the range. */
static int num(const char *name, const char *v, long long lo, long long hi, const char *what, long long *n)
{
	if (!optval_num(v, lo, hi, n))
		return 0;
	log_err("nvmeof: %s=%s: expected a whole number from %lld to %lld%s\n", name, v ? v : "", lo, hi, what);
	return 1;
}

int tcp_opt_priority(void *data, const char *v)
{
	long long n;
	if (num("tcp_priority", v, -1, 15, " (-1: the system's)", &n))
		return 1;
	((struct eng_opts *)data)->tcp_priority = (int)n;
	return 0;
}

int tcp_opt_tos(void *data, const char *v)
{
	long long n;
	if (num("tcp_tos", v, -1, 255, " (-1: the system's)", &n))
		return 1;
	((struct eng_opts *)data)->tcp_tos = (int)n;
	return 0;
}

int tcp_opt_busy_poll(void *data, const char *v)
{
	long long n;
	if (num("tcp_busy_poll", v, 0, 1000000, " (microseconds; 0: the system's)", &n))
		return 1;
	((struct eng_opts *)data)->tcp_busy_poll_us = (unsigned int)n;
	return 0;
}

void tcp_opts_path(struct nvmeof_ctrl_opts *o, const struct tid *t, int trtype)
{
	bool any_tcp = t->trtype == 3;
	for (unsigned int i = 0; i < t->nalt; i++)
		any_tcp |= t->alt[i].trtype == 3;
	if (trtype == 3 || !any_tcp)
		return;
	o->tcp_priority = o->tcp_tos = -1;
	o->tcp_busy_poll_us = 0;
	o->hdr_digest = o->data_digest = false;
}

void tcp_opts_cfg(struct nvmeof_ctrl_opts *o, const struct eng_opts *eo)
{
	o->tcp_priority = eo->tcp_priority;
	o->tcp_tos = eo->tcp_tos;
	o->tcp_busy_poll_us = eo->tcp_busy_poll_us;
}
