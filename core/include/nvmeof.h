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
	NVMEOF_ENODEV = -13,     /* this host has no RDMA device (or rdma_ucm is not loaded): a local
				  * problem, not the target's (since 0.5; older libraries said
				  * NVMEOF_EUNREACHABLE) */
};

/* What failed last on this thread, as one line. Never NULL. */
const char *nvmeof_errmsg(void);
/* Cuts every secret (a DHHC-1 or NVMeTLSkey-1 word, any case) out of a
 * NUL-terminated message, in place; what cannot be replaced by the
 * placeholder is cut off. The library's messages and traces already pass
 * through it; a program that prints its own words beside them (an option's
 * value, a filename) may use the same rule. */
void nvmeof_redact(char *msg);
/* The name of an NVMEOF_E* code. */
const char *nvmeof_strerror(int err);
/* This library's version, "MAJOR.MINOR.PATCH" (pkg-config's --modversion;
 * the soname carries MAJOR). Since 0.5. */
const char *nvmeof_version(void);

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
 *    below up to spin_us), so a struct built by hand with designated
 *    initializers works;
 *  - a larger size than this library knows (a caller built against a newer
 *    header) is accepted when every byte this library does not know is zero,
 *    else the call fails with NVMEOF_ENOTSUP: an option it cannot honour;
 *  - a size below the first layout fails with NVMEOF_EINVAL.
 * New fields are only ever appended, and their zero value keeps the behaviour
 * of the versions before them, with one exception: since 0.4 data regions
 * are registered with PCIe relaxed ordering unless strict_ordering is set
 * (an optional access flag: nothing a caller sees changes, only how fast a
 * GPUDirect transfer can run).
 */
enum nvmeof_wait_mode {
	NVMEOF_WAIT_HYBRID = 0, /* spin spin_us, then sleep on the completion channel */
	NVMEOF_WAIT_POLL = 1,   /* busy poll: lowest latency, one core burnt */
	NVMEOF_WAIT_SLEEP = 2,  /* sleep at once, as the kernel initiator does */
	/* (0.6, the default) HYBRID whose spin shrinks toward nothing while
	 * spinning does not pay (the process's polling poll groups of I/O
	 * queues outnumber the CPUs it may run on) and grows back when it does */
	NVMEOF_WAIT_ADAPTIVE = 3,
};

/* Self-diagnosis (nvmeof_ctrl_opts.trace): called at each step of bringing
 * up or recovering a connection (address and route resolution, CM connect,
 * Fabrics Connect, property reads, CC.EN, Identify, Set Features, queue
 * creation, each reconnect step) and at each change of a queue's connection
 * state, on the thread taking the step, with the queue's ID (0: admin),
 * CLOCK_MONOTONIC in ns, and one line saying what was done. Never called
 * for I/O on a live queue; it must not call the library. */
