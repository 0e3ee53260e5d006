/*
 * The multipath object: paths over controllers of one subsystem, checked
 * to reach one namespace; each path's ANA state, re-read from its log on
 * an ANA change event, after a path status, while a transition lasts and
 * when a path comes back; registrations on every path.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aer.h"
#include "ana.h"
#include "ctrl.h"
#include "internal.h"
#include "mpath.h"
#include "protocol.h"
#include "queue.h"
#include "util.h"

#define DETACH_TIMEOUT_MS 30000

void nvmeof_mpath_opts_init_sz(struct nvmeof_mpath_opts *o, size_t size)
{
	if (!o)
		return;
	struct nvmeof_mpath_opts d = {.size = sizeof(d), .iopolicy = NVMEOF_IOPOLICY_QUEUE_DEPTH, .numa_node = -1,
					.quiesce_ms = MP_QUIESCE_DEFAULT_MS};
	size_t n = size && size < sizeof(d) ? size : sizeof(d);
	memset(o, 0, n);
	memcpy(o, &d, n);
	o->size = n;
}

/* An I/O thread (a status) and the refresh thread (the log) may set the
 * state at once: the state and the start of its transition change
 * together, or a CHANGE could be left with no start, a wait without its
 * ANATT bound. A spin lock: the section is a few stores, taken only when
 * the state is set. Readers take neither (relaxed loads): they may see
 * one change a moment late. */
void (*mp_set_ana_seam)(struct mp_path *p, bool waiting);

void mp_set_ana(struct mp_path *p, uint8_t st, uint64_t now_ms)
{
	while (__atomic_test_and_set(&p->ana_lock, __ATOMIC_ACQUIRE))
		if (mp_set_ana_seam)
			mp_set_ana_seam(p, true);
	if (__atomic_load_n(&p->ana, __ATOMIC_RELAXED) != st) {
		if (mp_set_ana_seam)
			mp_set_ana_seam(p, false);
		__atomic_store_n(&p->change_since_ms, st == NVMEOF_ANA_CHANGE ? now_ms : 0, __ATOMIC_RELAXED);
		__atomic_store_n(&p->ana, st, __ATOMIC_RELAXED);
		__atomic_fetch_add(&p->ana_changes, 1, __ATOMIC_RELAXED);
	}
	__atomic_clear(&p->ana_lock, __ATOMIC_RELEASE);
}

void mp_path_take_ctrl(struct mp_path *p, const struct nvmeof_ctrl_info *ci, uint32_t kato_ms)
{
	__atomic_store_n(&p->cqt_ms, ci->cqt, __ATOMIC_RELAXED);
	__atomic_store_n(&p->kato_ms, kato_ms, __ATOMIC_RELAXED);
	__atomic_store_n(&p->kas, ci->kas, __ATOMIC_RELAXED);
}

uint32_t mp_hold_ms(const struct nvmeof_mpath *mp, const struct mp_path *p)
{
	return q_hold_rule(mp->o.quiesce_ms, __atomic_load_n(&p->cqt_ms, __ATOMIC_RELAXED),
			   __atomic_load_n(&p->kato_ms, __ATOMIC_RELAXED), __atomic_load_n(&p->kas, __ATOMIC_RELAXED));
}

static int path_identify(struct mp_path *p);

/* A controller without ANA reporting has one state for all: optimized.
 * Called with p->read_lock held. */
static int read_ana_locked(struct mp_path *p)
{
	const char *why;
	uint8_t st;
	uint64_t now = nvmeof_now_ms();
	__atomic_store_n(&p->last_read_ms, now, __ATOMIC_RELAXED);
	if (!p->ana_reporting) {
		mp_set_ana(p, NVMEOF_ANA_OPTIMIZED, now);
		return 0;
	}
	int rc = 0;
	if (p->assoc_gen != ctrl_assoc_gen(p->c) && (rc = path_identify(p)))
		return rc;
	if ((rc = nvmeof_get_log_ana(p->c, false, p->log, p->log_len)))
		return nvmeof_err_prefix(rc, "path %s:%s: ANA log", p->traddr, p->trsvcid);
	__atomic_fetch_add(&p->ana_reads, 1, __ATOMIC_RELAXED);
	if (nvme_ana_log_check(p->log, p->log_len, &why))
		return nvmeof_err(NVMEOF_ENVME, "path %s:%s: ANA log: %s", p->traddr, p->trsvcid, why);
	/* by the namespace's ID: it may have moved to another group */
	uint32_t grp = __atomic_load_n(&p->anagrpid, __ATOMIC_RELAXED);
	rc = nvme_ana_ns_state(p->log, p->log_len, p->ns->nsid, &grp, &st);
	__atomic_store_n(&p->anagrpid, grp, __ATOMIC_RELAXED);
	/* A namespace the log names nowhere has no state this controller
	 * reports: it is not reachable through it. */
	mp_set_ana(p, rc ? NVMEOF_ANA_INACCESSIBLE : st, nvmeof_now_ms());
	return 0;
}

