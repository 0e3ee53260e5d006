/*
 * NVMe/TCP PDUs (NVMe/TCP Transport Specification 1.0, section 3): the
 * encoders of what a host sends and a receiver of what a controller sends,
 * on byte buffers, no I/O. The receiver is a state machine that says where
 * the next bytes of the stream go and how many: the socket layer reads
 * straight there (a C2HData payload into the command's own buffer), the
 * fuzzer and the unit tests copy there. Everything it refuses comes back
 * as an error with a message naming the PDU and the field.
 */
#ifndef NVMEOF_TCP_PDU_H
#define NVMEOF_TCP_PDU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PDU types */
enum {
	NVME_TCP_ICREQ = 0x00,
	NVME_TCP_ICRESP = 0x01,
	NVME_TCP_H2C_TERM = 0x02,
	NVME_TCP_C2H_TERM = 0x03,
	NVME_TCP_CMD = 0x04,
	NVME_TCP_RSP = 0x05,
	NVME_TCP_H2C_DATA = 0x06,
	NVME_TCP_C2H_DATA = 0x07,
	NVME_TCP_R2T = 0x09,
};
/* common header flags */
#define NVME_TCP_F_HDGST 0x01
#define NVME_TCP_F_DDGST 0x02
#define NVME_TCP_F_DATA_LAST 0x04
#define NVME_TCP_F_DATA_SUCCESS 0x08

#define NVME_TCP_CH_SIZE 8
#define NVME_TCP_IC_SIZE 128          /* ICReq and ICResp: hlen and plen */
#define NVME_TCP_CMD_HLEN (8 + 64)
#define NVME_TCP_RSP_HLEN (8 + 16)
#define NVME_TCP_DATA_HLEN 24         /* H2CData, C2HData, R2T, TermReq */
#define NVME_TCP_DIGEST 4
#define NVME_TCP_TERM_PLEN_MAX 152    /* a TermReq in all: its header and up to 128 bytes of the header in error */
#define NVME_TCP_TERM_DATA_MAX (NVME_TCP_TERM_PLEN_MAX - NVME_TCP_DATA_HLEN)
/* A TermReq's Fatal Error Status */
#define NVME_TCP_FES_HEADER 1         /* Invalid PDU Header Field (FEI: its offset) */
#define NVME_TCP_FES_SEQUENCE 2       /* PDU Sequence Error */
#define NVME_TCP_FES_HDGST 3          /* Header Digest Error */
#define NVME_TCP_FES_RANGE 4          /* Data Transfer Out of Range */
#define NVME_TCP_FES_LIMIT 5          /* Data Transfer Limit Exceeded (R2Ts) */
#define NVME_TCP_FES_UNSUPPORTED 6    /* Unsupported Parameter */
#define NVME_TCP_PFV_1_0 0
#define NVME_TCP_DIGEST_HDR 0x01      /* ICReq/ICResp DGST field */
#define NVME_TCP_DIGEST_DATA 0x02
/* what a header buffer must hold: the longest header, its digest, and the
 * padding up to the largest PDO */
#define NVME_TCP_HDR_MAX 256
/* SGL descriptor of a command whose data goes in H2CData/C2HData PDUs:
 * Transport SGL Data Block, subtype Transport Specific (Ah) */
#define NVME_SGL_TYPE_TCP_TRANSPORT 0x5a

/* What the connection negotiated (ICReq/ICResp). */
struct tcp_neg {
	bool hdgst, ddgst;
	uint8_t cpda;        /* the controller's alignment of H2C data: (cpda+1)*4 bytes */
	uint32_t maxh2cdata; /* bytes of data one H2CData PDU may carry */
};

/* ICReq with HPDA 0 (no padding wanted before C2H data) */
void tcp_icreq(uint8_t pdu[NVME_TCP_IC_SIZE], bool hdgst, bool ddgst, uint32_t maxr2t);
/* A complete ICResp (NVME_TCP_IC_SIZE bytes): what the controller agreed to.
 * Refused: another PFV, a digest we did not ask for, MAXH2CDATA below 4 KiB
 * or not a multiple of 4, CPDA over 31. */
int tcp_icresp_parse(const uint8_t *pdu, size_t len, bool want_hdgst, bool want_ddgst, struct tcp_neg *out,
		     const char **why);
/* A CapsuleCmd's header for sqe with icd bytes of in-capsule data after
 * it: common header, SQE, header digest and the padding up to the data (the
 * controller's alignment). Returns the header's length (the PDO where
 * there is data); the caller sends the data, then its digest (tcp_neg.ddgst). */
