/*
 * libnvmeof: a userspace NVMe over Fabrics RDMA initiator.
 *
 * One process connects to an NVMe/RDMA target, brings up a controller and as
 * many I/O queues as it wants, and moves namespace blocks directly into or
 * out of memory it registered: every command carries a keyed SGL descriptor
 * naming (region, offset, length), so the target's NIC places data there with
 * no staging copy.
 *
 * Threads: a controller may be shared by threads; controller calls
 * (queue create/destroy, memory registration, namespace lookup) are
 * thread-safe. A queue is used by one thread at a time; different queues run
 * in parallel threads.
 *
 * Errors: every call returns 0 (or a count) on success and a negative
 * NVMEOF_E* code on failure; nvmeof_errmsg() then says, for this thread, what
 * failed: the operation and the NVMe status by name with SCT/SC, or the errno
 * and the verb or CM step. The library never prints, exits or aborts.
 */
#ifndef NVMEOF_H
#define NVMEOF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum nvmeof_error {
	NVMEOF_OK = 0,
	NVMEOF_EINVAL = -1,      /* bad argument; nothing was sent */
	NVMEOF_ENOMEM = -2,
	NVMEOF_EQFULL = -3,      /* no free command slot: poll completions, then retry */
	NVMEOF_ETIMEDOUT = -4,   /* a wait or a command ran past its timeout */
	NVMEOF_ENVME = -5,       /* the target completed the command with an error status */
	NVMEOF_ETRANSPORT = -6,  /* an RDMA verb or CM step failed */
	NVMEOF_EREJECTED = -7,   /* the target rejected the RDMA CM connect */
	NVMEOF_EUNREACHABLE = -8,/* address or route resolution failed, or nobody answered */
	NVMEOF_EBUSY = -9,       /* still in use (queues or registrations outstanding) */
	NVMEOF_ECLOSED = -10,    /* the queue lost its connection */
	NVMEOF_ENOTSUP = -11,    /* the target or this build cannot do it */
	NVMEOF_ECUDA = -12,      /* the CUDA driver API failed or is absent */
};

/* What failed last on this thread, as one line. Never NULL. */
const char *nvmeof_errmsg(void);
/* The name of an NVMEOF_E* code. */
const char *nvmeof_strerror(int err);

/* ---- NVMe status ------------------------------------------------------------
 * The 15-bit Status Field of a completion (the CQE's DW3 bits 31:17).
 */
#define NVMEOF_STATUS_SC(st) ((st) & 0xff)
#define NVMEOF_STATUS_SCT(st) (((st) >> 8) & 0x7)
#define NVMEOF_STATUS_CRD(st) (((st) >> 11) & 0x3)
#define NVMEOF_STATUS_DNR(st) (((st) >> 14) & 0x1)
/* "LBA Out of Range" and the like; "Unknown status" for codes we do not know.
 * A command-specific status (SCT 1) means one thing per command: without the
 * command it is named "Command Specific Status 0xNN"; see nvmeof_cmd_status_name. */
const char *nvmeof_status_name(uint16_t status);
/* The status named for the command that failed: admin (queue 0) or I/O
 * opcode, and for a Fabrics command (opcode 0x7f) its FCTYPE. */
const char *nvmeof_cmd_status_name(uint16_t status, bool admin, uint8_t opc, uint8_t fctype);

/* ---- Options ----------------------------------------------------------------
 * The option structs grow at their end in later versions of the library
 * without a new soname. Their first member, size, says which fields the
 * caller has: nvmeof_ctrl_opts_init() and nvmeof_queue_opts_init() set it to
 * sizeof the struct as the caller was compiled, and fill in every default.
 * The rules:
 *  - the library never reads or writes a byte past the caller's size; a field
 *    past it takes its default;
 *  - size 0 means the first layout (libnvmeof.so.0, version 0.1: the fields
 *    below), so a struct built by hand with designated initializers works;
 *  - a larger size than this library knows (a caller built against a newer
 *    header) is accepted when every byte this library does not know is zero,
 *    else the call fails with NVMEOF_ENOTSUP: an option it cannot honour;
 *  - a size below the first layout fails with NVMEOF_EINVAL.
 * New fields are only ever appended, and their zero value keeps the behaviour
 * of the versions before them.
 */
enum nvmeof_wait_mode {
	NVMEOF_WAIT_HYBRID = 0, /* spin spin_us, then sleep on the completion channel */
	NVMEOF_WAIT_POLL = 1,   /* busy poll: lowest latency, one core burnt */
	NVMEOF_WAIT_SLEEP = 2,  /* sleep at once, as the kernel initiator does */
};

