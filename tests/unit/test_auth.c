/*
 * In-band authentication without a target: DHHC-1 secrets against vectors
 * made by nvme-cli 2.3 (`nvme gen-dhchap-key --secret=HEX --hmac=N
 * --nqn=NQN` writes the transformed key, so its base64 payload is the
 * transformation's expected output), the response and augmented challenge
 * against Python's hmac/hashlib, FFDHE against itself through g, every
 * message's encoding and parsing, and whole transactions against a
 * controller written here from the same primitives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>

#include "auth.h"
#include "check.h"
#include "connretry.h"
#include "cpriv.h"
#include "fakewire.h"
#include "internal.h"
#include "protocol.h"

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:test"
#define SUBNQN "nqn.test:sub"
/* the key bytes 00..1f, 00..1f 00..0f, 00..1f 00..1f, with their CRCs */
#define B64_32 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR"
#define B64_48 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8AAQIDBAUGBwgJCgsMDQ4Prx7ycQ=="
#define B64_64 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eH+W2jnc="

static void unhex(const char *h, uint8_t *out)
{
	for (size_t i = 0; h[2 * i]; i++) {
		unsigned v;
		sscanf(h + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
}

TEST(crc32_is_zlibs)
{
	CHECK_EQ(auth_crc32((const uint8_t *)"123456789", 9), 0xcbf43926u);
}

TEST(secrets_parse_with_their_length_and_transformation)
{
	struct auth_key k;
	uint8_t want[64];
	for (int i = 0; i < 64; i++)
		want[i] = (uint8_t)(i % 32);
	CHECK_EQ(auth_key_parse("DHHC-1:00:" B64_32 ":", "host secret", &k), 0);
	CHECK_EQ(k.len, 32);
	CHECK_EQ(k.transform, 0);
	CHECK_MEM(k.key, want, 32);
	CHECK_EQ(auth_key_parse("DHHC-1:02:" B64_48 ":", "host secret", &k), 0);
	CHECK_EQ(k.len, 48);
	CHECK_EQ(k.transform, 2);
	CHECK_MEM(k.key, want, 48);
	CHECK_EQ(auth_key_parse("DHHC-1:03:" B64_64, "host secret", &k), 0); /* closing colon optional */
	CHECK_EQ(k.len, 64);
	CHECK_EQ(k.transform, 3);
	CHECK_MEM(k.key, want, 64);
}

/* nvme-cli's outputs for the keys above and HOSTNQN, hmac 1, 2, 3 */
TEST(transformation_matches_nvme_cli)
{
	static const struct {
		const char *secret, *want;
	} v[] = {
		{"DHHC-1:00:" B64_32 ":", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"},
		{"DHHC-1:01:" B64_32 ":", "5ae9657820641b8a02b348880b70a2b7d8010c22d6899f4f357ba1ab2b569012"},
		{"DHHC-1:02:" B64_48 ":", "cfb350615e82cfa2b92488c899b2f0cead2d170f73a8079f12a62b89fd826c48"
					  "0b97925d214be3543807790c31617393"},
		{"DHHC-1:03:" B64_64 ":", "682585b6b76a45328ac5076ecdf198b46f1feaab8d11531f89d4d56c1aa20cc2"
					  "f76c1fd8ca7ba8e767a3d6e96d891115d7137c00ed9aa96a06a141a4301cb9e3"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct auth_key k;
		uint8_t out[AUTH_KEY_MAX], want[AUTH_KEY_MAX];
		size_t n = 0;
		CHECK_EQ(auth_key_parse(v[i].secret, "host secret", &k), 0);
		CHECK_EQ(auth_key_transform(&k, HOSTNQN, out, &n), 0);
		CHECK_EQ(n, strlen(v[i].want) / 2);
		unhex(v[i].want, want);
		CHECK_MEM(out, want, n);
		/* another NQN, another key */
		CHECK_EQ(auth_key_transform(&k, SUBNQN, out, &n), 0);
		if (k.transform)
			CHECK(memcmp(out, want, n) != 0);
	}
}

TEST(malformed_secrets_are_refused_without_echoing_them)
{
	static const char *const bad[] = {
		"",
		"DHHC-2:00:" B64_32 ":",
		"DHHC-1:04:" B64_32 ":",                 /* unknown transformation */
		"DHHC-1:0a:" B64_32 ":",
		"DHHC-1:00" B64_32 ":",                  /* no colon after XX */
		"DHHC-1:00:" B64_32 ":x:",               /* a field too many */
		"DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaS:", /* CRC off by one bit */
		"DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR=:", /* not a multiple of 4 */
		"DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+Kfia!:", /* not base64 */
		"DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=:", /* 28 bytes */
		"DHHC-1:00:AA=CAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", /* padding inside */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct auth_key k;
		int rc = auth_key_parse(bad[i], "host secret", &k);
		if (rc != NVMEOF_EINVAL)
			fprintf(stderr, "    case %zu accepted\n", i);
		CHECK_EQ(rc, NVMEOF_EINVAL);
		CHECK(strstr(nvmeof_errmsg(), "host secret") != NULL);
		CHECK(strstr(nvmeof_errmsg(), "AAECAwQF") == NULL);
		CHECK_EQ(k.len, 0);
	}
	/* the CRC is what refuses a one-character typo */
	struct auth_key k;
	CHECK_EQ(auth_key_parse("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaS:", "host secret", &k),
		 NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "CRC") != NULL);
	CHECK_EQ(auth_key_parse(NULL, "controller secret", &k), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "controller secret") != NULL);
}

/* The expected values: Python's hmac and hashlib over the bytes the spec lists. */
TEST(response_and_augmented_challenge_match_python)
{
	uint8_t key[32], chal[64], out[64], want[64], skey[384];
	unhex("5ae9657820641b8a02b348880b70a2b7d8010c22d6899f4f357ba1ab2b569012", key);
	for (int i = 0; i < 64; i++)
		chal[i] = (uint8_t)(0x40 + i);
	CHECK_EQ(auth_response(AUTH_HASH_SHA256, key, 32, chal, 0x01020304, 0x0a0b, false, HOSTNQN, SUBNQN, out), 0);
	unhex("55333588327e1331a2c501e0f8483f8d540c81fe0a392009f686079ae62cf17c", want);
	CHECK_MEM(out, want, 32);
	CHECK_EQ(auth_response(AUTH_HASH_SHA256, key, 32, chal, 0x01020304, 0x0a0b, true, HOSTNQN, SUBNQN, out), 0);
	unhex("2443612f3cd6988b81eed990da047b8911664e9da9746ed8cb67b602748d72a0", want);
	CHECK_MEM(out, want, 32);
	for (int i = 0; i < 384; i++)
		skey[i] = (uint8_t)i;
	CHECK_EQ(auth_augment(AUTH_HASH_SHA256, skey, 256, chal, out), 0);
	unhex("ee33acef1402d9ce81ddd89b5c3b67fc765868286bc2cf444bf133d5e59cd370", want);
	CHECK_MEM(out, want, 32);
	CHECK_EQ(auth_augment(AUTH_HASH_SHA384, skey, 384, chal, out), 0);
	unhex("06a1ad1de8ae55fe383516e62c7fdac5abce33317764525311645157e274f6ddbedc444fa877c828254b855fd5c1219d",
	      want);
	CHECK_MEM(out, want, 48);
	CHECK(auth_response(9, key, 32, chal, 1, 1, false, HOSTNQN, SUBNQN, out) < 0);
}

/* With the generator g = 2 as the peer's value, g^x mod p is our own public
 * value: the derivation is checked, padding included, without our private
 * key. And two keys agree with each other. */
TEST(ffdhe_values_are_padded_and_agree)
{
	static uint8_t pub[AUTH_DH_MAX], pub2[AUTH_DH_MAX], s1[AUTH_DH_MAX], s2[AUTH_DH_MAX], g[AUTH_DH_MAX];
	for (uint8_t gid = AUTH_DH_FFDHE2048; gid <= AUTH_DH_FFDHE3072; gid++) {
		void *a = NULL, *b = NULL;
		size_t n = auth_dh_len(gid);
		CHECK_EQ(auth_dh_generate(gid, &a, pub), 0);
		CHECK_EQ(auth_dh_generate(gid, &b, pub2), 0);
		memset(g, 0, n);
		g[n - 1] = 2;
		CHECK_EQ(auth_dh_derive(a, gid, g, n, s1), 0);
		CHECK_MEM(s1, pub, n);
		CHECK_EQ(auth_dh_derive(a, gid, pub2, n, s1), 0);
		CHECK_EQ(auth_dh_derive(b, gid, pub, n, s2), 0);
		CHECK_MEM(s1, s2, n);
		CHECK(memcmp(pub, pub2, n) != 0);
		memset(g, 0, n);
		g[n - 1] = 1; /* 1: no secret at all, which OpenSSL's check refuses */
		CHECK(auth_dh_derive(a, gid, g, n, s1) < 0);
		auth_dh_free(a);
		auth_dh_free(b);
	}
	/* a public value with a leading zero byte (1 in 256): still the group's
	 * full size, and so is the shared secret it makes */
	void *z = NULL;
	int tries = 0;
	for (; tries < 20000; tries++) {
		CHECK_EQ(auth_dh_generate(AUTH_DH_FFDHE2048, &z, pub), 0);
		if (!pub[0])
			break;
		auth_dh_free(z);
		z = NULL;
	}
	CHECK(z != NULL);
	if (z) {
		memset(g, 0, 256);
		g[255] = 2;
		CHECK_EQ(auth_dh_derive(z, AUTH_DH_FFDHE2048, g, 256, s1), 0);
		CHECK_MEM(s1, pub, 256);
		auth_dh_free(z);
	}
	CHECK_EQ(auth_dh_len(AUTH_DH_FFDHE8192), 1024);
	CHECK_EQ(auth_dh_len(AUTH_DH_NULL), 0);
}

/* The group's prime p, big-endian in n bytes, from OpenSSL's named group. */
static void group_prime(uint8_t gid, uint8_t *out, size_t n)
{
	void *k = NULL;
	BIGNUM *p = NULL;
	uint8_t pub[AUTH_DH_MAX];
	CHECK_EQ(auth_dh_generate(gid, &k, pub), 0);
	CHECK(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_FFC_P, &p) == 1);
	CHECK_EQ(BN_bn2binpad(p, out, (int)n), (int)n);
	BN_free(p);
	auth_dh_free(k);
}

/* Crafted peer values: one shorter than the group is the same number
 * left-padded (SPDK's target sent such values); longer is refused; and
 * the range 1 < Y < p-1 is checked at the edges. */
TEST(dh_values_short_padded_long_and_out_of_range)
{
	static uint8_t pub[AUTH_DH_MAX], peer[AUTH_DH_MAX + 1], s1[AUTH_DH_MAX], s2[AUTH_DH_MAX], p[AUTH_DH_MAX];
	for (uint8_t gid = AUTH_DH_FFDHE2048; gid <= AUTH_DH_FFDHE8192; gid++) {
		size_t n = auth_dh_len(gid);
		void *a = NULL, *b = NULL;
		CHECK_EQ(auth_dh_generate(gid, &a, pub), 0);
		/* a peer value with a leading zero byte, as SPDK sent it: cut.
		 * b's value with its top byte cleared is a valid one all the same */
		CHECK_EQ(auth_dh_generate(gid, &b, peer), 0);
		peer[0] = 0;
		peer[n - 1] |= 2;
		CHECK_EQ(auth_dh_derive(a, gid, peer, n, s1), 0);
		CHECK_EQ(auth_dh_derive(a, gid, peer + 1, n - 1, s2), 0); /* unpadded */
		CHECK_MEM(s1, s2, n);
		CHECK(auth_dh_derive(a, gid, peer, n + 1, s2) < 0); /* longer than the group */
		CHECK(strstr(nvmeof_errmsg(), "expected") != NULL);
		CHECK(auth_dh_derive(a, gid, peer, 0, s2) < 0);
		group_prime(gid, p, n);
		memcpy(peer, p, n); /* p */
		CHECK(auth_dh_derive(a, gid, peer, n, s2) < 0);
		CHECK(strstr(nvmeof_errmsg(), "out of range") != NULL);
		peer[n - 1] -= 1; /* p - 1 (p is odd) */
		CHECK(auth_dh_derive(a, gid, peer, n, s2) < 0);
		CHECK(strstr(nvmeof_errmsg(), "out of range") != NULL);
		peer[n - 1] -= 1; /* p - 2: in range */
		CHECK_EQ(auth_dh_derive(a, gid, peer, n, s2), 0);
		memset(peer, 0xff, n); /* above p */
		CHECK(auth_dh_derive(a, gid, peer, n, s2) < 0);
		memset(peer, 0, n);
		CHECK(auth_dh_derive(a, gid, peer, n, s2) < 0); /* 0 */
		peer[n - 1] = 1;
		CHECK(auth_dh_derive(a, gid, peer, 1, s2) < 0); /* 1, unpadded */
		peer[n - 1] = 2;
		CHECK_EQ(auth_dh_derive(a, gid, peer + n - 1, 1, s2), 0); /* 2, one byte: g */
		CHECK_MEM(s2, pub, n);
		auth_dh_free(a);
		auth_dh_free(b);
	}
}

TEST(a_key_must_have_its_transformations_length)
{
	struct auth_key k;
	/* 48 bytes with transformation 01 (SHA-256: 32): refused, with the lengths */
	CHECK_EQ(auth_key_parse("DHHC-1:01:" B64_48 ":", "host secret", &k), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "48 bytes") && strstr(nvmeof_errmsg(), "needs 32"));
	CHECK(strstr(nvmeof_errmsg(), B64_48) == NULL);
	CHECK_EQ(auth_key_parse("DHHC-1:02:" B64_32 ":", "k", &k), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "needs 48"));
	CHECK_EQ(auth_key_parse("DHHC-1:03:" B64_48 ":", "k", &k), NVMEOF_EINVAL);
	CHECK_EQ(auth_key_parse("DHHC-1:01:" B64_32 ":", "k", &k), 0);
	CHECK_EQ(auth_key_parse("DHHC-1:02:" B64_48 ":", "k", &k), 0);
	CHECK_EQ(auth_key_parse("DHHC-1:03:" B64_64 ":", "k", &k), 0);
	/* leftover bits in the last base64 group (found by fuzz_secret): the
	 * kernel's base64_decode refuses them, and so do we */
	CHECK_EQ(auth_key_parse("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8AAQIDBAUGBwgJCgsMDQ4Prx7ycY==:",
				"k", &k), NVMEOF_EINVAL);
	/* untransformed keys take any of the three lengths */
	CHECK_EQ(auth_key_parse("DHHC-1:00:" B64_48 ":", "k", &k), 0);
	CHECK_EQ(auth_key_parse("DHHC-1:00:" B64_64 ":", "k", &k), 0);
}

