/* qpairs_shared=N: the jobs of one process (thread=1) on one controller
 * share N I/O queue pairs instead of each opening its own. The first job
 * to start creates them (outside the registry's lock: the jobs of other
 * controllers go on meanwhile), the last to end destroys them; job k (in fio's
 * setup order) uses pair k mod N, as deep as qplan.c planned. Each pair
 * has a lock: a job submits and rings under it, and polls under it
 * (qwait.c, which also hands each completion to its job). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "qslot.h"

/* The most a job's cleanup waits for its requests still on the pair. */
#define DRAIN_MS 5000

/* Each controller's pairs, connected outside its lock (shreg.h): one
 * job's slow Connect holds up only the jobs that wait for those pairs. */
static struct shreg qs_reg = SHREG_INIT;

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* What make made, and what jobs left; the entry itself is shreg_free's. */
static void release(struct qshare *s)
{
	for (unsigned int i = 0; i < s->n; i++) {
		struct qslot *p = &s->slot[i];
		if (p->q)
			nvmeof_queue_destroy(p->q);
		if (p->group)
			nvmeof_poll_group_destroy(p->group);
		if (p->kick >= 0)
			close(p->kick);
		pthread_mutex_destroy(&p->lock);
		pthread_mutex_destroy(&p->wmu);
		pthread_cond_destroy(&p->wake);
	}
	/* no request names them any more */
	for (struct qleft *l = s->left, *nx; l; l = nx) {
		nx = l->next;
		if (l->mr)
			nvmeof_mr_release(l->mr);
		if (l->mem)
			munmap(l->mem, l->len);
		free(l->ctx);
		free(l);
	}
}

/* The most one pair's connect may take, the waiters' guard against a
 * connect that no longer gets anywhere (not an estimate: a waiter that
 * gives up fails its job). Each try: the CM steps or the TCP connect, TLS
 * handshake and ICReq (connect_timeout each, address and route resolution
 * 500 ms more each), the Fabrics Connect and up to four authentication
 * commands (cmd_timeout each), a backoff of at most 1.7 s; before them,
 * the wait for the admin lock, which a reconnecting controller holds for
 * a whole controller connect. */
static uint64_t pair_bound_ms(const struct nvmeof_ctrl_opts *o)
{
	uint64_t tries = (uint64_t)o->connect_retries + 1;
	return eng_connect_bound_ms(o) + tries * (3ull * o->connect_timeout_ms + 1000 + 5ull * o->cmd_timeout_ms + 1700);
}

/* The N pairs, each a poll group of one (its own CQ and channel), into
 * s as the registry reserved it (zeroed); the waiters told before each
 * pair's connect that it goes on. An errno: why says what failed, and
 * what was made is released. */
static int make(struct thread_data *td, struct efile *ef, unsigned int n, struct qshare *s, char *why, size_t len)
{
	struct eng_opts *eo = td->eo;
	s->sc = ef->sc;
	s->n = n;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) { /* a nap's bound, whatever the wall clock does */
		pthread_condattr_destroy(&ca);
		snprintf(why, len, "nvmeof: qpairs_shared=%u on %s %s: no monotonic clock for the pairs' waits", n,
			 ef->cfg.t.traddr, ef->cfg.t.subnqn);
		return EINVAL;
	}
	for (unsigned int i = 0; i < n; i++) {
		pthread_mutex_init(&s->slot[i].lock, NULL);
		pthread_mutex_init(&s->slot[i].wmu, NULL);
		pthread_cond_init(&s->slot[i].wake, &ca);
		s->slot[i].kick = -1;
	}
	pthread_condattr_destroy(&ca);
	for (unsigned int i = 0; i < n; i++)
		if ((s->slot[i].kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
			int err = errno;
			snprintf(why, len, "nvmeof: shared queue pair %u of %u (qpairs_shared=%u) on %s %s: eventfd: %s",
				 i + 1, n, n, ef->cfg.t.traddr, ef->cfg.t.subnqn, strerror(err));
			release(s);
			return err;
		}
	struct nvmeof_queue_opts qo;
	nvmeof_queue_opts_init(&qo);
	qo.batch = true;
	for (unsigned int i = 0; i < n; i++) {
		struct qslot *p = &s->slot[i];
		/* room for every job planned on it (qshare_plan), at least 1 */
		uint64_t depth = ef->sc->qs_depth[i] ? ef->sc->qs_depth[i] : 1;
		qo.depth = (uint32_t)(depth > DEPTH_MAX ? DEPTH_MAX : depth);
		shreg_progress(&qs_reg, &s->e, pair_bound_ms(&ef->sc->cfg.o));
		int r = nvmeof_poll_group_create_on(ef->sc->c, 1, eo->comp_vector, &p->group);
		if (!r) {
			struct eng_slow slow;
			char w[320];
			snprintf(w, sizeof(w), "job %s (%d): shared queue pair %u of %u on %s", td->o.name,
				 td->thread_number, i + 1, n, ef->cfg.t.traddr);
			qo.group = p->group;
			eng_slow_begin(&slow, &ef->sc->trace, &ef->cfg.o, w);
			r = nvmeof_queue_create(ef->sc->c, &qo, &p->q);
			eng_slow_end(&slow);
		}
		if (r) {
			snprintf(why, len, "nvmeof: shared queue pair %u of %u (qpairs_shared=%u, num_io_queues=%u) on %s %s: %s",
				 i + 1, n, n, ef->cfg.o.num_io_queues, ef->cfg.t.traddr, ef->cfg.t.subnqn, nvmeof_errmsg());
			release(s);
			return eng_errno(r);
		}
	}
	return 0;
}

