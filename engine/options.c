/* fio's option table of the engine, and a job's options turned into the
 * library's configuration of a controller. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "optgroup.h"

struct fio_option eng_options[] = {
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
