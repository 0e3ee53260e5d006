/* Synchronous calls: submit, then wait with a deadline. */
#include <stdio.h>

#include "mem.h"
#include "protocol.h"
#include "qpriv.h"
#include "util.h"

struct sync_ctx {
	struct nvmeof_cpl cpl;
	bool done;
};

static void sync_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct sync_ctx *c = arg;
	c->cpl = *cpl;
	c->done = true;
}

static bool refused(const struct nvmeof_queue *q, uint16_t ri)
{
	for (uint32_t si = 0; si < q->depth; si++)
		if (q->slots[si].req == ri && (q->slots[si].flags & SLOT_REFUSED) &&
		    q->slots[si].state == SLOT_BUSY)
			return true;
	return false;
}

/* A synchronous caller gives up on request ri (its wait timed out or
 * failed): it completes now, without its callback, whose context is on the
 * caller's stack. Commands of it still on the wire keep their slots until
 * their answers come or the queue goes away (the target may still move
 * data for them); ones not yet sent are dropped. The request itself is free
 * at once, so one late answer does not block the next command. */
static void abandon(struct nvmeof_queue *q, uint16_t ri, int err)
{
	struct req *r = &q->reqs[ri];
	r->cb = NULL;
	if (!r->live)
		return;
	for (uint32_t si = 0; si < q->depth; si++) {
		struct slot *s = &q->slots[si];
		if (s->req != ri || (s->state != SLOT_BUSY && s->state != SLOT_RETRY))
			continue;
		/* not on the wire: nothing can come back for it */
		if (s->state == SLOT_RETRY || (s->flags & SLOT_REFUSED))
			q_release_slot(q, (uint16_t)si);
		else
			s->state = SLOT_ZOMBIE;
		if (err == NVMEOF_ETIMEDOUT)
			q->st.timeouts++;
		r->outstanding--;
	}
	if (!r->err)
		r->err = err;
	r->left = 0;
	if (!r->queued && !r->outstanding)
		q_complete_req(q, ri);
}

int q_sync_run(struct nvmeof_queue *q, const struct sub *sb, uint32_t timeout_ms,
		    struct nvmeof_cpl *out, const char *what)
{
	struct sync_ctx c = {.done = false};
	uint16_t ri;
	/* By default the command timeout decides; the wait is a backstop. */
	uint32_t tmo = timeout_ms ? timeout_ms : q->cmd_timeout_ms + 2 * HOUSEKEEP_MS;
	uint64_t deadline = nvmeof_now_ms() + tmo;
	int rc = q_submit(q, sb, sync_cb, &c, &ri);
	if (rc)
		return nvmeof_err_prefix(rc, "%s", what);
	if (q->batch)
		q_post_sends(q);
	/* A part of it refused by the post: the rest may be out, and a wait
	 * would last until those answer; return now, as after a timeout. */
	if (unlikely(q->nrefused) && refused(q, ri)) {
		abandon(q, ri, NVMEOF_ETRANSPORT);
		return nvmeof_err_prefix(q_refused_err(q), "%s", what);
	}
	while (!c.done) {
		uint64_t now = nvmeof_now_ms();
		if (now >= deadline) {
			abandon(q, ri, NVMEOF_ETIMEDOUT);
			return nvmeof_err(NVMEOF_ETIMEDOUT, "%s: no completion within %u ms", what, tmo);
		}
		rc = nvmeof_queue_wait(q, 1, (int)(deadline - now));
		if (rc < 0 && !c.done) {
			abandon(q, ri, rc);
			return nvmeof_err_prefix(rc, "%s", what);
		}
	}
	if (out)
		*out = c.cpl;
	if (c.cpl.err) {
		char buf[160];
		return nvmeof_err(c.cpl.err, "%s: %s", what, nvmeof_cpl_str(&c.cpl, buf, sizeof(buf)));
	}
	return 0;
}

int q_sync_io(struct nvmeof_queue *q, uint8_t opc, const struct nvmeof_ns *ns, uint64_t slba,
	      uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t cdw12, uint32_t timeout_ms)
{
	const char *op = opc == NVME_CMD_READ ? "read" : "write";
	char what[128];
	int rc = q_check_io(q, op, ns, nlb, mr, off);
	if (rc)
		return rc;
	snprintf(what, sizeof(what), "%s%s nsid %u slba %llu nlb %u", op, cdw12 & NVME_RW_FUA ? " (FUA)" : "",
		 ns->nsid, (unsigned long long)slba, nlb);
	struct sub sb = {.kind = REQ_IO, .opc = opc, .ns = ns, .slba = slba, .nlb = nlb, .mr = mr,
			 .off = off, .cdw12 = cdw12};
	if (opc == NVME_CMD_WRITE && (rc = mem_before_write(mr)))
		return nvmeof_err_prefix(rc, "%s", what);
	rc = q_sync_run(q, &sb, timeout_ms, NULL, what);
	if (!rc && opc == NVME_CMD_READ && (rc = mem_after_read(mr)))
		return nvmeof_err_prefix(rc, "%s", what);
	return rc;
}

int nvmeof_read_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
		     uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t timeout_ms)
{
	return q_sync_io(q, NVME_CMD_READ, ns, slba, nlb, mr, off, 0, timeout_ms);
}

int nvmeof_write_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
		      uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t timeout_ms)
{
	return q_sync_io(q, NVME_CMD_WRITE, ns, slba, nlb, mr, off, 0, timeout_ms);
}

int nvmeof_flush_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint32_t timeout_ms)
{
	char what[64];
	if (!q || !ns)
		return nvmeof_err(NVMEOF_EINVAL, "flush: %s", !q ? "no queue" : "no namespace");
	snprintf(what, sizeof(what), "flush nsid %u", ns->nsid);
	struct sub sb = {.kind = REQ_FLUSH, .ns = ns};
	return q_sync_run(q, &sb, timeout_ms, NULL, what);
}

int q_exec_mr(struct nvmeof_queue *q, const uint8_t *sqe, struct nvmeof_mr *mr, size_t off,
	      uint32_t data_len, uint32_t timeout_ms, struct nvmeof_cpl *cpl)
{
	struct sub sb = {.kind = REQ_RAW, .raw = sqe, .data_len = data_len, .mr = mr, .off = off};
	char what[48];
	if (!mr && data_len > SCRATCH_SIZE)
		return nvmeof_err(NVMEOF_EINVAL, "command data of %u bytes exceeds %u", data_len, SCRATCH_SIZE);
	snprintf(what, sizeof(what), "%s opcode 0x%02x", sqe[0] == NVME_FABRICS_OPCODE ? "fabrics" : "admin",
		 sqe[0] == NVME_FABRICS_OPCODE ? sqe[4] : sqe[0]);
	return q_sync_run(q, &sb, timeout_ms, cpl, what);
}

int q_exec(struct nvmeof_queue *q, const uint8_t *sqe, uint32_t data_len, uint32_t timeout_ms,
	   struct nvmeof_cpl *cpl)
{
	return q_exec_mr(q, sqe, NULL, 0, data_len, timeout_ms, cpl);
}

