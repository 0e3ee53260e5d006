/* A job's life around its I/O: setup() in fio's parent learns each file's
 * size; init() in the job's thread or process attaches to the controllers
 * and opens the job's queue pairs; post_init() registers fio's I/O buffer;
 * cleanup() undoes it all from the job's own records, since fio frees its
 * files and io_u's before calling it. */
#include <errno.h>
#include <stdlib.h>

#include "topo.h"
#include "verify.h"

#include "engine.h"

static struct job *job_of(struct thread_data *td)
{
	if (!td->io_ops_data)
		td->io_ops_data = calloc(1, sizeof(struct job));
	return td->io_ops_data;
}

int job_setup(struct thread_data *td)
{
	struct eng_opts *eo = td->eo;
	struct job *j = job_of(td);
	if (!j)
		return 1;
	if (eo->gpu >= 0 && td->o.verify != VERIFY_NONE && !eo->gpu_copy) {
		log_err("nvmeof: verify needs the data on the CPU, but with gpu=%d the I/O buffers are GPU "
			"memory that fio must not touch: add gpu_copy=1 for a correctness run (copies "
			"through the host: not the zero-copy path)\n", eo->gpu);
		return 1;
	}
	/* Threads keep the connection for init() and share it; fio's parent
	 * must not hold one across the fork of job processes. */
	return files_attach(td, j, td->o.use_thread || j->have_queues);
}

int job_init(struct thread_data *td)
{
	struct eng_opts *eo = td->eo;
	struct job *j = job_of(td);
	struct fio_file *f;
	unsigned int i;
	if (!j || files_attach(td, j, true))
		return 1;
	/* fio numbers its io_u's 0 .. iodepth-1 (backend.c init_io_u) */
	j->nctx = td->o.iodepth;
	j->events = calloc(j->nctx, sizeof(*j->events));
	j->pending = calloc(j->nctx, sizeof(*j->pending));
	j->ctx = calloc(j->nctx, sizeof(*j->ctx));
	if (!j->events || !j->pending || !j->ctx) {
		log_err("nvmeof: out of memory\n");
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
			if (j->jq[k].sc == ef->sc)
				break;
		if (k == j->njq) {
			if (j->njq == MAX_QUEUES_PER_JOB) {
				log_err("nvmeof: a job may use at most %d controllers\n", MAX_QUEUES_PER_JOB);
				return 1;
			}
			j->njq++;
			if (qpairs_open(td, j, &j->jq[k], ef))
				return 1;
		}
		ef->jq = &j->jq[k];
	}
	j->have_queues = true;
	return 0;
}

/* fio's I/O buffers exist now: register them once per controller, or, with
 * gpu=, give the job a GPU region of the same size that io_u offsets map
 * into (fio's host buffers then only serve gpu_copy). */
int job_post_init(struct thread_data *td)
{
	struct eng_opts *eo = td->eo;
	struct job *j = td->io_ops_data;
	if (!td->orig_buffer)
		return 0;
	for (int k = 0; k < j->njq; k++) {
		struct nvmeof_ctrl *c = j->jq[k].sc->c;
		if (j->jq[k].mp) {
			if (nvmeof_mpath_mr_register(j->jq[k].mp, td->orig_buffer, td->orig_buffer_size, &j->jq[k].mmr)) {
				log_err("nvmeof: registering fio's %zu-byte I/O buffer on every path: %s\n",
					td->orig_buffer_size, nvmeof_errmsg());
				td_verror(td, EIO, "post_init");
				return 1;
			}
			continue;
		}
		if (eo->gpu < 0) {
			if (nvmeof_mr_register(c, td->orig_buffer, td->orig_buffer_size, &j->jq[k].mr)) {
				log_err("nvmeof: registering fio's %zu-byte I/O buffer: %s\n", td->orig_buffer_size,
					nvmeof_errmsg());
				td_verror(td, EIO, "post_init"); /* fio ignores post_init's return alone */
				return 1;
			}
			continue;
		}
		char gpci[32] = "?", line[320];
		if (nvmeof_mr_alloc_cuda(c, eo->gpu, td->orig_buffer_size, &j->jq[k].mr)) {
			log_err("nvmeof: gpu=%d: %s\n", eo->gpu, nvmeof_errmsg());
			td_verror(td, ENODEV, "post_init");
			return 1;
		}
		nvmeof_cuda_pci_bus_id(eo->gpu, gpci, sizeof(gpci));
		topo_describe("/sys", nvmeof_ctrl_info(c)->hca, gpci, line, sizeof(line));
		eng_info("nvmeof: %zu bytes of GPU %d memory registered (%s)%s; %s\n", td->orig_buffer_size,
			 eo->gpu, nvmeof_mr_cuda_registration(j->jq[k].mr),
			 eo->gpu_copy ? ", gpu_copy: copies through the host, not zero-copy" : "", line);
	}
	j->gpu = eo->gpu >= 0;
	j->gpu_copy = eo->gpu >= 0 && eo->gpu_copy;
	j->gpu_flush = eo->gpu >= 0 && (eo->gpu_flush || eo->gpu_copy);
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
	j->closing = true;
	for (int k = 0; k < j->njq; k++)
		qpairs_close(&j->jq[k]);
	files_detach(j);
	free(j->events);
	free(j->pending);
	free(j->ctx);
	free(j);
	td->io_ops_data = NULL;
}
