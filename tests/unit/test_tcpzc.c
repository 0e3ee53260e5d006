/*
 * MSG_ZEROCOPY of an NVMe/TCP queue's writes (core/tcp_zc.c, the send path
 * in core/tcp_tx.c) against a controller played by the test over TCP on
 * 127.0.0.1 (a Unix socket pair has no MSG_ZEROCOPY). When the kernel
 * notifies a zerocopy send is decided by the test: the send's pages are
 * released once the peer has acknowledged all of its bytes, and the
 * controller's socket has a small receive buffer, so most of a large
 * payload stays unacknowledged until the controller reads it.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "protocol.h"
#include "tcp_cmd.h"
#include "tcp_conn.h"

#define CID 0x0401
/* How long a wait for the kernel's next step may take: milliseconds on any
 * machine, a generous bound so that a lost notification fails the test
 * instead of hanging it. */
#define WAIT_MS 10000

struct rig {
	int host, ctrl;
	struct tcp_conn *t;
	struct tcp_cq cq;
	struct ibv_wc wc[64];
	uint8_t rsp[16];
	uint8_t sqe[64];
};

static int set(int fd, int level, int name, int v) { return setsockopt(fd, level, name, &v, sizeof(v)); }

/* false: this kernel has no SO_ZEROCOPY (the test skips) */
static bool rig_up(struct rig *r, uint32_t zc_min, uint32_t maxh2cdata, int host_sndbuf, bool post_recv)
{
	memset(r, 0, sizeof(*r));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	/* the accepted socket inherits it: a window of a few KiB */
	CHECK_EQ(set(l, SOL_SOCKET, SO_RCVBUF, 4096), 0);
	CHECK_EQ(bind(l, (struct sockaddr *)&a, al), 0);
	CHECK_EQ(getsockname(l, (struct sockaddr *)&a, &al), 0);
	CHECK_EQ(listen(l, 1), 0);
	r->host = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_EQ(set(r->host, SOL_SOCKET, SO_SNDBUF, host_sndbuf), 0);
	CHECK_EQ(set(r->host, IPPROTO_TCP, TCP_NODELAY, 1), 0);
	struct linger no = {.l_onoff = 1, .l_linger = 0}; /* as tcp_sock_connect sets it */
	CHECK_EQ(setsockopt(r->host, SOL_SOCKET, SO_LINGER, &no, sizeof(no)), 0);
	if (set(r->host, SOL_SOCKET, SO_ZEROCOPY, 1)) {
		close(r->host);
		close(l);
		return false;
	}
	CHECK_EQ(connect(r->host, (struct sockaddr *)&a, al), 0);
	r->ctrl = accept(l, NULL, NULL);
	close(l);
	CHECK(r->ctrl >= 0);
	CHECK_EQ(set(r->host, SOL_SOCKET, SO_RCVBUF, 1 << 20), 0);
	CHECK_EQ(fcntl(r->host, F_SETFL, O_NONBLOCK), 0);
	r->cq = (struct tcp_cq){.wc = r->wc, .cap = 64, .epfd = epoll_create1(0)};
	r->t = tcp_conn_new(1, 4, false, false, 0);
	CHECK_EQ(tcp_zc_init(r->t, zc_min), 0);
	struct tcp_neg n = {.maxh2cdata = maxh2cdata};
	tcp_conn_rx_init(r->t);
	tcp_rx_negotiated(&r->t->rx, &n);
	CHECK_EQ(tcp_conn_attach(r->t, r->host, NULL, &n, &r->cq), 0);
	if (post_recv) {
		struct ibv_sge sge = {.addr = (uintptr_t)r->rsp, .length = 16};
		struct ibv_recv_wr rw = {.wr_id = 77, .sg_list = &sge, .num_sge = 1}, *bad;
		CHECK_EQ(tcp_conn_post_recv(r->t, &rw, &bad), 0);
	}
	return true;
}

static void rig_down(struct rig *r)
{
	tcp_conn_free(r->t); /* closes the host's end */
	close(r->ctrl);
	close(r->cq.epfd);
}

static void ctrl_send(struct rig *r, const void *p, size_t n) { CHECK_EQ(send(r->ctrl, p, n, 0), (ssize_t)n); }

/* The host sends a write's capsule; the controller reads it and asks for
 * all of its data with an R2T. */