typedef void (*nvmeof_trace_cb)(void *arg, uint16_t qid, uint64_t time_ns, const char *msg);

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
	uint32_t kato_ms;        /* keep-alive timeout; 5000 (the Linux host's); 0 = none.
				  * With KATO, a thread of the controller sends Keep
				  * Alive every ka_interval_ms (checks twice as often
				  * with a controller's traffic-based keep-alive) */
	uint32_t ka_interval_ms; /* 0: KATO / 2 */
	uint32_t reconnect_delay_ms; /* 0: no reconnect (default). Else, after a
				      * connection loss, try every this many ms */
	uint32_t ctrl_loss_tmo_ms;   /* give up (fail what waits) after; 60000 */
	bool in_capsule;         /* small writes in the command capsule when allowed; true */
	enum nvmeof_wait_mode wait_mode; /* default HYBRID */
	uint32_t spin_us;        /* HYBRID, ADAPTIVE spin before sleeping; 20 */
	/* version 0.2 */
	nvmeof_trace_cb trace;   /* NULL (default): no trace; see nvmeof_trace_cb */
	void *trace_arg;
	/* version 0.3 */
	uint32_t connect_retries; /* tries after the first of a queue's connect; 4. 0: one try.
				   * A busy or timed-out CM reject, an NVMe/RDMA "no
				   * resources" reject, and an I/O queue's Fabrics Connect
				   * that timed out, lost its connection or found the
				   * controller busy, are tried again (with the queue's
				   * previous steps) after a backoff of 100 ms doubling to
				   * 1.6 s, plus jitter; so are, for I/O queues only (the
				   * admin queue reached the target: a first contact met by
				   * silence fails at once), a CM step that got no answer in
				   * connect_timeout_ms and address or route resolution
				   * failures. A refusal
				   * (nobody listening, unknown subsystem or host, invalid
				   * parameters) is never retried. A queue's connect thus
				   * takes at most (connect_retries + 1) tries, each bounded
				   * by its CM steps' timeouts and, for the Connect, the
				   * command timeout. The message of a final failure says
				   * the queue, the step, the tries and the time. */
	/* also version 0.3: in-band authentication, DH-HMAC-CHAP (NVMe Base 8.13).
	 * Secrets in nvme-cli's form, DHHC-1:XX:<base64>: (nvme gen-dhchap-key);
	 * a malformed one fails the connect before anything is sent. Used
	 * when a queue's Fabrics Connect response asks for authentication, on
	 * the admin queue, every I/O queue, and again on every reconnect.
	 * Copied at connect; never part of a message. */
	const char *dhchap_secret;      /* the host's secret; NULL (default): none */
	const char *dhchap_ctrl_secret; /* the controller's: also authenticate the
					 * controller (bidirectional); needs dhchap_secret */
	/* version 0.4: PCIe ordering of the HCA's DMA into and out of data
	 * regions (nvmeof_mr_*: host and GPU). false (default): registered with
	 * IBV_ACCESS_RELAXED_ORDERING, as SPDK and the kernel's mlx5 do, which
	 * GPUDirect RDMA needs for full rate on many platforms; an optional
	 * flag that providers without it (rxe) ignore. Before 0.4 regions were
	 * strictly ordered: true restores that, for a consumer that polls the
	 * data itself for a flag written last (completions stay ordered either
	 * way). */
	bool strict_ordering;
	/* version 0.4: NIC completion timestamps. true: each I/O queue's CQ
	 * reports the HCA's clock for every completion (ibv_create_cq_ex,
	 * IBV_WC_EX_WITH_COMPLETION_TIMESTAMP), and the queue keeps each
	 * command's time from its send completion to its response's arrival
	 * as the NIC saw them (nvmeof_queue_hw_latency): the fabric and the
	 * target, without host software. A device that reports no completion
	 * timestamps (Soft-RoCE) fails the connect with NVMEOF_ENOTSUP. */
	bool hw_timestamps;
	/* version 0.5: in-band authentication, what the host accepts.
	 * With dhchap_ctrl_secret the controller is always authenticated: when
	 * its Connect response does not ask for authentication, the host starts
	 * the transaction itself, and a controller that cannot complete it
	 * fails the connect. true: accept a controller that does not require
	 * authentication without authenticating it (the secret is then used
	 * only when the controller asks). */
	bool allow_unauthenticated_ctrl;
	/* What the host offers in Negotiate, comma-separated: hashes from
	 * "sha256,sha384,sha512", DH groups from "null,ffdhe2048,ffdhe3072,
	 * ffdhe4096,ffdhe6144,ffdhe8192" (e.g. leave out "null" to insist on a
	 * DH exchange). NULL (default): all of them; the controller chooses. */
	const char *dhchap_hashes;
	const char *dhchap_dhgroups;
	/* version 0.6: the transport. NULL or "rdma" (default): NVMe/RDMA;
	 * "tcp": NVMe/TCP (trsvcid the TCP port, src_addr the local address
	 * to bind). Over TCP there are no NIC completion timestamps
	 * (hw_timestamps is refused), no completion vectors and no GPU
	 * buffers (nvmeof_mr_register_cuda is refused). */
	const char *trtype;
	/* NVMe/TCP's header and data digests (CRC32C): asked for in the
	 * ICReq; a controller that does not grant them fails the connect.
	 * Refused over RDMA. false (default): none. */
	bool hdr_digest, data_digest;
	/* version 0.6: socket options of every NVMe/TCP queue, as a latency
	 * user sets them. Refused over RDMA; a value the kernel refuses
	 * (EPERM: a priority above 6, or busy polling longer than
	 * net.core.busy_read, without CAP_NET_ADMIN; ENOPROTOOPT: a kernel
	 * without busy polling) fails the connect, naming the option.
	 * tcp_priority: SO_PRIORITY (the queueing discipline's band, the VLAN
	 * priority), 0 to 15; -1 (default): the system's.
	 * tcp_tos: IP_TOS, or IPV6_TCLASS over IPv6 (DSCP in the upper six
	 * bits), 0 to 255; -1 (default): the system's.
	 * tcp_busy_poll_us: SO_BUSY_POLL on the sockets, 0 to 1000000 (drivers
	 * with NAPI busy polling); 0 (default): the system's
	 * (net.core.busy_read). The library's socket reads never block, so
	 * any value above 0 acts as an on switch: each read polls the NIC's
	 * receive queue once, whatever the microseconds. A sleeping wait
	 * (epoll_wait) follows net.core.busy_poll instead. */
	int32_t tcp_priority;
	int32_t tcp_tos;
	uint32_t tcp_busy_poll_us;
	/* version 0.6: NVMe/TCP write data sent with MSG_ZEROCOPY: a write's
	 * H2CData payload of at least this many bytes goes from the command's
	 * buffer without a copy into the socket (SO_ZEROCOPY on every queue's
	 * socket; a kernel that refuses it fails the connect, naming it), and
	 * the write completes only once the kernel reports it is done with the
	 * buffer. Whether the NIC really sent without copying, the kernel
	 * says per send: nvmeof_queue_tcp_zerocopy. Over a loopback or a
	 * virtual device the kernel copies anyway. Refused over RDMA. 0
	 * (default): every payload is copied into the socket. */
	uint32_t tcp_zerocopy;
	/* version 0.6: SQ flow control disabled (nvme-cli's --disable-sqflow):
	 * each Fabrics Connect, the admin queue's and every I/O queue's, sets
	 * CATTR bit 2, as the Linux host does. The controller then stops
	 * reporting its SQ head (SQHD FFFFh), which the library never waits on
	 * (a queue never has more commands out than its slots), and may answer
	 * a successful read with its C2HData PDU alone (the SUCCESS flag), no
	 * CapsuleResp: one PDU per read instead of two (nvmet does; SPDK's
	 * target does since 2026-05). Refused over RDMA, where a read's data
	 * and its response are separate work requests either way. false
	 * (default): SQ flow control on, as the kernel and SPDK hosts leave it. */
	bool disable_sqflow;
	/* version 0.6: TLS 1.3 on every NVMe/TCP queue (TP 8011), with a
	 * pre-shared key only, as nvme-cli's --tls: after the TCP connect and
	 * before the ICReq a handshake with the PSK identity NVMe0RHH
	 * <hostnqn> <subnqn> and the TLS PSK derived from tls_key, then every
	 * record through the kernel's kTLS where it has the tls module, else
	 * through OpenSSL. tls_key: the configured
	 * PSK in the interchange form nvme gen-tls-key prints,
	 * NVMeTLSkey-1:HH:<base64>: (HH 01 a 32-byte key, cipher suite
	 * TLS_AES_128_GCM_SHA256; 02 a 48-byte one, TLS_AES_256_GCM_SHA384);
	 * copied at connect, never part of a message. tls needs tls_key, and
	 * tls_key needs tls; both are refused over RDMA. A controller that
	 * refuses the PSK fails the connect with a message naming the step. */
	bool tls;
	const char *tls_key;
	/* version 0.6: the TLS PSK from a kernel keyring instead, as nvme-cli
	 * (gen-tls-key --insert), the kernel host and tlshd keep it: keyring
	 * tls_keyring (".nvme", the nvme-keyring module's, or another by
	 * name), key type "psk", described by its PSK identity, holding the
	 * TLS PSK. Looked up at connect, SHA-384's identity before SHA-256's
	 * as the kernel host does; a tls_key given wins over the keyring.
	 * Reading a key in .nvme needs root. Needs tls. NULL: no keyring. */
	const char *tls_keyring;
	/* version 0.6: the PSK identity offered: 0 (default), NVMe0RHH
	 * <hostnqn> <subnqn>, what SPDK's target, nvmet and the kernel host
	 * know; 1, NVMe1RHH <hostnqn> <subnqn> <PSK digest> (NVMe/TCP 1.1),
	 * which nvmet takes through tlshd where its keyring holds it. With
	 * tls_keyring and 1, the keyring's key whose identity has that
	 * host and subsystem and a digest. */
	uint8_t tls_identity;
	/* version 0.6: the TLS PSK derived from tls_key as libnvme up to 1.14
	 * and nvme-cli up to 2.14 did (nvme-cli's --compat): what keyrings
	 * filled by those hold, and so what a target whose tlshd reads such a
	 * keyring expects. Needs tls_key. false: the specification's way. */
	bool tls_compat;
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
	uint32_t in_capsule_max; /* bytes a write may carry in-capsule; 0 = off (NVMe/TCP: always IOCCSZ's) */
	char hca[64];            /* ibverbs device the connection resolved to */
	uint8_t port_num;
	uint16_t crdt[3];        /* Command Retry Delay Times 1..3, 100 ms units */
	/* Identify Controller, for log pages and events */
	uint8_t aerl;            /* Asynchronous Event Request Limit, 0-based */
	uint8_t elpe;            /* Error Log Page Entries, 0-based */
	uint8_t lpa;             /* Log Page Attributes (bit 2: offsets) */
	uint8_t cntrltype;       /* 1 I/O, 2 discovery, 3 administrative; 0 not reported */
	uint32_t oaes;           /* Optional Asynchronous Events Supported */
	/* version 0.3: in-band authentication (DH-HMAC-CHAP) of the admin
	 * queue's current association */
	uint8_t auth_hash;       /* 0: not authenticated; 1 SHA-256, 2 SHA-384, 3 SHA-512 */
	uint8_t auth_dhgroup;    /* 0 null, 1 ffdhe2048, 2 ffdhe3072, 3 ffdhe4096, 4 ffdhe6144, 5 ffdhe8192 */
	bool auth_bidirectional; /* the controller proved its secret too */
	uint32_t auth_io_queues; /* I/O queue connects (creations and reconnects) that authenticated */
	/* version 0.4 */
	int comp_vectors;        /* the HCA's completion vectors (interrupts on real hardware) */
	/* version 0.5 */
	uint16_t cqt;            /* Command Quiesce Time, ms (NVMe Base 2.1, 9.6); 0: not reported */
	bool acre;               /* Advanced Command Retry Enable accepted (Host Behavior
				  * Support): the controller may ask for a Command Retry
				  * Delay (crdt) in a status; asked only when crdt is not 0 */
	/* version 0.6 */
	char netdev[32];         /* NVMe/TCP: the network interface the admin queue's
				  * connection leaves by (its source address's); "" unknown,
				  * and over RDMA (hca names the device) */
};

/* Stable for the controller's life. A Namespace Attribute Changed event
 * refreshes it in place on the event thread, before the callback runs,
 * writing only the fields whose value changed (gone, nuse, a resize's nsze)
 * and each with a relaxed atomic store: a thread that reads those while
 * events may arrive reads them with __atomic_load_n. */
struct nvmeof_ns {
	uint32_t nsid;
	uint32_t lba_size;       /* bytes */
	uint8_t lbads;           /* log2(lba_size) */
	uint16_t ms;             /* metadata bytes per LBA (must be 0 for I/O here) */
	uint64_t nsze, ncap, nuse; /* in LBAs */
	uint8_t nguid[16], eui64[8];
	uint8_t dlfeat;          /* bit 3: Write Zeroes may deallocate; 2:0 what deallocated blocks read */
	bool gone;               /* no longer active (an event said so); I/O fails with the target's status */
	/* version 0.4 (the library owns these structs: appending keeps the ABI) */
	uint32_t anagrpid;       /* ANA Group Identifier (Identify Namespace bytes 95:92); 0: none */
	uint8_t nmic;            /* bit 0: may be reached through several controllers */
};

/* Connects the admin queue, enables the controller, identifies it and its
 * active namespaces. */
