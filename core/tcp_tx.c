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

#define TX_GATHER 16 /* PDUs per sendmsg */

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

/* The head entry went out whole: an R2T's next H2CData PDU takes its place,
 * or it leaves the queue. */
static void entry_done(struct tcp_conn *t)
{
	struct tcp_cmd *c = &t->cmds[t->txq[t->txhead].slot];
	if (t->txq[t->txhead].h2c) {
		c->h2c_off += c->h2c_len;
		c->h2c_done += c->h2c_len;
		if (c->h2c_off < c->h2c_end) {
			tcp_tx_h2c_next(t, c);
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
	while (t->txn && !t->broken) {
		struct iovec v[TX_GATHER * 3];
		int nv = 0, zc = -1;
		uint32_t lens[TX_GATHER], k = 0;
		for (; k < t->txn && k < TX_GATHER; k++) {
			int n;
			lens[k] = entry_iov(t, k, v + nv, &n);
			struct tcp_cmd *c = &t->cmds[t->txq[(t->txhead + k) % t->txcap].slot];
			bool h2c = t->txq[(t->txhead + k) % t->txcap].h2c;
			if (h2c && zc < 0 && !copy && tcp_zc_wants(t, c->h2c_len))
				zc = nv + 1;
			nv += n;
			/* an R2T's PDUs after this one are built once it is out */
			if (h2c && c->h2c_off + c->h2c_len < c->h2c_end) {
				k++;
				break;
			}
		}
		/* skip what of the head entry already went */
		size_t skip = t->tx_sent;
		int first = 0, end;
		while (skip && skip >= v[first].iov_len)
			skip -= v[first++].iov_len;
		v[first].iov_base = (uint8_t *)v[first].iov_base + skip;
		v[first].iov_len -= skip;
		int flags = cut(first, nv, zc, &end);
		struct msghdr m = {.msg_iov = v + first, .msg_iovlen = (size_t)(end - first)};
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
		for (uint32_t i = 0; i < k && left >= lens[i]; i++) {
			left -= lens[i];
			entry_done(t);
		}
		t->tx_sent = (uint32_t)left;
	}
	set_out(t, false);
}