static void write_cmd(struct rig *r, uint8_t *buf, uint32_t len)
{
	nvme_sqe_rw(r->sqe, NVME_CMD_WRITE, CID, 1, 0, 1);
	nvme_sqe_sgl_keyed(r->sqe, (uintptr_t)buf, len, 0);
	struct ibv_sge sge = {.addr = (uintptr_t)r->sqe, .length = 64};
	struct ibv_send_wr w = {.wr_id = 5, .sg_list = &sge, .num_sge = 1}, *bad;
	CHECK_EQ(tcp_conn_post_send(r->t, &w, &bad), 0);
	uint8_t pdu[72];
	CHECK_EQ(recv(r->ctrl, pdu, 72, MSG_WAITALL), 72);
	CHECK_EQ(pdu[0], NVME_TCP_CMD);
	uint8_t p[24] = {NVME_TCP_R2T, 0, 24, 0, 24};
	put_le16(p + 8, CID);
	put_le16(p + 10, 9);
	put_le32(p + 16, len);
	ctrl_send(r, p, 24);
}

static void rsp(struct rig *r)
{
	uint8_t p[24] = {NVME_TCP_RSP, 0, 24, 0, 24};
	put_le16(p + 8 + 12, CID);
	ctrl_send(r, p, 24);
}

static bool got_recv(const struct rig *r, enum ibv_wc_status st)
{
	for (uint32_t i = 0; i < r->cq.n; i++)
		if (r->wc[i].opcode == IBV_WC_RECV && r->wc[i].status == st)
			return true;
	return false;
}

/* Until the host has handed the whole payload to its socket (the send
 * buffer takes it: the controller does not read yet). */
static void host_sends_all(struct rig *r)
{
	tcp_conn_progress(r->t); /* the R2T, and what the socket takes */
	for (int i = 0; i < WAIT_MS && (r->t->txn || !r->t->cmds[SLOT_OF(CID)].h2c_done); i++) {
		struct pollfd p = {.fd = r->host, .events = POLLIN | POLLOUT};
		poll(&p, 1, 1);
		tcp_conn_progress(r->t);
	}
	CHECK_EQ(r->t->txn, 0);
}

/* The host's socket has the response; it is parsed. */
static void host_reads_rsp(struct rig *r)
{
	for (int i = 0; i < WAIT_MS && !r->t->cmds[SLOT_OF(CID)].zc_held && !got_recv(r, IBV_WC_SUCCESS); i++) {
		struct pollfd p = {.fd = r->host, .events = POLLIN};
		poll(&p, 1, 1);
		tcp_conn_progress(r->t);
	}
}

/* The controller reads the H2CData PDUs of a write of len bytes (pdu bytes
 * of data each), checking their headers and data. */
static void ctrl_reads_h2c(struct rig *r, const uint8_t *want, uint32_t len, uint32_t pdu)
{
	static uint8_t d[1 << 20];
	for (uint32_t off = 0; off < len; off += pdu) {
		uint8_t h[24];
		uint32_t n = len - off < pdu ? len - off : pdu;
		CHECK_EQ(recv(r->ctrl, h, 24, MSG_WAITALL), 24);
		CHECK_EQ(h[0], NVME_TCP_H2C_DATA);
		CHECK_EQ(get_le32(h + 12), off); /* the header went by copy: not the next PDU's */
		CHECK_EQ(get_le32(h + 16), n);
		CHECK_EQ(recv(r->ctrl, d, n, MSG_WAITALL), (ssize_t)n);
		CHECK_MEM(d, want + off, n);
	}
}

/* The notifications come (the controller read the data): progress on the
 * group's epoll set, which EPOLLERR wakes, until the response is delivered. */
static void host_waits_completion(struct rig *r)
{
	uint64_t spins = 0;
	while (!got_recv(r, IBV_WC_SUCCESS) && spins++ < 1000) {
		struct epoll_event ev;
		epoll_wait(r->cq.epfd, &ev, 1, WAIT_MS / 100);
		tcp_conn_progress(r->t);
	}
}

static uint8_t *pattern(uint32_t len)
{
	uint8_t *b = malloc(len);
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 13 + (i >> 12));
	return b;
}

/* The controller answers at once, before it has read the data: the write's
 * buffer is still the kernel's (the payload is unacknowledged in the
 * host's write queue), so the response is held until the notification. */
