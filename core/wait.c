/*
 * The waits, over one queue or a poll group: spin, a spin as long as the
 * recent gap between completions, yield, sleep on the completion channel.
 * The engine and the synchronous calls wait here, with their own timeout.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qpriv.h"
#include "util.h"

/* How long a hybrid wait spins before it sleeps: spin_us when nothing is in
 * flight; with commands out and completions coming close together, about
 * two of the recent intervals between them, so at depth the next one is
 * caught spinning instead of through an arm, a sleep and a wake-up per I/O.
 * When they come further apart than SPIN_GAP_MAX_US a wake-up costs little
 * against the wait, and spinning would only take the CPU from whoever
 * produces the completion (on the test bed, the target itself). With one
 * command out (QD1, a latency run) nothing hides a wake-up: its whole cost
 * lands on that command's latency, so for gaps up to SPIN_ONE_MAX_US the
 * spin covers four of them, so the tail is caught too (BENCHMARKS.md,
 * "hybrid wait"). */
#define SPIN_GAP_MAX_US 500
#define SPIN_ONE_MAX_US 2000
#define SPIN_YIELD_US 300
uint64_t q_spin_budget(const struct q_waiter *w, uint32_t inflight)
{
	uint64_t b = w->spin_us, g = w->gap_us;
	if (inflight == 1 && g <= SPIN_ONE_MAX_US)
		g *= 4;
	else if (inflight && g <= SPIN_GAP_MAX_US)
		g *= 2;
	else
		g = 0;
	return g > b ? g : b;
}

/* The adaptive wait (NVMEOF_WAIT_ADAPTIVE). Where its threads outnumber
 * the CPUs, a spinning thread takes the CPU from the others' work and from
 * the target's: in the QP-scaling sweep on two CPUs ours paid 1.3 to 2.3
 * times the kernel host's CPU per I/O from 8 jobs on (BENCHMARKS.md,
 * "Queue-pair scaling" and "Adaptive waits"). So the spin is a share of
 * the hybrid one, judged at each wait that finds nothing at once: one
 * that starts while the process's polling groups outnumber its CPUs is a
 * spin whose polls would find no work of its own, only take the CPU from
 * those that have it, and halves the share; any other doubles it back. Judged by the spin's own findings
 * instead (did the completion come within the hybrid spin), one job alone
 * locked itself at nothing: a wait that slept saw its completion late by a
 * wake-up, the job slowed, the gap between completions grew past
 * SPIN_GAP_MAX_US, and the hybrid spin it was judged against fell to
 * spin_us (1 job, QD4: 1,068 IOPS against hybrid's 3,513). Five crowded
 * waits take the spin to nothing, five uncrowded ones back to all of it. */
#define SPIN_SCALE_STEP (Q_SPIN_SCALE_MAX / 16)
uint16_t q_spin_adapt(uint16_t scale, bool found_work)
{
	if (found_work)
		return !scale ? SPIN_SCALE_STEP : scale >= Q_SPIN_SCALE_MAX / 2 ? Q_SPIN_SCALE_MAX : (uint16_t)(2 * scale);
	return scale / 2 >= SPIN_SCALE_STEP ? (uint16_t)(scale / 2) : 0;
}

bool q_spin_crowded(uint32_t pollers, uint32_t ncpus) { return ncpus && pollers > ncpus; }

/* The process's poll groups of I/O queues that wait adaptively (atomic):
 * each is a thread's polling, one job's on the engine's usual one
 * controller a job. */
static uint32_t q_pollers;

static void waiter_count(struct q_waiter *w)
{
	cpu_set_t set;
	/* the process's (its main thread's) CPUs, not this thread's: jobs
	 * pinned each to a CPU of its own do not crowd one another */
	w->ncpus = sched_getaffinity(getpid(), sizeof(set), &set) ? 0 : (uint32_t)CPU_COUNT(&set);
	__atomic_add_fetch(&q_pollers, 1, __ATOMIC_RELAXED);
	w->pollers = &q_pollers;
}

static void spin_judge(struct q_waiter *w, bool found_work)
{
	w->spin_scale = q_spin_adapt(w->spin_scale, found_work);
	if (w->spin_scale < w->spin_scale_min)
		w->spin_scale_min = w->spin_scale;
}

/* When the spin of a wait that found nothing at once ends. */
static uint64_t spin_plan(struct q_waiter *w, uint64_t t0)
{
	uint64_t full = w->mode == NVMEOF_WAIT_SLEEP ? 0 : q_spin_budget(w, w->inflight(w->ctx));
	if (w->mode != NVMEOF_WAIT_ADAPTIVE)
		return t0 + full;
	if (!w->adapting) {
		w->adapting = true;
		w->spin_scale = w->spin_scale_min = Q_SPIN_SCALE_MAX;
	}
	spin_judge(w, !(w->pollers && q_spin_crowded(__atomic_load_n(w->pollers, __ATOMIC_RELAXED), w->ncpus)));
	return t0 + full * w->spin_scale / Q_SPIN_SCALE_MAX;
}

