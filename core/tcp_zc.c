/* MSG_ZEROCOPY's bookkeeping for an NVMe/TCP queue; see tcp_zc.h. */
#include "tcp_zc.h"

#include <errno.h>
#include <time.h> /* linux/errqueue.h names struct timespec */
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tcp_cmd.h"
#include "tcp_conn.h"

int tcp_zc_init(struct tcp_conn *t, uint32_t min)
{
	struct tcp_zc *z = &t->zc;
	free(z->ring);
	*z = (struct tcp_zc){.min = min};
	if (!min)
		return 0;
	/* a few PDUs (or pieces of one a full socket split) per command; a
	 * power of two, which divides 2^32: the ring's index id % cap stays
	 * continuous where the kernel's 32-bit IDs wrap */
	z->cap = 16;
	while (z->cap < 4 * t->depth + 16)
		z->cap *= 2;
	if (!(z->ring = calloc(z->cap, sizeof(*z->ring)))) {
		z->min = 0;
		return -ENOMEM;
	}
	return 0;
}

void tcp_zc_free(struct tcp_conn *t)
{
	free(t->zc.ring);
	t->zc.ring = NULL;
}

bool tcp_zc_wants(const struct tcp_conn *t, uint32_t len)
{
	const struct tcp_zc *z = &t->zc;
	return z->min && len >= z->min && z->next - z->head < z->cap;
}

void tcp_zc_sent(struct tcp_conn *t, uint16_t slot)
{
	struct tcp_zc *z = &t->zc;
	z->ring[z->next % z->cap] = (struct tcp_zc_id){.slot = slot};
	z->next++;
	z->sends++;
	t->cmds[slot].zc_out++;
}

bool tcp_zc_hold(struct tcp_conn *t, struct tcp_cmd *c, const uint8_t *cqe)
{
	(void)t;
	if (!c->zc_out && !c->queued && !c->h2c_active)
		return false;
	memcpy(c->zc_cqe, cqe, 16);
	c->zc_held = true;
	return true;
}

void tcp_zc_release(struct tcp_conn *t)
{
	struct tcp_zc *z = &t->zc;
	for (uint32_t i = 0; i < t->depth && z->ready; i++) {
		struct tcp_cmd *c = &t->cmds[i];
		if (!c->zc_held || c->zc_out || c->queued || c->h2c_active)
			continue;
		/* a receive to put it in, and room for its completion */
		if (!t->rqn || t->has_held || t->cq->n == t->cq->cap)
			return;
		c->zc_held = false;
		z->ready--;
		tcp_conn_deliver(t, c->zc_cqe);
	}
}

bool tcp_zc_notified(struct tcp_conn *t, uint32_t lo, uint32_t hi, bool copied)
{
	struct tcp_zc *z = &t->zc;
	uint32_t out = z->next - z->head;
	if (lo - z->head >= out || hi - z->head >= out || hi - lo >= out)
		return false;
	for (uint32_t id = lo;; id++) {
		struct tcp_zc_id *e = &z->ring[id % z->cap];
		if (!e->done) {
			e->done = true;
			struct tcp_cmd *c = &t->cmds[e->slot];
			z->copied += copied;
			if (c->zc_out && !--c->zc_out && c->zc_held && !c->queued && !c->h2c_active)
				z->ready++;
		}
		if (id == hi)
			break;
	}
	while (z->head != z->next && z->ring[z->head % z->cap].done)
		z->head++;
	return true;
}

void tcp_zc_reap(struct tcp_conn *t)
{
	struct tcp_zc *z = &t->zc;
	while (tcp_zc_outstanding(z) && t->fd >= 0 && !t->broken) {
		/* the error and the offender's address (none for these) */
		uint64_t ctl[(CMSG_SPACE(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in6)) + 7) / 8];
		struct msghdr m = {.msg_control = ctl, .msg_controllen = sizeof(ctl)};
		if (recvmsg(t->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				char b[96];
				snprintf(b, sizeof(b), "queue %u: reading the error queue: %s", t->qid, strerror(errno));
				tcp_conn_fail(t, b);
			}
			break;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
			if (!((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
			      (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR)))
				continue;
			struct sock_extended_err ee;
			memcpy(&ee, CMSG_DATA(cm), sizeof(ee));
			if (ee.ee_origin != SO_EE_ORIGIN_ZEROCOPY || ee.ee_errno)
				continue;
			/* IDs we never sent: our count and the kernel's differ,
			 * and a write could wait forever for its notification */
			if (!tcp_zc_notified(t, ee.ee_info, ee.ee_data, ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED)) {
				char b[128];
				snprintf(b, sizeof(b), "queue %u: zerocopy notification for IDs %u..%u, not sent",
					 t->qid, ee.ee_info, ee.ee_data);
				tcp_conn_fail(t, b);
				return;
			}
		}
	}
	tcp_zc_release(t);
}

void tcp_zc_reset(struct tcp_conn *t)
{
	struct tcp_zc *z = &t->zc;
	z->head = z->next = z->ready = 0;
	for (uint32_t i = 0; i < t->depth; i++)
		t->cmds[i].zc_out = 0, t->cmds[i].zc_held = false;
}
