/* The controllers the jobs of one process share (thread=1): one per target
 * and set of connection options, counted by the jobs holding it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "engine.h"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shared_ctrl *reg_head;

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Every field that changes what the library connects to or how: a new
 * option of nvmeof_ctrl_opts belongs here too, or jobs that differ in it
 * would share one controller. */
bool cfg_same(const struct conn_cfg *a, const struct conn_cfg *b)
{
	const struct nvmeof_ctrl_opts *x = &a->o, *y = &b->o;
	return a->t.trtype == b->t.trtype && x->hdr_digest == y->hdr_digest && x->data_digest == y->data_digest &&
	       str_same(x->traddr, y->traddr) && str_same(x->trsvcid, y->trsvcid) &&
	       str_same(x->src_addr, y->src_addr) && str_same(x->subnqn, y->subnqn) &&
	       str_same(x->hostnqn, y->hostnqn) && str_same(x->hostid, y->hostid) &&
	       x->queue_depth == y->queue_depth && x->num_io_queues == y->num_io_queues &&
	       x->cmd_timeout_ms == y->cmd_timeout_ms && x->connect_timeout_ms == y->connect_timeout_ms &&
	       x->kato_ms == y->kato_ms && x->ka_interval_ms == y->ka_interval_ms &&
	       x->reconnect_delay_ms == y->reconnect_delay_ms && x->ctrl_loss_tmo_ms == y->ctrl_loss_tmo_ms &&
	       x->in_capsule == y->in_capsule && x->wait_mode == y->wait_mode && x->spin_us == y->spin_us &&
	       x->connect_retries == y->connect_retries && x->strict_ordering == y->strict_ordering &&
	       x->hw_timestamps == y->hw_timestamps &&
	       x->tcp_priority == y->tcp_priority && x->tcp_tos == y->tcp_tos &&
	       x->tcp_busy_poll_us == y->tcp_busy_poll_us && x->tcp_zerocopy == y->tcp_zerocopy &&
	       x->disable_sqflow == y->disable_sqflow && x->tls == y->tls &&
	       str_same(x->tls_keyring, y->tls_keyring) && x->tls_compat == y->tls_compat &&
	       x->tls_identity == y->tls_identity &&
	       x->trace == y->trace /* the argument is each controller's own */ &&
	       !memcmp(a->secrets_sha256, b->secrets_sha256, sizeof(a->secrets_sha256)) &&
	       str_same(x->dhchap_hashes, y->dhchap_hashes) && str_same(x->dhchap_dhgroups, y->dhchap_dhgroups) &&
	       x->allow_unauthenticated_ctrl == y->allow_unauthenticated_ctrl;
}

/* s->cfg.o's strings point into the caller's k: make them point into s's copy. */
static void cfg_copy(struct conn_cfg *to, const struct conn_cfg *k)
{
	*to = *k;
#define REPOINT(field, buf) to->o.field = k->o.field == k->buf ? to->buf : k->o.field
	REPOINT(traddr, t.traddr);
	REPOINT(trsvcid, t.trsvcid);
	REPOINT(subnqn, t.subnqn);
	REPOINT(hostnqn, t.hostnqn);
	REPOINT(src_addr, t.srcaddr);
	REPOINT(hostid, hostid);
	REPOINT(dhchap_hashes, dhchap_hashes);
	REPOINT(dhchap_dhgroups, dhchap_dhgroups);
	REPOINT(tls_keyring, tls_keyring);
	/* the filename's transport; over TCP the library refuses what is
	 * RDMA's (GPU buffers, comp_vector, hw_timestamps) */
	to->o.trtype = k->t.trtype == 3 ? "tcp" : NULL;
#undef REPOINT
	/* the connect reads k's secrets; the copy keeps their digest only */
	OPENSSL_cleanse(to->dhchap_secret, sizeof(to->dhchap_secret));
	OPENSSL_cleanse(to->dhchap_ctrl_secret, sizeof(to->dhchap_ctrl_secret));
	OPENSSL_cleanse(to->tls_key, sizeof(to->tls_key));
	to->o.dhchap_secret = to->o.dhchap_ctrl_secret = to->o.tls_key = NULL;
}

