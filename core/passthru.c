/*
 * Raw commands: a caller's 64-byte SQE on an I/O queue or the admin queue.
 * Everything a caller could get wrong is refused here, before the queue
 * sees the command: what goes on the wire names only memory registered
 * with this controller, and only the library speaks Fabrics.
 */
#include <stdio.h>
#include <string.h>

#include "aer.h"
#include "ctrl.h"
#include "mem.h"
#include "protocol.h"
#include "qpriv.h"

#define SGL_TYPE(sqe) ((sqe)[39] >> 4)
/* SGL Identifier: Keyed SGL Data Block (type 4h), subtype 0h (address).
 * Subtype Fh asks the target to invalidate the key once done, which would
 * take the region away from every later command. */
#define SGL_KEYED_ADDRESS 0x40
#define FUSE(sqe) ((sqe)[1] & 0x3)
#define NVME_FEAT_KATO 0x0f
/* Admin slots raw commands leave free: the event requests, a Keep Alive
 * sent from a wait, and one command of the library's own. */
#define ADMIN_KEEP_FREE (AER_MAX + 2)

/* "I/O opcode 0x05 on queue 3": what every message of a raw command starts with. */
static void raw_what(char *buf, size_t len, const struct nvmeof_queue *q, const uint8_t *sqe)
{
	snprintf(buf, len, "raw %s opcode 0x%02x on queue %u", q->qid ? "I/O" : "admin", sqe[0], q->qid);
}

/* Whether cid is the wire CID of a caller's raw command in flight on q. */
static bool raw_admin_cid_ours(const struct nvmeof_queue *q, uint16_t cid)
{
	for (uint32_t ri = 0; ri < q->depth; ri++)
		if (q->reqs[ri].live && q->reqs[ri].kind == REQ_USER && q->user[ri].wire_cid == cid &&
		    cid != NVMEOF_CID_NONE)
			return true;
	return false;
}

/* Fills sb from the caller's arguments, or says why not. */
static int raw_check(struct nvmeof_queue *q, const uint8_t *sqe, struct nvmeof_mr *mr, size_t off,
		     uint32_t len, uint32_t flags, uint64_t max_xfer, struct sub *sb, const char *what)
{
	uint64_t limit = q->max_cmd_bytes;
	if (max_xfer && max_xfer < limit)
		limit = max_xfer;
	if (flags & ~NVMEOF_RAW_CALLER_SGL)
		return nvmeof_err(NVMEOF_EINVAL, "%s: unknown flags 0x%x", what, flags & ~NVMEOF_RAW_CALLER_SGL);
	if (sqe[0] == NVME_FABRICS_OPCODE)
		return nvmeof_err(NVMEOF_EINVAL, "%s: Fabrics commands (opcode 0x7f) are the library's own", what);
	/* The halves of a fused pair must be adjacent in the submission
	 * queue; one at a time, a full queue or a reconnect's one-by-one
	 * replay could part them (the kernel's passthrough refuses them too). */
	if (FUSE(sqe))
		return nvmeof_err(NVMEOF_EINVAL, "%s: fused commands (FUSE %u) are not supported raw", what, FUSE(sqe));
	/* What the library's own threads keep up: an event request waits
	 * for an event (the command timeout would end the admin queue, and
	 * it takes events from nvmeof_ctrl_events), and the Keep Alive
	 * schedule follows the KATO negotiated at connect. */
	if (!q->qid && sqe[0] == NVME_ADMIN_ASYNC_EVENT)
		return nvmeof_err(NVMEOF_EINVAL, "%s: Asynchronous Event Requests are the library's own "
				  "(nvmeof_ctrl_events)", what);
	if (!q->qid && sqe[0] == NVME_ADMIN_SET_FEATURES && sqe[40] == NVME_FEAT_KATO)
		return nvmeof_err(NVMEOF_EINVAL, "%s: Set Features Keep Alive Timer: the library keeps the "
				  "association alive on the KATO it negotiated (nvmeof_ctrl_opts.kato_ms)", what);
	/* an Abort of an admin command may name only one of the caller's
	 * raw admin commands in flight, never the library's own (its event
	 * requests, Keep Alive, a log or Identify it is reading); the admin
	 * lock is held, so the admin queue's requests stay as they are */
	if (!q->qid && sqe[0] == NVME_ADMIN_ABORT && !get_le16(sqe + 40) && !raw_admin_cid_ours(q, get_le16(sqe + 42)))
		return nvmeof_err(NVMEOF_EINVAL, "%s: Abort of admin command CID 0x%x: not a raw admin command of "
				  "the caller in flight (the library's own commands are not aborted raw)", what,
				  get_le16(sqe + 42));
	if (!q->qid && q->nfree_slots <= ADMIN_KEEP_FREE)
		return nvmeof_err(NVMEOF_EQFULL, "%s: the admin queue's last %u free slots are kept for Keep Alive, "
				  "events and the library's own commands", what, ADMIN_KEEP_FREE);
	*sb = (struct sub){.kind = REQ_USER, .opc = sqe[0], .raw = sqe};
	if (flags & NVMEOF_RAW_CALLER_SGL) {
		if (mr)
			return nvmeof_err(NVMEOF_EINVAL, "%s: a region and the caller's own SGL: give one", what);
		uint64_t addr = get_le64(sqe + 24);
		uint32_t slen = get_le32(sqe + 32) & 0xffffff;
		uint32_t key = get_le32(sqe + 35);
		if ((sqe[1] >> 6) != 1 || sqe[39] != SGL_KEYED_ADDRESS)
			return nvmeof_err(NVMEOF_EINVAL,
					  "%s: the caller's data pointer is not a Keyed SGL Data Block with an address "
					  "(PSDT %u, descriptor type 0x%x, subtype 0x%x)", what, sqe[1] >> 6, SGL_TYPE(sqe),
					  sqe[39] & 0xf);
		sb->user_sgl = true;
		if (!slen)
			return 0;
		if (slen > limit)
			return nvmeof_err(NVMEOF_EINVAL, "%s: %u bytes exceed the %llu-byte transfer limit (MDTS): "
					  "split the command", what, slen, (unsigned long long)limit);
		struct mem_ctx *mc = ctrl_mem(q->ctrl);
		pthread_mutex_lock(&mc->lock);
		struct nvmeof_mr *m = mem_find_locked(mc, addr, slen, key);
		pthread_mutex_unlock(&mc->lock);
		if (!m)
			return nvmeof_err(NVMEOF_EINVAL,
					  "%s: keyed SGL (address 0x%llx, %u bytes, key 0x%x) lies in no region "
					  "registered with this controller", what, (unsigned long long)addr, slen, key);
		sb->mr = m;
		sb->off = (size_t)(addr - (uint64_t)(uintptr_t)m->addr);
		sb->data_len = slen;
		return 0;
	}
	if (!mr) {
		if (len)
			return nvmeof_err(NVMEOF_EINVAL, "%s: %u bytes of data but no region", what, len);
		return 0;
	}
	if (!len)
		return nvmeof_err(NVMEOF_EINVAL, "%s: a region but zero bytes of data", what);
	if (mem_ctrl(mr) != q->ctrl)
		return nvmeof_err(NVMEOF_EINVAL, "%s: memory region belongs to another controller", what);
	if (off > mr->len || len > mr->len - off)
		return nvmeof_err(NVMEOF_EINVAL, "%s: %u bytes at offset %zu overrun the %zu-byte region", what, len,
				  off, mr->len);
	if (len > limit)
		return nvmeof_err(NVMEOF_EINVAL, "%s: %u bytes exceed the %llu-byte transfer limit (MDTS): split the "
				  "command", what, len, (unsigned long long)limit);
	sb->mr = mr;
	sb->off = off;
	sb->data_len = len;
	return 0;
}

