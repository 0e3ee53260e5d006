/* Identify and Get Log Page for users, and the namespace rescan that
 * asynchronous events trigger. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adminio.h"
#include "ana.h"
#include "ctrl.h"
#include "internal.h"
#include "mem.h"
#include "nstable.h"
#include "protocol.h"
#include "queue.h"


int admin_exec(struct nvmeof_ctrl *c, const uint8_t *sqe, void *buf, uint32_t len,
	       struct nvmeof_cpl *cpl, const char *what)
{
	struct nvmeof_mr *mr = NULL;
	int rc;
	/* while the association is re-created, as long as the command itself may take */
	if ((rc = ctrl_wait_live(c, ctrl_cmd_timeout(c), what)))
		return rc;
	/* the library's own, for this command only: not one of the user's
	 * registrations that keep nvmeof_ctrl_close from closing */
	if (len > Q_SCRATCH_SIZE && (rc = mem_alloc_internal(ctrl_mem(c), c, len, &mr)))
		return nvmeof_err_prefix(rc, "%s", what);
	pthread_mutex_t *lock = ctrl_admin_lock(c);
	struct nvmeof_queue *aq = ctrl_admin(c);
	ctrl_admin_take(c); /* a fence that fell due since the wait first */
	if (mr) {
		rc = q_exec_mr(aq, sqe, mr, 0, len, ctrl_cmd_timeout(c), cpl);
		if (!rc)
			memcpy(buf, mr->addr, len);
	} else {
		if (len)
			memset(q_scratch(aq), 0, len);
		rc = q_exec(aq, sqe, len, ctrl_cmd_timeout(c), cpl);
		if (!rc && len)
			memcpy(buf, q_scratch(aq), len);
	}
	pthread_mutex_unlock(lock);
	if (mr)
		nvmeof_mr_release(mr);
	return rc ? nvmeof_err_prefix(rc, "%s", what) : 0;
}

int nvmeof_identify(struct nvmeof_ctrl *c, uint8_t cns, uint32_t nsid, void *buf)
{
	uint8_t sqe[NVME_SQE_SIZE];
	char what[48];
	if (!c || !buf)
		return nvmeof_err(NVMEOF_EINVAL, "identify: %s", !c ? "no controller" : "no buffer");
	snprintf(what, sizeof(what), "Identify CNS 0x%02x nsid %u", cns, nsid);
	nvme_sqe_identify(sqe, 0, cns, nsid, 0);
	return admin_exec(c, sqe, buf, NVME_IDENTIFY_SIZE, NULL, what);
}

int nvmeof_get_log_page(struct nvmeof_ctrl *c, const struct nvmeof_log_req *r, void *buf, size_t len)
{
	uint8_t sqe[NVME_SQE_SIZE];
	char what[64];
	if (!c || !r || !buf)
		return nvmeof_err(NVMEOF_EINVAL, "get log page: %s",
				  !c ? "no controller" : !r ? "no request" : "no buffer");
	snprintf(what, sizeof(what), "Get Log Page 0x%02x", r->lid);
	if (!len || len % 4 || r->offset % 4)
		return nvmeof_err(NVMEOF_EINVAL, "%s: length %zu and offset %llu must be non-zero dword multiples",
				  what, len, (unsigned long long)r->offset);
	if (r->lsp > 0x7f)
		return nvmeof_err(NVMEOF_EINVAL, "%s: LSP 0x%x is more than 7 bits", what, r->lsp);
	const struct nvmeof_ctrl_info *ci = nvmeof_ctrl_info(c);
	/* One command moves at most MDTS (and the 24-bit keyed SGL length). */
	uint64_t piece = ci->max_xfer && ci->max_xfer < NVME_KEYED_SGL_MAX_LEN ? ci->max_xfer
									       : 1u << 20;
	piece &= ~(uint64_t)3;
	if (len > piece && !(ci->lpa & NVME_LPA_OFFSET))
		return nvmeof_err(NVMEOF_ENOTSUP,
				  "%s: %zu bytes need several commands, and the controller does not take "
				  "log page offsets (LPA 0x%x)", what, len, ci->lpa);
	for (size_t done = 0; done < len;) {
		uint32_t n = (uint32_t)(len - done < piece ? len - done : piece);
		nvme_sqe_get_log_page(sqe, 0, r->nsid ? r->nsid : 0xffffffffu, r->lid, r->lsp,
				      r->rae || done + n < len, n, r->offset + done, r->lsi);
		int rc = admin_exec(c, sqe, (uint8_t *)buf + done, n, NULL, what);
		if (rc)
			return rc;
		done += n;
	}
	return 0;
}

