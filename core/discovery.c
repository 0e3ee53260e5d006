/*
 * Discovery: a discovery controller and its Discovery Log Page (LID 70h),
 * read as the NVMe-oF spec asks: the header, then the records in pieces at
 * increasing offsets, and from the start again when the generation counter
 * changed while we read.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adminio.h"
#include "internal.h"
#include "opts.h"
#include "protocol.h"

#define DISC_KATO_MS 30000
#define DISC_PIECE_ENTRIES 4   /* 4 KiB per command */
#define DISC_MAX_RETRIES 10
#define DISC_MAX_RECORDS 4096  /* a sanity bound on NUMREC */

int nvmeof_discovery_connect(const struct nvmeof_ctrl_opts *opts, struct nvmeof_ctrl **out)
{
	struct nvmeof_ctrl_opts o;
	if (!opts)
		return nvmeof_err(NVMEOF_EINVAL, "discovery connect: no options");
	/* the caller's struct may be shorter or longer than ours */
	int rc = ctrl_opts_in(opts, &o);
	if (rc)
		return nvmeof_err_prefix(rc, "discovery connect");
	if (!o.subnqn || !o.subnqn[0])
		o.subnqn = NVMEOF_DISCOVERY_NQN;
	/* NVMe/TCP's discovery port is 8009 (IANA; the kernel's
	 * NVME_TCP_DISC_PORT, nvme-cli's default for discover -t tcp), RDMA's
	 * 4420: a port left at the default, or none, takes the transport's */
	if (o.trtype && !strcasecmp(o.trtype, "tcp") && (!o.trsvcid || o.trsvcid == ctrl_default_trsvcid))
		o.trsvcid = NVMEOF_TCP_DISC_PORT;
	/* A host that stays connected to a discovery controller must keep it alive. */
	if (!o.kato_ms)
		o.kato_ms = DISC_KATO_MS;
	rc = nvmeof_ctrl_connect(&o, out);
	if (rc)
		return nvmeof_err_prefix(rc, "discovery controller %s", o.subnqn);
	uint8_t type = nvmeof_ctrl_info(*out)->cntrltype;
	if (type && type != NVME_CNTRLTYPE_DISCOVERY) {
		nvmeof_ctrl_close(*out);
		*out = NULL;
		return nvmeof_err(NVMEOF_EINVAL, "discovery connect: %s is not a discovery controller (CNTRLTYPE %u)",
				  o.subnqn, type);
	}
	return 0;
}

static int disc_read(struct nvmeof_ctrl *c, uint8_t *buf, uint32_t len, uint64_t off)
{
	/* RAE: reading the log must not re-arm (clear) a pending event here */
	struct nvmeof_log_req r = {.lid = NVMEOF_LOG_DISCOVERY, .offset = off, .rae = true};
	return nvmeof_get_log_page(c, &r, buf, len);
}

void nvmeof_disc_log_free(struct nvmeof_disc_log *log)
{
	if (!log)
		return;
	free(log->entries);
	free(log);
}

