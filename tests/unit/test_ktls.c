/*
 * kTLS without the kernel's tls module (core/tls_ktls.c): what a record
 * that is not data means (tls_ktls_classify, from its type and plaintext:
 * TLS 1.3 packs several handshake messages in one record and splits one
 * across records, RFC 8446 5.1), and the keys the kernel is handed: an
 * OpenSSL client and server in this process, over memory BIOs, complete a
 * PSK handshake; the client's key log lines give tls_ktls_crypto_info the
 * traffic secrets, and the records both sides then write must open with
 * AES-GCM under that key, nonce salt|iv XOR the record's sequence number
 * from 0, and the record header as AAD (RFC 8446 5.2, 5.3).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "check.h"
#include "tls.h"

static int classify(unsigned char type, const uint8_t *b, size_t n, char *why)
{
	why[0] = 0;
	return tls_ktls_classify(type, b, n, why, 200);
}

/* A NewSessionTicket alone, or two in one record: dropped (no tickets are used) */
TEST(session_tickets_are_dropped)
{
	char why[200];
	static const uint8_t one[] = {4, 0, 0, 1, 0}, two[] = {4, 0, 0, 2, 7, 7, 4, 0, 0, 0};
	CHECK_EQ(classify(22, one, sizeof(one), why), TLS_CTRL_DROP);
	CHECK_EQ(classify(22, two, sizeof(two), why), TLS_CTRL_DROP);
}

/* A KeyUpdate after a ticket in the same record is named, not dropped with it */
TEST(a_key_update_is_named_even_behind_a_ticket)
{
	char why[200];
	static const uint8_t ku[] = {24, 0, 0, 1, 0}, nst_ku[] = {4, 0, 0, 1, 0, 24, 0, 0, 1, 0};
	CHECK_EQ(classify(22, ku, sizeof(ku), why), TLS_CTRL_REKEY);
	CHECK(strstr(why, "TLS: the controller sent a KeyUpdate; kTLS on this kernel cannot re-key: ") == why);
	CHECK(strstr(why, "NVMEOF_KTLS=0"));
	CHECK_EQ(classify(22, nst_ku, sizeof(nst_ku), why), TLS_CTRL_REKEY);
	CHECK(strstr(why, "KeyUpdate") && strstr(why, "NVMEOF_KTLS=0"));
}

/* A message split across records: its first part (a ticket's header with a
 * longer body) and a continuation (whose first byte is arbitrary, here 4)
 * are refused as fragments, not dropped as tickets */
TEST(a_handshake_message_split_across_records_is_refused)
{
	char why[200];
	static const uint8_t head[] = {4, 0, 0, 9, 1, 2}, cont[] = {4, 5, 6, 7, 8};
	static const uint8_t short_hdr[] = {4, 0, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 4, 0};
	CHECK_EQ(classify(22, head, sizeof(head), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "split across records"));
	CHECK_EQ(classify(22, cont, sizeof(cont), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "split across records"));
	CHECK_EQ(classify(22, short_hdr, sizeof(short_hdr), why), TLS_CTRL_FAIL);
	CHECK_EQ(classify(22, short_hdr, 0, why), TLS_CTRL_FAIL);
}

/* Other handshake messages and record types end the connection, named */
TEST(other_records_are_named)
{
	char why[200];
	static const uint8_t cr[] = {13, 0, 0, 0}, ccs[] = {1};
	CHECK_EQ(classify(22, cr, sizeof(cr), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "type 13"));
	CHECK_EQ(classify(20, ccs, sizeof(ccs), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "type 20"));
}

/* A close_notify is the controller closing the connection (as OpenSSL's
 * records read it); other alerts are named by their description */
TEST(close_notify_closes_and_other_alerts_are_named)
{
	char why[200];
	static const uint8_t close_notify[] = {1, 0}, bad_mac[] = {2, 20}, odd[] = {2};
	CHECK_EQ(classify(21, close_notify, sizeof(close_notify), why), TLS_CTRL_CLOSE);
	CHECK_EQ(classify(21, bad_mac, sizeof(bad_mac), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "bad record mac") && strstr(why, "fatal"));
	CHECK_EQ(classify(21, odd, sizeof(odd), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "malformed"));
}

