/* An NVMe/TCP queue's data path; see tcp_conn.h. Checked against the
 * kernel's drivers/nvme/host/tcp.c (what a host sends) and
 * drivers/nvme/target/tcp.c (what nvmet answers). Nothing here allocates
 * after tcp_conn_new: each slot has its PDU headers, the send queue and the
 * receive ring are sized by the depth. */
#include "tcp_conn.h"
#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "protocol.h"
#include "tcp_cmd.h"
#include "tcp_crc32c.h"
#include "tcp_tx.h"
#include "tcp_zc.h"

#define RX_BUDGET 64                  /* socket reads per progress call, so one busy queue cannot starve a group */
/* The read-ahead. While payloads are small, a read takes up to STAGE_LEN of
 * what follows what the stream wants next: a small payload comes with its
 * header, and at depth several PDUs come in one read, each payload then
 * copied out (about 0.1 us per 4 KiB, a system call about 1 us). Payloads
 * from RA_DIRECT_MIN go straight to their buffers: a read wanting one, or
 * following one, takes only STAGE_MIN ahead (the responses and headers
 * between payloads), so large payloads are not copied twice. */
#define STAGE_LEN (32u << 10)
#define STAGE_MIN 512u
#define RA_DIRECT_MIN (16u << 10)

struct tcp_conn *tcp_conn_new(uint16_t qid, uint32_t depth, bool hdgst, bool ddgst, uint32_t icd_max)
{
	struct tcp_conn *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->fd = -1;
	t->qid = qid;
	t->depth = depth;
	t->hdgst = hdgst;
	t->ddgst = ddgst;
	t->icd_max = icd_max;
	t->txcap = 2 * depth + 2;
	t->rqcap = depth + 16;
	t->cmds = calloc(depth, sizeof(*t->cmds));
	t->txq = calloc(t->txcap, sizeof(*t->txq));
	t->rq = calloc(t->rqcap, sizeof(*t->rq));
	t->stage = malloc(STAGE_LEN);
	t->txx = malloc(TX_GATHER * sizeof(*t->txx));
	if (!t->cmds || !t->txq || !t->rq || !t->stage || !t->txx) {
		tcp_conn_free(t);
		return NULL;
	}
	return t;
}

void tcp_conn_free(struct tcp_conn *t)
{
	if (!t)
		return;
	tcp_conn_detach(t);
	tcp_zc_free(t);
	free(t->cmds);
	free(t->txq);
	free(t->rq);
	free(t->stage);
	free(t->txx);
	free(t->tls_out);
	free(t);
}

struct ibv_wc *tcp_conn_push(struct tcp_conn *t, uint64_t wr_id, enum ibv_wc_opcode op, enum ibv_wc_status st)
{
	struct tcp_cq *cq = t->cq;
	if (!cq || cq->n == cq->cap)
		return NULL; /* sized for every member's sends and receives: never */
	uint32_t at = (cq->head + cq->n++) % cq->cap;
	cq->wc[at] = (struct ibv_wc){.wr_id = wr_id, .opcode = op, .status = st};
	return &cq->wc[at];
}

static void flush_recvs(struct tcp_conn *t)
{
	while (t->rqn) {
		tcp_conn_push(t, t->rq[t->rqhead].wr_id, IBV_WC_RECV, IBV_WC_WR_FLUSH_ERR);
		t->rqhead = (t->rqhead + 1) % t->rqcap;
		t->rqn--;
	}
}

static void close_socket(struct tcp_conn *t)
{
	if (t->ssl)
		tls_io_free(t->ssl); /* no close_notify: the close below resets */
	t->ssl = NULL;
	t->tls_more = false;
	if (t->cq)
		epoll_ctl(t->cq->epfd, EPOLL_CTL_DEL, t->fd, NULL);
	close(t->fd);
	t->fd = -1;
}

