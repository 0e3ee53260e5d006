/* One NVMe/TCP queue's connection behind the transport table: the queue
 * posts verbs-shaped sends (a capsule, and its in-capsule data) and
 * receives (a response buffer each), and polls verbs-shaped completions;
 * this file turns them into PDUs on the socket and back. Commands' data
 * moves between the socket and the buffers their SGL names: a C2HData
 * payload is read straight into the command's buffer, an H2CData payload
 * is sent from it. */
#ifndef NVMEOF_TCP_CONN_H
#define NVMEOF_TCP_CONN_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "tcp_pdu.h"
#include "tcp_tx.h"
#include "tcp_zc.h"

/* A poll group's completion queue over TCP: completions the members'
 * connections produced, and an epoll set of their sockets to sleep on. */
struct tcp_cq {
	struct ibv_wc *wc;
	uint32_t cap, head, n;
	int epfd;
};

struct tcp_cmd;

struct tcp_conn {
	int fd;                    /* -1: none */
	uint16_t qid;
	uint32_t depth;
	bool hdgst, ddgst;         /* asked for at connect */
	const struct tls_psk *tls; /* TLS with this PSK; NULL: none */
	void *ssl;                 /* TLS: OpenSSL's connection (tls_io_*); NULL: the socket's calls */
	uint8_t *tls_out;          /* a record's plaintext, gathered (TLS_IO_OUT_MAX) */
	bool tls_more;             /* OpenSSL holds plaintext not yet read */
	uint32_t icd_max;          /* writes up to this go in the capsule */
	bool broken;
	bool want_out;             /* EPOLLOUT asked for: a send backlog */
	struct tcp_cq *cq;
	struct tcp_neg neg;
	struct tcp_rx rx;
	struct tcp_cmd *cmds;      /* by slot (the CID's low bits) */
	struct { uint16_t slot; uint8_t h2c; } *txq; /* PDUs to send, in order */
	uint32_t txcap, txhead, txn, tx_sent;
	bool tx_held;              /* the queued PDUs wait for the caller's next call (tcp_conn_progress) */
	struct tcp_h2c_x *txx;     /* TX_GATHER: an R2T's later PDUs, gathered (tcp_tx.c) */
	uint32_t txxh, txxn;       /* of them, the first built and how many are */
	struct { uint64_t wr_id; uint8_t *buf; } *rq; /* posted receives */
	uint32_t rqcap, rqhead, rqn;
	uint16_t sqhd;             /* the last SQ Head Pointer a CapsuleResp reported */
	uint8_t held[16];          /* a response no receive was posted for yet */
	bool has_held;
	bool ready;                /* the group's epoll set said its socket has something */
	/* Bytes read ahead of the PDU being received: one read takes what
	 * the socket holds, PDUs are parsed out of it (tcp_rx_feed) */
	uint8_t *stage;
	uint32_t shead, slen;
	bool ra_small;             /* the last C2HData payload was small: read far ahead */
	uint64_t reads;            /* socket reads on the data path, for tests and profiles */
	uint64_t ra_bytes;         /* bytes those reads put in the read-ahead, for the same */
	uint64_t send_calls;       /* socket send calls (sendmsg, or TLS records' writes), those
	                            * refused (EAGAIN, EINTR, ENOBUFS) included, for the same */
	uint64_t rsps, data_success; /* completions by CapsuleResp, by C2HData's SUCCESS (kept across reconnects) */
	struct tcp_zc zc;          /* MSG_ZEROCOPY of large writes (tcp_zc.h) */
	char why[160];             /* what broke the connection */
};

/* icd_max: the controller's in-capsule data size (IOCCSZ's, whether or
 * not the queue puts its own writes there) */
struct tcp_conn *tcp_conn_new(uint16_t qid, uint32_t depth, bool hdgst, bool ddgst, uint32_t icd_max);
void tcp_conn_free(struct tcp_conn *t);
/* Before a new connection's initialization: the receiver starts over. */
void tcp_conn_rx_init(struct tcp_conn *t);
/* A connected, initialized socket becomes the connection's (nothing of an
 * earlier one left); completions go to cq. -errno when the group's epoll
 * set refuses it (the socket is closed then). */
int tcp_conn_attach(struct tcp_conn *t, int fd, void *ssl, const struct tcp_neg *neg, struct tcp_cq *cq);
/* Closes the socket; the connection can be attached again. */
void tcp_conn_detach(struct tcp_conn *t);
int tcp_conn_post_send(struct tcp_conn *t, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int tcp_conn_post_recv(struct tcp_conn *t, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/* Moves what the socket allows both ways; completions go to t->cq. An I/O
 * queue's H2CData queued by a poll that also completed commands is held
 * (t->tx_held): the caller likely resubmits next, and the data goes in that
 * submit's sendmsg with its capsules, one send where two would go. A held
 * send goes at the queue's next call: a submit (tcp_conn_post_send), the
 * next progress, or tcp_conn_send_held, which whoever sleeps on the
 * socket's readiness calls first (nothing else would send it). */
void tcp_conn_progress(struct tcp_conn *t);
/* Sends what a poll held (see tcp_conn_progress); nothing when none is. */
static inline void tcp_conn_send_held(struct tcp_conn *t)
{
	if (t->tx_held)
		tcp_tx_flush(t);
}
/* Bytes already read wait to be parsed: progress has work without the
 * socket saying so (a sleeper must not wait on the socket then). */
static inline bool tcp_conn_staged(const struct tcp_conn *t)
{
	return (t->slen || t->tls_more) && !t->broken && t->fd >= 0;
}
/* Our side gives up: nothing more goes out, every posted receive comes
 * back flushed. */
void tcp_conn_fail(struct tcp_conn *t, const char *why);

/* For the send path and the zerocopy bookkeeping (tcp_tx.c, tcp_zc.c): a
 * completion into the group's CQ (NULL: it is full); a response into the
 * next posted receive (false: none is posted, it waits in t->held). */
struct ibv_wc *tcp_conn_push(struct tcp_conn *t, uint64_t wr_id, enum ibv_wc_opcode op, enum ibv_wc_status st);
bool tcp_conn_deliver(struct tcp_conn *t, const uint8_t *cqe);

#endif
