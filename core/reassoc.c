/* A new association after the old one was lost, and the I/O queues' reconnect. */
#include <string.h>

#include "adminio.h"
#include "cpriv.h"
#include "trace.h"

/* A new association after the old one was lost: admin queue, Fabrics
 * Connect for a new CNTLID, CC.EN; the same controller must answer.
 * Called with admin_lock held. */
static int reassociate(struct nvmeof_ctrl *c)
{
	struct nvmeof_ctrl_info ni;
	uint16_t cntlid;
	uint32_t granted = 0;
	int rc;
	pthread_mutex_lock(&c->lock);
	ni = c->info;
	pthread_mutex_unlock(&c->lock);
	trace_ctrl(&c->o, 0, "re-creating the association with %s", c->subnqn);
	if ((rc = q_reopen(c->admin, NVMF_CNTLID_DYNAMIC, c->o.connect_timeout_ms)) ||
	    (rc = ctrl_fabrics_connect(c, c->admin, 0, NVMEOF_ADMIN_DEPTH, NVMF_CNTLID_DYNAMIC, c->o.kato_ms,
				  &cntlid)) ||
	    (rc = ctrl_enable(c, &ni)) || (rc = ctrl_identify_ctrl(c, &ni)))
		return nvmeof_err_prefix(rc, "re-create the association");
	/* the same controller must answer: same subsystem, same serial */
	if (strcmp(ni.subnqn, c->info.subnqn) || strcmp(ni.serial, c->info.serial))
		return nvmeof_err(NVMEOF_ETRANSPORT,
				  "re-create the association: %s serial %s answered, not %s serial %s",
				  ni.subnqn, ni.serial, c->info.subnqn, c->info.serial);
	if ((rc = ctrl_set_num_queues(c, &granted)))
		return nvmeof_err_prefix(rc, "re-create the association");
	if (granted < c->info.max_io_queues)
		return nvmeof_err(NVMEOF_ETRANSPORT,
				  "re-create the association: the controller now grants %u I/O queues, not %u",
				  granted, c->info.max_io_queues);
	ni.cntlid = cntlid;
	ni.max_io_queues = c->info.max_io_queues;
	pthread_mutex_lock(&c->lock);
	c->info = ni;
	c->ka_err = 0; /* keep-alives go to the new association */
	pthread_mutex_unlock(&c->lock);
	c->assoc_gen++;
	/* only now, the same controller having answered: events and user
	 * commands that waited go out on it */
	q_set_live(c->admin);
	return 0;
}

/* The reconnect hook of I/O queues: every queue reconnects itself; the
 * association is re-created first when this queue is the first to notice
 * the loss, when the admin queue is down (another queue's attempt may have
 * re-created it and the target dropped that one too), or when a Connect
 * named a controller the target no longer has. Otherwise a queue would
 * Fabrics-Connect to a dead CNTLID until ctrl_loss_tmo. After a new
 * association the namespaces are read again: one may have been removed,
 * added, resized or reformatted during the outage. */
static int reconnect_queue(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	int rc = 0;
	bool fresh = false;
	pthread_mutex_lock(&c->admin_lock);
	if (q_assoc_gen(q) == c->assoc_gen || !q_connected(c->admin) || c->assoc_stale) {
		if (!(rc = reassociate(c))) {
			c->assoc_stale = false;
			fresh = true;
		}
	}
	uint16_t cntlid = c->info.cntlid;
	uint32_t gen = c->assoc_gen;
	pthread_mutex_lock(&c->lock);
	uint32_t icd = c->info.in_capsule_max;
	uint64_t max_xfer = c->info.max_xfer;
	uint16_t crdt[3] = {c->info.crdt[0], c->info.crdt[1], c->info.crdt[2]};
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->admin_lock);
	if (rc)
		return rc;
	if (fresh && (rc = admin_ns_rescan(c, NULL, 0)))
		return nvmeof_err_prefix(rc, "re-read the namespaces after re-creating the association");
	uint16_t qid = nvmeof_queue_qid(q);
	/* IOCCSZ and MDTS may differ on the new controller: apply them before
	 * anything is re-issued */
	q_set_limits(q, icd, max_xfer, crdt);
	if ((rc = q_reopen(q, cntlid, c->o.connect_timeout_ms)) ||
	    (rc = ctrl_fabrics_connect(c, q, qid, (uint16_t)q_sqsize(q), cntlid, 0, NULL)))
		return nvmeof_err_prefix(rc, "reconnect queue %u", qid);
	q_set_reconnect(q, ctrl_reconnect_queue, c->o.reconnect_delay_ms, c->o.ctrl_loss_tmo_ms, gen);
	return 0;
}

int ctrl_reconnect_queue(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	trace_ctrl(&c->o, nvmeof_queue_qid(q), "reconnect attempt");
	int rc = reconnect_queue(c, q);
	trace_ctrl(&c->o, nvmeof_queue_qid(q), "reconnect %s%s", rc ? "failed: " : "done", rc ? nvmeof_errmsg() : "");
	return rc;
}
