/* Discovery log values in the words nvme-cli (libnvme) prints for them, so
 * our tool's output reads like `nvme discover`. */
#include "nvmeof.h"

#define NAME(tbl, v) ((size_t)(v) < sizeof(tbl) / sizeof(tbl[0]) && tbl[v] ? tbl[v] : "unrecognized")

const char *nvmeof_trtype_str(uint8_t v)
{
	static const char *const t[] = {[0] = "unspecified", [1] = "rdma", [2] = "fc", [3] = "tcp"};
	return v == 254 ? "loop" : NAME(t, v);
}

const char *nvmeof_adrfam_str(uint8_t v)
{
	static const char *const t[] = {[1] = "ipv4", [2] = "ipv6", [3] = "infiniband",
					[4] = "fibre-channel"};
	return v == 254 ? "loop" : NAME(t, v);
}

const char *nvmeof_subtype_str(uint8_t v)
{
	static const char *const t[] = {[1] = "discovery subsystem referral", [2] = "nvme subsystem",
					[3] = "current discovery subsystem"};
	return NAME(t, v);
}

const char *nvmeof_treq_str(uint8_t v)
{
	static const char *const t[] = {[0] = "not specified", [1] = "required", [2] = "not required",
					[4] = "not specified, sq flow control disable supported"};
	return NAME(t, v);
}

const char *nvmeof_eflags_str(uint16_t v)
{
	/* bit 0 DUPRETINFO, bit 1 EPCSD */
	static const char *const t[] = {[0] = "none", [1] = "duplicate discovery information",
					[2] = "explicit discovery connections",
					[3] = "explicit discovery connections, duplicate discovery information"};
	return NAME(t, v);
}

const char *nvmeof_rdma_qptype_str(uint8_t v)
{
	static const char *const t[] = {[1] = "connected", [2] = "datagram"};
	return NAME(t, v);
}

const char *nvmeof_rdma_prtype_str(uint8_t v)
{
	static const char *const t[] = {[1] = "not specified", [2] = "infiniband", [3] = "roce",
					[4] = "roce-v2", [5] = "iwarp"};
	return NAME(t, v);
}

const char *nvmeof_rdma_cms_str(uint8_t v)
{
	static const char *const t[] = {[1] = "rdma-cm"};
	return NAME(t, v);
}

const char *nvmeof_tcp_sectype_str(uint8_t v)
{
	static const char *const t[] = {[0] = "none", [1] = "tls", [2] = "tls13"};
	return NAME(t, v);
}

const char *nvmeof_ana_state_str(uint8_t v)
{
	static const char *const t[] = {[1] = "optimized", [2] = "non-optimized", [3] = "inaccessible",
					[4] = "persistent-loss", [15] = "change"};
	return (size_t)v < sizeof(t) / sizeof(t[0]) && t[v] ? t[v] : "invalid state";
}
