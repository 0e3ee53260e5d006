/* The engine's NVMe/TCP socket options; see tcp_opts.h. */
#include "tcp_opts.h"

#include "engine.h"
#include "optval.h"

/* A value out of range fails the job before anything connects, naming the range. */
static int num(const char *name, const char *v, long long lo, long long hi, const char *what, long long *n)
{
	char err[400];
	if (!optval_count_of(name, v, eng_shown(v), lo, hi, what, n, err, sizeof(err)))
		return 0;
	eng_err("nvmeof: %s\n", err);
	return 1;
}

int tcp_opt_priority(void *data, const char *v)
{
	long long n;
	if (num("tcp_priority", v, -1, 15, "-1: the system's", &n))
		return 1;
	((struct eng_opts *)data)->tcp_priority = (int)n;
	return 0;
}

int tcp_opt_tos(void *data, const char *v)
{
	long long n;
	if (num("tcp_tos", v, -1, 255, "-1: the system's", &n))
		return 1;
	((struct eng_opts *)data)->tcp_tos = (int)n;
	return 0;
}

int tcp_opt_busy_poll(void *data, const char *v)
{
	long long n;
	if (num("tcp_busy_poll", v, 0, 1000000, "microseconds; 0: the system's", &n))
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
	/* an RDMA path: the library's own defaults, as if never set */
	struct nvmeof_ctrl_opts d;
	nvmeof_ctrl_opts_init(&d);
	bool tcp = trtype == 3;
	o->tcp_priority = tcp ? k->tcp_job.priority : d.tcp_priority;
	o->tcp_tos = tcp ? k->tcp_job.tos : d.tcp_tos;
	o->tcp_busy_poll_us = tcp ? k->tcp_job.busy_poll_us : d.tcp_busy_poll_us;
	o->tcp_zerocopy = tcp ? k->tcp_job.zerocopy : d.tcp_zerocopy;
	o->hdr_digest = tcp ? k->tcp_job.hdr_digest : d.hdr_digest;
	o->data_digest = tcp ? k->tcp_job.data_digest : d.data_digest;
	o->disable_sqflow = tcp ? k->tcp_job.disable_sqflow : d.disable_sqflow;
	o->tls = tcp && k->tcp_job.tls;
	/* kept in tcp_job, not o: a TCP path after an RDMA first one needs them */
	o->tls_compat = tcp && k->tcp_job.tls_compat;
	o->tls_identity = tcp ? k->tcp_job.tls_identity : 0;
	if (!tcp)
		o->tls_key = o->tls_keyring = NULL;
}

void tcp_opts_job(struct conn_cfg *k)
{
	k->tcp_job.priority = k->o.tcp_priority;
	k->tcp_job.tos = k->o.tcp_tos;
	k->tcp_job.busy_poll_us = k->o.tcp_busy_poll_us;
	k->tcp_job.zerocopy = k->o.tcp_zerocopy;
	k->tcp_job.hdr_digest = k->o.hdr_digest;
	k->tcp_job.data_digest = k->o.data_digest;
	k->tcp_job.disable_sqflow = k->o.disable_sqflow;
	k->tcp_job.tls = k->o.tls;
	k->tcp_job.tls_compat = k->o.tls_compat;
	k->tcp_job.tls_identity = k->o.tls_identity;
	tcp_opts_path(&k->o, k, k->t.trtype);
}

/* Bytes as fio writes a size: digits and an optional k, m or g (any case,
 * powers of 1024, fio's default kb_base). */
int tcp_opt_zerocopy(void *data, const char *v)
{
	const char *p = v ? v : "";
	unsigned long long n = 0, unit = 1;
	int digits = 0;
	for (; *p >= '0' && *p <= '9' && n <= 1ull << 32; p++, digits++)
		n = n * 10 + (unsigned)(*p - '0');
	if (*p == 'k' || *p == 'K')
		unit = 1ull << 10, p++;
	else if (*p == 'm' || *p == 'M')
		unit = 1ull << 20, p++;
	else if (*p == 'g' || *p == 'G')
		unit = 1ull << 30, p++;
	if (!digits || *p || n > (1ull << 30) / unit) {
		eng_err("nvmeof: tcp_zerocopy=%s: expected bytes from 0 to 1g, e.g. 64k (0: every payload "
			"copied)\n", eng_shown(v));
		return 1;
	}
	((struct eng_opts *)data)->tcp_zerocopy = (unsigned int)(n * unit);
	return 0;
}

void tcp_opts_cfg(struct nvmeof_ctrl_opts *o, const struct eng_opts *eo)
{
	o->tcp_priority = eo->tcp_priority;
	o->tcp_tos = eo->tcp_tos;
	o->tcp_busy_poll_us = eo->tcp_busy_poll_us;
	o->tcp_zerocopy = eo->tcp_zerocopy;
	o->disable_sqflow = eo->disable_sqflow;
	/* hdr_digest= and data_digest=, set after this, win over SPDK's spelling */
	if (eo->digest_enable) {
		o->hdr_digest = (eo->digest_enable - 1) & 1;
		o->data_digest = (eo->digest_enable - 1) >> 1;
	}
}