int nvmeof_discover(struct nvmeof_ctrl *c, struct nvmeof_disc_log **out)
{
	uint8_t *buf = malloc(DISC_PIECE_ENTRIES * NVME_DISC_ENTRY_SIZE);
	struct nvmeof_disc_log *log = calloc(1, sizeof(*log));
	int rc = 0;
	if (!c || !out) {
		rc = nvmeof_err(NVMEOF_EINVAL, "discover: %s", !c ? "no controller" : "no output");
		goto fail;
	}
	*out = NULL;
	if (!buf || !log) {
		rc = nvmeof_err(NVMEOF_ENOMEM, "discover: out of memory");
		goto fail;
	}
	for (int attempt = 0;; attempt++) {
		uint64_t genctr, numrec, gen2, num2;
		uint16_t recfmt;
		if (attempt == DISC_MAX_RETRIES) {
			rc = nvmeof_err(NVMEOF_ETIMEDOUT,
					"discover: the log changed during each of %d reads", DISC_MAX_RETRIES);
			goto fail;
		}
		if ((rc = disc_read(c, buf, NVME_DISC_LOG_HDR_SIZE, 0)))
			goto fail;
		nvme_disc_log_hdr_parse(buf, &genctr, &numrec, &recfmt);
		if (recfmt != 0) {
			rc = nvmeof_err(NVMEOF_ENOTSUP, "discover: log record format %u (only 0 is defined)", recfmt);
			goto fail;
		}
		if (numrec > DISC_MAX_RECORDS) {
			rc = nvmeof_err(NVMEOF_ENOTSUP, "discover: %llu records (more than %d)",
					(unsigned long long)numrec, DISC_MAX_RECORDS);
			goto fail;
		}
		free(log->entries);
		log->entries = calloc(numrec ? numrec : 1, sizeof(*log->entries));
		if (!log->entries) {
			rc = nvmeof_err(NVMEOF_ENOMEM, "discover: out of memory for %llu records",
					(unsigned long long)numrec);
			goto fail;
		}
		for (uint64_t i = 0; i < numrec; i += DISC_PIECE_ENTRIES) {
			uint32_t k = numrec - i < DISC_PIECE_ENTRIES ? (uint32_t)(numrec - i) : DISC_PIECE_ENTRIES;
			if ((rc = disc_read(c, buf, k * NVME_DISC_ENTRY_SIZE,
					    NVME_DISC_LOG_HDR_SIZE + i * NVME_DISC_ENTRY_SIZE)))
				goto fail;
			for (uint32_t j = 0; j < k; j++)
				nvme_disc_entry_parse(buf + (size_t)j * NVME_DISC_ENTRY_SIZE, &log->entries[i + j]);
		}
		/* the header again: same generation means the records belong together */
		if ((rc = disc_read(c, buf, NVME_DISC_LOG_HDR_SIZE, 0)))
			goto fail;
		nvme_disc_log_hdr_parse(buf, &gen2, &num2, &recfmt);
		if (gen2 != genctr || num2 != numrec)
			continue;
		log->genctr = genctr;
		log->numrec = numrec;
		log->recfmt = recfmt;
		log->nentries = (uint32_t)numrec;
		break;
	}
	free(buf);
	*out = log;
	return 0;
fail:
	free(buf);
	nvmeof_disc_log_free(log);
	return rc;
}

#define TRTYPE_RDMA 1
#define TRTYPE_TCP 3

int nvmeof_disc_entry_opts(const struct nvmeof_disc_entry *e, struct nvmeof_ctrl_opts *o)
{
	if (!e || !o)
		return nvmeof_err(NVMEOF_EINVAL, "discovery entry: %s", !e ? "no entry" : "no options");
	if (e->trtype != TRTYPE_RDMA && e->trtype != TRTYPE_TCP)
		return nvmeof_err(NVMEOF_ENOTSUP, "discovery entry for %s: transport %s: this library speaks RDMA "
				  "and TCP", e->subnqn, nvmeof_trtype_str(e->trtype));
	/* TREQ bits 1:0 (1 required, 2 not required, 0 not specified) and,
	 * over TCP, the TSAS security type: a port whose channel needs TLS is
	 * connected with TLS when the options carry a key, and refused before
	 * anything is sent when not (without TLS it would fail late, as a
	 * connection closed at the ICReq); a port where TLS 1.3 is optional
	 * gets TLS when there is a key. */
	uint8_t sec = e->trtype == TRTYPE_TCP ? e->tcp_sectype : 0, req = e->treq & 3;
	const char *secname = !sec ? "none" : sec == 1 ? "TLS 1.2" : sec == 2 ? "TLS 1.3" : "unknown";
	if (e->trtype == TRTYPE_RDMA && req == 1)
		return nvmeof_err(NVMEOF_ENOTSUP, "discovery entry for %s at %s port %s: it requires a secure channel "
				  "(TREQ %s), which this library has over TCP only (TLS), not connected",
				  e->subnqn, e->traddr, e->trsvcid, nvmeof_treq_str(e->treq));
	if (sec && sec != 2)
		return nvmeof_err(NVMEOF_ENOTSUP, "discovery entry for %s at %s port %s: security type %s: this "
				  "library speaks TLS 1.3 only, not connected", e->subnqn, e->traddr, e->trsvcid, secname);
	bool needs = req == 1 || (sec == 2 && req != 2);
	bool key = o->tls_key || o->tls_keyring;
	if (needs && !key)
		return nvmeof_err(NVMEOF_ENOTSUP, "discovery entry for %s at %s port %s: it requires TLS (TREQ %s, "
				  "security type %s): give a TLS key (tls_key or tls_keyring; the tool's --tls-key or --keyring), not connected",
				  e->subnqn, e->traddr, e->trsvcid, nvmeof_treq_str(e->treq), secname);
	if ((needs || sec == 2) && key)
		o->tls = true;
	o->trtype = e->trtype == TRTYPE_TCP ? "tcp" : "rdma";
	o->traddr = e->traddr;
	o->trsvcid = e->trsvcid;
	o->subnqn = e->subnqn;
	return 0;
}
