/*
 * libnvmeof_fio.so: fio external ioengine over libnvmeof.
 *
 *   fio --ioengine=external:/path/libnvmeof_fio.so \
 *       --filename='trtype=RDMA adrfam=IPv4 traddr=192.0.2.1 trsvcid=4420 subnqn=nqn.x\:y ns=1'
 *
 * Life of a job: setup() (in fio's parent, before any fork) connects just to
 * learn the namespace size and checks block sizes against the LBA size;
 * init() (in the job's thread or process) attaches to a controller, shared
 * by all jobs of a process when thread=1, and creates the job's own I/O
 * queue; post_init() registers fio's I/O buffer once. queue() submits
 * without ringing the doorbell, commit() stamps fio's issue time and rings
 * it once for the batch, getevents() polls (or sleeps, per wait=) until
 * enough have completed.
 *
 * fio frees its files and io_u's before it calls cleanup(), so nothing the
 * library may still call back with (requests parked across a reconnect) is
 * an io_u or a file: callbacks get engine-owned contexts, and cleanup()
 * works from the job's own records.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fio.h"
#include "optgroup.h"
#include "verify.h"

#include "nvmeof.h"
#include "tid.h"
#include "topo.h"
#include "qmap.h"

#define MAX_QUEUES_PER_JOB 8   /* controllers a job may use */
#define MAX_QPAIRS 16           /* I/O queue pairs a job may drive on one controller */
/* qpairs=0: one queue pair per CPU the job may run on, at most this many, so
 * that 16 unpinned jobs still fit the 64 I/O queues asked by default. */
#define AUTO_QPAIRS_MAX 4
enum { QSEL_CPU, QSEL_RR };

struct eng_opts {
	void *pad; /* fio keeps the thread_data pointer here */
	char *traddr, *trsvcid, *subnqn, *hostnqn, *hostid, *src_addr, *hca;
	unsigned int wait_mode;
	unsigned int ns, qd_limit, kato_ms, cmd_timeout_ms, connect_timeout_ms, in_capsule, spin_us;
	unsigned int reconnect_delay_ms, ctrl_loss_tmo_ms;
	unsigned int qpairs, num_io_queues, delay_cmd_submit, qpair_select;
	int gpu;
	unsigned int gpu_copy, gpu_flush;
};

