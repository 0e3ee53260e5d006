/* Loopback test wire; see fakewire.h. Tests only: never in a library. */
#include <stdlib.h>
#include <string.h>

#include "fakewire.h"
#include "protocol.h"
#include "qpriv.h"

#define RNR_CAP 1024

struct fake_wire {
	struct ibv_wc *wc;           /* pending completions, a ring */
	uint64_t *ts;                /* each one's "NIC clock" (fw_clock) */
	uint64_t clock_send, clock_recv; /* what sends' and receives' completions are stamped with */
	uint32_t cap, head, n;
	struct ibv_recv_wr *recv;    /* posted receives, a ring (copies) */
	struct ibv_sge *recv_sge;
	uint32_t rcap, rhead, rn;
	uint8_t (*rnr)[NVME_CQE_SIZE]; /* responses waiting for a receive: RNR retry */
	uint32_t rnr_head, rnr_n;
	fw_responder fn;
	void *ctx;
	struct fake_wire *cq;        /* where its completions go: itself, or a poll group's wire */
	bool broken, fail_post, closed;
	const char *why;             /* fw_break_why */
	uint32_t polls_after_close;
	uint32_t rnr_count;
	uint32_t fail_connects, connects; /* fw_fail_connects */
	int fail_rc, fail_cls;
};

struct fake_wire *fw_new(uint32_t depth, fw_responder fn, void *ctx)
{
	struct fake_wire *fw = calloc(1, sizeof(*fw));
	if (!fw)
		return NULL;
	fw->cap = 4 * depth + 16;
	fw->rcap = depth + 16;
	fw->wc = calloc(fw->cap, sizeof(*fw->wc));
	fw->ts = calloc(fw->cap, sizeof(*fw->ts));
	fw->recv = calloc(fw->rcap, sizeof(*fw->recv));
	fw->recv_sge = calloc(fw->rcap, sizeof(*fw->recv_sge));
	fw->rnr = calloc(RNR_CAP, sizeof(*fw->rnr));
	fw->fn = fn;
	fw->ctx = ctx;
	fw->cq = fw;
	if (!fw->wc || !fw->recv || !fw->recv_sge || !fw->rnr) {
		fw_free(fw);
		return NULL;
	}
	return fw;
}

void fw_free(struct fake_wire *fw)
{
	if (!fw)
		return;
	free(fw->wc);
	free(fw->ts);
	free(fw->recv);
	free(fw->recv_sge);
	free(fw->rnr);
	free(fw);
}

/* The ring's next free entry (NULL when full) with wr_id, opcode and status
 * set, the rest zero. */
static inline struct ibv_wc *push(struct fake_wire *qw, uint64_t wr_id, enum ibv_wc_opcode op,
				  enum ibv_wc_status st)
{
	struct fake_wire *fw = qw->cq;
	if (fw->n == fw->cap)
		return NULL; /* a full CQ loses completions, as a real one overruns */
	uint32_t at = fw->head + fw->n++;
	if (at >= fw->cap)
		at -= fw->cap;
	struct ibv_wc *w = &fw->wc[at];
	*w = (struct ibv_wc){.wr_id = wr_id, .opcode = op, .status = st};
	fw->ts[at] = op == IBV_WC_RECV ? qw->clock_recv : qw->clock_send;
	return w;
}

static inline void deliver(struct fake_wire *fw, const uint8_t *cqe, uint32_t len)
{
	uint32_t i = fw->rhead;
	fw->rhead = fw->rhead + 1 == fw->rcap ? 0 : fw->rhead + 1;
	fw->rn--;
	memcpy((void *)(uintptr_t)fw->recv_sge[i].addr, cqe, len);
	struct ibv_wc *w = push(fw, fw->recv[i].wr_id, IBV_WC_RECV, IBV_WC_SUCCESS);
	if (w)
		w->byte_len = len;
}

int fw_inject_len(struct fake_wire *fw, const uint8_t *cqe, uint32_t len)
{
	if (!fw->rn || len > NVME_CQE_SIZE)
		return -1;
	deliver(fw, cqe, len);
	return 0;
}

void fw_reset(struct fake_wire *fw)
{
	fw->head = fw->n = 0;
	fw->rhead = fw->rn = 0;
	fw->rnr_head = fw->rnr_n = 0;
	fw->broken = fw->fail_post = fw->closed = false;
}

