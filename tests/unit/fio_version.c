/* The engine under a fio of another version (engine/fiover.c): this
 * program stands in for fio, exporting fio_version_string as fio does
 * (-rdynamic), set from argv before it loads the engine as fio does
 * (dlopen, then the "ioengine" symbol and its ioops version).
 *   fio_version ENGINE VERSION  prints the ioops version fio would see:
 *   FIO_IOOPS_VERSION when VERSION is the engine's fio, else another. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* fio.h declares fio's own, const: this one is writable */
#define fio_version_string fio_h_version_string
#include "fio.h"
#undef fio_version_string

char fio_version_string[64];
/* the one variable of fio's the engine refers to; its functions are bound
 * lazily, and loading calls none of them */
int output_format;

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	snprintf(fio_version_string, sizeof(fio_version_string), "%s", argv[2]);
	void *h = dlopen(argv[1], RTLD_LAZY);
	struct ioengine_ops *ops = h ? dlsym(h, "ioengine") : NULL;
	if (!ops) {
		fprintf(stderr, "fio_version: %s\n", dlerror());
		return 2;
	}
	printf("%d %d\n", ops->version, FIO_IOOPS_VERSION);
	return 0;
}
