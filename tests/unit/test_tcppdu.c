/*
 * The NVMe/TCP PDU layer against the byte offsets of the NVMe/TCP Transport
 * Specification 1.0 (3.6.2: common header, ICReq, ICResp, CapsuleCmd,
 * CapsuleResp, H2CData, C2HData, R2T, C2HTermReq) and CRC32C against the
 * published vectors (RFC 3720, B.4). Expected bytes are written out from
 * those tables, not produced by our encoder.
 */
#include <sys/mman.h>

#include "check.h"
#include "protocol.h"
#include "tcp_crc32c.h"
#include "tcp_pdu.h"

/* ---- CRC32C ---- */

static const char nine[] = "123456789";

/* Every implementation this build has: what crc32c_update runs (ISA-L's
 * where built with it), then each of ours on its own, the fallbacks. */
static uint32_t update(uint32_t crc, const void *p, size_t n) { return crc32c_update(crc, p, n); }
static const struct {
	const char *name;
	uint32_t (*f)(uint32_t, const void *, size_t);
} impls[] = {
	{"crc32c_update", update},
#ifdef NVMEOF_HAVE_ISAL
	{"ISA-L", crc32c_isal},
#endif
	{"table", crc32c_sw},
	{"SSE4.2", crc32c_hw},
};
#define NIMPLS (sizeof(impls) / sizeof(impls[0]))
/* crc32c_hw only where the CPU has the instruction */
static bool runs_here(size_t i) { return impls[i].f != crc32c_hw || crc32c_have_hw(); }

/* The same pseudo-random bytes each run, from a seed. */
static void fill_lcg(uint8_t *buf, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
}

TEST(crc32c_known_vectors)
{
	for (size_t i = 0; i < NIMPLS; i++) {
		if (!runs_here(i))
			continue;
		uint32_t (*f)(uint32_t, const void *, size_t) = impls[i].f;
		uint8_t b[48];
		CHECK_EQ(crc32c_final(f(TCP_CRC32C_INIT, nine, 9)), 0xe3069283u);
		memset(b, 0, 32);
		CHECK_EQ(crc32c_final(f(TCP_CRC32C_INIT, b, 32)), 0x8a9136aau);
		memset(b, 0xff, 32);
		CHECK_EQ(crc32c_final(f(TCP_CRC32C_INIT, b, 32)), 0x62a8ab43u);
		for (int k = 0; k < 32; k++)
			b[k] = (uint8_t)k;
		CHECK_EQ(crc32c_final(f(TCP_CRC32C_INIT, b, 32)), 0x46dd794eu);
		for (int k = 0; k < 32; k++)
			b[k] = (uint8_t)(31 - k);
		CHECK_EQ(crc32c_final(f(TCP_CRC32C_INIT, b, 32)), 0x113fdb5cu);
		/* RFC 3720 B.4: an iSCSI Read command PDU */
		static const uint8_t rd[48] = {0x01, 0xc0, [16] = 0x14, [22] = 0x04, [27] = 0x14, [31] = 0x18, [32] = 0x28, [40] = 0x02};
		CHECK_EQ(crc32c_final(f(TCP_CRC32C_INIT, rd, 48)), 0xd9963a56u);
	}
	CHECK_EQ(crc32c(nine, 9), 0xe3069283u);
}

/* Each implementation against the table at every alignment of a 64-byte
 * line and lengths from 0 to 128 KiB (those of a 4 KiB and a 128 KiB
 * payload among them), whole and as a running CRC in three pieces, as a
 * digest over a PDU's parts. */
