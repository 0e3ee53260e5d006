/* The NVMe/TCP queue's receive state machine (core/tcp_conn.c: c2h_dest,
 * on_r2t, on_pdu, read_short, the H2CData it sends in answer) fed a hostile
 * controller's stream over a socket pair, with four commands in flight,
 * each buffer exactly sized (ASan sees one byte over): a Read of 4 KiB, a
 * Read of 9000 bytes, a Write of 12000 bytes waiting for R2Ts, and a
 * vendor read of 512 bytes whose length the controller chooses. Whatever
 * comes, nothing is written outside those buffers, nothing is read outside
 * the write's, a Read's first answer says success only with all its data
 * in (and none of it failing its digest), and a broken connection stays
 * broken. Input: byte 0 the mode (bit 0 data digest, bit 1 the
 * write's data in the capsule, bits 2-3 MAXH2CDATA 4 KiB/8 KiB/64 KiB/1 MiB),
 * then the controller's bytes (after the ICResp: the connection is up). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "protocol.h"
#include "tcp_cmd.h"
#include "tcp_conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NCMD 4
static const uint32_t lens[NCMD] = {4096, 9000, 12000, 512};
static const uint8_t opcs[NCMD] = {NVME_CMD_READ, NVME_CMD_READ, NVME_CMD_WRITE, 0x82};

static void drain(int fd)
{
	static uint8_t sink[65536];
	while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	uint8_t mode = data[0];
	static const uint32_t maxh2c[4] = {4096, 8192, 65536, 1 << 20};
	data++;
	size--;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 0;
	int big = 1 << 20;
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	struct ibv_wc wc[64];
	struct tcp_cq cq = {.wc = wc, .cap = 64, .epfd = epoll_create1(0)};
	bool dd = mode & 1;
	struct tcp_conn *t = tcp_conn_new(1, NCMD, false, dd, mode & 2 ? 16384 : 0);
	struct tcp_neg n = {.maxh2cdata = maxh2c[(mode >> 2) & 3], .ddgst = dd};
	tcp_conn_rx_init(t);
	tcp_rx_negotiated(&t->rx, &n);
	if (tcp_conn_attach(t, sv[0], NULL, &n, &cq)) {
		tcp_conn_free(t);
		close(sv[1]);
		close(cq.epfd);
		return 0;
	}
	uint8_t rsp[NCMD][16];
	for (int i = 0; i < NCMD; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)rsp[i], .length = 16};
		struct ibv_recv_wr rw = {.wr_id = 100u + (unsigned)i, .sg_list = &sge, .num_sge = 1}, *bad;
		tcp_conn_post_recv(t, &rw, &bad);
	}
	uint8_t *buf[NCMD];
	uint8_t sqe[NCMD][64];
	for (int i = 0; i < NCMD; i++) {
		buf[i] = malloc(lens[i]);
		memset(buf[i], 0xa5, lens[i]);
		nvme_sqe_rw(sqe[i], opcs[i], (uint16_t)i, 1, 0, 1);
		nvme_sqe_sgl_keyed(sqe[i], (uintptr_t)buf[i], lens[i], 0);
		struct ibv_sge sge = {.addr = (uintptr_t)sqe[i], .length = 64};
		struct ibv_send_wr w = {.wr_id = (unsigned)i, .sg_list = &sge, .num_sge = 1,
					.send_flags = IBV_SEND_SIGNALED}, *bad;
		tcp_conn_post_send(t, &w, &bad);
	}
	drain(sv[1]);
	/* the controller's bytes, then as many passes as they can take */
	size_t off = 0;
	int recvs[NCMD] = {0};
	bool was_broken = false;
	for (int pass = 0; pass < 64 && (off < size || pass < 4); pass++) {
		if (off < size) {
			ssize_t w = send(sv[1], data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w > 0)
				off += (size_t)w;
		}
		tcp_conn_progress(t);
		drain(sv[1]);
		if (was_broken && !t->broken)
			abort(); /* a lost stream came back */
		was_broken = t->broken;
		/* the completions: each response once per command */
		for (uint32_t k = 0; k < cq.n; k++) {
			struct ibv_wc *c = &cq.wc[(cq.head + k) % cq.cap];
			if (c->opcode != IBV_WC_RECV || c->status != IBV_WC_SUCCESS)
				continue;
			uint32_t slot = (uint32_t)(c->wr_id - 100);
			uint16_t cid = get_le16(rsp[slot] + 12);
			/* the first answer of a Read (later ones are stale: the
			 * queue layer drops them) says success only with all its
			 * data in; a data digest error never reads as success */
			if (cid < 2 && !recvs[cid]++ && !(get_le16(rsp[slot] + 14) >> 1) &&
			    (t->cmds[cid].c2h_next != lens[cid] || t->cmds[cid].data_bad))
				abort();
			struct ibv_sge sge = {.addr = (uintptr_t)rsp[slot], .length = 16};
			struct ibv_recv_wr rw = {.wr_id = c->wr_id, .sg_list = &sge, .num_sge = 1}, *bad;
			tcp_conn_post_recv(t, &rw, &bad);
		}
		cq.head = (cq.head + cq.n) % cq.cap;
		cq.n = 0;
		if (t->broken && off >= size)
			break;
	}
	tcp_conn_free(t);
	close(sv[1]);
	close(cq.epfd);
	for (int i = 0; i < NCMD; i++)
		free(buf[i]);
	return 0;
}
