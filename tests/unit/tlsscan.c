/* LD_PRELOAD for tests/unit/tls-spdk.sh: at the process's exit (the
 * controller disconnected and freed), scans its private writable memory
 * (heap live and freed, stacks of every thread that ran, .data/.bss,
 * anonymous maps, the library's out-of-core-dump pages) for each TLS key the
 * connection used, and says which it found where:
 *  - the ones the test knows (TLSSCAN_FILE: lines "NAME HEX"): the
 *    configured PSK's raw bytes, the retained PSK, the TLS PSK, and the
 *    interchange string itself (as hex of its text);
 *  - the traffic secrets, caught from OpenSSL's key log callback (the
 *    library's own callback is wrapped: SSL_CTX_set_keylog_callback is
 *    libssl's, reached through the dynamic linker);
 *  - the keys handed to the kernel (setsockopt SOL_TLS TLS_TX / TLS_RX);
 *  - the TLS 1.3 master secret, which no key log gives (it is derived from
 *    the handshake secret, one way): read from the SSL object when the
 *    library, its handshake done, clears its info callback, eight
 *    EVP_MAX_MD_SIZE places before the client's traffic secret as OpenSSL
 *    1.1.1 to 3.5 keep them (the traffic secret found once in the object).
 * Everything it holds lives in one mapping of its own, left out of the scan.
 * "tlsscan: scanned N bytes in R regions for K keys" proves that it ran. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/tls.h>
#include <openssl/ssl.h>

#include "maps.h"

#ifndef SOL_TLS
#define SOL_TLS 282
#endif

#define VAULT_LEN (1 << 20)
#define KEYS_MAX 64
struct key {
	char name[40];
	size_t len;
	uint8_t b[256];
};
struct vault {
	int nkeys;
	struct key k[KEYS_MAX];
	char file[65536];
};
static struct vault *V;

static void say(const char *m) { if (write(2, m, strlen(m)) < 0) {} }

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static void add(const char *name, size_t nlen, const uint8_t *b, const char *hex, size_t len)
{
	if (!V || V->nkeys == KEYS_MAX || len > sizeof(V->k[0].b) || len < 8)
		return;
	struct key *k = &V->k[V->nkeys++];
	if (nlen >= sizeof(k->name))
		nlen = sizeof(k->name) - 1;
	memcpy(k->name, name, nlen);
	k->name[nlen] = 0;
	for (size_t i = 0; i < len; i++)
		k->b[i] = b ? b[i] : (uint8_t)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
	k->len = len;
}

__attribute__((constructor)) static void init(void)
{
	V = mmap(NULL, VAULT_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (V == MAP_FAILED) {
		V = NULL;
		return;
	}
	const char *f = getenv("TLSSCAN_FILE");
	int fd = f ? open(f, O_RDONLY | O_CLOEXEC) : -1;
	ssize_t n = fd >= 0 ? read(fd, V->file, sizeof(V->file) - 1) : -1;
	if (fd >= 0)
		close(fd);
	for (char *p = V->file, *end = V->file + (n > 0 ? n : 0); p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p)), *sp;
		if (!nl)
			nl = end;
		if ((sp = memchr(p, ' ', (size_t)(nl - p))))
			add(p, (size_t)(sp - p), NULL, sp + 1, (size_t)(nl - sp - 1) / 2);
		p = nl + 1;
	}
}

/* the library's key log callback, wrapped: the line's secret noted first */
static SSL_CTX_keylog_cb_func their_cb;
static void our_cb(const SSL *s, const char *line)
{
	const char *sp = strchr(line, ' '), *h = sp ? strchr(sp + 1, ' ') : NULL;
	if (h) {
		size_t n = 0;
		while (hexval(h[1 + 2 * n]) >= 0 && hexval(h[2 + 2 * n]) >= 0)
			n++;
		add(line, (size_t)(sp - line), NULL, h + 1, n);
	}
	if (their_cb)
		their_cb(s, line);
}

void SSL_CTX_set_keylog_callback(SSL_CTX *ctx, SSL_CTX_keylog_cb_func cb)
{
	static void (*real)(SSL_CTX *, SSL_CTX_keylog_cb_func);
	if (!real)
		real = (void (*)(SSL_CTX *, SSL_CTX_keylog_cb_func))dlsym(RTLD_NEXT, "SSL_CTX_set_keylog_callback");
	their_cb = cb;
	real(ctx, cb ? our_cb : NULL);
}

