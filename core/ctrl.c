/*
 * A controller: connect (admin queue, bring-up, keep-alive), its namespaces
 * and information, I/O queues on demand, and CC.SHN shutdown on close.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "aer.h"
#include "connretry.h"
#include "cpriv.h"
#include "tls.h"
#include "opts.h"
#include "tcp_sock.h"
#include "trace.h"
#include "util.h"

/* A TCP/RDMA port as the NVMe/RDMA transport ID's TRSVCID: decimal, 1 to
 * 65535. getaddrinfo would take a service name, or port 0, or wrap 99999. */
static bool port_ok(const char *s)
{
	unsigned long v = 0;
	size_t n = 0;
	for (; s[n] >= '0' && s[n] <= '9' && n < 6; n++)
		v = v * 10 + (unsigned long)(s[n] - '0');
	return n && !s[n] && v >= 1 && v <= 65535;
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


static void ctrl_free(struct nvmeof_ctrl *c)
{
	ctrl_reset_stop(c); /* DELETING: no attempt starts, the one running ends */
	aer_stop(c);
	ctrl_ka_stop(c);
	pthread_cond_destroy(&c->ka_cond);
	pthread_cond_destroy(&c->state_cond);
	pthread_mutex_destroy(&c->admin_lock);
	q_close(c->admin);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	mem_ctx_destroy(&c->mem);
	aer_free(c); /* after q_close: the outstanding AERs' callbacks have run */
	pthread_mutex_destroy(&c->lock);
	nst_free(&c->nst);
	ctrl_auth_free(c);
	if (c->tls)
		tls_psk_free(c->tls);
	free(c->qid_used);
	free(c);
}

/* hw_timestamps: the HCA must clock completions, and say at what rate. */
static int ctrl_hw_clock(struct nvmeof_ctrl *c)
{
	struct ibv_device_attr_ex a;
	memset(&a, 0, sizeof(a));
	if (ibv_query_device_ex(c->pd->context, NULL, &a))
		return nvmeof_err(NVMEOF_ETRANSPORT, "connect: hw_timestamps: ibv_query_device_ex on %s: %s", c->info.hca,
				  strerror(errno));
	if (!a.completion_timestamp_mask || !a.hca_core_clock)
		return nvmeof_err(NVMEOF_ENOTSUP, "connect: hw_timestamps: %s reports no NIC completion timestamps "
				  "(completion_timestamp_mask 0x%llx, hca_core_clock %llu kHz)%s", c->info.hca,
				  (unsigned long long)a.completion_timestamp_mask, (unsigned long long)a.hca_core_clock,
				  strncmp(c->info.hca, "rxe", 3) ? "" : ": Soft-RoCE has none");
	c->hw_khz = a.hca_core_clock;
	c->hw_mask = a.completion_timestamp_mask;
	return 0;
}

int nvmeof_ctrl_connect(const struct nvmeof_ctrl_opts *opts, struct nvmeof_ctrl **out)
{
	struct nvmeof_ctrl *c;
	int rc;
	if (!out)
		return nvmeof_err(NVMEOF_EINVAL, "connect: no output pointer");
	*out = NULL;
	struct nvmeof_ctrl_opts in; /* the caller's struct, of whichever version */
	if (opts && (rc = ctrl_opts_in(opts, &in)))
		return rc;
	opts = opts ? &in : NULL;
	if (!opts || !opts->traddr || !opts->traddr[0])
		return nvmeof_err(NVMEOF_EINVAL, "connect: no target address (traddr)");
	if (!opts->subnqn || !opts->subnqn[0] || strlen(opts->subnqn) > NVME_NQN_MAX)
		return nvmeof_err(NVMEOF_EINVAL, "connect: subsystem NQN %s (1 to %d bytes)",
				  opts->subnqn && opts->subnqn[0] ? "too long" : "missing", NVME_NQN_MAX);
	if (opts->trsvcid && !port_ok(opts->trsvcid))
		/* shown only as long as a port can be: a longer value may be a
		 * secret put in the wrong option */
		return nvmeof_err(NVMEOF_EINVAL, "connect: port (trsvcid) '%s': expected a number from 1 to 65535",
				  strlen(opts->trsvcid) <= 5 ? opts->trsvcid : "(not shown: too long)");
	if (!opts->queue_depth || opts->queue_depth > NVMEOF_MAX_DEPTH)
		return nvmeof_err(NVMEOF_EINVAL, "connect: queue depth %u outside 1..%d", opts->queue_depth,
				  NVMEOF_MAX_DEPTH);
	if (!opts->cmd_timeout_ms || !opts->connect_timeout_ms)
		return nvmeof_err(NVMEOF_EINVAL, "connect: timeouts must be non-zero");
	if ((unsigned)opts->wait_mode > NVMEOF_WAIT_ADAPTIVE)
		return nvmeof_err(NVMEOF_EINVAL, "connect: unknown wait mode %d", (int)opts->wait_mode);
	bool tcp = opts->trtype && !strcasecmp(opts->trtype, "tcp");
	if (opts->trtype && opts->trtype[0] && !tcp && strcasecmp(opts->trtype, "rdma"))
		return nvmeof_err(NVMEOF_EINVAL, "connect: transport (trtype) '%.16s': expected rdma or tcp", opts->trtype);
	if (tcp && opts->hw_timestamps)
		return nvmeof_err(NVMEOF_ENOTSUP, "connect: hw_timestamps needs RDMA: NVMe/TCP has no NIC completion clock");
	if (!tcp && (opts->hdr_digest || opts->data_digest))
		return nvmeof_err(NVMEOF_EINVAL, "connect: header and data digests are NVMe/TCP's (trtype tcp)");
	if (!tcp && opts->disable_sqflow)
		return nvmeof_err(NVMEOF_EINVAL, "connect: disable_sqflow is NVMe/TCP's (trtype tcp): over RDMA a "
				  "read's data and its response are separate work requests either way");
	if ((rc = tcp_sockopts_check(opts, tcp)))
		return rc;
	if (!tcp && (opts->tls || opts->tls_key || opts->tls_keyring))
		return nvmeof_err(NVMEOF_EINVAL, "connect: TLS (tls, tls_key, tls_keyring) is NVMe/TCP's (trtype tcp)");
	if ((opts->tls_key || opts->tls_keyring) && !opts->tls)
		return nvmeof_err(NVMEOF_EINVAL, "connect: a TLS PSK (tls_key, tls_keyring) without tls");
	if (opts->tls_identity && !opts->tls)
		return nvmeof_err(NVMEOF_EINVAL, "connect: tls_identity %u without tls: the PSK identity is TLS's",
				  opts->tls_identity);
	if (opts->tls_identity > 1)
		return nvmeof_err(NVMEOF_EINVAL, "connect: tls_identity %u: the PSK identity's version is 0 or 1",
				  opts->tls_identity);
	if (opts->tls_compat && !opts->tls_key)
		return nvmeof_err(NVMEOF_EINVAL, "connect: tls_compat needs tls_key: a keyring holds PSKs already derived");
	if (opts->tls && opts->tcp_zerocopy)
		return nvmeof_err(NVMEOF_EINVAL, "connect: tcp_zerocopy with TLS: the records are encrypted copies");
	if (!(c = calloc(1, sizeof(*c))))
		return nvmeof_err(NVMEOF_ENOMEM, "connect: out of memory");
	if ((rc = nst_init(&c->nst))) {
		free(c);
		return rc;
	}
	pthread_mutex_init(&c->lock, NULL);
	mem_ctx_init(&c->mem, NULL, !opts->strict_ordering);
	pthread_mutex_init(&c->admin_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->ka_cond, &ca);
	pthread_cond_init(&c->state_cond, &ca);
	pthread_condattr_destroy(&ca);
	c->state = CTRL_NEW;
	atomic_init(&c->ka_due, 0);
	c->o = *opts;
	c->tcp = tcp;
	if (c->o.kato_ms && !c->o.ka_interval_ms)
		c->o.ka_interval_ms = c->o.kato_ms / 2 ? c->o.kato_ms / 2 : 1;
	snprintf(c->subnqn, sizeof(c->subnqn), "%s", opts->subnqn);
	c->o.subnqn = c->subnqn;
	/* malformed secrets are refused before anything is sent */
	c->o.tls_key = c->o.tls_keyring = NULL;
	if ((rc = ctrl_auth_setup(c, opts)) || (rc = ctrl_host_identity(c)) ||
	    (opts->tls && (rc = tls_psk_setup(opts->tls_key, opts->tls_keyring,
							    opts->tls_identity | (opts->tls_compat ? TLS_PSK_COMPAT : 0),
							    c->hostnqn, c->subnqn, &c->tls))) ||
	    (rc = resolve(opts->traddr, opts->trsvcid ? opts->trsvcid : "4420", &c->dst, "target address")))
		goto fail;
	if (opts->src_addr && opts->src_addr[0]) {
		if ((rc = resolve(opts->src_addr, NULL, &c->src, "source address")))
			goto fail;
		c->has_src = true;
	}
	/* Pointers into opts are not kept past this call. */
	c->o.traddr = c->o.trsvcid = c->o.src_addr = c->o.hostnqn = c->o.hostid = c->o.trtype = NULL;

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
		.copts = &c->o,
		.hdgst = opts->hdr_digest,
		.ddgst = opts->data_digest,
		.tls = c->tls,
	};
	/* the first contact: silence, or an address that does not resolve,
	 * means wrong or down, not busy (connretry.h) */
	struct conn_retry retry;
	cr_init(&retry, c->o.connect_retries, false, 0);
	p.retry = &retry;
	for (;;) {
		if ((rc = (c->tcp ? q_open_tcp : q_open)(&p, &c->admin))) {
			nvmeof_err_prefix(rc, "connect admin queue to %s", opts->traddr);
			goto fail;
		}
		q_set_owner(c->admin, c, 0);
		/* a Keep Alive due while another thread holds the admin queue goes
		 * out from that thread's wait (keepalive.c) */
		if (c->o.kato_ms)
			q_set_wait_hook(c->admin, ctrl_ka_on_wait, c, ctrl_ka_hook_ms(c));
		/* its loss, whoever's poll sees it, goes to the state machine */
		q_set_fail_hook(c->admin, ctrl_admin_lost, c);
		/* the Connect and its authentication, retried as an I/O queue's
		 * are: a link lost, a timeout, Controller Busy (connretry.h), on
		 * a new connection from the same budget */
		uint16_t status = 0;
		rc = ctrl_fabrics_connect(c, c->admin, 0, NVMEOF_ADMIN_DEPTH, NVMF_CNTLID_DYNAMIC, opts->kato_ms,
					  &c->info.cntlid, &status);
		if (!rc)
			break;
		enum cr_class cls = cr_fabrics(rc, status, retry.connect_timed_out);
		retry.connect_timed_out |= rc == NVMEOF_ETIMEDOUT;
		trace_ctrl(&c->o, 0, "admin Fabrics Connect try %u failed (%s): %s", retry.retries + 1,
			   cls == CR_FINAL ? "final" : "transient", nvmeof_errmsg());
		if (!cr_again(&retry, rc, cls))
			goto fail;
		q_close(c->admin);
		c->admin = NULL;
	}
	c->pd = q_pd(c->admin);
	c->mem.pd = c->pd;
	q_take_pd(c->admin);
	q_set_connect_cost(c->admin, retry.retries, nvmeof_now_ms() - retry.t0_ms);
	if ((rc = ctrl_enable(c, &c->info)) || (rc = ctrl_identify_all(c)))
		goto fail;
	c->info.auth_hash = c->admin_auth_hash;
	c->info.auth_dhgroup = c->admin_auth_dh;
	c->info.auth_bidirectional = c->admin_auth_bidir;
	if (c->tcp) {
		snprintf(c->info.hca, sizeof(c->info.hca), "tcp");
		c->info.comp_vectors = 1;
		q_netdev(c->admin, c->info.netdev, sizeof(c->info.netdev));
	} else {
		snprintf(c->info.hca, sizeof(c->info.hca), "%s", ibv_get_device_name(q_verbs(c->admin)->device));
		c->info.comp_vectors = q_verbs(c->admin)->num_comp_vectors > 0 ? q_verbs(c->admin)->num_comp_vectors : 1;
	}
	if (opts->hw_timestamps && (rc = ctrl_hw_clock(c)))
		goto fail;
	c->depth_limit = NVMEOF_MAX_DEPTH;
	if (c->info.mqes && c->info.mqes < c->depth_limit)
		c->depth_limit = c->info.mqes; /* SQ of depth+1 entries, MQES is 0-based */
	if (c->info.maxcmd && c->info.maxcmd < c->depth_limit)
		c->depth_limit = c->info.maxcmd;
	c->qid_used = calloc(c->info.max_io_queues + 1u, 1);
	/* room for each I/O queue's authentication after a reconnect (auth_run.c) */
	if (c->host_key && (c->reauth = calloc(c->info.max_io_queues + 1u, sizeof(*c->reauth))))
		c->nreauth = c->info.max_io_queues + 1u; /* fixed from here on: read without the lock */
	if (!c->qid_used || (c->host_key && !c->reauth)) {
		rc = nvmeof_err(NVMEOF_ENOMEM, "connect: out of memory");
		goto fail;
	}
	if (c->o.kato_ms) {
		if ((rc = pthread_create(&c->ka_thread, NULL, ctrl_ka_main, c))) {
			rc = nvmeof_err(NVMEOF_ENOMEM, "connect: keep-alive thread: %s", strerror(rc));
			goto fail;
		}
		c->ka_running = true;
	}
	ctrl_change_state(c, CTRL_LIVE);
	/* with reconnect_delay_ms, a lost admin queue is re-created on its own */
	if (c->o.reconnect_delay_ms && (rc = ctrl_reset_start(c)))
		goto fail;
	trace_ctrl(&c->o, 0, "controller %u of %s ready: %u I/O queue(s) granted", c->info.cntlid, c->subnqn,
		   c->info.max_io_queues);
	*out = c;
	return 0;
fail:
	ctrl_free(c);
	return rc;
}

