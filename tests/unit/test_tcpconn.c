/*
 * An NVMe/TCP queue's data path (core/tcp_conn.c) against a controller
 * played by the test over a socket pair: what the real target never does
 * here (nvmet's MAXH2CDATA is larger than any command we send, and it sets
 * C2HData's SUCCESS flag only with SQ flow control disabled) and what a
 * broken one might (an R2T beyond the command's data).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "protocol.h"
#include "tcp_conn.h"
#include "tcp_crc32c.h"

/* Bytes the code under test hashes (CRC32C), counted through the linker's
 * --wrap (the Makefile links this test with it) */
static uint64_t hashed;
uint32_t __real_crc32c_update(uint32_t crc, const void *p, size_t n);
uint32_t __wrap_crc32c_update(uint32_t crc, const void *p, size_t n);
uint32_t __wrap_crc32c_update(uint32_t crc, const void *p, size_t n)
{
	hashed += n;
	return __real_crc32c_update(crc, p, n);
}

struct rig {
	int host, ctrl;
	struct tcp_conn *t;
	struct tcp_cq cq;
	struct ibv_wc wc[64];
	uint8_t rsp[16];
	uint8_t sqe[64];
};

static uint16_t rig_qid = 1; /* the queue the rig's connection is */
static void rig_up_dg(struct rig *r, uint32_t maxh2cdata, bool hd, bool dd);
static void rig_up(struct rig *r, uint32_t maxh2cdata) { rig_up_dg(r, maxh2cdata, false, false); }

static void rig_up_dg(struct rig *r, uint32_t maxh2cdata, bool hd, bool dd)
{
	int sv[2];
	memset(r, 0, sizeof(*r));
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	r->host = sv[0];
	r->ctrl = sv[1];
	r->cq = (struct tcp_cq){.wc = r->wc, .cap = 64, .epfd = epoll_create1(0)};
	r->t = tcp_conn_new(rig_qid, 4, hd, dd, 0);
	struct tcp_neg n = {.maxh2cdata = maxh2cdata, .hdgst = hd, .ddgst = dd};
	tcp_conn_rx_init(r->t);
	tcp_rx_negotiated(&r->t->rx, &n);
	CHECK_EQ(tcp_conn_attach(r->t, r->host, NULL, &n, &r->cq), 0);
	struct ibv_sge sge = {.addr = (uintptr_t)r->rsp, .length = 16};
	struct ibv_recv_wr rw = {.wr_id = 77, .sg_list = &sge, .num_sge = 1}, *bad;
	CHECK_EQ(tcp_conn_post_recv(r->t, &rw, &bad), 0);
}

static void rig_down(struct rig *r)
{
	tcp_conn_free(r->t); /* closes the host's end */
	close(r->ctrl);
	close(r->cq.epfd);
}

static void send_cmd(struct rig *r, uint8_t opc, uint16_t cid, void *buf, uint32_t len)
{
	nvme_sqe_rw(r->sqe, opc, cid, 1, 0, 1);
	nvme_sqe_sgl_keyed(r->sqe, (uintptr_t)buf, len, 0);
	struct ibv_sge sge = {.addr = (uintptr_t)r->sqe, .length = 64};
	struct ibv_send_wr w = {.wr_id = 5, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED}, *bad;
	CHECK_EQ(tcp_conn_post_send(r->t, &w, &bad), 0);
	uint8_t pdu[72];
	CHECK_EQ(recv(r->ctrl, pdu, 72, MSG_WAITALL), 72);
	CHECK_EQ(pdu[0], NVME_TCP_CMD);
	CHECK_EQ(pdu[8 + 39], NVME_SGL_TYPE_TCP_TRANSPORT); /* the keyed SGL became NVMe/TCP's */
	CHECK_EQ(get_le32(pdu + 8 + 32), len);
}

/* send_cmd with a header digest on the capsule (72 + 4 bytes) */
static void send_cmd_hd(struct rig *r, uint8_t opc, uint16_t cid, void *buf, uint32_t len)
{
	nvme_sqe_rw(r->sqe, opc, cid, 1, 0, 1);
	nvme_sqe_sgl_keyed(r->sqe, (uintptr_t)buf, len, 0);
	struct ibv_sge sge = {.addr = (uintptr_t)r->sqe, .length = 64};
	struct ibv_send_wr w = {.wr_id = 5, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED}, *bad;
	CHECK_EQ(tcp_conn_post_send(r->t, &w, &bad), 0);
	uint8_t pdu[76];
	CHECK_EQ(recv(r->ctrl, pdu, 76, MSG_WAITALL), 76);
}

static void ctrl_send(struct rig *r, const void *p, size_t n) { CHECK_EQ(send(r->ctrl, p, n, MSG_NOSIGNAL), (ssize_t)n); }

/* Polls the host side while the controller side reads what it sends, up
 * to cap bytes (a send buffer cut small makes the host send in pieces);
 * returns what arrived. */
static size_t drain(struct rig *r, uint8_t *got, size_t cap)
{
	size_t have = 0;
	for (int i = 0; i < 100000 && have < cap; i++) {
		tcp_conn_progress(r->t);
		ssize_t n = recv(r->ctrl, got + have, cap - have, MSG_DONTWAIT);
		if (n > 0)
			have += (size_t)n;
	}
	return have;
}

static void r2t(struct rig *r, uint16_t cid, uint16_t ttag, uint32_t off, uint32_t len)
{
	uint8_t p[24] = {NVME_TCP_R2T, 0, 24, 0, 24};
	put_le16(p + 8, cid);
	put_le16(p + 10, ttag);
	put_le32(p + 12, off);
	put_le32(p + 16, len);
	ctrl_send(r, p, 24);
}

static void rsp(struct rig *r, uint16_t cid)
{
	uint8_t p[24] = {NVME_TCP_RSP, 0, 24, 0, 24};
	put_le16(p + 8 + 12, cid);
	ctrl_send(r, p, 24);
}

TEST(r2t_answered_in_h2c_pdus_within_maxh2cdata)
{
	static uint8_t data[16384];
	struct rig r;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	rig_up(&r, 4096);
	send_cmd(&r, NVME_CMD_WRITE, 0x0401, data, sizeof(data));
	r2t(&r, 0x0401, 9, 0, sizeof(data));
	tcp_conn_progress(r.t);
	for (uint32_t k = 0; k < 4; k++) {
		uint8_t h[24], d[4096];
		CHECK_EQ(recv(r.ctrl, h, 24, MSG_WAITALL), 24);
		CHECK_EQ(h[0], NVME_TCP_H2C_DATA);
		CHECK_EQ(h[1], k == 3 ? NVME_TCP_F_DATA_LAST : 0);
		CHECK_EQ(get_le16(h + 8), 0x0401);
		CHECK_EQ(get_le16(h + 10), 9);
		CHECK_EQ(get_le32(h + 12), k * 4096);
		CHECK_EQ(get_le32(h + 16), 4096);
		CHECK_EQ(get_le32(h + 4), 24 + 4096);
		CHECK_EQ(recv(r.ctrl, d, 4096, MSG_WAITALL), 4096);
		CHECK_MEM(d, data + k * 4096, 4096);
	}
	rsp(&r, 0x0401);
	tcp_conn_progress(r.t);
	CHECK_EQ(r.cq.n, 2); /* the send, then the response */
	CHECK(r.wc[0].opcode == IBV_WC_SEND && r.wc[0].wr_id == 5);
	CHECK(r.wc[1].opcode == IBV_WC_RECV && r.wc[1].wr_id == 77 && r.wc[1].status == IBV_WC_SUCCESS);
	CHECK_EQ(get_le16(r.rsp + 12), 0x0401);
	CHECK(!r.t->broken);
	rig_down(&r);
}