struct shared_ctrl *share_get(const struct conn_cfg *k, const char *want_hca, bool reached, char *err, size_t len,
			      int *why)
{
	struct shared_ctrl *s;
	if (k->t.trtype == 3 && want_hca && want_hca[0]) {
		snprintf(err, len, "hca=%s names an RDMA device: refused over NVMe/TCP (trtype=TCP)", want_hca);
		*why = NVMEOF_EINVAL;
		return NULL;
	}
	*why = NVMEOF_ENOMEM;
	pthread_mutex_lock(&reg_lock);
	for (s = reg_head; s; s = s->next)
		if (cfg_same(&s->cfg, k)) {
			s->refs++;
			pthread_mutex_unlock(&reg_lock);
			return s;
		}
	if (k->secrets_gone) {
		/* its secrets were wiped once its connects were done: connecting
		 * again without them would be a connect the user did not ask for */
		snprintf(err, len, "connect to %s subsystem %s: its secrets are no longer held", k->o.traddr,
			 k->o.subnqn);
		*why = NVMEOF_EINVAL;
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, len, "out of memory");
		goto out;
	}
	cfg_copy(&s->cfg, k);
	/* the library's trace hook is always ours: verbose=1 logs each step,
	 * and a slow connect says which step it waits for (k's trace only
	 * tells verbose jobs' controllers apart, cfg_same) */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->trace.t0_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	s->trace.verbose = k->o.trace != NULL;
	pthread_mutex_init(&s->trace.lock, NULL);
	snprintf(s->trace.who, sizeof(s->trace.who), "%s %s", k->o.traddr, k->o.subnqn);
	struct nvmeof_ctrl_opts o = s->cfg.o;
	o.dhchap_secret = k->o.dhchap_secret;
	o.dhchap_ctrl_secret = k->o.dhchap_ctrl_secret;
	o.tls_key = k->o.tls_key;
	o.trace = eng_trace_line;
	o.trace_arg = &s->trace;
	if (s->trace.verbose) {
		char line[600];
		snprintf(line, sizeof(line), "connecting from %s as %s (kato %u ms, reconnect_delay %u ms, "
			 "ctrl_loss_tmo %u ms, cmd_timeout %u ms, connect_timeout %u ms)",
			 k->o.src_addr ? k->o.src_addr : "the route's address",
			 k->o.hostnqn ? k->o.hostnqn : "the default host NQN", k->o.kato_ms, k->o.reconnect_delay_ms,
			 k->o.ctrl_loss_tmo_ms, k->o.cmd_timeout_ms, k->o.connect_timeout_ms);
		eng_trace_line(&s->trace, 0, s->trace.t0_ns, line);
	}
	char what[400];
	snprintf(what, sizeof(what), "connect to %s port %s subsystem %s", k->o.traddr,
		 k->o.trsvcid ? k->o.trsvcid : "4420", k->o.subnqn);
	struct eng_slow slow;
	eng_slow_begin(&slow, &s->trace, &o, what);
	for (uint32_t t = 0;; t++) {
		int rc = nvmeof_ctrl_connect(&o, &s->c);
		if (!rc)
			break;
		*why = rc;
		/* The library takes silence at a first contact for a wrong
		 * address; after the probe got through, it is load: try again
		 * as the library does for I/O queues. */
		if (!reached || t >= s->cfg.o.connect_retries ||
		    (rc != NVMEOF_ETIMEDOUT && rc != NVMEOF_EUNREACHABLE)) {
			snprintf(err, len, "%s: %s%s", what, nvmeof_errmsg(), t ? " (the last of several tries)" : "");
			eng_slow_end(&slow);
			goto fail;
		}
		uint32_t ms = t >= 4 ? 1600 : 100u << t;
		eng_info("nvmeof: connect to %s subsystem %s, try %u: %s: trying again in %u ms\n",
			 k->o.traddr, k->o.subnqn, t + 1, nvmeof_errmsg(), ms);
		nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L}, NULL);
	}
	eng_slow_end(&slow);
	const struct nvmeof_ctrl_info *i = nvmeof_ctrl_info(s->c);
	if (want_hca && want_hca[0] && strcmp(want_hca, i->hca)) {
		snprintf(err, len, "the connection to %s resolved to HCA %s, not the expected %s "
			 "(set src_addr= to an address on %s)", k->t.traddr, i->hca, want_hca, want_hca);
		*why = NVMEOF_EINVAL;
		nvmeof_ctrl_close(s->c);
		goto fail;
	}
	s->refs = 1;
	s->next = reg_head;
	reg_head = s;
	goto out;
fail:
	pthread_mutex_destroy(&s->trace.lock);
	free(s);
	s = NULL;
out:
	pthread_mutex_unlock(&reg_lock);
	return s;
}

int share_count(struct shared_ctrl *s)
{
	pthread_mutex_lock(&reg_lock);
	int n = s->refs;
	pthread_mutex_unlock(&reg_lock);
	return n;
}