void fw_fail_next_post(struct fake_wire *fw) { fw->fail_post = true; }

void fw_fail_connects(struct fake_wire *fw, uint32_t n, int rc, int cls)
{
	fw->fail_connects = n;
	fw->fail_rc = rc;
	fw->fail_cls = cls;
}

uint32_t fw_connects(const struct fake_wire *fw) { return fw->connects; }
uint32_t fw_polls_after_close(const struct fake_wire *fw) { return fw->polls_after_close; }
bool fw_closed(const struct fake_wire *fw) { return fw->closed; }
uint32_t fw_rnr_count(const struct fake_wire *fw) { return fw->rnr_count; }

int fw_inject(struct fake_wire *fw, const uint8_t *cqe)
{
	if (fw->rn && !fw->rnr_n) {
		deliver(fw, cqe, NVME_CQE_SIZE);
		return 0;
	}
	/* No receive posted: an RC sender gets an RNR NAK and retries (we
	 * connect with rnr_retry 7, forever), so the capsule waits, in order. */
	fw->rnr_count++;
	if (fw->rnr_n == RNR_CAP)
		return -1;
	memcpy(fw->rnr[(fw->rnr_head + fw->rnr_n++) % RNR_CAP], cqe, NVME_CQE_SIZE);
	return 0;
}

/* The QP went to error: what was posted comes back flushed, in order after
 * what is already in the CQ. */
static void flush_recvs(struct fake_wire *fw)
{
	while (fw->rn) {
		push(fw, fw->recv[fw->rhead].wr_id, IBV_WC_RECV, IBV_WC_WR_FLUSH_ERR);
		fw->rhead = (fw->rhead + 1) % fw->rcap;
		fw->rn--;
	}
}

void fw_break(struct fake_wire *fw)
{
	fw->broken = true;
	flush_recvs(fw);
}

void fw_break_why(struct fake_wire *fw, const char *why)
{
	fw->why = why;
	fw_break(fw);
}

void fw_share_cq(struct fake_wire *fw, struct fake_wire *cq) { fw->cq = cq; }

int fw_post_send(struct fake_wire *fw, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	for (; wr; wr = wr->next) {
		const uint8_t *sqe = (const uint8_t *)(uintptr_t)wr->sg_list[0].addr;
		uint8_t cqe[NVME_CQE_SIZE] = {0};
		if (fw->broken) {
			*bad = wr;
			return 107; /* ENOTCONN */
		}
		if (fw->fail_post) {
			fw->fail_post = false;
			*bad = wr;
			return 12; /* ENOMEM: a full send queue */
		}
		put_le16(cqe + 12, nvme_sqe_cid(sqe));
		enum fw_action a = fw->fn ? fw->fn(fw->ctx, sqe, wr->sg_list, wr->num_sge, cqe) : FW_RESPOND;
		if (a == FW_RESP_FIRST)
			fw_inject(fw, cqe);
		push(fw, wr->wr_id, IBV_WC_SEND, IBV_WC_SUCCESS);
		if (a == FW_RESPOND || a == FW_DUPLICATE)
			fw_inject(fw, cqe);
		if (a == FW_DUPLICATE)
			fw_inject(fw, cqe);
	}
	return 0;
}

int fw_post_recv(struct fake_wire *fw, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	for (; wr; wr = wr->next) {
		if (fw->rn == fw->rcap) {
			*bad = wr;
			return 12; /* ENOMEM */
		}
		uint32_t i = (fw->rhead + fw->rn++) % fw->rcap;
		fw->recv[i] = *wr;
		fw->recv_sge[i] = wr->sg_list[0];
	}
	if (fw->broken)
		flush_recvs(fw);
	while (fw->rnr_n && fw->rn) {
		deliver(fw, fw->rnr[fw->rnr_head], NVME_CQE_SIZE);
		fw->rnr_head = (fw->rnr_head + 1) % RNR_CAP;
		fw->rnr_n--;
	}
	return 0;
}

int fw_poll(struct fake_wire *fw, int n, struct ibv_wc *wc) { return fw_poll_ts(fw, n, wc, NULL); }

