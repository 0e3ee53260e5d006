/* A Zone Descriptor from the target as fio's struct zbd_zone, checked as
 * the kernel's nvme_zone_parse_entry and fio's own backends do. */
#ifndef ZDESC_H
#define ZDESC_H
#include <stddef.h>
#include <stdint.h>

#include "nvmeof.h"
#include "zbd_types.h"

/* z, expected at LBA want (zone size zsze LBAs, of 2^lbads bytes, in a
 * namespace of nsze LBAs), into *out: 0, or -1 with why (naming the zone). */
int zdesc_to_fio(const struct nvmeof_zone *z, uint64_t want, uint64_t zsze, unsigned int lbads, uint64_t nsze,
		 struct zbd_zone *out, char *why, size_t len);
/* An open or active zone limit (0: none) for fio: one of at least the
 * namespace's nr_zones limits nothing, so 0, as the kernel does (fio
 * refuses a limit above its own maximum of 4096). */
unsigned int zdesc_limit(uint32_t lim, uint64_t nr_zones);
#endif
