/*
 * Writes with FUA, Write Zeroes (split at 65536 blocks, with the deallocate
 * hint where allowed), and the admin submissions log pages and asynchronous
 * events need (data in a registered region; requests that stay out).
 */
#include <stdio.h>

#include "protocol.h"
#include "qpriv.h"

static int check_write_flags(const char *op, uint32_t flags, uint32_t allowed)
{
	if (flags & ~allowed)
		return nvmeof_err(NVMEOF_EINVAL, "%s: unknown flags 0x%x", op, flags & ~allowed);
	return 0;
}

static uint32_t cdw12_of(uint32_t flags)
{
	return (flags & NVMEOF_IO_FUA ? NVME_RW_FUA : 0) | (flags & NVMEOF_IO_DEAC ? NVME_WZ_DEAC : 0);
}

int nvmeof_write_ext(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		     struct nvmeof_mr *mr, size_t off, uint32_t flags, nvmeof_cb cb, void *arg)
{
	int rc = check_write_flags("write", flags, NVMEOF_IO_FUA);
	return rc ? rc : q_submit_io(q, NVME_CMD_WRITE, ns, slba, nlb, mr, off, cdw12_of(flags), cb, arg);
}

int nvmeof_write_ext_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
			  uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t flags,
			  uint32_t timeout_ms)
{
	int rc = check_write_flags("write", flags, NVMEOF_IO_FUA);
	return rc ? rc : q_sync_io(q, NVME_CMD_WRITE, ns, slba, nlb, mr, off, cdw12_of(flags), timeout_ms);
}

static int check_wz(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint32_t nlb, uint32_t flags)
{
	if (!q || !ns || !nlb)
		return nvmeof_err(NVMEOF_EINVAL, "write zeroes: %s",
				  !q ? "no queue" : !ns ? "no namespace" : "zero blocks");
	int rc = check_write_flags("write zeroes", flags, NVMEOF_IO_FUA | NVMEOF_IO_DEAC);
	if (rc)
		return rc;
	if (!q->ctrl || !(nvmeof_ctrl_info(q->ctrl)->oncs & NVME_ONCS_WRITE_ZEROES))
		return nvmeof_err(NVMEOF_ENOTSUP,
				  "write zeroes: the controller does not support Write Zeroes (ONCS bit 3)");
	if ((flags & NVMEOF_IO_DEAC) && !(ns->dlfeat & NVME_DLFEAT_WZ_DEAC))
		return nvmeof_err(NVMEOF_ENOTSUP,
				  "write zeroes: namespace %u does not allow the deallocate bit (DLFEAT 0x%x)",
				  ns->nsid, ns->dlfeat);
	return 0;
}

int nvmeof_write_zeroes(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
			uint32_t nlb, uint32_t flags, nvmeof_cb cb, void *arg)
{
	int rc = check_wz(q, ns, nlb, flags);
	if (rc)
		return rc;
	struct sub sb = {.kind = REQ_WZ, .ns = ns, .slba = slba, .nlb = nlb, .cdw12 = cdw12_of(flags)};
	return q_submit(q, &sb, cb, arg, NULL);
}

int nvmeof_write_zeroes_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
			     uint32_t nlb, uint32_t flags, uint32_t timeout_ms)
{
	char what[128];
	int rc = check_wz(q, ns, nlb, flags);
	if (rc)
		return rc;
	snprintf(what, sizeof(what), "write zeroes nsid %u slba %llu nlb %u", ns->nsid,
		 (unsigned long long)slba, nlb);
	struct sub sb = {.kind = REQ_WZ, .ns = ns, .slba = slba, .nlb = nlb, .cdw12 = cdw12_of(flags)};
	return q_sync_run(q, &sb, timeout_ms, NULL, what);
}

int q_submit_aer(struct nvmeof_queue *q, const uint8_t *sqe, nvmeof_cb cb, void *arg)
{
	struct sub sb = {.kind = REQ_AER, .raw = sqe};
	return q_submit(q, &sb, cb, arg, NULL);
}

bool q_connected(const struct nvmeof_queue *q) { return !q->dead; }