int nvmeof_get_log_error(struct nvmeof_ctrl *c, struct nvmeof_error_entry *out, uint32_t max,
			 uint32_t *n)
{
	if (!c || !out || !max || !n)
		return nvmeof_err(NVMEOF_EINVAL, "error log: %s", !c ? "no controller" : "no room for entries");
	uint32_t want = (uint32_t)nvmeof_ctrl_info(c)->elpe + 1;
	if (want > max)
		want = max;
	uint8_t *raw = malloc((size_t)want * NVME_ERROR_ENTRY_SIZE);
	if (!raw)
		return nvmeof_err(NVMEOF_ENOMEM, "error log: out of memory");
	struct nvmeof_log_req r = {.lid = NVMEOF_LOG_ERROR};
	int rc = nvmeof_get_log_page(c, &r, raw, (size_t)want * NVME_ERROR_ENTRY_SIZE);
	if (!rc)
		for (uint32_t i = 0; i < want; i++)
			nvme_error_entry_parse(raw + (size_t)i * NVME_ERROR_ENTRY_SIZE, &out[i]);
	*n = rc ? 0 : want;
	free(raw);
	return rc;
}

int nvmeof_get_log_smart(struct nvmeof_ctrl *c, uint32_t nsid, struct nvmeof_smart_log *out)
{
	uint8_t raw[NVME_SMART_LOG_SIZE];
	if (!out)
		return nvmeof_err(NVMEOF_EINVAL, "SMART log: no output");
	struct nvmeof_log_req r = {.lid = NVMEOF_LOG_SMART, .nsid = nsid, .rae = true};
	int rc = nvmeof_get_log_page(c, &r, raw, sizeof(raw));
	if (!rc)
		nvme_smart_log_parse(raw, out);
	return rc;
}

int nvmeof_get_log_changed_ns(struct nvmeof_ctrl *c, bool rae, uint32_t *nsids, uint32_t max,
			      uint32_t *n, bool *overflow)
{
	uint8_t *raw = malloc(NVME_NS_LIST_MAX * 4);
	int ovf = 0;
	if (!raw)
		return nvmeof_err(NVMEOF_ENOMEM, "changed namespace list: out of memory");
	struct nvmeof_log_req r = {.lid = NVMEOF_LOG_CHANGED_NS, .rae = rae};
	int rc = nvmeof_get_log_page(c, &r, raw, NVME_NS_LIST_MAX * 4);
	uint32_t k = rc ? 0 : nvme_changed_ns_parse(raw, nsids, nsids ? max : 0, &ovf);
	if (n)
		*n = k;
	if (overflow)
		*overflow = ovf;
	free(raw);
	return rc;
}

int nvmeof_get_log_ana(struct nvmeof_ctrl *c, bool rgo, void *buf, size_t len)
{
	/* LSP bit 0: Return Groups Only */
	struct nvmeof_log_req r = {.lid = NVMEOF_LOG_ANA, .lsp = rgo ? 1 : 0, .rae = true};
	return nvmeof_get_log_page(c, &r, buf, len);
}

