/*
 * The option structs' ABI rules (nvmeof.h, "Options"): defaults, and that
 * the library reads and writes a caller's struct only within its size. The
 * structs of other "versions" are made here as byte buffers of other sizes;
 * under ASan (build/san) the heap copies of exactly the caller's size make
 * any access past it a reported overflow, and the canary bytes catch it in
 * the plain build.
 */
#include <stdalign.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "opts.h"

/* The first layout ends with these fields (the header says so). */
#define CTRL_V0 (offsetof(struct nvmeof_ctrl_opts, spin_us) + sizeof(uint32_t))
#define QUEUE_V0 (offsetof(struct nvmeof_queue_opts, group) + sizeof(void *))
#define CANARY 0xa5
#define EXTRA 32

/* Room for a struct from a "newer header", EXTRA bytes longer, and canaries. */
union big {
	struct nvmeof_ctrl_opts c;
	struct nvmeof_queue_opts q;
	alignas(max_align_t) unsigned char b[sizeof(struct nvmeof_ctrl_opts) + 2 * EXTRA];
};

static int untouched_from(const unsigned char *b, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (b[i] != CANARY)
			return 0;
	return 1;
}

static int zero_from(const unsigned char *b, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (b[i])
			return 0;
	return 1;
}

TEST(init_fills_the_documented_defaults)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_queue_opts q;
	memset(&o, CANARY, sizeof(o));
	memset(&q, CANARY, sizeof(q));
	nvmeof_ctrl_opts_init(&o);
	nvmeof_queue_opts_init(&q);
	CHECK_EQ(o.size, sizeof(o));
	CHECK(o.traddr == NULL && o.src_addr == NULL && o.subnqn == NULL && o.hostnqn == NULL &&
	      o.hostid == NULL);
	CHECK_STR(o.trsvcid, "4420");
	CHECK_EQ(o.queue_depth, 128);
	CHECK_EQ(o.num_io_queues, 64);
	CHECK_EQ(o.cmd_timeout_ms, 30000);
	CHECK_EQ(o.connect_timeout_ms, 3000);
	CHECK_EQ(o.kato_ms, 5000); /* the Linux host's NVME_DEFAULT_KATO */
	CHECK(o.trace == NULL && o.trace_arg == NULL); /* version 0.2: no trace unless asked */
	CHECK_EQ(o.ka_interval_ms, 0);
	CHECK_EQ(o.reconnect_delay_ms, 0);
	CHECK_EQ(o.ctrl_loss_tmo_ms, 60000);
	CHECK(o.in_capsule);
	CHECK_EQ(o.wait_mode, NVMEOF_WAIT_HYBRID);
	CHECK_EQ(o.spin_us, 20);
	CHECK_EQ(q.size, sizeof(q));
	CHECK_EQ(q.depth, 0);
	CHECK(!q.batch && !q.wait_mode_set);
}

TEST(init_writes_nothing_past_the_callers_size)
{
	static const size_t sizes[] = {4, 8, 20, 64, CTRL_V0, sizeof(struct nvmeof_ctrl_opts)};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		union big u;
		size_t sz = sizes[i];
		memset(u.b, CANARY, sizeof(u.b));
		nvmeof_ctrl_opts_init_sz(&u.c, sz);
		CHECK(untouched_from(u.b, sz, sizeof(u.b)));
		if (sz >= sizeof(size_t))
			CHECK_EQ(u.c.size, sz);
		else /* no room for size itself: nothing written */
			CHECK(untouched_from(u.b, 0, sizeof(u.b)));
		memset(u.b, CANARY, sizeof(u.b));
		nvmeof_queue_opts_init_sz(&u.q, sz < QUEUE_V0 ? sz : QUEUE_V0);
		CHECK(untouched_from(u.b, sz < QUEUE_V0 ? sz : QUEUE_V0, sizeof(u.b)));
	}
	/* size 0 is the first layout */
	union big u;
	memset(u.b, CANARY, sizeof(u.b));
	nvmeof_ctrl_opts_init_sz(&u.c, 0);
	CHECK(untouched_from(u.b, CTRL_V0, sizeof(u.b)));
	CHECK_EQ(u.c.spin_us, 20);
	/* exactly the first layout's bytes on the heap: ASan sees any overflow */
	unsigned char *p = malloc(CTRL_V0);
	if (p) {
		nvmeof_ctrl_opts_init_sz((struct nvmeof_ctrl_opts *)(void *)p, CTRL_V0);
		uint32_t spin;
		memcpy(&spin, p + offsetof(struct nvmeof_ctrl_opts, spin_us), sizeof(spin));
		CHECK_EQ(spin, 20);
		free(p);
	}
}

