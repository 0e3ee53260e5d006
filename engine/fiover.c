/* The fio this engine was compiled for against the fio that loaded it.
 * fio's engine interface (struct ioengine_ops, thread_data, io_u, the
 * option table) changes shape between releases, and FIO_IOOPS_VERSION does
 * not move with every change: an engine built for another fio may load and
 * then read fio's structures at the wrong offsets. fio exports its version
 * (fio_version_string, linked -rdynamic); when it is not the one of the
 * source this engine was built against (NVMEOF_FIO_VERSION, from the
 * Makefile), the engine says so in one line, at load, and spoils its own
 * ioops version so that fio refuses it before calling into it or reading
 * its option table. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "commit.h"
#include "engine.h"

#ifndef NVMEOF_FIO_VERSION
#error "NVMEOF_FIO_VERSION is not defined: build with the Makefile (it reads FIO_SRC's version)"
#endif

extern struct ioengine_ops ioengine;

__attribute__((constructor)) static void refuse_another_fio(void)
{
	/* absent: not loaded by fio (a test's dlopen), nothing to compare */
	const char *running = dlsym(RTLD_DEFAULT, "fio_version_string");
	if (!running || !strcmp(running, NVMEOF_FIO_VERSION))
		return;
	fprintf(stderr, "nvmeof engine: built for %s but loaded by %s, whose engine interface differs: "
		"rebuild it against this fio's source (make engine FIO_SRC=/path/to/%s-source)\n",
		NVMEOF_FIO_VERSION, running, running);
	ioengine.version = -FIO_IOOPS_VERSION - 1;
}

/* Which build produced a saved fio log: said once per fio process (its
 * jobs share it), before the first job's own lines. */
static void say_version(void)
{
	eng_info("nvmeof: engine %s (commit %s), built for %s\n", NVMEOF_VERSION_STR, NVMEOF_COMMIT, NVMEOF_FIO_VERSION);
}

void eng_say_version(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, say_version);
}
