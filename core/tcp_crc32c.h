/* CRC32C (Castagnoli), the header and data digests of NVMe/TCP: ISA-L's
 * crc32_iscsi where the library was built with it (NVMEOF_HAVE_ISAL: the
 * Makefile finds libisal-dev), else the SSE4.2 instruction where the CPU
 * has it (found at run time: the library is never built for one CPU), a
 * table otherwise. Same results every way. */
#ifndef NVMEOF_TCP_CRC32C_H
#define NVMEOF_TCP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* A running CRC: start with TCP_CRC32C_INIT, feed crc32c_update, and the
 * digest on the wire is crc32c_final of it (little-endian). */
#define TCP_CRC32C_INIT 0xffffffffu
uint32_t crc32c_update(uint32_t crc, const void *p, size_t n);
static inline uint32_t crc32c_final(uint32_t crc) { return ~crc; }
static inline uint32_t crc32c(const void *p, size_t n) { return crc32c_final(crc32c_update(TCP_CRC32C_INIT, p, n)); }
/* Each implementation on its own, for the tests that hold them equal;
 * crc32c_hw only where crc32c_have_hw says the CPU has the instruction. */
uint32_t crc32c_sw(uint32_t crc, const void *p, size_t n);
uint32_t crc32c_hw(uint32_t crc, const void *p, size_t n);
int crc32c_have_hw(void);
#ifdef NVMEOF_HAVE_ISAL
uint32_t crc32c_isal(uint32_t crc, const void *p, size_t n);
#endif
/* What crc32c_update runs: "ISA-L crc32_iscsi", "SSE4.2" or "table". */
const char *crc32c_impl(void);

#endif
