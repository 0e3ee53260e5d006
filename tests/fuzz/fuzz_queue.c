/*
 * Completion handling fed hostile response capsules: the input is a script
 * of operations on a queue over the loopback test wire (submit a split or
 * single read, let the wire answer, inject a 16-byte CQE taken from the
 * input, poll). Every submission must complete at most once, and once the
 * wire has answered everything, exactly once, with all slots back.
 */
#include <stdlib.h>
#include <string.h>

#include "fakewire.h"
#include "mem.h"
#include "protocol.h"

#define DEPTH 8

static int held, hold;
static uint8_t held_cqe[256][16];

static enum fw_action responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				uint8_t *cqe)
{
	(void)ctx; (void)sqe; (void)sge; (void)nsge;
	if (hold && held < 256) {
		memcpy(held_cqe[held++], cqe, 16);
		return FW_DROP;
	}
	return FW_RESPOND;
}

struct sub { int calls; };
static void cb(void *arg, const struct nvmeof_cpl *cpl)
{
	(void)cpl;
	if (++((struct sub *)arg)->calls > 1)
		abort(); /* completed twice */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[8 << 20];
	struct sub subs[256];
	int nsub = 0;
	struct fake_wire *fw = fw_new(DEPTH, responder, NULL);
	struct nvmeof_queue *q;
	struct q_params p = {.qid = 1, .depth = DEPTH, .cmd_timeout_ms = 60000, .max_xfer = 1 << 20,
			     .icd_max = 4096, .wait_mode = NVMEOF_WAIT_POLL};
	struct nvmeof_mr mr = {.addr = buf, .len = sizeof(buf)};
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 512, .lbads = 9, .nsze = 1 << 20};
	held = 0;
	hold = 1;
	if (!fw || q_open_fake(&p, fw, &q))
		abort();
	size_t i = 0;
	while (i < size) {
		uint8_t op = data[i++];
		switch (op % 4) {
		case 0: /* submit: single or split read, or a write */
			if (nsub < 256 && i < size) {
				uint32_t nlb = (data[i++] % 3 == 0) ? 4096 + 8 : 8; /* 2 MiB + 4 KiB splits in 3 */
				subs[nsub].calls = 0;
				int rc = (op & 4) ? nvmeof_write(q, &ns, 0, 8, &mr, 0, cb, &subs[nsub])
						  : nvmeof_read(q, &ns, 0, nlb, &mr, 0, cb, &subs[nsub]);
				if (rc == 0)
					nsub++;
				else if (rc != NVMEOF_EQFULL)
					abort();
			}
			break;
		case 1: /* hostile capsule */
			if (i + 16 <= size) {
				fw_inject(fw, data + i);
				i += 16;
			}
			break;
		case 2: /* the wire answers one held command, maybe twice */
			/* a response the wire cannot take yet stays held: an RC
			 * target retries it, it is never lost */
			if (held && fw_inject(fw, held_cqe[held - 1]) == 0) {
				held--;
				if (op & 8)
					fw_inject(fw, held_cqe[held]);
			}
			break;
		case 3:
			nvmeof_queue_poll(q, 0);
			break;
		}
	}
	/* let the wire answer everything now */
	hold = 0;
	for (int round = 0; round < 10000 && nvmeof_queue_inflight(q); round++) {
		while (held && fw_inject(fw, held_cqe[held - 1]) == 0)
			held--;
		nvmeof_queue_poll(q, 0);
	}
	if (nvmeof_queue_inflight(q))
		abort(); /* a request was lost */
	for (int k = 0; k < nsub; k++)
		if (subs[k].calls != 1)
			abort();
	q_close(q);
	fw_free(fw);
	return 0;
}
