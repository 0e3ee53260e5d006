/*
 * Encoders and parsers against the byte offsets of the specifications:
 * NVM Express Base (SQE/CQE layout, Identify, Set Features, Read/Write, DSM),
 * NVMe over Fabrics (Connect, Property Get/Set, Identify fabrics fields) and
 * the NVMe/RDMA transport (CM private data). Expected bytes are written out
 * from those tables, not produced by our encoder.
 */
#include "check.h"
#include "protocol.h"
#include "ana.h"

static const uint8_t zero[4096];

TEST(read_sqe_with_keyed_sgl)
{
	uint8_t s[64];
	nvme_sqe_rw(s, NVME_CMD_READ, 0x1234, 1, 0x0102030405060708ull, 8);
	nvme_sqe_sgl_keyed(s, 0x1122334455667788ull, 4096, 0xaabbccdd);
	const uint8_t want[64] = {
		0x02, 0x40, 0x34, 0x12, 0x01, 0x00, 0x00, 0x00,   /* OPC, PSDT=01b, CID, NSID */
		[24] = 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* SGL address */
		[32] = 0x00, 0x10, 0x00,                            /* length, 3 bytes */
		[35] = 0xdd, 0xcc, 0xbb, 0xaa,                      /* key */
		[39] = 0x40,                                        /* keyed data block, address */
		[40] = 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* CDW10-11 SLBA */
		[48] = 0x07, 0x00,                                  /* CDW12 NLB, 0-based */
	};
	CHECK_MEM(s, want, 64);
}

TEST(write_sqe_with_incapsule_sgl)
{
	uint8_t s[64];
	nvme_sqe_rw(s, NVME_CMD_WRITE, 7, 2, 100, 1);
	nvme_sqe_sgl_incapsule(s, 0, 512);
	const uint8_t want[64] = {
		0x01, 0x40, 0x07, 0x00, 0x02, 0x00, 0x00, 0x00,
		[24] = 0, 0, 0, 0, 0, 0, 0, 0,                      /* offset 0 into the capsule */
		[32] = 0x00, 0x02, 0x00, 0x00,                      /* length, 4 bytes */
		[39] = 0x01,                                        /* data block, offset subtype */
		[40] = 100,
		[48] = 0x00,
	};
	CHECK_MEM(s, want, 64);
}

TEST(nlb_is_zero_based_and_16_bits)
{
	uint8_t s[64];
	nvme_sqe_rw(s, NVME_CMD_READ, 0, 1, 0, 65536);
	CHECK_EQ(get_le32(s + 48), 0xffff);
	nvme_sqe_rw(s, NVME_CMD_READ, 0, 1, 0, 1);
	CHECK_EQ(get_le32(s + 48), 0);
}

TEST(connect_sqe)
{
	uint8_t s[64];
	nvmf_sqe_connect(s, 0xabcd, 3, 127, 0, 15000);
	const uint8_t want[64] = {
		0x7f, 0x40, 0xcd, 0xab, 0x01,                      /* opcode 7Fh, CID, FCTYPE 01h */
		[40] = 0x00, 0x00,                                  /* RECFMT */
		[42] = 0x03, 0x00,                                  /* QID */
		[44] = 0x7f, 0x00,                                  /* SQSIZE */
		[46] = 0x00,                                        /* CATTR */
		[48] = 0x98, 0x3a, 0x00, 0x00,                      /* KATO 15000 ms */
	};
	CHECK_MEM(s, want, 64);
}

TEST(connect_data)
{
	uint8_t d[1024], id[16];
	for (int i = 0; i < 16; i++) id[i] = (uint8_t)(0xa0 + i);
	CHECK_EQ(nvmf_connect_data(d, id, 0xffff, "nqn.sub", "nqn.host"), 0);
	CHECK_MEM(d, id, 16);                 /* HOSTID bytes 15:00 */
	CHECK_EQ(d[16], 0xff); CHECK_EQ(d[17], 0xff); /* CNTLID FFFFh: dynamic */
	CHECK_MEM(d + 18, zero, 238);         /* reserved */
	CHECK_STR((char *)d + 256, "nqn.sub"); /* SUBNQN bytes 511:256 */
	CHECK_MEM(d + 256 + 7, zero, 249);
	CHECK_STR((char *)d + 512, "nqn.host"); /* HOSTNQN bytes 767:512 */
	CHECK_MEM(d + 768, zero, 256);
}

TEST(connect_data_refuses_bad_nqns)
{
	uint8_t d[1024], id[16] = {0};
	char longnqn[300];
	memset(longnqn, 'a', sizeof(longnqn));
	longnqn[224] = '\0'; /* 224 bytes: one more than the 223 allowed */
	CHECK_EQ(nvmf_connect_data(d, id, 1, longnqn, "nqn.host"), (unsigned long long)-1);
	longnqn[223] = '\0';
	CHECK_EQ(nvmf_connect_data(d, id, 1, longnqn, "nqn.host"), 0);
	CHECK_EQ(nvmf_connect_data(d, id, 1, "", "nqn.host"), (unsigned long long)-1);
	CHECK_EQ(nvmf_connect_data(d, id, 1, "nqn.sub", NULL), (unsigned long long)-1);
}

TEST(property_get_and_set)
{
	uint8_t s[64];
	nvmf_sqe_prop_get(s, 9, 0x00, 1);
	const uint8_t want_get[64] = {0x7f, 0x40, 0x09, 0x00, 0x04, [40] = 0x01, [44] = 0x00};
	CHECK_MEM(s, want_get, 64);
	nvmf_sqe_prop_set(s, 10, 0x14, 0, 0x00460001);
	const uint8_t want_set[64] = {0x7f, 0x40, 0x0a, 0x00, 0x00, [40] = 0x00,
				      [44] = 0x14, 0, 0, 0, [48] = 0x01, 0x00, 0x46, 0x00};
	CHECK_MEM(s, want_set, 64);
}

TEST(cc_fields)
{
	/* CC: EN bit 0, CSS 6:4, MPS 10:7, SHN 15:14, IOSQES 19:16, IOCQES 23:20 */
	uint32_t cc = NVME_CC_EN | NVME_CC_CSS_NVM | NVME_CC_MPS(12) | NVME_CC_IOSQES(6) | NVME_CC_IOCQES(4);
	CHECK_EQ(cc, 0x00460001);
	CHECK_EQ(NVME_CC_SHN_NORMAL, 0x4000);
	CHECK_EQ(NVME_CC_MPS(16), 0x200);
	/* CAP: MQES 15:0, TO 31:24, MPSMIN 51:48 */
	uint64_t cap = 0x000f00201e0103ffull;
	CHECK_EQ(NVME_CAP_MQES(cap), 0x03ff);
	CHECK_EQ(NVME_CAP_TO(cap), 0x1e);
	CHECK_EQ(NVME_CAP_MPSMIN(cap), 0xf);
}