/* Whether a mapping's VmFlags in /proc/self/smaps carry "dd" (do not dump). */
static int dont_dump(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, dd = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			dd = strstr(line, " dd") != NULL;
			break;
		}
	}
	fclose(f);
	return dd;
}

TEST(key_material_is_kept_out_of_core_dumps_and_wiped)
{
	struct auth_key *k = auth_secret_alloc(sizeof(*k));
	CHECK(k != NULL);
	if (!k)
		return;
	CHECK_EQ(((uintptr_t)k) % 4096, 0);
	CHECK_EQ(auth_key_parse("DHHC-1:01:" B64_32 ":", "k", k), 0);
	CHECK_EQ(dont_dump(k), 1);
	/* after the free the pages are gone: mincore fails on unmapped memory */
	auth_secret_free(k, sizeof(*k));
	unsigned char v;
	CHECK(mincore((void *)k, 4096, &v) != 0);
}

TEST(the_host_offers_what_it_is_allowed_to)
{
	uint32_t m;
	CHECK_EQ(auth_offer_parse(NULL, false, &m), 0);
	CHECK_EQ(m, AUTH_HASHES_ALL);
	CHECK_EQ(auth_offer_parse("", true, &m), 0);
	CHECK_EQ(m, AUTH_DHGROUPS_ALL);
	CHECK_EQ(auth_offer_parse("sha512,SHA256", false, &m), 0);
	CHECK_EQ(m, (1u << AUTH_HASH_SHA512) | (1u << AUTH_HASH_SHA256));
	CHECK_EQ(auth_offer_parse("ffdhe2048,ffdhe8192", true, &m), 0);
	CHECK_EQ(m, (1u << AUTH_DH_FFDHE2048) | (1u << AUTH_DH_FFDHE8192));
	CHECK_EQ(auth_offer_parse("sha256,md5", false, &m), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "'md5'") && strstr(nvmeof_errmsg(), "dhchap_hashes"));
	CHECK_EQ(auth_offer_parse("null", false, &m), NVMEOF_EINVAL);
	CHECK_EQ(auth_offer_parse("ffdhe1024", true, &m), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "dhchap_dhgroups"));
	/* Negotiate lists only those */
	struct auth_key hk;
	struct auth_tx t;
	struct auth_msg msg;
	const char *why;
	uint8_t sqe[64], buf[4096], c[32] = {0};
	uint32_t len;
	auth_key_parse("DHHC-1:01:" B64_32 ":", "h", &hk);
	auth_tx_init(&t, &hk, NULL, HOSTNQN, SUBNQN, 0, 9);
	t.hashes = 1u << AUTH_HASH_SHA384;
	t.dhgroups = (1u << AUTH_DH_FFDHE2048) | (1u << AUTH_DH_FFDHE4096);
	CHECK_EQ(auth_tx_next(&t, sqe, buf, sizeof(buf), &len), 0);
	CHECK_EQ(auth_msg_parse(buf, len, &msg, &why), 0);
	CHECK_EQ(msg.nhash, 1);
	CHECK_EQ(msg.hashes[0], AUTH_HASH_SHA384);
	CHECK_EQ(msg.ndh, 2);
	CHECK_EQ(msg.dhgroups[0], AUTH_DH_FFDHE2048);
	CHECK_EQ(msg.dhgroups[1], AUTH_DH_FFDHE4096);
	/* a controller that chooses the null group all the same is refused */
	CHECK_EQ(auth_tx_answer(&t, 0, NULL, buf, len), AUTH_TX_MORE);
	CHECK_EQ(auth_tx_next(&t, sqe, buf, sizeof(buf), &len), 0);
	struct auth_msg ch = {.id = AUTH_MSG_CHALLENGE, .tid = 9, .hl = 48, .hashid = AUTH_HASH_SHA384,
			      .dhgid = AUTH_DH_NULL, .cval = c};
	uint8_t c48[48] = {0};
	ch.cval = c48;
	size_t n = auth_msg_encode(&ch, buf, sizeof(buf));
	CHECK_EQ(auth_tx_answer(&t, 0, NULL, buf, n), AUTH_TX_MORE);
	CHECK_EQ(t.step, AUTH_FAILURE2);
	CHECK_EQ(t.fail_exp, AUTH_FAIL_DHGROUP_UNUSABLE);
	CHECK(strstr(t.why, "null") != NULL);
}