TEST(zerocopy_write_completes_only_after_its_notification)
{
	struct rig r;
	uint32_t len = 128 << 10;
	uint8_t *buf = pattern(len);
	if (!rig_up(&r, 4096, 1 << 20, 1 << 20, true)) {
		free(buf);
		SKIP("no SO_ZEROCOPY in this kernel");
	}
	write_cmd(&r, buf, len);
	host_sends_all(&r);
	CHECK_EQ(r.t->zc.sends, 1); /* the payload in one MSG_ZEROCOPY send */
	rsp(&r);
	host_reads_rsp(&r);
	CHECK(!got_recv(&r, IBV_WC_SUCCESS));
	CHECK(r.t->cmds[SLOT_OF(CID)].zc_held);
	CHECK(!r.t->broken);
	ctrl_reads_h2c(&r, buf, len, 1 << 20);
	host_waits_completion(&r);
	CHECK(got_recv(&r, IBV_WC_SUCCESS));
	CHECK_EQ(get_le16(r.rsp + 12), CID);
	CHECK(!tcp_zc_outstanding(&r.t->zc));
	/* over loopback the kernel copies on delivery, and says so */
	CHECK_EQ(r.t->zc.copied, r.t->zc.sends);
	CHECK(!r.t->broken);
	rig_down(&r);
	free(buf);
}

TEST(write_below_the_threshold_goes_by_copy)
{
	struct rig r;
	uint32_t len = 16 << 10;
	uint8_t *buf = pattern(len);
	if (!rig_up(&r, 64 << 10, 1 << 20, 1 << 20, true)) {
		free(buf);
		SKIP("no SO_ZEROCOPY in this kernel");
	}
	write_cmd(&r, buf, len);
	host_sends_all(&r);
	rsp(&r);
	host_reads_rsp(&r);
	CHECK(got_recv(&r, IBV_WC_SUCCESS)); /* nothing to wait for */
	CHECK_EQ(r.t->zc.sends, 0);
	CHECK_EQ(r.t->zc.copied, 0);
	ctrl_reads_h2c(&r, buf, len, 1 << 20);
	rig_down(&r);
	free(buf);
}

/* An R2T answered in several H2CData PDUs: each payload a zerocopy send of
 * its own, each header (rewritten for the next PDU in the same buffer) by
 * copy, so the controller sees every PDU's own offset. */
TEST(each_h2c_pdu_of_an_r2t_a_zerocopy_send_its_header_copied)
{
	struct rig r;
	uint32_t len = 128 << 10, pdu = 16 << 10;
	uint8_t *buf = pattern(len);
	if (!rig_up(&r, 4096, pdu, 1 << 20, true)) {
		free(buf);
		SKIP("no SO_ZEROCOPY in this kernel");
	}
	write_cmd(&r, buf, len);
	host_sends_all(&r);
	CHECK_EQ(r.t->zc.sends, len / pdu);
	rsp(&r);
	host_reads_rsp(&r);
	CHECK(!got_recv(&r, IBV_WC_SUCCESS));
	ctrl_reads_h2c(&r, buf, len, pdu);
	host_waits_completion(&r);
	CHECK(got_recv(&r, IBV_WC_SUCCESS));
	CHECK(!tcp_zc_outstanding(&r.t->zc));
	CHECK_EQ(r.t->cmds[SLOT_OF(CID)].zc_out, 0);
	CHECK(!r.t->broken);
	rig_down(&r);
	free(buf);
}

/* A send buffer smaller than the payload: the socket takes it in pieces,
 * with EAGAIN between them. Each piece took an ID and EAGAIN none: counted
 * otherwise, the write would wait for an ID the kernel never notifies, or
 * a notification would name IDs not sent (the connection fails then). */
TEST(partial_sends_each_take_an_id_eagain_none)
{
	struct rig r;
	uint32_t len = 512 << 10;
	uint8_t *buf = pattern(len), *got = malloc(len + 24);
	if (!rig_up(&r, 4096, 1 << 20, 16 << 10, true)) {
		free(buf);
		free(got);
		SKIP("no SO_ZEROCOPY in this kernel");
	}
	write_cmd(&r, buf, len);
	size_t have = 0;
	for (int i = 0; i < WAIT_MS && have < len + 24; i++) {
		tcp_conn_progress(r.t);
		ssize_t n = recv(r.ctrl, got + have, len + 24 - have, MSG_DONTWAIT);
		if (n > 0)
			have += (size_t)n;
		else
			poll(&(struct pollfd){.fd = r.ctrl, .events = POLLIN}, 1, 1);
	}
	CHECK_EQ(have, len + 24);
	CHECK_EQ(got[0], NVME_TCP_H2C_DATA);
	CHECK_MEM(got + 24, buf, len);
	CHECK_EQ(r.t->txn, 0);
	CHECK(r.t->zc.sends > 1); /* it did go in pieces */
	rsp(&r);
	host_waits_completion(&r);
	CHECK(got_recv(&r, IBV_WC_SUCCESS));
	CHECK(!tcp_zc_outstanding(&r.t->zc));
	CHECK(!r.t->broken);
	rig_down(&r);
	free(buf);
	free(got);
}

