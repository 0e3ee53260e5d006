/* CRC32C, see tcp_crc32c.h. The table is the reflected polynomial
 * 0x82f63b78 (RFC 3720, B.4), built once at load. */
#include "tcp_crc32c.h"

#include <limits.h>
#include <string.h>

#ifdef NVMEOF_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

static uint32_t table[8][256];

static void crc32c_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
		table[0][i] = c;
	}
	/* slicing by 8: table[k][i] is i's CRC followed by k zero bytes */
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			table[k][i] = (table[k - 1][i] >> 8) ^ table[0][table[k - 1][i] & 0xff];
}

uint32_t crc32c_sw(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n && ((uintptr_t)b & 7)) {
		crc = (crc >> 8) ^ table[0][(crc ^ *b++) & 0xff];
		n--;
	}
	while (n >= 8) {
		uint32_t lo, hi;
		memcpy(&lo, b, 4);
		memcpy(&hi, b + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		lo = __builtin_bswap32(lo);
		hi = __builtin_bswap32(hi);
#endif
		lo ^= crc;
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
		      table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		      table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		b += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ table[0][(crc ^ *b++) & 0xff];
	return crc;
}

#if defined(__x86_64__)
/* The instruction takes 3 cycles and can start one every cycle: one chain
 * runs at a third of its speed. Blocks of 3 x BLOCK bytes run as three
 * chains, joined by the CRC's linearity: the register after A then B is
 * A's register shifted over |B| zero bytes, xor B's from 0. A shift over
 * BLOCK or 2 x BLOCK bytes is a 32x32 bit matrix, applied a byte at a time
 * from tables. 3 x 1360 bytes fit a 4 KiB payload. */
#define BLOCK 1360u
static uint32_t shift1[4][256], shift2[4][256];

static uint32_t shift(uint32_t (*t)[256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

/* t[k][b]: the shift of byte b at bit 8k, from the shifts of single bits */
static void shift_tables(uint32_t (*t)[256], const uint32_t bit[32])
{
	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t v = 0;
			for (int j = 0; j < 8; j++)
				if (b >> j & 1)
					v ^= bit[8 * k + j];
			t[k][b] = v;
		}
}

static void crc32c_shift_init(void)
{
	static const uint8_t zeros[BLOCK];
	uint32_t b1[32], b2[32];
	for (int i = 0; i < 32; i++)
		b1[i] = crc32c_sw(1u << i, zeros, BLOCK);
	shift_tables(shift1, b1);
	for (int i = 0; i < 32; i++)
		b2[i] = shift(shift1, b1[i]);
	shift_tables(shift2, b2);
}

/* Only this function may use SSE4.2: the rest of the library runs on any
 * x86-64, and this one only where crc32c_have_hw said yes. */
__attribute__((target("sse4.2"))) uint32_t crc32c_hw(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t c = crc;
	while (n && ((uintptr_t)b & 7)) {
		c = _mm_crc32_u8((uint32_t)c, *b++);
		n--;
	}
	while (n >= 3 * BLOCK) {
		uint64_t c1 = 0, c2 = 0;
		for (size_t i = 0; i < BLOCK; i += 8) {
			uint64_t v0, v1, v2;
			memcpy(&v0, b + i, 8);
			memcpy(&v1, b + BLOCK + i, 8);
			memcpy(&v2, b + 2 * BLOCK + i, 8);
			c = _mm_crc32_u64(c, v0);
			c1 = _mm_crc32_u64(c1, v1);
			c2 = _mm_crc32_u64(c2, v2);
		}
		c = shift(shift2, (uint32_t)c) ^ shift(shift1, (uint32_t)c1) ^ (uint32_t)c2;
		b += 3 * BLOCK;
		n -= 3 * BLOCK;
	}
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, b, 8);
		c = _mm_crc32_u64(c, v);
		b += 8;
		n -= 8;
	}
	while (n--)
		c = _mm_crc32_u8((uint32_t)c, *b++);
	return (uint32_t)c;
}

int crc32c_have_hw(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}
#else
uint32_t crc32c_hw(uint32_t crc, const void *p, size_t n) { return crc32c_sw(crc, p, n); }
int crc32c_have_hw(void) { return 0; }
#endif

#ifdef NVMEOF_HAVE_ISAL
/* crc32_iscsi takes and returns the raw register, as crc32c_update (SPDK
 * relies on it too), and picks its code by CPU itself. Its length is an
 * int: a longer buffer goes in pieces of 1 GiB. */
uint32_t crc32c_isal(uint32_t crc, const void *p, size_t n)
{
	unsigned char *b = (unsigned char *)p;
	while (n > INT_MAX) {
		crc = crc32_iscsi(b, 1 << 30, crc);
		b += 1u << 30;
		n -= 1u << 30;
	}
	return crc32_iscsi(b, (int)n, crc);
}
#endif

static uint32_t (*impl)(uint32_t, const void *, size_t);

/* At load, before any thread of the program's can call in. */
__attribute__((constructor)) static void crc32c_init(void)
{
	crc32c_table_init();
#if defined(__x86_64__)
	crc32c_shift_init();
#endif
#ifdef NVMEOF_HAVE_ISAL
	impl = crc32c_isal;
#else
	impl = crc32c_have_hw() ? crc32c_hw : crc32c_sw;
#endif
}

const char *crc32c_impl(void)
{
#ifdef NVMEOF_HAVE_ISAL
	if (impl == crc32c_isal)
		return "ISA-L crc32_iscsi";
#endif
	return impl == crc32c_hw ? "SSE4.2" : "table";
}

uint32_t crc32c_update(uint32_t crc, const void *p, size_t n) { return impl(crc, p, n); }
