/* A job's life around its I/O: setup() in fio's parent learns each file's
 * size; init() in the job's thread or process attaches to the controllers
 * and opens the job's queue pairs (then fio asks iomem.c for the I/O
 * memory); cleanup() undoes it all from the job's own records, since fio frees its
 * files and io_u's before calling it. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "verify.h"

#include "engine.h"

/* Every job record the engine made, until its cleanup. fio's parent runs
 * setup() for a job of processes, and the forked job frees its own copy at
 * cleanup, but fio never asks the parent to free the original: this list
 * keeps it reachable, a record the engine still holds rather than a lost
 * one (fio keeps td->io_ops_data in shared memory, which no leak check
 * scans), until the process exits. */
static struct job *held;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;

static struct job *job_of(struct thread_data *td)
{
	struct job *j = td->io_ops_data;
	if (j || !(j = calloc(1, sizeof(*j))))
		return j;
	pthread_mutex_lock(&held_lock);
	j->held_next = held;
	if (held)
		held->held_prev = j;
	held = j;
	pthread_mutex_unlock(&held_lock);
	td->io_ops_data = j;
	return j;
}

static void job_forget(struct job *j)
{
	pthread_mutex_lock(&held_lock);
	if (j->held_prev)
		j->held_prev->held_next = j->held_next;
	else if (held == j)
		held = j->held_next;
	if (j->held_next)
		j->held_next->held_prev = j->held_prev;
	pthread_mutex_unlock(&held_lock);
}

int job_setup(struct thread_data *td)
{
	struct eng_opts *eo = td->eo;
	struct job *j = job_of(td);
	int rc = 1;
	eng_quiet = false; /* the process's version line, whatever its jobs' quiet */
	eng_say_version();
	eng_quiet = eo->quiet;
	if (!j)
		return 1;
	if (eo->gpu >= 0 && td->o.verify != VERIFY_NONE && !eo->gpu_copy) {
		eng_err("nvmeof: verify needs the data on the CPU, but with gpu=%d the I/O buffers are GPU "
			"memory that fio must not touch: add gpu_copy=1 for a correctness run (copies "
			"through the host: not the zero-copy path)\n", eo->gpu);
		rc = eng_fail(td, EINVAL, "nvmeof gpu and verify");
	}
	else if (qshare_check(td))
		rc = eng_fail(td, EINVAL, "nvmeof qpairs_shared");
	/* Threads keep the connection for init() and share it; fio's parent
	 * must not hold one across the fork of job processes. */
	else if (files_attach(td, j, td->o.use_thread || j->have_queues))
		rc = td->error ? 1 : eng_fail(td, EIO, "nvmeof setup");
	else if (qshare_plan(td, j))
		rc = eng_fail(td, EINVAL, "nvmeof qpairs_shared");
	else
		rc = 0;
	if (rc) {
		/* fio calls no cleanup after a failed setup: what this job made
		 * goes now (LeakSanitizer found it), and no file keeps a pointer to it */
		struct fio_file *f;
		unsigned int i;
		for_each_file(td, f, i)
			FILE_SET_ENG_DATA(f, NULL);
		job_cleanup(td);
	}
	return rc;
}

static int job_attach_queues(struct thread_data *td, struct job *j);

int job_init(struct thread_data *td)
{
	struct job *j = job_of(td);
	eng_quiet = ((struct eng_opts *)td->eo)->quiet;
	if (!j)
		return eng_fail(td, ENOMEM, "nvmeof init");
	int rc = job_attach_queues(td, j);
	/* every connect of the job is done (or will not be): the secrets of
	 * a file that did not get as far as its paths' go too */
	for (struct efile *ef = j->files; ef; ef = ef->next)
		cfg_secrets_wipe(&ef->cfg);
	if (rc)
		return td->error ? 1 : eng_fail(td, EIO, "nvmeof init");
	j->have_queues = true;
	return 0;
}

/* Whether file ef's I/O goes through jq: the queue pairs of its controller
 * for a file with one path (the namespace is named per command), but a
 * multipath is of one namespace over one set of paths, so a file with
 * several takes the queues of the file that has the same. */
