/*
 * Zoned namespaces: the zone commands' SQEs, the ZNS Identify data and the
 * Report Zones data against the byte layouts of the NVMe Zoned Namespace
 * Command Set specification (expected bytes written out from its tables),
 * the zone statuses by name, and on the loopback test wire what a real
 * target cannot show: an assigned LBA above 32 bits (CQE DW1) and an
 * append refused before it is sent.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpriv.h"
#include "fakewire.h"
#include "protocol.h"
#include "qpriv.h"

TEST(zone_mgmt_send_sqe)
{
	uint8_t s[64];
	nvme_sqe_zone_mgmt_send(s, 0x1234, 5, 0x0102030405060708ull, NVMEOF_ZSA_FINISH, false);
	const uint8_t want[64] = {
		0x79, 0x40, 0x34, 0x12, 0x05, 0x00, 0x00, 0x00,   /* OPC 79h, PSDT SGL, CID, NSID */
		[40] = 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* CDW10-11 SLBA */
		[52] = 0x02, 0x00,                                  /* CDW13 ZSA 02h finish, Select All 0 */
	};
	CHECK_MEM(s, want, 64);
	nvme_sqe_zone_mgmt_send(s, 1, 1, 0, NVMEOF_ZSA_RESET, true);
	CHECK_EQ(get_le32(s + 52), 0x104); /* Select All is CDW13 bit 8 */
	CHECK_EQ(NVMEOF_ZSA_CLOSE, 1);
	CHECK_EQ(NVMEOF_ZSA_OPEN, 3);
	CHECK_EQ(NVMEOF_ZSA_OFFLINE, 5);
}

TEST(zone_mgmt_recv_sqe)
{
	uint8_t s[64];
	nvme_sqe_zone_mgmt_recv(s, 7, 2, 0x4000, 64 + 3 * 64, NVME_ZRA_REPORT_ZONES, NVMEOF_ZRASF_FULL, true);
	const uint8_t want[64] = {
		0x7a, 0x40, 0x07, 0x00, 0x02, 0x00, 0x00, 0x00,
		[40] = 0x00, 0x40,                                  /* SLBA */
		[48] = 0x3f, 0x00, 0x00, 0x00,                      /* CDW12 NUMD 0-based: 256 B = 64 dwords */
		[52] = 0x00, 0x05, 0x01, 0x00,                      /* ZRA 0, ZRASF 5 (full), Partial Report */
	};
	CHECK_MEM(s, want, 64);
}

TEST(zone_append_sqe)
{
	uint8_t s[64];
	nvme_sqe_zone_append(s, 9, 1, 0x100000000ull, 8, NVME_RW_FUA);
	const uint8_t want[64] = {
		0x7d, 0x40, 0x09, 0x00, 0x01, 0x00, 0x00, 0x00,
		[40] = 0x00, 0x00, 0x00, 0x00, 0x01,                /* ZSLBA */
		[48] = 0x07, 0x00, 0x00, 0x40,                      /* NLB 0-based, FUA (CDW12 bit 30) */
	};
	CHECK_MEM(s, want, 64);
}

TEST(identify_with_csi)
{
	uint8_t s[64];
	nvme_sqe_identify_csi(s, 3, NVME_CNS_CS_NS, 4, NVME_CSI_ZNS);
	CHECK_EQ(s[0], 0x06);
	CHECK_EQ(get_le32(s + 4), 4);
	CHECK_EQ(get_le32(s + 40), 0x05);          /* CDW10 CNS */
	CHECK_EQ(get_le32(s + 44), 0x02000000u);   /* CDW11 CSI bits 31:24 */
}

