/*
 * One DH-HMAC-CHAP transaction, the host's side, as the steps of NVMe Base
 * 2.x 8.13.5 (and the kernel host's nvme_queue_auth_work):
 *   AUTH_Send Negotiate -> AUTH_Receive Challenge -> AUTH_Send Reply ->
 *   AUTH_Receive Success1 -> [bidirectional] AUTH_Send Success2
 * A problem the host finds in the controller's messages ends the
 * transaction with an AUTH_Send Failure2 (so the controller stops waiting),
 * then the error; a Failure1 from the controller ends it at once. No I/O
 * here: the caller sends what auth_tx_next builds.
 *
 * What ends a transaction is final (NVMEOF_EINVAL, as the kernel host's
 * -EKEYREJECTED) when it is the controller's word or its behaviour: its
 * Failure1, a response that does not match the controller secret, and
 * every protocol violation (a malformed message, another AUTH-Id or
 * transaction ID than the step's, a wrong hash or DH value length, a
 * Success1 without the response we asked for): a wrong key, an impostor
 * or a broken controller stays one when asked again. A lost connection
 * stays a transport failure, and an NVMe status on AUTH_Send/AUTH_Receive
 * stays NVMEOF_ENVME, for the caller to classify by its DNR bit.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "internal.h"
#include "protocol.h"

static const char *step_name(enum auth_step s)
{
	switch (s) {
	case AUTH_NEGOTIATE: return "AUTH_Send Negotiate";
	case AUTH_RECV_CHALLENGE: return "AUTH_Receive Challenge";
	case AUTH_DH_STEP: return "the DH step";
	case AUTH_REPLY: return "AUTH_Send Reply";
	case AUTH_RECV_SUCCESS1: return "AUTH_Receive Success1";
	case AUTH_SUCCESS2: return "AUTH_Send Success2";
	case AUTH_FAILURE2: return "AUTH_Send Failure2";
	default: return "done";
	}
}

void auth_tx_init(struct auth_tx *t, const struct auth_key *host_key, const struct auth_key *ctrl_key,
		  const char *hostnqn, const char *subnqn, uint16_t qid, uint16_t tid)
{
	memset(t, 0, sizeof(*t));
	t->host_key = host_key;
	t->ctrl_key = ctrl_key;
	t->hostnqn = hostnqn;
	t->subnqn = subnqn;
	t->qid = qid;
	t->tid = tid;
	t->step = AUTH_NEGOTIATE;
	t->hashes = AUTH_HASHES_ALL;
	t->dhgroups = AUTH_DHGROUPS_ALL;
}

int auth_required(uint32_t cdw0, bool host_key, bool ctrl_key, bool allow_unauth, uint16_t qid,
		  const char *subnqn, const char *hostnqn, bool *needed, bool *host_initiated)
{
	*needed = *host_initiated = false;
	if (cdw0 & NVMF_CONNECT_AUTHREQ_ASCR)
		return nvmeof_err(NVMEOF_ENOTSUP,
				  "Fabrics Connect queue %u: the controller requires a secure channel (TLS "
				  "secure channel concatenation), which this library does not support yet", qid);
	if (cdw0 & NVMF_CONNECT_AUTHREQ_ATR) {
		if (!host_key)
			return nvmeof_err(NVMEOF_EINVAL,
					  "Fabrics Connect queue %u: %s requires in-band authentication (DH-HMAC-CHAP) "
					  "of %s: give its host secret (dhchap_secret)", qid, subnqn, hostnqn);
		*needed = true;
		return 0;
	}
	/* a controller secret asks for the controller's proof: a controller
	 * that does not ask for authentication (an impersonator need not)
	 * is challenged all the same */
	if (ctrl_key && !allow_unauth)
		*needed = *host_initiated = true;
	return 0;
}

void auth_tx_clear(struct auth_tx *t) { auth_cleanse(t, sizeof(*t)); }

/* The host gives up: a Failure2 with exp goes out next, then err. */
static int fail2(struct auth_tx *t, uint8_t exp, int err, const char *fmt, ...) PRINTF(4, 5);
static int fail2(struct auth_tx *t, uint8_t exp, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
	t->fail_exp = exp;
	t->err = err;
	t->step = AUTH_FAILURE2;
	return AUTH_TX_MORE;
}

