/*
 * The TLS 1.3 handshake of an NVMe/TCP queue (TP 8011): OpenSSL 3 as a
 * client with an external PSK only (no certificates), the cipher suite the
 * PSK's hash names; the queue then moves its bytes through the kernel's
 * kTLS (tls_ktls.c) where it can, else with SSL_read/SSL_write
 * (tls_rec.c). Every wait has the queue's connect timeout. Messages never
 * hold key bytes.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "auth.h"
#include "internal.h"
#include "tls.h"
#include "util.h"

int tls_psk_setup(const char *key, const char *keyring, int version, const char *hostnqn, const char *subnqn,
		  struct tls_psk **out)
{
	struct tls_key k;
	int rc;
	*out = NULL;
	bool given = key && key[0];
	if (!given && !(keyring && keyring[0]))
		return nvmeof_err(NVMEOF_EINVAL, "connect: TLS needs a PSK (tls_key, in the form nvme gen-tls-key "
				  "prints, or tls_keyring, a kernel keyring holding it)");
	if (given && (rc = tls_key_parse(key, "connect: TLS PSK (tls_key)", &k)))
		return rc;
	struct tls_psk *p = auth_secret_alloc(sizeof(*p));
	if (!p) {
		if (given)
			tls_key_clear(&k);
		return nvmeof_err(NVMEOF_ENOMEM, "connect: TLS PSK: out of memory");
	}
	if (!given) {
		rc = tls_keyring_lookup(keyring, version & ~TLS_PSK_COMPAT, hostnqn, subnqn, p);
	} else {
		/* version 0 by default: SPDK's target knows no other */
		rc = tls_psk_derive(&k, version, hostnqn, subnqn, p->identity, sizeof(p->identity), p->psk);
		p->len = k.len;
		p->cipher = k.cipher;
		tls_key_clear(&k);
	}
	if (rc) {
		auth_secret_free(p, sizeof(*p));
		return rc;
	}
	*out = p;
	return 0;
}

void tls_psk_free(struct tls_psk *p) { auth_secret_free(p, sizeof(*p)); }

struct hs {
	const struct tls_psk *p;
	int alert;       /* the controller's alert; -1 none */
	bool psk_offered;
	struct tls_secrets sec; /* for kTLS; cleansed before return */
};
static int hs_idx = -1;
static pthread_once_t hs_once = PTHREAD_ONCE_INIT;
static void hs_idx_init(void) { hs_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL); }

/* The session OpenSSL offers: our PSK as its resumption secret, with the
 * cipher suite of its hash (RFC 8446 4.2.11: an external PSK names one). */
static int use_psk(SSL *s, const EVP_MD *md, const unsigned char **id, size_t *idlen, SSL_SESSION **sess)
{
	struct hs *h = SSL_get_ex_data(s, hs_idx);
	static const unsigned char c128[] = {0x13, 0x01}, c256[] = {0x13, 0x02};
	const SSL_CIPHER *c = SSL_CIPHER_find(s, h->p->cipher == 2 ? c256 : c128);
	*sess = NULL;
	if (!c)
		return 0;
	if (md && md != SSL_CIPHER_get_handshake_digest(c))
		return 1; /* after a HelloRetryRequest for another hash: no PSK fits */
	SSL_SESSION *ss = SSL_SESSION_new();
	if (!ss || !SSL_SESSION_set1_master_key(ss, h->p->psk, h->p->len) || !SSL_SESSION_set_cipher(ss, c) ||
	    !SSL_SESSION_set_protocol_version(ss, TLS1_3_VERSION)) {
		SSL_SESSION_free(ss);
		return 0;
	}
	*id = (const unsigned char *)h->p->identity;
	*idlen = strlen(h->p->identity);
	*sess = ss;
	h->psk_offered = true;
	return 1;
}

/* OpenSSL hands the traffic secrets out here alone (SSLKEYLOGFILE's lines) */
static void on_keylog(const SSL *s, const char *line)
{
	struct hs *h = SSL_get_ex_data(s, hs_idx);
	if (h)
		tls_ktls_keylog(&h->sec, line);
}

static void on_info(const SSL *s, int where, int ret)
{
	if (where & SSL_CB_READ_ALERT) {
		struct hs *h = SSL_get_ex_data(s, hs_idx);
		h->alert = ret & 0xff;
	}
}

