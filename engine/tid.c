/* Transport-ID filename parsing (no I/O). */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tid.h"

#define KNOWN "trtype, adrfam, traddr, trsvcid, subnqn, ns, hostnqn, srcaddr (or hostaddr)"
#define COLON_HINT "fio splits filenames at ':': write each ':' inside a value as '\\:' " \
	"(subnqn=nqn.2016-06.io.spdk\\:cnode1, traddr=fe80\\:\\:1)"

static int copy(char *dst, size_t cap, const char *v, size_t n, const char *key, char *err, size_t el)
{
	if (n >= cap) {
		snprintf(err, el, "%s is %zu bytes, at most %zu allowed", key, n, cap - 1);
		return -1;
	}
	if (!n) {
		snprintf(err, el, "%s= has no value", key);
		return -1;
	}
	memcpy(dst, v, n);
	dst[n] = '\0';
	return 0;
}

int tid_parse(const char *s, struct tid *t, char *err, size_t el)
{
	memset(t, 0, sizeof(*t));
	if (!s) {
		snprintf(err, el, "no filename");
		return -1;
	}
	/* where traddr, trsvcid and srcaddr go: the first path's are struct
	 * tid's own fields (all sized as struct tid_path's) */
	struct { char *traddr, *trsvcid, *srcaddr; } cur = {t->traddr, t->trsvcid, t->srcaddr};
	/* keys given once per filename (and trsvcid, srcaddr once per path):
	 * a second one is refused, not the last one taken */
	enum { K_TRTYPE = 1, K_ADRFAM = 2, K_SUBNQN = 4, K_HOSTNQN = 8, K_NS = 16, K_TRSVCID = 32, K_SRCADDR = 64 };
	unsigned seen = 0, bit = 0;
	/* each path's trtype: the last one given before its traddr (0: none),
	 * used where the filename's trtypes differ */
	int last_tr = 0, before[TID_MAX_PATHS] = {0};
	bool mixed = false;
	while (*s) {
		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		const char *tok = s, *eq = NULL;
		while (*s && !isspace((unsigned char)*s)) {
			if (*s == '=' && !eq)
				eq = s;
			s++;
		}
		size_t klen = eq ? (size_t)(eq - tok) : (size_t)(s - tok);
		if (!eq) {
			snprintf(err, el, "'%.*s' is not key=value (keys: " KNOWN "); if it is the rest of a value, "
				 COLON_HINT, (int)klen, tok);
			return -1;
		}
		const char *v = eq + 1;
		size_t vlen = (size_t)(s - v);
		char key[16];
		if (klen >= sizeof(key) || !klen) {
			snprintf(err, el, "unknown key '%.*s' (keys: " KNOWN ")", (int)klen, tok);
			return -1;
		}
		memcpy(key, tok, klen);
		key[klen] = '\0';
		if (!strcasecmp(key, "hostaddr")) /* SPDK's name of the source address */
			memcpy(key, "srcaddr", sizeof("srcaddr"));
		bit = !strcasecmp(key, "trtype") ? K_TRTYPE : !strcasecmp(key, "adrfam") ? K_ADRFAM
		      : !strcasecmp(key, "subnqn") ? K_SUBNQN : !strcasecmp(key, "hostnqn") ? K_HOSTNQN
		      : !strcasecmp(key, "ns") ? K_NS : !strcasecmp(key, "trsvcid") ? K_TRSVCID
		      : !strcasecmp(key, "srcaddr") ? K_SRCADDR : 0;
		/* trtype and adrfam may repeat alike, as in a transport ID written out
		 * whole for each path */
		if (bit & seen & ~(unsigned)(K_TRTYPE | K_ADRFAM)) {
			snprintf(err, el, "%.*s given twice%s: give each key once", (int)klen, tok,
				 bit & (K_TRSVCID | K_SRCADDR) ? " for one path (after each traddr=)" : "");
			return -1;
		}
		seen |= bit;
		if (!strcasecmp(key, "trtype")) {
			int tr = vlen == 4 && !strncasecmp(v, "rdma", 4) ? 1 : vlen == 3 && !strncasecmp(v, "tcp", 3) ? 3 : 0;
			if (!tr) {
				snprintf(err, el, "trtype=%.*s: this engine speaks NVMe/RDMA and NVMe/TCP (trtype=RDMA or TCP)",
					 (int)vlen, v);
				return -1;
			}
			mixed |= t->trtype && t->trtype != tr;
			if (!t->trtype)
				t->trtype = tr;
			last_tr = tr;
		} else if (!strcasecmp(key, "adrfam")) {
			int fam = vlen != 4 ? 0 : !strncasecmp(v, "ipv4", 4) ? 4 : !strncasecmp(v, "ipv6", 4) ? 6 : 0;
			if (!fam) {
				snprintf(err, el, "adrfam=%.*s: expected IPv4 or IPv6", (int)vlen, v);
				return -1;
			}
			if (t->adrfam && t->adrfam != fam) {
				snprintf(err, el, "adrfam given twice, differently: give it once");
				return -1;
			}
			t->adrfam = fam;
		} else if (!strcasecmp(key, "traddr")) {
			if (t->traddr[0]) { /* the next path */
				if (t->nalt == TID_MAX_PATHS - 1) {
					snprintf(err, el, "traddr=%.*s: at most %d paths (traddr= given once per path)",
						 (int)vlen, v, TID_MAX_PATHS);
					return -1;
				}
				struct tid_path *p = &t->alt[t->nalt++];
				cur.traddr = p->traddr;
				cur.trsvcid = p->trsvcid;
				cur.srcaddr = p->srcaddr;
				seen &= ~(unsigned)(K_TRSVCID | K_SRCADDR);
			}
			if (copy(cur.traddr, sizeof(t->traddr), v, vlen, key, err, el))
				return -1;
			before[t->traddr == cur.traddr ? 0 : t->nalt] = last_tr;
		} else if (!strcasecmp(key, "trsvcid")) {
			if (copy(cur.trsvcid, sizeof(t->trsvcid), v, vlen, key, err, el))
				return -1;
			unsigned long port = 0;
			for (size_t i = 0; i < vlen; i++) {
				port = port < 100000 ? port * 10 + (unsigned long)(v[i] - '0') : port;
				if (!isdigit((unsigned char)v[i]))
					port = 0, i = vlen;
			}
			if (port < 1 || port > 65535) {
				snprintf(err, el, "trsvcid=%s: expected a port from 1 to 65535", cur.trsvcid);
				return -1;
			}
		} else if (!strcasecmp(key, "subnqn")) {
			if (copy(t->subnqn, sizeof(t->subnqn), v, vlen, key, err, el))
				return -1;
		} else if (!strcasecmp(key, "hostnqn")) {
			if (copy(t->hostnqn, sizeof(t->hostnqn), v, vlen, key, err, el))
				return -1;
		} else if (!strcasecmp(key, "srcaddr")) {
			if (copy(cur.srcaddr, sizeof(t->srcaddr), v, vlen, key, err, el))
				return -1;
		} else if (!strcasecmp(key, "ns")) {
			char num[16], *end;
			if (vlen == 0 || vlen >= sizeof(num)) {
				snprintf(err, el, "ns=%.*s: expected a namespace ID", (int)vlen, v);
				return -1;
			}
			memcpy(num, v, vlen);
			num[vlen] = '\0';
			errno = 0;
			unsigned long n = strtoul(num, &end, 10);
			if (*end || errno || n == 0 || n > 0xfffffffeul || num[0] == '-') {
				snprintf(err, el, "ns=%s: expected a namespace ID from 1 to 4294967294", num);
				return -1;
			}
			t->nsid = (uint32_t)n;
		} else {
			snprintf(err, el, "unknown key '%s' (keys: " KNOWN ")", key);
			return -1;
		}
	}
	for (unsigned i = 0; i < t->nalt; i++)
		if (!t->alt[i].trsvcid[0])
			memcpy(t->alt[i].trsvcid, t->trsvcid, sizeof(t->trsvcid));
	/* one trtype is every path's; several that differ: each path's own, so
	 * that one path may be RDMA and another TCP */
	if (mixed && !t->traddr[0]) {
		snprintf(err, el, "trtype given twice, differently, and no traddr=: where the paths' transports "
			 "differ, give each path's trtype before the traddr= of its path");
		return -1;
	}
	for (unsigned i = 0; mixed && i <= t->nalt; i++)
		if (!before[i]) {
			snprintf(err, el, "traddr=%s has no trtype= before it: where the paths' transports differ, give "
				 "each path's trtype before the traddr= of its path", i ? t->alt[i - 1].traddr : t->traddr);
			return -1;
		}
	if (mixed && last_tr != before[t->nalt] && (t->traddr[0] || t->nalt)) {
		snprintf(err, el, "trtype=%s after the last traddr=: where the paths' transports differ, give "
			 "each path's trtype before the traddr= of its path", last_tr == 3 ? "TCP" : "RDMA");
		return -1;
	}
	if (mixed)
		t->trtype = before[0];
	for (unsigned i = 0; i < t->nalt; i++)
		t->alt[i].trtype = mixed ? before[i + 1] : t->trtype;
	/* adrfam is not passed on (the address says its family), but one that
	 * contradicts a numeric traddr is a mistake in the filename; a host
	 * name is left to the resolver */
	for (unsigned i = 0; t->adrfam && i <= t->nalt; i++) {
		const char *a = i ? t->alt[i - 1].traddr : t->traddr;
		char num[sizeof(t->traddr)];
		unsigned char buf[16];
		snprintf(num, sizeof(num), "%.*s", (int)strcspn(a, "%"), a); /* fe80::1%eth0: its scope aside */
		int fam = inet_pton(AF_INET, num, buf) == 1 ? 4 : inet_pton(AF_INET6, num, buf) == 1 ? 6 : 0;
		if (fam && fam != t->adrfam) {
			snprintf(err, el, "adrfam=IPv%d but traddr=%s is an IPv%d address: drop adrfam (the address says "
				 "its family) or give an IPv%d address", t->adrfam, a, fam, t->adrfam);
			return -1;
		}
	}
	/* a path named twice is one path, not two */
	for (unsigned i = 0; i < t->nalt; i++)
		for (unsigned k = 0; k <= i; k++) {
			const char *a = k ? t->alt[k - 1].traddr : t->traddr;
			const char *ap = k ? t->alt[k - 1].trsvcid : t->trsvcid;
			const char *as = k ? t->alt[k - 1].srcaddr : t->srcaddr;
			int at = k ? t->alt[k - 1].trtype : t->trtype;
			if (!strcmp(a, t->alt[i].traddr) && !strcmp(ap, t->alt[i].trsvcid) &&
			    !strcmp(as, t->alt[i].srcaddr) && at == t->alt[i].trtype) {
				snprintf(err, el, "traddr=%s%s%s named twice with the same trsvcid and srcaddr: several "
					 "paths must differ in one of them", a, ap[0] ? " trsvcid=" : "", ap);
				return -1;
			}
		}
	return 0;
}

