/*
 * The inside of the fio engine, shared by the files that each do one part.
 * Each file calls only those above it in this list (tests/unit/layers.sh):
 *   log.c         where the engine's informational lines go (fio's log, or
 *                 stderr beside machine-readable output), verbose=1's trace
 *   ctrl_share.c  the controllers the jobs of one process share
 *   options.c     fio's option table, and a job's options as library options
 *   probe.c       a file's namespace facts, in a short-lived child in fio's parent
 *   zones.c       fio's zone hooks (zonemode=zbd), Zone Append's check of
 *                 where each write landed, FDP's placement identifiers
 *   files.c       a job's files: namespace, block-size checks, controller held
 *   paths.c       a file with several paths: their controllers, the
 *                 multipath and its queues, the end-of-job lines per path
 *   qplan.c       qpairs_shared=: what cannot share; each job's pair and
 *                 the pairs' depths, planned at setup
 *   qshare.c      qpairs_shared=: queue pairs the process's jobs share
 *   qwait.c       qpairs_shared=: completions polled, handed to their jobs,
 *                 waited for
 *   qpairs.c      a job's queue pairs on one controller: how many, how deep,
 *                 their end-of-job statistics
 *   iomem.c       a job's I/O memory (fio's iomem_alloc): on a NUMA node, huge
 *                 pages, GPU memory; registered once per controller; the
 *                 job's placement line
 *   job.c         a job's life: setup, init, cleanup
 *   reap.c        gathering completions until fio's deadline: the library's
 *                 wait does the spinning and sleeping
 *   fio_nvmeof.c  the ops table, queue, commit (doorbells), getevents, event
 * Only nvmeof.h of the core is used: the engine is a library user.
 */
#ifndef NVMEOF_ENGINE_H
#define NVMEOF_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "fio.h"

/* fio 3.42 renamed in_ramp_time() to in_ramp_period() (the same test: is
 * the job still in its ramp?). The Makefile reads which one the fio source
 * declares (fio_time.h) and says so with NVMEOF_FIO_IN_RAMP_PERIOD. */
#ifdef NVMEOF_FIO_IN_RAMP_PERIOD
#define in_ramp_time in_ramp_period
#endif

#include "nvmeof.h"
#include "hring.h"
#include "optval.h"
#include "qmap.h"
#include "tid.h"

#define MAX_QUEUES_PER_JOB 8   /* controllers a job may use */
#define MAX_QPAIRS 64           /* I/O queue pairs a job may drive on one controller (a poll group's
                                 * most, and the bits of jqueue's masks) */
#define DEPTH_MAX 1024          /* the most commands one queue pair is made to hold */
enum { QSEL_CPU, QSEL_RR };

/* ---- log.c ---- */
/* An informational line (what a job got, what it cost): fio's log with
 * its normal output, else stderr, so JSON and terse output stay whole. */
/* "nvmeof: engine VERSION (commit C), built for fio-X", once per process (fiover.c) */
void eng_say_version(void);
void eng_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* quiet=1: the calling thread's job prints no eng_info line but its one
 * summary line at the end (eng_summary); failures (eng_err) are unchanged.
 * Set from the job's options at each engine callback that prints. */
