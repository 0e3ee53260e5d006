/*
 * DH-HMAC-CHAP secrets in the representation nvme-cli and the kernel use,
 * DHHC-1:XX:<base64>:, where the base64 carries the key and its CRC-32
 * (little-endian) and XX says how the key is transformed with an NQN
 * before use (NVMe Base 2.x 8.13.5.8). Also the names of the protocol's
 * identifiers, for messages. No crypto here: the transformation is in
 * auth_crypto.c.
 */
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "auth.h"
#include "internal.h"

const char *auth_hash_name(uint8_t hashid)
{
	switch (hashid) {
	case AUTH_HASH_SHA256: return "SHA-256";
	case AUTH_HASH_SHA384: return "SHA-384";
	case AUTH_HASH_SHA512: return "SHA-512";
	default: return "unknown";
	}
}

size_t auth_hash_len(uint8_t hashid)
{
	switch (hashid) {
	case AUTH_HASH_SHA256: return 32;
	case AUTH_HASH_SHA384: return 48;
	case AUTH_HASH_SHA512: return 64;
	default: return 0;
	}
}

const char *auth_dhgroup_name(uint8_t dhgid)
{
	static const char *const n[] = {"null", "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192"};
	return dhgid < sizeof(n) / sizeof(n[0]) ? n[dhgid] : "unknown";
}

size_t auth_dh_len(uint8_t dhgid)
{
	static const size_t bits[] = {0, 2048, 3072, 4096, 6144, 8192};
	return dhgid < sizeof(bits) / sizeof(bits[0]) ? bits[dhgid] / 8 : 0;
}

const char *auth_failure_name(uint8_t exp)
{
	switch (exp) {
	case AUTH_FAIL_FAILED: return "Authentication failed";
	case AUTH_FAIL_NOT_USABLE: return "Authentication protocol not usable";
	case AUTH_FAIL_CONCAT_MISMATCH: return "Secure channel concatenation mismatch";
	case AUTH_FAIL_HASH_UNUSABLE: return "Hash function not usable";
	case AUTH_FAIL_DHGROUP_UNUSABLE: return "DH group not usable";
	case AUTH_FAIL_INCORRECT_PAYLOAD: return "Incorrect payload";
	case AUTH_FAIL_INCORRECT_MESSAGE: return "Incorrect protocol message";
	default: return "unknown reason";
	}
}

/* Bitwise, no table: a secret is checked once per connect. */
uint32_t auth_crc32(const uint8_t *p, size_t n)
{
	uint32_t crc = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return ~crc;
}

bool auth_crc32_trails(const uint8_t *raw, size_t n)
{
	uint32_t want = (uint32_t)raw[n] | (uint32_t)raw[n + 1] << 8 | (uint32_t)raw[n + 2] << 16 |
			(uint32_t)raw[n + 3] << 24;
	return auth_crc32(raw, n) == want;
}

static int b64_val(char ch)
{
	if (ch >= 'A' && ch <= 'Z') return ch - 'A';
	if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9') return ch - '0' + 52;
	if (ch == '+') return 62;
	if (ch == '/') return 63;
	return -1;
}

/* Strict RFC 4648 base64 with padding, as the kernel's base64_decode reads
 * it: n a multiple of 4, '=' only at the end. -1 when malformed or longer
 * than cap. */
int auth_b64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
	size_t o = 0;
	if (n % 4)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		int v[4], pad = 0;
		for (int k = 0; k < 4; k++) {
			if (s[i + k] == '=' && i + 4 == n && k >= 2) {
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad || (v[k] = b64_val(s[i + k])) < 0)
				return -1;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		if (pad && (w & ((1u << (8 * pad)) - 1))) /* leftover bits, which the kernel refuses too */
			return -1;
		for (int k = 0; k < 3 - pad; k++) {
			if (o >= cap)
				return -1;
			out[o++] = (uint8_t)(w >> (16 - 8 * k));
		}
	}
	return (int)o;
}

