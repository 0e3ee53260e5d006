/*
 * A program built against an installed libnvmeof (tests/unit/install.sh):
 * only <nvmeof.h> and what pkg-config says. It needs no target: it checks a
 * few answers of the library and prints one line for the script.
 */
#include <nvmeof.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_queue_opts q;
	struct nvmeof_ctrl *c = NULL;
	int bad = 0;
	memset(&o, 0xff, sizeof(o));
	nvmeof_ctrl_opts_init(&o);
	nvmeof_queue_opts_init(&q);
	if (o.size != sizeof(o) || strcmp(o.trsvcid, "4420") || o.queue_depth != 128 ||
	    o.cmd_timeout_ms != 30000 || !o.in_capsule || o.traddr || q.size != sizeof(q) || q.depth)
		bad = 1, fprintf(stderr, "install_prog: unexpected defaults\n");
	/* no target address: refused before any network step */
	if (nvmeof_ctrl_connect(&o, &c) != NVMEOF_EINVAL || c)
		bad = 1, fprintf(stderr, "install_prog: connect without traddr did not fail with EINVAL\n");
	printf("%s | %s | depth %u\n", nvmeof_strerror(NVMEOF_EINVAL), nvmeof_errmsg(), o.queue_depth);
	return bad;
}
