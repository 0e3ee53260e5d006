/*
 * Zoned namespaces against the real target: subsystem Z of the test bed, a
 * zoned null_blk that nvmet exports (16 zones of 1024 blocks of 4 KiB, MOR
 * 4, MAR 6, ZASL 128 KiB; tests/testbed/guest/zns-up).
 *
 *   target_zns            run every test
 *   target_zns TEST...    run the named tests
 * NVMEOF_TB_TRTYPE=tcp runs them over subsystem Z's NVMe/TCP port.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "nvmeof.h"
#include "tbenv.h"

#define ZONE 1024u  /* blocks per zone */
#define NZONES 16u
#define LBA 4096u

static void opts_z(struct nvmeof_ctrl_opts *o, const char *nqn, const char *port)
{
	nvmeof_ctrl_opts_init(o);
	o->traddr = env("NVMEOF_TB_ADDR");
	o->trsvcid = port;
	o->subnqn = nqn;
	o->cmd_timeout_ms = 10000;
	const char *t = getenv("NVMEOF_TB_TRTYPE");
	if (t && !strcmp(t, "tcp"))
		o->trtype = "tcp";
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i += 8) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		memcpy(p + i, &x, n - i < 8 ? n - i : 8);
	}
}

#define NQ 4
struct fixture {
	struct nvmeof_ctrl *c;
	struct nvmeof_queue *q[NQ];
	struct nvmeof_mr *mr;
	const struct nvmeof_ns *ns;
	struct nvmeof_zns_info zi;
};

/* Connected to subsystem Z with nq queues and 1 MiB registered, every zone
 * reset (each test starts from empty zones). */
static int setup(struct fixture *f, int nq)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_queue_opts qo;
	memset(f, 0, sizeof(*f));
	opts_z(&o, env("NVMEOF_TB_NQN_Z"), env("NVMEOF_TB_ZPORT"));
	nvmeof_queue_opts_init(&qo);
	qo.depth = 32;
	int rc = nvmeof_ctrl_connect(&o, &f->c);
	for (int i = 0; !rc && i < nq; i++)
		rc = nvmeof_queue_create(f->c, &qo, &f->q[i]);
	if (!rc)
		rc = nvmeof_mr_alloc(f->c, 1 << 20, &f->mr);
	if (!rc && !(f->ns = nvmeof_ns_get(f->c, 1)))
		rc = -1;
	if (!rc)
		rc = nvmeof_zns_info(f->c, 1, &f->zi);
	if (!rc)
		rc = nvmeof_zone_mgmt_send_sync(f->q[0], f->ns, 0, NVMEOF_ZSA_RESET, true, 0);
	if (rc) {
		fprintf(stderr, "    setup: %s\n", nvmeof_errmsg());
		check_failed_in_test = 1;
	}
	return rc;
}

static void teardown(struct fixture *f)
{
	if (f->mr)
		nvmeof_mr_release(f->mr);
	for (int i = 0; i < NQ; i++)
		if (f->q[i])
			nvmeof_queue_destroy(f->q[i]);
	if (f->c)
		CHECK_EQ(nvmeof_ctrl_close(f->c), 0);
}

/* The zone at zslba as the controller reports it. */
static struct nvmeof_zone zone_at(struct fixture *f, uint64_t zslba)
{
	struct nvmeof_zone z = {0};
	uint32_t n = 0;
	if (nvmeof_zone_report(f->q[0], f->ns, zslba, NVMEOF_ZRASF_ALL, false, &z, 1, &n, 0) || n != 1) {
		fprintf(stderr, "    report of zone %llu: %s\n", (unsigned long long)zslba, nvmeof_errmsg());
		check_failed_in_test = 1;
	}
	return z;
}
#define CHECK_ZONE(f, at, st, wpoff)                                                       \
	do {                                                                               \
		struct nvmeof_zone z_ = zone_at((f), (at));                                \
		CHECK_STR(nvmeof_zone_state_str(z_.state), nvmeof_zone_state_str(st));    \
		CHECK_EQ(z_.wp - z_.zslba, (wpoff));                                       \
	} while (0)

static int write_at(struct fixture *f, uint64_t slba, uint32_t nlb)
{
	return nvmeof_write_sync(f->q[0], f->ns, slba, nlb, f->mr, 0, 0);
}