TEST(identify_namespace_zns_fields)
{
	static uint8_t d[4096];
	memset(d, 0, sizeof(d));
	d[0] = 0x01;                                       /* ZOC: variable zone capacity */
	d[2] = 0x01;                                       /* OZCS: read across zone boundaries */
	put_le32(d + 4, 5);                                /* MAR, 0-based: 6 active */
	put_le32(d + 8, 3);                                /* MOR, 0-based: 4 open */
	put_le64(d + 2816 + 16 * 0, 0x800);                /* LBAFE 0 ZSZE */
	put_le64(d + 2816 + 16 * 2, 0x4000);               /* LBAFE 2 ZSZE */
	struct nvmeof_zns_info z = {0};
	nvme_id_ns_zns_parse(d, 2, &z);
	CHECK_EQ(z.zoc, 1);
	CHECK_EQ(z.ozcs, 1);
	CHECK_EQ(z.max_active, 6);
	CHECK_EQ(z.max_open, 4);
	CHECK_EQ(z.zone_size, 0x4000);
	nvme_id_ns_zns_parse(d, 0, &z);
	CHECK_EQ(z.zone_size, 0x800);
	put_le32(d + 4, 0xffffffffu);                      /* no limit */
	put_le32(d + 8, 0xffffffffu);
	nvme_id_ns_zns_parse(d, 0, &z);
	CHECK_EQ(z.max_active, 0);
	CHECK_EQ(z.max_open, 0);
	/* FLBAS: format index bits 3:0; bits 6:5 above them only where NLBAF
	 * is above 16 (reserved otherwise: set there, they change nothing) */
	uint8_t ns[4096] = {0};
	ns[25] = 20;
	ns[26] = 0x22;
	CHECK_EQ(nvme_id_ns_lbaf_index(ns), 0x12);
	ns[25] = 3;
	ns[26] = 0x61;
	CHECK_EQ(nvme_id_ns_lbaf_index(ns), 1);
	ns[25] = 16;
	ns[26] = 0x72; /* bit 4: metadata at the end of the data, not the index */
	CHECK_EQ(nvme_id_ns_lbaf_index(ns), 2);
	/* the connect's parse takes the same rule: format 1 of 4, 4 KiB */
	struct nvmeof_ns parsed;
	const char *why = NULL;
	ns[25] = 3;
	ns[26] = 0x61;
	ns[128 + 4 * 1 + 2] = 12;
	CHECK_EQ(nvme_id_ns_parse(ns, 1, &parsed, &why), 0);
	CHECK_EQ(parsed.lbads, 12);
	/* ZASL: a power of two of 4 KiB pages; 0 leaves the limit to MDTS */
	CHECK_EQ(nvme_zasl_bytes(0), 0);
	CHECK_EQ(nvme_zasl_bytes(1), 8192);
	CHECK_EQ(nvme_zasl_bytes(5), 128 * 1024);
}

static void put_zone(uint8_t *d, uint32_t i, uint8_t zt, uint8_t zs, uint8_t za, uint64_t zcap, uint64_t zslba,
		     uint64_t wp)
{
	uint8_t *z = d + 64 + 64 * i;
	z[0] = zt;
	z[1] = (uint8_t)(zs << 4);                     /* ZS in bits 7:4 */
	z[2] = za;
	put_le64(z + 8, zcap);
	put_le64(z + 16, zslba);
	put_le64(z + 24, wp);
}

