/* The socket of an NVMe/TCP queue; see tcp_sock.h. */
#include "tcp_sock.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/uio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "connretry.h"
#include "internal.h"
#include "tls.h"
#include "util.h"

static int wait_fd(int fd, short ev, uint64_t deadline_ms)
{
	for (;;) {
		uint64_t now = nvmeof_now_ms();
		if (now >= deadline_ms)
			return 0;
		struct pollfd p = {.fd = fd, .events = ev};
		int n = poll(&p, 1, (int)(deadline_ms - now));
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

int tcp_sockopts_check(const struct nvmeof_ctrl_opts *o, bool tcp)
{
	if (!tcp && (o->tcp_priority != -1 || o->tcp_tos != -1 || o->tcp_busy_poll_us || o->tcp_zerocopy))
		return nvmeof_err(NVMEOF_EINVAL, "connect: tcp_priority, tcp_tos, tcp_busy_poll_us and tcp_zerocopy are "
				  "NVMe/TCP's socket options (trtype tcp)");
	if (o->tcp_priority < -1 || o->tcp_priority > 15)
		return nvmeof_err(NVMEOF_EINVAL, "connect: tcp_priority %d outside 0..15 (-1: the system's)",
				  (int)o->tcp_priority);
	if (o->tcp_tos < -1 || o->tcp_tos > 255)
		return nvmeof_err(NVMEOF_EINVAL, "connect: tcp_tos %d outside 0..255 (-1: the system's)", (int)o->tcp_tos);
	if (o->tcp_busy_poll_us > 1000000)
		return nvmeof_err(NVMEOF_EINVAL, "connect: tcp_busy_poll_us %u outside 0..1000000", o->tcp_busy_poll_us);
	return 0;
}

/* An option the user asked for and the kernel refused: the connect fails
 * saying which and why, rather than run without it unnoticed. */
static int set_int(int fd, int level, int name, int v, const char *what, uint16_t qid)
{
	if (!setsockopt(fd, level, name, &v, sizeof(v)))
		return 0;
	int e = errno;
	return nvmeof_err(NVMEOF_ENOTSUP, "queue %u: %s %d: %s%s", qid, what, v, strerror(e),
			  e == EPERM ? " (needs CAP_NET_ADMIN)" : e == ENOPROTOOPT ? " (not in this kernel)" : "");
}

static int set_opts(int fd, const struct sockaddr *dst, const struct nvmeof_ctrl_opts *o, uint16_t qid)
{
	int one = 1, rc = 0;
	/* a capsule goes out at once, not after the previous one's ACK */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* As the Linux host's sock_no_linger: a close drops what the socket
	 * still holds and sends a reset. Without it the kernel keeps sending
	 * a dead queue's capsules and write data for minutes, and should the
	 * path heal in that time the controller executes a write that the
	 * host has failed and perhaps retried elsewhere, over newer data. */
	struct linger no = {.l_onoff = 1, .l_linger = 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &no, sizeof(no));
	if (!o)
		return 0;
	/* TOS first: setting IP_TOS also sets the priority from it */
	if (o->tcp_tos >= 0 && (rc = dst->sa_family == AF_INET6
					  ? set_int(fd, IPPROTO_IPV6, IPV6_TCLASS, o->tcp_tos, "IPV6_TCLASS", qid)
					  : set_int(fd, IPPROTO_IP, IP_TOS, o->tcp_tos, "IP_TOS", qid)))
		return rc;
	if (o->tcp_priority >= 0 && (rc = set_int(fd, SOL_SOCKET, SO_PRIORITY, o->tcp_priority, "SO_PRIORITY", qid)))
		return rc;
	if (o->tcp_busy_poll_us &&
	    (rc = set_int(fd, SOL_SOCKET, SO_BUSY_POLL, (int)o->tcp_busy_poll_us, "SO_BUSY_POLL", qid)))
		return rc;
	/* refused (a kernel before 4.14): the connect fails, as for the
	 * others, rather than measure copies the user thinks are zerocopy */
	if (o->tcp_zerocopy)
		rc = set_int(fd, SOL_SOCKET, SO_ZEROCOPY, 1, "SO_ZEROCOPY", qid);
	return rc;
}

int tcp_sock_connect(const struct sockaddr *dst, const struct sockaddr *src, const struct nvmeof_ctrl_opts *o,
		     uint32_t timeout_ms, uint16_t qid, int *fd_out, uint8_t *cls)
{
	socklen_t len = dst->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	int fd = socket(dst->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), e = 0, rc;
	*cls = CR_FINAL;
	if (fd < 0)
		return nvmeof_err(NVMEOF_ETRANSPORT, "queue %u: socket: %s", qid, strerror(errno));
	if ((rc = set_opts(fd, dst, o, qid))) {
		close(fd);
		return rc;
	}
	if (src && bind(fd, src, len)) {
		e = errno;
		close(fd);
		return nvmeof_err(NVMEOF_EUNREACHABLE, "queue %u: bind to the source address: %s", qid, strerror(e));
	}
	uint64_t deadline = nvmeof_now_ms() + timeout_ms;
	if (connect(fd, dst, len) && errno != EINPROGRESS) {
		e = errno;
	} else {
		int w = wait_fd(fd, POLLOUT, deadline);
		socklen_t el = sizeof(e);
		if (w == 0) {
			close(fd);
			*cls = CR_TRANSIENT_REACHED;
			/* a timeout, as RDMA's CM connect nobody answers: the
			 * kernel's own "no route" (ARP unanswered) stays below */
			return nvmeof_err(NVMEOF_ETIMEDOUT, "queue %u: TCP connect: no answer within %u ms", qid,
					  timeout_ms);
		}
		if (w < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el))
			e = errno;
	}
	if (e) {
		close(fd);
		*cls = e == ECONNREFUSED ? CR_FINAL : CR_TRANSIENT_REACHED;
		if (e == ECONNREFUSED)
			return nvmeof_err(NVMEOF_EREJECTED, "queue %u: TCP connect rejected: nothing listens on that "
					  "port (%s)", qid, strerror(e));
		return nvmeof_err(NVMEOF_EUNREACHABLE, "queue %u: TCP connect: %s", qid, strerror(e));
	}
	*fd_out = fd;
	return 0;
}

int tcp_sock_init_conn(int fd, void *ssl, bool tls, bool hdgst, bool ddgst, uint32_t timeout_ms, uint16_t qid,
		       struct tcp_rx *rx, struct tcp_neg *neg)
{
	uint8_t req[NVME_TCP_IC_SIZE];
	uint64_t deadline = nvmeof_now_ms() + timeout_ms;
	tcp_icreq(req, hdgst, ddgst, 0);
	for (size_t off = 0; off < sizeof(req);) {
		struct iovec v = {req + off, sizeof(req) - off};
		uint8_t rec[NVME_TCP_IC_SIZE];
		ssize_t n = ssl ? tls_io_send(ssl, &v, 1, rec, sizeof(rec))
				: send(fd, req + off, sizeof(req) - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return nvmeof_err(NVMEOF_ETRANSPORT, "queue %u: sending the ICReq: %s", qid, strerror(errno));
		if (wait_fd(fd, POLLOUT, deadline) <= 0)
			return nvmeof_err(NVMEOF_ETIMEDOUT, "queue %u: sending the ICReq: not done within %u ms", qid,
					  timeout_ms);
	}
	for (;;) {
		size_t want;
		uint8_t *to = tcp_rx_want(rx, &want);
		struct iovec v = {to, want};
		bool more = false; /* the ICResp is all we read: nothing after it until the ICReq's answer */
		ssize_t n = ssl ? tls_io_recv(ssl, &v, 1, &more) : recv(fd, to, want, MSG_DONTWAIT);
		if (n < 0 && errno == EIO && tls && !ssl) { /* kTLS: a record that is not data */
			char why[192];
			n = tls_ktls_ctrl(fd, why, sizeof(why));
			if (n < 0 && errno != EAGAIN && errno != ECONNRESET)
				return nvmeof_err(NVMEOF_ETRANSPORT, "queue %u: waiting for the ICResp: %s", qid, why);
		}
		/* nvmet and SPDK drop an ICReq in the clear on a port that
		 * requires TLS, closing or resetting: the likely cause, named */
		const char *hint = tls ? "" : " (a port that requires TLS? give a TLS key)";
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return nvmeof_err(n == 0 ? NVMEOF_EREJECTED : NVMEOF_ETRANSPORT,
					  "queue %u: the controller %s the connection instead of answering the ICReq%s",
					  qid, n == 0 ? "closed" : "reset", hint);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return nvmeof_err(NVMEOF_ETRANSPORT, "queue %u: waiting for the ICResp: %s", qid,
						  strerror(errno));
			if (wait_fd(fd, POLLIN, deadline) <= 0)
				return nvmeof_err(NVMEOF_ETIMEDOUT, "queue %u: no ICResp within %u ms", qid, timeout_ms);
			continue;
		}
		const char *why = NULL;
		int rc = tcp_rx_advance(rx, (size_t)n, &why);
		if (rc < 0)
			return nvmeof_err(NVMEOF_ETRANSPORT, "queue %u: connection initialization: %s", qid, why);
		if (rc == TCP_RX_MORE)
			continue;
		if (rx->pdu.type == NVME_TCP_C2H_TERM)
			return nvmeof_err(NVMEOF_EREJECTED, "queue %u: the controller ended the connection (C2HTermReq: %s)",
					  qid, tcp_fes_name(rx->pdu.fes));
		if (tcp_icresp_parse(rx->hdr, NVME_TCP_IC_SIZE, hdgst, ddgst, neg, &why))
			return nvmeof_err(NVMEOF_ENOTSUP, "queue %u: %s", qid, why);
		tcp_rx_negotiated(rx, neg);
		return 0;
	}
}

void tcp_sock_netdev(int fd, char *out, size_t len)
{
	struct sockaddr_storage me;
	socklen_t ml = sizeof(me);
	struct ifaddrs *all, *i;
	out[0] = 0;
	if (fd < 0 || getsockname(fd, (struct sockaddr *)&me, &ml) || getifaddrs(&all))
		return;
	for (i = all; i; i = i->ifa_next) {
		const struct sockaddr *a = i->ifa_addr;
		if (!a || a->sa_family != me.ss_family)
			continue;
		if (a->sa_family == AF_INET ? !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
						      &((struct sockaddr_in *)&me)->sin_addr, sizeof(struct in_addr))
					    : a->sa_family == AF_INET6 &&
						      !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
							      &((struct sockaddr_in6 *)&me)->sin6_addr,
							      sizeof(struct in6_addr))) {
			snprintf(out, len, "%s", i->ifa_name);
			break;
		}
	}
	freeifaddrs(all);
}
