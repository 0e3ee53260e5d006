/*
 * TEST ONLY (LD_PRELOAD): passes rdma-core's memory registration calls
 * through and appends one line per call to the file NVMEOF_REGSPY names,
 *   <call> len=<bytes> access=0x<flags>
 * so a test sees the access flags a whole program (fio with the engine)
 * really hands to ibv_reg_mr, ibv_reg_mr_iova2 and ibv_reg_dmabuf_mr.
 * Never linked into anything shipped.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <infiniband/verbs.h>

static void note(const char *fn, size_t len, unsigned int access)
{
	const char *path = getenv("NVMEOF_REGSPY");
	FILE *f = path ? fopen(path, "a") : NULL;
	if (!f)
		return;
	fprintf(f, "%s len=%zu access=0x%x\n", fn, len, access);
	fclose(f);
}

#define NEXT(fn) ((__typeof__(&fn))dlsym(RTLD_NEXT, #fn))

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	note("ibv_reg_mr", length, (unsigned int)access);
	struct ibv_mr *(*next)(struct ibv_pd *, void *, size_t, int) =
		(struct ibv_mr * (*)(struct ibv_pd *, void *, size_t, int)) dlsym(RTLD_NEXT, "ibv_reg_mr");
	return next(pd, addr, length, access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	note("ibv_reg_mr_iova2", length, access);
	return NEXT(ibv_reg_mr_iova2)(pd, addr, length, iova, access);
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
				 int access)
{
	note("ibv_reg_dmabuf_mr", length, (unsigned int)access);
	return NEXT(ibv_reg_dmabuf_mr)(pd, offset, length, iova, fd, access);
}