void tcp_conn_fail(struct tcp_conn *t, const char *why)
{
	if (!t->broken) {
		snprintf(t->why, sizeof(t->why), "%s", why);
		t->broken = true;
	}
	/* Closed, not shut down: a shutdown sends what the socket still
	 * holds, then a FIN, and keeps sending it until the controller
	 * acknowledges it, after a partition heals too, when the commands
	 * failed below may have been retried and overwritten. The socket's
	 * SO_LINGER {1, 0} (tcp_sock.c) makes the close purge the write
	 * queue and send an RST. For zerocopy sends the kernel has not
	 * notified, the purge also lets the flush below hand the commands'
	 * buffers back: what the qdisc or the NIC already holds may still go
	 * out with the buffer's later bytes; the pages stay pinned until
	 * then, and those writes are failed anyway (a multipath holds their
	 * retry for the quiesce time). */
	tcp_zc_reset(t);
	if (t->fd >= 0)
		close_socket(t);
	/* as a QP in error flushes its sends: a capsule not yet out */
	for (uint32_t k = 0; k < t->txn; k++) {
		uint32_t at = (t->txhead + k) % t->txcap;
		struct tcp_cmd *c = &t->cmds[t->txq[at].slot];
		if (!t->txq[at].h2c && c->signaled)
			tcp_conn_push(t, c->wr_id, IBV_WC_SEND, IBV_WC_WR_FLUSH_ERR);
	}
	t->txn = 0;
	t->tx_held = false;
	flush_recvs(t);
}

int tcp_conn_attach(struct tcp_conn *t, int fd, void *ssl, const struct tcp_neg *neg, struct tcp_cq *cq)
{
	if (ssl && !t->tls_out && !(t->tls_out = malloc(TLS_IO_OUT_MAX))) {
		tls_io_free(ssl);
		close(fd);
		return -ENOMEM;
	}
	t->fd = fd;
	t->ssl = ssl;
	t->tls_more = false;
	t->neg = *neg;
	t->cq = cq;
	t->broken = t->want_out = t->has_held = t->tx_held = false;
	t->sqhd = 0;
	t->txhead = t->txn = t->tx_sent = t->txxh = t->txxn = 0;
	t->rqhead = t->rqn = 0;
	t->shead = t->slen = 0;
	t->ra_small = true;
	t->ready = false;
	t->why[0] = 0;
	tcp_zc_reset(t);
	for (uint32_t i = 0; i < t->depth; i++) {
		t->cmds[i].busy = t->cmds[i].h2c_active = false;
		t->cmds[i].queued = 0;
	}
	/* without it no sleep would ever wake for this socket */
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = t};
	if (epoll_ctl(cq->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		int e = errno;
		close_socket(t);
		return -e;
	}
	return 0;
}

void tcp_conn_detach(struct tcp_conn *t)
{
	if (t->fd < 0)
		return;
	tcp_zc_reset(t); /* as in tcp_conn_fail: the user may free the buffers next */
	close_socket(t);
	t->txn = 0;
	t->tx_held = false;
	t->slen = 0;
}

/* The next receive takes a response: its capsule lands in the buffer and
 * a receive completion says so. False: none is posted (it waits, held). */
bool tcp_conn_deliver(struct tcp_conn *t, const uint8_t *cqe)
{
	if (!t->rqn) {
		memcpy(t->held, cqe, 16);
		t->has_held = true;
		return false;
	}
	memcpy(t->rq[t->rqhead].buf, cqe, 16);
	struct ibv_wc *w = tcp_conn_push(t, t->rq[t->rqhead].wr_id, IBV_WC_RECV, IBV_WC_SUCCESS);
	if (w)
		w->byte_len = 16;
	t->rqhead = (t->rqhead + 1) % t->rqcap;
	t->rqn--;
	return true;
}

