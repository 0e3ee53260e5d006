/*
 * Several paths to one namespace against the real target:
 * subsystem M through port 3 (NVMEOF_TB_ADDR, rxe0) and port 4
 * (NVMEOF_TB_ADDR2, rxe1), its namespace in ANA group NVMEOF_TB_ANAGRP,
 * whose state per port `tb ana` sets; `tb mpath-down/up` removes and
 * restores a port. Each test leaves both ports up and optimized.
 * NVMEOF_TB_TRTYPE=tcp runs both paths over NVMe/TCP (ports 5 and 6, the
 * same addresses and port number), NVMEOF_TB_TRTYPE2 path 2 alone (rdma
 * or tcp: one RDMA and one TCP path in one multipath); `tb` reads the
 * same variables to find a path's port.
 *
 *   target_mpath [TEST...]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../unit/check.h"
#include "aer.h"
#include "ctrl.h"
#include "mpath_q.h"
#include "nvmeof.h"
#include "protocol.h"
#include "qpriv.h"
#include "queue.h"
#include "tbenv.h"

#define QD 16
#define NBLK 64           /* blocks per round (subsystem M's file: 4 KiB blocks) */
#define BLKS_PER_IO 2
#define BUF_BYTES (NBLK * 4096)

static void tb(const char *fmt, const char *a, const char *b)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), fmt, a, b);
	if (system(cmd))
		fprintf(stderr, "    (%s failed)\n", cmd);
}

static void restore_target(void)
{
	tb("tb mpath-up 1%s%s", "", "");
	tb("tb mpath-up 2%s%s", "", "");
	tb("tb ana 1 optimized%s%s", "", "");
	tb("tb ana 2 optimized%s%s", "", "");
}

struct paths {
	struct nvmeof_ctrl *c[2];
	struct nvmeof_mpath *mp;
	struct nvmeof_mpath_queue *mq;
	struct nvmeof_mpath_mr *w, *r;
};

static bool path_tcp(int i)
{
	const char *t = getenv("NVMEOF_TB_TRTYPE"), *t2 = getenv("NVMEOF_TB_TRTYPE2");
	if (i == 1 && t2 && *t2)
		t = t2;
	return t && !strcmp(t, "tcp");
}

/* What a path's information names as its device: the HCA, or "tcp" */
static const char *path_hca(int i)
{
	return path_tcp(i) ? "tcp" : i ? "rxe1" : "rxe0";
}

static uint32_t path_kato_ms = UINT32_MAX; /* UINT32_MAX: the library's default */
static nvmeof_trace_cb path_trace;          /* NULL: none */

static int connect_path(int i, const char *nqn, uint32_t reconnect_ms, struct nvmeof_ctrl **out)
{
	struct nvmeof_ctrl_opts o;
	nvmeof_ctrl_opts_init(&o);
	if (path_kato_ms != UINT32_MAX)
		o.kato_ms = path_kato_ms;
	o.trtype = path_tcp(i) ? "tcp" : "rdma";
	o.traddr = env(i == 0 ? "NVMEOF_TB_ADDR" : "NVMEOF_TB_ADDR2");
	o.src_addr = o.traddr;  /* each path through its own HCA */
	o.trsvcid = env("NVMEOF_TB_MPORT");
	o.subnqn = nqn;
	o.cmd_timeout_ms = 10000;
	o.reconnect_delay_ms = reconnect_ms;
	o.ctrl_loss_tmo_ms = 30000;
	o.trace = path_trace;
	return nvmeof_ctrl_connect(&o, out);
}

/* A multipath to namespace nsid over p's controllers, with its buffers and
 * a queue. */
static int open_ns(struct paths *p, uint32_t nsid, enum nvmeof_iopolicy pol)
{
	int rc;
	struct nvmeof_mpath_opts mo;
	nvmeof_mpath_opts_init(&mo);
	mo.nsid = nsid;
	mo.iopolicy = pol;
	if ((rc = nvmeof_mpath_create(p->c, 2, &mo, &p->mp)))
		return rc;
	if ((rc = nvmeof_mpath_mr_alloc(p->mp, BUF_BYTES, &p->w)) ||
	    (rc = nvmeof_mpath_mr_alloc(p->mp, BUF_BYTES, &p->r)))
		return rc;
	struct nvmeof_queue_opts qo;
	nvmeof_queue_opts_init(&qo);
	qo.depth = QD;
	return nvmeof_mpath_queue_create(p->mp, &qo, &p->mq);
}

static int open_paths(struct paths *p, enum nvmeof_iopolicy pol, uint32_t reconnect_ms)
{
	memset(p, 0, sizeof(*p));
	int rc;
	for (int i = 0; i < 2; i++)
		if ((rc = connect_path(i, env("NVMEOF_TB_NQN_M"), reconnect_ms, &p->c[i])))
			return rc;
	return open_ns(p, 1, pol);
}

/* as MUST, for cleanup: reports and goes on */
#define OK(call)                                                                                 \
	do {                                                                                     \
		int rc_ = (call);                                                                \
		if (rc_ < 0) {                                                                   \
			fprintf(stderr, "    %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,       \
				nvmeof_strerror(rc_), nvmeof_errmsg());                          \
			check_failed_in_test = 1;                                                \
		}                                                                                \
	} while (0)

static void close_paths(struct paths *p)
{
	if (p->mq)
		OK(nvmeof_mpath_queue_destroy(p->mq));
	if (p->w)
		OK(nvmeof_mpath_mr_release(p->w));
	if (p->r)
		OK(nvmeof_mpath_mr_release(p->r));
	if (p->mp)
		OK(nvmeof_mpath_destroy(p->mp));
	for (int i = 0; i < 2; i++)
		if (p->c[i])
			nvmeof_ctrl_close(p->c[i]);
}

struct io_state {
	uint32_t done, errors;
	char msg[512];
};

static void io_done(void *arg, const struct nvmeof_cpl *cpl)
{
	struct io_state *s = arg;
	s->done++;
	if (cpl->err) {
		char b[128];
		if (!s->errors)
			snprintf(s->msg, sizeof(s->msg), "%s: %s", nvmeof_cpl_str(cpl, b, sizeof(b)), nvmeof_errmsg());
		s->errors++;
	}
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i += 8) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		memcpy(p + i, &x, n - i < 8 ? n - i : 8);
	}
}

/* One round: NBLK blocks written at QD (BLKS_PER_IO per command), read
 * back, compared. 0, or the errors seen; *bad counts data mismatches. */
static uint32_t round_trip(struct paths *p, uint64_t base, uint64_t seed, uint32_t *bad, char *msg, size_t mlen)
{
	uint8_t *w = nvmeof_mpath_mr_addr(p->w), *r = nvmeof_mpath_mr_addr(p->r);
	size_t bs = nvmeof_mpath_ns(p->mp)->lba_size;
	fill(w, NBLK * bs, seed);
	memset(r, 0, NBLK * bs);
	struct io_state s = {0};
	for (int phase = 0; phase < 2; phase++) {
		uint32_t next = 0, want = NBLK / BLKS_PER_IO;
		s.done = 0;
		while (s.done < want) {
			while (next < want && nvmeof_mpath_queue_inflight(p->mq) < QD) {
				int rc = phase == 0 ? nvmeof_mpath_write(p->mq, base + next * BLKS_PER_IO, BLKS_PER_IO, p->w,
									 next * BLKS_PER_IO * bs, 0, io_done, &s)
						    : nvmeof_mpath_read(p->mq, base + next * BLKS_PER_IO, BLKS_PER_IO, p->r,
									next * BLKS_PER_IO * bs, io_done, &s);
				if (rc == NVMEOF_EQFULL)
					break;
				if (rc) {
					if (!s.errors)
						snprintf(s.msg, sizeof(s.msg), "submit: %s", nvmeof_errmsg());
					s.errors++;
					s.done++;
				}
				next++;
			}
			if (nvmeof_mpath_queue_wait(p->mq, 1, 1000) < 0)
				break;
		}
	}
	*bad = memcmp(w, r, NBLK * bs) != 0;
	if (s.errors)
		snprintf(msg, mlen, "%s", s.msg);
	return s.errors;
}

static struct nvmeof_path_stats path_stats(struct paths *p, uint32_t i)
{
	struct nvmeof_path_stats st = {.size = sizeof(st)};
	nvmeof_mpath_queue_path_stats(p->mq, i, &st);
	return st;
}
static uint64_t path_cmds(struct paths *p, uint32_t i) { return path_stats(p, i).cmds; }
static uint64_t path_doorbells(struct paths *p, uint32_t i) { return path_stats(p, i).doorbells; }

static uint8_t ana_of(struct paths *p, uint32_t i)
{
	struct nvmeof_path_info pi = {.size = sizeof(pi)};
	nvmeof_mpath_path_info(p->mp, i, &pi);
	return pi.ana_state;
}

/* Polls path i's ANA state until it is st, at most ms (no I/O: only an
 * event's log read, or a periodic one, can change it). */
static bool ana_becomes(struct paths *p, uint32_t i, uint8_t st, uint32_t ms)
{
	for (uint32_t t = 0; t < ms && ana_of(p, i) != st; t += 10)
		usleep(10000);
	return ana_of(p, i) == st;
}

/* Rounds of verified I/O until cond holds (at most max rounds): the wait
 * is bounded by rounds, not by time. */
#define ROUNDS_UNTIL(p, cond, max, errs, bads)                                                   \
	for (int k_ = 0; k_ < (max) && !(cond); k_++) {                                          \
		uint32_t bad_;                                                                   \
		char m_[512] = "";                                                               \
		errs += round_trip((p), 0, (uint64_t)k_ + 7, &bad_, m_, sizeof(m_));             \
		bads += bad_;                                                                    \
		if (m_[0])                                                                       \
			fprintf(stderr, "    I/O error: %s\n", m_);                                 \
	}

TEST(two_paths_two_hcas_one_namespace)
{
	struct paths p;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_QUEUE_DEPTH, 0));
	if (!p.mp)
		goto out;
	CHECK_EQ(nvmeof_mpath_count(p.mp), 2);
	struct nvmeof_ana_caps a = {.size = sizeof(a)};
	MUST(nvmeof_ctrl_ana_caps(p.c[0], &a));
	CHECK(a.reporting);
	CHECK(a.anatt > 0);
	CHECK(a.nanagrpid >= 1);
	const struct nvmeof_ns *ns = nvmeof_mpath_ns(p.mp);
	CHECK_EQ(ns->anagrpid, (uint32_t)atoi(env("NVMEOF_TB_ANAGRP")));
	struct nvmeof_path_info i0 = {.size = sizeof(i0)}, i1 = {.size = sizeof(i1)};
	MUST(nvmeof_mpath_path_info(p.mp, 0, &i0));
	MUST(nvmeof_mpath_path_info(p.mp, 1, &i1));
	CHECK_STR(i0.hca, path_hca(0));
	CHECK_STR(i1.hca, path_hca(1));      /* src_addr chose the second HCA */
	CHECK_STR(i0.traddr, env("NVMEOF_TB_ADDR"));
	CHECK_STR(i1.traddr, env("NVMEOF_TB_ADDR2"));
	CHECK_EQ(i0.ana_state, NVMEOF_ANA_OPTIMIZED);
	CHECK_EQ(i1.ana_state, NVMEOF_ANA_OPTIMIZED);
	CHECK(i0.cntlid != i1.cntlid);
