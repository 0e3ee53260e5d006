/* Transport-ID filename parsing. */
#include "check.h"
#include "tid.h"

static char err[256];

TEST(spdk_style_filename)
{
	struct tid t;
	CHECK_EQ(tid_parse("trtype=RDMA adrfam=IPv4 traddr=192.0.2.1 trsvcid=4420 "
			   "subnqn=nqn.2016-06.io.spdk:cnode1 ns=1", &t, err, sizeof(err)), 0);
	CHECK_STR(t.traddr, "192.0.2.1");
	CHECK_STR(t.trsvcid, "4420");
	CHECK_STR(t.subnqn, "nqn.2016-06.io.spdk:cnode1");
	CHECK_EQ(t.nsid, 1);
	CHECK_EQ(t.adrfam, 4);
}

TEST(keys_any_case_any_order_extra_spaces)
{
	struct tid t;
	CHECK_EQ(tid_parse("  NS=7   TrAddr=fe80::1  trtype=rdma adrfam=ipv6 srcaddr=192.0.2.5 "
			   "hostnqn=nqn.x:y ", &t, err, sizeof(err)), 0);
	CHECK_EQ(t.nsid, 7);
	CHECK_STR(t.traddr, "fe80::1");
	CHECK_EQ(t.adrfam, 6);
	CHECK_STR(t.srcaddr, "192.0.2.5");
	CHECK_STR(t.hostnqn, "nqn.x:y");
	CHECK_STR(t.trsvcid, "");
	CHECK_EQ(tid_parse("", &t, err, sizeof(err)), 0); /* everything from engine options */
}

