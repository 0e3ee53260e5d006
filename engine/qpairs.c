/* A job's queue pairs on one controller: how many (qpairs=, or one per CPU
 * the job may run on), how deep, created in one poll group; at the end,
 * what each carried. */
#include <sched.h>

#include "irq.h"
#include "topo.h"

#include "engine.h"

/* qpairs=0: one queue pair per CPU the job may run on, at most this many, so
 * that 16 unpinned jobs still fit the 64 I/O queues asked by default. */
#define AUTO_QPAIRS_MAX 4

/* qpairs=0: one queue pair per CPU the job may run on, at most
 * AUTO_QPAIRS_MAX and at most iodepth, and no more than the job's part of
 * the queues the controller granted: fio sets up every job of a process
 * (create_serialize) before any starts, so the jobs sharing a controller
 * are all counted here and each keeps at least one. With one command in
 * flight a second queue pair has nothing to carry, and on the test bed it
 * cost QD1 a sixth of its IOPS: the submitting CPU's queue keeps the
 * target's work on the CPU where the job waits for it. */
static unsigned int auto_qpairs(struct thread_data *td, const struct job *j, struct shared_ctrl *sc,
				const struct nvmeof_ctrl_info *ci)
{
	unsigned int n = j->qmap.ncpu < AUTO_QPAIRS_MAX ? j->qmap.ncpu : AUTO_QPAIRS_MAX;
	if (n > td->o.iodepth)
		n = td->o.iodepth;
	int sharers = share_count(sc);
	unsigned int part = sharers > 0 ? ci->max_io_queues / (unsigned int)sharers : ci->max_io_queues;
	if (n > part) {
		eng_info("nvmeof: job %s (%d): %u queue pair(s), not %u: the controller granted %u I/O "
			 "queue(s) to %d job(s)\n", td->o.name, td->thread_number, part ? part : 1, n,
			 ci->max_io_queues, sharers);
		n = part;
	}
	return n ? n : 1;
}

/* fio has applied cpus_allowed and cpumask by the time it initializes the
 * engine. */
