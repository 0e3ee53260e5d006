/*
 * The authentication's crypto when OpenSSL cannot allocate: a moment of
 * memory pressure is not "unsupported", which would end a reconnect for
 * good (cr_reconnect_final); only an algorithm that cannot be loaded is.
 * A program of its own: OpenSSL takes CRYPTO_set_mem_functions only before
 * its first allocation, so main sets them before anything else runs.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "auth.h"
#include "check.h"
#include "connretry.h"

static int failing; /* OpenSSL's allocations fail while set */

static void *t_malloc(size_t n, const char *file, int line)
{
	(void)file, (void)line;
	return failing ? NULL : malloc(n);
}
static void *t_realloc(void *p, size_t n, const char *file, int line)
{
	(void)file, (void)line;
	return failing ? NULL : realloc(p, n);
}
static void t_free(void *p, const char *file, int line)
{
	(void)file, (void)line;
	free(p);
}

/* nothing the tests ask of OpenSSL may end a reconnect for good */
static void check_retryable(int rc, const char *what)
{
	if (rc != NVMEOF_ENOMEM)
		fprintf(stderr, "    %s: %d: %s\n", what, rc, nvmeof_errmsg());
	CHECK_EQ(rc, NVMEOF_ENOMEM);
	CHECK(!cr_reconnect_final(rc, 0));
	CHECK(strstr(nvmeof_errmsg(), what) != NULL);
}

/* HMAC and the DH step with their algorithms loaded (a first call fetched
 * them): what fails then is an allocation */
TEST(hmac_and_dh_without_memory_are_retryable)
{
	static const uint8_t key[32], chal[32];
	uint8_t out[AUTH_HASH_MAX], pub[AUTH_DH_MAX];
	void *dh = NULL;
	CHECK_EQ(auth_response(AUTH_HASH_SHA256, key, sizeof(key), chal, 1, 2, false, "h", "s", out), 0);
	CHECK_EQ(auth_dh_generate(AUTH_DH_FFDHE2048, &dh, pub), 0);
	auth_dh_free(dh);
	dh = NULL;
	failing = 1;
	int rc = auth_response(AUTH_HASH_SHA256, key, sizeof(key), chal, 1, 2, false, "h", "s", out);
	failing = 0;
	check_retryable(rc, "HMAC");
	failing = 1;
	rc = auth_dh_generate(AUTH_DH_FFDHE2048, &dh, pub);
	failing = 0;
	check_retryable(rc, "DH key generation");
	CHECK(dh == NULL);
	/* and with memory again, both work */
	CHECK_EQ(auth_response(AUTH_HASH_SHA256, key, sizeof(key), chal, 1, 2, false, "h", "s", out), 0);
	CHECK_EQ(auth_dh_generate(AUTH_DH_FFDHE2048, &dh, pub), 0);
	auth_dh_free(dh);
}

/* a hash we do not know is no memory shortage: final */
TEST(an_unknown_hash_is_not_retried)
{
	static const uint8_t key[32], chal[32];
	uint8_t out[AUTH_HASH_MAX];
	CHECK(cr_reconnect_final(auth_response(9, key, sizeof(key), chal, 1, 2, false, "h", "s", out), 0));
	CHECK(cr_reconnect_final(auth_augment(9, key, sizeof(key), chal, out), 0));
}

int main(int argc, char **argv)
{
	if (!CRYPTO_set_mem_functions(t_malloc, t_realloc, t_free)) {
		fprintf(stderr, "unit-authmem: OpenSSL allocated before main: cannot test its allocation failures\n");
		return 1;
	}
	/* OpenSSL's own set-up may not fail (3.0 crashes on a lock it could
	 * not allocate): only what the library asks of it afterwards */
	OPENSSL_init_crypto(0, NULL);
	static const struct test_case t[] = {
		T(hmac_and_dh_without_memory_are_retryable),
		T(an_unknown_hash_is_not_retried),
	};
	return run_named_tests("unit-authmem", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
