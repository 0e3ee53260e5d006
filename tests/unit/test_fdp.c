/*
 * Flexible Data Placement on the loopback test wire: no target here has an
 * FDP namespace (nvmet has none), so the commands are held to the spec's
 * layouts (NVMe Base 2.1 / TP4146) byte by byte: the directive fields of a
 * write, the I/O Management Receive that asks for the reclaim unit handle
 * status, and the parse of its answer.
 */
#include <stdlib.h>

#include "check.h"
#include "fakewire.h"
#include "fdp.h"
#include "protocol.h"
#include "qpriv.h"
#include "util.h"

struct rec {
	int n;
	uint8_t sqe[64];
	uint16_t status;        /* answered for opcode 12h (status field, without phase) */
	uint16_t nruhsd;        /* the namespace's descriptors */
	uint32_t written;       /* non-zero: the bytes the answer writes (a short answer) */
};

/* Answers I/O Management Receive by writing a status of nruhsd descriptors
 * (PID 0x100+i, RUHID i, EARUTR 1000+i, RUAMW 2^40+i) into the keyed SGL's
 * memory, as far as the command's length reaches. */
static enum fw_action responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge, uint8_t *cqe)
{
	struct rec *r = ctx;
	(void)sge;
	(void)nsge;
	memcpy(r->sqe, sqe, 64);
	r->n++;
	if (sqe[0] != NVME_CMD_IO_MGMT_RECV)
		return FW_RESPOND;
	if (r->status) {
		put_le16(cqe + 14, (uint16_t)(r->status << 1));
		return FW_RESPOND;
	}
	uint8_t *buf = (uint8_t *)(uintptr_t)get_le64(sqe + 24);
	uint32_t len = get_le32(sqe + 32) & 0xffffff;
	uint8_t page[4096] = {0};
	put_le16(page + 14, r->nruhsd);
	for (uint32_t i = 0; i < r->nruhsd && 16 + (i + 1) * 32 <= sizeof(page); i++) {
		uint8_t *d = page + 16 + i * 32;
		put_le16(d, (uint16_t)(0x100 + i));
		put_le16(d + 2, (uint16_t)i);
		put_le32(d + 4, 1000 + i);
		put_le64(d + 8, (1ull << 40) + i);
		memset(d + 16, 0xee, 16); /* reserved: must not be read as anything */
	}
	if (r->written && r->written < len)
		len = r->written;
	memcpy(buf, page, len < sizeof(page) ? len : sizeof(page));
	return FW_RESPOND;
}

struct got {
	int calls;
	struct nvmeof_cpl cpl;
};
static void got_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct got *g = arg;
	g->calls++;
	g->cpl = *cpl;
}

static int open_q(struct rec *rec, struct fake_wire **fw, struct nvmeof_queue **q)
{
	*fw = fw_new(4, responder, rec);
	struct q_params p = {.qid = 2, .depth = 4, .cmd_timeout_ms = 30000, .max_xfer = 1 << 20,
			     .wait_mode = NVMEOF_WAIT_POLL};
	return q_open_fake(&p, *fw, q);
}

/* DTYPE in CDW12 bits 23:20 beside NLB and FUA; DSPEC in CDW13 bits 31:16,
 * the rest of CDW13 (DSM) zero; SLBA in CDW10-11. */
TEST(write_dspec_encodes_dtype_and_dspec_where_the_spec_puts_them)
{
	uint8_t sqe[64];
	fdp_sqe_write_dspec(sqe, 7, 0x123456789aull, 8, NVME_RW_FUA, NVMEOF_DTYPE_PLACEMENT, 0xbeef);
	CHECK_EQ(sqe[0], NVME_CMD_WRITE);
	CHECK_EQ(get_le32(sqe + 4), 7);
	CHECK_EQ(get_le64(sqe + 40), 0x123456789aull);
	CHECK_EQ(get_le32(sqe + 48), 7u | 2u << 20 | 1u << 30);
	CHECK_EQ(get_le32(sqe + 52), 0xbeefu << 16);
	CHECK_EQ(get_le32(sqe + 56), 0);
	fdp_sqe_write_dspec(sqe, 1, 0, 65536, 0, 0xf, 0xffff);
	CHECK_EQ(get_le32(sqe + 48), 0xffffu | 0xfu << 20);
	CHECK_EQ(get_le32(sqe + 52), 0xffff0000u);
}

/* I/O Management Receive: opcode 12h, MO 1h in CDW10 7:0 (MOS 0), NUMD
 * 0-based dwords in CDW11. */
TEST(ruhs_command_is_io_management_receive_mo_1)
{
	uint8_t sqe[64];
	fdp_sqe_ruhs(sqe, 3, 16 + 4 * 32);
	CHECK_EQ(sqe[0], 0x12);
	CHECK_EQ(get_le32(sqe + 4), 3);
	CHECK_EQ(get_le32(sqe + 40), 1);
	CHECK_EQ(get_le32(sqe + 44), (16 + 4 * 32) / 4 - 1);
}