int auth_tx_next(struct auth_tx *t, uint8_t *sqe, uint8_t *buf, size_t cap, uint32_t *data_len)
{
	struct auth_msg m;
	size_t n = 0;
	memset(&m, 0, sizeof(m));
	m.tid = t->tid;
	switch (t->step) {
	case AUTH_NEGOTIATE:
		/* what the user allows (default: every hash and group); the
		 * controller chooses (nvmet: the host's configured ones) */
		m.id = AUTH_MSG_NEGOTIATE;
		for (uint8_t i = AUTH_HASH_SHA256; i <= AUTH_HASH_SHA512; i++)
			if (t->hashes & (1u << i))
				m.hashes[m.nhash++] = i;
		for (uint8_t i = AUTH_DH_NULL; i <= AUTH_DH_FFDHE8192; i++)
			if (t->dhgroups & (1u << i))
				m.dhgroups[m.ndh++] = i;
		break;
	case AUTH_REPLY:
		m.id = AUTH_MSG_REPLY;
		m.hl = t->hl;
		m.valid = t->ctrl_key ? 1 : 0;
		m.seqnum = t->s2;
		m.rval = t->resp;
		m.cval = t->c2;
		m.dhvlen = (uint16_t)auth_dh_len(t->dhgid);
		m.dhv = t->pub;
		break;
	case AUTH_SUCCESS2:
		m.id = AUTH_MSG_SUCCESS2;
		break;
	case AUTH_FAILURE2:
		m.id = AUTH_MSG_FAILURE2;
		m.rescode = AUTH_FAIL_REASON_FAILED;
		m.rescode_exp = t->fail_exp ? t->fail_exp : AUTH_FAIL_FAILED;
		break;
	case AUTH_RECV_CHALLENGE:
	case AUTH_RECV_SUCCESS1: {
		uint32_t al = cap < AUTH_RECV_MAX ? (uint32_t)cap : AUTH_RECV_MAX;
		memset(buf, 0, al);
		nvmf_sqe_auth_recv(sqe, 0, al);
		*data_len = al;
		return 0;
	}
	default:
		return nvmeof_err(NVMEOF_EINVAL, "authentication queue %u: no step left", t->qid);
	}
	if (!(n = auth_msg_encode(&m, buf, cap)))
		return nvmeof_err(NVMEOF_EINVAL, "authentication queue %u: %s does not fit %zu bytes", t->qid,
				  step_name(t->step), cap);
	nvmf_sqe_auth_send(sqe, 0, (uint32_t)n);
	*data_len = (uint32_t)n;
	return 0;
}

/* The Challenge: the controller's choice of hash and group, C1, S1, its DH
 * value; our response, C2 and S2 when bidirectional, our DH value. */
static int on_challenge(struct auth_tx *t, const struct auth_msg *m)
{
	size_t hl = auth_hash_len(m->hashid);
	if (!hl || !(t->hashes & (1u << m->hashid)))
		return fail2(t, AUTH_FAIL_HASH_UNUSABLE, NVMEOF_ENOTSUP,
			     "the controller chose hash function %u (%s), which we did not offer", m->hashid,
			     auth_hash_name(m->hashid));
	if (m->hl != hl)
		return fail2(t, AUTH_FAIL_INCORRECT_PAYLOAD, NVMEOF_EINVAL,
			     "Challenge: hash length %u for %s", m->hl, auth_hash_name(m->hashid));
	if (m->dhgid > AUTH_DH_FFDHE8192 || !(t->dhgroups & (1u << m->dhgid)))
		return fail2(t, AUTH_FAIL_DHGROUP_UNUSABLE, NVMEOF_ENOTSUP,
			     "the controller chose DH group %u (%s), which we did not offer", m->dhgid,
			     auth_dhgroup_name(m->dhgid));
	/* a DH value may come unpadded (SPDK's target sent one byte short in
	 * about 1 of 256 challenges; the kernel host reads them): shorter is
	 * left-padded in auth_dh_derive, longer or none is refused */
	if (m->dhgid ? !m->dhvlen || m->dhvlen > auth_dh_len(m->dhgid) : m->dhvlen != 0)
		return fail2(t, AUTH_FAIL_INCORRECT_PAYLOAD, NVMEOF_EINVAL,
			     "Challenge: a DH value of %u bytes for group %s (%zu expected)", m->dhvlen,
			     auth_dhgroup_name(m->dhgid), auth_dh_len(m->dhgid));
	t->hashid = m->hashid;
	t->dhgid = m->dhgid;
	t->hl = (uint8_t)hl;
	t->s1 = m->seqnum;
	memcpy(t->c1, m->cval, hl);
	if (m->dhvlen) /* the null group has none (and no pointer) */
		memcpy(t->peer, m->dhv, m->dhvlen);
	t->peer_len = m->dhvlen;
	t->step = AUTH_DH_STEP;
	return t->defer_dh ? AUTH_TX_DH : auth_tx_dh_step(t);
}

