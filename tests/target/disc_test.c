/*
 * Discovery, log pages, asynchronous events, Write Zeroes and FUA against
 * the test bed's nvmet (run inside tests/testbed/run).
 * NVMEOF_TB_TRTYPE=tcp: discovery_entry_connects_with_verified_io and the
 * tests that name no transport's fields reach the discovery controller
 * through the target's NVMe/TCP port (the same number).
 *   target_disc [TEST...]
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../unit/check.h"
#include "nvmeof.h"
#include "tbenv.h"

static bool over_tcp(void)
{
	const char *t = getenv("NVMEOF_TB_TRTYPE");
	return t && !strcmp(t, "tcp");
}

static void opts_base(struct nvmeof_ctrl_opts *o, const char *subnqn)
{
	nvmeof_ctrl_opts_init(o);
	o->trtype = over_tcp() ? "tcp" : "rdma";
	o->traddr = env("NVMEOF_TB_ADDR");
	o->trsvcid = env("NVMEOF_TB_PORT");
	o->subnqn = subnqn;
	o->cmd_timeout_ms = 10000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static const struct nvmeof_disc_entry *find(const struct nvmeof_disc_log *l, uint8_t trtype,
					    const char *nqn)
{
	for (uint32_t i = 0; i < l->nentries; i++)
		if (l->entries[i].trtype == trtype && !strcmp(l->entries[i].subnqn, nqn))
			return &l->entries[i];
	return NULL;
}

/* nvmet serves, through each port, the records of that port's subsystems
 * the host may use, and the port's referrals: the test adds a referral on
 * the RDMA port to the TCP port, so one RDMA discovery sees both ports. */
static int referral(bool add)
{
	const char *r = "/sys/kernel/config/nvmet/ports/1/referrals/tcp";
	char cmd[768];
	if (add)
		snprintf(cmd, sizeof(cmd),
			 "mkdir -p %s && echo tcp > %s/addr_trtype && echo ipv4 > %s/addr_adrfam && "
			 "echo %s > %s/addr_traddr && echo %s > %s/addr_trsvcid && echo 1 > %s/enable", r, r, r,
			 env("NVMEOF_TB_ADDR"), r, env("NVMEOF_TB_PORT"), r, r);
	else
		snprintf(cmd, sizeof(cmd), "[ ! -d %s ] || { echo 0 > %s/enable; rmdir %s; }", r, r, r);
	return system(cmd);
}

