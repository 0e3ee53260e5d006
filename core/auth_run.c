/*
 * In-band authentication of a controller's queues: after each Fabrics
 * Connect whose response asks for it (AUTHREQ.ATR), the DH-HMAC-CHAP
 * transaction of auth_tx.c over AUTH_Send/AUTH_Receive on that queue.
 * Synchronously (q_exec) at bring-up, reassociation and I/O queue
 * creation, which already wait for their Connect; from the queue's poll
 * after an I/O queue's reconnect, whose Connect the poll sends too (no
 * wait may nest there, and in a shared poll group no other thread may poll
 * the queue): each step is staged and its answer comes back through the
 * reconnect's finish (reassoc.c); the DH step runs on the reconnect's
 * worker thread, not in the poll.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpriv.h"
#include "trace.h"

/* A reconnect's transaction, kept between the poll's steps. */
struct ctrl_reauth {
	struct auth_tx t;
	uint32_t len; /* the staged command's data length: what an AUTH_Receive filled */
	bool active;  /* between the Connect's answer and the transaction's end */
};

/* The secrets, parsed, live for the controller's lifetime: on pages kept
 * out of core dumps (auth_secret_alloc), as is each transaction's state. */
static int parse_one(const char *secret, const char *what, struct auth_key **out)
{
	struct auth_key *k = auth_secret_alloc(sizeof(*k));
	if (!k)
		return nvmeof_err(NVMEOF_ENOMEM, "connect: out of memory");
	int rc = auth_key_parse(secret, what, k);
	if (rc) {
		auth_secret_free(k, sizeof(*k));
		return nvmeof_err_prefix(rc, "connect");
	}
	*out = k;
	return 0;
}

int ctrl_auth_setup(struct nvmeof_ctrl *c, const struct nvmeof_ctrl_opts *opts)
{
	int rc;
	bool hs = opts->dhchap_secret && opts->dhchap_secret[0];
	bool cs = opts->dhchap_ctrl_secret && opts->dhchap_ctrl_secret[0];
	/* pointers into opts are not kept */
	c->o.dhchap_secret = c->o.dhchap_ctrl_secret = c->o.dhchap_hashes = c->o.dhchap_dhgroups = NULL;
	if ((rc = auth_offer_parse(opts->dhchap_hashes, false, &c->auth_hashes)) ||
	    (rc = auth_offer_parse(opts->dhchap_dhgroups, true, &c->auth_dhgroups)))
		return rc;
	if (!c->auth_hashes || !c->auth_dhgroups)
		return nvmeof_err(NVMEOF_EINVAL, "connect: %s lists nothing to offer",
				  !c->auth_hashes ? "dhchap_hashes" : "dhchap_dhgroups");
	if (cs && !hs)
		return nvmeof_err(NVMEOF_EINVAL, "connect: a controller secret (dhchap_ctrl_secret) needs a host "
				  "secret (dhchap_secret) too");
	if (hs && (rc = parse_one(opts->dhchap_secret, "host secret (dhchap_secret)", &c->host_key)))
		return rc;
	if (cs && (rc = parse_one(opts->dhchap_ctrl_secret, "controller secret (dhchap_ctrl_secret)",
				  &c->ctrl_key)))
		return rc;
	uint16_t tid0 = 0;
	auth_random((uint8_t *)&tid0, sizeof(tid0)); /* any start will do; 0 when RAND fails */
	c->auth_tid = tid0;
	return 0;
}

void ctrl_auth_free(struct nvmeof_ctrl *c)
{
	if (c->reauth) {
		for (uint32_t i = 0; i < c->nreauth; i++)
			auth_secret_free(c->reauth[i], sizeof(struct ctrl_reauth));
		free(c->reauth);
	}
	auth_secret_free(c->host_key, sizeof(struct auth_key));
	auth_secret_free(c->ctrl_key, sizeof(struct auth_key));
	c->reauth = NULL;
	c->nreauth = 0;
	c->host_key = c->ctrl_key = NULL;
}

/* Whether the Connect's answer leads to a transaction (auth_required). */
static int required(struct nvmeof_ctrl *c, uint16_t qid, uint32_t cdw0, bool *needed, bool *host_initiated)
{
	return auth_required(cdw0, c->host_key != NULL, c->ctrl_key != NULL, c->o.allow_unauthenticated_ctrl, qid,
			     c->subnqn, c->hostnqn, needed, host_initiated);
}

