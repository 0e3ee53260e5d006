/* PCIe placement from a fake sysfs tree shaped like a real one. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "topo.h"

static char root[256];

static void mk(const char *rel)
{
	char p[512], *s;
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	mkdir(p, 0755);
}
static void ln(const char *target_rel, const char *link_rel)
{
	char t[512], l[512];
	snprintf(t, sizeof(t), "%s/%s", root, target_rel);
	snprintf(l, sizeof(l), "%s/%s", root, link_rel);
	if (symlink(t, l))
		fprintf(stderr, "symlink %s: failed\n", l);
}
static void numa(const char *rel, int n)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s/numa_node", root, rel);
	FILE *f = fopen(p, "w");
	if (!f) {
		fprintf(stderr, "cannot create %s\n", p);
		exit(1);
	}
	fprintf(f, "%d\n", n);
	fclose(f);
}

#define SW "devices/pci0000:00/0000:00:01.0/0000:01:00.0"
static void build(void)
{
	snprintf(root, sizeof(root), "/tmp/nvmeof-topo.%d", (int)getpid());
	mkdir(root, 0755);
	/* a switch below root port 00:01.0 with the NIC and GPU0 under it;
	 * GPU1 on another root port; GPU2 on another root complex */
	mk(SW "/0000:02:08.0/0000:05:00.0");
	mk(SW "/0000:02:10.0/0000:06:00.0");
	mk("devices/pci0000:00/0000:00:02.0/0000:07:00.0");
	mk("devices/pci0000:80/0000:80:01.0/0000:81:00.0");
	mk("devices/pci0000:80/0000:80:02.0/0000:82:00.0");
	mk("devices/virtual/net/dummy0");
	mk("class/infiniband");
	mk("bus/pci/devices");
	mk("class/infiniband/mlx5_0");
	mk("class/infiniband/rxe0");
	mk("class/infiniband/mlx5_1");
	ln(SW "/0000:02:08.0/0000:05:00.0", "class/infiniband/mlx5_0/device");
	ln("devices/virtual/net/dummy0", "class/infiniband/rxe0/device");
	/* an Ethernet NIC (NVMe/TCP) on the other socket, and a virtual one */
	mk("class/net/eth3");
	mk("class/net/tb0");
	ln("devices/pci0000:80/0000:80:01.0/0000:81:00.0", "class/net/eth3/device");
	/* a second HCA, on the other socket */
	ln("devices/pci0000:80/0000:80:02.0/0000:82:00.0", "class/infiniband/mlx5_1/device");
	ln(SW "/0000:02:10.0/0000:06:00.0", "bus/pci/devices/0000:06:00.0");
	ln("devices/pci0000:00/0000:00:02.0/0000:07:00.0", "bus/pci/devices/0000:07:00.0");
	ln("devices/pci0000:80/0000:80:01.0/0000:81:00.0", "bus/pci/devices/0000:81:00.0");
	numa(SW "/0000:02:08.0/0000:05:00.0", 0);
	numa(SW "/0000:02:10.0/0000:06:00.0", 0);
	numa("devices/pci0000:00/0000:00:02.0/0000:07:00.0", 0);
	numa("devices/pci0000:80/0000:80:01.0/0000:81:00.0", 1);
	numa("devices/pci0000:80/0000:80:02.0/0000:82:00.0", 1);
	/* two sockets: CPU 0 on node 0, CPU 1 on node 1 */
	mk("devices/system/cpu/cpu0/node0");
	mk("devices/system/cpu/cpu1/node1");
}

TEST(relationships)
{
	char out[256], pci[64];
	build();
	CHECK_EQ(topo_hca_pci(root, "mlx5_0", pci, sizeof(pci)), 0);
	CHECK_STR(pci, "0000:05:00.0");
	CHECK_EQ(topo_hca_pci(root, "rxe0", pci, sizeof(pci)), (unsigned long long)-1);
	topo_describe(root, "mlx5_0", "0000:06:00.0", out, sizeof(out));
	CHECK(strstr(out, "same PCIe switch below 0000:01:00.0") != NULL);
	topo_describe(root, "mlx5_0", "0000:07:00.0", out, sizeof(out));
	CHECK(strstr(out, "same root complex, different root ports pci0000:00") != NULL);
	topo_describe(root, "mlx5_0", "0000:81:00.0", out, sizeof(out));
	CHECK(strstr(out, "different root complexes") != NULL);
	CHECK(strstr(out, "across NUMA nodes") != NULL);
	topo_describe(root, "rxe0", "0000:06:00.0", out, sizeof(out));
	CHECK(strstr(out, "not a PCI device") != NULL);
	topo_describe(root, "mlx5_0", "0000:99:00.0", out, sizeof(out));
	CHECK(strstr(out, "not found") != NULL);
}

/* fio jobs in threads describe their placement at the same time: every
 * answer must be the one a lone caller gets (strtok's hidden state would
 * mix one thread's path components into another's). */