static struct fio_option options[] = {
	{.name = "traddr", .lname = "target address", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, traddr),
	 .help = "NVMe/RDMA target address (the filename's traddr= wins)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "trsvcid", .lname = "target port", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, trsvcid), .def = "4420",
	 .help = "Target port (default 4420)", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "subnqn", .lname = "subsystem NQN", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, subnqn),
	 .help = "Subsystem NQN (in a filename, escape ':' as '\\:')",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "ns", .lname = "namespace ID", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, ns), .def = "1", .minval = 1,
	 .help = "Namespace ID (default 1)", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "hostnqn", .lname = "host NQN", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, hostnqn),
	 .help = "Host NQN (default /etc/nvme/hostnqn, else one per process)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "hostid", .lname = "host ID", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, hostid),
	 .help = "Host ID, a UUID (default /etc/nvme/hostid, else one per process)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "src_addr", .lname = "source address", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, src_addr),
	 .help = "Local address to connect from: chooses the HCA (PCIe locality)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "gpu", .lname = "GPU buffers", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, gpu), .def = "-1", .minval = -1,
	 .help = "Place the job's I/O buffers in this CUDA GPU's memory (-1: host memory); "
		 "fio never touches them, so CPU-side verify needs gpu_copy=1",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "gpu_copy", .lname = "GPU copy verify mode", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, gpu_copy), .def = "0",
	 .help = "With gpu=: copy each buffer between fio's host memory and the GPU so fio can "
		 "fill and verify it. A correctness mode, NOT the zero-copy path",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "gpu_flush", .lname = "flush GPUDirect writes", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, gpu_flush), .def = "1",
	 .help = "With gpu=: cuFlushGPUDirectRDMAWrites once per batch of completed reads, "
		 "as a GPU consumer must before reading the data",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "hca", .lname = "expected HCA", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, hca),
	 .help = "Fail the job unless the connection resolved to this ibverbs device (e.g. mlx5_0)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "qd_limit", .lname = "queue depth limit", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, qd_limit), .def = "0",
	 .help = "Most NVMe commands in flight on the job's queue (0: iodepth times the MDTS split)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "kato", .lname = "keep-alive timeout", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, kato_ms), .def = "0",
	 .help = "Keep-alive timeout in ms (0: none)", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "reconnect_delay", .lname = "reconnect delay", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, reconnect_delay_ms), .def = "0",
	 .help = "After a connection loss, reconnect every this many ms while I/O waits (0: fail at once)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "ctrl_loss_tmo", .lname = "controller loss timeout", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, ctrl_loss_tmo_ms), .def = "60000",
	 .help = "With reconnect_delay, give up and fail waiting I/O after this many ms",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "cmd_timeout", .lname = "command timeout", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, cmd_timeout_ms), .def = "30000", .minval = 1,
	 .help = "Per-command timeout in ms", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "connect_timeout", .lname = "connect timeout", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, connect_timeout_ms), .def = "3000", .minval = 1,
	 .help = "Timeout in ms of each connection step", .category = FIO_OPT_C_ENGINE,
	 .group = FIO_OPT_G_INVALID},
	{.name = "in_capsule", .lname = "in-capsule data", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, in_capsule), .def = "1",
	 .help = "Send small writes inside the command capsule when the target allows",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "wait", .lname = "completion wait", .type = FIO_OPT_STR,
	 .off1 = offsetof(struct eng_opts, wait_mode), .def = "hybrid",
	 .help = "How to wait for completions",
	 .posval = {{.ival = "hybrid", .oval = NVMEOF_WAIT_HYBRID, .help = "spin spin_us, then sleep"},
		    {.ival = "poll", .oval = NVMEOF_WAIT_POLL, .help = "busy-poll: lowest latency, one core"},
		    {.ival = "sleep", .oval = NVMEOF_WAIT_SLEEP, .help = "sleep on the completion channel"}},
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "qpairs", .lname = "queue pairs per job", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, qpairs), .def = "0", .minval = 0, .maxval = MAX_QPAIRS,
	 .help = "I/O queue pairs this job drives on each controller, sharing one completion "
		 "queue (a poll group); iodepth is the job's total. 0: one per CPU the job may "
		 "run on, at most 4, iodepth, and its part of the queues granted; 1: one per job, the unit "
		 "of a queue-pair scaling sweep",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "qpair_select", .lname = "queue pair selection", .type = FIO_OPT_STR,
	 .off1 = offsetof(struct eng_opts, qpair_select), .def = "cpu",
	 .help = "How a job with several queue pairs picks one for each command",
	 .posval = {{.ival = "cpu", .oval = QSEL_CPU,
		     .help = "the queue pair of the CPU that submits it, as blk-mq maps a CPU to a queue "
			     "(each sized for the whole iodepth; a job that stays on one CPU uses its "
			     "queue pairs only)"},
		    {.ival = "rr", .oval = QSEL_RR, .help = "round-robin, as SPDK perf spreads -P"}},
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "num_io_queues", .lname = "I/O queues asked of the controller", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, num_io_queues), .def = "64", .minval = 1, .maxval = 65535,
	 .help = "Number of I/O queues asked of the controller (Set Features Number of Queues)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "delay_cmd_submit", .lname = "coalesce doorbells", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, delay_cmd_submit), .def = "1",
	 .help = "While commands are in flight, ring the doorbell for newly committed ones at "
		 "the next getevents, once for all (SPDK's delay_cmd_submit); an idle queue pair "
		 "rings at once",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "spin_us", .lname = "spin before sleeping", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, spin_us), .def = "20",
	 .help = "With wait=hybrid, microseconds to busy-poll before sleeping",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = NULL},
};

/* ---- controllers shared by the jobs of one process ---- */

struct conn_cfg {
	struct tid t;
	char hostid[64];
	struct nvmeof_ctrl_opts o;
};

struct shared_ctrl {
	struct shared_ctrl *next;
	char key[1400];
	struct nvmeof_ctrl *c;
	int refs;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shared_ctrl *reg_head;

static void cfg_key(const struct conn_cfg *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s|%s|%s|%s|%s|%s|%u|%u|%u|%d|%d|%u|%u|%u|%u", k->t.traddr, k->t.trsvcid,
		 k->t.subnqn, k->t.hostnqn, k->hostid, k->t.srcaddr, k->o.kato_ms, k->o.cmd_timeout_ms,
		 k->o.connect_timeout_ms, k->o.in_capsule, (int)k->o.wait_mode, k->o.spin_us,
		 k->o.reconnect_delay_ms, k->o.ctrl_loss_tmo_ms, k->o.num_io_queues);
}