out:
	close_paths(&p);
}

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static bool path_live(struct paths *p, uint32_t i);

/* While one path reconnects, the wait sleeps on the other path's channel
 * until the reconnect's next step (its attempt, seconds away), instead of
 * napping between polls: the waiting thread's voluntary context switches
 * count its wake-ups. A completion on the live path still ends it. */
TEST(multipath_wait_sleeps_on_the_live_path_while_another_reconnects)
{
	struct paths p;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 5000)); /* path 2's attempt 5 s after its loss */
	MUST(nvmeof_mpath_queue_path_disconnect(p.mq, 1));
	nvmeof_mpath_queue_poll(p.mq, 0); /* takes the loss: path 2 waits for its attempt */
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	double c0 = thread_cpu_s();
	CHECK_EQ(nvmeof_mpath_queue_wait(p.mq, 1, 1000), 0);
	double cpu = thread_cpu_s() - c0;
	getrusage(RUSAGE_THREAD, &r1);
	long wakes = r1.ru_nvcsw - r0.ru_nvcsw;
	printf("    an idle 1 s wait while path 2 reconnects woke %ld time(s), %.3f s of CPU\n", wakes, cpu);
	/* 2 ms naps: about 500; sleeps of up to 100 ms: about 10. 100 leaves
	 * room for a slow emulator's extra wake-ups either way */
	CHECK(wakes < 100);
	/* a wait that spins or yields (few voluntary switches) costs a CPU's
	 * worth, 1 s; a sleeping one tens of ms: 0.25 s is 4x from the first */
	CHECK(cpu < 0.25);
	CHECK(!path_live(&p, 1)); /* the wait was over while path 2 still waited for its attempt */
	struct io_state st = {0};
	MUST(nvmeof_mpath_read(p.mq, 0, NBLK, p.r, 0, io_done, &st));
	CHECK_EQ(nvmeof_mpath_queue_wait(p.mq, 1, 10000), 1);
	CHECK_EQ(st.errors, 0);
out:
	close_paths(&p);
}

/* A multipath wait sleeps on every path's channel at once. Idle, it
 * sleeps: a 2 s wait costs its thread next to no CPU (a wait that yields
 * in a loop, as it used to, costs a CPU's worth, 2 s; a sleeping one a
 * few wake-ups, tens of ms even on the emulator: the 0.5 s bound is a
 * 4x margin from the first and 10x and more from the second). And a
 * completion on the second path wakes it while the first is idle: each
 * single read below is waited for by a wait that sleeps at once, with
 * the read in flight on one path only (round robin alternates); 256 KiB,
 * so that its completion comes after the wait has armed and slept (a
 * small one's lands during the doorbell on Soft-RoCE's loopback). A wait
 * that slept on the first path's channel alone would see the second
 * path's completion only when its sleep slice (100 ms) ends; woken by
 * it, it returns after one round trip (a few ms on the test bed). Which
 * channel ended a sleep is counted by its poll group: at least half of
 * each path's reads must have woken the wait through that path's
 * completion channel, a count no emulator's speed moves (the medians are
 * printed). I/O through such waits completes, data intact. */
TEST(multipath_wait_sleeps_on_every_path)
{
	struct paths p;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	double c0 = thread_cpu_s();
	CHECK_EQ(nvmeof_mpath_queue_wait(p.mq, 1, 2000), 0);
	double cpu = thread_cpu_s() - c0;
	printf("    an idle 2 s multipath wait used %.3f s of CPU\n", cpu);
	/* a wait that yields in a loop takes a CPU's worth (about 2 s, less
	 * only by what others take from it); one that sleeps took 0.015 s on
	 * the test bed: a quarter of the spinner's is thirty times that */
	CHECK(cpu < 0.5);

	int drc = nvmeof_mpath_queue_destroy(p.mq);
	p.mq = NULL;
	MUST(drc);
	struct nvmeof_queue_opts qo;
	nvmeof_queue_opts_init(&qo);
	qo.depth = QD;
	qo.wait_mode = NVMEOF_WAIT_SLEEP; /* no spin to catch a completion before the sleep */
	qo.wait_mode_set = true;
	MUST(nvmeof_mpath_queue_create(p.mp, &qo, &p.mq));
	enum { N = 24 };
	uint64_t lat[2][N];
	uint32_t nl[2] = {0, 0}, woken[2] = {0, 0};
	for (uint32_t k = 0; k < N; k++) {
		uint64_t c[2] = {path_cmds(&p, 0), path_cmds(&p, 1)};
		uint64_t w[2] = {p.mq->q[0]->group->cq_wakes, p.mq->q[1]->group->cq_wakes};
		struct io_state s = {0};
		MUST(nvmeof_mpath_read(p.mq, (uint64_t)k * NBLK, NBLK, p.r, 0, io_done, &s));
		uint64_t t0 = mono_us();
		int rc = nvmeof_mpath_queue_wait(p.mq, 1, 10000);
		uint64_t dt = mono_us() - t0;
		CHECK_EQ(rc, 1);
		CHECK_EQ(s.done, 1);
		CHECK_EQ(s.errors, 0);
		uint64_t d0 = path_cmds(&p, 0) - c[0], d1 = path_cmds(&p, 1) - c[1];
		CHECK_EQ(d0 + d1, 1); /* on one path, the other idle */
		if (rc != 1 || d0 + d1 != 1)
			goto out;
		uint32_t on = d1 ? 1 : 0;
		lat[on][nl[on]++] = dt;
		woken[on] += p.mq->q[on]->group->cq_wakes > w[on]; /* that path's channel ended a sleep */
	}
	CHECK(nl[0] >= N / 4 && nl[1] >= N / 4);
	if (!nl[0] || !nl[1])
		goto out;
	qsort(lat[0], nl[0], sizeof(uint64_t), cmp_u64);
	qsort(lat[1], nl[1], sizeof(uint64_t), cmp_u64);
	uint64_t m0 = lat[0][nl[0] / 2], m1 = lat[1][nl[1] / 2];
	printf("    a 256 KiB read alone in flight, waited for by a sleeping wait: median %.2f ms on path 1 (%u, "
	       "%u woken by its completion channel), %.2f ms on path 2 (%u, %u)\n",
	       m0 / 1e3, nl[0], woken[0], m1 / 1e3, nl[1], woken[1]);
	/* woken by each path's completion, not by the end of a 100 ms slice:
	 * a count, not the latency (half a slice was within reach of a
	 * loaded emulator); a read may complete before the wait sleeps, so
	 * half of them */
	CHECK(woken[1] >= (nl[1] + 1) / 2);
	CHECK(woken[0] >= (nl[0] + 1) / 2);
	uint32_t errs = 0, bads = 0;
	ROUNDS_UNTIL(&p, 0, 2, errs, bads);
	CHECK_EQ(errs, 0);
	CHECK_EQ(bads, 0);
	CHECK(path_cmds(&p, 0) > 0 && path_cmds(&p, 1) > 0);
out:
	close_paths(&p);
}

/* The caller's own memory, registered on every path at once
 * (nvmeof_mpath_mr_register), carries data both ways on both paths (round
 * robin: a registration missing on one HCA fails that path's commands with
 * a remote access error), and one wait over two multipath queues of a
 * thread (nvmeof_mpath_queues_wait) gathers both queues' completions: the
 * count it returns is theirs together, each queue's callbacks run. */
static uint64_t both_cmds(struct nvmeof_mpath_queue *const *mqs, uint32_t path) /* two queues' commands on a path */
{
	uint64_t n = 0;
	for (int i = 0; i < 2; i++) {
		struct nvmeof_path_stats st = {.size = sizeof(st)};
		nvmeof_mpath_queue_path_stats(mqs[i], path, &st);
		n += st.cmds;
	}
	return n;
}
/* One wait over both queues until n completions came (20 s: they take
 * milliseconds); what came, each wait's result checked. */
static uint32_t wait_both(struct nvmeof_mpath_queue *const *both, uint32_t n)
{
	uint32_t got = 0;
	for (int i = 0; i < 20 && got < n; i++) {
		int r = nvmeof_mpath_queues_wait(both, 2, n - got, 1000);
		CHECK(r >= 0);
		if (r < 0)
			break;
		got += (uint32_t)r;
	}
	return got;
}
TEST(caller_memory_on_every_path_and_one_wait_over_two_queues)
{
	struct paths p;
	struct nvmeof_mpath_queue *mq2 = NULL;
	struct nvmeof_mpath_mr *mmr = NULL;
	const size_t half = 8 * BLKS_PER_IO * 4096;
	uint8_t *buf = aligned_alloc(4096, 2 * half);
	CHECK(buf != NULL);
	if (!buf)
		return;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	void *none = NULL;
	CHECK_EQ(nvmeof_mpath_mr_register(p.mp, NULL, half, &mmr), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_mpath_queues_wait(NULL, 1, 1, 10), NVMEOF_EINVAL);
	CHECK_EQ(nvmeof_mpath_queues_wait((struct nvmeof_mpath_queue *const *)&none, 1, 1, 10), NVMEOF_EINVAL);
	MUST(nvmeof_mpath_mr_register(p.mp, buf, 2 * half, &mmr));
	CHECK(nvmeof_mpath_mr_addr(mmr) == buf);
	struct nvmeof_queue_opts qo;
	nvmeof_queue_opts_init(&qo);
	qo.depth = QD;
	MUST(nvmeof_mpath_queue_create(p.mp, &qo, &mq2));
	struct nvmeof_mpath_queue *both[2] = {p.mq, mq2};
	uint64_t c0[2] = {both_cmds(both, 0), both_cmds(both, 1)};
	fill(buf, half, 4242);
	memset(buf + half, 0, half);
	/* 8 writes, half on each queue, waited for together */
	struct io_state s[2] = {{0}};
	for (uint32_t k = 0; k < 8; k++)
		MUST(nvmeof_mpath_write(both[k % 2], 14000 + k * BLKS_PER_IO, BLKS_PER_IO, mmr,
					(size_t)k * BLKS_PER_IO * 4096, 0, io_done, &s[k % 2]));
	CHECK_EQ(wait_both(both, 8), 8);
	CHECK_EQ(s[0].done, 4);
	CHECK_EQ(s[1].done, 4);
	CHECK_EQ(s[0].errors + s[1].errors, 0);
	/* read back into the buffer's second half, each block through the
	 * other queue than wrote it */
	struct io_state t[2] = {{0}};
	for (uint32_t k = 0; k < 8; k++)
		MUST(nvmeof_mpath_read(both[(k + 1) % 2], 14000 + k * BLKS_PER_IO, BLKS_PER_IO, mmr,
				       half + (size_t)k * BLKS_PER_IO * 4096, io_done, &t[(k + 1) % 2]));
	CHECK_EQ(wait_both(both, 8), 8);
	CHECK_EQ(t[0].done + t[1].done, 8);
	CHECK_EQ(t[0].errors + t[1].errors, 0);
	if (t[0].errors + t[1].errors)
		printf("    %s%s\n", t[0].msg, t[1].msg);
	CHECK_MEM(buf + half, buf, half);
	uint64_t d0 = both_cmds(both, 0) - c0[0], d1 = both_cmds(both, 1) - c0[1];
	printf("    16 commands from the caller's memory: %llu on path 1, %llu on path 2\n",
	       (unsigned long long)d0, (unsigned long long)d1);
	CHECK(d0 >= 4 && d1 >= 4); /* round robin, each queue: both registrations used */
	CHECK_EQ(d0 + d1, 16);
out:
	if (mq2)
		OK(nvmeof_mpath_queue_destroy(mq2));
	if (mmr)
		OK(nvmeof_mpath_mr_release(mmr));
	close_paths(&p);
	free(buf);
}

