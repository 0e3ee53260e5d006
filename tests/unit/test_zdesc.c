/* Zone Descriptors as fio's zones: states, types and bounds checked. */
#include "check.h"
#include "zdesc.h"

#define ZSZE 1024u
#define NSZE (16ull * ZSZE)

static int conv(uint8_t type, uint8_t state, uint64_t zslba, uint64_t zcap, uint64_t wp, struct zbd_zone *out)
{
	char why[200] = "";
	struct nvmeof_zone z = {.type = type, .state = state, .zslba = zslba, .zcap = zcap, .wp = wp};
	int rc = zdesc_to_fio(&z, zslba, ZSZE, 12, NSZE, out, why, sizeof(why));
	CHECK(rc ? why[0] != 0 : why[0] == 0);
	return rc;
}

/* An open zone keeps its write pointer, in bytes. */
TEST(open_zone_keeps_its_write_pointer)
{
	struct zbd_zone o;
	CHECK_EQ(conv(2, NVMEOF_ZS_IMP_OPEN, 2048, 1000, 2056, &o), 0);
	CHECK_EQ(o.start, 2048ull << 12);
	CHECK_EQ(o.wp, 2056ull << 12);
	CHECK_EQ(o.len, (uint64_t)ZSZE << 12);
	CHECK_EQ(o.capacity, 1000ull << 12);
	CHECK_EQ(o.type, ZBD_ZONE_TYPE_SWR);
	CHECK_EQ(o.cond, ZBD_ZONE_COND_IMP_OPEN);
}

/* Read Only and Offline zones have no valid write pointer: offline to fio,
 * the write pointer at the start (fio asserts it within the zone). */
TEST(read_only_and_offline_are_offline_at_their_start)
{
	struct zbd_zone o;
	CHECK_EQ(conv(2, NVMEOF_ZS_READ_ONLY, 1024, ZSZE, ~0ull, &o), 0);
	CHECK_EQ(o.cond, ZBD_ZONE_COND_OFFLINE);
	CHECK_EQ(o.wp, 1024ull << 12);
	CHECK_EQ(conv(2, NVMEOF_ZS_OFFLINE, 1024, ZSZE, 77, &o), 0);
	CHECK_EQ(o.cond, ZBD_ZONE_COND_OFFLINE);
	CHECK_EQ(o.wp, 1024ull << 12);
}

/* A full zone's write pointer is its end. */
TEST(full_zone_ends_at_its_size)
{
	struct zbd_zone o;
	CHECK_EQ(conv(2, NVMEOF_ZS_FULL, 0, 1000, ~0ull, &o), 0);
	CHECK_EQ(o.wp, (uint64_t)ZSZE << 12);
}

/* What the target must not send: other zone types, a write pointer past
 * the capacity, a capacity past the zone size, a start off the stride or
 * past the namespace, an undefined state. */
TEST(bad_descriptors_are_refused)
{
	struct zbd_zone o;
	CHECK(conv(1, NVMEOF_ZS_EMPTY, 0, ZSZE, 0, &o));
	CHECK(conv(3, NVMEOF_ZS_EMPTY, 0, ZSZE, 0, &o));
	CHECK(conv(2, NVMEOF_ZS_CLOSED, 0, 100, 101, &o));
	CHECK(conv(2, NVMEOF_ZS_EMPTY, 1024, ZSZE, 1000, &o));
	CHECK(conv(2, NVMEOF_ZS_EMPTY, 0, ZSZE + 1, 0, &o));
	CHECK(conv(2, NVMEOF_ZS_EMPTY, 0, 0, 0, &o));
	CHECK(conv(2, NVMEOF_ZS_EMPTY, 1000, ZSZE, 1000, &o));
	CHECK(conv(2, NVMEOF_ZS_EMPTY, NSZE, ZSZE, NSZE, &o));
	CHECK(conv(2, 0x7, 0, ZSZE, 0, &o));
	/* a descriptor for another zone than the one due */
	char why[200];
	struct nvmeof_zone z = {.type = 2, .state = NVMEOF_ZS_EMPTY, .zslba = 0, .zcap = ZSZE, .wp = 0};
	CHECK_EQ(zdesc_to_fio(&z, 1024, ZSZE, 12, NSZE, &o, why, sizeof(why)), -1);
	CHECK(strstr(why, "was due") != NULL);
}

/* MOR+1 of 8192 on 16 zones limits nothing: 0 (fio refuses above 4096). */
TEST(limits_past_the_zone_count_are_none)
{
	CHECK_EQ(zdesc_limit(0x2000, 16), 0);
	CHECK_EQ(zdesc_limit(16, 16), 0);
	CHECK_EQ(zdesc_limit(4, 16), 4);
	CHECK_EQ(zdesc_limit(0, 16), 0);
}

int main(void)
{
	static const struct test_case all[] = {T(open_zone_keeps_its_write_pointer),
					       T(read_only_and_offline_are_offline_at_their_start),
					       T(full_zone_ends_at_its_size), T(bad_descriptors_are_refused),
					       T(limits_past_the_zone_count_are_none)};
	return run_tests("unit-zdesc", all, sizeof(all) / sizeof(all[0]));
}