/* A discovery test's end: the referral it left, its log, its controller. */
static void disc_done(bool ref, struct nvmeof_disc_log *l, struct nvmeof_ctrl *c)
{
	if (ref)
		referral(false);
	nvmeof_disc_log_free(l);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

TEST(discovery_log_lists_both_subsystems_on_both_ports)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_disc_log *l = NULL;
	bool ref = false;
	opts_base(&o, NULL); /* the well-known discovery NQN */
	o.hostnqn = env("NVMEOF_TB_HOSTNQN_B"); /* the host subsystem B allows */
	CHECK_EQ(referral(true), 0);
	ref = true;
	MUST(nvmeof_discovery_connect(&o, &c));
	CHECK_EQ(nvmeof_ns_count(c), 0);
	CHECK_EQ(nvmeof_ctrl_info(c)->cntrltype, 2);
	MUST(nvmeof_discover(c, &l));
	CHECK_EQ(l->numrec, l->nentries);
	const char *nqns[2] = {env("NVMEOF_TB_NQN_A"), env("NVMEOF_TB_NQN_B")};
	for (int k = 0; k < 2; k++) {
		const struct nvmeof_disc_entry *r = find(l, 1, nqns[k]);
		CHECK(r != NULL);
		if (!r)
			continue;
		CHECK_EQ(r->subtype, 2);         /* NVM subsystem */
		CHECK_EQ(r->adrfam, 1);
		CHECK_STR(r->traddr, env("NVMEOF_TB_ADDR"));
		CHECK_STR(r->trsvcid, env("NVMEOF_TB_PORT"));
		CHECK_EQ(r->portid, 1);          /* target-up: port 1 is RDMA, port 2 TCP */
		CHECK_EQ(r->rdma_qptype, 1);     /* reliable connected */
		CHECK_EQ(r->rdma_prtype, 1);     /* not specified: nvmet's default */
		CHECK_EQ(r->rdma_cms, 1);        /* RDMA_IP_CM */
		CHECK_EQ(r->cntlid, 0xffff);     /* dynamic controllers */
		printf("    %s %s %s:%s port %u treq 0x%x asqsz %u\n", nvmeof_trtype_str(r->trtype),
		       r->subnqn, r->traddr, r->trsvcid, r->portid, r->treq, r->asqsz);
	}
	const struct nvmeof_disc_entry *t = find(l, 3, NVMEOF_DISCOVERY_NQN);
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ(t->subtype, 1);         /* a referral to the TCP port's discovery */
		CHECK_STR(t->traddr, env("NVMEOF_TB_ADDR"));
		CHECK_STR(t->trsvcid, env("NVMEOF_TB_PORT"));
		printf("    %s referral to port %u, %s:%s\n", nvmeof_trtype_str(t->trtype), t->portid,
		       t->traddr, t->trsvcid);
	}
	/* reading the log again gives the same generation */
	struct nvmeof_disc_log *l2 = NULL;
	MUST(nvmeof_discover(c, &l2));
	CHECK_EQ(l2->genctr, l->genctr);
	CHECK_EQ(l2->nentries, l->nentries);
	nvmeof_disc_log_free(l2);
	/* the generation counter moves when the target's configuration does */
	CHECK_EQ(referral(false), 0);
	ref = false;
	MUST(nvmeof_discover(c, &l2));
	CHECK(l2->genctr != l->genctr);
	CHECK_EQ(l2->nentries + 1, l->nentries);
	nvmeof_disc_log_free(l2);
	/* a discovery controller answers Keep Alive */
	sleep_ms(100);
	CHECK_EQ(nvmeof_ctrl_health(c, NULL, 0), 0);
out:
	disc_done(ref, l, c);
}

/* What a host does with the log: connects to the subsystem as the entry
 * of the discovery controller's own transport says (trtype, traddr,
 * trsvcid, subnqn, nothing from the test bed's variables), and moves data
 * through it, read back and compared. */
TEST(discovery_entry_connects_with_verified_io)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *d = NULL, *c = NULL;
	struct nvmeof_disc_log *l = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	uint8_t want = over_tcp() ? 3 : 1;
	opts_base(&o, NULL);
	MUST(nvmeof_discovery_connect(&o, &d));
	MUST(nvmeof_discover(d, &l));
	const struct nvmeof_disc_entry *e = find(l, want, env("NVMEOF_TB_NQN_A"));
	CHECK(e != NULL);
	if (!e)
		goto out;
	CHECK_EQ(e->subtype, 2);
	CHECK_EQ(e->adrfam, 1);
	CHECK_EQ(e->portid, over_tcp() ? 2 : 1); /* target-up: port 1 is RDMA, port 2 TCP */
	if (over_tcp())
		CHECK_EQ(e->tcp_sectype, 0);      /* no TLS on the test bed's port */
	printf("    %s entry: %s %s:%s port %u treq 0x%x\n", nvmeof_trtype_str(e->trtype), e->subnqn, e->traddr,
	       e->trsvcid, e->portid, e->treq);
	struct nvmeof_ctrl_opts co;
	nvmeof_ctrl_opts_init(&co);
	MUST(nvmeof_disc_entry_opts(e, &co));
	CHECK_STR(co.trtype, over_tcp() ? "tcp" : "rdma");
	co.cmd_timeout_ms = 10000;
	MUST(nvmeof_ctrl_connect(&co, &c));
	CHECK_STR(nvmeof_ctrl_info(c)->hca, over_tcp() ? "tcp" : "rxe0");
	MUST(nvmeof_queue_create(c, NULL, &q));
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, 2);
	CHECK(ns != NULL);
	if (!ns)
		goto out;
	/* above the in-capsule size and below the transfer limit */
	enum { BYTES = 256 * 1024 };
	MUST(nvmeof_mr_alloc(c, 2 * BYTES, &mr));
	uint8_t *p = nvmeof_mr_addr(mr);
	for (size_t i = 0; i < BYTES; i++)
		p[i] = (uint8_t)(i * 131 + i / 4096 + (over_tcp() ? 7 : 3));
	memset(p + BYTES, 0, BYTES);
	uint32_t nlb = BYTES / ns->lba_size;
	MUST(nvmeof_write_sync(q, ns, 1024, nlb, mr, 0, 0));
	MUST(nvmeof_read_sync(q, ns, 1024, nlb, mr, BYTES, 0));
	CHECK_MEM(p + BYTES, p, BYTES);
