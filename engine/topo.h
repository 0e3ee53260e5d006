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

/* Just the relation: "same PCIe switch", "same root port", "same root
 * complex, different root ports" or "different root complexes", with where
 * ("below 0000:3a:02.0", the root port, the root complex) in where; NULL
 * when the HCA is not a PCI device or the GPU is not in sysfs. */
const char *topo_relation(const char *sysroot, const char *hca, const char *gpu_pci, char *where, size_t wlen);
/* A PCI device's NUMA node, -1 unknown. */
int topo_pci_node(const char *sysroot, const char *pci);

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

/* The node all of a job's HCAs share: -1 when none has a known node (a
 * software device), TOPO_NODES when the known ones differ. */
int topo_hcas_node(const char *sysroot, const char *const *hcas, unsigned int n);
/* numa_node=auto: the HCAs' shared node, else the job's CPUs' node, else
 * -1 (the kernel's choice); *why says which, for the placement line. */
int topo_auto_node(int hcas_node, int cpu_node, const char **why);

/* What a job's I/O runs on: its CPUs, its buffers, the HCA, the GPU. */
struct topo_place {
	const char *hca;
	int cpu_node;        /* topo_cpus_node */
	int mem_node;        /* where the buffer's pages are, -1 unknown */
	const char *gpu_pci; /* NULL: host buffers */
	bool relaxed, huge;
	bool tcp;            /* NVMe/TCP: hca names the network interface */
	const char *why;     /* how the memory's node was chosen, or NULL */
};
/* The placement line of one of the job's controllers. */
void topo_place_line(const char *sysroot, const struct topo_place *p, char *line, size_t len);
/* One line for the whole job in warn (else empty), naming what sits on
 * different NUMA nodes, among the CPUs, the memory, every one of the job's
 * HCAs and the GPU: a locality study must not measure cross-socket traffic
 * by accident. */
void topo_place_warn(const char *sysroot, const char *const *hcas, unsigned int nhca, int cpu_node, int mem_node,
		     const char *gpu_pci, char *warn, size_t wlen);

#endif