static int read_ana(struct mp_path *p)
{
	pthread_mutex_lock(&p->read_lock);
	int rc = read_ana_locked(p);
	pthread_mutex_unlock(&p->read_lock);
	return rc;
}

int nvmeof_mpath_refresh(struct nvmeof_mpath *mp)
{
	if (!mp)
		return nvmeof_err(NVMEOF_EINVAL, "refresh paths: no multipath");
	int first = 0;
	for (uint32_t i = 0; i < mp->n; i++) {
		__atomic_store_n(&mp->p[i].refresh, 0, __ATOMIC_RELAXED);
		int rc = read_ana(&mp->p[i]);
		if (rc && !first)
			first = rc;
	}
	return first;
}

/* One path's thread: re-reads what was asked for, the path while it is
 * in transition every MP_CHANGE_REREAD_MS (a target may end one without
 * an event), and while it is inaccessible every MP_INACCESSIBLE_REREAD_MS. A failed read leaves the state as it was: the path's
 * queue says whether it is reachable at all. */
static void *refresh_main(void *arg)
{
	struct mp_path *p = arg;
	struct nvmeof_mpath *mp = p->mp;
	pthread_mutex_lock(&mp->lock);
	while (!mp->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += MP_TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&mp->cond, &mp->lock, &ts);
		if (mp->stop)
			break;
		pthread_mutex_unlock(&mp->lock);
		uint64_t now = nvmeof_now_ms(), since = now - __atomic_load_n(&p->last_read_ms, __ATOMIC_RELAXED);
		uint8_t st = mp_ana(p);
		bool due = __atomic_exchange_n(&p->refresh, 0, __ATOMIC_RELAXED) ||
			   (st == NVMEOF_ANA_CHANGE && since >= MP_CHANGE_REREAD_MS) ||
			   (st == NVMEOF_ANA_INACCESSIBLE && since >= MP_INACCESSIBLE_REREAD_MS);
		if (due)
			read_ana(p);
		pthread_mutex_lock(&mp->lock);
	}
	pthread_mutex_unlock(&mp->lock);
	return NULL;
}

static void on_event(void *arg, const struct nvmeof_event *ev)
{
	struct mp_path *p = arg;
	if (ev->type == NVMEOF_AER_NOTICE && ev->info == NVMEOF_AER_NOTICE_ANA) {
		mp_want_refresh(p);
		pthread_mutex_lock(&p->mp->lock);
		pthread_cond_broadcast(&p->mp->cond); /* one cond for every path's thread */
		pthread_mutex_unlock(&p->mp->lock);
	}
	if (p->mp->o.event_cb)
		p->mp->o.event_cb(p->mp->o.event_arg, ev);
}

static void path_name(struct mp_path *p)
{
	const struct sockaddr_storage *ss = ctrl_dst(p->c);
	socklen_t sl = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	if (getnameinfo((const struct sockaddr *)ss, sl, p->traddr, sizeof(p->traddr), p->trsvcid,
			sizeof(p->trsvcid), NI_NUMERICHOST | NI_NUMERICSERV))
		snprintf(p->traddr, sizeof(p->traddr), "?");
	const struct nvmeof_ctrl_info *ci = nvmeof_ctrl_info(p->c);
	snprintf(p->hca, sizeof(p->hca), "%s", ci->hca);
	p->cntlid = ci->cntlid;
}

