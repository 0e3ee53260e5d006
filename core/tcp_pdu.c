/* What a host sends over NVMe/TCP, and the ICResp it reads back; see
 * tcp_pdu.h. Byte offsets from the NVMe/TCP Transport Specification 1.0,
 * 3.6.2 (checked against the kernel's include/linux/nvme-tcp.h). */
#include "tcp_pdu.h"

#include <string.h>

#include "protocol.h"
#include "tcp_crc32c.h"

static void ch(uint8_t *p, uint8_t type, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen)
{
	p[0] = type;
	p[1] = flags;
	p[2] = hlen;
	p[3] = pdo;
	put_le32(p + 4, plen);
}

void tcp_icreq(uint8_t pdu[NVME_TCP_IC_SIZE], bool hdgst, bool ddgst, uint32_t maxr2t)
{
	memset(pdu, 0, NVME_TCP_IC_SIZE);
	ch(pdu, NVME_TCP_ICREQ, 0, NVME_TCP_IC_SIZE, 0, NVME_TCP_IC_SIZE);
	put_le16(pdu + 8, NVME_TCP_PFV_1_0);
	pdu[10] = 0; /* HPDA: C2H data right after the header */
	pdu[11] = (uint8_t)((hdgst ? NVME_TCP_DIGEST_HDR : 0) | (ddgst ? NVME_TCP_DIGEST_DATA : 0));
	put_le32(pdu + 12, maxr2t);
}

int tcp_icresp_parse(const uint8_t *pdu, size_t len, bool want_hdgst, bool want_ddgst, struct tcp_neg *out,
		     const char **why)
{
	if (len < NVME_TCP_IC_SIZE || pdu[0] != NVME_TCP_ICRESP || pdu[2] != NVME_TCP_IC_SIZE ||
	    get_le32(pdu + 4) != NVME_TCP_IC_SIZE) {
		*why = "ICResp: not an ICResp of 128 bytes";
		return -1;
	}
	uint16_t pfv = get_le16(pdu + 8);
	uint8_t cpda = pdu[10], dgst = pdu[11];
	uint32_t maxdata = get_le32(pdu + 12);
	if (pfv != NVME_TCP_PFV_1_0) {
		*why = "ICResp: PFV is not 0 (NVMe/TCP 1.0), the only version we speak";
		return -1;
	}
	if (cpda > 31) {
		*why = "ICResp: CPDA over 31";
		return -1;
	}
	if (!!(dgst & NVME_TCP_DIGEST_HDR) != want_hdgst || !!(dgst & NVME_TCP_DIGEST_DATA) != want_ddgst) {
		*why = "ICResp: the controller's digests (DGST) are not the ones asked for";
		return -1;
	}
	if (maxdata < 4096 || maxdata % 4) {
		*why = "ICResp: MAXH2CDATA below 4096 or not a multiple of 4";
		return -1;
	}
	*out = (struct tcp_neg){
		.hdgst = want_hdgst, .ddgst = want_ddgst, .cpda = cpda, .maxh2cdata = maxdata};
	return 0;
}

/* The data offset of a PDU we send: after the header and its digest, at the
 * controller's alignment. */
static uint32_t h2c_pdo(uint32_t hlen, const struct tcp_neg *n)
{
	uint32_t at = hlen + (n->hdgst ? NVME_TCP_DIGEST : 0);
	uint32_t align = ((uint32_t)n->cpda + 1) * 4;
	return (at + align - 1) / align * align;
}

static void hdr_digest(uint8_t *hdr, uint32_t hlen, const struct tcp_neg *n)
{
	if (n->hdgst)
		put_le32(hdr + hlen, crc32c(hdr, hlen));
}

