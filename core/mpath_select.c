/*
 * Which path a command takes, and the facts the choice rests on that
 * come from outside a controller (identifier agreement, NUMA nodes from
 * sysfs). No I/O on the wire here.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ana.h"
#include "internal.h"
#include "mpath.h"

const char *nvmeof_iopolicy_str(enum nvmeof_iopolicy p)
{
	switch (p) {
	case NVMEOF_IOPOLICY_NUMA: return "numa";
	case NVMEOF_IOPOLICY_ROUND_ROBIN: return "round-robin";
	case NVMEOF_IOPOLICY_QUEUE_DEPTH: return "queue-depth";
	}
	return "?";
}

int nvmeof_iopolicy_parse(const char *s, enum nvmeof_iopolicy *out)
{
	static const enum nvmeof_iopolicy all[] = {NVMEOF_IOPOLICY_NUMA, NVMEOF_IOPOLICY_ROUND_ROBIN,
						   NVMEOF_IOPOLICY_QUEUE_DEPTH};
	for (size_t i = 0; s && out && i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(s, nvmeof_iopolicy_str(all[i]))) {
			*out = all[i];
			return 0;
		}
	return nvmeof_err(NVMEOF_EINVAL, "iopolicy '%s': numa, round-robin or queue-depth", s ? s : "(null)");
}

/* Within the chosen tier: numa takes the nearest, the first of equals (the
 * kernel's numa: one path carries everything while it is usable);
 * round-robin the next after the last; queue-depth the least loaded, the
 * next of equals so that an idle start spreads too. */
int mp_select(const struct mp_view *v, uint32_t n, enum nvmeof_iopolicy pol, uint32_t *cursor)
{
	uint8_t tier = 0;
	for (uint32_t i = 0; i < n && tier != NVMEOF_ANA_OPTIMIZED; i++)
		if (v[i].live && !v[i].excluded && nvme_ana_usable(v[i].ana))
			tier = v[i].ana;
	if (!tier)
		return -1;
	int best = -1;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = pol == NVMEOF_IOPOLICY_NUMA ? k : (*cursor + 1 + k) % n;
		if (!v[i].live || v[i].excluded || v[i].ana != tier)
			continue;
		if (best < 0) {
			best = (int)i;
			if (pol == NVMEOF_IOPOLICY_ROUND_ROBIN)
				break;
			continue;
		}
		if (pol == NVMEOF_IOPOLICY_NUMA ? v[i].distance < v[best].distance : v[i].inflight < v[best].inflight)
			best = (int)i;
	}
	if (pol != NVMEOF_IOPOLICY_NUMA)
		*cursor = (uint32_t)best;
	return best;
}

static bool nonzero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return true;
	return false;
}

int mp_ids_agree(const struct nvmeof_ns_ids *a, const struct nvmeof_ns_ids *b, const char **why)
{
	bool shared = false;
	bool ae = a->has_eui64 && nonzero(a->eui64, 8), be = b->has_eui64 && nonzero(b->eui64, 8);
	bool an = a->has_nguid && nonzero(a->nguid, 16), bn = b->has_nguid && nonzero(b->nguid, 16);
	bool au = a->has_uuid && nonzero(a->uuid, 16), bu = b->has_uuid && nonzero(b->uuid, 16);
	if (ae && be) {
		if (memcmp(a->eui64, b->eui64, 8)) {
			*why = "their EUI-64s differ";
			return -1;
		}
		shared = true;
	}
	if (an && bn) {
		if (memcmp(a->nguid, b->nguid, 16)) {
			*why = "their NGUIDs differ";
			return -1;
		}
		shared = true;
	}
	if (au && bu) {
		if (memcmp(a->uuid, b->uuid, 16)) {
			*why = "their UUIDs differ";
			return -1;
		}
		shared = true;
	}
	if (!shared) {
		*why = "they report no identifier in common (NGUID, EUI-64, UUID) that would show it is one namespace";
		return -1;
	}
	return 0;
}

static int read_int(const char *path)
{
	FILE *f = fopen(path, "re");
	int v = -1;
	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

int mp_hca_node(const char *root, const char *hca)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/device/numa_node", root, hca);
	int v = read_int(path);
	return v < 0 ? -1 : v;
}

int mp_cpu_node(const char *root, int cpu)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d", root, cpu);
	DIR *d = opendir(path);
	int node = -1;
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));) {
		char *end;
		if (!strncmp(e->d_name, "node", 4) && e->d_name[4]) {
			long v = strtol(e->d_name + 4, &end, 10);
			if (!*end && v >= 0) {
				node = (int)v;
				break;
			}
		}
	}
	closedir(d);
	return node;
}
