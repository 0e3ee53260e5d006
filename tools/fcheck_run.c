/* nvmeof failover-check, the run: one controller per path (a multipath over
 * them when there are several), one writer thread per queue, each owning
 * every queues-th unit and keeping at most one write per unit outstanding,
 * so that a unit's versions are ordered by their acknowledgements; a thread
 * that runs the fault commands at their times; then, after the hold, every
 * block read back and judged. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fcheck_run.h"
#include "nvmeof.h"

extern char **environ;

struct run {
	const struct fc_cfg *c;
	struct fc_result *r;
	struct nvmeof_ctrl *ctrl[FC_MAX_PATHS];
	struct nvmeof_mpath *mp;
	struct nvmeof_mpath_mr *mmr;
	struct nvmeof_mr *mr;
	const struct nvmeof_ns *ns;
	uint8_t *buf;          /* a region per unit, then one to read into */
	size_t ubytes;         /* bytes of a unit */
	uint64_t id;           /* this run's, in every block */
	uint64_t t0;
	int stop;              /* the writers stop submitting */
	uint32_t outstanding;  /* all writers' (progress lines) */
};

struct writer {
	struct run *run;
	uint16_t qi;
	struct nvmeof_queue *q;
	struct nvmeof_mpath_queue *mq;
	uint32_t outstanding;
	uint64_t acked, in_doubt;
	pthread_t th;
};

/* one per unit: a unit has at most one write outstanding */
struct wreq {
	struct writer *w;
	uint32_t unit;
	uint64_t version;
	bool abandoned;
	bool done;             /* reads: answered */
	int err;
};

static struct wreq *reqs;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t ms_since(const struct run *run)
{
	return (uint32_t)((now_ns() - run->t0) / 1000000);
}

void fc_log(struct fc_result *r, bool print, uint32_t t_ms, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&r->lock);
	if (r->ntl < FC_MAX_TIMELINE) {
		struct fc_tl *e = &r->tl[r->ntl++];
		e->t_ms = t_ms;
		va_start(ap, fmt);
		vsnprintf(e->text, sizeof(e->text), fmt, ap);
		va_end(ap);
		if (print) {
			printf("  %4u.%03u s  %s\n", t_ms / 1000, t_ms % 1000, e->text);
			fflush(stdout);
		}
	}
	pthread_mutex_unlock(&r->lock);
}

static void wdone(void *arg, const struct nvmeof_cpl *cpl)
{
	struct wreq *q = arg;
	struct writer *w = q->w;
	struct fc_unit *u = &w->run->r->unit[q->unit];
	w->outstanding--;
	__atomic_fetch_sub(&w->run->outstanding, 1, __ATOMIC_RELAXED);
	if (q->abandoned) /* recorded in doubt already: the queue's end answers it */
		return;
	uint8_t st = !cpl->err ? FC_ACKED : cpl->err == NVMEOF_ETIMEDOUT ? FC_TIMEDOUT : FC_FAILED;
	fc_record(u, q->version, st, w->qi, ms_since(w->run), cpl->err, cpl->err == NVMEOF_ENVME ? cpl->status : 0);
	if (st == FC_ACKED)
		__atomic_fetch_add(&w->acked, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&w->in_doubt, 1, __ATOMIC_RELAXED);
	u->busy = false;
}

static int submit_write(struct writer *w, uint32_t i)
{
	struct run *run = w->run;
	struct fc_unit *u = &run->r->unit[i];
	uint32_t bsz = run->r->bsz;
	size_t off = (size_t)i * run->ubytes;
	uint64_t v = u->issued + 1;
	for (uint32_t b = 0; b < run->c->nlb; b++)
		fc_stamp(run->buf + off + (size_t)b * bsz, bsz, run->id, u->slba + b, v, w->qi);
	struct wreq *q = &reqs[i];
	*q = (struct wreq){.w = w, .unit = i, .version = v};
	int rc = w->mq ? nvmeof_mpath_write(w->mq, u->slba, run->c->nlb, run->mmr, off, 0, wdone, q)
		       : nvmeof_write(w->q, run->ns, u->slba, run->c->nlb, run->mr, off, wdone, q);
	if (rc)
		return rc; /* not sent: the version is not used */
	u->issued = v;
	u->busy = true;
	u->sent_ms = ms_since(run);
	w->outstanding++;
	__atomic_fetch_add(&run->outstanding, 1, __ATOMIC_RELAXED);
	return 0;
}