/* Our DH key, the shared secret, our response, and our challenge to the
 * controller when bidirectional. */
int auth_tx_dh_step(struct auth_tx *t)
{
	uint8_t key[AUTH_KEY_MAX], chal[AUTH_HASH_MAX];
	size_t klen = 0, hl = t->hl;
	void *dh = NULL;
	int rc;
	if (t->step != AUTH_DH_STEP)
		return nvmeof_err(NVMEOF_EINVAL, "authentication queue %u: the DH step out of turn (%s)", t->qid,
				  step_name(t->step));
	memcpy(chal, t->c1, hl);
	if (t->dhgid) {
		t->skey_len = auth_dh_len(t->dhgid);
		if ((rc = auth_dh_generate(t->dhgid, &dh, t->pub)) ||
		    (rc = auth_dh_derive(dh, t->dhgid, t->peer, t->peer_len, t->skey)) ||
		    (rc = auth_augment(t->hashid, t->skey, t->skey_len, t->c1, chal))) {
			auth_dh_free(dh);
			return fail2(t, AUTH_FAIL_FAILED, rc, "%s", nvmeof_errmsg());
		}
		auth_dh_free(dh);
	}
	if ((rc = auth_key_transform(t->host_key, t->hostnqn, key, &klen)) ||
	    (rc = auth_response(t->hashid, key, klen, chal, t->s1, t->tid, false, t->hostnqn, t->subnqn, t->resp)))
		goto out;
	/* S2 in every Reply, one-way too, and never 0: NVMe Base 2.2
	 * 8.3.4.5.4 reserves 0 for a secure channel's PSK request (the kernel
	 * host does the same since "always set valid seq_num in dhchap
	 * reply"). One-way, C2 stays zero and CVALID 0. */
	do {
		if ((rc = auth_random((uint8_t *)&t->s2, sizeof(t->s2))))
			goto out;
	} while (!t->s2);
	if (t->ctrl_key && (rc = auth_random(t->c2, hl))) /* our challenge to the controller */
		goto out;
	t->step = AUTH_REPLY;
	rc = AUTH_TX_MORE;
out:
	auth_cleanse(key, sizeof(key));
	auth_cleanse(chal, sizeof(chal));
	if (rc < 0)
		return fail2(t, AUTH_FAIL_FAILED, rc, "%s", nvmeof_errmsg());
	return rc;
}

/* Success1: the controller accepted us; bidirectional, its response to C2
 * must be what its secret gives. */
static int on_success1(struct auth_tx *t, const struct auth_msg *m)
{
	uint8_t key[AUTH_KEY_MAX], chal[AUTH_HASH_MAX], want[AUTH_HASH_MAX];
	size_t klen = 0;
	int rc;
	if (!t->ctrl_key) {
		t->step = AUTH_DONE;
		return 0;
	}
	if (!m->valid || m->hl != t->hl)
		return fail2(t, AUTH_FAIL_INCORRECT_PAYLOAD, NVMEOF_EINVAL,
			     "Success1 carries no controller response (RVALID %u, HL %u)", m->valid, m->hl);
	memcpy(chal, t->c2, t->hl);
	if ((!t->dhgid || !(rc = auth_augment(t->hashid, t->skey, t->skey_len, t->c2, chal))) &&
	    !(rc = auth_key_transform(t->ctrl_key, t->subnqn, key, &klen)))
		rc = auth_response(t->hashid, key, klen, chal, t->s2, t->tid, true, t->hostnqn, t->subnqn, want);
	bool match = !rc && auth_equal(want, m->rval, t->hl);
	auth_cleanse(key, sizeof(key));
	auth_cleanse(chal, sizeof(chal));
	auth_cleanse(want, sizeof(want));
	if (rc)
		return fail2(t, AUTH_FAIL_FAILED, rc, "%s", nvmeof_errmsg());
	if (!match)
		return fail2(t, AUTH_FAIL_FAILED, NVMEOF_EINVAL,
			     "the controller's response does not match the controller secret "
			     "(a wrong dhchap_ctrl_secret, or not the controller we meant)");
	t->step = AUTH_SUCCESS2;
	return AUTH_TX_MORE;
}