static struct shared_ctrl *ctrl_get(const struct conn_cfg *k, const char *want_hca)
{
	char key[sizeof(((struct shared_ctrl *)0)->key)];
	struct shared_ctrl *s;
	cfg_key(k, key, sizeof(key));
	pthread_mutex_lock(&reg_lock);
	for (s = reg_head; s; s = s->next)
		if (!strcmp(s->key, key)) {
			s->refs++;
			pthread_mutex_unlock(&reg_lock);
			return s;
		}
	s = calloc(1, sizeof(*s));
	if (!s) {
		log_err("nvmeof: out of memory\n");
		goto out;
	}
	if (nvmeof_ctrl_connect(&k->o, &s->c)) {
		log_err("nvmeof: connect to %s port %s subsystem %s: %s\n", k->t.traddr, k->t.trsvcid,
			k->t.subnqn, nvmeof_errmsg());
		goto fail;
	}
	const struct nvmeof_ctrl_info *i = nvmeof_ctrl_info(s->c);
	if (want_hca && want_hca[0] && strcmp(want_hca, i->hca)) {
		log_err("nvmeof: the connection to %s resolved to HCA %s, not the expected %s "
			"(set src_addr= to an address on %s)\n",
			k->t.traddr, i->hca, want_hca, want_hca);
		nvmeof_ctrl_close(s->c);
		goto fail;
	}
	snprintf(s->key, sizeof(s->key), "%s", key);
	s->refs = 1;
	s->next = reg_head;
	reg_head = s;
	goto out;
fail:
	free(s);
	s = NULL;
out:
	pthread_mutex_unlock(&reg_lock);
	return s;
}

/* Jobs of this process holding the controller. */
static int ctrl_sharers(struct shared_ctrl *s)
{
	pthread_mutex_lock(&reg_lock);
	int n = s->refs;
	pthread_mutex_unlock(&reg_lock);
	return n;
}

static void ctrl_put(struct shared_ctrl *s)
{
	struct shared_ctrl **pp;
	if (!s)
		return;
	pthread_mutex_lock(&reg_lock);
	if (--s->refs == 0) {
		for (pp = &reg_head; *pp; pp = &(*pp)->next)
			if (*pp == s) {
				*pp = s->next;
				break;
			}
		if (nvmeof_ctrl_close(s->c))
			log_err("nvmeof: %s\n", nvmeof_errmsg());
		free(s);
	}
	pthread_mutex_unlock(&reg_lock);
}

/* ---- per job and per file state ---- */

/* The job's queue pairs on one controller, in a poll group (of one, or several)
 * (one CQ, one completion channel) that requests are spread over. */
struct jqueue {
	struct shared_ctrl *sc;
	struct nvmeof_poll_group *group; /* polled and waited on as one */
	struct nvmeof_queue *q[MAX_QPAIRS];
	unsigned int nq, next;           /* next: the round-robin cursor */
	struct nvmeof_mr *mr;
	uint32_t dirty;                  /* queues with submissions since the last doorbell */
	uint32_t closed;                 /* queues that refused a command as disconnected */
};

struct efile {
	struct efile *next; /* the job's list: fio frees its files before cleanup */
	struct conn_cfg cfg;
	struct shared_ctrl *sc; /* held from setup or init until cleanup */
	struct jqueue *jq;
	const struct nvmeof_ns *ns;
	uint32_t nsid;
	uint8_t lbads;
	uint64_t nsze;
};

struct job;

/* A request's callback argument: engine memory, one per io_u index, that
 * outlives fio's io_u's (fio frees them before cleanup, while the library
 * may still fail parked requests back). */
struct ioctx {
	struct job *j;
	struct io_u *io_u;
};

struct job {
	struct jqueue jq[MAX_QUEUES_PER_JOB];
	int njq;
	bool have_queues;
	volatile bool closing; /* cleanup began: callbacks must not touch io_u's */
	struct efile *files;
	struct ioctx *ctx;     /* iodepth entries, by io_u->index */
	unsigned int nctx;
	struct io_u **pending; /* queued, doorbell not rung yet (iodepth entries) */
	unsigned int npending;
	unsigned int ncommitted; /* of pending, those fio committed (their doorbell is delayed) */
	struct io_u **events;
	unsigned int nevents, nreturned; /* events holds iodepth entries */
	unsigned int errors_logged;
	bool delay_cmd_submit;
	unsigned int qpair_select;
	struct qmap qmap;      /* the job's CPUs, for qpair_select=cpu */
	uint64_t term_deadline_us; /* once fio asked the job to end: give up waiting then */
	bool gpu, gpu_copy, gpu_flush;
};

