/*
 * Zoned namespaces: what the Zoned Namespace Command Set adds over the
 * queues. Identify (CSI 02h) on the admin queue; Zone Management Send and
 * Receive and Zone Append on an I/O queue, each one command: an append is
 * never split, since the controller assigns one LBA to all its blocks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adminio.h"
#include "cpriv.h"
#include "mem.h"
#include "protocol.h"
#include "qpriv.h"

const char *nvmeof_zone_state_str(uint8_t state)
{
	switch (state) {
	case NVMEOF_ZS_EMPTY: return "EMPTY";
	case NVMEOF_ZS_IMP_OPEN: return "IMP_OPENED";
	case NVMEOF_ZS_EXP_OPEN: return "EXP_OPENED";
	case NVMEOF_ZS_CLOSED: return "CLOSED";
	case NVMEOF_ZS_READ_ONLY: return "READONLY";
	case NVMEOF_ZS_FULL: return "FULL";
	case NVMEOF_ZS_OFFLINE: return "OFFLINE";
	default: return "UNKNOWN";
	}
}

/* The controller's ZASL as nvmeof_zns_info last read it: 0 not read yet,
 * else bit 32 set and the limit in bytes below (0: MDTS applies). */
static void zasl_record(struct nvmeof_ctrl *c, uint32_t bytes)
{
	__atomic_store_n(&c->zns_zasl, 1ull << 32 | bytes, __ATOMIC_RELEASE);
}

int nvmeof_identify_csi(struct nvmeof_ctrl *c, uint8_t cns, uint32_t nsid, uint8_t csi, void *buf)
{
	uint8_t sqe[NVME_SQE_SIZE];
	char what[64];
	if (!c || !buf)
		return nvmeof_err(NVMEOF_EINVAL, "identify: %s", !c ? "no controller" : "no buffer");
	snprintf(what, sizeof(what), "Identify CNS 0x%02x CSI 0x%02x nsid %u", cns, csi, nsid);
	nvme_sqe_identify_csi(sqe, 0, cns, nsid, csi);
	return admin_exec(c, sqe, buf, NVME_IDENTIFY_SIZE, NULL, what);
}

int nvmeof_zns_info(struct nvmeof_ctrl *c, uint32_t nsid, struct nvmeof_zns_info *out)
{
	struct nvmeof_ns_ids ids;
	uint8_t sqe[NVME_SQE_SIZE];
	const char *why;
	char what[64];
	if (!c || !out)
		return nvmeof_err(NVMEOF_EINVAL, "zoned namespace info: %s", !c ? "no controller" : "no output");
	memset(out, 0, sizeof(*out));
	uint8_t *d = malloc(NVME_IDENTIFY_SIZE);
	if (!d)
		return nvmeof_err(NVMEOF_ENOMEM, "zoned namespace info: out of memory");
	/* the namespace's command set: the CSI descriptor (absent: NVM). A
	 * controller that refuses the list (one before NVMe 1.3 may) names no
	 * command set: NVM, as the kernel takes it, not a failure */
	snprintf(what, sizeof(what), "Identify Namespace Identification Descriptors nsid %u", nsid);
	nvme_sqe_identify(sqe, 0, NVME_CNS_NS_DESC_LIST, nsid, 0);
	int rc = admin_exec(c, sqe, d, NVME_IDENTIFY_SIZE, NULL, what);
	if (rc == NVMEOF_ENVME) {
		rc = 0;
		goto out;
	}
	if (!rc && nvme_ns_desc_parse(d, NVME_IDENTIFY_SIZE, &ids, &why))
		rc = nvmeof_err(NVMEOF_ENVME, "%s: %s", what, why);
	if (rc || !ids.has_csi || ids.csi != NVME_CSI_ZNS)
		goto out;
	snprintf(what, sizeof(what), "Identify Namespace nsid %u", nsid);
	nvme_sqe_identify(sqe, 0, NVME_CNS_NS, nsid, 0);
	if ((rc = admin_exec(c, sqe, d, NVME_IDENTIFY_SIZE, NULL, what)))
		goto out;
	unsigned lbaf = nvme_id_ns_lbaf_index(d);
	uint64_t nsze = get_le64(d);
	snprintf(what, sizeof(what), "Identify Namespace CSI 02h (Zoned) nsid %u", nsid);
	nvme_sqe_identify_csi(sqe, 0, NVME_CNS_CS_NS, nsid, NVME_CSI_ZNS);
	if ((rc = admin_exec(c, sqe, d, NVME_IDENTIFY_SIZE, NULL, what)))
		goto out;
	nvme_id_ns_zns_parse(d, lbaf, out);
	if (!out->zone_size) {
		rc = nvmeof_err(NVMEOF_ENVME, "%s: LBA format %u has a zone size (ZSZE) of 0", what, lbaf);
		goto out;
	}
	out->nr_zones = nsze / out->zone_size;
	snprintf(what, sizeof(what), "Identify Controller CSI 02h (Zoned)");
	nvme_sqe_identify_csi(sqe, 0, NVME_CNS_CS_CTRL, 0, NVME_CSI_ZNS);
	if ((rc = admin_exec(c, sqe, d, NVME_IDENTIFY_SIZE, NULL, what)))
		goto out;
	out->zasl_bytes = nvme_zasl_bytes(d[0]);
	zasl_record(c, out->zasl_bytes);
	out->zoned = true;
out:
	if (rc)
		memset(out, 0, sizeof(*out));
	free(d);
	return rc;
}