static uint8_t PSK[48];
static int CIPHER;
static struct tls_secrets SEC;

static SSL_SESSION *psk_session(SSL *s)
{
	static const unsigned char c128[] = {0x13, 0x01}, c256[] = {0x13, 0x02};
	SSL_SESSION *ss = SSL_SESSION_new();
	SSL_SESSION_set1_master_key(ss, PSK, CIPHER == 2 ? 48 : 32);
	SSL_SESSION_set_cipher(ss, SSL_CIPHER_find(s, CIPHER == 2 ? c256 : c128));
	SSL_SESSION_set_protocol_version(ss, TLS1_3_VERSION);
	return ss;
}
static int find_psk(SSL *s, const unsigned char *id, size_t idlen, SSL_SESSION **sess)
{
	(void)id, (void)idlen;
	*sess = psk_session(s);
	return 1;
}
static int use_psk(SSL *s, const EVP_MD *md, const unsigned char **id, size_t *idlen, SSL_SESSION **sess)
{
	(void)md;
	*id = (const unsigned char *)"NVMe0R01 host sub";
	*idlen = strlen("NVMe0R01 host sub");
	*sess = psk_session(s);
	return 1;
}
static void keylog(const SSL *s, const char *line)
{
	(void)s;
	tls_ktls_keylog(&SEC, line);
}

static size_t drain(BIO *b, uint8_t *out, size_t cap)
{
	int n = BIO_read(b, out, (int)cap);
	return n > 0 ? (size_t)n : 0;
}
static void move(BIO *from, BIO *to)
{
	uint8_t b[16384];
	size_t n = drain(from, b, sizeof(b));
	if (n)
		BIO_write(to, b, (int)n);
}

/* Opens every record in buf[0..n) in turn, from sequence 0, with the
 * kernel's crypto_info; returns how many opened, the last one's plaintext
 * (the inner content type its last byte) in last. */
static int open_records(const union tls_ktls_crypto *c, const uint8_t *buf, size_t n, uint8_t *last, size_t *lastn)
{
	const uint8_t *key = CIPHER == 2 ? c->g256.key : c->g128.key;
	const uint8_t *salt = CIPHER == 2 ? c->g256.salt : c->g128.salt;
	const uint8_t *iv = CIPHER == 2 ? c->g256.iv : c->g128.iv;
	const uint8_t *seq0 = CIPHER == 2 ? c->g256.rec_seq : c->g128.rec_seq;
	uint64_t seq = 0;
	for (int k = 0; k < 8; k++)
		seq = seq << 8 | seq0[k];
	int opened = 0;
	for (size_t off = 0; off + 5 <= n; seq++) {
		size_t len = (size_t)buf[off + 3] << 8 | buf[off + 4];
		if (buf[off] != 23 || len < 17 || off + 5 + len > n)
			return -1;
		uint8_t nonce[12];
		memcpy(nonce, salt, 4);
		memcpy(nonce + 4, iv, 8);
		for (int k = 0; k < 8; k++)
			nonce[4 + k] ^= (uint8_t)(seq >> (56 - 8 * k));
		EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
		int ol = 0, fl = 0;
		int ok = EVP_DecryptInit_ex(x, CIPHER == 2 ? EVP_aes_256_gcm() : EVP_aes_128_gcm(), NULL, key, nonce) &&
			 EVP_DecryptUpdate(x, NULL, &ol, buf + off, 5) &&
			 EVP_DecryptUpdate(x, last, &ol, buf + off + 5, (int)len - 16) &&
			 EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, 16, (void *)(buf + off + 5 + len - 16)) &&
			 EVP_DecryptFinal_ex(x, last + ol, &fl);
		EVP_CIPHER_CTX_free(x);
		if (!ok)
			return opened;
		*lastn = (size_t)(ol + fl);
		opened++;
		off += 5 + len;
	}
	return opened;
}