TEST(identify_and_features_sqes)
{
	uint8_t s[64];
	nvme_sqe_identify(s, 1, NVME_CNS_CTRL, 0, 0);
	const uint8_t want_id[64] = {0x06, 0x40, 0x01, 0x00, [40] = 0x01};
	CHECK_MEM(s, want_id, 64);
	nvme_sqe_identify(s, 2, NVME_CNS_NS, 5, 0x1234);
	const uint8_t want_ns[64] = {0x06, 0x40, 0x02, 0x00, 0x05, [40] = 0x00, 0x00, 0x34, 0x12};
	CHECK_MEM(s, want_ns, 64);
	nvme_sqe_set_features(s, 3, NVME_FEAT_NUM_QUEUES, nvme_num_queues_cdw11(4, 8));
	const uint8_t want_sf[64] = {0x09, 0x40, 0x03, 0x00, [40] = 0x07, [44] = 0x03, 0x00, 0x07, 0x00};
	CHECK_MEM(s, want_sf, 64);
	nvme_sqe_keep_alive(s, 4);
	const uint8_t want_ka[64] = {0x18, 0x40, 0x04, 0x00};
	CHECK_MEM(s, want_ka, 64);
}

TEST(dsm_deallocate)
{
	uint8_t s[64], r[16];
	nvme_sqe_dsm_deallocate(s, 5, 1, 1);
	const uint8_t want[64] = {0x09, 0x40, 0x05, 0x00, 0x01, [40] = 0x00, [44] = 0x04};
	CHECK_MEM(s, want, 64);
	nvme_dsm_range(r, 0x1000, 256);
	const uint8_t want_r[16] = {0, 0, 0, 0, 0x00, 0x01, 0, 0, 0x00, 0x10, 0, 0, 0, 0, 0, 0};
	CHECK_MEM(r, want_r, 16);
}

TEST(host_id_from_a_uuid_host_nqn)
{
	uint8_t id[16] = {0}, want[16] = {0x2f, 0x1c, 0x9a, 0x6e, 0x52, 0x3b, 0x4c, 0x71,
					  0x8d, 0x0e, 0xa4, 0x11, 0x93, 0x5f, 0x6b, 0x02};
	CHECK_EQ(nvme_hostid_from_nqn("nqn.2014-08.org.nvmexpress:uuid:2f1c9a6e-523b-4c71-8d0e-a411935f6b02", id), 0);
	CHECK_MEM(id, want, 16);
	/* not uuid-form, or a broken UUID: no host ID from it */
	CHECK_EQ(nvme_hostid_from_nqn("nqn.2026-12.io.example:host-1", id), -1);
	CHECK_EQ(nvme_hostid_from_nqn("nqn.2014-08.org.nvmexpress:uuid:2f1c9a6e-523b-4c71-8d0e-a411935f6b0", id), -1);
	CHECK_EQ(nvme_hostid_from_nqn("nqn.2014-08.org.nvmexpress:uuid:2f1c9a6e-523b-4c71-8d0e-a411935f6bzz", id), -1);
	CHECK_EQ(nvme_hostid_from_nqn(NULL, id), -1);
}

TEST(command_specific_status_named_by_command)
{
	/* SCT 1, SC 82h, DNR: one status, three meanings */
	uint16_t st = (uint16_t)(1 << 14 | 1 << 8 | 0x82);
	struct nvmeof_cpl cpl = {.err = NVMEOF_ENVME, .status = st, .opc = NVME_FABRICS_OPCODE,
				 .fctype = NVMF_FCTYPE_CONNECT, .admin = true};
	char buf[160];
	CHECK_STR(nvmeof_cpl_str(&cpl, buf, sizeof(buf)),
		  "Connect Invalid Parameters (SCT 0x1, SC 0x82, DNR)");
	cpl = (struct nvmeof_cpl){.err = NVMEOF_ENVME, .status = st, .opc = NVME_CMD_WRITE};
	CHECK_STR(nvmeof_cpl_str(&cpl, buf, sizeof(buf)),
		  "Attempted Write to Read Only Range (SCT 0x1, SC 0x82, DNR)");
	/* an admin command's SC 82h is not the NVM command set's */
	CHECK_STR(nvmeof_cmd_status_name(st, true, 0x06, 0), "Command Specific Status");
	CHECK_STR(nvmeof_cmd_status_name((uint16_t)(1 << 8 | 0x09), true, 0x02, 0), "Invalid Log Page");
	CHECK_STR(nvmeof_cmd_status_name((uint16_t)(1 << 8 | 0x80), false, NVME_CMD_READ, 0),
		  "Conflicting Attributes");
	/* other status types do not depend on the command */
	CHECK_STR(nvmeof_cmd_status_name(0x80, false, NVME_CMD_READ, 0), "LBA Out of Range");
	CHECK_EQ(NVMEOF_STATUS_CRD((uint16_t)(2 << 11)), 2);
}

TEST(cqe_parse_status_and_phase)
{
	/* DW0, DW1, SQHD, SQID, CID, then status with P in bit 0 */
	const uint8_t c1[16] = {0x78, 0x56, 0x34, 0x12, 0xef, 0xbe, 0xad, 0xde,
				0x05, 0x00, 0x02, 0x00, 0x22, 0x11, 0x01, 0x81};
	struct nvme_cqe c;
	nvme_cqe_parse(c1, &c);
	CHECK_EQ(c.dw0, 0x12345678);
	CHECK_EQ(c.dw1, 0xdeadbeef);
	CHECK_EQ(c.sqhd, 5);
	CHECK_EQ(c.sqid, 2);
	CHECK_EQ(c.cid, 0x1122);
	CHECK_EQ(NVMEOF_STATUS_SCT(c.status), 0);
	CHECK_EQ(NVMEOF_STATUS_SC(c.status), 0x80);
	CHECK_EQ(NVMEOF_STATUS_DNR(c.status), 1);
	CHECK_STR(nvmeof_status_name(c.status), "LBA Out of Range");
	/* SCT 1, SC 84h (Connect Invalid Host), P=0 */
	const uint8_t c2[16] = {[14] = 0x08, 0x83};
	nvme_cqe_parse(c2, &c);
	CHECK_EQ(NVMEOF_STATUS_SCT(c.status), 1);
	CHECK_EQ(NVMEOF_STATUS_SC(c.status), 0x84);
	/* command specific: named by the command that failed, or not at all */
	CHECK_STR(nvmeof_status_name(c.status), "Command Specific Status");
	CHECK_STR(nvmeof_cmd_status_name(c.status, true, NVME_FABRICS_OPCODE, NVMF_FCTYPE_CONNECT),
		  "Connect Invalid Host");
	const uint8_t ok[16] = {[14] = 0x01, 0x00};
	nvme_cqe_parse(ok, &c);
	CHECK_EQ(c.status, 0);
}

/* nvmet answers an AER past the limit with DNR set (status 0x4105): the
 * code compares equal whatever DNR, More and CRD say. */
