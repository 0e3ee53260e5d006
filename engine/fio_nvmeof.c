/*
 * libnvmeof_fio.so: fio external ioengine over libnvmeof.
 *
 *   fio --ioengine=external:/path/libnvmeof_fio.so \
 *       --filename='trtype=RDMA adrfam=IPv4 traddr=192.0.2.1 trsvcid=4420 subnqn=nqn.x\:y ns=1'
 *
 * This file is the I/O path: queue() submits without ringing the doorbell,
 * commit() stamps fio's issue time and rings it once for the batch,
 * getevents() reaps (engine/reap.c waits), event() hands one over. A job's
 * setup and teardown are in job.c; engine.h maps the other files.
 *
 * Callbacks get engine-owned contexts, never an io_u or a file directly:
 * fio frees those before cleanup(), while the library may still call back
 * with requests parked across a reconnect.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "engine.h"

/* Most commands whose doorbell waits for gathered events to be handed out. */
#define RING_BATCH 16

static void log_io_error(struct job *j, const char *what, const char *detail)
{
	/* fio reports each failed io_u itself; say why, a bounded number of times */
	/* atomic: on a shared pair another job's poll may run this callback */
	if (__atomic_fetch_add(&j->errors_logged, 1, __ATOMIC_RELAXED) < 8)
		eng_err("nvmeof: %s: %s\n", what, detail);
}

static void done_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct ioctx *x = arg;
	struct job *j = x->j; /* NULL: a shared pair's request that outlived its job (qshare.c) */
	if (!j || (j->jq[0].qs ? qshare_done(j) : j->closing))
		return;
	struct io_u *io_u = x->io_u;
	if (cpl->err) {
		char buf[160], line[1200];
		io_u->error = cpl->err == NVMEOF_ETIMEDOUT ? ETIMEDOUT : EIO;
		const char *why = nvmeof_cpl_str(cpl, buf, sizeof(buf));
		/* several paths: the library's message names each path and why */
		if (j->njq && j->jq[0].mp) {
			snprintf(line, sizeof(line), "%s: %s", why, nvmeof_errmsg());
			why = line;
		}
		log_io_error(j, io_ddir_name(io_u->ddir), why);
	}
	if (j->jq[0].qs && qshare_hand(j, io_u))
		return; /* to the job's ring: another job's poll may have run this */
	/* cannot happen (job.c sizes events): dropping it beats a heap overrun */
	if (j->nevents >= 2 * j->nctx) {
		eng_err("nvmeof: more completions than io_u's: one dropped\n");
		return;
	}
	j->events[j->nevents++] = io_u;
}

/* A Zone Append: done_cb's, once the LBA it landed at is the one fio expected. */
static void append_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct ioctx *x = arg;
	char why[200];
	if (!cpl->err && x->j && !x->j->closing && zones_landed(x, cpl, why, sizeof(why))) {
		x->io_u->error = EIO;
		log_io_error(x->j, "write", why);
	}
	done_cb(arg, cpl);
}

/* One request on queue pair q. */
static int submit_on(struct thread_data *td, struct nvmeof_queue *q, struct jqueue *jq, struct efile *ef,
		     struct io_u *io_u, struct ioctx *x, uint64_t slba, uint32_t nlb, size_t off)
{
	switch (io_u->ddir) {
	case DDIR_READ:
		return nvmeof_read(q, ef->ns, slba, nlb, jq->mr, off, done_cb, x);
	case DDIR_WRITE:
		if (ef->write_special)
			return zones_submit(td, q, ef, io_u, x, slba, nlb, jq->mr, off, done_cb, append_cb);
		return nvmeof_write(q, ef->ns, slba, nlb, jq->mr, off, done_cb, x);
	case DDIR_TRIM:
		return nvmeof_deallocate(q, ef->ns, slba, nlb, done_cb, x);
	default: /* the syncs */
		return nvmeof_flush(q, ef->ns, done_cb, x);
	}
}

static enum fio_q_status fio_nvmeof_queue(struct thread_data *td, struct io_u *io_u)
{
	struct job *j = td->io_ops_data;
	struct efile *ef = FILE_ENG_DATA(io_u->file);
	struct jqueue *jq = ef->jq;
	uint64_t lbamask = (1ull << ef->lbads) - 1;
	uint64_t slba = io_u->offset >> ef->lbads;
	uint32_t nlb = (uint32_t)(io_u->xfer_buflen >> ef->lbads);
	size_t off = 0;
	int rc = NVMEOF_EQFULL;

