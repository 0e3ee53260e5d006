/*
 * Connect retries (core/connretry.c): which failures are tried again, the
 * backoff, the budget and the final message; and the queue's connect loop
 * (q_connect_tries) on the loopback test wire, whose connects are made to
 * fail with FAKE transport failures (fw_fail_connects): a CM step that gets
 * no answer under load is what the real target cannot be made to do.
 */
#include <errno.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>

#include "check.h"
#include "connretry.h"
#include "fakewire.h"
#include "mem.h"
#include "protocol.h"
#include "qpriv.h"

static uint32_t naps[16], nnaps;
static void count_nap(uint32_t ms)
{
	if (nnaps < 16)
		naps[nnaps] = ms;
	nnaps++;
}

TEST(cm_failures_are_classed_transient_or_final)
{
	/* busy: tried again */
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET, false, 0), CR_TRANSIENT);
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_REJECTED, 28, true, NVME_RDMA_CM_NO_RSC), CR_TRANSIENT);
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_REJECTED, 3, false, 0), CR_TRANSIENT);  /* no resources */
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_REJECTED, 10, false, 0), CR_TRANSIENT); /* stale connection */
	/* silence and resolution: only once the target was reached */
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, false, 0), CR_TRANSIENT_REACHED);
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT, false, 0), CR_TRANSIENT_REACHED);
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH, false, 0), CR_TRANSIENT_REACHED);
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_ROUTE_ERROR, -ETIMEDOUT, false, 0), CR_TRANSIENT_REACHED);
	/* configuration and refusals: never */
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_ADDR_ERROR, -ENETUNREACH, false, 0), CR_FINAL);
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_ADDR_ERROR, -ENODEV, false, 0), CR_FINAL);
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_REJECTED, 8, false, 0), CR_FINAL); /* nobody listens */
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_REJECTED, 28, false, 0), CR_FINAL);
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_REJECTED, 28, true, NVME_RDMA_CM_INVALID_QID), CR_FINAL);
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_REJECTED, 28, true, NVME_RDMA_CM_INVALID_HSQSIZE), CR_FINAL);
	CHECK_EQ(cr_cm_event(RDMA_CM_EVENT_DEVICE_REMOVAL, 0, false, 0), CR_FINAL);
}

/* status fields as nvmeof_cpl.status holds them: SC, SCT << 8, DNR << 14 */
#define ST(sct, sc, dnr) ((uint16_t)((sc) | (sct) << 8 | (dnr) << 14))

TEST(fabrics_connect_failures_are_classed_transient_or_final)
{
	CHECK_EQ(cr_fabrics(NVMEOF_ETIMEDOUT, 0, false), CR_TRANSIENT);
	CHECK_EQ(cr_fabrics(NVMEOF_ECLOSED, 0, false), CR_TRANSIENT);
	CHECK_EQ(cr_fabrics(NVMEOF_ETRANSPORT, 0, false), CR_TRANSIENT);
	CHECK_EQ(cr_fabrics(NVMEOF_ENVME, ST(1, 0x81, 0), false), CR_TRANSIENT);  /* Controller Busy */
	CHECK_EQ(cr_fabrics(NVMEOF_ENVME, ST(1, 0x81, 1), false), CR_FINAL);      /* ... with DNR */
	CHECK_EQ(cr_fabrics(NVMEOF_ENVME, ST(0, 0x21, 0), false), CR_TRANSIENT);  /* Command Interrupted */
	CHECK_EQ(cr_fabrics(NVMEOF_ENVME, ST(0, 0x21, 1), false), CR_FINAL);      /* ... with DNR */
	/* a Command Sequence Error is the old try's queue only after a timeout */
	CHECK_EQ(cr_fabrics(NVMEOF_ENVME, ST(0, 0x0c, 1), true), CR_TRANSIENT);
	CHECK_EQ(cr_fabrics(NVMEOF_ENVME, ST(0, 0x0c, 1), false), CR_FINAL);
	/* refusals: unknown host or subsystem, bad parameters, format */
	CHECK_EQ(cr_fabrics(NVMEOF_ENVME, ST(1, 0x84, 1), false), CR_FINAL);
	CHECK_EQ(cr_fabrics(NVMEOF_ENVME, ST(1, 0x82, 1), true), CR_FINAL);
	CHECK_EQ(cr_fabrics(NVMEOF_ENVME, ST(1, 0x80, 0), false), CR_FINAL);
	CHECK_EQ(cr_fabrics(NVMEOF_EINVAL, 0, false), CR_FINAL);
	CHECK_EQ(cr_fabrics(NVMEOF_ENOMEM, 0, false), CR_FINAL);
}

