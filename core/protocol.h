/*
 * NVMe, NVMe-oF and NVMe/RDMA wire formats: encoders and parsers on byte
 * buffers, no I/O. Offsets and names follow the NVM Express Base, NVMe over
 * Fabrics and NVMe/RDMA Transport specifications. Everything on the wire is
 * little-endian; we read and write bytes so the layout never depends on the
 * compiler's struct packing.
 */
#ifndef NVMEOF_PROTOCOL_H
#define NVMEOF_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nvmeof.h"

#define NVME_SQE_SIZE 64
#define NVME_CQE_SIZE 16
#define NVME_IDENTIFY_SIZE 4096
#define NVMF_CONNECT_DATA_SIZE 1024
#define NVMF_CONNECT_DATA_CNTLID_OFF 16 /* after the 16-byte HOSTID */
#define NVMF_CONNECT_DISABLE_SQFLOW 0x04 /* CATTR bit 2: SQ flow control disabled */
#define NVME_RDMA_CM_REQ_SIZE 32
#define NVME_DSM_RANGE_SIZE 16
#define NVME_NQN_MAX 223          /* bytes, without the terminating NUL */
#define NVME_KEYED_SGL_MAX_LEN 0xffffffu /* 24-bit length field */

/* Admin command opcodes */
enum {
	NVME_ADMIN_GET_LOG_PAGE = 0x02,
	NVME_ADMIN_IDENTIFY = 0x06,
	NVME_ADMIN_ABORT = 0x08,
	NVME_ADMIN_SET_FEATURES = 0x09,
	NVME_ADMIN_GET_FEATURES = 0x0a,
	NVME_ADMIN_ASYNC_EVENT = 0x0c,
	NVME_ADMIN_KEEP_ALIVE = 0x18,
};
/* NVM command set opcodes */
enum {
	NVME_CMD_FLUSH = 0x00,
	NVME_CMD_WRITE = 0x01,
	NVME_CMD_READ = 0x02,
	NVME_CMD_WRITE_ZEROES = 0x08,
	NVME_CMD_DSM = 0x09,
};
#define NVME_FABRICS_OPCODE 0x7f
enum {
	NVMF_FCTYPE_PROPERTY_SET = 0x00,
	NVMF_FCTYPE_CONNECT = 0x01,
	NVMF_FCTYPE_PROPERTY_GET = 0x04,
	NVMF_FCTYPE_AUTH_SEND = 0x05,
	NVMF_FCTYPE_AUTH_RECV = 0x06,
	NVMF_FCTYPE_DISCONNECT = 0x08,
};
/* AUTH_Send/AUTH_Receive: the security protocol of in-band authentication */
#define NVMF_AUTH_SECP 0xe9
#define NVMF_AUTH_SPSP 0x01
/* Identify CNS values */
enum {
	NVME_CNS_NS = 0x00,
	NVME_CNS_CTRL = 0x01,
	NVME_CNS_NS_ACTIVE_LIST = 0x02,
};
#define NVME_FEAT_NUM_QUEUES 0x07
#define NVME_DSM_AD (1u << 2)     /* CDW11: attribute deallocate */
#define NVME_ONCS_DSM (1u << 2)

/* Controller properties (register offsets) */
enum {
	NVME_REG_CAP = 0x00,
	NVME_REG_VS = 0x08,
	NVME_REG_CC = 0x14,
	NVME_REG_CSTS = 0x1c,
};
#define NVME_CAP_MQES(cap) ((uint16_t)((cap) & 0xffff))
#define NVME_CAP_TO(cap) ((uint8_t)(((cap) >> 24) & 0xff)) /* 500 ms units */
#define NVME_CAP_MPSMIN(cap) ((uint8_t)(((cap) >> 48) & 0xf))
#define NVME_CC_EN (1u << 0)
#define NVME_CC_CSS_NVM (0u << 4)
#define NVME_CC_MPS(shift) ((uint32_t)((shift) - 12) << 7)
#define NVME_CC_SHN_NORMAL (1u << 14)
#define NVME_CC_SHN_MASK (3u << 14)
#define NVME_CC_IOSQES(l) ((uint32_t)(l) << 16)
#define NVME_CC_IOCQES(l) ((uint32_t)(l) << 20)
#define NVME_CSTS_RDY (1u << 0)
#define NVME_CSTS_CFS (1u << 1)
#define NVME_CSTS_SHST_MASK (3u << 2)
#define NVME_CSTS_SHST_CMPLT (2u << 2)