TEST(status_code_ignores_dnr_more_and_crd)
{
	const uint8_t dnr[16] = {[14] = 0x0a, 0x82}; /* SCT 1, SC 05h, DNR, P=0 */
	struct nvme_cqe c;
	nvme_cqe_parse(dnr, &c);
	CHECK_EQ(c.status, 0x4105);
	CHECK_EQ(nvme_status_code(c.status), NVME_SC_AER_LIMIT);
	CHECK_EQ(nvme_status_code(0x2105), NVME_SC_AER_LIMIT);  /* More */
	CHECK_EQ(nvme_status_code(0x1905), NVME_SC_AER_LIMIT);  /* CRD 3 */
	CHECK_EQ(nvme_status_code(0x0105), NVME_SC_AER_LIMIT);
	CHECK(nvme_status_code(0x4005) != NVME_SC_AER_LIMIT);   /* SCT 0 */
	CHECK(nvme_status_code(0x4205) != NVME_SC_AER_LIMIT);   /* SCT 2 */
	CHECK(nvme_status_code(0x4106) != NVME_SC_AER_LIMIT);
	CHECK_EQ(nvme_status_code(0x4002), NVME_SC_INVALID_FIELD);
}

TEST(status_names_and_cpl_strings)
{
	CHECK_STR(nvmeof_status_name(0x002), "Invalid Field in Command");
	CHECK_STR(nvmeof_status_name(0x00b), "Invalid Namespace or Format");
	CHECK_STR(nvmeof_status_name(0x286), "Access Denied");
	CHECK_STR(nvmeof_status_name(0x0fe), "Unknown status");
	CHECK_STR(nvmeof_status_name(0x7ff), "Vendor Specific");
	char buf[128];
	struct nvmeof_cpl cpl = {.err = NVMEOF_ENVME, .status = 0x4080};
	CHECK_STR(nvmeof_cpl_str(&cpl, buf, sizeof(buf)), "LBA Out of Range (SCT 0x0, SC 0x80, DNR)");
	cpl = (struct nvmeof_cpl){.err = NVMEOF_ETIMEDOUT};
	CHECK_STR(nvmeof_cpl_str(&cpl, buf, sizeof(buf)), "command timed out");
	CHECK_STR(nvmeof_strerror(NVMEOF_EQFULL), "queue full");
}

static void put_str(uint8_t *d, const char *s, size_t n)
{
	memset(d, ' ', n);
	memcpy(d, s, strlen(s));
}

TEST(identify_controller_fields)
{
	static uint8_t d[4096];
	memset(d, 0, sizeof(d));
	d[0] = 0x4d; d[1] = 0x1b;                 /* VID */
	d[2] = 0x4d; d[3] = 0x1b;                 /* SSVID */
	put_str(d + 4, "NVMEOFTB0001", 20);       /* SN, bytes 23:04 */
	put_str(d + 24, "nvmeof-testbed", 40);    /* MN, bytes 63:24 */
	put_str(d + 64, "6.1.0", 8);              /* FR, bytes 71:64 */
	d[77] = 8;                                /* MDTS */
	d[78] = 0x02; d[79] = 0x01;               /* CNTLID 0102h */
	d[320] = 0x64; d[321] = 0x00;             /* KAS 100 */
	d[514] = 0x80; d[515] = 0x00;             /* MAXCMD 128 */
	d[516] = 0x00; d[517] = 0x04;             /* NN 1024 */
	d[520] = 0x5d; d[521] = 0x00;             /* ONCS */
	d[525] = 0x01;                            /* VWC */
	d[536] = 0x05; d[537] = 0x00; d[538] = 0x10; d[539] = 0x00; /* SGLS 100005h */
	memcpy(d + 768, "nqn.2026-12.io.nvmeof:testbed-a", 31); /* SUBNQN */
	d[1792] = 0x04; d[1793] = 0x01;           /* IOCCSZ 260 */
	d[1796] = 0x01;                           /* IORCSZ 1 */
	d[1800] = 0x00; d[1801] = 0x00;           /* ICDOFF 0 */
	struct nvmeof_ctrl_info i;
	memset(&i, 0, sizeof(i));
	nvme_id_ctrl_parse(d, &i);
	CHECK_EQ(i.vid, 0x1b4d);
	CHECK_STR(i.serial, "NVMEOFTB0001");
	CHECK_STR(i.model, "nvmeof-testbed");
	CHECK_STR(i.firmware, "6.1.0");
	CHECK_EQ(i.mdts, 8);
	CHECK_EQ(i.cntlid, 0x0102);
	CHECK_EQ(i.kas, 100);
	CHECK_EQ(i.maxcmd, 128);
	CHECK_EQ(i.nn, 1024);
	CHECK_EQ(i.oncs, 0x5d);
	CHECK_EQ(i.vwc, 1);
	CHECK_EQ(i.sgls, 0x100005);
	CHECK(i.sgls & NVME_SGLS_KEYED);
	CHECK(i.sgls & NVME_SGLS_OFFSET);
	CHECK_STR(i.subnqn, "nqn.2026-12.io.nvmeof:testbed-a");
	CHECK_EQ(i.ioccsz, 260);
	CHECK_EQ(i.iorcsz, 1);
	CHECK_EQ(i.icdoff, 0);
	CHECK_EQ(nvme_max_xfer(i.mdts, 0), 1u << 20);
	CHECK_EQ(nvme_max_xfer(5, 1ull << 48), 1u << 18); /* MPSMIN 1: 8 KiB pages */
	CHECK_EQ(nvme_max_xfer(0, 0), 0);
}

TEST(identify_controller_hostile_strings)
{
	static uint8_t d[4096];
	memset(d, 0, sizeof(d));
	memset(d + 4, 0x07, 20); /* BEL bytes must not reach a terminal */
	memset(d + 768, 'x', 256); /* SUBNQN without a terminating NUL */
	struct nvmeof_ctrl_info i;
	nvme_id_ctrl_parse(d, &i);
	CHECK_EQ(strlen(i.serial), 20);
	CHECK_EQ(i.serial[0], '?');
	CHECK_EQ(strlen(i.subnqn), 256);
}

TEST(identify_namespace_formats)
{
	static uint8_t d[4096];
	memset(d, 0, sizeof(d));
	put_le64(d + 0, 65536);   /* NSZE */
	put_le64(d + 8, 65536);   /* NCAP */
	put_le64(d + 16, 100);    /* NUSE */
	d[25] = 1;                /* NLBAF: two formats (0-based) */
	d[26] = 1;                /* FLBAS: format 1 */
	d[128 + 2] = 9;           /* LBAF0: 512 B */
	d[132 + 0] = 8;           /* LBAF1: MS 8 */
	d[132 + 2] = 12;          /* LBAF1: LBADS 12 -> 4 KiB */
	memset(d + 104, 0xab, 16);
	struct nvmeof_ns ns;
	const char *why = NULL;
	CHECK_EQ(nvme_id_ns_parse(d, 2, &ns, &why), 0);
	CHECK_EQ(ns.nsid, 2);
	CHECK_EQ(ns.nsze, 65536);
	CHECK_EQ(ns.nuse, 100);
	CHECK_EQ(ns.lba_size, 4096);
	CHECK_EQ(ns.lbads, 12);
	CHECK_EQ(ns.ms, 8);
	CHECK_EQ(ns.nguid[15], 0xab);
	d[26] = 3; /* past NLBAF */
	CHECK_EQ(nvme_id_ns_parse(d, 2, &ns, &why), (unsigned long long)-1);
	CHECK(why && strstr(why, "NLBAF"));
	d[26] = 0;
	d[128 + 2] = 40; /* absurd LBADS */
	CHECK_EQ(nvme_id_ns_parse(d, 2, &ns, &why), (unsigned long long)-1);
}

