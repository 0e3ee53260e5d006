/*
 * Option structs that can grow without breaking the ABI. A caller compiled
 * against an older header passes a shorter struct, one compiled against a
 * newer header a longer one; the size member says which. Everything here
 * touches the caller's memory only within that size.
 */
#include <string.h>

#include "internal.h"
#include "opts.h"

/* The end of the last field of the first layout (version 0.1). Fields added
 * later go after these, so these lines never change. */
#define END_OF(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))
#define CTRL_OPTS_V0 END_OF(struct nvmeof_ctrl_opts, spin_us)
#define QUEUE_OPTS_V0 END_OF(struct nvmeof_queue_opts, group)

/* Writes this version's defaults d (ours bytes) into the caller's struct of
 * size bytes: the part both know, then zero for the part only the caller
 * knows. */
static void opts_out(void *o, size_t size, const void *d, size_t ours)
{
	if (!o || size < sizeof(size_t)) /* not even room for size itself */
		return;
	memcpy(o, d, size < ours ? size : ours);
	if (size > ours)
		memset((char *)o + ours, 0, size - ours);
}

/* Copies the caller's struct (size bytes, 0 meaning v0) over this version's
 * defaults in out (ours bytes). */
static int opts_in(const void *in, size_t size, void *out, size_t ours, size_t v0, const char *what)
{
	if (!size)
		size = v0;
	if (size < v0)
		return nvmeof_err(NVMEOF_EINVAL, "%s: size %zu is below the smallest layout (%zu bytes): "
				  "initialize it with %s_init()", what, size, v0, what);
	if (size > ours) {
		const unsigned char *p = (const unsigned char *)in;
		for (size_t i = ours; i < size; i++)
			if (p[i])
				return nvmeof_err(NVMEOF_ENOTSUP,
						  "%s: byte %zu of %zu is set, but this library knows only the "
						  "first %zu bytes (an option of a newer version)",
						  what, i, size, ours);
		size = ours;
	}
	memcpy(out, in, size);
	return 0;
}

const char ctrl_default_trsvcid[] = "4420";

static void ctrl_defaults(struct nvmeof_ctrl_opts *o, size_t size)
{
	memset(o, 0, sizeof(*o));
	o->size = size;
	o->trsvcid = ctrl_default_trsvcid;
	o->queue_depth = 128;
	o->num_io_queues = 64;
	o->cmd_timeout_ms = 30000;
	o->connect_timeout_ms = 3000;
	/* The Linux host's NVME_DEFAULT_KATO for fabrics controllers: without
	 * keep-alive a controller behind a partition lives on and may execute
	 * what it holds whenever the path heals, and nothing tells the host an
	 * idle path is gone. */
	o->kato_ms = 5000;
	o->in_capsule = true;
	o->wait_mode = NVMEOF_WAIT_HYBRID;
	o->spin_us = 20;
	o->ctrl_loss_tmo_ms = 60000;
	o->connect_retries = 4;
	o->tcp_priority = o->tcp_tos = -1;
}

void nvmeof_ctrl_opts_init_sz(struct nvmeof_ctrl_opts *o, size_t size)
{
	struct nvmeof_ctrl_opts d;
	ctrl_defaults(&d, size);
	opts_out(o, size ? size : CTRL_OPTS_V0, &d, sizeof(d));
}

void nvmeof_queue_opts_init_sz(struct nvmeof_queue_opts *o, size_t size)
{
	struct nvmeof_queue_opts d;
	memset(&d, 0, sizeof(d));
	d.size = size;
	opts_out(o, size ? size : QUEUE_OPTS_V0, &d, sizeof(d));
}

int ctrl_opts_in(const struct nvmeof_ctrl_opts *in, struct nvmeof_ctrl_opts *out)
{
	ctrl_defaults(out, sizeof(*out));
	int rc = opts_in(in, in->size, out, sizeof(*out), CTRL_OPTS_V0, "nvmeof_ctrl_opts");
	/* out is whole now: passed on, it must not claim the caller's size */
	out->size = sizeof(*out);
	return rc;
}

int queue_opts_in(const struct nvmeof_queue_opts *in, struct nvmeof_queue_opts *out)
{
	memset(out, 0, sizeof(*out));
	int rc = in ? opts_in(in, in->size, out, sizeof(*out), QUEUE_OPTS_V0, "nvmeof_queue_opts") : 0;
	out->size = sizeof(*out);
	return rc;
}