TEST(identify_fields_of_the_zoned_namespace)
{
	struct fixture f;
	if (setup(&f, 1))
		goto out;
	CHECK(f.zi.zoned);
	CHECK_EQ(f.ns->lba_size, LBA);
	CHECK_EQ(f.ns->nsze, ZONE * NZONES);
	CHECK_EQ(f.zi.zone_size, ZONE);
	CHECK_EQ(f.zi.nr_zones, NZONES);
	CHECK_EQ(f.zi.max_open, 4);
	CHECK_EQ(f.zi.max_active, 6);
	CHECK_EQ(f.zi.zasl_bytes, 128 * 1024);
	/* a namespace of the NVM command set beside it: zoned false, no error */
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *a = NULL;
	struct nvmeof_zns_info zi;
	memset(&zi, 0xff, sizeof(zi));
	opts_z(&o, env("NVMEOF_TB_NQN_A"), env("NVMEOF_TB_PORT"));
	MUST(nvmeof_ctrl_connect(&o, &a));
	MUST(nvmeof_zns_info(a, 1, &zi));
	CHECK(!zi.zoned);
	CHECK_EQ(zi.zone_size, 0);
	CHECK_EQ(nvmeof_ctrl_close(a), 0);
out:
	teardown(&f);
}

/* Each Zone Send Action on one zone, then on every zone (Select All), and
 * the states the report says after each. */
TEST(zone_states_after_each_send_action_and_select_all)
{
	struct fixture f;
	if (setup(&f, 1))
		goto out;
	MUST(write_at(&f, 0, 8));
	CHECK_ZONE(&f, 0, NVMEOF_ZS_IMP_OPEN, 8);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_CLOSE, false, 0));
	CHECK_ZONE(&f, 0, NVMEOF_ZS_CLOSED, 8);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_OPEN, false, 0));
	CHECK_ZONE(&f, 0, NVMEOF_ZS_EXP_OPEN, 8);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_FINISH, false, 0));
	CHECK_ZONE(&f, 0, NVMEOF_ZS_FULL, ZONE);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_RESET, false, 0));
	CHECK_ZONE(&f, 0, NVMEOF_ZS_EMPTY, 0);
	/* Select All: close, finish, reset act on every zone they apply to */
	MUST(write_at(&f, ZONE, 4));
	MUST(write_at(&f, 2 * ZONE, 4));
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_CLOSE, true, 0));
	CHECK_ZONE(&f, ZONE, NVMEOF_ZS_CLOSED, 4);
	CHECK_ZONE(&f, 2 * ZONE, NVMEOF_ZS_CLOSED, 4);
	CHECK_ZONE(&f, 3 * ZONE, NVMEOF_ZS_EMPTY, 0);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_FINISH, true, 0));
	CHECK_ZONE(&f, ZONE, NVMEOF_ZS_FULL, ZONE);
	CHECK_ZONE(&f, 2 * ZONE, NVMEOF_ZS_FULL, ZONE);
	CHECK_ZONE(&f, 3 * ZONE, NVMEOF_ZS_EMPTY, 0);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_RESET, true, 0));
	for (uint32_t i = 0; i < NZONES; i++)
		CHECK_ZONE(&f, (uint64_t)i * ZONE, NVMEOF_ZS_EMPTY, 0);
out:
	teardown(&f);
}

/* The reporting options pick zones by state; without the partial bit the
 * count is every match from slba, with it only those transferred. */
