/*
 * The first contact over NVMe/TCP, against a scripted loopback target that
 * speaks only what the step under test needs (ICResp, the Connect's
 * CapsuleResp) and then does what a real target cannot be made to do on
 * cue: drops the connection in the middle of the admin queue's
 * authentication. What is asserted is counted: connections the target
 * accepted, and what the host sent on each.
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "nvmeof.h"
#include "sockrd.h"

/* nvme-cli's test key (32 bytes 00..1f, SHA-256) */
#define KEY "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:"

struct fake {
	int ls;
	struct sockaddr_in a;
	char port[8];
	pthread_t th;
	int accepts;       /* connections taken */
	int auth_sends;    /* AUTH_Send capsules seen, each answered by a drop */
	int stop;
};

/* one PDU: its 8-byte common header, then the rest of PLEN */
static int rd_pdu(int fd, uint8_t *b, size_t cap, uint32_t *plen)
{
	if (rd(fd, b, 8))
		return -1;
	memcpy(plen, b + 4, 4);
	if (*plen < 8 || *plen > cap)
		return -1;
	return rd(fd, b + 8, *plen - 8);
}

static void *serve(void *arg)
{
	struct fake *f = arg;
	static uint8_t b[16384];
	for (;;) {
		int fd = accept(f->ls, NULL, NULL);
		if (fd < 0 || __atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
			if (fd >= 0)
				close(fd);
			return NULL;
		}
		__atomic_add_fetch(&f->accepts, 1, __ATOMIC_RELEASE);
		uint32_t plen;
		uint8_t ic[128] = {0x01, 0, 128, 0, 128, 0, 0, 0}; /* ICResp, PFV 0, CPDA 0, no digests */
		uint32_t maxh2c = 0x20000;
		memcpy(ic + 12, &maxh2c, 4);
		if (rd(fd, b, 128) || b[0] != 0x00 || send(fd, ic, sizeof(ic), MSG_NOSIGNAL) != sizeof(ic))
			goto next;
		/* the Connect (opcode 7Fh, FCTYPE 01h): answered with a
		 * controller ID and ATR, "authentication required" */
		if (rd_pdu(fd, b, sizeof(b), &plen) || b[0] != 0x04 || b[8] != 0x7f || b[8 + 4] != 0x01)
			goto next;
		uint8_t resp[24] = {0x05, 0, 24, 0, 24, 0, 0, 0};
		uint32_t dw0 = 1u | 1u << 17; /* CNTLID 1, AUTHREQ.ATR */
		memcpy(resp + 8, &dw0, 4);
		memcpy(resp + 8 + 12, b + 8 + 2, 2); /* CID */
		if (send(fd, resp, sizeof(resp), MSG_NOSIGNAL) != sizeof(resp))
			goto next;
		/* the host's AUTH_Send (FCTYPE 05h, Negotiate): the link drops */
		if (!rd_pdu(fd, b, sizeof(b), &plen) && b[8] == 0x7f && b[8 + 4] == 0x05)
			__atomic_add_fetch(&f->auth_sends, 1, __ATOMIC_RELEASE);
next:
		close(fd);
	}
}

static void fake_up(struct fake *f)
{
	socklen_t n = sizeof(f->a);
	memset(f, 0, sizeof(*f));
	f->ls = socket(AF_INET, SOCK_STREAM, 0);
	f->a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(bind(f->ls, (struct sockaddr *)&f->a, sizeof(f->a)), 0);
	CHECK_EQ(listen(f->ls, 8), 0);
	CHECK_EQ(getsockname(f->ls, (struct sockaddr *)&f->a, &n), 0);
	snprintf(f->port, sizeof(f->port), "%u", ntohs(f->a.sin_port));
	CHECK_EQ(pthread_create(&f->th, NULL, serve, f), 0);
}

static void fake_down(struct fake *f)
{
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
	int fd = socket(AF_INET, SOCK_STREAM, 0); /* wakes accept */
	if (connect(fd, (struct sockaddr *)&f->a, sizeof(f->a))) {
	}
	close(fd);
	pthread_join(f->th, NULL);
	close(f->ls);
}

static void opts(struct nvmeof_ctrl_opts *o, const struct fake *f, uint32_t retries)
{
	nvmeof_ctrl_opts_init(o);
	o->trtype = "tcp";
	o->traddr = "127.0.0.1";
	o->trsvcid = f->port;
	o->subnqn = "nqn.2026-12.io.nvmeof:first";
	o->hostnqn = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001";
	o->dhchap_secret = KEY;
	o->connect_retries = retries;
	o->connect_timeout_ms = 3000;
	o->cmd_timeout_ms = 3000;
}

/* A link lost during the admin queue's first authentication is a connect
 * step that failed for a transient reason: tried again on a new
 * connection, as an I/O queue's is, until the budget is spent. */
TEST(a_link_lost_in_the_first_authentication_is_tried_again)
{
	struct fake f;
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	fake_up(&f);
	opts(&o, &f, 2);
	int rc = nvmeof_ctrl_connect(&o, &c);
	CHECK(rc == NVMEOF_ECLOSED || rc == NVMEOF_ETRANSPORT);
	CHECK(c == NULL);
	fake_down(&f);
	CHECK_EQ(f.accepts, 3);    /* the first try and connect_retries = 2 more */
	CHECK_EQ(f.auth_sends, 3); /* each reached the authentication */
	CHECK(strstr(nvmeof_errmsg(), "3 tries") != NULL);
	CHECK(strstr(nvmeof_errmsg(), "DHHC-1") == NULL);
}

/* connect_retries = 0: one try, as asked. */
TEST(no_retries_asked_one_try)
{
	struct fake f;
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	fake_up(&f);
	opts(&o, &f, 0);
	CHECK(nvmeof_ctrl_connect(&o, &c) != 0);
	fake_down(&f);
	CHECK_EQ(f.accepts, 1);
	CHECK_EQ(f.auth_sends, 1);
}

int main(void)
{
	static const struct test_case t[] = {
		T(a_link_lost_in_the_first_authentication_is_tried_again),
		T(no_retries_asked_one_try),
	};
	return run_tests("tcpfirst", t, sizeof(t) / sizeof(t[0]));
}