/* Path i against path 0: one subsystem, one namespace. */
static int check_path(struct nvmeof_mpath *mp, uint32_t i, const struct nvmeof_ns_ids *ids0)
{
	struct mp_path *p = &mp->p[i], *p0 = &mp->p[0];
	const struct nvmeof_ctrl_info *ci = nvmeof_ctrl_info(p->c), *c0 = nvmeof_ctrl_info(p0->c);
	const char *why;
	if (strcmp(ci->subnqn, c0->subnqn))
		return nvmeof_err(NVMEOF_EINVAL,
				  "multipath: path %s:%s leads to subsystem %s, path %s:%s to %s: not one subsystem",
				  p->traddr, p->trsvcid, ci->subnqn, p0->traddr, p0->trsvcid, c0->subnqn);
	if (!(p->ns = nvmeof_ns_get(p->c, mp->o.nsid)))
		return nvmeof_err(NVMEOF_EINVAL, "multipath: path %s:%s has no active namespace %u", p->traddr,
				  p->trsvcid, mp->o.nsid);
	if (i == 0)
		return 0;
	struct nvmeof_ns_ids ids;
	int rc = nvmeof_ns_ids(p->c, mp->o.nsid, &ids);
	if (rc)
		return nvmeof_err_prefix(rc, "multipath: path %s:%s: namespace identifiers", p->traddr, p->trsvcid);
	if (mp_ids_agree(ids0, &ids, &why))
		return nvmeof_err(NVMEOF_EINVAL, "multipath: namespace %u through %s:%s and through %s:%s: %s: not one namespace",
				  mp->o.nsid, p0->traddr, p0->trsvcid, p->traddr, p->trsvcid, why);
	if (p->ns->lba_size != p0->ns->lba_size || p->ns->nsze != p0->ns->nsze)
		return nvmeof_err(NVMEOF_EINVAL, "multipath: namespace %u through %s:%s and through %s:%s: block size or size differ",
				  mp->o.nsid, p0->traddr, p0->trsvcid, p->traddr, p->trsvcid);
	return 0;
}

/* What the path takes from Identify Controller, on creation and after each
 * re-association (a new controller may differ: CNTLID always, ANATT and
 * the ANA log's size in principle). A value is stored only when it
 * changed: the I/O threads read ANATT. Called with read_lock held (or
 * before the path's thread runs). */
static int path_identify(struct mp_path *p)
{
	uint32_t gen = ctrl_assoc_gen(p->c);
	struct nvmeof_ctrl_info ci;
	uint8_t *id = malloc(NVME_IDENTIFY_SIZE);
	if (!id)
		return nvmeof_err(NVMEOF_ENOMEM, "multipath: Identify buffer");
	int rc = nvmeof_identify(p->c, NVME_CNS_CTRL, 0, id);
	if (!rc)
		rc = nvmeof_ctrl_get_info(p->c, &ci);
	if (rc) {
		free(id);
		return nvmeof_err_prefix(rc, "multipath: path %s:%s", p->traddr, p->trsvcid);
	}
	struct nvmeof_ana_caps a;
	nvme_id_ctrl_ana_parse(id, &a);
	uint32_t len = nvme_ana_log_len(id);
	free(id);
	uint32_t anatt_ms = (a.anatt ? a.anatt : MP_ANATT_DEFAULT_S) * 1000u;
	if (anatt_ms != __atomic_load_n(&p->anatt_ms, __ATOMIC_RELAXED))
		__atomic_store_n(&p->anatt_ms, anatt_ms, __ATOMIC_RELAXED);
	if (ci.cntlid != __atomic_load_n(&p->cntlid, __ATOMIC_RELAXED))
		__atomic_store_n(&p->cntlid, ci.cntlid, __ATOMIC_RELAXED);
	mp_path_take_ctrl(p, &ci, ctrl_kato_ms(p->c));
	if (p->ana_reporting && len > p->log_len) {
		uint8_t *log = realloc(p->log, len);
		if (!log)
			return nvmeof_err(NVMEOF_ENOMEM, "multipath: ANA log buffer");
		p->log = log;
	}
	if (p->ana_reporting)
		p->log_len = len;
	p->assoc_gen = gen;
	return 0;
}

static int setup_path(struct nvmeof_mpath *mp, uint32_t i)
{
	struct mp_path *p = &mp->p[i];
	struct nvmeof_ana_caps a;
	int rc = nvmeof_ctrl_ana_caps(p->c, &a);
	if (rc)
		return nvmeof_err_prefix(rc, "multipath: path %s:%s", p->traddr, p->trsvcid);
	p->ana_reporting = a.reporting && p->ns->anagrpid;
	p->anagrpid = p->ns->anagrpid;
	if ((rc = path_identify(p)))
		return rc;
	p->numa_node = mp_hca_node(mp->o.sysfs_root ? mp->o.sysfs_root : "/sys", p->hca);
	return read_ana(p);
}

/* Ends the paths' refresh threads (the caller set nothing yet). */
static void stop_threads(struct nvmeof_mpath *mp)
{
	pthread_mutex_lock(&mp->lock);
	mp->stop = true;
	pthread_cond_broadcast(&mp->cond);
	pthread_mutex_unlock(&mp->lock);
	for (uint32_t i = 0; i < mp->n; i++)
		if (mp->p[i].running)
			pthread_join(mp->p[i].thread, NULL);
}