int nvmeof_ctrl_connect(const struct nvmeof_ctrl_opts *opts, struct nvmeof_ctrl **out);
/* Shuts the controller down (CC.SHN) and disconnects. Fails with
 * NVMEOF_EBUSY, touching nothing, while queues or registrations remain. */
int nvmeof_ctrl_close(struct nvmeof_ctrl *ctrl);
const struct nvmeof_ctrl_info *nvmeof_ctrl_info(const struct nvmeof_ctrl *ctrl);
/* A consistent copy of the same, safe while a reconnect re-reads the
 * controller's limits on another thread (the pointer above is not). The
 * struct grows with new versions: the macro passes the caller's size, and
 * only that much is written (a program built against an older header gets
 * the fields it knows). The plain function, for programs built before 0.3,
 * writes the 0.1 layout (up to oaes). */
#define nvmeof_ctrl_get_info(ctrl, out) nvmeof_ctrl_get_info_sz((ctrl), (out), sizeof(*(out)))
int nvmeof_ctrl_get_info_sz(struct nvmeof_ctrl *ctrl, struct nvmeof_ctrl_info *out, size_t size);
int (nvmeof_ctrl_get_info)(struct nvmeof_ctrl *ctrl, struct nvmeof_ctrl_info *out);
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
/* The caller must have no command in flight on the region: over NVMe/TCP,
 * where nothing else would keep a late transfer out of freed memory, a
 * region that a command still uses is not released (NVMEOF_EBUSY, the
 * region intact); over RDMA deregistration revokes its key. */
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
/* How a GPU region was registered: "dma-buf, PCIe mapping" (the dma-buf
 * mapped for a PCIe peer, CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE, asked
 * of drivers that offer it: CUDA 12.8+; on Grace-based systems the default
 * mapping is one a NIC cannot use), "dma-buf" (the default mapping, where
 * the driver refused that flag or is older), or "peermem"; NULL for host
 * memory. */
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

/* opts NULL: every default. NVMEOF_ECLOSED while the controller is not
 * live (its association ended: being re-created, or given up): a queue
 * joins only a live association. */
int nvmeof_queue_create(struct nvmeof_ctrl *ctrl, const struct nvmeof_queue_opts *opts,
			struct nvmeof_queue **out);

/* ---- Poll groups -------------------------------------------------------------
 * Queues of one controller that share one completion queue and one completion
 * channel, polled and waited on as one (SPDK's poll group): a thread driving
 * several queue pairs polls once per batch, not once per queue, and sleeps on
 * one channel. Create the group, then queues with nvmeof_queue_opts.group set
 * (up to max_queues, at most 64; one more, or one whose completions a lost
 * connection would flush past the group's CQ on a device with few CQ entries,
 * is refused with NVMEOF_EBUSY). A group and its queues are used from one
 * thread; nvmeof_queue_poll/wait on a member poll the whole group, so its
 * callbacks may run for any member's requests. Destroy the queues first.
 */
struct nvmeof_poll_group;
int nvmeof_poll_group_create(struct nvmeof_ctrl *ctrl, uint32_t max_queues,
			     struct nvmeof_poll_group **out);
/* The same with the group's CQ on completion vector comp_vector, 0 to
 * nvmeof_ctrl_info.comp_vectors - 1: one whose interrupt the polling
 * thread's CPUs serve (its IRQ's affinity in /proc/irq) keeps the wake-ups
 * of a sleeping wait local. -1: spread over the vectors as
 * nvmeof_poll_group_create does. Out of range: NVMEOF_EINVAL, naming the
 * device's count. */
int nvmeof_poll_group_create_on(struct nvmeof_ctrl *ctrl, uint32_t max_queues, int comp_vector,
				struct nvmeof_poll_group **out);
/* With nvmeof_ctrl_opts.hw_timestamps: the time from each command's send
 * completion to its response's arrival, as the HCA clocked them, at the n
 * percentiles pct[] (0 to 100), in ns (within 1/16), into ns[]; *count: the
 * commands measured. NVMEOF_EINVAL for a percentile outside 0 to 100 (or
 * NaN), NVMEOF_ENOTSUP without timestamps. */
int nvmeof_queue_hw_latency(const struct nvmeof_queue *q, const double *pct, unsigned int n, uint64_t *ns,
			    uint64_t *count);
/* Both read the queue's histogram, which the thread polling the queue
 * updates without a lock (the I/O path takes none): call them from that
 * thread, or when the queue is idle (no command outstanding, no poll
 * running), else a count read mid-update may be off by the commands
 * completing meanwhile. */
/* The commands nvmeof_queue_hw_latency leaves out: their response was
 * clocked before their send completion (RC's ACK came late), which says
 * nothing of the fabric's time. NVMEOF_ENOTSUP without timestamps. */
int nvmeof_queue_hw_early(const struct nvmeof_queue *q, uint64_t *early);
/* The completion vector the group's CQ is on. */
int nvmeof_poll_group_comp_vector(const struct nvmeof_poll_group *g);
int nvmeof_poll_group_destroy(struct nvmeof_poll_group *g); /* NVMEOF_EBUSY while queues remain */
/* Completions processed (callbacks run) across the group, or an error. */
int nvmeof_poll_group_poll(struct nvmeof_poll_group *g, uint32_t max);
/* Until min completions across the group, or timeout_ms; as nvmeof_queue_wait. */
int nvmeof_poll_group_wait(struct nvmeof_poll_group *g, uint32_t min, int timeout_ms);
/* In-flight commands are failed with NVMEOF_ECLOSED (their callbacks run).
 * Not from one of the queue's own callbacks (the poll running it still uses
 * the queue): NVMEOF_EBUSY, and the queue is left as it was. Another queue
 * of the same group may be destroyed from a callback. */
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
	/* version 0.5, raw commands only (nvmeof_io_raw, nvmeof_admin_raw):
	 * the rest of the completion queue entry that answered (zero when
	 * none did: err NVMEOF_ETIMEDOUT, NVMEOF_ECLOSED). The library owns
	 * this struct, so appending keeps the ABI. */
	uint16_t sqhd, sqid, cid;
	/* version 0.6: the command failed (err set) while one of its commands
	 * was on the wire when the connection went (err NVMEOF_ETIMEDOUT or
	 * NVMEOF_ECLOSED, or an error of another of its commands): it may
	 * still execute behind the controller. false: it never reached the
	 * wire, or the controller answered all of it. */
	bool in_doubt;
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
/* Posts every submission made since the last commit with one doorbell.
 * Should the post be refused, it returns NVMEOF_ETRANSPORT and the commands
 * that did not go out complete through their callbacks from the next poll
 * or wait: failed, or, when the queue turns out lost and reconnect is
 * configured, sent again on the new connection. A submit never runs a
 * callback, nor reports a refused doorbell: its request completes the same
 * way. */
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
	uint64_t sleeps;          /* waits that slept on the completion channel: the
				   * queue's poll group's, the same for each member */
};
void nvmeof_queue_stats(const struct nvmeof_queue *q, struct nvmeof_queue_stats *out);
/* (0.6) Of those sleeps, the ones that ran to their end instead of being
 * woken by a completion or an event. While commands are in flight to a
 * live target, each one is a completion the wait slept through. */
uint64_t nvmeof_queue_sleep_timeouts(const struct nvmeof_queue *q);
/* (0.6) The queue's poll group's adaptive spin (NVMEOF_WAIT_ADAPTIVE): the
 * share of a hybrid wait's spin it spins now, in percent (100 until it has
 * waited), *lowest (when not NULL) the least it came to, and *empty_polls
 * (when not NULL) the polls of its waits that found nothing. Any mode
 * counts empty polls; the percentages stay 100 outside ADAPTIVE. */
uint32_t nvmeof_queue_spin_share(const struct nvmeof_queue *q, uint32_t *lowest, uint64_t *empty_polls);
/* (0.6) An NVMe/TCP queue's zerocopy sends (tcp_zerocopy): *sends, the
 * sendmsg calls made with MSG_ZEROCOPY; *copied, how many of them the
 * kernel reported it copied after all (SO_EE_CODE_ZEROCOPY_COPIED: a
 * device without scatter-gather, a loopback or virtual path), where no
 * copy was saved. Counted since the queue was created, across reconnects.
 * NVMEOF_EINVAL: not a queue over TCP. */
