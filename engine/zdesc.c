/* Zone Descriptors into fio's zones. A target's descriptor is checked
 * before fio sees it: fio asserts start <= wp <= start + size for every
 * zone that has a write pointer, and writes at random to any zone it
 * takes for conventional. */
#include <stdio.h>

#include "zdesc.h"

int zdesc_to_fio(const struct nvmeof_zone *z, uint64_t want, uint64_t zsze, unsigned int lbads, uint64_t nsze,
		 struct zbd_zone *out, char *why, size_t len)
{
	unsigned long long at = (unsigned long long)z->zslba;
	/* ZNS has only sequential write required zones (the kernel and fio's
	 * nvme engine refuse any other type) */
	if (z->type != NVMEOF_ZONE_TYPE_SEQ) {
		snprintf(why, len, "the zone at LBA %llu has type %uh, not sequential write required (2h)", at,
			 z->type);
		return -1;
	}
	if (z->zslba != want || z->zslba >= nsze || z->zslba % zsze) {
		snprintf(why, len, "a zone descriptor starts at LBA %llu where the zone at LBA %llu was due", at,
			 (unsigned long long)want);
		return -1;
	}
	if (!z->zcap || z->zcap > zsze) {
		snprintf(why, len, "the zone at LBA %llu has capacity %llu LBAs (zone size %llu)", at,
			 (unsigned long long)z->zcap, (unsigned long long)zsze);
		return -1;
	}
	*out = (struct zbd_zone){
		.start = z->zslba << lbads,
		.wp = z->zslba << lbads,
		.len = zsze << lbads,
		.capacity = z->zcap << lbads,
		.type = ZBD_ZONE_TYPE_SWR,
	};
	switch (z->state) {
	case NVMEOF_ZS_EMPTY:
	case NVMEOF_ZS_IMP_OPEN:
	case NVMEOF_ZS_EXP_OPEN:
	case NVMEOF_ZS_CLOSED:
		if (z->wp < z->zslba || z->wp > z->zslba + z->zcap) {
			snprintf(why, len, "the zone at LBA %llu (%s) has its write pointer at LBA %llu, outside its "
				 "capacity of %llu LBAs", at, nvmeof_zone_state_str(z->state),
				 (unsigned long long)z->wp, (unsigned long long)z->zcap);
			return -1;
		}
		out->cond = (enum zbd_zone_cond)z->state;
		out->wp = z->wp << lbads;
		return 0;
	case NVMEOF_ZS_FULL:
		/* a full zone's write pointer is not valid (ZNS): fio wants its end */
		out->cond = ZBD_ZONE_COND_FULL;
		out->wp = out->start + out->len;
		return 0;
	case NVMEOF_ZS_READ_ONLY:
	case NVMEOF_ZS_OFFLINE:
		/* no valid write pointer, nothing to write or reset: fio skips
		 * offline zones (as fio's blkzoned and nvme backends map both) */
		out->cond = ZBD_ZONE_COND_OFFLINE;
		return 0;
	default:
		snprintf(why, len, "the zone at LBA %llu has state %xh, which ZNS does not define", at, z->state);
		return -1;
	}
}

unsigned int zdesc_limit(uint32_t lim, uint64_t nr_zones)
{
	return lim < nr_zones ? lim : 0;
}
