/* failover-check's verdict on made-up write histories and blocks: a lost
 * update must be reported, a write in doubt that landed must not be, and a
 * torn, misplaced or unknown block must be told apart. */
#include <string.h>

#include "check.h"
#include "fcheck.h"

#define BSZ 4096
#define RUN 0x1234abcdull
static unsigned char blk[BSZ];

/* A unit at LBA 10 whose versions 1..n each ended as states[i - 1]. */
static struct fc_unit unit(const uint8_t *states, int n)
{
	struct fc_unit u = {.slba = 10};
	for (int i = 1; i <= n; i++) {
		u.issued = (uint64_t)i;
		fc_record(&u, (uint64_t)i, states[i - 1], 0, (uint32_t)i * 10, states[i - 1] == FC_ACKED ? 0 : -4, 0);
	}
	return u;
}

static int judge(const struct fc_unit *u, uint64_t lba, uint64_t *v)
{
	uint16_t w;
	return fc_judge(u, blk, BSZ, RUN, lba, v, &w);
}

TEST(the_newest_acknowledged_version_passes)
{
	uint8_t s[] = {FC_ACKED, FC_ACKED, FC_ACKED};
	struct fc_unit u = unit(s, 3);
	uint64_t v;
	fc_stamp(blk, BSZ, RUN, 10, 3, 1);
	CHECK_EQ(judge(&u, 10, &v), FC_OK);
	CHECK_EQ(v, 3);
	CHECK_EQ(u.acked, 3);
	CHECK_EQ(u.in_doubt, 0);
}

TEST(an_older_version_after_a_newer_one_was_acknowledged_is_a_lost_update)
{
	/* v2 timed out, then v3 was acknowledged: the late v2 over it is the
	 * loss failover must prevent */
	uint8_t s[] = {FC_ACKED, FC_TIMEDOUT, FC_ACKED};
	struct fc_unit u = unit(s, 3);
	uint64_t v;
	fc_stamp(blk, BSZ, RUN, 10, 2, 1);
	CHECK_EQ(judge(&u, 10, &v), FC_LOST);
	CHECK_EQ(v, 2);
	CHECK_EQ(u.in_doubt, 1);
	/* an acknowledged one overwritten by an older acknowledged one too */
	fc_stamp(blk, BSZ, RUN, 10, 1, 0);
	CHECK_EQ(judge(&u, 10, &v), FC_LOST);
}

TEST(a_version_in_doubt_newer_than_the_acknowledged_may_be_there)
{
	uint8_t s[] = {FC_ACKED, FC_FAILED, FC_ABANDONED};
	struct fc_unit u = unit(s, 3);
	uint64_t v;
	fc_stamp(blk, BSZ, RUN, 10, 3, 0);
	CHECK_EQ(judge(&u, 10, &v), FC_OK);
	fc_stamp(blk, BSZ, RUN, 10, 2, 0);
	CHECK_EQ(judge(&u, 10, &v), FC_OK);
	fc_stamp(blk, BSZ, RUN, 10, 1, 0);
	CHECK_EQ(judge(&u, 10, &v), FC_OK);
	CHECK_EQ(u.acked, 1);
	CHECK_EQ(u.in_doubt, 2);
}

TEST(data_from_before_the_run_is_lost_only_once_a_write_was_acknowledged)
{
	uint8_t s[] = {FC_TIMEDOUT, FC_ACKED};
	struct fc_unit u = unit(s, 2), none = unit(s, 1);
	uint64_t v;
	memset(blk, 0, BSZ);
	CHECK_EQ(judge(&u, 10, &v), FC_LOST);
	CHECK_EQ(v, 0);
	CHECK_EQ(judge(&none, 10, &v), FC_OK);
	/* another run's block is as old */
	fc_stamp(blk, BSZ, RUN + 1, 10, 2, 0);
	CHECK_EQ(judge(&u, 10, &v), FC_LOST);
}

TEST(a_version_never_issued_is_reported)
{
	uint8_t s[] = {FC_ACKED, FC_ACKED};
	struct fc_unit u = unit(s, 2);
	uint64_t v;
	fc_stamp(blk, BSZ, RUN, 10, 7, 0);
	CHECK_EQ(judge(&u, 10, &v), FC_NEVER);
	CHECK_EQ(v, 7);
	fc_stamp(blk, BSZ, RUN, 10, 0, 0);
	CHECK_EQ(judge(&u, 10, &v), FC_NEVER);
}

TEST(torn_and_misplaced_blocks_are_corrupt)
{
	uint8_t s[] = {FC_ACKED, FC_ACKED};
	struct fc_unit u = unit(s, 2);
	uint64_t v;
	fc_stamp(blk, BSZ, RUN, 10, 2, 0);
	/* the second half from another version: a torn write */
	static unsigned char other[BSZ];
	fc_stamp(other, BSZ, RUN, 10, 1, 0);
	memcpy(blk + BSZ / 2, other + BSZ / 2, BSZ / 2);
	CHECK_EQ(judge(&u, 10, &v), FC_CORRUPT);
	/* one bit */
	fc_stamp(blk, BSZ, RUN, 10, 2, 0);
	blk[1000] ^= 4;
	CHECK_EQ(judge(&u, 10, &v), FC_CORRUPT);
	/* a whole, valid block of another LBA */
	fc_stamp(blk, BSZ, RUN, 11, 2, 0);
	CHECK_EQ(judge(&u, 10, &v), FC_CORRUPT);
}

TEST(the_history_keeps_the_last_events_in_order)
{
	struct fc_unit u = {.slba = 0};
	for (uint64_t i = 1; i <= FC_HIST + 3; i++) {
		u.issued = i;
		fc_record(&u, i, i % 2 ? FC_ACKED : FC_TIMEDOUT, 1, (uint32_t)i, 0, 0);
	}
	CHECK_EQ(u.nev, FC_HIST + 3);
	CHECK_EQ(u.acked, FC_HIST + 3);
	/* the oldest kept is version 4, in the slot after the newest */
	CHECK_EQ(u.ev[u.nev % FC_HIST].version, 4);
	CHECK_EQ(u.ev[(u.nev - 1) % FC_HIST].version, FC_HIST + 3);
	CHECK_EQ(u.nodd, (FC_HIST + 3) / 2); /* the timed-out ones */
	/* an acknowledgement a failover's hold made slow is kept apart */
	u.issued++;
	u.sent_ms = 100;
	fc_record(&u, u.issued, FC_ACKED, 0, 100 + FC_SLOW_MS, 0, 0);
	CHECK_EQ(u.odd[(u.nodd - 1) % FC_ODD].version, u.issued);
	CHECK_EQ(u.odd[(u.nodd - 1) % FC_ODD].sent_ms, 100);
	CHECK_STR(fc_kind_str(FC_LOST), "lost update");
	CHECK_STR(fc_state_str(FC_TIMEDOUT), "timed out (in doubt)");
}

int main(void)
{
	static const struct test_case t[] = {
		T(the_newest_acknowledged_version_passes),
		T(an_older_version_after_a_newer_one_was_acknowledged_is_a_lost_update),
		T(a_version_in_doubt_newer_than_the_acknowledged_may_be_there),
		T(data_from_before_the_run_is_lost_only_once_a_write_was_acknowledged),
		T(a_version_never_issued_is_reported), T(torn_and_misplaced_blocks_are_corrupt),
		T(the_history_keeps_the_last_events_in_order),
	};
	return run_tests("unit-fcheck", t, sizeof(t) / sizeof(t[0]));
}