TEST(r2t_beyond_the_commands_data_ends_the_connection)
{
	static uint8_t data[8192];
	struct rig r;
	rig_up(&r, 4096);
	send_cmd(&r, NVME_CMD_WRITE, 2, data, sizeof(data));
	r2t(&r, 2, 1, 4096, 8192);
	tcp_conn_progress(r.t);
	CHECK(r.t->broken);
	CHECK(strstr(r.t->why, "R2TO and R2TL reach beyond") != NULL);
	/* the receive comes back flushed: the queue sees the loss */
	CHECK_EQ(r.cq.n, 2);
	CHECK(r.wc[1].opcode == IBV_WC_RECV && r.wc[1].status == IBV_WC_WR_FLUSH_ERR);
	rig_down(&r);
}

/* What the host sent last before it closed: an H2CTermReq, or nothing. */
static bool term_req_sent(struct rig *r, uint16_t *fes, uint32_t *fei, uint8_t *first)
{
	static uint8_t b[1 << 16];
	ssize_t n = recv(r->ctrl, b, sizeof(b), MSG_DONTWAIT);
	if (n < 24 || b[0] != NVME_TCP_H2C_TERM || b[2] != 24 || get_le32(b + 4) != (uint32_t)n ||
	    n > NVME_TCP_TERM_PLEN_MAX)
		return false;
	*fes = get_le16(b + 8);
	*fei = get_le32(b + 10);
	*first = n > 24 ? b[24] : 0xff; /* the header in error follows */
	return true;
}

/* A controller's protocol error: the host says which in an H2CTermReq
 * (Fatal Error Status, the field, the header in error) before it closes,
 * as the specification asks and SPDK's host does, so the target's log can
 * tell what was refused. */
TEST(protocol_errors_send_h2c_term_req_before_the_close)
{
	static uint8_t data[8192], buf[4096];
	uint16_t fes = 0;
	uint32_t fei = 0;
	uint8_t first = 0;
	struct rig r;
	rig_up(&r, 4096);
	send_cmd(&r, NVME_CMD_WRITE, 2, data, sizeof(data));
	r2t(&r, 2, 1, 4096, 8192); /* beyond the command's data */
	tcp_conn_progress(r.t);
	CHECK(r.t->broken);
	CHECK(term_req_sent(&r, &fes, &fei, &first));
	CHECK_EQ(fes, 4); /* Data Transfer Out of Range */
	CHECK_EQ(first, NVME_TCP_R2T);
	rig_down(&r);
	/* an R2T for a command that is not in flight: a PDU sequence error */
	rig_up(&r, 4096);
	r2t(&r, 3, 1, 0, 4096);
	tcp_conn_progress(r.t);
	CHECK(r.t->broken);
	CHECK(term_req_sent(&r, &fes, &fei, &first));
	CHECK_EQ(fes, 2);
	rig_down(&r);
	/* a header digest that does not match */
	rig_up_dg(&r, 4096, true, false);
	send_cmd_hd(&r, NVME_CMD_READ, 1, buf, sizeof(buf));
	uint8_t p[28] = {NVME_TCP_RSP, NVME_TCP_F_HDGST, 24, 0, 28};
	put_le16(p + 8 + 12, 1);
	put_le32(p + 24, 0xdeadbeef);
	ctrl_send(&r, p, 28);
	tcp_conn_progress(r.t);
	CHECK(r.t->broken);
	CHECK(term_req_sent(&r, &fes, &fei, &first));
	CHECK_EQ(fes, 3); /* Header Digest Error */
	rig_down(&r);
	/* a C2HTermReq from the controller is not answered with one */
	rig_up(&r, 4096);
	uint8_t ct[24] = {NVME_TCP_C2H_TERM, 0, 24, 0, 24};
	put_le16(ct + 8, 1);
	ctrl_send(&r, ct, 24);
	tcp_conn_progress(r.t);
	CHECK(r.t->broken);
	CHECK(!term_req_sent(&r, &fes, &fei, &first));
	rig_down(&r);
}

TEST(c2h_success_flag_completes_the_read_without_a_response)
{
	static uint8_t buf[8192];
	struct rig r;
	rig_up(&r, 4096);
	memset(buf, 0, sizeof(buf));
	send_cmd(&r, NVME_CMD_READ, 3, buf, sizeof(buf));
	uint8_t h[24] = {NVME_TCP_C2H_DATA, NVME_TCP_F_DATA_LAST | NVME_TCP_F_DATA_SUCCESS, 24, 24};
	static uint8_t d[8192];
	memset(d, 0x5a, sizeof(d));
	put_le32(h + 4, 24 + 8192);
	put_le16(h + 8, 3);
	put_le32(h + 16, 8192);
	ctrl_send(&r, h, 24);
	ctrl_send(&r, d, sizeof(d));
	/* a few passes: the payload may come in pieces */
	for (int i = 0; i < 16 && r.cq.n < 2; i++)
		tcp_conn_progress(r.t);
	CHECK_EQ(r.cq.n, 2);
	CHECK(r.wc[1].opcode == IBV_WC_RECV && r.wc[1].status == IBV_WC_SUCCESS);
	CHECK_EQ(get_le16(r.rsp + 12), 3);  /* CID */
	CHECK_EQ(get_le16(r.rsp + 14), 0);  /* status: success */
	CHECK_MEM(buf, d, sizeof(d));
	/* one PDU, counted as such (nvmeof_queue_tcp_completions) */
	CHECK_EQ(r.t->data_success, 1);
	CHECK_EQ(r.t->rsps, 0);
	rig_down(&r);
}