void share_put(struct shared_ctrl *s)
{
	struct shared_ctrl **pp;
	if (!s)
		return;
	pthread_mutex_lock(&reg_lock);
	if (--s->refs == 0) {
		for (pp = &reg_head; *pp; pp = &(*pp)->next)
			if (*pp == s) {
				*pp = s->next;
				break;
			}
		if (nvmeof_ctrl_close(s->c))
			eng_err("nvmeof: %s\n", nvmeof_errmsg());
		pthread_mutex_destroy(&s->trace.lock);
		free(s);
	}
	pthread_mutex_unlock(&reg_lock);
}

/* A secret from its option or its file (the first line, without the
 * line end); never logged. 0, or 1 after logging why. */
int cfg_secret(const char *val, const char *file, const char *name, char *out, size_t len)
{
	out[0] = 0;
	if (val && val[0] && file && file[0]) {
		eng_err("nvmeof: give %s or %s_file, not both\n", name, name);
		return 1;
	}
	if (val && val[0]) {
		if (strlen(val) >= len) {
			eng_err("nvmeof: %s is longer than any secret\n", name);
			return 1;
		}
		/* once per process: every job and file passes here */
		static bool warned;
		if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
			eng_err("nvmeof: warning: %s in the job: fio copies job options into its JSON output "
				"and job files are often shared; prefer %s_file\n", name, name);
		snprintf(out, len, "%s", val);
		return 0;
	}
	if (!file || !file[0])
		return 0;
	FILE *fp = fopen(file, "re");
	if (!fp) {
		eng_err("nvmeof: %s_file '%s': %s\n", name, file, strerror(errno));
		return 1;
	}
	/* SPDK's keyring refuses such files; a warning keeps existing setups running */
	struct stat st;
	if (!fstat(fileno(fp), &st) && (st.st_mode & (S_IRWXG | S_IRWXO)))
		eng_err("nvmeof: warning: %s_file '%s' is readable by group or others (mode %03o): chmod 600 it\n",
			name, file, (unsigned)(st.st_mode & 0777));
	/* stdio reads through a buffer of ours, wiped after fclose: its own
	 * (malloc'd) would go back to the heap with the secret in it */
	char iobuf[256];
	setvbuf(fp, iobuf, _IOFBF, sizeof(iobuf));
	char *got = fgets(out, (int)len, fp);
	fclose(fp);
	explicit_bzero(iobuf, sizeof(iobuf));
	size_t n = got ? strcspn(out, "\r\n") : 0;
	if (!got || !n || (n == strlen(out) && n == len - 1)) {
		memset(out, 0, len);
		eng_err("nvmeof: %s_file '%s': %s\n", name, file,
			!got || !n ? "empty: no secret on its first line" : "its first line is longer than any secret");
		return 1;
	}
	out[n] = 0;
	return 0;
}

int cfg_secrets(struct conn_cfg *k, const char *val, const char *file, const char *ctrl_val, const char *ctrl_file)
{
	if (cfg_secret(val, file, "dhchap_secret", k->dhchap_secret, sizeof(k->dhchap_secret)) ||
	    cfg_secret(ctrl_val, ctrl_file, "dhchap_ctrl_secret", k->dhchap_ctrl_secret,
		       sizeof(k->dhchap_ctrl_secret))) {
		cfg_secrets_wipe(k);
		return 1;
	}
	k->o.dhchap_secret = k->dhchap_secret[0] ? k->dhchap_secret : NULL;
	k->o.dhchap_ctrl_secret = k->dhchap_ctrl_secret[0] ? k->dhchap_ctrl_secret : NULL;
	/* both strings with their terminators: ("ab", "") differs from ("a", "b") */
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned int n = 0;
	int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) &&
		 EVP_DigestUpdate(md, k->dhchap_secret, strlen(k->dhchap_secret) + 1) &&
		 EVP_DigestUpdate(md, k->dhchap_ctrl_secret, strlen(k->dhchap_ctrl_secret) + 1) &&
		 EVP_DigestUpdate(md, k->tls_key, strlen(k->tls_key) + 1) &&
		 EVP_DigestFinal_ex(md, k->secrets_sha256, &n) && n == sizeof(k->secrets_sha256);
	EVP_MD_CTX_free(md); /* cleanses its state */
	if (!ok) {
		cfg_secrets_wipe(k);
		eng_err("nvmeof: the digest of the DH-HMAC-CHAP secrets (SHA-256, OpenSSL) failed\n");
		return 1;
	}
	return 0;
}

void cfg_secrets_wipe(struct conn_cfg *k)
{
	k->secrets_gone |= k->dhchap_secret[0] || k->dhchap_ctrl_secret[0] || k->tls_key[0];
	OPENSSL_cleanse(k->dhchap_secret, sizeof(k->dhchap_secret));
	OPENSSL_cleanse(k->dhchap_ctrl_secret, sizeof(k->dhchap_ctrl_secret));
	OPENSSL_cleanse(k->tls_key, sizeof(k->tls_key));
	k->o.dhchap_secret = k->o.dhchap_ctrl_secret = k->o.tls_key = NULL;
}

