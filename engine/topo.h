/* Where an RDMA device and a GPU sit on PCIe, read from sysfs. */
#ifndef NVMEOF_TOPO_H
#define NVMEOF_TOPO_H

#include <stddef.h>

/* The HCA's PCI address ("0000:3b:00.0"); -1 when it is not a PCI device
 * (Soft-RoCE, siw). sysroot is "/sys" outside tests. */
int topo_hca_pci(const char *sysroot, const char *hca, char *pci, size_t len);
/* One line relating the two: same PCIe switch, same root port, same root
 * complex, or different root complexes (with NUMA nodes). */
void topo_describe(const char *sysroot, const char *hca, const char *gpu_pci, char *out, size_t len);

#endif
