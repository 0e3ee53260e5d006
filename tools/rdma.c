/* list-rdma: this host's RDMA devices, for placing a job (docs/tool.md and
 * man nvmeof): each device's ports (state, link layer, network device
 * and its IP addresses: what -w/srcaddr= names), its PCI address and NUMA
 * node, and where each GPU sits relative to it on PCIe (same switch, same
 * root port, same root complex), all from sysfs (--sysfs=ROOT: another
 * tree, for tests) and getifaddrs(3). Touches no device. */
#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "out.h"
#include "topo.h"

/* The first line of a sysfs file, without its newline; "" when absent. */
static void readline(char *buf, size_t len, const char *fmt, const char *a, const char *b)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), fmt, a, b);
	FILE *f = fopen(p, "r");
	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

static int by_name(const struct dirent **x, const struct dirent **y)
{
	return strcmp((*x)->d_name, (*y)->d_name);
}

static int not_dot(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* GPUs: PCI display (0x0300) and 3D (0x0302) controllers */
static int gpus(const char *root, char ***out)
{
	char dir[PATH_MAX], cls[32];
	struct dirent **e;
	snprintf(dir, sizeof(dir), "%s/bus/pci/devices", root);
	int n = scandir(dir, &e, not_dot, by_name), k = 0;
	*out = n > 0 ? calloc((size_t)n, sizeof(char *)) : NULL;
	for (int i = 0; i < n; i++) {
		readline(cls, sizeof(cls), "%s/%s/class", dir, e[i]->d_name);
		if (*out && (!strncmp(cls, "0x0300", 6) || !strncmp(cls, "0x0302", 6)))
			(*out)[k++] = strdup(e[i]->d_name);
		free(e[i]);
	}
	if (n > 0)
		free(e);
	return k;
}

static void addresses(struct out *p, const char *netdev, const struct ifaddrs *ifa, char *line, size_t len)
{
	out_arr_begin(p, "addresses");
	for (; ifa; ifa = ifa->ifa_next) {
		char a[INET6_ADDRSTRLEN] = "";
		if (!ifa->ifa_addr || strcmp(ifa->ifa_name, netdev))
			continue;
		if (ifa->ifa_addr->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)ifa->ifa_addr)->sin_addr, a, sizeof(a));
		else if (ifa->ifa_addr->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)ifa->ifa_addr)->sin6_addr, a,
				  sizeof(a));
		if (!*a)
			continue;
		if (p->json)
			out_str(p, NULL, a);
		size_t l = strlen(line);
		snprintf(line + l, len - l, " %s", a);
	}
	out_arr_end(p);
}

static void port(struct out *p, const char *root, const char *dev, const char *port, const struct ifaddrs *ifa)
{
	char d[PATH_MAX], state[64], ll[64], netdev[64], line[1024];
	snprintf(d, sizeof(d), "%s/class/infiniband/%s", root, dev);
	readline(state, sizeof(state), "%s/ports/%s/state", d, port);
	readline(ll, sizeof(ll), "%s/ports/%s/link_layer", d, port);
	/* the port's network device: its GID table's, else Soft-RoCE's parent */
	readline(netdev, sizeof(netdev), "%s/ports/%s/gid_attrs/ndevs/0", d, port);
	if (!*netdev)
		readline(netdev, sizeof(netdev), "%s/%s", d, "parent");
	const char *st = strchr(state, ':') ? strchr(state, ':') + 2 : state; /* "4: ACTIVE" */
	out_obj_begin(p, NULL);
	if (p->json)
		out_u64(p, "port", strtoul(port, NULL, 10));
	if (p->json)
		out_str(p, "state", st);
	if (p->json)
		out_str(p, "link_layer", ll);
	if (p->json)
		out_str(p, "netdev", netdev);
	snprintf(line, sizeof(line), "  port %s: %s, %s, netdev %s,", port, *st ? st : "?", *ll ? ll : "?",
		 *netdev ? netdev : "-");
	addresses(p, netdev, *netdev ? ifa : NULL, line, sizeof(line));
	out_obj_end(p);
	if (!p->json)
		printf("%s%s\n", line, strchr(line + strlen(line) - 1, ',') ? " no address" : "");
}

static void device(struct out *p, const char *root, const char *dev, char **gpu, int ngpu, const struct ifaddrs *ifa)
{
	char dir[PATH_MAX], pci[64] = "", where[96];
	struct dirent **e;
	bool is_pci = !topo_hca_pci(root, dev, pci, sizeof(pci));
	int node = topo_hca_node(root, dev);
	out_obj_begin(p, NULL);
	if (p->json)
		out_str(p, "name", dev);
	if (p->json)
		out_str(p, "pci", pci);
	if (p->json)
		out_i64(p, "numa_node", node);
	if (!p->json)
		printf("%s: %s, NUMA node %s\n", dev, is_pci ? pci : "not a PCI device (software RDMA)",
		       node >= 0 ? (snprintf(where, sizeof(where), "%d", node), where) : "unknown");
	out_arr_begin(p, "ports");
	snprintf(dir, sizeof(dir), "%s/class/infiniband/%s/ports", root, dev);
	int n = scandir(dir, &e, not_dot, by_name);
	for (int i = 0; i < n; i++) {
		port(p, root, dev, e[i]->d_name, ifa);
		free(e[i]);
	}
	if (n > 0)
		free(e);
	out_arr_end(p);
	out_arr_begin(p, "gpus");
	for (int g = 0; g < ngpu; g++) {
		const char *rel = topo_relation(root, dev, gpu[g], where, sizeof(where));
		int gn = topo_pci_node(root, gpu[g]);
		out_obj_begin(p, NULL);
		if (p->json)
			out_str(p, "pci", gpu[g]);
		if (p->json)
			out_i64(p, "numa_node", gn);
		if (p->json)
			out_str(p, "relation", rel ? rel : "no PCIe path (software RDMA)");
		if (p->json)
			out_str(p, "where", where);
		out_obj_end(p);
		if (!p->json)
			printf("  GPU %s (NUMA node %d): %s%s%s%s\n", gpu[g], gn, rel ? rel : "no PCIe path (software RDMA)",
			       *where ? " " : "", where, node >= 0 && gn >= 0 && node != gn ? ", across NUMA nodes" : "");
	}
	out_arr_end(p);
	out_obj_end(p);
}

int cmd_list_rdma(struct args *a)
{
	const char *root = a->sysfs ? a->sysfs : "/sys";
	char dir[PATH_MAX], **gpu;
	struct dirent **e;
	struct ifaddrs *ifa = NULL;
	struct out p;
	snprintf(dir, sizeof(dir), "%s/class/infiniband", root);
	int n = scandir(dir, &e, not_dot, by_name);
	if (n < 0)
		n = 0; /* no RDMA stack loaded: no devices */
	int ngpu = gpus(root, &gpu);
	if (getifaddrs(&ifa))
		ifa = NULL;
	out_init(&p, stdout, a->json, 0);
	out_arr_begin(&p, "devices");
	for (int i = 0; i < n; i++) {
		device(&p, root, e[i]->d_name, gpu, ngpu, ifa);
		free(e[i]);
	}
	out_arr_end(&p);
	if (a->json)
		out_end(&p);
	else if (!n)
		printf("no RDMA devices (%s is empty or absent: is rdma-core's kernel side loaded?)\n", dir);
	if (n > 0)
		free(e);
	for (int g = 0; g < ngpu; g++)
		free(gpu[g]);
	free(gpu);
	if (ifa)
		freeifaddrs(ifa);
	return 0;
}
