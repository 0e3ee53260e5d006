/*
 * A TLS record other than application data on a kTLS socket (recvmsg fails
 * with EIO until it is read with a control buffer): read here, apart from
 * the handshake (tls_conn.c) so that the transport's tests link it alone.
 * And the socket calls of a queue over TLS where the kernel took no keys:
 * OpenSSL's SSL_read/SSL_write behind the transport's sendmsg/recvmsg.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <linux/tls.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tls.h"

#ifndef SOL_TLS
#define SOL_TLS 282
#endif

int tls_ktls_control_record(int fd, char *why, size_t why_len)
{
	uint8_t buf[512];
	char cbuf[CMSG_SPACE(sizeof(unsigned char))];
	struct iovec v = {buf, sizeof(buf)};
	struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		snprintf(why, why_len, "receiving a TLS record: %s", strerror(errno));
		return -1;
	}
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	unsigned type = c && c->cmsg_level == SOL_TLS && c->cmsg_type == TLS_GET_RECORD_TYPE ? *CMSG_DATA(c) : 23;
	if (type == 22) /* handshake: a NewSessionTicket we do not use */
		return 0;
	if (type == 21 && n >= 2) {
		snprintf(why, why_len, "the controller sent TLS alert %s",
			 buf[1] == 0 ? "close_notify" : SSL_alert_desc_string_long(buf[1]));
		return -1;
	}
	snprintf(why, why_len, "a TLS record of type %u in the data stream", type);
	return -1;
}

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

void tls_io_free(void *ssl) { SSL_free(ssl); }
