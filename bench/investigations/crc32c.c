/* CRC32C: ours (core/tcp_crc32c.c, three chains of the SSE4.2 instruction)
 * against ISA-L's crc32_iscsi (the library SPDK uses), natively on one CPU.
 * Not part of the build: bench/investigations/crc32c.sh compiles it with
 * the library's source file and -lisal. Both are fed and return the raw
 * register (start 0xffffffff, the digest is its complement): ISA-L's
 * crc32_iscsi neither inverts its seed nor its result, as SPDK's
 * spdk_crc32c_update relies on. */
#include <isa-l/crc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tcp_crc32c.h"

static uint32_t isal(uint32_t crc, const void *p, size_t n) { return crc32_iscsi((unsigned char *)p, (int)n, crc); }
/* What crc32_iscsi dispatches to on a CPU without AVX-512's VPCLMULQDQ
 * (crc32_iscsi_by16_10 where it has it): the instruction on three chains
 * joined by PCLMULQDQ. Exported by libisal, not declared in its header. */
unsigned int crc32_iscsi_01(unsigned char *buffer, int len, unsigned int init_crc);
static uint32_t isal01(uint32_t crc, const void *p, size_t n) { return crc32_iscsi_01((unsigned char *)p, (int)n, crc); }

static int fails;
static void check(const char *what, const void *p, size_t n, uint32_t want)
{
	uint32_t a = crc32c_final(crc32c_update(TCP_CRC32C_INIT, p, n));
	uint32_t b = crc32c_final(isal(TCP_CRC32C_INIT, p, n));
	uint32_t c = crc32c_final(isal01(TCP_CRC32C_INIT, p, n));
	if (a != want || b != want || c != want) {
		printf("MISMATCH %s: ours %08x isa-l %08x isa-l _01 %08x want %08x\n", what, a, b, c, want);
		fails++;
	}
}

/* tests/unit/test_tcppdu.c's vectors, then random buffers at every
 * alignment and length class, whole and in pieces */
static void vectors(uint8_t *rnd, size_t max)
{
	uint8_t b[48];
	check("123456789", "123456789", 9, 0xe3069283u);
	memset(b, 0, 32);
	check("32 zeros", b, 32, 0x8a9136aau);
	memset(b, 0xff, 32);
	check("32 x ff", b, 32, 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	check("0..31", b, 32, 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	check("31..0", b, 32, 0x113fdb5cu);
	static const uint8_t rd[48] = {0x01, 0xc0, [16] = 0x14, [22] = 0x04, [27] = 0x14, [31] = 0x18, [32] = 0x28, [40] = 0x02};
	check("RFC 3720 B.4 read", rd, 48, 0xd9963a56u);
	for (size_t off = 0; off < 64; off++)
		for (size_t n = 0; n + off <= max; n = n < 9000 ? n + 13 : n * 3 + 1) {
			uint32_t want = crc32c_final(crc32c_sw(TCP_CRC32C_INIT, rnd + off, n));
			check("random", rnd + off, n, want);
			/* a running CRC in two pieces, as a digest over a PDU's parts */
			size_t h = n / 3;
			uint32_t c = isal(isal(TCP_CRC32C_INIT, rnd + off, h), rnd + off + h, n - h);
			if (crc32c_final(c) != want) {
				printf("MISMATCH isa-l in pieces off %zu n %zu\n", off, n);
				fails++;
			}
		}
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static volatile uint32_t sink;

static double ns_per_call(uint32_t (*f)(uint32_t, const void *, size_t), const uint8_t *p, size_t n, long iters)
{
	uint32_t c = 0;
	double t0 = now_ns();
	for (long i = 0; i < iters; i++)
		c ^= f(TCP_CRC32C_INIT, p, n);
	double t = now_ns() - t0;
	sink = c;
	return t / iters;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

#define REPS 5

static uint32_t (*const fn[3])(uint32_t, const void *, size_t) = {crc32c_update, isal, isal01};

int main(void)
{
	static const size_t sizes[] = {512, 4096, 128 << 10, 1 << 20};
	size_t max = 1 << 20;
	uint8_t *buf = aligned_alloc(4096, max + 4096);
	uint32_t seed = 12345;
	for (size_t i = 0; i < max + 4096; i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
	vectors(buf, max);
	printf("vectors: %s (ours %s)\n", fails ? "MISMATCH" : "ours and ISA-L agree", crc32c_have_hw() ? "SSE4.2 three chains" : "table");
	if (fails)
		return 1;
	printf("%-8s %10s %10s %10s %9s %9s %9s %8s %8s %8s %8s %8s\n", "size", "ours ns", "isal ns", "isal01 ns", "ours GB/s", "isal GB/s", "i01 GB/s",
	       "ours/isal", "ours/i01", "spread o", "spread i", "spr i01");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		long iters = (long)(1e9 / n); /* about 1 GB hashed per measurement */
		double t[3][REPS], m[3], spread[3];
		for (int k = 0; k < 3; k++) /* warm up */
			ns_per_call(fn[k], buf, n, iters / 10 + 1);
		for (int r = 0; r < REPS; r++)
			for (int j = 0; j < 3; j++) { /* alternate: each repetition starts with the next function */
				int k = (r + j) % 3;
				t[k][r] = ns_per_call(fn[k], buf, n, iters);
			}
		for (int k = 0; k < 3; k++) {
			qsort(t[k], REPS, sizeof(double), cmp);
			m[k] = t[k][REPS / 2];
			spread[k] = 100 * (t[k][REPS - 1] - t[k][0]) / m[k];
		}
		printf("%-8zu %10.1f %10.1f %10.1f %9.2f %9.2f %9.2f %8.2f %8.2f %7.0f%% %7.0f%% %7.0f%%\n", n, m[0], m[1], m[2], n / m[0], n / m[1], n / m[2],
		       m[0] / m[1], m[0] / m[2], spread[0], spread[1], spread[2]);
	}
	return 0;
}
