/* A file's namespace facts for setup: connected, or, in fio's parent before
 * it forks the job processes, from a short-lived child. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"

/* Every zone of the namespace, from an I/O queue of its own (the job's
 * are not open yet), into ef->zones. 0, or 1 after logging why. */
static int report_all(struct efile *ef, struct nvmeof_queue *q, struct ns_facts *nf)
{
	uint64_t zsz = nf->zi.zone_size, nz = nf->zi.nr_zones;
	if (!zsz || !nz || nz > UINT32_MAX || !(ef->zones = calloc(nz, sizeof(*ef->zones)))) {
		eng_err("nvmeof: namespace %u: %llu zones of %llu LBAs: no zone report to take\n", ef->nsid,
			(unsigned long long)nz, (unsigned long long)zsz);
		return 1;
	}
	/* the library's loop: as many zones a command as MDTS carries */
	uint32_t n = 0;
	int rc = nvmeof_zone_report_all(q, ef->ns, zsz, 0, NVMEOF_ZRASF_ALL, true, ef->zones, (uint32_t)nz, &n,
					NULL, 0);
	if (rc || n < nz) {
		eng_err("nvmeof: namespace %u: report zones from LBA %llu: %s\n", ef->nsid,
			(unsigned long long)n * zsz, rc ? nvmeof_errmsg() : "no zone reported");
		return 1;
	}
	nf->nzones = n;
	return 0;
}

/* The zone geometry (zonemode=zbd, zone_append=1), the zone report
 * (zonemode=zbd), the placement identifiers (fdp=1): what fio's parent
 * asks the hooks before the job's queues exist. 0, or 1 after logging. */
static int zone_facts(struct thread_data *td, struct efile *ef, struct ns_facts *nf)
{
	struct eng_opts *eo = td->eo;
	bool zbd = td->o.zone_mode == ZONE_MODE_ZBD, fdp = ENG_DP_FDP(td);
	memset(&nf->zi, 0, sizeof(*nf) - offsetof(struct ns_facts, zi));
	if (ef->zones) /* fio's parent took the report: this job process has it */
		nf->nzones = ef->facts.nzones;
	if (!zbd && !eo->zone_append && !fdp)
		return 0;
	if ((zbd || eo->zone_append) && nvmeof_zns_info(ef->sc->c, ef->nsid, &nf->zi)) {
		eng_err("nvmeof: namespace %u: %s\n", ef->nsid, nvmeof_errmsg());
		return eng_fail(td, EIO, "nvmeof zoned namespace");
	}
	bool report = zbd && nf->zi.zoned && !ef->zones;
	if (!report && !fdp)
		return 0;
	struct nvmeof_queue *q = NULL;
	int rc = nvmeof_queue_create(ef->sc->c, NULL, &q);
	if (rc) {
		eng_err("nvmeof: an I/O queue for the namespace's zones or placement: %s\n", nvmeof_errmsg());
		return eng_fail(td, eng_errno(rc), "nvmeof queue");
	}
	int bad = report ? report_all(ef, q, nf) : 0;
	if (!bad && fdp) {
		struct nvmeof_ruhs_desc d[NVMEOF_RUHS_MAX];
		uint32_t nr = 0;
		nf->fdp_rc = nvmeof_fdp_ruhs(q, ef->ns, d, NVMEOF_RUHS_MAX, &nr, 0);
		if (nf->fdp_rc)
			snprintf(nf->fdp_why, sizeof(nf->fdp_why), "namespace %u: %s", ef->nsid, nvmeof_errmsg());
		else if (nr > NVMEOF_RUHS_MAX) {
			nf->fdp_rc = NVMEOF_ENOTSUP;
			snprintf(nf->fdp_why, sizeof(nf->fdp_why), "namespace %u has %u reclaim unit handles, "
				 "more than the %d the engine reads", ef->nsid, nr, NVMEOF_RUHS_MAX);
		}
		for (uint32_t i = 0; !nf->fdp_rc && i < nr; i++)
			nf->pids[i] = d[i].pid;
		nf->npids = nf->fdp_rc ? 0 : nr;
	}
	nvmeof_queue_destroy(q);
	return bad ? eng_fail(td, EIO, "nvmeof report zones") : 0;
}

/* ef's controller held in ef->sc and its namespace in ef->ns. 0, or 1
 * after logging why. */
