/* RDMA CM connection management and completion-channel waits. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "connretry.h"
#include "internal.h"
#include "protocol.h"
#include "rdma.h"
#include "util.h"

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static const char *ib_rej_reason(int status)
{
	switch (status) {
	case 8: return "nothing listens on that port (invalid service ID)";
	case 28: return "rejected by the target";
	default: return "rejected by the CM";
	}
}

/* Waits for one CM event on c's channel; the caller acks *out. On a
 * failure c->retry says whether another try may succeed: no answer in
 * time is silence, class `silent` (a target that answered this host
 * before is loaded: the CM's own retransmission of a lost request comes
 * after ~4 s), another event as cr_cm_event says. */
static int cm_event(struct tr_conn *c, enum rdma_cm_event_type want, int timeout_ms,
		    const char *step, enum cr_class silent, struct rdma_cm_event **out)
{
	c->retry = CR_FINAL;
	uint64_t deadline = nvmeof_now_ms() + (uint64_t)timeout_ms;
	struct rdma_cm_event *ev;
	for (;;) {
		if (rdma_get_cm_event(c->ch, &ev) == 0)
			break;
		if (errno != EAGAIN)
			return nvmeof_err(NVMEOF_ETRANSPORT, "%s: rdma_get_cm_event: %s", step,
					  strerror(errno));
		uint64_t now = nvmeof_now_ms();
		if (now >= deadline) {
			c->retry = (uint8_t)silent;
			return nvmeof_err(NVMEOF_ETIMEDOUT, "%s: no answer within %d ms", step,
					  timeout_ms);
		}
		struct pollfd p = {.fd = c->ch->fd, .events = POLLIN};
		if (poll(&p, 1, (int)(deadline - now)) < 0 && errno != EINTR)
			return nvmeof_err(NVMEOF_ETRANSPORT, "%s: poll: %s", step, strerror(errno));
	}
	if (ev->event == want) {
		*out = ev;
		return 0;
	}
	int rc, st = ev->status;
	uint16_t sts = 0;
	bool has_sts = ev->event == RDMA_CM_EVENT_REJECTED &&
		       nvme_rdma_cm_rej_parse(ev->param.conn.private_data, ev->param.conn.private_data_len,
					      &sts) == 0 && sts;
	c->retry = (uint8_t)cr_cm_event(ev->event, st, has_sts, sts);
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
		rc = nvmeof_err(NVMEOF_EUNREACHABLE, "%s: address resolution failed: %s", step,
				strerror(st < 0 ? -st : EHOSTUNREACH));
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		rc = nvmeof_err(NVMEOF_EUNREACHABLE, "%s: route resolution failed: %s", step,
				strerror(st < 0 ? -st : EHOSTUNREACH));
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
		rc = nvmeof_err(NVMEOF_EUNREACHABLE, "%s: target unreachable (CM status %d)", step, st);
		break;
	case RDMA_CM_EVENT_REJECTED:
		/* A CM-level reject (no listener) carries zeroed private data. */
		if (has_sts)
			rc = nvmeof_err(NVMEOF_EREJECTED,
					"%s: target rejected the connection: NVMe/RDMA status %u (%s)",
					step, sts, nvme_rdma_cm_status_name(sts));
		else
			rc = nvmeof_err(NVMEOF_EREJECTED, "%s: connection rejected, CM reason %d: %s",
					step, st, ib_rej_reason(st));
		break;
	default:
		rc = nvmeof_err(NVMEOF_ETRANSPORT, "%s: unexpected CM event %s (status %d)", step,
				rdma_event_str(ev->event), st);
	}
	rdma_ack_cm_event(ev);
	return rc;
}