extern __thread bool eng_quiet;
void eng_summary(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define ENG_QUIET_OPTION                                                                                       \
	{.name = "quiet", .lname = "one line per job", .type = FIO_OPT_BOOL,                                   \
	 .off1 = offsetof(struct eng_opts, quiet), .def = "0",                                                 \
	 .help = "Print only failures and one summary line per job at its end (queue pairs, commands, "        \
		 "doorbells, reconnects, timeouts) instead of the start, placement and per-queue lines",       \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID}
/* An error line, through fio's log_err. Both cut out any secret (a DHHC-1
 * or NVMeTLSkey-1 word) a message echoes from a job's options. */
void eng_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What a message may echo of an option's value that is a number, a time or
 * a name: the value, or a placeholder when it may be a secret (its prefix,
 * or longer than any legal value, as a secret's body is). */
#define ENG_SHOWN_MAX 32
const char *eng_shown(const char *v);
/* verbose=1: the library's trace hook (nvmeof_ctrl_opts.trace), one line
 * per connection step; arg is the struct eng_trace of the controller. */
struct eng_trace {
	uint64_t t0_ns; /* when the engine began connecting: steps show time since */
	char who[300];  /* traddr and subsystem, to tell controllers apart */
	bool verbose;   /* verbose=1: each step is logged; else only remembered */
	pthread_mutex_t lock; /* the last step, for a slow connect's note */
	char last[200];
	uint16_t last_qid;
	bool stepped;
};
/* The library's trace hook of every shared controller: remembers the step,
 * and logs it with verbose=1. */
void eng_trace_line(void *arg, uint16_t qid, uint64_t time_ns, const char *msg);
/* A connect that takes longer than ENG_SLOW_MS says once, on stderr, what
 * it is waiting for (the step after steps' last) and how long it may still
 * take (eng_connect_bound_ms(o) from begin, at most): a thread that waits for end. */
#define ENG_SLOW_MS 2000
struct eng_slow {
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done, running, tcp;
	uint32_t step_ms;
	uint64_t t0_ms, bound_ms;
	struct eng_trace *steps;
	char what[400];
};
void eng_slow_begin(struct eng_slow *w, struct eng_trace *steps, const struct nvmeof_ctrl_opts *o, const char *what);
void eng_slow_end(struct eng_slow *w);
/* The longest a connect under o may take, tries and backoffs included. */
uint64_t eng_connect_bound_ms(const struct nvmeof_ctrl_opts *o);
/* A failure the engine reported (it logged why) as fio's job error, as
 * fio's own engines do: its JSON "error", terse output and exit status
 * then say the job failed. err: an errno; what: the step. Returns 1. */
#define eng_fail(td, err, what) ({ td_verror((td), (err), (what)); 1; })
/* The errno closest to a library error code. */
int eng_errno(int nvmeof_rc);

/* ---- ctrl_share.c ---- */
/* What a controller is connected with: the filename's transport ID and the
 * library's options (pointing into t and hostid). */
struct conn_cfg {
	struct tid t;
	char hostid[64];
	/* DH-HMAC-CHAP secrets (DHHC-1:XX:<base64>:, at most 103 bytes), from
	 * the option or its _file form, held only until the connects that need
	 * them are done (cfg_secrets_wipe); secrets_gone: they were held and
	 * are wiped. What the secrets were stays as their SHA-256, all that
	 * sharing a controller needs (cfg_same): the library keeps the key
	 * material a controller's life needs in memory of its own. */
	char dhchap_secret[128], dhchap_ctrl_secret[128];
	char tls_key[128]; /* NVMe/TCP's TLS PSK (NVMeTLSkey-1:HH:<base64>:), held and wiped as they are */
	char tls_keyring[64]; /* keyring=: a keyring's name, not a secret */
	unsigned char secrets_sha256[32];
	bool secrets_gone;
	char dhchap_hashes[64], dhchap_dhgroups[96]; /* copies: a shared controller outlives the job */
	struct nvmeof_ctrl_opts o;
	/* the job's NVMe/TCP options, which o carries only on a TCP path
	 * where a file mixes RDMA and TCP paths (tcp_opts.c) */
	struct {
		int priority, tos;
		unsigned int busy_poll_us, zerocopy;
		bool hdr_digest, data_digest, disable_sqflow, tls, tls_compat;
		int tls_identity;
	} tcp_job;
	bool sole_subsystem; /* subnqn: the only one discovery listed (the start line says so) */
};

struct shared_ctrl {
	struct shared_ctrl *next;
	struct conn_cfg cfg;     /* its own copy: o's strings point into it */
	struct eng_trace trace;  /* the library's trace_arg */
	struct nvmeof_ctrl *c;
	int refs;
	/* qpairs_shared= (qshare.c, under its lock): planned at the jobs'
	 * setup, which fio runs for every job before any starts: the number
	 * of pairs, the jobs on each and the depth they need together */
	unsigned int qs_n, qs_planned;
	unsigned int qs_jobs[MAX_QPAIRS];
	uint64_t qs_depth[MAX_QPAIRS];
	const char *qs_first;    /* the first job's name, for a refusal */
};

/* A secret from its option (val) or its file (the first line), into out;
 * never logged. Warns when it is inline (fio's JSON lists job options) or
 * its file is readable by group or others. 0, or 1 after logging why. */
int cfg_secret(const char *val, const char *file, const char *name, char *out, size_t len);
/* Both secrets of k from their options or files (cfg_secret), their
 * pointers in k->o, and their digest. 0, or 1 after logging why. */
int cfg_secrets(struct conn_cfg *k, const char *val, const char *file, const char *ctrl_val, const char *ctrl_file);
/* Wipes k's secrets (their digest stays): k's controllers are connected,
 * or will not be. share_get then only joins a controller already open. */
void cfg_secrets_wipe(struct conn_cfg *k);
struct eng_opts;
/* The job's authentication options into k (secrets by cfg_secrets, the
 * hashes and groups offered). 0, or 1 after logging why. */
int cfg_auth(struct conn_cfg *k, const struct eng_opts *eo);
/* A filename without subnqn (SPDK's example ones): the only NVM subsystem
 * on k's transport that the discovery controller at k->t's address lists
 * goes into k->t.subnqn (0, k->sole_subsystem set); else -1 with why
 * appended to the message in why (none, several and which, or the error). */
int cfg_sole_subsystem(struct conn_cfg *k, char *why, size_t wl);
/* Two configurations open the same controller: every field equal. */
bool cfg_same(const struct conn_cfg *a, const struct conn_cfg *b);
/* The process's controller for k (connecting it on first use), or NULL
 * with the reason in err. The controller's copy of k holds no secret.
 * want_hca: fail unless it resolved to that HCA.
 * reached: a probe got through to the target, so a connect that met
 * silence is tried again (connect_retries). why: the library's code of
 * the failure. */
struct shared_ctrl *share_get(const struct conn_cfg *k, const char *want_hca, bool reached, char *err,
			      size_t len, int *why);
/* Jobs of this process holding the controller. */
int share_count(struct shared_ctrl *s);
void share_put(struct shared_ctrl *s);

/* ---- options.c ---- */
struct eng_opts {
	void *pad; /* fio keeps the thread_data pointer here */
	char *traddr, *trsvcid, *subnqn, *hostnqn, *hostid, *src_addr, *hca;
	char *dhchap_secret, *dhchap_ctrl_secret, *dhchap_secret_file, *dhchap_ctrl_secret_file;
	char *dhchap_hashes, *dhchap_dhgroups; /* what Negotiate offers; NULL: all */
	unsigned int allow_unauth_ctrl;        /* the library's allow_unauthenticated_ctrl */
	unsigned int ns, qd_limit, qpairs, delay_cmd_submit, qpair_select, iopolicy;
	int quiesce_ms;                /* -1: the library's default (nvmeof_mpath_opts_init) */
	char *path_loss;               /* "N@MS": disconnect path N MS ms into the job */
	int gpu;
	unsigned int gpu_copy, gpu_flush, verbose, quiet;
	unsigned int relaxed_ordering; /* the library's strict_ordering, inverted */
	char *numa_node;               /* "auto" or a node */
	int comp_vector;               /* -1: by locality, else spread */
	unsigned int hw_timestamps;
	int tcp_priority, tcp_tos;     /* NVMe/TCP socket options; -1: the system's */
	unsigned int tcp_busy_poll_us; /* 0: the system's */
	unsigned int tcp_zerocopy;     /* bytes: H2CData payloads this large go with MSG_ZEROCOPY; 0: none */
	unsigned int disable_sqflow;   /* NVMe/TCP: SQ flow control off, one PDU per read */
	unsigned int tls;              /* NVMe/TCP over TLS 1.3 (tls_key implies it) */
	char *tls_key, *tls_key_file;  /* its PSK, as dhchap_secret and dhchap_secret_file */
	char *keyring;                 /* the PSK from this kernel keyring instead (.nvme) */
	unsigned int tls_key_compat;   /* derive from tls_key as nvme-cli up to 2.14 (--compat) */
	unsigned int tls_identity;     /* the PSK identity's version, 0 or 1 */
	unsigned int hugepages;
	/* library options: each applies only where set has its bit (the user
	 * gave it), else the library's default (nvmeof_ctrl_opts_init) does */
	unsigned int wait_mode, kato_ms, cmd_timeout_ms, connect_timeout_ms, in_capsule, spin_us;
	unsigned int hdr_digest, data_digest; /* NVMe/TCP's digests */
	unsigned int digest_enable; /* SPDK's spelling of them: 1 + (header | data << 1); 0: not given */
	unsigned int reconnect_delay_ms, ctrl_loss_tmo_ms, num_io_queues, connect_retries;
	uint32_t set;
	unsigned int zone_append;      /* writes to a zoned namespace as Zone Append */
	unsigned int qpairs_shared;    /* 0: each job its own queue pairs; N: the process's jobs share N */
};
/* qpairs_shared=: a number read as the others are (optval.h), kept here
 * beside its table entry */
static inline int eng_set_qpairs_shared(void *data, const char *v)
{
	long long n;
	char err[400];
	if (optval_count_of("qpairs_shared", v, eng_shown(v), 0, MAX_QPAIRS, "0: each job its own queue pairs", &n,
			    err, sizeof(err)))
		return eng_err("nvmeof: %s\n", err), 1;
	((struct eng_opts *)data)->qpairs_shared = (unsigned int)n;
	return 0;
}
#define ENG_QSHARE_OPTION                                                                                      \
	{.name = "qpairs_shared", .lname = "queue pairs shared by jobs", .type = FIO_OPT_STR,                  \
	 .cb = (void *)eng_set_qpairs_shared, .def = "0",                                                      \
	 .help = "I/O queue pairs, 0 to 64, that the jobs of one process (thread=1) on one controller share: " \
		 "job k uses pair k mod N; 0: each job has its own (qpairs=)",                                 \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID}
#define ENG_ZONE_OPTIONS                                                                                       \
	{.name = "zone_append", .lname = "writes as Zone Append", .type = FIO_OPT_BOOL,                        \
	 .off1 = offsetof(struct eng_opts, zone_append), .def = "0",                                           \
	 .help = "On a zoned namespace, send each write as Zone Append to the start of its zone and fail it "  \
		 "unless the controller placed it where fio expected (at the write pointer)",                   \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID}
extern struct fio_option eng_options[];
/* The library configuration of file f: the filename's transport ID, then
 * the job's options for what it leaves out; library options the user did
 * not set keep the library's defaults. 0, or 1 after logging why. */
int eng_cfg(struct thread_data *td, struct fio_file *f, struct conn_cfg *k, uint32_t *nsid);

/* ---- probe.c ---- */
struct efile;
/* The facts setup needs about a file's namespace. What fio's parent asks
 * of the zone and placement hooks before any job connects (zonemode=zbd's
 * zone report, fdp=1's placement identifiers) is learnt here too: the
 * parent must not open a connection of its own (a child's answers it). */
struct ns_facts {
	uint64_t nsze;
	uint8_t lbads;
	uint32_t max_xfer;          /* the controller's MDTS in bytes (0: no limit) */
	struct nvmeof_zns_info zi;  /* zi.zoned false: a conventional namespace */
	uint32_t nzones;            /* zones in the report (zonemode=zbd) */
	int fdp_rc;                 /* fdp=1: 0, or the library's code (fdp_why says why) */
	uint32_t npids;             /* the placement identifiers (at most NVMEOF_RUHS_MAX) */
	uint16_t pids[NVMEOF_RUHS_MAX];
	char fdp_why[300];
};
/* Connected (holding the controller in ef->sc) or, in fio's parent before
 * it forks job processes, from a short-lived child. 0, or 1 after logging. */
int probe_ns(struct thread_data *td, struct efile *ef, bool connect, struct ns_facts *nf);
/* fn on a short-lived I/O queue of ef's controller, for a zone hook fio
 * calls before the job has queue pairs (its setup resets the zones open
 * beyond max_open_zones, in its parent): in this process when it holds the
 * controller, else in a child that connects as the probe does. fn returns
 * 0 or a positive errno after logging; so does this. */
typedef int (*probe_queue_fn)(const struct efile *ef, struct nvmeof_queue *q, void *arg);
int probe_queue_call(struct thread_data *td, struct efile *ef, probe_queue_fn fn, void *arg);

/* ---- zones.c ---- */
struct ioctx;
/* fio's hooks; the zone hooks answer from the report taken at setup until
 * the job has its queue pairs, then from the namespace. */
int zones_get_model(struct thread_data *td, struct fio_file *f, enum zbd_zoned_model *model);
int zones_report(struct thread_data *td, struct fio_file *f, uint64_t offset, struct zbd_zone *zones,
		 unsigned int nr);
int zones_reset_wp(struct thread_data *td, struct fio_file *f, uint64_t offset, uint64_t length);
int zones_max_open(struct thread_data *td, struct fio_file *f, unsigned int *max);
/* The hooks by the FIO_IOOPS_VERSION of the fio release that added them
 * (fio's ioengines.h): 32 (fio 3.34) finish_zone, fdp_fetch_ruhs and the
 * io_u's dtype and dspec; 33 (3.36) get_max_active_zones; 36 (3.38)
 * dp_type, which replaced 3.34's fdp option; 37 (3.40) move_zone_wp. */
#if FIO_IOOPS_VERSION >= 33
int zones_max_active(struct thread_data *td, struct fio_file *f, unsigned int *max);
#endif
#if FIO_IOOPS_VERSION >= 32
int zones_finish(struct thread_data *td, struct fio_file *f, uint64_t offset, uint64_t length);
int zones_fdp_ruhs(struct thread_data *td, struct fio_file *f, struct fio_ruhs_info *ruhs);
#endif
#if FIO_IOOPS_VERSION >= 36
#define ENG_DP_ANY(td) ((td)->o.dp_type != FIO_DP_NONE)
#define ENG_DP_FDP(td) ((td)->o.dp_type == FIO_DP_FDP)
#elif FIO_IOOPS_VERSION >= 32
#define ENG_DP_ANY(td) ((td)->o.fdp != 0)
#define ENG_DP_FDP(td) ((td)->o.fdp != 0)
#else
#define ENG_DP_ANY(td) false
#define ENG_DP_FDP(td) false
#endif
#if FIO_IOOPS_VERSION >= 37
int zones_move_wp(struct thread_data *td, struct fio_file *f, struct zbd_zone *z, uint64_t length,
		  const char *buf);
#endif
/* A file's zone and placement facts against the job's options: refuses
 * what cannot work (zone_append on a conventional namespace, zones or
 * placement over several paths), says the zone geometry once. 0, or 1
 * after logging why. */
int zones_check(struct thread_data *td, struct fio_file *f, struct efile *ef);
/* zonemode=zbd plain writes to a zoned namespace: one queue pair keeps their order */
bool zones_in_order(struct thread_data *td, const struct efile *ef);
/* Submits a write of io_u as Zone Append (its completion to appended) or
 * with its placement directive (to done); the library's code. */
int zones_submit(struct thread_data *td, struct nvmeof_queue *q, struct efile *ef, struct io_u *io_u,
		 struct ioctx *x, uint64_t slba, uint32_t nlb, struct nvmeof_mr *mr, size_t off, nvmeof_cb done,
		 nvmeof_cb appended);
/* A Zone Append's completion: 0 when the controller put it at the LBA fio
 * expected (the zone's write pointer when fio issued it), else 1 with why:
 * fio's offsets, and a verify, would be wrong. */
int zones_landed(const struct ioctx *x, const struct nvmeof_cpl *cpl, char *why, size_t len);

/* ---- files.c ---- */
struct jqueue;
struct efile {
	struct efile *next; /* the job's list: fio frees its files before cleanup */
	struct conn_cfg cfg;
	struct shared_ctrl *sc; /* held from setup or init until cleanup */
	struct jqueue *jq;
	const struct nvmeof_ns *ns;
	uint32_t nsid;
	uint8_t lbads;
	uint64_t nsze;
	struct ns_facts facts;      /* as probed: zones and placement identifiers */
	struct nvmeof_zone *zones;  /* facts.nzones of them, the report at setup */
	bool write_special;         /* writes go by zones_submit (Zone Append, a directive) */
	bool zone_said;             /* the zone line is out (in fio's parent, or this process) */
};
struct job;
/* Learns each file's namespace and checks the job's block sizes and offsets
 * against it; with connect, holds the controller for init. Idempotent. */
int files_attach(struct thread_data *td, struct job *j, bool connect);
/* refuses a job whose region passes its namespace's end (fio's open_file hook) */
int files_check_region(struct thread_data *td, struct fio_file *f);
/* From the job's list, not fio's files: at cleanup fio has freed those. */
void files_detach(struct job *j);
/* fio's open_file (the region check), close_file (nothing to do: init connected) and get_file_size (setup learnt it) */
int files_open(struct thread_data *td, struct fio_file *f);
int files_close(struct thread_data *td, struct fio_file *f);
int files_size(struct thread_data *td, struct fio_file *f);

/* ---- qplan.c ---- */
/* Options that cannot share (thread=0, qpairs=, gpu=), before connecting:
 * 0, or 1 after logging why. */
int qshare_check(struct thread_data *td);
/* At setup (serial, in job order): the job's pair on its controller and
 * its depth there, so that the pairs fit every job, whichever opens them;
 * what cannot share is refused here. 0, or 1 after logging why. */
int qshare_plan(struct thread_data *td, struct job *j);

/* ---- qshare.c ---- */
/* The job's pair of the process's qpairs_shared= ones on ef's controller
 * (the first job creates them). 0, or 1 after logging why. */
int qshare_open(struct thread_data *td, struct job *j, struct jqueue *jq, struct efile *ef);
/* Waits (bounded) for the job's requests on its pair, says what it sent;
 * the last job destroys the pairs. */
void qshare_close(struct job *j, struct jqueue *jq, const char *who);
/* Submitting and ringing under the pair's lock; unlock counts a submitted request. */
void qshare_lock(struct jqueue *jq);
void qshare_unlock(struct jqueue *jq, bool submitted);
int qshare_commit(struct jqueue *jq);

/* ---- qwait.c ---- */
/* done_cb's, under the pair's lock: a request of j's is done (true: the
 * job is ending, leave its io_u alone); its io_u to j's ring (true). */
bool qshare_done(struct job *j);
bool qshare_hand(struct job *j, struct io_u *io_u);
/* reap.c's: one poll (unless another job is at it) and a wait of up to
 * ms, each taking the job's handed completions into its events. */
int qshare_poll(struct job *j);
int qshare_wait(struct job *j, int ms);

/* ---- qpairs.c ---- */
/* The job's queue pairs on one controller, in a poll group (of one, or
 * several: one CQ, one completion channel) that requests are spread over. */
struct jqueue {
	struct shared_ctrl *sc;
	const struct efile *first;       /* the file that opened it (job.c: which files share it) */
	struct nvmeof_poll_group *group; /* polled and waited on as one */
	struct nvmeof_queue *q[MAX_QPAIRS];
	unsigned int nq, next;           /* next: the round-robin cursor */
	struct nvmeof_mr *mr;
	const char *vector_how;          /* why the group's completion vector */
	uint64_t dirty;                  /* queues with submissions since the last doorbell (bit n: q[n]) */
	uint64_t closed;                 /* queues that refused a command as disconnected */
	/* A filename with several paths (paths.c): their controllers (psc[0]
	 * is the file's own, sc), the multipath, a multipath queue per queue
	 * pair, fio's buffer registered on every path. */
	struct shared_ctrl *psc[TID_MAX_PATHS];
	unsigned int npaths;
	struct shared_mp *smp;           /* shared by the process's jobs on these paths */
	struct nvmeof_mpath *mp;         /* smp's */
	struct nvmeof_mpath_queue *mq[MAX_QPAIRS];
	struct nvmeof_mpath_mr *mmr;
	unsigned int loss_path;          /* path_loss=: the path (1-based; 0: none), when, done */
	uint64_t loss_ms;
	bool loss_done;
	/* qpairs_shared= (qshare.c): the pair it uses (q[0] and group are
	 * its), the job's requests on it (atomic) and commands sent */
	struct qslot *qs;
	struct qshare *qshare;
	struct qleft *qs_left;  /* made at open: what close hands the pair if requests outlive the job */
	uint32_t qs_inflight, qs_lost;  /* qs_lost: completions its full ring refused (none expected) */
	uint64_t qs_cmds, qs_naps, qs_naps_out;
};
/* The CPUs this job's thread may run on, for qpair_select=cpu. */
void qpairs_job_cpus(struct job *j);
/* Opens jq's poll group and queue pairs on ef's controller. 0, or 1 after logging. */
int qpairs_open(struct thread_data *td, struct job *j, struct jqueue *jq, struct efile *ef);
/* Destroys them, saying what each carried and anything abandoned. */
void qpairs_close(struct jqueue *jq, const char *who);
/* Requests of one controller's queue pairs submitted and not completed. */
uint32_t qpairs_inflight(const struct jqueue *jq);

/* ---- iomem.c ---- */
struct job;
/* fio's iomem_alloc: total bytes for the job's I/O buffers, after init
 * attached its controllers. 0, or 1 after logging why. */
int iomem_alloc(struct thread_data *td, size_t total);
/* fio's iomem_free, which comes before cleanup: it only lets go of
 * fio's pointer; iomem_release frees, after the queues are destroyed. */
void iomem_free(struct thread_data *td);
void iomem_release(struct job *j);
/* ---- paths.c ---- */
/* The job's multipath queues over every path of ef's filename (qpairs= of
 * them: each one a queue on every path). 0, or 1 after logging. */
int paths_open(struct thread_data *td, struct job *j, struct jqueue *jq, struct efile *ef, unsigned int nq,
	       uint32_t depth);
/* Per path at the end of the job: address, HCA, ANA state and changes,
 * commands carried, failovers; then everything is released. */
void paths_close(struct jqueue *jq, const char *who);
/* path_loss=: disconnects the path's queues once the job has run that
 * long (called from every getevents). */
void paths_inject(struct thread_data *td, struct job *j);

/* ---- job.c ---- */
/* A request's callback argument: engine memory, one per io_u index, that
 * outlives fio's io_u's (fio frees them before cleanup, while the library
 * may still fail parked requests back). */
struct ioctx {
	struct job *j;
	struct io_u *io_u;
	uint64_t slba; /* a Zone Append's: where fio expects it to land */
};
struct job {
	struct job *held_prev, *held_next; /* job.c's list of the records it holds */
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
	unsigned int nevents, nreturned; /* events holds 2 x iodepth entries (job.c) */
	unsigned int errors_logged;
	struct hring handed;   /* qpairs_shared=: completions other jobs polled for this one */
	unsigned int qs_k;     /* qpairs_shared=: 1 + its place among the jobs on the controller (setup order); 0 not planned */
	bool delay_cmd_submit;
	unsigned int qpair_select;
	struct qmap qmap;      /* the job's CPUs, for qpair_select=cpu */
	uint64_t term_deadline_us; /* once fio asked the job to end: give up waiting then */
	bool gpu, gpu_copy, gpu_flush;
	void *iomem;           /* fio's I/O buffer, ours (iomem.c) */
	size_t iomem_len;
	bool iomem_huge;
	int mem_node;          /* where the kernel put it, -1 unknown */
};
int job_setup(struct thread_data *td);
int job_init(struct thread_data *td);
void job_cleanup(struct thread_data *td);

/* ---- reap.c ---- */
/* Waits until min events are in, fio's timeout t (NULL: none) passes, or
 * fio ended the job and a grace period passed. 0, or a negative error. */
int reap_wait(struct thread_data *td, struct job *j, unsigned int min, const struct timespec *t);

/* Microseconds on the monotonic clock, for the engine's wait bounds. */
static inline uint64_t eng_mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#endif