int nvmeof_queue_tcp_zerocopy(const struct nvmeof_queue *q, uint64_t *sends, uint64_t *copied);
/* (0.6) How an NVMe/TCP queue's commands completed, since it was created,
 * across reconnects: *rsps, by a CapsuleResp; *data_success, by a C2HData
 * PDU with the SUCCESS flag and no CapsuleResp (reads, with
 * disable_sqflow). NVMEOF_EINVAL: not a queue over TCP. */
int nvmeof_queue_tcp_completions(const struct nvmeof_queue *q, uint64_t *rsps, uint64_t *data_success);
/* (0.3) Tries after the first that the queue's connect took (its CM steps
 * and, for an I/O queue, its Fabrics Connect); *ms, when not NULL: how
 * long the connect took. Set when the queue was created; a reconnect
 * counts in nvmeof_queue_stats.reconnects instead. */
uint32_t nvmeof_queue_connect_retries(const struct nvmeof_queue *q, uint64_t *ms);


/* ---- Admin commands: Identify, Get Log Page ----------------------------------
 * Run on the admin queue under its lock, with the command timeout; callable
 * from any thread (never from an I/O or event callback).
 */
#define NVMEOF_IDENTIFY_SIZE 4096
/* Raw Identify data (CNS 00h namespace, 01h controller, 02h active list, ...). */
int nvmeof_identify(struct nvmeof_ctrl *ctrl, uint8_t cns, uint32_t nsid, void *buf);

enum {
	NVMEOF_LOG_ERROR = 0x01,
	NVMEOF_LOG_SMART = 0x02,
	NVMEOF_LOG_FW_SLOT = 0x03,
	NVMEOF_LOG_CHANGED_NS = 0x04,
	NVMEOF_LOG_ANA = 0x0c,
	NVMEOF_LOG_DISCOVERY = 0x70,
};
struct nvmeof_log_req {
	uint8_t lid;             /* log page identifier */
	uint8_t lsp;             /* log specific field (7 bits) */
	bool rae;                /* retain asynchronous event */
	uint32_t nsid;           /* 0 here means the controller (FFFFFFFFh on the wire) */
	uint64_t offset;         /* byte offset into the log (LPOL/LPOU), dword aligned */
	uint16_t lsi;            /* log specific identifier */
};
/* Reads len bytes (dword multiple) of a log page into buf. A read larger than
 * one command may carry is split at increasing offsets, which needs the
 * controller's LPA offset support; NVMEOF_ENOTSUP otherwise. */
int nvmeof_get_log_page(struct nvmeof_ctrl *ctrl, const struct nvmeof_log_req *req, void *buf,
			size_t len);

struct nvmeof_error_entry {        /* Error Information log entry, 64 bytes */
	uint64_t error_count;
	uint16_t sqid, cmdid;
	uint16_t status;           /* Status Field, phase bit dropped */
	uint16_t parm_error_location;
	uint64_t lba;
	uint32_t nsid;
	uint8_t vs, trtype;
	uint64_t cs;
	uint16_t trtype_spec_info;
};
/* The newest max entries (ELPE + 1 at most); *n entries are filled in. */
int nvmeof_get_log_error(struct nvmeof_ctrl *ctrl, struct nvmeof_error_entry *out, uint32_t max,
			 uint32_t *n);

struct nvmeof_smart_log {          /* SMART / Health Information */
	uint8_t critical_warning;
	uint16_t temperature;      /* Kelvin */
	uint8_t avail_spare, spare_thresh, percent_used, endu_grp_crit_warn_sumry;
	uint64_t data_units_read[2], data_units_written[2]; /* 128-bit: [0] low, [1] high */
	uint64_t host_reads[2], host_writes[2], ctrl_busy_time[2], power_cycles[2];
	uint64_t power_on_hours[2], unsafe_shutdowns[2], media_errors[2], num_err_log_entries[2];
	uint32_t warning_temp_time, critical_comp_time;
	uint16_t temp_sensor[8];   /* Kelvin, 0 = not reported */
};
/* nsid 0: the controller as a whole. */
int nvmeof_get_log_smart(struct nvmeof_ctrl *ctrl, uint32_t nsid, struct nvmeof_smart_log *out);
/* Changed Namespace List; *overflow when more than 1024 changed (then the
 * host must rescan all). Reading it with rae false re-arms the event. */
int nvmeof_get_log_changed_ns(struct nvmeof_ctrl *ctrl, bool rae, uint32_t *nsids, uint32_t max,
			      uint32_t *n, bool *overflow);

/* Asymmetric Namespace Access log: raw, then walk it with nvmeof_ana_group. */
struct nvmeof_ana_group {
	uint32_t grpid, nnsids;
	uint64_t chgcnt;
	uint8_t state;             /* 01h optimized, 02h non-optimized, 03h inaccessible,
				    * 04h persistent loss, 0Fh change */
	size_t nsids_off;          /* byte offset of nnsids little-endian NSIDs in the log */
};
int nvmeof_get_log_ana(struct nvmeof_ctrl *ctrl, bool rgo, void *buf, size_t len);
/* The idx-th group descriptor of an ANA log; -1 past the end or when the log
 * is truncated. *chgcnt and *ngrps from the header when non-NULL. */
int nvmeof_ana_group(const void *log, size_t len, uint32_t idx, struct nvmeof_ana_group *g,
		     uint64_t *chgcnt, uint16_t *ngrps);

/* Namespace Identification Descriptor list (Identify CNS 03h). */
struct nvmeof_ns_ids {
	bool has_eui64, has_nguid, has_uuid, has_csi;
	uint8_t eui64[8], nguid[16], uuid[16];
	uint8_t csi;
};
int nvmeof_ns_ids(struct nvmeof_ctrl *ctrl, uint32_t nsid, struct nvmeof_ns_ids *out);

/* ---- Discovery ------------------------------------------------------------------ */
#define NVMEOF_DISCOVERY_NQN "nqn.2014-08.org.nvmexpress.discovery"
/* The NVMe/TCP discovery port (IANA): nvmeof_discovery_connect over TCP
 * uses it when trsvcid is left at nvmeof_ctrl_opts_init's default or NULL;
 * over RDMA discovery stays on 4420. */
#define NVMEOF_TCP_DISC_PORT "8009"

struct nvmeof_disc_entry {
	uint8_t trtype;            /* 1 RDMA, 2 FC, 3 TCP, FEh loop */
	uint8_t adrfam;            /* 1 IPv4, 2 IPv6, 3 IB, 4 FC, FEh loop */
	uint8_t subtype;           /* 1 discovery referral, 2 NVM subsystem, 3 current discovery */
	uint8_t treq;              /* bits 1:0 secure channel, bit 2 SQ flow control disable */
	uint16_t portid, cntlid, asqsz, eflags;
	char trsvcid[33];
	char subnqn[257];
	char traddr[257];
	/* transport specific address subtype (TSAS) */
	uint8_t rdma_qptype;       /* 1 reliable connected, 2 reliable datagram */
	uint8_t rdma_prtype;       /* 1 none, 2 InfiniBand, 3 RoCE, 4 RoCE v2, 5 iWARP */
	uint8_t rdma_cms;          /* 1 RDMA_IP_CM */
	uint16_t rdma_pkey;
	uint8_t tcp_sectype;       /* 0 none, 1 TLS 1.2, 2 TLS 1.3 */
};
struct nvmeof_disc_log {
	uint64_t genctr, numrec;
	uint16_t recfmt;
	uint32_t nentries;
	struct nvmeof_disc_entry *entries;
};
/* A discovery controller: opts->subnqn NULL means the well-known discovery
 * NQN. kato_ms 0 becomes 30000 (a discovery controller that stays connected
 * must keep alive); otherwise, the default's 5000 included, as given. No
 * namespaces, no I/O queues. */
int nvmeof_discovery_connect(const struct nvmeof_ctrl_opts *opts, struct nvmeof_ctrl **out);
/* Reads the whole Discovery Log Page: the header, then the entries four at a
 * time at increasing offsets; starts over (up to 10 times) when GENCTR
 * changed meanwhile. Free with nvmeof_disc_log_free. */