TEST(malformed_filenames_say_what_is_wrong)
{
	struct tid t;
	CHECK_EQ(tid_parse("trtype=FC traddr=1.2.3.4", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "RDMA and NVMe/TCP") != NULL);
	CHECK_EQ(tid_parse("trtype=TCP traddr=1.2.3.4", &t, err, sizeof(err)), 0);
	CHECK_EQ(t.trtype, 3);
	/* transports that differ: each path's trtype before its traddr */
	CHECK_EQ(tid_parse("trtype=TCP traddr=a trtype=RDMA", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "before the traddr= of its path") != NULL);
	CHECK_EQ(tid_parse("traddr=a trtype=TCP traddr=b trtype=RDMA", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "traddr=a has no trtype= before it") != NULL);
	CHECK_EQ(tid_parse("trtype=TCP trtype=RDMA ns=1", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "no traddr=") != NULL);
	CHECK_EQ(tid_parse("traddr=1.2.3.4 color=blue", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "unknown key 'color'") != NULL);
	CHECK_EQ(tid_parse("/dev/nvme0n1", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "not key=value") != NULL);
	CHECK_EQ(tid_parse("ns=0", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK_EQ(tid_parse("ns=-1", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK_EQ(tid_parse("ns=1x", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK_EQ(tid_parse("ns=99999999999999999999", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK_EQ(tid_parse("trsvcid=44x0", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK_EQ(tid_parse("adrfam=IB", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK_EQ(tid_parse("traddr=", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "no value") != NULL);
	CHECK_EQ(tid_parse("=x", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK_EQ(tid_parse(NULL, &t, err, sizeof(err)), (unsigned long long)-1);
}

/* One RDMA and one TCP path to a subsystem: each trtype= is the path's
 * whose traddr= follows it; one trtype= anywhere is every path's. */
TEST(paths_over_rdma_and_tcp)
{
	struct tid t;
	CHECK_EQ(tid_parse("trtype=RDMA traddr=a trsvcid=4420 trtype=TCP traddr=b ns=1", &t, err, sizeof(err)), 0);
	CHECK_EQ(t.trtype, 1);
	CHECK_EQ(t.nalt, 1);
	CHECK_EQ(t.alt[0].trtype, 3);
	CHECK_STR(t.alt[0].trsvcid, "4420");
	CHECK_EQ(tid_parse("trtype=TCP traddr=a trtype=RDMA traddr=b trtype=TCP traddr=c", &t, err, sizeof(err)), 0);
	CHECK(t.trtype == 3 && t.alt[0].trtype == 1 && t.alt[1].trtype == 3);
	CHECK_EQ(tid_parse("traddr=a traddr=b trtype=TCP", &t, err, sizeof(err)), 0);
	CHECK(t.trtype == 3 && t.alt[0].trtype == 3);
	CHECK_EQ(tid_parse("traddr=a traddr=b", &t, err, sizeof(err)), 0);
	CHECK(t.trtype == 0 && t.alt[0].trtype == 0);
	/* the same address and port over the two transports: two paths */
	CHECK_EQ(tid_parse("trtype=RDMA traddr=a trsvcid=1 trtype=TCP traddr=a trsvcid=1", &t, err, sizeof(err)), 0);
	CHECK_EQ(tid_parse("trtype=TCP traddr=a trsvcid=1 trtype=TCP traddr=a trsvcid=1", &t, err, sizeof(err)),
		 (unsigned long long)-1);
	CHECK(strstr(err, "named twice") != NULL);
}

TEST(over_long_values_are_refused)
{
	struct tid t;
	char s[400];
	memcpy(s, "subnqn=", 7);
	memset(s + 7, 'q', 224); /* 224 bytes: one more than an NQN may have */
	s[7 + 224] = '\0';
	CHECK_EQ(tid_parse(s, &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "at most 223") != NULL);
	s[7 + 223] = '\0';
	CHECK_EQ(tid_parse(s, &t, err, sizeof(err)), 0);
	CHECK_EQ(strlen(t.subnqn), 223);
}

/* Several paths: traddr again starts the next; srcaddr and trsvcid after
 * it are its own; a path without a trsvcid takes the first's. */
TEST(several_paths_repeat_traddr)
{
	struct tid t;
	CHECK_EQ(tid_parse("trtype=RDMA traddr=192.0.2.1 srcaddr=192.0.2.1 trsvcid=4421 "
			   "traddr=198.51.100.1 srcaddr=198.51.100.1 subnqn=nqn.x ns=1", &t, err, sizeof(err)), 0);
	CHECK_STR(t.traddr, "192.0.2.1"); CHECK_STR(t.srcaddr, "192.0.2.1"); CHECK_STR(t.trsvcid, "4421");
	CHECK_EQ(t.nalt, 1);
	CHECK_STR(t.alt[0].traddr, "198.51.100.1"); CHECK_STR(t.alt[0].srcaddr, "198.51.100.1");
	CHECK_STR(t.alt[0].trsvcid, "4421");
	CHECK_STR(t.subnqn, "nqn.x"); CHECK_EQ(t.nsid, 1);
	CHECK_EQ(tid_parse("traddr=a trsvcid=1 traddr=b trsvcid=2 traddr=c", &t, err, sizeof(err)), 0);
	CHECK_EQ(t.nalt, 2);
	CHECK_STR(t.alt[0].trsvcid, "2"); CHECK_STR(t.alt[1].trsvcid, "1");
	CHECK_STR(t.alt[1].srcaddr, "");
	CHECK_EQ(tid_parse("traddr=a traddr=b traddr=c traddr=d traddr=e", &t, err, sizeof(err)),
		 (unsigned long long)-1);
	CHECK(strstr(err, "at most 4 paths"));
	CHECK_EQ(tid_parse("traddr=a subnqn=n", &t, err, sizeof(err)), 0);
	CHECK_EQ(t.nalt, 0);
}

/* A key given twice is refused, not the last one taken; a path named
 * twice is one path. trtype and adrfam may repeat alike (a transport ID
 * written out whole per path). */
TEST(a_key_twice_is_refused)
{
	struct tid t;
	CHECK_EQ(tid_parse("traddr=a subnqn=x subnqn=y", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "subnqn given twice") != NULL);
	CHECK_EQ(tid_parse("traddr=a ns=1 ns=2", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "ns given twice") != NULL);
	CHECK_EQ(tid_parse("hostnqn=a traddr=a hostnqn=b", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK_EQ(tid_parse("traddr=a trsvcid=1 trsvcid=2", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "trsvcid given twice for one path") != NULL);
	CHECK_EQ(tid_parse("traddr=a srcaddr=b hostaddr=c", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "given twice for one path") != NULL);
	CHECK_EQ(tid_parse("traddr=a traddr=a subnqn=x", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "traddr=a named twice") != NULL);
	CHECK_EQ(tid_parse("traddr=a trsvcid=7 traddr=b traddr=a", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "named twice") != NULL);
	CHECK_EQ(tid_parse("adrfam=IPv4 traddr=a adrfam=IPv6", &t, err, sizeof(err)), (unsigned long long)-1);
	/* one address, two ports or two source addresses: two paths */
	CHECK_EQ(tid_parse("traddr=a trsvcid=1 traddr=a trsvcid=2", &t, err, sizeof(err)), 0);
	CHECK_EQ(tid_parse("traddr=a srcaddr=s1 traddr=a srcaddr=s2", &t, err, sizeof(err)), 0);
	CHECK_EQ(tid_parse("trtype=RDMA adrfam=IPv4 traddr=a trsvcid=4420 trtype=RDMA adrfam=IPv4 traddr=b "
			   "trsvcid=4420 subnqn=x", &t, err, sizeof(err)), 0);
	CHECK_EQ(t.nalt, 1);
}

/* SPDK's transport ID calls the source address hostaddr. */
TEST(hostaddr_is_srcaddr)
{
	struct tid t;
	CHECK_EQ(tid_parse("traddr=192.0.2.1 hostaddr=192.0.2.5 traddr=198.51.100.1 HostAddr=198.51.100.5", &t, err,
			   sizeof(err)), 0);
	CHECK_STR(t.srcaddr, "192.0.2.5");
	CHECK_STR(t.alt[0].srcaddr, "198.51.100.5");
}

TEST(ports_outside_1_to_65535_are_refused)
{
	struct tid t;
	static const char *bad[] = {"trsvcid=0", "trsvcid=65536", "trsvcid=99999", "trsvcid=9999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(tid_parse(bad[i], &t, err, sizeof(err)), (unsigned long long)-1);
		CHECK(strstr(err, "expected a port from 1 to 65535") != NULL);
	}
	CHECK_EQ(tid_parse("trsvcid=1", &t, err, sizeof(err)), 0);
	CHECK_EQ(tid_parse("trsvcid=65535", &t, err, sizeof(err)), 0);
}

/* fio splits a filename at each unescaped ':': the parts after the first
 * begin with the rest of the cut value, which is named with the fix. */
TEST(a_filename_cut_at_a_colon_is_named)
{
	CHECK_EQ(tid_cut("trtype=RDMA traddr=192.0.2.1 subnqn=nqn.2016-06.io.spdk", "cnode1 ns=1", err, sizeof(err)),
		 (unsigned long long)-1);
	CHECK(strstr(err, "'subnqn=nqn.2016-06.io.spdk' is cut at a ':'") != NULL);
	CHECK(strstr(err, "'cnode1'") != NULL && strstr(err, "\\:") != NULL);
	CHECK_EQ(tid_cut("traddr=fe80", "1 subnqn=x", err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "'traddr=fe80' is cut") != NULL);
	/* a second file of its own is fine */
	CHECK_EQ(tid_cut("traddr=a subnqn=x", " traddr=b subnqn=y", err, sizeof(err)), 0);
	/* a lone part says how to write a ':' too */
	struct tid t;
	CHECK_EQ(tid_parse("uuid", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK(strstr(err, "not key=value") != NULL && strstr(err, "\\:") != NULL);
}

/* adrfam must agree with each path's numeric traddr (a host name is the
 * resolver's to answer); SPDK's plugin would not connect across families */
TEST(adrfam_contradicting_traddr_is_refused)
{
	struct tid t;
	CHECK_EQ(tid_parse("adrfam=IPv6 traddr=127.0.0.1", &t, err, sizeof(err)), (unsigned long long)-1);
	CHECK_STR(err, "adrfam=IPv6 but traddr=127.0.0.1 is an IPv4 address: drop adrfam (the address says "
		  "its family) or give an IPv6 address");
	CHECK_EQ(tid_parse("adrfam=IPv4 traddr=192.0.2.1 traddr=fe80::1", &t, err, sizeof(err)),
		 (unsigned long long)-1);
	CHECK(strstr(err, "adrfam=IPv4 but traddr=fe80::1 is an IPv6 address") == err);
	CHECK_EQ(tid_parse("traddr=::1 adrfam=IPv6", &t, err, sizeof(err)), 0);
	CHECK_EQ(tid_parse("adrfam=IPv4 traddr=target.example", &t, err, sizeof(err)), 0);
	CHECK_EQ(tid_parse("adrfam=ipv4 traddr=192.0.2.1 traddr=198.51.100.1", &t, err, sizeof(err)), 0);
}

int main(void)
{
	static const struct test_case t[] = {
		T(spdk_style_filename),
		T(adrfam_contradicting_traddr_is_refused), T(keys_any_case_any_order_extra_spaces),
		T(malformed_filenames_say_what_is_wrong), T(over_long_values_are_refused), T(several_paths_repeat_traddr),
		T(paths_over_rdma_and_tcp),
		T(a_key_twice_is_refused), T(hostaddr_is_srcaddr), T(ports_outside_1_to_65535_are_refused),
		T(a_filename_cut_at_a_colon_is_named),
	};
	return run_tests("unit-tid", t, sizeof(t) / sizeof(t[0]));
}
