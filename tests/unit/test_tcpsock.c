/*
 * NVMe/TCP socket options (core/tcp_sock.c): what the controller options
 * ask for is what the connected socket carries, the system's values stay
 * where nothing is asked, and values out of range or over RDMA are refused
 * before anything is sent. A loopback listener stands in for the target:
 * only the socket is under test, no PDU is exchanged. Every queue socket
 * ends with a reset: what the host still had queued never reaches the
 * controller once the queue has failed or closed.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "nvmeof.h"
#include "connretry.h"
#include "tcp_conn.h"
#include "tcp_sock.h"

struct lo {
	int ls;
	struct sockaddr_in a;
};

static void lo_up(struct lo *l)
{
	socklen_t n = sizeof(l->a);
	l->ls = socket(AF_INET, SOCK_STREAM, 0);
	l->a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(bind(l->ls, (struct sockaddr *)&l->a, sizeof(l->a)), 0);
	CHECK_EQ(listen(l->ls, 4), 0);
	CHECK_EQ(getsockname(l->ls, (struct sockaddr *)&l->a, &n), 0);
}

static int opt(int fd, int level, int name)
{
	int v = -12345;
	socklen_t n = sizeof(v);
	CHECK_EQ(getsockopt(fd, level, name, &v, &n), 0);
	return v;
}

TEST(socket_options_reach_the_socket)
{
	struct lo l;
	struct nvmeof_ctrl_opts o;
	int fd = -1;
	uint8_t cls;
	lo_up(&l);
	nvmeof_ctrl_opts_init(&o);
	o.tcp_priority = 5;
	o.tcp_tos = 184; /* DSCP EF */
	CHECK_EQ(tcp_sock_connect((struct sockaddr *)&l.a, NULL, &o, 3000, 1, &fd, &cls), 0);
	CHECK_EQ(opt(fd, SOL_SOCKET, SO_PRIORITY), 5);
	CHECK_EQ(opt(fd, IPPROTO_IP, IP_TOS), 184);
	close(fd);
	/* busy polling where this kernel allows it; else the refusal names it */
	o.tcp_busy_poll_us = 25;
	int rc = tcp_sock_connect((struct sockaddr *)&l.a, NULL, &o, 3000, 1, &fd, &cls);
	if (!rc) {
		CHECK_EQ(opt(fd, SOL_SOCKET, SO_BUSY_POLL), 25);
		close(fd);
	} else {
		CHECK_EQ(rc, NVMEOF_ENOTSUP);
		CHECK(strstr(nvmeof_errmsg(), "queue 1: SO_BUSY_POLL 25: ") != NULL);
	}
	/* zerocopy where this kernel has it; else the refusal names it */
	o.tcp_busy_poll_us = 0;
	o.tcp_zerocopy = 65536;
	rc = tcp_sock_connect((struct sockaddr *)&l.a, NULL, &o, 3000, 1, &fd, &cls);
	if (!rc) {
		CHECK_EQ(opt(fd, SOL_SOCKET, SO_ZEROCOPY), 1);
		close(fd);
	} else {
		CHECK_EQ(rc, NVMEOF_ENOTSUP);
		CHECK(strstr(nvmeof_errmsg(), "queue 1: SO_ZEROCOPY 1: ") != NULL);
	}
	close(l.ls);
}

TEST(unset_options_leave_the_systems_values)
{
	struct lo l;
	struct nvmeof_ctrl_opts o;
	int fd = -1, plain = socket(AF_INET, SOCK_STREAM, 0);
	uint8_t cls;
	lo_up(&l);
	nvmeof_ctrl_opts_init(&o);
	CHECK_EQ(o.tcp_priority, -1);
	CHECK_EQ(o.tcp_tos, -1);
	CHECK_EQ(o.tcp_busy_poll_us, 0);
	CHECK_EQ(o.tcp_zerocopy, 0);
	CHECK_EQ(tcp_sock_connect((struct sockaddr *)&l.a, NULL, &o, 3000, 1, &fd, &cls), 0);
	CHECK_EQ(opt(fd, SOL_SOCKET, SO_PRIORITY), opt(plain, SOL_SOCKET, SO_PRIORITY));
	CHECK_EQ(opt(fd, IPPROTO_IP, IP_TOS), opt(plain, IPPROTO_IP, IP_TOS));
	CHECK_EQ(opt(fd, SOL_SOCKET, SO_ZEROCOPY), 0);
	close(fd);
	close(plain);
	close(l.ls);
}

