/* fio's option table of the engine, and a job's options turned into the
 * library's configuration of a controller. The library's nvmeof_ctrl_opts_init
 * is the one source of defaults. The options the library owns have no .def
 * here, so fio calls their callback only for a value the user gave: the
 * callback records it in eo->set, and eng_cfg overrides exactly those. Their
 * help text gets the library's default at load time (`fio --enghelp`). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "optgroup.h"
#include "optval.h"
#include "tcp_opts.h"

#define TIME_HELP "; a time up to 1d: a bare number is seconds (as in nvme-cli), or 500ms, 5s, 2m"

enum { H_TRSVCID, H_KATO, H_RECONNECT_DELAY, H_CTRL_LOSS_TMO, H_CMD_TIMEOUT, H_CONNECT_TIMEOUT,
       H_IN_CAPSULE, H_WAIT, H_NUM_IO_QUEUES, H_SPIN_US, H_CONNECT_RETRIES, H_HDGST, H_DDGST, H_N };

/* kind: 'u' uint32_t, 't' uint32_t milliseconds given as a time, 'b' bool,
 * 'w' the wait mode, 's' a string (the filename's transport ID takes those) */
static const struct lib_opt {
	const char *name, *help;
	size_t eo_off, co_off;
	char kind;
} lib_opts[H_N] = {
#define LIB(h, n, e, c, k, text) [h] = {n, text, offsetof(struct eng_opts, e), offsetof(struct nvmeof_ctrl_opts, c), k}
	LIB(H_TRSVCID, "trsvcid", trsvcid, trsvcid, 's', "Target port, 1 to 65535"),
	LIB(H_KATO, "kato", kato_ms, kato_ms, 't', "Keep-alive timeout (0: none)" TIME_HELP),
	LIB(H_RECONNECT_DELAY, "reconnect_delay", reconnect_delay_ms, reconnect_delay_ms, 't',
	    "After a connection loss, reconnect this often while I/O waits (0: fail at once)" TIME_HELP),
	LIB(H_CTRL_LOSS_TMO, "ctrl_loss_tmo", ctrl_loss_tmo_ms, ctrl_loss_tmo_ms, 't',
	    "With reconnect_delay, give up and fail waiting I/O after this long" TIME_HELP),
	LIB(H_CMD_TIMEOUT, "cmd_timeout", cmd_timeout_ms, cmd_timeout_ms, 't', "Per-command timeout" TIME_HELP),
	LIB(H_CONNECT_TIMEOUT, "connect_timeout", connect_timeout_ms, connect_timeout_ms, 't', "Timeout of each connection step" TIME_HELP),
	LIB(H_IN_CAPSULE, "in_capsule", in_capsule, in_capsule, 'b',
	    "Send small writes inside the command capsule when the target allows"),
	LIB(H_WAIT, "wait", wait_mode, wait_mode, 'w', "How to wait for completions"),
	LIB(H_NUM_IO_QUEUES, "num_io_queues", num_io_queues, num_io_queues, 'u',
	    "Number of I/O queues asked of the controller (Set Features Number of Queues), 1 to 65535"),
	LIB(H_SPIN_US, "spin_us", spin_us, spin_us, 'u', "With wait=hybrid or adaptive, microseconds to spin, 0 to 1000000"),
	LIB(H_CONNECT_RETRIES, "connect_retries", connect_retries, connect_retries, 'u',
	    "Tries after the first of a queue pair's connect, on a timeout or a busy target (0: one try), 0 to 100"),
	LIB(H_HDGST, "hdr_digest", hdr_digest, hdr_digest, 'b', "NVMe/TCP header digest (CRC32C); refused over RDMA"),
	LIB(H_DDGST, "data_digest", data_digest, data_digest, 'b', "NVMe/TCP data digest (CRC32C); refused over RDMA"),
#undef LIB
};
static char help_of[H_N][200];

/* A value out of range fails the job before anything connects, naming the
 * range (optval.h: why these are not fio's integer and time options). */
static int num_of(const char *name, const char *v, long long lo, long long hi, const char *what, long long *out)
{
	char err[400];
	int rc = strcmp(name, "spin_us") ? optval_count_of(name, v, eng_shown(v), lo, hi, what, out, err, sizeof(err))
					 : optval_us_of(name, v, eng_shown(v), lo, hi, out, err, sizeof(err));
	return rc ? eng_err("nvmeof: %s\n", err), 1 : 0;
}