int nvmeof_ctrl_close(struct nvmeof_ctrl *c)
{
	int rc = 0;
	if (!c)
		return nvmeof_err(NVMEOF_EINVAL, "close: NULL controller");
	pthread_mutex_lock(&c->lock);
	uint32_t nmrs = mem_ctx_count(&c->mem);
	if (c->nqueues || nmrs) {
		pthread_mutex_unlock(&c->lock);
		return nvmeof_err(NVMEOF_EBUSY,
				  "close: controller still has %u I/O queue(s) and %u registered region(s)",
				  c->nqueues, nmrs);
	}
	pthread_mutex_unlock(&c->lock);
	ctrl_reset_stop(c);
	ctrl_ka_stop(c);
	pthread_mutex_lock(&c->admin_lock);
	/* Normal shutdown so the target flushes its volatile state; a target
	 * that does not answer costs at most SHUTDOWN_TIMEOUT_MS. */
	if (!(rc = ctrl_prop_set(c, NVME_REG_CC, (c->cc & ~NVME_CC_SHN_MASK) | NVME_CC_SHN_NORMAL, "CC.SHN")))
		rc = ctrl_wait_csts(c, NVME_CSTS_SHST_MASK, NVME_CSTS_SHST_CMPLT, SHUTDOWN_TIMEOUT_MS,
			       "shutdown: CSTS.SHST");
	if (rc)
		nvmeof_err_prefix(rc, "close (resources released anyway)");
	pthread_mutex_unlock(&c->admin_lock);
	ctrl_free(c);
	return rc;
}