int nvmeof_ctrl_ana_caps(struct nvmeof_ctrl *c, struct nvmeof_ana_caps *out)
{
	if (!c || !out || (out->size && out->size < offsetof(struct nvmeof_ana_caps, anagrpmax)))
		return nvmeof_err(NVMEOF_EINVAL, "ANA capabilities: %s", !c ? "no controller" : "no output, or its size too small");
	uint8_t *id = malloc(NVME_IDENTIFY_SIZE);
	if (!id)
		return nvmeof_err(NVMEOF_ENOMEM, "ANA capabilities: Identify buffer");
	int rc = nvmeof_identify(c, NVME_CNS_CTRL, 0, id);
	if (!rc) {
		struct nvmeof_ana_caps a = {.size = sizeof(a)};
		nvme_id_ctrl_ana_parse(id, &a);
		size_t n = out->size && out->size < sizeof(a) ? out->size : sizeof(a);
		a.size = n;
		memcpy(out, &a, n);
	}
	free(id);
	return rc;
}

int nvmeof_ana_group(const void *log, size_t len, uint32_t idx, struct nvmeof_ana_group *g,
		     uint64_t *chgcnt, uint16_t *ngrps)
{
	if (!log || !g)
		return -1;
	return nvme_ana_group_parse(log, len, idx, g, chgcnt, ngrps);
}

int nvmeof_ns_ids(struct nvmeof_ctrl *c, uint32_t nsid, struct nvmeof_ns_ids *out)
{
	const char *why;
	if (!out)
		return nvmeof_err(NVMEOF_EINVAL, "namespace identifiers: no output");
	uint8_t *raw = malloc(NVME_IDENTIFY_SIZE);
	if (!raw)
		return nvmeof_err(NVMEOF_ENOMEM, "namespace identifiers: out of memory");
	int rc = nvmeof_identify(c, NVME_CNS_NS_DESC_LIST, nsid, raw);
	if (!rc && nvme_ns_desc_parse(raw, NVME_IDENTIFY_SIZE, out, &why))
		rc = nvmeof_err(NVMEOF_ENVME, "Identify Namespace Identification Descriptor list of nsid %u: %s",
				nsid, why);
	free(raw);
	return rc;
}

static bool listed(const uint32_t *ids, uint32_t n, uint32_t nsid)
{
	for (uint32_t i = 0; i < n; i++)
		if (ids[i] == nsid)
			return true;
	return false;
}

int admin_ns_rescan(struct nvmeof_ctrl *c, const uint32_t *changed, uint32_t nchanged)
{
	uint32_t *now = malloc(NVME_NS_LIST_MAX * sizeof(*now)), *had = malloc(NVME_NS_LIST_MAX * sizeof(*had));
	uint8_t *raw = malloc(NVME_IDENTIFY_SIZE);
	struct ns_table *t = ctrl_nst(c);
	int rc = 0;
	if (!now || !had || !raw) {
		rc = nvmeof_err(NVMEOF_ENOMEM, "namespace rescan: out of memory");
		goto out;
	}
	if ((rc = nvmeof_identify(c, NVME_CNS_NS_ACTIVE_LIST, 0, raw)))
		goto out;
	uint32_t n = nvme_ns_list_parse(raw, now, NVME_NS_LIST_MAX);
	uint32_t nhad = nst_ids(t, had, NVME_NS_LIST_MAX);
	for (uint32_t i = 0; i < nhad && i < NVME_NS_LIST_MAX; i++)
		if (!listed(now, n, had[i]))
			nst_gone(t, had[i]);
	for (uint32_t i = 0; i < n; i++) {
		struct nvmeof_ns ns;
		const char *why;
		if (listed(had, nhad, now[i]) && changed && !listed(changed, nchanged, now[i]))
			continue;
		if ((rc = nvmeof_identify(c, NVME_CNS_NS, now[i], raw)))
			goto out;
		if (nvme_id_ns_parse(raw, now[i], &ns, &why) == 0 && ns.nsze) {
			if ((rc = nst_put(t, &ns)))
				goto out;
		} else {
			nst_gone(t, now[i]); /* not usable here (format, or size 0) */
		}
	}
out:
	free(now);
	free(had);
	free(raw);
	return rc;
}