TEST(init_of_a_newer_struct_zeroes_the_fields_it_does_not_know)
{
	union big u;
	const size_t sz = sizeof(struct nvmeof_ctrl_opts) + EXTRA;
	memset(u.b, CANARY, sizeof(u.b));
	nvmeof_ctrl_opts_init_sz(&u.c, sz);
	CHECK_EQ(u.c.size, sz);
	CHECK_EQ(u.c.queue_depth, 128);
	CHECK(zero_from(u.b, sizeof(struct nvmeof_ctrl_opts), sz));
	CHECK(untouched_from(u.b, sz, sizeof(u.b)));
}

typedef int (*connect_fn)(const struct nvmeof_ctrl_opts *, struct nvmeof_ctrl **);

/* A newer header's struct, EXTRA bytes longer, its unknown bytes zero;
 * returns its size. */
static size_t newer_struct(union big *u)
{
	const size_t sz = sizeof(struct nvmeof_ctrl_opts) + EXTRA;
	memset(u->b, 0, sizeof(u->b));
	nvmeof_ctrl_opts_init_sz(&u->c, sz);
	return sz;
}

/* A caller's struct of exactly the first layout, on the heap, so that ASan
 * sees a read past it: connect fails with rc, the message naming want. */
static void connect_first_layout(connect_fn connect, const char *traddr, int rc, const char *want)
{
	struct nvmeof_ctrl_opts full;
	struct nvmeof_ctrl *c = NULL;
	nvmeof_ctrl_opts_init_sz(&full, CTRL_V0);
	full.traddr = traddr;
	unsigned char *p = malloc(CTRL_V0);
	if (!p)
		return;
	memcpy(p, &full, CTRL_V0);
	CHECK_EQ(connect((const struct nvmeof_ctrl_opts *)(void *)p, &c), rc);
	CHECK(strstr(nvmeof_errmsg(), want) != NULL);
	CHECK(c == NULL);
	free(p);
}

/* connect reads the size first: these all fail before any network step. */
TEST(connect_reads_the_callers_struct_by_its_size)
{
	union big u;
	struct nvmeof_ctrl *c = NULL;
	const size_t sz = newer_struct(&u);
	u.c.traddr = "192.0.2.1"; /* no subnqn: fails right after the size check */
	u.b[sz - 1] = 1;          /* an option of a "newer version" */
	CHECK_EQ(nvmeof_ctrl_connect(&u.c, &c), NVMEOF_ENOTSUP);
	CHECK(strstr(nvmeof_errmsg(), "newer version") != NULL);
	u.b[sz - 1] = 0;          /* all unknown bytes zero: accepted */
	CHECK_EQ(nvmeof_ctrl_connect(&u.c, &c), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "subsystem NQN missing") != NULL);
	u.c.size = 8;
	CHECK_EQ(nvmeof_ctrl_connect(&u.c, &c), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "below the smallest layout") != NULL);
	CHECK(c == NULL);

	/* Built by hand (size 0 = the first layout): its fields are read. */
	struct nvmeof_ctrl_opts h = {.traddr = "192.0.2.1", .subnqn = "nqn.2026-12.io.nvmeof:x"};
	CHECK_EQ(nvmeof_ctrl_connect(&h, &c), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "queue depth 0") != NULL);

	connect_first_layout(nvmeof_ctrl_connect, "192.0.2.1", NVMEOF_EINVAL, "subsystem NQN missing");
}

/* Discovery connect takes the same struct and must obey the same rule: it
 * fails here (no traddr) only after taking in the caller's options. */
TEST(discovery_connect_reads_the_callers_struct_by_its_size)
{
	union big u;
	struct nvmeof_ctrl *c = NULL;
	/* Accepted from a newer header. Copying only our sizeof would leave
	 * size saying more than the copy holds, and connect would read past
	 * it. */
	const size_t sz = newer_struct(&u);
	CHECK_EQ(nvmeof_discovery_connect(&u.c, &c), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "no target address") != NULL);
	u.b[sz - 1] = 1;
	CHECK_EQ(nvmeof_discovery_connect(&u.c, &c), NVMEOF_ENOTSUP);
	CHECK(strstr(nvmeof_errmsg(), "newer version") != NULL);
	CHECK(c == NULL);
	connect_first_layout(nvmeof_discovery_connect, NULL, NVMEOF_EINVAL, "no target address");
}