static int build_cfg(struct thread_data *td, struct fio_file *f, struct conn_cfg *k, uint32_t *nsid)
{
	struct eng_opts *eo = td->eo;
	char err[320];
	memset(k, 0, sizeof(*k));
	if (tid_parse(f->file_name, &k->t, err, sizeof(err))) {
		log_err("nvmeof: filename '%s': %s\n", f->file_name, err);
		return 1;
	}
#define DEFAULT(field, opt)                                                            \
	if (!k->t.field[0] && (opt))                                                   \
		snprintf(k->t.field, sizeof(k->t.field), "%s", (opt));
	DEFAULT(traddr, eo->traddr);
	DEFAULT(trsvcid, eo->trsvcid);
	DEFAULT(subnqn, eo->subnqn);
	DEFAULT(hostnqn, eo->hostnqn);
	DEFAULT(srcaddr, eo->src_addr);
#undef DEFAULT
	if (!k->t.trsvcid[0])
		snprintf(k->t.trsvcid, sizeof(k->t.trsvcid), "4420");
	*nsid = k->t.nsid ? k->t.nsid : eo->ns;
	if (!k->t.traddr[0] || !k->t.subnqn[0]) {
		log_err("nvmeof: filename '%s': no %s (put traddr= and subnqn= in the filename or as options)\n",
			f->file_name, !k->t.traddr[0] ? "traddr" : "subnqn");
		return 1;
	}
	if (eo->hostid)
		snprintf(k->hostid, sizeof(k->hostid), "%s", eo->hostid);
	nvmeof_ctrl_opts_init(&k->o);
	k->o.traddr = k->t.traddr;
	k->o.trsvcid = k->t.trsvcid;
	k->o.subnqn = k->t.subnqn;
	k->o.hostnqn = k->t.hostnqn[0] ? k->t.hostnqn : NULL;
	k->o.hostid = k->hostid[0] ? k->hostid : NULL;
	k->o.src_addr = k->t.srcaddr[0] ? k->t.srcaddr : NULL;
	k->o.kato_ms = eo->kato_ms;
	k->o.cmd_timeout_ms = eo->cmd_timeout_ms;
	k->o.connect_timeout_ms = eo->connect_timeout_ms;
	k->o.in_capsule = eo->in_capsule;
	k->o.spin_us = eo->spin_us;
	k->o.reconnect_delay_ms = eo->reconnect_delay_ms;
	k->o.ctrl_loss_tmo_ms = eo->ctrl_loss_tmo_ms;
	k->o.num_io_queues = eo->num_io_queues;
	k->o.wait_mode = (enum nvmeof_wait_mode)eo->wait_mode; /* fio checked it against posval */
	return 0;
}

/* The facts setup needs about a file's namespace. */
struct ns_facts {
	uint64_t nsze;
	uint8_t lbads;
};

static int facts_connected(struct thread_data *td, struct efile *ef, struct ns_facts *nf)
{
	struct eng_opts *eo = td->eo;
	if (!ef->sc && !(ef->sc = ctrl_get(&ef->cfg, eo->hca)))
		return 1;
	ef->ns = nvmeof_ns_get(ef->sc->c, ef->nsid);
	if (!ef->ns) {
		log_err("nvmeof: %s\n", nvmeof_errmsg());
		return 1;
	}
	nf->nsze = ef->ns->nsze;
	nf->lbads = ef->ns->lbads;
	return 0;
}

/* In fio's parent, before it forks the job processes: the kernel refuses
 * uverbs commands from a child on a device file its parent opened, so the
 * parent must never open one. A short-lived child connects instead and
 * reports the facts through a pipe. */
static int facts_in_child(struct thread_data *td, struct efile *ef, struct ns_facts *nf)
{
	int fd[2], status = 0;
	if (pipe(fd))
		return 1;
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		log_err("nvmeof: fork for the namespace probe: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		close(fd[0]);
		int rc = facts_connected(td, ef, nf);
		if (!rc && write(fd[1], nf, sizeof(*nf)) != (ssize_t)sizeof(*nf))
			rc = 1;
		if (ef->sc)
			ctrl_put(ef->sc);
		_exit(rc);
	}
	close(fd[1]);
	ssize_t n = read(fd[0], nf, sizeof(*nf));
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return n == (ssize_t)sizeof(*nf) && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
}

/* Learns each file's namespace and checks the job's block sizes and
 * offsets against it. With connect, holds the controller (shared in thread
 * mode) for init. Idempotent. */