static int time_of(const char *name, const char *v, long long lo_ms, long long *out_ms)
{
	char err[400];
	if (!optval_time_of(name, v, lo_ms, out_ms, err, sizeof(err)))
		return 0;
	if (eng_shown(v) != v) /* the message would echo it */
		return eng_err("nvmeof: %s=%s: expected a time (a bare number is seconds, or 500ms, 5s, 2m)\n", name,
			       eng_shown(v)), 1;
	return eng_err("nvmeof: %s\n", err), 1;
}

/* The engine's own numbers (with fio defaults) and the library's, each of
 * these recorded in eo->set so that eng_cfg passes on exactly those given. */
#define SETTER(fn, field, parse, h)                                                         \
	static int set_##fn(void *data, const char *v)                                        \
	{                                                                                     \
		struct eng_opts *eo = data;                                                   \
		long long n;                                                                  \
		if (parse)                                                                    \
			return 1;                                                             \
		eo->field = (__typeof__(eo->field))n;                                         \
		eo->set |= (h) < 0 ? 0 : 1u << (h);                                           \
		return 0;                                                                     \
	}
SETTER(ns, ns, num_of("ns", v, 1, 4294967294ll, "a namespace ID", &n), -1)
SETTER(gpu, gpu, num_of("gpu", v, -1, 1023, "-1: host memory; else a CUDA device index", &n), -1)
SETTER(comp_vector, comp_vector,
       num_of("comp_vector", v, -1, 65535, "-1: chosen by locality; else below the HCA's count", &n), -1)
SETTER(qd_limit, qd_limit, num_of("qd_limit", v, 0, 65535, "0: no limit", &n), -1)
SETTER(qpairs, qpairs, num_of("qpairs", v, 0, MAX_QPAIRS, "0: one per CPU the job may run on", &n), -1)
SETTER(num_io_queues, num_io_queues, num_of("num_io_queues", v, 1, 65535, "", &n), H_NUM_IO_QUEUES)
SETTER(spin_us, spin_us, num_of("spin_us", v, 0, 1000000, "", &n), H_SPIN_US)
SETTER(connect_retries, connect_retries, num_of("connect_retries", v, 0, 100, "", &n), H_CONNECT_RETRIES)
SETTER(kato, kato_ms, time_of("kato", v, 0, &n), H_KATO)
SETTER(reconnect_delay, reconnect_delay_ms, time_of("reconnect_delay", v, 0, &n), H_RECONNECT_DELAY)
SETTER(ctrl_loss_tmo, ctrl_loss_tmo_ms, time_of("ctrl_loss_tmo", v, 0, &n), H_CTRL_LOSS_TMO)
SETTER(cmd_timeout, cmd_timeout_ms, time_of("cmd_timeout", v, 1, &n), H_CMD_TIMEOUT)
SETTER(connect_timeout, connect_timeout_ms, time_of("connect_timeout", v, 1, &n), H_CONNECT_TIMEOUT)
/* -1: the library's default */
SETTER(quiesce, quiesce_ms, strcmp(v ? v : "", "-1") ? time_of("quiesce_time", v, 0, &n) : (n = -1, 0), -1)
#undef SETTER

/* trsvcid=, as the filename's: a port from 1 to 65535 (fio stored it) */
static int set_trsvcid(void *data, const char *v)
{
	long long n;
	return (void)data, num_of("trsvcid", v, 1, 65535, "a port", &n);
}

#define BOOL_SETTER(fn, h)                                       \
	static int set_##fn(void *data, int *v)                  \
	{                                                        \
		((struct eng_opts *)data)->fn = (unsigned int)*v; \
		return ((struct eng_opts *)data)->set |= 1u << (h), 0; \
	}
