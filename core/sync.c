/* Synchronous calls: submit, then wait with a deadline. */
#include <stdio.h>

#include "mem.h"
#include "protocol.h"
#include "qpriv.h"
#include "util.h"

struct sync_ctx {
	struct nvmeof_cpl cpl;
	bool done;
	char why[512]; /* a failure other than an NVMe status: what the queue said just before */
};

static void sync_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct sync_ctx *c = arg;
	c->cpl = *cpl;
	c->done = true;
	if (cpl->err && cpl->err != NVMEOF_ENVME)
		snprintf(c->why, sizeof(c->why), "%s", nvmeof_errmsg());
}

/* A synchronous caller gives up on request ri (its wait timed out or
 * failed): it completes now, without its callback, whose context is on the
 * caller's stack. A command of it not yet sent is dropped; one still on the
 * wire may yet move data into the caller's buffer, so, as after a command
 * timeout, the connection goes down before the call returns (the queue
 * reconnects, or fails). */
static void abandon(struct nvmeof_queue *q, uint16_t ri, int err, const char *what, uint32_t tmo)
{
	struct req *r = &q->reqs[ri];
	bool on_wire = false;
	r->cb = NULL;
	if (!r->live)
		return;
	if (!r->err)
		r->err = err;
	r->left = 0;
	for (uint32_t si = 0; si < q->depth; si++) {
		struct slot *s = &q->slots[si];
		if (s->req != ri || s->state == SLOT_FREE)
			continue;
		if (s->state == SLOT_RETRY || (s->flags & SLOT_REFUSED)) {
			q_release_slot(q, (uint16_t)si);
			r->outstanding--;
		} else {
			s->flags |= err == NVMEOF_ETIMEDOUT ? SLOT_EXPIRED : 0;
			q->st.timeouts += err == NVMEOF_ETIMEDOUT;
			on_wire = true;
		}
	}
	if (on_wire) {
		/* the owner's fail hook runs in here: it learns the command and
		 * its timeout, not just that the connection went */
		char why[128];
		if (err == NVMEOF_ETIMEDOUT)
			snprintf(why, sizeof(why), "%s got no completion within %u ms", what, tmo);
		else
			snprintf(why, sizeof(why), "%s was abandoned by its caller's failed wait", what);
		q_lose_for(q, why);
		q_state_tick(q); /* closed, and r completed with the rest */
	} else if (!r->queued && !r->outstanding) {
		q_complete_req(q, ri);
	}
}

int q_sync_run(struct nvmeof_queue *q, const struct sub *sb, uint32_t timeout_ms,
		    struct nvmeof_cpl *out, const char *what)
{
	struct sync_ctx c = {.done = false, .why = ""};
	uint16_t ri;
	/* By default the command timeout decides; the wait is a backstop. */
	uint32_t tmo = timeout_ms ? timeout_ms : q->cmd_timeout_ms + 2 * (SLICE_MAX_MS + HOUSEKEEP_MS);
	uint64_t deadline = nvmeof_now_ms() + tmo;
	int rc = q_submit(q, sb, sync_cb, &c, &ri);
	if (rc)
		return nvmeof_err_prefix(rc, "%s", what);
	/* A part refused by the post fails from the next poll; the wait sees
	 * the rest, already out, answered first. */
	if (q->batch)
		q_post_sends(q);
	while (!c.done) {
		uint64_t now = nvmeof_now_ms();
		if (now >= deadline) {
			abandon(q, ri, NVMEOF_ETIMEDOUT, what, tmo);
			return nvmeof_err(NVMEOF_ETIMEDOUT, "%s: no completion within %u ms", what, tmo);
		}
		uint64_t slice = deadline - now;
		if (q->wait_hook) {
			q->wait_hook(q->wait_hook_arg);
			if (slice > q->wait_hook_ms)
				slice = q->wait_hook_ms;
		}
		rc = nvmeof_queue_wait(q, 1, (int)slice);
		if (rc < 0 && !c.done) {
			abandon(q, ri, rc, what, tmo);
			return nvmeof_err_prefix(rc, "%s", what);
		}
	}
	if (out)
		*out = c.cpl;
	if (c.cpl.err && c.why[0])
		return nvmeof_err(c.cpl.err, "%s: %s", what, c.why);
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
	uint8_t lbads;
	int rc = q_check_io(q, op, ns, nlb, mr, off, &lbads);
	if (rc)
		return rc;
	snprintf(what, sizeof(what), "%s%s nsid %u slba %llu nlb %u", op, cdw12 & NVME_RW_FUA ? " (FUA)" : "",
		 ns->nsid, (unsigned long long)slba, nlb);
	struct sub sb = {.kind = REQ_IO, .opc = opc, .lbads = lbads, .ns = ns, .slba = slba, .nlb = nlb,
			 .mr = mr, .off = off, .cdw12 = cdw12};
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

int nvmeof_write_ext_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
			  uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t flags,
			  uint32_t timeout_ms)
{
	uint32_t cdw12;
	int rc = q_write_flags("write", flags, NVMEOF_IO_FUA, &cdw12);
	return rc ? rc : q_sync_io(q, NVME_CMD_WRITE, ns, slba, nlb, mr, off, cdw12, timeout_ms);
}

