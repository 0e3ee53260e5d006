/*
 * The multipath queue: a queue on every path, one submission entry point
 * that picks a path per command (mpath_select.c), and failover as the
 * kernel's nvme_failover_req does it: a command a path failed (a path
 * status, a lost connection, a timeout) goes out again on another usable
 * path; with none usable it waits while a path may come back (a transition
 * within ANATT, a queue reconnecting within its ctrl_loss_tmo) and fails
 * when none can. The I/O path allocates nothing: requests come from an
 * array sized at creation.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "cpriv.h"
#include "internal.h"
#include "mpath.h"
#include "mpath_q.h"
#include "qpriv.h"
#include "queue.h"
#include "util.h"

enum { ROUTE_OK = 0, ROUTE_NO_PATH = 1, ROUTE_BUSY = 2 };
static void path_done(void *arg, const struct nvmeof_cpl *cpl);

/* A path's state as a command sees it: a namespace its controller no
 * longer has (detached from it alone: a rescan marked it gone) is not
 * reachable there, whatever its old group says. */
static uint8_t path_ana(const struct mp_path *p)
{
	return __atomic_load_n(&p->ns->gone, __ATOMIC_RELAXED) ? NVMEOF_ANA_INACCESSIBLE : mp_ana(p);
}

/* The longest ANATT of the paths, as their controllers report it now. */
static uint64_t bounce_max_ms(const struct nvmeof_mpath_queue *mq)
{
	uint64_t m = 0;
	for (uint32_t i = 0; i < mq->n; i++) {
		uint32_t a = __atomic_load_n(&mq->mp->p[i].anatt_ms, __ATOMIC_RELAXED);
		m = a > m ? a : m;
	}
	return m;
}

static void refresh_views(struct nvmeof_mpath_queue *mq, int exclude)
{
	for (uint32_t i = 0; i < mq->n; i++) {
		mq->v[i].live = q_is_live(mq->q[i]);
		mq->v[i].ana = path_ana(&mq->mp->p[i]);
		mq->v[i].excluded = (int)i == exclude;
	}
}

static int issue(struct nvmeof_mpath_queue *mq, struct mreq *r, uint32_t pi)
{
	const struct nvmeof_ns *ns = mq->mp->p[pi].ns;
	if (r->flush)
		return nvmeof_flush(mq->q[pi], ns, path_done, r);
	struct nvmeof_mr *mr = r->mmr->mr[pi];
	if (r->write)
		return nvmeof_write_ext(mq->q[pi], ns, r->slba, r->nlb, mr, r->off, r->flags, path_done, r);
	return nvmeof_read(mq->q[pi], ns, r->slba, r->nlb, mr, r->off, path_done, r);
}

/* A queue that refuses (ECLOSED: its connection just went) is passed
 * over; an argument error is the caller's and comes back as is. */
static int route(struct nvmeof_mpath_queue *mq, struct mreq *r, int exclude)
{
	refresh_views(mq, exclude);
	for (;;) {
		int pi = mp_select(mq->v, mq->n, mq->pol, &mq->cursor);
		if (pi < 0)
			return ROUTE_NO_PATH;
		int rc = issue(mq, r, (uint32_t)pi);
		if (!rc) {
			r->path = pi;
			struct mq_loss *l = loss_of(mq, r);
			if (unlikely(l && pi != r->lost_from && !l->reissue_ms))
				l->reissue_ms = nvmeof_now_ms();
			mq->dirty |= 1u << pi;
			mq->v[pi].inflight++;
			mq->st[pi].cmds++;
			return ROUTE_OK;
		}
		if (rc == NVMEOF_EQFULL)
			return ROUTE_BUSY;
		if (rc != NVMEOF_ECLOSED)
			return rc;
		mq->v[pi].live = false;
	}
}

/* Whether a path may carry the command later: one reconnecting, one in
 * a transition not yet past ANATT, one usable now (busy, or just failed
 * it), or, as the kernel's nvme_available_path and SPDK have it, any
 * whose controller is connected: an Inaccessible path's log may not be
 * read yet, or its group may come back. That last wait is bounded by the
 * longest ANATT, counted from when the command found no path (waiting
 * since, 0: now). A failed queue or a Persistent Loss path will not. */
