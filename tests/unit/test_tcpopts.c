/* The engine's NVMe/TCP options on each path of a file whose paths mix
 * RDMA and TCP (engine/tcp_opts.c): a TCP path gets every TLS option of the
 * job, whichever transport the first path is; an RDMA path none. */
#include <stdarg.h>
#include <stdio.h>

#include "check.h"
#include "engine.h"
#include "tcp_opts.h"

/* the engine's log, which tcp_opts.c's option callbacks use */
void eng_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
const char *eng_shown(const char *v)
{
	return v ? v : "";
}

static void job(struct conn_cfg *k, int first, int alt)
{
	memset(k, 0, sizeof(*k));
	nvmeof_ctrl_opts_init(&k->o);
	k->t.trtype = first;
	k->t.nalt = 1;
	k->t.alt[0].trtype = alt;
	k->o.tls = true;
	k->o.tls_identity = 1;
	k->o.tls_compat = true;
	k->o.hdr_digest = true;
}

/* An RDMA first path, a TCP second: the TCP path keeps tls_identity and
 * tls_key_compat (before, both were lost with the first path's). */
TEST(tcp_alt_path_keeps_tls_identity_and_compat)
{
	static struct conn_cfg k;
	job(&k, 1, 3);
	tcp_opts_job(&k);
	CHECK(!k.o.tls);
	CHECK_EQ(k.o.tls_identity, 0);
	CHECK(!k.o.tls_compat);
	struct nvmeof_ctrl_opts o = k.o; /* as paths.c's path_cfg copies the job's */
	tcp_opts_path(&o, &k, 3);
	CHECK(o.tls);
	CHECK(o.hdr_digest);
	CHECK_EQ(o.tls_identity, 1);
	CHECK(o.tls_compat);
}

/* A TCP first path, an RDMA second: the RDMA path has none of them. */
TEST(rdma_alt_path_has_no_tls)
{
	static struct conn_cfg k;
	job(&k, 3, 1);
	tcp_opts_job(&k);
	CHECK(k.o.tls);
	CHECK_EQ(k.o.tls_identity, 1);
	CHECK(k.o.tls_compat);
	struct nvmeof_ctrl_opts o = k.o;
	tcp_opts_path(&o, &k, 1);
	CHECK(!o.tls);
	CHECK_EQ(o.tls_identity, 0);
	CHECK(!o.tls_compat);
	CHECK(!o.hdr_digest);
}

int main(void)
{
	static const struct test_case all[] = {T(tcp_alt_path_keeps_tls_identity_and_compat),
					       T(rdma_alt_path_has_no_tls)};
	return run_tests("unit-tcpopts", all, sizeof(all) / sizeof(all[0]));
}
