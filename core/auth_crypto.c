/*
 * The crypto of DH-HMAC-CHAP, all of it OpenSSL 3's: HMAC and digests
 * through EVP, FFDHE through EVP_PKEY's named groups, RAND_bytes. We
 * compose, in the order the NVMe Base spec 8.13.5 and the kernel's
 * drivers/nvme/{common,host}/auth.c put them; we compute nothing by hand.
 * Key material on our stack is cleansed before return.
 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/dh.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>

#include "auth.h"
#include "internal.h"
#include "protocol.h"

/* What OpenSSL failed at, with its reason. NVMEOF_ENOTSUP (final: a
 * reconnect stops) only where an algorithm cannot be loaded (fetch: the
 * caller says) and OpenSSL said why without running out of memory, which
 * loading needs too; anything else is an allocation or an internal failure
 * of the moment (NVMEOF_ENOMEM: a reconnect tries again), never a verdict
 * on the controller. */
static int ossl_fail(bool fetch, const char *what)
{
	char buf[160];
	unsigned long first = 0, e;
	bool nomem = false;
	while ((e = ERR_get_error())) {
		first = first ? first : e;
		nomem |= ERR_GET_REASON(e) == ERR_R_MALLOC_FAILURE;
	}
	ERR_error_string_n(first, buf, sizeof(buf));
	return nvmeof_err(fetch && first && !nomem ? NVMEOF_ENOTSUP : NVMEOF_ENOMEM, "authentication: %s: %s",
			  what, first ? buf : "failed (OpenSSL, most likely out of memory)");
}
static int ossl_err(const char *what) { return ossl_fail(false, what); }
static int ossl_unsupported(const char *what) { return ossl_fail(true, what); }

static const char *digest_name(uint8_t hashid)
{
	switch (hashid) {
	case AUTH_HASH_SHA256: return "SHA256";
	case AUTH_HASH_SHA384: return "SHA384";
	case AUTH_HASH_SHA512: return "SHA512";
	default: return NULL;
	}
}

/* One HMAC over several parts. */
struct hmac {
	EVP_MAC *mac;
	EVP_MAC_CTX *ctx;
};

static int hmac_begin(struct hmac *h, uint8_t hashid, const uint8_t *key, size_t klen)
{
	const char *dn = digest_name(hashid);
	memset(h, 0, sizeof(*h));
	if (!dn)
		return nvmeof_err(NVMEOF_EINVAL, "authentication: unknown hash function %u", hashid);
	OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)dn, 0),
			  OSSL_PARAM_construct_end()};
	if (!(h->mac = EVP_MAC_fetch(NULL, "HMAC", NULL)))
		return ossl_unsupported("HMAC");
	if (!(h->ctx = EVP_MAC_CTX_new(h->mac)) || !EVP_MAC_init(h->ctx, key, klen, p)) {
		EVP_MAC_CTX_free(h->ctx);
		EVP_MAC_free(h->mac);
		return ossl_err("HMAC");
	}
	return 0;
}

static void hmac_add(struct hmac *h, const void *p, size_t n, int *ok)
{
	if (*ok && n && !EVP_MAC_update(h->ctx, p, n))
		*ok = 0;
}

static int hmac_end(struct hmac *h, uint8_t *out, int ok)
{
	size_t n = 0;
	if (ok && !EVP_MAC_final(h->ctx, out, &n, AUTH_HASH_MAX))
		ok = 0;
	EVP_MAC_CTX_free(h->ctx); /* cleanses its key copy */
	EVP_MAC_free(h->mac);
	return ok ? 0 : ossl_err("HMAC");
}

