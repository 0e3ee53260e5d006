/* A completion vector whose interrupt lands on the job's CPUs: the wake-up
 * of a sleeping wait then runs where the job does, not across the machine. */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irq.h"

/* "0-3,8,10-11" within cpus */
static bool list_within(const char *list, const int *cpus, unsigned int ncpu)
{
	const char *p = list;
	bool any = false;
	while (*p && *p != '\n') {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p)
			return false;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b; c++) {
			bool in = false;
			for (unsigned int i = 0; i < ncpu && !in; i++)
				in = cpus[i] == c;
			if (!in)
				return false;
			any = true;
		}
		p = *end == ',' ? end + 1 : end;
	}
	return any;
}

/* Where the interrupt is delivered: effective_affinity_list (the CPUs the
 * kernel actually programmed, often one of a wider mask), else
 * smp_affinity_list (the CPUs it may use) where a kernel or an interrupt
 * chip has no effective one, or leaves it empty. */
static bool irq_within(const char *procroot, int irq, const int *cpus, unsigned int ncpu)
{
	static const char *const file[] = {"effective_affinity_list", "smp_affinity_list"};
	for (int i = 0; i < 2; i++) {
		char path[PATH_MAX], list[512] = "";
		snprintf(path, sizeof(path), "%s/irq/%d/%s", procroot, irq, file[i]);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		bool got = fgets(list, sizeof(list), f) && list[0] && list[0] != '\n';
		fclose(f);
		if (got)
			return list_within(list, cpus, ncpu);
	}
	return false;
}

int irq_local_vector(const char *procroot, const char *pci, int nvec, const int *cpus, unsigned int ncpu,
		     unsigned int nth)
{
	char path[PATH_MAX], want[96], *line = NULL;
	size_t cap = 0;
	int local[256], nlocal = 0;
	if (nvec <= 0 || !pci || !pci[0])
		return -1;
	snprintf(path, sizeof(path), "%s/interrupts", procroot);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	snprintf(want, sizeof(want), "@pci:%s", pci);
	/* Whole lines: with a column per CPU, a line outgrows any fixed buffer
	 * on a machine with a few hundred CPUs, and the tail of a split one
	 * starts with a count that would read as an IRQ number. */
	while (nlocal < 256 && getline(&line, &cap, f) > 0) {
		int irq, v, n = -1;
		char *name = strrchr(line, ' '), *comp;
		/* "%d:" matches without the ':' too; %n finds what follows */
		if (sscanf(line, " %d%n", &irq, &n) != 1 || n < 0 || line[n] != ':' || !name)
			continue;
		name++;
		name[strcspn(name, "\n")] = '\0';
		comp = strstr(name, "_comp");
		if (!comp || !strstr(comp, want) || sscanf(comp, "_comp%d@", &v) != 1 || v < 0 || v >= nvec)
			continue;
		if (irq_within(procroot, irq, cpus, ncpu))
			local[nlocal++] = v;
	}
	free(line);
	fclose(f);
	return nlocal ? local[nth % (unsigned int)nlocal] : -1;
}
