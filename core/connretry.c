/* Connect retries: the policy of connretry.h. */
#include <errno.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <time.h>

#include "connretry.h"
#include "internal.h"
#include "protocol.h"
#include "util.h"

#define BACKOFF_BASE_MS 100u
#define BACKOFF_MAX_MS 1600u

void cr_init(struct conn_retry *r, uint32_t max, bool reached, uint32_t salt)
{
	*r = (struct conn_retry){.max = max, .t0_ms = nvmeof_now_ms(), .reached = reached, .salt = salt};
}

enum cr_class cr_cm_event(int event, int status, bool has_sts, uint16_t sts)
{
	int e = status < 0 ? -status : status;
	switch (event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		/* no neighbour answer in time is load or loss; no route or no
		 * device for the address is configuration */
		return e == ENETUNREACH || e == EADDRNOTAVAIL || e == ENODEV || e == EINVAL ? CR_FINAL
											      : CR_TRANSIENT_REACHED;
	case RDMA_CM_EVENT_UNREACHABLE: /* the CM's requests went unanswered: silence */
		return CR_TRANSIENT_REACHED;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return CR_TRANSIENT;
	case RDMA_CM_EVENT_REJECTED:
		if (has_sts)
			return sts == NVME_RDMA_CM_NO_RSC ? CR_TRANSIENT : CR_FINAL;
		/* IB CM reject reasons: no QP, no EEC, no resources, timeout,
		 * stale connection, duplicate local communication ID */
		switch (status) {
		case 1: case 2: case 3: case 4: case 10: case 30:
			return CR_TRANSIENT;
		default:
			return CR_FINAL; /* 8: nobody listens there; 28 without status: the target's no */
		}
	default:
		return CR_FINAL;
	}
}

enum cr_class cr_fabrics(int rc, uint16_t status, bool earlier_timeout)
{
	if (rc == NVMEOF_ETIMEDOUT || rc == NVMEOF_ECLOSED || rc == NVMEOF_ETRANSPORT)
		return CR_TRANSIENT;
	if (rc != NVMEOF_ENVME)
		return CR_FINAL;
	unsigned sct = NVMEOF_STATUS_SCT(status), sc = NVMEOF_STATUS_SC(status);
	/* nvmet sets DNR on it, but this one is about the old try's queue,
	 * not this try's */
	if (sct == 0 && sc == 0x0c && earlier_timeout) /* Command Sequence Error */
		return CR_TRANSIENT;
	/* otherwise Do Not Retry means it, on the Connect as on an
	 * AUTH_Send/AUTH_Receive after it */
	if (NVMEOF_STATUS_DNR(status))
		return CR_FINAL;
	if (sct == 1 && sc == 0x81) /* Connect Controller Busy */
		return CR_TRANSIENT;
	if (sct == 0 && sc == 0x21) /* Command Interrupted */
		return CR_TRANSIENT;
	return CR_FINAL;
}

bool cr_reconnect_final(int rc, uint16_t status)
{
	if (rc == NVMEOF_ENVME)
		return NVMEOF_STATUS_DNR(status);
	return rc == NVMEOF_EINVAL || rc == NVMEOF_ENOTSUP;
}

uint32_t cr_backoff_ms(uint32_t retry, uint32_t salt)
{
	uint32_t base = retry >= 4 ? BACKOFF_MAX_MS : BACKOFF_BASE_MS << retry;
	uint32_t h = (salt + 1u) * 2654435761u ^ (retry + 1u) * 40503u;
	return base + (h >> 16) % 100u;
}

static void nap(uint32_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

bool cr_again(struct conn_retry *r, int rc, enum cr_class cls)
{
	bool may = cls == CR_TRANSIENT || (cls == CR_TRANSIENT_REACHED && r->reached);
	if (may && r->retries < r->max) {
		(r->sleep_ms ? r->sleep_ms : nap)(cr_backoff_ms(r->retries, r->salt));
		r->retries++;
		return true;
	}
	if (may || r->retries) {
		char why[400];
		uint64_t ms = nvmeof_now_ms() - r->t0_ms;
		snprintf(why, sizeof(why), "%s", nvmeof_errmsg());
		nvmeof_err(rc, "%s (%u tr%s, %llu.%llu s%s)", why, r->retries + 1, r->retries ? "ies" : "y",
			   (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000 / 100),
			   may ? ", no retries left" : "");
	}
	return false;
}