/* A queue joins only a live association. The message says what ended it
 * (the state machine's record, copied under the lock: a keep-alive or
 * admin command timeout, a lost queue, the target's refusal), so a job
 * that finds the controller gone long after the event still names it. */
struct not_live_why {
	enum ctrl_state st;
	char msg[sizeof(((struct nvmeof_ctrl *)0)->state_msg)];
};

/* lock held */
static void not_live_read(struct nvmeof_ctrl *c, struct not_live_why *w)
{
	w->st = c->state;
	snprintf(w->msg, sizeof(w->msg), "%s", c->state_msg[0] ? c->state_msg : "its cause was not recorded");
}

static int not_live(uint16_t qid, const struct not_live_why *w)
{
	const char *what = w->st == CTRL_DEAD ? "destroy it and connect again" : "create the queue once it is live again";
	char id[16] = "";
	if (qid)
		snprintf(id, sizeof(id), " %u", qid);
	/* the cause last: a long one is what the message's limit cuts */
	return nvmeof_err(NVMEOF_ECLOSED, "create queue%s: the controller is %s (%s); its association ended: %s", id,
			  ctrl_state_str(w->st), what, w->msg);
}

/* An I/O queue's connect: the CM steps (q_open tries them again as its
 * budget allows), then the Fabrics Connect; a Connect that timed out, lost
 * its connection or found the controller busy is tried again on a new
 * connection, from the same budget (connretry.h). The message of a final
 * failure names the queue, the step, and the tries and time. */