struct nvmeof_ctrl_opts {
	size_t size;             /* the caller's sizeof(struct nvmeof_ctrl_opts); see above */
	const char *traddr;      /* target address (IPv4 or IPv6 literal, or name) */
	const char *trsvcid;     /* port; default "4420" */
	const char *src_addr;    /* optional local address: chooses the HCA */
	const char *subnqn;      /* subsystem NQN (required) */
	const char *hostnqn;     /* default: /etc/nvme/hostnqn, else a per-process uuid NQN */
	const char *hostid;      /* uuid string; default /etc/nvme/hostid, else per-process */
	uint32_t queue_depth;    /* default I/O queue depth (commands in flight); 128 */
	uint32_t num_io_queues;  /* I/O queues asked of the controller; 64 */
	uint32_t cmd_timeout_ms; /* per-command timeout; 30000 */
	uint32_t connect_timeout_ms; /* each CM step and the fabrics connect; 3000 */
	uint32_t kato_ms;        /* keep-alive timeout; 0 = none. With KATO, a thread of
				  * the controller sends Keep Alive every ka_interval_ms */
	uint32_t ka_interval_ms; /* 0: KATO / 2 */
	uint32_t reconnect_delay_ms; /* 0: no reconnect (default). Else, after a
				      * connection loss, try every this many ms */
	uint32_t ctrl_loss_tmo_ms;   /* give up (fail what waits) after; 60000 */
	bool in_capsule;         /* small writes in the command capsule when allowed; true */
	enum nvmeof_wait_mode wait_mode; /* default HYBRID */
	uint32_t spin_us;        /* HYBRID spin before sleeping; 20 */
};
/* Defaults, and size = sizeof(*opts): always initialize through this macro. */
#define nvmeof_ctrl_opts_init(opts) nvmeof_ctrl_opts_init_sz((opts), sizeof(*(opts)))
void nvmeof_ctrl_opts_init_sz(struct nvmeof_ctrl_opts *opts, size_t size);

/* ---- Controller --------------------------------------------------------------- */
struct nvmeof_ctrl;

struct nvmeof_ctrl_info {
	char serial[21];
	char model[41];
	char firmware[9];
	char subnqn[257];
	uint16_t vid, ssvid, cntlid;
	uint32_t ver;            /* VS property */
	uint64_t cap;            /* CAP property */
	uint8_t mdts;            /* as reported (power of two of the minimum page) */
	uint64_t max_xfer;       /* bytes one command may move; 0 = no limit reported */
	uint32_t sgls;           /* SGL support */
	uint32_t ioccsz, iorcsz; /* in 16-byte units */
	uint16_t icdoff;
	uint16_t maxcmd;
	uint32_t nn;
	uint16_t oncs;
	uint16_t kas;            /* keep-alive granularity, 100 ms units */
	uint8_t vwc;
	uint16_t mqes;           /* CAP.MQES, 0-based */
	uint32_t max_io_queues;  /* granted by Set Features Number of Queues */
	uint32_t in_capsule_max; /* bytes a write may carry in-capsule; 0 = off */
	char hca[64];            /* ibverbs device the connection resolved to */
	uint8_t port_num;
	uint16_t crdt[3];        /* Command Retry Delay Times 1..3, 100 ms units */
};

struct nvmeof_ns {
	uint32_t nsid;
	uint32_t lba_size;       /* bytes */
	uint8_t lbads;           /* log2(lba_size) */
	uint16_t ms;             /* metadata bytes per LBA (must be 0 for I/O here) */
	uint64_t nsze, ncap, nuse; /* in LBAs */
	uint8_t nguid[16], eui64[8];
};

/* Connects the admin queue, enables the controller, identifies it and its
 * active namespaces. */
int nvmeof_ctrl_connect(const struct nvmeof_ctrl_opts *opts, struct nvmeof_ctrl **out);
/* Shuts the controller down (CC.SHN) and disconnects. Fails with
 * NVMEOF_EBUSY, touching nothing, while queues or registrations remain. */
int nvmeof_ctrl_close(struct nvmeof_ctrl *ctrl);
const struct nvmeof_ctrl_info *nvmeof_ctrl_info(const struct nvmeof_ctrl *ctrl);
/* A consistent copy of the same, safe while a reconnect re-reads the
 * controller's limits on another thread (the pointer above is not). */
int nvmeof_ctrl_get_info(struct nvmeof_ctrl *ctrl, struct nvmeof_ctrl_info *out);
/* 0 while the association is healthy; else the error of the first failed
 * keep-alive, with its message copied into msg. */
int nvmeof_ctrl_health(struct nvmeof_ctrl *ctrl, char *msg, size_t len);
/* Keep Alive commands completed so far. */
uint64_t nvmeof_ctrl_keep_alives(struct nvmeof_ctrl *ctrl);
/* NULL (and an error message) when nsid is not an active namespace. */
const struct nvmeof_ns *nvmeof_ns_get(const struct nvmeof_ctrl *ctrl, uint32_t nsid);
uint32_t nvmeof_ns_count(const struct nvmeof_ctrl *ctrl);
const struct nvmeof_ns *nvmeof_ns_at(const struct nvmeof_ctrl *ctrl, uint32_t idx);

