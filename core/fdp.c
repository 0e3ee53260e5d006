/*
 * Flexible Data Placement: a Write that carries a placement directive
 * (DTYPE and DSPEC), and the Reclaim Unit Handle Status that says which
 * placement identifiers a namespace has. The write goes by the raw path
 * (passthru.c): ordinary writes keep their own path and pay nothing for
 * the directive fields.
 */
#include <stdio.h>
#include <string.h>

#include "fdp.h"
#include "internal.h"
#include "protocol.h"
#include "qpriv.h"

void fdp_sqe_write_dspec(uint8_t *sqe, uint32_t nsid, uint64_t slba, uint32_t nlb, uint32_t cdw12_flags,
			 uint8_t dtype, uint16_t dspec)
{
	nvme_sqe_rw(sqe, NVME_CMD_WRITE, 0, nsid, slba, nlb);
	put_le32(sqe + 48, get_le32(sqe + 48) | cdw12_flags | (uint32_t)(dtype & 0xf) << 20);
	put_le32(sqe + 52, (uint32_t)dspec << 16);
}

void fdp_sqe_ruhs(uint8_t *sqe, uint32_t nsid, uint32_t len)
{
	nvme_sqe_init(sqe, NVME_CMD_IO_MGMT_RECV, 0, nsid);
	put_le32(sqe + 40, NVME_IOMR_MO_RUHS); /* CDW10: MO 7:0, MOS 31:16 = 0 */
	put_le32(sqe + 44, len / 4 - 1);       /* CDW11: NUMD, 0-based */
}

int fdp_ruhs_parse(const uint8_t *buf, size_t len, struct nvmeof_ruhs_desc *out, uint32_t max, uint32_t *nr)
{
	if (len < NVME_RUHS_HDR_SIZE)
		return nvmeof_err(NVMEOF_EINVAL, "reclaim unit handle status: %zu bytes, short of its %d-byte header",
				  len, NVME_RUHS_HDR_SIZE);
	uint32_t n = get_le16(buf + 14);
	*nr = n;
	size_t held = (len - NVME_RUHS_HDR_SIZE) / NVME_RUHS_DESC_SIZE;
	for (uint32_t i = 0; i < n && i < max && i < held; i++) {
		const uint8_t *d = buf + NVME_RUHS_HDR_SIZE + (size_t)i * NVME_RUHS_DESC_SIZE;
		out[i] = (struct nvmeof_ruhs_desc){.pid = get_le16(d), .ruhid = get_le16(d + 2),
						   .earutr = get_le32(d + 4), .ruamw = get_le64(d + 8)};
	}
	return 0;
}

int nvmeof_write_dspec(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		       struct nvmeof_mr *mr, size_t off, uint32_t flags, uint8_t dtype, uint16_t dspec,
		       nvmeof_cb cb, void *arg)
{
	if (!dtype)
		return nvmeof_write_ext(q, ns, slba, nlb, mr, off, flags, cb, arg);
	if (!q || !ns || !mr || !nlb)
		return nvmeof_err(NVMEOF_EINVAL, "write with directive: %s",
				  !q ? "no queue" : !ns ? "no namespace" : !mr ? "no memory region" : "zero blocks");
	if (dtype > 0xf)
		return nvmeof_err(NVMEOF_EINVAL, "write with directive: directive type %u does not fit DTYPE's 4 bits",
				  dtype);
	/* the raw path sends nlb << lbads bytes: not a block with its metadata */
	if (ns->ms)
		return nvmeof_err(NVMEOF_ENOTSUP, "write with directive: namespace %u has %u bytes of metadata per block",
				  ns->nsid, ns->ms);
	uint32_t cdw12;
	int rc = q_write_flags("write with directive", flags, NVMEOF_IO_FUA, &cdw12);
	if (rc)
		return rc;
	if (nlb > 0x10000)
		return nvmeof_err(NVMEOF_EINVAL, "write with directive: %u blocks, more than one command's 65536", nlb);
	uint8_t lbads = __atomic_load_n(&ns->lbads, __ATOMIC_RELAXED);
	uint64_t bytes = (uint64_t)nlb << lbads;
	if (bytes > UINT32_MAX)
		return nvmeof_err(NVMEOF_EINVAL, "write with directive: %llu bytes in one command",
				  (unsigned long long)bytes);
	uint8_t sqe[NVME_SQE_SIZE];
	fdp_sqe_write_dspec(sqe, ns->nsid, slba, nlb, cdw12, dtype, dspec);
	rc = nvmeof_io_raw(q, sqe, mr, off, (uint32_t)bytes, 0, cb, arg);
	return rc ? nvmeof_err_prefix(rc, "write with directive type %u, specific 0x%x", dtype, dspec) : 0;
}

int nvmeof_fdp_ruhs(struct nvmeof_queue *q, const struct nvmeof_ns *ns, struct nvmeof_ruhs_desc *out, uint32_t max,
		    uint32_t *nr, uint32_t timeout_ms)
{
	if (!q || !ns || !nr || (max && !out))
		return nvmeof_err(NVMEOF_EINVAL, "reclaim unit handle status: %s",
				  !q ? "no queue" : !ns ? "no namespace" : !nr ? "no count" : "no descriptors");
	if (max > NVMEOF_RUHS_MAX)
		max = NVMEOF_RUHS_MAX; /* what the queue's scratch buffer holds */
	uint32_t len = NVME_RUHS_HDR_SIZE + max * NVME_RUHS_DESC_SIZE;
	uint8_t sqe[NVME_SQE_SIZE];
	char what[80];
	fdp_sqe_ruhs(sqe, ns->nsid, len);
	snprintf(what, sizeof(what), "I/O Management Receive (reclaim unit handle status) nsid %u", ns->nsid);
	/* a target that counts more descriptors than it writes must not make
	 * the parse read an earlier command's bytes */
	memset(q_scratch_buf(q), 0, len);
	struct sub sb = {.kind = REQ_RAW, .raw = sqe, .data_len = len};
	int rc = q_sync_run(q, &sb, timeout_ms, NULL, what);
	if (rc)
		return rc;
	return fdp_ruhs_parse(q_scratch_buf(q), len, out, max, nr);
}