TEST(crc32c_every_implementation_agrees_with_the_table_at_every_alignment)
{
	static uint8_t buf[(128 << 10) + 64];
	fill_lcg(buf, sizeof(buf), 4242u);
	for (size_t i = 0; i < NIMPLS; i++) {
		if (!runs_here(i) || impls[i].f == crc32c_sw)
			continue;
		uint32_t (*f)(uint32_t, const void *, size_t) = impls[i].f;
		for (size_t off = 0; off < 64; off++)
			for (size_t n = 0; n <= 128 << 10; n = n < 300 ? n + 1 : n < 9000 ? n + 97 : n * 2 + 13) {
				uint32_t want = crc32c_sw(TCP_CRC32C_INIT, buf + off, n);
				if (f(TCP_CRC32C_INIT, buf + off, n) != want) {
					fprintf(stderr, "%s: offset %zu length %zu\n", impls[i].name, off, n);
					CHECK_EQ(f(TCP_CRC32C_INIT, buf + off, n), want);
				}
				size_t a = n / 3, b = n / 2;
				uint32_t c = f(f(f(TCP_CRC32C_INIT, buf + off, a), buf + off + a, b - a), buf + off + b, n - b);
				CHECK_EQ(c, want);
			}
		CHECK_EQ(f(TCP_CRC32C_INIT, buf, 4096), crc32c_sw(TCP_CRC32C_INIT, buf, 4096));
		CHECK_EQ(f(TCP_CRC32C_INIT, buf, 128 << 10), crc32c_sw(TCP_CRC32C_INIT, buf, 128 << 10));
	}
}

/* The build's choice, said by crc32c_impl (nvmeof --version prints it). */
TEST(crc32c_update_runs_what_the_build_chose)
{
#ifdef NVMEOF_HAVE_ISAL
	CHECK(!strcmp(crc32c_impl(), "ISA-L crc32_iscsi"));
#else
	CHECK(!strcmp(crc32c_impl(), crc32c_have_hw() ? "SSE4.2" : "table"));
#endif
}

#ifdef NVMEOF_HAVE_ISAL
/* crc32_iscsi's length is an int: past 2 GiB the buffer goes in pieces.
 * A mapping of 2 GiB + 4 KiB reads mostly the zero page; a few marked
 * bytes around the pieces' boundaries (1 GiB and 2 GiB) and at the end
 * catch a piece skipped, repeated or cut short. */
TEST(crc32c_isal_over_2gib)
{
	size_t n = (2ul << 30) + 4096;
	uint8_t *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		SKIP("no 2 GiB of address space here");
	/* the huge zero page where there is one: a thousand faults, not half a million */
	(void)madvise(p, n, MADV_HUGEPAGE);
	static const size_t marks[] = {0, (1ul << 30) - 1, 1ul << 30, (2ul << 30) - 1, 2ul << 30, (2ul << 30) + 4095};
	for (size_t k = 0; k < sizeof(marks) / sizeof(marks[0]); k++)
		p[marks[k]] = (uint8_t)(0x5a + k);
	uint32_t (*ref)(uint32_t, const void *, size_t) = crc32c_have_hw() ? crc32c_hw : crc32c_sw;
	CHECK_EQ(crc32c_isal(TCP_CRC32C_INIT, p, n), ref(TCP_CRC32C_INIT, p, n));
	CHECK_EQ(crc32c_update(TCP_CRC32C_INIT, p, n), ref(TCP_CRC32C_INIT, p, n));
	munmap(p, n);
}
#endif

TEST(crc32c_table_and_instruction_agree)
{
	static uint8_t buf[4096 + 16];
	fill_lcg(buf, sizeof(buf), 12345u);
	CHECK_EQ(crc32c_final(crc32c_sw(TCP_CRC32C_INIT, nine, 9)), 0xe3069283u);
	if (!crc32c_have_hw())
		SKIP("this CPU has no SSE4.2: only the table runs here");
	CHECK_EQ(crc32c_final(crc32c_hw(TCP_CRC32C_INIT, nine, 9)), 0xe3069283u);
	/* every alignment and length class, and a running CRC in pieces */
	for (size_t off = 0; off < 16; off++)
		for (size_t n = 0; n < 200; n += 7) {
			uint32_t s = crc32c_sw(TCP_CRC32C_INIT, buf + off, n);
			CHECK_EQ(crc32c_hw(TCP_CRC32C_INIT, buf + off, n), s);
		}
	uint32_t whole = crc32c_sw(TCP_CRC32C_INIT, buf, 4096);
	uint32_t parts = crc32c_hw(TCP_CRC32C_INIT, buf, 1000);
	parts = crc32c_sw(parts, buf + 1000, 3);
	parts = crc32c_hw(parts, buf + 1003, 4096 - 1003);
	CHECK_EQ(parts, whole);
	CHECK_EQ(crc32c_update(TCP_CRC32C_INIT, buf, 4096), whole);
}