int auth_key_parse(const char *secret, const char *what, struct auth_key *out)
{
	static const char prefix[] = "DHHC-1:";
	uint8_t raw[AUTH_KEY_MAX + 4 + 3]; /* room for a too-long key to be told apart */
	memset(out, 0, sizeof(*out));
	if (!secret || strncmp(secret, prefix, sizeof(prefix) - 1))
		return nvmeof_err(NVMEOF_EINVAL, "%s: not a DH-HMAC-CHAP secret (DHHC-1:XX:<base64>:)", what);
	const char *p = secret + sizeof(prefix) - 1;
	if (p[0] != '0' || p[1] < '0' || p[1] > '9' || p[2] != ':')
		return nvmeof_err(NVMEOF_EINVAL, "%s: the transformation after DHHC-1: must be 00 to 03", what);
	if (p[1] > '3')
		return nvmeof_err(NVMEOF_EINVAL, "%s: unknown transformation 0%c (00 to 03)", what, p[1]);
	uint8_t xf = (uint8_t)(p[1] - '0');
	p += 3;
	size_t n = strlen(p);
	if (n && p[n - 1] == ':') /* the closing colon, which nvme-cli writes */
		n--;
	if (memchr(p, ':', n))
		return nvmeof_err(NVMEOF_EINVAL, "%s: more than one field after the transformation", what);
	int len = auth_b64_decode(p, n, raw, sizeof(raw));
	if (len < 0) {
		auth_cleanse(raw, sizeof(raw));
		return nvmeof_err(NVMEOF_EINVAL, "%s: the key is not valid base64 of 36, 52 or 68 bytes", what);
	}
	if (len != 36 && len != 52 && len != 68) {
		auth_cleanse(raw, sizeof(raw));
		return nvmeof_err(NVMEOF_EINVAL, "%s: a key of %d bytes; 32, 48 or 64 are allowed", what,
				  len >= 4 ? len - 4 : 0);
	}
	len -= 4;
	/* the transformation's hash makes a key of its own length: nvme-cli
	 * makes no other, and a mismatch is a secret put together by hand */
	if (xf && (size_t)len != auth_hash_len(xf)) {
		auth_cleanse(raw, sizeof(raw));
		return nvmeof_err(NVMEOF_EINVAL, "%s: a key of %d bytes with transformation 0%u (%s), which needs "
				  "%zu bytes", what, len, xf, auth_hash_name(xf), auth_hash_len(xf));
	}
	if (!auth_crc32_trails(raw, (size_t)len)) {
		auth_cleanse(raw, sizeof(raw));
		return nvmeof_err(NVMEOF_EINVAL, "%s: CRC-32 mismatch (a mistyped or truncated secret)", what);
	}
	memcpy(out->key, raw, (size_t)len);
	out->len = (uint8_t)len;
	out->transform = xf;
	auth_cleanse(raw, sizeof(raw));
	return 0;
}

void auth_key_clear(struct auth_key *k)
{
	if (k)
		auth_cleanse(k, sizeof(*k));
}

int auth_offer_parse(const char *list, bool dh, uint32_t *mask)
{
	static const char *const hashes[] = {NULL, "sha256", "sha384", "sha512"};
	static const char *const groups[] = {"null", "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192"};
	const char *const *names = dh ? groups : hashes;
	size_t n = dh ? 6 : 4;
	const char *what = dh ? "dhchap_dhgroups" : "dhchap_hashes";
	*mask = dh ? AUTH_DHGROUPS_ALL : AUTH_HASHES_ALL;
	if (!list || !*list)
		return 0;
	uint32_t m = 0;
	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ",");
		size_t i;
		for (i = 0; i < n; i++)
			if (names[i] && strlen(names[i]) == l && !strncasecmp(p, names[i], l))
				break;
		if (i == n) {
			/* echoed only when it could be a mistyped name: short and
			 * of a name's characters. Anything else may be a secret
			 * given in the wrong option, and is named, not shown. */
			bool shown = l && l <= 9;
			for (size_t k = 0; k < l && shown; k++)
				shown = (p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z') ||
					(p[k] >= '0' && p[k] <= '9');
			const char *names_all = dh ? "null, ffdhe2048, ffdhe3072, ffdhe4096, ffdhe6144, ffdhe8192"
						   : "sha256, sha384, sha512";
			if (!shown)
				return nvmeof_err(NVMEOF_EINVAL, "connect: %s: a value (not shown) that is none of %s",
						  what, names_all);
			return nvmeof_err(NVMEOF_EINVAL, "connect: %s: '%.*s' is none of %s", what, (int)l, p,
					  names_all);
		}
		m |= 1u << i;
		p += l;
		if (*p == ',')
			p++;
	}
	*mask = m;
	return 0;
}

/* Whole pages, so that MADV_DONTDUMP covers exactly the secret's. */
static size_t secret_span(size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t ps = pg > 0 ? (size_t)pg : 4096;
	return (n + ps - 1) / ps * ps;
}

void *auth_secret_alloc(size_t n)
{
	void *p = mmap(NULL, secret_span(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_DONTDUMP
	(void)madvise(p, secret_span(n), MADV_DONTDUMP); /* best effort: a kernel without it dumps it */
#endif
	return p;
}

void auth_secret_free(void *p, size_t n)
{
	if (!p)
		return;
	auth_cleanse(p, n);
	munmap(p, secret_span(n));
}