static void handshake_and_open(int cipher)
{
	CIPHER = cipher;
	for (size_t i = 0; i < sizeof(PSK); i++)
		PSK[i] = (uint8_t)(i * 7 + cipher);
	memset(&SEC, 0, sizeof(SEC));
	SSL_CTX *cc = SSL_CTX_new(TLS_client_method()), *sc = SSL_CTX_new(TLS_server_method());
	const char *suite = tls_cipher_name((uint8_t)cipher);
	SSL_CTX_set_min_proto_version(cc, TLS1_3_VERSION);
	SSL_CTX_set_min_proto_version(sc, TLS1_3_VERSION);
	SSL_CTX_set_ciphersuites(cc, suite);
	SSL_CTX_set_ciphersuites(sc, suite);
	SSL_CTX_set_keylog_callback(cc, keylog);
	SSL_CTX_set_num_tickets(sc, 2); /* NewSessionTickets: records 0 and 1 under the server's key */
	SSL *c = SSL_new(cc), *s = SSL_new(sc);
	SSL_set_psk_use_session_callback(c, use_psk);
	SSL_set_psk_find_session_callback(s, find_psk);
	BIO *c_in = BIO_new(BIO_s_mem()), *c_out = BIO_new(BIO_s_mem());
	BIO *s_in = BIO_new(BIO_s_mem()), *s_out = BIO_new(BIO_s_mem());
	BIO_set_mem_eof_return(c_in, -1);
	BIO_set_mem_eof_return(s_in, -1);
	SSL_set_bio(c, c_in, c_out);
	SSL_set_bio(s, s_in, s_out);
	SSL_set_connect_state(c);
	SSL_set_accept_state(s);
	bool cd = false, sd = false;
	for (int i = 0; i < 10 && !(cd && sd); i++) {
		if (!cd)
			cd = SSL_do_handshake(c) == 1;
		move(c_out, s_in);
		if (!sd)
			sd = SSL_do_handshake(s) == 1;
		if (!sd)
			move(s_out, c_in); /* after it, the server's records stay for us to open */
	}
	CHECK(cd && sd);
	CHECK(SSL_session_reused(c));
	CHECK(SEC.have_tx && SEC.have_rx);
	CHECK_EQ(SEC.len, cipher == 2 ? 48u : 32u);

	static uint8_t rec[32768], plain[32768];
	size_t pn = 0;
	union tls_ktls_crypto tx, rx;
	socklen_t tl = 0, rl = 0;
	CHECK_EQ(tls_ktls_crypto_info((uint8_t)cipher, SEC.tx, SEC.len, &tx, &tl), 0);
	CHECK_EQ(tls_ktls_crypto_info((uint8_t)cipher, SEC.rx, SEC.len, &rx, &rl), 0);
	CHECK_EQ(tx.g128.info.version, TLS_1_3_VERSION);
	CHECK_EQ(tx.g128.info.cipher_type, cipher == 2 ? TLS_CIPHER_AES_GCM_256 : TLS_CIPHER_AES_GCM_128);
	CHECK_EQ(tl, cipher == 2 ? sizeof(tx.g256) : sizeof(tx.g128));
	CHECK_EQ(rl, tl);

	/* the client's first application record: sequence 0 under its key */
	CHECK_EQ(SSL_write(c, "hello", 5), 5);
	size_t n = drain(c_out, rec, sizeof(rec));
	CHECK_EQ(open_records(&tx, rec, n, plain, &pn), 1);
	CHECK_EQ(pn, 6u);
	CHECK_MEM(plain, "hello\x17", 6);
	/* the server's: its tickets (content type 22), then its data; every
	 * record opens, in order */
	CHECK_EQ(SSL_write(s, "world", 5), 5);
	n = drain(s_out, rec, sizeof(rec));
	int records = 0;
	for (size_t off = 0; off + 5 <= n; off += 5 + ((size_t)rec[off + 3] << 8 | rec[off + 4]))
		records++;
	CHECK(records >= 2);
	CHECK_EQ(open_records(&rx, rec, n, plain, &pn), records);
	CHECK_EQ(pn, 6u);
	CHECK_MEM(plain, "world\x17", 6);
	/* the other direction's key opens nothing */
	CHECK_EQ(open_records(&tx, rec, n, plain, &pn), 0);
	SSL_free(c);
	SSL_free(s);
	SSL_CTX_free(cc);
	SSL_CTX_free(sc);
}