/* With batch, submissions wait for the commit: one doorbell per path for
 * QD commands, not one each (the engine's multipath jobs rang per command,
 * a system call each on Soft-RoCE: BENCHMARKS.md, "One and two paths"). What a poll
 * finds submitted and not committed goes out too: verified rounds through
 * waits alone complete, data intact. */
TEST(batched_submissions_ring_once_per_path)
{
	struct paths p;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	int drc = nvmeof_mpath_queue_destroy(p.mq);
	p.mq = NULL;
	MUST(drc);
	struct nvmeof_queue_opts qo;
	nvmeof_queue_opts_init(&qo);
	qo.depth = QD;
	qo.batch = true;
	MUST(nvmeof_mpath_queue_create(p.mp, &qo, &p.mq));
	uint64_t d0 = path_doorbells(&p, 0), d1 = path_doorbells(&p, 1);
	struct io_state s = {0};
	size_t bs = nvmeof_mpath_ns(p.mp)->lba_size;
	for (uint32_t k = 0; k < QD; k++)
		MUST(nvmeof_mpath_read(p.mq, k, 1, p.r, k * bs, io_done, &s));
	CHECK_EQ(path_doorbells(&p, 0), d0);  /* nothing rung before the commit */
	CHECK_EQ(path_doorbells(&p, 1), d1);
	MUST(nvmeof_mpath_queue_commit(p.mq));
	printf("    %u reads: %llu + %llu doorbell(s) on the two paths\n", QD,
	       (unsigned long long)(path_doorbells(&p, 0) - d0), (unsigned long long)(path_doorbells(&p, 1) - d1));
	CHECK_EQ(path_doorbells(&p, 0), d0 + 1);
	CHECK_EQ(path_doorbells(&p, 1), d1 + 1);
	for (int k = 0; k < 50 && s.done < QD; k++)
		if (nvmeof_mpath_queue_wait(p.mq, QD - s.done, 200) < 0)
			break;
	CHECK_EQ(s.done, QD);
	CHECK_EQ(s.errors, 0);
	uint32_t bad;
	char m[512] = "";
	CHECK_EQ(round_trip(&p, 2000, 5, &bad, m, sizeof(m)), 0);
	CHECK_EQ(bad, 0);
	if (m[0])
		fprintf(stderr, "    I/O error: %s\n", m);
	/* size 0 is the first layout: a caller built before doorbells gets
	 * nothing written past its struct */
	struct nvmeof_path_stats z;
	memset(&z, 0xab, sizeof(z));
	z.size = 0;
	MUST(nvmeof_mpath_queue_path_stats(p.mq, 0, &z));
	CHECK(z.cmds > 0);
	CHECK_EQ(z.doorbells, 0xababababababababull);
out:
	close_paths(&p);
}

static void policy_spread(enum nvmeof_iopolicy pol)
{
	struct paths p;
	MUST(open_paths(&p, pol, 0));
	if (!p.mq)
		goto out;
	uint32_t bad;
	char m[512] = "";
	CHECK_EQ(round_trip(&p, 1000, 1, &bad, m, sizeof(m)), 0);
	CHECK_EQ(bad, 0);
	uint64_t c0 = path_cmds(&p, 0), c1 = path_cmds(&p, 1);
	printf("    %s: path 1 %llu commands, path 2 %llu\n", nvmeof_iopolicy_str(pol), (unsigned long long)c0,
	       (unsigned long long)c1);
	CHECK_EQ(c0 + c1, 2 * NBLK / BLKS_PER_IO);
	if (pol == NVMEOF_IOPOLICY_ROUND_ROBIN)
		CHECK_EQ(c0, c1);
	else if (pol == NVMEOF_IOPOLICY_NUMA)
		CHECK(c0 == 0 || c1 == 0);    /* no NUMA node on rxe: the first path carries all */
	else
		CHECK(c0 > 0 && c1 > 0);
out:
	close_paths(&p);
}

TEST(round_robin_alternates_with_verify) { policy_spread(NVMEOF_IOPOLICY_ROUND_ROBIN); }
TEST(queue_depth_uses_both_with_verify) { policy_spread(NVMEOF_IOPOLICY_QUEUE_DEPTH); }
TEST(numa_without_nodes_keeps_one_path) { policy_spread(NVMEOF_IOPOLICY_NUMA); }

/* optimized -> inaccessible -> optimized on path 1, and optimized ->
 * non-optimized: I/O follows the states with no error. */
TEST(ana_states_route_io)
{
	struct paths p;
	uint32_t errs = 0, bads = 0;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	if (!p.mq)
		goto out;
	tb("tb ana 1 inaccessible%s%s", "", "");
	/* statuses or the event's log read say so; I/O goes on meanwhile */
	ROUNDS_UNTIL(&p, ana_of(&p, 0) == NVMEOF_ANA_INACCESSIBLE, 200, errs, bads);
	CHECK_EQ(ana_of(&p, 0), NVMEOF_ANA_INACCESSIBLE);
	uint64_t c0 = path_cmds(&p, 0);
	ROUNDS_UNTIL(&p, 0, 2, errs, bads);
	CHECK_EQ(path_cmds(&p, 0), c0);          /* nothing more on the inaccessible path */
	tb("tb ana 1 optimized%s%s", "", "");
	ROUNDS_UNTIL(&p, ana_of(&p, 0) == NVMEOF_ANA_OPTIMIZED, 200, errs, bads);
	ROUNDS_UNTIL(&p, 0, 2, errs, bads);
	CHECK(path_cmds(&p, 0) > c0);            /* it carries again */
	tb("tb ana 2 non-optimized%s%s", "", "");
	ROUNDS_UNTIL(&p, ana_of(&p, 1) == NVMEOF_ANA_NONOPTIMIZED, 200, errs, bads);
	uint64_t c1 = path_cmds(&p, 1);
	ROUNDS_UNTIL(&p, 0, 2, errs, bads);
	CHECK_EQ(path_cmds(&p, 1), c1);          /* an optimized path is there: non-optimized idles */
	tb("tb ana 1 inaccessible%s%s", "", "");
	ROUNDS_UNTIL(&p, ana_of(&p, 0) == NVMEOF_ANA_INACCESSIBLE, 200, errs, bads);
	c1 = path_cmds(&p, 1);
	ROUNDS_UNTIL(&p, 0, 2, errs, bads);
	CHECK(path_cmds(&p, 1) > c1);            /* none optimized: non-optimized carries */
	CHECK_EQ(errs, 0);
	CHECK_EQ(bads, 0);
out:
	restore_target();
	close_paths(&p);
}

/* nvmeof_mpath_refresh reads every path's ANA log at once: with nothing
 * changed (no event to do it) each path's count of reads goes up; after a
 * change on the target, the state is right when it returns. */
static uint64_t ana_reads_of(struct paths *p, uint32_t i)
{
	struct nvmeof_path_info pi = {.size = sizeof(pi)};
	nvmeof_mpath_path_info(p->mp, i, &pi);
	return pi.ana_reads;
}
TEST(refresh_reads_every_paths_ana_log)
{
	struct paths p;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	uint64_t r0 = ana_reads_of(&p, 0), r1 = ana_reads_of(&p, 1);
	MUST(nvmeof_mpath_refresh(p.mp));
	printf("    ANA log reads: path 1 %llu -> %llu, path 2 %llu -> %llu\n", (unsigned long long)r0,
	       (unsigned long long)ana_reads_of(&p, 0), (unsigned long long)r1, (unsigned long long)ana_reads_of(&p, 1));
	CHECK(ana_reads_of(&p, 0) > r0);
	CHECK(ana_reads_of(&p, 1) > r1);
	tb("tb ana 2 non-optimized%s%s", "", "");
	MUST(nvmeof_mpath_refresh(p.mp));
	CHECK_EQ(ana_of(&p, 1), NVMEOF_ANA_NONOPTIMIZED);
	CHECK_EQ(ana_of(&p, 0), NVMEOF_ANA_OPTIMIZED);
out:
	restore_target();
	close_paths(&p);
}

struct bg { const char *cmds[4]; int done; };
static void *run_bg(void *arg)
{
	struct bg *b = arg;
	for (int i = 0; i < 4 && b->cmds[i]; i++) {
		usleep(200000);
		tb("%s%s", b->cmds[i], "");
	}
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A moment with no usable path while both controllers stay connected:
 * path 1 goes Inaccessible while path 2 still is, and 200 ms later path 2
 * turns Optimized. The I/O waits for it instead of failing. */
TEST(a_two_step_ana_swap_under_io_loses_nothing)
{
	struct paths p;
	uint32_t errs = 0, bads = 0;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	if (!p.mq)
		goto out;
	tb("tb ana 2 inaccessible%s%s", "", "");
	ROUNDS_UNTIL(&p, ana_of(&p, 1) == NVMEOF_ANA_INACCESSIBLE, 200, errs, bads);
	CHECK_EQ(ana_of(&p, 1), NVMEOF_ANA_INACCESSIBLE);
	struct bg b = {{"tb ana 1 inaccessible", "tb ana 2 optimized", NULL}, 0};
	pthread_t t;
	pthread_create(&t, NULL, run_bg, &b);
	ROUNDS_UNTIL(&p, __atomic_load_n(&b.done, __ATOMIC_ACQUIRE) && ana_of(&p, 1) == NVMEOF_ANA_OPTIMIZED, 400,
		     errs, bads);
	pthread_join(t, NULL);
	CHECK_EQ(ana_of(&p, 1), NVMEOF_ANA_OPTIMIZED);
	CHECK_EQ(ana_of(&p, 0), NVMEOF_ANA_INACCESSIBLE);
	uint64_t c1 = path_cmds(&p, 1);
	ROUNDS_UNTIL(&p, 0, 2, errs, bads);
	CHECK(path_cmds(&p, 1) > c1);
	CHECK_EQ(errs, 0);
	CHECK_EQ(bads, 0);
out:
	restore_target();
	close_paths(&p);
}

/* A port goes while I/O runs: no error, the other path takes it; with
 * reconnect on, the path comes back and carries I/O again. */
static void port_lost_under_io(uint32_t path)
{
	struct paths p;
	uint32_t errs = 0, bads = 0;
	/* A KATO of 2 s: the writes lost unanswered with the port (the
	 * target's timing decides whether any are) wait a hold of 1 s +
	 * 2 x KATO, 5 s instead of the default's 11 s, before they go out on
	 * the other path; what is checked here is that path carrying the I/O
	 * and the lost one's return, not the hold. */
	path_kato_ms = 2000;
	int rc = open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 500);
	path_kato_ms = UINT32_MAX;
	MUST(rc);
	if (!p.mq)
		goto out;
	struct bg b = {{path ? "tb mpath-down 2" : "tb mpath-down 1", NULL}, 0};
	pthread_t t;
	pthread_create(&t, NULL, run_bg, &b);
	struct nvmeof_path_stats st = {.size = sizeof(st)};
	ROUNDS_UNTIL(&p, (nvmeof_mpath_queue_path_stats(p.mq, path, &st), !st.live), 400, errs, bads);
	pthread_join(t, NULL);
	CHECK(!st.live);
	uint64_t other = path_cmds(&p, !path);
	ROUNDS_UNTIL(&p, 0, 3, errs, bads);
	CHECK(path_cmds(&p, !path) > other);    /* the other path carried the I/O meanwhile */
	uint64_t c0 = path_cmds(&p, path);
	tb(path ? "tb mpath-up 2%s%s" : "tb mpath-up 1%s%s", "", "");
	ROUNDS_UNTIL(&p, (nvmeof_mpath_queue_path_stats(p.mq, path, &st), st.live), 400, errs, bads);
	CHECK(st.live);
	ROUNDS_UNTIL(&p, 0, 2, errs, bads);
	CHECK(path_cmds(&p, path) > c0);
	printf("    path %u (%s) lost and back under verified I/O: %llu commands on path 1, %llu on path 2\n",
	       path + 1, path_hca((int)path), (unsigned long long)path_cmds(&p, 0), (unsigned long long)path_cmds(&p, 1));
	CHECK_EQ(errs, 0);
	CHECK_EQ(bads, 0);
out:
	restore_target();
	close_paths(&p);
}
TEST(port_removed_and_restored_under_io) { port_lost_under_io(0); }
TEST(path2_port_removed_and_restored_under_io) { port_lost_under_io(1); }