/* The status: NRUHSD at bytes 15:14; each 32-byte descriptor PID 1:0,
 * RUHID 3:2, EARUTR 7:4, RUAMW 15:8. A count beyond what was asked or
 * what the buffer holds is reported, not read past. */
TEST(ruhs_parse_reads_the_spec_layout_and_never_past_the_buffer)
{
	uint8_t buf[16 + 2 * 32];
	memset(buf, 0, sizeof(buf));
	put_le16(buf + 14, 5); /* five on the device, two in this buffer */
	for (int i = 0; i < 2; i++) {
		put_le16(buf + 16 + i * 32, (uint16_t)(0x10 + i));
		put_le16(buf + 18 + i * 32, (uint16_t)(0x20 + i));
		put_le32(buf + 20 + i * 32, 0x30u + i);
		put_le64(buf + 24 + i * 32, 0x4000000000ull + i);
	}
	struct nvmeof_ruhs_desc d[8];
	memset(d, 0xaa, sizeof(d));
	uint32_t nr = 0;
	MUST(fdp_ruhs_parse(buf, sizeof(buf), d, 8, &nr));
	CHECK_EQ(nr, 5);
	CHECK_EQ(d[0].pid, 0x10);
	CHECK_EQ(d[1].pid, 0x11);
	CHECK_EQ(d[1].ruhid, 0x21);
	CHECK_EQ(d[1].earutr, 0x31);
	CHECK_EQ(d[1].ruamw, 0x4000000001ull);
	CHECK_EQ(d[2].pid, 0xaaaa); /* beyond the buffer: untouched */
	MUST(fdp_ruhs_parse(buf, sizeof(buf), d, 1, &nr));
	CHECK_EQ(nr, 5);
	CHECK_EQ(fdp_ruhs_parse(buf, 15, d, 1, &nr), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "header") != NULL);
out:;
}

/* Through a queue: the write goes out with its directive and the library's
 * CID and data pointer; DTYPE 0 is an ordinary write (CDW12/13 clean). */
TEST(write_dspec_goes_out_with_its_directive)
{
	struct rec rec = {0};
	struct fake_wire *fw = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr mr = {.addr = calloc(1, 8192), .len = 8192, .lkey = 0x11, .rkey = 0xabc};
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 512, .lbads = 9};
	struct got g = {0};
	MUST(open_q(&rec, &fw, &q));
	MUST(nvmeof_write_dspec(q, &ns, 64, 8, &mr, 4096, 0, NVMEOF_DTYPE_PLACEMENT, 3, got_cb, &g));
	for (int i = 0; i < 100 && !g.calls; i++)
		nvmeof_queue_poll(q, 0);
	CHECK_EQ(g.calls, 1);
	CHECK_EQ(g.cpl.err, 0);
	CHECK_EQ(rec.sqe[0], NVME_CMD_WRITE);
	CHECK_EQ(get_le64(rec.sqe + 40), 64);
	CHECK_EQ(get_le32(rec.sqe + 48), 7u | 2u << 20);
	CHECK_EQ(get_le32(rec.sqe + 52), 3u << 16);
	CHECK_EQ(get_le64(rec.sqe + 24), (uint64_t)(uintptr_t)mr.addr + 4096);
	CHECK_EQ(get_le32(rec.sqe + 32) & 0xffffff, 4096);
	g.calls = 0;
	MUST(nvmeof_write_dspec(q, &ns, 64, 8, &mr, 0, 0, 0, 3, got_cb, &g));
	for (int i = 0; i < 100 && !g.calls; i++)
		nvmeof_queue_poll(q, 0);
	CHECK_EQ(g.calls, 1);
	CHECK_EQ(get_le32(rec.sqe + 48), 7u);
	CHECK_EQ(get_le32(rec.sqe + 52), 0);
	/* refused before anything is sent */
	int n = rec.n;
	CHECK_EQ(nvmeof_write_dspec(q, &ns, 0, 8, &mr, 0, 0, 0x10, 0, got_cb, &g), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "DTYPE") != NULL);
	CHECK_EQ(nvmeof_write_dspec(q, &ns, 0, 8, &mr, 0, 0x80, 2, 0, got_cb, &g), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_write_dspec(q, &ns, 0, 0, &mr, 0, 0, 2, 0, got_cb, &g), NVMEOF_EINVAL);
	CHECK_EQ(rec.n, n);
out:
	if (q)
		q_close(q);
	fw_free(fw);
	free(mr.addr);
}

/* The status through a queue: the command asks for what max holds, the
 * answer's descriptors come back, the namespace's count in nr; max is held
 * to NVMEOF_RUHS_MAX (the 4 KiB the queue reads it into). */
