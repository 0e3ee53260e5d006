/*
 * The TLS handshake and record path without a target: an OpenSSL 3 server
 * in a thread of this process, on a socketpair, with the PSK it finds by
 * identity (the identity and PSK tls_psk_setup derives: a server that
 * derived another key refuses the binder), or one that misbehaves: closes
 * in the middle of the handshake, answers in plain bytes, or corrupts a
 * record on its way. The client is the library's (tls_client_handshake,
 * tls_io_send, tls_io_recv) on a non-blocking socket, as a queue uses it.
 * A controller that resets the connection must not raise SIGPIPE in the
 * client (its writes go with MSG_NOSIGNAL): this program would die of it.
 * The server's thread blocks SIGPIPE for itself (OpenSSL's socket BIO).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "check.h"
#include "internal.h"
#include "tls.h"

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6"
#define SUBNQN "nqn.2026-12.io.example:tls"
#define K256 "NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:"
#define K384 "NVMeTLSkey-1:02:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vcSEgBQ==:"
/* another 32-byte key (its CRC right): a wrong key that parses */
#define KWRONG "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:"

enum mode { ECHO, CLOSE_AFTER_HELLO, PLAIN_BYTES, CORRUPT, ECHO_KEY_UPDATE };
struct server {
	int fd;
	enum mode mode;
	const struct tls_psk *p; /* what the server knows */
	size_t echo;             /* bytes to echo back */
	pthread_t th;
};

static const struct tls_psk *srv_psk;
static int find_psk(SSL *s, const unsigned char *id, size_t idlen, SSL_SESSION **sess)
{
	*sess = NULL;
	if (idlen != strlen(srv_psk->identity) || memcmp(id, srv_psk->identity, idlen))
		return 1; /* unknown identity: no session */
	static const unsigned char c128[] = {0x13, 0x01}, c256[] = {0x13, 0x02};
	SSL_SESSION *ss = SSL_SESSION_new();
	SSL_SESSION_set1_master_key(ss, srv_psk->psk, srv_psk->len);
	SSL_SESSION_set_cipher(ss, SSL_CIPHER_find(s, srv_psk->cipher == 2 ? c256 : c128));
	SSL_SESSION_set_protocol_version(ss, TLS1_3_VERSION);
	*sess = ss;
	return 1;
}

static void *serve(void *arg)
{
	struct server *sv = arg;
	uint8_t buf[65536];
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	if (sv->mode == CLOSE_AFTER_HELLO) {
		ssize_t n = read(sv->fd, buf, sizeof(buf)); /* the ClientHello */
		(void)n;
		shutdown(sv->fd, SHUT_RDWR);
		return NULL;
	}
	if (sv->mode == PLAIN_BYTES) {
		ssize_t n = read(sv->fd, buf, sizeof(buf));
		memset(buf, 0, 128);
		buf[0] = 0x01; /* an ICResp's type, where a ServerHello belongs */
		n = write(sv->fd, buf, 128);
		(void)n;
		return NULL;
	}
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384");
	SSL_CTX_set_num_tickets(ctx, 0);
	srv_psk = sv->p;
	SSL_CTX_set_psk_find_session_callback(ctx, find_psk);
	SSL *s = SSL_new(ctx);
	BIO *out = NULL;
	if (sv->mode == CORRUPT) {
		/* records go to memory; this thread forwards them, one byte flipped */
		out = BIO_new(BIO_s_mem());
		fcntl(sv->fd, F_SETFL, O_NONBLOCK); /* SSL_accept returns to forward its flight */
		SSL_set_bio(s, BIO_new_socket(sv->fd, BIO_NOCLOSE), out);
	} else {
		SSL_set_fd(s, sv->fd);
	}
	int r;
	while ((r = SSL_accept(s)) != 1) {
		if (out) { /* forward the handshake as it is */
			char *p;
			long n = BIO_get_mem_data(out, &p);
			if (n > 0 && write(sv->fd, p, (size_t)n) == n)
				(void)BIO_reset(out);
		}
		if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ)
			goto done;
		struct pollfd pf = {.fd = sv->fd, .events = POLLIN};
		if (poll(&pf, 1, 5000) <= 0)
			goto done;
	}
	if (out) {
		char *p;
		long n = BIO_get_mem_data(out, &p);
		if (n > 0 && write(sv->fd, p, (size_t)n) == n)
			(void)BIO_reset(out);
		SSL_write(s, "0123456789abcdef", 16);
		n = BIO_get_mem_data(out, &p);
		p[n - 3] ^= 0x40; /* inside the record's tag */
		if (write(sv->fd, p, (size_t)n) != n)
			goto done;
		(void)BIO_reset(out);
		sleep(1);
		goto done;
	}
	/* echo what comes, whatever its records' sizes */
	for (size_t got = 0; got < sv->echo;) {
		size_t n = 0;
		if (SSL_read_ex(s, buf, sizeof(buf), &n) != 1)
			break;
		/* ECHO_KEY_UPDATE: new keys both ways (the client's asked for)
		 * before the first answer and again halfway: a record with no
		 * data for the client's reads, then records under the new keys */
		if (sv->mode == ECHO_KEY_UPDATE && (!got || (got < sv->echo / 2 && got + n >= sv->echo / 2)))
			SSL_key_update(s, SSL_KEY_UPDATE_REQUESTED);
		size_t w = 0;
		if (SSL_write_ex(s, buf, n, &w) != 1)
			break;
		got += n;
	}
