/* A file whose filename names several paths (traddr= repeated): a
 * controller per path, shared like any other, one multipath over them,
 * and qpairs= multipath queues, each a queue on every path. The library
 * picks a path per command (iopolicy=) and fails commands over. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "losses.h"
#include "tcp_opts.h"

/* The configuration of path i of k: the same but for its address. */
static void path_cfg(const struct conn_cfg *k, unsigned int i, struct conn_cfg *out)
{
	const struct tid_path *p = &k->t.alt[i - 1];
	*out = *k;
	snprintf(out->t.traddr, sizeof(out->t.traddr), "%s", p->traddr);
	snprintf(out->t.trsvcid, sizeof(out->t.trsvcid), "%s", p->trsvcid);
	snprintf(out->t.srcaddr, sizeof(out->t.srcaddr), "%s", p->srcaddr);
	out->t.trtype = p->trtype; /* one path over RDMA, another over TCP */
	out->o.trtype = p->trtype == 3 ? "tcp" : NULL;
	out->t.nalt = 0;
	out->o.traddr = out->t.traddr;
	out->o.trsvcid = out->t.trsvcid[0] ? out->t.trsvcid : NULL;
	out->o.src_addr = out->t.srcaddr[0] ? out->t.srcaddr : NULL;
	out->o.subnqn = out->t.subnqn;
	out->o.hostnqn = out->t.hostnqn[0] ? out->t.hostnqn : NULL;
	out->o.hostid = out->hostid[0] ? out->hostid : NULL;
	out->o.dhchap_secret = out->dhchap_secret[0] ? out->dhchap_secret : NULL;
	out->o.dhchap_ctrl_secret = out->dhchap_ctrl_secret[0] ? out->dhchap_ctrl_secret : NULL;
	out->o.tls_key = out->tls_key[0] ? out->tls_key : NULL;
	out->o.tls_keyring = out->tls_keyring[0] ? out->tls_keyring : NULL;
	out->o.dhchap_hashes = out->dhchap_hashes[0] ? out->dhchap_hashes : NULL;
	out->o.dhchap_dhgroups = out->dhchap_dhgroups[0] ? out->dhchap_dhgroups : NULL;
	tcp_opts_path(&out->o, k, p->trtype);
}

/* Jobs of one process (thread mode) share each path's controller, and a
 * multipath per namespace (a controller's events go to each multipath on
 * it): jobs on the same paths and namespace share it as they share the
 * controllers, each with its own queues and buffer. */
struct shared_mp {
	struct shared_mp *next;
	struct shared_ctrl *psc[TID_MAX_PATHS];
	unsigned int npaths;
	uint32_t nsid;
	unsigned int iopolicy;
	int quiesce_ms;
	struct nvmeof_mpath *mp;
	int refs;
};
static pthread_mutex_t mp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shared_mp *mp_head;

static struct shared_mp *mp_get(const struct jqueue *jq, uint32_t nsid, unsigned int iopolicy, int quiesce_ms)
{
	struct shared_mp *m;
	pthread_mutex_lock(&mp_lock);
	for (m = mp_head; m; m = m->next) {
		if (m->npaths != jq->npaths || memcmp(m->psc, jq->psc, jq->npaths * sizeof(jq->psc[0])) ||
		    m->nsid != nsid)
			continue;
		if (m->iopolicy != iopolicy) {
			eng_err("nvmeof: these paths to namespace %u are already driven by another job with iopolicy %s: "
				"jobs of one process that share paths share their multipath, and its policy\n",
				nsid, nvmeof_iopolicy_str((enum nvmeof_iopolicy)m->iopolicy));
			m = NULL;
			goto out;
		}
		if (m->quiesce_ms != quiesce_ms) {
			eng_err("nvmeof: these paths to namespace %u are already driven by another job with quiesce_time %d: "
				"jobs of one process that share paths share their multipath, and its quiesce time\n",
				nsid, m->quiesce_ms);
			m = NULL;
			goto out;
		}
		m->refs++;
		goto out;
	}
	if (!(m = calloc(1, sizeof(*m)))) {
		eng_err("nvmeof: multipath: out of memory\n");
		goto out;
	}
	struct nvmeof_ctrl *c[TID_MAX_PATHS];
	for (unsigned int i = 0; i < jq->npaths; i++)
		c[i] = jq->psc[i]->c;
	struct nvmeof_mpath_opts mo;
	nvmeof_mpath_opts_init(&mo);
	mo.nsid = nsid;
	mo.iopolicy = (enum nvmeof_iopolicy)iopolicy;
	if (quiesce_ms >= 0)
		mo.quiesce_ms = (uint32_t)quiesce_ms;
	if (nvmeof_mpath_create(c, jq->npaths, &mo, &m->mp)) {
		eng_err("nvmeof: %s\n", nvmeof_errmsg());
		free(m);
		m = NULL;
		goto out;
	}
	memcpy(m->psc, jq->psc, sizeof(m->psc));
	m->npaths = jq->npaths;
	m->nsid = nsid;
	m->iopolicy = iopolicy;
	m->quiesce_ms = quiesce_ms;
	m->refs = 1;
	m->next = mp_head;
	mp_head = m;
out:
	pthread_mutex_unlock(&mp_lock);
	return m;
}