/* A zone command of the library's own on an I/O queue: one command, never
 * split, with len bytes at off in mr (none when mr is NULL). */
static int zns_check(struct nvmeof_queue *q, const struct nvmeof_ns *ns, struct nvmeof_mr *mr, size_t off,
		     uint64_t len, const char *what)
{
	if (!q || !ns)
		return nvmeof_err(NVMEOF_EINVAL, "%s: %s", what, !q ? "no queue" : "no namespace");
	if (!mr)
		return 0;
	if (mem_ctrl(mr) != q->ctrl)
		return nvmeof_err(NVMEOF_EINVAL, "%s: memory region belongs to another controller", what);
	if (off > mr->len || len > mr->len - off)
		return nvmeof_err(NVMEOF_EINVAL, "%s: %llu bytes at offset %zu overrun the %zu-byte region", what,
				  (unsigned long long)len, off, mr->len);
	return 0;
}

static struct sub zns_sub(const uint8_t *sqe, struct nvmeof_mr *mr, size_t off, uint32_t len)
{
	/* as a caller's raw command (REQ_USER): its own request, any number
	 * in flight, and the SGL filled in when it is issued */
	return (struct sub){.kind = REQ_USER, .opc = sqe[0], .raw = sqe, .mr = mr, .off = off, .data_len = len};
}

int nvmeof_zone_report_ext(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint8_t filter,
			   bool partial, struct nvmeof_zone *zones, uint32_t max, uint32_t *nr, uint64_t *total,
			   uint32_t timeout_ms)
{
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_mr *mr = NULL;
	char what[96];
	if (nr)
		*nr = 0;
	if (total)
		*total = 0;
	snprintf(what, sizeof(what), "Report Zones nsid %u slba %llu", ns ? ns->nsid : 0, (unsigned long long)slba);
	int rc = zns_check(q, ns, NULL, 0, 0, what);
	if (rc)
		return rc;
	if (!nr || (max && !zones))
		return nvmeof_err(NVMEOF_EINVAL, "%s: %s", what, !nr ? "no count" : "no room for the zones");
	if (filter > NVMEOF_ZRASF_OFFLINE)
		return nvmeof_err(NVMEOF_EINVAL, "%s: reporting option %u is none of 0 (all) to 7 (offline)", what,
				  filter);
	/* the header and max descriptors, as many as one command carries */
	uint64_t len = NVME_ZONE_REPORT_HDR + (uint64_t)max * NVME_ZONE_DESC_SIZE;
	uint64_t limit = q->max_cmd_bytes < NVME_KEYED_SGL_MAX_LEN ? q->max_cmd_bytes : NVME_KEYED_SGL_MAX_LEN;
	if (len > limit)
		len = limit - limit % NVME_ZONE_DESC_SIZE;
	if ((rc = mem_alloc_internal(ctrl_mem(q->ctrl), q->ctrl, (size_t)len, &mr)))
		return nvmeof_err_prefix(rc, "%s", what);
	memset(mr->addr, 0, (size_t)len);
	nvme_sqe_zone_mgmt_recv(sqe, 0, ns->nsid, slba, (uint32_t)len, NVME_ZRA_REPORT_ZONES, filter, partial);
	struct sub sb = zns_sub(sqe, mr, 0, (uint32_t)len);
	rc = q_sync_run(q, &sb, timeout_ms, NULL, what);
	if (!rc) {
		uint64_t t;
		*nr = nvme_zone_report_parse(mr->addr, (size_t)len, zones, max, &t);
		if (total)
			*total = t;
	}
	nvmeof_mr_release(mr);
	return rc;
}