TEST(active_namespace_list)
{
	static uint8_t d[4096];
	uint32_t ids[8];
	memset(d, 0, sizeof(d));
	put_le32(d, 1);
	put_le32(d + 4, 2);
	put_le32(d + 8, 7);
	CHECK_EQ(nvme_ns_list_parse(d, ids, 8), 3);
	CHECK_EQ(ids[2], 7);
	CHECK_EQ(nvme_ns_list_parse(d, ids, 2), 2);
	memset(d, 0xff, sizeof(d)); /* a full list never runs past the page */
	static uint32_t many[1100];
	CHECK_EQ(nvme_ns_list_parse(d, many, 1100), 1024);
}

TEST(rdma_cm_private_data)
{
	uint8_t p[32];
	nvme_rdma_cm_req(p, 2, 129, 128, 0x0007);
	const uint8_t want[32] = {0x00, 0x00, 0x02, 0x00, 0x81, 0x00, 0x80, 0x00, 0x07, 0x00};
	CHECK_MEM(p, want, 32);
	uint16_t crq = 0, sts = 0;
	const char *why;
	const uint8_t rep[32] = {0x00, 0x00, 0x80, 0x00};
	CHECK_EQ(nvme_rdma_cm_rep_parse(rep, 32, &crq, &why), 0);
	CHECK_EQ(crq, 128);
	const uint8_t badfmt[4] = {0x01, 0x00, 0x80, 0x00};
	CHECK_EQ(nvme_rdma_cm_rep_parse(badfmt, 4, &crq, &why), (unsigned long long)-1);
	CHECK_EQ(nvme_rdma_cm_rep_parse(rep, 3, &crq, &why), (unsigned long long)-1);
	CHECK_EQ(nvme_rdma_cm_rep_parse(NULL, 0, &crq, &why), (unsigned long long)-1);
	const uint8_t rej[4] = {0x00, 0x00, 0x04, 0x00};
	CHECK_EQ(nvme_rdma_cm_rej_parse(rej, 4, &sts), 0);
	CHECK_EQ(sts, NVME_RDMA_CM_INVALID_HSQSIZE);
	CHECK_STR(nvme_rdma_cm_status_name(sts), "invalid HSQSIZE");
	CHECK_EQ(nvme_rdma_cm_rej_parse(rej, 2, &sts), (unsigned long long)-1);
}

/* ---- log pages, discovery, events, Write Zeroes (NVMe Base 2.0 Figures
 * 197-199 Get Log Page, Fabrics Figures 264-265 discovery log) ---- */
TEST(get_log_page_sqe_numd_split_offset_rae)
{
	uint8_t s[64];
	/* 0x40004 bytes = 0x10001 dwords: NUMD 0x10000 (0-based) crosses the
	 * 16-bit NUMDL, so NUMDU is 1 and NUMDL 0 */
	nvme_sqe_get_log_page(s, 0x21, 0xffffffff, 0x70, 0x05, 1, 0x40004, 0x123456789a0ull, 0xbeef);
	const uint8_t want[64] = {
		0x02, 0x40, 0x21, 0x00, 0xff, 0xff, 0xff, 0xff,     /* opcode 02h, CID, NSID */
		[40] = 0x70, 0x85, 0x00, 0x00,                      /* LID, LSP 5 | RAE (bit 15), NUMDL 0 */
		[44] = 0x01, 0x00, 0xef, 0xbe,                      /* NUMDU 1, LSI */
		[48] = 0xa0, 0x89, 0x67, 0x45,                      /* LPOL */
		[52] = 0x23, 0x01, 0x00, 0x00,                      /* LPOU */
	};
	CHECK_MEM(s, want, 64);
	nvme_sqe_get_log_page(s, 1, 0, 0x02, 0, 0, 512, 0, 0);
	CHECK_EQ(get_le32(s + 40), 0x007f0002u);            /* NUMDL 127, SMART, no RAE */
	CHECK_EQ(get_le32(s + 44), 0);
	CHECK_EQ(get_le64(s + 48), 0);
}

TEST(write_zeroes_and_aer_sqes)
{
	uint8_t s[64];
	nvme_sqe_write_zeroes(s, 9, 3, 0x1122334455ull, 65536, NVME_RW_FUA | NVME_WZ_DEAC);
	const uint8_t want[64] = {
		0x08, 0x40, 0x09, 0x00, 0x03, 0x00, 0x00, 0x00,
		[40] = 0x55, 0x44, 0x33, 0x22, 0x11, 0x00, 0x00, 0x00,
		[48] = 0xff, 0xff, 0x00, 0x42,                      /* NLB FFFFh, DEAC bit 25, FUA bit 30 */
	};
	CHECK_MEM(s, want, 64);
	nvme_sqe_async_event(s, 7);
	CHECK_EQ(s[0], 0x0c);
	CHECK_EQ(get_le16(s + 2), 7);
	CHECK_MEM(s + 4, zero, 20);
	CHECK_MEM(s + 40, zero, 24);
	uint8_t w[64];
	nvme_sqe_rw(w, NVME_CMD_WRITE, 1, 1, 0, 8);
	put_le32(w + 48, get_le32(w + 48) | NVME_RW_FUA);
	CHECK_EQ(w[51], 0x40);
}

TEST(async_event_config_and_decode)
{
	/* nvmet: OAES namespace attribute (8) and ANA change (11) */
	CHECK_EQ(nvme_aec_cdw11((1u << 8) | (1u << 11)), 0x91fu);
	/* reserved and unknown OAES bits are not asked for */
	CHECK_EQ(nvme_aec_cdw11(0x7fffffffu), 0xb1fu);
	CHECK_EQ(nvme_aec_cdw11(1u << 31), 0x8000001fu);
	struct nvmeof_event ev;
	nvme_aer_decode(0x00040002u, &ev);                   /* notice, NS changed, log 04h */
	CHECK_EQ(ev.type, NVMEOF_AER_NOTICE);
	CHECK_EQ(ev.info, NVMEOF_AER_NOTICE_NS_CHANGED);
	CHECK_EQ(ev.lid, NVMEOF_LOG_CHANGED_NS);
	nvme_aer_decode(0x0070f002u, &ev);                   /* discovery log changed */
	CHECK_EQ(ev.info, 0xf0);
	CHECK_EQ(ev.lid, 0x70);
	nvme_aer_decode(0x00020101u, &ev);                   /* SMART, temperature, log 02h */
	CHECK_EQ(ev.type, NVMEOF_AER_SMART);
	CHECK_EQ(ev.info, 1);
	CHECK_EQ(ev.lid, 2);
}


static void put_cstr(uint8_t *d, const char *s) { memcpy(d, s, strlen(s)); }

