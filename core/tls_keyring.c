/*
 * TLS PSKs in a kernel keyring, where nvme-cli (gen-tls-key --insert),
 * the kernel's NVMe/TCP host and tlshd keep them: keyring ".nvme" (the
 * nvme-keyring module's), key type "psk", the key's description its PSK
 * identity and its payload the TLS PSK itself (already derived, not the
 * interchange key). Raw keyctl(2)/add_key(2) system calls: no libkeyutils.
 *
 * A key in .nvme is readable only by a process that possesses it (its
 * permissions give the owner view only), so the lookup links the keyring
 * into a thread keyring for the read, as tlshd links .nvme into its
 * session keyring: that of a short-lived thread of its own, so that the
 * caller's thread keyring (its links, or its having none) is left as it
 * was. Never a key byte in a message.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "auth.h"
#include "internal.h"
#include "tls.h"

#define KEYCTL_REVOKE 3
#define KEYCTL_DESCRIBE 6
#define KEYCTL_LINK 8
#define KEYCTL_UNLINK 9
#define KEYCTL_SEARCH 10
#define KEYCTL_READ 11
#define KEY_SPEC_THREAD_KEYRING -1

static long keyctl(int op, long a, long b, long c)
{
	return syscall(SYS_keyctl, op, a, b, c, 0L);
}

int tls_keyring_proc_line(const char *line, const char *name, int32_t *id)
{
	unsigned long serial;
	char type[32], desc[256];
	/* id flags usage timeout perm uid gid type description: keyring's "NAME: N" */
	if (sscanf(line, "%lx %*s %*s %*s %*s %*s %*s %31s %255[^\n]", &serial, type, desc) != 3 ||
	    strcmp(type, "keyring"))
		return 0;
	size_t n = strlen(name);
	if (strncmp(desc, name, n) || desc[n] != ':')
		return 0;
	*id = (int32_t)serial;
	return 1;
}

int tls_keyring_find(const char *name, int32_t *id)
{
	/* in the process's own keyrings first (request_key's search), then
	 * any keyring this process may view (/proc/keys), as libkeyutils'
	 * find_key_by_type_and_desc does: .nvme is in no process's keyrings */
	long r = syscall(SYS_request_key, "keyring", name, NULL, 0L);
	if (r > 0) {
		*id = (int32_t)r;
		return 0;
	}
	FILE *f = fopen("/proc/keys", "r");
	if (!f)
		return nvmeof_err(NVMEOF_ENOTSUP, "TLS PSK: keyring %s: /proc/keys: %s (a kernel without keys?)", name,
				  strerror(errno));
	char line[512];
	int found = 0;
	while (!found && fgets(line, sizeof(line), f))
		found = tls_keyring_proc_line(line, name, id);
	fclose(f);
	if (!found)
		return nvmeof_err(NVMEOF_EINVAL,
				  "TLS PSK: no keyring %s visible to this process (for .nvme: the nvme-keyring "
				  "module loaded, and run as root)",
				  name);
	return 0;
}

/* The description in KEYCTL_DESCRIBE's "type;uid;gid;perm;DESC" (which may
 * hold ';'); "" when the fields are not there. */
static const char *desc_body(const char *desc)
{
	const char *d = desc;
	for (int i = 0; i < 4 && d; i++) {
		const char *semi = strchr(d, ';');
		d = semi ? semi + 1 : NULL;
	}
	return d ? d : "";
}

int tls_keyring_match(const char *desc, int version, uint8_t cipher, const char *hostnqn, const char *subnqn)
{
	char want[TLS_IDENTITY_MAX];
	int w = snprintf(want, sizeof(want), "NVMe%dR%02u %s %s", version, cipher, hostnqn, subnqn);
	if (w < 0 || (size_t)w >= sizeof(want))
		return 0;
	/* "psk;uid;gid;perm;" then the description */
	if (strncmp(desc, "psk;", 4))
		return 0;
	const char *d = desc_body(desc);
	if (strncmp(d, want, (size_t)w))
		return 0;
	/* version 0: the identity itself; 1: then " <the PSK's digest>" */
	return version == 0 ? d[w] == 0 : d[w] == ' ' && d[w + 1] && !strchr(d + w + 1, ' ');
}

