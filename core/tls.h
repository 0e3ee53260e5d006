/*
 * TLS 1.3 for NVMe/TCP (TP 8011, NVMe/TCP 1.1 section 3.6): the PSK in its
 * interchange form, the retained PSK, the PSK identity and the TLS PSK the
 * handshake uses (tls_key.c, no I/O). Key material is never put in a
 * message and is cleansed after use.
 */
#ifndef NVMEOF_TLS_H
#define NVMEOF_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <linux/tls.h>

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
 * gets k->len bytes; identity is NUL-terminated. version |
 * TLS_PSK_COMPAT: the retained and TLS PSKs as libnvme up to 1.14
 * derived them (nvme-cli's --compat: HKDF's info with a little-endian
 * length and no length bytes before the label and the context), what
 * keyrings filled by nvme-cli up to 2.14 hold. */
#define TLS_PSK_COMPAT 0x100
int tls_psk_derive(const struct tls_key *k, int version, const char *hostnqn, const char *subnqn,
		   char *identity, size_t id_cap, uint8_t *psk);

const char *tls_cipher_name(uint8_t cipher); /* "TLS_AES_128_GCM_SHA256" ... */

/* What every queue's handshake uses, derived once at connect and kept on
 * pages out of core dumps (auth_secret_alloc). */
struct tls_psk {
	char identity[TLS_IDENTITY_MAX];
	uint8_t psk[TLS_KEY_MAX];
	uint8_t len, cipher;
};
/* From the options: the key given (tls_key) wins; else the keyring's
 * (tls_keyring); neither: "TLS needs a PSK". version: the identity's, 0
 * or 1, | TLS_PSK_COMPAT for a key given (a keyring holds PSKs derived). */
int tls_psk_setup(const char *key, const char *keyring, int version, const char *hostnqn, const char *subnqn,
		  struct tls_psk **out);
void tls_psk_free(struct tls_psk *p);

/* ---- a kernel keyring (tls_keyring.c), as nvme-cli, the kernel host and
 * tlshd use it: key type "psk", description the PSK identity, payload the
 * TLS PSK ---- */
/* A keyring by name (".nvme"): its serial. NVMEOF_EINVAL naming it. */
int tls_keyring_find(const char *name, int32_t *id);
/* A /proc/keys line: 1 and *id where it is keyring name, else 0. */
int tls_keyring_proc_line(const char *line, const char *name, int32_t *id);
/* KEYCTL_DESCRIBE's "psk;uid;gid;perm;DESC": 1 where DESC is the identity
 * of version 0 (exactly "NVMe0RCC host sub") or 1 (that with "NVMe1R" and
 * one more word, the PSK's digest, which only the key's owner can compute). */
int tls_keyring_match(const char *desc, int version, uint8_t cipher, const char *hostnqn, const char *subnqn);
/* Of the n key descriptions descs (as tls_keyring_match reads them), the
 * one lookup takes: the first of SHA-384's identity, else of SHA-256's
 * (*cipher 2 or 1); -1 none. *dup: another that matches as well (a
 * version 1 identity with another digest), else -1. */
long tls_keyring_pick(const char *const *descs, long n, int version, const char *hostnqn, const char *subnqn,
		      uint8_t *cipher, long *dup);
/* The PSK for host and subsystem from the keyring: SHA-384's identity
 * first, then SHA-256's (the kernel host's order). Fills p (identity,
 * psk, len, cipher). An identity absent: "no key for identity ... in
 * keyring NAME". */
int tls_keyring_lookup(const char *keyring, int version, const char *hostnqn, const char *subnqn, struct tls_psk *p);
/* add_key(type, identity, psk) into the keyring, as nvme-cli's --insert. */
int tls_keyring_insert(const char *keyring, const char *type, const char *identity, const uint8_t *psk, size_t len,
		       int32_t *serial);

/* ---- the handshake (tls_conn.c): OpenSSL 3, TLS 1.3, external PSK only ----
 * On the connected socket fd, before the ICReq: the handshake, within
 * timeout_ms. *ssl: OpenSSL's connection (unless kTLS took the keys:
 * below), through which the queue's bytes go from then on (tls_io_send,
 * tls_io_recv; freed by tls_io_free): the PDU layer sees the same byte
 * stream. A failure names the step and the
 * likely cause (a wrong key, an identity the controller does not know, a
 * port without TLS), never key bytes; *final says whether trying again
 * could help. */
int tls_client_handshake(int fd, const struct tls_psk *p, uint32_t timeout_ms, uint16_t qid, bool *final,
			 void **ssl, const char **no_ktls);
