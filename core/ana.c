/* Asymmetric Namespace Access as data: see ana.h. */
#include <string.h>

#include "ana.h"
#include "protocol.h"

void nvme_id_ctrl_ana_parse(const uint8_t *id, struct nvmeof_ana_caps *a)
{
	a->cmic = id[NVME_ID_CMIC];
	a->reporting = (a->cmic & NVME_CMIC_ANA) != 0;
	a->anatt = id[NVME_ID_ANATT];
	a->anacap = id[NVME_ID_ANACAP];
	a->anagrpmax = get_le32(id + NVME_ID_ANAGRPMAX);
	a->nanagrpid = get_le32(id + NVME_ID_NANAGRPID);
}

int nvme_ana_log_check(const uint8_t *d, size_t len, const char **why)
{
	if (len < NVME_ANA_LOG_HDR) {
		*why = "shorter than its 16-byte header";
		return -1;
	}
	uint16_t n = get_le16(d + 8);
	size_t off = NVME_ANA_LOG_HDR;
	for (uint32_t i = 0; i < n; i++) {
		if (off + NVME_ANA_DESC_SIZE > len) {
			*why = "a group descriptor runs past the data read (NGRPS too large, or the read too short)";
			return -1;
		}
		off += NVME_ANA_DESC_SIZE + (size_t)get_le32(d + off + 4) * 4;
		if (off > len) {
			*why = "a group's NSID list runs past the data read (NNSIDS too large, or the read too short)";
			return -1;
		}
	}
	return 0;
}

int nvme_ana_group_state(const uint8_t *d, size_t len, uint32_t grpid, uint8_t *state, uint64_t *chgcnt)
{
	const char *why;
	if (nvme_ana_log_check(d, len, &why))
		return -1;
	uint16_t n = get_le16(d + 8);
	size_t off = NVME_ANA_LOG_HDR;
	for (uint32_t i = 0; i < n; i++) {
		if (get_le32(d + off) == grpid) {
			/* bits 3:0; the rest are reserved */
			*state = d[off + 16] & 0x0f;
			if (chgcnt)
				*chgcnt = get_le64(d + off + 8);
			return 0;
		}
		off += NVME_ANA_DESC_SIZE + (size_t)get_le32(d + off + 4) * 4;
	}
	return 1;
}

int nvme_ana_ns_state(const uint8_t *d, size_t len, uint32_t nsid, uint32_t *grpid, uint8_t *state)
{
	const char *why;
	if (nvme_ana_log_check(d, len, &why))
		return -1;
	uint16_t n = get_le16(d + 8);
	size_t off = NVME_ANA_LOG_HDR;
	bool lists = false;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t nn = get_le32(d + off + 4);
		lists |= nn > 0;
		for (uint32_t k = 0; k < nn; k++)
			if (get_le32(d + off + NVME_ANA_DESC_SIZE + 4 * (size_t)k) == nsid) {
				*grpid = get_le32(d + off);
				*state = d[off + 16] & 0x0f;
				return 0;
			}
		off += NVME_ANA_DESC_SIZE + (size_t)nn * 4;
	}
	/* A log that lists NSIDs and not this one: the controller no longer
	 * has it (detached from it alone), whatever its old group says. */
	if (lists)
		return 1;
	return nvme_ana_group_state(d, len, *grpid, state, NULL);
}

enum path_verdict nvme_path_verdict(int err, uint16_t status, uint8_t *ana_state)
{
	*ana_state = 0;
	switch (err) {
	case 0:
		return PATH_DONE;
	/* The connection went (or a command timed out and took it down, or
	 * the post was refused): the command never completed on this path,
	 * and the kernel fails such requests over too (host-aborted). */
	case NVMEOF_ECLOSED:
	case NVMEOF_ETIMEDOUT:
	case NVMEOF_ETRANSPORT:
		return PATH_FAILOVER;
	case NVMEOF_ENVME:
		break;
	default:
		return PATH_DONE;
	}
	if (NVMEOF_STATUS_SCT(status) != 0x3 || NVMEOF_STATUS_DNR(status))
		return PATH_DONE;
	switch (NVMEOF_STATUS_SC(status)) {
	case 0x01:
		*ana_state = NVMEOF_ANA_PERSISTENT_LOSS;
		return PATH_FAILOVER;
	case 0x02:
		*ana_state = NVMEOF_ANA_INACCESSIBLE;
		return PATH_FAILOVER;
	case 0x03:
		*ana_state = NVMEOF_ANA_CHANGE;
		return PATH_TRANSITION;
	default: /* Internal Path Error, controller or host pathing errors */
		return PATH_FAILOVER;
	}
}
