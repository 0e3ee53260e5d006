/*
 * The in-band authentication messages on byte buffers (NVMe Base 2.x
 * 8.13.5; offsets as the kernel's struct nvmf_auth_*): every message starts
 * AUTH-Type, AUTH-Id, 2 reserved, T_ID (le16).
 *   Negotiate   8 bytes, then NAPD protocol descriptors of 64 bytes
 *   Challenge   16 bytes: HL, rsvd, HASHID, DHGID, DHVLEN, SEQNUM; C[HL], DH[DHVLEN]
 *   Reply       16 bytes: HL, rsvd, CVALID, rsvd, DHVLEN, SEQNUM; R[HL], C[HL], DH[DHVLEN]
 *   Success1    16 bytes: HL, rsvd, RVALID, 7 rsvd; R[HL] when RVALID
 *   Success2    16 bytes
 *   Failure1/2  8 bytes: reason code, explanation
 * Parsing trusts no length: everything a message claims is checked against
 * the bytes there are.
 */
#include <string.h>

#include "auth.h"
#include "protocol.h"

#define HDR 16
#define NEG_HDR 8
#define DESC 64
#define FAIL_LEN 8

static void put_hdr(uint8_t *b, uint8_t type, uint8_t id, uint16_t tid)
{
	b[0] = type;
	b[1] = id;
	put_le16(b + 4, tid);
}

size_t auth_msg_encode(const struct auth_msg *m, uint8_t *b, size_t cap)
{
	size_t n;
	switch (m->id) {
	case AUTH_MSG_NEGOTIATE:
		n = NEG_HDR + DESC;
		if (cap < n || m->nhash > 30 || m->ndh > 30)
			return 0;
		memset(b, 0, n);
		put_hdr(b, AUTH_TYPE_COMMON, m->id, m->tid);
		b[6] = m->sc_c;
		b[7] = 1; /* NAPD: one descriptor, DH-HMAC-CHAP */
		b[8] = AUTH_PROTO_DHCHAP;
		b[10] = m->nhash;
		b[11] = m->ndh;
		memcpy(b + 12, m->hashes, m->nhash);
		memcpy(b + 12 + 30, m->dhgroups, m->ndh);
		return n;
	case AUTH_MSG_CHALLENGE:
	case AUTH_MSG_REPLY:
		n = HDR + (m->id == AUTH_MSG_REPLY ? 2u : 1u) * m->hl + m->dhvlen;
		if (cap < n || (m->hl && !m->cval) || (m->dhvlen && !m->dhv) ||
		    (m->id == AUTH_MSG_REPLY && m->hl && !m->rval))
			return 0;
		memset(b, 0, HDR);
		put_hdr(b, AUTH_TYPE_DHCHAP, m->id, m->tid);
		b[6] = m->hl;
		if (m->id == AUTH_MSG_CHALLENGE) {
			b[8] = m->hashid;
			b[9] = m->dhgid;
		} else {
			b[8] = m->valid;
		}
		put_le16(b + 10, m->dhvlen);
		put_le32(b + 12, m->seqnum);
		uint8_t *p = b + HDR;
		if (m->id == AUTH_MSG_REPLY && m->hl) {
			memcpy(p, m->rval, m->hl);
			p += m->hl;
		}
		if (m->hl) /* memcpy's pointers must be valid even for 0 bytes */
			memcpy(p, m->cval, m->hl);
		if (m->dhvlen)
			memcpy(p + m->hl, m->dhv, m->dhvlen);
		return n;
	case AUTH_MSG_SUCCESS1:
		n = HDR + (m->valid ? m->hl : 0u);
		if (cap < n || (m->valid && m->hl && !m->rval))
			return 0;
		memset(b, 0, HDR);
		put_hdr(b, AUTH_TYPE_DHCHAP, m->id, m->tid);
		b[6] = m->hl;
		b[8] = m->valid;
		if (m->valid && m->hl)
			memcpy(b + HDR, m->rval, m->hl);
		return n;
	case AUTH_MSG_SUCCESS2:
		if (cap < HDR)
			return 0;
		memset(b, 0, HDR);
		put_hdr(b, AUTH_TYPE_DHCHAP, m->id, m->tid);
		return HDR;
	case AUTH_MSG_FAILURE1:
	case AUTH_MSG_FAILURE2:
		if (cap < FAIL_LEN)
			return 0;
		memset(b, 0, FAIL_LEN);
		/* AUTH-Type common, as the kernel (6.8 on) sends and nvmet reads */
		put_hdr(b, AUTH_TYPE_COMMON, m->id, m->tid);
		b[6] = m->rescode;
		b[7] = m->rescode_exp;
		return FAIL_LEN;
	default:
		return 0;
	}
}