/* SGL descriptor type byte (byte 15): type in bits 7:4, subtype in 3:0. */
#define NVME_SGL_TYPE_DATA_OFFSET 0x01   /* Data Block, subtype Offset: in-capsule */
#define NVME_SGL_TYPE_KEYED_DATA 0x40    /* Keyed Data Block, subtype Address */
#define NVME_SQE_FLAGS_PSDT_SGL 0x40     /* PSDT 01b: SGLs for data */

#define NVME_SGLS_SUPPORTED(s) (((s) & 0x3) != 0)
#define NVME_SGLS_KEYED (1u << 2)
#define NVME_SGLS_OFFSET (1u << 20)

/* NVMe/RDMA CM reject status */
enum {
	NVME_RDMA_CM_INVALID_LEN = 0x01,
	NVME_RDMA_CM_INVALID_RECFMT = 0x02,
	NVME_RDMA_CM_INVALID_QID = 0x03,
	NVME_RDMA_CM_INVALID_HSQSIZE = 0x04,
	NVME_RDMA_CM_INVALID_HRQSIZE = 0x05,
	NVME_RDMA_CM_NO_RSC = 0x06,
	NVME_RDMA_CM_INVALID_IRD = 0x07,
	NVME_RDMA_CM_INVALID_ORD = 0x08,
	NVME_RDMA_CM_INVALID_CNTLID = 0x09,
};
#define NVMF_CNTLID_DYNAMIC 0xffff

/* ---- little-endian byte access ---- */
static inline void put_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}
static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint16_t get_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)get_le16(p) | ((uint32_t)get_le16(p + 2) << 16);
}
static inline uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | ((uint64_t)get_le32(p + 4) << 32);
}

/* ---- submission queue entries ---- */
/* Zeroes the SQE and sets opcode, PSDT=SGL, CID and NSID. */
static inline void nvme_sqe_init(uint8_t *sqe, uint8_t opc, uint16_t cid, uint32_t nsid)
{
	memset(sqe, 0, NVME_SQE_SIZE);
	sqe[0] = opc;
	sqe[1] = NVME_SQE_FLAGS_PSDT_SGL;
	put_le16(sqe + 2, cid);
	put_le32(sqe + 4, nsid);
}
static inline void nvme_sqe_set_cid(uint8_t *sqe, uint16_t cid) { put_le16(sqe + 2, cid); }
static inline uint16_t nvme_sqe_cid(const uint8_t *sqe) { return get_le16(sqe + 2); }

/* DPTR (bytes 24..39) as a Keyed SGL Data Block: address, 24-bit length, key. */
static inline void nvme_sqe_sgl_keyed(uint8_t *sqe, uint64_t addr, uint32_t len, uint32_t key)
{
	uint8_t *d = sqe + 24;
	put_le64(d, addr);
	/* bytes 8..15: the 24-bit length, the key, the type, as one word */
	put_le64(d + 8, (uint64_t)(len & 0xffffff) | (uint64_t)key << 24 |
				(uint64_t)NVME_SGL_TYPE_KEYED_DATA << 56);
}
/* DPTR as a Data Block with an offset into the capsule's in-capsule data. */
static inline void nvme_sqe_sgl_incapsule(uint8_t *sqe, uint64_t offset, uint32_t len)
{
	uint8_t *d = sqe + 24;
	put_le64(d, offset);
	put_le32(d + 8, len);
	memset(d + 12, 0, 3);
	d[15] = NVME_SGL_TYPE_DATA_OFFSET;
}

/* Read/Write: CDW10-11 SLBA, CDW12 NLB (0-based). nlb here is 1-based. */
static inline void nvme_sqe_rw(uint8_t *sqe, uint8_t opc, uint16_t cid, uint32_t nsid,
			       uint64_t slba, uint32_t nlb)
{
	nvme_sqe_init(sqe, opc, cid, nsid);
	put_le64(sqe + 40, slba);
	put_le32(sqe + 48, (nlb - 1) & 0xffff);
}
void nvme_sqe_dsm_deallocate(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint32_t nranges);
void nvme_dsm_range(uint8_t *range, uint64_t slba, uint32_t nlb);
void nvme_sqe_identify(uint8_t *sqe, uint16_t cid, uint8_t cns, uint32_t nsid, uint16_t cntid);
void nvme_sqe_set_features(uint8_t *sqe, uint16_t cid, uint8_t fid, uint32_t cdw11);
void nvme_sqe_keep_alive(uint8_t *sqe, uint16_t cid);
/* Number of Queues: both counts 1-based here, 0-based on the wire. */
uint32_t nvme_num_queues_cdw11(uint16_t nsq, uint16_t ncq);

