/*
 * What a reconnect attempt's owner stages for the poll (limits, the next
 * command, a final refusal) and the connection tries of a queue's first
 * connect; the state they feed is qstate.c's.
 */
#include <string.h>

#include "connretry.h"
#include "qpriv.h"
#include "trace.h"

int q_reopen_wire(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms)
{
	uint32_t usable = q->depth;
	int rc = q->tr->reopen(q, cntlid, timeout_ms, &usable);
	q->bg.usable = usable;
	return rc;
}

void q_stage_limits(struct nvmeof_queue *q, uint32_t icd_max, uint64_t max_xfer, const uint16_t crdt[3],
		    uint32_t assoc_gen)
{
	q->bg.has_limits = true;
	q->bg.icd = icd_max;
	q->bg.max_xfer = max_xfer;
	memcpy(q->bg.crdt, crdt, sizeof(q->bg.crdt));
	q->bg.assoc_gen = assoc_gen;
}

void q_stage_wire_icd(struct nvmeof_queue *q, uint32_t bytes)
{
	q->bg.wire_icd = bytes;
	q->bg.has_wire_icd = true;
}

uint32_t q_staged_assoc_gen(const struct nvmeof_queue *q) { return q->bg.assoc_gen; }

void q_reconnect_final(struct nvmeof_queue *q) { q->bg.final = true; }

bool q_reconnect_cancelled(const struct nvmeof_queue *q)
{
	return __atomic_load_n(&q->bg.cancel, __ATOMIC_RELAXED);
}

void q_stage_connect(struct nvmeof_queue *q, const uint8_t *sqe, uint32_t data_len)
{
	memcpy(q->bg.sqe, sqe, NVME_SQE_SIZE);
	q->bg.data_len = data_len;
	q->bg.has_cmd = true;
}

int q_connect_tries(struct nvmeof_queue *q, uint16_t cntlid, uint32_t timeout_ms, uint32_t *usable,
		    struct conn_retry *r)
{
	for (;;) {
		q->conn_class = CR_FINAL;
		int rc = q->tr->reopen(q, cntlid, timeout_ms, usable);
		if (!rc)
			return 0;
		enum cr_class cls = (enum cr_class)q->conn_class;
		q->tr->close(q); /* what the try made; the next starts from nothing */
		trace_q(q, "connect try %u failed (%s): %s", r ? r->retries + 1 : 1,
			cls == CR_FINAL ? "final" : "transient", nvmeof_errmsg());
		if (!r || !cr_again(r, rc, cls))
			return rc;
	}
}
