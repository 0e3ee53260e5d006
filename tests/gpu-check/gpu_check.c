/* gpu_check [GPU [TRADDR SUBNQN PATTERN SLBA]]: run on a machine with a
 * real GPU (see run beside this).
 *
 * With a target, it also moves data through GPU memory and checks it:
 * namespace 1 at SLBA must hold PATTERN (a file another initiator wrote
 * there, or "-": this program writes 1 MiB of its own from host memory
 * first); it is read into GPU memory and copied back through the host to
 * compare; then other bytes are written from GPU memory to the next blocks
 * and read back into host memory to compare. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvmeof.h"

static int fail(const char *what)
{
	printf("gpu_check: data: %s: %s\n", what, nvmeof_errmsg());
	return 1;
}

static size_t first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return i;
	return n;
}

static int data_check(int gpu, const char *traddr, const char *subnqn, const char *pattern, uint64_t slba)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *host = NULL, *dev = NULL;
	const struct nvmeof_ns *ns;
	unsigned char *want = NULL, *got = NULL;
	size_t n = 1 << 20;
	int rc = 1;
	FILE *f = NULL;

	nvmeof_ctrl_opts_init(&o);
	o.traddr = traddr;
	o.subnqn = subnqn;
	if (nvmeof_ctrl_connect(&o, &c))
		return fail("connect");
	if (!(ns = nvmeof_ns_get(c, 1)) || nvmeof_queue_create(c, NULL, &q)) {
		fail("namespace 1 and a queue");
		goto out;
	}
	if (strcmp(pattern, "-")) {
		if (!(f = fopen(pattern, "rb")) || fseek(f, 0, SEEK_END) || (long)(n = (size_t)ftell(f)) <= 0 ||
		    n % ns->lba_size) {
			printf("gpu_check: data: %s: unreadable, empty or not whole %u-byte blocks\n", pattern,
			       ns->lba_size);
			goto out;
		}
		rewind(f);
	}
	want = malloc(n);
	got = malloc(n);
	if (!want || !got || nvmeof_mr_alloc(c, n, &host)) {
		fail("host memory");
		goto out;
	}
	if (f) {
		if (fread(want, 1, n, f) != n) {
			printf("gpu_check: data: %s: short read\n", pattern);
			goto out;
		}
	} else {
		for (size_t i = 0; i < n; i++)
			want[i] = (unsigned char)(i * 131 + (i >> 12) + 7);
		memcpy(nvmeof_mr_addr(host), want, n);
		if (nvmeof_write_sync(q, ns, slba, (uint32_t)(n / ns->lba_size), host, 0, 0)) {
			fail("seeding the pattern from host memory");
			goto out;
		}
	}
	if (nvmeof_mr_alloc_cuda(c, gpu, n, &dev)) {
		fail("GPU memory");
		goto out;
	}
	printf("gpu_check: data: %zu bytes of GPU %d memory registered (%s), PCIe relaxed ordering on\n", n, gpu,
	       nvmeof_mr_cuda_registration(dev));
	/* read into GPU memory; look at it through a copy to the host */
	memset(got, 0, n);
	if (nvmeof_read_sync(q, ns, slba, (uint32_t)(n / ns->lba_size), dev, 0, 0) ||
	    nvmeof_cuda_copy(dev, 0, got, n, false)) {
		fail("read into GPU memory");
		goto out;
	}
	size_t d = first_diff(want, got, n);
	if (d < n) {
		printf("gpu_check: data: read into GPU memory differs at byte %zu of %zu\n", d, n);
		goto out;
	}
	printf("gpu_check: data: read into GPU memory: %zu bytes match\n", n);
	/* write from GPU memory (other bytes) to the next blocks; read back to the host */
	for (size_t i = 0; i < n; i++)
		want[i] = (unsigned char)~want[i];
	uint64_t slba2 = slba + n / ns->lba_size;
	memset(nvmeof_mr_addr(host), 0, n);
	if (nvmeof_cuda_copy(dev, 0, want, n, true) ||
	    nvmeof_write_sync(q, ns, slba2, (uint32_t)(n / ns->lba_size), dev, 0, 0) ||
	    nvmeof_read_sync(q, ns, slba2, (uint32_t)(n / ns->lba_size), host, 0, 0)) {
		fail("write from GPU memory");
		goto out;
	}
	d = first_diff(want, nvmeof_mr_addr(host), n);
	if (d < n) {
		printf("gpu_check: data: write from GPU memory read back differs at byte %zu of %zu\n", d, n);
		goto out;
	}
	printf("gpu_check: data: write from GPU memory: %zu bytes read back match\n", n);
	rc = 0;
out:
	if (f)
		fclose(f);
	free(want);
	free(got);
	if (dev)
		nvmeof_mr_release(dev);
	if (host)
		nvmeof_mr_release(host);
	if (q)
		nvmeof_queue_destroy(q);
	if (c)
		nvmeof_ctrl_close(c);
	return rc;
}

int main(int argc, char **argv)
{
	char report[2048];
	int gpu = argc > 1 ? atoi(argv[1]) : 0;
	int rc = nvmeof_cuda_selftest(gpu, report, sizeof(report));
	fputs(report, stdout);
	if (rc)
		printf("gpu_check: %s\n", nvmeof_errmsg());
	if (!rc && argc > 5)
		rc = data_check(gpu, argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 0));
	else if (argc > 2 && argc <= 5)
		printf("gpu_check: a data check needs TRADDR SUBNQN PATTERN SLBA\n"), rc = 1;
	printf("gpu_check: %s\n", rc ? "FAILED" : "ok");
	return rc ? 1 : 0;
}