TEST(fdp_ruhs_fetches_descriptors_and_the_count)
{
	struct rec rec = {.nruhsd = 3};
	struct fake_wire *fw = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_ns ns = {.nsid = 5, .lba_size = 512, .lbads = 9};
	struct nvmeof_ruhs_desc d[NVMEOF_RUHS_MAX + 1];
	uint32_t nr = 0;
	MUST(open_q(&rec, &fw, &q));
	MUST(nvmeof_fdp_ruhs(q, &ns, NULL, 0, &nr, 5000));
	CHECK_EQ(nr, 3);
	CHECK_EQ(get_le32(rec.sqe + 4), 5);
	CHECK_EQ(get_le32(rec.sqe + 44), 16 / 4 - 1);
	MUST(nvmeof_fdp_ruhs(q, &ns, d, 3, &nr, 5000));
	CHECK_EQ(get_le32(rec.sqe + 44), (16 + 3 * 32) / 4 - 1);
	CHECK_EQ(nr, 3);
	CHECK_EQ(d[2].pid, 0x102);
	CHECK_EQ(d[2].ruhid, 2);
	CHECK_EQ(d[2].earutr, 1002);
	CHECK_EQ(d[2].ruamw, (1ull << 40) + 2);
	rec.nruhsd = 200;
	MUST(nvmeof_fdp_ruhs(q, &ns, d, NVMEOF_RUHS_MAX + 1, &nr, 5000));
	CHECK_EQ(get_le32(rec.sqe + 44), (16 + NVMEOF_RUHS_MAX * 32) / 4 - 1);
	CHECK_EQ(nr, 200);
	CHECK_EQ(d[NVMEOF_RUHS_MAX - 1].pid, 0x100 + NVMEOF_RUHS_MAX - 1);
out:
	if (q)
		q_close(q);
	fw_free(fw);
}

/* A target that counts more descriptors than it writes: the ones it did
 * not write read as zeroes, not as an earlier answer's bytes. */
TEST(fdp_ruhs_short_answer_reads_no_stale_bytes)
{
	struct rec rec = {.nruhsd = 4};
	struct fake_wire *fw = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 512, .lbads = 9};
	struct nvmeof_ruhs_desc d[4];
	uint32_t nr = 0;
	MUST(open_q(&rec, &fw, &q));
	MUST(nvmeof_fdp_ruhs(q, &ns, d, 4, &nr, 5000));
	CHECK_EQ(d[3].pid, 0x103);
	rec.written = 16 + 32; /* the header and one descriptor of the 4 it counts */
	MUST(nvmeof_fdp_ruhs(q, &ns, d, 4, &nr, 5000));
	CHECK_EQ(nr, 4);
	CHECK_EQ(d[0].pid, 0x100);
	CHECK_EQ(d[3].pid, 0);
	CHECK_EQ(d[3].ruamw, 0);
out:
	if (q)
		q_close(q);
	fw_free(fw);
}

/* Directive writes send lba_size bytes a block: a namespace with metadata
 * is refused before anything is sent, as Zone Append does. */
TEST(write_dspec_refuses_a_namespace_with_metadata)
{
	struct rec rec = {0};
	struct fake_wire *fw = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr mr = {.addr = calloc(1, 8192), .len = 8192, .lkey = 0x11, .rkey = 0xabc};
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 512, .lbads = 9, .ms = 8};
	struct got g = {0};
	MUST(open_q(&rec, &fw, &q));
	int n = rec.n;
	CHECK_EQ(nvmeof_write_dspec(q, &ns, 0, 8, &mr, 0, 0, NVMEOF_DTYPE_PLACEMENT, 1, got_cb, &g), NVMEOF_ENOTSUP);
	CHECK(strstr(nvmeof_errmsg(), "metadata") != NULL);
	CHECK_EQ(rec.n, n);
out:
	if (q)
		q_close(q);
	fw_free(fw);
	free(mr.addr);
}

/* A controller without FDP answers Invalid Command Opcode: the call says
 * so, naming the command. */
TEST(fdp_ruhs_on_a_namespace_without_fdp_names_the_status)
{
	struct rec rec = {.status = 0x01}; /* SCT 0, SC 01h */
	struct fake_wire *fw = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 512, .lbads = 9};
	struct nvmeof_ruhs_desc d[4];
	uint32_t nr = 0;
	MUST(open_q(&rec, &fw, &q));
	CHECK_EQ(nvmeof_fdp_ruhs(q, &ns, d, 4, &nr, 5000), NVMEOF_ENVME);
	CHECK(strstr(nvmeof_errmsg(), "I/O Management Receive") != NULL);
	CHECK(strstr(nvmeof_errmsg(), "Invalid Command Opcode") != NULL);
out:
	if (q)
		q_close(q);
	fw_free(fw);
}

int main(int argc, char **argv)
{
	static const struct test_case all[] = {
		T(write_dspec_encodes_dtype_and_dspec_where_the_spec_puts_them),
		T(ruhs_command_is_io_management_receive_mo_1),
		T(ruhs_parse_reads_the_spec_layout_and_never_past_the_buffer),
		T(write_dspec_goes_out_with_its_directive),
		T(fdp_ruhs_fetches_descriptors_and_the_count),
		T(fdp_ruhs_on_a_namespace_without_fdp_names_the_status),
		T(fdp_ruhs_short_answer_reads_no_stale_bytes),
		T(write_dspec_refuses_a_namespace_with_metadata),
	};
	return run_named_tests("unit-fdp", all, sizeof(all) / sizeof(all[0]), argc, argv);
}
