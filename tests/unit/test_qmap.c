/* qpair_select=cpu: which queue pair a CPU's commands go to. */
#include "check.h"
#include "qmap.h"

/* As many queue pairs as CPUs: each CPU has its own, always the same. */
TEST(one_queue_pair_per_cpu)
{
	static struct qmap m;
	int cpus[] = {0, 1};
	qmap_init(&m, cpus, 2);
	CHECK_EQ(m.ncpu, 2);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(qmap_pick(&m, 0, 2), 0);
		CHECK_EQ(qmap_pick(&m, 1, 2), 1);
	}
	CHECK_EQ(qmap_depth(&m, 2, 32), 32); /* a CPU may send all 32 to its queue */
}

/* The job's CPUs are ranked, not taken by number: CPUs 4 and 6 of a pinned
 * job use both queue pairs (4 % 2 == 6 % 2 would put both on one). */
TEST(cpus_ranked_within_the_job_set)
{
	static struct qmap m;
	int cpus[] = {4, 6};
	qmap_init(&m, cpus, 2);
	CHECK_EQ(qmap_pick(&m, 4, 2), 0);
	CHECK_EQ(qmap_pick(&m, 6, 2), 1);
	/* fewer queue pairs than CPUs: they share by rank */
	int many[] = {0, 1, 2, 3, 4};
	qmap_init(&m, many, 5);
	CHECK_EQ(qmap_pick(&m, 3, 2), 1);
	CHECK_EQ(qmap_pick(&m, 4, 2), 0);
	CHECK_EQ(qmap_depth(&m, 2, 16), 16);
}

/* More queue pairs than CPUs: a CPU rotates over its own (k, k + ncpu, ...),
 * so every queue pair is used and each holds its share of the depth. */
TEST(more_queue_pairs_than_cpus_rotate)
{
	static struct qmap m;
	int one[] = {1};
	qmap_init(&m, one, 1);
	unsigned int seen[4] = {0};
	for (int i = 0; i < 8; i++)
		seen[qmap_pick(&m, 1, 4)]++;
	for (int q = 0; q < 4; q++)
		CHECK_EQ(seen[q], 2);
	CHECK_EQ(qmap_depth(&m, 4, 16), 4);
	int two[] = {0, 1};
	qmap_init(&m, two, 2);
	unsigned int s0[5] = {0}, s1[5] = {0};
	for (int i = 0; i < 12; i++) {
		s0[qmap_pick(&m, 0, 5)]++;
		s1[qmap_pick(&m, 1, 5)]++;
	}
	CHECK(s0[0] && s0[2] && s0[4] && !s0[1] && !s0[3]);
	CHECK(s1[1] && s1[3] && !s1[0] && !s1[2] && !s1[4]);
	CHECK_EQ(qmap_depth(&m, 5, 16), 8); /* CPU 1 has two of the five */
}

/* A CPU outside the job's set, past the table, or unknown still gets a
 * queue pair in range; no CPUs at all counts as one. */
TEST(odd_cpus_stay_in_range)
{
	static struct qmap m;
	int cpus[] = {2, 3, 5};
	qmap_init(&m, cpus, 3);
	CHECK(qmap_pick(&m, 7, 3) < 3);
	CHECK(qmap_pick(&m, 5000, 3) < 3);
	CHECK_EQ(qmap_pick(&m, -1, 3), 0);
	CHECK_EQ(qmap_pick(&m, 5, 1), 0);
	int bad[] = {-3, 99999};
	qmap_init(&m, bad, 2);
	CHECK_EQ(m.ncpu, 1);
	CHECK_EQ(qmap_pick(&m, 0, 2) + qmap_pick(&m, 0, 2), 1); /* rotates over both */
	qmap_init(&m, NULL, 0);
	CHECK_EQ(m.ncpu, 1);
}

/* A disconnected queue pair passes its CPU's commands on: to the next live
 * one after it, wrapping, and to none when all are gone. */
TEST(a_closed_queue_pair_passes_its_commands_on)
{
	static struct qmap m;
	int cpus[] = {0, 1, 2, 3};
	qmap_init(&m, cpus, 4);
	unsigned int mine = qmap_pick(&m, 2, 4);
	CHECK_EQ(mine, 2);
	CHECK_EQ(qmap_open(0, mine, 4), 2);
	CHECK_EQ(qmap_open(1u << 2, mine, 4), 3);
	CHECK_EQ(qmap_open(1u << 2 | 1u << 3, mine, 4), 0);
	CHECK_EQ(qmap_open(0xe, 1, 4), 0);
	CHECK_EQ(qmap_open(0xf, 0, 4), 4);
	CHECK_EQ(qmap_open(0, 0, 1), 0);
	CHECK_EQ(qmap_open(1, 0, 1), 1);
	/* bits past nq say nothing about these queue pairs */
	CHECK_EQ(qmap_open(0xf0, 3, 4), 3);
	/* 64 queue pairs (qpairs=64): the masks have a bit for each */
	CHECK_EQ(qmap_open(0, 40, 64), 40);
	CHECK_EQ(qmap_open(1ull << 40, 40, 64), 41);
	CHECK_EQ(qmap_open(1ull << 63, 63, 64), 0);
	CHECK_EQ(qmap_open(~0ull >> 1, 0, 64), 63);
	CHECK_EQ(qmap_open(~0ull, 5, 64), 64);
}

int main(void)
{
	static const struct test_case all[] = {T(one_queue_pair_per_cpu), T(cpus_ranked_within_the_job_set),
					       T(more_queue_pairs_than_cpus_rotate), T(odd_cpus_stay_in_range),
					       T(a_closed_queue_pair_passes_its_commands_on)};
	return run_tests("unit-qmap", all, sizeof(all) / sizeof(all[0]));
}