static bool path_live(struct paths *p, uint32_t i) { return path_stats(p, i).live; }

/* Rounds of verified I/O on two multipaths in turn, until cond holds. */
#define ROUNDS2_UNTIL(p1, p2, cond, max, errs, bads)                                             \
	for (int j_ = 0; j_ < (max) && !(cond); j_++) {                                          \
		ROUNDS_UNTIL(p1, 0, 1, errs, bads);                                              \
		ROUNDS_UNTIL(p2, 0, 1, errs, bads);                                              \
	}

/* Namespaces 1 and 2 of subsystem M, each multipathed over the same two
 * controllers at once (a controller's events go to both multipaths):
 * verified I/O on both, a port removed under both, and back. */
TEST(two_namespaces_multipathed_over_the_same_controllers)
{
	struct paths p, p2;
	uint32_t errs = 0, bads = 0;
	memset(&p2, 0, sizeof(p2));
	/* No keep-alive: one thread polls both multipaths in turn, so the
	 * holds of their writes lost with the port add up, and with the
	 * keep-alive term of each (16 s with the default KATO and a hold of
	 * three KATOs, which failed here; 11 s with two) they come to the
	 * paths' ctrl_loss_tmo (30 s) before the port is back; what is
	 * checked here is two namespaces over the same controllers, not the
	 * hold. */
	path_kato_ms = 0;
	int rc = open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 500);
	path_kato_ms = UINT32_MAX;
	MUST(rc);
	if (!p.mq)
		goto out;
	p2.c[0] = p.c[0];
	p2.c[1] = p.c[1];
	MUST(open_ns(&p2, 2, NVMEOF_IOPOLICY_ROUND_ROBIN));
	CHECK_EQ(nvmeof_mpath_ns(p.mp)->nsid, 1);
	CHECK_EQ(nvmeof_mpath_ns(p2.mp)->nsid, 2);
	/* one namespace per multipath over these controllers */
	struct nvmeof_mpath *again = NULL;
	struct nvmeof_mpath_opts mo;
	nvmeof_mpath_opts_init(&mo);
	mo.nsid = 2;
	CHECK_EQ(nvmeof_mpath_create(p.c, 2, &mo, &again), (unsigned long long)NVMEOF_EBUSY);
	printf("    ns 2 again: %s\n", nvmeof_errmsg());
	CHECK(strstr(nvmeof_errmsg(), "namespace 2 through this controller already has a multipath"));
	CHECK(!again);
	ROUNDS2_UNTIL(&p, &p2, 0, 2, errs, bads);
	CHECK_EQ(errs, 0);
	CHECK_EQ(bads, 0);
	/* the two are distinct namespaces: ns 1 read back after ns 2 was
	 * written at the same LBAs with other data holds its own */
	uint32_t bad = 0;
	char m[512] = "";
	errs += round_trip(&p, 0, 101, &bad, m, sizeof(m));
	errs += round_trip(&p2, 0, 202, &bad, m, sizeof(m));
	uint8_t *r1 = nvmeof_mpath_mr_addr(p.r), *w1 = nvmeof_mpath_mr_addr(p.w);
	struct io_state s = {0};
	memset(r1, 0, BUF_BYTES);
	size_t bs = nvmeof_mpath_ns(p.mp)->lba_size;
	for (uint32_t k = 0; k < NBLK / 8; k++)
		MUST(nvmeof_mpath_read(p.mq, k * 8, 8, p.r, k * 8 * bs, io_done, &s));
	while (s.done < NBLK / 8 && nvmeof_mpath_queue_wait(p.mq, 1, 1000) >= 0)
		;
	CHECK_EQ(s.done, NBLK / 8);
	CHECK_EQ(s.errors, 0);
	CHECK(memcmp(r1, w1, BUF_BYTES) == 0); /* still what ns 1's round wrote (seed 101) */
	struct bg b = {{"tb mpath-down 1", NULL}, 0};
	pthread_t t;
	pthread_create(&t, NULL, run_bg, &b);
	ROUNDS2_UNTIL(&p, &p2, !path_live(&p, 0) && !path_live(&p2, 0), 400, errs, bads);
	pthread_join(t, NULL);
	CHECK(!path_live(&p, 0));
	CHECK(!path_live(&p2, 0));
	ROUNDS2_UNTIL(&p, &p2, 0, 2, errs, bads);
	uint64_t c1 = path_cmds(&p, 0), c2 = path_cmds(&p2, 0);
	tb("tb mpath-up 1%s%s", "", "");
	ROUNDS2_UNTIL(&p, &p2, path_live(&p, 0) && path_live(&p2, 0), 400, errs, bads);
	CHECK(path_live(&p, 0));
	CHECK(path_live(&p2, 0));
	ROUNDS2_UNTIL(&p, &p2, 0, 2, errs, bads);
	CHECK(path_cmds(&p, 0) > c1);
	CHECK(path_cmds(&p2, 0) > c2);
	CHECK_EQ(errs, 0);
	CHECK_EQ(bads, 0);
	/* Each follows its own namespace's ANA group through the events both
	 * get: ns 2 in group 3. An optimized path turns inaccessible only by an
	 * event's log read (10 s bounds: a read takes milliseconds). */
	tb("tb ana-group 3 1 optimized%s%s", "", "");
	tb("tb ana-group 3 2 optimized%s%s", "", "");
	tb("tb ns-group 3 %s%s", "2", "");
	for (int w = 0; w < 1000; w++) {
		struct nvmeof_path_info pi = {.size = sizeof(pi)};
		if (!nvmeof_mpath_path_info(p2.mp, 0, &pi) && pi.anagrpid == 3)
			break;
		usleep(10000);
	}
	uint64_t r2 = ana_reads_of(&p2, 0);
	tb("tb ana 1 inaccessible%s%s", "", "");
	CHECK(ana_becomes(&p, 0, NVMEOF_ANA_INACCESSIBLE, 10000));
	for (int w = 0; w < 1000 && ana_reads_of(&p2, 0) == r2; w++)
		usleep(10000);
	CHECK(ana_reads_of(&p2, 0) > r2);      /* ns 2's multipath read the log too */
	CHECK_EQ(ana_of(&p2, 0), NVMEOF_ANA_OPTIMIZED);
	tb("tb ana-group 3 1 inaccessible%s%s", "", "");
	CHECK(ana_becomes(&p2, 0, NVMEOF_ANA_INACCESSIBLE, 10000));
	tb("tb ana-group 3 1 optimized%s%s", "", "");
	tb("tb ana 1 optimized%s%s", "", "");
	CHECK(ana_becomes(&p, 0, NVMEOF_ANA_OPTIMIZED, 10000));
	CHECK(ana_becomes(&p2, 0, NVMEOF_ANA_OPTIMIZED, 10000));
	/* ns 1's multipath gone first: ns 2's still gets the events */
	OK(nvmeof_mpath_queue_destroy(p.mq));
	OK(nvmeof_mpath_mr_release(p.w));
	OK(nvmeof_mpath_mr_release(p.r));
	OK(nvmeof_mpath_destroy(p.mp));
	p.mq = NULL, p.w = p.r = NULL, p.mp = NULL;
	tb("tb ana-group 3 1 inaccessible%s%s", "", "");
	CHECK(ana_becomes(&p2, 0, NVMEOF_ANA_INACCESSIBLE, 10000));
out:
	tb("tb ns-group %s %s", env("NVMEOF_TB_ANAGRP"), "2");
	tb("tb ana-group 3 1 remove%s%s", "", "");
	tb("tb ana-group 3 2 remove%s%s", "", "");
	restore_target();
	p2.c[0] = p2.c[1] = NULL; /* p's to close */
	close_paths(&p2);
	close_paths(&p);
}

/* Which thread took each connection step that waits for the target (the
 * trace hook is called on the thread taking the step): the steps of a
 * connect, a reconnect attempt, a new association. */
static struct {
	pthread_t poller;
	int armed, on_poller, elsewhere; /* atomic */
	char first[200];                 /* the first such step on the poller */
} steps;
static void step_trace(void *arg, uint16_t qid, uint64_t ns, const char *msg)
{
	static const char *const waits[] = {
		"address and route resolved", "RDMA CM connected", "TCP connected", "ICResp", "connect try",
		"reconnect attempt", "re-creating the association", "admin Fabrics Connect", "Fabrics Connect try",
		"Property ", "Identify ", "Set Features"};
	(void)arg, (void)ns;
	if (!__atomic_load_n(&steps.armed, __ATOMIC_ACQUIRE))
		return;
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		if (!strncmp(msg, waits[i], strlen(waits[i]))) {
			if (!pthread_equal(pthread_self(), steps.poller))
				__atomic_fetch_add(&steps.elsewhere, 1, __ATOMIC_RELAXED);
			else if (!__atomic_fetch_add(&steps.on_poller, 1, __ATOMIC_RELAXED))
				snprintf(steps.first, sizeof(steps.first), "queue %u: %s", qid, msg);
			return;
		}
}

/* A port removed under reads: the lost path's queue is closed, its
 * commands handed back and sent again inside the polls that drive every
 * path, and its reconnect attempts run on a worker: no poll stalls and the
 * other path's completions come on. Reads only, which no quiesce time
 * holds. What the polls did is checked, not how long they took (one
 * preemption of the emulated guest's CPU outlasts any bound that tells a
 * poll from a wait): no step that waits for the target was taken on the
 * polling thread, while a reconnect attempt was taken on another. (A lost
 * connection's close never waited for the target's answer to our
 * disconnect: target_core's close_never_waits_for_the_targets_disconnect_answer
 * checks that.) */
