/* nvmeof failover-check: the run (paths, writers, fault commands, read
 * back) between the option parsing and the report (fcheck.c). */
#ifndef NVMEOF_TOOL_FCHECK_RUN_H
#define NVMEOF_TOOL_FCHECK_RUN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "fcheck.h"
#include "nvmeof.h"

#define FC_MAX_PATHS 4
#define FC_MAX_FAULTS 32
#define FC_MAX_QUEUES 16
#define FC_MAX_TIMELINE 512

struct fc_path {
	const char *traddr, *trsvcid, *src, *trtype;
};

struct fc_fault {
	uint32_t at_ms;   /* from the start of the writes */
	const char *what; /* "cut", "heal", "fault" */
	char *cmd;
};

struct fc_cfg {
	struct fc_path path[FC_MAX_PATHS];
	uint32_t npaths;
	const char *nqn, *hostnqn;
	uint32_t nsid;
	enum nvmeof_iopolicy iopolicy;
	uint32_t timeout_ms;
	int64_t kato_ms, quiesce_ms;     /* -1: the library's default */
	uint32_t reconnect_ms, loss_tmo_ms;
	uint64_t slba;
	uint32_t units, nlb, queues, depth;
	int64_t runtime_ms;              /* -1: until the last fault command has run */
	uint32_t hold_ms, drain_ms;
	struct fc_fault fault[FC_MAX_FAULTS];
	uint32_t nfaults;
	bool json;
};

struct fc_tl {
	uint32_t t_ms;
	char text[200];
};

struct fc_result {
	struct fc_unit *unit;            /* cfg.units of them */
	uint32_t bsz;                    /* the namespace's block size */
	uint64_t acked, in_doubt;        /* writes */
	uint64_t bad[FC_UNREAD + 1];     /* blocks per verdict */
	struct fc_tl tl[FC_MAX_TIMELINE];
	uint32_t ntl;
	pthread_mutex_t lock;            /* the timeline's */
	/* per block with a verdict other than FC_OK: filled by fc_run, in LBA order */
	struct fc_bad {
		uint64_t lba, version;
		uint32_t unit;
		uint16_t writer;
		uint8_t kind;
	} *bads;
	uint32_t nbads;
};

/* Adds a timeline entry (and prints it at once in normal output). */
void fc_log(struct fc_result *r, bool print, uint32_t t_ms, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Connects, writes while the faults run, waits the hold, reads back and
 * judges every block. 0, or -1 after printing why (nothing judged). */
int fc_run(const struct fc_cfg *c, struct fc_result *r);

#endif