out:
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
	disc_done(false, l, d);
}

TEST(discovery_as_any_host_hides_subsystem_b)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_disc_log *l = NULL;
	opts_base(&o, NULL);
	MUST(nvmeof_discovery_connect(&o, &c));
	MUST(nvmeof_discover(c, &l));
	uint8_t tr = over_tcp() ? 3 : 1;
	CHECK(find(l, tr, env("NVMEOF_TB_NQN_A")) != NULL);
	CHECK(find(l, tr, env("NVMEOF_TB_NQN_B")) == NULL);
out:
	nvmeof_disc_log_free(l);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

/* Discovery over NVMe/TCP with the port left at its default goes to 8009,
 * the kernel's and nvme-cli's; over RDMA it stays 4420. The test bed's
 * target serves discovery on both (target-up: port 7 is TCP 8009, with
 * subsystem A, and its log names that port). */
TEST(tcp_discovery_defaults_to_port_8009)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_disc_log *l = NULL;
	nvmeof_ctrl_opts_init(&o);
	o.trtype = "tcp";
	o.traddr = env("NVMEOF_TB_ADDR");
	o.cmd_timeout_ms = 10000;
	MUST(nvmeof_discovery_connect(&o, &c));
	MUST(nvmeof_discover(c, &l));
	const struct nvmeof_disc_entry *e = find(l, 3, env("NVMEOF_TB_NQN_A"));
	CHECK(e != NULL);
	if (e)
		CHECK_STR(e->trsvcid, env("NVMEOF_TB_DISC_PORT")); /* the log of port 7 */
	nvmeof_disc_log_free(l);
	l = NULL;
	CHECK_EQ(nvmeof_ctrl_close(c), 0);
	c = NULL;
	/* a port given is the port used, 4420 included */
	o.trsvcid = env("NVMEOF_TB_PORT");
	MUST(nvmeof_discovery_connect(&o, &c));
	MUST(nvmeof_discover(c, &l));
	e = find(l, 3, env("NVMEOF_TB_NQN_A"));
	CHECK(e != NULL);
	if (e)
		CHECK_STR(e->trsvcid, env("NVMEOF_TB_PORT"));
	nvmeof_disc_log_free(l);
	l = NULL;
	CHECK_EQ(nvmeof_ctrl_close(c), 0);
	c = NULL;
	/* RDMA's default stays 4420 */
	nvmeof_ctrl_opts_init(&o);
	o.trtype = "rdma";
	o.traddr = env("NVMEOF_TB_ADDR");
	o.cmd_timeout_ms = 10000;
	MUST(nvmeof_discovery_connect(&o, &c));
	MUST(nvmeof_discover(c, &l));
	CHECK(find(l, 1, env("NVMEOF_TB_NQN_A")) != NULL);
out:
	nvmeof_disc_log_free(l);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

TEST(discovery_of_an_nvm_subsystem_is_refused)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	opts_base(&o, env("NVMEOF_TB_NQN_A"));
	int rc = nvmeof_discovery_connect(&o, &c);
	CHECK_EQ(rc, NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "not a discovery controller") != NULL);
	CHECK(c == NULL);
}

