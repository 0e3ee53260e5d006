/* fio's option table of the engine, and a job's options turned into the
 * library's configuration of a controller.
 *
 * The library's nvmeof_ctrl_opts_init is the one source of defaults. The
 * options the library owns have no .def here, so fio calls their callback
 * only for a value the user gave: the callback records it in eo->set, and
 * eng_cfg overrides exactly those. Their help text is completed at load
 * time with the library's default, so `fio --enghelp` shows it. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "optgroup.h"

enum { H_TRSVCID, H_KATO, H_RECONNECT_DELAY, H_CTRL_LOSS_TMO, H_CMD_TIMEOUT, H_CONNECT_TIMEOUT,
       H_IN_CAPSULE, H_WAIT, H_NUM_IO_QUEUES, H_SPIN_US, H_CONNECT_RETRIES, H_N };

/* kind: 'u' uint32_t, 'b' bool, 'w' the wait mode, 's' a string (the
 * filename's transport ID takes those) */
static const struct lib_opt {
	const char *name, *help;
	size_t eo_off, co_off;
	char kind;
} lib_opts[H_N] = {
#define LIB(h, n, e, c, k, text) [h] = {n, text, offsetof(struct eng_opts, e), offsetof(struct nvmeof_ctrl_opts, c), k}
	LIB(H_TRSVCID, "trsvcid", trsvcid, trsvcid, 's', "Target port"),
	LIB(H_KATO, "kato", kato_ms, kato_ms, 'u', "Keep-alive timeout in ms (0: none)"),
	LIB(H_RECONNECT_DELAY, "reconnect_delay", reconnect_delay_ms, reconnect_delay_ms, 'u',
	    "After a connection loss, reconnect every this many ms while I/O waits (0: fail at once)"),
	LIB(H_CTRL_LOSS_TMO, "ctrl_loss_tmo", ctrl_loss_tmo_ms, ctrl_loss_tmo_ms, 'u',
	    "With reconnect_delay, give up and fail waiting I/O after this many ms"),
	LIB(H_CMD_TIMEOUT, "cmd_timeout", cmd_timeout_ms, cmd_timeout_ms, 'u', "Per-command timeout in ms"),
	LIB(H_CONNECT_TIMEOUT, "connect_timeout", connect_timeout_ms, connect_timeout_ms, 'u',
	    "Timeout in ms of each connection step"),
	LIB(H_IN_CAPSULE, "in_capsule", in_capsule, in_capsule, 'b',
	    "Send small writes inside the command capsule when the target allows"),
	LIB(H_WAIT, "wait", wait_mode, wait_mode, 'w', "How to wait for completions"),
	LIB(H_NUM_IO_QUEUES, "num_io_queues", num_io_queues, num_io_queues, 'u',
	    "Number of I/O queues asked of the controller (Set Features Number of Queues)"),
	LIB(H_SPIN_US, "spin_us", spin_us, spin_us, 'u', "With wait=hybrid, microseconds to busy-poll before sleeping"),
	LIB(H_CONNECT_RETRIES, "connect_retries", connect_retries, connect_retries, 'u',
	    "Tries after the first of a queue pair's connect, on a timeout or a busy target (0: one try)"),
#undef LIB
};
static char help_of[H_N][200];

#define SET_UINT(field, h)                                                                   \
	static int set_##field(void *data, long long *v)                                     \
	{                                                                                    \
		struct eng_opts *eo = data;                                                  \
		eo->field = (unsigned int)*v;                                                \
		eo->set |= 1u << h;                                                          \
		return 0;                                                                    \
	}
SET_UINT(kato_ms, H_KATO)
SET_UINT(reconnect_delay_ms, H_RECONNECT_DELAY)
SET_UINT(ctrl_loss_tmo_ms, H_CTRL_LOSS_TMO)
SET_UINT(cmd_timeout_ms, H_CMD_TIMEOUT)
SET_UINT(connect_timeout_ms, H_CONNECT_TIMEOUT)
SET_UINT(num_io_queues, H_NUM_IO_QUEUES)
SET_UINT(spin_us, H_SPIN_US)
SET_UINT(connect_retries, H_CONNECT_RETRIES)
#undef SET_UINT

