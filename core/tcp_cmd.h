/* An NVMe/TCP command's state in its queue (tcp_conn.c): its PDU headers,
 * where its data stands against R2Ts and C2HData, and whether the send queue
 * still holds its buffers. */
#ifndef NVMEOF_TCP_CMD_H
#define NVMEOF_TCP_CMD_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "tcp_pdu.h"

#define SLOT_OF(cid) ((cid) & 0x3ffu) /* the queue's slot index (qpriv.h SLOT_BITS) */

enum { DIR_NONE = 0, DIR_H2C = 1, DIR_C2H = 2 };

/* What a Fabrics command carries in its capsule on any queue (the
 * kernel's NVME_TCP_ADMIN_CCSZ) */
#define NVME_TCP_FABRICS_ICD 8192

struct tcp_cmd {
	uint16_t cid;
	bool busy, h2c_active, signaled;
	uint8_t dir;
	uint8_t queued;           /* its PDUs in the send queue: its buffers still in use */
	uint64_t wr_id;           /* the capsule's send, completed once it is out */
	uint8_t *data;            /* the command's buffer (its SGL's address) */
	uint32_t len;
	uint8_t *icd;             /* in-capsule data */
	uint32_t icd_len, hlen;
	uint32_t h2c_off, h2c_end, h2c_len, h2c_hlen; /* the R2T being answered, its PDU now out */
	uint32_t h2c_done;        /* data sent in H2CData PDUs: where the next R2T starts */
	uint32_t c2h_next;        /* data received in C2HData PDUs: where the next starts */
	bool data_bad;            /* a C2HData of it failed its data digest: it completes with an error */
	uint16_t ttag;
	uint8_t cmd_dd[4], h2c_dd[4];
	uint8_t hdr[NVME_TCP_HDR_MAX];
	uint8_t h2c_hdr[NVME_TCP_HDR_MAX];
	uint16_t zc_out;          /* its zerocopy sends the kernel has not notified (tcp_zc.h) */
	bool zc_held;             /* its response, held in zc_cqe until zc_out is 0 */
	uint8_t zc_cqe[16];
};

/* The capsule as a CapsuleCmd PDU (the send's first SGE holds the SQE, a
 * second its in-capsule data): the keyed SGL of RDMA becomes NVMe/TCP's
 * (the data moves in H2CData/C2HData PDUs); a write up to icd_max goes in
 * the capsule. EINVAL for an SGL that means nothing over TCP. */
int tcp_cmd_build(struct tcp_cmd *c, const struct ibv_send_wr *wr, uint32_t icd_max, const struct tcp_neg *neg);

#endif
