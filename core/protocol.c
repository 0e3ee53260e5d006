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

/* CDW10: byte 41 SPSP0, 42 SPSP1, 43 SECP; CDW11: the length. */
static void nvmf_sqe_auth(uint8_t *sqe, uint16_t cid, uint8_t fctype, uint32_t len)
{
	nvmf_sqe_init(sqe, cid, fctype);
	sqe[41] = NVMF_AUTH_SPSP;
	sqe[42] = NVMF_AUTH_SPSP;
	sqe[43] = NVMF_AUTH_SECP;
	put_le32(sqe + 44, len);
}

void nvmf_sqe_auth_send(uint8_t *sqe, uint16_t cid, uint32_t tl) { nvmf_sqe_auth(sqe, cid, NVMF_FCTYPE_AUTH_SEND, tl); }
void nvmf_sqe_auth_recv(uint8_t *sqe, uint16_t cid, uint32_t al) { nvmf_sqe_auth(sqe, cid, NVMF_FCTYPE_AUTH_RECV, al); }

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
		info->crdt[i] = get_le16(d + 128 + 2 * i); /* CRDT1..3, after FGUID */
	info->kas = get_le16(d + 320);
	info->cqt = get_le16(d + 386);
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
	info->cntrltype = d[111];
	info->oaes = get_le32(d + 92);
	info->aerl = d[259];
	info->lpa = d[261];
	info->elpe = d[262];
}

unsigned nvme_id_ns_lbaf_index(const uint8_t *d)
{
	/* FLBAS bits 3:0 index the format; bits 6:5 are its upper bits only
	 * where NLBAF (0-based) is above 16, and reserved otherwise */
	uint8_t nlbaf = d[25], flbas = d[26];
	return (flbas & 0xf) | (nlbaf > 16 ? ((unsigned)flbas >> 5 & 0x3) << 4 : 0);
}

