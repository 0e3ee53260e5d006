/* The option structs across versions of the header (the rules are in
 * nvmeof.h, "Options"): the library reads a caller's struct only through
 * these, into a whole struct of this version. */
#ifndef NVMEOF_OPTS_H
#define NVMEOF_OPTS_H

#include "nvmeof.h"

/* in: the caller's struct of in->size bytes (0: the first layout). out: this
 * version's whole struct (its size is ours), defaults where the caller's
 * ends. NVMEOF_EINVAL or NVMEOF_ENOTSUP (with a message) per the rules;
 * nothing past in->size read. */
int ctrl_opts_in(const struct nvmeof_ctrl_opts *in, struct nvmeof_ctrl_opts *out);
/* The default port nvmeof_ctrl_opts_init puts in trsvcid ("4420"): a
 * trsvcid pointing here was left at the default, not chosen (discovery over
 * NVMe/TCP then takes NVMEOF_TCP_DISC_PORT). */
extern const char ctrl_default_trsvcid[];
/* The same; in NULL gives every default. */
int queue_opts_in(const struct nvmeof_queue_opts *in, struct nvmeof_queue_opts *out);

#endif