int nvmeof_discover(struct nvmeof_ctrl *ctrl, struct nvmeof_disc_log **out);
void nvmeof_disc_log_free(struct nvmeof_disc_log *log);
/* A log entry as a connect's options: o's trtype, traddr, trsvcid and
 * subnqn point into e (valid while the log is), the rest of o as it was,
 * but for TLS: an NVMe/TCP entry whose port needs it (TREQ "required", or
 * security type TLS 1.3 with TREQ not "not required") sets o->tls when
 * o->tls_key or o->tls_keyring holds a key, as does one where TLS 1.3 is optional. Refused
 * up front, NVMEOF_ENOTSUP with one line naming the subsystem, when the
 * entry needs TLS and o has no key, or asks for what this library does
 * not do: TLS 1.2, a secure channel over RDMA, a transport other than
 * RDMA and TCP. */
int nvmeof_disc_entry_opts(const struct nvmeof_disc_entry *e, struct nvmeof_ctrl_opts *o);
/* nvme-cli's words: "rdma", "ipv4", "nvme subsystem", "connected", ... */
const char *nvmeof_trtype_str(uint8_t v);
const char *nvmeof_adrfam_str(uint8_t v);
const char *nvmeof_subtype_str(uint8_t v);
const char *nvmeof_treq_str(uint8_t v);
const char *nvmeof_eflags_str(uint16_t v);
const char *nvmeof_rdma_qptype_str(uint8_t v);
const char *nvmeof_rdma_prtype_str(uint8_t v);
const char *nvmeof_rdma_cms_str(uint8_t v);
const char *nvmeof_tcp_sectype_str(uint8_t v);

/* ---- Asynchronous events ---------------------------------------------------------
 * nvmeof_ctrl_events enables every notice the controller offers (Set
 * Features Asynchronous Event Configuration: SMART critical warnings and the
 * OAES notices) and keeps AERL + 1 Asynchronous Event Requests outstanding
 * (at most 4). A small thread of the controller polls the admin queue every
 * 20 ms, with or without KATO, so events arrive while nobody calls the
 * library. For each event the library first reads the log page it names
 * (Changed Namespace List, ANA, discovery, SMART / health, error, firmware
 * slot) with RAE cleared, without which the controller reports no further
 * event of that kind; the log helpers above keep RAE as asked, and a read
 * after the event sees the same or newer data. For a Namespace Attribute
 * Changed notice it also updates the namespace table: nvmeof_ns_get
 * finds a namespace that appeared; one that went away is no longer returned,
 * and its struct stays valid with gone set (I/O to it fails with the
 * target's status). Then cb runs, on that thread, with no library lock held;
 * it may call the admin functions above.
 */
enum {
	NVMEOF_AER_ERROR = 0,
	NVMEOF_AER_SMART = 1,
	NVMEOF_AER_NOTICE = 2,
	NVMEOF_AER_CMDSET = 6,
	NVMEOF_AER_VENDOR = 7,
};
enum {
	NVMEOF_AER_NOTICE_NS_CHANGED = 0x00,
	NVMEOF_AER_NOTICE_FW_ACT = 0x01,
	NVMEOF_AER_NOTICE_ANA = 0x03,
	NVMEOF_AER_NOTICE_DISC_CHANGED = 0xf0,
};
struct nvmeof_event {
	uint32_t cdw0;             /* the AER completion's DW0 as received */
	uint8_t type, info, lid;   /* Asynchronous Event Type, Information, Log Page Identifier */
	uint32_t nchanged;         /* NS changed: NSIDs read from the Changed Namespace List */
	uint32_t changed[16];      /* the first 16 of them */
	bool changed_overflow;     /* more than 1024 changed */
};
typedef void (*nvmeof_event_cb)(void *arg, const struct nvmeof_event *ev);
/* Once per controller; cb may be NULL (the namespace table still follows). */
int nvmeof_ctrl_events(struct nvmeof_ctrl *ctrl, nvmeof_event_cb cb, void *arg);
/* Events delivered so far. */
uint64_t nvmeof_ctrl_event_count(struct nvmeof_ctrl *ctrl);

/* ---- More I/O: FUA, Write Zeroes ----------------------------------------------- */
#define NVMEOF_IO_FUA (1u << 0)    /* Force Unit Access: on media before completion */
#define NVMEOF_IO_DEAC (1u << 1)   /* Write Zeroes: the target may deallocate instead */
/* nvmeof_write with flags (NVMEOF_IO_FUA). */
int nvmeof_write_ext(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		     struct nvmeof_mr *mr, size_t off, uint32_t flags, nvmeof_cb cb, void *arg);
int nvmeof_write_ext_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
			  uint32_t nlb, struct nvmeof_mr *mr, size_t off, uint32_t flags,
			  uint32_t timeout_ms);
/* Write Zeroes, split into commands of at most 65536 blocks. NVMEOF_ENOTSUP
 * unless ONCS says the controller supports it; NVMEOF_IO_DEAC also needs the
 * namespace's DLFEAT bit 3. */
int nvmeof_write_zeroes(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
			uint32_t nlb, uint32_t flags, nvmeof_cb cb, void *arg);
int nvmeof_write_zeroes_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba,
			     uint32_t nlb, uint32_t flags, uint32_t timeout_ms);

/* ---- Asymmetric Namespace Access, several paths (version 0.4) -------------------
 * One namespace reached through several controllers of one subsystem, each
 * a path. See docs/library.md "Several paths".
 */
enum {
	NVMEOF_ANA_OPTIMIZED = 0x01,
	NVMEOF_ANA_NONOPTIMIZED = 0x02,
	NVMEOF_ANA_INACCESSIBLE = 0x03,
	NVMEOF_ANA_PERSISTENT_LOSS = 0x04,
	NVMEOF_ANA_CHANGE = 0x0f,
};
/* nvme-cli's words: "optimized", "non-optimized", "inaccessible",
 * "persistent-loss", "change"; "invalid state" otherwise. */
const char *nvmeof_ana_state_str(uint8_t state);

/* Identify Controller's ANA fields. Set size to sizeof(*out) first; the
 * library writes at most size bytes. */
struct nvmeof_ana_caps {
	size_t size;
	uint8_t cmic;              /* bit 3: ANA reporting */
	bool reporting;            /* CMIC bit 3 */
	uint8_t anatt;             /* ANA Transition Time, seconds */
	uint8_t anacap;            /* states the controller reports (bits 0..4), bit 6/7 ANAGRPID rules */
	uint32_t anagrpmax, nanagrpid;
};
int nvmeof_ctrl_ana_caps(struct nvmeof_ctrl *ctrl, struct nvmeof_ana_caps *out);

/* How a command picks its path, named as the kernel names them. Only
 * usable paths count: optimized ones, or non-optimized ones while none is
 * optimized, whose connection is up.
 *  numa         the path whose HCA is on the submitting CPU's NUMA node
 *               (sysfs); among equals, the first: one path carries all
 *  round-robin  each command the next path
 *  queue-depth  the path with the fewest of this queue's commands
 *               outstanding; among equals, the next (the default) */
enum nvmeof_iopolicy {
	NVMEOF_IOPOLICY_QUEUE_DEPTH = 0,
	NVMEOF_IOPOLICY_ROUND_ROBIN = 1,
	NVMEOF_IOPOLICY_NUMA = 2,
};
const char *nvmeof_iopolicy_str(enum nvmeof_iopolicy p);
/* "numa", "round-robin", "queue-depth": 0, or NVMEOF_EINVAL naming them. */
int nvmeof_iopolicy_parse(const char *s, enum nvmeof_iopolicy *out);

