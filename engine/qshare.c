/* qpairs_shared=N: the jobs of one process (thread=1) on one controller
 * share N I/O queue pairs instead of each opening its own. The first job
 * creates them, the last destroys them; job k (in the order the jobs
 * joined) uses pair k mod N. Each pair has a lock: a job submits, rings
 * and polls under it. A poll runs every callback of the pair, whichever
 * job's request it was: done_cb hands each completion to its job's ring
 * (hring.h), and the job takes its own from there.
 *
 * Waiting: one job at a time polls a pair (it took the lock); the others
 * wait for it to hand them a completion, or to let go of the pair, then
 * try again. With wait=poll they spin (trylock, so none queues up on the
 * lock); otherwise the job that holds the pair waits in the library's
 * wait (spin, then sleep, per wait=) for any of the pair's completions,
 * and the others sleep on the pair's condition variable, which a hand-off
 * and a letting go signal; every sleep is bounded. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"

/* The longest a job that does not hold its pair sleeps before it looks
 * again: a bound only (a hand-off or a letting go wakes it first). */
#define NAP_MS 10
/* The most a job's cleanup waits for its requests still on the pair. */
#define DRAIN_MS 5000

struct qslot {
	pthread_mutex_t lock;   /* submit, commit, poll: the library's queue is one thread's at a time */
	struct nvmeof_poll_group *group;
	struct nvmeof_queue *q;
	int polling;            /* a job holds lock to poll or wait (atomic) */
	int sleepers;           /* jobs asleep on wake (atomic) */
	pthread_mutex_t wmu;
	pthread_cond_t wake;
	unsigned int jobs;      /* jobs that used it, for its end-of-job line */
};

struct qshare {
	struct qshare *next;
	struct shared_ctrl *sc;
	unsigned int n, joined;
	int refs;
	struct qslot slot[MAX_QPAIRS];
};

static pthread_mutex_t qs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct qshare *qs_head;

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void destroy(struct qshare *s)
{
	for (unsigned int i = 0; i < s->n; i++) {
		struct qslot *p = &s->slot[i];
		if (p->q)
			nvmeof_queue_destroy(p->q);
		if (p->group)
			nvmeof_poll_group_destroy(p->group);
		pthread_mutex_destroy(&p->lock);
		pthread_mutex_destroy(&p->wmu);
		pthread_cond_destroy(&p->wake);
	}
	free(s);
}

/* The N pairs, each a poll group of one (its own CQ and channel). */
static struct qshare *create(struct thread_data *td, struct efile *ef, unsigned int n)
{
	struct eng_opts *eo = td->eo;
	struct qshare *s = calloc(1, sizeof(*s));
	if (!s) {
		eng_err("nvmeof: qpairs_shared=%u: out of memory\n", n);
		return NULL;
	}
	s->sc = ef->sc;
	s->n = n;
	for (unsigned int i = 0; i < n; i++) {
		pthread_mutex_init(&s->slot[i].lock, NULL);
		pthread_mutex_init(&s->slot[i].wmu, NULL);
		pthread_cond_init(&s->slot[i].wake, NULL);
	}
	/* room for the iodepth of every job that will use a pair (fio sets
	 * up all the process's jobs before any starts: share_count has them) */
	int jobs = share_count(ef->sc);
	uint64_t per = jobs > 0 ? ((uint64_t)jobs + n - 1) / n : 1;
	uint64_t depth = per * td->o.iodepth;
	if (eo->qd_limit && depth > eo->qd_limit)
		depth = eo->qd_limit;
	if (depth > 1024)
		depth = 1024;
	struct nvmeof_queue_opts qo;
	nvmeof_queue_opts_init(&qo);
	qo.depth = (uint32_t)depth;
	qo.batch = true;
	for (unsigned int i = 0; i < n; i++) {
		struct qslot *p = &s->slot[i];
		int r = nvmeof_poll_group_create_on(ef->sc->c, 1, eo->comp_vector, &p->group);
		if (!r) {
			qo.group = p->group;
			r = nvmeof_queue_create(ef->sc->c, &qo, &p->q);
		}
		if (r) {
			eng_err("nvmeof: shared queue pair %u of %u (qpairs_shared=%u, num_io_queues=%u): %s\n", i + 1,
				n, n, ef->cfg.o.num_io_queues, nvmeof_errmsg());
			destroy(s);
			return NULL;
		}
	}
	return s;
}

static int say(const struct eng_opts *eo, const char *why)
{
	if (why)
		eng_err("nvmeof: qpairs_shared=%u %s\n", eo->qpairs_shared, why);
	return why != NULL;
}

int qshare_check(struct thread_data *td)
{
	struct eng_opts *eo = td->eo;
	if (!eo->qpairs_shared)
		return 0;
	return say(eo, !td->o.use_thread ? "needs thread=1: the jobs of one process share the queue pairs, and "
					   "fio's job processes (thread=0) cannot"
		       : eo->qpairs ? "and qpairs= together: qpairs= is each job's own queue pairs, qpairs_shared= "
				      "the process's; set one"
		       : eo->gpu >= 0 ? "with gpu=: not supported"
				      : NULL);
}