/* After the job's queues and registration are gone. */
static void mp_put(struct shared_mp *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&mp_lock);
	bool last = --m->refs == 0;
	if (last)
		for (struct shared_mp **pp = &mp_head; *pp; pp = &(*pp)->next)
			if (*pp == m) {
				*pp = m->next;
				break;
			}
	pthread_mutex_unlock(&mp_lock);
	/* unlisted: the destroy (which may wait for an ANA log read) holds
	 * up no other job */
	if (last) {
		if (nvmeof_mpath_destroy(m->mp))
			eng_err("nvmeof: %s\n", nvmeof_errmsg());
		free(m);
	}
}

int paths_open(struct thread_data *td, struct job *j, struct jqueue *jq, struct efile *ef, unsigned int nq,
	       uint32_t depth)
{
	struct eng_opts *eo = td->eo;
	(void)j;
	char err[512];
	/* hca= names the first path's device (the file's own controller
	 * checked it); the others are chosen by their srcaddr= */
	jq->psc[0] = ef->sc;
	jq->npaths = 1;
	for (unsigned int i = 1; i <= ef->cfg.t.nalt; i++) {
		struct conn_cfg k;
		path_cfg(&ef->cfg, i, &k);
		int why;
		jq->psc[i] = share_get(&k, NULL, true, err, sizeof(err), &why);
		explicit_bzero(&k, sizeof(k));
		if (!jq->psc[i] || i == ef->cfg.t.nalt)
			cfg_secrets_wipe(&ef->cfg); /* every path's connect is done */
		if (!jq->psc[i]) {
			eng_err("nvmeof: path %u (%s): %s\n", i + 1, ef->cfg.t.alt[i - 1].traddr, err);
			return eng_fail(td, eng_errno(why), "nvmeof connect");
		}
		jq->npaths++;
	}
	if (eo->path_loss && *eo->path_loss) {
		unsigned int n;
		unsigned long long ms;
		char end;
		if (sscanf(eo->path_loss, "%u@%llu%c", &n, &ms, &end) != 2 || !n || n > jq->npaths) {
			eng_err("nvmeof: path_loss=%s: N@MS, N a path of the filename (1 to %u), MS ms into the job\n",
				eng_shown(eo->path_loss), jq->npaths);
			return 1;
		}
		jq->loss_path = n;
		jq->loss_ms = ms;
	}
	if (!(jq->smp = mp_get(jq, ef->nsid, eo->iopolicy, eo->quiesce_ms)))
		return 1;
	jq->mp = jq->smp->mp;
	struct nvmeof_queue_opts qo;
	nvmeof_queue_opts_init(&qo);
	qo.depth = depth;
	qo.batch = true; /* the engine's commit rings each path once per batch */
	for (unsigned int n = 0; n < nq; n++) {
		if (nvmeof_mpath_queue_create(jq->mp, &qo, &jq->mq[n])) {
			eng_err("nvmeof: queue pair %u of %u on %u paths: %s\n", n + 1, nq, jq->npaths, nvmeof_errmsg());
			return 1;
		}
		jq->nq++;
	}
	for (unsigned int i = 0; i < jq->npaths; i++) {
		struct nvmeof_path_info pi = {.size = sizeof(pi)};
		nvmeof_mpath_path_info(jq->mp, i, &pi);
		eng_info("nvmeof: job %s (%d): %s: path %u %s:%s (%s), controller CNTLID %u, ANA group %u %s, "
			 "%u queue pair(s) of depth %u, iopolicy %s\n", td->o.name, td->thread_number,
			 ef->cfg.t.subnqn, i + 1, pi.traddr, pi.trsvcid, pi.hca, pi.cntlid, pi.anagrpid,
			 nvmeof_ana_state_str(pi.ana_state), nq, depth, nvmeof_iopolicy_str((enum nvmeof_iopolicy)eo->iopolicy));
	}
	return 0;
}

void paths_inject(struct thread_data *td, struct job *j)
{
	for (int k = 0; k < j->njq; k++) {
		struct jqueue *jq = &j->jq[k];
		if (!jq->mp || !jq->loss_path || jq->loss_done || utime_since_now(&td->epoch) / 1000 < jq->loss_ms)
			continue;
		jq->loss_done = true;
		for (unsigned int n = 0; n < jq->nq; n++)
			if (nvmeof_mpath_queue_path_disconnect(jq->mq[n], jq->loss_path - 1))
				eng_err("nvmeof: path_loss: %s\n", nvmeof_errmsg());
		eng_info("nvmeof: path_loss: path %u's queue pairs disconnected %llu ms into the job\n", jq->loss_path,
			 (unsigned long long)(utime_since_now(&td->epoch) / 1000));
	}
}

