/* The arithmetic of NIC completion timestamps (hwts.h). */
#include "hwts.h"

uint64_t hwts_ns(uint64_t ticks, uint64_t khz)
{
	if (!khz)
		return 0;
	/* ticks * 1e6 / khz without overflow for any 64-bit tick count */
	return ticks / khz * 1000000u + ticks % khz * 1000000u / khz;
}

static unsigned int bucket_of(uint64_t ns)
{
	if (ns < HWTS_SUB)
		return (unsigned int)ns;
	unsigned int g = 63u - (unsigned int)__builtin_clzll(ns); /* 4 and up */
	unsigned int sub = (unsigned int)(ns >> (g - 4)) & (HWTS_SUB - 1);
	unsigned int b = (g - 3) * HWTS_SUB + sub;
	return b < HWTS_BUCKETS ? b : HWTS_BUCKETS - 1;
}

/* The middle of bucket b's range */
static uint64_t bucket_value(unsigned int b)
{
	if (b < HWTS_SUB)
		return b;
	unsigned int g = b / HWTS_SUB + 3, sub = b % HWTS_SUB;
	uint64_t lo = ((uint64_t)HWTS_SUB + sub) << (g - 4);
	return lo + ((uint64_t)1 << (g - 4)) / 2;
}

void hwts_add(struct hwts_hist *h, uint64_t sent, uint64_t resp, uint64_t khz)
{
	/* The device's clock counts within its mask and wraps there: the
	 * difference modulo the clock's range is right across a wrap. */
	uint64_t m = h->mask ? h->mask : ~(uint64_t)0, d = (resp - sent) & m;
	/* RC acknowledges a send when the target's HCA received it; a
	 * response may still be clocked first when the ACK is delayed. Its
	 * difference is negative (above half the range): it says nothing of
	 * the fabric's time, and counting it as 0 pulled the percentiles
	 * down, so it is counted apart. */
	if (d > m >> 1) {
		h->early++;
		return;
	}
	h->bucket[bucket_of(hwts_ns(d, khz))]++;
	h->n++;
}

uint64_t hwts_pct(const struct hwts_hist *h, double pct)
{
	if (!h->n)
		return 0;
	/* the smallest value with at least pct% of the counts at or below it */
	uint64_t want = (uint64_t)((double)h->n * pct / 100.0 + 0.999999);
	if (want < 1)
		want = 1;
	uint64_t seen = 0;
	for (unsigned int b = 0; b < HWTS_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen >= want)
			return bucket_value(b);
	}
	return bucket_value(HWTS_BUCKETS - 1);
}