static void free_paths(struct nvmeof_mpath *mp)
{
	for (uint32_t i = 0; i < mp->n; i++) {
		free(mp->p[i].log);
		pthread_mutex_destroy(&mp->p[i].read_lock);
	}
}

int nvmeof_mpath_create(struct nvmeof_ctrl *const *ctrls, uint32_t n, const struct nvmeof_mpath_opts *opts,
			struct nvmeof_mpath **out)
{
	if (!ctrls || !out || !n || n > MP_MAX_PATHS || !opts)
		return nvmeof_err(NVMEOF_EINVAL, "multipath: %s", !n || n > MP_MAX_PATHS ? "1 to 16 paths" : "no controllers, options or output");
	*out = NULL;
	struct nvmeof_mpath *mp = calloc(1, sizeof(*mp));
	if (!mp)
		return nvmeof_err(NVMEOF_ENOMEM, "multipath: out of memory");
	nvmeof_mpath_opts_init(&mp->o);
	size_t osz = opts->size && opts->size < sizeof(mp->o) ? opts->size : sizeof(mp->o);
	memcpy(&mp->o, opts, osz);
	mp->o.size = sizeof(mp->o);
	mp->n = n;
	pthread_mutex_init(&mp->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&mp->cond, &ca);
	pthread_condattr_destroy(&ca);
	int rc = 0;
	struct nvmeof_ns_ids ids0;
	uint32_t events = 0;
	for (uint32_t i = 0; i < n; i++)
		pthread_mutex_init(&mp->p[i].read_lock, NULL);
	for (uint32_t i = 0; i < n && !rc; i++) {
		mp->p[i].mp = mp;
		mp->p[i].c = ctrls[i];
		if (!ctrls[i]) {
			rc = nvmeof_err(NVMEOF_EINVAL, "multipath: path %u has no controller", i);
			break;
		}
		path_name(&mp->p[i]);
		for (uint32_t k = 0; k < i && !rc; k++)
			if (ctrls[k] == ctrls[i])
				rc = nvmeof_err(NVMEOF_EINVAL, "multipath: path %s:%s named twice", mp->p[i].traddr, mp->p[i].trsvcid);
		if (!rc)
			rc = check_path(mp, i, &ids0);
		if (!rc && i == 0 && (rc = nvmeof_ns_ids(ctrls[0], mp->o.nsid, &ids0)))
			nvmeof_err_prefix(rc, "multipath: path %s:%s: namespace identifiers", mp->p[0].traddr, mp->p[0].trsvcid);
	}
	for (uint32_t i = 0; i < n && !rc; i++)
		rc = setup_path(mp, i);
	for (uint32_t i = 0; i < n && !rc; i++) {
		if ((rc = aer_attach(ctrls[i], on_event, &mp->p[i], mp->o.nsid)))
			nvmeof_err_prefix(rc, "multipath: path %s:%s: events",
					  mp->p[i].traddr, mp->p[i].trsvcid);
		else
			events++;
	}
	for (uint32_t i = 0; i < n && !rc; i++) {
		int e = pthread_create(&mp->p[i].thread, NULL, refresh_main, &mp->p[i]);
		if (e)
			rc = nvmeof_err(NVMEOF_ENOMEM, "multipath: pthread_create: %s", strerror(e));
		else
			mp->p[i].running = true;
	}
	if (rc) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", nvmeof_errmsg());
		stop_threads(mp);
		for (uint32_t i = 0; i < events; i++)
			aer_detach(ctrls[i], &mp->p[i], DETACH_TIMEOUT_MS);
		free_paths(mp);
		pthread_cond_destroy(&mp->cond);
		pthread_mutex_destroy(&mp->lock);
		free(mp);
		return nvmeof_err(rc, "%s", msg);
	}
	*out = mp;
	return 0;
}

int nvmeof_mpath_destroy(struct nvmeof_mpath *mp)
{
	if (!mp)
		return 0;
	pthread_mutex_lock(&mp->lock);
	uint32_t nq = mp->nqueues, nm = mp->nmrs;
	pthread_mutex_unlock(&mp->lock);
	if (nq || nm)
		return nvmeof_err(NVMEOF_EBUSY, "destroy multipath: %u queues and %u registrations remain", nq, nm);
	stop_threads(mp);
	int rc = 0;
	for (uint32_t i = 0; i < mp->n; i++) {
		int r = aer_detach(mp->p[i].c, &mp->p[i], DETACH_TIMEOUT_MS);
		if (r && !rc)
			rc = r;
	}
	if (rc)
		return rc; /* a callback may still use it: leak rather than free under it */
	free_paths(mp);
	pthread_cond_destroy(&mp->cond);
	pthread_mutex_destroy(&mp->lock);
	free(mp);
	return 0;
}