TEST(discovery_log_header_and_entries)
{
	static uint8_t d[1024 + 2 * 1024];
	memset(d, 0, sizeof(d));
	put_le64(d, 0x0102030405060708ull);                  /* GENCTR */
	put_le64(d + 8, 2);                                  /* NUMREC */
	put_le16(d + 16, 0);                                 /* RECFMT */
	uint8_t *e = d + 1024;
	e[0] = 1; e[1] = 1; e[2] = 2; e[3] = 0x04;           /* RDMA, IPv4, NVM, SQ flow control disable */
	put_le16(e + 4, 1); put_le16(e + 6, 0xffff); put_le16(e + 8, 32); put_le16(e + 10, 0x0002);
	put_cstr(e + 32, "4420                            ");  /* TRSVCID, space padded */
	put_cstr(e + 256, "nqn.2026-12.io.nvmeof:testbed-a");
	put_cstr(e + 512, "192.0.2.1");
	e[768] = 1; e[769] = 1; e[770] = 1; put_le16(e + 776, 0xabcd); /* QPTYPE, PRTYPE, CMS, PKEY */
	e += 1024;
	e[0] = 3; e[1] = 2; e[2] = 3; e[3] = 0x02;
	put_le16(e + 4, 2);
	put_cstr(e + 32, "8009");
	put_cstr(e + 256, "nqn.2014-08.org.nvmexpress.discovery");
	put_cstr(e + 512, "2001:db8::1");
	e[768] = 2;                                          /* TCP SECTYPE TLS 1.3 */
	e[769] = 0x55;                                       /* not read for TCP */
	uint64_t genctr, numrec;
	uint16_t recfmt;
	nvme_disc_log_hdr_parse(d, &genctr, &numrec, &recfmt);
	CHECK_EQ(genctr, 0x0102030405060708ull);
	CHECK_EQ(numrec, 2);
	CHECK_EQ(recfmt, 0);
	struct nvmeof_disc_entry x;
	nvme_disc_entry_parse(d + 1024, &x);
	CHECK_EQ(x.trtype, 1); CHECK_EQ(x.adrfam, 1); CHECK_EQ(x.subtype, 2); CHECK_EQ(x.treq, 4);
	CHECK_EQ(x.portid, 1); CHECK_EQ(x.cntlid, 0xffff); CHECK_EQ(x.asqsz, 32); CHECK_EQ(x.eflags, 2);
	CHECK_STR(x.trsvcid, "4420");
	CHECK_STR(x.subnqn, "nqn.2026-12.io.nvmeof:testbed-a");
	CHECK_STR(x.traddr, "192.0.2.1");
	CHECK_EQ(x.rdma_qptype, 1); CHECK_EQ(x.rdma_prtype, 1); CHECK_EQ(x.rdma_cms, 1);
	CHECK_EQ(x.rdma_pkey, 0xabcd);
	CHECK_EQ(x.tcp_sectype, 0);
	nvme_disc_entry_parse(d + 2048, &x);
	CHECK_EQ(x.trtype, 3); CHECK_EQ(x.adrfam, 2); CHECK_EQ(x.subtype, 3);
	CHECK_STR(x.trsvcid, "8009");
	CHECK_STR(x.traddr, "2001:db8::1");
	CHECK_EQ(x.tcp_sectype, 2);
	CHECK_EQ(x.rdma_prtype, 0);
	CHECK_STR(nvmeof_trtype_str(1), "rdma");
	CHECK_STR(nvmeof_trtype_str(3), "tcp");
	CHECK_STR(nvmeof_adrfam_str(1), "ipv4");
	CHECK_STR(nvmeof_subtype_str(2), "nvme subsystem");
	CHECK_STR(nvmeof_subtype_str(3), "current discovery subsystem");
	CHECK_STR(nvmeof_treq_str(0x04), "not specified, sq flow control disable supported");
	CHECK_STR(nvmeof_rdma_qptype_str(1), "connected");
	CHECK_STR(nvmeof_rdma_cms_str(1), "rdma-cm");
	CHECK_STR(nvmeof_trtype_str(0x42), "unrecognized");
	/* EFLAGS bit 0 DUPRETINFO, bit 1 EPCSD; RDMA PRTYPE 1 to 5; TCP
	 * SECTYPE 0 to 2: the values of the NVMe-oF specification's
	 * Discovery Log Page Entry, in nvme-cli's words */
	CHECK_STR(nvmeof_eflags_str(0), "none");
	CHECK_STR(nvmeof_eflags_str(1), "duplicate discovery information");
	CHECK_STR(nvmeof_eflags_str(2), "explicit discovery connections");
	CHECK_STR(nvmeof_eflags_str(3), "explicit discovery connections, duplicate discovery information");
	CHECK_STR(nvmeof_eflags_str(4), "unrecognized");
	CHECK_STR(nvmeof_rdma_prtype_str(0), "unrecognized");
	CHECK_STR(nvmeof_rdma_prtype_str(1), "not specified");
	CHECK_STR(nvmeof_rdma_prtype_str(2), "infiniband");
	CHECK_STR(nvmeof_rdma_prtype_str(3), "roce");
	CHECK_STR(nvmeof_rdma_prtype_str(4), "roce-v2");
	CHECK_STR(nvmeof_rdma_prtype_str(5), "iwarp");
	CHECK_STR(nvmeof_rdma_prtype_str(6), "unrecognized");
	CHECK_STR(nvmeof_tcp_sectype_str(0), "none");
	CHECK_STR(nvmeof_tcp_sectype_str(1), "tls");
	CHECK_STR(nvmeof_tcp_sectype_str(2), "tls13");
	CHECK_STR(nvmeof_tcp_sectype_str(3), "unrecognized");
}

TEST(error_and_smart_logs)
{
	uint8_t e[64] = {0};
	put_le64(e, 77);
	put_le16(e + 8, 1); put_le16(e + 10, 0x0402);
	put_le16(e + 12, (uint16_t)((0x4080 << 1) | 1));    /* DNR, LBA Out of Range, phase 1 */
	put_le16(e + 14, 0x0130);
	put_le64(e + 16, 0x200000); put_le32(e + 24, 1);
	e[28] = 0; e[29] = 1; put_le64(e + 32, 0x99); put_le16(e + 40, 0x1234);
	struct nvmeof_error_entry x;
	nvme_error_entry_parse(e, &x);
	CHECK_EQ(x.error_count, 77); CHECK_EQ(x.sqid, 1); CHECK_EQ(x.cmdid, 0x402);
	CHECK_EQ(x.status, 0x4080); CHECK_EQ(x.parm_error_location, 0x130);
	CHECK_EQ(x.lba, 0x200000); CHECK_EQ(x.nsid, 1); CHECK_EQ(x.trtype, 1);
	CHECK_EQ(x.cs, 0x99); CHECK_EQ(x.trtype_spec_info, 0x1234);
	uint8_t s[512] = {0};
	s[0] = 0x04; put_le16(s + 1, 310); s[3] = 100; s[4] = 10; s[5] = 3; s[6] = 1;
	put_le64(s + 32, 1000); put_le64(s + 40, 1);         /* 128-bit: high half set */
	put_le64(s + 48, 2000); put_le64(s + 64, 30); put_le64(s + 80, 40);
	put_le64(s + 96, 5); put_le64(s + 112, 6); put_le64(s + 128, 7); put_le64(s + 144, 8);
	put_le64(s + 160, 9); put_le64(s + 176, 10); put_le32(s + 192, 11); put_le32(s + 196, 12);
	put_le16(s + 200, 300); put_le16(s + 214, 301);
	struct nvmeof_smart_log l;
	nvme_smart_log_parse(s, &l);
	CHECK_EQ(l.critical_warning, 4); CHECK_EQ(l.temperature, 310); CHECK_EQ(l.avail_spare, 100);
	CHECK_EQ(l.spare_thresh, 10); CHECK_EQ(l.percent_used, 3); CHECK_EQ(l.endu_grp_crit_warn_sumry, 1);
	CHECK_EQ(l.data_units_read[0], 1000); CHECK_EQ(l.data_units_read[1], 1);
	CHECK_EQ(l.data_units_written[0], 2000); CHECK_EQ(l.host_reads[0], 30); CHECK_EQ(l.host_writes[0], 40);
	CHECK_EQ(l.ctrl_busy_time[0], 5); CHECK_EQ(l.power_cycles[0], 6); CHECK_EQ(l.power_on_hours[0], 7);
	CHECK_EQ(l.unsafe_shutdowns[0], 8); CHECK_EQ(l.media_errors[0], 9); CHECK_EQ(l.num_err_log_entries[0], 10);
	CHECK_EQ(l.warning_temp_time, 11); CHECK_EQ(l.critical_comp_time, 12);
	CHECK_EQ(l.temp_sensor[0], 300); CHECK_EQ(l.temp_sensor[7], 301);
}

