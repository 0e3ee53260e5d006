/* RDMA CM accept and reject private data of any length. */
#include <stdlib.h>

#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint16_t v = 0;
	const char *why = NULL;
	if (nvme_rdma_cm_rep_parse(data, size, &v, &why) == 0 && (size < 4 || v == 0))
		abort();
	if (nvme_rdma_cm_rej_parse(data, size, &v) == 0) {
		if (size < 4)
			abort();
		(void)nvme_rdma_cm_status_name(v);
	}
	struct nvme_cqe c;
	if (size >= NVME_CQE_SIZE) {
		nvme_cqe_parse(data, &c);
		(void)nvmeof_status_name(c.status);
	}
	return 0;
}
