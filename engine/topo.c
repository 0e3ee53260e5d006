/* PCIe placement of the HCA and the GPU, from sysfs paths: each device's
 * canonical path runs root complex / root port / switch ports / device,
 * so the longest common prefix tells what the traffic crosses. */
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
