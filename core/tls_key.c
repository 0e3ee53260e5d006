/*
 * The NVMe/TCP TLS PSK (TP 8011; NVMe/TCP 1.1 3.6.1): the interchange form
 * nvme-cli writes, the retained PSK, the PSK identity and the TLS PSK, in
 * the order and with the labels that the kernel (drivers/nvme/common),
 * libnvme and SPDK use. HKDF and HMAC are OpenSSL 3's; every intermediate
 * key on our stack is cleansed before return. tests/unit/tls_vectors.py
 * computes the same from the specification's text with Python's hmac.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include "auth.h"
#include "internal.h"
#include "tls.h"

const char *tls_cipher_name(uint8_t cipher)
{
	return cipher == 2 ? "TLS_AES_256_GCM_SHA384" : cipher == 1 ? "TLS_AES_128_GCM_SHA256" : "none";
}

int tls_key_parse(const char *s, const char *what, struct tls_key *out)
{
	static const char prefix[] = "NVMeTLSkey-1:";
	uint8_t raw[64 + 4 + 3]; /* room for a 64-byte key to be told apart */
	memset(out, 0, sizeof(*out));
	if (!s || strncmp(s, prefix, sizeof(prefix) - 1))
		return nvmeof_err(NVMEOF_EINVAL, "%s: not a TLS PSK in the interchange format (what nvme gen-tls-key prints)",
				  what);
	const char *p = s + sizeof(prefix) - 1;
	if (p[0] != '0' || p[1] < '0' || p[1] > '9' || p[2] != ':')
		return nvmeof_err(NVMEOF_EINVAL, "%s: the hash field (after the version) must be 00, 01 or 02", what);
	if (p[1] > '2')
		return nvmeof_err(NVMEOF_EINVAL, "%s: unknown hash 0%c (01 SHA-256, 02 SHA-384, 00 none)", what, p[1]);
	uint8_t hash = (uint8_t)(p[1] - '0');
	p += 3;
	size_t n = strlen(p);
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (!n || p[n - 1] != ':')
		return nvmeof_err(NVMEOF_EINVAL, "%s: the key does not end with ':' (a truncated key?)", what);
	n--;
	if (memchr(p, ':', n))
		return nvmeof_err(NVMEOF_EINVAL, "%s: more than one field after the hash", what);
	int len = auth_b64_decode(p, n, raw, sizeof(raw));
	if (len != 36 && len != 52) {
		OPENSSL_cleanse(raw, sizeof(raw));
		if (len < 0)
			return nvmeof_err(NVMEOF_EINVAL, "%s: the key is not valid base64 of 36 or 52 bytes", what);
		return nvmeof_err(NVMEOF_EINVAL, "%s: a key of %d bytes; 32 (SHA-256) or 48 (SHA-384) are allowed",
				  what, len >= 4 ? len - 4 : 0);
	}
	len -= 4;
	if (hash && (size_t)len != (hash == 1 ? 32u : 48u)) {
		OPENSSL_cleanse(raw, sizeof(raw));
		return nvmeof_err(NVMEOF_EINVAL, "%s: a key of %d bytes with hash 0%u (%s), which needs %u bytes", what,
				  len, hash, hash == 1 ? "SHA-256" : "SHA-384", hash == 1 ? 32u : 48u);
	}
	if (!auth_crc32_trails(raw, (size_t)len)) {
		OPENSSL_cleanse(raw, sizeof(raw));
		return nvmeof_err(NVMEOF_EINVAL, "%s: CRC-32 mismatch (a mistyped or truncated key)", what);
	}
	memcpy(out->key, raw, (size_t)len);
	out->len = (uint8_t)len;
	out->hash = hash;
	out->cipher = len == 32 ? 1 : 2;
	OPENSSL_cleanse(raw, sizeof(raw));
	return 0;
}

void tls_key_clear(struct tls_key *k)
{
	if (k)
		OPENSSL_cleanse(k, sizeof(*k));
}

static int tls_ossl_err(const char *what)
{
	char buf[160];
	unsigned long e = ERR_get_error();
	ERR_clear_error();
	ERR_error_string_n(e, buf, sizeof(buf));
	return nvmeof_err(NVMEOF_ENOMEM, "TLS PSK: %s: %s", what, e ? buf : "failed (OpenSSL)");
}

/* HKDF-Expand-Label(HKDF-Extract(0, ikm), label, ctx, len) (RFC 8446 7.1,
 * with "tls13 " before the label). compat: HKDF's info as libnvme up to
 * 1.14 wrote it, the length little-endian and no length bytes before the
 * label and the context. */