static int connect_ns(struct thread_data *td, struct efile *ef)
{
	struct eng_opts *eo = td->eo;
	char err[512];
	/* ef->nsze: fio's parent probed it before forking this job's process */
	int why;
	if (!ef->sc) {
		ef->sc = share_get(&ef->cfg, eo->hca, ef->nsze != 0, err, sizeof(err), &why);
		/* the other paths' connects (paths.c) still need the secrets */
		if (!ef->sc || !ef->cfg.t.nalt)
			cfg_secrets_wipe(&ef->cfg);
	}
	if (!ef->sc) {
		eng_err("nvmeof: %s\n", err);
		return eng_fail(td, eng_errno(why), "nvmeof connect");
	}
	ef->ns = nvmeof_ns_get(ef->sc->c, ef->nsid);
	if (!ef->ns) {
		eng_err("nvmeof: %s\n", nvmeof_errmsg());
		return eng_fail(td, ENXIO, "nvmeof namespace");
	}
	return 0;
}

static int facts_connected(struct thread_data *td, struct efile *ef, struct ns_facts *nf)
{
	if (connect_ns(td, ef))
		return 1;
	nf->nsze = ef->ns->nsze;
	nf->lbads = ef->ns->lbads;
	nf->max_xfer = nvmeof_ctrl_info(ef->sc->c)->max_xfer;
	return zone_facts(td, ef, nf);
}

/* The facts and the zone report through the probe's pipe. */
static bool write_all(int fd, const void *p, size_t len)
{
	const char *c = p;
	while (len) {
		ssize_t w = write(fd, c, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		c += w;
		len -= (size_t)w;
	}
	return true;
}

static bool read_all(int fd, void *p, size_t len)
{
	char *c = p;
	while (len) {
		ssize_t r = read(fd, c, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		c += r;
		len -= (size_t)r;
	}
	return true;
}

/* The kernel refuses uverbs commands from a child on a device file its
 * parent opened, so fio's parent must never open one: a child connects
 * instead and reports the facts through a pipe. */
static int facts_in_child(struct thread_data *td, struct efile *ef, struct ns_facts *nf)
{
	int fd[2], status = 0;
	if (pipe(fd))
		return 1;
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		eng_err("nvmeof: fork for the namespace probe: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		close(fd[0]);
		int rc = facts_connected(td, ef, nf);
		size_t zlen = (size_t)nf->nzones * sizeof(*ef->zones);
		if (!rc && (write(fd[1], nf, sizeof(*nf)) != (ssize_t)sizeof(*nf) ||
			    (zlen && !write_all(fd[1], ef->zones, zlen))))
			rc = 1;
		if (ef->sc)
			share_put(ef->sc);
		/* the job error (an errno) for the parent's td, in case fio's
		 * job table is not shared with this child */
		_exit(rc ? (td->error > 0 && td->error < 256 ? td->error : EIO) : 0);
	}
	close(fd[1]);
	ssize_t n = read_all(fd[0], nf, sizeof(*nf)) ? (ssize_t)sizeof(*nf) : -1;
	/* the zone report follows the facts */
	if (n > 0 && nf->nzones) {
		size_t zlen = (size_t)nf->nzones * sizeof(*ef->zones);
		free(ef->zones);
		if (!(ef->zones = malloc(zlen)) || !read_all(fd[0], ef->zones, zlen))
			n = -1;
	}
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(*nf) && WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	return eng_fail(td, WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : EIO, "nvmeof connect");
}

int probe_ns(struct thread_data *td, struct efile *ef, bool connect, struct ns_facts *nf)
{
	return connect ? facts_connected(td, ef, nf) : facts_in_child(td, ef, nf);
}

static int on_queue(const struct efile *ef, probe_queue_fn fn, void *arg)
{
	struct nvmeof_queue *q = NULL;
	int rc = nvmeof_queue_create(ef->sc->c, NULL, &q);
	if (rc) {
		eng_err("nvmeof: an I/O queue for a zone command before the job's: %s\n", nvmeof_errmsg());
		return eng_errno(rc);
	}
	rc = fn(ef, q, arg);
	nvmeof_queue_destroy(q);
	return rc;
}

int probe_queue_call(struct thread_data *td, struct efile *ef, probe_queue_fn fn, void *arg)
{
	if (ef->sc)
		return on_queue(ef, fn, arg);
	int status = 0;
	pid_t pid = fork();
	if (pid < 0) {
		eng_err("nvmeof: fork for a zone command before the job's queue pairs: %s\n", strerror(errno));
		return EIO;
	}
	if (pid == 0) {
		int rc = connect_ns(td, ef) ? (td->error > 0 && td->error < 256 ? td->error : EIO) : on_queue(ef, fn, arg);
		if (ef->sc)
			share_put(ef->sc);
		_exit(rc > 0 && rc < 256 ? rc : rc ? EIO : 0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
}