/* Each loss of a path as each queue pair saw it, and the latency of the
 * commands that failed over, fio's percentiles. */
static void print_losses(struct jqueue *jq, unsigned int i)
{
	for (unsigned int n = 0; n < jq->nq; n++)
		losses_tell(jq->mq[n], i, n, eng_info);
}

static void print_failover_latency(struct jqueue *jq)
{
	static const double pct[] = {1, 5, 10, 50, 90, 99, 99.9, 100};
	enum { NP = sizeof(pct) / sizeof(pct[0]) };
	for (unsigned int n = 0; n < jq->nq; n++) {
		uint64_t ns[NP], cnt = 0;
		if (nvmeof_mpath_queue_failover_latency(jq->mq[n], pct, NP, ns, &cnt) || !cnt)
			continue;
		char line[512];
		int o = snprintf(line, sizeof(line), "nvmeof: queue pair %u: %llu command(s) failed over, clat percentiles "
				 "(usec):", n + 1, (unsigned long long)cnt);
		for (unsigned int k = 0; k < NP && o > 0 && (size_t)o < sizeof(line); k++)
			o += snprintf(line + o, sizeof(line) - (size_t)o, " %.2fth=[%llu]%s", pct[k],
				      (unsigned long long)(ns[k] / 1000), k + 1 < NP ? "," : "");
		eng_info("%s\n", line);
	}
}

void paths_close(struct jqueue *jq, const char *who)
{
	/* quiet=1: the job's one line, summed over its paths */
	uint64_t t_cmds = 0, t_fo = 0, t_perr = 0, t_held = 0, gone = 0;
	unsigned int npaths = jq->npaths;
	for (unsigned int i = 0; jq->mp && i < jq->npaths; i++) {
		struct nvmeof_path_info pi = {.size = sizeof(pi)};
		uint64_t cmds = 0, db = 0, fo = 0, perr = 0, held = 0;
		uint32_t hold_max = 0;
		nvmeof_mpath_path_info(jq->mp, i, &pi);
		for (unsigned int n = 0; n < jq->nq; n++) {
			struct nvmeof_path_stats st = {.size = sizeof(st)};
			nvmeof_mpath_queue_path_stats(jq->mq[n], i, &st);
			cmds += st.cmds;
			db += st.doorbells;
			fo += st.failovers;
			perr += st.path_errors;
			held += st.held;
			if (st.hold_max_ms > hold_max)
				hold_max = st.hold_max_ms;
		}
		t_cmds += cmds, t_fo += fo, t_perr += perr, t_held += held;
		eng_info("nvmeof: path %u %s:%s (%s): ANA %s, %llu ANA change(s), %llu command(s), %llu doorbell(s), "
			 "%llu failover(s), %llu path error(s), %llu write(s) held for the quiesce time (longest %u ms)\n",
			 i + 1, pi.traddr, pi.trsvcid, pi.hca, nvmeof_ana_state_str(pi.ana_state),
			 (unsigned long long)pi.ana_changes, (unsigned long long)cmds, (unsigned long long)db,
			 (unsigned long long)fo, (unsigned long long)perr, (unsigned long long)held, hold_max);
		print_losses(jq, i);
	}
	if (jq->mp)
		print_failover_latency(jq);
	for (unsigned int n = 0; n < jq->nq; n++) {
		uint32_t left = nvmeof_mpath_queue_inflight(jq->mq[n]);
		gone += left;
		if (left)
			eng_info("nvmeof: multipath queue %u: %u request(s) still waiting when the job ended were "
				 "abandoned\n", n + 1, left);
		nvmeof_mpath_queue_destroy(jq->mq[n]);
		jq->mq[n] = NULL;
	}
	if (eng_quiet && jq->nq)
		eng_summary("nvmeof: %s: %u path(s), %llu command(s), %llu failover(s), %llu path error(s), "
			    "%llu write(s) held, %llu abandoned\n", who, npaths, (unsigned long long)t_cmds,
			    (unsigned long long)t_fo, (unsigned long long)t_perr, (unsigned long long)t_held,
			    (unsigned long long)gone);
	jq->nq = 0;
	if (jq->mmr)
		nvmeof_mpath_mr_release(jq->mmr);
	jq->mmr = NULL;
	mp_put(jq->smp);
	jq->smp = NULL;
	jq->mp = NULL;
	for (unsigned int i = 1; i < jq->npaths; i++)
		share_put(jq->psc[i]);
	jq->npaths = 0;
}