static int attach_files(struct thread_data *td, bool connect)
{
	struct fio_file *f;
	unsigned int i;
	for_each_file(td, f, i) {
		struct efile *ef = FILE_ENG_DATA(f);
		struct ns_facts nf;
		if (!ef) {
			struct job *j = td->io_ops_data;
			ef = calloc(1, sizeof(*ef));
			if (!ef)
				return 1;
			ef->next = j->files;
			j->files = ef;
			FILE_SET_ENG_DATA(f, ef);
			if (build_cfg(td, f, &ef->cfg, &ef->nsid))
				return 1;
		}
		if (ef->sc)
			continue;
		if (connect ? facts_connected(td, ef, &nf) : facts_in_child(td, ef, &nf))
			return 1;
		ef->lbads = nf.lbads;
		ef->nsze = nf.nsze;
		uint32_t lba = 1u << nf.lbads;
		for (int d = DDIR_READ; d < DDIR_RWDIR_CNT; d++) {
			if (!(td->o.td_ddir & (1 << d)) && !(d == DDIR_TRIM && td_trim(td)))
				continue;
			if (td->o.min_bs[d] % lba || td->o.max_bs[d] % lba || td->o.bs[d] % lba ||
			    (td->o.ba[d] && td->o.ba[d] % lba)) {
				log_err("nvmeof: block size %llu (min %llu, max %llu, align %llu) is not a "
					"multiple of namespace %u's %u-byte LBA\n",
					td->o.bs[d], td->o.min_bs[d], td->o.max_bs[d], td->o.ba[d], ef->nsid, lba);
				return 1;
			}
		}
		uint64_t size = ef->nsze << ef->lbads;
		if (td->o.start_offset >= size || td->o.start_offset % lba) {
			log_err("nvmeof: offset %llu is %s namespace %u (%llu bytes, %u-byte LBAs)\n",
				(unsigned long long)td->o.start_offset,
				td->o.start_offset >= size ? "past the end of" : "not LBA-aligned in", ef->nsid,
				(unsigned long long)size, lba);
			return 1;
		}
		f->real_file_size = size;
		f->filetype = FIO_TYPE_BLOCK;
		fio_file_set_size_known(f);
	}
	return 0;
}

/* From the job's list, not fio's files: at cleanup fio has freed those. */
static void detach_files(struct job *j)
{
	struct efile *ef, *next;
	for (ef = j->files; ef; ef = next) {
		next = ef->next;
		if (ef->sc)
			ctrl_put(ef->sc);
		free(ef);
	}
	j->files = NULL;
}

/* qpairs=0: one queue pair per CPU the job may run on, at most
 * AUTO_QPAIRS_MAX and at most iodepth, and no more than the job's part of
 * the queues the controller granted: fio sets up every job of a process
 * (create_serialize) before any starts, so the jobs sharing a controller
 * are all counted here and each keeps at least one. With one command in
 * flight a second queue pair has nothing to carry, and on the test bed it
 * cost QD1 a sixth of its IOPS: the submitting CPU's queue keeps the
 * target's work on the CPU where the job waits for it. */
static unsigned int auto_qpairs(struct thread_data *td, const struct job *j, struct shared_ctrl *sc,
				const struct nvmeof_ctrl_info *ci)
{
	unsigned int n = j->qmap.ncpu < AUTO_QPAIRS_MAX ? j->qmap.ncpu : AUTO_QPAIRS_MAX;
	if (n > td->o.iodepth)
		n = td->o.iodepth;
	int sharers = ctrl_sharers(sc);
	unsigned int part = sharers > 0 ? ci->max_io_queues / (unsigned int)sharers : ci->max_io_queues;
	if (n > part) {
		log_info("nvmeof: job %s (%d): %u queue pair(s), not %u: the controller granted %u I/O "
			 "queue(s) to %d job(s)\n", td->o.name, td->thread_number, part ? part : 1, n,
			 ci->max_io_queues, sharers);
		n = part;
	}
	return n ? n : 1;
}

/* The CPUs this job's thread may run on: fio has applied cpus_allowed and
 * cpumask by the time it initializes the engine. */
static void job_cpus(struct job *j)
{
	cpu_set_t set;
	int cpus[QMAP_CPUS];
	unsigned int n = 0;
	if (!sched_getaffinity(0, sizeof(set), &set))
		for (int c = 0; c < QMAP_CPUS && c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[n++] = c;
	qmap_init(&j->qmap, cpus, n);
}

static struct job *job_of(struct thread_data *td)
{
	if (!td->io_ops_data)
		td->io_ops_data = calloc(1, sizeof(struct job));
	return td->io_ops_data;
}

static int fio_nvmeof_setup(struct thread_data *td)
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
	return attach_files(td, td->o.use_thread || j->have_queues);
}

