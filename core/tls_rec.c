/*
 * The socket calls of a queue over TLS: OpenSSL's SSL_read/SSL_write behind
 * the transport's sendmsg/recvmsg, and the BIO they go through. Apart from
 * the handshake (tls_conn.c) so that the transport's tests link it alone.
 */
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "tls.h"

/* Why OpenSSL stopped, as errno for the transport's messages. */
static ssize_t io_fail(SSL *s, int r)
{
	int err = SSL_get_error(s, r);
	int e = errno;
	ERR_clear_error();
	if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
		errno = EAGAIN;
		return -1;
	}
	if (err == SSL_ERROR_ZERO_RETURN)
		return 0; /* close_notify: the controller closed */
	/* a record that does not decrypt (corrupted or forged), or an alert */
	errno = err == SSL_ERROR_SYSCALL && e ? e : err == SSL_ERROR_SYSCALL ? ECONNRESET : EBADMSG;
	return -1;
}

ssize_t tls_io_send(void *ssl, const struct iovec *v, size_t nv, uint8_t *buf, size_t cap)
{
	SSL *s = ssl;
	size_t n = 0;
	/* one record for what fits: a PDU's header and its data together */
	for (size_t i = 0; i < nv && n < cap; i++) {
		size_t k = v[i].iov_len < cap - n ? v[i].iov_len : cap - n;
		memcpy(buf + n, v[i].iov_base, k);
		n += k;
	}
	if (!n)
		return 0;
	size_t w = 0;
	ERR_clear_error();
	errno = 0;
	int r = SSL_write_ex(s, buf, n, &w);
	if (r == 1)
		return (ssize_t)w;
	ssize_t f = io_fail(s, r);
	if (!f) {
		errno = EPIPE;
		f = -1;
	}
	return f;
}

ssize_t tls_io_recv(void *ssl, const struct iovec *v, size_t nv, bool *more)
{
	SSL *s = ssl;
	size_t got = 0;
	*more = false;
	for (size_t i = 0; i < nv; i++) {
		size_t at = 0;
		while (at < v[i].iov_len) {
			size_t r = 0;
			ERR_clear_error();
			errno = 0;
			int ok = SSL_read_ex(s, (uint8_t *)v[i].iov_base + at, v[i].iov_len - at, &r);
			if (ok != 1) {
				ssize_t f = io_fail(s, ok);
				if (got && (f > 0 || errno == EAGAIN))
					return (ssize_t)got;
				return got && f == 0 ? (ssize_t)got : f;
			}
			at += r;
			got += r;
		}
	}
	/* every buffer full: OpenSSL may hold more of a record, which no
	 * epoll wakeup will announce */
	*more = SSL_pending(s) > 0;
	return (ssize_t)got;
}

/* OpenSSL 3 keeps the TLS 1.3 application traffic secrets and the
 * exporter master secret in the SSL object itself (to derive the next keys
 * at a KeyUpdate) and frees it without cleansing them: they would outlive
 * the connection in freed heap. Their places in the object are found once,
 * from the values the key log handed out, and cleansed before each free. A
 * place is taken only where the object's allocation is malloc's (OpenSSL's
 * default memory functions: malloc_usable_size bounds the search) and the
 * secret was found exactly once; otherwise nothing is touched. */
#define SECRETS 3
static _Atomic long secret_at[SECRETS] = {-1, -1, -1};

static size_t ssl_size(const SSL *s)
{
	CRYPTO_malloc_fn m;
	CRYPTO_realloc_fn r;
	CRYPTO_free_fn f;
	CRYPTO_get_mem_functions(&m, &r, &f);
	return m == CRYPTO_malloc && s ? malloc_usable_size((void *)s) : 0;
}

void tls_io_note_secrets(const void *ssl, const struct tls_secrets *sec)
{
	const uint8_t *base = ssl, *val[SECRETS] = {sec->tx, sec->rx, sec->exp};
	bool have[SECRETS] = {sec->have_tx, sec->have_rx, sec->have_exp};
	size_t size = ssl_size(ssl);
	for (int i = 0; i < SECRETS && sec->len >= 32; i++) {
		const uint8_t *at = have[i] && size ? memmem(base, size, val[i], sec->len) : NULL;
		if (at && !memmem(at + 1, size - (size_t)(at + 1 - base), val[i], sec->len))
			atomic_store(&secret_at[i], at - base);
	}
}