static int hkdf_label(uint8_t cipher, const uint8_t *ikm, size_t len, const char *label, const char *ctx,
		      bool compat, uint8_t *out)
{
	uint8_t info[2 + 1 + 255 + 1 + 255];
	size_t ll = 6 + strlen(label), cl = strlen(ctx), i = 0;
	if (ll > 255 || cl > 255)
		return nvmeof_err(NVMEOF_EINVAL, "TLS PSK: a label or context over 255 bytes (an NQN too long?)");
	info[i++] = (uint8_t)(compat ? len : len >> 8);
	info[i++] = (uint8_t)(compat ? len >> 8 : len);
	if (!compat)
		info[i++] = (uint8_t)ll;
	memcpy(info + i, "tls13 ", 6);
	memcpy(info + i + 6, label, ll - 6);
	i += ll;
	if (!compat)
		info[i++] = (uint8_t)cl;
	memcpy(info + i, ctx, cl);
	i += cl;
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kc = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	EVP_KDF_free(kdf);
	if (!kc)
		return tls_ossl_err("HKDF");
	OSSL_PARAM p[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, cipher == 2 ? "SHA384" : "SHA256", 0),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, len),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, i),
		OSSL_PARAM_construct_end(),
	};
	int ok = EVP_KDF_derive(kc, out, len, p);
	EVP_KDF_CTX_free(kc);
	return ok == 1 ? 0 : tls_ossl_err("HKDF");
}

static int retained_psk(const struct tls_key *k, const char *hostnqn, bool compat, uint8_t *out)
{
	if (!k->hash) { /* 00: the configured PSK is the retained PSK */
		memcpy(out, k->key, k->len);
		return 0;
	}
	return hkdf_label(k->hash, k->key, k->len, "HostNQN", hostnqn, compat, out);
}

int tls_key_retained(const struct tls_key *k, const char *hostnqn, uint8_t *out)
{
	return retained_psk(k, hostnqn, false, out);
}

/* base64(HMAC-H(retained, hostnqn " " subnqn " NVMe-over-Fabrics")) */
static int psk_digest(uint8_t cipher, const uint8_t *retained, size_t len, const char *hostnqn,
		      const char *subnqn, char *out /* >= 65 */)
{
	uint8_t mac[TLS_KEY_MAX];
	size_t n = 0;
	EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *c = m ? EVP_MAC_CTX_new(m) : NULL;
	EVP_MAC_free(m);
	if (!c)
		return tls_ossl_err("HMAC");
	OSSL_PARAM p[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, cipher == 2 ? "SHA384" : "SHA256", 0),
		OSSL_PARAM_construct_end(),
	};
	int ok = EVP_MAC_init(c, retained, len, p) && EVP_MAC_update(c, (const uint8_t *)hostnqn, strlen(hostnqn)) &&
		 EVP_MAC_update(c, (const uint8_t *)" ", 1) &&
		 EVP_MAC_update(c, (const uint8_t *)subnqn, strlen(subnqn)) &&
		 EVP_MAC_update(c, (const uint8_t *)" NVMe-over-Fabrics", 18) && EVP_MAC_final(c, mac, &n, sizeof(mac));
	EVP_MAC_CTX_free(c);
	if (!ok)
		return tls_ossl_err("HMAC");
	EVP_EncodeBlock((unsigned char *)out, mac, (int)n);
	OPENSSL_cleanse(mac, sizeof(mac));
	return 0;
}

int tls_psk_derive(const struct tls_key *k, int version, const char *hostnqn, const char *subnqn,
		   char *identity, size_t id_cap, uint8_t *psk)
{
	uint8_t retained[TLS_KEY_MAX];
	char digest[96], ctx[100];
	int rc, w;
	bool compat = version & TLS_PSK_COMPAT;
	version &= ~TLS_PSK_COMPAT;
	if (version != 0 && version != 1)
		return nvmeof_err(NVMEOF_EINVAL, "TLS PSK: identity version %d (0 or 1)", version);
	if ((rc = retained_psk(k, hostnqn, compat, retained)))
		goto out;
	if (version == 0) {
		/* the context of version 0's TLS PSK is the identity itself */
		w = snprintf(identity, id_cap, "NVMe0R%02u %s %s", k->cipher, hostnqn, subnqn);
	} else {
		if ((rc = psk_digest(k->cipher, retained, k->len, hostnqn, subnqn, digest)))
			goto out;
		w = snprintf(identity, id_cap, "NVMe1R%02u %s %s %s", k->cipher, hostnqn, subnqn, digest);
		snprintf(ctx, sizeof(ctx), "%02u %s", k->cipher, digest);
	}
	if (w < 0 || (size_t)w >= id_cap) {
		rc = nvmeof_err(NVMEOF_EINVAL, "TLS PSK: the identity does not fit %zu bytes", id_cap);
		goto out;
	}
	rc = hkdf_label(k->cipher, retained, k->len, "nvme-tls-psk", version == 0 ? identity : ctx, compat, psk);
out:
	OPENSSL_cleanse(retained, sizeof(retained));
	return rc;
}