int tid_cut(const char *prev, const char *next, char *err, size_t el)
{
	while (isspace((unsigned char)*next))
		next++;
	size_t n = strcspn(next, " \t\n");
	if (!n || memchr(next, '=', n))
		return 0;
	/* the last key=value of the part before the ':' is the cut one */
	const char *end = prev + strlen(prev);
	while (end > prev && isspace((unsigned char)end[-1]))
		end--;
	const char *last = end;
	while (last > prev && !isspace((unsigned char)last[-1]))
		last--;
	snprintf(err, el, "'%.*s' is cut at a ':' and '%.*s' was taken for the next file: " COLON_HINT,
		 (int)(end - last), last, (int)n, next);
	return -1;
}

int tid_missing(const struct tid *t, char *err, size_t el)
{
	if (t->traddr[0] && t->subnqn[0])
		return 0;
	if (!t->traddr[0])
		snprintf(err, el, "no traddr (put traddr= and subnqn= in the filename or as options)");
	else
		snprintf(err, el, "no subnqn (put subnqn= in the filename or as an option): nvmeof discover %s-a %s "
			 "-s %s -o fio prints each subsystem's filename ready to paste", t->trtype == 3 ? "-t tcp " : "",
			 t->traddr, t->trsvcid[0] ? t->trsvcid : "4420");
	return -1;
}