const struct nvmeof_ns *nvmeof_mpath_ns(const struct nvmeof_mpath *mp) { return mp ? mp->p[0].ns : NULL; }
uint32_t nvmeof_mpath_count(const struct nvmeof_mpath *mp) { return mp ? mp->n : 0; }

int nvmeof_mpath_path_info(struct nvmeof_mpath *mp, uint32_t idx, struct nvmeof_path_info *out)
{
	if (!mp || !out || idx >= mp->n)
		return nvmeof_err(NVMEOF_EINVAL, "path info: %s", !mp || !out ? "no multipath or output" : "no such path");
	const struct mp_path *p = &mp->p[idx];
	struct nvmeof_path_info x = {.size = sizeof(x)};
	snprintf(x.traddr, sizeof(x.traddr), "%s", p->traddr);
	snprintf(x.trsvcid, sizeof(x.trsvcid), "%s", p->trsvcid);
	snprintf(x.hca, sizeof(x.hca), "%s", p->hca);
	x.cntlid = __atomic_load_n(&p->cntlid, __ATOMIC_RELAXED);
	x.anagrpid = __atomic_load_n(&p->anagrpid, __ATOMIC_RELAXED);
	x.ana_state = mp_ana(p);
	x.numa_node = p->numa_node;
	x.ana_changes = __atomic_load_n(&p->ana_changes, __ATOMIC_RELAXED);
	x.ana_reads = __atomic_load_n(&p->ana_reads, __ATOMIC_RELAXED);
	size_t n = out->size && out->size < sizeof(x) ? out->size : sizeof(x);
	x.size = n;
	memcpy(out, &x, n);
	return 0;
}

/* ---- registrations on every path ---- */
static void mr_count(struct nvmeof_mpath *mp, int d)
{
	pthread_mutex_lock(&mp->lock);
	mp->nmrs += (uint32_t)d;
	pthread_mutex_unlock(&mp->lock);
}

int nvmeof_mpath_mr_register(struct nvmeof_mpath *mp, void *addr, size_t len, struct nvmeof_mpath_mr **out)
{
	if (!mp || !out || !addr || !len)
		return nvmeof_err(NVMEOF_EINVAL, "multipath register: no multipath, address, length or output");
	struct nvmeof_mpath_mr *m = calloc(1, sizeof(*m));
	if (!m)
		return nvmeof_err(NVMEOF_ENOMEM, "multipath register: out of memory");
	m->mp = mp;
	m->addr = addr;
	m->len = len;
	for (uint32_t i = 0; i < mp->n; i++) {
		int rc = nvmeof_mr_register(mp->p[i].c, addr, len, &m->mr[i]);
		if (rc) {
			nvmeof_err_prefix(rc, "multipath register on path %s:%s", mp->p[i].traddr, mp->p[i].trsvcid);
			while (i--)
				nvmeof_mr_release(m->mr[i]);
			free(m);
			return rc;
		}
	}
	mr_count(mp, 1);
	*out = m;
	return 0;
}

int nvmeof_mpath_mr_alloc(struct nvmeof_mpath *mp, size_t len, struct nvmeof_mpath_mr **out)
{
	void *p = NULL;
	if (!len || posix_memalign(&p, 4096, (len + 4095) & ~(size_t)4095))
		return nvmeof_err(!len ? NVMEOF_EINVAL : NVMEOF_ENOMEM, "multipath alloc: %zu bytes", len);
	memset(p, 0, len);
	int rc = nvmeof_mpath_mr_register(mp, p, len, out);
	if (rc)
		free(p);
	else
		(*out)->owned = true;
	return rc;
}

int nvmeof_mpath_mr_release(struct nvmeof_mpath_mr *m)
{
	if (!m)
		return 0;
	int first = 0;
	for (uint32_t i = 0; i < m->mp->n; i++) {
		int rc = nvmeof_mr_release(m->mr[i]);
		if (rc && !first)
			first = rc;
	}
	mr_count(m->mp, -1);
	if (m->owned)
		free(m->addr);
	free(m);
	return first;
}

void *nvmeof_mpath_mr_addr(const struct nvmeof_mpath_mr *m) { return m ? m->addr : NULL; }
