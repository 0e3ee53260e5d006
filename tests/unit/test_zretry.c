/* A zone call on a queue whose slots are all in flight: it waits for a slot
 * instead of failing with NVMEOF_EQFULL. */
#include <stdlib.h>

#include "check.h"
#include "fakewire.h"
#include "protocol.h"
#include "qpriv.h"
#include "zretry.h"

struct held {
	uint8_t cqe[8][16];
	int n;
};

/* writes get no answer (kept, for the test to deliver); the rest answer */
static enum fw_action responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge, uint8_t *cqe)
{
	struct held *h = ctx;
	(void)sge;
	(void)nsge;
	if (sqe[0] != NVME_CMD_WRITE)
		return FW_RESPOND;
	if (h->n < 8)
		memcpy(h->cqe[h->n++], cqe, 16);
	return FW_DROP;
}

static void cb(void *a, const struct nvmeof_cpl *c)
{
	(void)c;
	++*(int *)a;
}

struct reset {
	const struct nvmeof_ns *ns;
};
static int reset(struct nvmeof_queue *q, void *arg)
{
	return nvmeof_zone_mgmt_send_sync(q, ((struct reset *)arg)->ns, 0, NVMEOF_ZSA_RESET, false, 1000);
}

static struct nvmeof_queue *full_queue(struct fake_wire *fw, const struct nvmeof_ns *ns, struct nvmeof_mr *mr,
				      int *done)
{
	struct q_params p = {.qid = 1, .depth = 4, .cmd_timeout_ms = 30000, .max_xfer = 64 * 1024,
			     .wait_mode = NVMEOF_WAIT_POLL};
	struct nvmeof_queue *q = NULL;
	if (q_open_fake(&p, fw, &q))
		return NULL;
	int rc = 0, i;
	for (i = 0; i < 16 && !rc; i++)
		rc = nvmeof_write(q, ns, (uint64_t)i * 8, 8, mr, 0, cb, done);
	CHECK_EQ(rc, NVMEOF_EQFULL);
	return q;
}

/* A queue of four slots over the test wire, filled by writes whose
 * completions the responder holds; each test's own (static: the responder
 * keeps pointers into it). */
struct zfix {
	struct held h;
	struct fake_wire *fw;
	struct nvmeof_ns ns;
	struct nvmeof_mr mr;
	int done;
	struct nvmeof_queue *q;
};

static bool zfix_open(struct zfix *f)
{
	f->fw = fw_new(4, responder, &f->h);
	f->ns = (struct nvmeof_ns){.nsid = 1, .lba_size = 4096, .lbads = 12, .nsze = 1ull << 20};
	f->mr = (struct nvmeof_mr){.addr = calloc(1, 1 << 20), .len = 1 << 20, .lkey = 0x11, .rkey = 0xabc};
	f->q = full_queue(f->fw, &f->ns, &f->mr, &f->done);
	CHECK(f->q != NULL);
	return f->q != NULL;
}

static void zfix_close(struct zfix *f)
{
	q_close(f->q);
	fw_free(f->fw);
	free(f->mr.addr);
}

/* One write's completion arrives: the reset waits for it and goes out. */
TEST(zone_reset_waits_for_a_free_slot)
{
	static struct zfix f;
	if (!zfix_open(&f))
		return;
	struct nvmeof_queue *q = f.q;
	struct reset r = {&f.ns};
	CHECK_EQ(reset(q, &r), NVMEOF_EQFULL); /* the call alone: refused at once */
	CHECK(f.h.n >= 1);
	CHECK_EQ(fw_inject(f.fw, f.h.cqe[0]), 0);
	CHECK_EQ(zretry(q, reset, &r, 2000), 0);
	CHECK_EQ(f.done, 1); /* the write's callback ran while the reset waited */
	zfix_close(&f);
}

/* No completion comes: the call gives up at its timeout with EQFULL. */
TEST(zone_reset_gives_up_at_its_timeout)
{
	static struct zfix f;
	if (!zfix_open(&f))
		return;
	struct nvmeof_queue *q = f.q;
	struct reset r = {&f.ns};
	CHECK_EQ(zretry(q, reset, &r, 50), NVMEOF_EQFULL);
	CHECK(strstr(nvmeof_errmsg(), "full") != NULL);
	CHECK_EQ(f.done, 0);
	zfix_close(&f);
}

int main(void)
{
	static const struct test_case all[] = {T(zone_reset_waits_for_a_free_slot), T(zone_reset_gives_up_at_its_timeout)};
	return run_tests("unit-zretry", all, sizeof(all) / sizeof(all[0]));
}