static const char *const gpus[] = {"0000:06:00.0", "0000:07:00.0", "0000:81:00.0"};
static char want[3][256];
#define ROUNDS 3000
static void *describe_many(void *arg)
{
	long bad = 0, id = (long)(intptr_t)arg;
	char out[256];
	for (int r = 0; r < ROUNDS; r++) {
		int g = (int)((r + id) % 3);
		topo_describe(root, "mlx5_0", gpus[g], out, sizeof(out));
		bad += strcmp(out, want[g]) != 0;
	}
	return (void *)(intptr_t)bad;
}

TEST(concurrent_callers_get_their_own_answer)
{
	pthread_t th[16];
	long bad = 0;
	for (int g = 0; g < 3; g++)
		topo_describe(root, "mlx5_0", gpus[g], want[g], sizeof(want[g]));
	CHECK(strstr(want[0], "same PCIe switch") && strstr(want[1], "different root ports") &&
	      strstr(want[2], "different root complexes"));
	for (long i = 0; i < 16; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, describe_many, (void *)(intptr_t)i), 0);
	for (int i = 0; i < 16; i++) {
		void *rv;
		pthread_join(th[i], &rv);
		bad += (long)(intptr_t)rv;
	}
	if (bad)
		printf("    %ld of %d answers differed from a lone caller's\n", bad, 16 * ROUNDS);
	CHECK_EQ(bad, 0);
}

/* one controller's line and the job's warning, for a one-HCA job */
static void place(const struct topo_place *p, char *line, size_t len, char *warn, size_t wlen)
{
	topo_place_line(root, p, line, len);
	topo_place_warn(root, &p->hca, 1, p->cpu_node, p->mem_node, p->gpu_pci, warn, wlen);
}

TEST(job_placement_line)
{
	char line[600], warn[400];
	int c0 = 0, c1 = 1, both[2] = {0, 1};
	CHECK_EQ(topo_cpus_node(root, &c0, 1), 0);
	CHECK_EQ(topo_cpus_node(root, &c1, 1), 1);
	CHECK_EQ(topo_cpus_node(root, both, 2), (unsigned long long)TOPO_NODES);
	CHECK_EQ(topo_cpus_node(root, (int[]){7}, 1), (unsigned long long)-1);
	CHECK_EQ(topo_hca_node(root, "mlx5_0"), 0);
	CHECK_EQ(topo_hca_node(root, "rxe0"), (unsigned long long)-1);
	/* move_pages: a page not faulted in (-ENOENT, which is TOPO_NODES's
	 * -2) or any other error is an unknown node, never "several" */
	CHECK_EQ(topo_page_node(-ENOENT), (unsigned long long)-1);
	CHECK_EQ(topo_page_node(-EFAULT), (unsigned long long)-1);
	CHECK_EQ(topo_page_node(0), 0);
	CHECK_EQ(topo_page_node(3), 3);

	/* everything on node 0, GPU below the HCA's switch: no warning */
	struct topo_place p = {.hca = "mlx5_0", .cpu_node = 0, .mem_node = 0, .gpu_pci = "0000:06:00.0",
			       .relaxed = true};
	place(&p, line, sizeof(line), warn, sizeof(warn));
	CHECK(strstr(line, "CPUs on NUMA 0, I/O memory on NUMA 0 (normal pages), HCA mlx5_0 (0000:05:00.0, NUMA 0)"));
	CHECK(strstr(line, "PCIe relaxed ordering on"));
	CHECK(strstr(line, "same PCIe switch"));
	CHECK_STR(warn, "");

	/* the job and its memory on node 1, the HCA on node 0 */
	p = (struct topo_place){.hca = "mlx5_0", .cpu_node = 1, .mem_node = 1, .huge = true};
	place(&p, line, sizeof(line), warn, sizeof(warn));
	CHECK(strstr(line, "I/O memory on NUMA 1 (huge pages)"));
	CHECK(strstr(line, "PCIe relaxed ordering off"));
	CHECK(strstr(warn, "cross-node placement: the job's CPUs on NUMA 1, its I/O memory on NUMA 1, "
			   "HCA mlx5_0 on NUMA 0"));

	/* the GPU on another root complex and node */
	p = (struct topo_place){.hca = "mlx5_0", .cpu_node = 0, .mem_node = 0, .gpu_pci = "0000:81:00.0",
				.relaxed = true};
	place(&p, line, sizeof(line), warn, sizeof(warn));
	CHECK(strstr(line, "different root complexes"));
	CHECK(strstr(warn, "GPU on NUMA 1"));

	/* a job spread over both nodes */
	p = (struct topo_place){.hca = "mlx5_0", .cpu_node = TOPO_NODES, .mem_node = 0};
	place(&p, line, sizeof(line), warn, sizeof(warn));
	CHECK(strstr(warn, "CPUs on several NUMA nodes"));

	/* Soft-RoCE on one node: the HCA has no node, nothing to compare */
	p = (struct topo_place){.hca = "rxe0", .cpu_node = 0, .mem_node = 0, .relaxed = true};
	place(&p, line, sizeof(line), warn, sizeof(warn));
	CHECK(strstr(line, "HCA rxe0 (not PCI, NUMA ?)"));
	CHECK_STR(warn, "");

	/* NVMe/TCP: the NIC's node and PCI address from the network
	 * interface; no registration, so no relaxed ordering */
	CHECK_EQ(topo_hca_node(root, "eth3"), 1);
	p = (struct topo_place){.hca = "eth3", .cpu_node = 1, .mem_node = 1, .relaxed = true, .tcp = true};
	place(&p, line, sizeof(line), warn, sizeof(warn));
	CHECK(strstr(line, "CPUs on NUMA 1, I/O memory on NUMA 1 (normal pages), NIC eth3 (0000:81:00.0, NUMA 1), "
			   "NVMe/TCP through the kernel's sockets"));
	CHECK(!strstr(line, "relaxed ordering on"));
	CHECK_STR(warn, "");
	p = (struct topo_place){.hca = "eth3", .cpu_node = 0, .mem_node = 0, .tcp = true};
	place(&p, line, sizeof(line), warn, sizeof(warn));
	CHECK(strstr(warn, "on NUMA 1"));
	/* a virtual interface (the test bed's): no PCI, no node */
	p = (struct topo_place){.hca = "tb0", .cpu_node = 0, .mem_node = 0, .tcp = true};
	place(&p, line, sizeof(line), warn, sizeof(warn));
	CHECK(strstr(line, "NIC tb0 (not PCI, NUMA ?)"));
}