static int wwait(struct writer *w, int ms)
{
	return w->mq ? nvmeof_mpath_queue_wait(w->mq, 1, ms) : nvmeof_queue_wait(w->q, 1, ms);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct run *run = w->run;
	const struct fc_cfg *c = run->c;
	uint32_t next = w->qi;
	/* below the fault commands: on a busy host a cut must take effect
	 * when the timeline says it ran, not seconds later */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	while (!__atomic_load_n(&run->stop, __ATOMIC_RELAXED)) {
		/* every free unit of this writer's, up to the depth */
		for (uint32_t n = 0; n < c->units && w->outstanding < c->depth; n += c->queues) {
			uint32_t i = next;
			next += c->queues;
			if (next >= c->units)
				next = w->qi;
			if (!run->r->unit[i].busy && submit_write(w, i))
				break; /* queue full, or no path now: later */
		}
		wwait(w, 50);
	}
	uint64_t end = now_ns() + (uint64_t)c->drain_ms * 1000000ull;
	while (w->outstanding && now_ns() < end)
		wwait(w, 100);
	for (uint32_t i = w->qi; i < c->units; i += c->queues) {
		struct fc_unit *u = &run->r->unit[i];
		if (!u->busy)
			continue;
		reqs[i].abandoned = true;
		fc_record(u, reqs[i].version, FC_ABANDONED, w->qi, ms_since(run), NVMEOF_ETIMEDOUT, 0);
		__atomic_fetch_add(&w->in_doubt, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

struct faults {
	struct run *run;
	pthread_t th;
	int done;
};

/* Runs each fault command through /bin/sh at its time, its output on
 * stderr (stdout may be the JSON report), and notes it on the timeline. */
static void *fault_main(void *arg)
{
	struct faults *f = arg;
	struct run *run = f->run;
	bool print = !run->c->json;
	for (uint32_t i = 0; i < run->c->nfaults; i++) {
		const struct fc_fault *x = &run->c->fault[i];
		uint32_t t = ms_since(run);
		if (t < x->at_ms)
			usleep((useconds_t)(x->at_ms - t) * 1000);
		fc_log(run->r, print, ms_since(run), "%s: %s", x->what, x->cmd);
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, 2, 1);
		char *argv[] = {"sh", "-c", x->cmd, NULL};
		pid_t pid;
		int rc = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ), st = 0;
		posix_spawn_file_actions_destroy(&fa);
		if (rc)
			fc_log(run->r, print, ms_since(run), "%s: could not start /bin/sh: %s", x->what, strerror(rc));
		else if (waitpid(pid, &st, 0) < 0)
			fc_log(run->r, print, ms_since(run), "%s: waitpid: %s", x->what, strerror(errno));
		else
			fc_log(run->r, print, ms_since(run), "%s: done, exit %d", x->what,
			       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	__atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int say(const char *what)
{
	fprintf(stderr, "nvmeof failover-check: %s: %s\n", what, nvmeof_errmsg());
	return -1;
}

static int connect_paths(struct run *run)
{
	const struct fc_cfg *c = run->c;
	for (uint32_t i = 0; i < c->npaths; i++) {
		struct nvmeof_ctrl_opts o;
		nvmeof_ctrl_opts_init(&o);
		o.traddr = c->path[i].traddr;
		if (c->path[i].trsvcid)
			o.trsvcid = c->path[i].trsvcid;
		o.src_addr = c->path[i].src;
		o.trtype = c->path[i].trtype;
		o.subnqn = c->nqn;
		o.hostnqn = c->hostnqn;
		o.cmd_timeout_ms = c->timeout_ms;
		if (c->kato_ms >= 0)
			o.kato_ms = (uint32_t)c->kato_ms;
		o.reconnect_delay_ms = c->reconnect_ms;
		if (c->loss_tmo_ms)
			o.ctrl_loss_tmo_ms = c->loss_tmo_ms;
		o.num_io_queues = c->queues;
		if (nvmeof_ctrl_connect(&o, &run->ctrl[i])) {
			char m[160];
			snprintf(m, sizeof(m), "path %u (%s)", i + 1, c->path[i].traddr);
			return say(m);
		}
	}
	if (c->npaths == 1) {
		if (!(run->ns = nvmeof_ns_get(run->ctrl[0], c->nsid)))
			return say("namespace");
		return 0;
	}
	struct nvmeof_mpath_opts mo;
	nvmeof_mpath_opts_init(&mo);
	mo.nsid = c->nsid;
	mo.iopolicy = c->iopolicy;
	if (c->quiesce_ms >= 0)
		mo.quiesce_ms = (uint32_t)c->quiesce_ms;
	if (nvmeof_mpath_create(run->ctrl, c->npaths, &mo, &run->mp))
		return say("multipath");
	run->ns = nvmeof_mpath_ns(run->mp);
	return 0;
}

/* Reads unit i into the region after the units' and judges each block. */
static void rdone(void *arg, const struct nvmeof_cpl *cpl)
{
	struct wreq *q = arg;
	q->done = true;
	q->err = cpl->err;
}

static void judge_unit(struct run *run, struct writer *w, uint32_t i)
{
	const struct fc_cfg *c = run->c;
	struct fc_result *r = run->r;
	struct fc_unit *u = &r->unit[i];
	size_t off = (size_t)c->units * run->ubytes;
	memset(run->buf + off, 0, run->ubytes);
	struct wreq q = {.w = w, .unit = i};
	int rc = w->mq ? nvmeof_mpath_read(w->mq, u->slba, c->nlb, run->mmr, off, rdone, &q)
		       : nvmeof_read(w->q, run->ns, u->slba, c->nlb, run->mr, off, rdone, &q);
	uint64_t end = now_ns() + (uint64_t)(c->drain_ms + 2 * c->timeout_ms) * 1000000ull;
	while (!rc && !q.done && now_ns() < end)
		wwait(w, 100);
	for (uint32_t b = 0; b < c->nlb; b++) {
		uint64_t v = 0;
		uint16_t wr = 0;
		int k = rc || !q.done || q.err ? FC_UNREAD
			: fc_judge(u, run->buf + off + (size_t)b * r->bsz, r->bsz, run->id, u->slba + b, &v, &wr);
		r->bad[k]++;
		if (k != FC_OK && r->nbads < c->units * c->nlb)
			r->bads[r->nbads++] = (struct fc_bad){.lba = u->slba + b, .version = v, .unit = i,
							      .writer = wr, .kind = (uint8_t)k};
	}
}

/* What each path (or the one queue) went through, on the timeline: the
 * faults' effect, that a scenario can tell a cut that bit from one that
 * missed. */
static void paths_seen(struct run *run, struct writer *w)
{
	bool print = !run->c->json;
	for (uint32_t p = 0; run->mp && p < run->c->npaths; p++) {
		uint64_t cmds = 0, errs = 0, held = 0, fo = 0, losses = 0;
		for (uint32_t i = 0; i < run->c->queues; i++) {
			struct nvmeof_path_stats st = {.size = sizeof(st)};
			if (nvmeof_mpath_queue_path_stats(w[i].mq, p, &st))
				continue;
			cmds += st.cmds;
			errs += st.path_errors;
			held += st.held;
			fo += st.failovers;
			int n = nvmeof_mpath_queue_path_loss(w[i].mq, p, 0, NULL);
			losses += n > 0 ? (uint64_t)n : 0;
		}
		/* Losses and ANA changes say that a fault reached the path even
		 * when it caught no command (a target may finish what is in
		 * flight before it lets a connection go). */
		struct nvmeof_path_info pi = {.size = sizeof(pi)};
		uint64_t ana = nvmeof_mpath_path_info(run->mp, p, &pi) ? 0 : pi.ana_changes;
		fc_log(run->r, print, ms_since(run), "path %u: %llu command(s), %llu path error(s), %llu failed over, "
		       "%llu write(s) held, %llu loss(es), %llu ANA change(s)", p + 1, (unsigned long long)cmds,
		       (unsigned long long)errs, (unsigned long long)fo, (unsigned long long)held,
		       (unsigned long long)losses, (unsigned long long)ana);
	}
	if (run->mp)
		return;
	uint64_t tmo = 0, rec = 0;
	for (uint32_t i = 0; i < run->c->queues; i++) {
		struct nvmeof_queue_stats st;
		nvmeof_queue_stats(w[i].q, &st);
		tmo += st.timeouts;
		rec += st.reconnects;
	}
	fc_log(run->r, print, ms_since(run), "queues: %llu timeout(s), %llu reconnect(s)", (unsigned long long)tmo,
	       (unsigned long long)rec);
}

static void teardown(struct run *run, struct writer *w)
{
	for (uint32_t i = 0; i < run->c->queues; i++) {
		if (w[i].mq)
			nvmeof_mpath_queue_destroy(w[i].mq);
		if (w[i].q)
			nvmeof_queue_destroy(w[i].q);
	}
	if (run->mmr)
		nvmeof_mpath_mr_release(run->mmr);
	if (run->mr)
		nvmeof_mr_release(run->mr);
	if (run->mp)
		nvmeof_mpath_destroy(run->mp);
	for (uint32_t i = 0; i < run->c->npaths; i++)
		if (run->ctrl[i])
			nvmeof_ctrl_close(run->ctrl[i]);
}

int fc_run(const struct fc_cfg *c, struct fc_result *r)
{
	struct run run = {.c = c, .r = r};
	struct writer w[FC_MAX_QUEUES] = {0};
	bool print = !c->json;
	int rc = -1;
	if (connect_paths(&run))
		goto out;
	r->bsz = run.ns->lba_size;
	if (c->slba + (uint64_t)c->units * c->nlb > run.ns->nsze) {
		fprintf(stderr, "nvmeof failover-check: %u units of %u blocks from LBA %llu pass the namespace's end "
			"(%llu blocks)\n", c->units, c->nlb, (unsigned long long)c->slba, (unsigned long long)run.ns->nsze);
		goto out;
	}
	run.ubytes = (size_t)c->nlb * r->bsz;
	size_t len = run.ubytes * (c->units + 1);
	if (run.mp ? nvmeof_mpath_mr_alloc(run.mp, len, &run.mmr) : nvmeof_mr_alloc(run.ctrl[0], len, &run.mr)) {
		say("buffer");
		goto out;
	}
	run.buf = run.mp ? nvmeof_mpath_mr_addr(run.mmr) : nvmeof_mr_addr(run.mr);
	r->unit = calloc(c->units, sizeof(*r->unit));
	r->bads = calloc((size_t)c->units * c->nlb, sizeof(*r->bads));
	reqs = calloc(c->units, sizeof(*reqs));
	if (!r->unit || !r->bads || !reqs) {
		fprintf(stderr, "nvmeof failover-check: out of memory\n");
		goto out;
	}
	for (uint32_t i = 0; i < c->units; i++)
		r->unit[i].slba = c->slba + (uint64_t)i * c->nlb;
	for (uint16_t i = 0; i < c->queues; i++) {
		w[i] = (struct writer){.run = &run, .qi = i};
		struct nvmeof_queue_opts qo;
		nvmeof_queue_opts_init(&qo);
		if (run.mp ? nvmeof_mpath_queue_create(run.mp, &qo, &w[i].mq) : nvmeof_queue_create(run.ctrl[0], &qo, &w[i].q)) {
			say("queue");
			goto out;
		}
	}
	run.id = now_ns() ^ ((uint64_t)getpid() << 32);
	run.t0 = now_ns();
	fc_log(r, print, 0, "writing: %u queue(s), %u unit(s) each written by one queue, at most %u outstanding per queue",
	       c->queues, c->units, c->depth);
	struct faults f = {.run = &run};
	pthread_create(&f.th, NULL, fault_main, &f);
	for (uint32_t i = 0; i < c->queues; i++)
		pthread_create(&w[i].th, NULL, writer_main, &w[i]);
	/* a progress line a second until the writes stop */
	uint64_t last_a = 0, last_d = 0;
	for (uint32_t t = 1000;; t += 1000) {
		uint32_t now = ms_since(&run);
		bool faults_done = __atomic_load_n(&f.done, __ATOMIC_ACQUIRE);
		if ((c->runtime_ms >= 0 && now >= c->runtime_ms) || (c->runtime_ms < 0 && faults_done))
			break;
		if (now < t)
			usleep((t - now) * 1000);
		uint64_t a = 0, d = 0;
		for (uint32_t i = 0; i < c->queues; i++) {
			a += __atomic_load_n(&w[i].acked, __ATOMIC_RELAXED);
			d += __atomic_load_n(&w[i].in_doubt, __ATOMIC_RELAXED);
		}
		fc_log(r, print, ms_since(&run), "+%llu acknowledged, +%llu in doubt, %u outstanding",
		       (unsigned long long)(a - last_a), (unsigned long long)(d - last_d),
		       __atomic_load_n(&run.outstanding, __ATOMIC_RELAXED));
		last_a = a;
		last_d = d;
	}
	__atomic_store_n(&run.stop, 1, __ATOMIC_RELAXED);
	fc_log(r, print, ms_since(&run), "writes stop; waiting up to %u ms for those outstanding", c->drain_ms);
	for (uint32_t i = 0; i < c->queues; i++) {
		pthread_join(w[i].th, NULL);
		r->acked += w[i].acked;
		r->in_doubt += w[i].in_doubt;
	}
	fc_log(r, print, ms_since(&run), "writes answered: %llu acknowledged, %llu in doubt%s",
	       (unsigned long long)r->acked, (unsigned long long)r->in_doubt,
	       __atomic_load_n(&run.outstanding, __ATOMIC_RELAXED) ? " (some abandoned unanswered)" : "");
	pthread_join(f.th, NULL);
	paths_seen(&run, w);
	fc_log(r, print, ms_since(&run), "faults over; holding %u ms before reading back", c->hold_ms);
	usleep(c->hold_ms * 1000u);
	fc_log(r, print, ms_since(&run), "reading back %u unit(s)", c->units);
	for (uint32_t i = 0; i < c->units; i++)
		judge_unit(&run, &w[0], i);
	fc_log(r, print, ms_since(&run), "read back");
	rc = 0;
out:
	teardown(&run, w);
	free(reqs);
	reqs = NULL;
	return rc;
}