int tcp_conn_post_recv(struct tcp_conn *t, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	for (; wr; wr = wr->next) {
		if (t->rqn == t->rqcap || wr->num_sge < 1 || wr->sg_list[0].length < 16) {
			*bad = wr;
			return EINVAL;
		}
		uint32_t i = (t->rqhead + t->rqn++) % t->rqcap;
		t->rq[i].wr_id = wr->wr_id;
		t->rq[i].buf = (uint8_t *)(uintptr_t)wr->sg_list[0].addr;
	}
	if (t->broken)
		flush_recvs(t);
	else if (t->has_held && tcp_conn_deliver(t, t->held))
		t->has_held = false;
	if (!t->broken && t->zc.ready)
		tcp_zc_release(t);
	return 0;
}

static bool enqueue(struct tcp_conn *t, uint16_t slot, uint8_t h2c)
{
	if (t->txn == t->txcap)
		return false;
	uint32_t at = (t->txhead + t->txn++) % t->txcap;
	t->txq[at].slot = slot;
	t->txq[at].h2c = h2c;
	t->cmds[slot].queued++;
	return true;
}

static int build_cmd(struct tcp_conn *t, const struct ibv_send_wr *wr)
{
	uint16_t cid = nvme_sqe_cid((const uint8_t *)(uintptr_t)wr->sg_list[0].addr);
	if (SLOT_OF(cid) >= t->depth)
		return EINVAL;
	struct tcp_cmd *c = &t->cmds[SLOT_OF(cid)];
	int rc = tcp_cmd_build(c, wr, t->icd_max, &t->neg);
	if (rc)
		return rc;
	c->busy = true;
	enqueue(t, (uint16_t)SLOT_OF(cid), 0); /* tcp_conn_post_send saw room */
	return 0;
}

int tcp_conn_post_send(struct tcp_conn *t, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	for (; wr; wr = wr->next) {
		int rc = t->broken || t->fd < 0 ? ENOTCONN : t->txn == t->txcap ? ENOMEM : build_cmd(t, wr);
		if (rc) {
			*bad = wr;
			return rc;
		}
	}
	tcp_tx_flush(t);
	return 0;
}

/* Where a C2HData payload goes: the read command's own buffer, within it. */
static uint8_t *c2h_dest(void *ctx, const struct tcp_pdu *p, const char **why)
{
	struct tcp_conn *t = ctx;
	struct tcp_cmd *c = SLOT_OF(p->cccid) < t->depth ? &t->cmds[SLOT_OF(p->cccid)] : NULL;
	/* each refusal's Fatal Error Status for the H2CTermReq (tcp_rx) */
	t->rx.fail_fes = NVME_TCP_FES_SEQUENCE;
	if (!c || !c->busy || c->cid != p->cccid) {
		*why = "C2HData: CCCID names no command in flight";
		return NULL;
	}
	if (c->dir != DIR_C2H || !c->data) {
		*why = "C2HData: for a command that reads nothing";
		return NULL;
	}
	if ((uint64_t)p->datao + p->datal > c->len) {
		t->rx.fail_fes = NVME_TCP_FES_RANGE;
		*why = "C2HData: DATAO and DATAL reach beyond the command's buffer";
		return NULL;
	}
	/* in order, no gap or overlap: else SUCCESS could report unread bytes */
	if (p->datao != c->c2h_next) {
		*why = "C2HData: DATAO is not where the data received so far ends";
		return NULL;
	}
	t->rx.fail_fes = 0;
	c->c2h_next += p->datal;
	return c->data + p->datao;
}

void tcp_conn_rx_init(struct tcp_conn *t) { tcp_rx_init(&t->rx, c2h_dest, t); }

/* The H2CTermReq the specification asks for before the host closes for a
 * controller's fatal error (the kernel's host sends none, SPDK's does): its
 * Fatal Error Status and field, and the header in error, so the target's
 * log says what was refused. Best effort: never blocking, and only between
 * PDUs (in the middle of one it would read as that PDU's bytes). */