static bool jq_fits(const struct jqueue *jq, const struct efile *ef)
{
	const struct efile *o = jq->first;
	if (jq->sc != ef->sc || o->cfg.t.nalt != ef->cfg.t.nalt)
		return false;
	if (!ef->cfg.t.nalt)
		return true;
	if (o->nsid != ef->nsid)
		return false;
	for (unsigned int i = 0; i < ef->cfg.t.nalt; i++) {
		const struct tid_path *a = &o->cfg.t.alt[i], *b = &ef->cfg.t.alt[i];
		if (strcmp(a->traddr, b->traddr) || strcmp(a->trsvcid, b->trsvcid) || strcmp(a->srcaddr, b->srcaddr))
			return false;
	}
	return true;
}

/* init's work: 0, or 1 after logging why */
static int job_attach_queues(struct thread_data *td, struct job *j)
{
	struct eng_opts *eo = td->eo;
	struct fio_file *f;
	unsigned int i;
	if (files_attach(td, j, true))
		return 1;
	/* fio numbers its io_u's 0 .. iodepth-1 (backend.c init_io_u) */
	j->nctx = td->o.iodepth;
	/* events holds the last getevents' entries fio may still be reading
	 * (at most iodepth) plus the completions since (at most iodepth, each
	 * io_u once): a zone hook's synchronous call runs other I/Os'
	 * callbacks between two getevents calls. */
	j->events = calloc(2 * (size_t)j->nctx, sizeof(*j->events));
	j->pending = calloc(j->nctx, sizeof(*j->pending));
	j->ctx = calloc(j->nctx, sizeof(*j->ctx));
	if (!j->events || !j->pending || !j->ctx) {
		eng_err("nvmeof: out of memory\n");
		return 1;
	}
	for (unsigned int x = 0; x < j->nctx; x++)
		j->ctx[x].j = j;
	j->delay_cmd_submit = eo->delay_cmd_submit;
	j->qpair_select = eo->qpair_select;
	qpairs_job_cpus(j);
	for_each_file(td, f, i) {
		struct efile *ef = FILE_ENG_DATA(f);
		int k;
		for (k = 0; k < j->njq; k++)
			if (jq_fits(&j->jq[k], ef))
				break;
		if (k == j->njq) {
			if (j->njq == MAX_QUEUES_PER_JOB) {
				eng_err("nvmeof: a job may use at most %d controllers and multipath namespaces\n",
					MAX_QUEUES_PER_JOB);
				return 1;
			}
			j->njq++;
			j->jq[k].first = ef;
			if (qpairs_open(td, j, &j->jq[k], ef))
				return 1;
		}
		ef->jq = &j->jq[k];
	}
	return 0;
}

void job_cleanup(struct thread_data *td)
{
	struct job *j = td->io_ops_data;
	if (!j)
		return;
	/* Requests still in the library (parked for a reconnect when fio gave
	 * up waiting) fail back through the callbacks at queue destroy: their
	 * io_u's may be freed already, so the callbacks must leave them alone. */
	__atomic_store_n(&j->closing, true, __ATOMIC_SEQ_CST); /* a shared pair's poller reads it */
	eng_quiet = ((struct eng_opts *)td->eo)->quiet;
	char who[96]; /* the end-of-job lines name their job, as the start lines do */
	snprintf(who, sizeof(who), "job %s (%d)", td->o.name, td->thread_number);
	for (int k = 0; k < j->njq; k++)
		if (j->jq[k].qs)
			qshare_close(j, &j->jq[k], who);
		else
			qpairs_close(&j->jq[k], who);
	iomem_release(j);
	files_detach(j);
	free(j->events);
	free(j->pending);
	hring_free(&j->handed); /* qpairs_shared=: made at init, even when its open failed after */
	free(j->ctx); /* NULL when a shared pair took it with the requests that outlived the job */
	job_forget(j);
	free(j);
	td->io_ops_data = NULL;
}
