/* The public registration calls: a controller's registration context, then
 * mem.c (host memory) or cuda.c (device memory), which know no controller. */
#include "ctrl.h"
#include "internal.h"
#include "mem.h"

#define NO_CTRL(op) nvmeof_err(NVMEOF_EINVAL, "%s: no controller", op)

int nvmeof_mr_register(struct nvmeof_ctrl *ctrl, void *addr, size_t len, struct nvmeof_mr **out)
{
	return ctrl ? mem_register(ctrl_mem(ctrl), ctrl, addr, len, out) : NO_CTRL("register memory");
}

int nvmeof_mr_alloc(struct nvmeof_ctrl *ctrl, size_t len, struct nvmeof_mr **out)
{
	return ctrl ? mem_alloc(ctrl_mem(ctrl), ctrl, len, out) : NO_CTRL("allocate memory");
}

int nvmeof_mr_alloc_cuda(struct nvmeof_ctrl *ctrl, int gpu, size_t len, struct nvmeof_mr **out)
{
	return ctrl ? mem_alloc_cuda(ctrl_mem(ctrl), ctrl, gpu, len, out) : NO_CTRL("allocate GPU memory");
}

int nvmeof_mr_register_cuda(struct nvmeof_ctrl *ctrl, void *dptr, size_t len, struct nvmeof_mr **out)
{
	return ctrl ? mem_register_cuda(ctrl_mem(ctrl), ctrl, dptr, len, out) : NO_CTRL("register GPU memory");
}