TEST(report_zones_filters_and_partial_report)
{
	struct fixture f;
	struct nvmeof_zone z[NZONES + 4];
	uint32_t n = 0;
	uint64_t total = 0;
	if (setup(&f, 1))
		goto out;
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_FINISH, false, 0)); /* zone 0 full */
	MUST(write_at(&f, ZONE, 2));                                                    /* zone 1 open */
	MUST(write_at(&f, 2 * ZONE, 3));
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 2 * ZONE, NVMEOF_ZSA_CLOSE, false, 0)); /* 2 closed */
	MUST(nvmeof_zone_report_ext(f.q[0], f.ns, 0, NVMEOF_ZRASF_ALL, false, z, NZONES + 4, &n, &total, 0));
	CHECK_EQ(n, NZONES);
	CHECK_EQ(total, NZONES);
	for (uint32_t i = 0; i < n; i++) {
		CHECK_EQ(z[i].zslba, (uint64_t)i * ZONE);
		CHECK_EQ(z[i].zcap, ZONE);
		CHECK_EQ(z[i].type, NVMEOF_ZONE_TYPE_SEQ);
	}
	MUST(nvmeof_zone_report_ext(f.q[0], f.ns, 0, NVMEOF_ZRASF_FULL, false, z, 4, &n, &total, 0));
	CHECK_EQ(n, 1);
	CHECK_EQ(z[0].zslba, 0);
	MUST(nvmeof_zone_report_ext(f.q[0], f.ns, 0, NVMEOF_ZRASF_IMP_OPEN, false, z, 4, &n, &total, 0));
	CHECK_EQ(n, 1);
	CHECK_EQ(z[0].zslba, ZONE);
	CHECK_EQ(z[0].wp, ZONE + 2);
	MUST(nvmeof_zone_report_ext(f.q[0], f.ns, 0, NVMEOF_ZRASF_CLOSED, false, z, 4, &n, &total, 0));
	CHECK_EQ(n, 1);
	CHECK_EQ(z[0].zslba, 2 * ZONE);
	/* 13 empty zones, 2 asked for: the count says 13, or 2 with the partial bit */
	MUST(nvmeof_zone_report_ext(f.q[0], f.ns, 0, NVMEOF_ZRASF_EMPTY, false, z, 2, &n, &total, 0));
	CHECK_EQ(n, 2);
	CHECK_EQ(total, NZONES - 3);
	CHECK_EQ(z[0].zslba, 3 * ZONE);
	MUST(nvmeof_zone_report_ext(f.q[0], f.ns, 0, NVMEOF_ZRASF_EMPTY, true, z, 2, &n, &total, 0));
	CHECK_EQ(n, 2);
	CHECK_EQ(total, 2);
	/* from a later zone on */
	MUST(nvmeof_zone_report_ext(f.q[0], f.ns, 14 * ZONE, NVMEOF_ZRASF_ALL, false, z, 8, &n, &total, 0));
	CHECK_EQ(n, 2);
	CHECK_EQ(z[0].zslba, 14 * ZONE);
	CHECK_EQ(nvmeof_zone_report(f.q[0], f.ns, 0, 9, false, z, 4, &n, 0), NVMEOF_EINVAL);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_RESET, true, 0));
out:
	teardown(&f);
}

/* The kernel's host, connected to the same namespace, sees it host-managed
 * and reports the zones (nvme-cli's zns plugin) field by field as we do. */
TEST(kernel_host_reports_the_same_zones)
{
	struct fixture f;
	struct nvmeof_zone z[NZONES];
	uint32_t n = 0;
	char cmd[1024], line[256];
	if (setup(&f, 1))
		goto out;
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_FINISH, false, 0));
	MUST(write_at(&f, ZONE, 5));
	MUST(write_at(&f, 2 * ZONE, 7));
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 2 * ZONE, NVMEOF_ZSA_CLOSE, false, 0));
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 3 * ZONE, NVMEOF_ZSA_OPEN, false, 0));
	MUST(nvmeof_zone_report(f.q[0], f.ns, 0, NVMEOF_ZRASF_ALL, false, z, NZONES, &n, 0));
	CHECK_EQ(n, NZONES);
	snprintf(cmd, sizeof(cmd),
		 "set -e; timeout 30 nvme connect -t tcp -a %s -s %s -n %s >&2; dev=$(tb kdev %s 1); "
		 "b=$(basename $dev); echo zoned $(cat /sys/block/$b/queue/zoned); "
		 "nvme zns report-zones $dev -o json | jq -r '.zone_list[] | \"\\(.slba) \\(.wp) \\(.cap) \\(.state) "
		 "\\(.type)\"'; timeout 30 nvme disconnect -n %s >&2",
		 env("NVMEOF_TB_ADDR"), env("NVMEOF_TB_ZPORT"), env("NVMEOF_TB_NQN_Z"), env("NVMEOF_TB_NQN_Z"),
		 env("NVMEOF_TB_NQN_Z"));
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	if (!p)
		goto out;
	uint32_t k = 0;
	bool zoned_seen = false;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long slba, wp, cap;
		char state[32], type[32], zm[32];
		if (sscanf(line, "zoned %31s", zm) == 1) {
			CHECK_STR(zm, "host-managed");
			zoned_seen = true;
			continue;
		}
		if (sscanf(line, "%llu %llu %llu %31s %31s", &slba, &wp, &cap, state, type) != 5) {
			fprintf(stderr, "    unexpected line: %s", line);
			check_failed_in_test = 1;
			continue;
		}
		if (k >= n) {
			k++;
			continue;
		}
		CHECK_EQ(slba, z[k].zslba);
		CHECK_EQ(wp, z[k].wp);
		CHECK_EQ(cap, z[k].zcap);
		CHECK_STR(state, nvmeof_zone_state_str(z[k].state));
		CHECK_STR(type, "SEQWRITE_REQ");
		k++;
	}
	CHECK_EQ(pclose(p), 0);
	CHECK(zoned_seen);
	CHECK_EQ(k, n);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_RESET, true, 0));
out:
	teardown(&f);
}

