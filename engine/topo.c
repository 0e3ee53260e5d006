/* PCIe placement of the HCA and the GPU, from sysfs paths: each device's
 * canonical path runs root complex / root port / switch ports / device,
 * so the longest common prefix tells what the traffic crosses. */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo.h"

static int real(const char *path, char *out)
{
	return realpath(path, out) ? 0 : -1;
}

/* An RDMA device's, or (NVMe/TCP) a network interface's, device link */
static void dev_link(const char *sysroot, const char *name, char *p, size_t len)
{
	snprintf(p, len, "%s/class/infiniband/%s/device", sysroot, name);
	if (access(p, F_OK))
		snprintf(p, len, "%s/class/net/%s/device", sysroot, name);
}

int topo_hca_pci(const char *sysroot, const char *hca, char *pci, size_t len)
{
	char p[PATH_MAX], r[PATH_MAX];
	dev_link(sysroot, hca, p, sizeof(p));
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

const char *topo_relation(const char *sysroot, const char *hca, const char *gpu_pci, char *where, size_t wlen)
{
	char p[PATH_MAX], hp[PATH_MAX], gp[PATH_MAX];
	char *hc[32], *gc[32];
	*where = '\0';
	dev_link(sysroot, hca, p, sizeof(p));
	if (real(p, hp) || !strstr(hp, "/pci"))
		return NULL;
	snprintf(p, sizeof(p), "%s/bus/pci/devices/%s", sysroot, gpu_pci);
	if (real(p, gp))
		return NULL;
	int nh = split(hp, hc, 32), ng = split(gp, gc, 32), common = 0;
	while (common < nh - 1 && common < ng - 1 && !strcmp(hc[common], gc[common]))
		common++;
	if (common == 0)
		return "different root complexes";
	if (common == 1) {
		snprintf(where, wlen, "%s", hc[0]);
		return "same root complex, different root ports";
	}
	if (common == 2) {
		snprintf(where, wlen, "%s", hc[1]);
		return "same root port";
	}
	snprintf(where, wlen, "below %s", hc[common - 1]);
	return "same PCIe switch";
}

void topo_describe(const char *sysroot, const char *hca, const char *gpu_pci, char *out, size_t len)
{
	char p[PATH_MAX], hp[PATH_MAX], gp[PATH_MAX], hpci[64] = "", where[96];
	dev_link(sysroot, hca, p, sizeof(p));
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
	const char *rel = topo_relation(sysroot, hca, gpu_pci, where, sizeof(where));
	snprintf(out, len, "HCA %s (%s, NUMA %d) and GPU %s (NUMA %d): %s%s%s%s", hca, hpci, hn, gpu_pci, gn,
		 rel, *where ? " " : "", where, hn >= 0 && gn >= 0 && hn != gn ? ", across NUMA nodes" : "");
}

int topo_pci_node(const char *sysroot, const char *pci)
{
	char p[PATH_MAX], r[PATH_MAX];
	snprintf(p, sizeof(p), "%s/bus/pci/devices/%s", sysroot, pci);
	return real(p, r) ? -1 : numa_node(r);
}

int topo_hca_node(const char *sysroot, const char *hca)
{
	char p[PATH_MAX], r[PATH_MAX];
	dev_link(sysroot, hca, p, sizeof(p));
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

static int gpu_node(const char *sysroot, const char *gpu_pci)
{
	char gp[PATH_MAX], r[PATH_MAX];
	if (!gpu_pci)
		return -1;
	snprintf(gp, sizeof(gp), "%s/bus/pci/devices/%s", sysroot, gpu_pci);
	return real(gp, r) ? -1 : numa_node(r);
}

int topo_hcas_node(const char *sysroot, const char *const *hcas, unsigned int n)
{
	int node = -1;
	for (unsigned int i = 0; i < n; i++) {
		int h = topo_hca_node(sysroot, hcas[i]);
		if (h < 0)
			continue;
		if (node >= 0 && h != node)
			return TOPO_NODES;
		node = h;
	}
	return node;
}

int topo_auto_node(int hcas_node, int cpu_node, const char **why)
{
	if (hcas_node >= 0) {
		*why = "numa_node=auto: the HCAs' node";
		return hcas_node;
	}
	if (cpu_node >= 0) {
		*why = hcas_node == TOPO_NODES ? "numa_node=auto: the job's CPUs' node, its HCAs being on different nodes"
					       : "numa_node=auto: the job's CPUs' node, its HCAs' being unknown";
		return cpu_node;
	}
	*why = "numa_node=auto: the kernel's choice, neither the HCAs nor the CPUs sharing a known node";
	return -1;
}

void topo_place_line(const char *sysroot, const struct topo_place *p, char *line, size_t len)
{
	char pci[64] = "not PCI", gline[320] = "", a[32], b[32], c[32];
	int hn = topo_hca_node(sysroot, p->hca);
	topo_hca_pci(sysroot, p->hca, pci, sizeof(pci));
	if (p->gpu_pci)
		topo_describe(sysroot, p->hca, p->gpu_pci, gline, sizeof(gline));
	if (p->tcp) { /* no memory registration: the kernel copies to and from the socket */
		snprintf(line, len, "CPUs on %s, I/O memory on %s (%s%s%s), NIC %s (%s, %s), NVMe/TCP through the "
			 "kernel's sockets (no PCIe relaxed ordering: it applies to a registration)",
			 node_str(p->cpu_node, a, sizeof(a)), node_str(p->mem_node, b, sizeof(b)),
			 p->huge ? "huge pages" : "normal pages", p->why ? ", " : "", p->why ? p->why : "",
			 p->hca[0] ? p->hca : "unknown", pci, node_str(hn, c, sizeof(c)));
		return;
	}
	snprintf(line, len, "CPUs on %s, I/O memory on %s (%s%s%s), HCA %s (%s, %s), PCIe relaxed ordering %s%s%s",
		 node_str(p->cpu_node, a, sizeof(a)), node_str(p->mem_node, b, sizeof(b)),
		 p->huge ? "huge pages" : "normal pages", p->why ? ", " : "", p->why ? p->why : "", p->hca, pci,
		 node_str(hn, c, sizeof(c)), p->relaxed ? "on" : "off", p->gpu_pci ? "; " : "", gline);
}

void topo_place_warn(const char *sysroot, const char *const *hcas, unsigned int nhca, int cpu_node, int mem_node,
		     const char *gpu_pci, char *warn, size_t wlen)
{
	char a[32], b[32], c[32], d[32], hpart[400] = "";
	int gn = gpu_node(sysroot, gpu_pci);
	/* Only nodes that are known are compared: a software HCA has none. */
	int first = -1;
	bool differ = cpu_node == TOPO_NODES || mem_node == TOPO_NODES;
	int fixed[3] = {cpu_node, mem_node, gn};
	for (unsigned int i = 0; i < 3 + nhca; i++) {
		int n = i < 3 ? fixed[i] : topo_hca_node(sysroot, hcas[i - 3]);
		if (n < 0)
			continue;
		if (first >= 0 && n != first)
			differ = true;
		if (first < 0)
			first = n;
	}
	if (wlen)
		warn[0] = '\0';
	if (!differ)
		return;
	/* The HCAs off the node the job's memory (else its CPUs, else its
	 * first HCA) is on; all of them when none is. A job's controllers
	 * often share an HCA: each is named once. */
	int ref = mem_node >= 0 ? mem_node : cpu_node >= 0 ? cpu_node : topo_hcas_node(sysroot, hcas, nhca > 0 ? 1 : 0);
	for (int pass = 0; pass < 2 && !hpart[0]; pass++)
		for (unsigned int i = 0; i < nhca; i++) {
			int h = topo_hca_node(sysroot, hcas[i]);
			bool seen = false;
			for (unsigned int k = 0; k < i && !seen; k++)
				seen = !strcmp(hcas[k], hcas[i]);
			if (seen || (pass == 0 && (h < 0 || ref < 0 || h == ref)))
				continue;
			size_t l = strlen(hpart);
			snprintf(hpart + l, sizeof(hpart) - l, "%sHCA %s on %s", l ? ", " : "", hcas[i],
				 node_str(h, c, sizeof(c)));
		}
	snprintf(warn, wlen, "cross-node placement: the job's CPUs on %s, its I/O memory on %s%s%s%s%s: "
		 "this run includes traffic between NUMA nodes (set numa_node= and cpus_allowed= to the HCA's node)",
		 node_str(cpu_node, a, sizeof(a)), node_str(mem_node, b, sizeof(b)), hpart[0] ? ", " : "", hpart,
		 gpu_pci ? ", GPU on " : "", gpu_pci ? node_str(gn, d, sizeof(d)) : "");
}