TEST(log_pages_and_identifiers)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	static uint8_t id[4096];
	opts_base(&o, env("NVMEOF_TB_NQN_A"));
	MUST(nvmeof_ctrl_connect(&o, &c));
	const struct nvmeof_ctrl_info *ci = nvmeof_ctrl_info(c);
	MUST(nvmeof_identify(c, 0x01, 0, id));
	CHECK(!memcmp(id + 4, env("NVMEOF_TB_SERIAL"), strlen(env("NVMEOF_TB_SERIAL"))));
	struct nvmeof_smart_log s;
	MUST(nvmeof_get_log_smart(c, 0, &s));
	CHECK(s.temperature != 0 || s.power_on_hours[0] != 0 || s.data_units_read[0] != 0 ||
	      s.host_reads[0] != 0); /* nvmet counts the reads of bring-up */
	printf("    SMART: temperature %u K, data units read %llu, host reads %llu\n", s.temperature,
	       (unsigned long long)s.data_units_read[0], (unsigned long long)s.host_reads[0]);
	struct nvmeof_error_entry e[256];
	uint32_t n = 0;
	MUST(nvmeof_get_log_error(c, e, 256, &n));
	CHECK_EQ(n, (uint32_t)ci->elpe + 1);
	printf("    error log: %u entries (ELPE %u), LPA 0x%x, AERL %u, OAES 0x%x\n", n, ci->elpe, ci->lpa,
	       ci->aerl, ci->oaes);
	/* generic: the SMART log as raw bytes equals the typed read's temperature */
	uint8_t raw[512];
	struct nvmeof_log_req r = {.lid = NVMEOF_LOG_SMART, .rae = true};
	MUST(nvmeof_get_log_page(c, &r, raw, sizeof(raw)));
	CHECK_EQ(raw[1] | raw[2] << 8, s.temperature);
	/* bad arguments are refused before anything is sent */
	CHECK_EQ(nvmeof_get_log_page(c, &r, raw, 6), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "dword") != NULL);
	uint32_t ids[8];
	bool ovf = true;
	MUST(nvmeof_get_log_changed_ns(c, true, ids, 8, &n, &ovf));
	CHECK(!ovf);
	struct nvmeof_ns_ids x;
	MUST(nvmeof_ns_ids(c, 1, &x));
	CHECK(x.has_nguid || x.has_uuid || x.has_eui64);
	const struct nvmeof_ns *ns1 = nvmeof_ns_get(c, 1);
	if (ns1 && x.has_nguid)
		CHECK_MEM(x.nguid, ns1->nguid, 16); /* the same NGUID as Identify Namespace */
	printf("    ns1: nguid %s, uuid %s, eui64 %s\n", x.has_nguid ? "yes" : "no", x.has_uuid ? "yes" : "no",
	       x.has_eui64 ? "yes" : "no");
	/* an unknown log page names the target's status */
	r.lid = 0xbf;
	CHECK_EQ(nvmeof_get_log_page(c, &r, raw, 512), NVMEOF_ENVME);
	CHECK(strstr(nvmeof_errmsg(), "Get Log Page 0xbf") != NULL);
out:
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

struct wz_done {
	int calls, err;
	uint16_t status;
};

static void wz_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct wz_done *d = arg;
	d->calls++;
	d->err = cpl->err;
	d->status = cpl->status;
}