/* The notification came while no receive was posted: the response waits
 * in the command (the poll group's pending check sees it: nothing on the
 * socket will wake a sleeper for it) and goes into the next receive. */
TEST(released_response_waits_for_a_receive)
{
	struct rig r;
	uint32_t len = 128 << 10;
	uint8_t *buf = pattern(len);
	if (!rig_up(&r, 4096, 1 << 20, 1 << 20, false)) {
		free(buf);
		SKIP("no SO_ZEROCOPY in this kernel");
	}
	write_cmd(&r, buf, len);
	host_sends_all(&r);
	rsp(&r);
	host_reads_rsp(&r);
	ctrl_reads_h2c(&r, buf, len, 1 << 20);
	for (int i = 0; i < 100 && !r.t->zc.ready; i++) {
		struct epoll_event ev;
		epoll_wait(r.cq.epfd, &ev, 1, WAIT_MS / 100);
		tcp_conn_progress(r.t);
	}
	CHECK_EQ(r.t->zc.ready, 1);
	CHECK_EQ(r.cq.n, 0);
	struct ibv_sge sge = {.addr = (uintptr_t)r.rsp, .length = 16};
	struct ibv_recv_wr rw = {.wr_id = 78, .sg_list = &sge, .num_sge = 1}, *bad;
	CHECK_EQ(tcp_conn_post_recv(r.t, &rw, &bad), 0);
	CHECK(got_recv(&r, IBV_WC_SUCCESS));
	CHECK_EQ(r.t->zc.ready, 0);
	CHECK_EQ(get_le16(r.rsp + 12), CID);
	rig_down(&r);
	free(buf);
}

/* The connection fails with a notification outstanding: the kernel still
 * holds the write's pages and would go on sending them after the command
 * completes (flushed) and its buffer is the user's again. The socket is
 * closed at once with an RST, its write queue purged: the controller gets
 * the reset, not the rest of the payload. Every receive comes back
 * flushed, the held response is not delivered, and nothing of the
 * bookkeeping stays behind for the next connection. */
TEST(failure_with_notifications_outstanding_purges_and_flushes)
{
	struct rig r;
	uint32_t len = 128 << 10;
	uint8_t *buf = pattern(len);
	if (!rig_up(&r, 4096, 1 << 20, 1 << 20, true)) {
		free(buf);
		SKIP("no SO_ZEROCOPY in this kernel");
	}
	write_cmd(&r, buf, len);
	host_sends_all(&r);
	rsp(&r);
	host_reads_rsp(&r);
	CHECK(r.t->cmds[SLOT_OF(CID)].zc_held);
	tcp_conn_fail(r.t, "given up");
	CHECK_EQ(r.t->fd, -1); /* closed, not only shut down */
	CHECK(!got_recv(&r, IBV_WC_SUCCESS));
	CHECK(got_recv(&r, IBV_WC_WR_FLUSH_ERR));
	CHECK(!r.t->cmds[SLOT_OF(CID)].zc_held);
	CHECK_EQ(r.t->cmds[SLOT_OF(CID)].zc_out, 0);
	CHECK(!tcp_zc_outstanding(&r.t->zc));
	CHECK_EQ(r.t->zc.ready, 0);
	static uint8_t sink[1 << 20];
	size_t have = 0;
	ssize_t n;
	int e = 0;
	while ((n = recv(r.ctrl, sink, sizeof(sink), 0)) > 0)
		have += (size_t)n;
	if (n < 0)
		e = errno;
	CHECK_EQ(e, ECONNRESET);
	CHECK(have < len + 24);
	rig_down(&r);
	free(buf);
}

/* With the option off no socket error queue is read and every payload is
 * copied: the connection behaves as without the option. */