BOOL_SETTER(in_capsule, H_IN_CAPSULE)
BOOL_SETTER(hdr_digest, H_HDGST)
BOOL_SETTER(data_digest, H_DDGST)
#undef BOOL_SETTER

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
	 .off1 = offsetof(struct eng_opts, trsvcid), .cb = (void *)set_trsvcid, .help = help_of[H_TRSVCID],
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "subnqn", .lname = "subsystem NQN", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, subnqn),
	 .help = "Subsystem NQN (in a filename, escape ':' as '\\:')",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "ns", .lname = "namespace ID", .type = FIO_OPT_STR, .cb = (void *)set_ns, .def = "1",
	 .help = "Namespace ID, 1 to 4294967294", .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
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
		 "(bidirectional), also when it does not ask; none by default. Prefer dhchap_ctrl_secret_file",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "dhchap_secret_file", .lname = "DH-HMAC-CHAP host secret file", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, dhchap_secret_file),
	 .help = "A file holding dhchap_secret (its first line), which keeps the secret out of job files and ps",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "dhchap_ctrl_secret_file", .lname = "DH-HMAC-CHAP controller secret file", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, dhchap_ctrl_secret_file),
	 .help = "A file holding dhchap_ctrl_secret (its first line)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "dhchap_hashes", .lname = "DH-HMAC-CHAP hashes offered", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, dhchap_hashes),
	 .help = "The hash functions the host offers, comma-separated from sha256,sha384,sha512 "
		 "(default: all; the controller chooses)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "dhchap_dhgroups", .lname = "DH-HMAC-CHAP DH groups offered", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, dhchap_dhgroups),
	 .help = "The DH groups the host offers, comma-separated from null,ffdhe2048,ffdhe3072,ffdhe4096,"
		 "ffdhe6144,ffdhe8192 (default: all); leave out null to insist on a DH exchange",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "allow_unauthenticated_ctrl", .lname = "accept an unauthenticated controller", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, allow_unauth_ctrl), .def = "0",
	 .help = "With dhchap_ctrl_secret the controller is authenticated even when it does not ask for "
		 "authentication (the host starts the transaction); 1 accepts a controller that does not "
		 "require authentication without authenticating it",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "src_addr", .lname = "source address", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, src_addr),
	 .help = "Local address to connect from: chooses the HCA (PCIe locality)",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "gpu", .lname = "GPU buffers", .type = FIO_OPT_STR, .cb = (void *)set_gpu, .def = "-1",
	 .help = "Place the job's I/O buffers in this CUDA GPU's memory, 0 to 1023 (-1: host memory); "
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
	{.name = "comp_vector", .lname = "completion vector", .type = FIO_OPT_STR, .cb = (void *)set_comp_vector,
	 .def = "-1", .help = "Completion vector of the job's CQs (0 to the HCA's count - 1). -1: one whose IRQ the job's "
		 "CPUs serve (/proc/irq), else spread over the vectors",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	TCP_SOCKET_OPTIONS,
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
	{.name = "qd_limit", .lname = "queue depth limit", .type = FIO_OPT_STR, .cb = (void *)set_qd_limit, .def = "0",
	 .help = "Most NVMe commands in flight on the job's queue (0: iodepth times the MDTS split), 0 to 65535",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "kato", .lname = "keep-alive timeout", .type = FIO_OPT_STR, .cb = (void *)set_kato,
	 .help = help_of[H_KATO], .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "reconnect_delay", .lname = "reconnect delay", .type = FIO_OPT_STR, .cb = (void *)set_reconnect_delay,
	 .help = help_of[H_RECONNECT_DELAY], .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "ctrl_loss_tmo", .lname = "controller loss timeout", .type = FIO_OPT_STR, .cb = (void *)set_ctrl_loss_tmo,
	 .help = help_of[H_CTRL_LOSS_TMO], .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "cmd_timeout", .lname = "command timeout", .type = FIO_OPT_STR, .cb = (void *)set_cmd_timeout,
	 .help = help_of[H_CMD_TIMEOUT], .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "connect_timeout", .lname = "connect timeout", .type = FIO_OPT_STR, .cb = (void *)set_connect_timeout,
	 .help = help_of[H_CONNECT_TIMEOUT], .category = FIO_OPT_C_ENGINE,
	 .group = FIO_OPT_G_INVALID},
	{.name = "connect_retries", .lname = "connect retries", .type = FIO_OPT_STR, .cb = (void *)set_connect_retries,
	 .help = help_of[H_CONNECT_RETRIES], .category = FIO_OPT_C_ENGINE,
	 .group = FIO_OPT_G_INVALID},
	{.name = "in_capsule", .lname = "in-capsule data", .type = FIO_OPT_BOOL, .cb = (void *)set_in_capsule,
	 .help = help_of[H_IN_CAPSULE], .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "hdr_digest", .lname = "header digest", .type = FIO_OPT_BOOL, .cb = (void *)set_hdr_digest,
	 .help = help_of[H_HDGST], .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "data_digest", .lname = "data digest", .type = FIO_OPT_BOOL, .cb = (void *)set_data_digest,
	 .help = help_of[H_DDGST], .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	TCP_DIGEST_ENABLE_OPTION,
	{.name = "wait", .lname = "completion wait", .type = FIO_OPT_STR,
	 .off1 = offsetof(struct eng_opts, wait_mode), .cb = (void *)set_wait_mode, .help = help_of[H_WAIT],
	 .posval = {{.ival = "hybrid", .oval = NVMEOF_WAIT_HYBRID, .help = "spin spin_us, then sleep"},
		    {.ival = "adaptive", .oval = NVMEOF_WAIT_ADAPTIVE, .help = "hybrid, its spin shrinking as it pays less"},
		    {.ival = "poll", .oval = NVMEOF_WAIT_POLL, .help = "busy-poll: lowest latency, one core"},
		    {.ival = "sleep", .oval = NVMEOF_WAIT_SLEEP, .help = "sleep on the completion channel"}},
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "qpairs", .lname = "queue pairs per job", .type = FIO_OPT_STR, .cb = (void *)set_qpairs, .def = "0",
	 .help = "I/O queue pairs, 0 to 64, this job drives on each controller, sharing one completion "
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
	{.name = "quiesce_time", .lname = "command quiesce time", .type = FIO_OPT_STR, .cb = (void *)set_quiesce,
	 .def = "-1", .help = "With several paths: a lost write waits the longer of this and the controller's CQT, "
		 "+2 x kato, before it goes elsewhere; a time as kato's; -1: the library's 1s; 0: no wait at all",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "path_loss", .lname = "inject a path loss", .type = FIO_OPT_STR_STORE,
	 .off1 = offsetof(struct eng_opts, path_loss),
	 .help = "With several paths, N@MS: disconnect path N's queue pairs through the transport (the target is "
		 "not touched) MS ms into the job, for a failover study; the end-of-job lines measure it",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "num_io_queues", .lname = "I/O queues asked of the controller", .type = FIO_OPT_STR,
	 .cb = (void *)set_num_io_queues, .help = help_of[H_NUM_IO_QUEUES],
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "delay_cmd_submit", .lname = "coalesce doorbells", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, delay_cmd_submit), .def = "1",
	 .help = "While commands are in flight, ring the doorbell for newly committed ones at "
		 "the next getevents, once for all (SPDK's delay_cmd_submit); an idle queue pair "
		 "rings at once",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = "spin_us", .lname = "spin before sleeping", .type = FIO_OPT_STR, .cb = (void *)set_spin_us,
	 .help = help_of[H_SPIN_US], .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	ENG_QUIET_OPTION, ENG_ZONE_OPTIONS, ENG_QSHARE_OPTION,
	{.name = "verbose", .lname = "log connection steps", .type = FIO_OPT_BOOL,
	 .off1 = offsetof(struct eng_opts, verbose), .def = "0",
	 .help = "Log each connection step with its time (address and route resolution, CM connect, "
		 "Fabrics Connect, property reads, Identify, queue creation), each reconnect step and "
		 "each queue state change; nothing on the I/O path",
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},
	{.name = NULL},
};

int eng_cfg(struct thread_data *td, struct fio_file *f, struct conn_cfg *k, uint32_t *nsid)
{
	struct eng_opts *eo = td->eo;
	char err[320];
	memset(k, 0, sizeof(*k));
	if (tid_parse(f->file_name, &k->t, err, sizeof(err))) {
		eng_err("nvmeof: filename '%s': %s\n", f->file_name, err);
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
	char why[900]; /* SPDK's example filenames have no subnqn: where it comes from */
	if (tid_missing(&k->t, why, sizeof(why)) && (!k->t.traddr[0] || cfg_sole_subsystem(k, why, sizeof(why))))
		return eng_err("nvmeof: filename '%s': %s\n", f->file_name, why), 1;
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
	if (cfg_auth(k, eo))
		return 1;
	k->o.strict_ordering = !eo->relaxed_ordering;
	k->o.hw_timestamps = eo->hw_timestamps;
	tcp_opts_cfg(&k->o, eo);
	if (eo->verbose)
		k->o.trace = eng_trace_line; /* its argument is the shared controller's (ctrl_share.c) */
	for (int h = 0; h < H_N; h++) {
		const struct lib_opt *l = &lib_opts[h];
		void *to = (char *)&k->o + l->co_off;
		unsigned int v = *(unsigned int *)((char *)eo + l->eo_off);
		if (!(eo->set & (1u << h)))
			continue;
		if (l->kind == 'u' || l->kind == 't')
			*(uint32_t *)to = v;
		else if (l->kind == 'b')
			*(bool *)to = v;
		else if (l->kind == 'w')
			*(enum nvmeof_wait_mode *)to = (enum nvmeof_wait_mode)v; /* fio checked it against posval */
	}
	tcp_opts_job(k);
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
		/* a bool's field may sit at any byte: read a number only for numbers */
		uint32_t ms = l->kind == 'u' || l->kind == 't' ? *(const uint32_t *)at : 0;
		if (l->kind == 'u')
			snprintf(v, sizeof(v), "%u", ms);
		else if (l->kind == 't') /* as the user writes it */
			snprintf(v, sizeof(v), ms % 1000 ? "%ums" : "%us", ms % 1000 ? ms : ms / 1000);
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