TEST(write_zeroes_and_fua)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	opts_base(&o, env("NVMEOF_TB_NQN_A"));
	MUST(nvmeof_ctrl_connect(&o, &c));
	CHECK(nvmeof_ctrl_info(c)->oncs & (1u << 3));
	MUST(nvmeof_queue_create(c, NULL, &q));
	{
		uint32_t nsid = 1;
		const struct nvmeof_ns *ns = nvmeof_ns_get(c, nsid);
		CHECK(ns != NULL);
		if (!ns)
			goto out;
		/* 70000 blocks: more than one Write Zeroes command (65536 each) */
		uint32_t nlb = 70000;
		size_t bytes = (size_t)nlb * ns->lba_size;
		uint64_t slba = 4096;
		MUST(nvmeof_mr_alloc(c, bytes, &mr));
		uint8_t *p = nvmeof_mr_addr(mr);
		memset(p, 0xa5, bytes);
		MUST(nvmeof_write_ext_sync(q, ns, slba, nlb, mr, 0, NVMEOF_IO_FUA, 0));
		memset(p, 0, bytes);
		MUST(nvmeof_read_sync(q, ns, slba, nlb, mr, 0, 0));
		CHECK(p[0] == 0xa5 && p[bytes - 1] == 0xa5);
		MUST(nvmeof_write_zeroes_sync(q, ns, slba + 1, nlb - 2, 0, 0));
		memset(p, 0xee, bytes);
		MUST(nvmeof_read_sync(q, ns, slba, nlb, mr, 0, 0));
		size_t bad = 0;
		for (size_t i = ns->lba_size; i < bytes - ns->lba_size; i++)
			bad += p[i] != 0;
		CHECK_EQ(bad, 0);
		/* the blocks on either side kept their data */
		CHECK(p[0] == 0xa5 && p[ns->lba_size - 1] == 0xa5 && p[bytes - 1] == 0xa5);
		/* async Write Zeroes with FUA, through the completion callback
		 * (FUA on the wire: the unit test fua_and_deac_reach_the_wire) */
		struct wz_done wd = {0};
		memset(p, 0xa5, ns->lba_size);
		MUST(nvmeof_write_sync(q, ns, slba, 1, mr, 0, 0));
		MUST(nvmeof_write_zeroes(q, ns, slba, 1, NVMEOF_IO_FUA, wz_cb, &wd));
		for (int i = 0; i < 100 && !wd.calls; i++)
			nvmeof_queue_wait(q, 1, 100);
		CHECK_EQ(wd.calls, 1);
		CHECK_EQ(wd.err, 0);
		CHECK_EQ(wd.status, 0);
		CHECK_EQ(nvmeof_queue_inflight(q), 0);
		MUST(nvmeof_read_sync(q, ns, slba, 1, mr, 0, 0));
		CHECK(p[0] == 0 && p[ns->lba_size - 1] == 0);
		if (ns->dlfeat & (1u << 3))
			MUST(nvmeof_write_zeroes_sync(q, ns, slba, 8, NVMEOF_IO_DEAC, 0));
		else
			CHECK_EQ(nvmeof_write_zeroes_sync(q, ns, slba, 8, NVMEOF_IO_DEAC, 0), NVMEOF_ENOTSUP);
		printf("    nsid %u: %u blocks zeroed around written ones, DLFEAT 0x%x\n", nsid, nlb - 2,
		       ns->dlfeat);
		/* a Write Zeroes past the end names the target's status */
		CHECK_EQ(nvmeof_write_zeroes_sync(q, ns, ns->nsze, 1, 0, 0), NVMEOF_ENVME);
		CHECK(strstr(nvmeof_errmsg(), "SCT") != NULL);
		printf("    past the end: %s\n", nvmeof_errmsg());
		CHECK_EQ(nvmeof_write_ext_sync(q, ns, 0, 1, mr, 0, 0x80, 0), NVMEOF_EINVAL);
		nvmeof_mr_release(mr);
		mr = NULL;
	}
out:
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

/* Written on the library's event thread, read here: atomics. */
struct evlog {
	atomic_int n, ns_changed;
	atomic_uint last_changed;
};
static void on_event(void *arg, const struct nvmeof_event *ev)
{
	struct evlog *l = arg;
	if (ev->type == NVMEOF_AER_NOTICE && ev->info == NVMEOF_AER_NOTICE_NS_CHANGED) {
		if (ev->nchanged)
			l->last_changed = ev->changed[0];
		l->ns_changed++;
	}
	l->n++;
}

