// Would an io_uring socket path help NVMe/TCP here? A loopback TCP
// ping-pong shaped like a 4 KiB read: the client sends a 72-byte "capsule",
// the server answers with 4096 + 16 bytes. Client on CPU 0, server on CPU 1,
// both busy polling. The client side is one of:
//   poll  non-blocking recvmsg + sendmsg, spinning on recvmsg (what the
//         NVMe/TCP queue does today);
//   uring one ring, no SQPOLL: a recv re-armed after each completion and the
//         sends, submitted together (one io_uring_enter); completions reaped
//         by spinning on io_uring_peek_cqe, no system call per empty poll;
//   ms    as uring, with a multishot recv into a provided-buffer ring (no
//         re-arm; an enter only when there is something to send).
// QD capsules stay outstanding (1 = ping-pong, 32 = pipelined). Prints one
// line: mode qd round_trips p50_us p99_us client_cpu_us_per_rt
// client_cpu_percent round_trips_per_s syscalls_per_rt.
// Not part of the build: see uring-pingpong.sh.
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CAP 72
#define RSP (4096 + 16)
#define MAXQD 64
#define RXSZ (256 * 1024)
#define NBUF 16 // multishot: provided buffers
#define BUFSZ (64 * 1024)
#define BGID 7

static int qd;
static double secs;
static uint64_t *lat;
static size_t nlat, maxlat;
static uint64_t calls; // client system calls (recvmsg, sendmsg, io_uring_enter)

static void die(const char *what, int err)
{
    fprintf(stderr, "uring-pingpong: %s: %s\n", what, strerror(err));
    exit(1);
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof s, &s);
    if (rc)
        die("pthread_setaffinity_np", rc);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sendall(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (w <= 0)
            die("server send", errno);
        p += w;
        n -= (size_t)w;
    }
}

// Busy-polling echo: every whole capsule read gets one response; the
// responses of one read go out in one send.
static void *server(void *arg)
{
    int fd = *(int *)arg;
    static char rx[RXSZ], tx[MAXQD * RSP];
    size_t part = 0;
    pin(1);
    for (;;) {
        ssize_t n = recv(fd, rx, sizeof rx, MSG_DONTWAIT);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            die("server recv", errno);
        }
        part += (size_t)n;
        size_t k = part / CAP;
        part %= CAP;
        sendall(fd, tx, k * RSP);
    }
    close(fd);
    return NULL;
}

// Client bookkeeping shared by the three modes: the stream is ordered, so
// send times form a FIFO.
static uint64_t ts[MAXQD];
static unsigned head, tail, outstanding;
static size_t rpart;
static char capbuf[MAXQD * CAP];

static void sent(unsigned k)
{
    uint64_t t = now_ns();
    for (unsigned i = 0; i < k; i++)
        ts[tail++ % MAXQD] = t;
    outstanding += k;
}

// Account n received bytes; returns how many round trips completed.
static unsigned received(size_t n)
{
    rpart += n;
    unsigned k = (unsigned)(rpart / RSP);
    rpart %= RSP;
    uint64_t t = now_ns();
    for (unsigned i = 0; i < k; i++) {
        uint64_t d = t - ts[head++ % MAXQD];
        if (nlat < maxlat)
            lat[nlat++] = d;
    }
    outstanding -= k;
    return k;
}

static void run_poll(int fd, uint64_t end)
{
    static char rx[RXSZ];
    struct iovec iv = {rx, sizeof rx};
    struct msghdr mh = {.msg_iov = &iv, .msg_iovlen = 1};
    struct iovec sv = {capbuf, (size_t)qd * CAP};
    struct msghdr sh = {.msg_iov = &sv, .msg_iovlen = 1};
    if (sendmsg(fd, &sh, MSG_NOSIGNAL) != (ssize_t)sv.iov_len)
        die("sendmsg", errno);
    sent((unsigned)qd);
    while (outstanding) {
        ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
        calls++;
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            die("recvmsg", errno);
        }
        if (n == 0)
            die("recvmsg", ECONNRESET);
        unsigned k = received((size_t)n);
        if (k && now_ns() < end) {
            sv.iov_len = (size_t)k * CAP;
            if (sendmsg(fd, &sh, MSG_NOSIGNAL) != (ssize_t)sv.iov_len)
                die("sendmsg", errno);
            calls++;
            sent(k);
        }
    }
}

