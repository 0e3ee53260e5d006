/* A queue over NVMe/TCP: the transport operations over tcp_conn.c, a poll
 * group's completion queue (the members' completions, and an epoll set of
 * their sockets as the completion channel's counterpart), connect and
 * reconnect (TCP connect, then ICReq/ICResp). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "connretry.h"
#include "qpriv.h"
#include "tcp_conn.h"
#include "tls.h"
#include "tcp_sock.h"
#include "trace.h"

static int qt_post_send(void *c, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return tcp_conn_post_send(c, wr, bad);
}

static int qt_post_recv(void *c, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return tcp_conn_post_recv(c, wr, bad);
}

/* The group's members move their bytes, then their completions are taken.
 * g: the group whose CQ this is (tcp_cq is the first member of struct
 * group_cq, see qt_cq_open). */
#define POLL_EPOLL_MIN 3 /* members from which a poll asks epoll which sockets to read */
#define POLL_EVENTS 64   /* a full answer may have left some out: everyone is read then */

struct group_cq {
	struct tcp_cq cq;
	struct nvmeof_poll_group *g;
};

static int qt_poll(void *c, int n, struct ibv_wc *wc, uint64_t *ts)
{
	struct group_cq *gc = c;
	struct tcp_cq *cq = &gc->cq;
	/* With a few members a read per member costs no more than asking
	 * epoll first; with many, most of them idle, one epoll_wait names
	 * the sockets worth a read. Level-triggered: a socket left unread
	 * (budget, no room) is named again next time. */
	bool all = gc->g->nmembers < POLL_EPOLL_MIN;
	if (!all) {
		struct epoll_event ev[POLL_EVENTS];
		int nr = epoll_wait(cq->epfd, ev, POLL_EVENTS, 0);
		all = nr < 0 || nr == POLL_EVENTS;
		for (int i = 0; i < nr; i++)
			((struct tcp_conn *)ev[i].data.ptr)->ready = true;
	}
	for (uint32_t i = 0; i < gc->g->nmembers; i++) {
		struct nvmeof_queue *q = gc->g->list[i];
		struct tcp_conn *t = q->trc;
		if (!q_has_wire(q))
			continue; /* a reconnect's worker may be attaching it */
		if (all || t->ready || t->txn || tcp_conn_staged(t) || t->zc.ready)
			tcp_conn_progress(t);
		t->ready = false;
	}
	int k = 0;
	for (; k < n && cq->n; k++) {
		wc[k] = cq->wc[cq->head];
		if (ts)
			ts[k] = 0;
		cq->head = (cq->head + 1) % cq->cap;
		cq->n--;
	}
	return k;
}

/* What the members' polls held for a submit that did not come
 * (tcp_conn_progress) goes before anyone sleeps: the controller waits for
 * that data, and nothing would wake the sleeper but its answer. */
static void send_held(struct group_cq *gc)
{
	for (uint32_t i = 0; i < gc->g->nmembers; i++)
		if (q_has_wire(gc->g->list[i]))
			tcp_conn_send_held(gc->g->list[i]->trc);
}

/* The sockets' epoll set is level-triggered: a socket with bytes unread
 * wakes the sleeper at once, nothing to arm; the arm precedes every sleep
 * (the library's, an event loop's on nvmeof_queue_fd), so held sends go. */
static int qt_arm(void *c)
{
	send_held(c);
	return 0;
}
static void qt_flush(void *c) { send_held(c); }

/* Completions a poll left (it takes a batch), bytes read ahead, sends a
 * poll held for a submit (the next poll sends them) and a response waiting
 * for a receive (a zerocopy write's too, once the kernel has notified: its
 * notification no longer wakes the epoll set with EPOLLERR) are no longer
 * the sockets' to wake a sleeper for. */
static bool qt_pending(void *c)
{
	struct group_cq *gc = c;
	if (gc->cq.n)
		return true;
	for (uint32_t i = 0; i < gc->g->nmembers; i++) {
		struct tcp_conn *t = gc->g->list[i]->trc;
		if (q_has_wire(gc->g->list[i]) && (tcp_conn_staged(t) || t->has_held || t->zc.ready || t->tx_held))
			return true;
	}
	return false;
}

