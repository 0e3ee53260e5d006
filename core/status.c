/* Names of NVMe status codes, NVMe/RDMA CM reject codes and our errors, and
 * the per-thread "what failed" message. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "protocol.h"

struct name { uint16_t code; const char *name; };

/* Keyed by (SCT << 8) | SC. */
static const struct name nvme_status_names[] = {
	{0x000, "Successful Completion"},
	{0x001, "Invalid Command Opcode"},
	{0x002, "Invalid Field in Command"},
	{0x003, "Command ID Conflict"},
	{0x004, "Data Transfer Error"},
	{0x005, "Commands Aborted due to Power Loss Notification"},
	{0x006, "Internal Error"},
	{0x007, "Command Abort Requested"},
	{0x008, "Command Aborted due to SQ Deletion"},
	{0x009, "Command Aborted due to Failed Fused Command"},
	{0x00a, "Command Aborted due to Missing Fused Command"},
	{0x00b, "Invalid Namespace or Format"},
	{0x00c, "Command Sequence Error"},
	{0x00d, "Invalid SGL Segment Descriptor"},
	{0x00e, "Invalid Number of SGL Descriptors"},
	{0x00f, "Data SGL Length Invalid"},
	{0x010, "Metadata SGL Length Invalid"},
	{0x011, "SGL Descriptor Type Invalid"},
	{0x012, "Invalid Use of Controller Memory Buffer"},
	{0x013, "PRP Offset Invalid"},
	{0x014, "Atomic Write Unit Exceeded"},
	{0x015, "Operation Denied"},
	{0x016, "SGL Offset Invalid"},
	{0x018, "Host Identifier Inconsistent Format"},
	{0x019, "Keep Alive Timer Expired"},
	{0x01a, "Keep Alive Timeout Invalid"},
	{0x01b, "Command Aborted due to Preempt and Abort"},
	{0x01c, "Sanitize Failed"},
	{0x01d, "Sanitize In Progress"},
	{0x01e, "SGL Data Block Granularity Invalid"},
	{0x01f, "Command Not Supported for Queue in CMB"},
	{0x020, "Namespace is Write Protected"},
	{0x021, "Command Interrupted"},
	{0x022, "Transient Transport Error"},
	{0x080, "LBA Out of Range"},
	{0x081, "Capacity Exceeded"},
	{0x082, "Namespace Not Ready"},
	{0x083, "Reservation Conflict"},
	{0x084, "Format In Progress"},
	{0x280, "Write Fault"},
	{0x281, "Unrecovered Read Error"},
	{0x282, "End-to-end Guard Check Error"},
	{0x283, "End-to-end Application Tag Check Error"},
	{0x284, "End-to-end Reference Tag Check Error"},
	{0x285, "Compare Failure"},
	{0x286, "Access Denied"},
	{0x287, "Deallocated or Unwritten Logical Block"},
	{0x300, "Internal Path Error"},
	{0x301, "Asymmetric Access Persistent Loss"},
	{0x302, "Asymmetric Access Inaccessible"},
	{0x303, "Asymmetric Access Transition"},
	{0x360, "Controller Pathing Error"},
	{0x370, "Host Pathing Error"},
	{0x371, "Command Aborted By Host"},
};

static const char *lookup(const struct name *t, size_t n, uint16_t key)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].code == key)
			return t[i].name;
	return NULL;
}
#define LOOKUP(t, key) lookup((t), sizeof(t) / sizeof((t)[0]), (key))

/* Command specific statuses (SCT 1), keyed by SC: one table per kind of
 * command, since the same SC means different things to each. */