/* ---- fabrics commands ---- */
/* sqsize is 0-based; kato in ms (admin queue only). */
void nvmf_sqe_connect(uint8_t *sqe, uint16_t cid, uint16_t qid, uint16_t sqsize, uint8_t cattr,
		      uint32_t kato);
/* Connect data; -1 when an NQN is empty or longer than NVME_NQN_MAX. */
int nvmf_connect_data(uint8_t *data, const uint8_t hostid[16], uint16_t cntlid,
		      const char *subnqn, const char *hostnqn);
void nvmf_sqe_prop_get(uint8_t *sqe, uint16_t cid, uint32_t offset, int size8);
void nvmf_sqe_prop_set(uint8_t *sqe, uint16_t cid, uint32_t offset, int size8, uint64_t value);
/* AUTH_Send (tl bytes of a message to the controller) and AUTH_Receive
 * (al bytes of room for its answer), SECP E9h, SPSP0/1 01h. */
void nvmf_sqe_auth_send(uint8_t *sqe, uint16_t cid, uint32_t tl);
void nvmf_sqe_auth_recv(uint8_t *sqe, uint16_t cid, uint32_t al);

/* ---- completion queue entries ---- */
struct nvme_cqe {
	uint32_t dw0, dw1;
	uint16_t sqhd, sqid, cid;
	uint16_t status; /* Status Field, phase bit dropped */
};
static inline void nvme_cqe_parse(const uint8_t *p, struct nvme_cqe *c)
{
	c->dw0 = get_le32(p);
	c->dw1 = get_le32(p + 4);
	c->sqhd = get_le16(p + 8);
	c->sqid = get_le16(p + 10);
	c->cid = get_le16(p + 12);
	c->status = (uint16_t)(get_le16(p + 14) >> 1);
}

/* What a Status Field says (SCT << 8 | SC), without the DNR, More and CRD
 * bits a target may set on any status: compare statuses through this. */
static inline uint16_t nvme_status_code(uint16_t status)
{
	return (uint16_t)(NVMEOF_STATUS_SCT(status) << 8 | NVMEOF_STATUS_SC(status));
}
#define NVME_SC_INVALID_FIELD 0x002
#define NVME_SC_TRANSIENT_TRANSPORT 0x022  /* SCT 0: a transport error that may pass when retried */
#define NVME_SC_AER_LIMIT 0x105            /* Asynchronous Event Request Limit Exceeded */
#define NVME_SC_CONNECT_INVALID_PARAM 0x182
#define NVME_SC_CONNECT_INVALID_HOST 0x184

/* ---- Identify data ---- */
/* Fills the Identify Controller fields of info; others are left alone. */
void nvme_id_ctrl_parse(const uint8_t *data, struct nvmeof_ctrl_info *info);
/* -1 when the namespace's LBA format is unusable (index past NLBAF, LBADS
 * outside 9..31), with *why set. */
int nvme_id_ns_parse(const uint8_t *data, uint32_t nsid, struct nvmeof_ns *ns, const char **why);
/* Active namespace list: the non-zero NSIDs in order, at most max. */
uint32_t nvme_ns_list_parse(const uint8_t *data, uint32_t *out, uint32_t max);
/* Bytes per command the controller accepts: 2^(12 + MPSMIN + MDTS); 0 = unlimited. */
uint64_t nvme_max_xfer(uint8_t mdts, uint64_t cap);

/* ---- NVMe/RDMA CM private data ---- */
void nvme_rdma_cm_req(uint8_t *priv, uint16_t qid, uint16_t hrqsize, uint16_t hsqsize,
		      uint16_t cntlid);
/* Accept: 0 and *crqsize, or -1 with *why for short data or an unknown RECFMT. */
int nvme_rdma_cm_rep_parse(const void *priv, size_t len, uint16_t *crqsize, const char **why);
/* Reject: 0 and *sts, or -1 when the data is absent or too short. */
int nvme_rdma_cm_rej_parse(const void *priv, size_t len, uint16_t *sts);
const char *nvme_rdma_cm_status_name(uint16_t sts);

