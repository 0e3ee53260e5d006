/* The reconnect's authentication transaction (core/auth_run.c:
 * ctrl_auth_async_start, _step, _work, _abandon), as a queue's poll and its
 * reconnect worker drive it, fed a hostile controller: the Connect's
 * answer, the Challenge and the Success1 from the input, and what the
 * transport answered each staged command (its completion, a lost
 * connection, a transport error, a timeout, an NVMe status). Over a fake
 * wire's queue (its scratch buffer and staging slot), with the worker's
 * DH step run in line, as the poll waits for it. Checked: the start
 * follows auth_required's decision on the Connect's answer; every staged
 * command is an AUTH_Send or AUTH_Receive within the scratch buffer, and
 * the host asks for no more than a Challenge and a Success1; a transport
 * failure stays that failure and an NVMe status stays one (or, for a
 * Negotiate the host started, says the controller does no
 * authentication), the controller's Failure1 and any other end that is
 * not success are final; with a controller secret nothing ends in success;
 * the transaction ends within its steps; after its end, or after the
 * attempt abandoned it at any step, its scratch buffer holds no key
 * material and an answer finds no transaction. Input: fuzz_auth's (its
 * seeds with one byte put before the last serve here): byte 0 (bit 0 a
 * controller secret, bit 1 a restricted DH offer) and where it cuts the
 * Challenge from the Success1 that follow; the next-to-last byte the
 * queue ID (bits 0-1; 3 has no room), the step to abandon at (bits 2-4, 0:
 * never), the Connect's ASCR (bit 5), allow_unauthenticated_ctrl (bit 6)
 * and the Connect's ATR clear (bit 7: the host starts the transaction
 * when it has a controller secret); the last byte the transport's
 * answers, 2 bits per command, its top bit DNR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "connretry.h"
#include "cpriv.h"
#include "fakewire.h"
#include "protocol.h"
#include "qpriv.h"
#include "queue.h"

#define NQID 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static enum fw_action responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge, uint8_t *cqe)
{
	(void)ctx, (void)sqe, (void)sge, (void)nsge, (void)cqe;
	return FW_DROP; /* nothing is sent: the test answers each staged command itself */
}

static bool scratch_clean(struct nvmeof_queue *q)
{
	const uint8_t *s = q_scratch(q);
	for (size_t i = 0; i < Q_SCRATCH_SIZE; i++)
		if (s[i])
			return false;
	return true;
}

