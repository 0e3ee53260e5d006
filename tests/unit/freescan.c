/* LD_PRELOAD for tests/unit/secrets.sh: says when a heap block goes back to
 * the allocator holding a DHHC-1 secret (stdio's buffer of a secret file did) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>
void free(void *p)
{
	static void (*real)(void *);
	if (!real)
		real = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	if (p && memmem(p, malloc_usable_size(p), "DHHC-1:", 7)) {
		static const char m[] = "freescan: a freed heap block held a DHHC-1 secret\n";
		if (write(2, m, sizeof(m) - 1) < 0) {}
	}
	real(p);
}