/* A controller secret means the controller proves itself: a Connect
 * response without ATR then starts a transaction from the host, unless the
 * user accepts unauthenticated controllers. */
TEST(a_controller_secret_authenticates_the_controller_even_unasked)
{
	bool need, hi;
	CHECK_EQ(auth_required(0, true, true, false, 0, SUBNQN, HOSTNQN, &need, &hi), 0);
	CHECK(need && hi);
	CHECK_EQ(auth_required(0, true, true, false, 3, SUBNQN, HOSTNQN, &need, &hi), 0); /* I/O queues too */
	CHECK(need && hi);
	CHECK_EQ(auth_required(0, true, true, true, 0, SUBNQN, HOSTNQN, &need, &hi), 0); /* the opt-in */
	CHECK(!need && !hi);
	CHECK_EQ(auth_required(0, true, false, false, 0, SUBNQN, HOSTNQN, &need, &hi), 0); /* host secret only */
	CHECK(!need && !hi);
	CHECK_EQ(auth_required(NVMF_CONNECT_AUTHREQ_ATR, true, true, false, 0, SUBNQN, HOSTNQN, &need, &hi), 0);
	CHECK(need && !hi);
	CHECK_EQ(auth_required(NVMF_CONNECT_AUTHREQ_ATR, true, true, true, 0, SUBNQN, HOSTNQN, &need, &hi), 0);
	CHECK(need && !hi); /* asked for: the opt-in changes nothing */
	CHECK_EQ(auth_required(NVMF_CONNECT_AUTHREQ_ATR, false, false, false, 0, SUBNQN, HOSTNQN, &need, &hi),
		 NVMEOF_EINVAL);
	CHECK_EQ(auth_required(NVMF_CONNECT_AUTHREQ_ASCR, true, true, false, 0, SUBNQN, HOSTNQN, &need, &hi),
		 NVMEOF_ENOTSUP);
}

TEST(sqes_name_the_security_protocol)
{
	uint8_t sqe[64];
	nvmf_sqe_auth_send(sqe, 7, 72);
	CHECK_EQ(sqe[0], 0x7f);
	CHECK_EQ(sqe[4], 0x05);
	CHECK_EQ(get_le16(sqe + 2), 7);
	CHECK_EQ(sqe[41], 0x01);
	CHECK_EQ(sqe[42], 0x01);
	CHECK_EQ(sqe[43], 0xe9);
	CHECK_EQ(get_le32(sqe + 44), 72);
	nvmf_sqe_auth_recv(sqe, 0, 4096);
	CHECK_EQ(sqe[4], 0x06);
	CHECK_EQ(sqe[43], 0xe9);
	CHECK_EQ(get_le32(sqe + 44), 4096);
}

static void round_trip(const struct auth_msg *m, size_t want_len)
{
	uint8_t buf[2048];
	struct auth_msg p;
	const char *why = "";
	size_t n = auth_msg_encode(m, buf, sizeof(buf));
	CHECK_EQ(n, want_len);
	CHECK_EQ(auth_msg_parse(buf, n, &p, &why), 0);
	CHECK_EQ(p.id, m->id);
	CHECK_EQ(p.tid, m->tid);
	CHECK_EQ(p.hl, m->id == AUTH_MSG_SUCCESS2 ? 0 : m->hl);
	CHECK_EQ(p.seqnum, m->seqnum);
	CHECK_EQ(p.dhvlen, m->dhvlen);
	CHECK_EQ(p.hashid, m->hashid);
	CHECK_EQ(p.dhgid, m->dhgid);
	CHECK_EQ(p.valid, m->valid);
	CHECK_EQ(p.rescode_exp, m->rescode_exp);
	if (m->cval)
		CHECK_MEM(p.cval, m->cval, m->hl);
	if (m->rval)
		CHECK_MEM(p.rval, m->rval, m->hl);
	if (m->dhv)
		CHECK_MEM(p.dhv, m->dhv, m->dhvlen);
	/* cut short by one byte: refused, never read past */
	if (n > 8) {
		uint8_t *cut = malloc(n - 1);
		memcpy(cut, buf, n - 1);
		CHECK(auth_msg_parse(cut, n - 1, &p, &why) < 0);
		free(cut);
	}
	CHECK_EQ(auth_msg_encode(m, buf, want_len - 1), 0); /* no room: nothing */
}

TEST(messages_round_trip)
{
	uint8_t r[48], c[48], dh[256];
	for (int i = 0; i < 48; i++) {
		r[i] = (uint8_t)i;
		c[i] = (uint8_t)(0x80 + i);
	}
	for (int i = 0; i < 256; i++)
		dh[i] = (uint8_t)(255 - i);
	struct auth_msg neg = {.id = AUTH_MSG_NEGOTIATE, .tid = 0x1234, .nhash = 3, .hashes = {1, 2, 3},
			       .ndh = 6, .dhgroups = {0, 1, 2, 3, 4, 5}};
	round_trip(&neg, 72);
	uint8_t buf[128];
	struct auth_msg p;
	const char *why;
	CHECK_EQ(auth_msg_encode(&neg, buf, sizeof(buf)), 72);
	CHECK_EQ(buf[0], AUTH_TYPE_COMMON);
	CHECK_EQ(buf[7], 1);   /* NAPD */
	CHECK_EQ(buf[8], 1);   /* DH-HMAC-CHAP */
	CHECK_EQ(buf[10], 3);  /* HALEN */
	CHECK_EQ(buf[11], 6);  /* DHLEN */
	CHECK_EQ(buf[12 + 30 + 5], 5); /* the DH groups' list starts 30 bytes after the hashes' */
	CHECK_EQ(auth_msg_parse(buf, 72, &p, &why), 0);
	CHECK_EQ(p.ndh, 6);
	CHECK_MEM(p.dhgroups, neg.dhgroups, 6);
	struct auth_msg ch = {.id = AUTH_MSG_CHALLENGE, .tid = 9, .hl = 48, .hashid = 2, .dhgid = 1,
			      .dhvlen = 256, .seqnum = 0xdeadbeef, .cval = c, .dhv = dh};
	round_trip(&ch, 16 + 48 + 256);
	struct auth_msg ch0 = {.id = AUTH_MSG_CHALLENGE, .tid = 9, .hl = 32, .hashid = 1, .seqnum = 5, .cval = c};
	round_trip(&ch0, 16 + 32);
	struct auth_msg rp = {.id = AUTH_MSG_REPLY, .tid = 9, .hl = 48, .valid = 1, .dhvlen = 256,
			      .seqnum = 77, .rval = r, .cval = c, .dhv = dh};
	round_trip(&rp, 16 + 96 + 256);
	struct auth_msg s1 = {.id = AUTH_MSG_SUCCESS1, .tid = 9, .hl = 48, .valid = 1, .rval = r};
	round_trip(&s1, 16 + 48);
	struct auth_msg s1n = {.id = AUTH_MSG_SUCCESS1, .tid = 9, .hl = 48};
	round_trip(&s1n, 16);
	struct auth_msg s2 = {.id = AUTH_MSG_SUCCESS2, .tid = 9};
	round_trip(&s2, 16);
	struct auth_msg f1 = {.id = AUTH_MSG_FAILURE1, .tid = 9, .rescode = 1, .rescode_exp = AUTH_FAIL_HASH_UNUSABLE};
	round_trip(&f1, 8);
	struct auth_msg f2 = {.id = AUTH_MSG_FAILURE2, .tid = 9, .rescode = 1, .rescode_exp = AUTH_FAIL_FAILED};
	round_trip(&f2, 8);
	CHECK_STR(auth_failure_name(AUTH_FAIL_HASH_UNUSABLE), "Hash function not usable");
	CHECK_STR(auth_failure_name(AUTH_FAIL_DHGROUP_UNUSABLE), "DH group not usable");
}

