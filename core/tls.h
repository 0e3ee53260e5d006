/*
 * TLS 1.3 for NVMe/TCP (TP 8011, NVMe/TCP 1.1 section 3.6): the PSK in its
 * interchange form, the retained PSK, the PSK identity and the TLS PSK the
 * handshake uses (tls_key.c, no I/O). Key material is never put in a
 * message and is cleansed after use.
 */
#ifndef NVMEOF_TLS_H
#define NVMEOF_TLS_H

#include <stddef.h>
#include <stdint.h>

#define TLS_KEY_MAX 48       /* SHA-384's */
#define TLS_IDENTITY_MAX 640 /* "NVMe1R02 " + two NQNs (223 each) + a SHA-384 digest in base64 (64) */

/* A configured PSK: NVMeTLSkey-1:HH:<base64 of the key and its CRC-32>:,
 * what `nvme gen-tls-key` prints. */
struct tls_key {
	uint8_t key[TLS_KEY_MAX];
	uint8_t len;   /* 32 or 48 */
	uint8_t hash;  /* HH: 0 the key is the retained PSK, 1 SHA-256, 2 SHA-384 */
	uint8_t cipher; /* 1: TLS_AES_128_GCM_SHA256 (32-byte keys), 2: TLS_AES_256_GCM_SHA384 (48) */
};

/* Parses s (the final colon required, as nvme-cli writes it; trailing
 * whitespace and newlines, as a key file may end, ignored). Refuses, naming
 * `what` and never the key: another prefix, HH other than 00/01/02, bad
 * base64, a length other than 32 or 48 bytes or not HH's, a CRC that does
 * not match. NVMEOF_EINVAL. */
int tls_key_parse(const char *s, const char *what, struct tls_key *out);
void tls_key_clear(struct tls_key *k);

/* The retained PSK for hostnqn (out: k->len bytes). */
int tls_key_retained(const struct tls_key *k, const char *hostnqn, uint8_t *out);

/* The PSK identity and the TLS PSK for the handshake: version 0,
 * "NVMe0RHH <hostnqn> <subnqn>" (what SPDK's target and the kernel know),
 * or 1, "NVMe1RHH <hostnqn> <subnqn> <PSK digest>" (NVMe/TCP 1.1). psk
 * gets k->len bytes; identity is NUL-terminated. */
int tls_psk_derive(const struct tls_key *k, int version, const char *hostnqn, const char *subnqn,
		   char *identity, size_t id_cap, uint8_t *psk);

const char *tls_cipher_name(uint8_t cipher); /* "TLS_AES_128_GCM_SHA256" ... */

#endif