done:
	SSL_free(s);
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return NULL;
}

/* A client socket (non-blocking) and a server on the other end. */
static int start(struct server *sv, enum mode mode, const struct tls_psk *p, size_t echo)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		return -1;
	fcntl(sp[0], F_SETFL, O_NONBLOCK);
	*sv = (struct server){.fd = sp[1], .mode = mode, .p = p, .echo = echo};
	pthread_create(&sv->th, NULL, serve, sv);
	return sp[0];
}
static void stop(struct server *sv, int fd)
{
	close(fd);
	pthread_join(sv->th, NULL);
	close(sv->fd);
}

static int handshake(const char *client_key, const char *server_key, enum mode mode, size_t echo, int *fd,
		     struct server *sv, void **ssl, struct tls_psk **cp, struct tls_psk **spk)
{
	bool final = false;
	if (tls_psk_setup(client_key, NULL, 0, HOSTNQN, SUBNQN, cp) || tls_psk_setup(server_key, NULL, 0, HOSTNQN, SUBNQN, spk))
		return -100;
	*fd = start(sv, mode, *spk, echo);
	/* OpenSSL's records are what these tests hold to, also where the
	 * kernel could take the keys (kTLS: tests/target/tls.sh) */
	setenv("NVMEOF_KTLS", "0", 1);
	const char *no_ktls = NULL;
	return tls_client_handshake(*fd, *cp, 5000, 3, &final, ssl, &no_ktls);
}

/* the KeyUpdates the client read: a message callback on its connection */
static int key_updates_read;
static void count_key_updates(int write_p, int version, int type, const void *buf, size_t len, SSL *s, void *arg)
{
	(void)version, (void)s, (void)arg;
	if (!write_p && type == SSL3_RT_HANDSHAKE && len >= 1 && ((const uint8_t *)buf)[0] == SSL3_MT_KEY_UPDATE)
		key_updates_read++;
}

/* a byte stream both ways through the record calls; KEY_UPDATE: the
 * controller re-keys (a KeyUpdate, update_requested) twice on the way,
 * which OpenSSL's records follow: the reads see no data in that record
 * (EAGAIN) and go on, the writes go under the client's new keys */
/* OpenSSL keeps twelve TLS 1.3 secrets side by side in the SSL object
 * (early, handshake, master, resumption master, the two finished secrets,
 * two transcript hashes, the application traffic secrets, the exporter
 * secrets; EVP_MAX_MD_SIZE each) and cleanses none at its free. The master
 * secret with the transcript hash gives back the traffic secrets, so all of
 * them go: each of the twelve is zero after the cleansing. */
static void cleansed_all(void *ssl)
{
	long tx = tls_io_secret_at(0);
	CHECK(tx >= 8 * 64);
	CHECK_EQ(tls_io_secret_at(1), tx + 64);
	CHECK_EQ(tls_io_secret_at(2), tx + 128);
	if (!ssl || tx < 8 * 64)
		return;
	const uint8_t *master = (const uint8_t *)ssl + tx - 6 * 64;
	int set = 0;
	for (int i = 0; i < 32; i++)
		set |= master[i];
	CHECK(set != 0); /* it was there: this check could fail */
	tls_io_cleanse(ssl);
	const uint8_t *b = (const uint8_t *)ssl + tx - 8 * 64;
	size_t nz = 0;
	for (int i = 0; i < 12 * 64; i++)
		nz += b[i] != 0;
	CHECK_EQ(nz, 0);
}

