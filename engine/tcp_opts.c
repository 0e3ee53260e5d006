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

static bool file_has_tcp(const struct tid *t)
{
	bool any = t->trtype == 3;
	for (unsigned int i = 0; i < t->nalt; i++)
		any |= t->alt[i].trtype == 3;
	return any;
}

void tcp_opts_path(struct nvmeof_ctrl_opts *o, const struct conn_cfg *k, int trtype)
{
	if (!file_has_tcp(&k->t))
		return; /* all RDMA: the library refuses them by name */
	bool tcp = trtype == 3;
	o->tcp_priority = tcp ? k->tcp_job.priority : -1;
	o->tcp_tos = tcp ? k->tcp_job.tos : -1;
	o->tcp_busy_poll_us = tcp ? k->tcp_job.busy_poll_us : 0;
	o->hdr_digest = tcp && k->tcp_job.hdr_digest;
	o->data_digest = tcp && k->tcp_job.data_digest;
}

void tcp_opts_job(struct conn_cfg *k)
{
	k->tcp_job.priority = k->o.tcp_priority;
	k->tcp_job.tos = k->o.tcp_tos;
	k->tcp_job.busy_poll_us = k->o.tcp_busy_poll_us;
	k->tcp_job.hdr_digest = k->o.hdr_digest;
	k->tcp_job.data_digest = k->o.data_digest;
	tcp_opts_path(&k->o, k, k->t.trtype);
}

void tcp_opts_cfg(struct nvmeof_ctrl_opts *o, const struct eng_opts *eo)
{
	o->tcp_priority = eo->tcp_priority;
	o->tcp_tos = eo->tcp_tos;
	o->tcp_busy_poll_us = eo->tcp_busy_poll_us;
}