int nvmeof_write_zeroes_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
			     uint32_t nlb, uint32_t flags, uint32_t timeout_ms)
{
	char what[128];
	uint32_t cdw12;
	int rc = q_check_wz(q, ns, nlb, flags, &cdw12);
	if (rc)
		return rc;
	snprintf(what, sizeof(what), "write zeroes nsid %u slba %llu nlb %u", ns->nsid,
		 (unsigned long long)slba, nlb);
	struct sub sb = {.kind = REQ_WZ, .ns = ns, .slba = slba, .nlb = nlb, .cdw12 = cdw12};
	return q_sync_run(q, &sb, timeout_ms, NULL, what);
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

/* The admin and Fabrics commands the library sends itself, by their
 * specs' names: a timeout's message names the command. */
static const char *cmd_name(bool fabrics, uint8_t opc)
{
	if (fabrics)
		return opc == NVMF_FCTYPE_PROPERTY_SET ? "Property Set" : opc == NVMF_FCTYPE_CONNECT ? "Connect"
			: opc == NVMF_FCTYPE_PROPERTY_GET ? "Property Get" : "";
	switch (opc) {
	case 0x02: return "Get Log Page";
	case 0x06: return "Identify";
	case 0x09: return "Set Features";
	case 0x0a: return "Get Features";
	case 0x18: return "Keep Alive";
	default: return "";
	}
}

int q_exec_mr(struct nvmeof_queue *q, const uint8_t *sqe, struct nvmeof_mr *mr, size_t off,
	      uint32_t data_len, uint32_t timeout_ms, struct nvmeof_cpl *cpl)
{
	struct sub sb = {.kind = REQ_RAW, .raw = sqe, .data_len = data_len, .mr = mr, .off = off};
	char what[64];
	if (!mr && data_len > Q_SCRATCH_SIZE)
		return nvmeof_err(NVMEOF_EINVAL, "command data of %u bytes exceeds %u", data_len, Q_SCRATCH_SIZE);
	bool fab = sqe[0] == NVME_FABRICS_OPCODE;
	const char *name = cmd_name(fab, fab ? sqe[4] : sqe[0]);
	snprintf(what, sizeof(what), "%s%s%s opcode 0x%02x%s", name, name[0] ? " (" : "", fab ? "fabrics" : "admin",
		 fab ? sqe[4] : sqe[0], name[0] ? ")" : "");
	return q_sync_run(q, &sb, timeout_ms, cpl, what);
}

int q_exec(struct nvmeof_queue *q, const uint8_t *sqe, uint32_t data_len, uint32_t timeout_ms,
	   struct nvmeof_cpl *cpl)
{
	return q_exec_mr(q, sqe, NULL, 0, data_len, timeout_ms, cpl);
}