/* the handshake done: the master secret, next to the traffic secrets */
void SSL_set_info_callback(SSL *s, void (*cb)(const SSL *, int, int))
{
	static void (*real)(SSL *, void (*)(const SSL *, int, int));
	if (!real)
		real = (void (*)(SSL *, void (*)(const SSL *, int, int)))dlsym(RTLD_NEXT, "SSL_set_info_callback");
	const struct key *tx = NULL;
	for (int i = 0; V && i < V->nkeys; i++)
		if (!strcmp(V->k[i].name, "CLIENT_TRAFFIC_SECRET_0"))
			tx = &V->k[i];
	size_t size = s && !cb && tx ? malloc_usable_size(s) : 0;
	const uint8_t *b = (const uint8_t *)s, *at = size ? memmem(b, size, tx->b, tx->len) : NULL;
	if (at && at - b >= 8 * EVP_MAX_MD_SIZE && !memmem(at + 1, size - (size_t)(at + 1 - b), tx->b, tx->len))
		add("master_secret", 13, at - 6 * EVP_MAX_MD_SIZE, NULL, tx->len);
	real(s, cb);
}

int setsockopt(int fd, int level, int name, const void *v, socklen_t len)
{
	static int (*real)(int, int, int, const void *, socklen_t);
	if (!real)
		real = (int (*)(int, int, int, const void *, socklen_t))dlsym(RTLD_NEXT, "setsockopt");
	if (level == SOL_TLS && (name == TLS_TX || name == TLS_RX) && len >= sizeof(struct tls_crypto_info)) {
		const struct tls_crypto_info *ci = v;
		const char *nm = name == TLS_TX ? "kTLS TX key" : "kTLS RX key";
		if (ci->cipher_type == TLS_CIPHER_AES_GCM_128 && len >= sizeof(struct tls12_crypto_info_aes_gcm_128))
			add(nm, strlen(nm), ((const struct tls12_crypto_info_aes_gcm_128 *)v)->key, NULL, 16);
		else if (ci->cipher_type == TLS_CIPHER_AES_GCM_256 && len >= sizeof(struct tls12_crypto_info_aes_gcm_256))
			add(nm, strlen(nm), ((const struct tls12_crypto_info_aes_gcm_256 *)v)->key, NULL, 32);
	}
	return real(fd, level, name, v, len);
}

__attribute__((destructor)) static void scan(void)
{
	unsigned long scanned = 0;
	unsigned regions = 0;
	char line[512], msg[160];
	if (!V)
		return;
	FILE *maps = fopen("/proc/self/maps", "re");
	if (!maps) {
		say("tlsscan: cannot read /proc/self/maps\n");
		return;
	}
	uintptr_t vlo = (uintptr_t)V, vhi = vlo + VAULT_LEN;
	unsigned long lo, hi;
	while (maps_next_private_rw(maps, line, sizeof(line), &lo, &hi)) {
		/* the vault, and what stdio reads maps into, are ours */
		if (lo >= vlo && hi <= vhi)
			continue;
		scanned += hi - lo;
		regions++;
		for (int i = 0; i < V->nkeys; i++) {
			const struct key *k = &V->k[i];
			const uint8_t *at = (const uint8_t *)lo;
			size_t left = hi - lo;
			const uint8_t *hit;
			while (left >= k->len && (hit = memmem(at, left, k->b, k->len))) {
				if ((uintptr_t)hit < vlo || (uintptr_t)hit >= vhi) {
					snprintf(msg, sizeof(msg), "tlsscan: a copy of %s at %p in ", k->name, (const void *)hit);
					say(msg);
					say(line);
					break;
				}
				left -= (size_t)(hit + 1 - at);
				at = hit + 1;
			}
		}
	}
	fclose(maps);
	snprintf(msg, sizeof(msg), "tlsscan: scanned %lu bytes in %u regions for %d keys\n", scanned, regions,
		 V->nkeys);
	say(msg);
	for (int i = 0; i < V->nkeys; i++) {
		snprintf(msg, sizeof(msg), "tlsscan: key %s (%zu bytes)\n", V->k[i].name, V->k[i].len);
		say(msg);
	}
}
