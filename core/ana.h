/*
 * Asymmetric Namespace Access as data (NVMe Base 8.1.1 and the ANA log page,
 * LID 0Ch): the Identify fields, a group's state in a log, and what a
 * completion means for the path it came back on. No I/O here.
 */
#ifndef NVMEOF_ANA_H
#define NVMEOF_ANA_H

#include <stddef.h>
#include <stdint.h>

#include "nvmeof.h"

/* Identify Controller byte offsets */
#define NVME_ID_CMIC 76
#define NVME_ID_ANATT 342
#define NVME_ID_ANACAP 343
#define NVME_ID_ANAGRPMAX 344
#define NVME_ID_NANAGRPID 348
#define NVME_CMIC_ANA (1u << 3)   /* ANA reporting */
#define NVME_ANA_LOG_HDR 16
#define NVME_ANA_DESC_SIZE 32

/* The ANA fields of Identify Controller data. */
void nvme_id_ctrl_ana_parse(const uint8_t *id, struct nvmeof_ana_caps *a);
/* Walks the whole log: 0 when every descriptor fits in len and NGRPS is
 * met, -1 with *why otherwise. A read that asked for fewer bytes than the
 * controller's log holds is refused here rather than half-believed. */
int nvme_ana_log_check(const uint8_t *log, size_t len, const char **why);
/* The state of group grpid in a checked log: 0 and *state (and *chgcnt,
 * the group's change count, when not NULL); 1 when the log does not list
 * the group (the controller reports no state for it); -1 when malformed. */
int nvme_ana_group_state(const uint8_t *log, size_t len, uint32_t grpid, uint8_t *state,
			 uint64_t *chgcnt);
/* The state of namespace nsid in a checked log, found by the NSID lists
 * as the kernel host does (nvme_update_ana_state): a namespace may move to
 * another group while attached, and the log is what says so. *grpid is
 * the group it was last seen in; it becomes the group whose list names it.
 * Only a log without NSID lists (RGO) falls back to *grpid's descriptor:
 * one with lists that names the namespace nowhere reports no state for it.
 * 0 and *state; 1 when it has none; -1 when malformed. */
int nvme_ana_ns_state(const uint8_t *log, size_t len, uint32_t nsid, uint32_t *grpid, uint8_t *state);
/* A path may carry I/O in this state: optimized or non-optimized. */
static inline int nvme_ana_usable(uint8_t st)
{
	return st == NVMEOF_ANA_OPTIMIZED || st == NVMEOF_ANA_NONOPTIMIZED;
}

/* What a multipath host does with a completion (the kernel's
 * nvme_decide_disposition and nvme_failover_req): */
enum path_verdict {
	PATH_DONE,       /* hand it to the caller: success, or an error of the command itself */
	PATH_FAILOVER,   /* the path failed it: issue it again on another path */
	PATH_TRANSITION, /* ANA Transition: another path, or this one again once the transition ends */
};
/* From a completion's err and status; *ana_state, when the status says the
 * path's new ANA state (Persistent Loss, Inaccessible, Transition), else 0.
 * A path error with DNR set is the command's own: DNR means no controller
 * of the subsystem would do better. */
enum path_verdict nvme_path_verdict(int err, uint16_t status, uint8_t *ana_state);

#endif
