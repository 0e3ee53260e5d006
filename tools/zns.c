/* Zoned namespaces, as nvme-cli's zns plugin: report-zones, zone-mgmt-send,
 * zone-append, and the ZNS Identify data of id-ns --csi 2. One I/O queue,
 * the library's synchronous zone calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "out.h"
#include "secret.h"
#include "nvmeof.h"
#include "protocol.h"

struct zio {
	struct nvmeof_ctrl *c;
	struct nvmeof_queue *q;
	struct nvmeof_mr *mr;
	const struct nvmeof_ns *ns;
	struct nvmeof_zns_info zi;
};

static int zfail(const struct args *a, const char *what)
{
	fprintf(stderr, "nvmeof %s: %s%s%s\n", a->name, what ? what : "", what ? ": " : "", nvmeof_errmsg());
	return 1;
}

/* Connected, the namespace found and zoned, one I/O queue. */
static int zopen(const struct args *a, struct zio *z)
{
	struct nvmeof_ctrl_opts o;
	memset(z, 0, sizeof(*z));
	tool_ctrl_opts(a, &o);
	int rc = nvmeof_ctrl_connect(&o, &z->c);
	tool_secret_wipe();
	if (rc)
		return zfail(a, NULL);
	if (!(z->ns = nvmeof_ns_get(z->c, a->nsid))) {
		fprintf(stderr, "nvmeof %s: namespace %u is not active on %s\n", a->name, a->nsid, a->nqn);
		return 1;
	}
	if (nvmeof_zns_info(z->c, a->nsid, &z->zi))
		return zfail(a, NULL);
	if (!z->zi.zoned) {
		fprintf(stderr, "nvmeof %s: namespace %u is not zoned (its command set is not CSI 02h)\n", a->name,
			a->nsid);
		return 1;
	}
	return nvmeof_queue_create(z->c, NULL, &z->q) ? zfail(a, NULL) : 0;
}

static int zclose(const struct args *a, struct zio *z, int rc)
{
	if (z->mr)
		nvmeof_mr_release(z->mr);
	if (z->q)
		nvmeof_queue_destroy(z->q);
	if (z->c && nvmeof_ctrl_close(z->c) && !rc)
		rc = zfail(a, NULL);
	return rc;
}

static const char *zone_type_str(uint8_t t) { return t == NVMEOF_ZONE_TYPE_SEQ ? "SEQWRITE_REQ" : "Unknown"; }

int cmd_report_zones(struct args *a)
{
	struct zio z;
	int rc = zopen(a, &z);
	uint32_t max = a->descs ? a->descs : (uint32_t)(z.zi.nr_zones ? z.zi.nr_zones : 1);
	struct nvmeof_zone *zones = NULL;
	uint32_t n = 0;
	uint64_t total = 0;
	if (!rc && !(zones = calloc(max, sizeof(*zones)))) {
		fprintf(stderr, "nvmeof %s: out of memory for %u zones\n", a->name, max);
		rc = 1;
	}
	/* every zone from the start LBA (or --descs), over as many commands as
	 * the controller's MDTS makes it, as nvme-cli */
	if (!rc && nvmeof_zone_report_all(z.q, z.ns, z.zi.zone_size, a->slba, a->state, a->partial, zones, max, &n,
					  &total, a->timeout_ms))
		rc = zfail(a, NULL);
	if (!rc) {
		struct out p;
		out_init(&p, stdout, a->json, 8);
		/* nvme-cli's: the header's count, then each descriptor */
		if (a->json) {
			out_u64(&p, "nr_zones", total);
			out_arr_begin(&p, "zone_list");
		} else {
			printf("nr_zones: %llu\n", (unsigned long long)total);
		}
		for (uint32_t i = 0; i < n; i++) {
			const struct nvmeof_zone *d = &zones[i];
			if (!a->json) {
				printf("SLBA: %#-10llx WP: %#-10llx Cap: %#-10llx State: %-12s Type: %-14s Attrs: %#-6x\n",
				       (unsigned long long)d->zslba, (unsigned long long)d->wp,
				       (unsigned long long)d->zcap, nvmeof_zone_state_str(d->state), zone_type_str(d->type),
				       d->attrs);
				continue;
			}
			out_obj_begin(&p, NULL);
			out_u64(&p, "slba", d->zslba);
			out_u64(&p, "wp", d->wp);
			out_u64(&p, "cap", d->zcap);
			out_str(&p, "state", nvmeof_zone_state_str(d->state));
			out_str(&p, "type", zone_type_str(d->type));
			out_u64(&p, "attrs", d->attrs);
			out_obj_end(&p);
		}
		if (a->json)
			out_arr_end(&p);
		out_end(&p);
	}
	free(zones);
	return zclose(a, &z, rc);
}

