/*
 * What a queue needs from its wire, as a table of operations (the way the
 * kernel's nvme-rdma sits behind nvme_ctrl_ops and SPDK's transports behind
 * spdk_nvme_transport_ops). The queue logic never names a transport: the
 * RDMA transport (qrdma.c over rdma.c) and the NVMe/TCP one (qtcp.c over
 * tcp_conn.c) are the ones the library ships; the
 * loopback test wire (tests/wire) is linked only into tests and the
 * per-command micro-benchmark.
 *
 * Work requests and completions are verbs' own structures: the queue builds
 * them once per slot at setup, so no transport translates on the I/O path.
 */
#ifndef NVMEOF_TRANSPORT_H
#define NVMEOF_TRANSPORT_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

struct nvmeof_queue;
struct nvmeof_poll_group;

struct q_transport {
	const char *name;
	/* the data path: c is the queue's connection (q->trc) */
	int (*post_send)(void *c, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
	int (*post_recv)(void *c, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
	/* ts (NULL: not wanted): each completion's NIC clock, where the CQ
	 * was opened with timestamps */
	int (*poll)(void *c, int n, struct ibv_wc *wc, uint64_t *ts);
	/* waiting: request a completion event (then poll once more), and sleep
	 * until one comes: 1 event, 0 timeout, 2 no sleep (pending work, below),
	 * <0 error. NULL arm: the wire cannot
	 * sleep, waits spin. poll, arm and sleep take a queue's connection or a
	 * poll group's CQ (its cqc): the same operations drive both. sleep
	 * serves only a wire without wait_fd, take_event and event_fd (below):
	 * with them a group's sleep polls those descriptors itself (wait.c),
	 * so a wire that has them may leave sleep NULL (NVMe/TCP does). */
	int (*arm)(void *c);
	int (*sleep)(void *c, int timeout_ms);
	/* work the transport already holds, which wakes no descriptor
	 * (completions taken off the wire but not polled, bytes read ahead):
	 * a sleep polls again instead. NULL: the wire keeps nothing back. */
	bool (*pending)(void *cqc);
	/* sends what the polls held for the caller's next submit (NVMe/TCP's
	 * H2CData): called before any pause that does not arm (a nap, a
	 * yield), since the controller waits for that data. NULL: nothing
	 * is ever held. */
	void (*flush)(void *cqc);
	/* what a sleep over a poll group also watches: the completion
	 * channel's descriptor (of cqc) and each member connection's CM
	 * channel (of c; -1 when it has none), so that a disconnect wakes the
	 * sleeper and a sleep need not end every HOUSEKEEP_MS to look for one.
	 * NULL: sleeps last HOUSEKEEP_MS at most. */
	int (*wait_fd)(void *cqc);
	int (*take_event)(void *cqc); /* the channel's event, once wait_fd polled ready: 1 */
	int (*event_fd)(void *c);
	/* connection state: a non-blocking check that the peer is gone, and
	 * moving our side to error so every posted request is flushed back */
	bool (*disconnected)(void *c);
	void (*disconnect)(void *c);
	/* what ended the connection, in words, where the transport knows more
	 * than that it ended (a controller's TermReq, a PDU it refused); NULL:
	 * nothing to add. NULL op: never. */
	const char *(*lost_why)(void *c);
	/* the network interface the connection leaves by, "" unknown; NULL:
	 * the transport names a device of its own (an HCA) */
	void (*netdev)(void *c, char *out, size_t len);
	/* the controller's in-capsule data size, from the association's
	 * IOCCSZ, where the transport frames by it (a reconnect's new
	 * association may report another); NULL: the transport does not */
	void (*set_wire_icd)(void *c, uint32_t bytes);
	/* a new connection for the same queue after a loss, with every receive
	 * posted; *usable: how many commands the target takes at once
	 * (CRQSIZE). Slots, requests and the queue's state are the caller's
	 * business. close releases the connection, and may be called again. */
	int (*reopen)(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms, uint32_t *usable);
	void (*close)(struct nvmeof_queue *q);
	/* what the transport keeps beside the queue (c), when the queue is
	 * freed; NULL: nothing (RDMA's connection is inside the queue) */
	void (*release)(void *c);
	/* the completion queue of a poll group (every queue is in one; a
	 * queue alone is a group of one) of cqe entries on device dev: sets
	 * g->cqc, what poll, arm and sleep then take, and g->cqe_cap */
	int (*cq_open)(struct nvmeof_poll_group *g, void *dev, int cqe, int vector); /* g->hw_ts: with timestamps */
	void (*cq_close)(struct nvmeof_poll_group *g);
};

#endif
