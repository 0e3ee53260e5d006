#include "losses.h"

void losses_tell(const struct nvmeof_mpath_queue *mq, unsigned int path, unsigned int qp, losses_say_fn say)
{
	int cnt = nvmeof_mpath_queue_path_loss(mq, path, 0, NULL);
	for (int e = 0; e < cnt; e++) {
		/* the count is of every loss; only those kept fill l (a loss
		 * is detected at a time after the clock's start) */
		struct nvmeof_path_loss l = {.size = sizeof(l)};
		if (nvmeof_mpath_queue_path_loss(mq, path, (uint32_t)e, &l) < 0 || !l.detected_ms) {
			say("nvmeof: path %u loss %d (queue pair %u): not kept (the first 8 are)\n", path + 1, e + 1, qp + 1);
			break;
		}
		say("nvmeof: path %u loss %d (queue pair %u): %u command(s); from detection, first re-issued on another "
		    "path after %lld ms, first completed there after %lld ms; writes held %u ms\n",
		    path + 1, e + 1, qp + 1, l.cmds, (long long)l.reissue_ms, (long long)l.complete_ms, l.hold_ms);
	}
}