	fio_ro_check(td, io_u);
	if (io_u->index >= j->nctx) { /* cannot happen with fio 3.33: io_u's are 0 .. iodepth-1 */
		io_u->error = EINVAL;
		log_io_error(j, io_ddir_name(io_u->ddir), "io_u index beyond iodepth");
		return FIO_Q_COMPLETED;
	}
	struct ioctx *x = &j->ctx[io_u->index];
	x->io_u = io_u;
	switch (io_u->ddir) {
	case DDIR_READ:
	case DDIR_WRITE:
	case DDIR_TRIM:
		if ((io_u->offset | io_u->xfer_buflen) & lbamask || !nlb || slba + nlb > ef->nsze) {
			io_u->error = EINVAL;
			log_io_error(j, io_ddir_name(io_u->ddir),
				     "offset or length not whole LBAs inside the namespace");
			return FIO_Q_COMPLETED;
		}
		/* zonemode=zbd on zones (zones_check): fio's trim, a zone reset */
		if (io_u->ddir == DDIR_TRIM && td_ioengine_flagged(td, FIO_ASYNCIO_SYNC_TRIM)) {
			do_io_u_trim(td, io_u);
			return FIO_Q_COMPLETED;
		}
		if (io_u->ddir == DDIR_TRIM)
			break;
		off = (size_t)((char *)io_u->xfer_buf - td->orig_buffer);
		if (j->gpu_copy && io_u->ddir == DDIR_WRITE &&
		    nvmeof_cuda_copy(jq->mr, off, io_u->xfer_buf, io_u->xfer_buflen, true)) {
			io_u->error = EIO;
			log_io_error(j, "gpu_copy", nvmeof_errmsg());
			return FIO_Q_COMPLETED;
		}
		break;
	case DDIR_SYNC:
	case DDIR_DATASYNC:
	case DDIR_SYNC_FILE_RANGE:
		break;
	default:
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}
	/* By default the submitting CPU's queue pair, as blk-mq maps a CPU to
	 * a hardware queue: where a queue's work runs follows where its
	 * commands come from (the HCA's or the target's completion work, and
	 * on Soft-RoCE the protocol work the doorbell starts), so a job that
	 * the scheduler moves spreads its queues' work over the CPUs it uses
	 * instead of piling it on one. Round-robin (qpair_select=rr) spreads
	 * uniform I/O evenly, as SPDK perf does -P. A full queue passes the
	 * request to the next one, and so does a disconnected one (the
	 * library gave up on it), for the rest of the job: the job goes on
	 * as long as one of its queue pairs lives. */
	if (jq->mp) {
		/* fio's syncs (fsync=, end_fsync=, the one before a verify
		 * pass) are a Flush through one path: the namespace's cache is
		 * the subsystem's, whichever controller carried the writes */
		if (io_u->ddir == DDIR_TRIM) {
			io_u->error = EOPNOTSUPP;
			log_io_error(j, io_ddir_name(io_u->ddir), "several paths carry reads, writes and syncs only");
			return FIO_Q_COMPLETED;
		}
		/* multipath queues in turn (by the submitting CPU measured no
		 * better: BENCHMARKS.md, "One and two paths"); after a full one, fio's
		 * retry goes to the next */
		unsigned int n = jq->next;
		struct nvmeof_mpath_queue *mq = jq->mq[n];
		jq->next = n + 1 == jq->nq ? 0 : n + 1;
		if (io_u->ddir == DDIR_READ)
			rc = nvmeof_mpath_read(mq, slba, nlb, jq->mmr, off, done_cb, x);
		else if (io_u->ddir == DDIR_WRITE)
			rc = nvmeof_mpath_write(mq, slba, nlb, jq->mmr, off, 0, done_cb, x);
		else
			rc = nvmeof_mpath_flush(mq, done_cb, x);
		if (!rc)
			jq->dirty |= 1ull << n;
		if (rc == NVMEOF_EQFULL)
			return FIO_Q_BUSY;
		if (rc) {
			io_u->error = EIO;
			log_io_error(j, io_ddir_name(io_u->ddir), nvmeof_errmsg());
			return FIO_Q_COMPLETED;
		}
		j->pending[j->npending++] = io_u;
		return FIO_Q_QUEUED;
	}
	if (j->qpair_select == QSEL_CPU && jq->nq > 1)
		jq->next = qmap_pick(&j->qmap, sched_getcpu(), jq->nq);
	uint64_t tried = jq->closed;
	if (jq->qs)
		qshare_lock(jq);
	for (unsigned int n; (n = qmap_open(tried, jq->next, jq->nq)) < jq->nq;) {
		jq->next = n + 1 == jq->nq ? 0 : n + 1;
		tried |= 1ull << n;
		rc = submit_on(td, jq->q[n], jq, ef, io_u, x, slba, nlb, off);
		if (!rc)
			jq->dirty |= 1ull << n;
		if (rc == NVMEOF_ECLOSED && jq->nq > 1) {
			jq->closed |= 1ull << n;
			eng_err("nvmeof: queue pair %u of %u: %s; its commands go to the others\n", n + 1,
				jq->nq, nvmeof_errmsg());
		}
		if (rc != NVMEOF_EQFULL && rc != NVMEOF_ECLOSED)
			break;
	}
	if (jq->qs)
		qshare_unlock(jq, !rc);
	/* a lone queue pair is never skipped: its own error says why */
	bool live = qmap_open(jq->closed, 0, jq->nq) < jq->nq;
	if (live && (rc == NVMEOF_EQFULL || (rc == NVMEOF_ECLOSED && jq->nq > 1)))
		return FIO_Q_BUSY; /* the live ones are full */
	if (rc) {
		io_u->error = rc == NVMEOF_ENOTSUP ? EOPNOTSUPP : EIO;
		log_io_error(j, io_ddir_name(io_u->ddir),
			     live ? nvmeof_errmsg() : "every queue pair is disconnected");
		return FIO_Q_COMPLETED;
	}
	j->pending[j->npending++] = io_u;
	return FIO_Q_QUEUED;
}