TEST(the_kernels_keys_open_openssls_records_aes_128_gcm) { handshake_and_open(1); }
TEST(the_kernels_keys_open_openssls_records_aes_256_gcm) { handshake_and_open(2); }

/* A kernel with the tls module, played by a setsockopt: TCP_ULP answers
 * ulp_errno (0: taken), TLS_TX takes the keys, TLS_RX answers rx_errno */
static int ulp_errno, rx_errno, calls;
static int fake_setsockopt(int fd, int level, int name, const void *v, socklen_t len)
{
	(void)fd, (void)v, (void)len;
	calls++;
	int e = level == SOL_TLS && name == TLS_RX ? rx_errno : level != SOL_TLS ? ulp_errno : 0;
	errno = e;
	return e ? -1 : 0;
}
static struct tls_secrets secrets(void)
{
	struct tls_secrets s = {.len = 32, .have_tx = true, .have_rx = true};
	memset(s.tx, 1, sizeof(s.tx));
	memset(s.rx, 2, sizeof(s.rx));
	return s;
}

/* ENOENT from TCP_ULP: the module may only be unloaded (the kernel loads
 * it on demand for CAP_NET_ADMIN alone): the trace says how to load it */
TEST(no_tls_module_suggests_modprobe)
{
	struct tls_secrets s = secrets();
	const char *why = NULL;
	unsetenv("NVMEOF_KTLS");
	tls_ktls_setsockopt = fake_setsockopt;
	ulp_errno = ENOENT, rx_errno = 0, calls = 0;
	CHECK_EQ(tls_ktls_engage(0, 1, &s, &why), 1);
	CHECK(why && strstr(why, "modprobe tls"));
	CHECK_EQ(calls, 1);
	ulp_errno = 0;
	CHECK_EQ(tls_ktls_engage(0, 1, &s, &why), 0); /* all three taken */
	CHECK_EQ(calls, 4);
	tls_ktls_setsockopt = setsockopt;
}

/* TLS_RX refused after TLS_TX was taken: that connection is lost (-1),
 * and the next ones keep OpenSSL's records instead of failing the same
 * way on every reconnect. Last: the refusal stays for the process. */
TEST(tls_rx_refused_once_keeps_openssls_records_after)
{
	struct tls_secrets s = secrets();
	const char *why = NULL;
	unsetenv("NVMEOF_KTLS");
	tls_ktls_setsockopt = fake_setsockopt;
	ulp_errno = 0, rx_errno = EINVAL, calls = 0;
	CHECK_EQ(tls_ktls_engage(0, 1, &s, &why), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK(why && strstr(why, "TLS_RX"));
	CHECK_EQ(calls, 3);
	CHECK_EQ(tls_ktls_engage(0, 1, &s, &why), 1);
	CHECK(why && strstr(why, "TLS_RX"));
	CHECK_EQ(calls, 3); /* the socket untouched */
	tls_ktls_setsockopt = setsockopt;
}

/* A record of the kernel's own (TLS_SET_RECORD_TYPE) from the sending end */
static int send_record(int fd, unsigned char type, const void *p, size_t n)
{
	char cbuf[CMSG_SPACE(1)] = {0};
	struct iovec v = {(void *)p, n};
	struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_TLS;
	c->cmsg_type = TLS_SET_RECORD_TYPE;
	c->cmsg_len = CMSG_LEN(1);
	*CMSG_DATA(c) = type;
	return sendmsg(fd, &m, 0) == (ssize_t)n ? 0 : -1;
}
/* The next read on the receiving end, as the transport's: recvmsg without
 * room for a record type, and on EIO tls_ktls_ctrl */
static ssize_t read_as_queue(int fd, uint8_t *b, size_t cap, char *why)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	if (poll(&pf, 1, 5000) != 1)
		return -2;
	why[0] = 0;
	ssize_t n = recv(fd, b, cap, MSG_DONTWAIT);
	if (n < 0 && errno == EIO)
		n = tls_ktls_ctrl(fd, why, 200);
	return n;
}

/* The kernel's kTLS, where it has the tls module (the 6.12 test bed:
 * tests/target/tls.sh runs this): a loopback connection whose sending end
 * seals records of any type (TLS_TX) and whose receiving end opens them
 * (TLS_RX), as a queue's socket after tls_ktls_engage. A session ticket is
 * dropped and the data after it read; a KeyUpdate ends the connection with
 * its one line (no target sends one: this is where it is made); a
 * close_notify reads as the end of the stream. */
