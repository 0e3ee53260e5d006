/* Flexible Data Placement's wire layouts (NVMe Base 2.1, TP4146): the
 * directive fields of a Write and the Reclaim Unit Handle Status that I/O
 * Management Receive returns. Encoders and the parser alone, so the unit
 * tests hold them to the spec's byte offsets. */
#ifndef NVMEOF_FDP_H
#define NVMEOF_FDP_H

#include <stddef.h>
#include <stdint.h>

#include "nvmeof.h"

#define NVME_CMD_IO_MGMT_RECV 0x12
#define NVME_IOMR_MO_RUHS 0x1          /* Management Operation: Reclaim Unit Handle Status */
#define NVME_RUHS_HDR_SIZE 16          /* bytes 13:0 reserved, 15:14 NRUHSD */
#define NVME_RUHS_DESC_SIZE 32         /* PID, RUHID, EARUTR, RUAMW, 16 reserved */

/* A Write of nlb (1-based) blocks at slba with CDW12's DTYPE (bits 23:20)
 * and CDW13's DSPEC (bits 31:16); cdw12_flags: NVME_RW_FUA. CID 0 and no
 * data pointer: the raw path fills both. */
void fdp_sqe_write_dspec(uint8_t *sqe, uint32_t nsid, uint64_t slba, uint32_t nlb, uint32_t cdw12_flags,
			 uint8_t dtype, uint16_t dspec);
/* I/O Management Receive, Reclaim Unit Handle Status, into len bytes
 * (a multiple of 4: CDW11 NUMD is 0-based dwords). */
void fdp_sqe_ruhs(uint8_t *sqe, uint32_t nsid, uint32_t len);
/* The status's descriptors from len bytes at buf into out (at most max),
 * *nr the count the controller reports (NRUHSD), which may exceed both
 * max and what len held. NVMEOF_EINVAL when len is short of the header. */
int fdp_ruhs_parse(const uint8_t *buf, size_t len, struct nvmeof_ruhs_desc *out, uint32_t max, uint32_t *nr);

#endif
