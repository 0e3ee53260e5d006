/* NIC completion timestamps: each command's time from its send completion
 * to its response's arrival as the HCA clocked them, kept as a histogram
 * that costs the I/O path one array increment. */
#ifndef NVMEOF_HWTS_H
#define NVMEOF_HWTS_H

#include <stdint.h>

/* Log-linear: 16 buckets per power of two (within 1/16 of the value),
 * exact below 16 ns, up to 2^48 ns. */
#define HWTS_SUB 16
#define HWTS_GROUPS 45
#define HWTS_BUCKETS (HWTS_SUB * HWTS_GROUPS)

struct hwts_hist {
	uint64_t n;      /* commands in the histogram */
	uint64_t early;  /* commands left out: response clocked before the send completion */
	uint64_t mask;   /* the clock's valid bits (completion_timestamp_mask); 0: all 64 */
	/* 64 bits: 32 fill one bucket in about 70 minutes at 1M IOPS */
	uint64_t bucket[HWTS_BUCKETS];
};

/* HCA clock ticks to ns; khz: the device's hca_core_clock. */
uint64_t hwts_ns(uint64_t ticks, uint64_t khz);
/* One command: its send completion and response arrival in ticks, the
 * clock wrapping at h->mask. */
void hwts_add(struct hwts_hist *h, uint64_t sent, uint64_t resp, uint64_t khz);
/* The value at or below which pct percent of the commands fall (ns; the
 * bucket's middle), 0 when none were counted. */
uint64_t hwts_pct(const struct hwts_hist *h, double pct);

#endif