static int set_in_capsule(void *data, int *v)
{
	struct eng_opts *eo = data;
	eo->in_capsule = (unsigned int)*v;
	eo->set |= 1u << H_IN_CAPSULE;
	return 0;
}

/* fio stores the value through off1 (posval) before it calls this */
static int set_wait_mode(void *data, const char *v)
{
	(void)v;
	((struct eng_opts *)data)->set |= 1u << H_WAIT;
	return 0;
}

struct fio_option eng_options[] = {
	{.name = "traddr", .lname = "target address", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, traddr),
	 .help = "NVMe/RDMA target address (the filename's traddr= wins)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "trsvcid", .lname = "target port", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, trsvcid), .help = help_of[H_TRSVCID], .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
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
	{.name = "dhchap_secret", .lname = "DH-HMAC-CHAP host secret", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, dhchap_secret),
	 .help = "In-band authentication: this host's secret, DHHC-1:XX:<base64>: as nvme gen-dhchap-key "
		 "makes it (default: none). fio lists job options in its JSON output: prefer dhchap_secret_file",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "dhchap_ctrl_secret", .lname = "DH-HMAC-CHAP controller secret", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, dhchap_ctrl_secret),
	 .help = "With dhchap_secret: the controller's secret, so the controller is authenticated too "
		 "(bidirectional); none by default",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "dhchap_secret_file", .lname = "DH-HMAC-CHAP host secret file", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, dhchap_secret_file),
	 .help = "A file holding dhchap_secret (its first line), which keeps the secret out of job files and ps",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "dhchap_ctrl_secret_file", .lname = "DH-HMAC-CHAP controller secret file", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, dhchap_ctrl_secret_file),
	 .help = "A file holding dhchap_ctrl_secret (its first line)",
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
	{.name = "relaxed_ordering", .lname = "PCIe relaxed ordering", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, relaxed_ordering), .def = "1",
	 .help = "Register the I/O buffers (host or GPU) with PCIe relaxed ordering "
		 "(IBV_ACCESS_RELAXED_ORDERING; HCAs without it ignore it). 0: strictly ordered",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "hw_timestamps", .lname = "NIC completion timestamps", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, hw_timestamps), .def = "0",
	 .help = "Report each queue's time from a command's send completion to its response as the NIC "
		 "clocked them (percentiles at the end of the job); needs an HCA with completion timestamps",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "comp_vector", .lname = "completion vector", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, comp_vector), .def = "-1", .minval = -1,
	 .help = "Completion vector of the job's CQs (0 to the HCA's count - 1). -1: one whose IRQ the job's "
		 "CPUs serve (/proc/irq), else spread over the vectors",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "numa_node", .lname = "I/O memory NUMA node", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, numa_node), .def = "auto",
	 .help = "NUMA node of the job's I/O memory (the engine allocates it; fio's mem= is refused): "
		 "auto: the HCA's node, else that of the job's CPUs; or a node number",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "hugepages", .lname = "I/O memory on huge pages", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, hugepages), .def = "0",
	 .help = "Put the job's I/O memory on huge pages (vm.nr_hugepages); when none are free, "
		 "say so and use normal pages",
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
	 .cb = (void *)set_kato_ms,
	 .help = help_of[H_KATO], .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "reconnect_delay", .lname = "reconnect delay", .type = FIO_OPT_INT,
	 .cb = (void *)set_reconnect_delay_ms,
	 .help = help_of[H_RECONNECT_DELAY],
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "ctrl_loss_tmo", .lname = "controller loss timeout", .type = FIO_OPT_INT,
	 .cb = (void *)set_ctrl_loss_tmo_ms,
	 .help = help_of[H_CTRL_LOSS_TMO],
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "cmd_timeout", .lname = "command timeout", .type = FIO_OPT_INT,
	 .cb = (void *)set_cmd_timeout_ms, .minval = 1,
	 .help = help_of[H_CMD_TIMEOUT], .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "connect_timeout", .lname = "connect timeout", .type = FIO_OPT_INT,
	 .cb = (void *)set_connect_timeout_ms, .minval = 1,
	 .help = help_of[H_CONNECT_TIMEOUT], .category = FIO_OPT_C_ENGINE,
	 .group = FIO_OPT_G_INVALID},
	{.name = "connect_retries", .lname = "connect retries", .type = FIO_OPT_INT,
	 .cb = (void *)set_connect_retries, .minval = 0, .maxval = 100,
	 .help = help_of[H_CONNECT_RETRIES], .category = FIO_OPT_C_ENGINE,
	 .group = FIO_OPT_G_INVALID},
	{.name = "in_capsule", .lname = "in-capsule data", .type = FIO_OPT_BOOL,
	 .cb = (void *)set_in_capsule,
	 .help = help_of[H_IN_CAPSULE],
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "wait", .lname = "completion wait", .type = FIO_OPT_STR,
	 .off1 = offsetof(struct eng_opts, wait_mode), .cb = (void *)set_wait_mode,
	 .help = help_of[H_WAIT],
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
	{.name = "iopolicy", .lname = "path selection", .type = FIO_OPT_STR,
	 .off1 = offsetof(struct eng_opts, iopolicy), .def = "queue-depth",
	 .help = "How a filename with several paths (traddr= repeated) picks one for each command",
	 .posval = {{.ival = "queue-depth", .oval = NVMEOF_IOPOLICY_QUEUE_DEPTH,
		     .help = "the path with the fewest commands outstanding (the library's default)"},
		    {.ival = "round-robin", .oval = NVMEOF_IOPOLICY_ROUND_ROBIN, .help = "each command the next path"},
		    {.ival = "numa", .oval = NVMEOF_IOPOLICY_NUMA,
		     .help = "the path whose HCA is on the submitting CPU's NUMA node"}},
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "quiesce_time", .lname = "command quiesce time", .type = FIO_OPT_INT,
	 .off1 = offsetof(struct eng_opts, quiesce_ms), .def = "-1", .minval = -1,
	 .help = "With several paths: ms a write lost with its path waits before it goes again elsewhere, where "
		 "the controller reports no Command Quiesce Time (plus three keep-alive timeouts with kato). "
		 "-1: the library's default, 1000; 0: no wait",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "path_loss", .lname = "inject a path loss", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, path_loss),
	 .help = "With several paths, N@MS: disconnect path N's queue pairs (through the transport; the target "
		 "is not touched) MS ms into the job, for a failover study; the end-of-job lines measure it",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "num_io_queues", .lname = "I/O queues asked of the controller", .type = FIO_OPT_INT,
	 .cb = (void *)set_num_io_queues, .minval = 1, .maxval = 65535,
	 .help = help_of[H_NUM_IO_QUEUES],
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "delay_cmd_submit", .lname = "coalesce doorbells", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, delay_cmd_submit), .def = "1",
	 .help = "While commands are in flight, ring the doorbell for newly committed ones at "
		 "the next getevents, once for all (SPDK's delay_cmd_submit); an idle queue pair "
		 "rings at once",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "spin_us", .lname = "spin before sleeping", .type = FIO_OPT_INT,
	 .cb = (void *)set_spin_us,
	 .help = help_of[H_SPIN_US],
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "verbose", .lname = "log connection steps", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, verbose), .def = "0",
	 .help = "Log each connection step with its time (address and route resolution, CM connect, "
		 "Fabrics Connect, property reads, Identify, queue creation), each reconnect step and "
		 "each queue state change; nothing on the I/O path",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = NULL},
};