/* Empty polls between clock reads while a wait spins or polls: a clock read
 * cost as much as the poll itself on an RDMA queue and showed in profiles of
 * QD1 over TCP (BENCHMARKS.md, "hybrid wait's clock"). A poll that returns
 * nothing can still cost tens of microseconds (a large receive, a send of
 * 1 MiB, many members), so the polls skipped are also capped by the time
 * left over the last reads' cost per poll: a spin or a timeout ends at most
 * about one poll late, not 16 slow ones. */
#define SPIN_CLOCK_POLLS 16

/* Polls to go without a clock read: those that fit in left_us at per_ns
 * each, SPIN_CLOCK_POLLS - 1 at most. */
static uint32_t clock_skip(uint64_t left_us, uint64_t per_ns)
{
	uint64_t n = per_ns ? left_us * 1000u / per_ns : SPIN_CLOCK_POLLS;
	return n < SPIN_CLOCK_POLLS - 1 ? (uint32_t)n : SPIN_CLOCK_POLLS - 1;
}

static void wait_flush(struct q_waiter *w)
{
	if (w->flush)
		w->flush(w->ctx);
}

int q_wait(struct q_waiter *w, uint32_t min, int timeout_ms)
{
	uint64_t t0 = nvmeof_now_us(), deadline = t0 + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000u;
	uint64_t spin_end = 0, now = t0, clocked = t0;
	bool planned = false, spinning = false;
	uint32_t total = 0, skip = 0, polls = 0;
	uint64_t last_yield = t0;
	for (;;) {
		int rc = w->poll(w->ctx);
		if (rc < 0)
			return total ? (int)total : rc;
		total += (uint32_t)rc;
		if (total >= min)
			return (int)total;
		if (!rc)
			w->st_empty_polls++;
		polls++;
		/* the last clock read found the spin with time left for these
		 * polls: they need not ask again (after a sleep, one does) */
		if (!rc && spinning && skip) {
			skip--;
			continue;
		}
		now = nvmeof_now_us();
		/* the cost of a poll since the last read (a sleep or a yield
		 * between them only makes it look dearer: fewer skipped) */
		uint64_t per_ns = (now - clocked) * 1000u / polls;
		clocked = now, polls = 0, skip = 0;
		if (now >= deadline)
			return (int)total;
		if ((spinning = w->mode == NVMEOF_WAIT_POLL || !w->arm)) {
			skip = clock_skip(deadline - now, per_ns);
			continue;
		}
		if (!planned) {
			planned = true;
			spin_end = spin_plan(w, t0);
		}
		if ((spinning = now < spin_end)) {
			/* A long spin lets whatever else is runnable on this CPU
			 * go first: where the target shares the CPU, its own
			 * work, which a spinning thread kept waiting up to a
			 * scheduler tick (BENCHMARKS.md has the QD1 tails). The
			 * target cannot go on with a write whose data a poll
			 * held: that goes first. */
			if (now - last_yield >= SPIN_YIELD_US) {
				wait_flush(w);
				sched_yield();
				clocked = last_yield = now = nvmeof_now_us();
			}
			skip = now < spin_end ? clock_skip(spin_end - now, per_ns) : 0;
			continue;
		}
		int step_ms = 0;
		if (w->reconnecting(w->ctx)) {
			/* the connected queues' channels wake us for their
			 * completions, the next step's time for the rest */
			if ((step_ms = w->next_step_ms ? w->next_step_ms(w->ctx) : 0) <= 0) {
				struct timespec ts = {0, 2000000}; /* no CQ to sleep on until the next attempt */
				wait_flush(w); /* a live member's held data would wait out the nap */
				nanosleep(&ts, NULL);
				continue;
			}
		}
		if ((rc = w->arm(w->ctx)))
			return total ? (int)total : rc;
		/* A completion may have landed before the arm took effect. */
		rc = w->poll(w->ctx);
		if (rc < 0)
			return total ? (int)total : rc;
		total += (uint32_t)rc;
		if (total >= min)
			return (int)total;
		if (!rc)
			w->st_empty_polls++;
		if (!step_ms && w->reconnecting(w->ctx))
			continue; /* that poll lost a connection: no CQ to sleep on */
		uint64_t left_ms = (deadline - now + 999) / 1000, slice = w->slice_ms ? (uint64_t)w->slice_ms(w->ctx) : HOUSEKEEP_MS;
		if (step_ms && (uint64_t)step_ms < slice)
			slice = (uint64_t)step_ms;
		if ((rc = w->sleep(w->ctx, (int)(left_ms < slice ? left_ms : slice))) < 0)
			return total ? (int)total : rc;
		if (rc != 2)
			w->st_sleeps++;
		if (!rc)
			w->st_sleep_timeouts++;
	}
}

