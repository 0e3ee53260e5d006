/* Transport-ID filename parsing (no I/O). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tid.h"

#define KNOWN "trtype, adrfam, traddr, trsvcid, subnqn, ns, hostnqn, srcaddr"

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
			snprintf(err, el, "'%.*s' is not key=value (keys: " KNOWN ")", (int)klen, tok);
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
		if (!strcasecmp(key, "trtype")) {
			if (vlen != 4 || strncasecmp(v, "rdma", 4)) {
				snprintf(err, el, "trtype=%.*s: this engine speaks NVMe/RDMA only (trtype=RDMA)",
					 (int)vlen, v);
				return -1;
			}
		} else if (!strcasecmp(key, "adrfam")) {
			if (vlen == 4 && !strncasecmp(v, "ipv4", 4))
				t->adrfam = 4;
			else if (vlen == 4 && !strncasecmp(v, "ipv6", 4))
				t->adrfam = 6;
			else {
				snprintf(err, el, "adrfam=%.*s: expected IPv4 or IPv6", (int)vlen, v);
				return -1;
			}
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
			}
			if (copy(cur.traddr, sizeof(t->traddr), v, vlen, key, err, el))
				return -1;
		} else if (!strcasecmp(key, "trsvcid")) {
			if (copy(cur.trsvcid, sizeof(t->trsvcid), v, vlen, key, err, el))
				return -1;
			for (size_t i = 0; i < vlen; i++)
				if (!isdigit((unsigned char)v[i])) {
					snprintf(err, el, "trsvcid=%s: expected a port number", cur.trsvcid);
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
	return 0;
}