uint32_t tcp_cmd_hdr(uint8_t hdr[NVME_TCP_HDR_MAX], const uint8_t sqe[64], uint32_t icd, const struct tcp_neg *n)
{
	uint32_t pdo = h2c_pdo(NVME_TCP_CMD_HLEN, n);
	uint32_t hd = n->hdgst ? NVME_TCP_DIGEST : 0, dd = icd && n->ddgst ? NVME_TCP_DIGEST : 0;
	uint8_t flags = (uint8_t)((hd ? NVME_TCP_F_HDGST : 0) | (dd ? NVME_TCP_F_DDGST : 0));
	memset(hdr, 0, pdo);
	ch(hdr, NVME_TCP_CMD, flags, NVME_TCP_CMD_HLEN, icd ? (uint8_t)pdo : 0,
	   icd ? pdo + icd + dd : NVME_TCP_CMD_HLEN + hd);
	memcpy(hdr + NVME_TCP_CH_SIZE, sqe, 64);
	hdr_digest(hdr, NVME_TCP_CMD_HLEN, n);
	return icd ? pdo : NVME_TCP_CMD_HLEN + hd;
}

uint32_t tcp_h2c_hdr(uint8_t hdr[NVME_TCP_HDR_MAX], uint16_t cccid, uint16_t ttag, uint32_t datao, uint32_t datal,
		     bool last, const struct tcp_neg *n)
{
	uint32_t pdo = h2c_pdo(NVME_TCP_DATA_HLEN, n);
	uint8_t flags = (uint8_t)((n->hdgst ? NVME_TCP_F_HDGST : 0) | (n->ddgst ? NVME_TCP_F_DDGST : 0) |
				  (last ? NVME_TCP_F_DATA_LAST : 0));
	memset(hdr, 0, pdo);
	ch(hdr, NVME_TCP_H2C_DATA, flags, NVME_TCP_DATA_HLEN, (uint8_t)pdo,
	   pdo + datal + (n->ddgst ? NVME_TCP_DIGEST : 0));
	put_le16(hdr + 8, cccid);
	put_le16(hdr + 10, ttag);
	put_le32(hdr + 12, datao);
	put_le32(hdr + 16, datal);
	hdr_digest(hdr, NVME_TCP_DATA_HLEN, n);
	return pdo;
}

void tcp_sqe_sgl(uint8_t sqe[64], uint32_t len, bool incapsule)
{
	memset(sqe + 24, 0, 16);
	put_le32(sqe + 32, len);
	sqe[39] = incapsule ? NVME_SGL_TYPE_DATA_OFFSET : NVME_SGL_TYPE_TCP_TRANSPORT;
}

const char *tcp_pdu_type_name(uint8_t type)
{
	switch (type) {
	case NVME_TCP_ICREQ: return "ICReq";
	case NVME_TCP_ICRESP: return "ICResp";
	case NVME_TCP_H2C_TERM: return "H2CTermReq";
	case NVME_TCP_C2H_TERM: return "C2HTermReq";
	case NVME_TCP_CMD: return "CapsuleCmd";
	case NVME_TCP_RSP: return "CapsuleResp";
	case NVME_TCP_H2C_DATA: return "H2CData";
	case NVME_TCP_C2H_DATA: return "C2HData";
	case NVME_TCP_R2T: return "R2T";
	default: return "unknown PDU type";
	}
}

/* Fatal Error Status of a TermReq (3.6.2.4, Figure 17) */
const char *tcp_fes_name(uint16_t fes)
{
	switch (fes) {
	case 1: return "Invalid PDU Header Field";
	case 2: return "PDU Sequence Error";
	case 3: return "Header Digest Error";
	case 4: return "Data Transfer Out of Range";
	case 5: return "Data Transfer Limit Exceeded";
	case 6: return "Unsupported Parameter";
	default: return "unknown fatal error status";
	}
}

size_t tcp_h2c_term_build(uint8_t *out, uint16_t fes, uint32_t fei, const uint8_t *hdr, size_t hlen)
{
	size_t n = hlen > NVME_TCP_TERM_DATA_MAX ? NVME_TCP_TERM_DATA_MAX : hlen;
	memset(out, 0, NVME_TCP_DATA_HLEN);
	out[0] = NVME_TCP_H2C_TERM;
	out[2] = NVME_TCP_DATA_HLEN; /* no header digest in a TermReq */
	put_le32(out + 4, (uint32_t)(NVME_TCP_DATA_HLEN + n));
	put_le16(out + 8, fes);
	put_le32(out + 10, fei);
	if (n)
		memcpy(out + NVME_TCP_DATA_HLEN, hdr, n);
	return NVME_TCP_DATA_HLEN + n;
}