/* A write with its data queued behind a full send buffer. */
static void stuck_write(struct rig *r, uint8_t *buf, uint32_t len)
{
	int sz = 4096;
	setsockopt(r->host, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(r->ctrl, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	send_cmd(r, NVME_CMD_WRITE, 0x0401, buf, len);
	r2t(r, 0x0401, 9, 0, len);
	tcp_conn_progress(r->t);
	CHECK(r->t->txn > 0);
}

static bool got_recv_success(const struct rig *r)
{
	for (uint32_t i = 0; i < r->cq.n; i++)
		if (r->wc[i].opcode == IBV_WC_RECV && r->wc[i].status == IBV_WC_SUCCESS)
			return true;
	return false;
}

/* A CapsuleResp while the command's H2CData waits to be sent (a target
 * that fails a write before taking all its data): the data still goes, and
 * the response is delivered once it has left, as SPDK's host defers it
 * (completing at once would let the slot's buffer be reused while the old
 * PDUs still send from it). The connection goes on. */
TEST(rsp_while_h2c_queued_waits_for_the_data)
{
	static uint8_t big[4 << 20];
	static uint8_t sink[1 << 16];
	struct rig r;
	rig_up(&r, 1 << 22);
	stuck_write(&r, big, sizeof(big));
	uint8_t p[24] = {NVME_TCP_RSP, 0, 24, 0, 24};
	put_le16(p + 8 + 12, 0x0401);
	put_le16(p + 8 + 14, 0x0a << 1); /* an error: the target gave up on the write */
	ctrl_send(&r, p, 24);
	tcp_conn_progress(r.t);
	CHECK(!r.t->broken);
	CHECK(!got_recv_success(&r)); /* not before its data left */
	size_t drained = 0;
	uint32_t txn_at = 99;
	for (int i = 0; i < 20000 && !got_recv_success(&r); i++) {
		ssize_t n = recv(r.ctrl, sink, sizeof(sink), MSG_DONTWAIT);
		if (n > 0)
			drained += (size_t)n;
		tcp_conn_progress(r.t);
		if (got_recv_success(&r))
			txn_at = r.t->txn;
	}
	CHECK(!r.t->broken);
	CHECK(got_recv_success(&r));
	CHECK_EQ(txn_at, 0); /* all the write's PDUs had left the send queue by then */
	CHECK(drained > sizeof(big) / 2);
	CHECK_EQ(get_le16(r.rsp + 12), 0x0401);
	CHECK_EQ((get_le16(r.rsp + 14) >> 1) & 0xff, 0x0a); /* the controller's status */
	rig_down(&r);
}

/* A capsule's send completion says it left: as over RDMA, the queue takes
 * it as the command being out, so it comes no earlier. */
TEST(send_completes_when_the_capsule_leaves)
{
	static uint8_t big[4 << 20], rd[512];
	struct rig r;
	rig_up(&r, 1 << 22);
	stuck_write(&r, big, sizeof(big));
	uint32_t before = r.cq.n;
	nvme_sqe_rw(r.sqe, NVME_CMD_READ, 0x0402, 1, 0, 1);
	nvme_sqe_sgl_keyed(r.sqe, (uintptr_t)rd, sizeof(rd), 0);
	struct ibv_sge sge = {.addr = (uintptr_t)r.sqe, .length = 64};
	struct ibv_send_wr w = {.wr_id = 6, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED}, *bad;
	CHECK_EQ(tcp_conn_post_send(r.t, &w, &bad), 0);
	CHECK_EQ(r.cq.n, before); /* queued behind the write's data */
	static uint8_t sink[1 << 16];
	size_t got = 0, want = sizeof(big) + 24 + 72;
	while (got < want && !r.t->broken) {
		ssize_t n = recv(r.ctrl, sink, sizeof(sink), MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
		tcp_conn_progress(r.t);
	}
	CHECK_EQ(got, want);
	CHECK_EQ(r.cq.n, before + 1);
	CHECK(r.wc[before].opcode == IBV_WC_SEND && r.wc[before].wr_id == 6);
	CHECK(!r.t->broken);
	rig_down(&r);
}

/* A lost connection flushes a capsule still queued, as a QP's error does. */
TEST(queued_capsule_flushed_when_the_connection_fails)
{
	static uint8_t big[4 << 20], rd[512];
	struct rig r;
	rig_up(&r, 1 << 22);
	stuck_write(&r, big, sizeof(big));
	uint32_t before = r.cq.n;
	nvme_sqe_rw(r.sqe, NVME_CMD_READ, 0x0402, 1, 0, 1);
	nvme_sqe_sgl_keyed(r.sqe, (uintptr_t)rd, sizeof(rd), 0);
	struct ibv_sge sge = {.addr = (uintptr_t)r.sqe, .length = 64};
	struct ibv_send_wr w = {.wr_id = 6, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED}, *bad;
	CHECK_EQ(tcp_conn_post_send(r.t, &w, &bad), 0);
	tcp_conn_fail(r.t, "test");
	bool flushed = false;
	for (uint32_t i = before; i < r.cq.n; i++)
		if (r.wc[i].opcode == IBV_WC_SEND && r.wc[i].wr_id == 6)
			flushed = r.wc[i].status == IBV_WC_WR_FLUSH_ERR;
	CHECK(flushed);
	rig_down(&r);
}

/* An R2T that rewinds over data already sent (the kernel host: "unexpected
 * r2t offset") */
TEST(r2t_rewinding_ends_the_connection)
{
	static uint8_t data[8192];
	struct rig r;
	rig_up(&r, 4096);
	send_cmd(&r, NVME_CMD_WRITE, 2, data, sizeof(data));
	r2t(&r, 2, 1, 0, 4096);
	tcp_conn_progress(r.t);
	uint8_t h[24 + 4096];
	CHECK_EQ(recv(r.ctrl, h, sizeof(h), MSG_WAITALL), (ssize_t)sizeof(h));
	CHECK_EQ(h[0], NVME_TCP_H2C_DATA);
	r2t(&r, 2, 2, 0, 4096);
	tcp_conn_progress(r.t);
	CHECK(r.t->broken);
	CHECK(strstr(r.t->why, "R2TO") != NULL);
	rig_down(&r);
}

TEST(r2t_skipping_ahead_ends_the_connection)
{
	static uint8_t data[8192];
	struct rig r;
	rig_up(&r, 4096);
	send_cmd(&r, NVME_CMD_WRITE, 2, data, sizeof(data));
	r2t(&r, 2, 1, 4096, 4096);
	tcp_conn_progress(r.t);
	CHECK(r.t->broken);
	CHECK(strstr(r.t->why, "R2TO") != NULL);
	rig_down(&r);
}

/* Its data went in the capsule: an R2T for it would send it twice. */
TEST(r2t_for_in_capsule_data_ends_the_connection)
{
	static uint8_t data[512];
	struct rig r;
	rig_up(&r, 4096);
	r.t->icd_max = 4096;
	nvme_sqe_rw(r.sqe, NVME_CMD_WRITE, 2, 1, 0, 1);
	nvme_sqe_sgl_keyed(r.sqe, (uintptr_t)data, sizeof(data), 0);
	struct ibv_sge sge = {.addr = (uintptr_t)r.sqe, .length = 64};
	struct ibv_send_wr w = {.wr_id = 5, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED}, *bad;
	CHECK_EQ(tcp_conn_post_send(r.t, &w, &bad), 0);
	uint8_t pdu[72 + sizeof(data)];
	CHECK_EQ(recv(r.ctrl, pdu, sizeof(pdu), MSG_WAITALL), (ssize_t)sizeof(pdu));
	CHECK_EQ(pdu[8 + 39], NVME_SGL_TYPE_DATA_OFFSET);
	r2t(&r, 2, 1, 0, sizeof(data));
	tcp_conn_progress(r.t);
	CHECK(r.t->broken);
	CHECK(strstr(r.t->why, "in the capsule") != NULL);
	rig_down(&r);
}

static void c2h(struct rig *r, uint16_t cid, uint8_t flags, uint32_t off, const uint8_t *d, uint32_t len)
{
	uint8_t h[24] = {NVME_TCP_C2H_DATA, flags, 24, 24};
	put_le32(h + 4, 24 + len);
	put_le16(h + 8, cid);
	put_le32(h + 12, off);
	put_le32(h + 16, len);
	ctrl_send(r, h, 24);
	ctrl_send(r, d, len);
	for (int i = 0; i < 16 && !r->t->broken; i++)
		tcp_conn_progress(r->t);
}

/* A Fabrics command's data (Connect's 1024 bytes, DH-HMAC-CHAP messages)
 * goes in the capsule up to 8 KiB on any queue, as the kernel's host
 * sends it (NVME_TCP_ADMIN_CCSZ for every Fabrics command), even where the
 * I/O queue's in-capsule size (IOCCSZ) is smaller: a target may expect it
 * there. An ordinary write of the same size still waits for an R2T. */
TEST(fabrics_data_goes_in_the_capsule_up_to_8k_on_io_queues)
{
	static uint8_t data[1024];
	struct rig r;
	rig_up(&r, 4096); /* the rig's queue 1 takes no in-capsule data (icd_max 0) */
	struct timeval tv = {2, 0}; /* a capsule without its data: fail, not hang */
	setsockopt(r.ctrl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	memset(data, 0x3c, sizeof(data));
	uint8_t sqe[64] = {NVME_FABRICS_OPCODE};
	sqe[4] = 0x01; /* FCTYPE Connect */
	put_le16(sqe + 2, 1);
	nvme_sqe_sgl_keyed(sqe, (uintptr_t)data, sizeof(data), 0);
	struct ibv_sge sge = {.addr = (uintptr_t)sqe, .length = 64};
	struct ibv_send_wr w = {.wr_id = 5, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED}, *bad;
	CHECK_EQ(tcp_conn_post_send(r.t, &w, &bad), 0);
	static uint8_t pdu[72 + 1024];
	CHECK_EQ(recv(r.ctrl, pdu, 72, MSG_WAITALL), 72);
	CHECK_EQ(pdu[0], NVME_TCP_CMD);
	CHECK_EQ(get_le32(pdu + 4), 72 + 1024);            /* PLEN: the data follows */
	CHECK_EQ(pdu[8 + 39], NVME_SGL_TYPE_DATA_OFFSET);  /* in-capsule SGL */
	CHECK_EQ(recv(r.ctrl, pdu + 72, 1024, MSG_WAITALL), 1024);
	CHECK_MEM(pdu + 72, data, 1024);
	rig_down(&r);
}

/* A C2HData with data digest on; bad: its digest does not match */
static void c2h_dd(struct rig *r, uint16_t cid, uint8_t flags, uint32_t off, const uint8_t *d, uint32_t len, bool bad)
{
	uint8_t h[24] = {NVME_TCP_C2H_DATA, (uint8_t)(flags | NVME_TCP_F_DDGST), 24, 24};
	uint8_t dg[4];
	put_le32(h + 4, 24 + len + 4);
	put_le16(h + 8, cid);
	put_le32(h + 12, off);
	put_le32(h + 16, len);
	put_le32(dg, crc32c(d, len) ^ (bad ? 0x10u : 0));
	ctrl_send(r, h, 24);
	ctrl_send(r, d, len);
	ctrl_send(r, dg, 4);
	for (int i = 0; i < 16 && !r->t->broken; i++)
		tcp_conn_progress(r->t);
}

static void post_recv(struct rig *r)
{
	struct ibv_sge sge = {.addr = (uintptr_t)r->rsp, .length = 16};
	struct ibv_recv_wr rw = {.wr_id = 78, .sg_list = &sge, .num_sge = 1}, *bad;
	CHECK_EQ(tcp_conn_post_recv(r->t, &rw, &bad), 0);
}

/* A data digest error fails that command alone, as the kernel's and SPDK's
 * hosts do: its completion says Transient Transport Error (retryable, no
 * DNR), whatever the controller answered, and the connection goes on: the
 * next read on it succeeds. The SUCCESS flag's completion says so too. */
TEST(c2h_data_digest_error_fails_that_command_and_keeps_the_connection)
{
	static uint8_t buf[8192], d[4096];
	struct rig r;
	rig_up_dg(&r, 4096, false, true);
	memset(d, 0x6b, sizeof(d));
	send_cmd(&r, NVME_CMD_READ, 3, buf, 8192);
	c2h_dd(&r, 3, 0, 0, d, 4096, true);
	c2h_dd(&r, 3, NVME_TCP_F_DATA_LAST, 4096, d, 4096, false);
	CHECK(!r.t->broken);
	rsp(&r, 3); /* the controller's success */
	for (int i = 0; i < 16 && r.cq.n < 2; i++)
		tcp_conn_progress(r.t);
	CHECK(!r.t->broken);
	CHECK_EQ(r.cq.n, 2);
	CHECK_EQ(get_le16(r.rsp + 12), 3);
	uint16_t st = get_le16(r.rsp + 14) >> 1;
	CHECK_EQ(st & 0xff, 0x22);       /* Transient Transport Error */
	CHECK_EQ((st >> 8) & 7, 0);      /* generic */
	CHECK_EQ(st >> 14, 0);           /* no DNR: retryable */
	/* the connection goes on: a good read on it completes with success */
	r.cq.n = 0;
	post_recv(&r);
	send_cmd(&r, NVME_CMD_READ, 2, buf, 4096);
	c2h_dd(&r, 2, NVME_TCP_F_DATA_LAST, 0, d, 4096, false);
	rsp(&r, 2);
	for (int i = 0; i < 16 && r.cq.n < 2; i++)
		tcp_conn_progress(r.t);
	CHECK(!r.t->broken);
	CHECK_EQ(r.cq.n, 2);
	CHECK_EQ(get_le16(r.rsp + 12), 2);
	CHECK_EQ(get_le16(r.rsp + 14), 0);
	CHECK_MEM(buf, d, 4096);
	/* SUCCESS on the PDU whose digest failed: no success completes */
	r.cq.n = 0;
	post_recv(&r);
	send_cmd(&r, NVME_CMD_READ, 1, buf, 4096);
	c2h_dd(&r, 1, NVME_TCP_F_DATA_LAST | NVME_TCP_F_DATA_SUCCESS, 0, d, 4096, true);
	for (int i = 0; i < 16 && r.cq.n < 2; i++)
		tcp_conn_progress(r.t);
	CHECK(!r.t->broken);
	CHECK_EQ(r.cq.n, 2);
	CHECK_EQ(get_le16(r.rsp + 12), 1);
	CHECK_EQ((get_le16(r.rsp + 14) >> 1) & 0xff, 0x22);
	rig_down(&r);
}

/* Data out of order (a gap the SUCCESS flag would report as read) */
TEST(c2h_out_of_order_ends_the_connection)
{
	static uint8_t buf[8192], d[4096];
	struct rig r;
	rig_up(&r, 4096);
	send_cmd(&r, NVME_CMD_READ, 3, buf, sizeof(buf));
	c2h(&r, 3, 0, 4096, d, sizeof(d));
	CHECK(r.t->broken);
	CHECK(strstr(r.t->why, "DATAO") != NULL);
	rig_down(&r);
}

/* SUCCESS with half the data: the read must not complete with stale bytes */
TEST(c2h_success_before_all_the_data_ends_the_connection)
{
	static uint8_t buf[8192], d[4096];
	struct rig r;
	rig_up(&r, 4096);
	send_cmd(&r, NVME_CMD_READ, 3, buf, sizeof(buf));
	c2h(&r, 3, NVME_TCP_F_DATA_LAST | NVME_TCP_F_DATA_SUCCESS, 0, d, sizeof(d));
	CHECK(r.t->broken);
	CHECK(strstr(r.t->why, "SUCCESS") != NULL);
	CHECK(!got_recv_success(&r));
	rig_down(&r);
}

/* SUCCESS after fewer bytes than the buffer where the controller chooses
 * the length: an admin command's answer within its allocation length
 * (SPDK's target sends an AUTH_Receive's message alone) and a vendor
 * command reading on an I/O queue complete, as over RDMA, the buffer past
 * the data untouched; a Read's short data ends the connection (above). */
TEST(c2h_success_after_a_short_transfer_of_a_length_the_controller_chooses)
{
	static uint8_t buf[4096], d[512];
	memset(d, 0x5a, sizeof(d));
	for (int admin = 0; admin < 2; admin++) {
		struct rig r;
		rig_qid = admin ? 0 : 1;
		rig_up(&r, 4096);
		memset(buf, 0xee, sizeof(buf));
		/* Get Log Page on the admin queue (02h, a Read's number on an I/O queue),
		 * a vendor read (82h) on an I/O one */
		send_cmd(&r, admin ? 0x02 : 0x82, 3, buf, sizeof(buf));
		c2h(&r, 3, NVME_TCP_F_DATA_LAST | NVME_TCP_F_DATA_SUCCESS, 0, d, sizeof(d));
		printf("    %s: %s\n", admin ? "admin queue" : "I/O queue, vendor read", r.t->broken ? r.t->why : "completed");
		CHECK(!r.t->broken);
		CHECK(got_recv_success(&r));
		CHECK_EQ(get_le16(r.rsp + 12), 3);
		CHECK_MEM(buf, d, sizeof(d));
		CHECK_EQ(buf[sizeof(d)], 0xee);
		rig_down(&r);
	}
	rig_qid = 1;
}

/* A Read's data short of its blocks, then a CapsuleResp: a success would
 * pass the buffer's old bytes as read, so it ends the connection (with no
 * data at all too); an error status after short data is the controller's
 * answer and is taken. */
TEST(capsule_resp_with_success_after_a_short_read_ends_the_connection)
{
	static uint8_t buf[4096], d[512];
	for (int k = 0; k < 3; k++) {
		struct rig r;
		rig_up(&r, 4096);
		send_cmd(&r, NVME_CMD_READ, 3, buf, sizeof(buf));
		if (k != 1)
			c2h(&r, 3, NVME_TCP_F_DATA_LAST, 0, d, sizeof(d));
		uint8_t p[24] = {NVME_TCP_RSP, 0, 24, 0, 24, 0, 0, 0};
		put_le16(p + 8 + 12, 3);
		if (k == 2)
			put_le16(p + 8 + 14, 0x0281 << 1); /* Unrecovered Read Error */
		ctrl_send(&r, p, 24);
		for (int i = 0; i < 16 && !r.t->broken && !got_recv_success(&r); i++)
			tcp_conn_progress(r.t);
		printf("    %s: %s\n", k == 0 ? "512 of 4096 bytes, success" : k == 1 ? "no data, success" : "512 bytes, an error",
		       r.t->broken ? r.t->why : "completed");
		CHECK_EQ(r.t->broken, k != 2);
		CHECK_EQ(got_recv_success(&r), k == 2);
		rig_down(&r);
	}
}

/* A C2HTermReq is the controller's last word: its reason (the Fatal Error
 * Status by name) is what the connection's end reports, with header
 * digests on too (a TermReq has none, and is 24 bytes without data). */
TEST(c2h_term_req_names_its_reason_with_and_without_header_digest)
{
	for (int hd = 0; hd < 2; hd++) {
		struct rig r;
		rig_up_dg(&r, 4096, hd, false);
		uint8_t t[24] = {NVME_TCP_C2H_TERM, 0, 24, 0, 24, 0, 0, 0, 0x03, 0x00, 0x08, 0, 0, 0};
		ctrl_send(&r, t, sizeof(t));
		shutdown(r.ctrl, SHUT_WR); /* and the controller closes */
		for (int i = 0; i < 16 && !r.t->broken; i++)
			tcp_conn_progress(r.t);
		CHECK(r.t->broken);
		printf("    header digest %s: %s\n", hd ? "on" : "off", r.t->why);
		CHECK(strstr(r.t->why, "C2HTermReq") != NULL);
		CHECK(strstr(r.t->why, "Header Digest Error") != NULL);
		/* the connection ends cleanly: the receive comes back flushed */
		CHECK_EQ(r.cq.n, 1);
		CHECK(r.wc[0].opcode == IBV_WC_RECV && r.wc[0].status == IBV_WC_WR_FLUSH_ERR);
		rig_down(&r);
	}
}

/* SUCCESS on a queue with SQ flow control on (disable_sqflow off): taken,
 * as the kernel's host and SPDK's take it from older SPDK targets, and the
 * completion carries the last SQ head pointer the controller reported, not
 * a made-up 0. */
TEST(c2h_success_with_sq_flow_control_on_keeps_the_last_sqhd)
{
	static uint8_t buf[4096], d[4096];
	struct rig r;
	rig_up(&r, 4096);
	send_cmd(&r, 0x82, 3, buf, sizeof(buf)); /* a vendor read that moves nothing */
	uint8_t p[24] = {NVME_TCP_RSP, 0, 24, 0, 24, 0, 0, 0};
	put_le16(p + 8 + 8, 17); /* SQHD */
	put_le16(p + 8 + 12, 3);
	ctrl_send(&r, p, 24);
	for (int i = 0; i < 16 && r.cq.n < 2; i++)
		tcp_conn_progress(r.t);
	CHECK_EQ(r.cq.n, 2);
	CHECK_EQ(get_le16(r.rsp + 8), 17);
	struct ibv_sge sge = {.addr = (uintptr_t)r.rsp, .length = 16};
	struct ibv_recv_wr rw = {.wr_id = 78, .sg_list = &sge, .num_sge = 1}, *bad;
	CHECK_EQ(tcp_conn_post_recv(r.t, &rw, &bad), 0);
	memset(r.rsp, 0xff, sizeof(r.rsp));
	send_cmd(&r, NVME_CMD_READ, 0x0403, buf, sizeof(buf));
	memset(d, 0x6b, sizeof(d));
	c2h(&r, 0x0403, NVME_TCP_F_DATA_LAST | NVME_TCP_F_DATA_SUCCESS, 0, d, sizeof(d));
	CHECK(!r.t->broken);
	CHECK(got_recv_success(&r));
	CHECK_EQ(get_le16(r.rsp + 12), 0x0403); /* CID */
	CHECK_EQ(get_le16(r.rsp + 14), 0);      /* success */
	CHECK_EQ(get_le16(r.rsp + 10), 1);      /* SQ ID: the queue's */
	CHECK_EQ(get_le16(r.rsp + 8), 17);      /* SQHD: the last reported */
	CHECK_MEM(buf, d, sizeof(d));
	CHECK_EQ(r.t->rsps, 1);
	CHECK_EQ(r.t->data_success, 1);
	rig_down(&r);
}

/* A stream as a controller writes it, built in memory so the test chooses
 * where the socket's reads may cut it. */
struct stream {
	uint8_t b[3 * (24 + 4096 + 24)];
	size_t n;
};

static void put_c2h(struct stream *s, uint16_t cid, const uint8_t *d, uint32_t len)
{
	uint8_t *h = s->b + s->n;
	memset(h, 0, 24);
	h[0] = NVME_TCP_C2H_DATA;
	h[1] = NVME_TCP_F_DATA_LAST;
	h[2] = h[3] = 24;
	put_le32(h + 4, 24 + len);
	put_le16(h + 8, cid);
	put_le32(h + 16, len);
	memcpy(h + 24, d, len);
	s->n += 24 + len;
}

static void put_rsp(struct stream *s, uint16_t cid)
{
	uint8_t *h = s->b + s->n;
	memset(h, 0, 24);
	h[0] = NVME_TCP_RSP;
	h[2] = h[4] = 24;
	put_le16(h + 8 + 12, cid);
	s->n += 24;
}

/* three reads (opc) of 4 KiB each, their data and responses in one stream */
static void three_reads_of(struct rig *r, uint8_t opc, uint8_t buf[3][4096], uint8_t d[3][4096], struct stream *s)
{
	s->n = 0;
	for (uint16_t k = 0; k < 3; k++) {
		memset(buf[k], 0, 4096);
		memset(d[k], 0x31 + k, 4096);
		send_cmd(r, opc, k, buf[k], 4096);
	}
	for (uint16_t k = 0; k < 3; k++) {
		put_c2h(s, k, d[k], 4096);
		put_rsp(s, k);
	}
}

static void three_reads(struct rig *r, uint8_t buf[3][4096], uint8_t d[3][4096], struct stream *s)
{
	three_reads_of(r, NVME_CMD_READ, buf, d, s);
}

static void more_recvs(struct rig *r, uint8_t rsps[][16], uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		struct ibv_sge sge = {.addr = (uintptr_t)rsps[k], .length = 16};
		struct ibv_recv_wr rw = {.wr_id = 100 + k, .sg_list = &sge, .num_sge = 1}, *bad;
		CHECK_EQ(tcp_conn_post_recv(r->t, &rw, &bad), 0);
	}
}

static uint32_t recv_successes(const struct rig *r)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < r->cq.n; i++)
		n += r->wc[i].opcode == IBV_WC_RECV && r->wc[i].status == IBV_WC_SUCCESS;
	return n;
}

/* Responses waiting together in the socket: one read takes them all. */
TEST(several_responses_in_one_read)
{
	static uint8_t buf[3][4096], d[3][4096], rsps[2][16];
	static struct stream s;
	struct rig r;
	rig_up(&r, 4096);
	more_recvs(&r, rsps, 2);
	three_reads_of(&r, 0x82, buf, d, &s); /* vendor reads: responses alone are their whole answer */
	s.n = 0;
	for (uint16_t k = 0; k < 3; k++)
		put_rsp(&s, k);
	ctrl_send(&r, s.b, s.n);
	uint64_t before = r.t->reads;
	tcp_conn_progress(r.t);
	CHECK_EQ(r.t->reads - before, 1);
	CHECK_EQ(recv_successes(&r), 3);
	CHECK_EQ(get_le16(rsps[1] + 12), 2);
	rig_down(&r);
}

/* Small payloads come from the read-ahead with their headers: the three
 * reads' data and responses, all in the socket, cost one read between them
 * (a read per payload would be a system call per I/O at QD1 and at depth). */
TEST(small_payloads_come_with_their_headers_in_one_read)
{
	static uint8_t buf[3][4096], d[3][4096], rsps[2][16];
	static struct stream s;
	struct rig r;
	rig_up(&r, 4096);
	more_recvs(&r, rsps, 2);
	three_reads(&r, buf, d, &s);
	ctrl_send(&r, s.b, s.n);
	uint64_t before = r.t->reads;
	tcp_conn_progress(r.t);
	CHECK_EQ(r.t->reads - before, 1);
	CHECK_EQ(recv_successes(&r), 3);
	for (int k = 0; k < 3; k++)
		CHECK_MEM(buf[k], d[k], 4096);
	/* each response where it belongs */
	CHECK_EQ(get_le16(r.rsp + 12), 0);
	CHECK_EQ(get_le16(rsps[0] + 12), 1);
	CHECK_EQ(get_le16(rsps[1] + 12), 2);
	CHECK(!r.t->broken && !tcp_conn_staged(r.t));
	rig_down(&r);
}

/* Large payloads go straight into their buffers: once a large one came,
 * the next is read ahead by no more than the small stage, not copied twice. */
TEST(large_payloads_go_straight_into_their_buffers)
{
	enum { LEN = 64 << 10 };
	static uint8_t buf[2][LEN], d[2][LEN], s[2 * (24 + LEN + 24)], rsps[2][16];
	struct rig r;
	rig_up(&r, 4096);
	more_recvs(&r, rsps, 2);
	size_t n = 0;
	for (uint16_t k = 0; k < 2; k++) {
		memset(d[k], 0x51 + k, LEN);
		send_cmd(&r, NVME_CMD_READ, k, buf[k], LEN);
	}
	for (uint16_t k = 0; k < 2; k++) {
		uint8_t *h = s + n;
		memset(h, 0, 24);
		h[0] = NVME_TCP_C2H_DATA;
		h[1] = NVME_TCP_F_DATA_LAST;
		h[2] = h[3] = 24;
		put_le32(h + 4, 24 + LEN);
		put_le16(h + 8, k);
		put_le32(h + 16, LEN);
		memcpy(h + 24, d[k], LEN);
		n += 24 + LEN;
		memset(s + n, 0, 24);
		s[n] = NVME_TCP_RSP;
		s[n + 2] = s[n + 4] = 24;
		put_le16(s + n + 8 + 12, k);
		n += 24;
	}
	/* the first read and response, then the second */
	ctrl_send(&r, s, n / 2);
	for (int i = 0; i < 16 && recv_successes(&r) < 1; i++)
		tcp_conn_progress(r.t);
	CHECK_EQ(recv_successes(&r), 1);
	uint64_t ahead = r.t->ra_bytes;
	ctrl_send(&r, s + n / 2, n / 2);
	for (int i = 0; i < 16 && recv_successes(&r) < 2; i++)
		tcp_conn_progress(r.t);
	CHECK_EQ(recv_successes(&r), 2);
	CHECK_MEM(buf[0], d[0], LEN);
	CHECK_MEM(buf[1], d[1], LEN);
	CHECK(r.t->ra_bytes - ahead <= 2 * 512);
	CHECK(!r.t->broken && !tcp_conn_staged(r.t));
	rig_down(&r);
}

/* The same stream cut inside headers, payloads and digests' places: every
 * piece is parsed as it comes, nothing completes early. */
TEST(pdus_split_across_reads)
{
	static uint8_t buf[3][4096], d[3][4096], rsps[2][16];
	static struct stream s;
	/* inside the first header, inside its payload, inside the response,
	 * a cut exactly at a PDU's end, inside the third payload */
	static const size_t cuts[] = {5, 23, 24 + 1000, 24 + 4096 + 10, 2 * (24 + 4096 + 24), 2 * 4144 + 24 + 3000};
	struct rig r;
	rig_up(&r, 4096);
	more_recvs(&r, rsps, 2);
	three_reads(&r, buf, d, &s);
	size_t at = 0;
	for (size_t i = 0; i <= sizeof(cuts) / sizeof(cuts[0]); i++) {
		size_t end = i < sizeof(cuts) / sizeof(cuts[0]) ? cuts[i] : s.n;
		ctrl_send(&r, s.b + at, end - at);
		at = end;
		tcp_conn_progress(r.t);
		CHECK(!r.t->broken);
		/* a read completes once its response is whole */
		CHECK_EQ(recv_successes(&r), at >= s.n ? 3u : at / 4144);
	}
	for (int k = 0; k < 3; k++)
		CHECK_MEM(buf[k], d[k], 4096);
	CHECK_EQ(get_le16(rsps[1] + 12), 2);
	rig_down(&r);
}

/* Responses read ahead of the receives posted for them: they wait in the
 * connection, not in the socket, and go on once receives are posted, with
 * nothing more arriving; meanwhile the connection says it has work, so a
 * poll group does not sleep on a socket that will never wake it. */
TEST(read_ahead_waits_for_receives)
{
	static uint8_t buf[3][4096], d[3][4096], rsps[2][16];
	static struct stream s;
	struct rig r;
	rig_up(&r, 4096);
	three_reads(&r, buf, d, &s);
	ctrl_send(&r, s.b, s.n);
	tcp_conn_progress(r.t);
	CHECK_EQ(recv_successes(&r), 1);
	CHECK(tcp_conn_staged(r.t));
	more_recvs(&r, rsps, 2);
	tcp_conn_progress(r.t);
	CHECK_EQ(recv_successes(&r), 3);
	CHECK(!tcp_conn_staged(r.t));
	for (int k = 0; k < 3; k++)
		CHECK_MEM(buf[k], d[k], 4096);
	CHECK_EQ(get_le16(rsps[1] + 12), 2);
	rig_down(&r);
}

/* A socket the poll group's epoll set refuses would never wake a sleeper:
 * the attach fails, naming why, and the socket is closed. */
TEST(attach_refused_by_the_epoll_set_fails_and_closes_the_socket)
{
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct ibv_wc wc[4];
	struct tcp_cq cq = {.wc = wc, .cap = 4, .epfd = epoll_create1(0)};
	close(cq.epfd); /* a descriptor epoll_ctl cannot use */
	struct tcp_conn *t = tcp_conn_new(1, 4, false, false, 0);
	struct tcp_neg n = {.maxh2cdata = 65536};
	tcp_conn_rx_init(t);
	tcp_rx_negotiated(&t->rx, &n);
	CHECK_EQ(tcp_conn_attach(t, sv[0], NULL, &n, &cq), -EBADF);
	CHECK_EQ(t->fd, -1);
	CHECK(fcntl(sv[0], F_GETFD) < 0); /* closed */
	tcp_conn_free(t);
	close(sv[1]);
}

/* An H2CData PDU as the controller reads it: its header names the command,
 * the tag and the offset, its payload is the command's data there, and its
 * digest (when negotiated) is that payload's. */
static void check_h2c(const uint8_t *p, uint16_t cid, uint16_t ttag, uint32_t off, uint32_t len, bool last,
		      const uint8_t *data, bool dd)
{
	CHECK_EQ(p[0], NVME_TCP_H2C_DATA);
	CHECK_EQ(p[1], (last ? NVME_TCP_F_DATA_LAST : 0) | (dd ? NVME_TCP_F_DDGST : 0));
	CHECK_EQ(get_le16(p + 8), cid);
	CHECK_EQ(get_le16(p + 10), ttag);
	CHECK_EQ(get_le32(p + 12), off);
	CHECK_EQ(get_le32(p + 16), len);
	CHECK_EQ(get_le32(p + 4), 24 + len + (dd ? 4 : 0));
	CHECK_MEM(p + 24, data + off, len);
	if (dd)
		CHECK_EQ(get_le32(p + 24 + len), crc32c(data + off, len));
}

/* The PDUs an R2T asks for go in one send, not one each: a target with a
 * MAXH2CDATA below the writes' size is answered as cheaply as one above. */
TEST(an_r2ts_h2c_pdus_go_in_one_send)
{
	static uint8_t data[16384], got[4 * (24 + 4096 + 4)];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + 1);
	for (int dd = 0; dd < 2; dd++) {
		struct rig r;
		rig_up_dg(&r, 4096, false, dd);
		send_cmd(&r, NVME_CMD_WRITE, 0x0401, data, sizeof(data));
		r2t(&r, 0x0401, 9, 0, sizeof(data));
		uint64_t sends = r.t->send_calls;
		tcp_conn_progress(r.t);
		CHECK_EQ(r.t->send_calls - sends, 1);
		size_t pl = 24 + 4096 + (dd ? 4 : 0);
		CHECK_EQ(recv(r.ctrl, got, 4 * pl, MSG_WAITALL), (ssize_t)(4 * pl));
		for (uint32_t k = 0; k < 4; k++)
			check_h2c(got + k * pl, 0x0401, 9, k * 4096, 4096, k == 3, data, dd);
		CHECK_EQ(recv(r.ctrl, got, 1, MSG_DONTWAIT), -1); /* nothing more */
		CHECK(!r.t->broken && !r.t->txn);
		rig_down(&r);
	}
}

