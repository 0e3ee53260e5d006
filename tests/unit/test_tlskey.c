/*
 * The NVMe/TCP TLS PSK without a target: the interchange form parsed and
 * refused as nvme-cli and the kernel write and read it, and the retained
 * PSK, both PSK identities and both TLS PSKs against vectors that
 * tests/unit/tls_vectors.py computes from the specification's text with
 * Python's hmac and hashlib (run it to regenerate them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "tls.h"

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6"
#define SUBNQN "nqn.2026-12.io.example:tls"

struct vec {
	const char *key, *retained, *id0, *psk0, *id1, *psk1;
};
/* tests/unit/tls_vectors.py's output: keys 00..1f (01), 00..2f (02), 00..1f (00) */
static const struct vec vecs[] = {
	{"NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
	 "2777170cfb82b52c5ec8cb00cc26fa9145d942315f2c892822b0772f5debe85d",
	 "NVMe0R01 nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6 nqn.2026-12.io.example:tls",
	 "67e12bd86fd6c4a1ae3afa945a3d1817fede6e90f1f56de496b4dc5723cc48be",
	 "NVMe1R01 nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6 nqn.2026-12.io.example:tls xQ0PBvXrznGiRQWPy7riIyRPqlm96+NZr5kMOb53HUk=",
	 "ec2a0cb4133d00703f78da9ab01b6490cbdf9a0191251982d24f038ebc34419f"},
	{"NVMeTLSkey-1:02:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vcSEgBQ==:",
	 "9199e9844a95310712a6436350cb36769e36bb02461989493acb7f9419f9d1ca81374a176479e87994f6c7c17c5f2800",
	 "NVMe0R02 nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6 nqn.2026-12.io.example:tls",
	 "2d8ffb720f1b747f839e52dd1c83c77f152bcd19ab110138637e03dcfe4155b5f555e138f3d728ace925afc9abf54253",
	 "NVMe1R02 nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6 nqn.2026-12.io.example:tls 2sJ/UjDH9SZwM/XVQDge6AIQEpH+sdfdR0ofGLht8tSBZakOhjPEGnGhszLbuM+R",
	 "6c47c0b960d1ff843548589dd90b714ee74745b2d9e540610677b833a7ee9aadf248a7b07ddd3d3def35ab0c5d159a05"},
	{"NVMeTLSkey-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
	 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
	 "NVMe0R01 nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6 nqn.2026-12.io.example:tls",
	 "16b3cf0ba60136f882c6cdbd6e872f757c53e1202fa99b208e72e5f1bfbce40e",
	 "NVMe1R01 nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6 nqn.2026-12.io.example:tls SsZNzcX7PwNsPYfQbzn0DNXvecFHa5uUmzs/9uW6H6k=",
	 "3581e4dbba5577e7812221b9d1d4bc31f8eddff574ce4462585d4a2f6435b3e1"},
};