TEST(changed_ns_list_and_descriptors)
{
	static uint8_t d[4096];
	uint32_t ids[4];
	int ovf;
	memset(d, 0, sizeof(d));
	put_le32(d, 3); put_le32(d + 4, 7);
	CHECK_EQ(nvme_changed_ns_parse(d, ids, 4, &ovf), 2);
	CHECK_EQ(ovf, 0); CHECK_EQ(ids[0], 3); CHECK_EQ(ids[1], 7);
	put_le32(d, 0xffffffffu);
	CHECK_EQ(nvme_changed_ns_parse(d, ids, 4, &ovf), 0);
	CHECK_EQ(ovf, 1);

	memset(d, 0, sizeof(d));
	uint8_t *p = d;
	p[0] = 1; p[1] = 8; for (int i = 0; i < 8; i++) p[4 + i] = (uint8_t)(0xe0 + i); p += 12;
	p[0] = 2; p[1] = 16; for (int i = 0; i < 16; i++) p[4 + i] = (uint8_t)(0x10 + i); p += 20;
	p[0] = 9; p[1] = 2; p += 6;                          /* unknown type: skipped by NIDL */
	p[0] = 3; p[1] = 16; for (int i = 0; i < 16; i++) p[4 + i] = (uint8_t)(0x30 + i); p += 20;
	p[0] = 4; p[1] = 1; p[4] = 0;
	struct nvmeof_ns_ids x;
	const char *why = NULL;
	CHECK_EQ(nvme_ns_desc_parse(d, sizeof(d), &x, &why), 0);
	CHECK(x.has_eui64 && x.has_nguid && x.has_uuid && x.has_csi);
	CHECK_EQ(x.eui64[0], 0xe0); CHECK_EQ(x.eui64[7], 0xe7);
	CHECK_EQ(x.nguid[0], 0x10); CHECK_EQ(x.nguid[15], 0x1f);
	CHECK_EQ(x.uuid[0], 0x30); CHECK_EQ(x.uuid[15], 0x3f);
	CHECK_EQ(x.csi, 0);
	d[1] = 16;                                           /* an EUI-64 of 16 bytes */
	CHECK_EQ(nvme_ns_desc_parse(d, sizeof(d), &x, &why), (unsigned long long)-1);
	CHECK(why && strstr(why, "length"));
	memset(d, 0, sizeof(d));
	d[4088] = 2; d[4089] = 16;                           /* runs past the end */
	put_le32(d, 0); d[0] = 0;
	CHECK_EQ(nvme_ns_desc_parse(d + 4088, 8, &x, &why), (unsigned long long)-1);
}

TEST(ana_log_groups)
{
	uint8_t d[16 + 32 + 8 + 32 + 4] = {0};
	put_le64(d, 42); put_le16(d + 8, 2);
	put_le32(d + 16, 1); put_le32(d + 20, 2); put_le64(d + 24, 5); d[32] = 0x01;
	put_le32(d + 48, 1); put_le32(d + 52, 2);
	put_le32(d + 56, 2); put_le32(d + 60, 1); put_le64(d + 64, 6); d[72] = 0x03;
	put_le32(d + 88, 9);
	struct nvmeof_ana_group g;
	uint64_t chg;
	uint16_t ng;
	CHECK_EQ(nvme_ana_group_parse(d, sizeof(d), 1, &g, &chg, &ng), 0);
	CHECK_EQ(chg, 42); CHECK_EQ(ng, 2);
	CHECK_EQ(g.grpid, 2); CHECK_EQ(g.nnsids, 1); CHECK_EQ(g.chgcnt, 6); CHECK_EQ(g.state, 3);
	CHECK_EQ(get_le32(d + g.nsids_off), 9);
	CHECK_EQ(nvme_ana_group_parse(d, sizeof(d), 0, &g, NULL, NULL), 0);
	CHECK_EQ(g.nnsids, 2); CHECK_EQ(get_le32(d + g.nsids_off + 4), 2);
	CHECK_EQ(nvme_ana_group_parse(d, sizeof(d), 2, &g, NULL, NULL), (unsigned long long)-1);
	CHECK_EQ(nvme_ana_group_parse(d, sizeof(d) - 1, 1, &g, NULL, NULL), (unsigned long long)-1);
}

/* The log each event names is read whole (RAE cleared) to re-arm it. */
TEST(event_log_lengths)
{
	CHECK_EQ(nvme_aer_log_len(NVMEOF_LOG_ERROR, 63, 0), 64 * 64);
	CHECK_EQ(nvme_aer_log_len(NVMEOF_LOG_SMART, 0, 0), 512);
	CHECK_EQ(nvme_aer_log_len(NVMEOF_LOG_FW_SLOT, 0, 0), 512);
	CHECK_EQ(nvme_aer_log_len(NVMEOF_LOG_CHANGED_NS, 0, 0), 4096);
	CHECK_EQ(nvme_aer_log_len(NVMEOF_LOG_ANA, 0, 8208), 8208);
	CHECK_EQ(nvme_aer_log_len(NVMEOF_LOG_DISCOVERY, 0, 0), 1024);
	CHECK_EQ(nvme_aer_log_len(0x80, 0, 0), 0);    /* reservation notification: not ours */
	static uint8_t id[4096];
	memset(id, 0, sizeof(id));
	put_le32(id + 348, 128);  /* NANAGRPID, as nvmet */
	put_le32(id + 540, 1024); /* MNAN */
	put_le32(id + 516, 1024); /* NN */
	CHECK_EQ(nvme_ana_log_len(id), 16 + 128 * 32 + 1024 * 4);
	put_le32(id + 540, 0);    /* no MNAN: NN bounds the NSIDs */
	put_le32(id + 516, 32);
	CHECK_EQ(nvme_ana_log_len(id), 16 + 128 * 32 + 32 * 4);
	put_le32(id + 348, 0xffffffffu);
	CHECK_EQ(nvme_ana_log_len(id), NVME_ANA_LOG_MAX);
}