static void echo_stream(enum mode mode)
{
	static const char *const keys[] = {K256, K384};
	static uint8_t out[40000], back[40000];
	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 7 + 3);
	for (int k = 0; k < 2; k++) {
		struct server sv;
		struct tls_psk *cp = NULL, *spk = NULL;
		void *ssl = NULL;
		int fd = -1;
		memset(back, 0, sizeof(back));
		int rc = handshake(keys[k], keys[k], mode, sizeof(out), &fd, &sv, &ssl, &cp, &spk);
		if (rc) {
			fprintf(stderr, "    %s\n", nvmeof_errmsg());
			CHECK(0);
		}
		CHECK(ssl != NULL); /* a socketpair takes no kernel TLS keys */
		key_updates_read = 0;
		if (ssl)
			SSL_set_msg_callback(ssl, count_key_updates);
		uint8_t rec[TLS_IO_OUT_MAX];
		/* three pieces per send, as a PDU's header, data and digest */
		size_t sent = 0, got = 0;
		for (int spins = 0; (sent < sizeof(out) || got < sizeof(back)) && spins < 100000 && ssl; spins++) {
			if (sent < sizeof(out)) {
				size_t left = sizeof(out) - sent, a = left < 72 ? left : 72;
				struct iovec v[3] = {{out + sent, a}, {out + sent + a, (left - a) / 2}, {out + sent + a + (left - a) / 2, left - a - (left - a) / 2}};
				ssize_t n = tls_io_send(ssl, v, 3, rec, sizeof(rec));
				if (n > 0)
					sent += (size_t)n;
				else
					CHECK(n < 0 && errno == EAGAIN);
			}
			/* the header first, then the rest into a second buffer, as the transport reads */
			size_t want = sizeof(back) - got;
			struct iovec v[2] = {{back + got, want < 8 ? want : 8}, {back + got + (want < 8 ? want : 8), want < 8 ? 0 : want - 8}};
			bool more = false;
			ssize_t n = tls_io_recv(ssl, v, 2, &more);
			if (n > 0)
				got += (size_t)n;
			else if (n < 0 && errno == EAGAIN) {
				struct pollfd pf = {.fd = fd, .events = POLLIN};
				poll(&pf, 1, 100);
			} else {
				CHECK(0);
				break;
			}
		}
		CHECK_EQ(sent, sizeof(out));
		CHECK_EQ(got, sizeof(back));
		CHECK(!memcmp(out, back, sizeof(out)));
		CHECK_EQ(key_updates_read, mode == ECHO_KEY_UPDATE ? 2 : 0);
		cleansed_all(ssl);
		tls_io_free(ssl);
		stop(&sv, fd);
		tls_psk_free(cp);
		tls_psk_free(spk);
	}
}
TEST(records_carry_a_byte_stream_both_ways_with_either_hash) { echo_stream(ECHO); }
TEST(a_key_update_under_openssls_records_is_followed) { echo_stream(ECHO_KEY_UPDATE); }

/* the handshake fails, saying pattern, with no key material */
static void refused(const char *name, const char *client_key, const char *server_key, enum mode mode,
		    const char *pattern)
{
	struct server sv;
	struct tls_psk *cp = NULL, *spk = NULL;
	void *ssl = NULL;
	int fd = -1;
	int rc = handshake(client_key, server_key, mode, 0, &fd, &sv, &ssl, &cp, &spk);
	const char *m = nvmeof_errmsg();
	if (!rc || !strstr(m, pattern) || strstr(m, "AAECAwQF") || strstr(m, "VRLbtnN9")) {
		fprintf(stderr, "    %s: rc %d: %s\n", name, rc, m);
		CHECK(0);
	}
	CHECK(ssl == NULL);
	stop(&sv, fd);
	tls_psk_free(cp);
	tls_psk_free(spk);
}

TEST(handshakes_that_fail_say_why)
{
	refused("a wrong key", KWRONG, K256, ECHO, "the controller refused the PSK (");
	refused("a key of the other hash", K384, K256, ECHO, "refused the PSK identity 'NVMe0R02 " HOSTNQN " " SUBNQN "'");
	refused("a handshake cut midway", K256, K256, CLOSE_AFTER_HELLO, "closed the connection");
	refused("a port without TLS", K256, K256, PLAIN_BYTES, "did not answer in TLS");
}

TEST(a_corrupted_record_fails_the_read)
{
	struct server sv;
	struct tls_psk *cp = NULL, *spk = NULL;
	void *ssl = NULL;
	int fd = -1;
	int rc = handshake(K256, K256, CORRUPT, 0, &fd, &sv, &ssl, &cp, &spk);
	CHECK_EQ(rc, 0);
	uint8_t b[64];
	ssize_t n = -1;
	int e = 0;
	for (int i = 0; i < 50 && ssl; i++) {
		struct iovec v = {b, sizeof(b)};
		bool more;
		n = tls_io_recv(ssl, &v, 1, &more);
		e = errno;
		if (!(n < 0 && e == EAGAIN))
			break;
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		poll(&pf, 1, 100);
	}
	CHECK_EQ(n, -1);
	CHECK_EQ(e, EBADMSG);
	if (ssl)
		tls_io_free(ssl);
	stop(&sv, fd);
	tls_psk_free(cp);
	tls_psk_free(spk);
}

int main(int argc, char **argv)
{
	static const struct test_case t[] = {
		T(records_carry_a_byte_stream_both_ways_with_either_hash),
		T(a_key_update_under_openssls_records_is_followed),
		T(handshakes_that_fail_say_why),
		T(a_corrupted_record_fails_the_read),
	};
	return run_named_tests("unit-tlsio", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