static void unhex(const char *h, uint8_t *out)
{
	for (size_t i = 0; h[2 * i]; i++) {
		unsigned v;
		sscanf(h + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
}

TEST(keys_parse_with_their_hash_length_and_cipher)
{
	static const uint8_t want_len[] = {32, 48, 32}, want_hash[] = {1, 2, 0}, want_cipher[] = {1, 2, 1};
	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		struct tls_key k;
		CHECK_EQ(tls_key_parse(vecs[i].key, "tls_key", &k), 0);
		CHECK_EQ(k.len, want_len[i]);
		CHECK_EQ(k.hash, want_hash[i]);
		CHECK_EQ(k.cipher, want_cipher[i]);
		for (int b = 0; b < k.len; b++)
			CHECK_EQ(k.key[b], b);
		tls_key_clear(&k);
		CHECK_EQ(k.len, 0);
		CHECK_EQ(k.key[1], 0);
	}
	/* a key file's newline is not part of the key */
	struct tls_key k;
	char s[200];
	snprintf(s, sizeof(s), "%s\n", vecs[0].key);
	CHECK_EQ(tls_key_parse(s, "tls_key_file", &k), 0);
	CHECK_EQ(k.len, 32);
}

TEST(derived_keys_and_identities_match_the_specifications_vectors)
{
	for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		struct tls_key k;
		uint8_t got[TLS_KEY_MAX], want[TLS_KEY_MAX];
		char id[TLS_IDENTITY_MAX];
		CHECK_EQ(tls_key_parse(vecs[i].key, "tls_key", &k), 0);
		CHECK_EQ(tls_key_retained(&k, HOSTNQN, got), 0);
		unhex(vecs[i].retained, want);
		CHECK(!memcmp(got, want, k.len));
		CHECK_EQ(tls_psk_derive(&k, 0, HOSTNQN, SUBNQN, id, sizeof(id), got), 0);
		CHECK(!strcmp(id, vecs[i].id0));
		unhex(vecs[i].psk0, want);
		CHECK(!memcmp(got, want, k.len));
		CHECK_EQ(tls_psk_derive(&k, 1, HOSTNQN, SUBNQN, id, sizeof(id), got), 0);
		CHECK(!strcmp(id, vecs[i].id1));
		unhex(vecs[i].psk1, want);
		CHECK(!memcmp(got, want, k.len));
		tls_key_clear(&k);
	}
}

/* libnvme up to 1.14 (nvme-cli up to 2.14, what `nvme gen-tls-key --insert`
 * of most distributions puts in the keyring; nvme-cli's --compat since)
 * laid HKDF's info out otherwise: a little-endian length, "tls13 " and the
 * label with no length byte, the context right after it with none. The
 * TLS PSKs that derivation gives (computed from libnvme's
 * derive_retained_key_compat / derive_tls_key_compat with Python's
 * HMAC), identities as above (version 1's digest from the compat retained
 * PSK). */
static const struct {
	const char *key, *psk0, *id1, *psk1;
} compat[] = {
	{"NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
	 "429fbcc63a892d4acaa9790662429fcfef92b470657b97eeb38157f60fd40cff",
	 "NVMe1R01 nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6 nqn.2026-12.io.example:tls n8k1hae/8vzJW8lNN3CEg826L8jxMWQdroVfIZ2wlOU=",
	 "5ad3cc6337ce4c9d1e6154531c16bf8c16135056e01d36d0bf065a96e4b34e1e"},
	{"NVMeTLSkey-1:02:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vcSEgBQ==:",
	 "a070924c912a7091eed9b39dec29c148b60b0057788c47cea4f29128ccbaf92f4ed3d78a3e696a46455c79372703b7f2",
	 "NVMe1R02 nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6 nqn.2026-12.io.example:tls pyIsvYTTCffPblcri3KP93K9a7okKr15iqf5SRqlOkEVqPqXOXkmhcCS75XmchAo",
	 "b6c26e38adbcb3567c027457d110d5b5d93a17ba0d2301031ef08471673b64cc03fd29c7e23ff467671536d7e7a8d8a0"},
	{"NVMeTLSkey-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
	 "16ae43ecef8768a3aca53d05d8d469ec5a3fdd0fd22b8ad91315cd7a1a799938",
	 "NVMe1R01 nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6 nqn.2026-12.io.example:tls SsZNzcX7PwNsPYfQbzn0DNXvecFHa5uUmzs/9uW6H6k=",
	 "9d64d3b62a964858bee5f52ee80fe016b1e81ed538206c71cafaab469edc08c2"},
};

