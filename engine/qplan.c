/* qpairs_shared=: what cannot share, and the plan made at fio's setup,
 * which runs for every job, in job-file order, before any job starts: job
 * k on a controller uses pair k mod N, and each pair is as deep as the
 * jobs planned on it need together, whichever job opens it (qshare.c). */
#include <stdlib.h>

#include "engine.h"

static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;

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
static int refuse(struct thread_data *td, const struct efile *ef)
{
	return say(td->eo, ef->cfg.t.nalt ? "with several paths in the filename: not supported"
			   : ef->facts.zi.zoned ? "on a zoned namespace: not supported" : NULL);
}

/* The requests of one of the job's io_u's may take this many slots (split
 * at MDTS), as the job's own pairs are sized (qpairs.c). */
static uint64_t split_factor(struct thread_data *td, const struct efile *ef)
{
	uint32_t mx = nvmeof_ctrl_info(ef->sc->c)->max_xfer;
	uint64_t bs = td->o.max_bs[DDIR_READ] > td->o.max_bs[DDIR_WRITE] ? td->o.max_bs[DDIR_READ]
									  : td->o.max_bs[DDIR_WRITE];
	return mx && bs ? (bs + mx - 1) / mx : 1;
}

int qshare_plan(struct thread_data *td, struct job *j)
{
	struct eng_opts *eo = td->eo;
	unsigned int n = eo->qpairs_shared;
	struct efile *ef = j->files;
	if (!n || !ef || j->qs_k)
		return 0;
	for (struct efile *o = ef->next; o; o = o->next)
		if (o->sc != ef->sc || o->cfg.t.nalt)
			return say(eo, "with files on several controllers or paths: not supported");
	if (refuse(td, ef))
		return 1;
	struct shared_ctrl *sc = ef->sc;
	pthread_mutex_lock(&plan_lock);
	if (sc->qs_n && sc->qs_n != n) {
		eng_err("nvmeof: job %s: qpairs_shared=%u: this controller's queue pairs are already shared by "
			"another job with qpairs_shared=%u (job %s): the jobs of one process on one controller "
			"share them, and their number\n", td->o.name, n, sc->qs_n, sc->qs_first);
		pthread_mutex_unlock(&plan_lock);
		return 1;
	}
	if (!sc->qs_n) {
		sc->qs_n = n;
		sc->qs_first = td->o.name;
	}
	unsigned int k = sc->qs_planned++ % n;
	j->qs_k = k + 1;
	sc->qs_jobs[k]++;
	uint64_t d = (uint64_t)td->o.iodepth * split_factor(td, ef);
	sc->qs_depth[k] += d;
	if (eo->qd_limit && sc->qs_depth[k] > eo->qd_limit)
		sc->qs_depth[k] = eo->qd_limit;
	pthread_mutex_unlock(&plan_lock);
	return 0;
}
