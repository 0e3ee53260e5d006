/*
 * A poll's held H2CData (docs/tcp.md: a poll of an I/O queue that completed
 * commands and read R2Ts holds their data for the caller's next submit)
 * through the library's wait and an event loop's arm and pending, over a
 * real socket to a scripted loopback target. The target answers a write's
 * R2T and a flush's CapsuleResp in one send, when the test says, and the
 * write's CapsuleResp only once its data has arrived: held data that no
 * wait sends before it sleeps stalls the write for the sleep's whole slice.
 * The moment the R2T lands is the test's (a recvmsg wrapper): no race.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "qpriv.h"
#include "queue.h"
#include "mem.h"
#include "tcp_pdu.h"
#include "util.h"
#include "sockrd.h"

struct fake {
	int ls, go[2], ack[2];
	struct sockaddr_in a;
	pthread_t th;
	int data_in; /* the write's H2CData bytes the target read */
	int ok;      /* the script ran to its end */
};

static int wr(int fd, const void *b, size_t n) { return send(fd, b, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1; }

static void rsp(uint8_t *p, uint16_t cid)
{
	memset(p, 0, 24);
	p[0] = NVME_TCP_RSP, p[2] = 24, p[4] = 24;
	memcpy(p + 8 + 12, &cid, 2);
}

/* ICResp; a write (no data in the capsule) and a flush; at the test's go,
 * the write's R2T and the flush's response in one send; the write's data;
 * its response. */
static void *serve(void *arg)
{
	struct fake *f = arg;
	uint8_t b[128 + 4096], ic[128] = {NVME_TCP_ICRESP, 0, 128, 0, 128};
	uint32_t maxh2c = 0x20000;
	memcpy(ic + 12, &maxh2c, 4);
	int fd = accept(f->ls, NULL, NULL);
	if (fd < 0)
		return NULL;
	uint16_t wcid = 0, fcid = 0;
	char c;
	if (rd(fd, b, 128) || wr(fd, ic, sizeof(ic)))
		goto out;
	for (int i = 0; i < 2; i++) {
		if (rd(fd, b, 72) || b[0] != NVME_TCP_CMD)
			goto out;
		memcpy(b[8] == 0x01 ? &wcid : &fcid, b + 8 + 2, 2);
	}
	if (read(f->go[0], &c, 1) != 1)
		goto out;
	uint8_t p[48] = {NVME_TCP_R2T, 0, 24, 0, 24};
	uint32_t len = 4096;
	memcpy(p + 8, &wcid, 2);
	memcpy(p + 16, &len, 4);
	rsp(p + 24, fcid);
	if (wr(fd, p, sizeof(p)) || write(f->ack[1], "r", 1) != 1)
		goto out;
	if (rd(fd, b, 24 + 4096) || b[0] != NVME_TCP_H2C_DATA)
		goto out;
	__atomic_store_n(&f->data_in, 4096, __ATOMIC_RELEASE);
	rsp(p, wcid);
	if (wr(fd, p, 24))
		goto out;
	f->ok = 1;
	rd(fd, b, 1); /* until the host closes */
out:
	close(fd);
	return NULL;
}

/* recvmsg's first empty read (EAGAIN) after a test sets release_at_eagain
 * lets the target send its R2T and response, and returns once they are
 * sent: the host's next read finds them. */
static struct fake *release_at_eagain;
ssize_t __real_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags);
static void release(struct fake *f)
{
	char c;
	CHECK_EQ(write(f->go[1], "g", 1), 1);
	CHECK_EQ(read(f->ack[0], &c, 1), 1);
	usleep(1000); /* loopback: the segment is queued by send's return; a margin */
}
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags)
{
	ssize_t n = __real_recvmsg(fd, m, flags);
	struct fake *f = release_at_eagain;
	if (n < 0 && errno == EAGAIN && f) {
		release_at_eagain = NULL;
		release(f);
		errno = EAGAIN;
	}
	return n;
}

struct rig {
	struct fake f;
	struct nvmeof_queue *q;
	struct nvmeof_ns ns;
	struct nvmeof_mr mr;
	uint8_t buf[4096];
	int done;
};

static void cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct rig *r = arg;
	CHECK_EQ(cpl->err, 0);
	r->done++;
}

/* The queue connected (ICReq/ICResp: the Fabrics Connect is the
 * controller's, not needed here), the write and the flush submitted. */