static int queue_connect(struct nvmeof_ctrl *c, struct q_params *p, struct nvmeof_queue **out,
			 uint32_t *gen, uint16_t *cqt, uint16_t *kas)
{
	struct conn_retry retry;
	struct nvmeof_queue *q = NULL;
	uint16_t qid = p->qid;
	int rc;
	/* the admin queue got through: silence and resolution failures now are load */
	cr_init(&retry, c->o.connect_retries, true, qid);
	p->retry = &retry;
	for (;;) {
		if ((rc = (c->tcp ? q_open_tcp : q_open)(p, &q)))
			return nvmeof_err_prefix(rc, "I/O queue %u", qid);
		q_set_owner(q, c, c->info.oncs);
		/* a due fence runs first; the state and the generation together:
		 * a queue joins only a live association, and one that another
		 * queue's loss ended meanwhile would take the new generation's
		 * tag to the old CNTLID */
		ctrl_admin_take(c);
		pthread_mutex_lock(&c->lock);
		enum ctrl_state st = c->state;
		uint16_t cntlid = c->info.cntlid;
		*gen = __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED); /* the association this Connect joins */
		*cqt = c->info.cqt;  /* and its CQT and KAS: a re-association rewrites c->info under admin_lock */
		*kas = c->info.kas;
		struct not_live_why why;
		if (st != CTRL_LIVE)
			not_live_read(c, &why);
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_unlock(&c->admin_lock);
		if (st != CTRL_LIVE) {
			q_close(q);
			return not_live(qid, &why);
		}
		uint16_t status = 0;
		rc = ctrl_fabrics_connect(c, q, qid, (uint16_t)p->depth, cntlid, 0, NULL, &status);
		if (!rc)
			break;
		q_close(q);
		enum cr_class cls = cr_fabrics(rc, status, retry.connect_timed_out);
		retry.connect_timed_out |= rc == NVMEOF_ETIMEDOUT;
		trace_ctrl(&c->o, qid, "Fabrics Connect try %u failed (%s): %s", retry.retries + 1,
			   cls == CR_FINAL ? "final" : "transient", nvmeof_errmsg());
		if (!cr_again(&retry, rc, cls))
			return nvmeof_err_prefix(rc, "I/O queue %u", qid);
	}
	q_set_connect_cost(q, retry.retries, nvmeof_now_ms() - retry.t0_ms);
	if (retry.retries)
		trace_ctrl(&c->o, qid, "I/O queue %u connected after %u retries", qid, retry.retries);
	*out = q;
	return 0;
}