TEST(malformed_messages_are_refused)
{
	uint8_t b[64] = {0};
	struct auth_msg m;
	const char *why = NULL;
	CHECK(auth_msg_parse(b, 7, &m, &why) < 0);          /* no header */
	b[0] = AUTH_TYPE_DHCHAP;
	b[1] = 0x42;
	CHECK(auth_msg_parse(b, 16, &m, &why) < 0);         /* unknown AUTH-Id */
	CHECK(why && strstr(why, "AUTH-Id"));
	b[1] = AUTH_MSG_CHALLENGE;
	b[6] = 32;
	CHECK(auth_msg_parse(b, 47, &m, &why) < 0);         /* C cut short */
	CHECK_EQ(auth_msg_parse(b, 48, &m, &why), 0);
	put_le16(b + 10, 0xffff);                           /* a DH value past the end */
	CHECK(auth_msg_parse(b, 64, &m, &why) < 0);
	b[0] = AUTH_TYPE_COMMON;                            /* a Challenge must be DH-HMAC-CHAP's */
	put_le16(b + 10, 0);
	CHECK(auth_msg_parse(b, 64, &m, &why) < 0);
	b[1] = AUTH_MSG_NEGOTIATE;
	b[7] = 2;                                           /* two descriptors claimed, none there */
	CHECK(auth_msg_parse(b, 64, &m, &why) < 0);
}

/* ---- whole transactions against a controller made of the same parts ---- */
struct fake_ctrl {
	const struct auth_key *host_key, *ctrl_key; /* what the controller holds */
	uint8_t hashid, dhgid;
	uint8_t c1[64], pub[AUTH_DH_MAX], skey[AUTH_DH_MAX];
	void *dh;
	uint32_t s1;
	uint16_t tid;
	int step;
	uint8_t pending[2048];
	size_t pending_len;
	uint8_t got_failure2, got_success2;
	bool corrupt_ctrl_response;
	bool omit_ctrl_response; /* a Success1 with RVALID 0 although asked for */
};

static void ctrl_send(struct fake_ctrl *f, const uint8_t *b, size_t n)
{
	struct auth_msg m, out;
	const char *why;
	uint8_t key[64], chal[64], resp[64];
	size_t klen, hl = auth_hash_len(f->hashid);
	CHECK_EQ(auth_msg_parse(b, n, &m, &why), 0);
	memset(&out, 0, sizeof(out));
	out.tid = m.tid;
	switch (m.id) {
	case AUTH_MSG_NEGOTIATE:
		f->tid = m.tid;
		CHECK_EQ(m.sc_c, 0);
		CHECK(memchr(m.hashes, f->hashid, m.nhash) != NULL);
		out.id = AUTH_MSG_CHALLENGE;
		out.hl = (uint8_t)hl;
		out.hashid = f->hashid;
		out.dhgid = f->dhgid;
		f->s1 = 0x11223344;
		out.seqnum = f->s1;
		auth_random(f->c1, hl);
		out.cval = f->c1;
		if (f->dhgid) {
			CHECK_EQ(auth_dh_generate(f->dhgid, &f->dh, f->pub), 0);
			out.dhvlen = (uint16_t)auth_dh_len(f->dhgid);
			out.dhv = f->pub;
		}
		break;
	case AUTH_MSG_REPLY:
		CHECK_EQ(m.hl, hl);
		/* S2 is never 0 (NVMe Base 2.2 8.3.4.5.4 reserves it for a
		 * secure channel's PSK request), one-way too; one-way, CVALID
		 * 0 and C2 all zeros */
		CHECK(m.seqnum != 0);
		if (!m.valid) {
			static const uint8_t zero[AUTH_HASH_MAX];
			CHECK_MEM(m.cval, zero, hl);
		}
		memcpy(chal, f->c1, hl);
		if (f->dhgid) {
			CHECK_EQ(m.dhvlen, auth_dh_len(f->dhgid));
			CHECK_EQ(auth_dh_derive(f->dh, f->dhgid, m.dhv, m.dhvlen, f->skey), 0);
			CHECK_EQ(auth_augment(f->hashid, f->skey, m.dhvlen, f->c1, chal), 0);
		}
		auth_key_transform(f->host_key, HOSTNQN, key, &klen);
		auth_response(f->hashid, key, klen, chal, f->s1, f->tid, false, HOSTNQN, SUBNQN, resp);
		if (!auth_equal(resp, m.rval, hl)) {
			out.id = AUTH_MSG_FAILURE1;
			out.rescode = 1;
			out.rescode_exp = AUTH_FAIL_FAILED;
			break;
		}
		out.id = AUTH_MSG_SUCCESS1;
		out.hl = (uint8_t)hl;
		if (m.valid) {
			memcpy(chal, m.cval, hl);
			if (f->dhgid)
				auth_augment(f->hashid, f->skey, auth_dh_len(f->dhgid), m.cval, chal);
			auth_key_transform(f->ctrl_key, SUBNQN, key, &klen);
			auth_response(f->hashid, key, klen, chal, m.seqnum, f->tid, true, HOSTNQN, SUBNQN, resp);
			if (f->corrupt_ctrl_response)
				resp[0] ^= 1;
			out.valid = !f->omit_ctrl_response;
			out.rval = f->omit_ctrl_response ? NULL : resp;
		}
		break;
	case AUTH_MSG_SUCCESS2:
		f->got_success2 = 1;
		return;
	case AUTH_MSG_FAILURE2:
		f->got_failure2 = m.rescode_exp;
		return;
	default:
		CHECK(0);
		return;
	}
	f->pending_len = auth_msg_encode(&out, f->pending, sizeof(f->pending));
	CHECK(f->pending_len > 0);
}

/* Drives the host's transaction against f; the final return code. */
static int drive_deferred; /* how many times auth_tx_answer stopped before the DH step */
static int drive(struct auth_tx *t, struct fake_ctrl *f)
{
	static uint8_t buf[4096];
	uint8_t sqe[64];
	for (int n = 0; n < 10; n++) {
		uint32_t len = 0;
		int rc = auth_tx_next(t, sqe, buf, sizeof(buf), &len);
		if (rc)
			return rc;
		if (sqe[4] == NVMF_FCTYPE_AUTH_SEND) {
			CHECK_EQ(get_le32(sqe + 44), len);
			ctrl_send(f, buf, len);
		} else {
			CHECK_EQ(sqe[4], NVMF_FCTYPE_AUTH_RECV);
			CHECK(f->pending_len > 0 && f->pending_len <= len);
			memcpy(buf, f->pending, f->pending_len);
			f->pending_len = 0;
		}
		rc = auth_tx_answer(t, 0, NULL, buf, len);
		if (rc == AUTH_TX_DH) { /* defer_dh: the caller runs the DH step, here at once */
			drive_deferred++;
			rc = auth_tx_dh_step(t);
		}
		if (rc != AUTH_TX_MORE)
			return rc;
	}
	return -100;
}

static const char *const HK = "DHHC-1:01:" B64_32 ":";
static const char *const CK = "DHHC-1:03:" B64_64 ":";

static int transaction(uint8_t hashid, uint8_t dhgid, bool bidir, const char *ctrl_holds_host,
		       const char *ctrl_holds_ctrl, bool corrupt, struct fake_ctrl *f)
{
	struct auth_key hk, ck, fhk, fck;
	struct auth_tx t;
	auth_key_parse(HK, "h", &hk);
	auth_key_parse(CK, "c", &ck);
	auth_key_parse(ctrl_holds_host, "h", &fhk);
	auth_key_parse(ctrl_holds_ctrl, "c", &fck);
	memset(f, 0, sizeof(*f));
	f->host_key = &fhk;
	f->ctrl_key = &fck;
	f->hashid = hashid;
	f->dhgid = dhgid;
	f->corrupt_ctrl_response = corrupt;
	auth_tx_init(&t, &hk, bidir ? &ck : NULL, HOSTNQN, SUBNQN, 3, 0x55);
	int rc = drive(&t, f);
	auth_tx_clear(&t);
	auth_dh_free(f->dh);
	f->dh = NULL;
	return rc;
}

TEST(transactions_for_every_hash_and_group)
{
	struct fake_ctrl f;
	for (uint8_t h = 1; h <= 3; h++)
		for (uint8_t g = 0; g <= 1; g++)
			for (int bidir = 0; bidir <= 1; bidir++) {
				int rc = transaction(h, g, bidir, HK, CK, false, &f);
				if (rc)
					fprintf(stderr, "    %s %s %s: %s\n", auth_hash_name(h),
						auth_dhgroup_name(g), bidir ? "bidirectional" : "", nvmeof_errmsg());
				CHECK_EQ(rc, 0);
				CHECK_EQ(f.got_success2, bidir);
				CHECK_EQ(f.got_failure2, 0);
			}
	CHECK_EQ(transaction(AUTH_HASH_SHA512, AUTH_DH_FFDHE4096, true, HK, CK, false, &f), 0);
}

