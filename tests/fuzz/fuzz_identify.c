/* Identify Controller / Namespace / Active NS List data from a hostile
 * target: parsers must stay in bounds and yield terminated, printable
 * strings and only usable LBA formats. */
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t page[NVME_IDENTIFY_SIZE];
	static uint32_t ids[1024];
	memset(page, 0, sizeof(page));
	memcpy(page, data, size < sizeof(page) ? size : sizeof(page));
	struct nvmeof_ctrl_info ci;
	memset(&ci, 0x55, sizeof(ci));
	nvme_id_ctrl_parse(page, &ci);
	if (strlen(ci.serial) > 20 || strlen(ci.model) > 40 || strlen(ci.firmware) > 8 ||
	    strlen(ci.subnqn) > 256)
		abort();
	for (const char *p = ci.model; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			abort();
	struct nvmeof_ns ns;
	const char *why;
	if (nvme_id_ns_parse(page, 1, &ns, &why) == 0 &&
	    (ns.lba_size != 1u << ns.lbads || ns.lbads < 9 || ns.lbads > 31))
		abort();
	if (nvme_ns_list_parse(page, ids, 1024) > 1024)
		abort();
	(void)nvme_max_xfer(page[0], get_le64(page + 8));
	return 0;
}