static int qt_wait_fd(void *c) { return ((struct group_cq *)c)->cq.epfd; }
static int qt_take_event(void *c)
{
	(void)c;
	return 1;
}
static int qt_event_fd(void *c)
{
	(void)c;
	return -1; /* a lost connection wakes the epoll set itself (EPOLLHUP) */
}

static bool qt_disconnected(void *c) { return ((struct tcp_conn *)c)->broken; }
/* our own decision: the caller says why (no reason of the connection's) */
static void qt_disconnect(void *c) { tcp_conn_fail(c, ""); }
static const char *qt_lost_why(void *c)
{
	struct tcp_conn *t = c;
	return t->broken && t->why[0] ? t->why : NULL;
}

static void qt_netdev(void *c, char *out, size_t len) { tcp_sock_netdev(((struct tcp_conn *)c)->fd, out, len); }

/* an I/O queue's only: the admin queue's size is fixed (see q_open_tcp) */
static void qt_set_wire_icd(void *c, uint32_t bytes)
{
	struct tcp_conn *t = c;
	if (t->qid)
		t->icd_max = bytes;
}

static void qt_close(struct nvmeof_queue *q)
{
	if (q->trc)
		tcp_conn_detach(q->trc);
}

static void qt_release(void *c) { tcp_conn_free(c); }