TEST(port_removed_under_reads_no_poll_stalls_and_the_other_path_carries)
{
	struct paths p;
	struct io_state s = {0};
	uint64_t worst_us = 0, sub = 0, down_done = 0;
	memset(&steps, 0, sizeof(steps));
	steps.poller = pthread_self();
	path_trace = step_trace;
	int orc = open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 500);
	path_trace = NULL;
	MUST(orc);
	if (!p.mq)
		goto out;
	size_t bs = nvmeof_mpath_ns(p.mp)->lba_size;
	struct bg b = {{"tb mpath-down 1", NULL}, 0};
	pthread_t t;
	__atomic_store_n(&steps.armed, 1, __ATOMIC_RELEASE);
	pthread_create(&t, NULL, run_bg, &b);
	uint64_t guard = mono_us() + 60 * 1000000u; /* bounds the loop, asserts nothing */
	while (mono_us() < guard) {
		while (nvmeof_mpath_queue_inflight(p.mq) < QD) {
			uint32_t at = (uint32_t)(sub++ % (NBLK / BLKS_PER_IO)) * BLKS_PER_IO;
			int rc = nvmeof_mpath_read(p.mq, at, BLKS_PER_IO, p.r, at * bs, io_done, &s);
			if (rc == NVMEOF_EQFULL)
				break;
			if (rc && !s.errors++)
				snprintf(s.msg, sizeof(s.msg), "submit: %s", nvmeof_errmsg());
		}
		uint64_t t0 = mono_us();
		nvmeof_mpath_queue_poll(p.mq, 0);
		uint64_t dt = mono_us() - t0;
		worst_us = dt > worst_us ? dt : worst_us;
		if (!down_done && !path_live(&p, 0))
			down_done = s.done + 1;
		/* on until a reconnect attempt (500 ms after the loss) was taken */
		if (down_done && s.done >= down_done + 200 && __atomic_load_n(&steps.elsewhere, __ATOMIC_RELAXED))
			break;
	}
	pthread_join(t, NULL);
	while (nvmeof_mpath_queue_inflight(p.mq) && nvmeof_mpath_queue_wait(p.mq, 1, 1000) >= 0)
		;
	__atomic_store_n(&steps.armed, 0, __ATOMIC_RELEASE);
	printf("    longest poll across the loss: %.1f ms; %u reads; steps that wait for the target: "
	       "%d on the polling thread, %d on others\n", worst_us / 1000.0, s.done, steps.on_poller, steps.elsewhere);
	if (s.errors)
		printf("    %s\n", s.msg);
	if (steps.on_poller)
		printf("    the first on the polling thread: %s\n", steps.first);
	CHECK(down_done != 0);
	CHECK(s.done >= down_done + 200); /* the other path carried on */
	CHECK_EQ(s.errors, 0);
	CHECK_EQ(steps.on_poller, 0);
	CHECK(steps.elsewhere > 0); /* the hook saw the reconnect's steps */
out:
	__atomic_store_n(&steps.armed, 0, __ATOMIC_RELEASE);
	restore_target();
	close_paths(&p);
}

/* Both ports gone, no reconnect: the I/O fails, naming both paths. */
TEST(both_ports_removed_fails_naming_the_paths)
{
	struct paths p;
	/* A KATO of 2 s: the writes lost with the ports fail once their hold
	 * (1 s + 2 x KATO) has passed, 5 s instead of the default's 11 s;
	 * what is checked here is the message, not the hold's length. */
	path_kato_ms = 2000;
	int rc = open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0);
	path_kato_ms = UINT32_MAX;
	MUST(rc);
	if (!p.mq)
		goto out;
	tb("tb mpath-down 1%s%s", "", "");
	tb("tb mpath-down 2%s%s", "", "");
	uint32_t bad, errs = 0;
	char m[512] = "";
	for (int k = 0; k < 50 && !errs; k++)
		errs = round_trip(&p, 0, 3, &bad, m, sizeof(m));
	CHECK(errs > 0);
	printf("    %s\n", m);
	CHECK(strstr(m, "no usable path"));
	CHECK(strstr(m, env("NVMEOF_TB_ADDR")));
	CHECK(strstr(m, env("NVMEOF_TB_ADDR2")));
out:
	restore_target();
	close_paths(&p);
}

/* Every path in ANA Transition past ANATT: the command fails, saying so
 * (each path's time in Transition against ANATT), and not before ANATT. */
TEST(transition_past_anatt_fails_clearly_after_anatt)
{
	struct paths p;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	if (!p.mq)
		goto out;
	struct nvmeof_ana_caps a = {.size = sizeof(a)};
	MUST(nvmeof_ctrl_ana_caps(p.c[0], &a));
	uint64_t t0 = mono_us();
	tb("tb ana 1 change%s%s", "", "");
	tb("tb ana 2 change%s%s", "", "");
	uint32_t bad, errs = 0;
	char m[512] = "";
	for (int k = 0; k < 100 && !errs; k++)
		errs = round_trip(&p, 0, 3, &bad, m, sizeof(m));
	uint64_t ms = (mono_us() - t0) / 1000;
	CHECK(errs > 0);
	printf("    after %llu ms (ANATT %u s): %s\n", (unsigned long long)ms, a.anatt, m);
	CHECK(strstr(m, "in ANA Transition for") && strstr(m, "past ANATT"));
	CHECK(strstr(m, env("NVMEOF_TB_ADDR")) && strstr(m, env("NVMEOF_TB_ADDR2")));
	CHECK(ms >= a.anatt * 1000ull); /* the host learnt of the Transition after t0 */
out:
	restore_target();
	close_paths(&p);
}

TEST(paths_to_two_subsystems_refused)
{
	struct nvmeof_ctrl *c[2] = {NULL, NULL};
	struct nvmeof_ctrl_opts o;
	MUST(connect_path(0, env("NVMEOF_TB_NQN_M"), 0, &c[0]));
	nvmeof_ctrl_opts_init(&o);
	o.traddr = env("NVMEOF_TB_ADDR");
	o.trsvcid = env("NVMEOF_TB_PORT");
	o.subnqn = env("NVMEOF_TB_NQN_A");
	MUST(nvmeof_ctrl_connect(&o, &c[1]));
	struct nvmeof_mpath_opts mo;
	nvmeof_mpath_opts_init(&mo);
	mo.nsid = 1;
	struct nvmeof_mpath *mp = NULL;
	if (c[0] && c[1]) {
		CHECK_EQ(nvmeof_mpath_create(c, 2, &mo, &mp), (unsigned long long)NVMEOF_EINVAL);
		printf("    %s\n", nvmeof_errmsg());
		CHECK(strstr(nvmeof_errmsg(), "not one subsystem"));
		CHECK(!mp);
		/* the controllers are untouched: events can still be enabled */
		MUST(nvmeof_ctrl_events(c[0], NULL, NULL));
	}
out:
	for (int i = 0; i < 2; i++)
		if (c[i])
			nvmeof_ctrl_close(c[i]);
}

/* Two threads making a multipath to the same namespace over the same
 * controllers at once (fio jobs initialising in parallel): one gets the
 * controllers' events, the other a clear refusal; never both, which left the first one's event
 * thread running after the second took its place. */
struct race {
	struct nvmeof_ctrl **c;
	pthread_barrier_t *go;
	struct nvmeof_mpath *mp;
	int rc;
	char msg[512];
};
static void *race_main(void *arg)
{
	struct race *r = arg;
	struct nvmeof_mpath_opts mo;
	nvmeof_mpath_opts_init(&mo);
	mo.nsid = 1;
	pthread_barrier_wait(r->go);
	r->rc = nvmeof_mpath_create(r->c, 2, &mo, &r->mp);
	snprintf(r->msg, sizeof(r->msg), "%s", r->rc ? nvmeof_errmsg() : "");
	return NULL;
}

TEST(two_multipaths_at_once_one_is_made_the_other_refused_busy)
{
	int both = 0, one = 0;
	for (int round = 0; round < 8; round++) {
		struct nvmeof_ctrl *c[2] = {NULL, NULL};
		MUST(connect_path(0, env("NVMEOF_TB_NQN_M"), 0, &c[0]));
		MUST(connect_path(1, env("NVMEOF_TB_NQN_M"), 0, &c[1]));
		pthread_barrier_t go;
		pthread_barrier_init(&go, NULL, 2);
		struct race r[2] = {{.c = c, .go = &go}, {.c = c, .go = &go}};
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, race_main, &r[i]);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&go);
		int ok = !r[0].rc + !r[1].rc;
		both += ok == 2;
		one += ok == 1;
		for (int i = 0; i < 2; i++)
			if (r[i].rc) {
				CHECK_EQ(r[i].rc, NVMEOF_EBUSY);
				if (round == 0)
					printf("    the other: %s\n", r[i].msg);
			}
		for (int i = 0; i < 2; i++)
			if (r[i].mp)
				CHECK_EQ(nvmeof_mpath_destroy(r[i].mp), 0);
	out:
		for (int i = 0; i < 2; i++)
			if (c[i])
				CHECK_EQ(nvmeof_ctrl_close(c[i]), 0);
	}
	printf("    8 rounds: %d with one multipath, %d with two\n", one, both);
	CHECK_EQ(both, 0);
	CHECK_EQ(one, 8);
}

/* The namespace moves to another ANA group while attached, a group
 * inaccessible through path 1 and optimized through path 2 (a storage
 * array moving a volume between controllers does this). The host follows
 * the namespace by its ID in the log, as the kernel does, not by the group
 * it was first seen in: I/O goes through path 2 only, without an error. */
TEST(namespace_moved_to_another_ana_group_is_followed)
{
	struct paths p;
	uint32_t errs = 0, bads = 0;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	if (!p.mq)
		goto out;
	tb("tb ana-group 3 1 inaccessible%s%s", "", "");
	tb("tb ana-group 3 2 optimized%s%s", "", "");
	tb("tb ns-group 3%s%s", "", "");
	ROUNDS_UNTIL(&p, ana_of(&p, 0) == NVMEOF_ANA_INACCESSIBLE, 200, errs, bads);
	uint64_t c0 = path_cmds(&p, 0), c1 = path_cmds(&p, 1);
	ROUNDS_UNTIL(&p, 0, 4, errs, bads);
	for (uint32_t i = 0; i < 2; i++) {
		struct nvmeof_path_info pi = {.size = sizeof(pi)};
		MUST(nvmeof_mpath_path_info(p.mp, i, &pi));
		CHECK_EQ(pi.anagrpid, 3);
		CHECK_EQ(pi.ana_state, i ? NVMEOF_ANA_OPTIMIZED : NVMEOF_ANA_INACCESSIBLE);
	}
	CHECK_EQ(path_cmds(&p, 0), c0);          /* nothing more on the inaccessible path */
	CHECK(path_cmds(&p, 1) > c1);
	CHECK_EQ(errs, 0);
	CHECK_EQ(bads, 0);
out:
	tb("tb ns-group %s%s", env("NVMEOF_TB_ANAGRP"), "");
	tb("tb ana-group 3 1 remove%s%s", "", "");
	tb("tb ana-group 3 2 remove%s%s", "", "");
	restore_target();
	close_paths(&p);
}

struct refresher { struct nvmeof_mpath *mp; int stop; /* atomic */ uint32_t calls, errors; char msg[256]; };
static void *refresh_loop(void *arg)
{
	struct refresher *r = arg;
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED) && r->calls < 100000) {
		if (nvmeof_mpath_refresh(r->mp) && !r->errors++)
			snprintf(r->msg, sizeof(r->msg), "%s", nvmeof_errmsg());
		r->calls++;
	}
	return NULL;
}

/* nvmeof_mpath_refresh from the user's thread while the paths' refresh
 * threads read the logs that ANA change events ask for: each path's log
 * buffer is read and parsed by one thread at a time (build/tsan shows a
 * race otherwise), and the states still follow the target. */
