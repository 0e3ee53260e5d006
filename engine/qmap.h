/* Which of a job's queue pairs a command goes to: the queue pair of the CPU
 * that submits it, as blk-mq maps a CPU to a hardware queue. */
#ifndef QMAP_H
#define QMAP_H
#include <stdint.h>

#define QMAP_CPUS 1024 /* CPU numbers past this share slots by modulo */

struct qmap {
	uint16_t slot[QMAP_CPUS]; /* a CPU's rank among the job's CPUs; QMAP_NONE outside */
	unsigned int ncpu;        /* CPUs the job may run on, at least 1 */
	uint16_t turn[QMAP_CPUS]; /* by rank: rotates a CPU over its queue pairs when it has several */
};
#define QMAP_NONE 0xffffu

/* From the job's allowed CPUs, given as a list of CPU numbers. */
void qmap_init(struct qmap *m, const int *cpus, unsigned int n);
/* The queue pair, of nq, for a command submitted on `cpu` (-1: unknown).
 * CPU k of the job's ncpu uses queue k % nq; with more queue pairs than
 * CPUs it owns k, k + ncpu, ... and takes them in turn. */
unsigned int qmap_pick(struct qmap *m, int cpu, unsigned int nq);
/* A queue pair that refused a command as disconnected is marked in a mask
 * (bit n: queue pair n, up to 64) and its CPU's commands go to the others: the first
 * queue pair at or after `from` (wrapping) not in skip, or nq when every one
 * of the nq is. */
unsigned int qmap_open(uint64_t skip, unsigned int from, unsigned int nq);
/* The most commands one queue pair may be asked to hold when the job keeps
 * `depth` in flight: all of them when a CPU has one queue pair. */
unsigned int qmap_depth(const struct qmap *m, unsigned int nq, unsigned int depth);

#endif