/* Why the handshake failed, in the user's terms. */
static int hs_fail(uint16_t qid, struct hs *h, int err, unsigned long e, bool *final)
{
	char ossl[160] = "";
	if (e)
		ERR_error_string_n(e, ossl, sizeof(ossl));
	ERR_clear_error();
	*final = true;
	switch (h->alert) {
	case -1: break;
	case SSL_AD_ILLEGAL_PARAMETER:
	case SSL_AD_DECRYPT_ERROR:
		return nvmeof_err(NVMEOF_EREJECTED, "queue %u: TLS handshake: the controller refused the PSK (alert %s): "
				  "a wrong key for identity '%s'", qid, SSL_alert_desc_string_long(h->alert),
				  h->p->identity);
	case SSL_AD_INTERNAL_ERROR:
	case SSL_AD_UNKNOWN_PSK_IDENTITY:
	case SSL_AD_HANDSHAKE_FAILURE:
		return nvmeof_err(NVMEOF_EREJECTED, "queue %u: TLS handshake: the controller refused the PSK identity '%s' "
				  "(alert %s): no key for this host and subsystem, or one of the other hash", qid,
				  h->p->identity, SSL_alert_desc_string_long(h->alert));
	default:
		return nvmeof_err(NVMEOF_EREJECTED, "queue %u: TLS handshake: the controller sent alert %s", qid,
				  SSL_alert_desc_string_long(h->alert));
	}
	if (ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER || ERR_GET_REASON(e) == SSL_R_PACKET_LENGTH_TOO_LONG)
		return nvmeof_err(NVMEOF_EREJECTED, "queue %u: TLS handshake: the controller did not answer in TLS "
				  "(a port without TLS?): %s", qid, ossl);
	if (err == SSL_ERROR_SYSCALL || err == SSL_ERROR_ZERO_RETURN)
		return nvmeof_err(NVMEOF_EREJECTED, "queue %u: TLS handshake: the controller closed the connection%s%s "
				  "(a port without TLS, or a PSK it does not accept)", qid, errno ? ": " : "",
				  errno ? strerror(errno) : "");
	*final = false;
	return nvmeof_err(NVMEOF_ETRANSPORT, "queue %u: TLS handshake: %s", qid, ossl[0] ? ossl : "failed (OpenSSL)");
}

int tls_client_handshake(int fd, const struct tls_psk *p, uint32_t timeout_ms, uint16_t qid, bool *final,
			 void **ssl, const char **no_ktls)
{
	struct hs h = {.p = p, .alert = -1};
	int rc = 0;
	*final = true;
	*ssl = NULL;
	pthread_once(&hs_once, hs_idx_init);
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *s = NULL;
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_ciphersuites(ctx, tls_cipher_name(p->cipher)) || !(s = SSL_new(ctx)) ||
	    tls_io_nosigpipe(s, fd) || !SSL_set_ex_data(s, hs_idx, &h)) {
		rc = nvmeof_err(NVMEOF_ENOMEM, "queue %u: TLS: setting up OpenSSL failed (out of memory?)", qid);
		goto out;
	}
	/* no certificates, no tickets: the PSK is all */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_keylog_callback(ctx, on_keylog);
	SSL_set_options(s, SSL_OP_NO_TICKET);
	/* sendmsg's habits: a part may go, and what is left is offered again
	 * from the same bytes (tls_io_send's buffer, refilled) */
	SSL_set_mode(s, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_set_psk_use_session_callback(s, use_psk);
	SSL_set_info_callback(s, on_info);
	uint64_t deadline = nvmeof_now_ms() + timeout_ms;
	for (;;) {
		ERR_clear_error();
		errno = 0;
		int r = SSL_connect(s);
		if (r == 1)
			break;
		int err = SSL_get_error(s, r);
		short ev = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
		if (!ev) {
			rc = hs_fail(qid, &h, err, ERR_peek_error(), final);
			goto out;
		}
		uint64_t now = nvmeof_now_ms();
		struct pollfd pf = {.fd = fd, .events = ev};
		int n = now < deadline ? poll(&pf, 1, (int)(deadline - now)) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*final = false;
			rc = nvmeof_err(NVMEOF_ETIMEDOUT, "queue %u: TLS handshake: not done within %u ms", qid, timeout_ms);
			goto out;
		}
	}
	if (!h.psk_offered || !SSL_session_reused(s)) {
		rc = nvmeof_err(NVMEOF_EREJECTED, "queue %u: TLS handshake: the controller did not accept the PSK", qid);
		goto out;
	}
	tls_io_note_secrets(s, &h.sec);
	/* the queue keeps the connection, without this frame's state */
	SSL_set_info_callback(s, NULL);
	SSL_set_ex_data(s, hs_idx, NULL);
	int k = tls_ktls_engage(fd, p->cipher, &h.sec, no_ktls);
	if (k < 0) {
		*final = false;
		rc = nvmeof_err(NVMEOF_ETRANSPORT, "queue %u: TLS: moving the records to the kernel (kTLS): %s: %s", qid,
				*no_ktls, strerror(errno));
		goto out;
	}
	if (k == 0) {
		*no_ktls = NULL; /* the kernel has the keys: OpenSSL's connection goes */
		goto out;
	}
	*ssl = s;
	s = NULL;
out:
	OPENSSL_cleanse(&h.sec, sizeof(h.sec));
	/* the socket stays open (our BIO never closes it); OpenSSL's copies
	 * of the keys are cleansed when the SSL is freed (tls_io_free; the
	 * context with the queue's connection: SSL_new took a reference) */
	tls_io_free(s);
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return rc;
}