/* What the files say cannot share: 0, or 1 after logging why. */
static int refuse(struct thread_data *td, const struct job *j, const struct efile *ef)
{
	return say(td->eo, ef->cfg.t.nalt ? "with several paths in the filename: not supported"
			   : ef->facts.zi.zoned ? "on a zoned namespace: not supported"
			   : j->njq > 1 ? "with files on several controllers: not supported" : NULL);
}

int qshare_open(struct thread_data *td, struct job *j, struct jqueue *jq, struct efile *ef)
{
	struct eng_opts *eo = td->eo;
	unsigned int n = eo->qpairs_shared;
	if (refuse(td, j, ef))
		return 1;
	if (hring_init(&j->handed, td->o.iodepth)) {
		eng_err("nvmeof: qpairs_shared=%u: out of memory\n", n);
		return 1;
	}
	pthread_mutex_lock(&qs_lock);
	struct qshare *s;
	for (s = qs_head; s && s->sc != ef->sc; s = s->next)
		;
	if (s && s->n != n) {
		eng_err("nvmeof: qpairs_shared=%u: this controller's queue pairs are already shared by another job "
			"with qpairs_shared=%u: the jobs of one process on one controller share them, and their "
			"number\n", n, s->n);
		pthread_mutex_unlock(&qs_lock);
		return 1;
	}
	if (!s && (s = create(td, ef, n))) {
		s->next = qs_head;
		qs_head = s;
	}
	unsigned int k = s ? s->joined++ : 0;
	if (s) {
		s->refs++;
		s->slot[k % n].jobs++;
	}
	pthread_mutex_unlock(&qs_lock);
	if (!s)
		return 1;
	struct qslot *p = &s->slot[k % n];
	jq->sc = ef->sc;
	jq->qs = p;
	jq->qshare = s;
	jq->group = p->group;
	jq->q[0] = p->q;
	jq->nq = 1;
	jq->vector_how = "shared";
	int jobs = share_count(ef->sc);
	unsigned int with = jobs > 0 ? ((unsigned int)jobs - k % n + n - 1) / n : 1;
	const struct nvmeof_ctrl_info *ci = nvmeof_ctrl_info(ef->sc->c);
	eng_info("nvmeof: job %s (%d): %s: controller CNTLID %u, I/O queue %u, depth %u, queue pair %u of %u, "
		 "shared by %u job(s) (qpairs_shared=%u)%s\n", td->o.name, td->thread_number, ef->cfg.t.subnqn,
		 ci->cntlid, nvmeof_queue_qid(p->q), nvmeof_queue_depth(p->q), k % n + 1, n, with ? with : 1, n,
		 ef->cfg.sole_subsystem ? "; no subnqn given: the only NVM subsystem discovery lists" : "");
	return 0;
}

void qshare_lock(struct jqueue *jq)
{
	pthread_mutex_lock(&jq->qs->lock);
}

void qshare_unlock(struct jqueue *jq, bool submitted)
{
	if (submitted) {
		__atomic_fetch_add(&jq->qs_inflight, 1, __ATOMIC_RELAXED);
		jq->qs_cmds++;
	}
	pthread_mutex_unlock(&jq->qs->lock);
}

int qshare_commit(struct jqueue *jq)
{
	pthread_mutex_lock(&jq->qs->lock);
	int r = nvmeof_queue_commit(jq->q[0]);
	pthread_mutex_unlock(&jq->qs->lock);
	return r;
}

static void wake(struct qslot *p)
{
	if (!__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&p->wmu);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->wmu);
}

/* From done_cb, under the pair's lock (every poll is). */
bool qshare_done(struct job *j)
{
	__atomic_fetch_sub(&j->jq[0].qs_inflight, 1, __ATOMIC_RELAXED);
	return __atomic_load_n(&j->closing, __ATOMIC_SEQ_CST);
}

bool qshare_hand(struct job *j, struct io_u *io_u)
{
	/* cannot fail: the ring holds the job's iodepth, each io_u once */
	if (hring_push(&j->handed, io_u))
		wake(j->jq[0].qs);
	return true;
}

/* The job's completions from its ring into its events. */
static void take(struct job *j)
{
	struct io_u *io_u;
	while (j->nevents < 2 * j->nctx && (io_u = hring_pop(&j->handed)))
		j->events[j->nevents++] = io_u;
}

/* One poll of the pair, unless another job is at it. */
int qshare_poll(struct job *j)
{
	struct qslot *p = j->jq[0].qs;
	int r = 0;
	if (!pthread_mutex_trylock(&p->lock)) {
		r = nvmeof_poll_group_poll(p->group, 0);
		pthread_mutex_unlock(&p->lock);
	}
	take(j);
	return r < 0 ? r : 0;
}