/* The instruction's three interleaved chains and their joining: lengths
 * around each block of three (1360 bytes each), a 4 KiB and a 128 KiB
 * payload, every alignment, and a running CRC cut inside a block. */
TEST(crc32c_instruction_in_blocks_agrees_with_the_table)
{
	static uint8_t buf[(128 << 10) + 16];
	fill_lcg(buf, sizeof(buf), 777u);
	if (!crc32c_have_hw())
		SKIP("this CPU has no SSE4.2: only the table runs here");
	static const size_t lens[] = {4079, 4080, 4081, 4087, 4088, 4096, 8159, 8160, 8168, 12240, 65536, 128 << 10};
	for (size_t off = 0; off < 16; off += 3)
		for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
			CHECK_EQ(crc32c_hw(0x12345678u, buf + off, lens[k]), crc32c_sw(0x12345678u, buf + off, lens[k]));
	uint32_t whole = crc32c_sw(TCP_CRC32C_INIT, buf, 128 << 10);
	uint32_t parts = crc32c_hw(TCP_CRC32C_INIT, buf, 2000);
	parts = crc32c_hw(parts, buf + 2000, (128 << 10) - 2000);
	CHECK_EQ(parts, whole);
	CHECK_EQ(crc32c_final(crc32c_update(TCP_CRC32C_INIT, buf, 128 << 10)), crc32c(buf, 128 << 10));
}

/* ---- what the host sends ---- */

TEST(icreq_bytes)
{
	uint8_t p[128];
	tcp_icreq(p, true, false, 0);
	const uint8_t want[16] = {0x00, 0x00, 0x80, 0x00, 0x80, 0x00, 0x00, 0x00, /* ICReq, HLEN 128, PLEN 128 */
				  0x00, 0x00, 0x00, 0x01,                         /* PFV 0, HPDA 0, DGST: HDGST_ENABLE */
				  0x00, 0x00, 0x00, 0x00};                        /* MAXR2T 0 (one) */
	CHECK_MEM(p, want, 16);
	for (int i = 16; i < 128; i++)
		CHECK_EQ(p[i], 0);
}

static void icresp(uint8_t *p, uint16_t pfv, uint8_t cpda, uint8_t dgst, uint32_t maxdata)
{
	memset(p, 0, 128);
	p[0] = 0x01;
	p[2] = 0x80;
	p[4] = 0x80;
	put_le16(p + 8, pfv);
	p[10] = cpda;
	p[11] = dgst;
	put_le32(p + 12, maxdata);
}

TEST(icresp_accepted_and_refused)
{
	uint8_t p[128];
	struct tcp_neg n;
	const char *why = NULL;
	icresp(p, 0, 0, 3, 0x400000);
	CHECK_EQ(tcp_icresp_parse(p, 128, true, true, &n, &why), 0);
	CHECK(n.hdgst && n.ddgst);
	CHECK_EQ(n.maxh2cdata, 0x400000);
	CHECK_EQ(n.cpda, 0);
	icresp(p, 1, 0, 0, 0x400000);
	CHECK_EQ(tcp_icresp_parse(p, 128, false, false, &n, &why), -1);
	CHECK(why && strstr(why, "PFV"));
	icresp(p, 0, 0, 1, 0x400000); /* a header digest nobody asked for */
	CHECK_EQ(tcp_icresp_parse(p, 128, false, false, &n, &why), -1);
	CHECK(why && strstr(why, "DGST"));
	icresp(p, 0, 0, 0, 512);
	CHECK_EQ(tcp_icresp_parse(p, 128, false, false, &n, &why), -1);
	CHECK(why && strstr(why, "MAXH2CDATA"));
	icresp(p, 0, 0, 0, 0x400000);
	CHECK_EQ(tcp_icresp_parse(p, 127, false, false, &n, &why), -1);
}