/* CRDT1..3 at bytes 129:128, 131:130, 133:132 (NVMe Base 2.1, Identify
 * Controller; the kernel's struct nvme_id_ctrl and SPDK's agree), after
 * FGUID and before reserved bytes 134 on. */
TEST(identify_command_retry_delay_times)
{
	static uint8_t d[4096];
	memset(d, 0, sizeof(d));
	memset(d + 112, 0xee, 16);                           /* FGUID */
	put_le16(d + 128, 3); put_le16(d + 130, 5); put_le16(d + 132, 0x0102);
	struct nvmeof_ctrl_info i;
	memset(&i, 0, sizeof(i));
	nvme_id_ctrl_parse(d, &i);
	CHECK_EQ(i.crdt[0], 3); CHECK_EQ(i.crdt[1], 5); CHECK_EQ(i.crdt[2], 0x0102);
}

TEST(identify_fields_for_events_and_write_zeroes)
{
	static uint8_t d[4096];
	memset(d, 0, sizeof(d));
	put_le32(d + 92, 0x900); d[111] = 2; d[259] = 3; d[261] = 0x04; d[262] = 127;
	struct nvmeof_ctrl_info i;
	memset(&i, 0, sizeof(i));
	nvme_id_ctrl_parse(d, &i);
	CHECK_EQ(i.oaes, 0x900); CHECK_EQ(i.cntrltype, 2); CHECK_EQ(i.aerl, 3);
	CHECK_EQ(i.lpa, 4); CHECK_EQ(i.elpe, 127);
	memset(d, 0, sizeof(d));
	put_le64(d, 100); d[33] = 0x09; d[130] = 9;          /* DLFEAT: deallocate in WZ, reads zeroes */
	struct nvmeof_ns ns;
	const char *why;
	CHECK_EQ(nvme_id_ns_parse(d, 1, &ns, &why), 0);
	CHECK_EQ(ns.dlfeat, 9);
}

/* Identify Controller's ANA fields, at the offsets nvmet fills them. */
TEST(identify_ana_fields)
{
	static uint8_t id[4096];
	memset(id, 0, sizeof(id));
	id[76] = 0x0b;            /* CMIC: multi-port, multi-controller, ANA reporting */
	id[342] = 10;             /* ANATT */
	id[343] = 0x4f;           /* ANACAP */
	put_le32(id + 344, 128);  /* ANAGRPMAX */
	put_le32(id + 348, 128);  /* NANAGRPID */
	struct nvmeof_ana_caps a;
	memset(&a, 0xff, sizeof(a));
	nvme_id_ctrl_ana_parse(id, &a);
	CHECK_EQ(a.cmic, 0x0b); CHECK(a.reporting); CHECK_EQ(a.anatt, 10); CHECK_EQ(a.anacap, 0x4f);
	CHECK_EQ(a.anagrpmax, 128); CHECK_EQ(a.nanagrpid, 128);
	id[76] = 0x03;
	nvme_id_ctrl_ana_parse(id, &a);
	CHECK(!a.reporting);
	memset(id, 0, sizeof(id));
	put_le64(id, 100); id[30] = 1; put_le32(id + 92, 7); id[130] = 9;
	struct nvmeof_ns ns;
	const char *why;
	CHECK_EQ(nvme_id_ns_parse(id, 1, &ns, &why), 0);
	CHECK_EQ(ns.anagrpid, 7); CHECK_EQ(ns.nmic, 1);
}

/* Two groups, as nvmet writes them: group 1 with NSIDs 1 and 2, group 2
 * with none listed (RGO, or an empty group). */
static size_t ana_log(uint8_t *d, uint8_t st1, uint8_t st2)
{
	memset(d, 0, 128);
	put_le64(d, 9); put_le16(d + 8, 2);
	put_le32(d + 16, 1); put_le32(d + 20, 2); put_le64(d + 24, 3); d[32] = st1;
	put_le32(d + 48, 1); put_le32(d + 52, 2);
	put_le32(d + 56, 2); put_le32(d + 60, 0); put_le64(d + 64, 4); d[72] = st2;
	return 88;
}

/* A namespace moved from group 1 to group 2 while attached (nvmet's
 * ana_grpid, a storage array rebalancing): the log's NSID lists say so,
 * and the namespace takes its new group's state, not its old one's. */
TEST(ana_namespace_followed_to_its_new_group)
{
	uint8_t d[128];
	size_t len = ana_log(d, NVMEOF_ANA_INACCESSIBLE, NVMEOF_ANA_OPTIMIZED);
	uint32_t grp = 1;
	uint8_t st = 0;
	CHECK_EQ(nvme_ana_ns_state(d, len, 2, &grp, &st), 0);
	CHECK_EQ(st, NVMEOF_ANA_INACCESSIBLE); CHECK_EQ(grp, 1);
	/* NSID 2 moves: group 1 lists only NSID 1, group 2 lists NSID 2 */
	put_le32(d + 20, 1);
	memmove(d + 52, d + 56, 32);
	put_le32(d + 52 + 4, 1); put_le32(d + 52 + 32, 2);
	len = 88;
	CHECK_EQ(nvme_ana_ns_state(d, len, 2, &grp, &st), 0);
	CHECK_EQ(st, NVMEOF_ANA_OPTIMIZED); CHECK_EQ(grp, 2);
	CHECK_EQ(nvme_ana_ns_state(d, len, 1, &grp, &st), 0);   /* NSID 1 stayed */
	CHECK_EQ(st, NVMEOF_ANA_INACCESSIBLE); CHECK_EQ(grp, 1);
	/* no NSID lists (RGO): the group it was last seen in */
	uint8_t r[128];
	len = ana_log(r, NVMEOF_ANA_OPTIMIZED, NVMEOF_ANA_CHANGE);
	put_le32(r + 20, 0);
	memmove(r + 48, r + 56, 32);
	len = 80;
	grp = 2;
	CHECK_EQ(nvme_ana_ns_state(r, len, 2, &grp, &st), 0);
	CHECK_EQ(st, NVMEOF_ANA_CHANGE); CHECK_EQ(grp, 2);
	grp = 3;                                                        /* named nowhere */
	CHECK_EQ(nvme_ana_ns_state(r, len, 2, &grp, &st), 1);
	CHECK_EQ(nvme_ana_ns_state(r, 40, 2, &grp, &st), (unsigned long long)-1);
}

/* A log with NSID lists that lists the namespace nowhere: the controller
 * no longer has it (detached from this controller alone), and the path is
 * not usable, whatever the group it was last seen in says. */
