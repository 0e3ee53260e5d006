/* read, write, write-zeroes, flush: one I/O queue, one registered buffer
 * (host memory, or GPU memory with --gpu), the synchronous calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmds.h"
#include "nvmeof.h"

struct io {
	struct nvmeof_ctrl *c;
	struct nvmeof_queue *q;
	struct nvmeof_mr *mr;
	const struct nvmeof_ns *ns;
};

static int io_fail(const struct args *a, const char *fmt, const char *arg)
{
	fprintf(stderr, "nvmeof %s: ", a->name);
	fprintf(stderr, fmt, arg ? arg : nvmeof_errmsg());
	fputc('\n', stderr);
	return 1;
}

static int io_open(const struct args *a, struct io *io, size_t bytes)
{
	struct nvmeof_ctrl_opts o;
	memset(io, 0, sizeof(*io));
	tool_ctrl_opts(a, &o);
	if (nvmeof_ctrl_connect(&o, &io->c))
		return io_fail(a, "%s", NULL);
	if (!(io->ns = nvmeof_ns_get(io->c, a->nsid)) || nvmeof_queue_create(io->c, NULL, &io->q))
		return io_fail(a, "%s", NULL);
	if (!bytes)
		return 0;
	int rc = a->gpu >= 0 ? nvmeof_mr_alloc_cuda(io->c, a->gpu, bytes, &io->mr)
			     : nvmeof_mr_alloc(io->c, bytes, &io->mr);
	return rc ? io_fail(a, "%s", NULL) : 0;
}

static int io_close(const struct args *a, struct io *io, int rc)
{
	if (io->mr)
		nvmeof_mr_release(io->mr);
	if (io->q)
		nvmeof_queue_destroy(io->q);
	if (io->c && nvmeof_ctrl_close(io->c) && !rc)
		rc = io_fail(a, "%s", NULL);
	return rc;
}

/* The request's size in bytes, checked against the namespace. */
static int span(const struct args *a, const struct io *io, uint32_t nlb, size_t *bytes)
{
	if (a->slba >= io->ns->nsze || nlb > io->ns->nsze - a->slba) {
		char m[160];
		snprintf(m, sizeof(m), "blocks %llu..%llu are past the end of namespace %u (%llu blocks)",
			 (unsigned long long)a->slba, (unsigned long long)(a->slba + nlb - 1), io->ns->nsid,
			 (unsigned long long)io->ns->nsze);
		return io_fail(a, "%s", m);
	}
	*bytes = (size_t)nlb * io->ns->lba_size;
	return 0;
}

/* Host staging for --gpu (nvmeof_cuda_copy), else the region itself. */
static void *host_view(const struct args *a, struct io *io, size_t bytes, void **own)
{
	*own = NULL;
	if (a->gpu < 0)
		return nvmeof_mr_addr(io->mr);
	return *own = calloc(1, bytes);
}

int cmd_read(struct args *a)
{
	struct io io;
	size_t bytes;
	void *own;
	if (!a->nlb) {
		fprintf(stderr, "nvmeof read: --block-count is required\n");
		return 2;
	}
	FILE *f = !a->data || !strcmp(a->data, "-") ? stdout : fopen(a->data, "wb");
	if (!f)
		return io_fail(a, "cannot create %s", a->data);
	/* connect without a buffer first: the size needs the LBA size */
	int rc = io_open(a, &io, 0);
	if (!rc && !(rc = span(a, &io, a->nlb, &bytes))) {
		rc = (a->gpu >= 0 ? nvmeof_mr_alloc_cuda(io.c, a->gpu, bytes, &io.mr)
				  : nvmeof_mr_alloc(io.c, bytes, &io.mr)) ? io_fail(a, "%s", NULL) : 0;
	}
	if (!rc && nvmeof_read_sync(io.q, io.ns, a->slba, a->nlb, io.mr, 0, 0))
		rc = io_fail(a, "%s", NULL);
	if (!rc) {
		uint8_t *p = host_view(a, &io, bytes, &own);
		if (!p || (own && nvmeof_cuda_copy(io.mr, 0, p, bytes, false)))
			rc = io_fail(a, "copy from the GPU: %s", NULL);
		else if (fwrite(p, 1, bytes, f) != bytes || fflush(f))
			rc = io_fail(a, "cannot write %s", a->data ? a->data : "stdout");
		free(own);
	}
	if (f != stdout)
		fclose(f);
	rc = io_close(a, &io, rc);
	if (!rc && f != stdout)
		fprintf(stderr, "read: %u blocks from %llu of namespace %u into %s\n", a->nlb,
			(unsigned long long)a->slba, a->nsid, a->data);
	return rc;
}