int cmd_zone_mgmt_send(struct args *a)
{
	struct zio z;
	if (!a->zsa) {
		fprintf(stderr, "nvmeof %s: --zsa is required (close, finish, open, reset, offline)\n", a->name);
		return 2;
	}
	int rc = zopen(a, &z);
	if (!rc && nvmeof_zone_mgmt_send_sync(z.q, z.ns, a->slba, a->zsa, a->select_all, a->timeout_ms))
		rc = zfail(a, NULL);
	if (!rc)
		printf("zone-mgmt-send: Success, action:%u zone:%#llx all:%u nsid:%u\n", a->zsa,
		       (unsigned long long)a->slba, a->select_all, a->nsid);
	return zclose(a, &z, rc);
}

int cmd_zone_append(struct args *a)
{
	struct zio z;
	if (!a->data) {
		fprintf(stderr, "nvmeof %s: --data FILE is required (- for stdin)\n", a->name);
		return 2;
	}
	FILE *f = !strcmp(a->data, "-") ? stdin : fopen(a->data, "rb");
	if (!f) {
		fprintf(stderr, "nvmeof %s: cannot open %s\n", a->name, tool_shown_path(a->data));
		return 1;
	}
	int rc = zopen(a, &z);
	uint32_t lba = rc ? 0 : z.ns->lba_size;
	/* the blocks asked for, or as many as the data fills (the last one
	 * padded with zeroes, as nvme-cli pads to its data size) */
	uint32_t limit = z.zi.zasl_bytes ? z.zi.zasl_bytes : 1u << 20;
	size_t cap = a->nlb ? (size_t)a->nlb * lba : limit + (size_t)lba;
	if (!rc && nvmeof_mr_alloc(z.c, cap, &z.mr))
		rc = zfail(a, NULL);
	size_t have = 0;
	if (!rc) {
		uint8_t *p = nvmeof_mr_addr(z.mr);
		for (size_t got; have < cap && (got = fread(p + have, 1, cap - have, f)) > 0;)
			have += got;
		if (!have && !a->nlb) {
			fprintf(stderr, "nvmeof %s: no data in %s\n", a->name, tool_shown_path(a->data));
			rc = 1;
		}
	}
	uint32_t nlb = a->nlb ? a->nlb : (uint32_t)((have + lba - 1) / (lba ? lba : 1));
	uint64_t alba = 0;
	if (!rc && nvmeof_zone_append_sync(z.q, z.ns, a->slba, nlb, z.mr, 0, a->fua ? NVMEOF_IO_FUA : 0, &alba,
					   a->timeout_ms))
		rc = zfail(a, NULL);
	if (!rc)
		printf("Success appended data to LBA %llx\n", (unsigned long long)alba);
	if (f != stdin)
		fclose(f);
	return zclose(a, &z, rc);
}

/* id-ns --csi 2: nvme-cli's `nvme zns id-ns` fields of the namespace, and
 * the controller's ZASL (`nvme zns id-ctrl`). */
int tool_zns_id_ns(const struct args *a, struct nvmeof_ctrl *c, const uint8_t *id_ns)
{
	static uint8_t d[4096], ic[4096];
	struct out p;
	if (nvmeof_identify_csi(c, 0x05, a->nsid, 0x02, d) || nvmeof_identify_csi(c, 0x06, 0, 0x02, ic))
		return zfail(a, NULL);
#define LE16(x) ((uint32_t)(x)[0] | (uint32_t)(x)[1] << 8)
#define LE32(x) (LE16(x) | LE16((x) + 2) << 16)
	if (!a->json)
		printf("ZNS Command Set Identify Namespace:\n");
	out_init(&p, stdout, a->json, 8);
	out_hex(&p, "zoc", LE16(d));
	out_hex(&p, "ozcs", LE16(d + 2));
	out_hex(&p, "mar", LE32(d + 4));
	out_hex(&p, "mor", LE32(d + 8));
	out_u64(&p, "rrl", LE32(d + 12));
	out_u64(&p, "frl", LE32(d + 16));
	out_u64(&p, "zasl", ic[0]);
	out_arr_begin(&p, "lbafe");
	for (unsigned i = 0; i <= id_ns[25] && i < 64; i++) {
		const uint8_t *e = d + 2816 + 16 * i;
		uint64_t zsze = LE32(e) | (uint64_t)LE32(e + 4) << 32;
		if (a->json) {
			out_obj_begin(&p, NULL);
			out_u64(&p, "zsze", zsze);
			out_u64(&p, "zdes", e[8]);
			out_obj_end(&p);
		} else {
			printf("lbafe %2u: zsze:%#llx zdes:%u %s\n", i, (unsigned long long)zsze, e[8],
			       nvme_id_ns_lbaf_index(id_ns) == i ? "(in use)" : "");
		}
	}
	out_arr_end(&p);
	out_end(&p);
	return 0;
}