struct nvmeof_mpath;
struct nvmeof_mpath_opts {
	size_t size;               /* as struct nvmeof_ctrl_opts */
	uint32_t nsid;             /* the namespace (required) */
	enum nvmeof_iopolicy iopolicy;
	int numa_node;             /* numa: the submitting threads' node; -1 (default): the node
				    * of the CPU that creates each queue */
	const char *sysfs_root;    /* NULL: "/sys" (tests: a fake tree) */
	nvmeof_event_cb event_cb;  /* the controllers' events, after the paths' own handling */
	void *event_arg;
	/* version 0.5: the hold of a lost write (NVMe Base 2.1, 9.6). A write
	 * that was on the wire when its path lost its connection or timed it
	 * out may still be executing behind that path; it is issued again
	 * only after the longer of this and the controller's Command Quiesce
	 * Time, plus two keep-alive timeouts (with keep-alive), have passed
	 * since the loss. 1000 (default); 0: no hold at all, whatever the
	 * controller reports. Reads go again at once. */
	uint32_t quiesce_ms;
};
#define nvmeof_mpath_opts_init(opts) nvmeof_mpath_opts_init_sz((opts), sizeof(*(opts)))
void nvmeof_mpath_opts_init_sz(struct nvmeof_mpath_opts *opts, size_t size);
/* Paths over n connected controllers (at most 16). Refused, naming the
 * paths, when the controllers are not of one subsystem (subsystem NQN), the
 * namespace is missing on one, or its identifiers (NGUID, EUI-64, UUID),
 * block size or size differ. Takes the controllers' events
 * (nvmeof_ctrl_events must not have been called on them; a multipath
 * destroyed before hands them on) to follow ANA changes, and reads each
 * path's ANA log. Each namespace of the subsystem may have its own
 * multipath over the same controllers (all of them get the events); a
 * second one of the same namespace through a controller: NVMEOF_EBUSY. The controllers stay the
 * caller's: close them after nvmeof_mpath_destroy. */
int nvmeof_mpath_create(struct nvmeof_ctrl *const *ctrls, uint32_t n, const struct nvmeof_mpath_opts *opts,
			struct nvmeof_mpath **out);
/* NVMEOF_EBUSY while queues or registrations remain. Waits (up to 30 s,
 * then NVMEOF_ETIMEDOUT) for this multipath's own event_cb if one runs on
 * another thread, never for another multipath's; event_cb itself may
 * destroy a multipath, its own included. */
int nvmeof_mpath_destroy(struct nvmeof_mpath *mp);
const struct nvmeof_ns *nvmeof_mpath_ns(const struct nvmeof_mpath *mp);
uint32_t nvmeof_mpath_count(const struct nvmeof_mpath *mp);
struct nvmeof_path_info {
	size_t size;               /* set by the caller, as nvmeof_ana_caps */
	char traddr[64], trsvcid[8], hca[64];
	uint16_t cntlid;
	uint32_t anagrpid;
	uint8_t ana_state;         /* as last read from the log or told by a status */
	int numa_node;             /* the HCA's, -1 unknown */
	uint64_t ana_changes;      /* times ana_state changed */
	uint64_t ana_reads;        /* ANA log pages read */
};
int nvmeof_mpath_path_info(struct nvmeof_mpath *mp, uint32_t idx, struct nvmeof_path_info *out);
/* Reads every path's ANA log now (an event does the same by itself). */
int nvmeof_mpath_refresh(struct nvmeof_mpath *mp);

/* One buffer registered on every path. */
struct nvmeof_mpath_mr;
int nvmeof_mpath_mr_register(struct nvmeof_mpath *mp, void *addr, size_t len, struct nvmeof_mpath_mr **out);
int nvmeof_mpath_mr_alloc(struct nvmeof_mpath *mp, size_t len, struct nvmeof_mpath_mr **out);
int nvmeof_mpath_mr_release(struct nvmeof_mpath_mr *mmr);
void *nvmeof_mpath_mr_addr(const struct nvmeof_mpath_mr *mmr);

/* A queue on every path (opts as nvmeof_queue_create, per path), used by
 * one thread. Commands go out on the path the policy picks. One that a
 * path fails (SCT 3h path statuses without DNR, a lost connection, a
 * command timeout) is issued again on another usable path; an ANA
 * Transition waits for a usable path up to ANATT; with no usable path a
 * command waits while some path may come back (reconnecting, within its
 * ctrl_loss_tmo) and fails when none can, its message naming the paths. */
struct nvmeof_mpath_queue;
int nvmeof_mpath_queue_create(struct nvmeof_mpath *mp, const struct nvmeof_queue_opts *opts,
			      struct nvmeof_mpath_queue **out);
int nvmeof_mpath_queue_destroy(struct nvmeof_mpath_queue *mq);
int nvmeof_mpath_read(struct nvmeof_mpath_queue *mq, uint64_t slba, uint32_t nlb, struct nvmeof_mpath_mr *mmr,
		      size_t off, nvmeof_cb cb, void *arg);
/* flags: NVMEOF_IO_FUA */
int nvmeof_mpath_write(struct nvmeof_mpath_queue *mq, uint64_t slba, uint32_t nlb, struct nvmeof_mpath_mr *mmr,
		       size_t off, uint32_t flags, nvmeof_cb cb, void *arg);
/* version 0.5: Flush through one path (the namespace's cache is shared);
 * lost with its path, it goes again on another at once. */
int nvmeof_mpath_flush(struct nvmeof_mpath_queue *mq, nvmeof_cb cb, void *arg);
/* With opts->batch, submissions wait for this: one doorbell per path that
 * has any (as nvmeof_queue_commit). A poll posts what failover re-issued. */
int nvmeof_mpath_queue_commit(struct nvmeof_mpath_queue *mq);
int nvmeof_mpath_queue_poll(struct nvmeof_mpath_queue *mq, uint32_t max);
/* Until min requests completed or timeout_ms passed; the count. The wait
 * policy is the paths' queues' (wait_mode, spin_us): spin, then sleep on
 * every path's completion channel at once. */
int nvmeof_mpath_queue_wait(struct nvmeof_mpath_queue *mq, uint32_t min, int timeout_ms);
/* The same over several multipath queues of one thread (a job's queue
 * pairs): min requests of all of them. */
int nvmeof_mpath_queues_wait(struct nvmeof_mpath_queue *const *mqs, uint32_t n, uint32_t min, int timeout_ms);
uint32_t nvmeof_mpath_queue_inflight(const struct nvmeof_mpath_queue *mq);
struct nvmeof_path_stats {
	size_t size;               /* set by the caller (0: the fields up to live) */
	uint64_t cmds;             /* requests issued on the path (failed-over ones again) */
	uint64_t failovers;        /* of them, moved off this path to another */
	uint64_t path_errors;      /* path statuses and lost connections seen on it */
	bool live;                 /* its queue is connected now */
	uint64_t doorbells;        /* ibv_post_send calls on the path's queue */
	/* version 0.5 */
	uint64_t held;             /* writes this path lost, held for the quiesce time before going again */
	uint32_t hold_max_ms;      /* the longest of those holds */
};
int nvmeof_mpath_queue_path_stats(const struct nvmeof_mpath_queue *mq, uint32_t idx, struct nvmeof_path_stats *out);

/* version 0.5: failover measured. One loss of a path's connection as a
 * multipath queue saw it (a lost connection, a command timeout, a refused
 * post), from the first command it handed back; a loss ends when the
 * path's queue is connected again. Times in ms from detected_ms
 * (CLOCK_MONOTONIC); -1: not (yet) happened. */
struct nvmeof_path_loss {
	size_t size;               /* set by the caller, as nvmeof_path_stats */
	uint64_t detected_ms;
	int64_t reissue_ms;        /* the first of its commands issued on another path */
	int64_t complete_ms;       /* the first of them completed on another path */
	uint32_t hold_ms;          /* the longest quiesce-time hold of its writes; 0: none held */
	uint32_t cmds;             /* commands it lost */
};
/* The idx-th loss of path path (the first 8 are kept): the number of
 * losses seen (all of them) or a negative error; out is filled when idx
 * is below both. */
int nvmeof_mpath_queue_path_loss(const struct nvmeof_mpath_queue *mq, uint32_t path, uint32_t idx,
				 struct nvmeof_path_loss *out);
/* Submission-to-completion time of the commands a path failed (a loss or
 * a path status) that another path, or the same one later, then
 * completed (with success or a final status), at the n percentiles pct[] (0 to 100), in
 * ns (within 1/16), as nvmeof_queue_hw_latency; *count: how many. */
int nvmeof_mpath_queue_failover_latency(const struct nvmeof_mpath_queue *mq, const double *pct, unsigned int n,
					uint64_t *ns, uint64_t *count);
/* Disconnects path path's queue through the transport, as a lost
 * connection would (for failover studies: the target is not touched).
 * Its commands fail over from the next poll; with reconnect_delay_ms the
 * queue reconnects as after any loss. */