int nvmeof_zone_report_all(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t zone_size, uint64_t slba,
			   uint8_t filter, bool partial, struct nvmeof_zone *zones, uint32_t max, uint32_t *nr,
			   uint64_t *total, uint32_t timeout_ms)
{
	if (nr)
		*nr = 0;
	if (total)
		*total = 0;
	if (!ns || !nr || !zone_size)
		return nvmeof_err(NVMEOF_EINVAL, "Report Zones nsid %u slba %llu: %s", ns ? ns->nsid : 0,
				  (unsigned long long)slba, !ns ? "no namespace" : !nr ? "no count" :
				  "zone size 0 (nvmeof_zns_info gives the namespace's)");
	/* one command carries what fits MDTS: ask again from the zone after
	 * the last one returned (the kernel's nvme_ns_report_zones, nvme-cli)
	 * until max, the namespace's end, a report with none, or, without the
	 * partial bit, the first report's count of every zone to come. Each
	 * report adds one zone at least, so max bounds the loop. */
	uint64_t first = 0;
	for (bool asked = false; (!asked || *nr < max) && slba < ns->nsze; asked = true) {
		uint32_t got = 0;
		uint64_t t = 0;
		int rc = nvmeof_zone_report_ext(q, ns, slba, filter, partial, zones ? zones + *nr : NULL, max - *nr,
						&got, &t, timeout_ms);
		if (rc)
			return rc;
		if (!asked) {
			first = t;
			if (total)
				*total = t;
		}
		if (!got)
			break;
		*nr += got;
		if (!partial && *nr >= first)
			break;
		slba = (zones[*nr - 1].zslba / zone_size + 1) * zone_size;
	}
	return 0;
}

int nvmeof_zone_report(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint8_t filter,
		       bool partial, struct nvmeof_zone *zones, uint32_t max, uint32_t *nr, uint32_t timeout_ms)
{
	return nvmeof_zone_report_ext(q, ns, slba, filter, partial, zones, max, nr, NULL, timeout_ms);
}

static const char *zsa_name(uint8_t zsa)
{
	switch (zsa) {
	case NVMEOF_ZSA_CLOSE: return "close";
	case NVMEOF_ZSA_FINISH: return "finish";
	case NVMEOF_ZSA_OPEN: return "open";
	case NVMEOF_ZSA_RESET: return "reset";
	case NVMEOF_ZSA_OFFLINE: return "offline";
	default: return NULL;
	}
}

static int zms_build(const struct nvmeof_ns *ns, uint64_t slba, uint8_t zsa, bool select_all, uint8_t *sqe,
		     char *what, size_t wlen)
{
	const char *name = zsa_name(zsa);
	if (select_all)
		snprintf(what, wlen, "Zone Management Send %s nsid %u, all zones", name ? name : "?",
			 ns ? ns->nsid : 0);
	else
		snprintf(what, wlen, "Zone Management Send %s nsid %u slba %llu", name ? name : "?",
			 ns ? ns->nsid : 0, (unsigned long long)slba);
	if (!name)
		return nvmeof_err(NVMEOF_EINVAL, "%s: zone send action 0x%x is none of close (1), finish (2), "
				  "open (3), reset (4), offline (5)", what, zsa);
	if (ns)
		nvme_sqe_zone_mgmt_send(sqe, 0, ns->nsid, select_all ? 0 : slba, zsa, select_all);
	return 0;
}

int nvmeof_zone_mgmt_send(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint8_t zsa,
			  bool select_all, nvmeof_cb cb, void *arg)
{
	uint8_t sqe[NVME_SQE_SIZE];
	char what[96];
	int rc = zms_build(ns, slba, zsa, select_all, sqe, what, sizeof(what));
	if (rc || (rc = zns_check(q, ns, NULL, 0, 0, what)))
		return rc;
	struct sub sb = zns_sub(sqe, NULL, 0, 0);
	rc = q_submit(q, &sb, cb, arg, NULL);
	return rc ? nvmeof_err_prefix(rc, "%s", what) : 0;
}

int nvmeof_zone_mgmt_send_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t slba, uint8_t zsa,
			       bool select_all, uint32_t timeout_ms)
{
	uint8_t sqe[NVME_SQE_SIZE];
	char what[96];
	int rc = zms_build(ns, slba, zsa, select_all, sqe, what, sizeof(what));
	if (rc || (rc = zns_check(q, ns, NULL, 0, 0, what)))
		return rc;
	struct sub sb = zns_sub(sqe, NULL, 0, 0);
	return q_sync_run(q, &sb, timeout_ms, NULL, what);
}