static int fio_nvmeof_init(struct thread_data *td)
{
	struct eng_opts *eo = td->eo;
	struct job *j = job_of(td);
	struct fio_file *f;
	unsigned int i;
	if (!j || attach_files(td, true))
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
	job_cpus(j);
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
			/* Enough slots for iodepth requests even when each is split
			 * at MDTS, so fio's iodepth is what is on the wire. */
			const struct nvmeof_ctrl_info *ci = nvmeof_ctrl_info(ef->sc->c);
			uint64_t per = ci->max_xfer ? (td->o.max_bs[DDIR_READ] > td->o.max_bs[DDIR_WRITE]
							   ? td->o.max_bs[DDIR_READ] : td->o.max_bs[DDIR_WRITE]) : 0;
			per = ci->max_xfer && per ? (per + ci->max_xfer - 1) / ci->max_xfer : 1;
			/* iodepth is the job's total: round-robin gives each queue
			 * pair its share; by CPU, one CPU may send all of it to
			 * its own queue pair */
			unsigned int nq = eo->qpairs ? eo->qpairs : auto_qpairs(td, j, ef->sc, ci);
			uint64_t share = j->qpair_select == QSEL_CPU ? qmap_depth(&j->qmap, nq, td->o.iodepth)
				: ((uint64_t)td->o.iodepth + nq - 1) / nq;
			uint64_t depth = share * (per ? per : 1);
			if (eo->qd_limit && depth > eo->qd_limit)
				depth = eo->qd_limit;
			if (depth > 1024)
				depth = 1024;
			struct jqueue *jq = &j->jq[k];
			jq->sc = ef->sc;
			j->njq++;
			if (nvmeof_poll_group_create(ef->sc->c, nq, &jq->group)) {
				log_err("nvmeof: %s\n", nvmeof_errmsg());
				return 1;
			}
			struct nvmeof_queue_opts qo;
			nvmeof_queue_opts_init(&qo);
			qo.depth = (uint32_t)depth;
			qo.batch = true;
			qo.group = jq->group;
			for (unsigned int n = 0; n < nq; n++) {
				int r = nvmeof_queue_create(ef->sc->c, &qo, &jq->q[n]);
				if (r == NVMEOF_EBUSY && !eo->qpairs && n > 0) {
					/* qpairs=0 asked for none in particular: take what is left */
					log_info("nvmeof: job %s (%d): %u queue pair(s) of %u wanted: %s\n",
						 td->o.name, td->thread_number, n, nq, nvmeof_errmsg());
					break;
				}
				if (r) {
					log_err("nvmeof: queue pair %u of %u (qpairs=%u, num_io_queues=%u): %s\n",
						n + 1, nq, nq, eo->num_io_queues, nvmeof_errmsg());
					return 1;
				}
				jq->nq++;
				/* Which controller and queue each job got: shared
				 * controllers show as one CNTLID with several queues. */
				log_info("nvmeof: job %s (%d): %s: controller CNTLID %u, I/O queue %u, depth %u%s\n",
					 td->o.name, td->thread_number, ef->cfg.t.subnqn, ci->cntlid,
					 nvmeof_queue_qid(jq->q[n]), nvmeof_queue_depth(jq->q[n]),
					 nq > 1 ? ", in the job's poll group" : "");
			}
		}
		ef->jq = &j->jq[k];
	}
	j->have_queues = true;
	return 0;
}

/* fio's I/O buffers exist now: register them once per controller, or, with
 * gpu=, give the job a GPU region of the same size that io_u offsets map
 * into (fio's host buffers then only serve gpu_copy). */
static int fio_nvmeof_post_init(struct thread_data *td)
{
	struct eng_opts *eo = td->eo;
	struct job *j = td->io_ops_data;
	if (!td->orig_buffer)
		return 0;
	for (int k = 0; k < j->njq; k++) {
		struct nvmeof_ctrl *c = j->jq[k].sc->c;
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
		log_info("nvmeof: %zu bytes of GPU %d memory registered (%s)%s; %s\n", td->orig_buffer_size,
			 eo->gpu, nvmeof_mr_cuda_registration(j->jq[k].mr),
			 eo->gpu_copy ? ", gpu_copy: copies through the host, not zero-copy" : "", line);
	}
	j->gpu = eo->gpu >= 0;
	j->gpu_copy = eo->gpu >= 0 && eo->gpu_copy;
	j->gpu_flush = eo->gpu >= 0 && (eo->gpu_flush || eo->gpu_copy);
	return 0;
}