/* ---- Memory ------------------------------------------------------------------
 * Register once, then name (region, offset) in any number of commands.
 */
struct nvmeof_mr;
int nvmeof_mr_register(struct nvmeof_ctrl *ctrl, void *addr, size_t len, struct nvmeof_mr **out);
/* Page-aligned, zeroed, registered host memory. */
int nvmeof_mr_alloc(struct nvmeof_ctrl *ctrl, size_t len, struct nvmeof_mr **out);
/* The caller must have no command in flight on the region. */
int nvmeof_mr_release(struct nvmeof_mr *mr);
void *nvmeof_mr_addr(const struct nvmeof_mr *mr);
size_t nvmeof_mr_len(const struct nvmeof_mr *mr);

/* ---- GPU memory -------------------------------------------------------------
 * CUDA device memory as the direct target of reads and source of writes.
 * The CUDA driver is loaded at run time; without it these return
 * NVMEOF_ECUDA saying why. Registration tries dma-buf first
 * (cuMemGetHandleForAddressRange + ibv_reg_dmabuf_mr), then ibv_reg_mr on
 * the device pointer (nvidia_peermem); if both fail the message names both.
 *
 * The synchronous calls follow the GPUDirect ordering rules themselves. An
 * asynchronous caller must: before submitting a write from GPU memory, make
 * the kernels that produced the data finish (nvmeof_cuda_sync, or its own
 * stream synchronization); after a read into GPU memory completes and
 * before any GPU work consumes it, call nvmeof_cuda_flush once for the
 * batch of completed reads.
 */
int nvmeof_cuda_available(char *why, size_t len);
/* Device memory on GPU gpu, whole 64 KiB GPU pages, registered. */
int nvmeof_mr_alloc_cuda(struct nvmeof_ctrl *ctrl, int gpu, size_t len, struct nvmeof_mr **out);
/* An existing device allocation (e.g. a framework's tensor). */
int nvmeof_mr_register_cuda(struct nvmeof_ctrl *ctrl, void *dptr, size_t len, struct nvmeof_mr **out);
/* cuFlushGPUDirectRDMAWrites in the region's owning context. */
int nvmeof_cuda_flush(struct nvmeof_mr *mr);
/* cuCtxSynchronize in the region's owning context. */
int nvmeof_cuda_sync(struct nvmeof_mr *mr);
/* Copies through the host (not the zero-copy path; for verification). */
int nvmeof_cuda_copy(struct nvmeof_mr *mr, size_t off, void *host, size_t len, bool to_gpu);
/* "dma-buf" or "peermem" for GPU regions, NULL for host memory. */
const char *nvmeof_mr_cuda_registration(const struct nvmeof_mr *mr);
/* "0000:3b:00.0" */
int nvmeof_cuda_pci_bus_id(int gpu, char *buf, size_t len);
/* For a GPU machine, no target needed: allocation, dma-buf export, the flush
 * entry point and a registration attempt on the first RDMA device, one
 * report line each. 0 when the driver, GPU and allocation worked. */
int nvmeof_cuda_selftest(int gpu, char *report, size_t len);

/* ---- Queues ------------------------------------------------------------------- */
struct nvmeof_queue;

struct nvmeof_queue_opts {
	size_t size;             /* the caller's sizeof(struct nvmeof_queue_opts), or 0 */
	uint32_t depth;          /* 0: the controller's queue_depth */
	bool batch;              /* submissions wait for nvmeof_queue_commit() */
	enum nvmeof_wait_mode wait_mode; /* as the controller's unless overridden */
	bool wait_mode_set;
	struct nvmeof_poll_group *group; /* share this group's CQ (NULL: a CQ of its own) */
};
/* Defaults (all as the controller's), and size = sizeof(*opts). */
#define nvmeof_queue_opts_init(opts) nvmeof_queue_opts_init_sz((opts), sizeof(*(opts)))
void nvmeof_queue_opts_init_sz(struct nvmeof_queue_opts *opts, size_t size);

/* opts NULL: every default. */
int nvmeof_queue_create(struct nvmeof_ctrl *ctrl, const struct nvmeof_queue_opts *opts,
			struct nvmeof_queue **out);

/* ---- Poll groups -------------------------------------------------------------
 * Queues of one controller that share one completion queue and one completion
 * channel, polled and waited on as one (SPDK's poll group): a thread driving
 * several queue pairs polls once per batch, not once per queue, and sleeps on
 * one channel. Create the group, then queues with nvmeof_queue_opts.group set
 * (up to max_queues, at most 64). A group and its queues are used from one
 * thread; nvmeof_queue_poll/wait on a member poll the whole group, so its
 * callbacks may run for any member's requests. Destroy the queues first.
 */
