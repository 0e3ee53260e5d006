/* DHHC-1 secret strings and the offer lists, from anyone: the parser must
 * stay within the string, accept only what nvme-cli makes (a key of 32, 48
 * or 64 bytes, of its transformation hash's length, whose CRC-32 matches,
 * in canonical base64), and never put any of the secret into its message. */
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* key || CRC as strict base64, into out */
static void encode(const uint8_t *in, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t w = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? in[i + 2] : 0);
		out[o++] = b64[w >> 18 & 63];
		out[o++] = b64[w >> 12 & 63];
		out[o++] = i + 1 < n ? b64[w >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? b64[w & 63] : '=';
	}
	out[o] = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1); /* exactly the string: ASan sees any overread */
	memcpy(s, data, size);
	s[size] = 0;
	struct auth_key k;
	int rc = auth_key_parse(s, "fuzzed secret", &k);
	if (!rc) {
		if ((k.len != 32 && k.len != 48 && k.len != 64) || k.transform > 3 ||
		    (k.transform && k.len != auth_hash_len(k.transform)))
			abort();
		/* what it accepted is what nvme-cli would write for that key */
		uint8_t raw[AUTH_KEY_MAX + 4];
		char want[200];
		memcpy(raw, k.key, k.len);
		uint32_t crc = auth_crc32(k.key, k.len);
		for (int i = 0; i < 4; i++)
			raw[k.len + i] = (uint8_t)(crc >> (8 * i));
		encode(raw, k.len + 4u, want);
		const char *p = s + 10;
		size_t n = strlen(p);
		if (n && p[n - 1] == ':')
			n--;
		if (n != strlen(want) || memcmp(p, want, n))
			abort();
	} else if (rc != NVMEOF_EINVAL) {
		abort();
	} else if (size > 10 && !strncmp(s, "DHHC-1:", 7)) {
		/* no 12 characters of what follows the prefix in the message */
		const char *msg = nvmeof_errmsg();
		for (size_t i = 10; i + 12 <= size; i++) {
			char frag[13];
			memcpy(frag, s + i, 12);
			frag[12] = 0;
			if (strlen(frag) == 12 && strstr(msg, frag))
				abort();
		}
	}
	auth_key_clear(&k);
	uint32_t mask;
	rc = auth_offer_parse(s, size & 1, &mask);
	if (!rc && (mask & ~(size & 1 ? AUTH_DHGROUPS_ALL : AUTH_HASHES_ALL)))
		abort();
	/* a refused list (a secret pasted there, say) shows at most one short
	 * word of itself: no 12 characters of base64 (the message's own words
	 * hold no such run) */
	if (rc) {
		const char *msg = nvmeof_errmsg();
		for (size_t i = 0; i + 12 <= size; i++) {
			char frag[13];
			memcpy(frag, s + i, 12);
			frag[12] = 0;
			if (strspn(frag, b64) == 12 && strstr(msg, frag))
				abort();
		}
	}
	/* every message, whatever built it, cuts out a secret's prefix and
	 * what follows it */
	nvmeof_err(NVMEOF_EINVAL, "address '%s' refused", s);
	if (strcasestr(nvmeof_errmsg(), "DHHC-1") || strcasestr(nvmeof_errmsg(), "NVMeTLSkey-1"))
		abort();
	free(s);
	return 0;
}