int tr_resolve(struct tr_conn *c, const struct sockaddr *dst, const struct sockaddr *src,
	       int timeout_ms)
{
	struct rdma_cm_event *ev;
	int rc;
	memset(c, 0, sizeof(*c));
	c->ch = rdma_create_event_channel();
	if (!c->ch)
		/* no device, or no rdma_ucm: this host's problem, whatever the target */
		return errno == ENODEV || errno == ENOENT
			       ? nvmeof_err(NVMEOF_ENODEV, "no RDMA device on this host: rdma_create_event_channel: %s "
					    "(ibv_devices lists none, or the rdma_ucm module is not loaded; over Ethernet "
					    "without an RDMA NIC: rdma link add rxe0 type rxe netdev IFACE; for an NVMe/TCP target: "
					    "trtype=TCP, the tool's -t tcp)", strerror(errno))
			       : nvmeof_err(NVMEOF_ETRANSPORT, "rdma_create_event_channel: %s", strerror(errno));
	if (set_nonblock(c->ch->fd))
		return nvmeof_err(NVMEOF_ETRANSPORT, "fcntl on the CM channel: %s", strerror(errno));
	if (rdma_create_id(c->ch, &c->id, c, RDMA_PS_TCP))
		return nvmeof_err(NVMEOF_ETRANSPORT, "rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(c->id, (struct sockaddr *)src, (struct sockaddr *)dst, timeout_ms)) {
		int e = errno;
		char host[NI_MAXHOST] = "?";
		if (src)
			getnameinfo(src, src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								     : sizeof(struct sockaddr_in),
				    host, sizeof(host), NULL, 0, NI_NUMERICHOST);
		return nvmeof_err(e == EADDRNOTAVAIL || e == ENODEV ? NVMEOF_EUNREACHABLE : NVMEOF_ETRANSPORT,
				  "rdma_resolve_addr%s%s: %s%s", src ? " from " : "", src ? host : "", strerror(e),
				  src ? " (is the source address on an RDMA device?)" : "");
	}
	if ((rc = cm_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, timeout_ms + 500, "resolve address", CR_TRANSIENT_REACHED, &ev)))
		return rc;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(c->id, timeout_ms))
		return nvmeof_err(NVMEOF_ETRANSPORT, "rdma_resolve_route: %s", strerror(errno));
	if ((rc = cm_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, timeout_ms + 500, "resolve route", CR_TRANSIENT_REACHED, &ev)))
		return rc;
	rdma_ack_cm_event(ev);
	return 0;
}

int tr_cq_create(struct tr_conn *c, struct ibv_context *verbs, int cqe, int vector, bool ts)
{
	c->cc = ibv_create_comp_channel(verbs);
	if (!c->cc)
		return nvmeof_err(NVMEOF_ETRANSPORT, "ibv_create_comp_channel: %s", strerror(errno));
	if (set_nonblock(c->cc->fd))
		return nvmeof_err(NVMEOF_ETRANSPORT, "fcntl on the completion channel: %s", strerror(errno));
	/* Spread CQs over the device's completion vectors (interrupts, on
	 * real hardware), not all on vector 0. */
	int nvec = verbs->num_comp_vectors > 0 ? verbs->num_comp_vectors : 1;
	c->vector = vector % nvec;
	if (ts) {
		struct ibv_cq_init_attr_ex a = {
			.cqe = (uint32_t)cqe,
			.cq_context = c,
			.channel = c->cc,
			.comp_vector = (uint32_t)c->vector,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
		};
		c->cqx = ibv_create_cq_ex(verbs, &a);
		if (!c->cqx)
			return nvmeof_err(NVMEOF_ETRANSPORT, "ibv_create_cq_ex with completion timestamps (%d entries): %s",
					  cqe, strerror(errno));
		c->cq = ibv_cq_ex_to_cq(c->cqx);
		return 0;
	}
	c->cq = ibv_create_cq(verbs, cqe, c, c->cc, c->vector);
	if (!c->cq)
		return nvmeof_err(NVMEOF_ETRANSPORT, "ibv_create_cq (%d entries): %s", cqe, strerror(errno));
	return 0;
}