TEST(capsule_cmd_without_and_with_data)
{
	uint8_t sqe[64], h[NVME_TCP_HDR_MAX];
	for (int i = 0; i < 64; i++)
		sqe[i] = (uint8_t)(0xa0 + i);
	struct tcp_neg n = {.maxh2cdata = 0x400000};
	CHECK_EQ(tcp_cmd_hdr(h, sqe, 0, &n), 72);
	const uint8_t plain[8] = {0x04, 0x00, 72, 0, 72, 0, 0, 0};
	CHECK_MEM(h, plain, 8);
	CHECK_MEM(h + 8, sqe, 64);
	/* 512 bytes in the capsule, both digests: data at 76, PLEN 76+512+4 */
	n.hdgst = n.ddgst = true;
	CHECK_EQ(tcp_cmd_hdr(h, sqe, 512, &n), 76);
	const uint8_t dg[8] = {0x04, 0x03, 72, 76, 0x50, 0x02, 0, 0};
	CHECK_MEM(h, dg, 8);
	CHECK_EQ(get_le32(h + 72), crc32c(h, 72));
	/* CPDA 7: data 32-byte aligned, so at 96, the padding zero */
	n.cpda = 7;
	n.ddgst = false;
	CHECK_EQ(tcp_cmd_hdr(h, sqe, 512, &n), 96);
	const uint8_t pad[8] = {0x04, 0x01, 72, 96, 0x60, 0x02, 0, 0};
	CHECK_MEM(h, pad, 8);
	for (int i = 76; i < 96; i++)
		CHECK_EQ(h[i], 0);
}

TEST(h2c_data_header)
{
	uint8_t h[NVME_TCP_HDR_MAX];
	struct tcp_neg n = {.maxh2cdata = 0x400000};
	CHECK_EQ(tcp_h2c_hdr(h, 0x1234, 0x5678, 0x1000, 0x2000, true, &n), 24);
	const uint8_t want[24] = {0x06, 0x04, 24, 24, 0x18, 0x20, 0, 0, 0x34, 0x12, 0x78, 0x56,
				  0x00, 0x10, 0, 0, 0x00, 0x20, 0, 0, 0, 0, 0, 0};
	CHECK_MEM(h, want, 24);
	n.hdgst = n.ddgst = true;
	CHECK_EQ(tcp_h2c_hdr(h, 1, 2, 0, 4096, false, &n), 28);
	CHECK_EQ(h[1], 0x03);
	CHECK_EQ(get_le32(h + 4), 28 + 4096 + 4);
	CHECK_EQ(get_le32(h + 24), crc32c(h, 24));
}

TEST(sgl_descriptors)
{
	uint8_t s[64];
	memset(s, 0xee, 64);
	tcp_sqe_sgl(s, 8192, false);
	const uint8_t tr[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x20, 0, 0, 0, 0, 0, 0x5a};
	CHECK_MEM(s + 24, tr, 16);
	tcp_sqe_sgl(s, 512, true);
	const uint8_t ic[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0, 0, 0, 0, 0, 0x01};
	CHECK_MEM(s + 24, ic, 16);
}

/* ---- what the controller sends ---- */

static uint8_t dbuf[8192];
static uint16_t want_cid = 7;
static uint8_t *dest(void *ctx, const struct tcp_pdu *p, const char **why)
{
	(void)ctx;
	if (p->cccid != want_cid) {
		*why = "C2HData: CCCID names no command in flight";
		return NULL;
	}
	if ((uint64_t)p->datao + p->datal > sizeof(dbuf)) {
		*why = "C2HData: data beyond the command's buffer";
		return NULL;
	}
	return dbuf + p->datao;
}

/* Feeds s in pieces of k bytes; returns the last result, counting PDUs. */
static int feed(struct tcp_rx *r, const uint8_t *s, size_t len, size_t k, int *pdus, const char **why)
{
	int rc = TCP_RX_MORE;
	*pdus = 0;
	while (len) {
		size_t room;
		uint8_t *to = tcp_rx_want(r, &room);
		if (room > k)
			room = k;
		if (room > len)
			room = len;
		memcpy(to, s, room);
		s += room;
		len -= room;
		rc = tcp_rx_advance(r, room, why);
		if (rc < 0)
			return rc;
		*pdus += rc == TCP_RX_PDU;
	}
	return rc;
}

