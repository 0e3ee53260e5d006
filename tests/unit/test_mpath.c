/* The path choice (policies, ANA tiers), identifier agreement and the NUMA
 * facts from a fake sysfs tree: the multipath's decisions without a wire. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "mpath.h"

#define OPT NVMEOF_ANA_OPTIMIZED
#define NON NVMEOF_ANA_NONOPTIMIZED
#define INA NVMEOF_ANA_INACCESSIBLE

static uint32_t picks(struct mp_view *v, uint32_t n, enum nvmeof_iopolicy pol, uint32_t rounds, uint32_t *count)
{
	uint32_t cur = n - 1;
	memset(count, 0, n * sizeof(*count));
	uint32_t none = 0;
	for (uint32_t k = 0; k < rounds; k++) {
		int p = mp_select(v, n, pol, &cur);
		if (p < 0)
			none++;
		else
			count[p]++;
	}
	return none;
}

TEST(optimized_first_then_nonoptimized_never_inaccessible)
{
	struct mp_view v[3] = {{.ana = NON, .live = true}, {.ana = OPT, .live = true}, {.ana = INA, .live = true}};
	uint32_t c[3];
	CHECK_EQ(picks(v, 3, NVMEOF_IOPOLICY_ROUND_ROBIN, 10, c), 0);
	CHECK_EQ(c[1], 10);
	v[1].live = false;                     /* the optimized one's queue is down */
	CHECK_EQ(picks(v, 3, NVMEOF_IOPOLICY_ROUND_ROBIN, 10, c), 0);
	CHECK_EQ(c[0], 10);
	v[0].excluded = true;                  /* it just failed the command */
	CHECK_EQ(picks(v, 3, NVMEOF_IOPOLICY_QUEUE_DEPTH, 4, c), 4);
	v[0] = (struct mp_view){.ana = NVMEOF_ANA_CHANGE, .live = true};
	CHECK_EQ(picks(v, 3, NVMEOF_IOPOLICY_NUMA, 4, c), 4);
}

TEST(round_robin_alternates)
{
	struct mp_view v[2] = {{.ana = OPT, .live = true}, {.ana = OPT, .live = true}};
	uint32_t cur = 1;
	CHECK_EQ(mp_select(v, 2, NVMEOF_IOPOLICY_ROUND_ROBIN, &cur), 0);
	CHECK_EQ(mp_select(v, 2, NVMEOF_IOPOLICY_ROUND_ROBIN, &cur), 1);
	CHECK_EQ(mp_select(v, 2, NVMEOF_IOPOLICY_ROUND_ROBIN, &cur), 0);
	uint32_t c[2];
	picks(v, 2, NVMEOF_IOPOLICY_ROUND_ROBIN, 100, c);
	CHECK_EQ(c[0], 50); CHECK_EQ(c[1], 50);
}

TEST(queue_depth_takes_the_least_loaded)
{
	struct mp_view v[3] = {{.ana = OPT, .live = true, .inflight = 5}, {.ana = OPT, .live = true, .inflight = 2},
			       {.ana = OPT, .live = true, .inflight = 9}};
	uint32_t cur = 0;
	CHECK_EQ(mp_select(v, 3, NVMEOF_IOPOLICY_QUEUE_DEPTH, &cur), 1);
	v[1].inflight = 5;                     /* a tie: the next after the last choice */
	cur = 0;
	CHECK_EQ(mp_select(v, 3, NVMEOF_IOPOLICY_QUEUE_DEPTH, &cur), 1);
	CHECK_EQ(mp_select(v, 3, NVMEOF_IOPOLICY_QUEUE_DEPTH, &cur), 0);
	/* idle paths spread evenly */
	struct mp_view w[2] = {{.ana = OPT, .live = true}, {.ana = OPT, .live = true}};
	uint32_t c[2];
	picks(w, 2, NVMEOF_IOPOLICY_QUEUE_DEPTH, 10, c);
	CHECK_EQ(c[0], 5); CHECK_EQ(c[1], 5);
}