/* A secret from its option or its file (the first line, without the
 * line end); never logged. 0, or 1 after logging why. */
static int secret_of(const char *val, const char *file, const char *name, char *out, size_t len)
{
	out[0] = 0;
	if (val && val[0] && file && file[0]) {
		log_err("nvmeof: give %s or %s_file, not both\n", name, name);
		return 1;
	}
	if (val && val[0]) {
		if (strlen(val) >= len) {
			log_err("nvmeof: %s is longer than any DHHC-1 secret\n", name);
			return 1;
		}
		snprintf(out, len, "%s", val);
		return 0;
	}
	if (!file || !file[0])
		return 0;
	FILE *fp = fopen(file, "re");
	if (!fp) {
		log_err("nvmeof: %s_file '%s': %s\n", name, file, strerror(errno));
		return 1;
	}
	char *got = fgets(out, (int)len, fp);
	fclose(fp);
	size_t n = got ? strcspn(out, "\r\n") : 0;
	if (!got || !n || (n == strlen(out) && n == len - 1)) {
		memset(out, 0, len);
		log_err("nvmeof: %s_file '%s': %s\n", name, file,
			!got || !n ? "empty: no secret on its first line" : "its first line is longer than any DHHC-1 secret");
		return 1;
	}
	out[n] = 0;
	return 0;
}

