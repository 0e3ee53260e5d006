/* Sans-IO encoders and parsers for NVMe, NVMe-oF and NVMe/RDMA. */
#include "protocol.h"

void nvme_sqe_dsm_deallocate(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint32_t nranges)
{
	nvme_sqe_init(sqe, NVME_CMD_DSM, cid, nsid);
	put_le32(sqe + 40, (nranges - 1) & 0xff);
	put_le32(sqe + 44, NVME_DSM_AD);
}

void nvme_dsm_range(uint8_t *r, uint64_t slba, uint32_t nlb)
{
	put_le32(r, 0);        /* context attributes */
	put_le32(r + 4, nlb);  /* length in LBAs, 1-based */
	put_le64(r + 8, slba);
}

void nvme_sqe_identify(uint8_t *sqe, uint16_t cid, uint8_t cns, uint32_t nsid, uint16_t cntid)
{
	nvme_sqe_init(sqe, NVME_ADMIN_IDENTIFY, cid, nsid);
	put_le32(sqe + 40, (uint32_t)cns | ((uint32_t)cntid << 16));
}

void nvme_sqe_set_features(uint8_t *sqe, uint16_t cid, uint8_t fid, uint32_t cdw11)
{
	nvme_sqe_init(sqe, NVME_ADMIN_SET_FEATURES, cid, 0);
	put_le32(sqe + 40, fid);
	put_le32(sqe + 44, cdw11);
}

void nvme_sqe_keep_alive(uint8_t *sqe, uint16_t cid)
{
	nvme_sqe_init(sqe, NVME_ADMIN_KEEP_ALIVE, cid, 0);
}

uint32_t nvme_num_queues_cdw11(uint16_t nsq, uint16_t ncq)
{
	return (uint32_t)(uint16_t)(nsq - 1) | ((uint32_t)(uint16_t)(ncq - 1) << 16);
}

/* Fabrics commands share bytes 0..4 (opcode 7Fh, CID, FCTYPE); PSDT is not
 * used, the SGL in DPTR is implied by the transport. */
static void nvmf_sqe_init(uint8_t *sqe, uint16_t cid, uint8_t fctype)
{
	memset(sqe, 0, NVME_SQE_SIZE);
	sqe[0] = NVME_FABRICS_OPCODE;
	sqe[1] = NVME_SQE_FLAGS_PSDT_SGL;
	put_le16(sqe + 2, cid);
	sqe[4] = fctype;
}

void nvmf_sqe_connect(uint8_t *sqe, uint16_t cid, uint16_t qid, uint16_t sqsize, uint8_t cattr,
		      uint32_t kato)
{
	nvmf_sqe_init(sqe, cid, NVMF_FCTYPE_CONNECT);
	put_le16(sqe + 40, 0); /* RECFMT 0 */
	put_le16(sqe + 42, qid);
	put_le16(sqe + 44, sqsize);
	sqe[46] = cattr;
	put_le32(sqe + 48, kato);
}

int nvmf_connect_data(uint8_t *d, const uint8_t hostid[16], uint16_t cntlid, const char *subnqn,
		      const char *hostnqn)
{
	size_t ls = subnqn ? strlen(subnqn) : 0, lh = hostnqn ? strlen(hostnqn) : 0;
	if (!ls || ls > NVME_NQN_MAX || !lh || lh > NVME_NQN_MAX)
		return -1;
	memset(d, 0, NVMF_CONNECT_DATA_SIZE);
	memcpy(d, hostid, 16);
	put_le16(d + 16, cntlid);
	memcpy(d + 256, subnqn, ls);
	memcpy(d + 512, hostnqn, lh);
	return 0;
}

void nvmf_sqe_prop_get(uint8_t *sqe, uint16_t cid, uint32_t offset, int size8)
{
	nvmf_sqe_init(sqe, cid, NVMF_FCTYPE_PROPERTY_GET);
	sqe[40] = size8 ? 1 : 0; /* ATTRIB.SIZE: 0 = 4 bytes, 1 = 8 bytes */
	put_le32(sqe + 44, offset);
}

void nvmf_sqe_prop_set(uint8_t *sqe, uint16_t cid, uint32_t offset, int size8, uint64_t value)
{
	nvmf_sqe_init(sqe, cid, NVMF_FCTYPE_PROPERTY_SET);
	sqe[40] = size8 ? 1 : 0;
	put_le32(sqe + 44, offset);
	put_le64(sqe + 48, value);
}

void nvme_ascii_field(char *dst, const uint8_t *src, size_t n)
{
	size_t i, end = 0;
	for (i = 0; i < n && src[i]; i++) {
		/* Non-printable bytes from a target must not reach a terminal. */
		dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? (char)src[i] : '?';
		if (src[i] != ' ')
			end = i + 1;
	}
	dst[end] = '\0';
}

