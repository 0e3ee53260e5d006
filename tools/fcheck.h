/* nvmeof failover-check: a write history kept per write unit (a set of
 * consecutive blocks written together), the blocks' self-describing format,
 * and the verdict on what a block reads back as. The verdict is a pure
 * function of the history and the block (unit-tested on made-up histories). */
#ifndef NVMEOF_TOOL_FCHECK_H
#define NVMEOF_TOOL_FCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What became of one version of a unit: acknowledged, or in doubt (it may
 * or may not have reached the media, now or later). */
enum fc_state {
	FC_ACKED = 1,     /* completed with success */
	FC_FAILED,        /* completed with an error status or a lost connection */
	FC_TIMEDOUT,      /* completed with a command timeout */
	FC_ABANDONED,     /* still outstanding when the writers stopped waiting */
};
const char *fc_state_str(uint8_t s);

#define FC_HIST 16 /* the last events kept per unit */
#define FC_ODD 8   /* and the last of its writes in doubt or slow */
#define FC_SLOW_MS 1000 /* slow: answered this long after it was sent (a failover's hold, a retry) */

struct fc_event {
	uint64_t version;
	uint32_t sent_ms; /* from the start of the run */
	uint32_t t_ms;    /* answered (or abandoned) */
	uint16_t queue;   /* the writer */
	uint8_t state;    /* enum fc_state */
	uint16_t status;  /* NVMe status when the target answered with one */
	int err;          /* the library's error code, 0 when acknowledged */
};

struct fc_unit {
	uint64_t slba;
	uint64_t issued;  /* versions 1..issued were sent (one at a time) */
	uint64_t acked;   /* the newest acknowledged version, 0: none */
	uint64_t in_doubt;/* how many versions ended in doubt */
	uint32_t nev;     /* events recorded (the last FC_HIST are kept) */
	struct fc_event ev[FC_HIST];
	uint32_t nodd;    /* of them in doubt or slow (the last FC_ODD kept): a
			   * stale copy found later is most often one of these */
	struct fc_event odd[FC_ODD];
	/* the writer's own state */
	bool busy;
	uint32_t sent_ms;
};

/* Records the outcome of version v (the unit's latest issued one), sent at
 * u->sent_ms. */
void fc_record(struct fc_unit *u, uint64_t v, uint8_t state, uint16_t queue, uint32_t t_ms, int err,
	       uint16_t status);

/* Block format, at the start of every block written (little endian):
 * magic, run id, LBA, version, writer, checksum over the whole block (the
 * checksum field counted as 0); the rest is a pattern of LBA and version. */
#define FC_MAGIC 0x4b43484346464f4eull /* "NOFFCHCK" */
#define FC_HDR 48
void fc_stamp(void *blk, size_t bsz, uint64_t run, uint64_t lba, uint64_t version, uint16_t queue);

enum fc_kind {
	FC_OK = 0,
	FC_LOST,        /* older than the newest acknowledged version: a lost update */
	FC_NEVER,       /* a version that was never written to this LBA */
	FC_CORRUPT,     /* torn or corrupt: bad checksum, another LBA's block */
	FC_UNREAD,      /* could not be read back */
};
const char *fc_kind_str(int k);

/* The verdict on block lba of unit u as read back (bsz bytes). *version:
 * what it holds (0: data from before this run). */
int fc_judge(const struct fc_unit *u, const void *blk, size_t bsz, uint64_t run, uint64_t lba,
	     uint64_t *version, uint16_t *writer);

#endif
