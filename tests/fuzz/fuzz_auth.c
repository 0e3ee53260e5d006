/* In-band authentication messages from a hostile controller: the parser
 * must stay within the bytes it is given and claim no field past them, and
 * the host's transaction, fed any Challenge and Success1, must end (an
 * error or success, never a step past AUTH_DONE) without reading out of
 * bounds. The first byte splits the input into the two answers; the last
 * chooses, per command, what the transport answered: the command's
 * completion, a lost connection, a transport error, a timeout, or an NVMe
 * status. A transport failure stays that failure (a connect retries it),
 * whatever the step; an NVMe status stays one, for its DNR bit to decide;
 * every other end that is not success (the controller's Failure1, a
 * wrong response, any protocol violation) is final, for a connect and a
 * reconnect alike (OpenSSL out of memory, NVMEOF_ENOMEM, would not be, but
 * does not happen here). With a controller secret (the first byte odd) nothing
 * may end in success: the controller's response cannot be forged. The
 * transaction runs as the controller asked for it or as the host started
 * it (bit 2 of the first byte), and auth_required's decision on a
 * Connect's answer (its AUTHREQ bits from the input) is checked too. */
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "connretry.h"
#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_parse(const uint8_t *b, size_t len)
{
	struct auth_msg m;
	const char *why;
	if (auth_msg_parse(b, len, &m, &why))
		return;
	const uint8_t *end = b + len;
	if ((m.rval && m.rval + m.hl > end) || (m.cval && m.cval + m.hl > end) ||
	    (m.dhv && m.dhv + m.dhvlen > end) || m.nhash > 30 || m.ndh > 30)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[AUTH_RECV_MAX];
	static const struct auth_key hk = {.len = 32, .transform = 1};
	static const struct auth_key ck = {.len = 48, .transform = 0};
	if (size < 2)
		return 0;
	uint8_t faults = data[--size]; /* the last byte, 2 bits per command: what the transport answered */
	size_t cut = 1 + (size_t)data[0] * (size - 1) / 255;
	/* each part alone, in a buffer of exactly its size (ASan sees any overread) */
	const uint8_t *parts[2] = {data + 1, data + cut};
	size_t lens[2] = {cut - 1, size - cut};
	for (int i = 0; i < 2; i++) {
		uint8_t *p = malloc(lens[i] ? lens[i] : 1);
		memcpy(p, parts[i], lens[i]);
		check_parse(p, lens[i]);
		free(p);
	}
	struct auth_tx t;
	uint8_t sqe[64];
	uint32_t len;
	int part = 0;
	/* whether a Connect's answer asks for authentication, from its
	 * first four bytes: TLS is refused, ATR needs a host secret, and a
	 * controller secret is checked also when the controller does not ask
	 * (the host starts the transaction), unless allowed not to be */
	uint32_t cdw0 = (uint32_t)data[0] | (uint32_t)(size > 1 ? data[1] : 0) << 8 |
			(uint32_t)(size > 2 ? data[2] : 0) << 16 | (uint32_t)faults << 24;
	bool needed, hi;
	bool has_hk = data[0] & 8, has_ck = data[0] & 1, allow = data[0] & 16;
	int req = auth_required(cdw0, has_hk, has_ck, allow, 1, "nqn.sub", "nqn.host", &needed, &hi);
	if ((cdw0 & NVMF_CONNECT_AUTHREQ_ASCR) ? req != NVMEOF_ENOTSUP
	    : (cdw0 & NVMF_CONNECT_AUTHREQ_ATR) ? (has_hk ? req || !needed || hi : req != NVMEOF_EINVAL)
	    : req || needed != (has_ck && !allow) || hi != needed)
		abort();
	auth_tx_init(&t, &hk, (data[0] & 1) ? &ck : NULL, "nqn.host", "nqn.sub", 1, 0x1234);
	/* the host-started transaction (the controller did not ask): the
	 * same steps and the same classification of every end */
	t.host_initiated = data[0] & 4;
	if (data[0] & 2) /* a restricted offer */
		t.dhgroups = (1u << AUTH_DH_NULL) | (1u << AUTH_DH_FFDHE2048);
	for (int step = 0; step < 8; step++) {
		if (auth_tx_next(&t, sqe, buf, sizeof(buf), &len))
			break;
		if (len > sizeof(buf))
			abort();
		bool recv = sqe[4] == NVMF_FCTYPE_AUTH_RECV;
		if (recv) {
			if (part > 1)
				abort(); /* the host asks for more than a Challenge and a Success1 */
			memset(buf, 0, sizeof(buf));
			memcpy(buf, parts[part], lens[part] < sizeof(buf) ? lens[part] : sizeof(buf));
			part++;
		}
		static const int trc[4] = {0, NVMEOF_ECLOSED, NVMEOF_ETRANSPORT, NVMEOF_ENVME};
		int xrc = step < 4 ? trc[(faults >> (2 * step)) & 3] : 0;
		struct nvmeof_cpl cpl;
		memset(&cpl, 0, sizeof(cpl));
		cpl.err = xrc;
		cpl.status = (uint16_t)(data[0] << 1 | (faults & 0x80) << 7); /* DNR with the last byte's top bit */
		enum auth_step before = t.step;
		struct auth_msg m;
		const char *why;
		bool failure1 = !xrc && recv && !auth_msg_parse(buf, len, &m, &why) && m.id == AUTH_MSG_FAILURE1;
		int rc = auth_tx_answer(&t, xrc, xrc == NVMEOF_ENVME ? &cpl : NULL, buf, len);
		/* a transport failure is never made final, unless the host had
		 * already given up (a Failure2 after its own finding) */
		if ((xrc == NVMEOF_ECLOSED || xrc == NVMEOF_ETRANSPORT) && before != AUTH_FAILURE2 &&
		    (rc != xrc || cr_fabrics(rc, 0, false) != CR_TRANSIENT))
			abort();
		if (xrc == NVMEOF_ENVME && before != AUTH_FAILURE2 && rc != NVMEOF_ENVME)
			abort();
		if (failure1 && rc != NVMEOF_EINVAL)
			abort(); /* the controller's refusal is final */
		/* whatever the controller sent, when the transport did not fail
		 * this step, the transaction's failure is final: a retry would
		 * meet the same controller */
		if (!xrc && rc < 0 && (!cr_reconnect_final(rc, 0) || cr_fabrics(rc, 0, false) != CR_FINAL))
			abort();
		/* an NVMe status is final exactly when it says Do Not Retry */
		if (xrc == NVMEOF_ENVME && rc == NVMEOF_ENVME &&
		    cr_reconnect_final(rc, cpl.status) != (bool)NVMEOF_STATUS_DNR(cpl.status))
			abort();
		if (xrc && rc == AUTH_TX_MORE)
			abort(); /* a failed command ends the transaction */
		/* with a controller secret, success needs the controller's
		 * response to our random C2 and S2: no input can forge it, so
		 * a success means its check was skipped */
		if (rc == 0 && (data[0] & 1))
			abort();
		if (rc != AUTH_TX_MORE)
			break;
		if (step == 7)
			abort(); /* a transaction that never ends */
	}
	auth_tx_clear(&t);
	return 0;
}