int auth_key_transform(const struct auth_key *k, const char *nqn, uint8_t *out, size_t *out_len)
{
	struct hmac h;
	int rc, ok = 1;
	if (!k->transform) {
		memcpy(out, k->key, k->len);
		*out_len = k->len;
		return 0;
	}
	if ((rc = hmac_begin(&h, k->transform, k->key, k->len)))
		return rc;
	hmac_add(&h, nqn, strlen(nqn), &ok);
	hmac_add(&h, "NVMe-over-Fabrics", 17, &ok);
	*out_len = auth_hash_len(k->transform);
	return hmac_end(&h, out, ok);
}

int auth_response(uint8_t hashid, const uint8_t *key, size_t klen, const uint8_t *chal, uint32_t seq,
		  uint16_t tid, bool controller, const char *hostnqn, const char *subnqn, uint8_t *out)
{
	struct hmac h;
	uint8_t b[4], zero = 0; /* zero: SC_C (no secure channel), then the NQNs' separator */
	int rc, ok = 1;
	if ((rc = hmac_begin(&h, hashid, key, klen)))
		return rc;
	hmac_add(&h, chal, auth_hash_len(hashid), &ok);
	put_le32(b, seq);
	hmac_add(&h, b, 4, &ok);
	put_le16(b, tid);
	hmac_add(&h, b, 2, &ok);
	hmac_add(&h, &zero, 1, &ok);
	const char *first = controller ? subnqn : hostnqn, *second = controller ? hostnqn : subnqn;
	hmac_add(&h, controller ? "Controller" : "HostHost", controller ? 10 : 8, &ok);
	hmac_add(&h, first, strlen(first), &ok);
	hmac_add(&h, &zero, 1, &ok);
	hmac_add(&h, second, strlen(second), &ok);
	return hmac_end(&h, out, ok);
}

int auth_augment(uint8_t hashid, const uint8_t *skey, size_t skey_len, const uint8_t *chal, uint8_t *out)
{
	uint8_t hk[AUTH_HASH_MAX];
	unsigned int hn = 0;
	struct hmac h;
	int rc, ok = 1;
	const char *dn = digest_name(hashid);
	if (!dn)
		return nvmeof_err(NVMEOF_EINVAL, "authentication: unknown hash function %u", hashid);
	EVP_MD *md = EVP_MD_fetch(NULL, dn, NULL);
	if (!md)
		return ossl_unsupported("digest of the DH shared secret");
	if (!EVP_Digest(skey, skey_len, hk, &hn, md, NULL)) {
		EVP_MD_free(md);
		return ossl_err("digest of the DH shared secret");
	}
	EVP_MD_free(md);
	if (!(rc = hmac_begin(&h, hashid, hk, hn))) {
		hmac_add(&h, chal, auth_hash_len(hashid), &ok);
		rc = hmac_end(&h, out, ok);
	}
	auth_cleanse(hk, sizeof(hk));
	return rc;
}

int auth_dh_generate(uint8_t dhgid, void **key, uint8_t *pub)
{
	size_t len = auth_dh_len(dhgid);
	EVP_PKEY *pk = NULL;
	BIGNUM *bn = NULL;
	*key = NULL;
	if (!len)
		return nvmeof_err(NVMEOF_EINVAL, "authentication: unknown DH group %u", dhgid);
	OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME,
							   (char *)auth_dhgroup_name(dhgid), 0),
			  OSSL_PARAM_construct_end()};
	/* DH or the group not to be had is unsupported; what fails after is not */
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "DH", NULL);
	if (!ctx || EVP_PKEY_keygen_init(ctx) <= 0 || EVP_PKEY_CTX_set_params(ctx, p) <= 0) {
		EVP_PKEY_CTX_free(ctx);
		return ossl_unsupported("DH key generation");
	}
	int ok = EVP_PKEY_generate(ctx, &pk) > 0 && EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_PUB_KEY, &bn) &&
		 BN_bn2binpad(bn, pub, (int)len) == (int)len; /* padded to the group's size */
	EVP_PKEY_CTX_free(ctx);
	BN_free(bn);
	if (!ok) {
		EVP_PKEY_free(pk);
		return ossl_err("DH key generation");
	}
	*key = pk;
	return 0;
}

