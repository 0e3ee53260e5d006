/* read, write, write-zeroes, flush: one I/O queue, one registered buffer
 * (host memory, or GPU memory with --gpu), the synchronous calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmds.h"
#include "secret.h"
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
	int crc = nvmeof_ctrl_connect(&o, &io->c);
	tool_secret_wipe();
	if (crc)
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
	FILE *f = NULL;
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
		/* the output is created (or truncated) only now that the data
		 * is here: a failed read leaves an existing file as it was */
		if (!p || (own && nvmeof_cuda_copy(io.mr, 0, p, bytes, false)))
			rc = io_fail(a, "copy from the GPU: %s", NULL);
		else if (!(f = !a->data || !strcmp(a->data, "-") ? stdout : fopen(a->data, "wb")))
			rc = io_fail(a, "cannot create %s", tool_shown_path(a->data));
		else if (fwrite(p, 1, bytes, f) != bytes || fflush(f))
			rc = io_fail(a, "cannot write %s", a->data ? tool_shown_path(a->data) : "stdout");
		free(own);
	}
	if (f && f != stdout && fclose(f) && !rc)
		rc = io_fail(a, "cannot write %s", tool_shown_path(a->data));
	rc = io_close(a, &io, rc);
	if (!rc && f != stdout)
		fprintf(stderr, "read: %u blocks from %llu of namespace %u into %s\n", a->nlb,
			(unsigned long long)a->slba, a->nsid, a->data);
	return rc;
}

/* Reads up to max bytes of f into p; *more: f has bytes beyond them (one
 * looked at and pushed back). */
static size_t read_upto(FILE *f, uint8_t *p, size_t max, bool *more)
{
	size_t have = 0;
	for (size_t n; have < max && (n = fread(p + have, 1, max - have, f)) > 0;)
		have += n;
	int c = have == max ? fgetc(f) : EOF;
	*more = c != EOF && ungetc(c, f) != EOF;
	return have;
}

/* All of f, when it is at most max bytes: a buffer grown as it comes, so
 * a pipe costs what it carries. NULL: out of memory. */
static uint8_t *slurp(FILE *f, size_t max, size_t *have, bool *more)
{
	size_t cap = max < (1u << 20) ? max : 1u << 20;
	uint8_t *in = malloc(cap ? cap : 1);
	*have = 0;
	while (in) {
		*have += read_upto(f, in + *have, cap - *have, more);
		if (!*more || cap == max)
			break;
		cap = cap > max / 2 ? max : cap * 2;
		uint8_t *bigger = realloc(in, cap);
		if (!bigger)
			free(in);
		in = bigger;
	}
	return in;
}

int cmd_write(struct args *a)
{
	struct io io;
	size_t bytes = 0, have = 0;
	void *stage = NULL;
	uint8_t *in = NULL;
	bool more = false;
	if (!a->data) {
		fprintf(stderr, "nvmeof write: --data FILE is required (- for stdin)\n");
		return 2;
	}
	FILE *f = !strcmp(a->data, "-") ? stdin : fopen(a->data, "rb");
	if (!f)
		return io_fail(a, "cannot open %s", tool_shown_path(a->data));
	/* Only what the command transfers is read, once the LBA size is
	 * known: --block-count blocks (of an endless /dev/zero too), straight
	 * into the buffer the write goes from; else the whole input, up to
	 * what the namespace holds from --start-block on. */
	int rc = io_open(a, &io, 0);
	uint32_t nlb = a->nlb;
	if (!rc && !nlb) {
		uint64_t room = a->slba < io.ns->nsze ? io.ns->nsze - a->slba : 1; /* 1: span() says why */
		nlb = (uint32_t)(room < UINT32_MAX ? room : UINT32_MAX);
	}
	if (!rc && !(rc = span(a, &io, nlb, &bytes)) && !a->nlb) {
		if (!(in = slurp(f, bytes, &have, &more)))
			rc = io_fail(a, "%s", "out of memory");
		else if (more || ferror(f) || !have || have % io.ns->lba_size) {
			char m[200];
			if (ferror(f))
				snprintf(m, sizeof(m), "cannot read %s", tool_shown_path(a->data));
			else if (more)
				snprintf(m, sizeof(m), "%s has more bytes than the %u blocks from %llu to the end "
					 "of namespace %u hold", tool_shown_path(a->data), nlb, (unsigned long long)a->slba, a->nsid);
			else
				snprintf(m, sizeof(m), "%s has %zu bytes, not a whole number of %u-byte blocks "
					 "(give --block-count to pad with zeroes)", tool_shown_path(a->data), have, io.ns->lba_size);
			rc = io_fail(a, "%s", m);
		}
		nlb = (uint32_t)(have / io.ns->lba_size);
		bytes = have;
	}
	if (!rc && (a->gpu >= 0 ? nvmeof_mr_alloc_cuda(io.c, a->gpu, bytes, &io.mr)
				: nvmeof_mr_alloc(io.c, bytes, &io.mr)))
		rc = io_fail(a, "%s", NULL);
	if (!rc) {
		uint8_t *p = host_view(a, &io, bytes, &stage);
		if (!p)
			rc = io_fail(a, "%s", "out of memory");
		else if (in)
			memcpy(p, in, bytes);
		else if (read_upto(f, p, bytes, &more), ferror(f)) /* short: zeroes pad it */
			rc = io_fail(a, "cannot read %s", tool_shown_path(a->data));
		if (!rc && stage && nvmeof_cuda_copy(io.mr, 0, p, bytes, true))
			rc = io_fail(a, "copy to the GPU: %s", NULL);
	}
	free(stage);
	free(in);
	if (f != stdin)
		fclose(f);
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