/* kTLS (tls_ktls.c): after the handshake the kernel takes both directions'
 * keys when it can; tls_client_handshake then frees OpenSSL's connection
 * (*ssl NULL, *no_ktls NULL) and the queue moves its bytes with plain
 * sendmsg/recvmsg. Otherwise *ssl stays and *no_ktls says why, once per
 * queue. A recvmsg that fails with EIO met a record that is not data:
 * tls_ktls_ctrl reads it and judges it (tls_ktls_classify, from the
 * record's type and plaintext): a NewSessionTicket is dropped (-1, EAGAIN:
 * read again), a close_notify is the controller closing the connection
 * (0, as recv's end of stream), anything else ends the connection (-1,
 * EPROTO, *why names it: an alert by its description, a KeyUpdate, a
 * handshake message split across records). */
struct tls_secrets {
	uint8_t tx[48], rx[48]; /* the first application traffic secrets, client's and server's */
	uint8_t exp[48];        /* the exporter master secret (only to cleanse OpenSSL's copy) */
	size_t len;
	bool have_tx, have_rx, have_exp;
};
void tls_ktls_keylog(struct tls_secrets *sec, const char *line);
/* What TLS_TX / TLS_RX take for a traffic secret (cipher 1: AES-128-GCM,
 * 2: AES-256-GCM): key and IV by HKDF-Expand-Label(secret, "key" / "iv",
 * "", length), the IV's first 4 bytes as the salt, the last 8 as iv,
 * rec_seq 0. 0, or -1 (OpenSSL's HKDF failed). */
union tls_ktls_crypto {
	struct tls12_crypto_info_aes_gcm_128 g128;
	struct tls12_crypto_info_aes_gcm_256 g256;
};
int tls_ktls_crypto_info(uint8_t cipher, const uint8_t *secret, size_t slen, union tls_ktls_crypto *c,
			 socklen_t *clen);
/* 0: engaged; 1: not (*why), the socket as it was; -1: TLS_RX refused after
 * TLS_TX was taken (*why): the connection is unusable, and the next
 * connections of this process keep OpenSSL's records (1) */
int tls_ktls_engage(int fd, uint8_t cipher, const struct tls_secrets *sec, const char **why);
extern int (*tls_ktls_setsockopt)(int, int, int, const void *, socklen_t); /* setsockopt; tests replace it */
ssize_t tls_ktls_ctrl(int fd, char *why, size_t cap);
/* REKEY: a KeyUpdate, which fails the connection as FAIL does */
enum { TLS_CTRL_REKEY = -2, TLS_CTRL_FAIL = -1, TLS_CTRL_DROP = 0, TLS_CTRL_CLOSE = 1 };
int tls_ktls_classify(unsigned char type, const uint8_t *buf, size_t n, char *why, size_t cap);
/* The transport's sendmsg and recvmsg through OpenSSL (tls_client_handshake's
 * *ssl), non-blocking. tls_io_send gathers up to cap
 * bytes of v into buf, one record; tls_io_recv fills v in order. Both
 * return the bytes moved, or -1 with errno (EAGAIN: would block; EBADMSG:
 * a record that does not decrypt, or an alert; EPIPE, ECONNRESET); recv
 * returns 0 for a close_notify. *more: OpenSSL holds plaintext no epoll
 * wakeup will announce: read again. */
#define TLS_IO_OUT_MAX 16384 /* a TLS record's plaintext */
struct iovec;
ssize_t tls_io_send(void *ssl, const struct iovec *v, size_t nv, uint8_t *buf, size_t cap);
ssize_t tls_io_recv(void *ssl, const struct iovec *v, size_t nv, bool *more);
void tls_io_free(void *ssl); /* cleanses the secrets tls_io_note_secrets found in it, then frees */
void tls_io_cleanse(void *ssl); /* tls_io_free's cleansing, the object kept (for the tests) */
long tls_io_secret_at(int i);   /* where the client's (0), server's (1) traffic and exporter (2) secrets are; -1 */
/* After the handshake: where in the SSL object OpenSSL keeps sec's secrets */
void tls_io_note_secrets(const void *ssl, const struct tls_secrets *sec);
/* OpenSSL's socket I/O on fd through send(MSG_NOSIGNAL)/recv, never
 * write(2), which raises SIGPIPE in the application when the controller
 * resets the connection (before the handshake). 0, or -1 out of memory. */
int tls_io_nosigpipe(void *ssl, int fd);

#endif
