/* An NVMe/TCP queue's send path (tcp_conn.c's): the send queue's PDUs go
 * out gathered, several per sendmsg, a write's H2CData payload straight
 * from the command's buffer (with MSG_ZEROCOPY where the queue asks for it:
 * tcp_zc.h). */
#ifndef NVMEOF_TCP_TX_H
#define NVMEOF_TCP_TX_H

#include <stdint.h>

#include "tcp_pdu.h"

/* PDUs per sendmsg: the send queue's capsules and H2CData PDUs, a poll's
 * worth, go in one call as SPDK's socket layer gathers them */
#define TX_GATHER 64

/* An R2T's H2CData PDU beyond the one its command's buffers hold, built for
 * a gathered send. The connection has a ring of TX_GATHER of them: those
 * built, in send order from the queue's head, are kept until their PDU
 * moves into its command's buffers, so a send that the socket cuts or
 * refuses is tried again without building (hashing) them again. */
struct tcp_h2c_x {
	uint8_t hdr[NVME_TCP_HDR_MAX];
	uint8_t dd[4];
	uint32_t hlen;
	uint32_t off;          /* its DATAO */
	uint16_t cid, ttag;    /* the command and R2T it was built for */
};

struct tcp_conn;
struct tcp_cmd;

/* Sends what the socket takes; a backlog asks for EPOLLOUT. */
void tcp_tx_flush(struct tcp_conn *t);
/* The R2T's next H2CData PDU (its header and digest) into the command's
 * buffers, from where the data sent so far ends. */
void tcp_tx_h2c_next(struct tcp_conn *t, struct tcp_cmd *c);

#endif