#define APPENDS 16 /* per queue, each of 2 blocks, all in flight at once */
struct app {
	int done, err;
	uint64_t lba;
};
static void app_cb(void *arg, const struct nvmeof_cpl *cpl)
{
	struct app *a = arg;
	a->done = 1;
	a->err = cpl->err;
	a->lba = cpl->cdw0 | (uint64_t)cpl->cdw1 << 32;
}

/* Appends in flight on four queues at once into one zone: the LBAs the
 * controller assigned never overlap, fill the zone from its start, and
 * each append's data reads back at its LBA. */
TEST(appends_from_four_queues_get_distinct_lbas_and_read_back)
{
	struct fixture f;
	static struct app a[NQ * APPENDS];
	const uint64_t zslba = 5 * ZONE;
	if (setup(&f, NQ))
		goto out;
	memset(a, 0, sizeof(a));
	uint8_t *buf = nvmeof_mr_addr(f.mr);
	for (int i = 0; i < NQ * APPENDS; i++)
		fill(buf + (size_t)i * 2 * LBA, 2 * LBA, 100 + i);
	for (int i = 0; i < NQ * APPENDS; i++)
		MUST(nvmeof_zone_append(f.q[i % NQ], f.ns, zslba, 2, f.mr, (size_t)i * 2 * LBA, 0, app_cb, &a[i]));
	for (int left = NQ * APPENDS, tries = 0; left && tries < 10000; tries++) {
		left = 0;
		for (int qi = 0; qi < NQ; qi++)
			if (nvmeof_queue_wait(f.q[qi], 0, 10) < 0)
				fprintf(stderr, "    wait: %s\n", nvmeof_errmsg());
		for (int i = 0; i < NQ * APPENDS; i++)
			left += !a[i].done;
	}
	static uint8_t used[2 * NQ * APPENDS];
	memset(used, 0, sizeof(used));
	for (int i = 0; i < NQ * APPENDS; i++) {
		CHECK(a[i].done);
		CHECK_EQ(a[i].err, 0);
		uint64_t off = a[i].lba - zslba;
		CHECK(a[i].lba >= zslba && off + 2 <= sizeof(used));
		if (!(a[i].lba >= zslba && off + 2 <= sizeof(used)))
			continue;
		CHECK(!used[off] && !used[off + 1]);
		used[off] = used[off + 1] = 1;
	}
	CHECK_ZONE(&f, zslba, NVMEOF_ZS_IMP_OPEN, 2 * NQ * APPENDS);
	/* read back: each append's blocks where the controller put them */
	uint8_t *rd = buf + 512 * 1024;
	MUST(nvmeof_read_sync(f.q[1], f.ns, zslba, 2 * NQ * APPENDS, f.mr, 512 * 1024, 0));
	for (int i = 0; i < NQ * APPENDS; i++)
		if (a[i].lba >= zslba && a[i].lba - zslba + 2 <= 2 * NQ * APPENDS)
			CHECK(!memcmp(rd + (a[i].lba - zslba) * LBA, buf + (size_t)i * 2 * LBA, 2 * LBA));
	/* the synchronous call says the LBA too: the next one after all of them */
	uint64_t alba = 0;
	MUST(nvmeof_zone_append_sync(f.q[2], f.ns, zslba, 1, f.mr, 0, NVMEOF_IO_FUA, &alba, 0));
	CHECK_EQ(alba, zslba + 2 * NQ * APPENDS);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, zslba, NVMEOF_ZSA_RESET, false, 0));
out:
	teardown(&f);
}

/* An append larger than ZASL is refused before it is sent (it cannot be
 * split: its blocks get one LBA); one of exactly ZASL goes. */
TEST(append_above_zasl_refused_before_it_is_sent)
{
	struct fixture f;
	uint64_t alba = 0;
	if (setup(&f, 1))
		goto out;
	uint32_t max = f.zi.zasl_bytes / LBA;
	CHECK_EQ(max, 32);
	CHECK_EQ(nvmeof_zone_append_sync(f.q[0], f.ns, 0, max + 1, f.mr, 0, 0, &alba, 0), NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "Zone Append Size Limit of 131072 bytes") != NULL);
	CHECK_EQ(nvmeof_zone_append(f.q[0], f.ns, 0, max + 1, f.mr, 0, 0, app_cb, NULL), NVMEOF_EINVAL);
	CHECK_ZONE(&f, 0, NVMEOF_ZS_EMPTY, 0);
	MUST(nvmeof_zone_append_sync(f.q[0], f.ns, 0, max, f.mr, 0, 0, &alba, 0));
	CHECK_EQ(alba, 0);
	CHECK_ZONE(&f, 0, NVMEOF_ZS_IMP_OPEN, max);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_RESET, false, 0));