TEST(out_of_range_or_over_rdma_refused_before_connecting)
{
	static const struct {
		const char *trtype;
		int prio, tos;
		uint32_t busy, zc;
		const char *says;
	} bad[] = {
		{NULL, -1, 184, 0, 0, "NVMe/TCP's socket options"},
		{"rdma", 3, -1, 0, 0, "NVMe/TCP's socket options"},
		{"rdma", -1, -1, 50, 0, "NVMe/TCP's socket options"},
		{"rdma", -1, -1, 0, 65536, "NVMe/TCP's socket options"},
		{"tcp", 16, -1, 0, 0, "tcp_priority 16 outside 0..15"},
		{"tcp", -2, -1, 0, 0, "tcp_priority -2 outside 0..15"},
		{"tcp", -1, 256, 0, 0, "tcp_tos 256 outside 0..255"},
		{"tcp", -1, -1, 1000001, 0, "tcp_busy_poll_us 1000001 outside"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct nvmeof_ctrl *c = NULL;
		struct nvmeof_ctrl_opts o;
		nvmeof_ctrl_opts_init(&o);
		o.traddr = "192.0.2.1"; /* TEST-NET-1: nothing answers, and nothing is tried */
		o.subnqn = "nqn.2026-12.io.nvmeof:x";
		o.trtype = bad[i].trtype;
		o.tcp_priority = bad[i].prio;
		o.tcp_tos = bad[i].tos;
		o.tcp_busy_poll_us = bad[i].busy;
		o.tcp_zerocopy = bad[i].zc;
		CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_EINVAL);
		CHECK(strstr(nvmeof_errmsg(), bad[i].says) != NULL);
		CHECK(c == NULL);
	}
}

static void check_no_linger(int fd)
{
	struct linger l = {.l_onoff = -1, .l_linger = -1};
	socklen_t n = sizeof(l);
	CHECK_EQ(getsockopt(fd, SOL_SOCKET, SO_LINGER, &l, &n), 0);
	CHECK_EQ(l.l_onoff, 1);
	CHECK_EQ(l.l_linger, 0);
}

/* As the Linux host's sock_no_linger: a close drops what the socket still
 * holds and resets the connection, zerocopy or not, options or none. */
TEST(every_queue_socket_lingers_zero)
{
	struct lo l;
	struct nvmeof_ctrl_opts o;
	int fd = -1;
	uint8_t cls;
	lo_up(&l);
	nvmeof_ctrl_opts_init(&o);
	CHECK_EQ(tcp_sock_connect((struct sockaddr *)&l.a, NULL, &o, 3000, 1, &fd, &cls), 0);
	CHECK_EQ(opt(fd, SOL_SOCKET, SO_ZEROCOPY), 0);
	check_no_linger(fd);
	close(fd);
	CHECK_EQ(tcp_sock_connect((struct sockaddr *)&l.a, NULL, NULL, 3000, 0, &fd, &cls), 0);
	check_no_linger(fd);
	close(fd);
	close(l.ls);
}

/* Sends until the kernel takes no more: the peer reads nothing, so part of
 * it waits in the host's socket, not yet sent. */
static size_t queue_up(int fd)
{
	static uint8_t junk[4096];
	size_t total = 0;
	for (;;) {
		ssize_t n = send(fd, junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n <= 0)
			return total;
		total += (size_t)n;
	}
}

/* What the peer reads to its end, and how it ended: 0 for an orderly close
 * (a FIN after all the data), else the errno. */
static size_t drain(int fd, int *end)
{
	static uint8_t sink[1 << 16];
	size_t got = 0;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		CHECK_EQ(poll(&p, 1, 5000), 1); /* bounded: a silent peer fails here */
		ssize_t n = recv(fd, sink, sizeof(sink), 0);
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		*end = n ? errno : 0;
		return got;
	}
}