static int tb(const char *verb, const char *nqn, int nsid)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "tb %s %s %d", verb, nqn, nsid);
	return system(cmd);
}

/* The library updates the namespace table before it calls the event
 * callback, so a test that looks at both waits for both. */
static bool wait_for(struct nvmeof_ctrl *c, uint32_t nsid, bool present, const struct evlog *l,
		     int events, int ms)
{
	for (int t = 0; t < ms; t += 50) {
		if ((nvmeof_ns_get(c, nsid) != NULL) == present && l->ns_changed >= events)
			return true;
		sleep_ms(50);
	}
	return false;
}

static void namespace_events(uint32_t kato_ms)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	struct evlog l = {0};
	const char *nqn = env("NVMEOF_TB_NQN_A");
	bool disabled = false;
	opts_base(&o, nqn);
	o.kato_ms = kato_ms;
	MUST(nvmeof_ctrl_connect(&o, &c));
	MUST(nvmeof_ctrl_events(c, on_event, &l));
	CHECK_EQ(nvmeof_ctrl_events(c, NULL, NULL), NVMEOF_EBUSY);
	MUST(nvmeof_queue_create(c, NULL, &q));
	MUST(nvmeof_mr_alloc(c, 4096, &mr));
	const struct nvmeof_ns *ns2 = nvmeof_ns_get(c, 2);
	CHECK(ns2 != NULL);
	if (!ns2)
		goto out;
	CHECK_EQ(tb("ns-disable", nqn, 2), 0);
	disabled = true;
	CHECK(wait_for(c, 2, false, &l, 1, 10000));
	CHECK_EQ(l.ns_changed, 1);
	CHECK_EQ(l.last_changed, 2);
	CHECK_EQ(nvmeof_ns_count(c), 1);
	CHECK(__atomic_load_n(&ns2->gone, __ATOMIC_RELAXED));
	/* the struct the user holds stays valid; I/O to it gets the target's status */
	CHECK_EQ(nvmeof_read_sync(q, ns2, 0, 1, mr, 0, 0), NVMEOF_ENVME);
	printf("    read from the disabled namespace: %s\n", nvmeof_errmsg());
	CHECK(strstr(nvmeof_errmsg(), "SCT") != NULL);
	CHECK_EQ(tb("ns-enable", nqn, 2), 0);
	disabled = false;
	CHECK(wait_for(c, 2, true, &l, 2, 10000));
	CHECK_EQ(l.ns_changed, 2);
	CHECK(nvmeof_ns_get(c, 2) == ns2); /* the same struct comes back */
	CHECK(!__atomic_load_n(&ns2->gone, __ATOMIC_RELAXED));
	CHECK_EQ(nvmeof_ns_count(c), 2);
	MUST(nvmeof_read_sync(q, ns2, 0, 1, mr, 0, 0));
	/* the count moves just after the callback returns */
	for (int t = 0; t < 2000 && nvmeof_ctrl_event_count(c) != (uint64_t)l.n; t += 10)
		sleep_ms(10);
	CHECK_EQ(nvmeof_ctrl_event_count(c), (uint64_t)l.n);
	printf("    %d events, kato %u ms\n", (int)l.n, kato_ms);
out:
	if (disabled)
		tb("ns-enable", nqn, 2);
	if (mr)
		nvmeof_mr_release(mr);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

TEST(namespace_disabled_and_enabled_through_events) { namespace_events(0); }
TEST(namespace_events_with_keep_alive) { namespace_events(4000); }

static void on_disc_event(void *arg, const struct nvmeof_event *ev)
{
	atomic_int *n = arg;
	if (ev->type == NVMEOF_AER_NOTICE && ev->info == NVMEOF_AER_NOTICE_DISC_CHANGED &&
	    ev->lid == NVMEOF_LOG_DISCOVERY)
		(*n)++;
}

static bool wait_events(const atomic_int *n, int want, int ms)
{
	for (int t = 0; t < ms && *n < want; t += 50)
		sleep_ms(50);
	return *n >= want;
}

