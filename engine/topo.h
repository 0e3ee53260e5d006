/* Where an RDMA device and a GPU sit on PCIe, read from sysfs. */
#ifndef NVMEOF_TOPO_H
#define NVMEOF_TOPO_H

#include <stdbool.h>
#include <stddef.h>

/* The HCA's PCI address ("0000:3b:00.0"); -1 when it is not a PCI device
 * (Soft-RoCE, siw). sysroot is "/sys" outside tests. */
int topo_hca_pci(const char *sysroot, const char *hca, char *pci, size_t len);
/* One line relating the two: same PCIe switch, same root port, same root
 * complex, or different root complexes (with NUMA nodes). */
void topo_describe(const char *sysroot, const char *hca, const char *gpu_pci, char *out, size_t len);

/* NUMA nodes from sysfs; -1 where sysfs has none (a software device, a
 * machine without NUMA). */
int topo_hca_node(const char *sysroot, const char *hca);
/* The node of all of cpus, -1 unknown, TOPO_NODES when they span several. */
#define TOPO_NODES (-2)
int topo_cpus_node(const char *sysroot, const int *cpus, unsigned int n);
/* A page's node from move_pages(2)'s per-page status, -1 unknown: a
 * negative status is an errno (-ENOENT for a page not yet faulted in),
 * and -ENOENT is -2, TOPO_NODES, which would read as "several nodes". */
int topo_page_node(int status);

/* What a job's I/O runs on: its CPUs, its buffers, the HCA, the GPU. */
struct topo_place {
	const char *hca;
	int cpu_node;        /* topo_cpus_node */
	int mem_node;        /* where the buffer's pages are, -1 unknown */
	const char *gpu_pci; /* NULL: host buffers */
	bool relaxed, huge;
};
/* The job's placement line, and in warn (else empty) one line naming what
 * sits on different NUMA nodes: a locality study must not measure
 * cross-socket traffic by accident. */
void topo_place_line(const char *sysroot, const struct topo_place *p, char *line, size_t len, char *warn,
		     size_t wlen);

#endif