int cmd_write(struct args *a)
{
	struct io io;
	size_t bytes, have = 0;
	void *own;
	if (!a->data) {
		fprintf(stderr, "nvmeof write: --data FILE is required (- for stdin)\n");
		return 2;
	}
	FILE *f = !strcmp(a->data, "-") ? stdin : fopen(a->data, "rb");
	if (!f)
		return io_fail(a, "cannot open %s", a->data);
	/* the whole input, to know its size */
	size_t cap = 1 << 20;
	uint8_t *in = malloc(cap);
	for (size_t n; in && (n = fread(in + have, 1, cap - have, f)) > 0;) {
		have += n;
		if (have == cap) {
			uint8_t *bigger = realloc(in, cap *= 2);
			if (!bigger) {
				free(in);
				in = NULL;
			}
			in = bigger;
		}
	}
	if (f != stdin)
		fclose(f);
	if (!in)
		return io_fail(a, "out of memory reading %s", a->data);
	int rc = io_open(a, &io, 0);
	uint32_t nlb = a->nlb;
	if (!rc && !nlb) {
		if (!have || have % io.ns->lba_size) {
			char m[200];
			snprintf(m, sizeof(m), "%s has %zu bytes, not a whole number of %u-byte blocks "
				 "(give --block-count to pad with zeroes)", a->data, have, io.ns->lba_size);
			rc = io_fail(a, "%s", m);
		}
		nlb = (uint32_t)(have / io.ns->lba_size);
	}
	if (!rc && !(rc = span(a, &io, nlb, &bytes))) {
		if (have > bytes) {
			char m[200];
			snprintf(m, sizeof(m), "%s has %zu bytes, more than %u blocks hold", a->data, have, nlb);
			rc = io_fail(a, "%s", m);
		} else if (a->gpu >= 0 ? nvmeof_mr_alloc_cuda(io.c, a->gpu, bytes, &io.mr)
				       : nvmeof_mr_alloc(io.c, bytes, &io.mr)) {
			rc = io_fail(a, "%s", NULL);
		}
	}
	if (!rc) {
		uint8_t *p = host_view(a, &io, bytes, &own);
		if (!p)
			rc = io_fail(a, "%s", "out of memory");
		else {
			memcpy(p, in, have); /* the rest is zero */
			if (own && nvmeof_cuda_copy(io.mr, 0, p, bytes, true))
				rc = io_fail(a, "copy to the GPU: %s", NULL);
		}
		free(own);
	}
	free(in);
	if (!rc && nvmeof_write_ext_sync(io.q, io.ns, a->slba, nlb, io.mr, 0, a->fua ? NVMEOF_IO_FUA : 0, 0))
		rc = io_fail(a, "%s", NULL);
	rc = io_close(a, &io, rc);
	if (!rc)
		fprintf(stderr, "write: %u blocks at %llu of namespace %u%s\n", nlb,
			(unsigned long long)a->slba, a->nsid, a->fua ? " (FUA)" : "");
	return rc;
}

int cmd_write_zeroes(struct args *a)
{
	struct io io;
	size_t bytes;
	if (!a->nlb) {
		fprintf(stderr, "nvmeof write-zeroes: --block-count is required\n");
		return 2;
	}
	int rc = io_open(a, &io, 0);
	if (!rc && !(rc = span(a, &io, a->nlb, &bytes)) &&
	    nvmeof_write_zeroes_sync(io.q, io.ns, a->slba, a->nlb,
				     (a->fua ? NVMEOF_IO_FUA : 0) | (a->deac ? NVMEOF_IO_DEAC : 0), 0))
		rc = io_fail(a, "%s", NULL);
	rc = io_close(a, &io, rc);
	if (!rc)
		fprintf(stderr, "write-zeroes: %u blocks at %llu of namespace %u\n", a->nlb,
			(unsigned long long)a->slba, a->nsid);
	return rc;
}

int cmd_flush(struct args *a)
{
	struct io io;
	int rc = io_open(a, &io, 0);
	if (!rc && nvmeof_flush_sync(io.q, io.ns, 0))
		rc = io_fail(a, "%s", NULL);
	rc = io_close(a, &io, rc);
	if (!rc)
		fprintf(stderr, "flush: namespace %u\n", a->nsid);
	return rc;
}