int nvmeof_mpath_queue_path_disconnect(struct nvmeof_mpath_queue *mq, uint32_t path);
/* ---- Raw commands (version 0.5) -------------------------------------------------
 * A caller's own 64-byte submission queue entry, for commands the library
 * does not wrap (Compare, Verify, reservations, vendor-specific ones), as
 * SPDK's raw commands and nvme-cli's passthru. The library copies the
 * entry at submission and owns, in it:
 *  - the Command Identifier (CDW0 bits 31:16): its own, with a generation,
 *    so a stale answer is never taken for a new command;
 *  - the data pointer (PSDT, CDW0 bits 15:14, and DPTR, bytes 24..39) when
 *    it is given a region: a keyed SGL for (mr, off, len), or, with neither
 *    a region nor NVMEOF_RAW_CALLER_SGL, a null one (no data).
 * Everything else is the caller's, as written (opcode, NSID, CDW2-3, MPTR,
 * CDW10-15). With NVMEOF_RAW_CALLER_SGL the caller wrote DPTR itself as a
 * Keyed SGL Data Block descriptor with an address (SGL identifier 40h);
 * it is checked against the regions registered with this controller
 * (address, length and key inside one of them) and refused with
 * NVMEOF_EINVAL, before anything is sent, when it names anything else (a
 * length of zero: no data) or asks the target to invalidate the key
 * (subtype Fh).
 * Refused before sending too (NVMEOF_EINVAL): a Fabrics command (opcode
 * 7Fh: connection, properties and authentication are the library's), half
 * of a fused pair (FUSE not 00b: the library cannot keep the halves
 * adjacent), on the admin queue an Asynchronous Event Request (events are
 * nvmeof_ctrl_events') and a Set Features of the Keep Alive Timer (the
 * keep-alive schedule follows the KATO negotiated at connect), and data
 * beyond the controller's transfer limit (MDTS, nvmeof_ctrl_info.max_xfer)
 * or the keyed SGL's 16 MiB: a raw command is one command, splitting it is
 * the caller's. Raw admin commands leave the admin queue's last 6 free
 * slots to Keep Alive, events and the library's own commands
 * (NVMEOF_EQFULL). A raw command is never retried by the library (a status
 * without DNR is the caller's to judge); one on the wire when the queue
 * loses its connection fails with NVMEOF_ECLOSED, not sent again on the
 * new one (one not yet sent goes there), and the data direction is the
 * opcode's (bits 1:0): the target reads or writes the region as the
 * command says. GPU regions: the caller keeps the ordering rules of "GPU
 * memory" above on the asynchronous calls; the synchronous ones follow
 * them for the region given (opcode bit 0: data to the controller, bit 1:
 * from it).
 * cpl->cdw0, cdw1, sqhd, sqid, cid and status are the completion queue
 * entry as received (nvmeof_cpl_cqe re-encodes its 16 bytes).
 */
#define NVMEOF_RAW_CALLER_SGL (1u << 0)
/* A region's keys, for a caller that writes its own keyed SGL (rkey) or
 * posts its own verbs (lkey). */
uint32_t nvmeof_mr_rkey(const struct nvmeof_mr *mr);
uint32_t nvmeof_mr_lkey(const struct nvmeof_mr *mr);
/* On an I/O queue: as nvmeof_read (NVMEOF_EQFULL when no slot is free;
 * cb from the queue's poll or wait). */
int nvmeof_io_raw(struct nvmeof_queue *q, const void *sqe, struct nvmeof_mr *mr, size_t off, uint32_t len,
		  uint32_t flags, nvmeof_cb cb, void *arg);
/* Submit and wait; timeout_ms 0: the command timeout. cpl (may be NULL)
 * receives the completion, also when the target answered an error status
 * (the return is then NVMEOF_ENVME and the message names the status for
 * the command's opcode). A command that times out while on the wire takes
 * the queue's connection down (it might still move data), as any command
 * timeout does: the queue reconnects when reconnect is configured, else
 * it fails. */
int nvmeof_io_raw_sync(struct nvmeof_queue *q, const void *sqe, struct nvmeof_mr *mr, size_t off,
		       uint32_t len, uint32_t flags, struct nvmeof_cpl *cpl, uint32_t timeout_ms);
/* On the admin queue, under its lock (callable from any thread, never from
 * a callback). An asynchronous admin command's cb runs on whichever thread
 * polls the admin queue next, with its lock held: nvmeof_admin_poll, a
 * synchronous admin call, the controller's event, keep-alive or reset
 * thread, or, when an I/O queue's loss ends the association, the thread
 * polling that queue (inside its poll); the callback must not call the
 * admin functions, nor poll, wait on or destroy a queue. The admin queue is not
 * reconnected: a synchronous admin command that times out leaves the
 * controller without one (as the library's own commands do). */
int nvmeof_admin_raw(struct nvmeof_ctrl *ctrl, const void *sqe, struct nvmeof_mr *mr, size_t off,
		     uint32_t len, uint32_t flags, nvmeof_cb cb, void *arg);
int nvmeof_admin_raw_sync(struct nvmeof_ctrl *ctrl, const void *sqe, struct nvmeof_mr *mr, size_t off,
			  uint32_t len, uint32_t flags, struct nvmeof_cpl *cpl, uint32_t timeout_ms);
/* Version 0.6: nvmeof_io_raw and nvmeof_admin_raw that also say, in *cid,
 * the Command Identifier the command went out with: the one its
 * completion carries (cpl->cid), for a caller that tracks its commands by
 * CID. NVMEOF_CID_NONE (FFFFh, a CID the library never hands out) when
 * the command was accepted but waits for its queue to reconnect (it gets
 * its CID when sent; cpl->cid says which) and when the call fails. */
#define NVMEOF_CID_NONE 0xffffu
int nvmeof_io_raw_cid(struct nvmeof_queue *q, const void *sqe, struct nvmeof_mr *mr, size_t off, uint32_t len,
		      uint32_t flags, nvmeof_cb cb, void *arg, uint16_t *cid);
int nvmeof_admin_raw_cid(struct nvmeof_ctrl *ctrl, const void *sqe, struct nvmeof_mr *mr, size_t off,
			 uint32_t len, uint32_t flags, nvmeof_cb cb, void *arg, uint16_t *cid);
/* Processes up to max admin completions; the requests completed. */
int nvmeof_admin_poll(struct nvmeof_ctrl *ctrl, uint32_t max);
/* An event loop's wait on a queue (asyncio's add_reader, epoll): the
 * descriptor of its completion channel (its poll group's: one for every
 * member), readable once a completion arrived after nvmeof_queue_arm. The
 * loop's order: poll the queue, arm, poll once more (a completion may have
 * landed before the arm), then, unless nvmeof_queue_pending says the poll
 * left work behind, wait for the descriptor, then poll again.
 * The descriptor says nothing of a lost connection or a command timeout,
 * which a poll notices: a loop that waits longer than about a tenth of
 * the command timeout should poll between waits anyway. NVMEOF_ENOTSUP on
 * a wire without a completion channel. */
int nvmeof_queue_fd(const struct nvmeof_queue *q);
int nvmeof_queue_arm(struct nvmeof_queue *q);
/* (0.6) True when the queue's poll group holds completions no descriptor
 * will announce (more than a poll's batch in the CQ, NVMe/TCP bytes read
 * ahead) or NVMe/TCP data a poll held for a submit (docs/tcp.md): the loop
 * polls again instead of waiting. */
bool nvmeof_queue_pending(const struct nvmeof_queue *q);
/* The 16 bytes of the completion queue entry a raw command's cpl describes
 * (little-endian: DW0, DW1, SQHD, SQID, CID, then the status field above
 * the phase bit, which is 0 here). */
void nvmeof_cpl_cqe(const struct nvmeof_cpl *cpl, uint8_t cqe[16]);

/* ---- Zoned namespaces (version 0.6) ---------------------------------------------
 * The Zoned Namespace Command Set (CSI 02h) over the same queues. A zoned
 * namespace is in the namespace table like any other; reads go as usual,
 * writes must land at a zone's write pointer (or go as Zone Append). See
 * docs/library.md "Zoned namespaces".
 */