/* A caller that must not block (a queue's poll after a reconnect) asks
 * for the DH step apart: the Challenge's answer computes nothing (no DH
 * value of ours yet, nothing to send), and the step then completes the
 * same transaction. */
TEST(the_dh_step_can_run_apart_from_the_challenges_answer)
{
	struct fake_ctrl f;
	struct auth_key hk, ck;
	static struct auth_tx t;
	static uint8_t buf[4096], zero[AUTH_DH_MAX];
	uint8_t sqe[64];
	uint32_t len = 0;
	auth_key_parse(HK, "h", &hk);
	auth_key_parse(CK, "c", &ck);
	memset(&f, 0, sizeof(f));
	f.host_key = &hk;
	f.ctrl_key = &ck;
	f.hashid = AUTH_HASH_SHA256;
	f.dhgid = AUTH_DH_FFDHE2048;
	auth_tx_init(&t, &hk, &ck, HOSTNQN, SUBNQN, 3, 0x56);
	t.defer_dh = true;
	CHECK(auth_tx_dh_step(&t) < 0); /* out of turn: refused, nothing computed */
	CHECK_EQ(auth_tx_next(&t, sqe, buf, sizeof(buf), &len), 0); /* Negotiate */
	ctrl_send(&f, buf, len);
	CHECK_EQ(auth_tx_answer(&t, 0, NULL, buf, len), AUTH_TX_MORE);
	CHECK_EQ(auth_tx_next(&t, sqe, buf, sizeof(buf), &len), 0); /* AUTH_Receive Challenge */
	memcpy(buf, f.pending, f.pending_len);
	CHECK_EQ(auth_tx_answer(&t, 0, NULL, buf, len), AUTH_TX_DH);
	CHECK(!memcmp(t.pub, zero, sizeof(zero))); /* no key of ours generated in the answer */
	CHECK(auth_tx_next(&t, sqe, buf, sizeof(buf), &len) < 0); /* no Reply before the step */
	memset(buf, 0xa5, sizeof(buf)); /* the step reads nothing of the Challenge's buffer */
	CHECK_EQ(auth_tx_dh_step(&t), AUTH_TX_MORE);
	CHECK(memcmp(t.pub, zero, auth_dh_len(AUTH_DH_FFDHE2048)) != 0);
	drive_deferred = 0;
	CHECK_EQ(drive(&t, &f), 0); /* Reply, Success1, Success2 */
	CHECK_EQ(f.got_success2, 1);
	CHECK_EQ(f.got_failure2, 0);
	CHECK_EQ(drive_deferred, 0);
	auth_tx_clear(&t);
	auth_dh_free(f.dh);
	/* without defer_dh, drive's transactions never stop before the step */
	CHECK_EQ(transaction(AUTH_HASH_SHA256, AUTH_DH_FFDHE2048, true, HK, CK, false, &f), 0);
	CHECK_EQ(drive_deferred, 0);
}

TEST(wrong_secrets_fail_clearly)
{
	struct fake_ctrl f;
	/* the controller holds another host secret: it answers Failure1 */
	int rc = transaction(1, 0, false, "DHHC-1:00:" B64_32 ":", CK, false, &f);
	CHECK(rc < 0);
	CHECK(strstr(nvmeof_errmsg(), "Authentication failed") != NULL);
	CHECK(strstr(nvmeof_errmsg(), "host secret") != NULL);
	/* it holds another controller secret: we send Failure2 and say so */
	rc = transaction(2, 1, true, HK, "DHHC-1:02:" B64_48 ":", false, &f);
	CHECK(rc < 0);
	CHECK_EQ(f.got_failure2, AUTH_FAIL_FAILED);
	CHECK_EQ(f.got_success2, 0);
	CHECK(strstr(nvmeof_errmsg(), "controller secret") != NULL);
	rc = transaction(3, 0, true, HK, CK, true, &f);
	CHECK(rc < 0);
	CHECK_EQ(f.got_failure2, AUTH_FAIL_FAILED);
}

TEST(a_challenge_we_cannot_use_ends_with_failure2)
{
	struct auth_key hk;
	struct auth_tx t;
	uint8_t sqe[64], buf[4096], c[32] = {0};
	uint32_t len;
	auth_key_parse(HK, "h", &hk);
	auth_tx_init(&t, &hk, NULL, HOSTNQN, SUBNQN, 0, 7);
	CHECK_EQ(auth_tx_next(&t, sqe, buf, sizeof(buf), &len), 0);
	CHECK_EQ(auth_tx_answer(&t, 0, NULL, buf, len), AUTH_TX_MORE);
	CHECK_EQ(auth_tx_next(&t, sqe, buf, sizeof(buf), &len), 0);
	struct auth_msg ch = {.id = AUTH_MSG_CHALLENGE, .tid = 7, .hl = 32, .hashid = 9, .cval = c};
	size_t n = auth_msg_encode(&ch, buf, sizeof(buf));
	CHECK_EQ(auth_tx_answer(&t, 0, NULL, buf, n), AUTH_TX_MORE);
	CHECK_EQ(auth_tx_next(&t, sqe, buf, sizeof(buf), &len), 0);
	struct auth_msg m;
	const char *why;
	CHECK_EQ(auth_msg_parse(buf, len, &m, &why), 0);
	CHECK_EQ(m.id, AUTH_MSG_FAILURE2);
	CHECK_EQ(m.rescode_exp, AUTH_FAIL_HASH_UNUSABLE);
	CHECK_EQ(auth_tx_answer(&t, 0, NULL, NULL, 0), NVMEOF_ENOTSUP);
	CHECK(strstr(nvmeof_errmsg(), "hash function 9") != NULL);
	/* a transaction ID that is not ours */
	auth_tx_init(&t, &hk, NULL, HOSTNQN, SUBNQN, 0, 7);
	auth_tx_next(&t, sqe, buf, sizeof(buf), &len);
	auth_tx_answer(&t, 0, NULL, buf, len);
	auth_tx_next(&t, sqe, buf, sizeof(buf), &len);
	ch.hashid = 1;
	ch.tid = 8;
	n = auth_msg_encode(&ch, buf, sizeof(buf));
	CHECK_EQ(auth_tx_answer(&t, 0, NULL, buf, n), AUTH_TX_MORE);
	CHECK_EQ(t.step, AUTH_FAILURE2);
	CHECK_EQ(t.fail_exp, AUTH_FAIL_INCORRECT_PAYLOAD);
}

TEST(an_nvme_error_names_the_step)
{
	struct auth_key hk;
	struct auth_tx t;
	uint8_t sqe[64], buf[256];
	uint32_t len;
	auth_key_parse(HK, "h", &hk);
	auth_tx_init(&t, &hk, NULL, HOSTNQN, SUBNQN, 2, 7);
	auth_tx_next(&t, sqe, buf, sizeof(buf), &len);
	struct nvmeof_cpl cpl = {.err = NVMEOF_ENVME, .status = 0x0002, .opc = 0x7f, .fctype = 0x05};
	CHECK_EQ(auth_tx_answer(&t, NVMEOF_ENVME, &cpl, NULL, 0), NVMEOF_ENVME);
	CHECK(strstr(nvmeof_errmsg(), "AUTH_Send Negotiate") != NULL);
	CHECK(strstr(nvmeof_errmsg(), "queue 2") != NULL);
	/* the connection dropped after our response: what nvmet does with a
	 * wrong host secret, and what a failed link does; it stays a transport
	 * failure, which a connect tries again (only Failure1 is final) */
	for (int e = 0; e < 2; e++) {
		int lost = e ? NVMEOF_ETRANSPORT : NVMEOF_ECLOSED;
		auth_tx_init(&t, &hk, NULL, HOSTNQN, SUBNQN, 0, 7);
		t.step = e ? AUTH_REPLY : AUTH_RECV_SUCCESS1;
		CHECK_EQ(auth_tx_answer(&t, lost, NULL, NULL, 0), lost);
		CHECK(strstr(nvmeof_errmsg(), "wrong host secret") != NULL);
		CHECK_EQ(cr_fabrics(lost, 0, false), CR_TRANSIENT);
	}
	/* before it, a loss is only a loss */
	auth_tx_init(&t, &hk, NULL, HOSTNQN, SUBNQN, 0, 7);
	nvmeof_err(NVMEOF_ECLOSED, "queue 0 lost its connection");
	CHECK_EQ(auth_tx_answer(&t, NVMEOF_ECLOSED, NULL, NULL, 0), NVMEOF_ECLOSED);
	CHECK(strstr(nvmeof_errmsg(), "host secret") == NULL);
}

TEST(a_failure1_is_final)
{
	struct fake_ctrl f;
	int rc = transaction(1, 0, false, "DHHC-1:00:" B64_32 ":", CK, false, &f);
	CHECK_EQ(rc, NVMEOF_EINVAL);
	CHECK_EQ(cr_fabrics(rc, 0, false), CR_FINAL);
}