TEST(report_zones_parse)
{
	static uint8_t d[64 + 4 * 64];
	memset(d, 0xee, sizeof(d)); /* reserved bytes: ignored */
	memset(d, 0, 64);
	put_le64(d, 3);             /* Number of Zones */
	put_zone(d, 0, 0x2, 0x1, 0x00, 0x800, 0, 0);
	put_zone(d, 1, 0x2, 0x2, 0x04, 0x800, 0x800, 0x810);
	put_zone(d, 2, 0x2, 0xe, 0x80, 0x700, 0x1000, 0x1800);
	struct nvmeof_zone z[8];
	uint64_t total = 0;
	uint32_t n = nvme_zone_report_parse(d, sizeof(d), z, 8, &total);
	CHECK_EQ(total, 3);
	CHECK_EQ(n, 3); /* the fourth slot is past the count: not read */
	CHECK_EQ(z[0].type, NVMEOF_ZONE_TYPE_SEQ);
	CHECK_EQ(z[0].state, NVMEOF_ZS_EMPTY);
	CHECK_EQ(z[1].state, NVMEOF_ZS_IMP_OPEN);
	CHECK_EQ(z[1].attrs, 0x04);
	CHECK_EQ(z[1].wp, 0x810);
	CHECK_EQ(z[1].zslba, 0x800);
	CHECK_EQ(z[2].state, NVMEOF_ZS_FULL);
	CHECK_EQ(z[2].attrs, 0x80);
	CHECK_EQ(z[2].zcap, 0x700);
	/* more zones than the buffer holds (no partial bit): the count says
	 * all of them, the descriptors only what fit */
	put_le64(d, 100);
	n = nvme_zone_report_parse(d, 64 + 2 * 64, z, 8, &total);
	CHECK_EQ(total, 100);
	CHECK_EQ(n, 2);
	n = nvme_zone_report_parse(d, sizeof(d), z, 1, &total);
	CHECK_EQ(n, 1);
	CHECK_EQ(nvme_zone_report_parse(d, 32, z, 8, &total), 0); /* shorter than the header */
	CHECK_EQ(total, 0);
}

TEST(zone_state_names_as_nvme_cli)
{
	CHECK_STR(nvmeof_zone_state_str(NVMEOF_ZS_EMPTY), "EMPTY");
	CHECK_STR(nvmeof_zone_state_str(NVMEOF_ZS_IMP_OPEN), "IMP_OPENED");
	CHECK_STR(nvmeof_zone_state_str(NVMEOF_ZS_EXP_OPEN), "EXP_OPENED");
	CHECK_STR(nvmeof_zone_state_str(NVMEOF_ZS_CLOSED), "CLOSED");
	CHECK_STR(nvmeof_zone_state_str(NVMEOF_ZS_READ_ONLY), "READONLY");
	CHECK_STR(nvmeof_zone_state_str(NVMEOF_ZS_FULL), "FULL");
	CHECK_STR(nvmeof_zone_state_str(NVMEOF_ZS_OFFLINE), "OFFLINE");
	CHECK_STR(nvmeof_zone_state_str(0x5), "UNKNOWN");
}

TEST(zone_statuses_named)
{
	static const struct {
		uint8_t sc;
		const char *name;
	} t[] = {
		{0xb8, "Zone Boundary Error"}, {0xb9, "Zone Is Full"}, {0xba, "Zone Is Read Only"},
		{0xbb, "Zone Is Offline"}, {0xbc, "Zone Invalid Write"}, {0xbd, "Too Many Active Zones"},
		{0xbe, "Too Many Open Zones"}, {0xbf, "Invalid Zone State Transition"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint16_t st = (uint16_t)(1 << 8 | t[i].sc); /* SCT 1h, Command Specific */
		CHECK_STR(nvmeof_cmd_status_name(st, false, NVME_CMD_WRITE, 0), t[i].name);
		CHECK_STR(nvmeof_cmd_status_name(st, false, NVME_CMD_ZONE_APPEND, 0), t[i].name);
		CHECK_STR(nvmeof_cmd_status_name(st, false, NVME_CMD_ZONE_MGMT_SEND, 0), t[i].name);
		/* an admin command's SC B8h..BFh is not a zone's */
		CHECK_STR(nvmeof_cmd_status_name(st, true, 0x06, 0), "Command Specific Status");
	}
}

struct rec {
	int n;
	uint8_t sqe[64];
	uint32_t dw0, dw1;
	uint16_t status; /* Status Field, as the CQE's bits 15:1 */
};

static enum fw_action responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge, uint8_t *cqe)
{
	struct rec *r = ctx;
	(void)sge;
	(void)nsge;
	memcpy(r->sqe, sqe, 64);
	r->n++;
	put_le32(cqe, r->dw0);
	put_le32(cqe + 4, r->dw1);
	put_le16(cqe + 14, (uint16_t)(r->status << 1));
	return FW_RESPOND;
}