struct nvmeof_poll_group;
int nvmeof_poll_group_create(struct nvmeof_ctrl *ctrl, uint32_t max_queues,
			     struct nvmeof_poll_group **out);
int nvmeof_poll_group_destroy(struct nvmeof_poll_group *g); /* NVMEOF_EBUSY while queues remain */
/* Completions processed (callbacks run) across the group, or an error. */
int nvmeof_poll_group_poll(struct nvmeof_poll_group *g, uint32_t max);
/* Until min completions across the group, or timeout_ms; as nvmeof_queue_wait. */
int nvmeof_poll_group_wait(struct nvmeof_poll_group *g, uint32_t min, int timeout_ms);
/* In-flight commands are failed with NVMEOF_ECLOSED (their callbacks run). */
int nvmeof_queue_destroy(struct nvmeof_queue *q);
uint16_t nvmeof_queue_qid(const struct nvmeof_queue *q);
uint32_t nvmeof_queue_depth(const struct nvmeof_queue *q);
/* Logical requests submitted and not yet completed. */
uint32_t nvmeof_queue_inflight(const struct nvmeof_queue *q);

struct nvmeof_cpl {
	int err;          /* 0, NVMEOF_ENVME, NVMEOF_ETIMEDOUT or NVMEOF_ECLOSED */
	uint16_t status;  /* NVMe status field when err == NVMEOF_ENVME */
	uint32_t cdw0, cdw1; /* command specific (DW1: upper half of an 8-byte property) */
	uint8_t opc, fctype; /* the command that completed, to name its status */
	bool admin;          /* it ran on the admin queue */
};
typedef void (*nvmeof_cb)(void *arg, const struct nvmeof_cpl *cpl);
/* One line for a completion: "success", "LBA Out of Range (SCT 0x0, SC 0x80, DNR)". */
const char *nvmeof_cpl_str(const struct nvmeof_cpl *cpl, char *buf, size_t len);

/*
 * Asynchronous I/O. nlb counts logical blocks (1-based) of any size: a
 * request above the controller's MDTS is split into MDTS-sized commands that
 * run concurrently and complete as one, each placing its data directly at its
 * offset in the same region. cb runs from nvmeof_queue_poll/wait on the
 * queue's thread. NVMEOF_EQFULL when no command slot is free.
 */
int nvmeof_read(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		struct nvmeof_mr *mr, size_t off, nvmeof_cb cb, void *arg);
int nvmeof_write(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		 struct nvmeof_mr *mr, size_t off, nvmeof_cb cb, void *arg);
int nvmeof_flush(struct nvmeof_queue *q, const struct nvmeof_ns *ns, nvmeof_cb cb, void *arg);
/* Dataset Management, deallocate; NVMEOF_ENOTSUP unless ONCS says so. */
int nvmeof_deallocate(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
		      uint32_t nlb, nvmeof_cb cb, void *arg);
/* Posts every submission made since the last commit with one doorbell. */
int nvmeof_queue_commit(struct nvmeof_queue *q);
/* Processes up to max completions; returns requests completed (callbacks run). */
int nvmeof_queue_poll(struct nvmeof_queue *q, uint32_t max);
/* Polls until at least min requests completed or timeout_ms passed, waiting
 * as the queue's wait mode says. Returns requests completed (maybe < min on
 * timeout) or a negative error. */
int nvmeof_queue_wait(struct nvmeof_queue *q, uint32_t min, int timeout_ms);

/* Synchronous I/O on the same path; timeout_ms 0 means the command timeout. */
int nvmeof_read_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
		     uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t timeout_ms);
int nvmeof_write_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
		      uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t timeout_ms);
int nvmeof_flush_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint32_t timeout_ms);

/* ---- Statistics --------------------------------------------------------------- */
struct nvmeof_queue_stats {
	uint64_t cmds;            /* NVMe commands sent */
	uint64_t in_capsule;      /* of which carried their data in-capsule */
	uint64_t doorbells;       /* ibv_post_send calls */
	uint64_t stale_cqes;      /* completions naming no live command (dropped) */
	uint64_t timeouts;
	uint64_t reconnects;      /* connections re-established after a loss */
	uint64_t outage_ms_max;   /* longest time from loss to reconnect */
	uint64_t retries;         /* commands re-sent after a status without DNR */
	uint64_t bad_rsps;        /* response capsules shorter than a CQE (connection failed) */
	uint64_t sleeps;          /* waits that slept on the completion channel */
};
void nvmeof_queue_stats(const struct nvmeof_queue *q, struct nvmeof_queue_stats *out);

#ifdef __cplusplus
}
#endif
#endif
