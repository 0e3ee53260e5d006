/*
 * Controller bring-up on the admin queue, reading like the NVMe-oF spec:
 * Fabrics Connect, Property Get CAP/VS, Property Set CC.EN, wait CSTS.RDY,
 * Identify Controller, Set Features Number of Queues, Identify namespaces.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpriv.h"
#include "trace.h"
#include "util.h"

int ctrl_prop_get(struct nvmeof_ctrl *c, uint32_t off, int size8, uint64_t *val, const char *name)
{
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	nvmf_sqe_prop_get(sqe, 0, off, size8);
	int rc = q_exec(c->admin, sqe, 0, ctrl_cmd_timeout(c), &cpl);
	if (rc)
		return nvmeof_err_prefix(rc, "Property Get %s", name);
	/* An 8-byte property comes back in DW0 (low) and DW1 (high). */
	*val = size8 ? ((uint64_t)cpl.cdw1 << 32 | cpl.cdw0) : cpl.cdw0;
	trace_ctrl(&c->o, 0, "Property Get %s: 0x%llx", name, (unsigned long long)*val);
	return 0;
}

int ctrl_prop_set(struct nvmeof_ctrl *c, uint32_t off, uint32_t val, const char *name)
{
	uint8_t sqe[NVME_SQE_SIZE];
	nvmf_sqe_prop_set(sqe, 0, off, 0, val);
	int rc = q_exec(c->admin, sqe, 0, ctrl_cmd_timeout(c), NULL);
	trace_ctrl(&c->o, 0, "Property Set %s 0x%x: %s", name, val, rc ? "failed" : "done");
	return rc ? nvmeof_err_prefix(rc, "Property Set %s", name) : 0;
}

int ctrl_fabrics_connect(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid,
			   uint16_t sqsize, uint16_t cntlid, uint32_t kato, uint16_t *cntlid_out,
			   uint16_t *status)
{
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	int rc;
	if (q == c->admin)
		c->admin_live = false; /* a new association: no Keep Alive until CC.EN */
	if ((rc = ctrl_connect_build(c, q, qid, sqsize, cntlid, kato, sqe)))
		return rc;
	/* an NVMe command, not a CM step: the command timeout (a busy target
	 * creating many queues at once can take seconds) */
	rc = q_exec(q, sqe, NVMF_CONNECT_DATA_SIZE, ctrl_cmd_timeout(c), &cpl);
	if (status)
		*status = rc == NVMEOF_ENVME ? cpl.status : 0;
	if ((rc = ctrl_connect_result(c, qid, rc, &cpl, true, cntlid_out)))
		return rc;
	/* the controller takes no other command on this queue before it has
	 * authenticated us, when its answer says it requires it */
	return ctrl_auth_sync(c, q, qid, cpl.cdw0, status);
}

int ctrl_connect_build(struct nvmeof_ctrl *c, struct nvmeof_queue *q, uint16_t qid, uint16_t sqsize,
		       uint16_t cntlid, uint32_t kato, uint8_t *sqe)
{
	/* on every queue, as the Linux host's nvmf_connect_cmd_prep */
	nvmf_sqe_connect(sqe, 0, qid, sqsize, c->o.disable_sqflow ? NVMF_CONNECT_DISABLE_SQFLOW : 0, kato);
	if (nvmf_connect_data(q_scratch(q), c->hostid, cntlid, c->subnqn, c->hostnqn))
		return nvmeof_err(NVMEOF_EINVAL, "Fabrics Connect: an NQN is empty or longer than %d bytes",
				  NVME_NQN_MAX);
	return 0;
}

int ctrl_connect_result(struct nvmeof_ctrl *c, uint16_t qid, int rc, const struct nvmeof_cpl *cpl,
			bool current, uint16_t *cntlid_out)
{
	if (rc == NVMEOF_ENVME) {
		const char *hint = "";
		uint16_t code = nvme_status_code(cpl->status);
		/* Invalid Parameters pointing at CNTLID in the connect data: the
		 * association is gone (nvmet's answer for an unknown CNTLID) */
		if (qid && current && code == NVME_SC_CONNECT_INVALID_PARAM &&
		    cpl->cdw0 == (1u << 16 | NVMF_CONNECT_DATA_CNTLID_OFF))
			__atomic_store_n(&c->assoc_stale, true, __ATOMIC_RELAXED); /* no lock: a reassociation may hold it */
		if (code == NVME_SC_CONNECT_INVALID_HOST)
			hint = ": the subsystem does not allow this host NQN";
		else if (code == NVME_SC_CONNECT_INVALID_PARAM)
			hint = ": wrong subsystem NQN, or a parameter the target refused";
		return nvmeof_err_prefix(rc, "Fabrics Connect queue %u to %s as %s%s", qid, c->subnqn,
					 c->hostnqn, hint);
	}
	if (rc)
		return nvmeof_err_prefix(rc, "Fabrics Connect queue %u", qid);
	if (cntlid_out)
		*cntlid_out = (uint16_t)(cpl->cdw0 & 0xffff);
	const uint8_t *h = c->hostid;
	trace_ctrl(&c->o, qid,
		   "Fabrics Connect as %s (host ID %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x): "
		   "controller %u", c->hostnqn, h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11],
		   h[12], h[13], h[14], h[15], (unsigned)(cpl->cdw0 & 0xffff));
	return 0;
}