static int bad(const char **why, const char *what)
{
	*why = what;
	return -1;
}

int auth_msg_parse(const uint8_t *b, size_t len, struct auth_msg *m, const char **why)
{
	memset(m, 0, sizeof(*m));
	if (len < NEG_HDR)
		return bad(why, "shorter than a message header");
	m->type = b[0];
	m->id = b[1];
	m->tid = get_le16(b + 4);
	switch (m->id) {
	case AUTH_MSG_FAILURE1:
	case AUTH_MSG_FAILURE2:
		/* older kernels sent failures as DH-HMAC-CHAP messages: both read */
		if (m->type != AUTH_TYPE_COMMON && m->type != AUTH_TYPE_DHCHAP)
			return bad(why, "unknown AUTH-Type");
		m->rescode = b[6];
		m->rescode_exp = b[7];
		return 0;
	case AUTH_MSG_NEGOTIATE: {
		if (m->type != AUTH_TYPE_COMMON)
			return bad(why, "a Negotiate that is not a common message");
		m->sc_c = b[6];
		uint8_t napd = b[7];
		if (!napd || len < NEG_HDR + (size_t)napd * DESC)
			return bad(why, "Negotiate: protocol descriptors missing or cut short");
		for (uint8_t i = 0; i < napd; i++) {
			const uint8_t *d = b + NEG_HDR + (size_t)i * DESC;
			if (d[0] != AUTH_PROTO_DHCHAP)
				continue;
			if (d[2] > 30 || d[3] > 30)
				return bad(why, "Negotiate: more than 30 hash or DH group identifiers");
			m->nhash = d[2];
			m->ndh = d[3];
			memcpy(m->hashes, d + 4, m->nhash);
			memcpy(m->dhgroups, d + 4 + 30, m->ndh);
			return 0;
		}
		return bad(why, "Negotiate: no DH-HMAC-CHAP descriptor");
	}
	case AUTH_MSG_CHALLENGE:
	case AUTH_MSG_REPLY:
	case AUTH_MSG_SUCCESS1:
	case AUTH_MSG_SUCCESS2:
		break;
	default:
		return bad(why, "unknown AUTH-Id");
	}
	if (m->type != AUTH_TYPE_DHCHAP)
		return bad(why, "a DH-HMAC-CHAP message with another AUTH-Type");
	if (len < HDR)
		return bad(why, "shorter than its header");
	if (m->id == AUTH_MSG_SUCCESS2)
		return 0;
	m->hl = b[6];
	const uint8_t *p = b + HDR;
	size_t need;
	if (m->id == AUTH_MSG_SUCCESS1) {
		m->valid = b[8];
		if (m->valid && len < HDR + (size_t)m->hl)
			return bad(why, "Success1: the response is cut short");
		m->rval = m->valid ? p : NULL;
		return 0;
	}
	m->dhvlen = get_le16(b + 10);
	m->seqnum = get_le32(b + 12);
	if (m->id == AUTH_MSG_CHALLENGE) {
		m->hashid = b[8];
		m->dhgid = b[9];
		need = HDR + (size_t)m->hl + m->dhvlen;
	} else {
		m->valid = b[8];
		need = HDR + 2u * m->hl + m->dhvlen;
	}
	if (len < need)
		return bad(why, "the lengths it claims run past its end");
	if (m->id == AUTH_MSG_REPLY) {
		m->rval = p;
		p += m->hl;
	}
	m->cval = p;
	m->dhv = m->dhvlen ? p + m->hl : NULL;
	return 0;
}
