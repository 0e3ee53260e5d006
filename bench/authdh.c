/*
 * The host's DH step of one authentication transaction, per group: our
 * ephemeral key (auth_dh_generate) and the shared secret from the
 * controller's value (auth_dh_derive, with its 1 < Y < p-1 check), beside
 * what OpenSSL's full check of the peer's value (Y^q mod p = 1) would add.
 * A benchmark, not a test: it prints times and asserts none.
 *   build/out/bench/authdh [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <openssl/evp.h>

#include "auth.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 9;
	static uint8_t pub[AUTH_DH_MAX], peer[AUTH_DH_MAX], skey[AUTH_DH_MAX];
	if (rounds < 1 || rounds > 1000)
		rounds = 9;
	double *gen = calloc((size_t)rounds, sizeof(double)), *der = calloc((size_t)rounds, sizeof(double)),
	       *full = calloc((size_t)rounds, sizeof(double));
	if (!gen || !der || !full)
		return 1;
	printf("%-10s %14s %14s %14s   (median of %d, ms)\n", "group", "generate", "derive", "full check", rounds);
	for (uint8_t g = AUTH_DH_FFDHE2048; g <= AUTH_DH_FFDHE8192; g++) {
		for (int r = 0; r < rounds; r++) {
			void *a = NULL, *b = NULL;
			if (auth_dh_generate(g, &b, peer)) /* the controller's */
				return 1;
			double t0 = now_ms();
			if (auth_dh_generate(g, &a, pub))
				return 1;
			double t1 = now_ms();
			if (auth_dh_derive(a, g, peer, auth_dh_len(g), skey))
				return 1;
			double t2 = now_ms();
			/* what EVP_PKEY_derive_set_peer's default validation costs */
			EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, b, NULL);
			double t3 = now_ms();
			if (!c || EVP_PKEY_public_check(c) != 1)
				return 1;
			double t4 = now_ms();
			EVP_PKEY_CTX_free(c);
			gen[r] = t1 - t0;
			der[r] = t2 - t1;
			full[r] = t4 - t3;
			auth_dh_free(a);
			auth_dh_free(b);
		}
		qsort(gen, (size_t)rounds, sizeof(double), cmp);
		qsort(der, (size_t)rounds, sizeof(double), cmp);
		qsort(full, (size_t)rounds, sizeof(double), cmp);
		printf("%-10s %14.2f %14.2f %14.2f\n", auth_dhgroup_name(g), gen[rounds / 2], der[rounds / 2],
		       full[rounds / 2]);
	}
	free(gen);
	free(der);
	free(full);
	return 0;
}