/* The pairs of the job's controller: made here (the first job), or made
 * by another job, waited for while that job's connects go on. */
static struct qshare *get_pairs(struct thread_data *td, struct efile *ef, unsigned int n)
{
	uint64_t wait_ms = pair_bound_ms(&ef->sc->cfg.o);
	struct shreg_entry *e;
	char why[sizeof(e->why)];
	int err = EIO;
	switch (shreg_get(&qs_reg, ef->sc, sizeof(struct qshare), wait_ms, &e, why, sizeof(why), &err)) {
	case SHREG_GOT:
		return (struct qshare *)e;
	case SHREG_MAKE:
		if ((err = make(td, ef, n, (struct qshare *)e, why, sizeof(why)))) {
			eng_err("%s\n", why);
			shreg_publish(&qs_reg, e, err, why);
			td_verror(td, err, "nvmeof init");
			return NULL;
		}
		shreg_publish(&qs_reg, e, 0, NULL);
		return (struct qshare *)e;
	case SHREG_FAILED:
		eng_err("%s (another job's connect of the pairs, which this job waited for)\n", why);
		td_verror(td, err, "nvmeof init");
		return NULL;
	case SHREG_TIMEDOUT:
		eng_err("nvmeof: qpairs_shared=%u on %s %s: another job's connect of a shared queue pair has not finished "
			"after %llu ms, longer than the connect options should allow (connect_timeout, cmd_timeout, "
			"connect_retries): this job gives up; the connect goes on for the other jobs\n", n,
			ef->cfg.t.traddr, ef->cfg.t.subnqn, (unsigned long long)wait_ms);
		td_verror(td, ETIMEDOUT, "nvmeof init");
		return NULL;
	default:
		eng_err("nvmeof: qpairs_shared=%u: out of memory\n", n);
		td_verror(td, ENOMEM, "nvmeof init");
		return NULL;
	}
}

