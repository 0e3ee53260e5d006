/* The receiver of a host's NVMe/TCP stream: what the controller may send,
 * checked field by field before a byte of payload lands anywhere; see
 * tcp_pdu.h. A hostile or broken controller gets an error naming the PDU
 * and the field, and the connection goes: nothing it sends can make us
 * write outside a command's buffer or wait for bytes it never announced. */
#include "tcp_pdu.h"

#include <string.h>

#include "protocol.h"
#include "tcp_crc32c.h"

enum { ST_CH, ST_HDR, ST_DATA, ST_DDGST, ST_TERM, ST_BROKEN };

/* Once the connection is initialized every PDU a controller sends has a
 * header of 24 bytes and, but for a C2HTermReq, its digest: asking for all
 * of it at once saves the socket a read per PDU, and reads nothing of the
 * next one but for a TermReq's data, which is its own. A C2HTermReq has no
 * header digest (HDGSTF is reserved in it) and may be 24 bytes in all, the
 * last the controller sends before it closes: the common header is read as
 * soon as its 8 bytes are in (tcp_rx_advance), and says how many follow. */
static void next_pdu(struct tcp_rx *r)
{
	r->st = ST_CH;
	r->dst = r->hdr;
	r->got = 0;
	r->need = r->ic_done ? NVME_TCP_DATA_HLEN + (r->neg.hdgst ? NVME_TCP_DIGEST : 0) : NVME_TCP_CH_SIZE;
}

void tcp_rx_init(struct tcp_rx *r, tcp_rx_dest dest, void *ctx)
{
	memset(r, 0, sizeof(*r));
	r->dest = dest;
	r->ctx = ctx;
	next_pdu(r);
}

void tcp_rx_negotiated(struct tcp_rx *r, const struct tcp_neg *n)
{
	r->neg = *n;
	r->ic_done = true;
	if (r->st == ST_CH && !r->got)
		next_pdu(r);
}

/* The stream lost for a controller's fault: fes/fei as an H2CTermReq
 * names it (the first reason stays: a destination's own, say). */
static int fail_f(struct tcp_rx *r, uint16_t fes, uint32_t fei, const char *msg, const char **why);

static int fail(struct tcp_rx *r, const char *msg, const char **why)
{
	if (!r->fail_fes)
		r->fail_fes = 1, r->fail_fei = 0; /* Invalid PDU Header Field */
	/* the stream is lost: every later call says so again */
	r->st = ST_BROKEN;
	r->dst = r->hdr;
	r->got = 0;
	r->need = NVME_TCP_CH_SIZE;
	r->pdu.type = 0xff;
	*why = msg;
	return -1;
}

static int fail_f(struct tcp_rx *r, uint16_t fes, uint32_t fei, const char *msg, const char **why)
{
	if (!r->fail_fes)
		r->fail_fes = fes, r->fail_fei = fei;
	return fail(r, msg, why);
}

static int done(struct tcp_rx *r)
{
	next_pdu(r);
	return TCP_RX_PDU;
}

/* The common header: which PDU, how long its header is, and that the
 * lengths agree with each other before anything is read on their word. */
static int common_header(struct tcp_rx *r, const char **why)
{
	struct tcp_pdu *p = &r->pdu;
	const uint8_t *h = r->hdr;
	memset(p, 0, sizeof(*p));
	p->type = h[0];
	p->flags = h[1];
	p->hlen = h[2];
	p->pdo = h[3];
	p->plen = get_le32(h + 4);
	uint32_t want_hlen, hd = 0;
	bool dgst_pdu = true;
	switch (p->type) {
	case NVME_TCP_ICRESP:
		if (r->ic_done)
			return fail(r, "ICResp: unexpected after the connection's initialization", why);
		want_hlen = NVME_TCP_IC_SIZE;
		dgst_pdu = false;
		break;
	case NVME_TCP_C2H_TERM:
		want_hlen = NVME_TCP_DATA_HLEN;
		dgst_pdu = false;
		break;
	case NVME_TCP_RSP: want_hlen = NVME_TCP_RSP_HLEN; break;
	case NVME_TCP_C2H_DATA:
	case NVME_TCP_R2T: want_hlen = NVME_TCP_DATA_HLEN; break;
	default:
		return fail(r, "common header: a PDU type a controller never sends", why);
	}
	if (!r->ic_done && p->type != NVME_TCP_ICRESP && p->type != NVME_TCP_C2H_TERM)
		return fail(r, "common header: a PDU before the ICResp", why);
	if (p->hlen != want_hlen)
		return fail_f(r, 1, 2, "common header: HLEN is not that PDU type's header length", why);
	if (dgst_pdu) {
		if (!!(p->flags & NVME_TCP_F_HDGST) != r->neg.hdgst)
			return fail(r, "common header: HDGSTF disagrees with the negotiated header digest", why);
		hd = r->neg.hdgst ? NVME_TCP_DIGEST : 0;
	}
	if (p->type == NVME_TCP_C2H_DATA) {
		if (!!(p->flags & NVME_TCP_F_DDGST) != r->neg.ddgst)
			return fail(r, "C2HData: DDGSTF disagrees with the negotiated data digest", why);
		/* HPDA 0: the data may start anywhere after the header's digest */
		if (p->pdo < p->hlen + hd)
			return fail_f(r, 1, 3, "C2HData: PDO inside the header", why);
		if (p->plen <= p->pdo)
			return fail_f(r, 1, 4, "C2HData: PLEN leaves no data after PDO", why);
		r->need = p->pdo;
	} else if (p->type == NVME_TCP_C2H_TERM) {
		if (p->plen < p->hlen || p->plen > NVME_TCP_TERM_PLEN_MAX)
			return fail_f(r, 1, 4, "C2HTermReq: PLEN out of range", why);
		r->need = p->hlen;
	} else {
		if (p->plen != p->hlen + hd)
			return fail_f(r, 1, 4, "common header: PLEN is not the header's length for a PDU without data", why);
		r->need = p->hlen + hd;
	}
	r->st = ST_HDR;
	return TCP_RX_MORE;
}