static void rx_ready(struct tcp_rx *r, bool hd, bool dd)
{
	struct tcp_neg n = {.hdgst = hd, .ddgst = dd, .maxh2cdata = 0x400000};
	tcp_rx_init(r, dest, NULL);
	tcp_rx_negotiated(r, &n);
}

static size_t c2h(uint8_t *s, uint16_t cid, uint32_t off, uint32_t len, uint8_t flags, bool hd, bool dd,
		  uint8_t fill)
{
	uint32_t pdo = 24 + (hd ? 4 : 0);
	memset(s, 0, pdo);
	s[0] = 0x07;
	s[1] = (uint8_t)(flags | (hd ? 1 : 0) | (dd ? 2 : 0));
	s[2] = 24;
	s[3] = (uint8_t)pdo;
	put_le32(s + 4, pdo + len + (dd ? 4 : 0));
	put_le16(s + 8, cid);
	put_le32(s + 12, off);
	put_le32(s + 16, len);
	if (hd)
		put_le32(s + 24, crc32c(s, 24));
	memset(s + pdo, fill, len);
	if (dd)
		put_le32(s + pdo + len, crc32c(s + pdo, len));
	return pdo + len + (dd ? 4 : 0);
}

TEST(rx_capsule_resp_byte_by_byte)
{
	struct tcp_rx r;
	rx_ready(&r, true, false);
	uint8_t s[28] = {0x05, 0x01, 24, 0, 28, 0, 0, 0, [8 + 12] = 0x07, 0x00};
	put_le32(s + 24, crc32c(s, 24));
	const char *why = NULL;
	int pdus;
	CHECK_EQ(feed(&r, s, 28, 1, &pdus, &why), TCP_RX_PDU);
	CHECK_EQ(pdus, 1);
	CHECK_EQ(r.pdu.type, NVME_TCP_RSP);
	CHECK_EQ(r.pdu.cccid, 7);
	CHECK_EQ(get_le16(r.pdu.cqe + 12), 7);
	s[8] ^= 1; /* one header bit flipped in flight */
	CHECK(feed(&r, s, 28, 28, &pdus, &why) < 0);
	CHECK(why && strstr(why, "header digest"));
}

TEST(rx_c2h_data_lands_in_the_buffer_with_digests)
{
	static uint8_t s[3 * 5000];
	struct tcp_rx r;
	const char *why = NULL;
	int pdus;
	for (int hd = 0; hd < 2; hd++)
		for (int dd = 0; dd < 2; dd++) {
			rx_ready(&r, hd, dd);
			memset(dbuf, 0, sizeof(dbuf));
			size_t n = c2h(s, 7, 0, 4096, 0, hd, dd, 0x11);
			n += c2h(s + n, 7, 4096, 4096, NVME_TCP_F_DATA_LAST | NVME_TCP_F_DATA_SUCCESS, hd, dd, 0x22);
			CHECK_EQ(feed(&r, s, n, 1000, &pdus, &why), TCP_RX_PDU);
			CHECK_EQ(pdus, 2);
			CHECK_EQ(r.pdu.flags & NVME_TCP_F_DATA_SUCCESS, NVME_TCP_F_DATA_SUCCESS);
			CHECK(dbuf[0] == 0x11 && dbuf[4095] == 0x11 && dbuf[4096] == 0x22 && dbuf[8191] == 0x22);
		}
	/* one data bit flipped: the data digest catches it, and says so on
	 * the PDU (its command fails); the framing held, so the stream goes
	 * on and the next PDU, whole, is taken as it is */
	rx_ready(&r, false, true);
	size_t n = c2h(s, 7, 0, 4096, 0, false, true, 0x33);
	s[100] ^= 0x40;
	CHECK_EQ(feed(&r, s, n, 4096, &pdus, &why), TCP_RX_PDU);
	CHECK_EQ(pdus, 1);
	CHECK(r.pdu.ddgst_bad);
	n = c2h(s, 7, 4096, 4096, NVME_TCP_F_DATA_LAST, false, true, 0x44);
	CHECK_EQ(feed(&r, s, n, 4096, &pdus, &why), TCP_RX_PDU);
	CHECK_EQ(pdus, 1);
	CHECK(!r.pdu.ddgst_bad);
	CHECK(dbuf[4096] == 0x44 && dbuf[8191] == 0x44);
}