void qpairs_job_cpus(struct job *j)
{
	cpu_set_t set;
	int cpus[QMAP_CPUS];
	unsigned int n = 0;
	if (!sched_getaffinity(0, sizeof(set), &set))
		for (int c = 0; c < QMAP_CPUS && c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[n++] = c;
	qmap_init(&j->qmap, cpus, n);
}

/* Enough slots for the job's share of iodepth even when each request is
 * split at MDTS, so fio's iodepth is what is on the wire. iodepth is the
 * job's total: round-robin gives each queue pair its share; by CPU, one CPU
 * may send all of it to its own queue pair. */
static uint32_t qpair_depth(struct thread_data *td, const struct job *j, const struct nvmeof_ctrl_info *ci,
			    unsigned int nq)
{
	struct eng_opts *eo = td->eo;
	uint64_t per = ci->max_xfer ? (td->o.max_bs[DDIR_READ] > td->o.max_bs[DDIR_WRITE]
				       ? td->o.max_bs[DDIR_READ] : td->o.max_bs[DDIR_WRITE]) : 0;
	per = ci->max_xfer && per ? (per + ci->max_xfer - 1) / ci->max_xfer : 1;
	uint64_t share = j->qpair_select == QSEL_CPU ? qmap_depth(&j->qmap, nq, td->o.iodepth)
						     : ((uint64_t)td->o.iodepth + nq - 1) / nq;
	uint64_t depth = share * (per ? per : 1);
	if (eo->qd_limit && depth > eo->qd_limit)
		depth = eo->qd_limit;
	return depth > DEPTH_MAX ? DEPTH_MAX : (uint32_t)depth;
}

int qpairs_open(struct thread_data *td, struct job *j, struct jqueue *jq, struct efile *ef)
{
	struct eng_opts *eo = td->eo;
	if (eo->qpairs_shared)
		return qshare_open(td, j, jq, ef);
	const struct nvmeof_ctrl_info *ci = nvmeof_ctrl_info(ef->sc->c);
	unsigned int nq = eo->qpairs ? eo->qpairs : auto_qpairs(td, j, ef->sc, ci);
	const char *why_nq = eo->qpairs ? "" : " (qpairs=0: one per CPU the job may run on, at most 4; qpairs=1: one)";
	if (zones_in_order(td, ef)) {
		/* Several SQs are executed in no order among them: a zone's
		 * sequential writes would arrive out of order (Zone Invalid Write). */
		if (eo->qpairs > 1) {
			eng_err("nvmeof: qpairs=%u with zonemode=zbd writes to a zoned namespace: they may arrive "
				"out of order; use qpairs=1 (or zone_append=1)\n", eo->qpairs);
			return 1;
		}
		nq = 1;
		if (!eo->qpairs)
			why_nq = " (qpairs=0: one, as zonemode=zbd writes to a zoned namespace must arrive in order)";
	}
	jq->sc = ef->sc;
	if (ef->cfg.t.nalt) {
		if (eo->gpu >= 0) {
			eng_err("nvmeof: gpu= with several paths: not supported (register GPU memory per path)\n");
			return 1;
		}
		return paths_open(td, j, jq, ef, nq, qpair_depth(td, j, ci, nq));
	}
	if (eo->path_loss && *eo->path_loss) {
		eng_err("nvmeof: path_loss= needs several paths in the filename (traddr= repeated): this job has one\n");
		return 1;
	}
	int vec = eo->comp_vector;
	if (vec < 0) {
		int cpus[QMAP_CPUS];
		unsigned int ncpu = 0;
		char pci[64] = "";
		for (int c = 0; c < QMAP_CPUS; c++)
			if (j->qmap.slot[c] != QMAP_NONE)
				cpus[ncpu++] = c;
		topo_hca_pci("/sys", ci->hca, pci, sizeof(pci));
		/* jobs with CPUs in common take their local vectors in turn */
		vec = irq_local_vector("/proc", pci, ci->comp_vectors, cpus, ncpu, (unsigned int)td->thread_number);
	}
	if (nvmeof_poll_group_create_on(ef->sc->c, nq, vec, &jq->group)) {
		if (eo->comp_vector >= 0)
			eng_err("nvmeof: comp_vector=%d: %s\n", eo->comp_vector, nvmeof_errmsg());
		else
			eng_err("nvmeof: %s\n", nvmeof_errmsg());
		return 1;
	}
	jq->vector_how = eo->comp_vector >= 0 ? "comp_vector=" : vec >= 0 ? "its IRQ on the job's CPUs" : "spread";
	struct nvmeof_queue_opts qo;
	nvmeof_queue_opts_init(&qo);
	qo.depth = qpair_depth(td, j, ci, nq);
	qo.batch = true;
	qo.group = jq->group;
	for (unsigned int n = 0; n < nq; n++) {
		struct eng_slow slow;
		char w[320];
		snprintf(w, sizeof(w), "job %s (%d): I/O queue pair %u of %u on %s", td->o.name, td->thread_number,
			 n + 1, nq, ef->cfg.t.traddr);
		eng_slow_begin(&slow, &ef->sc->trace, &ef->cfg.o, w);
		int r = nvmeof_queue_create(ef->sc->c, &qo, &jq->q[n]);
		eng_slow_end(&slow);
		if (r == NVMEOF_EBUSY && !eo->qpairs && n > 0) {
			/* qpairs=0 asked for none in particular: take what is left */
			eng_info("nvmeof: job %s (%d): %u queue pair(s) of %u wanted: %s\n",
				 td->o.name, td->thread_number, n, nq, nvmeof_errmsg());
			break;
		}
		if (r) {
			eng_err("nvmeof: queue pair %u of %u (qpairs=%u, num_io_queues=%u): %s\n",
				n + 1, nq, nq, ef->cfg.o.num_io_queues, nvmeof_errmsg());
			return 1;
		}
		jq->nq++;
		/* Which controller and queue each job got: shared controllers
		 * show as one CNTLID with several queues. */
		/* how many queue pairs, and why: SPDK's plugin opens one per job */
		eng_info("nvmeof: job %s (%d): %s: controller CNTLID %u, I/O queue %u, depth %u, queue pair %u of %u%s%s%s\n",
			 td->o.name, td->thread_number, ef->cfg.t.subnqn, ci->cntlid,
			 nvmeof_queue_qid(jq->q[n]), nvmeof_queue_depth(jq->q[n]), n + 1, nq,
			 nq > 1 ? ", in the job's poll group" : "",
			 n ? "" : why_nq,
			 n || !ef->cfg.sole_subsystem ? "" : "; no subnqn given: the only NVM subsystem discovery lists");
	}
	return 0;
}

void qpairs_close(struct jqueue *jq, const char *who)
{
	if (jq->mp || jq->npaths) {
		paths_close(jq, who);
		return;
	}
	char slept[200] = "", spin[120] = "";
	uint64_t sleeps = 0, sleeps_out = 0;
	unsigned int nq = jq->nq;
	/* quiet=1: the job's one line, these summed over its queue pairs */
	uint64_t cmds = 0, bells = 0, recon = 0, tmo = 0, retr = 0, gone = 0;
	for (unsigned int n = 0; n < jq->nq; n++) {
		struct nvmeof_queue *q = jq->q[n];
		struct nvmeof_queue_stats st;
		uint32_t left = nvmeof_queue_inflight(q);
		if (left)
			eng_info("nvmeof: queue %u: %u request(s) still waiting when the job ended "
				 "were abandoned\n", nvmeof_queue_qid(q), left);
		nvmeof_queue_stats(q, &st);
		cmds += st.cmds, bells += st.doorbells, recon += st.reconnects, tmo += st.timeouts;
		retr += st.retries, gone += left;
		uint64_t conn_ms = 0;
		uint32_t conn_retries = nvmeof_queue_connect_retries(q, &conn_ms);
		/* what a run cost on the wire: commands per doorbell shows the
		 * batching, sleeps the waits that went to the completion channel,
		 * in-capsule the writes whose data rode in the command (no RDMA
		 * Read by the target: in_capsule=); and what connecting it took
		 * (retries under load). A sleep that ran to its end while
		 * commands were in flight slept through their completions. */
		/* wait=adaptive: how much of the hybrid spin it kept, at the end
		 * and at least, and the polls that found nothing (docs/engine.md) */
		uint32_t low = 100;
		uint64_t empty = 0;
		uint32_t share = nvmeof_queue_spin_share(q, &low, &empty);
		if (jq->sc && jq->sc->cfg.o.wait_mode == NVMEOF_WAIT_ADAPTIVE)
			snprintf(spin, sizeof(spin), ", spin %u%% of hybrid's (lowest %u%%), %llu empty poll(s)", share, low,
				 (unsigned long long)empty);
		if (jq->nq == 1)
			snprintf(slept, sizeof(slept), ", %llu sleep(s) (%llu to their end)%s", (unsigned long long)st.sleeps,
				 (unsigned long long)nvmeof_queue_sleep_timeouts(q), spin);
		else { /* the group's: said once below */
			sleeps = st.sleeps;
			sleeps_out = nvmeof_queue_sleep_timeouts(q);
		}
		eng_info("nvmeof: queue %u: %llu command(s), %llu doorbell(s)%s, %llu in-capsule; connected in "
			 "%llu ms, %u connect retr%s; completion vector %d (%s); %s\n",
			 nvmeof_queue_qid(q), (unsigned long long)st.cmds,
			 (unsigned long long)st.doorbells, slept, (unsigned long long)st.in_capsule,
			 (unsigned long long)conn_ms, conn_retries, conn_retries == 1 ? "y" : "ies",
			 nvmeof_poll_group_comp_vector(jq->group), jq->vector_how, who);
		/* beside fio's clat: what of it the fabric and the target took */
		static const double pct[] = {50, 90, 99, 99.9};
		uint64_t hw[4], nhw = 0, early = 0;
		/* the left-out commands are said: many of them mean the
		 * percentiles describe only part of the run */
		if (!nvmeof_queue_hw_latency(q, pct, 4, hw, &nhw) && !nvmeof_queue_hw_early(q, &early))
			eng_info("nvmeof: queue %u: NIC time from send completion to response (hw_timestamps): "
				 "p50 %.2f us, p90 %.2f us, p99 %.2f us, p99.9 %.2f us over %llu command(s); "
				 "%llu left out, their response clocked before their send completion\n",
				 nvmeof_queue_qid(q), hw[0] / 1e3, hw[1] / 1e3, hw[2] / 1e3, hw[3] / 1e3,
				 (unsigned long long)nhw, (unsigned long long)early);
		/* whether zerocopy happened on this path: a device that
		 * cannot send from user pages (loopback, veth) copies anyway */
		uint64_t zc = 0, zc_copied = 0;
		if (jq->sc && jq->sc->cfg.o.tcp_zerocopy && !nvmeof_queue_tcp_zerocopy(q, &zc, &zc_copied))
			eng_info("nvmeof: queue %u: zerocopy %llu send(s), %llu copied by the kernel\n",
				 nvmeof_queue_qid(q), (unsigned long long)zc, (unsigned long long)zc_copied);
		if (st.reconnects)
			eng_info("nvmeof: queue %u reconnected %llu time(s), longest outage %llu ms\n",
				 nvmeof_queue_qid(q), (unsigned long long)st.reconnects,
				 (unsigned long long)st.outage_ms_max);
		if (st.timeouts)
			eng_info("nvmeof: queue %u: %llu command(s) timed out\n", nvmeof_queue_qid(q),
				 (unsigned long long)st.timeouts);
		if (st.retries)
			eng_info("nvmeof: queue %u: %llu command(s) retried\n", nvmeof_queue_qid(q),
				 (unsigned long long)st.retries);
		nvmeof_queue_destroy(q);
	}
	if (nq > 1)
		eng_info("nvmeof: the job's poll group of %u queue pairs: %llu sleep(s) (%llu to their end)%s; %s\n", nq,
			 (unsigned long long)sleeps, (unsigned long long)sleeps_out, spin, who);
	if (eng_quiet && nq)
		eng_summary("nvmeof: %s: %u queue pair(s), %llu command(s), %llu doorbell(s), %llu reconnect(s), "
			    "%llu timed out, %llu retried, %llu abandoned\n", who, nq, (unsigned long long)cmds,
			    (unsigned long long)bells, (unsigned long long)recon, (unsigned long long)tmo,
			    (unsigned long long)retr, (unsigned long long)gone);
	jq->nq = 0;
	if (jq->group)
		nvmeof_poll_group_destroy(jq->group);
	jq->group = NULL;
}

uint32_t qpairs_inflight(const struct jqueue *jq)
{
	uint32_t n = 0;
	if (jq->qs) /* the pair is other jobs' too: only this job's requests */
		return __atomic_load_n(&jq->qs_inflight, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < jq->nq; i++)
		n += jq->mp ? nvmeof_mpath_queue_inflight(jq->mq[i]) : nvmeof_queue_inflight(jq->q[i]);
	return n;
}
