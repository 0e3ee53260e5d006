/* failover-check: the blocks' format and the verdict on a block read back
 * against its unit's write history. No I/O here: the unit tests feed it
 * made-up histories and blocks. */
#include <string.h>

#include "fcheck.h"

const char *fc_state_str(uint8_t s)
{
	switch (s) {
	case FC_ACKED: return "acknowledged";
	case FC_FAILED: return "failed (in doubt)";
	case FC_TIMEDOUT: return "timed out (in doubt)";
	case FC_ABANDONED: return "abandoned (in doubt)";
	}
	return "?";
}

const char *fc_kind_str(int k)
{
	switch (k) {
	case FC_OK: return "ok";
	case FC_LOST: return "lost update";
	case FC_NEVER: return "version never written";
	case FC_CORRUPT: return "torn or corrupt";
	case FC_UNREAD: return "unreadable";
	}
	return "?";
}

void fc_record(struct fc_unit *u, uint64_t v, uint8_t state, uint16_t queue, uint32_t t_ms, int err,
	       uint16_t status)
{
	struct fc_event *e = &u->ev[u->nev++ % FC_HIST];
	*e = (struct fc_event){.version = v, .sent_ms = u->sent_ms, .t_ms = t_ms, .queue = queue, .state = state,
			       .err = err, .status = status};
	if (state != FC_ACKED || t_ms - u->sent_ms >= FC_SLOW_MS)
		u->odd[u->nodd++ % FC_ODD] = *e;
	if (state == FC_ACKED) {
		if (v > u->acked)
			u->acked = v;
	} else {
		u->in_doubt++;
	}
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* FNV-1a, 64 bits, with the checksum field (bytes 40..47) read as zero:
 * any torn or misplaced byte changes it. */
static uint64_t sum(const uint8_t *b, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= i >= 40 && i < 48 ? 0 : b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void fc_stamp(void *blk, size_t bsz, uint64_t run, uint64_t lba, uint64_t version, uint16_t queue)
{
	uint8_t *b = blk;
	put64(b, FC_MAGIC);
	put64(b + 8, run);
	put64(b + 16, lba);
	put64(b + 24, version);
	put64(b + 32, queue);
	put64(b + 40, 0);
	/* the rest: a pattern of LBA and version (xorshift), so that a block
	 * of another version differs all through, not only in its header */
	uint64_t x = lba * 0x9e3779b97f4a7c15ull ^ version ^ run;
	for (size_t i = FC_HDR; i < bsz; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint8_t w[8];
		put64(w, x);
		memcpy(b + i, w, bsz - i < 8 ? bsz - i : 8);
	}
	put64(b + 40, sum(b, bsz));
}

int fc_judge(const struct fc_unit *u, const void *blk, size_t bsz, uint64_t run, uint64_t lba,
	     uint64_t *version, uint16_t *writer)
{
	const uint8_t *b = blk;
	*version = 0;
	*writer = 0;
	/* not one of this run's blocks: what the LBA held before the run,
	 * version 0, older than any acknowledged one */
	if (bsz < FC_HDR || get64(b) != FC_MAGIC || get64(b + 8) != run)
		return u->acked ? FC_LOST : FC_OK;
	*version = get64(b + 24);
	*writer = (uint16_t)get64(b + 32);
	if (get64(b + 40) != sum(b, bsz) || get64(b + 16) != lba)
		return FC_CORRUPT;
	if (*version == 0 || *version > u->issued)
		return FC_NEVER;
	/* any version at least the newest acknowledged one may be there: the
	 * newer ones were in doubt, and a write in doubt may have landed */
	return *version < u->acked ? FC_LOST : FC_OK;
}