static void term_req(struct tcp_conn *t, uint16_t fes, uint32_t fei)
{
	uint8_t b[NVME_TCP_TERM_PLEN_MAX];
	if (!fes || fes > NVME_TCP_FES_UNSUPPORTED || t->fd < 0 || t->broken || t->tx_sent)
		return;
	size_t n = tcp_h2c_term_build(b, fes, fei, t->rx.hdr, t->rx.pdu.hlen);
	struct iovec v = {b, n};
	ssize_t w = t->ssl ? tls_io_send(t->ssl, &v, 1, t->tls_out, TLS_IO_OUT_MAX)
			   : send(t->fd, b, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)w;
}

static void fail_fmt(struct tcp_conn *t, const char *what, const char *why)
{
	char b[160];
	snprintf(b, sizeof(b), "queue %u: %s%s", t->qid, what, why);
	tcp_conn_fail(t, b);
}

/* A controller's protocol error: the H2CTermReq, then the close. */
static void fail_term(struct tcp_conn *t, uint16_t fes, uint32_t fei, const char *what, const char *why)
{
	term_req(t, fes, fei);
	fail_fmt(t, what, why);
}

static void on_r2t(struct tcp_conn *t, const struct tcp_pdu *p)
{
	struct tcp_cmd *c = SLOT_OF(p->cccid) < t->depth ? &t->cmds[SLOT_OF(p->cccid)] : NULL;
	if (!c || !c->busy || c->cid != p->cccid || c->dir != DIR_H2C || !c->data)
		return fail_term(t, NVME_TCP_FES_SEQUENCE, 8, "R2T: ", "CCCID names no write in flight");
	if ((uint64_t)p->datao + p->datal > c->len)
		return fail_term(t, NVME_TCP_FES_RANGE, 12, "R2T: ", "R2TO and R2TL reach beyond the command's data");
	if (c->h2c_active)
		return fail_term(t, NVME_TCP_FES_LIMIT, 8, "R2T: ", "a second R2T for a command while MAXR2T is one");
	/* the kernel host's "unexpected r2t offset": the data goes once, in order */
	if (c->icd_len)
		return fail_term(t, NVME_TCP_FES_SEQUENCE, 8, "R2T: ", "for a write whose data went in the capsule");
	if (p->datao != c->h2c_done)
		return fail_term(t, NVME_TCP_FES_RANGE, 12, "R2T: ", "R2TO is not where the data sent so far ends");
	if (!enqueue(t, (uint16_t)SLOT_OF(p->cccid), 1))
		return fail_fmt(t, "R2T: ", "the send queue is full");
	c->h2c_active = true;
	c->ttag = p->ttag;
	c->h2c_off = p->datao;
	c->h2c_end = p->datao + p->datal;
	tcp_tx_h2c_next(t, c);
}

/* A command a C2HData of which failed its data digest completes with
 * Transient Transport Error (retryable: no DNR) whatever the controller
 * answered, as the SPDK host does; a controller's own error stays. */
static const uint8_t *data_bad_cqe(const struct tcp_cmd *c, const uint8_t *cqe, uint8_t *out)
{
	if (!c->data_bad || (get_le16(cqe + 14) >> 1))
		return cqe;
	memcpy(out, cqe, 16);
	put_le16(out + 14, (uint16_t)((get_le16(cqe + 14) & 1) | NVME_SC_TRANSIENT_TRANSPORT << 1));
	return out;
}

/* A Read short of its blocks: its success would pass old bytes as read. Where
 * the controller chooses the length (an answer within an allocation length,
 * a vendor read), fewer bytes are the whole transfer, as over RDMA. */
static bool read_short(const struct tcp_conn *t, const struct tcp_cmd *c)
{
	return t->qid && c->dir == DIR_C2H && c->hdr[8] == NVME_CMD_READ && c->c2h_next != c->len;
}

