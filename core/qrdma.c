/* A queue over an RDMA connection: the transport operations of rdma.c,
 * connect and reconnect with the NVMe/RDMA private data. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"
#include "qpriv.h"
#include "trace.h"

static int qr_post_send(void *c, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return ibv_post_send(((struct tr_conn *)c)->qp, wr, bad);
}

static int qr_post_recv(void *c, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_recv(((struct tr_conn *)c)->qp, wr, bad);
}

static int qr_poll(void *c, int n, struct ibv_wc *wc, uint64_t *ts)
{
	struct tr_conn *t = c;
	int r = t->cqx ? tr_poll_ex(t, n, wc, ts) : ibv_poll_cq(t->cq, n, wc);
	t->cq_full = r == n;
	return r;
}

static bool qr_pending(void *c) { return ((struct tr_conn *)c)->cq_full; }

static int qr_arm(void *c) { return tr_arm(c); }
static int qr_sleep(void *c, int timeout_ms) { return tr_sleep(c, timeout_ms); }
static bool qr_disconnected(void *c) { return tr_disconnected(c); }
static int qr_wait_fd(void *c) { return tr_wait_fd(c); }
static int qr_take_event(void *c) { return tr_take_event(c); }
static int qr_event_fd(void *c) { return tr_event_fd(c); }
static void qr_disconnect(void *c) { tr_disconnect(c); }
static void qr_close(struct nvmeof_queue *q) { tr_close(&q->conn); }

static int qr_cq_open(struct nvmeof_poll_group *g, void *dev, int cqe, int vector)
{
	int rc = tr_cq_create(&g->conn, dev, cqe, vector, g->hw_ts);
	g->cqc = &g->conn;
	g->vector = g->conn.vector;
	g->cqe_cap = !rc && g->conn.cq->cqe > 0 ? (uint64_t)g->conn.cq->cqe : 0;
	return rc;
}

static void qr_cq_close(struct nvmeof_poll_group *g) { tr_cq_destroy(&g->conn); }
static int q_connect(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms, uint32_t *usable);

static const struct q_transport rdma_transport = {
	.name = "rdma",
	.post_send = qr_post_send,
	.post_recv = qr_post_recv,
	.poll = qr_poll,
	.arm = qr_arm,
	.sleep = qr_sleep,
	.pending = qr_pending,
	.disconnected = qr_disconnected,
	.wait_fd = qr_wait_fd,
	.take_event = qr_take_event,
	.event_fd = qr_event_fd,
	.disconnect = qr_disconnect,
	.reopen = q_connect,
	.close = qr_close,
	.cq_open = qr_cq_open,
	.cq_close = qr_cq_close,
};

const struct q_transport *q_rdma_transport(void) { return &rdma_transport; }

struct ibv_context *q_verbs(struct nvmeof_queue *q) { return q->conn.id->verbs; }

/* A CQ of the queue's own holds nothing of the new connection yet: what is
 * in it are the flushed receives of attempts that failed (a CM connect
 * refused while the target is away flushes every receive posted for it),
 * and a CQ sized for one connection overruns with a few of them, after
 * which it delivers nothing (seen: an admin queue whose Connect was
 * answered and never seen, after four refused attempts). A shared CQ is
 * polled by its group even while no member is connected. */
static void discard_stale(struct nvmeof_queue *q)
{
	struct ibv_wc wc[POLL_BATCH];
	if (!q->own_group)
		return;
	for (int k = 0; k < 64 && q->group->tr->poll(q->group->cqc, POLL_BATCH, wc, NULL) > 0; k++)
		;
}

/* Connects q->conn anew on the same device and PD: resolve, QP, receives,
 * CM connect. Slots and requests are the caller's business. */
static int q_connect_once(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms, uint32_t *usable)
{
	uint8_t priv[NVME_RDMA_CM_REQ_SIZE];
	uint16_t crqsize;
	int rc;
	if ((rc = tr_resolve(&q->conn, q->dst, q->src, (int)timeout_ms)))
		return rc;
	trace_q(q, "address and route resolved: %s", ibv_get_device_name(q->conn.id->verbs->device));
	if (q->pd && q->pd->context != q->conn.id->verbs)
		return nvmeof_err(NVMEOF_ETRANSPORT,
				  "the route for queue %u goes through %s, not the controller's device %s",
				  q->qid, ibv_get_device_name(q->conn.id->verbs->device),
				  ibv_get_device_name(q->pd->context->device));
	if (!q->pd) {
		if (!(q->pd = ibv_alloc_pd(q->conn.id->verbs)))
			return nvmeof_err(NVMEOF_ETRANSPORT, "ibv_alloc_pd: %s", strerror(errno));
		q->own_pd = true;
	}
	if (!q->slots && (rc = q_alloc(q)))
		return rc;
	/* a queue on its own is a group of one: its CQ outlives its QP */
	if (!q->group && (rc = q_group_of_one(q, q->conn.id->verbs)))
		return rc;
	struct tr_qp_params qp = {
		.send_wr = q->depth + 1,
		.recv_wr = q->hrqsize,
		.send_sge = 2,
		.inline_bytes = NVME_SQE_SIZE, /* the capsule goes in the WQE: no DMA read of it */
		.vector = q->qid,
		.shared = q->group->cqc,
	};
	if ((rc = tr_create_qp(&q->conn, q->pd, &qp)))
		return rc;
	discard_stale(q);
	q->sqe_send_flags = IBV_SEND_SIGNALED | (q->conn.max_inline >= NVME_SQE_SIZE ? IBV_SEND_INLINE : 0);
	if ((rc = q_post_all_recvs(q)))
		return rc;
	/* HSQSIZE is 0-based; HRQSIZE counts our receive buffers. */
	nvme_rdma_cm_req(priv, q->qid, (uint16_t)q->hrqsize, (uint16_t)q->depth, cntlid);
	if ((rc = tr_connect(&q->conn, priv, sizeof(priv), (int)timeout_ms, &crqsize)))
		return rc;
	trace_q(q, "RDMA CM connected: HSQSIZE %u, the target's CRQSIZE %u", q->depth, crqsize);
	/* The target may have fewer receive buffers than we asked for: never
	 * have more commands out than it can take. */
	*usable = crqsize;
	return 0;
}

/* The transport's connect: says how transient a failure is (connretry.h). */
static int q_connect(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms, uint32_t *usable)
{
	int rc = q_connect_once(q, cntlid, timeout_ms, usable);
	if (rc)
		q->conn_class = q->conn.retry;
	return rc;
}

int q_open(const struct q_params *p, struct nvmeof_queue **out)
{
	struct nvmeof_queue *q = calloc(1, sizeof(*q));
	int rc;
	*out = NULL;
	if (!q)
		return nvmeof_err(NVMEOF_ENOMEM, "queue %u: out of memory", p->qid);
	q_init(q, p);
	q->tr = &rdma_transport;
	q->trc = &q->conn;
	q->pd = p->pd;
	if (p->group && (rc = q_group_join(p->group, q))) {
		q_close(q);
		return rc;
	}
	uint32_t usable = 0;
	if ((rc = q_connect_tries(q, p->cntlid, p->connect_timeout_ms, &usable, p->retry))) {
		q_close(q);
		return rc;
	}
	q_slots_reset(q, usable);
	*out = q;
	return 0;
}