/* Up to ms for a completion of this job's (see the top). 0, or a negative error. */
int qshare_wait(struct job *j, int ms)
{
	struct jqueue *jq = &j->jq[0];
	struct qslot *p = jq->qs;
	bool spin = jq->sc->cfg.o.wait_mode == NVMEOF_WAIT_POLL;
	uint64_t until = mono_ms() + (uint64_t)ms;
	for (;;) {
		if (hring_count(&j->handed))
			break;
		uint64_t now = mono_ms();
		if (now >= until)
			break;
		int left = (int)(until - now);
		if (!pthread_mutex_trylock(&p->lock)) {
			int r = 0;
			__atomic_store_n(&p->polling, 1, __ATOMIC_SEQ_CST);
			/* under the lock nothing is handed to this job but by itself */
			if (!hring_count(&j->handed))
				r = spin ? nvmeof_poll_group_poll(p->group, 0) : nvmeof_poll_group_wait(p->group, 1, left);
			__atomic_store_n(&p->polling, 0, __ATOMIC_SEQ_CST);
			pthread_mutex_unlock(&p->lock);
			wake(p); /* the next sleeper takes over the polling */
			if (r < 0)
				return r;
			continue;
		}
		if (spin)
			continue;
		/* seq_cst against wake(): a sleeper counted before it looks at the
		 * ring and the holder, so a hand-off or letting go after that
		 * look finds it and signals */
		pthread_mutex_lock(&p->wmu);
		__atomic_fetch_add(&p->sleepers, 1, __ATOMIC_SEQ_CST);
		if (!hring_count(&j->handed) && __atomic_load_n(&p->polling, __ATOMIC_SEQ_CST)) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			int nap = left < NAP_MS ? left : NAP_MS;
			ts.tv_nsec += (long)nap * 1000000L;
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			jq->qs_naps++;
			if (pthread_cond_timedwait(&p->wake, &p->wmu, &ts) == ETIMEDOUT)
				jq->qs_naps_out++;
		}
		__atomic_fetch_sub(&p->sleepers, 1, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&p->wmu);
	}
	take(j);
	return 0;
}

/* The job's end: its requests still on the pair complete first (polled
 * here, bounded), since their callbacks name the job's memory; any left
 * are cut loose from it. The last job destroys the pairs. */
void qshare_close(struct job *j, struct jqueue *jq, const char *who)
{
	struct qslot *p = jq->qs;
	uint64_t until = mono_ms() + DRAIN_MS;
	while (__atomic_load_n(&jq->qs_inflight, __ATOMIC_RELAXED) && mono_ms() < until) {
		pthread_mutex_lock(&p->lock);
		__atomic_store_n(&p->polling, 1, __ATOMIC_SEQ_CST); /* others nap meanwhile */
		nvmeof_poll_group_wait(p->group, 1, 1);
		__atomic_store_n(&p->polling, 0, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&p->lock);
		wake(p);
	}
	pthread_mutex_lock(&p->lock);
	uint32_t left = __atomic_load_n(&jq->qs_inflight, __ATOMIC_RELAXED);
	if (left) {
		/* their callbacks (at the queue's destroy, at the latest) find no job */
		for (unsigned int i = 0; i < j->nctx; i++)
			j->ctx[i].j = NULL;
		j->ctx_abandoned = true;
	}
	pthread_mutex_unlock(&p->lock);
	/* naps: waits for another job's poll of the pair; to their end: none
	 * woke it (a long command, or a wake-up missed) */
	eng_info("nvmeof: queue %u (shared): %llu command(s) of this job's, %llu nap(s) while another job polled "
		 "(%llu to their end)%s; %s\n", nvmeof_queue_qid(p->q), (unsigned long long)jq->qs_cmds,
		 (unsigned long long)jq->qs_naps, (unsigned long long)jq->qs_naps_out,
		 left ? ", some abandoned at its end" : "", who);
	if (eng_quiet)
		eng_summary("nvmeof: %s: a shared queue pair, %llu command(s), %u abandoned\n", who,
			    (unsigned long long)jq->qs_cmds, left);
	struct qshare *s = jq->qshare;
	pthread_mutex_lock(&qs_lock);
	bool last = --s->refs == 0;
	if (last)
		for (struct qshare **pp = &qs_head; *pp; pp = &(*pp)->next)
			if (*pp == s) {
				*pp = s->next;
				break;
			}
	pthread_mutex_unlock(&qs_lock);
	if (last) {
		for (unsigned int i = 0; i < s->n; i++) {
			struct nvmeof_queue_stats st;
			nvmeof_queue_stats(s->slot[i].q, &st);
			eng_info("nvmeof: shared queue %u: %llu command(s), %llu doorbell(s), %llu sleep(s), used by "
				 "%u job(s)\n", nvmeof_queue_qid(s->slot[i].q), (unsigned long long)st.cmds,
				 (unsigned long long)st.doorbells, (unsigned long long)st.sleeps, s->slot[i].jobs);
		}
		destroy(s);
	}
	jq->qs = NULL;
	jq->qshare = NULL;
	jq->q[0] = NULL;
	jq->group = NULL;
	jq->nq = 0;
}