uint32_t tcp_cmd_hdr(uint8_t hdr[NVME_TCP_HDR_MAX], const uint8_t sqe[64], uint32_t icd, const struct tcp_neg *n);
/* An H2CData header answering an R2T: datal bytes at datao of the command's data. */
uint32_t tcp_h2c_hdr(uint8_t hdr[NVME_TCP_HDR_MAX], uint16_t cccid, uint16_t ttag, uint32_t datao, uint32_t datal,
		     bool last, const struct tcp_neg *n);
/* The SQE's data pointer for NVMe/TCP: in-capsule (offset 0) or in data PDUs. */
void tcp_sqe_sgl(uint8_t sqe[64], uint32_t len, bool incapsule);

/* A PDU from the controller, once its header has been read and checked. */
struct tcp_pdu {
	uint8_t type, flags;
	uint8_t hlen, pdo;
	uint32_t plen;
	uint32_t datal;         /* payload bytes (C2HData, C2HTermReq) */
	/* C2HData: cccid, datao; R2T: cccid, ttag, datao (R2TO), datal (R2TL) */
	uint16_t cccid, ttag;
	uint32_t datao;
	const uint8_t *cqe;     /* CapsuleResp: the 16 bytes, inside the receiver */
	uint16_t fes;           /* C2HTermReq: fatal error status */
	uint32_t fei;
	bool ddgst_bad;         /* C2HData: its data digest did not match (the stream goes on) */
};

/* Where a C2HData payload goes: the receiver asks once its header is
 * checked, and the answer is the destination of datal bytes, or NULL with
 * *why set (no such command, data beyond its buffer, a read it is not). */
typedef uint8_t *(*tcp_rx_dest)(void *ctx, const struct tcp_pdu *p, const char **why);

struct tcp_rx {
	struct tcp_neg neg;
	bool ic_done;           /* false: only an ICResp may come */
	tcp_rx_dest dest;
	void *ctx;
	/* where the stream is: reading the header (hdr), the payload (dst), its digest */
	uint8_t st;
	uint32_t got, need;
	uint8_t *dst;
	uint32_t crc;
	struct tcp_pdu pdu;
	uint8_t hdr[NVME_TCP_HDR_MAX];
	uint8_t term[NVME_TCP_TERM_DATA_MAX];
	/* why the stream was lost, as an H2CTermReq says it: Fatal Error
	 * Status (0: not the controller's doing) and its field's offset */
	uint16_t fail_fes;
	uint32_t fail_fei;
	uint8_t dgst[NVME_TCP_DIGEST];
};

#define TCP_RX_MORE 0   /* more bytes wanted */
#define TCP_RX_PDU 1    /* rx->pdu is complete (a C2HData's payload is in its destination) */

void tcp_rx_init(struct tcp_rx *r, tcp_rx_dest dest, void *ctx);
/* The negotiated parameters apply from the PDU after the ICResp. */
void tcp_rx_negotiated(struct tcp_rx *r, const struct tcp_neg *n);
/* Where the next bytes go, and at most how many (never 0). */
static inline uint8_t *tcp_rx_want(struct tcp_rx *r, size_t *n)
{
	*n = r->need - r->got;
	return r->dst + r->got;
}
/* n (<= what tcp_rx_want said) bytes were put there: TCP_RX_MORE,
 * TCP_RX_PDU, or a negative error with *why (the stream is then lost: the
 * connection must go). */
int tcp_rx_advance(struct tcp_rx *r, size_t n, const char **why);
/* len bytes read ahead (a staging buffer): copied where the stream wants
 * them, up to the end of the first PDU they complete, so that the caller
 * handles each PDU before the next one's payload asks for a destination.
 * *used: how many were taken; the rest are the next call's. Returns as
 * tcp_rx_advance (TCP_RX_MORE once all len are taken). */
int tcp_rx_feed(struct tcp_rx *r, const uint8_t *src, size_t len, size_t *used, const char **why);
const char *tcp_pdu_type_name(uint8_t type);
const char *tcp_fes_name(uint16_t fes);
/* An H2CTermReq into out (NVME_TCP_TERM_PLEN_MAX bytes): FES, FEI and up to
 * 128 bytes of the header in error; its length. */
size_t tcp_h2c_term_build(uint8_t *out, uint16_t fes, uint32_t fei, const uint8_t *hdr, size_t hlen);

#endif