static void on_pdu(struct tcp_conn *t)
{
	const struct tcp_pdu *p = &t->rx.pdu;
	struct tcp_cmd *c = SLOT_OF(p->cccid) < t->depth ? &t->cmds[SLOT_OF(p->cccid)] : NULL;
	switch (p->type) {
	case NVME_TCP_RSP:
		t->rsps++;
		/* FFFFh with SQ flow control disabled: passed on, never waited on */
		t->sqhd = get_le16(p->cqe + 8);
		if (c && c->cid == p->cccid && c->busy) {
			/* a response while its PDUs still send from its buffers
			 * (the target failed a write early) waits for them in
			 * tcp_zc_hold, as SPDK's host defers it
			 * (nvme_tcp_req_complete_safe): the buffers stay the
			 * command's until then */
			if (!(get_le16(p->cqe + 14) >> 1) && read_short(t, c))
				return fail_term(t, NVME_TCP_FES_SEQUENCE, 0, "",
						 "CapsuleResp with success before all the Read's data came");
			c->busy = false;
			uint8_t bad[16];
			const uint8_t *cqe = data_bad_cqe(c, p->cqe, bad);
			/* the kernel may still send from the write's buffer */
			if (tcp_zc_hold(t, c, cqe))
				return;
			tcp_conn_deliver(t, cqe);
			return;
		}
		tcp_conn_deliver(t, p->cqe);
		return;
	case NVME_TCP_C2H_DATA:
		c->data_bad |= p->ddgst_bad;
		if (!(p->flags & NVME_TCP_F_DATA_SUCCESS))
			return;
		if (c->queued)
			return fail_term(t, NVME_TCP_FES_SEQUENCE, 1, "", "C2HData with SUCCESS before its capsule was sent");
		if (read_short(t, c))
			return fail_term(t, NVME_TCP_FES_SEQUENCE, 1, "",
					 "C2HData with SUCCESS before all the Read's data came");
		/* The controller's word that the read succeeded: no CapsuleResp
		 * comes. The specification allows it only with SQ flow control
		 * disabled (disable_sqflow: CATTR bit 2 on every Connect), and
		 * nvmet, and SPDK's target since 2026-05, set it only then; older
		 * SPDK targets set it regardless, and the kernel's host and SPDK's
		 * take it either way, so do we. Nothing here waits on SQHD: a
		 * queue never has more commands out than its slots, which the SQ
		 * holds. The completion says the last SQHD the controller
		 * reported (FFFFh once it stopped reporting it), not 0, which
		 * would read as the head gone back to the start. */
		uint8_t cqe[16] = {0}, bad[16];
		put_le16(cqe + 8, t->sqhd);
		put_le16(cqe + 10, t->qid);
		put_le16(cqe + 12, p->cccid);
		c->busy = false;
		t->data_success++;
		tcp_conn_deliver(t, data_bad_cqe(c, cqe, bad));
		return;
	case NVME_TCP_R2T: on_r2t(t, p); return;
	case NVME_TCP_C2H_TERM: {
		char b[96];
		snprintf(b, sizeof(b), "C2HTermReq, %s (FEI %u)", tcp_fes_name(p->fes), p->fei);
		fail_fmt(t, "the controller ended the connection: ", b);
		return;
	}
	default: fail_term(t, NVME_TCP_FES_HEADER, 0, "unexpected ", tcp_pdu_type_name(p->type));
	}
}

/* Room for what one PDU may complete, and a receive to put a response in. */
static bool rx_room(const struct tcp_conn *t)
{
	return !t->broken && !t->has_held && t->cq->cap - t->cq->n >= 2;
}

static void rx_done(struct tcp_conn *t, int rc, const char *why)
{
	if (rc < 0)
		return fail_term(t, t->rx.fail_fes, t->rx.fail_fei, "", why);
	if (rc == TCP_RX_PDU) {
		if (t->rx.pdu.type == NVME_TCP_C2H_DATA)
			t->ra_small = t->rx.pdu.datal < RA_DIRECT_MIN;
		/* what it queued (an R2T's H2CData) goes with what the
		 * rest of the poll's reads queue, in one send after them */
		on_pdu(t);
	}
}

