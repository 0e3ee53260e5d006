/* The end-of-job lines of a path's losses as one multipath queue saw
 * them: fio-free, so that a unit test reads them. */
#ifndef NVMEOF_LOSSES_H
#define NVMEOF_LOSSES_H

#include "nvmeof.h"

typedef void (*losses_say_fn)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line per loss of path `path` (from 0) that queue pair qp (from 0)
 * of mq kept, then one saying that the rest were not kept, if any were
 * not: each through say. */
void losses_tell(const struct nvmeof_mpath_queue *mq, unsigned int path, unsigned int qp, losses_say_fn say);

#endif