long tls_keyring_pick(const char *const *descs, long n, int version, const char *hostnqn, const char *subnqn,
		      uint8_t *cipher, long *dup)
{
	*dup = -1;
	for (uint8_t c = 2; c >= 1; c--)
		for (long i = 0; i < n; i++)
			if (descs[i] && tls_keyring_match(descs[i], version, c, hostnqn, subnqn)) {
				*cipher = c;
				/* a keyring's order is no age (an associative array) and a
				 * serial is random: no key is the newer one to prefer */
				for (long j = i + 1; j < n && *dup < 0; j++)
					if (descs[j] && tls_keyring_match(descs[j], version, c, hostnqn, subnqn))
						*dup = j;
				return i;
			}
	return -1;
}

/* The serials in keyring kr, into *out (malloc'd); their number or -1. */
static long keyring_list(int32_t kr, int32_t **out)
{
	long n = keyctl(KEYCTL_READ, kr, 0, 0);
	for (int tries = 0; n >= 0 && tries < 4; tries++) {
		int32_t *v = malloc((size_t)n + sizeof(int32_t));
		if (!v)
			return -1;
		long m = keyctl(KEYCTL_READ, kr, (long)v, n);
		if (m >= 0 && m <= n) {
			*out = v;
			return m / (long)sizeof(int32_t);
		}
		free(v);
		n = m; /* the keyring grew meanwhile */
	}
	return -1;
}

static int lookup_here(const char *keyring, int version, const char *hostnqn, const char *subnqn, struct tls_psk *p)
{
	int32_t kr, *keys = NULL;
	int rc;
	if ((rc = tls_keyring_find(keyring, &kr)))
		return rc;
	bool linked = keyctl(KEYCTL_LINK, kr, KEY_SPEC_THREAD_KEYRING, 0) == 0;
	long n = keyring_list(kr, &keys);
	if (n < 0) {
		rc = nvmeof_err(NVMEOF_EINVAL, "TLS PSK: keyring %s: keyctl read: %s", keyring, strerror(errno));
		goto out;
	}
	/* the kernel host's order: SHA-384's PSK before SHA-256's */
	enum { DESC = TLS_IDENTITY_MAX + 64 };
	char *text = calloc((size_t)n + 1, DESC);
	const char **descs = calloc((size_t)n + 1, sizeof(*descs));
	if (!text || !descs) {
		free(text);
		free(descs);
		rc = nvmeof_err(NVMEOF_ENOMEM, "TLS PSK: keyring %s: out of memory", keyring);
		goto out;
	}
	for (long i = 0; i < n; i++) {
		long d = keyctl(KEYCTL_DESCRIBE, keys[i], (long)(text + i * DESC), DESC);
		descs[i] = d > 0 && d <= DESC ? text + i * DESC : NULL; /* revoked, or not ours to view */
	}
	uint8_t cipher = 0;
	long dup, at = tls_keyring_pick(descs, n, version, hostnqn, subnqn, &cipher, &dup);
	int32_t hit = at >= 0 ? keys[at] : 0;
	if (at >= 0)
		snprintf(p->identity, sizeof(p->identity), "%s", desc_body(descs[at]));
	if (dup >= 0)
		rc = nvmeof_err(NVMEOF_EINVAL,
				"TLS PSK: keyring %s holds two keys for %s: %s and %s (revoke or unlink the old one, "
				"or give tls_key)",
				keyring, version ? "one host and subsystem" : "one identity", p->identity,
				desc_body(descs[dup]));
	free(text);
	free(descs);
	if (rc)
		goto out;
	if (!hit) {
		rc = nvmeof_err(NVMEOF_EINVAL, "TLS PSK: no key for identity NVMe%dR02 or NVMe%dR01 %s %s%s in keyring %s",
				version, version, hostnqn, subnqn, version ? " <digest>" : "", keyring);
		goto out;
	}
	uint8_t buf[64];
	long len = keyctl(KEYCTL_READ, hit, (long)buf, sizeof(buf));
	if (len < 0)
		rc = nvmeof_err(NVMEOF_EINVAL, "TLS PSK: keyring %s: reading the key of %s: %s", keyring, p->identity,
				strerror(errno));
	else if (len != (cipher == 2 ? 48 : 32))
		rc = nvmeof_err(NVMEOF_EINVAL, "TLS PSK: keyring %s: the key of %s holds %ld bytes, not %u", keyring,
				p->identity, len, cipher == 2 ? 48u : 32u);
	else {
		memcpy(p->psk, buf, (size_t)len);
		p->len = (uint8_t)len;
		p->cipher = cipher;
	}
	OPENSSL_cleanse(buf, sizeof(buf));
out:
	free(keys);
	if (linked)
		keyctl(KEYCTL_UNLINK, kr, KEY_SPEC_THREAD_KEYRING, 0);
	return rc;
}

