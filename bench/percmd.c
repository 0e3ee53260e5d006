/*
 * The core's own cost per NVMe command with the wire taken out: build the
 * SQE and SGL, record the slot, chain the WR, then parse the response
 * capsule, match the CID, finish the slot and the request and run the
 * callback. The loopback test wire (core/fakewire.c) stands in for verbs;
 * its own bookkeeping (queueing two completions and copying a 16-byte CQE
 * per command) is included, so the figure is an upper bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fakewire.h"
#include "mem.h"

static unsigned long done;
static void cb(void *arg, const struct nvmeof_cpl *cpl)
{
	(void)arg;
	done += !cpl->err;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double run(const char *what, int write, uint32_t icd, uint32_t batch, unsigned long total)
{
	const uint32_t depth = 128;
	struct q_params p = {.qid = 1, .depth = depth, .cmd_timeout_ms = 30000, .max_xfer = 1 << 20,
			     .icd_max = icd, .wait_mode = NVMEOF_WAIT_POLL, .batch = true};
	struct fake_wire *fw = fw_new(depth, NULL, NULL);
	struct nvmeof_queue *q;
	if (!fw || q_open_fake(&p, fw, &q)) {
		fprintf(stderr, "setup: %s\n", nvmeof_errmsg());
		exit(1);
	}
	struct nvmeof_mr mr = {.addr = calloc(depth, 4096), .len = (size_t)depth * 4096};
	struct nvmeof_ns ns = {.nsid = 1, .lba_size = 512, .lbads = 9, .nsze = 1ull << 30};
	double best = 1e30;
	for (int rep = 0; rep < 5; rep++) {
		unsigned long sub = 0;
		done = 0;
		double t0 = now_ns();
		while (done < total) {
			for (uint32_t i = 0; i < batch && sub - done < depth; i++, sub++) {
				int rc = write ? nvmeof_write(q, &ns, sub & 0xffff, 8, &mr, (sub % depth) * 4096, cb, NULL)
					       : nvmeof_read(q, &ns, sub & 0xffff, 8, &mr, (sub % depth) * 4096, cb, NULL);
				if (rc) {
					fprintf(stderr, "submit: %s\n", nvmeof_errmsg());
					exit(1);
				}
			}
			nvmeof_queue_commit(q);
			while (nvmeof_queue_poll(q, 0) > 0)
				;
		}
		double ns_per = (now_ns() - t0) / (double)done;
		if (ns_per < best)
			best = ns_per;
	}
	printf("%-44s %6.1f ns/command (best of 5 x %lu)\n", what, best, total);
	q_close(q);
	fw_free(fw);
	free(mr.addr);
	return best;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 2000000;
	/* a second argument runs one row alone (1-3): an instruction count
	 * under callgrind then belongs to that row */
	int only = argc > 2 ? atoi(argv[2]) : 0;
	if (!only || only == 1)
		run("4 KiB read, keyed SGL, batches of 32", 0, 0, 32, n);
	if (!only || only == 2)
		run("4 KiB write, in-capsule, batches of 32", 1, 4096, 32, n);
	if (!only || only == 3)
		run("4 KiB read, keyed SGL, one per doorbell", 0, 0, 1, n / 4);
	return 0;
}