TEST(refresh_from_a_thread_while_events_arrive)
{
	struct paths p;
	uint32_t errs = 0, bads = 0;
	struct refresher r = {0};
	pthread_t t;
	bool started = false;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	if (!p.mq)
		goto out;
	r.mp = p.mp;
	started = !pthread_create(&t, NULL, refresh_loop, &r);
	CHECK(started);
	for (int i = 0; i < 4; i++) {
		tb("tb ana 2 non-optimized%s%s", "", "");
		ROUNDS_UNTIL(&p, ana_of(&p, 1) == NVMEOF_ANA_NONOPTIMIZED, 200, errs, bads);
		CHECK_EQ(ana_of(&p, 1), NVMEOF_ANA_NONOPTIMIZED);
		tb("tb ana 2 optimized%s%s", "", "");
		ROUNDS_UNTIL(&p, ana_of(&p, 1) == NVMEOF_ANA_OPTIMIZED, 200, errs, bads);
		CHECK_EQ(ana_of(&p, 1), NVMEOF_ANA_OPTIMIZED);
	}
	CHECK_EQ(errs, 0);
	CHECK_EQ(bads, 0);
out:
	if (started) {
		__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
		pthread_join(t, NULL);
		printf("    %u refreshes from the user's thread\n", r.calls);
		if (r.errors)
			fprintf(stderr, "    refresh: %s\n", r.msg);
		CHECK_EQ(r.errors, 0);
	}
	restore_target();
	close_paths(&p);
}

/* Path 1's controller keeps its admin queue busy (a re-association holds
 * it for its connect timeout; here the test holds its lock) while path 1
 * owes a log read (its I/O met Inaccessible) and path 2's group changes:
 * path 2's update must not wait for path 1's controller. */
TEST(a_busy_controller_delays_no_other_paths_ana_update)
{
	struct paths p;
	uint32_t errs = 0, bads = 0;
	bool held = false;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	if (!p.mq)
		goto out;
	pthread_mutex_lock(ctrl_admin_lock(p.c[0]));
	held = true;
	tb("tb ana 1 inaccessible%s%s", "", "");
	/* path 1's commands meet the status: its state, and a log read owed */
	ROUNDS_UNTIL(&p, ana_of(&p, 0) == NVMEOF_ANA_INACCESSIBLE, 100, errs, bads);
	CHECK_EQ(ana_of(&p, 0), NVMEOF_ANA_INACCESSIBLE);
	tb("tb ana 2 non-optimized%s%s", "", "");
	ROUNDS_UNTIL(&p, ana_of(&p, 1) == NVMEOF_ANA_NONOPTIMIZED, 60, errs, bads);
	CHECK_EQ(ana_of(&p, 1), NVMEOF_ANA_NONOPTIMIZED);
	pthread_mutex_unlock(ctrl_admin_lock(p.c[0]));
	held = false;
	CHECK_EQ(errs, 0);
	CHECK_EQ(bads, 0);
out:
	if (held)
		pthread_mutex_unlock(ctrl_admin_lock(p.c[0]));
	restore_target();
	close_paths(&p);
}

/* A path's port goes and comes back: the new association has a new
 * CNTLID (other controllers take the old one meanwhile: nvmet hands out
 * the lowest free one, so those it gives first stay open until one gets
 * the old CNTLID), and the path's information says the new one. */
TEST(path_info_follows_a_reassociation)
{
	struct paths p;
	uint32_t errs = 0, bads = 0;
	struct nvmeof_ctrl *third = NULL, *held[8] = {0};
	int nheld = 0;
	struct nvmeof_ctrl_info ci;
	struct nvmeof_path_info pi = {.size = sizeof(pi)};
	/* A KATO of 2 s: the rounds' writes lost with the port wait a hold of
	 * 5 s (1 s + 2 x KATO) instead of the default's 11 s before they go
	 * out on path 2; what is checked here is the path's information after
	 * the re-association, not the hold. */
	path_kato_ms = 2000;
	int rc = open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 500);
	path_kato_ms = UINT32_MAX;
	MUST(rc);
	if (!p.mq)
		goto out;
	MUST(nvmeof_mpath_path_info(p.mp, 0, &pi));
	uint16_t before = pi.cntlid;
	tb("tb mpath-down 1%s%s", "", "");
	struct nvmeof_path_stats st = {.size = sizeof(st)};
	ROUNDS_UNTIL(&p, (nvmeof_mpath_queue_path_stats(p.mq, 0, &st), !st.live), 400, errs, bads);
	CHECK(!st.live);
	/* a third controller takes the old CNTLID once the target has freed
	 * it (nvmet frees it when the old controller's queues are gone) */
	for (int k = 0; k < 100; k++) {
		MUST(connect_path(1, env("NVMEOF_TB_NQN_M"), 0, &third));
		MUST(nvmeof_ctrl_get_info(third, &ci));
		if (ci.cntlid == before)
			break;
		if (nheld < 8) {
			held[nheld++] = third; /* a lower free CNTLID: keep it taken */
		} else {
			nvmeof_ctrl_close(third);
			ROUNDS_UNTIL(&p, 0, 1, errs, bads);
		}
		third = NULL;
	}
	CHECK(third != NULL);
	tb("tb mpath-up 1%s%s", "", "");
	ROUNDS_UNTIL(&p, (nvmeof_mpath_queue_path_stats(p.mq, 0, &st), st.live), 400, errs, bads);
	CHECK(st.live);
	MUST(nvmeof_ctrl_get_info(p.c[0], &ci));
	/* the path's facts are re-read with its next log read: an event, a
	 * status, or the user's refresh */
	MUST(nvmeof_mpath_refresh(p.mp));
	MUST(nvmeof_mpath_path_info(p.mp, 0, &pi));
	printf("    CNTLID %u before, %u after (controller %u)\n", before, pi.cntlid, ci.cntlid);
	CHECK(ci.cntlid != before);
	CHECK_EQ(pi.cntlid, ci.cntlid);
	CHECK_EQ(errs, 0);
	CHECK_EQ(bads, 0);
out:
	if (third)
		nvmeof_ctrl_close(third);
	while (nheld > 0)
		nvmeof_ctrl_close(held[--nheld]);
	restore_target();
	close_paths(&p);
}

/* A change notice the host never gets (here path 1's controller is told
 * not to send ANA notices; a target may mask or lose one): path 1 goes
 * Inaccessible (its I/O says so), then back to Optimized with no notice
 * and no I/O to report it. The host re-reads an inaccessible path's log
 * now and then, so the path comes back; before, it stayed out for good. */
TEST(inaccessible_path_returns_without_a_notice)
{
	struct paths p;
	uint32_t errs = 0, bads = 0;
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_ctrl_info ci;
	MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	if (!p.mq)
		goto out;
	MUST(nvmeof_ctrl_get_info(p.c[0], &ci));
	nvme_sqe_set_features(sqe, 0, NVME_FEAT_ASYNC_EVENT, nvme_aec_cdw11(ci.oaes) & ~(1u << 11));
	pthread_mutex_lock(ctrl_admin_lock(p.c[0]));
	int rc = q_exec(ctrl_admin(p.c[0]), sqe, 0, 10000, NULL);
	pthread_mutex_unlock(ctrl_admin_lock(p.c[0]));
	MUST(rc);
	tb("tb ana 1 inaccessible%s%s", "", "");
	ROUNDS_UNTIL(&p, ana_of(&p, 0) == NVMEOF_ANA_INACCESSIBLE, 200, errs, bads);
	CHECK_EQ(ana_of(&p, 0), NVMEOF_ANA_INACCESSIBLE);
	tb("tb ana 1 optimized%s%s", "", "");
	/* bounded by rounds: many times the 2 s between re-reads at the
	 * test bed's pace */
	ROUNDS_UNTIL(&p, ana_of(&p, 0) == NVMEOF_ANA_OPTIMIZED, 1000, errs, bads);
	CHECK_EQ(ana_of(&p, 0), NVMEOF_ANA_OPTIMIZED);
	uint64_t c0 = path_cmds(&p, 0);
	ROUNDS_UNTIL(&p, 0, 2, errs, bads);
	CHECK(path_cmds(&p, 0) > c0);            /* it carries again */
	CHECK_EQ(errs, 0);
	CHECK_EQ(bads, 0);
out:
	restore_target();
	close_paths(&p);
}

/* The first Asynchronous Event Request cannot be sent when the multipath
 * attaches to the controller's events (the test's fault: as if the admin
 * queue had no slot). The multipath is made anyway, the event thread sends
 * the request on its next tick, and an ANA change reaches the multipath:
 * an optimized path turns inaccessible only by the event's log read. */
TEST(events_come_when_the_first_event_request_could_not_be_sent)
{
	struct paths p;
	memset(&p, 0, sizeof(p));
	for (int i = 0; i < 2; i++)
		MUST(connect_path(i, env("NVMEOF_TB_NQN_M"), 0, &p.c[i]));
	__atomic_store_n(&aer_fault_submits, 1, __ATOMIC_RELAXED);
	int rc = open_ns(&p, 1, NVMEOF_IOPOLICY_ROUND_ROBIN);
	/* the fault was used: one event request's submission failed */
	CHECK_EQ(__atomic_exchange_n(&aer_fault_submits, 0, __ATOMIC_RELAXED), 0);
	if (rc) {
		printf("    first create: %s\n", nvmeof_errmsg());
		check_failed_in_test = 1;
		/* a retry of the same namespace must still work */
		struct paths q = p;
		q.mp = NULL;
		q.w = q.r = NULL;
		q.mq = NULL;
		if ((rc = open_ns(&q, 1, NVMEOF_IOPOLICY_ROUND_ROBIN)))
			printf("    retry: %s\n", nvmeof_errmsg());
		MUST(rc);
		p = q;
	}
	tb("tb ana 1 inaccessible%s%s", "", "");
	/* 10 s: an event's read takes milliseconds; none would leave it optimized */
	CHECK(ana_becomes(&p, 0, NVMEOF_ANA_INACCESSIBLE, 10000));
	CHECK_EQ(ana_of(&p, 1), NVMEOF_ANA_OPTIMIZED);
out:
	__atomic_store_n(&aer_fault_submits, 0, __ATOMIC_RELAXED);
	restore_target();
	close_paths(&p);
}

struct slow_cb { int started, release, finished; /* atomic */ };
/* Held until the test releases it (at most 60 s): a destroy that waited
 * for it would return only after it finished. */
static void slow_event(void *arg, const struct nvmeof_event *ev)
{
	struct slow_cb *s = arg;
	(void)ev;
	if (__atomic_exchange_n(&s->started, 1, __ATOMIC_ACQ_REL))
		return; /* the first event's call only */
	for (int t = 0; t < 6000 && !__atomic_load_n(&s->release, __ATOMIC_ACQUIRE); t++)
		usleep(10000);
	__atomic_store_n(&s->finished, 1, __ATOMIC_RELEASE);
}

/* Two namespaces' multipaths on the same controllers; the first one's
 * event callback is held. Destroying the second meanwhile does not wait
 * for the first one's callback, only for its own: the order is checked,
 * not the time (the destroy returns while the callback is still held). */