/* A path that heals after its queue failed: the controller, which stopped
 * reading (a partition), reads on. A write the host had queued must not
 * reach it then, since its retry on another path and newer writes may have
 * completed meanwhile: the controller sees a reset, not the stale data. */
static void peer_gets_no_stale_data(void (*end)(struct tcp_conn *))
{
	struct lo l;
	struct nvmeof_ctrl_opts o;
	struct ibv_wc wc[8];
	struct tcp_cq cq = {.wc = wc, .cap = 8, .epfd = epoll_create1(0)};
	struct tcp_neg neg = {.maxh2cdata = 1 << 16};
	int fd = -1, sz = 4096, e = -1;
	uint8_t cls;
	lo_up(&l);
	CHECK_EQ(setsockopt(l.ls, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)), 0);
	nvmeof_ctrl_opts_init(&o);
	CHECK_EQ(tcp_sock_connect((struct sockaddr *)&l.a, NULL, &o, 3000, 1, &fd, &cls), 0);
	int peer = accept(l.ls, NULL, NULL);
	CHECK(peer >= 0);
	CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)), 0);
	size_t queued = queue_up(fd);
	struct tcp_conn *t = tcp_conn_new(1, 4, false, false, 0);
	tcp_conn_rx_init(t);
	tcp_rx_negotiated(&t->rx, &neg);
	CHECK_EQ(tcp_conn_attach(t, fd, NULL, &neg, &cq), 0);
	end(t);
	size_t got = drain(peer, &e);
	CHECK(got < queued);
	CHECK_EQ(e, ECONNRESET);
	tcp_conn_free(t);
	close(peer);
	close(cq.epfd);
	close(l.ls);
}

static void fail_it(struct tcp_conn *t) { tcp_conn_fail(t, "partitioned"); }
static void close_it(struct tcp_conn *t) { tcp_conn_detach(t); }

TEST(a_failed_connection_resets_and_sends_nothing_it_held)
{
	peer_gets_no_stale_data(fail_it);
}

TEST(a_closed_connection_resets_and_sends_nothing_it_held)
{
	peer_gets_no_stale_data(close_it);
}

/* A SYN nobody answers (a listener whose accept queue is full drops it, as
 * a firewall or a dead host would): the connect's own timeout ends it, and
 * it is a timeout (fio's ETIMEDOUT), not an unreachable address, the class
 * kept for a first contact's silence. */
TEST(a_connect_nobody_answers_times_out)
{
	struct lo l;
	int full[4], n = 0;
	uint8_t cls = 0;
	socklen_t sl = sizeof(l.a);
	l.ls = socket(AF_INET, SOCK_STREAM, 0);
	l.a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(bind(l.ls, (struct sockaddr *)&l.a, sizeof(l.a)), 0);
	CHECK_EQ(listen(l.ls, 0), 0);
	CHECK_EQ(getsockname(l.ls, (struct sockaddr *)&l.a, &sl), 0);
	/* fill the accept queue (backlog 0 holds one, a second may be
	 * half-open): from then on the listener drops every SYN */
	int rc = 0;
	while (n < 4 && (rc = tcp_sock_connect((struct sockaddr *)&l.a, NULL, NULL, 300, 1, &full[n], &cls)) == 0)
		n++;
	CHECK(n >= 1 && n < 4);
	CHECK_EQ(rc, NVMEOF_ETIMEDOUT);
	CHECK_STR(nvmeof_errmsg(), "queue 1: TCP connect: no answer within 300 ms");
	CHECK_EQ(cls, CR_TRANSIENT_REACHED);
	while (n--)
		close(full[n]);
	close(l.ls);
}

int main(void)
{
	static const struct test_case t[] = {
		T(socket_options_reach_the_socket),
		T(unset_options_leave_the_systems_values),
		T(out_of_range_or_over_rdma_refused_before_connecting),
		T(every_queue_socket_lingers_zero),
		T(a_failed_connection_resets_and_sends_nothing_it_held),
		T(a_closed_connection_resets_and_sends_nothing_it_held),
		T(a_connect_nobody_answers_times_out),
	};
	return run_tests("tcpsock", t, sizeof(t) / sizeof(t[0]));
}