/* add_key(type, identity) into kr, revoking the key it replaces first, as
 * libnvme's nvme_update_key does: a host controller that holds the old
 * key's serial then sees it revoked, not a stale PSK ("psk" keys have no
 * update: add_key makes a new key and only relinks the name). */
static int insert_here(const char *keyring, const char *type, const char *identity, const uint8_t *psk, size_t len,
		       int32_t *serial)
{
	int32_t kr;
	int rc;
	if ((rc = tls_keyring_find(keyring, &kr)))
		return rc;
	bool linked = keyctl(KEYCTL_LINK, kr, KEY_SPEC_THREAD_KEYRING, 0) == 0; /* possession, to revoke */
	long old = syscall(SYS_keyctl, KEYCTL_SEARCH, (long)kr, type, identity, 0L);
	if (old > 0 && keyctl(KEYCTL_REVOKE, old, 0, 0) < 0)
		rc = nvmeof_err(NVMEOF_EINVAL, "TLS PSK: revoking the key %08lx that '%s' in keyring %s replaces: %s",
				old, identity, keyring, strerror(errno));
	long s = rc ? -1 : syscall(SYS_add_key, type, identity, psk, len, (long)kr);
	if (!rc && s < 0)
		rc = nvmeof_err(NVMEOF_EINVAL, "TLS PSK: add_key %s '%s' to keyring %s: %s", type, identity, keyring,
				strerror(errno));
	if (!rc)
		*serial = (int32_t)s;
	if (linked)
		keyctl(KEYCTL_UNLINK, kr, KEY_SPEC_THREAD_KEYRING, 0);
	return rc;
}

struct lookup_arg {
	const char *keyring, *hostnqn, *subnqn;
	int version, rc;
	struct tls_psk *p;
	const char *type; /* insert: the key's type, identity (hostnqn), bytes and serial */
	const uint8_t *psk;
	size_t len;
	int32_t *serial;
	char msg[NVMEOF_ERRMSG_MAX]; /* the thread's message, which is per thread */
};

static void *lookup_thread(void *v)
{
	struct lookup_arg *a = v;
	a->rc = a->type ? insert_here(a->keyring, a->type, a->hostnqn, a->psk, a->len, a->serial)
			: lookup_here(a->keyring, a->version, a->hostnqn, a->subnqn, a->p);
	if (a->rc)
		snprintf(a->msg, sizeof(a->msg), "%s", nvmeof_errmsg());
	return NULL; /* the thread keyring, and the link in it, go with the thread */
}

/* a in a thread of its own, a freed */
static int in_own_thread(struct lookup_arg *a)
{
	const char *keyring = a->keyring;
	pthread_t t;
	int e = pthread_create(&t, NULL, lookup_thread, a);
	int rc = e ? nvmeof_err(NVMEOF_ENOMEM, "TLS PSK: keyring %s: starting the lookup's thread: %s", keyring,
				strerror(e))
		   : (pthread_join(t, NULL), a->rc ? nvmeof_err(a->rc, "%s", a->msg) : 0);
	free(a);
	return rc;
}

int tls_keyring_lookup(const char *keyring, int version, const char *hostnqn, const char *subnqn, struct tls_psk *p)
{
	struct lookup_arg *a = calloc(1, sizeof(*a));
	if (!a)
		return nvmeof_err(NVMEOF_ENOMEM, "TLS PSK: keyring %s: out of memory", keyring);
	a->keyring = keyring, a->hostnqn = hostnqn, a->subnqn = subnqn, a->version = version, a->p = p;
	return in_own_thread(a);
}

int tls_keyring_insert(const char *keyring, const char *type, const char *identity, const uint8_t *psk, size_t len,
		       int32_t *serial)
{
	struct lookup_arg *a = calloc(1, sizeof(*a));
	if (!a)
		return nvmeof_err(NVMEOF_ENOMEM, "TLS PSK: keyring %s: out of memory", keyring);
	a->keyring = keyring, a->type = type, a->hostnqn = identity, a->psk = psk, a->len = len, a->serial = serial;
	return in_own_thread(a);
}