TEST(destroying_one_multipath_waits_for_no_other_ones_event_callback)
{
	struct paths p, p2;
	struct slow_cb s = {0};
	memset(&p, 0, sizeof(p));
	memset(&p2, 0, sizeof(p2));
	for (int i = 0; i < 2; i++)
		MUST(connect_path(i, env("NVMEOF_TB_NQN_M"), 0, &p.c[i]));
	struct nvmeof_mpath_opts mo;
	nvmeof_mpath_opts_init(&mo);
	mo.nsid = 1;
	mo.event_cb = slow_event;
	mo.event_arg = &s;
	MUST(nvmeof_mpath_create(p.c, 2, &mo, &p.mp));
	nvmeof_mpath_opts_init(&mo);
	mo.nsid = 2;
	MUST(nvmeof_mpath_create(p.c, 2, &mo, &p2.mp));
	tb("tb ana 1 inaccessible%s%s", "", "");
	for (int t = 0; t < 1000 && !__atomic_load_n(&s.started, __ATOMIC_ACQUIRE); t++)
		usleep(10000);
	CHECK(__atomic_load_n(&s.started, __ATOMIC_ACQUIRE));
	uint64_t t0 = nvmeof_now_ms();
	MUST(nvmeof_mpath_destroy(p2.mp));
	p2.mp = NULL;
	int finished = __atomic_load_n(&s.finished, __ATOMIC_ACQUIRE);
	printf("    destroy of the other multipath took %llu ms, the held callback %s\n",
	       (unsigned long long)(nvmeof_now_ms() - t0), finished ? "finished first" : "still held");
	CHECK(!finished);
out:
	__atomic_store_n(&s.release, 1, __ATOMIC_RELEASE);
	restore_target();
	if (p2.mp)
		OK(nvmeof_mpath_destroy(p2.mp));
	close_paths(&p);
}

struct destroyer { struct nvmeof_mpath *victim; int done; /* atomic */ int rc; uint64_t took_ms; char msg[256]; };
static void destroy_other(void *arg, const struct nvmeof_event *ev)
{
	struct destroyer *d = arg;
	(void)ev;
	struct nvmeof_mpath *victim = __atomic_load_n(&d->victim, __ATOMIC_ACQUIRE); /* made on the main thread */
	if (__atomic_load_n(&d->done, __ATOMIC_ACQUIRE) || !victim)
		return;
	uint64_t t0 = nvmeof_now_ms();
	d->rc = nvmeof_mpath_destroy(victim);
	d->took_ms = nvmeof_now_ms() - t0;
	snprintf(d->msg, sizeof(d->msg), "%s", d->rc ? nvmeof_errmsg() : "done"); /* the message is per thread */
	__atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
}

/* An event callback, on the event thread, destroys another namespace's
 * multipath on the same controllers: the destroy does not wait for the
 * round of callbacks it is itself part of. */
TEST(an_event_callback_destroys_another_multipath_at_once)
{
	struct paths p;
	struct nvmeof_mpath *mp2 = NULL;
	struct destroyer d = {0};
	memset(&p, 0, sizeof(p));
	for (int i = 0; i < 2; i++)
		MUST(connect_path(i, env("NVMEOF_TB_NQN_M"), 0, &p.c[i]));
	struct nvmeof_mpath_opts mo;
	nvmeof_mpath_opts_init(&mo);
	mo.nsid = 1;
	mo.event_cb = destroy_other;
	mo.event_arg = &d;
	MUST(nvmeof_mpath_create(p.c, 2, &mo, &p.mp));
	nvmeof_mpath_opts_init(&mo);
	mo.nsid = 2;
	MUST(nvmeof_mpath_create(p.c, 2, &mo, &mp2));
	__atomic_store_n(&d.victim, mp2, __ATOMIC_RELEASE);
	tb("tb ana 1 inaccessible%s%s", "", "");
	/* 40 s: past the destroy's own 30 s limit on a callback, so a destroy
	 * that waited for this round shows as such, not as a lost event */
	for (int t = 0; t < 4000 && !__atomic_load_n(&d.done, __ATOMIC_ACQUIRE); t++)
		usleep(10000);
	CHECK(__atomic_load_n(&d.done, __ATOMIC_ACQUIRE));
	if (__atomic_load_n(&d.done, __ATOMIC_ACQUIRE)) {
		mp2 = NULL;
		printf("    destroy from the event callback: %s in %llu ms\n", d.msg,
		       (unsigned long long)d.took_ms);
		CHECK_EQ(d.rc, 0);
		/* 5 s: a destroy is milliseconds; waiting for this round took 30 s */
		CHECK(d.took_ms < 5000);
	}
out:
	restore_target();
	if (mp2 && !__atomic_load_n(&d.done, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&d.done, 1, __ATOMIC_RELEASE);
		OK(nvmeof_mpath_destroy(mp2));
	}
	close_paths(&p);
}

static bool admin_up(struct nvmeof_ctrl *c)
{
	pthread_mutex_lock(ctrl_admin_lock(c));
	bool up = q_connected(ctrl_admin(c));
	pthread_mutex_unlock(ctrl_admin_lock(c));
	return up;
}

/* Losing one I/O queue ends its controller's association, as the kernel
 * host's error recovery does: Keep Alive stops at once (the controller's
 * KATO then runs out, so that it stops executing what the lost queue had
 * sent: the term the hold of a lost write counts on) and the admin
 * queue's connection goes down. Without a reconnect the controller is dead
 * (its health says why); with one, a new association comes after the
 * delay, keep-alive resumes and the path carries I/O again. Meanwhile the
 * other path carries the I/O. Counts, not times: KATO 1 s sends a Keep
 * Alive every 500 ms, so the 2 s watched would see about 4 more had it
 * gone on (one answered late may still count). */
static void io_loss_fences(uint32_t reconnect_ms)
{
	struct paths p;
	path_kato_ms = 1000;
	int rc = open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, reconnect_ms);
	path_kato_ms = UINT32_MAX;
	MUST(rc);
	uint64_t t0 = mono_us();
	while (nvmeof_ctrl_keep_alives(p.c[1]) < 2 && mono_us() - t0 < 10000000)
		usleep(50000);
	CHECK(nvmeof_ctrl_keep_alives(p.c[1]) >= 2); /* it runs before the loss */
	/* a second queue of each path: path 2's is on the association the
	 * loss ends, and must leave it too, reconnect or not (its commands
	 * would otherwise keep the controller's KATO timer satisfied) */
	struct nvmeof_mpath_queue *mq2 = NULL;
	struct nvmeof_queue_opts qo2;
	nvmeof_queue_opts_init(&qo2);
	qo2.depth = QD;
	MUST(nvmeof_mpath_queue_create(p.mp, &qo2, &mq2));
	MUST(nvmeof_mpath_queue_path_disconnect(p.mq, 1));
	uint64_t t_loss = mono_us();
	nvmeof_mpath_queue_poll(p.mq, 0); /* takes the loss */
	struct nvmeof_path_stats st2 = {.size = sizeof(st2)};
	t0 = mono_us();
	do {
		nvmeof_mpath_queue_poll(mq2, 0);
		nvmeof_mpath_queue_path_stats(mq2, 1, &st2);
	} while (st2.live && mono_us() - t0 < 2000000 && !usleep(10000));
	printf("    the other queue of path 2 after the loss: %s\n", st2.live ? "still live" : "left the association");
	CHECK(!st2.live);
	nvmeof_mpath_queue_destroy(mq2);
	uint64_t ka = nvmeof_ctrl_keep_alives(p.c[1]);
	t0 = mono_us();
	while (admin_up(p.c[1]) && mono_us() - t0 < 2000000)
		usleep(10000);
	CHECK(!admin_up(p.c[1]));
	char msg[512];
	CHECK(nvmeof_ctrl_health(p.c[1], msg, sizeof(msg)) != 0);
	printf("    path 2's controller after its I/O queue's loss: %s\n", msg);
	CHECK(strstr(msg, "I/O queue") != NULL && strstr(msg, "lost its connection") != NULL);
	struct io_state st = {0};
	t0 = mono_us();
	while (mono_us() - t0 < 2000000) { /* the other path carries meanwhile */
		MUST(nvmeof_mpath_read(p.mq, 0, NBLK, p.r, 0, io_done, &st));
		CHECK_EQ(nvmeof_mpath_queue_wait(p.mq, 1, 10000), 1);
		usleep(100000);
	}
	CHECK_EQ(st.errors, 0);
	uint64_t ka2 = nvmeof_ctrl_keep_alives(p.c[1]);
	printf("    Keep Alives in the 2 s after the loss: %llu\n", (unsigned long long)(ka2 - ka));
	CHECK(ka2 <= ka + 1);
	if (reconnect_ms) { /* a new association, keep-alive again, and the path back */
		t0 = mono_us();
		while ((nvmeof_ctrl_health(p.c[1], NULL, 0) || nvmeof_ctrl_keep_alives(p.c[1]) < ka2 + 2) &&
		       mono_us() - t0 < 20000000) {
			nvmeof_mpath_queue_poll(p.mq, 0);
			usleep(20000);
		}
		CHECK_EQ(nvmeof_ctrl_health(p.c[1], NULL, 0), 0);
		CHECK(nvmeof_ctrl_keep_alives(p.c[1]) >= ka2 + 2);
		CHECK(admin_up(p.c[1]));
		uint64_t back_ms = (mono_us() - t_loss) / 1000;
		printf("    path 2's controller back %llu ms after the loss (reconnect delay %u ms)\n",
		       (unsigned long long)back_ms, reconnect_ms);
		CHECK(back_ms >= reconnect_ms);
		/* and its path carries I/O again (round robin: every other read) */
		t0 = mono_us();
		while (!path_live(&p, 1) && mono_us() - t0 < 10000000) {
			nvmeof_mpath_queue_poll(p.mq, 0);
			usleep(20000);
		}
		CHECK(path_live(&p, 1));
		uint64_t c1 = path_cmds(&p, 1);
		for (int i = 0; i < 4; i++) {
			MUST(nvmeof_mpath_read(p.mq, 0, NBLK, p.r, 0, io_done, &st));
			CHECK_EQ(nvmeof_mpath_queue_wait(p.mq, 1, 10000), 1);
		}
		CHECK(path_cmds(&p, 1) > c1);
		CHECK_EQ(st.errors, 0);
	}
out:
	close_paths(&p);
}

TEST(an_io_queues_loss_stops_keep_alive_and_drops_the_admin_queue) { io_loss_fences(0); }
TEST(an_io_queues_loss_recreates_the_association_after_the_delay) { io_loss_fences(3000); }

/* A path lost while completion callbacks poll the multipath queue and
 * try to destroy it (refused), under versioned writes (one at a time per
 * unit, NBLK / BLKS_PER_IO units, both paths): path 1's port removed; path
 * 1 cut by one of those callbacks (the host's loss: its writes on the wire
 * are held, then re-sent while callbacks poll); the queue destroyed as
 * soon as the port's loss is seen, the callbacks it runs polling it. Every
 * callback runs once, nothing stays in flight, nothing fails but what the
 * destroy failed, and every unit reads back its newest acknowledged
 * version (or, for a write the destroy failed, that one: it may have
 * landed). */