TEST(a_key_update_on_a_kernel_tls_socket_ends_the_connection)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), s = -1;
	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&a, al) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al) || connect(c, (struct sockaddr *)&a, al) ||
	    (s = accept(l, NULL, NULL)) < 0) {
		CHECK(0);
		goto out;
	}
	if (setsockopt(c, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls")) ||
	    setsockopt(s, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls"))) {
		close(l), close(c), close(s);
		SKIP("no kTLS on this kernel (the tls module): tests/target/tls.sh runs this on the 6.12 test bed");
	}
	struct tls12_crypto_info_aes_gcm_128 ci = {.info = {.version = TLS_1_3_VERSION, .cipher_type = TLS_CIPHER_AES_GCM_128}};
	memset(ci.key, 0x5a, sizeof(ci.key));
	memset(ci.iv, 3, sizeof(ci.iv));
	memset(ci.salt, 4, sizeof(ci.salt));
	CHECK_EQ(setsockopt(s, SOL_TLS, TLS_TX, &ci, sizeof(ci)), 0);
	CHECK_EQ(setsockopt(c, SOL_TLS, TLS_RX, &ci, sizeof(ci)), 0);
	static const uint8_t ticket[] = {4, 0, 0, 1, 0}, ku[] = {24, 0, 0, 1, 0}, close_notify[] = {1, 0};
	uint8_t b[64];
	char why[200];
	CHECK_EQ(send_record(s, 22, ticket, sizeof(ticket)), 0);
	CHECK_EQ(send_record(s, 23, "data", 4), 0);
	CHECK_EQ(send_record(s, 22, ku, sizeof(ku)), 0);
	CHECK_EQ(send_record(s, 21, close_notify, sizeof(close_notify)), 0);
	ssize_t n = read_as_queue(c, b, sizeof(b), why);
	CHECK(n == -1 && errno == EAGAIN); /* the ticket, dropped: read again */
	n = read_as_queue(c, b, sizeof(b), why);
	CHECK(n == 4 && !memcmp(b, "data", 4));
	n = read_as_queue(c, b, sizeof(b), why);
	CHECK(n == -1 && errno == EPROTO);
	fprintf(stderr, "    %s\n", why);
	CHECK(strstr(why, "TLS: the controller sent a KeyUpdate; kTLS on this kernel cannot re-key: ") == why);
	n = read_as_queue(c, b, sizeof(b), why);
	CHECK_EQ(n, 0);
	/* a controller that re-keys does it again: the next connections of
	 * the process keep OpenSSL's records, which follow it, rather than
	 * fail the same way on every reconnect (the socket untouched) */
	struct tls_secrets sec = secrets();
	const char *no = NULL;
	unsetenv("NVMEOF_KTLS");
	tls_ktls_setsockopt = fake_setsockopt;
	ulp_errno = 0, rx_errno = 0, calls = 0;
	CHECK_EQ(tls_ktls_engage(0, 1, &sec, &no), 1);
	CHECK(no && strstr(no, "KeyUpdate"));
	CHECK_EQ(calls, 0);
	tls_ktls_setsockopt = setsockopt;
out:
	if (l >= 0)
		close(l);
	if (c >= 0)
		close(c);
	if (s >= 0)
		close(s);
}

int main(int argc, char **argv)
{
	static const struct test_case t[] = {
		T(session_tickets_are_dropped),
		T(a_key_update_is_named_even_behind_a_ticket),
		T(a_handshake_message_split_across_records_is_refused),
		T(other_records_are_named),
		T(close_notify_closes_and_other_alerts_are_named),
		T(the_kernels_keys_open_openssls_records_aes_128_gcm),
		T(the_kernels_keys_open_openssls_records_aes_256_gcm),
		T(no_tls_module_suggests_modprobe),
		T(tls_rx_refused_once_keeps_openssls_records_after),
		T(a_key_update_on_a_kernel_tls_socket_ends_the_connection),
	};
	return run_named_tests("unit-ktls", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