/* The R2Ts one read brings are answered together: their H2CData PDUs go in
 * one send at the end of the poll, not one send per R2T. */
TEST(r2ts_of_one_read_are_answered_in_one_send)
{
	static uint8_t a[8192], b[8192], got[2 * (24 + 8192)];
	memset(a, 0xa5, sizeof(a));
	memset(b, 0x5b, sizeof(b));
	struct rig r;
	rig_up(&r, 65536);
	send_cmd(&r, NVME_CMD_WRITE, 1, a, sizeof(a));
	send_cmd(&r, NVME_CMD_WRITE, 2, b, sizeof(b));
	r2t(&r, 1, 7, 0, sizeof(a));
	r2t(&r, 2, 8, 0, sizeof(b));
	uint64_t sends = r.t->send_calls;
	tcp_conn_progress(r.t);
	CHECK_EQ(r.t->send_calls - sends, 1);
	CHECK_EQ(recv(r.ctrl, got, sizeof(got), MSG_WAITALL), (ssize_t)sizeof(got));
	check_h2c(got, 1, 7, 0, 8192, true, a, false);
	check_h2c(got + 24 + 8192, 2, 8, 0, 8192, true, b, false);
	rig_down(&r);
}

/* A socket that takes only part of a gathered send: the rest goes in later
 * sends, byte for byte what one would have carried (headers, payloads and
 * digests of the PDUs the partial send cut). Each PDU's data digest is
 * computed once, however many sends and refused sends it takes. */
