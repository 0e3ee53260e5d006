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

static bool irq_within(const char *procroot, int irq, const int *cpus, unsigned int ncpu)
{
	char path[PATH_MAX], list[512] = "";
	snprintf(path, sizeof(path), "%s/irq/%d/smp_affinity_list", procroot, irq);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(list, sizeof(list), f) && list_within(list, cpus, ncpu);
	fclose(f);
	return ok;
}

int irq_local_vector(const char *procroot, const char *pci, int nvec, const int *cpus, unsigned int ncpu,
		     unsigned int nth)
{
	char path[PATH_MAX], line[4096], want[96];
	int local[256], nlocal = 0;
	if (nvec <= 0 || !pci || !pci[0])
		return -1;
	snprintf(path, sizeof(path), "%s/interrupts", procroot);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	snprintf(want, sizeof(want), "@pci:%s", pci);
	while (fgets(line, sizeof(line), f) && nlocal < 256) {
		int irq, v;
		char *name = strrchr(line, ' '), *comp;
		if (sscanf(line, " %d:", &irq) != 1 || !name)
			continue;
		name++;
		name[strcspn(name, "\n")] = '\0';
		comp = strstr(name, "_comp");
		if (!comp || !strstr(comp, want) || sscanf(comp, "_comp%d@", &v) != 1 || v < 0 || v >= nvec)
			continue;
		if (irq_within(procroot, irq, cpus, ncpu))
			local[nlocal++] = v;
	}
	fclose(f);
	return nlocal ? local[nth % (unsigned int)nlocal] : -1;
}