void nvme_id_ctrl_parse(const uint8_t *d, struct nvmeof_ctrl_info *info)
{
	info->vid = get_le16(d + 0);
	info->ssvid = get_le16(d + 2);
	nvme_ascii_field(info->serial, d + 4, 20);
	nvme_ascii_field(info->model, d + 24, 40);
	nvme_ascii_field(info->firmware, d + 64, 8);
	info->mdts = d[77];
	info->cntlid = get_le16(d + 78);
	for (int i = 0; i < 3; i++)
		info->crdt[i] = get_le16(d + 134 + 2 * i);
	info->kas = get_le16(d + 320);
	info->maxcmd = get_le16(d + 514);
	info->nn = get_le32(d + 516);
	info->oncs = get_le16(d + 520);
	info->vwc = d[525];
	info->sgls = get_le32(d + 536);
	nvme_ascii_field(info->subnqn, d + 768, 256);
	/* NVMe over Fabrics attributes */
	info->ioccsz = get_le32(d + 1792);
	info->iorcsz = get_le32(d + 1796);
	info->icdoff = get_le16(d + 1800);
}

int nvme_id_ns_parse(const uint8_t *d, uint32_t nsid, struct nvmeof_ns *ns, const char **why)
{
	uint8_t nlbaf = d[25], flbas = d[26];
	/* FLBAS bits 3:0 index the format; bits 6:5 extend it past 16. */
	unsigned idx = (flbas & 0xf) | (((unsigned)flbas >> 5 & 0x3) << 4);
	memset(ns, 0, sizeof(*ns));
	ns->nsid = nsid;
	ns->nsze = get_le64(d + 0);
	ns->ncap = get_le64(d + 8);
	ns->nuse = get_le64(d + 16);
	memcpy(ns->nguid, d + 104, 16);
	memcpy(ns->eui64, d + 120, 8);
	if (idx > nlbaf || idx >= 64) {
		*why = "FLBAS selects an LBA format past NLBAF";
		return -1;
	}
	if (idx >= 16) {
		*why = "LBA formats past 16 are not supported";
		return -1;
	}
	const uint8_t *lbaf = d + 128 + 4 * idx;
	ns->ms = get_le16(lbaf);
	ns->lbads = lbaf[2];
	if (ns->lbads < 9 || ns->lbads > 31) {
		*why = "LBA data size outside 512 B .. 2 GiB";
		return -1;
	}
	ns->lba_size = 1u << ns->lbads;
	return 0;
}

uint32_t nvme_ns_list_parse(const uint8_t *d, uint32_t *out, uint32_t max)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < NVME_IDENTIFY_SIZE / 4 && n < max; i++) {
		uint32_t id = get_le32(d + 4 * i);
		if (!id)
			break;
		out[n++] = id;
	}
	return n;
}

uint64_t nvme_max_xfer(uint8_t mdts, uint64_t cap)
{
	unsigned shift = 12u + NVME_CAP_MPSMIN(cap) + mdts;
	if (!mdts)
		return 0;
	return shift >= 63 ? 0 : (uint64_t)1 << shift;
}

void nvme_rdma_cm_req(uint8_t *p, uint16_t qid, uint16_t hrqsize, uint16_t hsqsize, uint16_t cntlid)
{
	memset(p, 0, NVME_RDMA_CM_REQ_SIZE);
	put_le16(p + 0, 0); /* RECFMT 1.0 */
	put_le16(p + 2, qid);
	put_le16(p + 4, hrqsize);
	put_le16(p + 6, hsqsize);
	put_le16(p + 8, cntlid);
}

int nvme_rdma_cm_rep_parse(const void *priv, size_t len, uint16_t *crqsize, const char **why)
{
	const uint8_t *p = priv;
	if (!p || len < 4) {
		*why = "accept private data shorter than 4 bytes";
		return -1;
	}
	if (get_le16(p) != 0) {
		*why = "accept private data has an unknown RECFMT";
		return -1;
	}
	*crqsize = get_le16(p + 2);
	if (!*crqsize) {
		*why = "accept private data has CRQSIZE 0";
		return -1;
	}
	return 0;
}

int nvme_rdma_cm_rej_parse(const void *priv, size_t len, uint16_t *sts)
{
	const uint8_t *p = priv;
	if (!p || len < 4)
		return -1;
	*sts = get_le16(p + 2);
	return 0;
}

int nvme_parse_uuid(const char *s, uint8_t out[16])
{
	int n = 0;
	for (const char *p = s; *p && n < 32; p++) {
		int v;
		if (*p == '-')
			continue;
		if (*p >= '0' && *p <= '9') v = *p - '0';
		else if (*p >= 'a' && *p <= 'f') v = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F') v = *p - 'A' + 10;
		else return -1;
		if (n % 2 == 0) out[n / 2] = (uint8_t)(v << 4);
		else out[n / 2] |= (uint8_t)v;
		n++;
	}
	return n == 32 ? 0 : -1;
}

int nvme_hostid_from_nqn(const char *nqn, uint8_t out[16])
{
	static const char pfx[] = "nqn.2014-08.org.nvmexpress:uuid:";
	uint8_t id[16];
	if (!nqn || strncmp(nqn, pfx, sizeof(pfx) - 1) || strlen(nqn) != sizeof(pfx) - 1 + 36 ||
	    nvme_parse_uuid(nqn + sizeof(pfx) - 1, id))
		return -1;
	memcpy(out, id, 16);
	return 0;
}