static bool may_come_back(struct nvmeof_mpath_queue *mq, uint64_t now, uint64_t waiting_since)
{
	bool connected_wait = !waiting_since || now - waiting_since < bounce_max_ms(mq);
	for (uint32_t i = 0; i < mq->n; i++) {
		struct mp_path *p = &mq->mp->p[i];
		if (q_is_dead(mq->q[i]))
			continue;
		if (!q_is_live(mq->q[i]))
			return true;
		uint8_t st = path_ana(p);
		uint64_t since = __atomic_load_n(&p->change_since_ms, __ATOMIC_RELAXED);
		if (st == NVMEOF_ANA_CHANGE && (!since || now - since < __atomic_load_n(&p->anatt_ms, __ATOMIC_RELAXED)))
			return true;
		if (nvme_ana_usable(st) || (st == NVMEOF_ANA_INACCESSIBLE && connected_wait))
			return true;
	}
	return false;
}

/* The message of a command no path can carry: every path and why. */
static int no_path_err(struct nvmeof_mpath_queue *mq, int code, uint64_t now)
{
	char buf[1024];
	size_t o = 0;
	for (uint32_t i = 0; i < mq->n && o < sizeof(buf); i++) {
		struct mp_path *p = &mq->mp->p[i];
		uint8_t st = mp_ana(p);
		uint64_t since = __atomic_load_n(&p->change_since_ms, __ATOMIC_RELAXED);
		int w;
		if (q_is_dead(mq->q[i]))
			w = snprintf(buf + o, sizeof(buf) - o, "%s%s:%s (%s) lost its connection for good", i ? "; " : "",
				     p->traddr, p->trsvcid, p->hca);
		else if (__atomic_load_n(&p->ns->gone, __ATOMIC_RELAXED))
			w = snprintf(buf + o, sizeof(buf) - o, "%s%s:%s (%s) no longer has the namespace", i ? "; " : "",
				     p->traddr, p->trsvcid, p->hca);
		else if (st == NVMEOF_ANA_CHANGE && since)
			w = snprintf(buf + o, sizeof(buf) - o, "%s%s:%s (%s) in ANA Transition for %llu ms, past ANATT %u s",
				     i ? "; " : "", p->traddr, p->trsvcid, p->hca, (unsigned long long)(now - since),
				     p->anatt_ms / 1000);
		else
			w = snprintf(buf + o, sizeof(buf) - o, "%s%s:%s (%s) ANA %s", i ? "; " : "", p->traddr, p->trsvcid,
				     p->hca, nvmeof_ana_state_str(st));
		o += w > 0 ? (size_t)w : 0;
	}
	return nvmeof_err(code, "namespace %u: no usable path: %s", mq->mp->o.nsid, buf);
}

void mq_finish(struct nvmeof_mpath_queue *mq, struct mreq *r, const struct nvmeof_cpl *cpl)
{
	nvmeof_cb cb = r->cb;
	void *arg = r->arg;
	mq->free_ix[mq->nfree++] = (uint32_t)(r - mq->reqs);
	mq->inflight--;
	mq->completed++;
	if (cb) {
		mq->in_cb++;
		cb(arg, cpl);
		mq->in_cb--;
	}
}

/* Failover measured: a command a path lost joins that path's current
 * loss (a new one if the path was back since), and the loss notes the
 * first of its commands issued and completed elsewhere. */
static void loss_begin(struct nvmeof_mpath_queue *mq, int pi, uint64_t now)
{
	if (mq->loss_open[pi])
		return;
	mq->loss_open[pi] = true;
	if (mq->nloss[pi] < MQ_LOSS_MAX)
		mq->loss[pi][mq->nloss[pi]] = (struct mq_loss){.detected_ms = now};
	mq->nloss[pi]++;
}

static void loss_join(struct nvmeof_mpath_queue *mq, struct mreq *r, int pi, uint64_t now)
{
	loss_begin(mq, pi, now);
	r->lost_from = pi;
	r->loss_ix = mq->nloss[pi] <= MQ_LOSS_MAX ? (int)mq->nloss[pi] - 1 : -1;
	if (r->loss_ix >= 0)
		mq->loss[pi][r->loss_ix].cmds++;
}

static void park(struct nvmeof_mpath_queue *mq, struct mreq *r)
{
	r->path = -1;
	r->bouncing_since = 0;
	mq->parked[mq->nparked++] = (uint32_t)(r - mq->reqs);
}