/* The host's answer to a crafted message in place of the Challenge: a
 * Failure2 with explanation exp goes out, then the error. */
static int violation(const uint8_t *msg, size_t n, uint8_t exp)
{
	struct auth_key hk;
	struct auth_tx t;
	static uint8_t buf[4096];
	uint8_t sqe[64];
	uint32_t len;
	auth_key_parse(HK, "h", &hk);
	auth_tx_init(&t, &hk, NULL, HOSTNQN, SUBNQN, 1, 7);
	CHECK_EQ(auth_tx_next(&t, sqe, buf, sizeof(buf), &len), 0); /* Negotiate */
	CHECK_EQ(auth_tx_answer(&t, 0, NULL, buf, len), AUTH_TX_MORE);
	CHECK_EQ(auth_tx_next(&t, sqe, buf, sizeof(buf), &len), 0); /* AUTH_Receive */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, msg, n);
	CHECK_EQ(auth_tx_answer(&t, 0, NULL, buf, n), AUTH_TX_MORE);
	CHECK_EQ(t.step, AUTH_FAILURE2);
	CHECK_EQ(t.fail_exp, exp);
	CHECK_EQ(auth_tx_next(&t, sqe, buf, sizeof(buf), &len), 0); /* Failure2 */
	int rc = auth_tx_answer(&t, 0, NULL, NULL, 0);
	auth_tx_clear(&t);
	return rc;
}

/* A controller that breaks the protocol is not trusted on a second try
 * either: each violation ends the transaction with the final code (as a
 * Failure1 does), which neither a connect nor a reconnect tries again. */
TEST(protocol_violations_are_final)
{
	static uint8_t b[2048], c[64], dh[300];
	struct auth_msg ch = {.id = AUTH_MSG_CHALLENGE, .tid = 7, .hl = 32, .hashid = AUTH_HASH_SHA256,
			      .seqnum = 1, .cval = c};
	const char *want[6] = {"hash length 48", "DH value of 4 bytes", "AUTH-Id 0x03", "transaction ID 8",
			       "Success1 carries no controller response", "AUTH_Receive Challenge: "};
	for (int k = 0; k < 6; k++) {
		struct auth_msg m = ch;
		size_t n;
		uint8_t exp = AUTH_FAIL_INCORRECT_PAYLOAD;
		int rc;
		if (k == 4) { /* bidirectional, and the Success1 lacks the controller's response */
			struct fake_ctrl f;
			memset(&f, 0, sizeof(f));
			rc = transaction(AUTH_HASH_SHA256, AUTH_DH_NULL, true, HK, CK, false, &f);
			CHECK_EQ(rc, 0); /* the fixture itself works */
			struct auth_key hk, ck;
			struct auth_tx t;
			auth_key_parse(HK, "h", &hk);
			auth_key_parse(CK, "c", &ck);
			memset(&f, 0, sizeof(f));
			f.host_key = &hk;
			f.ctrl_key = &ck;
			f.hashid = AUTH_HASH_SHA256;
			f.omit_ctrl_response = true;
			auth_tx_init(&t, &hk, &ck, HOSTNQN, SUBNQN, 3, 0x57);
			rc = drive(&t, &f);
			CHECK_EQ(f.got_failure2, AUTH_FAIL_INCORRECT_PAYLOAD);
			auth_tx_clear(&t);
		} else {
			if (k == 0)
				m.hl = 48; /* SHA-256's is 32 */
			if (k == 1) { /* the null group carries no DH value */
				m.dhvlen = 4;
				m.dhv = dh;
			}
			if (k == 2) {
				m = (struct auth_msg){.id = AUTH_MSG_SUCCESS1, .tid = 7, .hl = 32};
				exp = AUTH_FAIL_INCORRECT_MESSAGE;
			}
			if (k == 3)
				m.tid = 8;
			n = auth_msg_encode(&m, b, sizeof(b));
			CHECK(n > 0);
			if (k == 5)
				n = 20; /* C cut short: malformed */
			rc = violation(b, n, exp);
		}
		if (!strstr(nvmeof_errmsg(), want[k]))
			fprintf(stderr, "    case %d: %s\n", k, nvmeof_errmsg());
		CHECK(strstr(nvmeof_errmsg(), want[k]) != NULL);
		CHECK_EQ(rc, NVMEOF_EINVAL);
		CHECK_EQ(cr_fabrics(rc, 0, false), CR_FINAL);
		CHECK(cr_reconnect_final(rc, 0));
	}
	/* the controller's refusal and a wrong controller response: the same */
	struct fake_ctrl f;
	CHECK(cr_reconnect_final(transaction(1, 0, false, "DHHC-1:00:" B64_32 ":", CK, false, &f), 0));
	CHECK(cr_reconnect_final(transaction(1, 0, true, HK, CK, true, &f), 0));
	/* a lost connection is not */
	CHECK(!cr_reconnect_final(NVMEOF_ECLOSED, 0));
	CHECK(!cr_reconnect_final(NVMEOF_ETRANSPORT, 0));
	CHECK(!cr_reconnect_final(NVMEOF_ETIMEDOUT, 0));
}

/* A target that answers an AUTH_Send with an NVMe status (it refuses the
 * command; the real target cannot be made to): what the connect's retry
 * policy reads is that status, classed by its SCT, SC and DNR as the
 * Connect's own would be, and the message names it. */
static uint16_t auth_send_status;
static uint32_t connect_cdw0 = NVMF_CONNECT_AUTHREQ_ATR; /* controller 0, authentication required */
static enum fw_action status_responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				       uint8_t *cqe)
{
	(void)ctx, (void)sge, (void)nsge;
	if (sqe[0] == 0x7f && sqe[4] == NVMF_FCTYPE_CONNECT)
		put_le32(cqe, connect_cdw0);
	else if (sqe[0] == 0x7f && sqe[4] == NVMF_FCTYPE_AUTH_SEND)
		put_le16(cqe + 14, (uint16_t)(auth_send_status << 1));
	return FW_RESPOND;
}

TEST(an_nvme_status_on_auth_send_is_classed_by_its_dnr)
{
	static const struct {
		uint16_t status;
		enum cr_class cls;
		const char *name;
	} v[] = {
		{0x0021, CR_TRANSIENT, "Command Interrupted"},      /* SCT 0, SC 21h, DNR 0 */
		{0x4021, CR_FINAL, "Command Interrupted"},          /* ... DNR 1 */
		{0x4002, CR_FINAL, "Invalid Field in Command"},     /* what nvmet answers a bad SECP */
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct nvmeof_ctrl *c = calloc(1, sizeof(*c));
		struct auth_key *hk = calloc(1, sizeof(*hk));
		struct fake_wire *fw = fw_new(8, status_responder, NULL);
		struct nvmeof_queue *q = NULL;
		struct q_params p = {.qid = 1, .depth = 8, .cmd_timeout_ms = 30000, .wait_mode = NVMEOF_WAIT_POLL};
		CHECK_EQ(auth_key_parse(HK, "h", hk), 0);
		c->host_key = hk;
		c->auth_hashes = AUTH_HASHES_ALL;
		c->auth_dhgroups = AUTH_DHGROUPS_ALL;
		c->o.cmd_timeout_ms = 30000;
		snprintf(c->subnqn, sizeof(c->subnqn), "%s", SUBNQN);
		snprintf(c->hostnqn, sizeof(c->hostnqn), "%s", HOSTNQN);
		CHECK_EQ(q_open_fake(&p, fw, &q), 0);
		auth_send_status = v[i].status;
		uint16_t status = 0xffff;
		int rc = ctrl_fabrics_connect(c, q, 1, 8, 0, 0, NULL, &status);
		CHECK_EQ(rc, NVMEOF_ENVME);
		CHECK_EQ(status, v[i].status);
		CHECK_EQ(cr_fabrics(rc, status, false), v[i].cls);
		CHECK_EQ(cr_reconnect_final(rc, status), v[i].cls == CR_FINAL);
		CHECK(strstr(nvmeof_errmsg(), "AUTH_Send Negotiate") != NULL);
		CHECK(strstr(nvmeof_errmsg(), v[i].name) != NULL);
		q_close(q);
		fw_free(fw);
		free(hk);
		free(c);
	}
}

/* A controller that does not ask for authentication, challenged because a
 * controller secret is set, and answering the Negotiate with a status that
 * means it does no in-band authentication (Invalid Opcode, Invalid Field,
 * Command Sequence Error), without DNR: asking again changes nothing, and
 * the controller must not be taken unauthenticated, so the connect and a
 * reconnect stop at once instead of trying until ctrl_loss_tmo. Command
 * Interrupted stays worth another try. */