enum { UD_RECV = 1, UD_SEND = 2 };

static void queue_send(struct io_uring *r, int fd, unsigned k)
{
    struct io_uring_sqe *s = io_uring_get_sqe(r);
    io_uring_prep_send(s, fd, capbuf, (size_t)k * CAP, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(s, UD_SEND | ((uint64_t)k << 8));
}

static void check_send(struct io_uring_cqe *c)
{
    unsigned k = (unsigned)(c->user_data >> 8);
    if (c->res != (int)(k * CAP))
        die("io_uring send (short or failed)", c->res < 0 ? -c->res : EIO);
}

static void run_uring(int fd, uint64_t end)
{
    static char rx[RXSZ];
    struct io_uring r;
    int rc = io_uring_queue_init(8, &r, 0);
    if (rc)
        die("io_uring_queue_init", -rc);
    struct io_uring_sqe *s = io_uring_get_sqe(&r);
    io_uring_prep_recv(s, fd, rx, sizeof rx, 0);
    io_uring_sqe_set_data64(s, UD_RECV);
    queue_send(&r, fd, (unsigned)qd);
    sent((unsigned)qd);
    if ((rc = io_uring_submit(&r)) < 0)
        die("io_uring_submit", -rc);
    int armed = 1;
    while (outstanding || armed) {
        struct io_uring_cqe *c;
        if (io_uring_peek_cqe(&r, &c))
            continue; // empty: spin on the shared ring, no syscall
        uint64_t ud = c->user_data;
        if ((ud & 0xff) == UD_SEND) {
            check_send(c);
            io_uring_cqe_seen(&r, c);
            continue;
        }
        int res = c->res;
        io_uring_cqe_seen(&r, c);
        armed = 0;
        if (res <= 0)
            die("io_uring recv", res < 0 ? -res : ECONNRESET);
        unsigned k = received((size_t)res);
        int n = 0;
        if (outstanding || (k && now_ns() < end)) {
            s = io_uring_get_sqe(&r);
            io_uring_prep_recv(s, fd, rx, sizeof rx, 0);
            io_uring_sqe_set_data64(s, UD_RECV);
            armed = 1;
            n++;
        }
        if (k && now_ns() < end) {
            queue_send(&r, fd, k);
            sent(k);
            armed = 1;
            n++;
        }
        if (n && (rc = io_uring_submit(&r)) < 0)
            die("io_uring_submit", -rc);
        calls += n > 0;
    }
    io_uring_queue_exit(&r);
}

static void run_multishot(int fd, uint64_t end)
{
    struct io_uring r;
    int rc = io_uring_queue_init(64, &r, 0);
    if (rc)
        die("io_uring_queue_init", -rc);
    struct io_uring_buf_ring *br;
    if (posix_memalign((void **)&br, 4096, NBUF * sizeof(struct io_uring_buf)))
        die("posix_memalign", ENOMEM);
    struct io_uring_buf_reg reg = {.ring_addr = (uintptr_t)br, .ring_entries = NBUF, .bgid = BGID};
    if ((rc = io_uring_register_buf_ring(&r, &reg, 0)))
        die("io_uring_register_buf_ring", -rc);
    io_uring_buf_ring_init(br);
    static char bufs[NBUF][BUFSZ];
    for (int i = 0; i < NBUF; i++)
        io_uring_buf_ring_add(br, bufs[i], BUFSZ, (unsigned short)i, io_uring_buf_ring_mask(NBUF), i);
    io_uring_buf_ring_advance(br, NBUF);
    struct io_uring_sqe *s = io_uring_get_sqe(&r);
    io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = BGID;
    io_uring_sqe_set_data64(s, UD_RECV);
    queue_send(&r, fd, (unsigned)qd);
    sent((unsigned)qd);
    if ((rc = io_uring_submit(&r)) < 0)
        die("io_uring_submit", -rc);
    while (outstanding) {
        struct io_uring_cqe *c;
        if (io_uring_peek_cqe(&r, &c))
            continue;
        uint64_t ud = c->user_data;
        if ((ud & 0xff) == UD_SEND) {
            check_send(c);
            io_uring_cqe_seen(&r, c);
            continue;
        }
        int res = c->res;
        unsigned fl = c->flags;
        io_uring_cqe_seen(&r, c);
        if (res <= 0)
            die("io_uring multishot recv", res < 0 ? -res : ECONNRESET);
        if (!(fl & IORING_CQE_F_MORE))
            die("io_uring multishot recv ended (buffers ran out)", ENOBUFS);
        unsigned short bid = (unsigned short)(fl >> IORING_CQE_BUFFER_SHIFT);
        io_uring_buf_ring_add(br, bufs[bid], BUFSZ, bid, io_uring_buf_ring_mask(NBUF), 0);
        io_uring_buf_ring_advance(br, 1);
        unsigned k = received((size_t)res);
        if (k && now_ns() < end) {
            queue_send(&r, fd, k);
            sent(k);
            if ((rc = io_uring_submit(&r)) < 0)
                die("io_uring_submit", -rc);
            calls++;
        }
    }
    // The multishot recv stays armed; closing the ring cancels it.
    io_uring_queue_exit(&r);
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double tv_us(struct timeval t)
{
    return t.tv_sec * 1e6 + t.tv_usec;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (qd = atoi(argv[2])) < 1 || qd > 32 || (secs = atof(argv[3])) <= 0) {
        fprintf(stderr, "usage: uring-pingpong poll|uring|ms QD(1-32) SECONDS\n");
        return 2;
    }
    const char *mode = argv[1];
    void (*fn)(int, uint64_t) = !strcmp(mode, "poll") ? run_poll : !strcmp(mode, "uring") ? run_uring
                                                           : !strcmp(mode, "ms")    ? run_multishot
                                                                                    : NULL;
    if (!fn)
        return 2;
    maxlat = (size_t)(secs * 2e6) + 1024;
    if (!(lat = malloc(maxlat * sizeof *lat)))
        die("malloc", ENOMEM);
    memset(lat, 0, maxlat * sizeof *lat); // fault the pages in before timing

    int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (void *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (void *)&a, &al))
        die("listen", errno);
    int cfd = socket(AF_INET, SOCK_STREAM, 0);
    if (cfd < 0 || connect(cfd, (void *)&a, sizeof a))
        die("connect", errno);
    int sfd = accept(ls, NULL, NULL);
    if (sfd < 0)
        die("accept", errno);
    close(ls);
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t st;
    if (pthread_create(&st, NULL, server, &sfd))
        die("pthread_create", errno);
    pin(0);

    // Warm-up of 0.2 s, not counted.
    fn(cfd, now_ns() + 200000000u);
    nlat = 0;
    head = tail = 0;
    calls = 0;

    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    uint64_t t0 = now_ns();
    fn(cfd, t0 + (uint64_t)(secs * 1e9));
    uint64_t t1 = now_ns();
    getrusage(RUSAGE_THREAD, &r1);
    shutdown(cfd, SHUT_WR);
    pthread_join(st, NULL);
    close(cfd);

    qsort(lat, nlat, sizeof *lat, cmp);
    double cpu = tv_us(r1.ru_utime) - tv_us(r0.ru_utime) + tv_us(r1.ru_stime) - tv_us(r0.ru_stime);
    printf("%s %d %zu %.2f %.2f %.3f %.2f %.0f %.2f\n", mode, qd, nlat, lat[nlat / 2] / 1e3,
           lat[nlat * 99 / 100] / 1e3, cpu / (double)nlat, 100.0 * cpu / ((t1 - t0) / 1e3),
           nlat / ((t1 - t0) / 1e9), (double)calls / (double)nlat);
    return 0;
}