/* ---- log pages, discovery, events, Write Zeroes ---- */
#define NVME_CNS_NS_DESC_LIST 0x03
#define NVME_FEAT_ASYNC_EVENT 0x0b
#define NVME_FEAT_HOST_BEHAVIOR 0x16
#define NVME_HOST_BEHAVIOR_SIZE 512   /* Host Behavior Support data structure */
#define NVME_HOST_BEHAVIOR_ACRE 0x01  /* byte 0: Advanced Command Retry Enable */
#define NVME_ONCS_WRITE_ZEROES (1u << 3)
#define NVME_RW_FUA (1u << 30)        /* CDW12 of Read, Write, Write Zeroes */
#define NVME_WZ_DEAC (1u << 25)       /* CDW12 of Write Zeroes */
#define NVME_DLFEAT_WZ_DEAC (1u << 3)
#define NVME_LPA_OFFSET (1u << 2)     /* Get Log Page offsets and extended data */
#define NVME_WZ_MAX_NLB 65536u        /* NLB is 16 bits, 0-based */
#define NVME_DISC_LOG_HDR_SIZE 1024
#define NVME_DISC_ENTRY_SIZE 1024
#define NVME_ERROR_ENTRY_SIZE 64
#define NVME_SMART_LOG_SIZE 512
#define NVME_NS_LIST_MAX 1024         /* NSIDs in a namespace list / Changed NS List */
#define NVME_CNTRLTYPE_DISCOVERY 2

/* Get Log Page. len in bytes (a dword multiple, > 0): NUMD is 0-based
 * dwords, its low half in CDW10 31:16 (NUMDL), high half in CDW11 15:0
 * (NUMDU). offset in bytes (LPOL CDW12, LPOU CDW13). */
void nvme_sqe_get_log_page(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint8_t lid, uint8_t lsp,
			   int rae, uint32_t len, uint64_t offset, uint16_t lsi);
void nvme_sqe_async_event(uint8_t *sqe, uint16_t cid);
/* Write Zeroes: nlb 1-based (at most 65536); cdw12_flags NVME_RW_FUA / NVME_WZ_DEAC. */
void nvme_sqe_write_zeroes(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint64_t slba, uint32_t nlb,
			   uint32_t cdw12_flags);
/* Set Features Asynchronous Event Configuration CDW11 for what the
 * controller offers: SMART critical warnings 4:0 and the OAES notices
 * (namespace attribute, firmware activation, ANA change, discovery log). */
uint32_t nvme_aec_cdw11(uint32_t oaes);
/* An AER completion's DW0: type 2:0, information 15:8, log page 23:16. */
void nvme_aer_decode(uint32_t dw0, struct nvmeof_event *ev);
/* How much of log page lid to read, RAE cleared, so that the controller
 * may report the next event that names it; 0 for a log not known here.
 * ana_len: this controller's ANA log size (nvme_ana_log_len). */
uint32_t nvme_aer_log_len(uint8_t lid, uint8_t elpe, uint32_t ana_len);
/* The largest ANA log the controller of this Identify Controller data can
 * return, as the kernel host sizes it (NANAGRPID groups, MNAN or else NN
 * NSIDs), at most NVME_ANA_LOG_MAX. */
#define NVME_ANA_LOG_MAX (1u << 20)
uint32_t nvme_ana_log_len(const uint8_t *id_ctrl);

/* Discovery log: header (at least 18 bytes) and one 1024-byte entry. */
void nvme_disc_log_hdr_parse(const uint8_t *d, uint64_t *genctr, uint64_t *numrec, uint16_t *recfmt);
void nvme_disc_entry_parse(const uint8_t *d, struct nvmeof_disc_entry *e);
void nvme_error_entry_parse(const uint8_t *d, struct nvmeof_error_entry *e);
void nvme_smart_log_parse(const uint8_t *d, struct nvmeof_smart_log *s);
/* Changed Namespace List: NSIDs in order, at most max; *overflow when the
 * first entry is FFFFFFFFh (more than 1024 changed). Returns the count. */
uint32_t nvme_changed_ns_parse(const uint8_t *d, uint32_t *out, uint32_t max, int *overflow);
/* Namespace Identification Descriptor list (4096 bytes); -1 with *why
 * when a descriptor's length disagrees with its type or runs past the end. */
