/* Which completion vector's interrupt a job's CPUs serve, from /proc. */
#ifndef NVMEOF_IRQ_H
#define NVMEOF_IRQ_H

/* Of the nvec completion vectors of the HCA at PCI address pci, the nth
 * (counting from 0, wrapping) whose IRQ's affinity
 * (<procroot>/irq/N/effective_affinity_list, else smp_affinity_list)
 * lies within cpus; -1 when none does
 * or the IRQs cannot be told apart. An IRQ is a vector's when its name in
 * <procroot>/interrupts is "<driver>_comp<V>@pci:<pci>", as mlx5 names
 * them. procroot is "/proc" outside tests. */
int irq_local_vector(const char *procroot, const char *pci, int nvec, const int *cpus, unsigned int ncpu,
		     unsigned int nth);

#endif