/* The doorbell for everything queued and committed and not yet posted.
 * fio's issue time is taken here, once, just before the doorbell (the
 * engine sets FIO_ASYNCIO_SETS_ISSUE_TIME, as io_uring does), so slat is
 * queue()'s work plus any delay of the doorbell and clat starts before the
 * doorbell: what a fio user means by them. */
static void ring(struct thread_data *td, struct job *j)
{
	unsigned int n = j->npending;
	bool stamp = fio_fill_issue_time(td);
	struct timespec now;
	if (!n)
		return;
	if (stamp) {
		fio_gettime(&now, NULL);
		for (unsigned int i = 0; i < n; i++)
			j->pending[i]->issue_time = now;
		if (td->o.read_iolog_file)
			td->last_issue = now;
	}
	for (int k = 0; k < j->njq; k++) {
		struct jqueue *jq = &j->jq[k];
		for (unsigned int qi = 0; jq->dirty; qi++)
			if (jq->dirty & (1ull << qi)) {
				jq->dirty &= ~(1ull << qi);
				if (jq->mp   ? nvmeof_mpath_queue_commit(jq->mq[qi])
				    : jq->qs ? qshare_commit(jq) : nvmeof_queue_commit(jq->q[qi]))
					log_io_error(j, "commit", nvmeof_errmsg());
			}
	}
	/* slat samples after the doorbell: fio's bookkeeping stays out of clat,
	 * and no completion can run before getevents on this thread */
	if (stamp)
		for (unsigned int i = 0; i < n; i++)
			io_u_queued(td, j->pending[i]);
	/* getevents rings what fio queued and has not committed yet, too */
	if (n > j->ncommitted)
		io_u_mark_submit(td, n - j->ncommitted);
	j->npending = j->ncommitted = 0;
}

/* Commands of this job on the wire: submitted, not completed, not pending. */
static bool wire_busy(const struct job *j)
{
	uint32_t n = 0;
	for (int k = 0; k < j->njq; k++)
		n += qpairs_inflight(&j->jq[k]);
	return n > j->npending;
}

/* With fio's default iodepth_batch_submit=1 a job at depth commits every
 * io_u alone, right after the getevents that freed its slot. A doorbell is
 * the costly step of a submission (on Soft-RoCE a system call whose work a
 * kworker runs, about four context switches across the machine), so while
 * commands are in flight those committed now wait for the next getevents,
 * which fio always calls before it waits or sleeps, and go in one doorbell:
 * what SPDK's delay_cmd_submit does. An idle queue pair rings at once, so
 * QD1 latency is untouched. */
