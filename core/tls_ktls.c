/*
 * kTLS: a queue's records sealed and opened by the kernel (the tls module)
 * instead of OpenSSL, so that the receive path reads with plain recvmsg into
 * the stream's buffers and the send path writes with sendmsg, as without TLS.
 * After OpenSSL's handshake (tls_conn.c) the first application traffic
 * secrets, which OpenSSL hands out only through its key log callback, give
 * each direction's key and IV (RFC 8446 7.3: HKDF-Expand-Label(secret,
 * "key" / "iv", "", length)); both record sequences start at 0, as nothing
 * was sent or read under those keys yet (OpenSSL reads record by record,
 * without read-ahead). A kernel without the tls module (setsockopt TCP_ULP
 * fails) leaves the queue on OpenSSL's records. The environment variable
 * NVMEOF_KTLS=0 does the same by choice (to compare the two).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/tls.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/ssl.h>

#include "tls.h"

#ifndef SOL_TLS
#define SOL_TLS 282
#endif
#ifndef TCP_ULP
#define TCP_ULP 31
#endif

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

void tls_ktls_keylog(struct tls_secrets *sec, const char *line)
{
	static const char ct[] = "CLIENT_TRAFFIC_SECRET_0 ", st[] = "SERVER_TRAFFIC_SECRET_0 ", ex[] = "EXPORTER_SECRET ";
	uint8_t *out;
	bool *have;
	if (!strncmp(line, ct, sizeof(ct) - 1))
		out = sec->tx, have = &sec->have_tx, line += sizeof(ct) - 1;
	else if (!strncmp(line, st, sizeof(st) - 1))
		out = sec->rx, have = &sec->have_rx, line += sizeof(st) - 1;
	else if (!strncmp(line, ex, sizeof(ex) - 1))
		out = sec->exp, have = &sec->have_exp, line += sizeof(ex) - 1;
	else
		return;
	const char *h = strchr(line, ' '); /* past the client random */
	if (!h)
		return;
	h++;
	size_t n = 0;
	while (n < sizeof(sec->tx) && hexval(h[0]) >= 0 && hexval(h[1]) >= 0) {
		out[n++] = (uint8_t)(hexval(h[0]) << 4 | hexval(h[1]));
		h += 2;
	}
	sec->len = n;
	*have = true;
}

/* HKDF-Expand-Label(secret, label, "", len): expand only, the secret is the PRK */
static int expand_label(uint8_t cipher, const uint8_t *secret, size_t slen, const char *label, uint8_t *out,
			size_t len)
{
	uint8_t info[2 + 1 + 6 + 8 + 1];
	size_t ll = 6 + strlen(label), i = 0;
	info[i++] = 0;
	info[i++] = (uint8_t)len;
	info[i++] = (uint8_t)ll;
	memcpy(info + i, "tls13 ", 6);
	memcpy(info + i + 6, label, ll - 6);
	i += ll;
	info[i++] = 0;
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kc = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	EVP_KDF_free(kdf);
	if (!kc)
		return -1;
	OSSL_PARAM p[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MODE, "EXPAND_ONLY", 0),
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, cipher == 2 ? "SHA384" : "SHA256", 0),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, slen),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, i),
		OSSL_PARAM_construct_end(),
	};
	int ok = EVP_KDF_derive(kc, out, len, p);
	EVP_KDF_CTX_free(kc);
	return ok == 1 ? 0 : -1;
}

int tls_ktls_crypto_info(uint8_t cipher, const uint8_t *secret, size_t slen, union tls_ktls_crypto *c,
			 socklen_t *clen)
{
	uint8_t key[32], iv[12];
	size_t klen = cipher == 2 ? 32 : 16;
	memset(c, 0, sizeof(*c));
	int rc = -1;
	if (expand_label(cipher, secret, slen, "key", key, klen) || expand_label(cipher, secret, slen, "iv", iv, 12))
		goto out;
	if (cipher == 2) {
		c->g256.info.version = TLS_1_3_VERSION;
		c->g256.info.cipher_type = TLS_CIPHER_AES_GCM_256;
		memcpy(c->g256.salt, iv, 4);
		memcpy(c->g256.iv, iv + 4, 8);
		memcpy(c->g256.key, key, 32);
		*clen = sizeof(c->g256);
	} else {
		c->g128.info.version = TLS_1_3_VERSION;
		c->g128.info.cipher_type = TLS_CIPHER_AES_GCM_128;
		memcpy(c->g128.salt, iv, 4);
		memcpy(c->g128.iv, iv + 4, 8);
		memcpy(c->g128.key, key, 16);
		*clen = sizeof(c->g128);
	}
	rc = 0;
out:
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(iv, sizeof(iv));
	return rc;
}

/* The unit tests stand in for a kernel with the tls module here */
int (*tls_ktls_setsockopt)(int, int, int, const void *, socklen_t) = setsockopt;
/* A kernel that took TLS_TX and refused TLS_RX will refuse it again: the
 * connection it happened on is lost, the next ones keep OpenSSL's records
 * rather than fail the same way on every reconnect. */
static atomic_bool rx_refused;
/* A controller that sent a KeyUpdate will send more (a re-keying policy):
 * kTLS here cannot follow one, so the next connections keep OpenSSL's
 * records, which can, rather than fail on every reconnect. */
static atomic_bool rekeyed;