/* A job with files on HCAs of two sockets: one job-level line naming the
 * HCA off the job's node, whichever controller comes first. */
TEST(job_with_hcas_on_two_nodes)
{
	char warn[700];
	const char *h01[] = {"mlx5_0", "mlx5_1"}, *h10[] = {"mlx5_1", "mlx5_0"}, *h00[] = {"mlx5_0", "mlx5_0"},
		   *hsw[] = {"rxe0", "mlx5_1"};
	CHECK_EQ(topo_hca_node(root, "mlx5_1"), 1);
	topo_place_warn(root, h01, 2, 0, 0, NULL, warn, sizeof(warn));
	CHECK(strstr(warn, "cross-node placement: the job's CPUs on NUMA 0, its I/O memory on NUMA 0, "
			   "HCA mlx5_1 on NUMA 1: this run"));
	topo_place_warn(root, h10, 2, 1, 1, NULL, warn, sizeof(warn));
	CHECK(strstr(warn, "its I/O memory on NUMA 1, HCA mlx5_0 on NUMA 0: this run"));
	/* two controllers on one HCA of the job's node: nothing to say */
	topo_place_warn(root, h00, 2, 0, 0, NULL, warn, sizeof(warn));
	CHECK_STR(warn, "");
	/* the software HCA has no node, the other one is off the job's */
	topo_place_warn(root, hsw, 2, 0, 0, NULL, warn, sizeof(warn));
	CHECK(strstr(warn, "its I/O memory on NUMA 0, HCA mlx5_1 on NUMA 1: this run"));

	/* numa_node=auto: the node the HCAs share, else the CPUs', saying which */
	const char *why = NULL;
	CHECK_EQ(topo_hcas_node(root, h00, 2), 0);
	CHECK_EQ(topo_hcas_node(root, hsw, 2), 1);
	CHECK_EQ(topo_hcas_node(root, h01, 2), (unsigned long long)TOPO_NODES);
	CHECK_EQ(topo_hcas_node(root, hsw, 1), (unsigned long long)-1);
	CHECK_EQ(topo_auto_node(topo_hcas_node(root, hsw, 2), 0, &why), 1);
	CHECK(strstr(why, "the HCAs' node"));
	CHECK_EQ(topo_auto_node(topo_hcas_node(root, h01, 2), 1, &why), 1);
	CHECK(strstr(why, "the job's CPUs' node, its HCAs being on different nodes"));
	CHECK_EQ(topo_auto_node(topo_hcas_node(root, h10, 2), 0, &why), 0);
	CHECK_EQ(topo_auto_node(topo_hcas_node(root, hsw, 1), 1, &why), 1);
	CHECK(strstr(why, "HCAs' being unknown"));
	CHECK_EQ(topo_auto_node(TOPO_NODES, TOPO_NODES, &why), (unsigned long long)-1);
	CHECK(strstr(why, "the kernel's choice"));
	/* the placement line says how the node was chosen */
	char line[600];
	struct topo_place p = {.hca = "mlx5_1", .cpu_node = 1, .mem_node = 1, .why = "numa_node=auto: the HCAs' node"};
	topo_place_line(root, &p, line, sizeof(line));
	CHECK(strstr(line, "I/O memory on NUMA 1 (normal pages, numa_node=auto: the HCAs' node), HCA mlx5_1"));
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	CHECK_EQ(system(cmd), 0);
}

int main(void)
{
	static const struct test_case t[] = {T(relationships), T(concurrent_callers_get_their_own_answer),
					     T(job_placement_line), T(job_with_hcas_on_two_nodes)};
	return run_tests("unit-topo", t, 4);
}