int nvmeof_queue_create(struct nvmeof_ctrl *c, const struct nvmeof_queue_opts *qo,
			struct nvmeof_queue **out)
{
	struct nvmeof_queue *q = NULL;
	uint16_t qid = 0;
	int rc;
	if (!c || !out)
		return nvmeof_err(NVMEOF_EINVAL, "create queue: %s", !c ? "no controller" : "no output pointer");
	*out = NULL;
	struct nvmeof_queue_opts in; /* the caller's struct, of whichever version */
	if ((rc = queue_opts_in(qo, &in)))
		return rc;
	qo = &in;
	uint32_t depth = qo && qo->depth ? qo->depth : c->o.queue_depth;
	if (qo && qo->group && !q_group_owned_by(qo->group, c))
		return nvmeof_err(NVMEOF_EINVAL, "create queue: the poll group belongs to another controller");
	if (depth > NVMEOF_MAX_DEPTH)
		return nvmeof_err(NVMEOF_EINVAL, "create queue: depth %u above %d", depth, NVMEOF_MAX_DEPTH);
	if (depth > c->depth_limit)
		depth = c->depth_limit;
	pthread_mutex_lock(&c->lock);
	if (c->state != CTRL_LIVE) {
		struct not_live_why why;
		not_live_read(c, &why);
		pthread_mutex_unlock(&c->lock);
		return not_live(0, &why);
	}
	/* Round-robin, not lowest-free: a QID just destroyed may still be
	 * torn down at the target, which refuses its reuse (nvmet 6.1:
	 * Command Sequence Error on the Fabrics Connect). */
	for (uint32_t k = 0; k < c->info.max_io_queues; k++) {
		uint16_t i = (uint16_t)(1 + (c->qid_next + k) % c->info.max_io_queues);
		if (!c->qid_used[i]) {
			qid = i;
			c->qid_next = i % c->info.max_io_queues;
			break;
		}
	}
	if (!qid) {
		pthread_mutex_unlock(&c->lock);
		return nvmeof_err(NVMEOF_EBUSY, "create queue: all %u I/O queues the controller granted are in use",
				  c->info.max_io_queues);
	}
	struct q_params p = {
		.dst = (struct sockaddr *)&c->dst,
		.src = c->has_src ? (struct sockaddr *)&c->src : NULL,
		.pd = c->pd,
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
		.group = qo ? qo->group : NULL,
		.crdt = {c->info.crdt[0], c->info.crdt[1], c->info.crdt[2]},
		.copts = &c->o,
		.hw_khz = c->hw_khz,
		.hw_mask = c->hw_mask,
		.hdgst = c->o.hdr_digest,
		.ddgst = c->o.data_digest,
		.tcp_icd = ctrl_wire_icd(&c->info),
		.tls = c->tls,
	};
	c->qid_used[qid] = 1; /* reserved while we connect without the lock */
	pthread_mutex_unlock(&c->lock);
	uint32_t gen = 0;
	uint16_t cqt = 0, kas = 0;
	if (!(rc = queue_connect(c, &p, &q, &gen, &cqt, &kas))) {
		if (c->o.reconnect_delay_ms)
			q_set_reconnect(q, &ctrl_reconnect_ops, c->o.reconnect_delay_ms,
					c->o.ctrl_loss_tmo_ms);
		/* reconnect or not: an association another queue's loss ended
		 * (ctrl_fence) takes this queue down too, or its commands would
		 * keep the old controller's keep-alive timer satisfied */
		q_follow_assoc(q, &c->assoc_gen, gen);
		q_note_traffic(q, &c->ka_mark);
		q_set_loss_hook(q, ctrl_io_lost, c);
		/* NVMe Base 2.1, 9.6; re-read after each re-association (reassoc.c) */
		q_set_quiesce(q, q_hold_rule(Q_QUIESCE_DEFAULT_MS, cqt, c->o.kato_ms, kas));
	}
	pthread_mutex_lock(&c->lock);
	if (rc)
		c->qid_used[qid] = 0;
	else
		c->nqueues++;
	pthread_mutex_unlock(&c->lock);
	trace_ctrl(&c->o, qid, "I/O queue %u: %s, depth %u", qid, rc ? "creation failed" : "created", depth);
	if (!rc)
		*out = q;
	return rc;
}