static void fio_nvmeof_cleanup(struct thread_data *td)
{
	struct job *j = td->io_ops_data;
	if (!j)
		return;
	/* Requests still in the library (parked for a reconnect when fio gave
	 * up waiting) fail back through done_cb at queue destroy: their io_u's
	 * may be freed already, so the callbacks must leave them alone. */
	j->closing = true;
	for (int k = 0; k < j->njq; k++) {
		for (unsigned int n = 0; n < j->jq[k].nq; n++) {
			struct nvmeof_queue *q = j->jq[k].q[n];
			struct nvmeof_queue_stats st;
			uint32_t left = nvmeof_queue_inflight(q);
			if (left)
				log_info("nvmeof: queue %u: %u request(s) still waiting when the job ended "
					 "were abandoned\n", nvmeof_queue_qid(q), left);
			nvmeof_queue_stats(q, &st);
			/* what a run cost on the wire: commands per doorbell shows the
			 * batching, sleeps the waits that went to the completion channel */
			log_info("nvmeof: queue %u: %llu command(s), %llu doorbell(s), %llu sleep(s)\n",
				 nvmeof_queue_qid(q), (unsigned long long)st.cmds,
				 (unsigned long long)st.doorbells, (unsigned long long)st.sleeps);
			if (st.reconnects)
				log_info("nvmeof: queue %u reconnected %llu time(s), longest outage %llu ms\n",
					 nvmeof_queue_qid(q), (unsigned long long)st.reconnects,
					 (unsigned long long)st.outage_ms_max);
			if (st.timeouts)
				log_info("nvmeof: queue %u: %llu command(s) timed out\n", nvmeof_queue_qid(q),
					 (unsigned long long)st.timeouts);
			if (st.retries)
				log_info("nvmeof: queue %u: %llu command(s) retried\n", nvmeof_queue_qid(q),
					 (unsigned long long)st.retries);
			nvmeof_queue_destroy(q);
		}
		if (j->jq[k].group)
			nvmeof_poll_group_destroy(j->jq[k].group);
		if (j->jq[k].mr)
			nvmeof_mr_release(j->jq[k].mr);
	}
	detach_files(j);
	free(j->events);
	free(j->pending);
	free(j->ctx);
	free(j);
	td->io_ops_data = NULL;
}

static void log_io_error(struct job *j, const char *what, const char *detail)
{
	/* fio reports each failed io_u itself; say why, a bounded number of times */
	if (j->errors_logged++ < 8)
		log_err("nvmeof: %s: %s\n", what, detail);
}

static void done_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct ioctx *x = arg;
	struct job *j = x->j;
	if (j->closing)
		return;
	struct io_u *io_u = x->io_u;
	if (cpl->err) {
		char buf[160];
		io_u->error = cpl->err == NVMEOF_ETIMEDOUT ? ETIMEDOUT : EIO;
		log_io_error(j, io_ddir_name(io_u->ddir), nvmeof_cpl_str(cpl, buf, sizeof(buf)));
	}
	j->events[j->nevents++] = io_u;
}