int nvmeof_queue_wait(struct nvmeof_queue *q, uint32_t min, int timeout_ms)
{
	if (unlikely(!q->group || q->state == Q_FAILED || q->state == Q_CLOSING))
		return q_state_err(q);
	return nvmeof_poll_group_wait(q->group, min, timeout_ms);
}

static int gw_poll(void *c) { return nvmeof_poll_group_poll(c, 0); }
static int gw_arm(void *c)
{
	struct nvmeof_poll_group *g = c;
	return g->tr->arm(g->cqc);
}
static void gw_flush(void *c)
{
	struct nvmeof_poll_group *g = c;
	g->tr->flush(g->cqc);
}
/* With the CM channels watched too, a sleep can last until a command could
 * time out instead of HOUSEKEEP_MS: at a few completions a second per
 * queue (a QP-scaling sweep's many 1 MiB jobs) the 100 ms wake-ups were
 * most of a job's sleeps (BENCHMARKS.md, "Queue-pair scaling"). A command's timeout
 * then fires between cmd_timeout_ms and two slices later. */
static bool gw_watches_cm(const struct nvmeof_poll_group *g)
{
	return g->tr->wait_fd && g->tr->take_event && g->tr->event_fd;
}

static int gw_slice(void *c)
{
	struct nvmeof_poll_group *g = c;
	if (!gw_watches_cm(g))
		return HOUSEKEEP_MS;
	uint32_t ms = SLICE_MAX_MS;
	for (uint32_t i = 0; i < g->nmembers; i++) {
		const struct nvmeof_queue *q = g->list[i];
		/* timers only a poll serves: a Command Retry Delay, a
		 * reconnect's next step */
		if (q->nretry || q->state != Q_LIVE)
			return HOUSEKEEP_MS;
		uint32_t t = q->cmd_timeout_ms / 8;
		if (t < ms)
			ms = t;
	}
	return ms < HOUSEKEEP_MS ? HOUSEKEEP_MS : (int)ms;
}

bool q_group_pending(const struct nvmeof_poll_group *g)
{
	if (!g->tr->pending)
		return false;
	/* with no member connected the group's poll leaves the CQ alone (a
	 * lone queue's old completions wait for its next connection), so
	 * what it holds is no work of now: a sleep waits for the reconnect */
	bool wired = false;
	for (uint32_t m = 0; m < g->nmembers && !wired; m++)
		wired = q_has_wire(g->list[m]);
	return wired && g->tr->pending(g->cqc);
}

/* One sleep on the completion channels of ng groups and their connected
 * members' CM channels (pfd and pfq hold an entry for each): a CM channel
 * with news sends its queue to housekeeping at its next poll, a completion
 * channel's event is taken. 0 on timeout, 1 when woken, 2 when work was
 * pending (no sleep), or an error. */
static int sleep_on_groups(struct nvmeof_poll_group *const *gs, uint32_t ng, struct pollfd *pfd,
			   struct nvmeof_queue **pfq, int ms)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < ng; i++)
		if (q_group_pending(gs[i]))
			return 2; /* no descriptor would wake us for it: no sleep */
	for (uint32_t i = 0; i < ng; i++) {
		struct nvmeof_poll_group *g = gs[i];
		pfd[n] = (struct pollfd){.fd = g->tr->wait_fd(g->cqc), .events = POLLIN};
		pfq[n++] = NULL; /* the group's completion channel */
		for (uint32_t m = 0; m < g->nmembers; m++) {
			struct nvmeof_queue *q = g->list[m];
			int fd = q_has_wire(q) ? g->tr->event_fd(q->trc) : -1;
			if (fd < 0)
				continue;
			pfd[n] = (struct pollfd){.fd = fd, .events = POLLIN};
			pfq[n++] = q;
		}
	}
	int r = poll(pfd, n, ms);
	if (r < 0)
		return errno == EINTR ? 1 : nvmeof_err(NVMEOF_ETRANSPORT, "poll on the completion and CM channels: %s",
						    strerror(errno)); /* a signal: woken, not run out */
	for (uint32_t k = 0, gi = 0; r > 0 && k < n; k++) {
		if (pfq[k]) {
			if (pfd[k].revents) {
				pfq[k]->next_housekeep_ms = 0;
				pfq[k]->cm_wakes++;
			}
			continue;
		}
		struct nvmeof_poll_group *g = gs[gi++];
		if (pfd[k].revents) {
			g->tr->take_event(g->cqc);
			g->cq_wakes++;
		}
	}
	return r > 0;
}

