/* A file's namespace facts for setup: connected, or, in fio's parent before
 * it forks the job processes, from a short-lived child. */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"

static int facts_connected(struct thread_data *td, struct efile *ef, struct ns_facts *nf)
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
	nf->nsze = ef->ns->nsze;
	nf->lbads = ef->ns->lbads;
	return 0;
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
		if (!rc && write(fd[1], nf, sizeof(*nf)) != (ssize_t)sizeof(*nf))
			rc = 1;
		if (ef->sc)
			share_put(ef->sc);
		/* the job error (an errno) for the parent's td, in case fio's
		 * job table is not shared with this child */
		_exit(rc ? (td->error > 0 && td->error < 256 ? td->error : EIO) : 0);
	}
	close(fd[1]);
	ssize_t n = read(fd[0], nf, sizeof(*nf));
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