/* One request on queue pair q. */
static int submit_on(struct nvmeof_queue *q, struct jqueue *jq, struct efile *ef, struct io_u *io_u,
		     struct ioctx *x, uint64_t slba, uint32_t nlb, size_t off)
{
	switch (io_u->ddir) {
	case DDIR_READ:
		return nvmeof_read(q, ef->ns, slba, nlb, jq->mr, off, done_cb, x);
	case DDIR_WRITE:
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
	if (j->qpair_select == QSEL_CPU && jq->nq > 1)
		jq->next = qmap_pick(&j->qmap, sched_getcpu(), jq->nq);
	uint32_t tried = jq->closed;
	for (unsigned int n; (n = qmap_open(tried, jq->next, jq->nq)) < jq->nq;) {
		jq->next = n + 1 == jq->nq ? 0 : n + 1;
		tried |= 1u << n;
		rc = submit_on(jq->q[n], jq, ef, io_u, x, slba, nlb, off);
		if (!rc)
			jq->dirty |= 1u << n;
		if (rc == NVMEOF_ECLOSED && jq->nq > 1) {
			jq->closed |= 1u << n;
			log_err("nvmeof: queue pair %u of %u: %s; its commands go to the others\n", n + 1,
				jq->nq, nvmeof_errmsg());
		}
		if (rc != NVMEOF_EQFULL && rc != NVMEOF_ECLOSED)
			break;
	}
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
			if (jq->dirty & (1u << qi)) {
				jq->dirty &= ~(1u << qi);
				if (nvmeof_queue_commit(jq->q[qi]))
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

/* Requests of one controller's queue pairs submitted and not completed. */
static uint32_t jq_inflight(const struct jqueue *jq)
{
	uint32_t n = 0;
	for (unsigned int i = 0; i < jq->nq; i++)
		n += nvmeof_queue_inflight(jq->q[i]);
	return n;
}

/* Commands of this job on the wire: submitted, not completed, not pending. */
static bool wire_busy(const struct job *j)
{
	uint32_t n = 0;
	for (int k = 0; k < j->njq; k++)
		n += jq_inflight(&j->jq[k]);
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

/* Most commands whose doorbell waits for gathered events to be handed out. */
#define RING_BATCH 16

/* Once the job should end (its runtime is over, or fio was told to stop),
 * I/O that has not completed within this long, e.g. parked while the
 * target is away, is abandoned: cleanup fails it. Healthy I/O completes
 * well within it. */
#define END_GRACE_MS 3000
/* Longest single sleep, so a wait notices fio ending the job. */
#define SLICE_MS 100
/* With several queues in flight, the sleep on each in turn. */
#define MULTI_SLICE_MS 1

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* One non-blocking pass over every queue; the last error, if any. */
static int poll_all(struct job *j)
{
	int err = 0;
	for (int k = 0; k < j->njq; k++) {
		struct jqueue *jq = &j->jq[k];
		int r = nvmeof_poll_group_poll(jq->group, 0);
		if (r < 0)
			err = r;
	}
	return err;
}

/* One controller's queue pairs: the poll group's wait covers them all. */
static int jq_wait(struct jqueue *jq, unsigned int need, int ms)
{
	return nvmeof_poll_group_wait(jq->group, need, ms);
}

/* Sleeps up to ms for completions on the job's queues, as the wait mode
 * says. With one queue the library's own wait does it all. With several,
 * sleep on the one queue that has requests, or on each busy queue in turn
 * for a short slice. A controller's queue pairs (qpairs=) share a poll
 * group, waited on as one. Returns 0, or a negative error. */
static int sleep_on_queues(struct job *j, unsigned int need, int ms)
{
	static __thread int turn;
	if (j->njq == 1) {
		int r = jq_wait(&j->jq[0], need, ms);
		return r < 0 ? r : 0;
	}
	int busy = 0, pick = -1;
	for (int i = 0; i < j->njq; i++) {
		int k = (turn + i) % j->njq;
		if (jq_inflight(&j->jq[k])) {
			if (pick < 0)
				pick = k;
			busy++;
		}
	}
	if (pick < 0)
		return 0; /* nothing in flight: nothing to wait for */
	turn = pick + 1;
	int r = jq_wait(&j->jq[pick], 1, busy == 1 ? ms : (ms < MULTI_SLICE_MS ? ms : MULTI_SLICE_MS));
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

/* Waits until min events are in, fio's timeout t (NULL: none) passes, or
 * fio ended the job and END_GRACE_MS passed. The spinning and sleeping per
 * wait= is the library's (its one wait policy: core/wait.c); the engine
 * only hands it fio's deadline, in slices so the end of a job is seen. */
static int wait_events(struct thread_data *td, struct job *j, unsigned int min, const struct timespec *t)
{
	uint64_t now = mono_us();
	uint64_t deadline = t ? now + (uint64_t)t->tv_sec * 1000000u + (uint64_t)t->tv_nsec / 1000u : UINT64_MAX;
	for (;;) {
		int rc = poll_all(j);
		if (rc < 0)
			return rc;
		if (j->nevents >= min)
			return 0;
		now = mono_us();
		if (!j->term_deadline_us && job_ending(td))
			j->term_deadline_us = now + END_GRACE_MS * 1000u;
		uint64_t until = deadline;
		if (j->term_deadline_us && j->term_deadline_us < until)
			until = j->term_deadline_us;
		if (now >= until)
			return 0;
		uint64_t left_ms = (until - now + 999) / 1000;
		if ((rc = sleep_on_queues(j, min - j->nevents, left_ms < SLICE_MS ? (int)left_ms : SLICE_MS)))
			return rc;
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
	if ((!min || j->nevents < min) && wait_events(td, j, min, t) < 0 && j->nevents < min) {
		log_err("nvmeof: %s\n", nvmeof_errmsg());
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

static int fio_nvmeof_open_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

static int fio_nvmeof_close_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

static int fio_nvmeof_get_file_size(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	return fio_file_size_known(f) ? 0 : 1;
}

struct ioengine_ops ioengine = {
	.name = "nvmeof",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_RAWIO | FIO_NOEXTEND | FIO_NODISKUTIL | FIO_DISKLESSIO | FIO_ASYNCIO_SETS_ISSUE_TIME,
	.setup = fio_nvmeof_setup,
	.init = fio_nvmeof_init,
	.post_init = fio_nvmeof_post_init,
	.queue = fio_nvmeof_queue,
	.commit = fio_nvmeof_commit,
	.getevents = fio_nvmeof_getevents,
	.event = fio_nvmeof_event,
	.cleanup = fio_nvmeof_cleanup,
	.open_file = fio_nvmeof_open_file,
	.close_file = fio_nvmeof_close_file,
	.get_file_size = fio_nvmeof_get_file_size,
	.option_struct_size = sizeof(struct eng_opts),
	.options = options,
};