/* After the end: no key material left in the buffer, and no transaction. */
static void check_ended(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid)
{
	struct nvmeof_cpl cpl;
	memset(&cpl, 0, sizeof(cpl));
	if (!scratch_clean(q) || ctrl_auth_async_step(c, q, qid, &cpl) != NVMEOF_EINVAL)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nvmeof_ctrl *c;
	static struct nvmeof_queue *q;
	static struct auth_key *hk, *ck;
	if (!c) {
		struct fake_wire *fw = fw_new(8, responder, NULL);
		struct q_params p = {.qid = 1, .depth = 8, .cmd_timeout_ms = 30000, .wait_mode = NVMEOF_WAIT_POLL};
		c = calloc(1, sizeof(*c));
		hk = auth_secret_alloc(sizeof(*hk));
		ck = auth_secret_alloc(sizeof(*ck));
		if (!fw || !c || !hk || !ck || q_open_fake(&p, fw, &q))
			abort();
		hk->len = 32, hk->transform = 1;
		ck->len = 48, ck->transform = 0;
		pthread_mutex_init(&c->lock, NULL);
		snprintf(c->subnqn, sizeof(c->subnqn), "nqn.sub");
		snprintf(c->hostnqn, sizeof(c->hostnqn), "nqn.host");
		c->nreauth = NQID;
		c->reauth = calloc(NQID, sizeof(*c->reauth));
		c->o.cmd_timeout_ms = 30000;
	}
	if (size < 3)
		return 0;
	uint8_t faults = data[--size], ctl = data[--size];
	size_t cut = 1 + (size_t)data[0] * (size - 1) / 255;
	const uint8_t *parts[2] = {data + 1, data + cut};
	size_t lens[2] = {cut - 1, size - cut};
	uint16_t qid = ctl & 3;
	int abandon_at = (ctl >> 2) & 7; /* 0: never; else before answering command abandon_at - 1 */
	bool has_ck = data[0] & 1, allow = ctl & 64;
	uint32_t cdw0 = (ctl & 128 ? 0 : NVMF_CONNECT_AUTHREQ_ATR) | (ctl & 32 ? NVMF_CONNECT_AUTHREQ_ASCR : 0);
	c->host_key = hk;
	c->ctrl_key = has_ck ? ck : NULL;
	c->o.allow_unauthenticated_ctrl = allow;
	c->auth_hashes = AUTH_HASHES_ALL;
	c->auth_dhgroups = data[0] & 2 ? (1u << AUTH_DH_NULL) | (1u << AUTH_DH_FFDHE2048) : AUTH_DHGROUPS_ALL;
	uint32_t io_auth0 = c->info.auth_io_queues;
	c->admin_auth_hash = 0;
	c->auth_tid = 0x1234; /* the seeds' T_ID (fuzz_auth's) */

	bool needed, hi;
	int req = auth_required(cdw0, true, has_ck, allow, qid, c->subnqn, c->hostnqn, &needed, &hi);
	int rc = ctrl_auth_async_start(c, q, qid, cdw0);
	if (req || !needed) {
		if (rc != req)
			abort(); /* the start decides as auth_required does */
		check_ended(c, q, qid);
		return 0;
	}
	if (qid >= NQID) {
		if (rc != NVMEOF_EINVAL)
			abort(); /* no room for a queue ID beyond the controller's */
		return 0;
	}
	int recvs = 0, step = 0;
	bool failure2 = false; /* the host gave up: its Failure2 is what is staged */
	while (rc == Q_RECONNECT_MORE || rc == Q_RECONNECT_WORK) {
		if (rc == Q_RECONNECT_WORK) { /* the worker's DH step; the poll waits for it */
			rc = ctrl_auth_async_work(c, q, qid);
			continue;
		}
		if (++step > 8)
			abort(); /* a transaction that never ends */
		const uint8_t *sqe = q->bg.sqe;
		uint32_t len = q->bg.data_len;
		if (!q->bg.has_cmd || sqe[0] != NVME_FABRICS_OPCODE || len > Q_SCRATCH_SIZE ||
		    (sqe[4] != NVMF_FCTYPE_AUTH_SEND && sqe[4] != NVMF_FCTYPE_AUTH_RECV))
			abort();
		q->bg.has_cmd = false;
		if (abandon_at == step) {
			ctrl_auth_async_abandon(c, q, qid);
			check_ended(c, q, qid);
			return 0;
		}
		bool recv = sqe[4] == NVMF_FCTYPE_AUTH_RECV;
		struct auth_msg m;
		const char *why;
		if (!recv)
			failure2 = !auth_msg_parse(q_scratch(q), len, &m, &why) && m.id == AUTH_MSG_FAILURE2;
		else {
			if (recvs > 1)
				abort(); /* more than a Challenge and a Success1 */
			memset(q_scratch(q), 0, Q_SCRATCH_SIZE);
			memcpy(q_scratch(q), parts[recvs], lens[recvs] < len ? lens[recvs] : len);
			recvs++;
		}
		static const int trc[4] = {0, NVMEOF_ECLOSED, NVMEOF_ETRANSPORT, NVMEOF_ENVME};
		int xrc = step <= 4 ? trc[(faults >> (2 * (step - 1))) & 3] : 0;
		struct nvmeof_cpl cpl;
		memset(&cpl, 0, sizeof(cpl));
		cpl.err = xrc;
		if (xrc == NVMEOF_ENVME)
			cpl.status = (uint16_t)((data[0] | 1) << 1 | (faults & 0x80) << 7);
		bool failure1 = !xrc && recv && !auth_msg_parse(q_scratch(q), len, &m, &why) &&
				m.id == AUTH_MSG_FAILURE1;
		rc = ctrl_auth_async_step(c, q, qid, &cpl);
		if (rc == Q_RECONNECT_MORE || rc == Q_RECONNECT_WORK) {
			if (xrc || failure1)
				abort(); /* a failed command or the controller's refusal ends it */
			continue;
		}
		if (!failure2 && (xrc == NVMEOF_ECLOSED || xrc == NVMEOF_ETRANSPORT) &&
		    (rc != xrc || cr_fabrics(rc, 0, false) != CR_TRANSIENT))
			abort(); /* a transport failure is never made final */
		if (!failure2 && xrc == NVMEOF_ENVME && rc != NVMEOF_ENVME && !(hi && step == 1 && rc == NVMEOF_ENOTSUP))
			abort(); /* a status stays one, or says no authentication here */
		if (failure1 && rc != NVMEOF_EINVAL)
			abort(); /* the controller's refusal is final */
		if (!xrc && rc < 0 && (!cr_reconnect_final(rc, 0) || cr_fabrics(rc, 0, false) != CR_FINAL))
			abort(); /* the controller's doing is final: a retry would meet it again */
	}
	if (rc == 0) {
		if (has_ck)
			abort(); /* the controller's response cannot be forged */
		if (qid ? c->info.auth_io_queues != io_auth0 + 1 : !c->admin_auth_hash)
			abort(); /* success is recorded */
	}
	check_ended(c, q, qid);
	return 0;
}