static const struct name admin_specific[] = {
	{0x00, "Completion Queue Invalid"},
	{0x01, "Invalid Queue Identifier"},
	{0x02, "Invalid Queue Size"},
	{0x03, "Abort Command Limit Exceeded"},
	{0x05, "Asynchronous Event Request Limit Exceeded"},
	{0x06, "Invalid Firmware Slot"},
	{0x07, "Invalid Firmware Image"},
	{0x08, "Invalid Interrupt Vector"},
	{0x09, "Invalid Log Page"},
	{0x0a, "Invalid Format"},
	{0x0c, "Invalid Queue Deletion"},
	{0x0d, "Feature Identifier Not Saveable"},
	{0x0e, "Feature Not Changeable"},
	{0x0f, "Feature Not Namespace Specific"},
	{0x15, "Namespace Insufficient Capacity"},
	{0x16, "Namespace Identifier Unavailable"},
	{0x18, "Namespace Already Attached"},
	{0x19, "Namespace Is Private"},
	{0x1a, "Namespace Not Attached"},
};
static const struct name nvm_specific[] = {
	{0x80, "Conflicting Attributes"},
	{0x81, "Invalid Protection Information"},
	{0x82, "Attempted Write to Read Only Range"},
	{0x83, "Command Size Limit Exceeded"},
	/* the Zoned Namespace Command Set's */
	{0xb8, "Zone Boundary Error"},
	{0xb9, "Zone Is Full"},
	{0xba, "Zone Is Read Only"},
	{0xbb, "Zone Is Offline"},
	{0xbc, "Zone Invalid Write"},
	{0xbd, "Too Many Active Zones"},
	{0xbe, "Too Many Open Zones"},
	{0xbf, "Invalid Zone State Transition"},
};
static const struct name connect_specific[] = {
	{0x80, "Connect Incompatible Format"},
	{0x81, "Connect Controller Busy"},
	{0x82, "Connect Invalid Parameters"},
	{0x83, "Connect Restart Discovery"},
	{0x84, "Connect Invalid Host"},
	{0x85, "Invalid Queue Type"},
	{0x90, "Discover Restart"},
	{0x91, "Authentication Required"},
};
static const struct name fabrics_specific[] = {
	{0x90, "Discover Restart"},
	{0x91, "Authentication Required"},
};

const char *nvmeof_status_name(uint16_t st)
{
	const char *n;
	if (NVMEOF_STATUS_SCT(st) == 1)
		return "Command Specific Status";
	if ((n = LOOKUP(nvme_status_names, (uint16_t)(NVMEOF_STATUS_SCT(st) << 8 | NVMEOF_STATUS_SC(st)))))
		return n;
	if (NVMEOF_STATUS_SCT(st) == 7)
		return "Vendor Specific";
	return "Unknown status";
}

const char *nvmeof_cmd_status_name(uint16_t st, bool admin, uint8_t opc, uint8_t fctype)
{
	const char *n = NULL;
	uint16_t sc = NVMEOF_STATUS_SC(st);
	if (NVMEOF_STATUS_SCT(st) != 1)
		return nvmeof_status_name(st);
	if (opc == NVME_FABRICS_OPCODE)
		n = fctype == NVMF_FCTYPE_CONNECT ? LOOKUP(connect_specific, sc) : LOOKUP(fabrics_specific, sc);
	else if (admin)
		n = LOOKUP(admin_specific, sc);
	else
		n = LOOKUP(nvm_specific, sc);
	return n ? n : "Command Specific Status";
}

const char *nvme_rdma_cm_status_name(uint16_t sts)
{
	switch (sts) {
	case NVME_RDMA_CM_INVALID_LEN: return "invalid private data length";
	case NVME_RDMA_CM_INVALID_RECFMT: return "invalid RECFMT";
	case NVME_RDMA_CM_INVALID_QID: return "invalid queue ID";
	case NVME_RDMA_CM_INVALID_HSQSIZE: return "invalid HSQSIZE";
	case NVME_RDMA_CM_INVALID_HRQSIZE: return "invalid HRQSIZE";
	case NVME_RDMA_CM_NO_RSC: return "no resources";
	case NVME_RDMA_CM_INVALID_IRD: return "invalid IRD";
	case NVME_RDMA_CM_INVALID_ORD: return "invalid ORD";
	case NVME_RDMA_CM_INVALID_CNTLID: return "invalid CNTLID";
	default: return "unknown NVMe/RDMA reject status";
	}
}

