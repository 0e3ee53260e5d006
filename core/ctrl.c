/*
 * Controller bring-up on the admin queue, reading like the NVMe-oF spec:
 * Fabrics Connect, Property Get CAP/VS, Property Set CC.EN, wait CSTS.RDY,
 * Identify Controller, Set Features Number of Queues, Identify namespaces.
 * Then I/O queues on demand, and CC.SHN shutdown on close.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "aer.h"
#include "ctrl.h"
#include "internal.h"
#include "nstable.h"
#include "protocol.h"
#include "queue.h"

#define MAX_NS 1024
#define SHUTDOWN_TIMEOUT_MS 5000

struct nvmeof_ctrl {
	pthread_mutex_t lock;       /* queue ids, counters, keep-alive state */
	pthread_mutex_t admin_lock; /* the admin queue, after bring-up */
	struct nvmeof_ctrl_opts o;
	char subnqn[NVME_NQN_MAX + 1], hostnqn[NVME_NQN_MAX + 1];
	uint8_t hostid[16];
	struct sockaddr_storage dst, src;
	bool has_src;
	struct nvmeof_queue *admin;
	struct ibv_pd *pd;           /* outlives reconnects: registrations stay valid */
	uint32_t assoc_gen;          /* bumped each time the association is re-created */
	struct nvmeof_ctrl_info info;
	struct ns_table nst;         /* stable structs: events add and retire namespaces */
	struct aer *aer;             /* asynchronous events, when enabled (aer.c) */
	uint8_t *qid_used;
	uint32_t nqueues, nmrs, depth_limit;
	uint32_t cc;
	/* keep-alive */
	pthread_t ka_thread;
	pthread_cond_t ka_cond;
	bool ka_running, ka_stop;
	int ka_err;
	char ka_msg[256];
	uint64_t ka_sent;
};

void nvmeof_ctrl_opts_init(struct nvmeof_ctrl_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->trsvcid = "4420";
	o->queue_depth = 128;
	o->num_io_queues = 64;
	o->cmd_timeout_ms = 30000;
	o->connect_timeout_ms = 3000;
	o->in_capsule = true;
	o->wait_mode = NVMEOF_WAIT_HYBRID;
	o->spin_us = 20;
	o->ctrl_loss_tmo_ms = 60000;
}

struct ibv_pd *ctrl_pd(struct nvmeof_ctrl *c) { return c->pd; }

void ctrl_ref_mr(struct nvmeof_ctrl *c, int delta)
{
	pthread_mutex_lock(&c->lock);
	c->nmrs = (uint32_t)((int)c->nmrs + delta);
	pthread_mutex_unlock(&c->lock);
}

const struct nvmeof_ctrl_info *nvmeof_ctrl_info(const struct nvmeof_ctrl *c) { return &c->info; }
/* The table has its own lock; the const API predates events changing it. */
uint32_t nvmeof_ns_count(const struct nvmeof_ctrl *c) { return nst_count((struct ns_table *)&c->nst); }
const struct nvmeof_ns *nvmeof_ns_at(const struct nvmeof_ctrl *c, uint32_t i)
{
	return nst_at((struct ns_table *)&c->nst, i);
}
struct nvmeof_queue *ctrl_admin(struct nvmeof_ctrl *c) { return c->admin; }
pthread_mutex_t *ctrl_admin_lock(struct nvmeof_ctrl *c) { return &c->admin_lock; }
uint32_t ctrl_cmd_timeout(const struct nvmeof_ctrl *c) { return c->o.cmd_timeout_ms; }
struct ns_table *ctrl_nst(struct nvmeof_ctrl *c) { return &c->nst; }
struct aer **ctrl_aer(struct nvmeof_ctrl *c) { return &c->aer; }