TEST(compat_derivation_matches_libnvme_up_to_1_14)
{
	for (size_t i = 0; i < sizeof(compat) / sizeof(compat[0]); i++) {
		struct tls_key k;
		uint8_t got[TLS_KEY_MAX], want[TLS_KEY_MAX];
		char id[TLS_IDENTITY_MAX];
		CHECK_EQ(tls_key_parse(compat[i].key, "tls_key", &k), 0);
		CHECK_EQ(tls_psk_derive(&k, 0 | TLS_PSK_COMPAT, HOSTNQN, SUBNQN, id, sizeof(id), got), 0);
		CHECK(!strcmp(id, vecs[i].id0)); /* the identity is the same */
		unhex(compat[i].psk0, want);
		CHECK(!memcmp(got, want, k.len));
		CHECK_EQ(tls_psk_derive(&k, 1 | TLS_PSK_COMPAT, HOSTNQN, SUBNQN, id, sizeof(id), got), 0);
		CHECK(!strcmp(id, compat[i].id1));
		unhex(compat[i].psk1, want);
		CHECK(!memcmp(got, want, k.len));
		tls_key_clear(&k);
	}
}

/* refuses, with a message naming the option and holding none of the key */
static void refused(const char *s, const char *why)
{
	struct tls_key k;
	memset(&k, 0xa5, sizeof(k));
	int rc = tls_key_parse(s, "tls_key", &k);
	CHECK_EQ(rc, NVMEOF_EINVAL);
	const char *m = nvmeof_errmsg();
	if (!strstr(m, "tls_key") || !strstr(m, why)) {
		fprintf(stderr, "    '%s': %s\n", why, m);
		CHECK(0);
	}
	CHECK(!strstr(m, "AAECAwQF"));
	CHECK(!strstr(m, "GhscHR4f"));
	CHECK_EQ(k.len, 0); /* nothing half-parsed is left */
}