const char *nvmeof_strerror(int err)
{
	switch (err) {
	case NVMEOF_OK: return "success";
	case NVMEOF_EINVAL: return "invalid argument";
	case NVMEOF_ENOMEM: return "out of memory";
	case NVMEOF_EQFULL: return "queue full";
	case NVMEOF_ETIMEDOUT: return "timed out";
	case NVMEOF_ENVME: return "NVMe error status";
	case NVMEOF_ETRANSPORT: return "RDMA transport error";
	case NVMEOF_EREJECTED: return "connection rejected";
	case NVMEOF_EUNREACHABLE: return "target unreachable";
	case NVMEOF_EBUSY: return "busy";
	case NVMEOF_ECLOSED: return "connection closed";
	case NVMEOF_ENOTSUP: return "not supported";
	case NVMEOF_ECUDA: return "CUDA error";
	case NVMEOF_ENODEV: return "no RDMA device";
	default: return "unknown error";
	}
}

const char *nvmeof_cpl_str(const struct nvmeof_cpl *cpl, char *buf, size_t len)
{
	if (cpl->err == NVMEOF_ENVME)
		snprintf(buf, len, "%s (SCT 0x%x, SC 0x%02x%s)",
			 nvmeof_cmd_status_name(cpl->status, cpl->admin, cpl->opc, cpl->fctype),
			 NVMEOF_STATUS_SCT(cpl->status), NVMEOF_STATUS_SC(cpl->status),
			 NVMEOF_STATUS_DNR(cpl->status) ? ", DNR" : "");
	else if (cpl->err == NVMEOF_ETIMEDOUT)
		snprintf(buf, len, "command timed out");
	else if (cpl->err == NVMEOF_ECLOSED)
		snprintf(buf, len, "queue disconnected before the command completed");
	else
		snprintf(buf, len, "%s", nvmeof_strerror(cpl->err));
	return buf;
}

static _Thread_local char errbuf[NVMEOF_ERRMSG_MAX];

/* A secret's prefixes (DH-HMAC-CHAP, NVMe/TCP TLS PSK interchange), as any
 * case: a message built from a caller's words never shows what follows one. */
static const char *const secret_prefix[] = {"DHHC-1", "NVMeTLSkey-1"};

static bool secret_char(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '+' ||
	       ch == '/' || ch == '=' || ch == ':' || ch == '-' || ch == '_' || ch == '\\';
}

void nvmeof_redact(char *msg)
{
	static const char shown[] = "<a secret, not shown>";
	for (char *p = msg; *p; p++) {
		size_t pl = 0;
		for (size_t i = 0; i < sizeof(secret_prefix) / sizeof(secret_prefix[0]) && !pl; i++)
			if (!strncasecmp(p, secret_prefix[i], strlen(secret_prefix[i])))
				pl = strlen(secret_prefix[i]);
		if (!pl)
			continue;
		char *end = p + pl;
		while (secret_char(*end))
			end++;
		size_t tail = strlen(end) + 1, sl = strlen(shown);
		/* the placeholder is no longer than what it replaces, or the
		 * message is cut: never a byte of the secret left */
		if (sl <= (size_t)(end - p)) {
			memcpy(p, shown, sl);
			memmove(p + sl, end, tail);
			p += sl - 1;
		} else {
			*p = 0;
			break;
		}
	}
}

const char *nvmeof_errmsg(void) { return errbuf; }

int nvmeof_err(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	nvmeof_redact(errbuf);
	return code;
}

/* Prefixes the current message: "connect admin queue: <what was there>". */
int nvmeof_err_prefix(int code, const char *fmt, ...)
{
	char old[sizeof(errbuf)], pre[256];
	va_list ap;
	snprintf(old, sizeof(old), "%s", errbuf);
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	snprintf(errbuf, sizeof(errbuf), "%s: %s", pre, old);
	nvmeof_redact(errbuf);
	return code;
}