/* A reconnect stops at Do Not Retry and at an authentication refused or
 * failed; it goes on after a loss, a timeout, or a status without DNR. */
TEST(what_ends_a_reconnect)
{
	CHECK(cr_reconnect_final(NVMEOF_ENVME, ST(1, 0x84, 1)));
	CHECK(cr_reconnect_final(NVMEOF_ENVME, ST(0, 0x02, 1)));  /* Invalid Field on an AUTH_Send */
	CHECK(!cr_reconnect_final(NVMEOF_ENVME, ST(0, 0x21, 0)));
	CHECK(!cr_reconnect_final(NVMEOF_ENVME, ST(0, 0x06, 0))); /* Internal Error, DNR clear */
	CHECK(cr_reconnect_final(NVMEOF_EINVAL, 0));   /* Failure1, a wrong response, a protocol violation */
	CHECK(cr_reconnect_final(NVMEOF_ENOTSUP, 0));  /* a hash or group we did not offer */
	CHECK(!cr_reconnect_final(NVMEOF_ECLOSED, 0));
	CHECK(!cr_reconnect_final(NVMEOF_ETRANSPORT, 0));
	CHECK(!cr_reconnect_final(NVMEOF_ETIMEDOUT, 0));
	CHECK(!cr_reconnect_final(NVMEOF_ENOMEM, 0));
	CHECK(!cr_reconnect_final(NVMEOF_EUNREACHABLE, 0));
}

TEST(backoff_doubles_to_a_cap_with_per_queue_jitter)
{
	uint32_t prev = 0;
	bool differ = false;
	for (uint32_t k = 0; k < 8; k++) {
		uint32_t b = cr_backoff_ms(k, 7), base = k >= 4 ? 1600 : 100u << k;
		CHECK(b >= base && b < base + 100);
		CHECK(k == 0 || b >= prev || k >= 4);
		prev = b;
	}
	for (uint32_t salt = 1; salt < 64; salt++)
		differ |= cr_backoff_ms(0, salt) != cr_backoff_ms(0, 0);
	CHECK(differ); /* queues that failed together do not all retry together */
}

TEST(budget_counts_retries_then_says_tries_and_time)
{
	struct conn_retry r;
	cr_init(&r, 3, true, 5);
	r.sleep_ms = count_nap;
	nnaps = 0;
	for (int i = 0; i < 3; i++) {
		nvmeof_err(NVMEOF_ETIMEDOUT, "CM connect: no answer within 3000 ms");
		CHECK(cr_again(&r, NVMEOF_ETIMEDOUT, CR_TRANSIENT));
	}
	CHECK_EQ(r.retries, 3);
	CHECK_EQ(nnaps, 3);
	for (uint32_t k = 0; k < 3 && k < nnaps; k++)
		CHECK_EQ(naps[k], cr_backoff_ms(k, 5));
	nvmeof_err(NVMEOF_ETIMEDOUT, "CM connect: no answer within 3000 ms");
	CHECK(!cr_again(&r, NVMEOF_ETIMEDOUT, CR_TRANSIENT));
	CHECK_EQ(nnaps, 3);
	CHECK(strstr(nvmeof_errmsg(), "CM connect: no answer within 3000 ms (4 tries, ") == nvmeof_errmsg());
	CHECK(strstr(nvmeof_errmsg(), " s, no retries left)") != NULL);
}

TEST(a_refusal_is_not_retried_and_keeps_its_message)
{
	struct conn_retry r;
	cr_init(&r, 4, true, 1);
	r.sleep_ms = count_nap;
	nnaps = 0;
	nvmeof_err(NVMEOF_EREJECTED, "CM connect: connection rejected, CM reason 8");
	CHECK(!cr_again(&r, NVMEOF_EREJECTED, CR_FINAL));
	CHECK_EQ(nnaps, 0);
	CHECK_STR(nvmeof_errmsg(), "CM connect: connection rejected, CM reason 8");
	/* a first contact retries neither silence nor a resolution failure,
	 * but does retry a busy target */
	cr_init(&r, 4, false, 1);
	r.sleep_ms = count_nap;
	nvmeof_err(NVMEOF_EUNREACHABLE, "resolve address: address resolution failed");
	CHECK(!cr_again(&r, NVMEOF_EUNREACHABLE, CR_TRANSIENT_REACHED));
	CHECK_EQ(nnaps, 0);
	CHECK_STR(nvmeof_errmsg(), "resolve address: address resolution failed");
	nvmeof_err(NVMEOF_ETIMEDOUT, "CM connect: no answer within 1500 ms");
	CHECK(!cr_again(&r, NVMEOF_ETIMEDOUT, CR_TRANSIENT_REACHED));
	CHECK_EQ(nnaps, 0);
	CHECK_STR(nvmeof_errmsg(), "CM connect: no answer within 1500 ms");
	nvmeof_err(NVMEOF_EREJECTED, "CM connect: target rejected the connection: no resources");
	CHECK(cr_again(&r, NVMEOF_EREJECTED, CR_TRANSIENT));
	CHECK_EQ(nnaps, 1);
	/* no budget: one try, and the message says so */
	cr_init(&r, 0, true, 1);
	nvmeof_err(NVMEOF_ETIMEDOUT, "CM connect: no answer within 3000 ms");
	CHECK(!cr_again(&r, NVMEOF_ETIMEDOUT, CR_TRANSIENT));
	CHECK(strstr(nvmeof_errmsg(), "(1 try, ") != NULL);
}