/* The read-ahead, a PDU at a time while there is room for its completion.
 * True: all of it is parsed. */
static bool rx_staged(struct tcp_conn *t)
{
	while (t->slen && rx_room(t)) {
		size_t used;
		const char *why = NULL;
		int rc = tcp_rx_feed(&t->rx, t->stage + t->shead, t->slen, &used, &why);
		t->shead += (uint32_t)used;
		t->slen -= (uint32_t)used;
		rx_done(t, rc, why);
	}
	return !t->slen;
}

/* One read takes what the stream wants next straight into its place (a
 * header, or the rest of a C2HData payload into the command's buffer) and
 * whatever follows into the read-ahead. A read that leaves room unfilled
 * drained the socket: no second read to hear EAGAIN. */
static void rx_pump(struct tcp_conn *t)
{
	for (int i = 0; i < RX_BUDGET; i++) {
		if (!rx_staged(t) || !rx_room(t))
			return;
		size_t want;
		uint8_t *to = tcp_rx_want(&t->rx, &want); /* sets want: not inside the initializer */
		size_t ahead = t->ra_small && want < RA_DIRECT_MIN ? STAGE_LEN : STAGE_MIN;
		struct iovec v[2] = {{to, want}, {t->stage, ahead}};
		struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
		ssize_t n = t->ssl ? tls_io_recv(t->ssl, v, 2, &t->tls_more) : recvmsg(t->fd, &m, MSG_DONTWAIT);
		t->reads++;
		if (n < 0 && errno == EIO && t->tls && !t->ssl) {
			/* kTLS: a record that is not data; a session ticket is
			 * dropped, a close_notify reads as the end of the stream */
			char why[192];
			n = tls_ktls_ctrl(t->fd, why, sizeof(why));
			if (n < 0 && errno == EAGAIN)
				continue;
			if (n < 0)
				return fail_fmt(t, "receiving: ", why);
		}
		if (n == 0)
			return fail_fmt(t, "the controller closed the connection", "");
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				fail_fmt(t, "receiving: ", strerror(errno));
			return;
		}
		size_t direct = (size_t)n < want ? (size_t)n : want;
		t->shead = 0, t->slen = (uint32_t)((size_t)n - direct);
		t->ra_bytes += t->slen;
		const char *why = NULL;
		int rc = tcp_rx_advance(&t->rx, direct, &why);
		rx_done(t, rc, why);
		if ((size_t)n < want + ahead && !t->tls_more)
			return (void)rx_staged(t);
	}
}

void tcp_conn_progress(struct tcp_conn *t)
{
	if (t->fd < 0 || t->broken)
		return;
	if (t->txn)
		tcp_tx_flush(t);
	uint32_t txn = t->txn, done = t->cq->n;
	rx_pump(t);
	/* What the reads queued (R2Ts' H2CData); with nothing new, or behind
	 * a backlog the first flush could not send (want_out: the socket says
	 * when it has room), another try would be refused too. Where the
	 * reads completed commands, the caller is likely to submit next: the
	 * data waits for that submit's capsules, one sendmsg for both, as
	 * SPDK's socket group sends a poll's PDUs together. It goes at the
	 * queue's next call at the latest: a submit, the next poll (above),
	 * or the arm before a sleep (tcp_conn_send_held). */
	if (t->txn > txn && !t->want_out) {
		if (t->qid && t->cq->n > done && !t->broken)
			t->tx_held = true;
		else
			tcp_tx_flush(t);
	}
	if (tcp_zc_outstanding(&t->zc))
		tcp_zc_reap(t);
	else if (t->zc.ready)
		tcp_zc_release(t); /* all reported, but the CQ had no room last time */
}