/* A write lost with its path's connection (a loss, a timeout, a refused
 * post) may still be executing behind that path's controller: another
 * path or the same controller's next association could land a newer
 * write to the same blocks first, and the old one overwrite it. NVMe Base
 * 2.1, 9.6: the host retries such a command only once the controller has
 * quiesced it, the controller's CQT (and the keep-alive timeout it takes
 * to see the loss) after the loss. Reads have no effect to reorder, and
 * our connection is closed before they fail, so no late data reaches
 * their buffers: they go again at once. */
static bool hold_lost_write(struct nvmeof_mpath_queue *mq, struct mreq *r, int pi, const struct nvmeof_cpl *cpl,
			    uint64_t now)
{
	/* one that never reached the wire (it waited for a slot, its post
	 * was refused) cannot land late: it goes again at once */
	if (!r->write || !(cpl->in_doubt || cpl->err == NVMEOF_ETIMEDOUT))
		return false;
	/* the values of the path's controller now: a re-association may have
	 * brought another CQT */
	uint32_t hold = mp_hold_ms(mq->mp, &mq->mp->p[pi]);
	if (!hold)
		return false;
	uint64_t until = now + hold;
	if (until > r->hold_until)
		r->hold_until = until;
	if (!r->held_at) {
		r->held_at = now;
		r->held_path = pi;
		mq->st[pi].held++;
	}
	park(mq, r);
	return true;
}

/* No path now: wait, or fail with the last path failure and a message
 * naming every path. */
static void park_or_fail(struct nvmeof_mpath_queue *mq, struct mreq *r, int rc)
{
	uint64_t now = nvmeof_now_ms();
	if (!r->waiting_since && rc == ROUTE_NO_PATH)
		r->waiting_since = now;
	if (rc == ROUTE_BUSY || (rc == ROUTE_NO_PATH && !mq->closing && may_come_back(mq, now, r->waiting_since))) {
		park(mq, r);
		return;
	}
	struct nvmeof_cpl c = r->last;
	if (rc < 0) {
		c.err = rc;
	} else {
		/* a path left in transition past ANATT is what it waited for */
		bool transition = false;
		for (uint32_t i = 0; i < mq->n; i++)
			transition |= !q_is_dead(mq->q[i]) && mp_ana(&mq->mp->p[i]) == NVMEOF_ANA_CHANGE;
		if (transition)
			c.err = NVMEOF_ETIMEDOUT;
		else if (!c.err)
			c.err = NVMEOF_ECLOSED;
		no_path_err(mq, c.err, now);
	}
	mq_finish(mq, r, &c);
}

static void path_done(void *arg, const struct nvmeof_cpl *cpl)
{
	struct mreq *r = arg;
	struct nvmeof_mpath_queue *mq = r->mq;
	int pi = r->path;
	uint8_t st;
	mq->v[pi].inflight--;
	enum path_verdict v = nvme_path_verdict(cpl->err, cpl->status, &st);
	if (v == PATH_DONE || mq->closing) {
		if (unlikely(r->failed_over)) {
			struct mq_loss *l = loss_of(mq, r);
			if (l && pi != r->lost_from && !l->complete_ms)
				l->complete_ms = nvmeof_now_ms();
			hwts_add(mq->fo_lat, r->t_submit_us * 1000, nvmeof_now_us() * 1000, 1000000);
		}
		mq_finish(mq, r, cpl);
		return;
	}
	struct mp_path *p = &mq->mp->p[pi];
	uint64_t now = nvmeof_now_ms();
	mq->st[pi].path_errors++;
	if (st)
		mp_set_ana(p, st, now);
	/* the log is the truth: a status may be older than the last read */
	mp_want_refresh(p);
	r->last = *cpl;
	r->failed_over = true;
	bool lost = cpl->err == NVMEOF_ECLOSED || cpl->err == NVMEOF_ETIMEDOUT || cpl->err == NVMEOF_ETRANSPORT;
	if (lost)
		loss_join(mq, r, pi, now);
	r->failed_path = pi;
	if (lost && hold_lost_write(mq, r, pi, cpl, now))
		return;
	/* Paths that keep failing the command while their logs call them
	 * usable would pass it around for good: past the longest ANATT it
	 * fails with what the last path said. */
	if (!r->bouncing_since) {
		r->bouncing_since = now;
	} else if (now - r->bouncing_since > bounce_max_ms(mq)) {
		char why[160];
		nvmeof_cpl_str(cpl, why, sizeof(why));
		nvmeof_err(cpl->err, "namespace %u: failed over between paths for %llu ms, past ANATT; the last, %s:%s, "
			   "said: %s", mq->mp->o.nsid, (unsigned long long)(now - r->bouncing_since), p->traddr, p->trsvcid,
			   why);
		mq_finish(mq, r, cpl);
		return;
	}
	int rc = route(mq, r, pi);
	if (rc == ROUTE_OK) {
		if (r->path != pi)
			mq->st[pi].failovers++;
		r->failed_path = -1;
		return;
	}
	/* The path that failed it is the only one left (an Internal Path
	 * Error, say): it goes there again, not at every poll, and still
	 * within the bound above. */
	if (rc == ROUTE_NO_PATH && mq->v[pi].live && nvme_ana_usable(path_ana(p))) {
		uint64_t since = r->bouncing_since;
		if (r->hold_until < now + MQ_PACE_MS)
			r->hold_until = now + MQ_PACE_MS;
		park(mq, r);
		r->bouncing_since = since;
		return;
	}
	park_or_fail(mq, r, rc);
}