/* RFC 7919 section 5.1: for these safe-prime groups a peer value is
 * usable when 1 < Y < p-1 (the subgroup of order q then holds it or its
 * negation, which is enough for an ephemeral exchange); OpenSSL's default
 * check also computes Y^q mod p, 0.2-0.3 s at ffdhe8192. */
static bool peer_in_range(const EVP_PKEY *pp, const BIGNUM *y)
{
	BIGNUM *p = NULL, *pm1 = NULL;
	bool ok = EVP_PKEY_get_bn_param(pp, OSSL_PKEY_PARAM_FFC_P, &p) && (pm1 = BN_dup(p)) &&
		  BN_sub_word(pm1, 1) && BN_cmp(y, BN_value_one()) > 0 && BN_cmp(y, pm1) < 0;
	BN_free(p);
	BN_free(pm1);
	return ok;
}

int auth_dh_derive(void *key, uint8_t dhgid, const uint8_t *peer, size_t peer_len, uint8_t *skey)
{
	size_t len = auth_dh_len(dhgid), out = len;
	EVP_PKEY *pp = NULL;
	EVP_PKEY_CTX *pctx = NULL, *dctx = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *prm = NULL;
	BIGNUM *bn = NULL;
	if (!len || !peer_len || peer_len > len)
		return nvmeof_err(NVMEOF_EINVAL, "authentication: a DH value of %zu bytes for %s (%zu expected)",
				  peer_len, auth_dhgroup_name(dhgid), len);
	/* BN_bin2bn reads big-endian: a short value is the same number as
	 * its left-padded form */
	int ok = (bn = BN_bin2bn(peer, (int)peer_len, NULL)) && (bld = OSSL_PARAM_BLD_new()) &&
		 OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, auth_dhgroup_name(dhgid), 0) &&
		 OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PUB_KEY, bn) && (prm = OSSL_PARAM_BLD_to_param(bld)) &&
		 (pctx = EVP_PKEY_CTX_new_from_name(NULL, "DH", NULL)) && EVP_PKEY_fromdata_init(pctx) > 0 &&
		 EVP_PKEY_fromdata(pctx, &pp, EVP_PKEY_PUBLIC_KEY, prm) > 0;
	if (ok && !peer_in_range(pp, bn)) {
		EVP_PKEY_free(pp);
		OSSL_PARAM_free(prm);
		OSSL_PARAM_BLD_free(bld);
		BN_free(bn);
		EVP_PKEY_CTX_free(pctx);
		return nvmeof_err(NVMEOF_EINVAL, "authentication: the controller's %s value is out of range "
				  "(not 1 < Y < p-1)", auth_dhgroup_name(dhgid));
	}
	ok = ok && (dctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL)) && EVP_PKEY_derive_init(dctx) > 0 &&
	     /* padded to the group's size, as the kernel's kpp gives it */
	     EVP_PKEY_CTX_set_dh_pad(dctx, 1) > 0 &&
	     EVP_PKEY_derive_set_peer_ex(dctx, pp, 0) > 0 && /* range checked above */
	     EVP_PKEY_derive(dctx, skey, &out) > 0 && out == len;
	EVP_PKEY_CTX_free(dctx);
	EVP_PKEY_CTX_free(pctx);
	EVP_PKEY_free(pp);
	OSSL_PARAM_free(prm);
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	return ok ? 0 : ossl_err("DH shared secret (the controller's DH value)");
}

void auth_dh_free(void *key) { EVP_PKEY_free(key); }

int auth_random(uint8_t *p, size_t n)
{
	return RAND_bytes(p, (int)n) == 1 ? 0 : ossl_err("RAND_bytes");
}

bool auth_equal(const uint8_t *a, const uint8_t *b, size_t n) { return CRYPTO_memcmp(a, b, n) == 0; }

void auth_cleanse(void *p, size_t n) { OPENSSL_cleanse(p, n); }
