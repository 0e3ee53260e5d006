/* The memory scans' walk (memscan.c, tlsscan.c): the process's private
 * writable mappings (heap, stacks, .data/.bss, anonymous maps), one line of
 * /proc/self/maps at a time. Shared mappings (fio's thread_data, device
 * pages) and the kernel's vvar/vsyscall pages are not read. */
#ifndef NVMEOF_TEST_MAPS_H
#define NVMEOF_TEST_MAPS_H
#include <stdio.h>
#include <string.h>

/* The next such mapping's bounds, its maps line in line; 0 at the end. */
static inline int maps_next_private_rw(FILE *maps, char *line, int cap, unsigned long *lo, unsigned long *hi)
{
	char perms[8];
	while (fgets(line, cap, maps))
		if (sscanf(line, "%lx-%lx %7s", lo, hi, perms) == 3 && !strcmp(perms, "rw-p") &&
		    !strstr(line, "[vvar") && !strstr(line, "[vsyscall"))
			return 1;
	return 0;
}
#endif