/* An append's checks and command: one command, within ZASL and MDTS. */
static int append_build(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t zslba, uint32_t nlb,
			struct nvmeof_mr *mr, size_t off, uint32_t flags, uint8_t *sqe, uint32_t *bytes,
			char *what, size_t wlen)
{
	uint32_t cdw12;
	snprintf(what, wlen, "Zone Append nsid %u zslba %llu nlb %u", ns ? ns->nsid : 0,
		 (unsigned long long)zslba, nlb);
	if (!q || !ns || !mr || !nlb)
		return nvmeof_err(NVMEOF_EINVAL, "%s: %s", what,
				  !q ? "no queue" : !ns ? "no namespace" : !mr ? "no memory region" : "zero blocks");
	int rc = q_write_flags(what, flags, NVMEOF_IO_FUA, &cdw12);
	if (rc)
		return rc;
	uint8_t lbads = __atomic_load_n(&ns->lbads, __ATOMIC_RELAXED);
	uint64_t len = (uint64_t)nlb << lbads;
	if ((rc = zns_check(q, ns, mr, off, len, what)))
		return rc;
	if (ns->ms)
		return nvmeof_err(NVMEOF_ENOTSUP, "%s: namespace %u has %u bytes of metadata per block", what,
				  ns->nsid, ns->ms);
	/* a queue without a controller (the test wire) has MDTS alone */
	uint64_t zasl = q->ctrl ? __atomic_load_n(&q->ctrl->zns_zasl, __ATOMIC_ACQUIRE) : 1ull << 32;
	if (!zasl)
		return nvmeof_err(NVMEOF_EINVAL, "%s: the controller's Zone Append Size Limit is not known yet "
				  "(nvmeof_zns_info reads it)", what);
	uint32_t zasl_bytes = (uint32_t)zasl;
	if (nlb > 0x10000 || (zasl_bytes && len > zasl_bytes))
		return nvmeof_err(NVMEOF_EINVAL, "%s: %llu bytes exceed the Zone Append Size Limit of %u bytes; an "
				  "append is not split (its blocks get one LBA from the controller): append less",
				  what, (unsigned long long)len, zasl_bytes ? zasl_bytes : 65536u << lbads);
	if (len > q->max_cmd_bytes)
		return nvmeof_err(NVMEOF_EINVAL, "%s: %llu bytes exceed the %u-byte transfer limit (MDTS, which "
				  "bounds appends when ZASL is 0); an append is not split: append less", what,
				  (unsigned long long)len, q->max_cmd_bytes);
	nvme_sqe_zone_append(sqe, 0, ns->nsid, zslba, nlb, cdw12);
	*bytes = (uint32_t)len;
	return 0;
}

int nvmeof_zone_append(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t zslba, uint32_t nlb,
		       struct nvmeof_mr *mr, size_t off, uint32_t flags, nvmeof_cb cb, void *arg)
{
	uint8_t sqe[NVME_SQE_SIZE];
	char what[96];
	uint32_t len;
	int rc = append_build(q, ns, zslba, nlb, mr, off, flags, sqe, &len, what, sizeof(what));
	if (rc)
		return rc;
	struct sub sb = zns_sub(sqe, mr, off, len);
	rc = q_submit(q, &sb, cb, arg, NULL);
	return rc ? nvmeof_err_prefix(rc, "%s", what) : 0;
}

int nvmeof_zone_append_sync(struct nvmeof_queue *q, const struct nvmeof_ns *ns, uint64_t zslba, uint32_t nlb,
			    struct nvmeof_mr *mr, size_t off, uint32_t flags, uint64_t *alba, uint32_t timeout_ms)
{
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	char what[96];
	uint32_t len;
	if (alba)
		*alba = 0;
	int rc = append_build(q, ns, zslba, nlb, mr, off, flags, sqe, &len, what, sizeof(what));
	if (rc)
		return rc;
	if ((rc = mem_before_write(mr)))
		return nvmeof_err_prefix(rc, "%s", what);
	struct sub sb = zns_sub(sqe, mr, off, len);
	rc = q_sync_run(q, &sb, timeout_ms, &cpl, what);
	if (!rc && alba)
		*alba = cpl.cdw0 | (uint64_t)cpl.cdw1 << 32;
	return rc;
}