static void begin(struct nvmeof_ctrl *c, struct auth_tx *t, uint16_t qid, bool host_initiated)
{
	uint16_t tid = __atomic_fetch_add(&c->auth_tid, 1, __ATOMIC_RELAXED);
	auth_tx_init(t, c->host_key, c->ctrl_key, c->hostnqn, c->subnqn, qid, tid);
	t->hashes = c->auth_hashes;
	t->dhgroups = c->auth_dhgroups;
	t->host_initiated = host_initiated;
}

/* A status on the host-started Negotiate that says the controller does no
 * in-band authentication (the command unknown, its SECP/SPSP refused, or
 * not expected on this queue): asked again, it says the same, DNR or not. */
static bool no_auth_here(const struct auth_tx *t, int rc, uint16_t status)
{
	if (rc != NVMEOF_ENVME || t->step != AUTH_NEGOTIATE || NVMEOF_STATUS_SCT(status) != 0)
		return false;
	unsigned sc = NVMEOF_STATUS_SC(status);
	return sc == 0x01 || sc == 0x02 || sc == 0x0c; /* Invalid Opcode, Invalid Field, Command Sequence Error */
}

/* A transaction the host started failed: the controller was not
 * authenticated, and the message says why the connect stops there.
 * status: the NVMe status when rc is NVMEOF_ENVME. A controller that does
 * not authenticate at all is final (NVMEOF_ENOTSUP): with a controller
 * secret it must not be taken, and retrying until ctrl_loss_tmo would not
 * change it; Command Interrupted and the like stay the status's to class. */
static int end_error(const struct auth_tx *t, int rc, uint16_t status)
{
	if (rc >= 0 || !t->host_initiated)
		return rc;
	char why[320];
	snprintf(why, sizeof(why), "%s", nvmeof_errmsg());
	bool none = no_auth_here(t, rc, status);
	/* what to do first: the reason after it may be long */
	return nvmeof_err(none ? NVMEOF_ENOTSUP : rc,
			  "Fabrics Connect queue %u: the controller did not ask for authentication and failed "
			  "the transaction this host started to check the controller secret (dhchap_ctrl_secret)%s: "
			  "not authenticated (allow_unauthenticated_ctrl accepts such a controller): %s", t->qid,
			  none ? "; it does not support in-band authentication" : "", why);
}

static void done(struct nvmeof_ctrl *c, const struct auth_tx *t)
{
	if (t->qid) {
		pthread_mutex_lock(&c->lock);
		c->info.auth_io_queues++;
		pthread_mutex_unlock(&c->lock);
	} else { /* into info where the association is committed (ctrl.c, reassoc.c) */
		c->admin_auth_hash = t->hashid;
		c->admin_auth_dh = t->dhgid;
		c->admin_auth_bidir = t->ctrl_key != NULL;
	}
	trace_ctrl(&c->o, t->qid, "authenticated: DH-HMAC-CHAP %s, %s%s", auth_hash_name(t->hashid),
		   auth_dhgroup_name(t->dhgid), t->ctrl_key ? ", bidirectional" : "");
}

int ctrl_auth_sync(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid, uint32_t cdw0, uint16_t *status)
{
	bool needed, hi;
	int rc = required(c, qid, cdw0, &needed, &hi);
	uint16_t st = 0;
	if (qid == 0)
		c->admin_auth_hash = c->admin_auth_dh = 0, c->admin_auth_bidir = false;
	if (rc || !needed)
		return rc;
	struct auth_tx *t = auth_secret_alloc(sizeof(*t)); /* key material: off the stack, cleansed */
	if (!t)
		return nvmeof_err(NVMEOF_ENOMEM, "authentication queue %u: out of memory", qid);
	begin(c, t, qid, hi);
	trace_ctrl(&c->o, qid, "authentication %s: DH-HMAC-CHAP%s",
		   hi ? "started by the host (the controller did not ask)" : "required",
		   c->ctrl_key ? ", bidirectional" : "");
	do {
		uint8_t sqe[NVME_SQE_SIZE];
		struct nvmeof_cpl cpl;
		uint32_t len = 0;
		memset(&cpl, 0, sizeof(cpl));
		if ((rc = auth_tx_next(t, sqe, q_scratch(q), Q_SCRATCH_SIZE, &len)))
			break;
		int xrc = q_exec(q, sqe, len, ctrl_cmd_timeout(c), &cpl);
		st = xrc == NVMEOF_ENVME ? cpl.status : 0;
		rc = auth_tx_answer(t, xrc, &cpl, q_scratch(q), len);
	} while (rc == AUTH_TX_MORE);
	/* the status the transaction ended with, for the caller to classify
	 * (a Failure2's own status does not replace what failed first) */
	if (status && rc == NVMEOF_ENVME)
		*status = st;
	if (!rc)
		done(c, t);
	rc = end_error(t, rc, st);
	auth_cleanse(q_scratch(q), Q_SCRATCH_SIZE);
	auth_secret_free(t, sizeof(*t));
	return rc;
}

