/*
 * Several paths to one namespace (docs/library.md "Several paths"): the multipath object
 * (mpath.c: the paths, their ANA state and its refresh, registrations), the
 * queue that picks a path per command and fails commands over
 * (mpath_io.c), and the choice itself (mpath_select.c, no I/O).
 */
#ifndef NVMEOF_MPATH_H
#define NVMEOF_MPATH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "nvmeof.h"

#define MP_MAX_PATHS 16
#define MP_ANATT_DEFAULT_S 10     /* a controller that reports ANATT 0 */
#define MP_QUIESCE_DEFAULT_MS 1000 /* a controller that reports no CQT: docs/library.md "Write ordering across a path loss" */

struct nvmeof_mpath;
struct mp_path {
	struct nvmeof_mpath *mp;
	struct nvmeof_ctrl *c;
	const struct nvmeof_ns *ns;
	uint32_t anagrpid;         /* where the ANA log last named the namespace (atomic) */
	bool ana_reporting;
	uint32_t anatt_ms;         /* atomic: re-read after a re-association */
	uint32_t cqt_ms, kato_ms;  /* atomic: the controller's CQT and keep-alive timeout, likewise (mp_hold_ms) */
	uint16_t kas;              /* atomic: its keep-alive granularity (100 ms units), likewise */
	int numa_node;             /* the HCA's; -1 unknown */
	char traddr[64], trsvcid[8], hca[64];
	uint16_t cntlid;           /* atomic: a re-association brings a new one */
	/* Read by I/O threads, written by them (a status names a new state)
	 * and by the refresh thread (the log): relaxed atomics. */
	uint8_t ana;
	uint64_t change_since_ms;  /* when it entered CHANGE; 0: not in it */
	bool ana_lock;             /* mp_set_ana's: the two fields above change together */
	int refresh;               /* re-read the log soon */
	uint64_t ana_changes, ana_reads;
	/* The log buffer and its parse, under read_lock: the path's refresh
	 * thread and nvmeof_mpath_refresh (any thread, an event callback
	 * too) both read the log. Each path has its own thread, so that a
	 * controller whose admin queue is busy (a re-association holds it for
	 * its connect timeout) delays no other path's ANA updates. */
	pthread_mutex_t read_lock;
	uint8_t *log;
	uint32_t log_len;
	uint32_t assoc_gen;        /* the association the fields above were read from */
	uint64_t last_read_ms;     /* atomic: the thread reads it unlocked */
	pthread_t thread;
	bool running;
};

struct nvmeof_mpath {
	pthread_mutex_t lock;      /* nqueues, nmrs, the thread's sleep */
	pthread_cond_t cond;
	struct nvmeof_mpath_opts o;
	uint32_t n;
	struct mp_path p[MP_MAX_PATHS];
	uint32_t nqueues, nmrs;
	bool stop;                 /* the paths' refresh threads end */
};

struct nvmeof_mpath_mr {
	struct nvmeof_mpath *mp;
	void *addr;
	size_t len;
	bool owned;
	struct nvmeof_mr *mr[MP_MAX_PATHS];
};

/* Sets a path's ANA state (from a status or the log), counting changes and
 * stamping the start of a transition. */
void mp_set_ana(struct mp_path *p, uint8_t st, uint64_t now_ms);
/* Tests only (NULL otherwise): called by mp_set_ana once it has decided to
 * change the state, before it stores anything, and by a call waiting for
 * that one, while it waits: a test places another thread's call there. */
extern void (*mp_set_ana_seam)(struct mp_path *p, bool waiting);
static inline uint8_t mp_ana(const struct mp_path *p) { return __atomic_load_n(&p->ana, __ATOMIC_RELAXED); }
/* What the path takes from its controller's Identify Controller data (on
 * creation and after each re-association): CQT and the keep-alive
 * timeout, for the hold of the writes it loses. */
void mp_path_take_ctrl(struct mp_path *p, const struct nvmeof_ctrl_info *ci, uint32_t kato_ms);
/* What a write the path lost waits from the loss (q_hold_rule), with the
 * values its controller reported last. */
uint32_t mp_hold_ms(const struct nvmeof_mpath *mp, const struct mp_path *p);
/* Asks the refresh thread to re-read a path's log (no wake-up: it looks
 * every MP_TICK_MS). */
static inline void mp_want_refresh(struct mp_path *p) { __atomic_store_n(&p->refresh, 1, __ATOMIC_RELAXED); }
#define MP_TICK_MS 100
#define MP_CHANGE_REREAD_MS 500
/* An Inaccessible path's log is re-read this often even without an event:
 * a target's notice can be missed (masked until a log read, or sent while
 * no event request was out), and the path would never return. One log
 * page per path every 2 s costs nothing next to the I/O it can carry. */
#define MP_INACCESSIBLE_REREAD_MS 2000

/* mpath_select.c: what a command's choice sees of each path */
struct mp_view {
	uint8_t ana;
	bool live;                 /* its queue carries commands now */
	bool excluded;             /* the path that just failed this command */
	int distance;              /* numa: 0 same node, 1 unknown, 2 another node */
	uint32_t inflight;         /* this queue's commands on it */
};
/* The path for the next command, or -1 when none is usable: optimized
 * paths first, non-optimized ones only while no optimized one is; never
 * one that is not live or not in one of those states. *cursor carries the
 * round-robin position between calls. */
int mp_select(const struct mp_view *v, uint32_t n, enum nvmeof_iopolicy pol, uint32_t *cursor);
/* Whether two paths' identifiers for a namespace agree: every identifier
 * both report is equal, and they share at least one. -1 with *why. */
int mp_ids_agree(const struct nvmeof_ns_ids *a, const struct nvmeof_ns_ids *b, const char **why);
/* The NUMA node of an HCA (root/class/infiniband/HCA/device/numa_node), -1 unknown. */
int mp_hca_node(const char *root, const char *hca);
/* The NUMA node of a CPU (root/devices/system/cpu/cpuN/nodeM), -1 unknown. */
int mp_cpu_node(const char *root, int cpu);

#endif
