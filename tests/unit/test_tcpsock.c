/*
 * NVMe/TCP socket options (core/tcp_sock.c): what the controller options
 * ask for is what the connected socket carries, the system's values stay
 * where nothing is asked, and values out of range or over RDMA are refused
 * before anything is sent. A loopback listener stands in for the target:
 * only the socket is under test, no PDU is exchanged.
 */
#include <netinet/in.h>
#include <netinet/ip.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "nvmeof.h"
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

int main(void)
{
	static const struct test_case t[] = {
		T(socket_options_reach_the_socket),
		T(unset_options_leave_the_systems_values),
		T(out_of_range_or_over_rdma_refused_before_connecting),
	};
	return run_tests("tcpsock", t, sizeof(t) / sizeof(t[0]));
}