TEST(ana_namespace_missing_from_a_log_with_lists_has_no_state)
{
	uint8_t d[128];
	size_t len = ana_log(d, NVMEOF_ANA_OPTIMIZED, NVMEOF_ANA_OPTIMIZED);
	put_le32(d + 20, 1); /* group 1 lists NSID 1 only */
	memmove(d + 52, d + 56, 32);
	len = 84;
	uint32_t grp = 1;
	uint8_t st = 0xff;
	CHECK_EQ(nvme_ana_ns_state(d, len, 1, &grp, &st), 0);
	CHECK_EQ(st, NVMEOF_ANA_OPTIMIZED);
	CHECK_EQ(nvme_ana_ns_state(d, len, 2, &grp, &st), 1);
	CHECK_EQ(grp, 1);
}

TEST(ana_group_state_lookup)
{
	uint8_t d[128];
	size_t len = ana_log(d, NVMEOF_ANA_OPTIMIZED, NVMEOF_ANA_CHANGE);
	uint8_t st = 0;
	uint64_t chg = 0;
	const char *why = NULL;
	CHECK_EQ(nvme_ana_log_check(d, len, &why), 0);
	CHECK_EQ(nvme_ana_group_state(d, len, 1, &st, &chg), 0);
	CHECK_EQ(st, NVMEOF_ANA_OPTIMIZED); CHECK_EQ(chg, 3);
	CHECK_EQ(nvme_ana_group_state(d, len, 2, &st, NULL), 0);
	CHECK_EQ(st, NVMEOF_ANA_CHANGE);
	CHECK_EQ(nvme_ana_group_state(d, len, 3, &st, NULL), 1);       /* not listed */
	d[72] = 0xf3;                                                   /* reserved bits 7:4 */
	CHECK_EQ(nvme_ana_group_state(d, len, 2, &st, NULL), 0);
	CHECK_EQ(st, 3);
	/* truncated: a descriptor, or an NSID list, past the data */
	CHECK_EQ(nvme_ana_log_check(d, len - 1, &why), (unsigned long long)-1);
	CHECK(why && strstr(why, "past"));
	CHECK_EQ(nvme_ana_group_state(d, 60, 1, &st, NULL), (unsigned long long)-1);
	CHECK_EQ(nvme_ana_log_check(d, 8, &why), (unsigned long long)-1);
	put_le16(d + 8, 3);                                             /* NGRPS says more */
	CHECK_EQ(nvme_ana_log_check(d, len, &why), (unsigned long long)-1);
	CHECK_STR(nvmeof_ana_state_str(NVMEOF_ANA_OPTIMIZED), "optimized");
	CHECK_STR(nvmeof_ana_state_str(NVMEOF_ANA_NONOPTIMIZED), "non-optimized");
	CHECK_STR(nvmeof_ana_state_str(NVMEOF_ANA_INACCESSIBLE), "inaccessible");
	CHECK_STR(nvmeof_ana_state_str(NVMEOF_ANA_PERSISTENT_LOSS), "persistent-loss");
	CHECK_STR(nvmeof_ana_state_str(NVMEOF_ANA_CHANGE), "change");
	CHECK_STR(nvmeof_ana_state_str(5), "invalid state");
	CHECK(nvme_ana_usable(NVMEOF_ANA_OPTIMIZED) && nvme_ana_usable(NVMEOF_ANA_NONOPTIMIZED));
	CHECK(!nvme_ana_usable(NVMEOF_ANA_INACCESSIBLE) && !nvme_ana_usable(NVMEOF_ANA_CHANGE));
}

/* What a completion means for its path, as the kernel's failover decides. */
TEST(path_statuses_fail_over)
{
	uint8_t st;
	CHECK_EQ(nvme_path_verdict(0, 0, &st), PATH_DONE);
	CHECK_EQ(nvme_path_verdict(NVMEOF_ENVME, 0x0080, &st), PATH_DONE);     /* LBA out of range */
	CHECK_EQ(nvme_path_verdict(NVMEOF_ENVME, 0x0300, &st), PATH_FAILOVER); /* Internal Path Error */
	CHECK_EQ(st, 0);
	CHECK_EQ(nvme_path_verdict(NVMEOF_ENVME, 0x0301, &st), PATH_FAILOVER);
	CHECK_EQ(st, NVMEOF_ANA_PERSISTENT_LOSS);
	CHECK_EQ(nvme_path_verdict(NVMEOF_ENVME, 0x0302, &st), PATH_FAILOVER);
	CHECK_EQ(st, NVMEOF_ANA_INACCESSIBLE);
	CHECK_EQ(nvme_path_verdict(NVMEOF_ENVME, 0x0303, &st), PATH_TRANSITION);
	CHECK_EQ(st, NVMEOF_ANA_CHANGE);
	CHECK_EQ(nvme_path_verdict(NVMEOF_ENVME, 0x0370, &st), PATH_FAILOVER); /* Host Pathing Error */
	CHECK_EQ(nvme_path_verdict(NVMEOF_ENVME, 0x4302, &st), PATH_DONE);     /* DNR: no path does better */
	CHECK_EQ(nvme_path_verdict(NVMEOF_ECLOSED, 0, &st), PATH_FAILOVER);
	CHECK_EQ(nvme_path_verdict(NVMEOF_ETIMEDOUT, 0, &st), PATH_FAILOVER);
	CHECK_EQ(nvme_path_verdict(NVMEOF_EINVAL, 0, &st), PATH_DONE);
	CHECK_STR(nvmeof_status_name(0x0300), "Internal Path Error");
	CHECK_STR(nvmeof_status_name(0x0301), "Asymmetric Access Persistent Loss");
	CHECK_STR(nvmeof_status_name(0x0302), "Asymmetric Access Inaccessible");
	CHECK_STR(nvmeof_status_name(0x0303), "Asymmetric Access Transition");
}

int main(void)
{
	static const struct test_case t[] = {
		T(read_sqe_with_keyed_sgl), T(write_sqe_with_incapsule_sgl), T(nlb_is_zero_based_and_16_bits),
		T(connect_sqe), T(connect_data), T(connect_data_refuses_bad_nqns), T(property_get_and_set),
		T(cc_fields), T(identify_and_features_sqes), T(dsm_deallocate), T(cqe_parse_status_and_phase),
		T(status_code_ignores_dnr_more_and_crd), T(command_specific_status_named_by_command),
		T(host_id_from_a_uuid_host_nqn),
		T(status_names_and_cpl_strings), T(identify_controller_fields),
		T(identify_controller_hostile_strings), T(identify_namespace_formats),
		T(active_namespace_list), T(rdma_cm_private_data),
		T(get_log_page_sqe_numd_split_offset_rae), T(write_zeroes_and_aer_sqes),
		T(async_event_config_and_decode), T(discovery_log_header_and_entries),
		T(error_and_smart_logs), T(changed_ns_list_and_descriptors), T(ana_log_groups), T(event_log_lengths),
		T(identify_fields_for_events_and_write_zeroes), T(identify_command_retry_delay_times), T(identify_ana_fields), T(ana_group_state_lookup), T(ana_namespace_followed_to_its_new_group),
		T(ana_namespace_missing_from_a_log_with_lists_has_no_state),
		T(path_statuses_fail_over),
	};
	return run_tests("unit-protocol", t, sizeof(t) / sizeof(t[0]));
}