int ctrl_identify(struct nvmeof_ctrl *c, uint8_t cns, uint32_t nsid, const char *what)
{
	uint8_t sqe[NVME_SQE_SIZE];
	nvme_sqe_identify(sqe, 0, cns, nsid, 0);
	memset(q_scratch(c->admin), 0, NVME_IDENTIFY_SIZE);
	int rc = q_exec(c->admin, sqe, NVME_IDENTIFY_SIZE, ctrl_cmd_timeout(c), NULL);
	trace_ctrl(&c->o, 0, "Identify %s: %s", what, rc ? "failed" : "done");
	return rc ? nvmeof_err_prefix(rc, "Identify %s", what) : 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

int ctrl_wait_csts(struct nvmeof_ctrl *c, uint32_t mask, uint32_t want, uint32_t timeout_ms,
		     const char *what)
{
	uint64_t deadline = nvmeof_now_ms() + timeout_ms, v = 0;
	for (;;) {
		int rc = ctrl_prop_get(c, NVME_REG_CSTS, 0, &v, "CSTS");
		if (rc)
			return rc;
		if ((v & mask) == want)
			return 0;
		if (v & NVME_CSTS_CFS)
			return nvmeof_err(NVMEOF_ETRANSPORT, "%s: controller fatal status (CSTS 0x%llx)",
					  what, (unsigned long long)v);
		if (nvmeof_now_ms() >= deadline)
			return nvmeof_err(NVMEOF_ETIMEDOUT, "%s: not reached within %u ms (CSTS 0x%llx)",
					  what, timeout_ms, (unsigned long long)v);
		sleep_ms(10);
	}
}

int ctrl_enable(struct nvmeof_ctrl *c, struct nvmeof_ctrl_info *info)
{
	uint64_t vs;
	int rc;
	if ((rc = ctrl_prop_get(c, NVME_REG_CAP, 1, &info->cap, "CAP")) ||
	    (rc = ctrl_prop_get(c, NVME_REG_VS, 0, &vs, "VS")))
		return rc;
	info->ver = (uint32_t)vs;
	info->mqes = NVME_CAP_MQES(info->cap);
	if (NVME_CAP_MPSMIN(info->cap) > 0)
		return nvmeof_err(NVMEOF_ENOTSUP, "controller's minimum page size is %u bytes; 4096 is required",
				  1u << (12 + NVME_CAP_MPSMIN(info->cap)));
	/* every command set the controller offers (CAP.CSS bit 6), as the
	 * kernel host asks: a zoned namespace's commands are otherwise not
	 * the controller's to accept */
	c->cc = (info->cap & NVME_CAP_CSS_CSI ? NVME_CC_CSS_CSI : NVME_CC_CSS_NVM) | NVME_CC_MPS(12) |
		NVME_CC_IOSQES(6) | NVME_CC_IOCQES(4);
	if ((rc = ctrl_prop_set(c, NVME_REG_CC, c->cc, "CC")))
		return rc;
	c->cc |= NVME_CC_EN;
	if ((rc = ctrl_prop_set(c, NVME_REG_CC, c->cc, "CC.EN")))
		return rc;
	uint32_t to = NVME_CAP_TO(info->cap) * 500u;
	rc = ctrl_wait_csts(c, NVME_CSTS_RDY, NVME_CSTS_RDY, to ? to : 500, "enable: CSTS.RDY");
	c->admin_live = !rc;
	return rc;
}

/* A controller that reports a Command Retry Delay Time sets CRD in a
 * retryable status only after the host enabled Advanced Command Retry
 * (Set Features Host Behavior Support); without it retries would run back
 * to back. Asked on every association (a new one starts with it off), only
 * when some CRDT is not 0, as the kernel host does. A controller that
 * refuses the feature leaves retries undelayed; only a failed transport
 * fails the bring-up. */
static int ctrl_configure_acre(struct nvmeof_ctrl *c, struct nvmeof_ctrl_info *info)
{
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	info->acre = false;
	if (!info->crdt[0] && !info->crdt[1] && !info->crdt[2])
		return 0;
	uint8_t *hbs = q_scratch(c->admin);
	memset(hbs, 0, NVME_HOST_BEHAVIOR_SIZE);
	hbs[0] = NVME_HOST_BEHAVIOR_ACRE;
	nvme_sqe_set_features(sqe, 0, NVME_FEAT_HOST_BEHAVIOR, 0);
	int rc = q_exec(c->admin, sqe, NVME_HOST_BEHAVIOR_SIZE, ctrl_cmd_timeout(c), &cpl);
	if (rc && rc != NVMEOF_ENVME)
		return nvmeof_err_prefix(rc, "Set Features Host Behavior Support (ACRE)");
	info->acre = !rc;
	trace_ctrl(&c->o, 0, "Set Features Host Behavior Support ACRE (CRDT %u/%u/%u ms): %s",
		   info->crdt[0] * 100u, info->crdt[1] * 100u, info->crdt[2] * 100u,
		   rc ? nvmeof_errmsg() : "enabled");
	return 0;
}

/* Identify Controller and what follows from it: the data path needs keyed
 * SGLs; MDTS gives the per-command limit; SGL offsets, ICDOFF 0 and IOCCSZ
 * give the in-capsule limit. On first bring-up and after a reconnect. */
int ctrl_identify_ctrl(struct nvmeof_ctrl *c, struct nvmeof_ctrl_info *info)
{
	int rc = ctrl_identify(c, NVME_CNS_CTRL, 0, "Controller");
	if (rc)
		return rc;
	nvme_id_ctrl_parse(q_scratch(c->admin), info);
	/* CTRATT bit 6: Traffic Based Keep Alive Support (keepalive.c) */
	bool tbkas = get_le32((const uint8_t *)q_scratch(c->admin) + 96) >> 6 & 1;
	__atomic_store_n(&c->tbkas, tbkas, __ATOMIC_RELAXED);
	if (tbkas)
		trace_ctrl(&c->o, 0, "traffic-based keep-alive (CTRATT.TBKAS): no Keep Alive in an interval with I/O");
	/* keyed SGLs are RDMA's: NVMe/TCP moves data in PDUs */
	if (!c->tcp && !(info->sgls & NVME_SGLS_KEYED))
		return nvmeof_err(NVMEOF_ENOTSUP, "controller lacks keyed SGL data block support (SGLS 0x%x)",
				  info->sgls);
	info->max_xfer = nvme_max_xfer(info->mdts, info->cap);
	/* nvmet over TCP reports no limit (MDTS 0) but allocates each
	 * command's whole buffer at once, and refuses 4 MiB (Data SGL Length
	 * Invalid): 1 MiB, what its RDMA port allows */
	if (c->tcp && !info->mdts)
		info->max_xfer = 1u << 20;
	/* Over NVMe/TCP a write that fits goes in the capsule whatever
	 * in_capsule says (nvmet waits for such data there and sends no R2T,
	 * and the kernel's host always sends it so): the queue decides it,
	 * and counts it, as over RDMA. */
	info->in_capsule_max = c->tcp ? ctrl_wire_icd(info) : 0;
	if (!c->tcp && c->o.in_capsule && (info->sgls & NVME_SGLS_OFFSET) && !info->icdoff &&
	    info->ioccsz * 16u > NVME_SQE_SIZE)
		info->in_capsule_max = info->ioccsz * 16u - NVME_SQE_SIZE;
	return ctrl_configure_acre(c, info);
}

/* Set Features Number of Queues, on bring-up and on every reassociation (a
 * new controller starts with none granted). */
int ctrl_set_num_queues(struct nvmeof_ctrl *c, uint32_t *granted)
{
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	int rc;
	uint16_t want = (uint16_t)(c->o.num_io_queues ? c->o.num_io_queues : 1);
	nvme_sqe_set_features(sqe, 0, NVME_FEAT_NUM_QUEUES, nvme_num_queues_cdw11(want, want));
	if ((rc = q_exec(c->admin, sqe, 0, ctrl_cmd_timeout(c), &cpl)))
		return nvmeof_err_prefix(rc, "Set Features Number of Queues");
	uint32_t nsq = (cpl.cdw0 & 0xffff) + 1, ncq = (cpl.cdw0 >> 16) + 1;
	*granted = nsq < ncq ? nsq : ncq;
	if (*granted > want)
		*granted = want;
	trace_ctrl(&c->o, 0, "Set Features Number of Queues: %u asked, %u granted", want, *granted);
	return 0;
}

int ctrl_identify_all(struct nvmeof_ctrl *c)
{
	uint32_t ids[MAX_NS];
	int rc;
	if ((rc = ctrl_identify_ctrl(c, &c->info)))
		return rc;
	/* A discovery controller has no namespaces and no I/O queues. */
	if (c->info.cntrltype == NVME_CNTRLTYPE_DISCOVERY || !strcmp(c->subnqn, NVMEOF_DISCOVERY_NQN))
		return 0;
	if ((rc = ctrl_set_num_queues(c, &c->info.max_io_queues)))
		return rc;

	if ((rc = ctrl_identify(c, NVME_CNS_NS_ACTIVE_LIST, 0, "Active Namespace List")))
		return rc;
	uint32_t n = nvme_ns_list_parse(q_scratch(c->admin), ids, MAX_NS);
	for (uint32_t i = 0; i < n; i++) {
		const char *why;
		char what[32];
		snprintf(what, sizeof(what), "Namespace %u", ids[i]);
		if ((rc = ctrl_identify(c, NVME_CNS_NS, ids[i], what)))
			return rc;
		/* A namespace with a format we cannot use is left out, not fatal. */
		struct nvmeof_ns ns;
		if (nvme_id_ns_parse(q_scratch(c->admin), ids[i], &ns, &why) == 0 && ns.nsze &&
		    (rc = nst_put(&c->nst, &ns)))
			return rc;
	}
	return 0;
}