TEST(queue_opts_by_size)
{
	struct nvmeof_queue_opts out;
	CHECK_EQ(queue_opts_in(NULL, &out), 0);
	CHECK_EQ(out.depth, 0);
	CHECK(!out.batch && !out.wait_mode_set);

	/* what the engine and the tests build by hand */
	struct nvmeof_queue_opts h = {.depth = 4, .batch = true};
	CHECK_EQ(queue_opts_in(&h, &out), 0);
	CHECK_EQ(out.depth, 4);
	CHECK(out.batch && !out.wait_mode_set);

	union big u;
	const size_t sz = sizeof(struct nvmeof_queue_opts) + EXTRA;
	memset(u.b, 0, sizeof(u.b));
	nvmeof_queue_opts_init_sz(&u.q, sz);
	u.q.wait_mode = NVMEOF_WAIT_POLL;
	u.q.wait_mode_set = true;
	CHECK_EQ(queue_opts_in(&u.q, &out), 0);
	CHECK_EQ(out.wait_mode, NVMEOF_WAIT_POLL);
	CHECK(out.wait_mode_set);
	u.b[sizeof(struct nvmeof_queue_opts)] = 1;
	CHECK_EQ(queue_opts_in(&u.q, &out), NVMEOF_ENOTSUP);
	u.q.size = 4;
	CHECK_EQ(queue_opts_in(&u.q, &out), NVMEOF_EINVAL);

	struct nvmeof_queue_opts full;
	nvmeof_queue_opts_init_sz(&full, QUEUE_V0);
	full.depth = 9;
	unsigned char *p = malloc(QUEUE_V0);
	if (p) {
		memcpy(p, &full, QUEUE_V0);
		CHECK_EQ(queue_opts_in((const struct nvmeof_queue_opts *)(void *)p, &out), 0);
		CHECK_EQ(out.depth, 9);
		free(p);
	}
}

/* A port outside 1..65535, or not a number, is refused by name before
 * anything is resolved or sent (getaddrinfo would take 0 and wrap 99999). */
TEST(connect_refuses_ports_outside_1_to_65535)
{
	static const char *bad[] = {"0", "65536", "99999", "-1", "44x0", "", "nvme", "4420000"};
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_ctrl_opts o;
	nvmeof_ctrl_opts_init(&o);
	o.traddr = "192.0.2.1";
	o.subnqn = "nqn.2026-12.io.nvmeof:x";
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.trsvcid = bad[i];
		CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_EINVAL);
		CHECK(strstr(nvmeof_errmsg(), "expected a number from 1 to 65535") != NULL);
		CHECK(c == NULL);
	}
}

/* TLS's options are NVMe/TCP's and need TLS: each refused by name before
 * anything is resolved or sent, the one given named in the message. */
TEST(connect_refuses_tls_options_without_tls_or_tcp)
{
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_ctrl_opts o;
	nvmeof_ctrl_opts_init(&o);
	o.traddr = "192.0.2.1";
	o.subnqn = "nqn.2026-12.io.nvmeof:x";
	o.tls_keyring = ".nvme";
	CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "(tls, tls_key, tls_keyring) is NVMe/TCP's") != NULL);
	o.tls_keyring = NULL;
	o.tls_identity = 1;
	CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "tls_identity 1 without tls") != NULL);
	o.trtype = "tcp";
	CHECK_EQ(nvmeof_ctrl_connect(&o, &c), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "tls_identity 1 without tls") != NULL);
	CHECK(c == NULL);
}

/* With no RDMA device at all the failure is this host's, and says so: not
 * "target unreachable". libibverbs reads sysfs under $SYSFS_PATH, so an
 * empty one hides the devices a host may have (the variable must be set
 * before the first verbs call of the process: this test runs alone). */