static int gw_sleep(void *c, int ms)
{
	struct nvmeof_poll_group *g = c;
	if (!gw_watches_cm(g))
		return g->tr->sleep(g->cqc, ms);
	return sleep_on_groups(&g, 1, g->pfd, g->pfq, ms);
}
static bool q_reconnecting(const struct nvmeof_queue *q) { return q->state == Q_WAIT || q->state == Q_REOPENING; }
static bool gw_reconnecting(void *c)
{
	struct nvmeof_poll_group *g = c;
	for (uint32_t i = 0; i < g->nmembers; i++)
		if (q_reconnecting(g->list[i]))
			return true;
	return false;
}
static uint32_t gw_inflight(void *c)
{
	struct nvmeof_poll_group *g = c;
	uint32_t n = 0;
	for (uint32_t i = 0; i < g->nmembers; i++)
		n += g->list[i]->depth - g->list[i]->nfree_reqs;
	return n;
}

int nvmeof_poll_group_wait(struct nvmeof_poll_group *g, uint32_t min, int timeout_ms)
{
	struct q_waiter *w = &g->waiter;
	if (!w->poll) {
		w->ctx = g;
		w->poll = gw_poll;
		w->arm = g->tr->arm ? gw_arm : NULL;
		w->flush = g->tr->flush ? gw_flush : NULL;
		w->sleep = gw_sleep;
		w->slice_ms = gw_slice;
		w->reconnecting = gw_reconnecting;
		w->inflight = gw_inflight;
		/* an I/O queue's group: a thread's polling (the admin queue's
		 * waits are the same thread's, or a keep-alive's that sleeps) */
		if (w->mode == NVMEOF_WAIT_ADAPTIVE && g->nmembers && g->list[0]->qid)
			waiter_count(w);
	}
	return q_wait(w, min, timeout_ms);
}

/* Several queues, each in a poll group of its own, polled by something
 * above them (a multipath wait): the same arm and sleep as a group's,
 * over all their channels at once. */
bool q_queues_can_sleep(struct nvmeof_queue *const *qs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct nvmeof_poll_group *g = qs[i]->group;
		if (!g || !g->tr->arm || !gw_watches_cm(g))
			return false;
	}
	return n > 0;
}

int q_queues_arm(struct nvmeof_queue *const *qs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct nvmeof_poll_group *g = qs[i]->group;
		int rc;
		if (g && q_has_wire(qs[i]) && (rc = g->tr->arm(g->cqc)))
			return rc;
	}
	return 0;
}

void q_queues_flush(struct nvmeof_queue *const *qs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct nvmeof_poll_group *g = qs[i]->group;
		if (g && g->tr->flush && q_has_wire(qs[i]))
			g->tr->flush(g->cqc);
	}
}

bool q_queues_reconnecting(struct nvmeof_queue *const *qs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (q_reconnecting(qs[i]))
			return true;
	return false;
}

int q_queues_next_step_ms(struct nvmeof_queue *const *qs, uint32_t n, int cap_ms)
{
	uint64_t now = nvmeof_now_ms(), next = now + (uint64_t)(cap_ms > 0 ? cap_ms : 1);
	for (uint32_t i = 0; i < n; i++) {
		const struct nvmeof_queue *q = qs[i];
		uint64_t t = q->state == Q_WAIT ? q->next_try_ms : q->state == Q_REOPENING ? now + Q_WORKER_CHECK_MS : next;
		if (t < next)
			next = t;
	}
	return next > now ? (int)(next - now) : 1;
}

/* Each queue is its group's one member: two channels a queue. */
int q_queues_sleep(struct nvmeof_queue *const *qs, uint32_t n, int ms)
{
	struct nvmeof_poll_group *gs[Q_SLEEP_MAX];
	struct pollfd pfd[2 * Q_SLEEP_MAX];
	struct nvmeof_queue *pfq[2 * Q_SLEEP_MAX];
	uint32_t ng = 0, room = 2 * Q_SLEEP_MAX;
	for (uint32_t i = 0; i < n && ng < Q_SLEEP_MAX; i++) {
		struct nvmeof_poll_group *g = qs[i]->group;
		if (!g || !q_has_wire(qs[i]) || 1 + g->nmembers > room)
			continue;
		gs[ng++] = g;
		room -= 1 + g->nmembers;
	}
	if (!ng) { /* no connection to sleep on: a short nap, as a reconnect's */
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
		return 0;
	}
	return sleep_on_groups(gs, ng, pfd, pfq, ms);
}