static uint64_t ctrl_max_xfer(struct nvmeof_ctrl *c)
{
	struct nvmeof_ctrl_info ci;
	return nvmeof_ctrl_get_info(c, &ci) ? 0 : ci.max_xfer;
}

/* Submits sb; *cid (when asked): the CID it went out with. Read before
 * anything can poll the queue, so the request is still the caller's. */
static int raw_submit(struct nvmeof_queue *q, const struct sub *sb, nvmeof_cb cb, void *arg, uint16_t *cid,
		      const char *what)
{
	uint16_t ri;
	int rc = q_submit(q, sb, cb, arg, &ri);
	if (rc)
		return nvmeof_err_prefix(rc, "%s", what);
	if (cid)
		*cid = q->user[ri].wire_cid;
	return 0;
}

int nvmeof_io_raw_cid(struct nvmeof_queue *q, const void *sqe, struct nvmeof_mr *mr, size_t off, uint32_t len,
		      uint32_t flags, nvmeof_cb cb, void *arg, uint16_t *cid)
{
	char what[64];
	struct sub sb;
	if (cid)
		*cid = NVMEOF_CID_NONE;
	if (!q || !sqe)
		return nvmeof_err(NVMEOF_EINVAL, "raw command: %s", !q ? "no queue" : "no command");
	raw_what(what, sizeof(what), q, sqe);
	int rc = raw_check(q, sqe, mr, off, len, flags, 0, &sb, what);
	return rc ? rc : raw_submit(q, &sb, cb, arg, cid, what);
}

int nvmeof_io_raw(struct nvmeof_queue *q, const void *sqe, struct nvmeof_mr *mr, size_t off, uint32_t len,
		  uint32_t flags, nvmeof_cb cb, void *arg)
{
	return nvmeof_io_raw_cid(q, sqe, mr, off, len, flags, cb, arg, NULL);
}

/* Submit and wait, with the GPUDirect ordering of the synchronous path. */
static int raw_sync(struct nvmeof_queue *q, const struct sub *sb, struct nvmeof_cpl *cpl, uint32_t timeout_ms,
		    const char *what)
{
	uint8_t opc = sb->raw[0];
	int rc;
	if (sb->mr && (opc & 1) && (rc = mem_before_write(sb->mr)))
		return nvmeof_err_prefix(rc, "%s", what);
	rc = q_sync_run(q, sb, timeout_ms, cpl, what);
	if (!rc && sb->mr && (opc & 2) && (rc = mem_after_read(sb->mr)))
		return nvmeof_err_prefix(rc, "%s", what);
	return rc;
}

