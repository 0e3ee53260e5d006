/* gpu_check [GPU]: run on a machine with a real GPU (see run beside this). */
#include <stdio.h>
#include <stdlib.h>

#include "nvmeof.h"

int main(int argc, char **argv)
{
	char report[2048];
	int gpu = argc > 1 ? atoi(argv[1]) : 0;
	int rc = nvmeof_cuda_selftest(gpu, report, sizeof(report));
	fputs(report, stdout);
	if (rc)
		printf("gpu_check: %s\n", nvmeof_errmsg());
	printf("gpu_check: %s\n", rc ? "FAILED" : "ok");
	return rc ? 1 : 0;
}
