#include "qmap.h"

void qmap_init(struct qmap *m, const int *cpus, unsigned int n)
{
	m->ncpu = 0;
	for (unsigned int c = 0; c < QMAP_CPUS; c++)
		m->slot[c] = QMAP_NONE, m->turn[c] = 0;
	for (unsigned int i = 0; i < n; i++)
		if (cpus[i] >= 0 && cpus[i] < QMAP_CPUS && m->slot[cpus[i]] == QMAP_NONE)
			m->slot[cpus[i]] = (uint16_t)m->ncpu++;
	if (!m->ncpu)
		m->ncpu = 1;
}

unsigned int qmap_pick(struct qmap *m, int cpu, unsigned int nq)
{
	if (nq <= 1)
		return 0;
	/* A CPU outside the job's set (its affinity changed since) or past
	 * the table still lands on a fixed slot. */
	unsigned int k = cpu < 0 ? 0
		: cpu < QMAP_CPUS && m->slot[cpu] != QMAP_NONE ? m->slot[cpu] : (unsigned int)cpu % m->ncpu;
	if (nq <= m->ncpu)
		return k % nq;
	unsigned int own = (nq - k + m->ncpu - 1) / m->ncpu; /* queues k, k + ncpu, ... below nq */
	return k + m->ncpu * (m->turn[k]++ % own);
}

unsigned int qmap_depth(const struct qmap *m, unsigned int nq, unsigned int depth)
{
	unsigned int fewest = nq / m->ncpu; /* queue pairs of the CPU with fewest */
	return fewest <= 1 ? depth : (depth + fewest - 1) / fewest;
}

unsigned int qmap_open(uint64_t skip, unsigned int from, unsigned int nq)
{
	for (unsigned int t = 0; t < nq && t < 64; t++) {
		unsigned int n = (from + t) % nq;
		if (!(skip & (1ull << n)))
			return n;
	}
	return nq;
}