/* The assigned LBA comes from DW0 and DW1 both: an LBA past 4 Gi blocks
 * (which the test bed's small namespace never assigns) reads back whole;
 * a zone status fails the append with its name in the message. */
TEST(append_lba_from_both_dwords_and_zone_status_named)
{
	struct rec rec = {.dw0 = 0x89abcdef, .dw1 = 0x1};
	struct fake_wire *fw = fw_new(4, responder, &rec);
	struct q_params p = {.qid = 1, .depth = 4, .cmd_timeout_ms = 30000, .max_xfer = 64 * 1024,
			     .wait_mode = NVMEOF_WAIT_POLL};
	struct nvmeof_queue *q = NULL;
	MUST(q_open_fake(&p, fw, &q));
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 4096, .lbads = 12, .nsze = 1ull << 33};
	struct nvmeof_mr mr = {.addr = calloc(1, 1 << 20), .len = 1 << 20, .lkey = 0x11, .rkey = 0xabc};
	uint64_t alba = 0;
	MUST(nvmeof_zone_append_sync(q, &ns, 0x180000000ull, 2, &mr, 4096, 0, &alba, 0));
	CHECK_EQ(alba, 0x189abcdefull);
	CHECK_EQ(rec.sqe[0], NVME_CMD_ZONE_APPEND);
	CHECK_EQ(get_le64(rec.sqe + 40), 0x180000000ull);
	CHECK_EQ(get_le32(rec.sqe + 48), 1);
	CHECK_EQ(get_le64(rec.sqe + 24), (uint64_t)(uintptr_t)mr.addr + 4096); /* keyed SGL into the region */
	CHECK_EQ(get_le32(rec.sqe + 32) & 0xffffff, 8192);
	rec.status = 1 << 8 | 0xb9;
	CHECK_EQ(nvmeof_zone_append_sync(q, &ns, 0, 1, &mr, 0, 0, &alba, 0), NVMEOF_ENVME);
	CHECK(strstr(nvmeof_errmsg(), "Zone Append nsid 1 zslba 0 nlb 1: Zone Is Full") != NULL);
	rec.status = 1 << 8 | 0xbf;
	CHECK_EQ(nvmeof_zone_mgmt_send_sync(q, &ns, 0, NVMEOF_ZSA_CLOSE, false, 0), NVMEOF_ENVME);
	CHECK(strstr(nvmeof_errmsg(), "Zone Management Send close nsid 1 slba 0: Invalid Zone State Transition") !=
	      NULL);
	/* an append is one command: above the transfer limit it is refused,
	 * never split, and nothing goes out */
	int sent = rec.n;
	CHECK_EQ(nvmeof_zone_append_sync(q, &ns, 0, 17, &mr, 0, 0, &alba, 0), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "not split") != NULL);
	CHECK_EQ(nvmeof_zone_append(q, &ns, 0, 17, &mr, 0, 0, NULL, NULL), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_zone_append(q, &ns, 0, 1, &mr, 0, NVMEOF_IO_DEAC, NULL, NULL), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_zone_mgmt_send_sync(q, &ns, 0, 0x9, false, 0), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "zone send action 0x9") != NULL);
	CHECK_EQ(rec.n, sent);
out:
	q_close(q);
	fw_free(fw);
	free(mr.addr);
}

/* The admin wire of a controller that refuses Identify CNS 03h (the
 * Namespace Identification Descriptor list) with Invalid Field in Command,
 * as one before NVMe 1.3 may; every other command answered. */
static enum fw_action no_desc_list(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				   uint8_t *cqe)
{
	int *identifies = ctx;
	(void)sge;
	(void)nsge;
	if (sqe[0] == 0x06) {
		(*identifies)++;
		if (sqe[40] == NVME_CNS_NS_DESC_LIST)
			put_le16(cqe + 14, 0x02 << 1);
	}
	return FW_RESPOND;
}