TEST(rx_refuses_what_no_controller_may_send)
{
	struct tcp_rx r;
	const char *why = NULL;
	int pdus;
	uint8_t s[200];
	/* data beyond the buffer, and for another command: refused before a byte lands */
	rx_ready(&r, false, false);
	memset(dbuf, 0, sizeof(dbuf));
	size_t n = c2h(s, 7, 8192 - 16, 32, 0, false, false, 0x44);
	CHECK(feed(&r, s, n, n, &pdus, &why) < 0);
	CHECK(why && strstr(why, "beyond"));
	CHECK_EQ(dbuf[8191], 0);
	rx_ready(&r, false, false);
	n = c2h(s, 9, 0, 32, 0, false, false, 0x44);
	CHECK(feed(&r, s, n, n, &pdus, &why) < 0);
	CHECK(why && strstr(why, "CCCID"));
	/* SUCCESS without LAST_PDU */
	rx_ready(&r, false, false);
	n = c2h(s, 7, 0, 32, NVME_TCP_F_DATA_SUCCESS, false, false, 0x44);
	CHECK(feed(&r, s, n, n, &pdus, &why) < 0);
	CHECK(why && strstr(why, "SUCCESS"));
	/* DATAL that disagrees with PLEN */
	rx_ready(&r, false, false);
	n = c2h(s, 7, 0, 32, 0, false, false, 0x44);
	put_le32(s + 16, 4000);
	CHECK(feed(&r, s, n, n, &pdus, &why) < 0);
	CHECK(why && strstr(why, "DATAL"));
	/* a CapsuleCmd from the controller */
	rx_ready(&r, false, false);
	uint8_t cmd[24] = {0x04, 0, 72, 0, 72, 0, 0, 0};
	CHECK(feed(&r, cmd, 24, 24, &pdus, &why) < 0);
	CHECK(why && strstr(why, "never sends"));
	/* a header digest flag the connection did not negotiate */
	rx_ready(&r, false, false);
	uint8_t rsp[24] = {0x05, 0x01, 24, 0, 28, 0, 0, 0};
	CHECK(feed(&r, rsp, 24, 24, &pdus, &why) < 0);
	CHECK(why && strstr(why, "HDGSTF"));
	/* a CapsuleResp before the ICResp */
	tcp_rx_init(&r, dest, NULL);
	uint8_t rsp0[8] = {0x05, 0x00, 24, 0, 24, 0, 0, 0};
	CHECK(feed(&r, rsp0, 8, 8, &pdus, &why) < 0);
	CHECK(why && strstr(why, "before the ICResp"));
	/* PDO inside the header */
	rx_ready(&r, false, false);
	n = c2h(s, 7, 0, 32, 0, false, false, 0x44);
	s[3] = 8;
	CHECK(feed(&r, s, n, n, &pdus, &why) < 0);
	CHECK(why && strstr(why, "PDO"));
}