static int fio_nvmeof_commit(struct thread_data *td)
{
	struct job *j = td->io_ops_data;
	unsigned int n = j->npending - j->ncommitted;
	if (!n)
		return 0;
	io_u_mark_submit(td, n);
	j->ncommitted = j->npending;
	if (!j->delay_cmd_submit || !wire_busy(j))
		ring(td, j);
	return 0;
}

/* Completed reads into GPU memory: one GPUDirect flush for the batch, as a
 * GPU consumer must do before reading; with gpu_copy, then copy each to
 * fio's host buffer for verification. */
static void gpu_after_reads(struct thread_data *td, struct job *j)
{
	bool flushed = false;
	for (unsigned int i = 0; i < j->nreturned; i++) {
		struct io_u *io_u = j->events[i];
		if (io_u->ddir != DDIR_READ || io_u->error)
			continue;
		struct jqueue *jq = ((struct efile *)FILE_ENG_DATA(io_u->file))->jq;
		if (!flushed && nvmeof_cuda_flush(jq->mr)) {
			io_u->error = EIO;
			log_io_error(j, "GPU flush", nvmeof_errmsg());
			continue;
		}
		flushed = true;
		size_t off = (size_t)((char *)io_u->xfer_buf - td->orig_buffer);
		if (j->gpu_copy && nvmeof_cuda_copy(jq->mr, off, io_u->xfer_buf, io_u->xfer_buflen, false)) {
			io_u->error = EIO;
			log_io_error(j, "gpu_copy", nvmeof_errmsg());
		}
	}
}


static int fio_nvmeof_getevents(struct thread_data *td, unsigned int min, unsigned int max,
				const struct timespec *t)
{
	struct job *j = td->io_ops_data;
	/* Completions past the last call's max were kept: move them up. */
	if (j->nreturned) {
		memmove(j->events, j->events + j->nreturned, (j->nevents - j->nreturned) * sizeof(*j->events));
		j->nevents -= j->nreturned;
		j->nreturned = 0;
	}
	/* fio takes one event per call by default (iodepth_batch_complete_max
	 * is iodepth_batch_complete_min): while gathered events last, hand
	 * them over and let the io_u's fio resubmits gather too, up to
	 * RING_BATCH; once fio must wait, the delayed doorbells go first, so
	 * nothing is waited for that was not sent. */
	if (!min || j->nevents < min || j->npending >= RING_BATCH)
		ring(td, j);
	/* min 0 is a non-blocking reap: it still polls once */
	if ((!min || j->nevents < min) && reap_wait(td, j, min, t) < 0 && j->nevents < min) {
		eng_err("nvmeof: %s\n", nvmeof_errmsg());
		if (!j->nevents)
			return -EIO;
		/* else hand over what did complete */
	}
	/* Every return of events goes through here, so the next call drops
	 * exactly these and no io_u is handed to fio twice. */
	j->nreturned = j->nevents < max ? j->nevents : max;
	if (j->gpu_flush)
		gpu_after_reads(td, j);
	return (int)j->nreturned;
}

static struct io_u *fio_nvmeof_event(struct thread_data *td, int ev)
{
	struct job *j = td->io_ops_data;
	return j->events[ev];
}

struct ioengine_ops ioengine = {
	.name = "nvmeof",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_RAWIO | FIO_NOEXTEND | FIO_NODISKUTIL | FIO_DISKLESSIO | FIO_ASYNCIO_SETS_ISSUE_TIME,
	.setup = job_setup,
	.init = job_init,
	.iomem_alloc = iomem_alloc,
	.iomem_free = iomem_free,
	.queue = fio_nvmeof_queue,
	.commit = fio_nvmeof_commit,
	.getevents = fio_nvmeof_getevents,
	.event = fio_nvmeof_event,
	.cleanup = job_cleanup,
	.open_file = files_open,
	.close_file = files_close,
	.get_file_size = files_size,
	.get_zoned_model = zones_get_model,
	.report_zones = zones_report,
	.reset_wp = zones_reset_wp,
	.get_max_open_zones = zones_max_open,
#if FIO_IOOPS_VERSION >= 33 /* gates: engine.h */
	.get_max_active_zones = zones_max_active,
#endif
#if FIO_IOOPS_VERSION >= 32
	.finish_zone = zones_finish,
	.fdp_fetch_ruhs = zones_fdp_ruhs,
#endif
#if FIO_IOOPS_VERSION >= 37
	.move_zone_wp = zones_move_wp,
#endif
	.option_struct_size = sizeof(struct eng_opts),
	.options = eng_options,
};
