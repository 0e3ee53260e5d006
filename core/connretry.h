/*
 * Connect retries: which failures of a queue's connect may succeed when
 * tried again, how long to wait before the next try, and how many tries a
 * queue gets. Policy only (no verbs, no queue): the RDMA transport and the
 * controller classify their failures here, the queue's connect loop
 * (q_connect_tries) and the controller's Fabrics Connect loop ask cr_again.
 *
 * The policy:
 *  - retried: RDMA_CM_EVENT_CONNECT_ERROR, a CM reject for lack of
 *    resources, a timeout or a stale connection, an NVMe/RDMA reject "no
 *    resources"; a Fabrics Connect (the admin queue's first one too), or
 *    its authentication, that timed out or whose connection failed, or that the target answered Controller Busy or Command
 *    Interrupted (a Command Sequence Error too when an earlier try's
 *    Connect timed out: the target may still hold that try's queue);
 *  - retried only once this host has reached the target (an I/O queue, whose
 *    controller's admin queue got through): silence (a CM step, CM connect
 *    or address or route resolution, with no answer in connect_timeout_ms,
 *    RDMA_CM_EVENT_UNREACHABLE) and address and route resolution errors.
 *    A first contact (the admin queue) met by silence fails at once: the
 *    address is wrong or down, and a caller that knows better (the fio
 *    engine, whose probe reached the target) retries the controller;
 *  - never retried: refusals (nobody listens on the port, NVMe/RDMA rejects
 *    other than no resources, Connect Invalid Host, Invalid Parameters,
 *    Incompatible Format, any other NVMe status), local errors (no device,
 *    out of memory, bad arguments).
 * Budget: connect_retries tries after the first (nvmeof_ctrl_opts), shared
 * by the CM steps and the Fabrics Connect of one queue; before try k+1 a
 * backoff of 100 ms << k, at most 1600 ms, plus up to 99 ms of per-queue
 * jitter so queues that failed together do not retry together.
 */
#ifndef NVMEOF_CONNRETRY_H
#define NVMEOF_CONNRETRY_H

#include <stdbool.h>
#include <stdint.h>

enum cr_class {
	CR_FINAL = 0,         /* a refusal or a local error: never retried */
	CR_TRANSIENT = 1,     /* may succeed when tried again */
	CR_TRANSIENT_REACHED = 2, /* so too, once this host has reached the target */
};

struct conn_retry {
	uint32_t max;          /* tries allowed after the first */
	uint32_t retries;      /* taken so far */
	uint64_t t0_ms;        /* the first try began */
	bool reached;          /* this host has reached the target before */
	bool connect_timed_out; /* an earlier try's Fabrics Connect timed out */
	uint32_t salt;         /* per queue: the backoff's jitter */
	void (*sleep_ms)(uint32_t ms); /* NULL: nanosleep (tests count the waits) */
};

void cr_init(struct conn_retry *r, uint32_t max, bool reached, uint32_t salt);
/* A CM event other than the one awaited (rdma_cm_event_type, its status;
 * has_sts: a reject carried NVMe/RDMA status sts). */
enum cr_class cr_cm_event(int event, int status, bool has_sts, uint16_t sts);
/* A Fabrics Connect, or the authentication after it, that failed with rc
 * (NVMEOF_E*; status when ENVME: of the Connect or of the AUTH_Send or
 * AUTH_Receive that failed). A status with Do Not Retry is final. */
enum cr_class cr_fabrics(int rc, uint16_t status, bool earlier_timeout);
/* A reconnect's (or reassociation's) Fabrics Connect or authentication that
 * failed with rc (status when ENVME): true when no later attempt can do
 * better, so none is made (as the kernel host's nvmf_should_reconnect): a
 * status with Do Not Retry, an authentication the controller refused or
 * failed (NVMEOF_EINVAL: its Failure1, a wrong response, a protocol
 * violation; auth_tx.c), or one that cannot be done (NVMEOF_ENOTSUP: a
 * hash or group we did not offer, TLS asked). Anything else (a lost
 * connection, a timeout, a status without DNR) is tried again. */
bool cr_reconnect_final(int rc, uint16_t status);
/* The wait before try retry + 2 (retry: retries taken so far). */
uint32_t cr_backoff_ms(uint32_t retry, uint32_t salt);
/* After a try failed with rc, of class cls: true when another try may go
 * (the backoff slept, the retry counted); false when not, and then the
 * thread's error message says how many tries and how long it took, where
 * more than one try was possible. */
bool cr_again(struct conn_retry *r, int rc, enum cr_class cls);

#endif