static void rig_up(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	struct fake *f = &r->f;
	socklen_t n = sizeof(f->a);
	f->ls = socket(AF_INET, SOCK_STREAM, 0);
	f->a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(bind(f->ls, (struct sockaddr *)&f->a, sizeof(f->a)), 0);
	CHECK_EQ(listen(f->ls, 1), 0);
	CHECK_EQ(getsockname(f->ls, (struct sockaddr *)&f->a, &n), 0);
	CHECK_EQ(pipe(f->go), 0);
	CHECK_EQ(pipe(f->ack), 0);
	CHECK_EQ(pthread_create(&f->th, NULL, serve, f), 0);
	/* a sleep's slice is cmd_timeout_ms / 8: 1 s, far above this exchange */
	struct q_params p = {.dst = (struct sockaddr *)&f->a, .qid = 1, .depth = 4, .connect_timeout_ms = 5000,
			     .cmd_timeout_ms = 8000, .wait_mode = NVMEOF_WAIT_SLEEP};
	CHECK_EQ(q_open_tcp(&p, &r->q), 0);
	r->ns = (struct nvmeof_ns){.nsid = 1, .lba_size = 512, .lbads = 9, .nsze = 1u << 20};
	r->mr = (struct nvmeof_mr){.addr = r->buf, .len = sizeof(r->buf)};
	CHECK_EQ(nvmeof_write(r->q, &r->ns, 0, 8, &r->mr, 0, cb, r), 0);
	CHECK_EQ(nvmeof_flush(r->q, &r->ns, cb, r), 0);
}

static void rig_down(struct rig *r)
{
	q_close(r->q);
	pthread_join(r->f.th, NULL);
	CHECK(r->f.ok);
	close(r->f.ls);
	for (int i = 0; i < 2; i++)
		close(r->f.go[i]), close(r->f.ack[i]);
}

/* A sleeping wait: its first poll finds nothing, its poll after the arm
 * reads the R2T with the flush's response and holds the data. The sleep
 * must not start (the held data counts as pending work): the write's
 * response comes only after the data, so the wait would sleep out its
 * slice (1 s) instead. Counted: no sleep of the wait ran to its end. */
TEST(a_wait_does_not_sleep_on_held_data)
{
	struct rig r;
	rig_up(&r);
	const struct q_waiter *w = &r.q->group->waiter;
	release_at_eagain = &r.f;
	CHECK_EQ(nvmeof_queue_wait(r.q, 2, 5000), 2);
	CHECK(release_at_eagain == NULL); /* the target answered inside the wait */
	CHECK_EQ(r.done, 2);
	CHECK_EQ(w->st_sleep_timeouts, 0);
	CHECK_EQ(__atomic_load_n(&r.f.data_in, __ATOMIC_ACQUIRE), 4096);
	rig_down(&r);
}

/* An event loop's order (nvmeof_queue_fd): poll, arm, poll, then sleep
 * unless pending. Its poll after the arm holds the data: pending says so.
 * And the arm sends what a poll held: the loop that sleeps right after it
 * wakes for the write's response, which needs that data. */
TEST(an_event_loop_sees_held_data_as_pending_and_its_arm_sends_it)
{
	struct rig r;
	rig_up(&r);
	int fd = nvmeof_queue_fd(r.q);
	CHECK(fd >= 0);
	CHECK_EQ(nvmeof_queue_poll(r.q, 0), 0);
	CHECK_EQ(nvmeof_queue_arm(r.q), 0);
	release(&r.f);
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	CHECK_EQ(poll(&pf, 1, 5000), 1);
	CHECK_EQ(nvmeof_queue_poll(r.q, 0), 1); /* the flush */
	CHECK(nvmeof_queue_pending(r.q));        /* the write's data, held */
	CHECK_EQ(__atomic_load_n(&r.f.data_in, __ATOMIC_ACQUIRE), 0);
	CHECK_EQ(nvmeof_queue_arm(r.q), 0);      /* sends it: no poll between */
	CHECK_EQ(poll(&pf, 1, 5000), 1);         /* the write's response came */
	CHECK_EQ(__atomic_load_n(&r.f.data_in, __ATOMIC_ACQUIRE), 4096);
	CHECK_EQ(nvmeof_queue_poll(r.q, 0), 1);
	CHECK_EQ(r.done, 2);
	rig_down(&r);
}

int main(void)
{
	static const struct test_case t[] = {
		T(a_wait_does_not_sleep_on_held_data),
		T(an_event_loop_sees_held_data_as_pending_and_its_arm_sends_it),
	};
	return run_tests("tcpheld", t, sizeof(t) / sizeof(t[0]));
}
