/* Admin commands with data, after bring-up, from any thread. */
#ifndef NVMEOF_ADMINIO_H
#define NVMEOF_ADMINIO_H

#include "nvmeof.h"

/* Runs sqe on the admin queue under its lock; len bytes of data come back
 * into buf (up to 4 KiB through the queue's scratch buffer, more through a
 * region registered for the call). */
int admin_exec(struct nvmeof_ctrl *c, const uint8_t *sqe, void *buf, uint32_t len,
	       struct nvmeof_cpl *cpl, const char *what);
/* Re-reads the active namespace list and identifies what is new or named
 * in changed (NULL: all); the rest leave the table. */
int admin_ns_rescan(struct nvmeof_ctrl *c, const uint32_t *changed, uint32_t nchanged);

#endif
