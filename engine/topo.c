/* PCIe placement of the HCA and the GPU, from sysfs paths: each device's
 * canonical path runs root complex / root port / switch ports / device,
 * so the longest common prefix tells what the traffic crosses. */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"

static int real(const char *path, char *out)
{
	return realpath(path, out) ? 0 : -1;
}

int topo_hca_pci(const char *sysroot, const char *hca, char *pci, size_t len)
{
	char p[PATH_MAX], r[PATH_MAX];
	snprintf(p, sizeof(p), "%s/class/infiniband/%s/device", sysroot, hca);
	if (real(p, r) || !strstr(r, "/pci"))
		return -1;
	snprintf(pci, len, "%s", basename(r));
	return 0;
}

static int numa_node(const char *devpath)
{
	char p[PATH_MAX];
	int n = -1;
	snprintf(p, sizeof(p), "%s/numa_node", devpath);
	FILE *f = fopen(p, "r");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/* Path components after ".../devices/": pci0000:3a, 0000:3a:00.0, ...
 * strtok_r: jobs describe their placement from concurrent threads. */
static int split(char *path, char **comp, int max)
{
	char *d = strstr(path, "/devices/"), *save = NULL;
	int n = 0;
	if (!d)
		return 0;
	for (char *tok = strtok_r(d + 9, "/", &save); tok && n < max; tok = strtok_r(NULL, "/", &save))
		comp[n++] = tok;
	return n;
}

void topo_describe(const char *sysroot, const char *hca, const char *gpu_pci, char *out, size_t len)
{
	char p[PATH_MAX], hp[PATH_MAX], gp[PATH_MAX], hpci[64] = "";
	char *hc[32], *gc[32];
	snprintf(p, sizeof(p), "%s/class/infiniband/%s/device", sysroot, hca);
	if (real(p, hp) || !strstr(hp, "/pci")) {
		snprintf(out, len, "HCA %s is not a PCI device (software RDMA): no PCIe path to the GPU", hca);
		return;
	}
	topo_hca_pci(sysroot, hca, hpci, sizeof(hpci));
	snprintf(p, sizeof(p), "%s/bus/pci/devices/%s", sysroot, gpu_pci);
	if (real(p, gp)) {
		snprintf(out, len, "HCA %s (%s); GPU %s not found in sysfs", hca, hpci, gpu_pci);
		return;
	}
	int hn = numa_node(hp), gn = numa_node(gp);
	int nh = split(hp, hc, 32), ng = split(gp, gc, 32), common = 0;
	while (common < nh - 1 && common < ng - 1 && !strcmp(hc[common], gc[common]))
		common++;
	const char *rel;
	char where[96] = "";
	if (common == 0) {
		rel = "different root complexes";
	} else if (common == 1) {
		rel = "same root complex, different root ports";
		snprintf(where, sizeof(where), " %s", hc[0]);
	} else if (common == 2) {
		rel = "same root port";
		snprintf(where, sizeof(where), " %s", hc[1]);
	} else {
		rel = "same PCIe switch";
		snprintf(where, sizeof(where), " below %s", hc[common - 1]);
	}
	snprintf(out, len, "HCA %s (%s, NUMA %d) and GPU %s (NUMA %d): %s%s%s", hca, hpci, hn, gpu_pci, gn,
		 rel, where, hn >= 0 && gn >= 0 && hn != gn ? ", across NUMA nodes" : "");
}

int topo_hca_node(const char *sysroot, const char *hca)
{
	char p[PATH_MAX], r[PATH_MAX];
	snprintf(p, sizeof(p), "%s/class/infiniband/%s/device", sysroot, hca);
	if (real(p, r) || !strstr(r, "/pci"))
		return -1;
	return numa_node(r);
}

/* sysfs links each CPU to its node: .../cpu/cpuN/nodeM */
static int cpu_node(const char *sysroot, int cpu)
{
	char p[PATH_MAX];
	int n = -1;
	snprintf(p, sizeof(p), "%s/devices/system/cpu/cpu%d", sysroot, cpu);
	DIR *d = opendir(p);
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		if (!strncmp(e->d_name, "node", 4) && sscanf(e->d_name + 4, "%d", &n) == 1)
			break;
	closedir(d);
	return n;
}

int topo_cpus_node(const char *sysroot, const int *cpus, unsigned int n)
{
	int node = -1;
	for (unsigned int i = 0; i < n; i++) {
		int c = cpu_node(sysroot, cpus[i]);
		if (c < 0)
			return -1;
		if (node >= 0 && c != node)
			return TOPO_NODES;
		node = c;
	}
	return node;
}

int topo_page_node(int status)
{
	return status >= 0 ? status : -1;
}

static const char *node_str(int n, char *buf, size_t len)
{
	if (n == TOPO_NODES)
		return "several NUMA nodes";
	if (n < 0)
		return "NUMA ?";
	snprintf(buf, len, "NUMA %d", n);
	return buf;
}

void topo_place_line(const char *sysroot, const struct topo_place *p, char *line, size_t len, char *warn,
		     size_t wlen)
{
	char pci[64] = "not PCI", gline[320] = "", a[32], b[32], c[32], d[32];
	int hn = topo_hca_node(sysroot, p->hca), gn = -1;
	topo_hca_pci(sysroot, p->hca, pci, sizeof(pci));
	if (p->gpu_pci) {
		char gp[PATH_MAX], r[PATH_MAX];
		topo_describe(sysroot, p->hca, p->gpu_pci, gline, sizeof(gline));
		snprintf(gp, sizeof(gp), "%s/bus/pci/devices/%s", sysroot, p->gpu_pci);
		gn = real(gp, r) ? -1 : numa_node(r);
	}
	snprintf(line, len, "CPUs on %s, I/O memory on %s (%s), HCA %s (%s, %s), PCIe relaxed ordering %s%s%s",
		 node_str(p->cpu_node, a, sizeof(a)), node_str(p->mem_node, b, sizeof(b)),
		 p->huge ? "huge pages" : "normal pages", p->hca, pci, node_str(hn, c, sizeof(c)),
		 p->relaxed ? "on" : "off", p->gpu_pci ? "; " : "", gline);
	/* Only nodes that are known are compared: a software HCA has none. */
	int nodes[4] = {p->cpu_node, p->mem_node, hn, gn}, first = -1;
	bool differ = false;
	for (int i = 0; i < 4; i++) {
		if (nodes[i] == TOPO_NODES)
			differ = true;
		if (nodes[i] < 0)
			continue;
		if (first >= 0 && nodes[i] != first)
			differ = true;
		if (first < 0)
			first = nodes[i];
	}
	if (!differ) {
		if (wlen)
			warn[0] = '\0';
		return;
	}
	snprintf(warn, wlen, "cross-node placement: the job's CPUs on %s, its I/O memory on %s, HCA %s on %s%s%s: "
		 "this run includes traffic between NUMA nodes (set numa_node= and cpus_allowed= to the HCA's node)",
		 node_str(p->cpu_node, a, sizeof(a)), node_str(p->mem_node, b, sizeof(b)), p->hca,
		 node_str(hn, c, sizeof(c)), p->gpu_pci ? ", GPU on " : "", p->gpu_pci ? node_str(gn, d, sizeof(d)) : "");
}