int tr_poll_ex(struct tr_conn *c, int n, struct ibv_wc *wc, uint64_t *ts)
{
	struct ibv_poll_cq_attr attr = {0};
	int k = 0, rc = ibv_start_poll(c->cqx, &attr);
	if (rc)
		return rc == ENOENT ? 0 : -1;
	do {
		struct ibv_cq_ex *x = c->cqx;
		wc[k] = (struct ibv_wc){.wr_id = x->wr_id, .status = x->status};
		if (x->status == IBV_WC_SUCCESS) {
			wc[k].opcode = ibv_wc_read_opcode(x);
			wc[k].byte_len = ibv_wc_read_byte_len(x);
		}
		if (ts)
			ts[k] = ibv_wc_read_completion_ts(x);
		k++;
	} while (k < n && !(rc = ibv_next_poll(c->cqx)));
	ibv_end_poll(c->cqx);
	/* what was read is good; a CQ error shows at the next poll */
	return k ? k : rc && rc != ENOENT ? -1 : 0;
}

void tr_cq_destroy(struct tr_conn *c)
{
	if (c->cq) {
		if (c->unacked)
			ibv_ack_cq_events(c->cq, c->unacked);
		ibv_destroy_cq(c->cq);
	}
	if (c->cc)
		ibv_destroy_comp_channel(c->cc);
	c->cq = NULL;
	c->cqx = NULL;
	c->cc = NULL;
	c->unacked = 0;
}

int tr_create_qp(struct tr_conn *c, struct ibv_pd *pd, const struct tr_qp_params *p)
{
	int rc;
	if (p->shared) {
		c->cq = p->shared->cq;
		c->cc = p->shared->cc;
		c->shared_cq = true;
	} else if ((rc = tr_cq_create(c, c->id->verbs, (int)(p->send_wr + p->recv_wr), p->vector, false))) {
		return rc;
	}
	struct ibv_qp_init_attr a = {
		.send_cq = c->cq,
		.recv_cq = c->cq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = p->send_wr, .max_recv_wr = p->recv_wr, .max_send_sge = p->send_sge,
			.max_recv_sge = 1, .max_inline_data = p->inline_bytes},
		.sq_sig_all = 0,
	};
	if (rdma_create_qp(c->id, pd, &a)) {
		/* a device without inline sends: the capsule goes by DMA */
		a.cap.max_inline_data = 0;
		if (!p->inline_bytes || rdma_create_qp(c->id, pd, &a))
			return nvmeof_err(NVMEOF_ETRANSPORT, "rdma_create_qp (send %u, recv %u): %s",
					  p->send_wr, p->recv_wr, strerror(errno));
	}
	c->max_inline = a.cap.max_inline_data;
	c->qp = c->id->qp;
	return 0;
}