static int qt_cq_open(struct nvmeof_poll_group *g, void *dev, int cqe, int vector)
{
	(void)dev;
	(void)vector;
	struct group_cq *gc = calloc(1, sizeof(*gc));
	if (!gc)
		return nvmeof_err(NVMEOF_ENOMEM, "TCP completion queue: out of memory");
	g->cqc = gc;
	gc->g = g;
	gc->cq.epfd = -1;
	gc->cq.cap = (uint32_t)(cqe > 0 ? cqe : 64) + 64;
	if (!(gc->cq.wc = calloc(gc->cq.cap, sizeof(*gc->cq.wc))))
		return nvmeof_err(NVMEOF_ENOMEM, "TCP completion queue: out of memory");
	if ((gc->cq.epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return nvmeof_err(NVMEOF_ETRANSPORT, "TCP completion queue: epoll_create1: %s", strerror(errno));
	g->vector = -1;
	g->cqe_cap = (uint64_t)cqe;
	return 0;
}

static void qt_cq_close(struct nvmeof_poll_group *g)
{
	struct group_cq *gc = g->cqc;
	if (!gc)
		return;
	if (gc->cq.epfd >= 0)
		close(gc->cq.epfd);
	free(gc->cq.wc);
	free(gc);
	g->cqc = NULL;
}

/* A new connection for the queue: TCP connect, the connection's
 * initialization, every receive posted. */
static int qt_connect(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms, uint32_t *usable)
{
	struct tcp_conn *t = q->trc;
	struct tcp_neg neg;
	int fd = -1, rc;
	uint8_t cls = CR_FINAL;
	(void)cntlid; /* NVMe/TCP names the controller only in the Fabrics Connect */
	tcp_conn_detach(t);
	if ((rc = tcp_sock_connect(q->dst, q->src, q->copts, timeout_ms, q->qid, &fd, &cls))) {
		q->conn_class = cls;
		return rc;
	}
	trace_q(q, "TCP connected");
	void *ssl = NULL;
	if (t->tls) {
		bool final = true;
		const char *no_ktls = NULL;
		if ((rc = tls_client_handshake(fd, t->tls, timeout_ms, q->qid, &final, &ssl, &no_ktls))) {
			close(fd);
			q->conn_class = final ? CR_FINAL : CR_TRANSIENT_REACHED;
			return rc;
		}
		if (ssl)
			trace_q(q, "TLS 1.3 with %s, PSK identity %s; records by OpenSSL (SSL_read/SSL_write): %s",
				tls_cipher_name(t->tls->cipher), t->tls->identity, no_ktls);
		else
			trace_q(q, "TLS 1.3 with %s, PSK identity %s; records by the kernel (kTLS)",
				tls_cipher_name(t->tls->cipher), t->tls->identity);
	}
	tcp_conn_rx_init(t);
	if ((rc = tcp_sock_init_conn(fd, ssl, t->tls != NULL, t->hdgst, t->ddgst, timeout_ms, q->qid, &t->rx, &neg))) {
		if (ssl)
			tls_io_free(ssl);
		close(fd);
		q->conn_class = rc == NVMEOF_ETIMEDOUT ? CR_TRANSIENT_REACHED : CR_FINAL;
		return rc;
	}
	trace_q(q, "ICResp: CPDA %u, MAXH2CDATA %u, header digest %s, data digest %s", neg.cpda, neg.maxh2cdata,
		neg.hdgst ? "on" : "off", neg.ddgst ? "on" : "off");
	if (t->zc.min)
		trace_q(q, "SO_ZEROCOPY: H2CData payloads of %u bytes or more go with MSG_ZEROCOPY", t->zc.min);
	if ((rc = tcp_conn_attach(t, fd, ssl, &neg, &((struct group_cq *)q->group->cqc)->cq))) {
		q->conn_class = CR_FINAL;
		return nvmeof_err(NVMEOF_ETRANSPORT, "queue %u: adding its socket to the poll group's epoll set: %s",
				  q->qid, strerror(-rc));
	}
	*usable = q->depth;
	return q_post_all_recvs(q);
}

static const struct q_transport tcp_transport = {
	.name = "tcp",
	.post_send = qt_post_send,
	.post_recv = qt_post_recv,
	.poll = qt_poll,
	.arm = qt_arm,
	.pending = qt_pending,
	.flush = qt_flush,
	.disconnected = qt_disconnected,
	.wait_fd = qt_wait_fd,
	.take_event = qt_take_event,
	.event_fd = qt_event_fd,
	.disconnect = qt_disconnect,
	.lost_why = qt_lost_why,
	.set_wire_icd = qt_set_wire_icd,
	.netdev = qt_netdev,
	.reopen = qt_connect,
	.close = qt_close,
	.release = qt_release,
	.cq_open = qt_cq_open,
	.cq_close = qt_cq_close,
};

const struct q_transport *q_tcp_transport(void) { return &tcp_transport; }

int q_open_tcp(const struct q_params *p, struct nvmeof_queue **out)
{
	struct nvmeof_queue *q = calloc(1, sizeof(*q));
	int rc;
	*out = NULL;
	if (!q)
		return nvmeof_err(NVMEOF_ENOMEM, "queue %u: out of memory", p->qid);
	q_init(q, p);
	q->tr = &tcp_transport;
	/* nothing revokes a region's address over TCP: its release waits
	 * for the requests that use it (mem.c) */
	q->count_mr = true;
	/* the admin queue's in-capsule size before Identify says IOCCSZ:
	 * 8 KiB, as the kernel's host (NVME_TCP_ADMIN_CCSZ) */
	if (!(q->trc = tcp_conn_new(p->qid, q->depth, p->hdgst, p->ddgst, p->qid ? p->tcp_icd : 8192)) ||
	    tcp_zc_init(q->trc, p->copts ? p->copts->tcp_zerocopy : 0)) {
		q_close(q);
		return nvmeof_err(NVMEOF_ENOMEM, "queue %u: out of memory", p->qid);
	}
	((struct tcp_conn *)q->trc)->tls = p->tls;
	uint32_t usable = q->depth;
	if ((rc = q_alloc(q)) || (rc = p->group ? q_group_join(p->group, q) : q_group_of_one(q, NULL)) ||
	    (rc = q_connect_tries(q, p->cntlid, p->connect_timeout_ms, &usable, p->retry))) {
		q_close(q);
		return rc;
	}
	q_slots_reset(q, usable);
	*out = q;
	return 0;
}

int nvmeof_queue_tcp_zerocopy(const struct nvmeof_queue *q, uint64_t *sends, uint64_t *copied)
{
	if (!q || q->tr != &tcp_transport)
		return nvmeof_err(NVMEOF_EINVAL, "zerocopy counts: %s", q ? "not a queue over NVMe/TCP" : "no queue");
	const struct tcp_conn *t = q->trc;
	if (sends)
		*sends = t->zc.sends;
	if (copied)
		*copied = t->zc.copied;
	return 0;
}

int nvmeof_queue_tcp_completions(const struct nvmeof_queue *q, uint64_t *rsps, uint64_t *data_success)
{
	if (!q || q->tr != &tcp_transport)
		return nvmeof_err(NVMEOF_EINVAL, "completion counts: %s", q ? "not a queue over NVMe/TCP" : "no queue");
	const struct tcp_conn *t = q->trc;
	if (rsps)
		*rsps = t->rsps;
	if (data_success)
		*data_success = t->data_success;
	return 0;
}