/* nvmet sends no further event of a type until a Get Log Page with RAE
 * cleared reads the log the last one named; the user's own reads keep
 * RAE set, so the library must do that read itself for every event. */
TEST(discovery_change_events_keep_coming)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_disc_log *l = NULL;
	atomic_int n = 0;
	bool ref = false;
	opts_base(&o, NULL);
	CHECK_EQ(referral(false), 0);
	MUST(nvmeof_discovery_connect(&o, &c));
	MUST(nvmeof_ctrl_events(c, on_disc_event, &n));
	CHECK_EQ(referral(true), 0);
	ref = true;
	CHECK(wait_events(&n, 1, 10000));
	/* the user's read (RAE set) in between must not matter either way */
	MUST(nvmeof_discover(c, &l));
	CHECK_EQ(referral(false), 0);
	ref = false;
	CHECK(wait_events(&n, 2, 10000));
	CHECK_EQ(referral(true), 0);
	ref = true;
	CHECK(wait_events(&n, 3, 10000));
	printf("    %d discovery log change events\n", (int)n);
out:
	disc_done(ref, l, c);
}

static void on_ana_event(void *arg, const struct nvmeof_event *ev)
{
	atomic_int *n = arg;
	if (ev->type == NVMEOF_AER_NOTICE && ev->info == NVMEOF_AER_NOTICE_ANA && ev->lid == NVMEOF_LOG_ANA)
		(*n)++;
}

static int ana_state(const char *state)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "echo %s > /sys/kernel/config/nvmet/ports/1/ana_groups/1/ana_state", state);
	return system(cmd);
}

/* The same for ANA changes, on an I/O controller; the user's ANA log
 * read (RAE set) in between. */
TEST(ana_change_events_keep_coming)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	static uint8_t log[16384];
	atomic_int n = 0;
	bool changed = false;
	opts_base(&o, env("NVMEOF_TB_NQN_A"));
	MUST(nvmeof_ctrl_connect(&o, &c));
	CHECK(nvmeof_ctrl_info(c)->oaes & (1u << 11));
	MUST(nvmeof_ctrl_events(c, on_ana_event, &n));
	CHECK_EQ(ana_state("non-optimized"), 0);
	changed = true;
	CHECK(wait_events(&n, 1, 10000));
	MUST(nvmeof_get_log_ana(c, false, log, sizeof(log)));
	struct nvmeof_ana_group g;
	CHECK_EQ(nvmeof_ana_group(log, sizeof(log), 0, &g, NULL, NULL), 0);
	CHECK_EQ(g.state, 0x02);
	CHECK_EQ(ana_state("optimized"), 0);
	changed = false;
	CHECK(wait_events(&n, 2, 10000));
	CHECK_EQ(ana_state("inaccessible"), 0);
	changed = true;
	CHECK(wait_events(&n, 3, 10000));
	printf("    %d ANA change events\n", (int)n);
out:
	if (changed)
		ana_state("optimized");
	if (c)
		CHECK_EQ(nvmeof_ctrl_close(c), 0);
}

int main(int argc, char **argv)
{
	static const struct test_case all[] = {
		T(discovery_log_lists_both_subsystems_on_both_ports), T(discovery_as_any_host_hides_subsystem_b),
		T(discovery_of_an_nvm_subsystem_is_refused), T(discovery_entry_connects_with_verified_io),
		T(tcp_discovery_defaults_to_port_8009),
		T(log_pages_and_identifiers), T(write_zeroes_and_fua),
		T(namespace_disabled_and_enabled_through_events), T(namespace_events_with_keep_alive),
		T(discovery_change_events_keep_coming), T(ana_change_events_keep_coming),
	};
	size_t n = sizeof(all) / sizeof(all[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	check_limit_each_test(); /* each test in a child, ended at its own limit */
	check_after_kill = tb_restore_target;
	return run_named_tests("target-disc", all, n, argc, argv);
}
