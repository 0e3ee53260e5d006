/* An NVMe/TCP queue's send path; see tcp_tx.h. */
#include "tcp_tx.h"
#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "protocol.h"
#include "tcp_cmd.h"
#include "tcp_conn.h"
#include "tcp_crc32c.h"
#include "tcp_zc.h"

/* Bytes past which a sendmsg gathers no more PDUs (so it carries at most
 * that plus one PDU): past that the socket would not take them now */
#define TX_BYTES (1u << 20)

void tcp_tx_h2c_next(struct tcp_conn *t, struct tcp_cmd *c)
{
	uint32_t n = c->h2c_end - c->h2c_off;
	if (n > t->neg.maxh2cdata)
		n = t->neg.maxh2cdata;
	c->h2c_len = n;
	c->h2c_hlen = tcp_h2c_hdr(c->h2c_hdr, c->cid, c->ttag, c->h2c_off, n, c->h2c_off + n == c->h2c_end, &t->neg);
	if (t->neg.ddgst)
		put_le32(c->h2c_dd, crc32c(c->data + c->h2c_off, n));
}

static void set_out(struct tcp_conn *t, bool on)
{
	if (t->want_out == on || !t->cq || t->fd < 0)
		return;
	struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = t};
	if (epoll_ctl(t->cq->epfd, EPOLL_CTL_MOD, t->fd, &ev)) {
		/* a backlog nobody would be woken to send */
		char b[96];
		snprintf(b, sizeof(b), "epoll_ctl on queue %u's socket: %s", t->qid, strerror(errno));
		tcp_conn_fail(t, b);
		return;
	}
	t->want_out = on;
}

/* An entry's iovecs (header, data, digest) and its length. */
static uint32_t entry_iov(struct tcp_conn *t, uint32_t k, struct iovec *v, int *nv)
{
	struct tcp_cmd *c = &t->cmds[t->txq[(t->txhead + k) % t->txcap].slot];
	bool h2c = t->txq[(t->txhead + k) % t->txcap].h2c;
	uint32_t hl = h2c ? c->h2c_hlen : c->hlen, dl = h2c ? c->h2c_len : c->icd_len;
	uint32_t dd = dl && t->neg.ddgst ? 4 : 0;
	*nv = 0;
	v[(*nv)++] = (struct iovec){h2c ? c->h2c_hdr : c->hdr, hl};
	if (dl)
		v[(*nv)++] = (struct iovec){h2c ? c->data + c->h2c_off : c->icd, dl};
	if (dd)
		v[(*nv)++] = (struct iovec){h2c ? c->h2c_dd : c->cmd_dd, 4};
	return hl + dl + dd;
}

/* Whether scratch PDU x is the command's at offset o, built for its R2T */
static bool x_is(const struct tcp_h2c_x *x, const struct tcp_cmd *c, uint32_t o)
{
	return x->cid == c->cid && x->ttag == c->ttag && x->off == o;
}

/* The head entry's PDU went out whole: an R2T's next H2CData PDU takes its
 * place (its header and digest copied from the scratch ring's first, built
 * by an earlier gather, or built now), or it leaves the queue. */
static void entry_done(struct tcp_conn *t)
{
	struct tcp_cmd *c = &t->cmds[t->txq[t->txhead].slot];
	if (t->txq[t->txhead].h2c) {
		c->h2c_off += c->h2c_len;
		c->h2c_done += c->h2c_len;
		if (c->h2c_off < c->h2c_end) {
			const struct tcp_h2c_x *x = &t->txx[t->txxh];
			if (!t->txxn || !x_is(x, c, c->h2c_off)) {
				t->txxn = 0; /* the ring follows the queue: never */
				return tcp_tx_h2c_next(t, c);
			}
			uint32_t n = c->h2c_end - c->h2c_off;
			c->h2c_len = n < t->neg.maxh2cdata ? n : t->neg.maxh2cdata;
			c->h2c_hlen = x->hlen;
			memcpy(c->h2c_hdr, x->hdr, x->hlen);
			if (t->neg.ddgst)
				memcpy(c->h2c_dd, x->dd, 4);
			t->txxh = (t->txxh + 1) % TX_GATHER;
			t->txxn--;
			return;
		}
		c->h2c_active = false;
	} else if (c->signaled) {
		/* the SQE and any in-capsule data are out: over RDMA, the
		 * send's completion */
		tcp_conn_push(t, c->wr_id, IBV_WC_SEND, IBV_WC_SUCCESS);
	}
	c->queued--;
	/* its response came while this was still going: deliverable now */
	if (!c->queued && !c->h2c_active && c->zc_held && !c->zc_out)
		t->zc.ready++;
	t->txhead = (t->txhead + 1) % t->txcap;
	t->txn--;
}

/* The gathered send: its iovecs, its PDUs' lengths, and how many of them
 * are scratch PDUs (the ring's first nx) */
struct gather {
	struct iovec v[TX_GATHER * 3];
	uint32_t lens[TX_GATHER];
	int nv, zc;
	uint32_t np, nx, bytes;
};

/* An R2T's PDUs after the one its command holds, from offset o on, while
 * the send has room: each in the scratch ring's next PDU, built there (its
 * data digest computed) unless an earlier gather did, so each digest is
 * computed once however many sends its PDU takes. True: all of them are
 * in. A PDU to go by zerocopy is left to a later send (its header and
 * digest buffers then are the command's, tcp_zc.h). */