static void retry_parked(struct nvmeof_mpath_queue *mq)
{
	/* A callback run from the walk below may poll: that poll's own walk
	 * would copy over the one in progress (commands issued twice, others
	 * never), so it leaves what waits to this one, or to the next poll. */
	if (mq->retrying_now)
		return;
	mq->retrying_now = true;
	/* from a copy: a request may wait again, and a failed one's callback
	 * may submit more that wait, while the list is walked */
	uint32_t n = mq->nparked;
	memcpy(mq->retrying, mq->parked, n * sizeof(*mq->parked));
	mq->nparked = 0;
	uint64_t now = n ? nvmeof_now_ms() : 0;
	for (uint32_t k = 0; k < n; k++) {
		struct mreq *r = &mq->reqs[mq->retrying[k]];
		if (r->hold_until > now) {
			mq->parked[mq->nparked++] = mq->retrying[k];
			continue;
		}
		if (r->held_at) {
			uint64_t held = now - r->held_at;
			struct nvmeof_path_stats *st = &mq->st[r->held_path];
			uint32_t h = held > UINT32_MAX ? UINT32_MAX : (uint32_t)held;
			if (h > st->hold_max_ms)
				st->hold_max_ms = h;
			struct mq_loss *l = loss_of(mq, r);
			if (l && h > l->hold_ms)
				l->hold_ms = h;
			r->held_at = 0;
		}
		int rc = route(mq, r, -1);
		if (rc == ROUTE_OK) {
			/* out again after a hold or a wait: failed over from the
			 * path that failed it, unless that path carries it again */
			r->waiting_since = 0;
			if (r->failed_path >= 0 && r->path != r->failed_path)
				mq->st[r->failed_path].failovers++;
			r->failed_path = -1;
		} else {
			park_or_fail(mq, r, rc);
		}
	}
	mq->retrying_now = false;
}

enum { MQ_READ, MQ_WRITE, MQ_FLUSH };
static const char *const op_name[] = {"read", "write", "flush"};

static int submit(struct nvmeof_mpath_queue *mq, int op, uint64_t slba, uint32_t nlb,
		  struct nvmeof_mpath_mr *mmr, size_t off, uint32_t flags, nvmeof_cb cb, void *arg)
{
	bool write = op == MQ_WRITE;
	if (unlikely(!mq || (op != MQ_FLUSH && (!mmr || mmr->mp != mq->mp))))
		return nvmeof_err(NVMEOF_EINVAL, "multipath %s: %s", op_name[op],
				  !mq ? "no queue" : "the region is not registered on this multipath");
	if (unlikely(mq->closing))
		return nvmeof_err(NVMEOF_ECLOSED, "multipath %s: the queue is being destroyed", op_name[op]);
	if (unlikely(!mq->nfree))
		return nvmeof_err(NVMEOF_EQFULL, "multipath %s: all %u requests in flight", op_name[op], mq->nreqs);
	struct mreq *r = &mq->reqs[mq->free_ix[--mq->nfree]];
	*r = (struct mreq){.mq = mq, .cb = cb, .arg = arg, .mmr = mmr, .slba = slba, .off = off, .nlb = nlb,
			   .flags = flags, .write = write, .flush = op == MQ_FLUSH, .path = -1, .lost_from = -1,
			   .failed_path = -1,
			   .t_submit_us = nvmeof_now_us()};
	mq->inflight++;
	int rc = route(mq, r, -1);
	if (likely(rc == ROUTE_OK))
		return 0;
	if (rc == ROUTE_NO_PATH && may_come_back(mq, nvmeof_now_ms(), 0)) {
		r->waiting_since = nvmeof_now_ms();
		park(mq, r);
		return 0;
	}
	mq->free_ix[mq->nfree++] = (uint32_t)(r - mq->reqs);
	mq->inflight--;
	if (rc == ROUTE_BUSY)
		return nvmeof_err(NVMEOF_EQFULL, "multipath %s: no free command slot on the chosen path", op_name[op]);
	if (rc < 0)
		return rc;
	return no_path_err(mq, NVMEOF_ECLOSED, nvmeof_now_ms());
}

