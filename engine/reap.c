/* Gathering completions until fio's deadline. The spinning, yielding and
 * sleeping per wait= are the library's (its one wait policy: core/wait.c);
 * the engine only hands it fio's deadline, in slices so that it sees the
 * end of the job, and takes its controllers in turn when it has several. */
#include <time.h>

#include "engine.h"

/* Once the job should end (its runtime is over, or fio was told to stop),
 * I/O that has not completed within this long, e.g. parked while the
 * target is away, is abandoned: cleanup fails it. Healthy I/O completes
 * well within it. */
#define END_GRACE_MS 3000
/* Longest single wait: a wait notices fio ending the job (terminate)
 * within it, and the runtime's end exactly (slice_ms). At a
 * few completions a second per job (many 1 MiB jobs) 100 ms slices were
 * most of each job's wake-ups (BENCHMARKS.md, "Queue-pair scaling"). */
#define SLICE_MS 1000
/* With several controllers in flight, the wait on each in turn. */
#define MULTI_SLICE_MS 1

/* One non-blocking pass over every queue; the last error, if any. */
static int poll_all(struct job *j)
{
	int err = 0;
	for (int k = 0; k < j->njq; k++) {
		struct jqueue *jq = &j->jq[k];
		/* a multipath queue's own poll: failed paths are its business */
		for (unsigned int n = 0; jq->mp && n < jq->nq; n++)
			nvmeof_mpath_queue_poll(jq->mq[n], 0);
		int r = jq->mp ? 0 : nvmeof_poll_group_poll(jq->group, 0);
		if (r < 0)
			err = r;
	}
	return err;
}

/* A busy controller's poll group holds work no descriptor announces:
 * completions a poll left, NVMe/TCP bytes read ahead or H2CData a poll held
 * for a submit (docs/tcp.md). A wait on another group would leave it there
 * for its slice; the controller waits for held data, and so would the
 * write it belongs to. */
static bool groups_pending(const struct job *j)
{
	for (int k = 0; k < j->njq; k++) {
		const struct jqueue *jq = &j->jq[k];
		if (!jq->mp && jq->nq && qpairs_inflight(jq) && nvmeof_queue_pending(jq->q[0]))
			return true;
	}
	return false;
}

/* Up to ms in the library's wait. With one controller its poll group
 * covers all the job's queue pairs; with several, the one that has
 * requests, or each busy one in turn for a short slice. Multipath queues
 * are waited on together (the library's wait sleeps on all their paths'
 * channels at once); a job that also has single-path files takes the two
 * kinds in turn while both have requests, so that neither's completions
 * wait for a slice of the other's. 0, or a negative error. */
static int wait_on_groups(struct job *j, unsigned int need, int ms)
{
	static __thread int turn, kind;
	struct nvmeof_mpath_queue *mqs[MAX_QUEUES_PER_JOB * MAX_QPAIRS];
	uint32_t nmq = 0, mp_busy = 0;
	for (int k = 0; k < j->njq; k++)
		for (unsigned int n = 0; j->jq[k].mp && n < j->jq[k].nq; n++) {
			mqs[nmq++] = j->jq[k].mq[n];
			mp_busy += nvmeof_mpath_queue_inflight(j->jq[k].mq[n]);
		}
	int busy = 0, pick = -1, nsingle = 0, single = -1;
	for (int i = 0; i < j->njq; i++) {
		int k = (turn + i) % j->njq;
		if (j->jq[k].mp)
			continue;
		nsingle++;
		single = k;
		if (qpairs_inflight(&j->jq[k])) {
			if (pick < 0)
				pick = k;
			busy++;
		}
	}
	bool both = nmq && mp_busy && busy;
	/* a wait on one would leave another's: all polled again at once
	 * (reap_wait) instead */
	if ((both || busy > 1) && groups_pending(j))
		return 0;
	if (nmq && (!busy || (both && (kind ^= 1)))) {
		int r = nvmeof_mpath_queues_wait(mqs, nmq, both ? 1 : need,
						 both ? (ms < MULTI_SLICE_MS ? ms : MULTI_SLICE_MS) : ms);
		return r < 0 ? r : 0;
	}
	if (nsingle == 1 && !both) {
		int r = nvmeof_poll_group_wait(j->jq[single].group, need, ms);
		return r < 0 ? r : 0;
	}
	if (pick < 0)
		return 0; /* nothing in flight: nothing to wait for */
	turn = pick + 1;
	int r = nvmeof_poll_group_wait(j->jq[pick].group, 1,
				       busy == 1 && !both ? ms : (ms < MULTI_SLICE_MS ? ms : MULTI_SLICE_MS));
	return r < 0 ? r : 0;
}

/* fio checks a job's runtime between I/Os, never while getevents waits:
 * a job blocked on I/O that does not complete would outlive its runtime,
 * so check it here as fio's backend.c runtime_exceeded() does. */
static bool job_ending(struct thread_data *td)
{
	return td->terminate ||
	       (td->o.timeout && !in_ramp_time(td) && utime_since_now(&td->epoch) >= td->o.timeout);
}

/* Up to the end of the runtime; past it (the grace for what is still out)
 * 100 ms, as before. The ramp's end needs no wake-up: fio sees it when
 * completions come back, which is also when its stats would change. */
static int slice_ms(struct thread_data *td)
{
	if (!td->o.timeout || in_ramp_time(td))
		return SLICE_MS;
	uint64_t el = utime_since_now(&td->epoch);
	if (el >= td->o.timeout)
		return 100;
	uint64_t ms = (td->o.timeout - el) / 1000 + 1;
	return ms < SLICE_MS ? (int)ms : SLICE_MS;
}

int reap_wait(struct thread_data *td, struct job *j, unsigned int min, const struct timespec *t)
{
	uint64_t now = eng_mono_us();
	uint64_t deadline = t ? now + (uint64_t)t->tv_sec * 1000000u + (uint64_t)t->tv_nsec / 1000u : UINT64_MAX;
	for (;;) {
		paths_inject(td, j);
		int rc = j->jq[0].qs ? qshare_poll(j) : poll_all(j);
		if (rc < 0)
			return rc;
		if (j->nevents >= min)
			return 0;
		now = eng_mono_us();
		if (!j->term_deadline_us && job_ending(td))
			j->term_deadline_us = now + END_GRACE_MS * 1000u;
		uint64_t until = deadline;
		if (j->term_deadline_us && j->term_deadline_us < until)
			until = j->term_deadline_us;
		if (now >= until)
			return 0;
		uint64_t left_ms = (until - now + 999) / 1000;
		int slice = slice_ms(td);
		int ms = left_ms < (uint64_t)slice ? (int)left_ms : slice;
		if ((rc = j->jq[0].qs ? qshare_wait(j, ms) : wait_on_groups(j, min - j->nevents, ms)))
			return rc;
		/* The wait's own poll delivered them: one more poll now is a
		 * socket read that finds nothing, between the completion and
		 * fio's next submit (at QD1, on every I/O's latency). */
		if (min && j->nevents >= min)
			return 0;
	}
}
