/*
 * Zoned Namespace Command Set wire formats (NVM Express Zoned Namespace
 * Command Set Specification): the zone commands' SQEs, the ZNS Identify
 * data and the Report Zones data structure. Byte buffers only, no I/O.
 */
#include "protocol.h"

void nvme_sqe_identify_csi(uint8_t *sqe, uint16_t cid, uint8_t cns, uint32_t nsid, uint8_t csi)
{
	nvme_sqe_identify(sqe, cid, cns, nsid, 0);
	put_le32(sqe + 44, (uint32_t)csi << 24);
}

void nvme_sqe_zone_mgmt_send(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint64_t slba, uint8_t zsa,
			     bool select_all)
{
	nvme_sqe_init(sqe, NVME_CMD_ZONE_MGMT_SEND, cid, nsid);
	put_le64(sqe + 40, slba);
	put_le32(sqe + 52, (uint32_t)zsa | (select_all ? 1u << 8 : 0));
}

void nvme_sqe_zone_mgmt_recv(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint64_t slba, uint32_t len,
			     uint8_t zra, uint8_t zrasf, bool partial)
{
	nvme_sqe_init(sqe, NVME_CMD_ZONE_MGMT_RECV, cid, nsid);
	put_le64(sqe + 40, slba);
	put_le32(sqe + 48, len / 4 - 1);
	put_le32(sqe + 52, (uint32_t)zra | (uint32_t)zrasf << 8 | (partial ? 1u << 16 : 0));
}

void nvme_sqe_zone_append(uint8_t *sqe, uint16_t cid, uint32_t nsid, uint64_t zslba, uint32_t nlb,
			  uint32_t cdw12)
{
	nvme_sqe_rw(sqe, NVME_CMD_ZONE_APPEND, cid, nsid, zslba, nlb);
	put_le32(sqe + 48, get_le32(sqe + 48) | cdw12);
}

/* MAR and MOR are 0-based, FFFFFFFFh for no limit. */
static uint32_t zns_limit(uint32_t v) { return v == 0xffffffffu ? 0 : v + 1; }

void nvme_id_ns_zns_parse(const uint8_t *d, unsigned lbaf, struct nvmeof_zns_info *z)
{
	z->zoc = get_le16(d + 0);
	z->ozcs = get_le16(d + 2);
	z->max_active = zns_limit(get_le32(d + 4));
	z->max_open = zns_limit(get_le32(d + 8));
	/* 64 LBA Format Extensions of 16 bytes: ZSZE (8), ZDES (1), reserved */
	z->zone_size = lbaf < 64 ? get_le64(d + NVME_ZNS_LBAFE_OFF + 16 * lbaf) : 0;
}

uint32_t nvme_zasl_bytes(uint8_t zasl)
{
	/* 2^ZASL pages of 4 KiB; past 2^31 bytes no 32-bit count holds it,
	 * and no command carries that much anyway */
	if (!zasl)
		return 0;
	return zasl >= 19 ? 0x80000000u : 4096u << zasl;
}

uint32_t nvme_zone_report_parse(const uint8_t *d, size_t len, struct nvmeof_zone *zones, uint32_t max,
				uint64_t *total)
{
	uint32_t n = 0;
	if (len < NVME_ZONE_REPORT_HDR) {
		*total = 0;
		return 0;
	}
	*total = get_le64(d);
	/* the controller fills only as many descriptors as it counts (with
	 * the partial bit) or as fit; never read past either */
	uint64_t have = (len - NVME_ZONE_REPORT_HDR) / NVME_ZONE_DESC_SIZE;
	if (have > *total)
		have = *total;
	for (; n < max && n < have; n++) {
		const uint8_t *z = d + NVME_ZONE_REPORT_HDR + (size_t)n * NVME_ZONE_DESC_SIZE;
		zones[n] = (struct nvmeof_zone){
			.type = z[0] & 0xf,
			.state = z[1] >> 4,
			.attrs = z[2],
			.zcap = get_le64(z + 8),
			.zslba = get_le64(z + 16),
			.wp = get_le64(z + 24),
		};
	}
	return n;
}