#define CBL_OPS 20000
#define CBL_UNITS (NBLK / BLKS_PER_IO)
struct cbl_op { struct cbl *s; uint32_t unit, ver, calls; };
struct cbl {
	struct nvmeof_mpath_queue *mq;
	struct cbl_op *ops;
	uint32_t nops, done, errors, twice, poll_errors, destroy_ok, in_destroy;
	uint32_t cut_at;                             /* the callback of this completion cuts path 1 (0: none) */
	uint32_t acked[CBL_UNITS], doubt[CBL_UNITS]; /* newest acknowledged version; 0: none; an in-doubt one */
	bool busy[CBL_UNITS];
	char msg[256];
};

static void cbl_fill(uint8_t *b, size_t n, uint32_t unit, uint32_t ver) { fill(b, n, (uint64_t)unit << 32 | ver); }

static void cbl_done(void *arg, const struct nvmeof_cpl *cpl)
{
	struct cbl_op *o = arg;
	struct cbl *s = o->s;
	if (o->calls++) {
		s->twice++;
		return;
	}
	s->done++;
	s->busy[o->unit] = false;
	if (!cpl->err) {
		s->acked[o->unit] = o->ver;
	} else {
		if (!s->errors++)
			snprintf(s->msg, sizeof(s->msg), "unit %u version %u: %s", o->unit, o->ver, nvmeof_errmsg());
		s->doubt[o->unit] = o->ver;
	}
	if (s->done == s->cut_at) /* a loss placed while a callback runs */
		nvmeof_mpath_queue_path_disconnect(s->mq, 0);
	/* a nested poll, and a destroy that must be refused */
	int rc = nvmeof_mpath_queue_poll(s->mq, 4);
	if (rc < 0 && !(s->in_destroy && rc == NVMEOF_ECLOSED))
		s->poll_errors++;
	if (nvmeof_mpath_queue_destroy(s->mq) != NVMEOF_EBUSY)
		s->destroy_ok++;
}

/* Submits versioned writes to free units until QD are in flight. */
static void cbl_submit(struct paths *p, struct cbl *s, size_t bs)
{
	uint8_t *w = nvmeof_mpath_mr_addr(p->w);
	for (uint32_t u = 0; u < CBL_UNITS && s->nops < CBL_OPS && nvmeof_mpath_queue_inflight(p->mq) < QD; u++) {
		uint32_t k = (s->nops + u) % CBL_UNITS;
		if (s->busy[k] || s->doubt[k])
			continue;
		struct cbl_op *o = &s->ops[s->nops];
		*o = (struct cbl_op){s, k, s->acked[k] + 1, 0};
		size_t off = (size_t)k * BLKS_PER_IO * bs;
		cbl_fill(w + off, BLKS_PER_IO * bs, k, o->ver);
		int rc = nvmeof_mpath_write(p->mq, (uint64_t)k * BLKS_PER_IO, BLKS_PER_IO, p->w, off, 0, cbl_done, o);
		if (rc == NVMEOF_EQFULL)
			break;
		if (rc) {
			if (!s->errors++)
				snprintf(s->msg, sizeof(s->msg), "submit: %s", nvmeof_errmsg());
			break;
		}
		s->busy[k] = true;
		s->nops++;
	}
}

enum cbl_mode { CBL_PORT, CBL_CUT_IN_CB, CBL_DESTROY };
static void loss_under_polling_callbacks(enum cbl_mode mode)
{
	bool destroy = mode == CBL_DESTROY;
	struct paths p;
	struct cbl s = {0};
	path_kato_ms = 0; /* the hold is quiesce_time alone (1 s), not two keep-alive timeouts more */
	int rc = open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0);
	path_kato_ms = UINT32_MAX;
	MUST(rc);
	s.mq = p.mq;
	s.ops = calloc(CBL_OPS, sizeof(*s.ops));
	size_t bs = nvmeof_mpath_ns(p.mp)->lba_size;
	/* the loss once I/O flows on both paths: 200 writes in */
	struct bg b = {{"tb mpath-down 1", NULL}, 0};
	pthread_t t;
	bool bg_started = false;
	if (mode == CBL_CUT_IN_CB)
		s.cut_at = 200;
	uint32_t lost_at = 0, held_seen = 0, waited = 0;
	uint64_t guard = mono_us() + 60 * 1000000u; /* bounds the loop, asserts nothing */
	while (mono_us() < guard && s.nops < CBL_OPS) {
		cbl_submit(&p, &s, bs);
		/* the destroy comes as soon as the loss is seen, with writes
		 * just sent on path 2 and path 1's held or re-sent */
		if (destroy && lost_at) {
			nvmeof_mpath_queue_commit(p.mq);
			break;
		}
		int got = nvmeof_mpath_queue_wait(p.mq, 1, 1000);
		if (got < 0)
			break;
		waited += (uint32_t)got;
		if (mode != CBL_CUT_IN_CB && !bg_started && s.done >= 200)
			bg_started = !pthread_create(&t, NULL, run_bg, &b);
		if (!lost_at && !path_live(&p, 0))
			lost_at = s.done + 1;
		held_seen = (uint32_t)path_stats(&p, 0).held;
		/* the held writes (if any were on the wire) went again, through
		 * callbacks that poll, and more after */
		if (!destroy && lost_at && s.done >= lost_at + 400)
			break;
	}
	if (bg_started)
		pthread_join(t, NULL);
	uint32_t in_flight = nvmeof_mpath_queue_inflight(p.mq);
	printf("    path 1 lost after %u writes; %u held; %u in flight at the %s\n", lost_at, held_seen, in_flight,
	       destroy ? "destroy" : "end");
	CHECK(lost_at != 0);
	/* every callback so far ran in a wait (the callbacks' own polls
	 * inside it): the waits counted each, or one whose completions all
	 * came through those polls slept to its timeout (a second each) */
	CHECK_EQ(waited, s.done);
	if (destroy) {
		s.in_destroy = 1;
		MUST(nvmeof_mpath_queue_destroy(p.mq));
		p.mq = NULL;
		CHECK(in_flight != 0); /* the destroy completed something */
		/* path 1's controller died with its queue (no reconnect): read
		 * back over new controllers, both ports up */
		close_paths(&p);
		restore_target();
		MUST(open_paths(&p, NVMEOF_IOPOLICY_ROUND_ROBIN, 0));
	} else {
		if (mode == CBL_CUT_IN_CB)
			CHECK(held_seen != 0); /* the cut took writes on the wire (a port's removal may drain them first) */
		while (nvmeof_mpath_queue_inflight(p.mq) && nvmeof_mpath_queue_wait(p.mq, 1, 1000) >= 0)
			;
		CHECK_EQ(nvmeof_mpath_queue_inflight(p.mq), 0);
		/* held for the quiesce time (1 s, keep-alive off), not re-sent at once */
		if (mode == CBL_CUT_IN_CB)
			CHECK(path_stats(&p, 0).hold_max_ms >= 1000);
		CHECK_EQ(s.errors, 0);
	}
	if (s.errors)
		printf("    %u write(s) failed (in doubt), the first: %s\n", s.errors, s.msg);
	uint32_t calls = 0;
	for (uint32_t i = 0; i < s.nops; i++)
		calls += s.ops[i].calls == 1;
	CHECK_EQ(calls, s.nops); /* every callback ran, once */
	CHECK_EQ(s.twice, 0);
	CHECK_EQ(s.done, s.nops);
	CHECK_EQ(s.poll_errors, 0);
	CHECK_EQ(s.destroy_ok, 0);
	/* read back (over path 2): the newest acknowledged version, or the in-doubt one */
	uint8_t *r = nvmeof_mpath_mr_addr(p.r), want[BLKS_PER_IO * 4096];
	struct io_state rs = {0};
	MUST(nvmeof_mpath_read(p.mq, 0, NBLK, p.r, 0, io_done, &rs));
	CHECK_EQ(nvmeof_mpath_queue_wait(p.mq, 1, 10000), 1);
	CHECK_EQ(rs.errors, 0);
	uint32_t lost = 0, doubt_landed = 0;
	for (uint32_t k = 0; k < CBL_UNITS; k++) {
		size_t n = BLKS_PER_IO * bs;
		if (!s.acked[k] && !s.doubt[k])
			continue;
		cbl_fill(want, n, k, s.acked[k]);
		if (s.acked[k] && !memcmp(r + k * n, want, n))
			continue;
		cbl_fill(want, n, k, s.doubt[k]);
		if (s.doubt[k] && !memcmp(r + k * n, want, n)) {
			doubt_landed++;
			continue;
		}
		if (lost++ < 4)
			fprintf(stderr, "    unit %u: not version %u (acknowledged) nor %u (in doubt)\n", k, s.acked[k], s.doubt[k]);
	}
	printf("    %u writes, %u in doubt (%u of them landed), %u lost updates\n", s.nops, s.errors, doubt_landed, lost);
	CHECK_EQ(lost, 0);
out:
	free(s.ops);
	restore_target();
	close_paths(&p);
}
TEST(port_removed_while_callbacks_poll_loses_nothing) { loss_under_polling_callbacks(CBL_PORT); }
TEST(path_cut_from_a_callback_holds_its_writes_and_loses_nothing) { loss_under_polling_callbacks(CBL_CUT_IN_CB); }
TEST(queue_destroyed_at_a_port_loss_runs_each_callback_once_and_loses_nothing)
{
	loss_under_polling_callbacks(CBL_DESTROY);
}

int main(int argc, char **argv)
{
	static const struct test_case all[] = {
		T(two_paths_two_hcas_one_namespace), T(round_robin_alternates_with_verify),
		T(queue_depth_uses_both_with_verify), T(numa_without_nodes_keeps_one_path), T(ana_states_route_io),
		T(port_removed_and_restored_under_io), T(path2_port_removed_and_restored_under_io), T(two_namespaces_multipathed_over_the_same_controllers),
		T(port_removed_under_reads_no_poll_stalls_and_the_other_path_carries), T(both_ports_removed_fails_naming_the_paths),
		T(transition_past_anatt_fails_clearly_after_anatt), T(paths_to_two_subsystems_refused),
		T(two_multipaths_at_once_one_is_made_the_other_refused_busy), T(multipath_wait_sleeps_on_every_path),
		T(multipath_wait_sleeps_on_the_live_path_while_another_reconnects),
		T(caller_memory_on_every_path_and_one_wait_over_two_queues),
		T(batched_submissions_ring_once_per_path), T(refresh_reads_every_paths_ana_log),
		T(a_two_step_ana_swap_under_io_loses_nothing),
		T(namespace_moved_to_another_ana_group_is_followed),
		T(refresh_from_a_thread_while_events_arrive), T(a_busy_controller_delays_no_other_paths_ana_update),
		T(path_info_follows_a_reassociation), T(inaccessible_path_returns_without_a_notice),
		T(events_come_when_the_first_event_request_could_not_be_sent),
		T(destroying_one_multipath_waits_for_no_other_ones_event_callback),
		T(an_event_callback_destroys_another_multipath_at_once),
		T(an_io_queues_loss_stops_keep_alive_and_drops_the_admin_queue),
		T(an_io_queues_loss_recreates_the_association_after_the_delay),
		T(port_removed_while_callbacks_poll_loses_nothing),
		T(path_cut_from_a_callback_holds_its_writes_and_loses_nothing),
		T(queue_destroyed_at_a_port_loss_runs_each_callback_once_and_loses_nothing),
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	check_limit_each_test(); /* each test in a child, ended at its own limit */
	check_after_kill = tb_restore_target;
	return run_named_tests("target-mpath", all, sizeof(all) / sizeof(all[0]), argc, argv);
}