const struct nvmeof_ns *nvmeof_ns_get(const struct nvmeof_ctrl *c, uint32_t nsid)
{
	if (!c) {
		nvmeof_err(NVMEOF_EINVAL, "namespace lookup: no controller");
		return NULL;
	}
	const struct nvmeof_ns *ns = nst_get((struct ns_table *)&c->nst, nsid);
	if (ns)
		return ns;
	nvmeof_err(NVMEOF_EINVAL, "namespace %u is not an active namespace of %s (%u active)", nsid,
		   c->subnqn, nvmeof_ns_count(c));
	return NULL;
}

/* ---- host identity ---- */

static int parse_uuid(const char *s, uint8_t out[16])
{
	int n = 0;
	for (const char *p = s; *p && n < 32; p++) {
		int v;
		if (*p == '-')
			continue;
		if (*p >= '0' && *p <= '9') v = *p - '0';
		else if (*p >= 'a' && *p <= 'f') v = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F') v = *p - 'A' + 10;
		else return -1;
		if (n % 2 == 0) out[n / 2] = (uint8_t)(v << 4);
		else out[n / 2] |= (uint8_t)v;
		n++;
	}
	return n == 32 ? 0 : -1;
}

static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, " \t\r\n")] = '\0';
	fclose(f);
}

/* One random identity per process, so every controller a process opens
 * presents the same host to the target. */
static pthread_once_t proc_id_once = PTHREAD_ONCE_INIT;
static uint8_t proc_hostid[16];
static char proc_hostnqn[NVME_NQN_MAX + 1];