int nvmeof_mpath_read(struct nvmeof_mpath_queue *mq, uint64_t slba, uint32_t nlb, struct nvmeof_mpath_mr *mmr,
		      size_t off, nvmeof_cb cb, void *arg)
{
	return submit(mq, MQ_READ, slba, nlb, mmr, off, 0, cb, arg);
}

int nvmeof_mpath_write(struct nvmeof_mpath_queue *mq, uint64_t slba, uint32_t nlb, struct nvmeof_mpath_mr *mmr,
		       size_t off, uint32_t flags, nvmeof_cb cb, void *arg)
{
	return submit(mq, MQ_WRITE, slba, nlb, mmr, off, flags, cb, arg);
}

/* A Flush goes to one path: the namespace's volatile write cache is the
 * controllers' shared one. Lost with its path, it goes again at once
 * (it writes no data that could land late). */
int nvmeof_mpath_flush(struct nvmeof_mpath_queue *mq, nvmeof_cb cb, void *arg)
{
	return submit(mq, MQ_FLUSH, 0, 0, NULL, 0, 0, cb, arg);
}

/* One doorbell per path for what was submitted since the last commit (a
 * doorbell per command costs, on Soft-RoCE, a system call and a kworker
 * wake-up each: BENCHMARKS.md, "One and two paths"). A refused post fails its
 * commands through the path's poll, and they fail over from there. */
int nvmeof_mpath_queue_commit(struct nvmeof_mpath_queue *mq)
{
	if (!mq)
		return nvmeof_err(NVMEOF_EINVAL, "multipath commit: no queue");
	if (mq->closing)
		return nvmeof_err(NVMEOF_ECLOSED, "multipath commit: the queue is being destroyed");
	int first = 0;
	for (uint32_t i = 0; mq->dirty; i++)
		if (mq->dirty & (1u << i)) {
			mq->dirty &= ~(1u << i);
			int rc = nvmeof_queue_commit(mq->q[i]);
			if (rc && !first)
				first = rc;
		}
	return first;
}

/* A path whose queue came back has a new association behind it, maybe
 * with new ANA states: its log is read again. */
int nvmeof_mpath_queue_poll(struct nvmeof_mpath_queue *mq, uint32_t max)
{
	if (!mq)
		return nvmeof_err(NVMEOF_EINVAL, "multipath poll: no queue");
	/* a callback run by the destroy: the path queues are going */
	if (mq->closing)
		return nvmeof_err(NVMEOF_ECLOSED, "multipath poll: the queue is being destroyed");
	/* A callback may poll again: that poll counts from here, and this one
	 * counts what the nested one completed too (its callbacks ran while
	 * this poll ran); a reset here hid them from this poll's count, so a
	 * wait whose completions all came through callbacks' polls slept to
	 * its timeout with its requests done. */
	uint32_t before = mq->completed;
	for (uint32_t i = 0; i < mq->n; i++) {
		nvmeof_queue_poll(mq->q[i], max); /* a failed path's ECLOSED is not the queue's */
		bool live = q_is_live(mq->q[i]);
		if (live && !mq->was_live[i]) {
			mp_want_refresh(&mq->mp->p[i]);
			mq->loss_open[i] = false;
		} else if (!live && mq->was_live[i]) {
			loss_begin(mq, (int)i, nvmeof_now_ms()); /* a loss with nothing in flight is one too */
		}
		mq->was_live[i] = live;
	}
	if (mq->nparked)
		retry_parked(mq);
	/* what failed over or left the parking went to paths polled before
	 * it: out now, not at the next poll */
	if (mq->dirty)
		nvmeof_mpath_queue_commit(mq);
	uint32_t got = mq->completed - before;
	if (got && !mq->in_cb) /* whoever polls (outermost): the wait's spin follows the gaps */
		q_waiter_note(&mq->w, got);
	return (int)got;
}