TEST(rx_r2t_term_req_and_icresp)
{
	struct tcp_rx r;
	const char *why = NULL;
	int pdus;
	rx_ready(&r, false, false);
	uint8_t r2t[24] = {0x09, 0, 24, 0, 24, 0, 0, 0, 0x07, 0x00, 0x03, 0x00, 0x00, 0x10, 0, 0, 0x00, 0x20, 0, 0};
	CHECK_EQ(feed(&r, r2t, 24, 24, &pdus, &why), TCP_RX_PDU);
	CHECK(r.pdu.type == NVME_TCP_R2T && r.pdu.cccid == 7 && r.pdu.ttag == 3);
	CHECK(r.pdu.datao == 0x1000 && r.pdu.datal == 0x2000);
	put_le32(r2t + 16, 0);
	CHECK(feed(&r, r2t, 24, 24, &pdus, &why) < 0);
	CHECK(why && strstr(why, "R2TL"));
	/* a C2HTermReq carrying 8 bytes of the header in error, on a
	 * connection with header digests: the receiver's first read of 28
	 * bytes takes 4 of its data */
	rx_ready(&r, true, false);
	uint8_t term[32] = {0x03, 0, 24, 0, 32, 0, 0, 0, 0x02, 0x00, 0x05, 0, 0, 0, [24] = 0xde, 0xad};
	CHECK_EQ(feed(&r, term, 32, 5, &pdus, &why), TCP_RX_PDU);
	CHECK(r.pdu.type == NVME_TCP_C2H_TERM && r.pdu.fes == 2 && r.pdu.fei == 5 && r.pdu.datal == 8);
	CHECK(r.term[0] == 0xde && r.term[1] == 0xad);
	CHECK_STR(tcp_fes_name(r.pdu.fes), "PDU Sequence Error");
	/* one without data, with header digests on: 24 bytes in all, and
	 * nothing after it (the controller closes): no digest is waited for */
	for (size_t k = 1; k <= 24; k += 23) {
		rx_ready(&r, true, false);
		uint8_t t24[24] = {0x03, 0, 24, 0, 24, 0, 0, 0, 0x03, 0x00, 0x09, 0, 0, 0};
		CHECK_EQ(feed(&r, t24, 24, k, &pdus, &why), TCP_RX_PDU);
		CHECK(r.pdu.type == NVME_TCP_C2H_TERM && r.pdu.fes == 3 && r.pdu.fei == 9 && r.pdu.datal == 0);
	}
	/* the longest a C2HTermReq may be is 152 bytes in all (24 of header,
	 * 128 of the header in error, as the kernel's host bounds it); one
	 * byte more is the controller's error, not a TermReq to read */
	for (uint32_t plen = 152; plen <= 153; plen++) {
		rx_ready(&r, false, false);
		uint8_t big[160] = {0x03, 0, 24, 0, 0, 0, 0, 0, 0x01, 0x00, 0x04, 0, 0, 0};
		put_le32(big + 4, plen);
		why = NULL;
		int rc = feed(&r, big, plen, plen, &pdus, &why);
		if (plen == 152) {
			CHECK_EQ(rc, TCP_RX_PDU);
			CHECK_EQ(r.pdu.datal, 128);
		} else {
			CHECK(rc < 0);
			CHECK(why && strstr(why, "C2HTermReq: PLEN out of range"));
		}
	}
	/* ICResp: first, and only then */
	tcp_rx_init(&r, dest, NULL);
	uint8_t ic[128];
	icresp(ic, 0, 0, 0, 0x400000);
	CHECK_EQ(feed(&r, ic, 128, 128, &pdus, &why), TCP_RX_PDU);
	CHECK_EQ(r.pdu.type, NVME_TCP_ICRESP);
	struct tcp_neg n;
	CHECK_EQ(tcp_icresp_parse(r.hdr, 128, false, false, &n, &why), 0);
	tcp_rx_negotiated(&r, &n);
	CHECK(feed(&r, ic, 128, 128, &pdus, &why) < 0);
	CHECK(why && strstr(why, "unexpected"));
}

int main(void)
{
	static const struct test_case t[] = {
		T(crc32c_known_vectors), T(crc32c_table_and_instruction_agree),
		T(crc32c_instruction_in_blocks_agrees_with_the_table),
		T(crc32c_every_implementation_agrees_with_the_table_at_every_alignment),
		T(crc32c_update_runs_what_the_build_chose),
#ifdef NVMEOF_HAVE_ISAL
		T(crc32c_isal_over_2gib),
#endif
		T(icreq_bytes),
		T(icresp_accepted_and_refused), T(capsule_cmd_without_and_with_data), T(h2c_data_header),
		T(sgl_descriptors), T(rx_capsule_resp_byte_by_byte), T(rx_c2h_data_lands_in_the_buffer_with_digests),
		T(rx_refuses_what_no_controller_may_send), T(rx_r2t_term_req_and_icresp),
	};
	return run_tests("tcppdu", t, sizeof(t) / sizeof(t[0]));
}