TEST(bad_keys_are_refused_clearly_without_the_key)
{
	refused("DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "interchange format");
	refused("NVMeTLSkey-1:03:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "unknown hash 03");
	refused("NVMeTLSkey-1:1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "must be 00, 01 or 02");
	/* the CRC's last byte changed */
	refused("NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaS:", "CRC-32");
	/* a key of the other hash: 32 bytes called SHA-384, 48 called SHA-256 */
	refused("NVMeTLSkey-1:02:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "needs 48 bytes");
	refused("NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vcSEgBQ==:",
		"needs 32 bytes");
	/* 64 bytes (a DH-HMAC-CHAP SHA-512 length) */
	refused("NVMeTLSkey-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eH+W2jnc=:",
		"a key of 64 bytes");
	refused("NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR", "does not end with ':'");
	refused("NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+Kfia!:", "not valid base64");
	refused("NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:x:", "more than one field");
	refused("", "interchange format");
}

/* The kernel keyring's side without a keyring: how /proc/keys names a
 * keyring, which key descriptions (KEYCTL_DESCRIBE's "type;uid;gid;perm;
 * description") are the identities the lookup takes, and the refusals. */
TEST(keyring_names_and_identities_are_read_as_the_kernel_writes_them)
{
	int32_t id = 0;
	CHECK_EQ(tls_keyring_proc_line("1b2c3d4e I--Q---     1 perm 3f030000     0     0 keyring   .nvme: 2\n", ".nvme", &id), 1);
	CHECK_EQ(id, 0x1b2c3d4e);
	CHECK_EQ(tls_keyring_proc_line("0a000001 I------     1 perm 1f3f0000     0     0 keyring   .nvme: empty\n", ".nvme",
				       &id), 1);
	CHECK_EQ(id, 0x0a000001);
	/* another keyring whose name begins alike, a psk key, a short line */
	CHECK_EQ(tls_keyring_proc_line("1b2c3d4f I------     1 perm 3f030000     0     0 keyring   .nvme2: empty\n",
				       ".nvme", &id), 0);
	CHECK_EQ(tls_keyring_proc_line("1b2c3d50 I------     1 perm 3f010000     0     0 psk       .nvme: 32\n", ".nvme",
				       &id), 0);
	CHECK_EQ(tls_keyring_proc_line("garbage\n", ".nvme", &id), 0);

	const char *v0 = "psk;0;0;3f010000;NVMe0R01 " HOSTNQN " " SUBNQN;
	CHECK_EQ(tls_keyring_match(v0, 0, 1, HOSTNQN, SUBNQN), 1);
	CHECK_EQ(tls_keyring_match(v0, 0, 2, HOSTNQN, SUBNQN), 0); /* SHA-384's identity is another */
	CHECK_EQ(tls_keyring_match(v0, 1, 1, HOSTNQN, SUBNQN), 0);
	CHECK_EQ(tls_keyring_match(v0, 0, 1, HOSTNQN, SUBNQN "x"), 0);
	CHECK_EQ(tls_keyring_match("user;0;0;3f010000;NVMe0R01 " HOSTNQN " " SUBNQN, 0, 1, HOSTNQN, SUBNQN), 0);
	/* version 1: the host's and subsystem's, then one word, the digest */
	CHECK_EQ(tls_keyring_match("psk;0;0;3f010000;" "NVMe1R01 " HOSTNQN " " SUBNQN
				   " xQ0PBvXrznGiRQWPy7riIyRPqlm96+NZr5kMOb53HUk=", 1, 1, HOSTNQN, SUBNQN), 1);
	CHECK_EQ(tls_keyring_match("psk;0;0;3f010000;NVMe1R01 " HOSTNQN " " SUBNQN, 1, 1, HOSTNQN, SUBNQN), 0);
	CHECK_EQ(tls_keyring_match("psk;0;0;3f010000;NVMe1R01 " HOSTNQN " " SUBNQN "x d", 1, 1, HOSTNQN, SUBNQN), 0);
	/* version 0's identity with a digest after it is no version 0 key */
	CHECK_EQ(tls_keyring_match("psk;0;0;3f010000;NVMe0R01 " HOSTNQN " " SUBNQN " d", 0, 1, HOSTNQN, SUBNQN), 0);

	/* a keyring no process has: named, nothing else */
	struct tls_psk *p = NULL;
	CHECK(tls_psk_setup(NULL, ".nvmeof-no-such-keyring", 0, HOSTNQN, SUBNQN, &p) != 0);
	CHECK(!p);
	CHECK(strstr(nvmeof_errmsg(), "no keyring .nvmeof-no-such-keyring") != NULL);
	CHECK(tls_psk_setup(NULL, NULL, 0, HOSTNQN, SUBNQN, &p) != 0);
	CHECK(strstr(nvmeof_errmsg(), "TLS needs a PSK (tls_key") != NULL);
	/* a key given wins: no keyring is looked at */
	CHECK_EQ(tls_psk_setup(vecs[0].key, ".nvmeof-no-such-keyring", 0, HOSTNQN, SUBNQN, &p), 0);
	CHECK(p && !strcmp(p->identity, vecs[0].id0));
	tls_psk_free(p);
	/* and the compat switch reaches the derivation */
	CHECK_EQ(tls_psk_setup(compat[0].key, NULL, 1 | TLS_PSK_COMPAT, HOSTNQN, SUBNQN, &p), 0);
	CHECK(p && !strcmp(p->identity, compat[0].id1));
	uint8_t want[TLS_KEY_MAX];
	unhex(compat[0].psk1, want);
	CHECK(p && p->len == 32 && !memcmp(p->psk, want, 32));
	tls_psk_free(p);
}

/* Which key of a keyring the lookup takes: SHA-384's identity before
 * SHA-256's, and a version 1 identity that several keys match (a key
 * rotated, the old one left) is no choice: both are named. */
TEST(keyring_lookup_takes_one_key_or_names_the_ambiguity)
{
	const char *d[] = {
		"psk;0;0;3f010000;NVMe1R01 " HOSTNQN " " SUBNQN " AAAA",
		"psk;0;0;3f010000;NVMe0R01 " HOSTNQN " " SUBNQN,
		"psk;0;0;3f010000;NVMe1R02 " HOSTNQN " " SUBNQN " CCCC",
		"psk;0;0;3f010000;NVMe1R01 " HOSTNQN " " SUBNQN " BBBB",
	};
	uint8_t c = 0;
	long dup = 7;
	CHECK_EQ(tls_keyring_pick(d, 4, 0, HOSTNQN, SUBNQN, &c, &dup), 1);
	CHECK_EQ(c, 1);
	CHECK_EQ(dup, -1);
	CHECK_EQ(tls_keyring_pick(d, 4, 1, HOSTNQN, SUBNQN, &c, &dup), 2); /* SHA-384's first */
	CHECK_EQ(c, 2);
	CHECK_EQ(dup, -1);
	CHECK_EQ(tls_keyring_pick(d, 2, 1, HOSTNQN, SUBNQN, &c, &dup), 0);
	CHECK_EQ(dup, -1);
	d[2] = d[1];
	CHECK_EQ(tls_keyring_pick(d, 4, 1, HOSTNQN, SUBNQN, &c, &dup), 0);
	CHECK_EQ(c, 1);
	CHECK_EQ(dup, 3);
	CHECK_EQ(tls_keyring_pick(d, 4, 0, "nqn.x", SUBNQN, &c, &dup), -1);
}

/* keyctl(2) for the tests: a keyring of the test's own, in the process keyring */
static long kc(int op, long a, long b, long c)
{
	return syscall(SYS_keyctl, op, a, b, c, 0L);
}
static int linked_in(long ring, long key)
{
	int32_t v[256];
	long n = kc(11 /* READ */, ring, (long)v, sizeof(v));
	for (long i = 0; i < n / 4 && i < 256; i++)
		if (v[i] == key)
			return 1;
	return 0;
}

/* The lookup reads the keyring with it linked into a thread keyring of its
 * own: a link the caller's thread keyring already had stays, and a thread
 * that had no thread keyring has none after. */
TEST(keyring_lookup_leaves_the_callers_thread_keyring_as_it_was)
{
	long kr = syscall(SYS_add_key, "keyring", "nvmeof-unit-kr", NULL, 0L, -2L /* @p */);
	if (kr < 0)
		SKIP("no keyrings here");
	struct tls_psk p;
	/* a child: its thread has no thread keyring before or after */
	pid_t c = fork();
	if (c == 0) {
		int had = kc(0 /* GET_KEYRING_ID */, -1, 0, 0) >= 0;
		int rc = tls_keyring_lookup("nvmeof-unit-kr", 0, HOSTNQN, SUBNQN, &p);
		int has = kc(0, -1, 0, 0) >= 0;
		_exit(had ? 2 : rc == 0 ? 3 : has ? 4 : 0);
	}
	int st = -1;
	CHECK(c > 0 && waitpid(c, &st, 0) == c);
	CHECK_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : 99, 0);
	/* the caller's own link into its thread keyring stays */
	CHECK_EQ(kc(8 /* LINK */, kr, -1 /* @t */, 0), 0);
	CHECK_EQ(linked_in(kc(0, -1, 0, 0), kr), 1);
	CHECK(tls_keyring_lookup("nvmeof-unit-kr", 0, HOSTNQN, SUBNQN, &p) != 0);
	CHECK(strstr(nvmeof_errmsg(), "no key for identity NVMe0R02 or NVMe0R01") != NULL);
	CHECK_EQ(linked_in(kc(0, -1, 0, 0), kr), 1);
	kc(9 /* UNLINK */, kr, -1, 0);
	kc(9, kr, -2, 0);
}

int main(int argc, char **argv)
{
	static const struct test_case t[] = {
		T(keys_parse_with_their_hash_length_and_cipher),
		T(derived_keys_and_identities_match_the_specifications_vectors),
		T(compat_derivation_matches_libnvme_up_to_1_14),
		T(bad_keys_are_refused_clearly_without_the_key),
		T(keyring_names_and_identities_are_read_as_the_kernel_writes_them),
		T(keyring_lookup_leaves_the_callers_thread_keyring_as_it_was),
		T(keyring_lookup_takes_one_key_or_names_the_ambiguity),
	};
	return run_named_tests("unit-tlskey", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