TEST(numa_takes_the_nearest_and_sticks)
{
	struct mp_view v[3] = {{.ana = OPT, .live = true, .distance = 2}, {.ana = OPT, .live = true, .distance = 0},
			       {.ana = OPT, .live = true, .distance = 0}};
	uint32_t c[3];
	picks(v, 3, NVMEOF_IOPOLICY_NUMA, 10, c);
	CHECK_EQ(c[1], 10);
	v[1].live = false;
	picks(v, 3, NVMEOF_IOPOLICY_NUMA, 10, c);
	CHECK_EQ(c[2], 10);
	v[2].ana = NON;                        /* an optimized far path beats a near non-optimized one */
	picks(v, 3, NVMEOF_IOPOLICY_NUMA, 10, c);
	CHECK_EQ(c[0], 10);
}

TEST(iopolicy_names)
{
	enum nvmeof_iopolicy p;
	CHECK_EQ(nvmeof_iopolicy_parse("numa", &p), 0); CHECK_EQ(p, NVMEOF_IOPOLICY_NUMA);
	CHECK_EQ(nvmeof_iopolicy_parse("round-robin", &p), 0); CHECK_EQ(p, NVMEOF_IOPOLICY_ROUND_ROBIN);
	CHECK_EQ(nvmeof_iopolicy_parse("queue-depth", &p), 0); CHECK_EQ(p, NVMEOF_IOPOLICY_QUEUE_DEPTH);
	CHECK_EQ(nvmeof_iopolicy_parse("rr", &p), (unsigned long long)NVMEOF_EINVAL);
	CHECK(strstr(nvmeof_errmsg(), "round-robin"));
	struct nvmeof_mpath_opts o;
	nvmeof_mpath_opts_init(&o);
	CHECK_EQ(o.iopolicy, NVMEOF_IOPOLICY_QUEUE_DEPTH); CHECK_EQ(o.numa_node, -1); CHECK_EQ(o.size, sizeof(o));
}

TEST(identifiers_must_agree)
{
	struct nvmeof_ns_ids a = {.has_nguid = true, .has_uuid = true}, b;
	const char *why = NULL;
	memset(a.nguid, 0x11, 16);
	memset(a.uuid, 0x22, 16);
	b = a;
	CHECK_EQ(mp_ids_agree(&a, &b, &why), 0);
	b.uuid[15] = 0;
	CHECK_EQ(mp_ids_agree(&a, &b, &why), (unsigned long long)-1);
	CHECK(why && strstr(why, "UUID"));
	b = a;
	b.nguid[0] = 0x12;
	CHECK_EQ(mp_ids_agree(&a, &b, &why), (unsigned long long)-1);
	CHECK(strstr(why, "NGUID"));
	b = a;                                 /* only one side has an EUI-64: not compared */
	b.has_eui64 = true;
	memset(b.eui64, 1, 8);
	CHECK_EQ(mp_ids_agree(&a, &b, &why), 0);
	struct nvmeof_ns_ids none = {0};
	CHECK_EQ(mp_ids_agree(&none, &none, &why), (unsigned long long)-1);
	CHECK(strstr(why, "no identifier"));
}

static char root[256];
static void put(const char *rel, const char *text)
{
	char p[512], *s;
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	if (!text) {
		mkdir(p, 0755);
		return;
	}
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

TEST(numa_nodes_from_sysfs)
{
	snprintf(root, sizeof(root), "/tmp/nvmeof-mpath-%d", (int)getpid());
	mkdir(root, 0755);
	put("class/infiniband/mlx5_0/device/numa_node", "1\n");
	put("class/infiniband/rxe0/device/numa_node", "-1\n");
	put("devices/system/cpu/cpu3/node1", NULL);
	put("devices/system/cpu/cpu0/cache", NULL);
	CHECK_EQ(mp_hca_node(root, "mlx5_0"), 1);
	CHECK_EQ(mp_hca_node(root, "rxe0"), (unsigned long long)-1);
	CHECK_EQ(mp_hca_node(root, "absent"), (unsigned long long)-1);
	CHECK_EQ(mp_cpu_node(root, 3), 1);
	CHECK_EQ(mp_cpu_node(root, 0), (unsigned long long)-1);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	CHECK_EQ(system(cmd), 0);
}

int main(int argc, char **argv)
{
	static const struct test_case t[] = {
		T(optimized_first_then_nonoptimized_never_inaccessible), T(round_robin_alternates),
		T(queue_depth_takes_the_least_loaded), T(numa_takes_the_nearest_and_sticks), T(iopolicy_names),
		T(identifiers_must_agree), T(numa_nodes_from_sysfs),
	};
	return run_named_tests("unit-mpath", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