TEST(gathered_h2c_pdus_cut_by_a_full_socket_go_whole_later)
{
	enum { LEN = 256 << 10, MAXH2C = 4096, PL = 24 + MAXH2C + 4, NPDU = LEN / MAXH2C };
	static uint8_t data[LEN], got[NPDU * PL];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + (i >> 12));
	struct rig r;
	rig_up_dg(&r, MAXH2C, false, true);
	int small = 8192;
	CHECK_EQ(setsockopt(r.host, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	send_cmd(&r, NVME_CMD_WRITE, 3, data, sizeof(data));
	r2t(&r, 3, 4, 0, sizeof(data));
	uint64_t sends = r.t->send_calls;
	hashed = 0;
	CHECK_EQ(drain(&r, got, sizeof(got)), sizeof(got));
	CHECK(r.t->send_calls - sends > 1); /* the socket did cut it */
	CHECK_EQ(hashed, (uint64_t)LEN); /* the R2T has no digest: only the payloads */
	for (uint32_t k = 0; k < NPDU; k++)
		check_h2c(got + k * PL, 3, 4, k * MAXH2C, MAXH2C, k == NPDU - 1, data, true);
	CHECK(!r.t->broken && !r.t->txn);
	rig_down(&r);
}

/* Two writes' R2Ts, each more PDUs than a send gathers, cut by a full
 * socket: the PDUs built ahead for a later send are those it sends, in
 * order across both commands, each payload hashed once. */
TEST(two_r2ts_cut_by_a_full_socket_hash_each_payload_once)
{
	enum { LEN = 192 << 10, MAXH2C = 2048, PL = 24 + MAXH2C + 4, NPDU = LEN / MAXH2C };
	static uint8_t a[LEN], b[LEN], got[2 * NPDU * PL];
	for (size_t i = 0; i < LEN; i++)
		a[i] = (uint8_t)(i * 7 + (i >> 11)), b[i] = (uint8_t)(i * 11 + 3);
	struct rig r;
	rig_up_dg(&r, MAXH2C, false, true);
	int small = 8192;
	CHECK_EQ(setsockopt(r.host, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	send_cmd(&r, NVME_CMD_WRITE, 1, a, LEN);
	send_cmd(&r, NVME_CMD_WRITE, 2, b, LEN);
	r2t(&r, 1, 5, 0, LEN);
	r2t(&r, 2, 6, 0, LEN);
	hashed = 0;
	CHECK_EQ(drain(&r, got, sizeof(got)), sizeof(got));
	CHECK_EQ(hashed, 2ull * LEN);
	for (uint32_t k = 0; k < NPDU; k++) {
		check_h2c(got + k * PL, 1, 5, k * MAXH2C, MAXH2C, k == NPDU - 1, a, true);
		check_h2c(got + (NPDU + k) * PL, 2, 6, k * MAXH2C, MAXH2C, k == NPDU - 1, b, true);
	}
	CHECK(!r.t->broken && !r.t->txn);
	rig_down(&r);
}

/* A poll on a queue whose socket is full, with nothing to read, tries one
 * send: the read queued nothing that a second try could add. */
TEST(a_full_socket_costs_one_send_per_poll)
{
	enum { LEN = 256 << 10 };
	static uint8_t data[LEN];
	struct rig r;
	rig_up_dg(&r, 4096, false, true);
	int small = 8192;
	CHECK_EQ(setsockopt(r.host, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	send_cmd(&r, NVME_CMD_WRITE, 3, data, sizeof(data));
	r2t(&r, 3, 4, 0, sizeof(data));
	tcp_conn_progress(r.t); /* reads the R2T, sends what the socket takes */
	CHECK(r.t->txn && r.t->want_out);
	for (int i = 0; i < 3; i++) {
		uint64_t sends = r.t->send_calls;
		tcp_conn_progress(r.t);
		CHECK_EQ(r.t->send_calls - sends, 1);
		CHECK(r.t->txn && r.t->want_out && !r.t->broken);
	}
	rig_down(&r);
}

/* Behind a full socket, a read that queues H2CData (an R2T) adds no send to
 * the poll's one, with or without a completion in the same read: a second
 * try would be refused too, and holding the data would only make the arm
 * before a sleep try once more (tcp_conn_send_held). The socket says when
 * it has room (EPOLLOUT), and the backlog goes then. */
TEST(a_full_socket_costs_one_send_per_poll_whatever_the_read_queued)
{
	enum { LEN = 256 << 10 };
	static uint8_t data[LEN], a[8192], b[8192], c[8192];
	struct rig r;
	rig_up_dg(&r, 4096, false, true);
	send_cmd(&r, NVME_CMD_WRITE, 1, a, sizeof(a));
	send_cmd(&r, NVME_CMD_WRITE, 2, b, sizeof(b));
	send_cmd(&r, NVME_CMD_WRITE, 0, c, sizeof(c));
	int small = 8192;
	CHECK_EQ(setsockopt(r.host, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	send_cmd(&r, NVME_CMD_WRITE, 3, data, sizeof(data));
	r2t(&r, 3, 4, 0, sizeof(data));
	tcp_conn_progress(r.t);
	CHECK(r.t->txn && r.t->want_out);
	for (int with_rsp = 1; with_rsp >= 0; with_rsp--) {
		uint32_t n = r.cq.n;
		if (with_rsp) { /* cid 1's R2T and cid 2's response in one read */
			uint8_t p[48] = {NVME_TCP_R2T, 0, 24, 0, 24};
			put_le16(p + 8, 1);
			put_le16(p + 10, 7);
			put_le32(p + 16, sizeof(a));
			p[24] = NVME_TCP_RSP, p[26] = 24, p[28] = 24;
			put_le16(p + 24 + 8 + 12, 2);
			ctrl_send(&r, p, sizeof(p));
		} else {
			r2t(&r, 0, 8, 0, sizeof(c));
		}
		uint64_t sends = r.t->send_calls;
		tcp_conn_progress(r.t);
		CHECK_EQ(r.cq.n, n + (uint32_t)with_rsp);
		tcp_conn_send_held(r.t); /* the arm before a sleep */
		CHECK_EQ(r.t->send_calls - sends, 1);
		CHECK(r.t->txn && r.t->want_out && !r.t->tx_held && !r.t->broken);
	}
	rig_down(&r);
}

/* A write (cid 1) and another command (cid 2) sent, then in one read an
 * R2T for the first and a response for the second. */
static void r2t_with_rsp(struct rig *r, uint8_t *a, uint8_t *b)
{
	send_cmd(r, NVME_CMD_WRITE, 1, a, 8192);
	send_cmd(r, NVME_CMD_WRITE, 2, b, 8192);
	uint8_t p[48] = {NVME_TCP_R2T, 0, 24, 0, 24};
	put_le16(p + 8, 1);
	put_le16(p + 10, 7);
	put_le32(p + 16, 8192);
	p[24] = NVME_TCP_RSP, p[26] = 24, p[28] = 24;
	put_le16(p + 24 + 8 + 12, 2);
	ctrl_send(r, p, sizeof(p));
}

/* The capsule a test submits (cid 3, a read of 512 bytes), not waiting for it */
static void post_read(struct rig *r, uint8_t *buf)
{
	nvme_sqe_rw(r->sqe, NVME_CMD_READ, 3, 1, 0, 1);
	nvme_sqe_sgl_keyed(r->sqe, (uintptr_t)buf, 512, 0);
	struct ibv_sge sge = {.addr = (uintptr_t)r->sqe, .length = 64};
	struct ibv_send_wr w = {.wr_id = 8, .sg_list = &sge, .num_sge = 1}, *bad;
	CHECK_EQ(tcp_conn_post_send(r->t, &w, &bad), 0);
}

/* A poll that reads an R2T and a response: the caller, given a completion,
 * submits next; the R2T's data waits for that submit and goes with its
 * capsule, in one send, data first. */
TEST(a_polls_h2c_data_goes_with_the_next_submits_capsule)
{
	static uint8_t a[8192], b[8192], rd[512], got[24 + 8192 + 72];
	memset(a, 0x3c, sizeof(a));
	struct rig r;
	rig_up(&r, 65536);
	r2t_with_rsp(&r, a, b);
	uint64_t sends = r.t->send_calls;
	uint32_t n = r.cq.n;
	tcp_conn_progress(r.t);
	CHECK_EQ(r.cq.n, n + 1); /* cid 2's response */
	CHECK_EQ(r.t->send_calls - sends, 0);
	CHECK_EQ(recv(r.ctrl, got, 1, MSG_DONTWAIT | MSG_PEEK), -1); /* the data waits */
	post_read(&r, rd);
	CHECK_EQ(r.t->send_calls - sends, 1);
	CHECK_EQ(recv(r.ctrl, got, sizeof(got), MSG_WAITALL), (ssize_t)sizeof(got));
	check_h2c(got, 1, 7, 0, 8192, true, a, false);
	CHECK_EQ(got[24 + 8192], NVME_TCP_CMD);
	CHECK_EQ(get_le16(got + 24 + 8192 + 8 + 2), 3);
	CHECK(!r.t->broken && !r.t->txn);
	rig_down(&r);
}

/* No submit follows: the held data goes at the queue's next poll, or before
 * a sleep (the arm's tcp_conn_send_held), in one send, and only once. */
TEST(held_h2c_data_goes_at_the_next_poll_or_before_a_sleep)
{
	static uint8_t a[8192], b[8192], got[24 + 8192];
	memset(a, 0xc3, sizeof(a));
	for (int sleep = 0; sleep < 2; sleep++) {
		struct rig r;
		rig_up(&r, 65536);
		r2t_with_rsp(&r, a, b);
		tcp_conn_progress(r.t);
		CHECK(r.t->tx_held && r.t->txn);
		uint64_t sends = r.t->send_calls;
		if (sleep)
			tcp_conn_send_held(r.t);
		else
			tcp_conn_progress(r.t);
		CHECK_EQ(r.t->send_calls - sends, 1);
		CHECK(!r.t->tx_held && !r.t->txn);
		CHECK_EQ(recv(r.ctrl, got, sizeof(got), MSG_WAITALL), (ssize_t)sizeof(got));
		check_h2c(got, 1, 7, 0, 8192, true, a, false);
		tcp_conn_send_held(r.t);
		tcp_conn_progress(r.t);
		CHECK_EQ(r.t->send_calls - sends, 1); /* nothing more to send: no call */
		rig_down(&r);
	}
}

/* The admin queue's polls hold nothing (its waits may be another thread's,
 * a keep-alive's, with no submit to come), nor does a poll that completed
 * nothing (r2ts_of_one_read_are_answered_in_one_send). */
TEST(the_admin_queue_sends_a_polls_h2c_data_at_once)
{
	static uint8_t a[8192], b[8192], got[24 + 8192];
	memset(a, 0x5a, sizeof(a));
	struct rig r;
	rig_qid = 0;
	rig_up(&r, 65536);
	rig_qid = 1;
	r2t_with_rsp(&r, a, b);
	uint64_t sends = r.t->send_calls;
	tcp_conn_progress(r.t);
	CHECK_EQ(r.t->send_calls - sends, 1);
	CHECK_EQ(recv(r.ctrl, got, sizeof(got), MSG_WAITALL), (ssize_t)sizeof(got));
	check_h2c(got, 1, 7, 0, 8192, true, a, false);
	rig_down(&r);
}

int main(void)
{
	static const struct test_case t[] = {
		T(r2t_answered_in_h2c_pdus_within_maxh2cdata),
		T(r2t_beyond_the_commands_data_ends_the_connection),
		T(protocol_errors_send_h2c_term_req_before_the_close),
		T(c2h_success_flag_completes_the_read_without_a_response),
		T(rsp_while_h2c_queued_waits_for_the_data),
		T(send_completes_when_the_capsule_leaves),
		T(queued_capsule_flushed_when_the_connection_fails),
		T(r2t_rewinding_ends_the_connection),
		T(r2t_skipping_ahead_ends_the_connection),
		T(r2t_for_in_capsule_data_ends_the_connection),
		T(c2h_data_digest_error_fails_that_command_and_keeps_the_connection),
		T(fabrics_data_goes_in_the_capsule_up_to_8k_on_io_queues),
		T(c2h_out_of_order_ends_the_connection),
		T(c2h_success_before_all_the_data_ends_the_connection),
		T(c2h_success_after_a_short_transfer_of_a_length_the_controller_chooses),
		T(capsule_resp_with_success_after_a_short_read_ends_the_connection),
		T(c2h_term_req_names_its_reason_with_and_without_header_digest),
		T(c2h_success_with_sq_flow_control_on_keeps_the_last_sqhd),
		T(several_responses_in_one_read),
		T(pdus_split_across_reads),
		T(small_payloads_come_with_their_headers_in_one_read),
		T(large_payloads_go_straight_into_their_buffers),
		T(read_ahead_waits_for_receives),
		T(attach_refused_by_the_epoll_set_fails_and_closes_the_socket),
		T(an_r2ts_h2c_pdus_go_in_one_send),
		T(r2ts_of_one_read_are_answered_in_one_send),
		T(gathered_h2c_pdus_cut_by_a_full_socket_go_whole_later),
		T(two_r2ts_cut_by_a_full_socket_hash_each_payload_once),
		T(a_full_socket_costs_one_send_per_poll),
		T(a_full_socket_costs_one_send_per_poll_whatever_the_read_queued),
		T(a_polls_h2c_data_goes_with_the_next_submits_capsule),
		T(held_h2c_data_goes_at_the_next_poll_or_before_a_sleep),
		T(the_admin_queue_sends_a_polls_h2c_data_at_once),
	};
	return run_tests("tcpconn", t, sizeof(t) / sizeof(t[0]));
}