int auth_tx_answer(struct auth_tx *t, int rc, const struct nvmeof_cpl *cpl, const uint8_t *buf, size_t len)
{
	struct auth_msg m;
	const char *why = NULL;
	enum auth_step s = t->step;
	if (rc) {
		char sb[128];
		if (s == AUTH_FAILURE2) /* what failed first is what the caller reads */
			return nvmeof_err(t->err, "authentication queue %u: %s", t->qid, t->why);
		if (rc == NVMEOF_ENVME && cpl)
			return nvmeof_err(rc, "authentication queue %u: %s: %s", t->qid, step_name(s),
					  nvmeof_cpl_str(cpl, sb, sizeof(sb)));
		/* nvmet (6.12) answers a response it refuses by dropping the
		 * connection, not with a Failure1: say what that may mean. But
		 * a lost connection is a transport failure, whatever the step:
		 * it stays one, so the connect is tried again (connretry.h);
		 * only the controller's own Failure1 is final */
		if ((rc == NVMEOF_ECLOSED || rc == NVMEOF_ETRANSPORT) &&
		    (s == AUTH_REPLY || s == AUTH_RECV_SUCCESS1))
			return nvmeof_err(rc,
					  "authentication queue %u: the connection closed after our response (%s): "
					  "the controller refused it%s, or the link failed", t->qid, step_name(s),
					  t->host_initiated ? "" : " (most likely a wrong host secret, dhchap_secret, "
					  "for this host NQN)");
		return nvmeof_err_prefix(rc, "authentication queue %u: %s", t->qid, step_name(s));
	}
	switch (s) {
	case AUTH_NEGOTIATE:
		t->step = AUTH_RECV_CHALLENGE;
		return AUTH_TX_MORE;
	case AUTH_REPLY:
		t->step = AUTH_RECV_SUCCESS1;
		return AUTH_TX_MORE;
	case AUTH_SUCCESS2:
		t->step = AUTH_DONE;
		return 0;
	case AUTH_FAILURE2:
		t->step = AUTH_DONE;
		return nvmeof_err(t->err, "authentication queue %u: %s", t->qid, t->why);
	case AUTH_RECV_CHALLENGE:
	case AUTH_RECV_SUCCESS1:
		break;
	default:
		return nvmeof_err(NVMEOF_EINVAL, "authentication queue %u: an answer after the end", t->qid);
	}
	uint8_t want = s == AUTH_RECV_CHALLENGE ? AUTH_MSG_CHALLENGE : AUTH_MSG_SUCCESS1;
	if (auth_msg_parse(buf, len, &m, &why))
		return fail2(t, AUTH_FAIL_INCORRECT_PAYLOAD, NVMEOF_EINVAL, "%s: %s", step_name(s), why);
	if (m.id == AUTH_MSG_FAILURE1) {
		t->step = AUTH_DONE;
		return nvmeof_err(NVMEOF_EINVAL,
				  "authentication queue %u: the controller refused: %s (AUTH_Failure1 explanation "
				  "0x%02x)%s", t->qid, auth_failure_name(m.rescode_exp), m.rescode_exp,
				  m.rescode_exp == AUTH_FAIL_FAILED && s == AUTH_RECV_SUCCESS1
					  ? ": a wrong host secret (dhchap_secret) for this host NQN" : "");
	}
	if (m.id != want)
		return fail2(t, AUTH_FAIL_INCORRECT_MESSAGE, NVMEOF_EINVAL, "%s: got AUTH-Id 0x%02x",
			     step_name(s), m.id);
	if (m.tid != t->tid)
		return fail2(t, AUTH_FAIL_INCORRECT_PAYLOAD, NVMEOF_EINVAL,
			     "%s: transaction ID %u, not ours (%u)", step_name(s), m.tid, t->tid);
	return s == AUTH_RECV_CHALLENGE ? on_challenge(t, &m) : on_success1(t, &m);
}