int tls_ktls_engage(int fd, uint8_t cipher, const struct tls_secrets *sec, const char **why)
{
	const char *off = getenv("NVMEOF_KTLS");
	if (off && !strcmp(off, "0")) {
		*why = "NVMEOF_KTLS=0";
		return 1;
	}
	if (!sec->have_tx || !sec->have_rx || sec->len != (cipher == 2 ? 48u : 32u)) {
		*why = "OpenSSL gave no traffic secrets";
		return 1;
	}
	if (atomic_load(&rekeyed)) {
		*why = "a controller sent a KeyUpdate on an earlier connection, which kTLS here cannot follow";
		return 1;
	}
	if (atomic_load(&rx_refused)) {
		*why = "the kernel refused TLS_RX on an earlier connection";
		return 1;
	}
	if (tls_ktls_setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls"))) {
		/* no tls module: the socket is as it was. The kernel loads it on
		 * demand only for a caller with CAP_NET_ADMIN */
		*why = errno == ENOENT ? "the tls module is not loaded (modprobe tls; loading it on demand needs "
					 "CAP_NET_ADMIN), or this kernel has no kTLS"
				       : "setsockopt TCP_ULP tls failed";
		return 1;
	}
	union tls_ktls_crypto c;
	socklen_t clen = 0;
	int rc = -1;
	/* TX first: a failure there leaves the socket as it was, records by OpenSSL */
	if (tls_ktls_crypto_info(cipher, sec->tx, sec->len, &c, &clen) ||
	    tls_ktls_setsockopt(fd, SOL_TLS, TLS_TX, &c, clen)) {
		*why = "setsockopt TLS_TX failed";
		rc = 1;
		goto out;
	}
	/* RX after TX: no way back, the kernel seals what is sent from now on */
	if (tls_ktls_crypto_info(cipher, sec->rx, sec->len, &c, &clen) ||
	    tls_ktls_setsockopt(fd, SOL_TLS, TLS_RX, &c, clen)) {
		int e = errno;
		atomic_store(&rx_refused, true);
		*why = "setsockopt TLS_RX failed after TLS_TX (the next connections keep OpenSSL's records, "
		       "as NVMEOF_KTLS=0 does)";
		errno = e;
		goto out;
	}
	rc = 0;
out:
	OPENSSL_cleanse(&c, sizeof(c));
	return rc;
}

/* RFC 8446 5.1: a handshake record holds whole messages, several of them,
 * or a part of one; each is [msg_type u8][length u24][body]. Only complete
 * NewSessionTickets are dropped; a KeyUpdate (24) would need the kernel to
 * take new keys, which the TLS_RX set once cannot. */
int tls_ktls_classify(unsigned char type, const uint8_t *buf, size_t n, char *why, size_t cap)
{
	if (type == 21) { /* alert: level, description */
		if (n == 2 && buf[1] == 0)
			return TLS_CTRL_CLOSE; /* close_notify: the controller closed the connection */
		if (n != 2)
			snprintf(why, cap, "a malformed TLS alert (%zu bytes)", n);
		else
			snprintf(why, cap, "the controller sent TLS alert %s (%s)", SSL_alert_desc_string_long(buf[1]),
				 buf[0] == 1 ? "warning" : "fatal");
		return TLS_CTRL_FAIL;
	}
	if (type != 22) {
		snprintf(why, cap, "a TLS record of type %u, not data, an alert or a handshake message", type);
		return TLS_CTRL_FAIL;
	}
	for (size_t i = 0;;) {
		if (n - i >= 1 && buf[i] == 24) {
			snprintf(why, cap, "TLS: the controller sent a KeyUpdate; kTLS on this kernel cannot re-key: "
				 "NVMEOF_KTLS=0 keeps OpenSSL's records, which can");
			return TLS_CTRL_REKEY;
		}
		size_t len = n - i >= 4 ? (size_t)buf[i + 1] << 16 | (size_t)buf[i + 2] << 8 | buf[i + 3] : 0;
		if (n - i < 4 || n - i - 4 < len) {
			snprintf(why, cap, "a TLS handshake message split across records (kTLS takes whole ones only; "
				 "NVMEOF_KTLS=0 keeps OpenSSL's records)");
			return TLS_CTRL_FAIL;
		}
		if (buf[i] != 4) {
			snprintf(why, cap, "a TLS handshake message of type %u after the handshake", buf[i]);
			return TLS_CTRL_FAIL;
		}
		i += 4 + len;
		if (i == n)
			return TLS_CTRL_DROP;
	}
}

ssize_t tls_ktls_ctrl(int fd, char *why, size_t cap)
{
	/* a record that is not data: recvmsg without room for its type said
	 * EIO; read it with the room, and judge it (tls_ktls_classify) */
	uint8_t buf[16384 + 256];
	char cbuf[CMSG_SPACE(sizeof(unsigned char))];
	struct iovec v = {buf, sizeof(buf)};
	struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT);
	if (n < 0) {
		int e = errno;
		snprintf(why, cap, "reading a TLS record that is not data: %s", strerror(e));
		errno = e;
		return -1;
	}
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	unsigned char type = 23;
	if (c && c->cmsg_level == SOL_TLS && c->cmsg_type == TLS_GET_RECORD_TYPE)
		type = *CMSG_DATA(c);
	int k = tls_ktls_classify(type, buf, (size_t)n, why, cap);
	OPENSSL_cleanse(buf, (size_t)n);
	if (k == TLS_CTRL_REKEY)
		atomic_store(&rekeyed, true);
	if (k == TLS_CTRL_CLOSE)
		return 0;
	errno = k == TLS_CTRL_DROP ? EAGAIN : EPROTO;
	return -1;
}