int nvme_ns_desc_parse(const uint8_t *d, size_t len, struct nvmeof_ns_ids *ids, const char **why);
/* ANA log: group idx (0-based), -1 past NGRPS or the data's end. */
int nvme_ana_group_parse(const uint8_t *d, size_t len, uint32_t idx, struct nvmeof_ana_group *g,
			 uint64_t *chgcnt, uint16_t *ngrps);

/* Copies a space-padded ASCII field into a NUL-terminated string, trimmed. */
void nvme_ascii_field(char *dst, const uint8_t *src, size_t n);
/* A UUID in text (hyphens optional) to its 16 bytes; -1 if it is not one. */
int nvme_parse_uuid(const char *s, uint8_t out[16]);
/* The UUID of a uuid-form host NQN (nqn.2014-08.org.nvmexpress:uuid:...),
 * which nvme-cli uses as the host ID when none is configured; -1 otherwise. */
int nvme_hostid_from_nqn(const char *nqn, uint8_t out[16]);


/* ---- Zoned Namespace Command Set (protocol_zns.c) ---- */
#define NVME_CSI_NVM 0x00
#define NVME_CSI_ZNS 0x02
#define NVME_CNS_CS_NS 0x05           /* I/O Command Set specific Identify Namespace */
#define NVME_CNS_CS_CTRL 0x06         /* I/O Command Set specific Identify Controller */
#define NVME_CAP_CSS_CSI (1ull << 43) /* CAP.CSS bit 6: I/O command sets beyond NVM */
#define NVME_CC_CSS_CSI (6u << 4)     /* CC.CSS 110b: all supported I/O command sets */
enum {
	NVME_CMD_ZONE_MGMT_SEND = 0x79,
	NVME_CMD_ZONE_MGMT_RECV = 0x7a,
	NVME_CMD_ZONE_APPEND = 0x7d,
};
#define NVME_ZRA_REPORT_ZONES 0x00
#define NVME_ZONE_REPORT_HDR 64       /* Number of Zones, then reserved, then the descriptors */
#define NVME_ZONE_DESC_SIZE 64
#define NVME_ZNS_LBAFE_OFF 2816       /* Identify Namespace ZNS: LBA Format Extensions */
/* Identify with a Command Set Identifier (CDW11 bits 31:24). */
void nvme_sqe_identify_csi(uint8_t *sqe, uint16_t cid, uint8_t cns, uint32_t nsid, uint8_t csi);
/* Zone Management Send: CDW10-11 SLBA, CDW13 ZSA 7:0, Select All bit 8. */
void nvme_sqe_zone_mgmt_send(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint64_t slba, uint8_t zsa,
			     bool select_all);
/* Zone Management Receive of len bytes (a dword multiple): CDW12 NUMD
 * (0-based dwords), CDW13 ZRA 7:0, ZRASF 15:8, Partial Report bit 16. */
void nvme_sqe_zone_mgmt_recv(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint64_t slba, uint32_t len,
			     uint8_t zra, uint8_t zrasf, bool partial);
/* Zone Append: CDW10-11 ZSLBA, CDW12 NLB 0-based 15:0 with cdw12 (FUA) or'd in; nlb 1-based. */
void nvme_sqe_zone_append(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint64_t zslba, uint32_t nlb,
			  uint32_t cdw12);
/* The ZNS Identify Namespace data (CNS 05h CSI 02h) for LBA format lbaf:
 * ZOC, OZCS, MAR/MOR as limits (+1, 0 for FFFFFFFFh), ZSZE. */
void nvme_id_ns_zns_parse(const uint8_t *d, unsigned lbaf, struct nvmeof_zns_info *z);
/* ZASL (Identify Controller ZNS byte 0) in bytes: 2^ZASL minimum pages
 * (4 KiB: MPSMIN 0 is all the library runs with); 0 stays 0. */
uint32_t nvme_zasl_bytes(uint8_t zasl);
/* The in-use LBA format index of Identify Namespace data: FLBAS bits 3:0,
 * and bits 6:5 above them where NLBAF is above 16 (the connect, the zoned
 * data and the tool all take this one rule). */
unsigned nvme_id_ns_lbaf_index(const uint8_t *d);
/* A Report Zones buffer of len bytes: the header's Number of Zones in
 * *total, up to max descriptors that fit in len decoded; their count. */
uint32_t nvme_zone_report_parse(const uint8_t *d, size_t len, struct nvmeof_zone *zones, uint32_t max,
				uint64_t *total);

#endif