int nvmeof_poll_group_create(struct nvmeof_ctrl *c, uint32_t max_queues, struct nvmeof_poll_group **out)
{
	return nvmeof_poll_group_create_on(c, max_queues, -1, out);
}

int nvmeof_poll_group_create_on(struct nvmeof_ctrl *c, uint32_t max_queues, int comp_vector,
				struct nvmeof_poll_group **out)
{
	if (!c || !out || !max_queues || max_queues > 64)
		return nvmeof_err(NVMEOF_EINVAL, "create poll group: %s",
				  !c ? "no controller" : !out ? "no output pointer" : "max_queues outside 1..64");
	*out = NULL;
	if (c->tcp) {
		if (comp_vector >= 0)
			return nvmeof_err(NVMEOF_ENOTSUP, "create poll group: a completion vector is RDMA's: over TCP "
					  "the sockets' interrupts follow the NIC's IRQ affinity");
		return q_group_create(q_tcp_transport(), NULL, c, max_queues,
				      (int)(max_queues * q_group_cqes(c->depth_limit)), -1, false, c->o.wait_mode,
				      c->o.spin_us, out);
	}
	if (comp_vector < -1 || comp_vector >= c->info.comp_vectors)
		return nvmeof_err(NVMEOF_EINVAL, "create poll group: completion vector %d: %s has %d (0 to %d)",
				  comp_vector, c->info.hca, c->info.comp_vectors, c->info.comp_vectors - 1);
	struct ibv_device_attr da;
	if (ibv_query_device(c->pd->context, &da))
		return nvmeof_err(NVMEOF_ETRANSPORT, "create poll group: ibv_query_device: %s", strerror(errno));
	/* room for max_queues of the deepest queues; where the device allows
	 * less, members join while their flushes fit (q_group_join) */
	uint64_t cqe = (uint64_t)max_queues * q_group_cqes(c->depth_limit);
	if (da.max_cqe > 0 && cqe > (uint64_t)da.max_cqe)
		cqe = (uint64_t)da.max_cqe;
	pthread_mutex_lock(&c->lock);
	int vector = (int)c->ngroups++; /* spread over the device's vectors */
	pthread_mutex_unlock(&c->lock);
	if (comp_vector >= 0)
		vector = comp_vector;
	return q_group_create(q_rdma_transport(), c->pd->context, c, max_queues, (int)cqe, vector, c->hw_khz != 0,
			      c->o.wait_mode, c->o.spin_us, out);
}

int nvmeof_queue_destroy(struct nvmeof_queue *q)
{
	if (!q)
		return nvmeof_err(NVMEOF_EINVAL, "destroy queue: NULL queue");
	struct nvmeof_ctrl *c = q_owner(q);
	uint16_t qid = nvmeof_queue_qid(q);
	int rc = q_close(q);
	if (rc)
		return rc; /* still the caller's */
	pthread_mutex_lock(&c->lock);
	c->qid_used[qid] = 0;
	c->nqueues--;
	pthread_mutex_unlock(&c->lock);
	return 0;
}