static bool gather_rest(struct tcp_conn *t, struct tcp_cmd *c, struct gather *g)
{
	uint32_t o = c->h2c_off + c->h2c_len;
	while (o < c->h2c_end) {
		uint32_t dl = c->h2c_end - o < t->neg.maxh2cdata ? c->h2c_end - o : t->neg.maxh2cdata;
		if (g->np == TX_GATHER || g->bytes >= TX_BYTES || g->zc >= 0 || tcp_zc_wants(t, dl))
			return false;
		/* nx < np < TX_GATHER: the ring never laps itself */
		struct tcp_h2c_x *x = &t->txx[(t->txxh + g->nx) % TX_GATHER];
		if (g->nx >= t->txxn || !x_is(x, c, o)) {
			x->cid = c->cid, x->ttag = c->ttag, x->off = o;
			x->hlen = tcp_h2c_hdr(x->hdr, c->cid, c->ttag, o, dl, o + dl == c->h2c_end, &t->neg);
			if (t->neg.ddgst)
				put_le32(x->dd, crc32c(c->data + o, dl));
			t->txxn = g->nx + 1; /* any built past it were for another order */
		}
		g->nx++;
		g->v[g->nv++] = (struct iovec){x->hdr, x->hlen};
		g->v[g->nv++] = (struct iovec){c->data + o, dl};
		uint32_t dd = 0;
		if (t->neg.ddgst)
			g->v[g->nv++] = (struct iovec){x->dd, dd = 4};
		g->lens[g->np++] = x->hlen + dl + dd;
		g->bytes += x->hlen + dl + dd;
		o += dl;
	}
	return true;
}

/* The send queue's PDUs from its head, in order, while the send has room. */
static void gather(struct tcp_conn *t, bool copy, struct gather *g)
{
	g->nv = 0, g->zc = -1, g->np = g->nx = g->bytes = 0;
	for (uint32_t k = 0; k < t->txn && g->np < TX_GATHER && g->bytes < TX_BYTES; k++) {
		int n;
		uint32_t at = (t->txhead + k) % t->txcap;
		struct tcp_cmd *c = &t->cmds[t->txq[at].slot];
		bool h2c = t->txq[at].h2c;
		g->lens[g->np] = entry_iov(t, k, g->v + g->nv, &n);
		g->bytes += g->lens[g->np++];
		if (h2c && g->zc < 0 && !copy && tcp_zc_wants(t, c->h2c_len))
			g->zc = g->nv + 1;
		g->nv += n;
		/* the entries after an R2T go once all its PDUs have */
		if (h2c && !gather_rest(t, c, g))
			return;
	}
}

/* What one sendmsg takes of the gathered iovecs [first, nv): all of them,
 * unless one is an H2CData payload to go with MSG_ZEROCOPY (zc, its index).
 * That payload goes in a sendmsg of its own: what precedes it, its own header
 * included, goes before it by copy, because the header and digest buffers
 * are the command's, rewritten for the R2T's next PDU (tcp_tx_h2c_next) while
 * the kernel may still be reading a zerocopy send's bytes. MSG_MORE: more
 * follows at once, the segment need not leave alone. */
static int cut(int first, int nv, int zc, int *end)
{
	*end = nv;
	if (zc < 0 || first > zc)
		return 0;
	*end = first == zc ? zc + 1 : zc;
	return (first == zc ? MSG_ZEROCOPY : 0) | (*end < nv ? MSG_MORE : 0);
}

void tcp_tx_flush(struct tcp_conn *t)
{
	bool copy = false; /* the kernel refused a zerocopy send: this one goes by copy */
	struct gather g;
	t->tx_held = false; /* whatever was held goes now */
	while (t->txn && !t->broken) {
		gather(t, copy, &g);
		struct iovec *v = g.v;
		/* skip what of the head entry already went */
		size_t skip = t->tx_sent;
		int first = 0, end;
		while (skip && skip >= v[first].iov_len)
			skip -= v[first++].iov_len;
		v[first].iov_base = (uint8_t *)v[first].iov_base + skip;
		v[first].iov_len -= skip;
		int flags = cut(first, g.nv, g.zc, &end);
		struct msghdr m = {.msg_iov = v + first, .msg_iovlen = (size_t)(end - first)};
		t->send_calls++;
		ssize_t n = t->ssl ? tls_io_send(t->ssl, m.msg_iov, m.msg_iovlen, t->tls_out, TLS_IO_OUT_MAX)
				   : sendmsg(t->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT | flags);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				set_out(t, true);
				return;
			}
			/* the pages could not be pinned (RLIMIT_MEMLOCK) or the
			 * notification not allocated (optmem_max): nothing went
			 * and no ID was taken; the bytes go by copy instead */
			if (errno == ENOBUFS && (flags & MSG_ZEROCOPY)) {
				t->zc.refused++;
				copy = true;
				continue;
			}
			char b[96];
			snprintf(b, sizeof(b), "sending on queue %u: %s", t->qid, strerror(errno));
			tcp_conn_fail(t, b);
			return;
		}
		if (flags & MSG_ZEROCOPY) /* partial or whole, the send took an ID */
			tcp_zc_sent(t, t->txq[t->txhead].slot);
		copy = false;
		size_t left = (size_t)n + t->tx_sent;
		for (uint32_t i = 0; i < g.np && left >= g.lens[i]; i++) {
			left -= g.lens[i];
			entry_done(t);
		}
		t->tx_sent = (uint32_t)left;
	}
	set_out(t, false);
}