TEST(a_host_started_negotiate_refused_as_unsupported_is_final)
{
	static const struct {
		uint16_t status;
		bool final;
		const char *name;
	} v[] = {
		{0x0001, true, "Invalid Command Opcode"},
		{0x0002, true, "Invalid Field in Command"},
		{0x000c, true, "Command Sequence Error"},
		{0x0021, false, "Command Interrupted"},
	};
	connect_cdw0 = 0; /* the controller does not ask */
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct nvmeof_ctrl *c = calloc(1, sizeof(*c));
		struct auth_key *hk = calloc(1, sizeof(*hk)), *ck = calloc(1, sizeof(*ck));
		struct fake_wire *fw = fw_new(8, status_responder, NULL);
		struct nvmeof_queue *q = NULL;
		struct q_params p = {.qid = 1, .depth = 8, .cmd_timeout_ms = 30000, .wait_mode = NVMEOF_WAIT_POLL};
		CHECK_EQ(auth_key_parse(HK, "h", hk), 0);
		CHECK_EQ(auth_key_parse(CK, "c", ck), 0);
		c->host_key = hk;
		c->ctrl_key = ck;
		c->auth_hashes = AUTH_HASHES_ALL;
		c->auth_dhgroups = AUTH_DHGROUPS_ALL;
		c->o.cmd_timeout_ms = 30000;
		snprintf(c->subnqn, sizeof(c->subnqn), "%s", SUBNQN);
		snprintf(c->hostnqn, sizeof(c->hostnqn), "%s", HOSTNQN);
		CHECK_EQ(q_open_fake(&p, fw, &q), 0);
		auth_send_status = v[i].status;
		uint16_t status = 0xffff;
		int rc = ctrl_fabrics_connect(c, q, 1, 8, 0, 0, NULL, &status);
		if (!strstr(nvmeof_errmsg(), v[i].name) || cr_reconnect_final(rc, status) != v[i].final)
			fprintf(stderr, "    case %zu: rc %d status %#x: %s\n", i, rc, status, nvmeof_errmsg());
		CHECK(rc < 0);
		CHECK_EQ(cr_fabrics(rc, status, false) == CR_FINAL, v[i].final);
		CHECK_EQ(cr_reconnect_final(rc, status), v[i].final);
		CHECK(strstr(nvmeof_errmsg(), "AUTH_Send Negotiate") != NULL);
		CHECK(strstr(nvmeof_errmsg(), v[i].name) != NULL);
		CHECK(strstr(nvmeof_errmsg(), "did not ask for authentication") != NULL);
		if (v[i].final)
			CHECK(strstr(nvmeof_errmsg(), "does not support in-band authentication") != NULL);
		q_close(q);
		fw_free(fw);
		free(hk);
		free(ck);
		free(c);
	}
	connect_cdw0 = NVMF_CONNECT_AUTHREQ_ATR;
}

/* An I/O queue's reconnect (reassoc.c's finish, on the queue's poll) whose
 * Connect answer does not ask for authentication (cdw0 0) while a
 * controller secret is set: the host starts the transaction itself, so
 * the first command after the Connect is an AUTH_Send Negotiate, and the
 * controller's Failure1 ends the reconnect for good, saying the controller
 * did not ask and failed the transaction. On the test wire: the test bed's
 * target cannot be made to stop asking, or to answer a Failure1, at one
 * queue's reconnect on cue. */
struct reauth_wire {
	struct nvmeof_queue *q;
	int n;                /* commands since the wire broke */
	uint8_t opc[8], fctype[8], msg_id[8];
	bool broken;
	uint16_t send_status; /* the AUTH_Send's answer; 0: success */
	struct nvmeof_ctrl *c; /* set: its association ends when command move_at is on the wire */
	int move_at;
	int calls, err;
	char msg[1024];
};
static struct reauth_wire rw;
static enum fw_action reauth_responder(void *ctx, const uint8_t *sqe, const struct ibv_sge *sge, int nsge,
				       uint8_t *cqe)
{
	(void)ctx, (void)sge, (void)nsge;
	if (!rw.broken)
		return FW_DROP; /* the read that waits through the reconnect */
	int i = rw.n++;
	if (rw.c && i == rw.move_at) /* another queue's loss */
		__atomic_add_fetch(&rw.c->assoc_gen, 1, __ATOMIC_RELAXED);
	if (i >= 8)
		return FW_RESPOND;
	rw.opc[i] = sqe[0];
	rw.fctype[i] = sqe[0] == NVME_FABRICS_OPCODE ? sqe[4] : 0;
	uint8_t *buf = q_scratch(rw.q);
	if (rw.fctype[i] == NVMF_FCTYPE_CONNECT) {
		put_le32(cqe, 0); /* controller 0, no AUTHREQ: the controller does not ask */
	} else if (rw.fctype[i] == NVMF_FCTYPE_AUTH_SEND) {
		struct auth_msg m;
		const char *why;
		rw.msg_id[i] = auth_msg_parse(buf, get_le32(sqe + 44), &m, &why) ? 0xff : m.id;
		put_le16(cqe + 14, (uint16_t)(rw.send_status << 1));
	} else if (rw.fctype[i] == NVMF_FCTYPE_AUTH_RECV) {
		struct auth_msg f = {.type = AUTH_TYPE_COMMON, .id = AUTH_MSG_FAILURE1, .tid = 0,
				     .rescode = AUTH_FAIL_REASON_FAILED, .rescode_exp = AUTH_FAIL_HASH_UNUSABLE};
		memset(buf, 0, get_le32(sqe + 44));
		CHECK(auth_msg_encode(&f, buf, get_le32(sqe + 44)) > 0);
	}
	return FW_RESPOND;
}
static void reauth_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	(void)arg;
	rw.calls++;
	rw.err = cpl->err;
	snprintf(rw.msg, sizeof(rw.msg), "%s", nvmeof_errmsg());
}
static int reauth_prepare(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	uint8_t sqe[NVME_SQE_SIZE];
	int rc = q_reopen_wire(q, 0, 0);
	if (!rc)
		rc = ctrl_connect_build(c, q, 1, (uint16_t)q_sqsize(q), 0, 0, sqe);
	if (!rc)
		q_stage_connect(q, sqe, NVMF_CONNECT_DATA_SIZE);
	return rc;
}

/* The controller of a queue that reconnects with in-band authentication:
 * both keys (bidirectional), every hash and group, room for the queue's
 * re-authentication state. */
static struct nvmeof_ctrl *reauth_ctrl_new(void)
{
	struct nvmeof_ctrl *c = calloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	c->host_key = auth_secret_alloc(sizeof(struct auth_key));
	c->ctrl_key = auth_secret_alloc(sizeof(struct auth_key));
	CHECK_EQ(auth_key_parse(HK, "h", c->host_key), 0);
	CHECK_EQ(auth_key_parse(CK, "c", c->ctrl_key), 0);
	c->auth_hashes = AUTH_HASHES_ALL;
	c->auth_dhgroups = AUTH_DHGROUPS_ALL;
	c->o.cmd_timeout_ms = 30000;
	c->nreauth = 2;
	c->reauth = calloc(c->nreauth, sizeof(*c->reauth));
	snprintf(c->subnqn, sizeof(c->subnqn), "%s", SUBNQN);
	snprintf(c->hostnqn, sizeof(c->hostnqn), "%s", HOSTNQN);
	return c;
}

static void reauth_ctrl_free(struct nvmeof_ctrl *c)
{
	ctrl_auth_free(c);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void reconnect_not_asked(uint16_t send_status)
{
	/* the real finish, work and abandon; a prepare without an association to re-create */
	const struct q_reconnect_ops ops = {.prepare = reauth_prepare,
					    .finish = ctrl_reconnect_ops.finish,
					    .work = ctrl_reconnect_ops.work,
					    .abandon = ctrl_reconnect_ops.abandon};
	struct nvmeof_ctrl *c = reauth_ctrl_new();
	struct fake_wire *fw = fw_new(8, reauth_responder, NULL);
	struct q_params p = {.qid = 1, .depth = 8, .cmd_timeout_ms = 30000, .wait_mode = NVMEOF_WAIT_POLL};
	static uint8_t data[4096];
	struct nvmeof_mr mr = {.addr = data, .len = sizeof(data), .lkey = 0x11, .rkey = 0xabc};
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 512, .lbads = 9, .nsze = 1ull << 30};
	memset(&rw, 0, sizeof(rw));
	rw.send_status = send_status;
	CHECK_EQ(q_open_fake(&p, fw, &rw.q), 0);
	q_set_reconnect(rw.q, &ops, 1, 60000);
	CHECK_EQ(nvmeof_read(rw.q, &ns, 0, 1, &mr, 0, reauth_cb, NULL), 0);
	q_set_owner(rw.q, c, 0); /* after the read: the test's region belongs to no controller */
	uint32_t connects = fw_connects(fw);
	rw.broken = true;
	fw_break(fw);
	/* bounded by the command count, not by time: each poll either makes a
	 * step or waits for the worker, and 5000 polls of 1 ms are far more
	 * than the 3 commands and one worker take */
	for (int i = 0; i < 5000 && !rw.calls; i++) {
		nvmeof_queue_poll(rw.q, 0);
		if (!rw.calls)
			nvmeof_queue_wait(rw.q, 1, 1);
	}
	if (rw.calls != 1 || !strstr(rw.msg, "did not ask"))
		fprintf(stderr, "    %d commands, %d callbacks: %s\n", rw.n, rw.calls, rw.msg);
	/* the Connect, AUTH_Send Negotiate, AUTH_Receive; nothing after a
	 * Failure1, or after a Negotiate refused */
	CHECK_EQ(rw.n, send_status ? 2 : 3);
	CHECK_EQ(rw.fctype[0], NVMF_FCTYPE_CONNECT);
	CHECK_EQ(rw.fctype[1], NVMF_FCTYPE_AUTH_SEND);
	CHECK_EQ(rw.msg_id[1], AUTH_MSG_NEGOTIATE);
	if (!send_status)
		CHECK_EQ(rw.fctype[2], NVMF_FCTYPE_AUTH_RECV);
	/* the read waited for the reconnect and fails with it, final: no
	 * second attempt although ctrl_loss_tmo is far off */
	CHECK_EQ(rw.calls, 1);
	CHECK_EQ(rw.err, NVMEOF_ECLOSED);
	CHECK(strstr(rw.msg, "not tried again") != NULL);
	CHECK(strstr(rw.msg, "the authentication failed, which is final") != NULL);
	CHECK(strstr(rw.msg, "the controller did not ask for authentication and failed") != NULL);
	if (!send_status)
		CHECK(strstr(rw.msg, "Hash function not usable") != NULL);
	else
		CHECK(strstr(rw.msg, "does not support in-band authentication") != NULL);
	CHECK_EQ(fw_connects(fw), connects + 1); /* one attempt */
	q_close(rw.q);
	fw_free(fw);
	reauth_ctrl_free(c);
}