static void connect_without_rdma_devices(void)
{
	char dir[] = "/tmp/nvmeof-nosysfs.XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	setenv("SYSFS_PATH", dir, 1);
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_ctrl_opts o;
	nvmeof_ctrl_opts_init(&o);
	o.traddr = "192.0.2.1";
	o.subnqn = "nqn.2026-12.io.nvmeof:x";
	int rc = nvmeof_ctrl_connect(&o, &c);
	CHECK_EQ(rc, NVMEOF_ENODEV);
	CHECK(strstr(nvmeof_errmsg(), "no RDMA device on this host") != NULL);
	CHECK_STR(nvmeof_strerror(rc), "no RDMA device");
	CHECK(c == NULL);
	unsetenv("SYSFS_PATH");
	rmdir(dir);
}
TEST(connect_without_an_rdma_device_blames_this_host)
{
	/* in a child: the library's first verbs call must see the empty sysfs */
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		connect_without_rdma_devices();
		_exit(check_failed_in_test);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A discovery log entry becomes a connect's options, or is refused before
 * anything is sent when it asks for what this library does not do: a
 * secure channel (TREQ "required", or a TLS security type), or a transport
 * other than RDMA and TCP. */
TEST(discovery_entry_to_options_refuses_tls_up_front)
{
	static const char key[] = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:";
	struct nvmeof_disc_entry e;
	struct nvmeof_ctrl_opts o;
	memset(&e, 0, sizeof(e));
	e.trtype = 3;
	e.adrfam = 1;
	e.subtype = 2;
	snprintf(e.traddr, sizeof(e.traddr), "192.0.2.1");
	snprintf(e.trsvcid, sizeof(e.trsvcid), "4420");
	snprintf(e.subnqn, sizeof(e.subnqn), "nqn.2026-12.io.nvmeof:x");
	nvmeof_ctrl_opts_init(&o);
	MUST(nvmeof_disc_entry_opts(&e, &o));
	CHECK_STR(o.trtype, "tcp");
	CHECK_STR(o.traddr, "192.0.2.1");
	CHECK_STR(o.trsvcid, "4420");
	CHECK_STR(o.subnqn, "nqn.2026-12.io.nvmeof:x");
	CHECK_EQ(o.queue_depth, 128); /* the rest as it was */
	CHECK(!o.tls);
	e.treq = 2; /* secure channel not required: fine */
	MUST(nvmeof_disc_entry_opts(&e, &o));
	CHECK(!o.tls);
	e.treq = 1; /* required, and no key: one line naming the subsystem and what to give */
	CHECK_EQ(nvmeof_disc_entry_opts(&e, &o), NVMEOF_ENOTSUP);
	CHECK(strstr(nvmeof_errmsg(), "TLS key") != NULL && strstr(nvmeof_errmsg(), "nqn.2026-12.io.nvmeof:x") != NULL);
	CHECK(!strchr(nvmeof_errmsg(), '\n'));
	e.treq = 0;
	e.tcp_sectype = 2; /* TLS 1.3, TREQ not specified: TLS needed */
	CHECK_EQ(nvmeof_disc_entry_opts(&e, &o), NVMEOF_ENOTSUP);
	CHECK(strstr(nvmeof_errmsg(), "TLS 1.3") != NULL && strstr(nvmeof_errmsg(), "TLS key") != NULL);
	/* with a key: connected with TLS, the key as given */
	o.tls_key = key;
	MUST(nvmeof_disc_entry_opts(&e, &o));
	CHECK(o.tls);
	CHECK_STR(o.tls_key, key);
	e.treq = 1;
	e.tcp_sectype = 0; /* required, with no security type named: TLS is TCP's secure channel */
	o.tls = false;
	MUST(nvmeof_disc_entry_opts(&e, &o));
	CHECK(o.tls);
	/* TLS 1.3 not required: with a key TLS, without one plain */
	e.treq = 2;
	e.tcp_sectype = 2;
	o.tls = false;
	MUST(nvmeof_disc_entry_opts(&e, &o));
	CHECK(o.tls);
	o.tls = false;
	o.tls_key = NULL;
	MUST(nvmeof_disc_entry_opts(&e, &o));
	CHECK(!o.tls);
	/* TLS 1.2: not spoken here, key or not */
	e.tcp_sectype = 1;
	o.tls_key = key;
	CHECK_EQ(nvmeof_disc_entry_opts(&e, &o), NVMEOF_ENOTSUP);
	CHECK(strstr(nvmeof_errmsg(), "TLS 1.2") != NULL);
	CHECK(!strstr(nvmeof_errmsg(), "VRLbtnN9"));
	o.tls_key = NULL;
	o.tls = false;
	/* a plain entry never turns TLS on, nor off when asked for */
	e.treq = 0;
	e.tcp_sectype = 0;
	MUST(nvmeof_disc_entry_opts(&e, &o));
	CHECK(!o.tls);
	e.trtype = 2; /* FC */
	CHECK_EQ(nvmeof_disc_entry_opts(&e, &o), NVMEOF_ENOTSUP);
	e.trtype = 1;
	MUST(nvmeof_disc_entry_opts(&e, &o));
	CHECK_STR(o.trtype, "rdma");
	e.treq = 1; /* RDMA has no secure channel here */
	o.tls_key = key;
	CHECK_EQ(nvmeof_disc_entry_opts(&e, &o), NVMEOF_ENOTSUP);
	CHECK(!o.tls);
	CHECK_EQ(nvmeof_disc_entry_opts(NULL, &o), NVMEOF_EINVAL);
out:;
}

int main(void)
{
	static const struct test_case t[] = {
		T(init_fills_the_documented_defaults),
		T(init_writes_nothing_past_the_callers_size),
		T(init_of_a_newer_struct_zeroes_the_fields_it_does_not_know),
		T(connect_reads_the_callers_struct_by_its_size),
		T(discovery_connect_reads_the_callers_struct_by_its_size),
		T(queue_opts_by_size),
		T(connect_refuses_ports_outside_1_to_65535),
		T(connect_without_an_rdma_device_blames_this_host),
		T(discovery_entry_to_options_refuses_tls_up_front),
		T(connect_refuses_tls_options_without_tls_or_tcp),
	};
	return run_tests("unit-opts", t, sizeof(t) / sizeof(t[0]));
}
