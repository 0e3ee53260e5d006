/* Completion vectors by locality, from a fake /proc shaped like a real
 * mlx5 machine's: vectors 0-3 of 0000:3b:00.0, each IRQ on one CPU. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "irq.h"

static char root[256];

static void put(const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	FILE *f = fopen(p, "w");
	if (!f) {
		fprintf(stderr, "cannot create %s\n", p);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

/* A machine with 400 CPUs: IRQ 45 (vector 1 of 0000:af:00.0, on CPU 3)
 * has a line over 4096 bytes, and the count 46 in CPU 371's column sits
 * exactly at byte 4095, so a 4096-byte read leaves a tail " 46 ... 0  ...
 * mlx5_comp1@pci:0000:af:00.0" that looks like IRQ 46's line; IRQ 46
 * exists, on CPU 1. */
static void long_line(void)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/interrupts", root);
	FILE *f = fopen(p, "a");
	if (!f)
		exit(1);
	fputs("  45:", f);
	for (int c = 0; c < 400; c++)
		fprintf(f, "%11d", c == 371 ? 46 : 0);
	fputs("  IR-PCI-MSI 1572870-edge      mlx5_comp1@pci:0000:af:00.0\n", f);
	fputs("  46:          0          0          0          0  IR-PCI-MSI 1572871-edge      nvme0q1\n", f);
	fclose(f);
	for (int i = 45; i <= 46; i++) {
		snprintf(p, sizeof(p), "%s/irq/%d", root, i);
		mkdir(p, 0755);
	}
	put("irq/45/smp_affinity_list", "3\n");
	put("irq/46/smp_affinity_list", "1\n");
}

static void build(void)
{
	char p[512];
	snprintf(root, sizeof(root), "/tmp/nvmeof-irq.%d", (int)getpid());
	mkdir(root, 0755);
	snprintf(p, sizeof(p), "%s/irq", root);
	mkdir(p, 0755);
	put("interrupts",
	    "            CPU0       CPU1       CPU2       CPU3\n"
	    "  40:          0          0          0          0  IR-PCI-MSI 1572864-edge      mlx5_async0@pci:0000:3b:00.0\n"
	    "  41:        120          0          0          0  IR-PCI-MSI 1572865-edge      mlx5_comp0@pci:0000:3b:00.0\n"
	    "  42:          0        130          0          0  IR-PCI-MSI 1572866-edge      mlx5_comp1@pci:0000:3b:00.0\n"
	    "  43:          0          0        140          0  IR-PCI-MSI 1572867-edge      mlx5_comp2@pci:0000:3b:00.0\n"
	    "  44:          0          0          0        150  IR-PCI-MSI 1572868-edge      mlx5_comp3@pci:0000:3b:00.0\n"
	    "  50:          0          0          0          9  IR-PCI-MSI 1572869-edge      mlx5_comp0@pci:0000:86:00.0\n"
	    " NMI:          0          0          0          0   Non-maskable interrupts\n");
	/* IRQ 43 may go to any CPU, but the kernel delivers it to CPU 2 */
	const char *aff[] = {"0-3", "0", "1", "0-3", "3"};
	for (int i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "%s/irq/%d", root, 40 + i);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "irq/%d/smp_affinity_list", 40 + i);
		put(p, aff[i]);
	}
	put("irq/43/effective_affinity_list", "2\n");
	/* an empty effective list (no effective affinity): smp_affinity_list */
	put("irq/44/effective_affinity_list", "\n");
	snprintf(p, sizeof(p), "%s/irq/50", root);
	mkdir(p, 0755);
	put("irq/50/smp_affinity_list", "2-3\n");
	long_line();
}

TEST(vector_served_by_the_jobs_cpus)
{
	build();
	int c2[] = {2}, c13[] = {1, 3}, c5[] = {5}, all[] = {0, 1, 2, 3};
	CHECK_EQ(irq_local_vector(root, "0000:3b:00.0", 4, c2, 1, 0), 2);
	/* two local vectors: the nth, wrapping, spreads a job's groups */
	CHECK_EQ(irq_local_vector(root, "0000:3b:00.0", 4, c13, 2, 0), 1);
	CHECK_EQ(irq_local_vector(root, "0000:3b:00.0", 4, c13, 2, 1), 3);
	CHECK_EQ(irq_local_vector(root, "0000:3b:00.0", 4, c13, 2, 2), 1);
	/* the async IRQ (all CPUs) is not a completion vector */
	CHECK_EQ(irq_local_vector(root, "0000:3b:00.0", 4, all, 4, 0), 0);
	/* no vector on CPU 5; vectors past the device's count are ignored */
	CHECK_EQ(irq_local_vector(root, "0000:3b:00.0", 4, c5, 1, 0), (unsigned long long)-1);
	CHECK_EQ(irq_local_vector(root, "0000:3b:00.0", 2, c2, 1, 0), (unsigned long long)-1);
	/* another HCA's vectors are not this one's; a software HCA has none */
	CHECK_EQ(irq_local_vector(root, "0000:86:00.0", 4, c2, 1, 0), (unsigned long long)-1);
	CHECK_EQ(irq_local_vector(root, "0000:86:00.0", 4, (int[]){2, 3}, 2, 0), 0);
	CHECK_EQ(irq_local_vector(root, "", 1, c2, 1, 0), (unsigned long long)-1);
	/* the line over 4096 bytes: IRQ 45 (CPU 3), not a count read as IRQ 46 (CPU 1) */
	CHECK_EQ(irq_local_vector(root, "0000:af:00.0", 4, c13 + 1, 1, 0), 1);
	CHECK_EQ(irq_local_vector(root, "0000:af:00.0", 4, c13, 1, 0), (unsigned long long)-1);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	CHECK_EQ(system(cmd), 0);
}

int main(void)
{
	static const struct test_case t[] = {T(vector_served_by_the_jobs_cpus)};
	return run_tests("unit-irq", t, 1);
}