int nvmeof_io_raw_sync(struct nvmeof_queue *q, const void *sqe, struct nvmeof_mr *mr, size_t off, uint32_t len,
		       uint32_t flags, struct nvmeof_cpl *cpl, uint32_t timeout_ms)
{
	char what[64];
	struct sub sb;
	if (cpl)
		memset(cpl, 0, sizeof(*cpl));
	if (!q || !sqe)
		return nvmeof_err(NVMEOF_EINVAL, "raw command: %s", !q ? "no queue" : "no command");
	raw_what(what, sizeof(what), q, sqe);
	int rc = raw_check(q, sqe, mr, off, len, flags, 0, &sb, what);
	return rc ? rc : raw_sync(q, &sb, cpl, timeout_ms, what);
}

int nvmeof_admin_raw_cid(struct nvmeof_ctrl *c, const void *sqe, struct nvmeof_mr *mr, size_t off, uint32_t len,
			 uint32_t flags, nvmeof_cb cb, void *arg, uint16_t *cid)
{
	char what[64];
	struct sub sb;
	if (cid)
		*cid = NVMEOF_CID_NONE;
	if (!c || !sqe)
		return nvmeof_err(NVMEOF_EINVAL, "raw admin command: %s", !c ? "no controller" : "no command");
	int wrc = ctrl_wait_live(c, ctrl_cmd_timeout(c), "raw admin command");
	if (wrc)
		return wrc;
	uint64_t max_xfer = ctrl_max_xfer(c);
	pthread_mutex_t *lock = ctrl_admin_lock(c);
	ctrl_admin_take(c); /* a fence that fell due since the wait first */
	struct nvmeof_queue *aq = ctrl_admin(c);
	raw_what(what, sizeof(what), aq, sqe);
	int rc = raw_check(aq, sqe, mr, off, len, flags, max_xfer, &sb, what);
	if (!rc)
		rc = raw_submit(aq, &sb, cb, arg, cid, what);
	pthread_mutex_unlock(lock);
	return rc;
}

int nvmeof_admin_raw(struct nvmeof_ctrl *c, const void *sqe, struct nvmeof_mr *mr, size_t off, uint32_t len,
		     uint32_t flags, nvmeof_cb cb, void *arg)
{
	return nvmeof_admin_raw_cid(c, sqe, mr, off, len, flags, cb, arg, NULL);
}

int nvmeof_admin_raw_sync(struct nvmeof_ctrl *c, const void *sqe, struct nvmeof_mr *mr, size_t off, uint32_t len,
			  uint32_t flags, struct nvmeof_cpl *cpl, uint32_t timeout_ms)
{
	char what[64];
	struct sub sb;
	if (cpl)
		memset(cpl, 0, sizeof(*cpl));
	if (!c || !sqe)
		return nvmeof_err(NVMEOF_EINVAL, "raw admin command: %s", !c ? "no controller" : "no command");
	int wrc = ctrl_wait_live(c, ctrl_cmd_timeout(c), "raw admin command");
	if (wrc)
		return wrc;
	uint64_t max_xfer = ctrl_max_xfer(c);
	pthread_mutex_t *lock = ctrl_admin_lock(c);
	ctrl_admin_take(c); /* a fence that fell due since the wait first */
	struct nvmeof_queue *aq = ctrl_admin(c);
	raw_what(what, sizeof(what), aq, sqe);
	int rc = raw_check(aq, sqe, mr, off, len, flags, max_xfer, &sb, what);
	if (!rc)
		rc = raw_sync(aq, &sb, cpl, timeout_ms ? timeout_ms : ctrl_cmd_timeout(c), what);
	pthread_mutex_unlock(lock);
	return rc;
}

int nvmeof_admin_poll(struct nvmeof_ctrl *c, uint32_t max)
{
	if (!c)
		return nvmeof_err(NVMEOF_EINVAL, "admin poll: no controller");
	pthread_mutex_t *lock = ctrl_admin_lock(c);
	pthread_mutex_lock(lock);
	int rc = nvmeof_queue_poll(ctrl_admin(c), max);
	pthread_mutex_unlock(lock);
	return rc;
}

void nvmeof_cpl_cqe(const struct nvmeof_cpl *cpl, uint8_t cqe[16])
{
	memset(cqe, 0, 16);
	if (!cpl)
		return;
	put_le32(cqe, cpl->cdw0);
	put_le32(cqe + 4, cpl->cdw1);
	put_le16(cqe + 8, cpl->sqhd);
	put_le16(cqe + 10, cpl->sqid);
	put_le16(cqe + 12, cpl->cid);
	put_le16(cqe + 14, (uint16_t)(cpl->status << 1));
}

uint32_t nvmeof_mr_rkey(const struct nvmeof_mr *mr) { return mr ? mr->rkey : 0; }
uint32_t nvmeof_mr_lkey(const struct nvmeof_mr *mr) { return mr ? mr->lkey : 0; }