TEST(a_reconnect_not_asked_to_authenticate_authenticates_the_controller)
{
	reconnect_not_asked(0);      /* the controller's Failure1 */
	reconnect_not_asked(0x0001); /* Invalid Command Opcode without DNR: it does no authentication */
}

/* As reauth_prepare, for the association of the time (as reassoc.c's). */
static int reauth_prepare_staged(struct nvmeof_ctrl *c, struct nvmeof_queue *q)
{
	const uint16_t crdt[3] = {0, 0, 0};
	q_stage_limits(q, 0, 0, crdt, __atomic_load_n(&c->assoc_gen, __ATOMIC_RELAXED));
	return reauth_prepare(c, q);
}

/* An I/O queue's reconnect authenticates (the controller did not ask; its
 * Failure1 ends the transaction, which is final) and another queue's loss
 * ends the association while command move_at of the attempt is on the
 * wire. Nothing more of that attempt goes out, and its failure is not
 * final: the next attempt, on the association of its time, runs the whole
 * transaction again. The commands are counted into rw. */
static void reconnect_auth_moved(int move_at)
{
	const struct q_reconnect_ops ops = {.prepare = reauth_prepare_staged,
					    .finish = ctrl_reconnect_ops.finish,
					    .work = ctrl_reconnect_ops.work,
					    .abandon = ctrl_reconnect_ops.abandon};
	struct nvmeof_ctrl *c = reauth_ctrl_new();
	struct fake_wire *fw = fw_new(8, reauth_responder, NULL);
	struct q_params p = {.qid = 1, .depth = 8, .cmd_timeout_ms = 30000, .wait_mode = NVMEOF_WAIT_POLL};
	static uint8_t data[4096];
	struct nvmeof_mr mr = {.addr = data, .len = sizeof(data), .lkey = 0x11, .rkey = 0xabc};
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 512, .lbads = 9, .nsze = 1ull << 30};
	memset(&rw, 0, sizeof(rw));
	rw.c = c;
	rw.move_at = move_at;
	CHECK_EQ(q_open_fake(&p, fw, &rw.q), 0);
	q_set_reconnect(rw.q, &ops, 1, 60000);
	q_follow_assoc(rw.q, &c->assoc_gen, 0);
	CHECK_EQ(nvmeof_read(rw.q, &ns, 0, 1, &mr, 0, reauth_cb, NULL), 0);
	q_set_owner(rw.q, c, 0);
	uint32_t connects = fw_connects(fw);
	rw.broken = true;
	fw_break(fw);
	for (int i = 0; i < 5000 && !rw.calls; i++) {
		nvmeof_queue_poll(rw.q, 0);
		if (!rw.calls)
			nvmeof_queue_wait(rw.q, 1, 1);
	}
	int want_n = move_at + 1 + 3; /* the first attempt's, up to the move; the second's three */
	if (rw.n != want_n)
		fprintf(stderr, "    move at %d: %d commands, %d callbacks: %s\n", move_at, rw.n, rw.calls, rw.msg);
	CHECK_EQ(rw.n, want_n);
	CHECK_EQ(rw.fctype[move_at + 1], NVMF_FCTYPE_CONNECT);
	CHECK_EQ(fw_connects(fw), connects + 2);
	/* the second attempt's Failure1 ends it, final */
	CHECK_EQ(rw.calls, 1);
	CHECK(strstr(rw.msg, "the authentication failed, which is final") != NULL);
	q_close(rw.q);
	fw_free(fw);
	reauth_ctrl_free(c);
}

/* The move while the Negotiate is out: no AUTH_Receive to the old
 * controller after its answer. */
TEST(an_authentication_step_is_not_sent_once_the_association_ended)
{
	reconnect_auth_moved(1);
}

/* The move while the AUTH_Receive is out: its Failure1 came from the old
 * controller, and says nothing final of the new association. */
TEST(an_authentication_failure_from_an_ended_association_is_not_final)
{
	reconnect_auth_moved(2);
}

/* disable_sqflow asks every queue's Connect, the admin queue's and the I/O
 * queues', for SQ flow control off (CATTR bit 2), as the Linux host does;
 * without it CATTR stays 0. The same build serves the first connect and
 * the reconnect (reauth_prepare above). */
TEST(disable_sqflow_sets_cattr_bit_2_on_every_connect)
{
	struct nvmeof_ctrl *c = calloc(1, sizeof(*c));
	struct fake_wire *fw = fw_new(8, reauth_responder, NULL);
	struct q_params p = {.qid = 1, .depth = 8, .cmd_timeout_ms = 30000, .wait_mode = NVMEOF_WAIT_POLL};
	struct nvmeof_queue *q;
	uint8_t sqe[NVME_SQE_SIZE];
	snprintf(c->subnqn, sizeof(c->subnqn), "%s", SUBNQN);
	snprintf(c->hostnqn, sizeof(c->hostnqn), "%s", HOSTNQN);
	CHECK_EQ(q_open_fake(&p, fw, &q), 0);
	for (int off = 0; off < 2; off++) {
		c->o.disable_sqflow = !off;
		for (uint16_t qid = 0; qid < 3; qid++) {
			memset(sqe, 0xee, sizeof(sqe));
			CHECK_EQ(ctrl_connect_build(c, q, qid, 31, 0, qid ? 0 : 5000, sqe), 0);
			CHECK_EQ(sqe[4], NVMF_FCTYPE_CONNECT);
			CHECK_EQ(sqe[46], off ? 0x00 : 0x04);
		}
	}
	q_close(q);
	fw_free(fw);
	free(c);
}

int main(int argc, char **argv)
{
	static const struct test_case t[] = {
		T(crc32_is_zlibs),
		T(secrets_parse_with_their_length_and_transformation),
		T(transformation_matches_nvme_cli),
		T(malformed_secrets_are_refused_without_echoing_them),
		T(response_and_augmented_challenge_match_python),
		T(ffdhe_values_are_padded_and_agree),
		T(sqes_name_the_security_protocol),
		T(messages_round_trip),
		T(malformed_messages_are_refused),
		T(transactions_for_every_hash_and_group),
		T(the_dh_step_can_run_apart_from_the_challenges_answer),
		T(wrong_secrets_fail_clearly),
		T(a_challenge_we_cannot_use_ends_with_failure2),
		T(an_nvme_error_names_the_step),
		T(dh_values_short_padded_long_and_out_of_range),
		T(a_key_must_have_its_transformations_length),
		T(key_material_is_kept_out_of_core_dumps_and_wiped),
		T(the_host_offers_what_it_is_allowed_to),
		T(a_controller_secret_authenticates_the_controller_even_unasked),
		T(a_failure1_is_final),
		T(protocol_violations_are_final),
		T(an_nvme_status_on_auth_send_is_classed_by_its_dnr),
		T(a_reconnect_not_asked_to_authenticate_authenticates_the_controller),
		T(an_authentication_step_is_not_sent_once_the_association_ended),
		T(an_authentication_failure_from_an_ended_association_is_not_final),
		T(a_host_started_negotiate_refused_as_unsupported_is_final),
		T(disable_sqflow_sets_cattr_bit_2_on_every_connect),
	};
	return run_named_tests("unit-auth", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