out:
	teardown(&f);
}

/* Each zone rule broken once, and the status the target answers, by name.
 * nvmet passes on what its zoned block device says: the rules a zoned
 * null_blk enforces on writes and opens come back as the block layer's
 * generic error, Internal Error; a Zone Management Send of a transition the
 * zone's state has not is Invalid Zone State Transition; a write across a
 * zone's end is split by its block layer into one write per zone, and goes
 * when both are at their write pointers. The library names whichever comes. */
#define INTERNAL "Internal Error (SCT 0x0, SC 0x06"
#define TRANSITION "Invalid Zone State Transition (SCT 0x1, SC 0xbf, DNR)"
#define CHECK_FAILS(call, name)                                                            \
	do {                                                                               \
		CHECK_EQ((call), NVMEOF_ENVME);                                            \
		if (!strstr(nvmeof_errmsg(), (name))) {                                    \
			fprintf(stderr, "    %s: %s, expected %s\n", #call, nvmeof_errmsg(), (name)); \
			check_failed_in_test = 1;                                          \
		}                                                                          \
	} while (0)

TEST(zone_errors_named)
{
	struct fixture f;
	if (setup(&f, 1))
		goto out;
	/* a write not at the write pointer */
	MUST(write_at(&f, 0, 4));
	CHECK_FAILS(write_at(&f, 8, 4), INTERNAL);
	CHECK_ZONE(&f, 0, NVMEOF_ZS_IMP_OPEN, 4);
	/* a write across a zone's end: one write per zone behind the target */
	for (uint32_t i = 0; i < 4; i++)
		MUST(write_at(&f, ZONE + i * 255, 255));
	MUST(write_at(&f, 2 * ZONE - 4, 8));
	CHECK_ZONE(&f, ZONE, NVMEOF_ZS_FULL, ZONE);
	CHECK_ZONE(&f, 2 * ZONE, NVMEOF_ZS_IMP_OPEN, 4);
	/* a write to a full zone */
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 3 * ZONE, NVMEOF_ZSA_FINISH, false, 0));
	CHECK_FAILS(write_at(&f, 3 * ZONE, 1), INTERNAL);
	/* transitions the state machine has not: close or offline an empty zone */
	CHECK_FAILS(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 4 * ZONE, NVMEOF_ZSA_CLOSE, false, 0), TRANSITION);
	CHECK_FAILS(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 8 * ZONE, NVMEOF_ZSA_OFFLINE, false, 0), TRANSITION);
	CHECK_ZONE(&f, 4 * ZONE, NVMEOF_ZS_EMPTY, 0);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_RESET, true, 0));
	/* more open than MOR (4): a fifth explicit open, a fifth zone written */
	for (uint32_t i = 0; i < 4; i++)
		MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, (uint64_t)i * ZONE, NVMEOF_ZSA_OPEN, false, 0));
	CHECK_FAILS(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 4 * ZONE, NVMEOF_ZSA_OPEN, false, 0), INTERNAL);
	CHECK_FAILS(write_at(&f, 5 * ZONE, 1), INTERNAL);
	/* more active than MAR (6): 4 written and closed, 2 more open, a seventh */
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_RESET, true, 0));
	for (uint32_t i = 0; i < 6; i++) {
		MUST(write_at(&f, (uint64_t)i * ZONE, 1));
		if (i < 4)
			MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, (uint64_t)i * ZONE, NVMEOF_ZSA_CLOSE, false, 0));
	}
	CHECK_FAILS(write_at(&f, 6 * ZONE, 1), INTERNAL);
	CHECK_ZONE(&f, 6 * ZONE, NVMEOF_ZS_EMPTY, 0);
	MUST(nvmeof_zone_mgmt_send_sync(f.q[0], f.ns, 0, NVMEOF_ZSA_RESET, true, 0));
out:
	teardown(&f);
}

int main(int argc, char **argv)
{
	static const struct test_case all[] = {
		T(identify_fields_of_the_zoned_namespace),
		T(zone_states_after_each_send_action_and_select_all),
		T(report_zones_filters_and_partial_report),
		T(kernel_host_reports_the_same_zones),
		T(appends_from_four_queues_get_distinct_lbas_and_read_back),
		T(append_above_zasl_refused_before_it_is_sent),
		T(zone_errors_named),
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	check_limit_each_test();
	check_after_kill = tb_restore_target;
	return run_named_tests("target-zns", all, sizeof(all) / sizeof(all[0]), argv ? argc : 0, argv);
}