TEST(off_no_zerocopy)
{
	struct rig r;
	uint32_t len = 128 << 10;
	uint8_t *buf = pattern(len);
	if (!rig_up(&r, 0, 1 << 20, 1 << 20, true)) {
		free(buf);
		SKIP("no SO_ZEROCOPY in this kernel");
	}
	write_cmd(&r, buf, len);
	host_sends_all(&r);
	rsp(&r);
	host_reads_rsp(&r);
	CHECK(got_recv(&r, IBV_WC_SUCCESS));
	CHECK_EQ(r.t->zc.sends, 0);
	ctrl_reads_h2c(&r, buf, len, 1 << 20);
	rig_down(&r);
	free(buf);
}

/* Every send reported while the group's CQ had no room for the response:
 * the next progress, with nothing left to reap, still delivers it (the
 * release was tried only while reports were outstanding, so the response
 * stayed held and a sleeper spun on it). */
TEST(response_held_for_a_full_cq_is_delivered_once_there_is_room)
{
	struct rig r;
	uint32_t len = 128 << 10;
	uint8_t *buf = pattern(len);
	if (!rig_up(&r, 4096, 1 << 20, 1 << 20, true)) {
		free(buf);
		SKIP("no SO_ZEROCOPY in this kernel");
	}
	write_cmd(&r, buf, len);
	host_sends_all(&r);
	rsp(&r);
	host_reads_rsp(&r);
	CHECK(r.t->cmds[SLOT_OF(CID)].zc_held);
	r.cq.head = 0;
	r.cq.n = r.cq.cap; /* the other members' completions fill it */
	ctrl_reads_h2c(&r, buf, len, 1 << 20);
	for (int i = 0; i < 1000 && tcp_zc_outstanding(&r.t->zc); i++) {
		struct epoll_event ev;
		epoll_wait(r.cq.epfd, &ev, 1, WAIT_MS / 100);
		tcp_conn_progress(r.t);
	}
	CHECK(!tcp_zc_outstanding(&r.t->zc));
	CHECK_EQ(r.t->zc.ready, 1); /* reported, and waiting for room */
	r.cq.n = 0; /* the poll took them */
	tcp_conn_progress(r.t);
	CHECK(got_recv(&r, IBV_WC_SUCCESS));
	CHECK_EQ(r.t->zc.ready, 0);
	rig_down(&r);
	free(buf);
}

/* The kernel's IDs are 32 bits and wrap: 17 sends outstanding across the
 * wrap, alternating between two commands, each notified on its own. The
 * ring is indexed by ID modulo its size, which must divide 2^32, or an ID
 * before the wrap and one after it share an entry: one command's report
 * then completes the other's, and the first waits forever. */
TEST(ids_wrap_around_2_to_the_32)
{
	/* depth 16: a ring of 4 * 16 + 16 = 80 would not divide 2^32 */
	struct tcp_conn *t = tcp_conn_new(1, 16, false, false, 0);
	CHECK_EQ(tcp_zc_init(t, 4096), 0);
	struct tcp_zc *z = &t->zc;
	uint32_t first = UINT32_MAX - 8;
	z->head = z->next = first;
	for (uint32_t k = 0; k < 17; k++)
		tcp_zc_sent(t, (uint16_t)(k & 1));
	CHECK_EQ(t->cmds[0].zc_out, 9);
	CHECK_EQ(t->cmds[1].zc_out, 8);
	for (uint32_t k = 0; k < 17; k++) {
		CHECK(tcp_zc_notified(t, first + k, first + k, false));
		/* each report takes one from its own command, nothing from the other */
		CHECK_EQ(t->cmds[0].zc_out, 9 - (k + 2) / 2);
		CHECK_EQ(t->cmds[1].zc_out, 8 - (k + 1) / 2);
	}
	CHECK(!tcp_zc_outstanding(z));
	CHECK_EQ(z->head, first + 17);
	/* an ID not outstanding is refused, not counted */
	CHECK(!tcp_zc_notified(t, first + 17, first + 17, false));
	tcp_conn_free(t);
}

int main(int argc, char **argv)
{
	static const struct test_case t[] = {
		T(zerocopy_write_completes_only_after_its_notification),
		T(write_below_the_threshold_goes_by_copy),
		T(each_h2c_pdu_of_an_r2t_a_zerocopy_send_its_header_copied),
		T(partial_sends_each_take_an_id_eagain_none),
		T(released_response_waits_for_a_receive),
		T(failure_with_notifications_outstanding_purges_and_flushes),
		T(off_no_zerocopy),
		T(ids_wrap_around_2_to_the_32),
		T(response_held_for_a_full_cq_is_delivered_once_there_is_room),
	};
	return run_named_tests("tcpzc", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