static int stage_next(struct nvmeof_queue *q, struct ctrl_reauth *r)
{
	uint8_t sqe[NVME_SQE_SIZE];
	if (r->t.step == AUTH_DH_STEP) /* the poll hands it to the reconnect's worker (ctrl_auth_async_work) */
		return Q_RECONNECT_WORK;
	int rc = auth_tx_next(&r->t, sqe, q_scratch(q), Q_SCRATCH_SIZE, &r->len);
	if (rc)
		return rc;
	q_stage_connect(q, sqe, r->len);
	return Q_RECONNECT_MORE;
}

static int async_end(struct nvmeof_ctrl *c, struct nvmeof_queue *q, struct ctrl_reauth *r, int rc,
		     uint16_t status)
{
	if (!rc)
		done(c, &r->t);
	rc = end_error(&r->t, rc, status);
	auth_cleanse(q_scratch(q), Q_SCRATCH_SIZE);
	auth_tx_clear(&r->t);
	r->active = false;
	return rc;
}

int ctrl_auth_async_start(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid, uint32_t cdw0)
{
	bool needed, hi;
	int rc = required(c, qid, cdw0, &needed, &hi);
	if (rc || !needed)
		return rc;
	/* once per queue and kept: a reconnect is rare, its steps are not */
	if (!c->reauth || qid >= c->nreauth)
		return nvmeof_err(NVMEOF_EINVAL, "authentication queue %u: no room for the transaction", qid);
	if (!c->reauth[qid] && !(c->reauth[qid] = auth_secret_alloc(sizeof(struct ctrl_reauth))))
		return nvmeof_err(NVMEOF_ENOMEM, "authentication queue %u: out of memory", qid);
	struct ctrl_reauth *r = c->reauth[qid];
	begin(c, &r->t, qid, hi);
	r->t.defer_dh = true; /* off the poll (ctrl_auth_async_work) */
	r->active = true;
	trace_ctrl(&c->o, qid, "authentication required after the reconnect");
	rc = stage_next(q, r);
	return rc == Q_RECONNECT_MORE ? rc : async_end(c, q, r, rc, 0);
}

int ctrl_auth_async_step(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid,
			 const struct nvmeof_cpl *cpl)
{
	struct ctrl_reauth *r = qid < c->nreauth ? c->reauth[qid] : NULL;
	if (!r || !r->active)
		return nvmeof_err(NVMEOF_EINVAL, "authentication queue %u: an answer with no transaction", qid);
	int rc = auth_tx_answer(&r->t, cpl->err, cpl, q_scratch(q), r->len);
	if (rc == AUTH_TX_MORE || rc == AUTH_TX_DH)
		rc = stage_next(q, r);
	return rc == Q_RECONNECT_MORE || rc == Q_RECONNECT_WORK ? rc : async_end(c, q, r, rc, cpl->status);
}

/* The DH step (up to tens of ms at ffdhe8192), on the reconnect's worker:
 * the poll that took the Challenge goes on serving its group meanwhile.
 * Nothing else touches the transaction until the poll joins the worker. */
int ctrl_auth_async_work(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid)
{
	struct ctrl_reauth *r = qid < c->nreauth ? c->reauth[qid] : NULL;
	if (!r || !r->active)
		return nvmeof_err(NVMEOF_EINVAL, "authentication queue %u: the DH step with no transaction", qid);
	trace_ctrl(&c->o, qid, "authentication: the DH step (%s) on the reconnect's worker",
		   auth_dhgroup_name(r->t.dhgid));
	int rc = auth_tx_dh_step(&r->t);
	if (rc == AUTH_TX_MORE)
		rc = stage_next(q, r);
	return rc == Q_RECONNECT_MORE ? rc : async_end(c, q, r, rc, 0);
}

/* The attempt ended without the transaction's last word (the connection
 * lost, the queue given up or closed; never while the worker runs): its
 * keys, shared secret and challenges do not wait in memory for the next. */
void ctrl_auth_async_abandon(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid)
{
	struct ctrl_reauth *r = qid < c->nreauth ? c->reauth[qid] : NULL;
	if (!r || !r->active)
		return;
	trace_ctrl(&c->o, qid, "authentication abandoned with its attempt: its state cleared");
	auth_cleanse(q_scratch(q), Q_SCRATCH_SIZE);
	auth_tx_clear(&r->t);
	r->active = false;
}