void tr_conn_param(const struct ibv_device_attr *da, const void *priv, uint8_t priv_len,
		   struct rdma_conn_param *p)
{
	/* The host never issues RDMA Reads (initiator depth 0, as the kernel
	 * host sends; SPDK's target refuses more); the target RDMA-reads our
	 * write data, so it gets all the reads our device can answer. */
	*p = (struct rdma_conn_param){
		.private_data = priv,
		.private_data_len = priv_len,
		.responder_resources = (uint8_t)(da->max_qp_rd_atom > 255 ? 255 : da->max_qp_rd_atom),
		.initiator_depth = 0,
		.flow_control = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
}

int tr_connect(struct tr_conn *c, const void *priv, uint8_t priv_len, int timeout_ms,
	       uint16_t *crqsize)
{
	struct ibv_device_attr da;
	struct rdma_cm_event *ev;
	const char *why;
	int rc;
	if (ibv_query_device(c->id->verbs, &da))
		return nvmeof_err(NVMEOF_ETRANSPORT, "ibv_query_device: %s", strerror(errno));
	struct rdma_conn_param p;
	tr_conn_param(&da, priv, priv_len, &p);
	if (rdma_connect(c->id, &p))
		return nvmeof_err(NVMEOF_ETRANSPORT, "rdma_connect: %s", strerror(errno));
	if ((rc = cm_event(c, RDMA_CM_EVENT_ESTABLISHED, timeout_ms, "CM connect", CR_TRANSIENT_REACHED, &ev)))
		return rc;
	c->connected = true;
	rc = nvme_rdma_cm_rep_parse(ev->param.conn.private_data, ev->param.conn.private_data_len,
				    crqsize, &why);
	rdma_ack_cm_event(ev);
	if (rc)
		return nvmeof_err(NVMEOF_ETRANSPORT, "CM connect: %s", why);
	return 0;
}

int tr_arm(struct tr_conn *c)
{
	if (c->armed)
		return 0;
	if (ibv_req_notify_cq(c->cq, 0))
		return nvmeof_err(NVMEOF_ETRANSPORT, "ibv_req_notify_cq: %s", strerror(errno));
	c->armed = true;
	return 0;
}

/* The channel's event, known to be there (a poll said so); EAGAIN from the
 * non-blocking channel when another took it. */
int tr_take_event(struct tr_conn *c)
{
	struct ibv_cq *cq;
	void *ctx;
	if (ibv_get_cq_event(c->cc, &cq, &ctx) == 0) {
		c->armed = false;
		/* Acknowledging takes a mutex in the provider: do it in batches. */
		if (++c->unacked >= 64) {
			ibv_ack_cq_events(c->cq, c->unacked);
			c->unacked = 0;
		}
	}
	return 1;
}

int tr_sleep(struct tr_conn *c, int timeout_ms)
{
	struct pollfd p = {.fd = c->cc->fd, .events = POLLIN};
	int n = poll(&p, 1, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 1 : nvmeof_err(NVMEOF_ETRANSPORT, "poll on the completion channel: %s",
						    strerror(errno));
	if (n == 0)
		return 0;
	return tr_take_event(c);
}

int tr_wait_fd(struct tr_conn *c) { return c && c->cc ? c->cc->fd : -1; }
int tr_event_fd(struct tr_conn *c) { return c && c->ch ? c->ch->fd : -1; }

void tr_disconnect(struct tr_conn *c)
{
	if (c->connected) {
		rdma_disconnect(c->id);
		c->connected = false;
	}
}

bool tr_disconnected(struct tr_conn *c)
{
	struct rdma_cm_event *ev;
	bool gone = false;
	while (c->ch && rdma_get_cm_event(c->ch, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
			gone = true;
		rdma_ack_cm_event(ev);
	}
	if (gone)
		tr_disconnect(c);
	return gone;
}

/* As the kernel host's queue teardown (nvme_rdma_stop_queue, then
 * nvme_rdma_free_queue): rdma_disconnect moves the QP to the error state
 * (posted work requests are flushed) and sends the CM's disconnect
 * request; the QP and the CM id are then destroyed at once, never waiting
 * for the target's answer. It is rdma_destroy_qp that guarantees no
 * incoming RDMA operation touches our memory afterwards: the error state
 * alone does not stop one already under way. The kernel's
 * CM finishes the exchange (its retries, time-wait) on its own after
 * rdma_destroy_id; waiting for RDMA_CM_EVENT_DISCONNECTED here held the
 * caller, a poll among them, for as long as a target that had gone quiet
 * took to answer. What the flush leaves in a shared CQ names this
 * connection's epoch and is dropped there. */
void tr_close(struct tr_conn *c)
{
	char saved[NVMEOF_ERRMSG_MAX];
	/* Teardown after a failure must not overwrite the message saying why. */
	snprintf(saved, sizeof(saved), "%s", nvmeof_errmsg());
	if (c->connected)
		rdma_disconnect(c->id);
	c->connected = false;
	if (c->qp)
		rdma_destroy_qp(c->id);
	c->qp = NULL;
	if (!c->shared_cq)
		tr_cq_destroy(c);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ch)
		rdma_destroy_event_channel(c->ch);
	memset(c, 0, sizeof(*c));
	nvmeof_err(0, "%s", saved);
}