int eng_cfg(struct thread_data *td, struct fio_file *f, struct conn_cfg *k, uint32_t *nsid)
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
	if (k->t.trsvcid[0])
		k->o.trsvcid = k->t.trsvcid;
	k->o.subnqn = k->t.subnqn;
	k->o.hostnqn = k->t.hostnqn[0] ? k->t.hostnqn : NULL;
	k->o.hostid = k->hostid[0] ? k->hostid : NULL;
	k->o.src_addr = k->t.srcaddr[0] ? k->t.srcaddr : NULL;
	if (secret_of(eo->dhchap_secret, eo->dhchap_secret_file, "dhchap_secret", k->dhchap_secret,
		      sizeof(k->dhchap_secret)) ||
	    secret_of(eo->dhchap_ctrl_secret, eo->dhchap_ctrl_secret_file, "dhchap_ctrl_secret",
		      k->dhchap_ctrl_secret, sizeof(k->dhchap_ctrl_secret)))
		return 1;
	/* the library checks the form (and says which is wrong, never the value) */
	k->o.dhchap_secret = k->dhchap_secret[0] ? k->dhchap_secret : NULL;
	k->o.dhchap_ctrl_secret = k->dhchap_ctrl_secret[0] ? k->dhchap_ctrl_secret : NULL;
	k->o.strict_ordering = !eo->relaxed_ordering;
	k->o.hw_timestamps = eo->hw_timestamps;
	if (eo->verbose)
		k->o.trace = eng_trace_line; /* its argument is the shared controller's (ctrl_share.c) */
	for (int h = 0; h < H_N; h++) {
		const struct lib_opt *l = &lib_opts[h];
		void *to = (char *)&k->o + l->co_off;
		unsigned int v = *(unsigned int *)((char *)eo + l->eo_off);
		if (!(eo->set & (1u << h)))
			continue;
		if (l->kind == 'u')
			*(uint32_t *)to = v;
		else if (l->kind == 'b')
			*(bool *)to = v;
		else if (l->kind == 'w')
			*(enum nvmeof_wait_mode *)to = (enum nvmeof_wait_mode)v; /* fio checked it against posval */
	}
	return 0;
}

/* The library's default of each option it owns, appended to its help text
 * when fio loads the engine: before fio can print the help or parse a job. */
__attribute__((constructor)) static void help_with_library_defaults(void)
{
	struct nvmeof_ctrl_opts d;
	nvmeof_ctrl_opts_init(&d);
	for (int h = 0; h < H_N; h++) {
		const struct lib_opt *l = &lib_opts[h];
		const void *at = (const char *)&d + l->co_off;
		char v[64] = "?";
		if (l->kind == 'u')
			snprintf(v, sizeof(v), "%u", *(const uint32_t *)at);
		else if (l->kind == 'b')
			snprintf(v, sizeof(v), "%d", *(const bool *)at);
		else if (l->kind == 's')
			snprintf(v, sizeof(v), "%s", *(const char *const *)at);
		for (struct fio_option *o = eng_options; l->kind == 'w' && o->name; o++)
			for (int i = 0; !strcmp(o->name, l->name) && i < PARSE_MAX_VP && o->posval[i].ival; i++)
				if (o->posval[i].oval == (unsigned long long)*(const enum nvmeof_wait_mode *)at)
					snprintf(v, sizeof(v), "%s", o->posval[i].ival);
		snprintf(help_of[h], sizeof(help_of[h]), "%s; default %s", l->help, v);
	}
}