void fw_clock(struct fake_wire *fw, uint64_t send, uint64_t recv)
{
	fw->clock_send = send;
	fw->clock_recv = recv;
}

int fw_poll_ts(struct fake_wire *fw, int n, struct ibv_wc *wc, uint64_t *ts)
{
	int k = 0;
	if (fw->closed)
		fw->polls_after_close++;
	/* at most two runs of the ring */
	while (fw->n && k < n) {
		uint32_t run = fw->cap - fw->head;
		if (run > fw->n)
			run = fw->n;
		if (run > (uint32_t)(n - k))
			run = (uint32_t)(n - k);
		memcpy(&wc[k], &fw->wc[fw->head], run * sizeof(*wc));
		if (ts)
			memcpy(&ts[k], &fw->ts[fw->head], run * sizeof(*ts));
		k += (int)run;
		fw->head = fw->head + run == fw->cap ? 0 : fw->head + run;
		fw->n -= run;
	}
	return k;
}

/* ---- the wire as a queue's transport ---- */

static int op_post_send(void *c, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return fw_post_send(c, wr, bad);
}
static int op_post_recv(void *c, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return fw_post_recv(c, wr, bad);
}
static int op_poll(void *c, int n, struct ibv_wc *wc, uint64_t *ts) { return fw_poll_ts(c, n, wc, ts); }
static void op_disconnect(void *c) { (void)c; }
static const char *op_lost_why(void *c)
{
	struct fake_wire *fw = c;
	return fw->broken ? fw->why : NULL;
}
static void op_close(struct nvmeof_queue *q) { ((struct fake_wire *)q->trc)->closed = true; }

/* A reconnect on the same wire: a fresh connection with nothing pending. */
static int op_reopen(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms, uint32_t *usable)
{
	struct fake_wire *fw = q->trc;
	(void)cntlid;
	fw->connects++;
	if (fw->fail_connects) {
		fw->fail_connects--;
		q->conn_class = (uint8_t)fw->fail_cls;
		return nvmeof_err(fw->fail_rc, "CM connect: no answer within %u ms (a fake failure of the test wire)",
				  timeout_ms);
	}
	fw_reset(q->trc);
	*usable = q->depth;
	return q_post_all_recvs(q);
}

/* A poll group's CQ on this wire is the wire itself. */
static int op_cq_open(struct nvmeof_poll_group *g, void *dev, int cqe, int vector)
{
	(void)cqe;
	(void)vector;
	g->cqc = dev;
	g->cqe_cap = UINT32_MAX;
	return 0;
}
static void op_cq_close(struct nvmeof_poll_group *g) { (void)g; }

/* No completion channel: waits on this wire spin (arm and sleep NULL). */
static const struct q_transport fw_transport = {
	.name = "test wire",
	.post_send = op_post_send,
	.post_recv = op_post_recv,
	.poll = op_poll,
	.disconnect = op_disconnect,
	.lost_why = op_lost_why,
	.reopen = op_reopen,
	.close = op_close,
	.cq_open = op_cq_open,
	.cq_close = op_cq_close,
};

int fw_group_create(struct fake_wire *cq, uint32_t max_queues, struct nvmeof_poll_group **out)
{
	return q_group_create(&fw_transport, cq, NULL, max_queues, 0, 0, false, NVMEOF_WAIT_POLL, 0, out);
}

int q_open_fake(const struct q_params *p, struct fake_wire *fw, struct nvmeof_queue **out)
{
	struct nvmeof_queue *q = calloc(1, sizeof(*q));
	int rc;
	*out = NULL;
	if (!q)
		return nvmeof_err(NVMEOF_ENOMEM, "queue: out of memory");
	q_init(q, p);
	q->tr = &fw_transport;
	q->trc = fw;
	if (p->group)
		fw_share_cq(fw, p->group->cqc);
	uint32_t usable = q->depth;
	/* connected as the RDMA transport is: tried again as p->retry allows */
	if ((rc = q_alloc(q)) || (rc = p->group ? q_group_join(p->group, q) : q_group_of_one(q, fw)) ||
	    (rc = q_connect_tries(q, p->cntlid, p->connect_timeout_ms, &usable, p->retry))) {
		q_close(q);
		return rc;
	}
	*out = q;
	return 0;
}