/* The PDU-specific header, complete with its digest. */
static int pdu_header(struct tcp_rx *r, const char **why)
{
	struct tcp_pdu *p = &r->pdu;
	const uint8_t *h = r->hdr;
	if (p->type != NVME_TCP_ICRESP && p->type != NVME_TCP_C2H_TERM && r->neg.hdgst &&
	    get_le32(h + p->hlen) != crc32c(h, p->hlen))
		return fail_f(r, 3, 0, "header digest error (HDGST does not match the header)", why);
	switch (p->type) {
	case NVME_TCP_ICRESP: return done(r);
	case NVME_TCP_RSP:
		p->cqe = h + NVME_TCP_CH_SIZE;
		p->cccid = get_le16(h + NVME_TCP_CH_SIZE + 12);
		return done(r);
	case NVME_TCP_R2T:
		p->cccid = get_le16(h + 8);
		p->ttag = get_le16(h + 10);
		p->datao = get_le32(h + 12);
		p->datal = get_le32(h + 16);
		if (!p->datal)
			return fail_f(r, 1, 16, "R2T: R2TL is 0", why);
		return done(r);
	case NVME_TCP_C2H_TERM:
		p->fes = get_le16(h + 8);
		p->fei = get_le32(h + 10);
		p->datal = p->plen - p->hlen;
		/* what was read past its 24-byte header is its data's start */
		uint32_t early = r->got - p->hlen;
		if (early > p->datal)
			early = p->datal;
		memcpy(r->term, h + p->hlen, early);
		if (early == p->datal)
			return done(r);
		r->st = ST_TERM;
		r->dst = r->term;
		r->got = early;
		r->need = p->datal;
		return TCP_RX_MORE;
	default: break;
	}
	/* C2HData */
	p->ddgst_bad = false;
	p->cccid = get_le16(h + 8);
	p->datao = get_le32(h + 12);
	p->datal = get_le32(h + 16);
	uint64_t dd = r->neg.ddgst ? NVME_TCP_DIGEST : 0;
	if (!p->datal || (uint64_t)p->pdo + p->datal + dd != p->plen)
		return fail_f(r, 1, 16, "C2HData: DATAL disagrees with PLEN and PDO", why);
	if ((p->flags & NVME_TCP_F_DATA_SUCCESS) && !(p->flags & NVME_TCP_F_DATA_LAST))
		return fail(r, "C2HData: SUCCESS without LAST_PDU", why);
	const char *w = "C2HData: no destination";
	uint8_t *dst = r->dest ? r->dest(r->ctx, p, &w) : NULL;
	if (!dst)
		return fail(r, w, why);
	r->st = ST_DATA;
	r->dst = dst;
	r->got = 0;
	r->need = p->datal;
	r->crc = TCP_CRC32C_INIT;
	return TCP_RX_MORE;
}

int tcp_rx_advance(struct tcp_rx *r, size_t n, const char **why)
{
	if (r->st == ST_BROKEN)
		/* 0xffff: no TermReq, the controller did nothing wrong now */
		return fail_f(r, 0xffff, 0, "the stream was lost at an earlier PDU", why);
	if (n > r->need - r->got)
		return fail_f(r, 0xffff, 0, "more bytes than the receiver asked for (a caller's bug)", why);
	if (r->st == ST_DATA && r->neg.ddgst)
		r->crc = crc32c_update(r->crc, r->dst + r->got, n);
	r->got += (uint32_t)n;
	if (r->got < r->need && !(r->st == ST_CH && r->got >= NVME_TCP_CH_SIZE))
		return TCP_RX_MORE;
	switch (r->st) {
	case ST_CH: {
		int rc = common_header(r, why);
		/* the whole header may be in already */
		return rc == TCP_RX_MORE && r->got >= r->need ? pdu_header(r, why) : rc;
	}
	case ST_HDR: return pdu_header(r, why);
	case ST_DATA:
		if (!r->neg.ddgst)
			return done(r);
		r->st = ST_DDGST;
		r->dst = r->dgst;
		r->got = 0;
		r->need = NVME_TCP_DIGEST;
		return TCP_RX_MORE;
	case ST_DDGST:
		/* the framing is whole (PLEN, DATAL and the header digest held):
		 * the payload alone is bad, so its command fails, not the
		 * stream, as in the kernel's and SPDK's hosts */
		r->pdu.ddgst_bad = get_le32(r->dgst) != crc32c_final(r->crc);
		return done(r);
	default: /* ST_TERM */
		return done(r);
	}
}

int tcp_rx_feed(struct tcp_rx *r, const uint8_t *src, size_t len, size_t *used, const char **why)
{
	*used = 0;
	while (*used < len) {
		size_t want;
		uint8_t *to = tcp_rx_want(r, &want);
		if (want > len - *used)
			want = len - *used;
		memcpy(to, src + *used, want);
		*used += want;
		int rc = tcp_rx_advance(r, want, why);
		if (rc != TCP_RX_MORE)
			return rc;
	}
	return TCP_RX_MORE;
}
