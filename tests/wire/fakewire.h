/*
 * A loopback stand-in for the RDMA wire, for tests and the per-command
 * micro-benchmark only: every send completes at once and is answered by a
 * response capsule the responder writes. It moves no data. It exists for
 * what the real target cannot be made to do (stale, duplicate, reordered
 * or missing completions) and to measure the core with the wire taken out.
 */
#ifndef NVMEOF_FAKEWIRE_H
#define NVMEOF_FAKEWIRE_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "queue.h"

enum fw_action {
	FW_RESPOND = 0,     /* deliver cqe */
	FW_DROP = 1,        /* never answer (a lost response) */
	FW_DUPLICATE = 2,   /* deliver cqe twice */
	FW_RESP_FIRST = 3,  /* deliver the response before the send completion */
};
/* Sees each command (its SQE and SGEs) and fills the 16-byte cqe, which
 * starts as success for the SQE's CID. */
typedef enum fw_action (*fw_responder)(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge,
				       int nsge, uint8_t *cqe);

struct fake_wire;
struct fake_wire *fw_new(uint32_t depth, fw_responder fn, void *ctx);
void fw_free(struct fake_wire *fw);
/* Delivers a response capsule as if the target sent it: at once, or, when
 * no receive is posted, once one is (RNR retry). -1 when even that is full. */
int fw_inject(struct fake_wire *fw, const uint8_t *cqe);
/* Makes the next poll report a flushed (failed) receive: a lost connection. */
void fw_break(struct fake_wire *fw);
/* The same, with the transport's reason for it (what NVMe/TCP learns from a
 * controller's C2HTermReq): the wire's lost_why says it. */
void fw_break_why(struct fake_wire *fw, const char *why);
/* A new connection on the same wire: nothing pending, nothing posted. */
void fw_reset(struct fake_wire *fw);
/* The next fw_post_send fails (as ibv_post_send can) while the wire stays up. */
void fw_fail_next_post(struct fake_wire *fw);
/* A FAKE transport failure, of a kind the real target cannot be made to
 * produce on demand: the next n connects of the queue on this wire (the
 * transport's reopen) fail with rc, classed cls (enum cr_class,
 * connretry.h), with the message a CM connect timeout gives. */
void fw_fail_connects(struct fake_wire *fw, uint32_t n, int rc, int cls);
/* Connects tried on this wire so far (failed ones included). */
uint32_t fw_connects(const struct fake_wire *fw);
/* The queue has closed its connection (and not reopened it). */
bool fw_closed(const struct fake_wire *fw);
/* Polls of the wire after the queue closed its connection (must stay 0). */
uint32_t fw_polls_after_close(const struct fake_wire *fw);
/* Responses that found no receive posted and had to wait (RNR NAKs). */
uint32_t fw_rnr_count(const struct fake_wire *fw);
/* Delivers a response capsule of only len bytes (a malformed one). */
int fw_inject_len(struct fake_wire *fw, const uint8_t *cqe, uint32_t len);

int fw_post_send(struct fake_wire *fw, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int fw_post_recv(struct fake_wire *fw, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int fw_poll(struct fake_wire *fw, int n, struct ibv_wc *wc);
/* The same with each completion's "NIC clock" (fw_clock) in ts (NULL: not wanted). */
int fw_poll_ts(struct fake_wire *fw, int n, struct ibv_wc *wc, uint64_t *ts);
/* What the wire's completions are stamped with from now on, as a NIC with
 * completion timestamps would: send completions with send, receives with
 * recv (HCA clock ticks). */
void fw_clock(struct fake_wire *fw, uint64_t send, uint64_t recv);

/* A poll group whose CQ is the wire cq; a queue opened with it in
 * q_params.group sends its completions there (fw_share_cq). */
int fw_group_create(struct fake_wire *cq, uint32_t max_queues, struct nvmeof_poll_group **out);
void fw_share_cq(struct fake_wire *fw, struct fake_wire *cq);
/* A queue on the test wire: no controller, no device, no registration. */
int q_open_fake(const struct q_params *p, struct fake_wire *fw, struct nvmeof_queue **out);

#endif