int qshare_open(struct thread_data *td, struct job *j, struct jqueue *jq, struct efile *ef)
{
	struct eng_opts *eo = td->eo;
	unsigned int n = eo->qpairs_shared;
	if (!j->qs_k || j->njq > 1 || ef->sc->qs_n != n) { /* qshare_plan's refusals, should init see others */
		eng_err("nvmeof: qpairs_shared=%u: the job's files are not the controller its setup planned\n", n);
		return 1;
	}
	if (hring_init(&j->handed, td->o.iodepth) || !(jq->qs_left = calloc(1, sizeof(*jq->qs_left)))) {
		eng_err("nvmeof: qpairs_shared=%u: out of memory\n", n);
		return 1;
	}
	struct qshare *s = get_pairs(td, ef, n);
	if (!s) {
		free(jq->qs_left);
		jq->qs_left = NULL;
		return 1;
	}
	unsigned int k = j->qs_k - 1;
	pthread_mutex_lock(&qs_reg.lock);
	s->slot[k].jobs++;
	pthread_mutex_unlock(&qs_reg.lock);
	struct qslot *p = &s->slot[k];
	jq->sc = ef->sc;
	jq->qs = p;
	jq->qshare = s;
	jq->group = p->group;
	jq->q[0] = p->q;
	jq->nq = 1;
	jq->vector_how = "shared";
	unsigned int with = ef->sc->qs_jobs[k]; /* set at setup, before any job's thread began */
	const struct nvmeof_ctrl_info *ci = nvmeof_ctrl_info(ef->sc->c);
	eng_info("nvmeof: job %s (%d): %s: controller CNTLID %u, I/O queue %u, depth %u, queue pair %u of %u, "
		 "shared by %u job(s) (qpairs_shared=%u)%s\n", td->o.name, td->thread_number, ef->cfg.t.subnqn,
		 ci->cntlid, nvmeof_queue_qid(p->q), nvmeof_queue_depth(p->q), k + 1, n, with ? with : 1, n,
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

/* The job's end: its requests still on the pair complete first (polled
 * here, bounded), since their callbacks name the job's memory; any left
 * are cut loose from it. The last job destroys the pairs. */
void qshare_close(struct job *j, struct jqueue *jq, const char *who)
{
	struct qslot *p = jq->qs;
	uint64_t until = mono_ms() + DRAIN_MS;
	while (__atomic_load_n(&jq->qs_inflight, __ATOMIC_RELAXED) && mono_ms() < until) {
		/* the lock for a poll, and 1 ms's sleep without it */
		pthread_mutex_lock(&p->lock);
		int r = nvmeof_poll_group_poll(p->group, 0);
		pthread_mutex_unlock(&p->lock);
		if (r <= 0)
			poll(NULL, 0, 1);
	}
	struct qshare *s = jq->qshare;
	struct qleft *l = NULL;
	pthread_mutex_lock(&p->lock);
	uint32_t left = __atomic_load_n(&jq->qs_inflight, __ATOMIC_RELAXED);
	if (left) {
		l = jq->qs_left;
		/* their callbacks (at the queue's destroy, at the latest) find no
		 * job; the library may still send them (after a reconnect), so
		 * what they name goes to the pairs' record, freed after their
		 * queues (destroy) */
		for (unsigned int i = 0; i < j->nctx; i++)
			j->ctx[i].j = NULL;
		*l = (struct qleft){ .ctx = j->ctx, .mr = jq->mr, .mem = j->iomem, .len = j->iomem_len };
		j->ctx = NULL;
		j->nctx = 0;
		jq->mr = NULL;
		j->iomem = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	if (!l)
		free(jq->qs_left);
	jq->qs_left = NULL;
	/* naps: waits for another job's poll of the pair; to their end: none
	 * woke it (a long command, or a wake-up missed) */
	uint32_t lost = __atomic_load_n(&jq->qs_lost, __ATOMIC_RELAXED);
	if (lost)
		eng_err("nvmeof: %s: %u completion(s) lost: its hand-off ring was full\n", who, lost);
	eng_info("nvmeof: queue %u (shared): %llu command(s) of this job's, %llu nap(s) while another job polled "
		 "(%llu to their end)%s; %s\n", nvmeof_queue_qid(p->q), (unsigned long long)jq->qs_cmds,
		 (unsigned long long)jq->qs_naps, (unsigned long long)jq->qs_naps_out,
		 left ? ", some abandoned at its end (they may still execute: their memory stays until the pair's end)" : "", who);
	if (eng_quiet)
		eng_summary("nvmeof: %s: a shared queue pair, %llu command(s), %u abandoned\n", who,
			    (unsigned long long)jq->qs_cmds, left);
	if (l) {
		pthread_mutex_lock(&qs_reg.lock);
		l->next = s->left;
		s->left = l;
		pthread_mutex_unlock(&qs_reg.lock);
	}
	if (shreg_put(&qs_reg, &s->e)) {
		for (unsigned int i = 0; i < s->n; i++) {
			struct nvmeof_queue_stats st;
			nvmeof_queue_stats(s->slot[i].q, &st);
			eng_info("nvmeof: shared queue %u: %llu command(s), %llu doorbell(s), %llu sleep(s), used by "
				 "%u job(s)\n", nvmeof_queue_qid(s->slot[i].q), (unsigned long long)st.cmds,
				 (unsigned long long)st.doorbells,
				 (unsigned long long)__atomic_load_n(&s->slot[i].sleeps, __ATOMIC_RELAXED), s->slot[i].jobs);
			if (st.reconnects)
				eng_info("nvmeof: shared queue %u reconnected %llu time(s), longest outage %llu ms\n",
					 nvmeof_queue_qid(s->slot[i].q), (unsigned long long)st.reconnects,
					 (unsigned long long)st.outage_ms_max);
		}
		release(s);
		shreg_free(&s->e);
	}
	jq->qs = NULL;
	jq->qshare = NULL;
	jq->q[0] = NULL;
	jq->group = NULL;
	jq->nq = 0;
}