/* A namespace whose command set the controller will not say is not zoned
 * (the kernel takes it as NVM): nvmeof_zns_info answers zoned false, and
 * asks nothing more. */
TEST(zns_info_without_descriptor_list_is_not_zoned)
{
	int identifies = 0;
	struct fake_wire *aw = fw_new(8, no_desc_list, &identifies);
	struct nvmeof_ctrl *c = calloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->admin_lock, NULL);
	pthread_cond_init(&c->ka_cond, NULL);
	pthread_cond_init(&c->state_cond, NULL);
	c->o.cmd_timeout_ms = 30000;
	c->state = CTRL_LIVE;
	c->admin_live = true;
	struct q_params ap = {.qid = 0, .depth = 8, .cmd_timeout_ms = 30000, .wait_mode = NVMEOF_WAIT_POLL};
	MUST(q_open_fake(&ap, aw, &c->admin));
	struct nvmeof_zns_info zi;
	memset(&zi, 0xff, sizeof(zi));
	CHECK_EQ(nvmeof_zns_info(c, 1, &zi), 0);
	CHECK_EQ(zi.zoned, false);
	CHECK_EQ(zi.zone_size, 0);
	CHECK_EQ(identifies, 1);
out:
	if (c->admin)
		q_close(c->admin);
	fw_free(aw);
	pthread_cond_destroy(&c->state_cond);
	pthread_cond_destroy(&c->ka_cond);
	pthread_mutex_destroy(&c->admin_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* A zoned namespace of 10 zones of 0x100 blocks, odd zones Empty, even
 * ones Implicitly Open: Report Zones answered as a controller does, with
 * as many descriptors as the command's data holds. */
#define RZ_ZSZE 0x100u
#define RZ_ZONES 10u
struct zrep {
	int cmds;
	uint64_t slba[8];
};

static enum fw_action zone_reporter(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				    uint8_t *cqe)
{
	struct zrep *r = ctx;
	(void)sge;
	(void)nsge;
	(void)cqe;
	if (sqe[0] != NVME_CMD_ZONE_MGMT_RECV)
		return FW_RESPOND;
	uint64_t slba = get_le64(sqe + 40), n = 0;
	uint32_t len = (get_le32(sqe + 48) + 1) * 4, fit = (len - 64) / 64;
	uint8_t zrasf = sqe[53];
	bool partial = sqe[54] & 1;
	uint8_t *d = (uint8_t *)(uintptr_t)get_le64(sqe + 24); /* the keyed SGL's address */
	r->slba[r->cmds++ % 8] = slba;
	memset(d, 0, len);
	for (uint64_t z = slba / RZ_ZSZE; z < RZ_ZONES; z++) {
		bool empty = z % 2;
		if (zrasf == NVMEOF_ZRASF_EMPTY && !empty)
			continue;
		if (n < fit)
			put_zone(d, (uint32_t)n, 2, empty ? 1 : 2, 0, RZ_ZSZE, z * RZ_ZSZE, z * RZ_ZSZE + (empty ? 0 : 5));
		n++;
	}
	put_le64(d, partial && n > fit ? fit : n);
	return FW_RESPOND;
}

/* One Report Zones carries what fits the command's data (MDTS; here 256
 * bytes: 3 descriptors); nvmeof_zone_report_all asks again from the zone
 * after the last one returned until every zone from slba's (of the state
 * asked) is in, or max. */
TEST(report_all_goes_on_past_one_commands_data)
{
	struct zrep r = {0};
	struct fake_wire *fw = fw_new(4, zone_reporter, &r);
	struct nvmeof_ctrl *c = calloc(1, sizeof(*c));
	struct q_params p = {.qid = 1, .depth = 4, .cmd_timeout_ms = 30000, .max_xfer = 256,
			     .wait_mode = NVMEOF_WAIT_POLL};
	struct nvmeof_queue *q = NULL;
	MUST(q_open_fake(&p, fw, &q));
	q->ctrl = c; /* the report's own region is the controller's */
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 4096, .lbads = 12, .nsze = RZ_ZONES * RZ_ZSZE};
	struct nvmeof_zone z[RZ_ZONES + 2];
	uint32_t n = 0;
	uint64_t total = 0;
	/* one command: 3 zones, the header counting all 10 */
	MUST(nvmeof_zone_report_ext(q, &ns, 0, 0, false, z, RZ_ZONES, &n, &total, 0));
	CHECK_EQ(n, 3);
	CHECK_EQ(total, RZ_ZONES);
	r.cmds = 0;
	MUST(nvmeof_zone_report_all(q, &ns, RZ_ZSZE, 0, 0, false, z, RZ_ZONES + 2, &n, &total, 0));
	CHECK_EQ(n, RZ_ZONES);
	CHECK_EQ(total, RZ_ZONES);
	for (uint32_t i = 0; i < n; i++)
		CHECK_EQ(z[i].zslba, (uint64_t)i * RZ_ZSZE);
	CHECK_EQ(z[2].state, NVMEOF_ZS_IMP_OPEN);
	CHECK_EQ(z[2].wp, 2 * RZ_ZSZE + 5);
	CHECK_EQ(r.cmds, 4);
	CHECK_EQ(r.slba[1], 3 * RZ_ZSZE);
	CHECK_EQ(r.slba[3], 9 * RZ_ZSZE);
	/* from inside zone 2, at most 5 */
	MUST(nvmeof_zone_report_all(q, &ns, RZ_ZSZE, 2 * RZ_ZSZE + 7, 0, false, z, 5, &n, &total, 0));
	CHECK_EQ(n, 5);
	CHECK_EQ(total, 8);
	CHECK_EQ(z[0].zslba, 2 * RZ_ZSZE);
	CHECK_EQ(z[4].zslba, 6 * RZ_ZSZE);
	/* a state: the next report starts after the last one returned, with
	 * the partial bit too (each header then counts its own) */
	for (int partial = 0; partial < 2; partial++) {
		MUST(nvmeof_zone_report_all(q, &ns, RZ_ZSZE, 0, NVMEOF_ZRASF_EMPTY, partial, z, RZ_ZONES, &n, &total,
					    0));
		CHECK_EQ(n, 5);
		CHECK_EQ(total, partial ? 3 : 5);
		for (uint32_t i = 0; i < n; i++)
			CHECK_EQ(z[i].zslba, (2 * i + 1) * (uint64_t)RZ_ZSZE);
	}
	/* max 0: the count alone, as nvmeof_zone_report_ext gives it */
	MUST(nvmeof_zone_report_all(q, &ns, RZ_ZSZE, 0, 0, false, NULL, 0, &n, &total, 0));
	CHECK_EQ(n, 0);
	CHECK_EQ(total, RZ_ZONES);
	int sent = r.cmds;
	CHECK_EQ(nvmeof_zone_report_all(q, &ns, 0, 0, 0, false, z, RZ_ZONES, &n, &total, 0), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "zone size 0") != NULL);
	CHECK_EQ(r.cmds, sent);
out:
	q_close(q);
	fw_free(fw);
	free(c);
}

int main(void)
{
	static const struct test_case t[] = {
		T(zone_mgmt_send_sqe), T(zone_mgmt_recv_sqe), T(zone_append_sqe), T(identify_with_csi),
		T(identify_namespace_zns_fields), T(report_zones_parse), T(zone_state_names_as_nvme_cli),
		T(zone_statuses_named), T(append_lba_from_both_dwords_and_zone_status_named),
		T(zns_info_without_descriptor_list_is_not_zoned), T(report_all_goes_on_past_one_commands_data),
	};
	return run_tests("unit-zns", t, sizeof(t) / sizeof(t[0]));
}