int cfg_auth(struct conn_cfg *k, const struct eng_opts *eo)
{
	/* the library checks the form (and says which is wrong, never the value) */
	if (cfg_secret(eo->tls_key, eo->tls_key_file, "tls_key", k->tls_key, sizeof(k->tls_key))) {
		cfg_secrets_wipe(k);
		return 1;
	}
	if (eo->keyring && strlen(eo->keyring) >= sizeof(k->tls_keyring)) {
		cfg_secrets_wipe(k);
		eng_err("nvmeof: keyring=: a name of at most %zu bytes\n", sizeof(k->tls_keyring) - 1);
		return 1;
	}
	snprintf(k->tls_keyring, sizeof(k->tls_keyring), "%s", eo->keyring ? eo->keyring : "");
	k->o.tls = eo->tls || k->tls_key[0] || k->tls_keyring[0];
	k->o.tls_key = k->tls_key[0] ? k->tls_key : NULL;
	k->o.tls_keyring = k->tls_keyring[0] ? k->tls_keyring : NULL;
	k->o.tls_compat = eo->tls_key_compat;
	k->o.tls_identity = (uint8_t)eo->tls_identity;
	if (cfg_secrets(k, eo->dhchap_secret, eo->dhchap_secret_file, eo->dhchap_ctrl_secret,
			eo->dhchap_ctrl_secret_file))
		return 1;
	if ((eo->dhchap_hashes && strlen(eo->dhchap_hashes) >= sizeof(k->dhchap_hashes)) ||
	    (eo->dhchap_dhgroups && strlen(eo->dhchap_dhgroups) >= sizeof(k->dhchap_dhgroups))) {
		eng_err("nvmeof: dhchap_hashes or dhchap_dhgroups is longer than a list of every name\n");
		return 1;
	}
	snprintf(k->dhchap_hashes, sizeof(k->dhchap_hashes), "%s", eo->dhchap_hashes ? eo->dhchap_hashes : "");
	snprintf(k->dhchap_dhgroups, sizeof(k->dhchap_dhgroups), "%s", eo->dhchap_dhgroups ? eo->dhchap_dhgroups : "");
	k->o.dhchap_hashes = k->dhchap_hashes[0] ? k->dhchap_hashes : NULL;
	k->o.dhchap_dhgroups = k->dhchap_dhgroups[0] ? k->dhchap_dhgroups : NULL;
	k->o.allow_unauthenticated_ctrl = eo->allow_unauth_ctrl;
	return 0;
}

int cfg_sole_subsystem(struct conn_cfg *k, char *why, size_t wl)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_disc_log *l = NULL;
	size_t n = strlen(why);
	nvmeof_ctrl_opts_init(&o);
	o.traddr = k->t.traddr;
	o.trsvcid = k->t.trsvcid[0] ? k->t.trsvcid : o.trsvcid;
	o.trtype = k->t.trtype == 3 ? "tcp" : NULL;
	o.src_addr = k->t.srcaddr[0] ? k->t.srcaddr : NULL;
	o.hostnqn = k->t.hostnqn[0] ? k->t.hostnqn : NULL;
	if (nvmeof_discovery_connect(&o, &c) || nvmeof_discover(c, &l)) {
		snprintf(why + n, wl - n, "; asking the discovery controller there for it: %s", nvmeof_errmsg());
		if (c)
			nvmeof_ctrl_close(c);
		return -1;
	}
	unsigned int found = 0;
	char list[512] = "";
	for (uint32_t i = 0; i < l->nentries; i++) {
		const struct nvmeof_disc_entry *e = &l->entries[i];
		if (e->subtype != 2 || e->trtype != (k->t.trtype == 3 ? 3 : 1) || strstr(list, e->subnqn))
			continue; /* another port's entry of a subsystem already counted */
		if (!found++)
			snprintf(k->t.subnqn, sizeof(k->t.subnqn), "%s", e->subnqn);
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", found > 1 ? ", " : "", e->subnqn);
	}
	nvmeof_disc_log_free(l);
	nvmeof_ctrl_close(c);
	if (found == 1)
		return k->sole_subsystem = true, 0;
	k->t.subnqn[0] = 0;
	snprintf(why + n, wl - n, "; the discovery controller there lists %s%s", found ? "several NVM subsystems: " :
		 "no NVM subsystem", list);
	return -1;
}