long tls_io_secret_at(int i)
{
	return i >= 0 && i < SECRETS ? atomic_load(&secret_at[i]) : -1;
}

void tls_io_cleanse(void *ssl)
{
	SSL *s = ssl;
	const SSL_CIPHER *c = s ? SSL_get_current_cipher(s) : NULL;
	const EVP_MD *md = c ? SSL_CIPHER_get_handshake_digest(c) : NULL;
	int len = md ? EVP_MD_get_size(md) : 0;
	size_t size = ssl_size(s);
	long tx = atomic_load(&secret_at[0]);
	unsigned long v = OpenSSL_version_num();
	/* OpenSSL 1.1.1 to 3.5 keep twelve secrets of EVP_MAX_MD_SIZE in a
	 * row: early, handshake, master, resumption master, client and server
	 * finished, the server finished and handshake traffic hashes, then
	 * client and server application traffic, exporter, early exporter.
	 * The master secret with the server finished hash gives back the
	 * traffic secrets, so the whole row goes, where the three found sit
	 * at that spacing, in OpenSSL 3, within the allocation */
	if (s && size && tx >= 8 * EVP_MAX_MD_SIZE && atomic_load(&secret_at[1]) == tx + EVP_MAX_MD_SIZE &&
	    atomic_load(&secret_at[2]) == tx + 2 * EVP_MAX_MD_SIZE && v >= 0x30000000UL && v < 0x40000000UL &&
	    (size_t)tx + 4 * EVP_MAX_MD_SIZE <= size) {
		OPENSSL_cleanse((uint8_t *)s + tx - 8 * EVP_MAX_MD_SIZE, 12 * EVP_MAX_MD_SIZE);
		return;
	}
	for (int i = 0; i < SECRETS && len > 0; i++) {
		long at = atomic_load(&secret_at[i]);
		if (at >= 0 && (size_t)at + (size_t)len <= size)
			OPENSSL_cleanse((uint8_t *)s + at, (size_t)len);
	}
}

void tls_io_free(void *ssl)
{
	tls_io_cleanse(ssl);
	SSL_free(ssl);
}

/* OpenSSL's socket BIO writes with write(2): a connection reset by the
 * controller would raise SIGPIPE in the application. A queue's records go
 * through this BIO instead: send with MSG_NOSIGNAL,
 * both ways non-blocking, the socket's fd as its data. */
static BIO_METHOD *nosig_method;
static pthread_once_t nosig_once = PTHREAD_ONCE_INIT;

static int nosig_write(BIO *b, const char *p, int n)
{
	ssize_t w = send((int)(intptr_t)BIO_get_data(b), p, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	BIO_clear_retry_flags(b);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		BIO_set_retry_write(b);
	return (int)w;
}

static int nosig_read(BIO *b, char *p, int n)
{
	ssize_t r = recv((int)(intptr_t)BIO_get_data(b), p, (size_t)n, MSG_DONTWAIT);
	BIO_clear_retry_flags(b);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		BIO_set_retry_read(b);
	return (int)r;
}

static long nosig_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)b, (void)num, (void)ptr;
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int nosig_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static void nosig_init(void)
{
	BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "nvmeof socket");
	if (m && BIO_meth_set_write(m, nosig_write) && BIO_meth_set_read(m, nosig_read) &&
	    BIO_meth_set_ctrl(m, nosig_ctrl) && BIO_meth_set_create(m, nosig_create))
		nosig_method = m;
	else
		BIO_meth_free(m);
}

int tls_io_nosigpipe(void *ssl, int fd)
{
	pthread_once(&nosig_once, nosig_init);
	BIO *b = nosig_method ? BIO_new(nosig_method) : NULL;
	if (!b)
		return -1;
	BIO_set_data(b, (void *)(intptr_t)fd);
	SSL_set_bio(ssl, b, b); /* one reference for both directions; frees the socket BIOs */
	return 0;
}