int nvme_id_ns_parse(const uint8_t *d, uint32_t nsid, struct nvmeof_ns *ns, const char **why)
{
	uint8_t nlbaf = d[25];
	unsigned idx = nvme_id_ns_lbaf_index(d);
	memset(ns, 0, sizeof(*ns));
	ns->nsid = nsid;
	ns->nsze = get_le64(d + 0);
	ns->ncap = get_le64(d + 8);
	ns->nuse = get_le64(d + 16);
	memcpy(ns->nguid, d + 104, 16);
	memcpy(ns->eui64, d + 120, 8);
	ns->dlfeat = d[33];
	ns->nmic = d[30];
	ns->anagrpid = get_le32(d + 92);
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

void nvme_sqe_get_log_page(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint8_t lid, uint8_t lsp,
			   int rae, uint32_t len, uint64_t offset, uint16_t lsi)
{
	uint32_t numd = len / 4 - 1;
	nvme_sqe_init(sqe, NVME_ADMIN_GET_LOG_PAGE, cid, nsid);
	put_le32(sqe + 40, (uint32_t)lid | ((uint32_t)(lsp & 0x7f) << 8) | (rae ? 1u << 15 : 0) |
				   ((numd & 0xffff) << 16));
	put_le32(sqe + 44, (numd >> 16) | ((uint32_t)lsi << 16));
	put_le64(sqe + 48, offset);
}

void nvme_sqe_async_event(uint8_t *sqe, uint16_t cid)
{
	nvme_sqe_init(sqe, NVME_ADMIN_ASYNC_EVENT, cid, 0);
}

void nvme_sqe_write_zeroes(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint64_t slba, uint32_t nlb,
			   uint32_t cdw12_flags)
{
	nvme_sqe_init(sqe, NVME_CMD_WRITE_ZEROES, cid, nsid);
	put_le64(sqe + 40, slba);
	put_le32(sqe + 48, ((nlb - 1) & 0xffff) | cdw12_flags);
}

uint32_t nvme_aec_cdw11(uint32_t oaes)
{
	/* OAES bit n announces the notice AEC bit n enables */
	return 0x1fu | (oaes & ((1u << 8) | (1u << 9) | (1u << 11) | (1u << 31)));
}

void nvme_aer_decode(uint32_t dw0, struct nvmeof_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->cdw0 = dw0;
	ev->type = (uint8_t)(dw0 & 0x7);
	ev->info = (uint8_t)(dw0 >> 8);
	ev->lid = (uint8_t)(dw0 >> 16);
}

uint32_t nvme_aer_log_len(uint8_t lid, uint8_t elpe, uint32_t ana_len)
{
	switch (lid) {
	case NVMEOF_LOG_ERROR:
		return (elpe + 1u) * NVME_ERROR_ENTRY_SIZE;
	case NVMEOF_LOG_SMART:
	case NVMEOF_LOG_FW_SLOT:
		return NVME_SMART_LOG_SIZE; /* the firmware slot log is 512 bytes as well */
	case NVMEOF_LOG_CHANGED_NS:
		return NVME_NS_LIST_MAX * 4;
	case NVMEOF_LOG_ANA:
		return ana_len;
	case NVMEOF_LOG_DISCOVERY:
		/* the header is enough: nvmet clears the event on any read */
		return NVME_DISC_LOG_HDR_SIZE;
	default:
		return 0;
	}
}

uint32_t nvme_ana_log_len(const uint8_t *id)
{
	uint64_t ngrps = get_le32(id + 348), mnan = get_le32(id + 540);
	if (!mnan)
		mnan = get_le32(id + 516);
	/* header 16 bytes, 32 per group descriptor, 4 per NSID */
	uint64_t len = 16 + ngrps * 32 + mnan * 4;
	return len < NVME_ANA_LOG_MAX ? (uint32_t)len : NVME_ANA_LOG_MAX;
}

void nvme_disc_log_hdr_parse(const uint8_t *d, uint64_t *genctr, uint64_t *numrec, uint16_t *recfmt)
{
	*genctr = get_le64(d);
	*numrec = get_le64(d + 8);
	*recfmt = get_le16(d + 16);
}

void nvme_disc_entry_parse(const uint8_t *d, struct nvmeof_disc_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->trtype = d[0];
	e->adrfam = d[1];
	e->subtype = d[2];
	e->treq = d[3];
	e->portid = get_le16(d + 4);
	e->cntlid = get_le16(d + 6);
	e->asqsz = get_le16(d + 8);
	e->eflags = get_le16(d + 10);
	nvme_ascii_field(e->trsvcid, d + 32, 32);
	nvme_ascii_field(e->subnqn, d + 256, 256);
	nvme_ascii_field(e->traddr, d + 512, 256);
	/* TSAS at 768: its layout depends on the transport */
	if (e->trtype == 1) {
		e->rdma_qptype = d[768];
		e->rdma_prtype = d[769];
		e->rdma_cms = d[770];
		e->rdma_pkey = get_le16(d + 776);
	} else if (e->trtype == 3) {
		e->tcp_sectype = d[768];
	}
}

void nvme_error_entry_parse(const uint8_t *d, struct nvmeof_error_entry *e)
{
	e->error_count = get_le64(d);
	e->sqid = get_le16(d + 8);
	e->cmdid = get_le16(d + 10);
	e->status = (uint16_t)(get_le16(d + 12) >> 1);
	e->parm_error_location = get_le16(d + 14);
	e->lba = get_le64(d + 16);
	e->nsid = get_le32(d + 24);
	e->vs = d[28];
	e->trtype = d[29];
	e->cs = get_le64(d + 32);
	e->trtype_spec_info = get_le16(d + 40);
}

static void le128(const uint8_t *d, uint64_t out[2])
{
	out[0] = get_le64(d);
	out[1] = get_le64(d + 8);
}

void nvme_smart_log_parse(const uint8_t *d, struct nvmeof_smart_log *s)
{
	memset(s, 0, sizeof(*s));
	s->critical_warning = d[0];
	s->temperature = get_le16(d + 1);
	s->avail_spare = d[3];
	s->spare_thresh = d[4];
	s->percent_used = d[5];
	s->endu_grp_crit_warn_sumry = d[6];
	le128(d + 32, s->data_units_read);
	le128(d + 48, s->data_units_written);
	le128(d + 64, s->host_reads);
	le128(d + 80, s->host_writes);
	le128(d + 96, s->ctrl_busy_time);
	le128(d + 112, s->power_cycles);
	le128(d + 128, s->power_on_hours);
	le128(d + 144, s->unsafe_shutdowns);
	le128(d + 160, s->media_errors);
	le128(d + 176, s->num_err_log_entries);
	s->warning_temp_time = get_le32(d + 192);
	s->critical_comp_time = get_le32(d + 196);
	for (int i = 0; i < 8; i++)
		s->temp_sensor[i] = get_le16(d + 200 + 2 * i);
}

uint32_t nvme_changed_ns_parse(const uint8_t *d, uint32_t *out, uint32_t max, int *overflow)
{
	*overflow = get_le32(d) == 0xffffffffu;
	if (*overflow)
		return 0;
	return nvme_ns_list_parse(d, out, max);
}

int nvme_ns_desc_parse(const uint8_t *d, size_t len, struct nvmeof_ns_ids *ids, const char **why)
{
	memset(ids, 0, sizeof(*ids));
	size_t off = 0;
	while (off + 4 <= len) {
		uint8_t nidt = d[off], nidl = d[off + 1];
		if (!nidt)
			break; /* the list ends with a zeroed descriptor */
		if (off + 4 + nidl > len) {
			*why = "a descriptor runs past the end of the list";
			return -1;
		}
		const uint8_t *nid = d + off + 4;
		uint8_t want = nidt == 1 ? 8 : nidt == 2 || nidt == 3 ? 16 : nidt == 4 ? 1 : nidl;
		if (nidl != want) {
			*why = "a descriptor's length does not match its type";
			return -1;
		}
		switch (nidt) {
		case 1: memcpy(ids->eui64, nid, 8); ids->has_eui64 = true; break;
		case 2: memcpy(ids->nguid, nid, 16); ids->has_nguid = true; break;
		case 3: memcpy(ids->uuid, nid, 16); ids->has_uuid = true; break;
		case 4: ids->csi = nid[0]; ids->has_csi = true; break;
		default: break; /* unknown types are skipped by their length */
		}
		off += 4u + nidl;
	}
	return 0;
}

int nvme_ana_group_parse(const uint8_t *d, size_t len, uint32_t idx, struct nvmeof_ana_group *g,
			 uint64_t *chgcnt, uint16_t *ngrps)
{
	if (len < 16)
		return -1;
	uint16_t n = get_le16(d + 8);
	if (chgcnt)
		*chgcnt = get_le64(d);
	if (ngrps)
		*ngrps = n;
	size_t off = 16;
	for (uint32_t i = 0; i < n; i++) {
		if (off + 32 > len)
			return -1;
		uint32_t nn = get_le32(d + off + 4);
		size_t next = off + 32 + (size_t)nn * 4;
		if (i == idx) {
			if (next > len)
				return -1;
			g->grpid = get_le32(d + off);
			g->nnsids = nn;
			g->chgcnt = get_le64(d + off + 8);
			g->state = d[off + 16];
			g->nsids_off = off + 32;
			return 0;
		}
		off = next;
	}
	return -1;
}