static void make_proc_id(void)
{
	if (getrandom(proc_hostid, 16, 0) != 16) {
		uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&proc_hostid;
		memcpy(proc_hostid, &t, 8);
		memcpy(proc_hostid + 8, &t, 8);
	}
	proc_hostid[6] = (uint8_t)((proc_hostid[6] & 0x0f) | 0x40); /* version 4 */
	proc_hostid[8] = (uint8_t)((proc_hostid[8] & 0x3f) | 0x80);
	const uint8_t *u = proc_hostid;
	snprintf(proc_hostnqn, sizeof(proc_hostnqn),
		 "nqn.2014-08.org.nvmexpress:uuid:%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}

static int host_identity(struct nvmeof_ctrl *c)
{
	char buf[512];
	pthread_once(&proc_id_once, make_proc_id);
	if (c->o.hostnqn) {
		snprintf(buf, sizeof(buf), "%s", c->o.hostnqn);
	} else {
		read_line("/etc/nvme/hostnqn", buf, sizeof(buf));
		if (!buf[0])
			snprintf(buf, sizeof(buf), "%s", proc_hostnqn);
	}
	if (!buf[0] || strlen(buf) > NVME_NQN_MAX)
		return nvmeof_err(NVMEOF_EINVAL, "host NQN '%.40s%s' is %s (at most %d bytes)", buf,
				  strlen(buf) > 40 ? "..." : "", buf[0] ? "too long" : "empty", NVME_NQN_MAX);
	snprintf(c->hostnqn, sizeof(c->hostnqn), "%s", buf);
	if (c->o.hostid) {
		if (parse_uuid(c->o.hostid, c->hostid))
			return nvmeof_err(NVMEOF_EINVAL, "host ID '%s' is not a UUID", c->o.hostid);
		return 0;
	}
	read_line("/etc/nvme/hostid", buf, sizeof(buf));
	if (!buf[0] || parse_uuid(buf, c->hostid))
		memcpy(c->hostid, proc_hostid, 16);
	return 0;
}

static int resolve(const char *host, const char *port, struct sockaddr_storage *out, const char *what)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		return nvmeof_err(NVMEOF_EINVAL, "%s '%s'%s%s: %s", what, host, port ? " port " : "",
				  port ? port : "", gai_strerror(rc));
	memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

/* ---- admin commands ---- */

static uint32_t admin_tmo(const struct nvmeof_ctrl *c) { return c->o.cmd_timeout_ms; }

static int prop_get(struct nvmeof_ctrl *c, uint32_t off, int size8, uint64_t *val, const char *name)
{
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	nvmf_sqe_prop_get(sqe, 0, off, size8);
	int rc = q_exec(c->admin, sqe, 0, admin_tmo(c), &cpl);
	if (rc)
		return nvmeof_err_prefix(rc, "Property Get %s", name);
	/* An 8-byte property comes back in DW0 (low) and DW1 (high). */
	*val = size8 ? ((uint64_t)cpl.cdw1 << 32 | cpl.cdw0) : cpl.cdw0;
	return 0;
}

static int prop_set(struct nvmeof_ctrl *c, uint32_t off, uint32_t val, const char *name)
{
	uint8_t sqe[NVME_SQE_SIZE];
	nvmf_sqe_prop_set(sqe, 0, off, 0, val);
	int rc = q_exec(c->admin, sqe, 0, admin_tmo(c), NULL);
	return rc ? nvmeof_err_prefix(rc, "Property Set %s", name) : 0;
}

static int fabrics_connect(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid,
			   uint16_t sqsize, uint16_t cntlid, uint32_t kato, uint16_t *cntlid_out)
{
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	nvmf_sqe_connect(sqe, 0, qid, sqsize, 0, kato);
	if (nvmf_connect_data(q_scratch(q), c->hostid, cntlid, c->subnqn, c->hostnqn))
		return nvmeof_err(NVMEOF_EINVAL, "Fabrics Connect: an NQN is empty or longer than %d bytes",
				  NVME_NQN_MAX);
	/* an NVMe command, not a CM step: the command timeout (a busy target
	 * creating many queues at once can take seconds) */
	int rc = q_exec(q, sqe, NVMF_CONNECT_DATA_SIZE, c->o.cmd_timeout_ms, &cpl);
	if (rc == NVMEOF_ENVME) {
		const char *hint = "";
		if (cpl.status == 0x184)
			hint = ": the subsystem does not allow this host NQN";
		else if (cpl.status == 0x182)
			hint = ": wrong subsystem NQN, or a parameter the target refused";
		return nvmeof_err_prefix(rc, "Fabrics Connect queue %u to %s as %s%s", qid, c->subnqn,
					 c->hostnqn, hint);
	}
	if (rc)
		return nvmeof_err_prefix(rc, "Fabrics Connect queue %u", qid);
	if (cntlid_out)
		*cntlid_out = (uint16_t)(cpl.cdw0 & 0xffff);
	return 0;
}

static int identify(struct nvmeof_ctrl *c, uint8_t cns, uint32_t nsid, const char *what)
{
	uint8_t sqe[NVME_SQE_SIZE];
	nvme_sqe_identify(sqe, 0, cns, nsid, 0);
	memset(q_scratch(c->admin), 0, NVME_IDENTIFY_SIZE);
	int rc = q_exec(c->admin, sqe, NVME_IDENTIFY_SIZE, admin_tmo(c), NULL);
	return rc ? nvmeof_err_prefix(rc, "Identify %s", what) : 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int wait_csts(struct nvmeof_ctrl *c, uint32_t mask, uint32_t want, uint32_t timeout_ms,
		     const char *what)
{
	uint64_t deadline = nvmeof_now_ms() + timeout_ms, v = 0;
	for (;;) {
		int rc = prop_get(c, NVME_REG_CSTS, 0, &v, "CSTS");
		if (rc)
			return rc;
		if ((v & mask) == want)
			return 0;
		if (v & NVME_CSTS_CFS)
			return nvmeof_err(NVMEOF_ETRANSPORT, "%s: controller fatal status (CSTS 0x%llx)",
					  what, (unsigned long long)v);
		if (nvmeof_now_ms() >= deadline)
			return nvmeof_err(NVMEOF_ETIMEDOUT, "%s: not reached within %u ms (CSTS 0x%llx)",
					  what, timeout_ms, (unsigned long long)v);
		sleep_ms(10);
	}
}

static int enable(struct nvmeof_ctrl *c)
{
	uint64_t vs;
	int rc;
	if ((rc = prop_get(c, NVME_REG_CAP, 1, &c->info.cap, "CAP")) ||
	    (rc = prop_get(c, NVME_REG_VS, 0, &vs, "VS")))
		return rc;
	c->info.ver = (uint32_t)vs;
	c->info.mqes = NVME_CAP_MQES(c->info.cap);
	if (NVME_CAP_MPSMIN(c->info.cap) > 0)
		return nvmeof_err(NVMEOF_ENOTSUP, "controller's minimum page size is %u bytes; 4096 is required",
				  1u << (12 + NVME_CAP_MPSMIN(c->info.cap)));
	c->cc = NVME_CC_CSS_NVM | NVME_CC_MPS(12) | NVME_CC_IOSQES(6) | NVME_CC_IOCQES(4);
	if ((rc = prop_set(c, NVME_REG_CC, c->cc, "CC")))
		return rc;
	c->cc |= NVME_CC_EN;
	if ((rc = prop_set(c, NVME_REG_CC, c->cc, "CC.EN")))
		return rc;
	uint32_t to = NVME_CAP_TO(c->info.cap) * 500u;
	return wait_csts(c, NVME_CSTS_RDY, NVME_CSTS_RDY, to ? to : 500, "enable: CSTS.RDY");
}

/* Identify Controller and what follows from it: the data path needs keyed
 * SGLs; MDTS gives the per-command limit; SGL offsets, ICDOFF 0 and IOCCSZ
 * give the in-capsule limit. On first bring-up and after a reconnect. */
static int identify_ctrl(struct nvmeof_ctrl *c)
{
	int rc = identify(c, NVME_CNS_CTRL, 0, "Controller");
	if (rc)
		return rc;
	nvme_id_ctrl_parse(q_scratch(c->admin), &c->info);
	if (!(c->info.sgls & NVME_SGLS_KEYED))
		return nvmeof_err(NVMEOF_ENOTSUP, "controller lacks keyed SGL data block support (SGLS 0x%x)",
				  c->info.sgls);
	c->info.max_xfer = nvme_max_xfer(c->info.mdts, c->info.cap);
	c->info.in_capsule_max = 0;
	if (c->o.in_capsule && (c->info.sgls & NVME_SGLS_OFFSET) && !c->info.icdoff &&
	    c->info.ioccsz * 16u > NVME_SQE_SIZE)
		c->info.in_capsule_max = c->info.ioccsz * 16u - NVME_SQE_SIZE;
	return 0;
}

static int identify_all(struct nvmeof_ctrl *c)
{
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	uint32_t ids[MAX_NS];
	int rc;
	if ((rc = identify_ctrl(c)))
		return rc;
	/* A discovery controller has no namespaces and no I/O queues. */
	if (c->info.cntrltype == NVME_CNTRLTYPE_DISCOVERY || !strcmp(c->subnqn, NVMEOF_DISCOVERY_NQN))
		return 0;

	uint16_t want = (uint16_t)(c->o.num_io_queues ? c->o.num_io_queues : 1);
	nvme_sqe_set_features(sqe, 0, NVME_FEAT_NUM_QUEUES, nvme_num_queues_cdw11(want, want));
	if ((rc = q_exec(c->admin, sqe, 0, admin_tmo(c), &cpl)))
		return nvmeof_err_prefix(rc, "Set Features Number of Queues");
	uint32_t nsq = (cpl.cdw0 & 0xffff) + 1, ncq = (cpl.cdw0 >> 16) + 1;
	c->info.max_io_queues = nsq < ncq ? nsq : ncq;
	if (c->info.max_io_queues > want)
		c->info.max_io_queues = want;

	if ((rc = identify(c, NVME_CNS_NS_ACTIVE_LIST, 0, "Active Namespace List")))
		return rc;
	uint32_t n = nvme_ns_list_parse(q_scratch(c->admin), ids, MAX_NS);
	for (uint32_t i = 0; i < n; i++) {
		const char *why;
		char what[32];
		struct nvmeof_ns ns;
		snprintf(what, sizeof(what), "Namespace %u", ids[i]);
		if ((rc = identify(c, NVME_CNS_NS, ids[i], what)))
			return rc;
		/* A namespace with a format we cannot use is left out, not fatal. */
		if (nvme_id_ns_parse(q_scratch(c->admin), ids[i], &ns, &why) == 0 && ns.nsze &&
		    (rc = nst_put(&c->nst, &ns)))
			return rc;
	}
	return 0;
}

/* Keep Alive on the admin queue every ka_interval_ms, so the target keeps
 * the association without the user ever touching the admin queue. */
static void *ka_main(void *arg)
{
	struct nvmeof_ctrl *c = arg;
	uint8_t sqe[NVME_SQE_SIZE];
	pthread_mutex_lock(&c->lock);
	while (!c->ka_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)c->o.ka_interval_ms * 1000000u;
		ts.tv_sec += (time_t)(ns / 1000000000u);
		ts.tv_nsec = (long)(ns % 1000000000u);
		while (!c->ka_stop && pthread_cond_timedwait(&c->ka_cond, &c->lock, &ts) == 0)
			;
		if (c->ka_stop || c->ka_err)
			continue;
		nvme_sqe_keep_alive(sqe, 0);
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_lock(&c->admin_lock);
		/* the timeout is KATO: an answer later than that no longer helps */
		int rc = q_exec(c->admin, sqe, 0, c->o.kato_ms, NULL);
		pthread_mutex_unlock(&c->admin_lock);
		pthread_mutex_lock(&c->lock);
		if (rc) {
			c->ka_err = rc;
			snprintf(c->ka_msg, sizeof(c->ka_msg), "Keep Alive: %s", nvmeof_errmsg());
		} else {
			c->ka_sent++;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static void ka_stop(struct nvmeof_ctrl *c)
{
	if (!c->ka_running)
		return;
	pthread_mutex_lock(&c->lock);
	c->ka_stop = true;
	pthread_cond_signal(&c->ka_cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->ka_thread, NULL);
	c->ka_running = false;
}

int nvmeof_ctrl_health(struct nvmeof_ctrl *c, char *msg, size_t len)
{
	pthread_mutex_lock(&c->lock);
	int rc = c->ka_err;
	if (msg && len)
		snprintf(msg, len, "%s", rc ? c->ka_msg : "healthy");
	pthread_mutex_unlock(&c->lock);
	return rc;
}

uint64_t nvmeof_ctrl_keep_alives(struct nvmeof_ctrl *c)
{
	pthread_mutex_lock(&c->lock);
	uint64_t n = c->ka_sent;
	pthread_mutex_unlock(&c->lock);
	return n;
}

static void ctrl_free(struct nvmeof_ctrl *c)
{
	aer_stop(c);
	ka_stop(c);
	pthread_cond_destroy(&c->ka_cond);
	pthread_mutex_destroy(&c->admin_lock);
	q_close(c->admin);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	aer_free(c); /* after q_close: the outstanding AERs' callbacks have run */
	pthread_mutex_destroy(&c->lock);
	nst_free(&c->nst);
	free(c->qid_used);
	free(c);
}

int nvmeof_ctrl_connect(const struct nvmeof_ctrl_opts *opts, struct nvmeof_ctrl **out)
{
	struct nvmeof_ctrl *c;
	int rc;
	if (!out)
		return nvmeof_err(NVMEOF_EINVAL, "connect: no output pointer");
	*out = NULL;
	if (!opts || !opts->traddr || !opts->traddr[0])
		return nvmeof_err(NVMEOF_EINVAL, "connect: no target address (traddr)");
	if (!opts->subnqn || !opts->subnqn[0] || strlen(opts->subnqn) > NVME_NQN_MAX)
		return nvmeof_err(NVMEOF_EINVAL, "connect: subsystem NQN %s (1 to %d bytes)",
				  opts->subnqn && opts->subnqn[0] ? "too long" : "missing", NVME_NQN_MAX);
	if (!opts->queue_depth || opts->queue_depth > NVMEOF_MAX_DEPTH)
		return nvmeof_err(NVMEOF_EINVAL, "connect: queue depth %u outside 1..%d", opts->queue_depth,
				  NVMEOF_MAX_DEPTH);
	if (!opts->cmd_timeout_ms || !opts->connect_timeout_ms)
		return nvmeof_err(NVMEOF_EINVAL, "connect: timeouts must be non-zero");
	if ((unsigned)opts->wait_mode > NVMEOF_WAIT_SLEEP)
		return nvmeof_err(NVMEOF_EINVAL, "connect: unknown wait mode %d", (int)opts->wait_mode);
	if (!(c = calloc(1, sizeof(*c))))
		return nvmeof_err(NVMEOF_ENOMEM, "connect: out of memory");
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->admin_lock, NULL);
	if ((rc = nst_init(&c->nst))) {
		free(c);
		return rc;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->ka_cond, &ca);
	pthread_condattr_destroy(&ca);
	c->o = *opts;
	if (c->o.kato_ms && !c->o.ka_interval_ms)
		c->o.ka_interval_ms = c->o.kato_ms / 2 ? c->o.kato_ms / 2 : 1;
	snprintf(c->subnqn, sizeof(c->subnqn), "%s", opts->subnqn);
	c->o.subnqn = c->subnqn;
	if ((rc = host_identity(c)) ||
	    (rc = resolve(opts->traddr, opts->trsvcid ? opts->trsvcid : "4420", &c->dst, "target address")))
		goto fail;
	if (opts->src_addr && opts->src_addr[0]) {
		if ((rc = resolve(opts->src_addr, NULL, &c->src, "source address")))
			goto fail;
		c->has_src = true;
	}
	/* Pointers into opts are not kept past this call. */
	c->o.traddr = c->o.trsvcid = c->o.src_addr = c->o.hostnqn = c->o.hostid = NULL;

	struct q_params p = {
		.dst = (struct sockaddr *)&c->dst,
		.src = c->has_src ? (struct sockaddr *)&c->src : NULL,
		.qid = 0,
		.depth = NVMEOF_ADMIN_DEPTH,
		.cntlid = NVMF_CNTLID_DYNAMIC,
		.connect_timeout_ms = opts->connect_timeout_ms,
		.cmd_timeout_ms = opts->cmd_timeout_ms,
		.wait_mode = opts->wait_mode == NVMEOF_WAIT_POLL ? NVMEOF_WAIT_HYBRID : opts->wait_mode,
		.spin_us = opts->spin_us,
	};
	if ((rc = q_open(&p, &c->admin))) {
		nvmeof_err_prefix(rc, "connect admin queue to %s", opts->traddr);
		goto fail;
	}
	q_set_owner(c->admin, c, false);
	c->pd = q_pd(c->admin);
	q_take_pd(c->admin);
	if ((rc = fabrics_connect(c, c->admin, 0, NVMEOF_ADMIN_DEPTH, NVMF_CNTLID_DYNAMIC, opts->kato_ms,
				  &c->info.cntlid)) ||
	    (rc = enable(c)) || (rc = identify_all(c)))
		goto fail;
	snprintf(c->info.hca, sizeof(c->info.hca), "%s", ibv_get_device_name(q_verbs(c->admin)->device));
	c->depth_limit = NVMEOF_MAX_DEPTH;
	if (c->info.mqes && c->info.mqes < c->depth_limit)
		c->depth_limit = c->info.mqes; /* SQ of depth+1 entries, MQES is 0-based */
	if (c->info.maxcmd && c->info.maxcmd < c->depth_limit)
		c->depth_limit = c->info.maxcmd;
	c->qid_used = calloc(c->info.max_io_queues + 1u, 1);
	if (!c->qid_used) {
		rc = nvmeof_err(NVMEOF_ENOMEM, "connect: out of memory");
		goto fail;
	}
	if (c->o.kato_ms) {
		if ((rc = pthread_create(&c->ka_thread, NULL, ka_main, c))) {
			rc = nvmeof_err(NVMEOF_ENOMEM, "connect: keep-alive thread: %s", strerror(rc));
			goto fail;
		}
		c->ka_running = true;
	}
	*out = c;
	return 0;
fail:
	ctrl_free(c);
	return rc;
}

/* A new association after the old one was lost: admin queue, Fabrics
 * Connect for a new CNTLID, CC.EN; the same controller must answer.
 * Called with admin_lock held. */
static int reassociate(struct nvmeof_ctrl *c)
{
	char serial[sizeof(c->info.serial)];
	uint16_t cntlid;
	int rc;
	memcpy(serial, c->info.serial, sizeof(serial));
	if ((rc = q_reopen(c->admin, NVMF_CNTLID_DYNAMIC, c->o.connect_timeout_ms)) ||
	    (rc = fabrics_connect(c, c->admin, 0, NVMEOF_ADMIN_DEPTH, NVMF_CNTLID_DYNAMIC, c->o.kato_ms,
				  &cntlid)) ||
	    (rc = enable(c)) || (rc = identify_ctrl(c)))
		return nvmeof_err_prefix(rc, "re-create the association");
	if (strcmp(serial, c->info.serial))
		return nvmeof_err(NVMEOF_ETRANSPORT, "re-create the association: serial %s answered, not %s",
				  c->info.serial, serial);
	c->info.cntlid = cntlid;
	c->assoc_gen++;
	pthread_mutex_lock(&c->lock);
	c->ka_err = 0; /* keep-alives go to the new association */
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* The reconnect hook of I/O queues: the first queue to notice a loss
 * re-creates the association; every queue then reconnects itself. */
static int reconnect_queue(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	int rc = 0;
	pthread_mutex_lock(&c->admin_lock);
	if (q_assoc_gen(q) == c->assoc_gen)
		rc = reassociate(c);
	uint16_t cntlid = c->info.cntlid;
	uint32_t gen = c->assoc_gen;
	pthread_mutex_unlock(&c->admin_lock);
	if (rc)
		return rc;
	uint16_t qid = nvmeof_queue_qid(q);
	if ((rc = q_reopen(q, cntlid, c->o.connect_timeout_ms)) ||
	    (rc = fabrics_connect(c, q, qid, (uint16_t)q_depth_asked(q), cntlid, 0, NULL)))
		return nvmeof_err_prefix(rc, "reconnect queue %u", qid);
	q_set_reconnect(q, reconnect_queue, c->o.reconnect_delay_ms, c->o.ctrl_loss_tmo_ms, gen);
	return 0;
}

int nvmeof_ctrl_close(struct nvmeof_ctrl *c)
{
	int rc = 0;
	if (!c)
		return nvmeof_err(NVMEOF_EINVAL, "close: NULL controller");
	pthread_mutex_lock(&c->lock);
	if (c->nqueues || c->nmrs) {
		pthread_mutex_unlock(&c->lock);
		return nvmeof_err(NVMEOF_EBUSY,
				  "close: controller still has %u I/O queue(s) and %u registered region(s)",
				  c->nqueues, c->nmrs);
	}
	pthread_mutex_unlock(&c->lock);
	ka_stop(c);
	pthread_mutex_lock(&c->admin_lock);
	/* Normal shutdown so the target flushes its volatile state; a target
	 * that does not answer costs at most SHUTDOWN_TIMEOUT_MS. */
	if (!(rc = prop_set(c, NVME_REG_CC, (c->cc & ~NVME_CC_SHN_MASK) | NVME_CC_SHN_NORMAL, "CC.SHN")))
		rc = wait_csts(c, NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_CMPLT, SHUTDOWN_TIMEOUT_MS,
			       "shutdown: CSTS.SHST");
	if (rc)
		nvmeof_err_prefix(rc, "close (resources released anyway)");
	pthread_mutex_unlock(&c->admin_lock);
	ctrl_free(c);
	return rc;
}

int nvmeof_queue_create(struct nvmeof_ctrl *c, const struct nvmeof_queue_opts *qo,
			struct nvmeof_queue **out)
{
	struct nvmeof_queue *q;
	uint16_t qid = 0;
	int rc;
	if (!c || !out)
		return nvmeof_err(NVMEOF_EINVAL, "create queue: %s", !c ? "no controller" : "no output pointer");
	*out = NULL;
	uint32_t depth = qo && qo->depth ? qo->depth : c->o.queue_depth;
	if (depth > NVMEOF_MAX_DEPTH)
		return nvmeof_err(NVMEOF_EINVAL, "create queue: depth %u above %d", depth, NVMEOF_MAX_DEPTH);
	if (depth > c->depth_limit)
		depth = c->depth_limit;
	pthread_mutex_lock(&c->lock);
	for (uint16_t i = 1; i <= c->info.max_io_queues; i++)
		if (!c->qid_used[i]) {
			qid = i;
			break;
		}
	if (!qid) {
		pthread_mutex_unlock(&c->lock);
		return nvmeof_err(NVMEOF_EBUSY, "create queue: all %u I/O queues the controller granted are in use",
				  c->info.max_io_queues);
	}
	struct q_params p = {
		.dst = (struct sockaddr *)&c->dst,
		.src = c->has_src ? (struct sockaddr *)&c->src : NULL,
		.pd = ctrl_pd(c),
		.qid = qid,
		.depth = depth,
		.cntlid = c->info.cntlid,
		.connect_timeout_ms = c->o.connect_timeout_ms,
		.cmd_timeout_ms = c->o.cmd_timeout_ms,
		.icd_max = c->info.in_capsule_max,
		.max_xfer = c->info.max_xfer,
		.wait_mode = qo && qo->wait_mode_set ? qo->wait_mode : c->o.wait_mode,
		.spin_us = c->o.spin_us,
		.batch = qo && qo->batch,
	};
	c->qid_used[qid] = 1; /* reserved while we connect without the lock */
	pthread_mutex_unlock(&c->lock);
	if ((rc = q_open(&p, &q))) {
		nvmeof_err_prefix(rc, "connect I/O queue %u", qid);
	} else {
		q_set_owner(q, c, c->info.oncs & NVME_ONCS_DSM);
		pthread_mutex_lock(&c->admin_lock);
		uint16_t cntlid = c->info.cntlid;
		uint32_t gen = c->assoc_gen;
		pthread_mutex_unlock(&c->admin_lock);
		if ((rc = fabrics_connect(c, q, qid, (uint16_t)depth, cntlid, 0, NULL)))
			q_close(q);
		else if (c->o.reconnect_delay_ms)
			q_set_reconnect(q, reconnect_queue, c->o.reconnect_delay_ms,
					c->o.ctrl_loss_tmo_ms ? c->o.ctrl_loss_tmo_ms : 60000, gen);
	}
	pthread_mutex_lock(&c->lock);
	if (rc)
		c->qid_used[qid] = 0;
	else
		c->nqueues++;
	pthread_mutex_unlock(&c->lock);
	if (!rc)
		*out = q;
	return rc;
}

int nvmeof_queue_destroy(struct nvmeof_queue *q)
{
	if (!q)
		return nvmeof_err(NVMEOF_EINVAL, "destroy queue: NULL queue");
	struct nvmeof_ctrl *c = q_owner(q);
	uint16_t qid = nvmeof_queue_qid(q);
	q_close(q);
	pthread_mutex_lock(&c->lock);
	c->qid_used[qid] = 0;
	c->nqueues--;
	pthread_mutex_unlock(&c->lock);
	return 0;
}