static enum fw_action answer(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge, uint8_t *cqe)
{
	(void)sqe, (void)sge, (void)nsge, (void)cqe;
	(*(int *)ctx)++;
	return FW_RESPOND;
}

TEST(a_queue_connects_after_fake_transient_failures_and_carries_commands)
{
	int cmds = 0;
	struct fake_wire *fw = fw_new(4, answer, &cmds);
	struct nvmeof_queue *q = NULL;
	struct conn_retry r;
	cr_init(&r, 4, true, 1);
	r.sleep_ms = count_nap;
	nnaps = 0;
	struct q_params p = {.qid = 3, .depth = 4, .cmd_timeout_ms = 1000, .connect_timeout_ms = 3000,
			     .wait_mode = NVMEOF_WAIT_POLL, .retry = &r};
	struct nvmeof_mr mr = {.addr = calloc(1, 4096), .len = 4096, .lkey = 1, .rkey = 2};
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 512, .lbads = 9, .nsze = 1u << 20};
	fw_fail_connects(fw, 2, NVMEOF_ETIMEDOUT, CR_TRANSIENT);
	MUST(q_open_fake(&p, fw, &q));
	CHECK_EQ(fw_connects(fw), 3);
	CHECK_EQ(r.retries, 2);
	CHECK_EQ(nnaps, 2);
	MUST(nvmeof_read_sync(q, &ns, 0, 8, &mr, 0, 1000));
	CHECK_EQ(cmds, 1);
out:
	q_close(q);
	fw_free(fw);
	free(mr.addr);
}

TEST(a_queue_gives_up_after_its_budget_naming_step_and_tries)
{
	struct fake_wire *fw = fw_new(4, answer, NULL);
	struct nvmeof_queue *q = NULL;
	struct conn_retry r;
	cr_init(&r, 2, true, 1);
	r.sleep_ms = count_nap;
	struct q_params p = {.qid = 3, .depth = 4, .cmd_timeout_ms = 1000, .connect_timeout_ms = 3000,
			     .wait_mode = NVMEOF_WAIT_POLL, .retry = &r};
	fw_fail_connects(fw, 10, NVMEOF_ETIMEDOUT, CR_TRANSIENT);
	CHECK_EQ(q_open_fake(&p, fw, &q), NVMEOF_ETIMEDOUT);
	CHECK(q == NULL);
	CHECK_EQ(fw_connects(fw), 3);
	CHECK(strstr(nvmeof_errmsg(), "CM connect: no answer within 3000 ms") != NULL);
	CHECK(strstr(nvmeof_errmsg(), "(3 tries, ") != NULL);
	fw_free(fw);
	/* a refusal: one try */
	fw = fw_new(4, answer, NULL);
	cr_init(&r, 2, true, 1);
	r.sleep_ms = count_nap;
	fw_fail_connects(fw, 1, NVMEOF_EREJECTED, CR_FINAL);
	CHECK_EQ(q_open_fake(&p, fw, &q), NVMEOF_EREJECTED);
	CHECK_EQ(fw_connects(fw), 1);
	CHECK_EQ(r.retries, 0);
	fw_free(fw);
}

int main(int argc, char **argv)
{
	static const struct test_case t[] = {
		T(cm_failures_are_classed_transient_or_final),
		T(fabrics_connect_failures_are_classed_transient_or_final),
		T(what_ends_a_reconnect),
		T(backoff_doubles_to_a_cap_with_per_queue_jitter),
		T(budget_counts_retries_then_says_tries_and_time),
		T(a_refusal_is_not_retried_and_keeps_its_message),
		T(a_queue_connects_after_fake_transient_failures_and_carries_commands),
		T(a_queue_gives_up_after_its_budget_naming_step_and_tries),
	};
	return run_named_tests("unit-connretry", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