struct nvmeof_zns_info {
	bool zoned;            /* the namespace's command set is Zoned Namespace (CSI 02h) */
	uint64_t zone_size;    /* LBAs (ZSZE of the in-use LBA format) */
	uint64_t nr_zones;     /* nsze / zone_size */
	uint32_t max_open;     /* MOR + 1; 0: no limit (MOR FFFFFFFFh) */
	uint32_t max_active;   /* MAR + 1; 0: no limit */
	uint32_t zasl_bytes;   /* Zone Append Size Limit in bytes; 0 when ZASL is 0 (MDTS applies) */
	uint16_t zoc, ozcs;    /* Zone Operation Characteristics, Optional Zoned Command Support */
};
/* Identify CNS 05h/06h CSI 02h and the Namespace Identification Descriptor
 * list; for a conventional namespace: 0 and zoned false, also where the
 * controller refuses the descriptor list (it names no command set: NVM,
 * as the kernel takes it). Admin queue, sync.
 * It also records the controller's ZASL, which nvmeof_zone_append checks. */
int nvmeof_zns_info(struct nvmeof_ctrl *ctrl, uint32_t nsid, struct nvmeof_zns_info *out);
/* Raw Identify data (4096 bytes) of an I/O Command Set: CNS 05h (namespace)
 * or 06h (controller) with csi (02h: Zoned Namespace), as nvmeof_identify. */
int nvmeof_identify_csi(struct nvmeof_ctrl *ctrl, uint8_t cns, uint32_t nsid, uint8_t csi, void *buf);

enum { NVMEOF_ZONE_TYPE_SEQ = 0x2 };
enum { NVMEOF_ZS_EMPTY = 0x1, NVMEOF_ZS_IMP_OPEN = 0x2, NVMEOF_ZS_EXP_OPEN = 0x3, NVMEOF_ZS_CLOSED = 0x4,
       NVMEOF_ZS_READ_ONLY = 0xd, NVMEOF_ZS_FULL = 0xe, NVMEOF_ZS_OFFLINE = 0xf };
struct nvmeof_zone {       /* Zone Descriptor, decoded */
	uint8_t type, state, attrs;
	uint64_t zcap, zslba, wp; /* LBAs */
};
/* "EMPTY", "IMP_OPENED", "EXP_OPENED", "CLOSED", "READONLY", "FULL",
 * "OFFLINE" as nvme-cli's zns plugin prints them; "UNKNOWN" otherwise. */
const char *nvmeof_zone_state_str(uint8_t state);
/* Reporting options (ZRASF) of nvmeof_zone_report's filter */
enum { NVMEOF_ZRASF_ALL = 0, NVMEOF_ZRASF_EMPTY = 1, NVMEOF_ZRASF_IMP_OPEN = 2, NVMEOF_ZRASF_EXP_OPEN = 3,
       NVMEOF_ZRASF_CLOSED = 4, NVMEOF_ZRASF_FULL = 5, NVMEOF_ZRASF_READ_ONLY = 6, NVMEOF_ZRASF_OFFLINE = 7 };
/* Report Zones (Zone Management Receive, ZRA 0h) from slba, the reporting
 * option `filter` (0 all, 1 empty, 2 implicitly open, ...), partial report
 * bit; up to max zones decoded into zones[], their count in *nr. Synchronous
 * on an I/O queue (completions of other commands on the queue run their
 * callbacks meanwhile, as for the other _sync calls); uses the library's own
 * internal region. timeout_ms 0: the command timeout. */
int nvmeof_zone_report(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint8_t filter,
		       bool partial, struct nvmeof_zone *zones, uint32_t max, uint32_t *nr, uint32_t timeout_ms);
/* nvmeof_zone_report that also says, in *total, the Number of Zones field
 * of the report: without the partial bit, every zone from slba that
 * matches the filter (more than max, when the report was cut short). */
int nvmeof_zone_report_ext(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint8_t filter,
			   bool partial, struct nvmeof_zone *zones, uint32_t max, uint32_t *nr, uint64_t *total,
			   uint32_t timeout_ms);
/* Report Zones until every zone from the one holding slba (of the state
 * `filter`) is in zones[], or max: one command carries what fits MDTS, so
 * the next asks from the zone after the last one returned, as the kernel
 * and nvme-cli do. zone_size: nvmeof_zns_info's. *nr: the zones decoded
 * (on a failure, those before it); *total: the first report's Number of
 * Zones. timeout_ms applies to each command. */
int nvmeof_zone_report_all(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t zone_size, uint64_t slba,
			   uint8_t filter, bool partial, struct nvmeof_zone *zones, uint32_t max, uint32_t *nr,
			   uint64_t *total, uint32_t timeout_ms);
enum { NVMEOF_ZSA_CLOSE = 0x1, NVMEOF_ZSA_FINISH = 0x2, NVMEOF_ZSA_OPEN = 0x3, NVMEOF_ZSA_RESET = 0x4,
       NVMEOF_ZSA_OFFLINE = 0x5 };
/* Zone Management Send: the zone at slba, or every zone (select_all). */
int nvmeof_zone_mgmt_send(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint8_t zsa,
			  bool select_all, nvmeof_cb cb, void *arg);
int nvmeof_zone_mgmt_send_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint8_t zsa,
			       bool select_all, uint32_t timeout_ms);
/* Zone Append to the zone starting at zslba; the LBA the controller
 * assigned is in the completion: cpl->cdw0 | (uint64_t)cpl->cdw1 << 32.
 * flags as nvmeof_write_ext (NVMEOF_IO_FUA). An append is never split (its
 * blocks must land together at the one LBA the controller picks): above
 * the controller's ZASL, or the transfer limit, NVMEOF_EINVAL with a
 * message; before nvmeof_zns_info read the ZASL of the queue's controller,
 * NVMEOF_EINVAL too. */
int nvmeof_zone_append(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t zslba, uint32_t nlb,
		       struct nvmeof_mr *mr, size_t off, uint32_t flags, nvmeof_cb cb, void *arg);
int nvmeof_zone_append_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t zslba, uint32_t nlb,
			    struct nvmeof_mr *mr, size_t off, uint32_t flags, uint64_t *alba, uint32_t timeout_ms);

/* ---- Flexible Data Placement (version 0.6) ------------------------------------
 * NVMe Base 2.1 (TP4146). A write names where its data goes with a
 * directive: DTYPE 2h (data placement) and, in DSPEC, a placement
 * identifier (the reclaim unit handle's index in the namespace's list, and
 * the reclaim group above it); DTYPE 1h is the Streams directive. */
enum { NVMEOF_DTYPE_STREAMS = 0x1, NVMEOF_DTYPE_PLACEMENT = 0x2 };
/* A Write whose CDW12 carries dtype (bits 23:20) and CDW13 dspec (bits
 * 31:16); flags: NVMEOF_IO_FUA. dtype 0 is nvmeof_write_ext. With a
 * directive it goes as a raw command (nvmeof_io_raw): one command, at most
 * the controller's transfer limit (no split), and one on the wire when
 * its connection is lost fails with NVMEOF_ECLOSED instead of going again
 * on the next. A controller without the directive may ignore it or fail
 * the write (Invalid Field in Command). */
int nvmeof_write_dspec(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint32_t nlb,
		       struct nvmeof_mr *mr, size_t off, uint32_t flags, uint8_t dtype, uint16_t dspec,
		       nvmeof_cb cb, void *arg);
/* One Reclaim Unit Handle Status descriptor. */
struct nvmeof_ruhs_desc {
	uint16_t pid;    /* Placement Identifier: what a write's DSPEC names */
	uint16_t ruhid;  /* Reclaim Unit Handle Identifier */
	uint32_t earutr; /* Estimated Active Reclaim Unit Time Remaining (seconds) */
	uint64_t ruamw;  /* Reclaim Unit Available Media Writes (logical blocks) */
};
/* The most descriptors one nvmeof_fdp_ruhs returns. */
#define NVMEOF_RUHS_MAX 127
/* I/O Management Receive, Reclaim Unit Handle Status (opcode 12h, MO 1h),
 * synchronously on I/O queue q: up to max descriptors (at most
 * NVMEOF_RUHS_MAX) into out, *nr the number the namespace has, which may
 * be more than max (max 0 asks for the count alone). A namespace or
 * controller without Flexible Data Placement answers an error status
 * (Invalid Command Opcode, Invalid Field in Command), returned as
 * NVMEOF_ENVME with the status named. */
int nvmeof_fdp_ruhs(struct nvmeof_queue *q, const struct nvmeof_ns *ns, struct nvmeof_ruhs_desc *out, uint32_t max,
		    uint32_t *nr, uint32_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
