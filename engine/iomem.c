/* A job's I/O memory, allocated by the engine (fio's iomem_alloc hook)
 * where its placement options say, and registered once per controller:
 * host memory on a NUMA node (libnuma), optionally on huge pages, and with
 * gpu= a region of that GPU's memory that io_u offsets map into. Then one
 * line saying where everything sits, and one more when the CPUs, the
 * memory, the HCA and the GPU are not all on one node. */
#include <errno.h>
#include <numa.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "topo.h"

#include "engine.h"

/* The node numa_node= names: N, or auto (topo_auto_node: the node all of
 * the job's HCAs share, else the job's CPUs'); -1 leaves it to the kernel.
 * -2 after logging a bad value. *why: how auto chose, else NULL. */
static int want_node(struct thread_data *td, const char *const *hcas, unsigned int nhca, int cpu_node,
		     const char **why)
{
	struct eng_opts *eo = td->eo;
	const char *v = eo->numa_node && eo->numa_node[0] ? eo->numa_node : "auto";
	*why = NULL;
	if (!strcmp(v, "auto"))
		return topo_auto_node(topo_hcas_node("/sys", hcas, nhca), cpu_node, why);
	char *end;
	long n = strtol(v, &end, 10);
	int max = numa_available() < 0 ? 0 : numa_max_node();
	if (*end || end == v || n < 0 || n > max || (numa_available() >= 0 && numa_node_size64((int)n, NULL) <= 0)) {
		eng_err("nvmeof: numa_node=%s: not auto or a NUMA node with memory; this machine has node%s 0%s%.0d\n",
			eng_shown(v), max ? "s" : "", max ? "-" : "", max);
		return -2;
	}
	return (int)n;
}

/* The node the kernel put the page at p on (asked, not assumed), -1
 * unknown. The page must be faulted in: move_pages reports an absent page
 * as -ENOENT. */
static int page_node(void *p)
{
	int status = -1;
	if (numa_available() < 0)
		return -1;
	if (numa_move_pages(0, 1, &p, NULL, &status, 0))
		return -1;
	return topo_page_node(status);
}

/* Maps len bytes (huge pages or not), binds them to node, and faults them
 * in now, so the node's lack of (huge) pages is an error here, not a SIGBUS
 * in the middle of the job. NULL with errno. */
/* " on NUMA node N", or nothing for the kernel's choice */
static const char *on_node(int node, char *buf, size_t len)
{
	if (node < 0)
		return "";
	snprintf(buf, len, " on NUMA node %d", node);
	return buf;
}

static void *map_on(size_t len, int node, bool huge)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (huge ? MAP_HUGETLB : 0), -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (node >= 0 && numa_available() >= 0)
		numa_tonode_memory(p, len, node);
	if (madvise(p, len, MADV_POPULATE_WRITE)) {
		int e = errno;
		if (e != EINVAL) {
			munmap(p, len);
			errno = e;
			return NULL;
		}
		/* EINVAL: a kernel before 5.14. Fault the pages in by writing
		 * them, so page_node finds them on their node now rather than
		 * absent (the numa_node= check and the placement line need it). */
		size_t pg = (size_t)sysconf(_SC_PAGESIZE);
		for (size_t o = 0; o < len; o += pg)
			((volatile char *)p)[o] = 0;
	}
	return p;
}

static size_t huge_page_size(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char l[128];
	size_t kb = 0;
	while (f && fgets(l, sizeof(l), f))
		if (sscanf(l, "Hugepagesize: %zu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb ? kb << 10 : 2u << 20;
}

static void job_cpus(int *cpus, unsigned int *n)
{
	cpu_set_t set;
	*n = 0;
	if (!sched_getaffinity(0, sizeof(set), &set))
		for (int c = 0; c < CPU_SETSIZE && *n < QMAP_CPUS; c++)
			if (CPU_ISSET(c, &set))
				cpus[(*n)++] = c;
}

static int host_memory(struct thread_data *td, struct job *j, size_t total, int node)
{
	struct eng_opts *eo = td->eo;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char where[40];
	if (eo->hugepages) {
		size_t hp = huge_page_size();
		j->iomem_len = (total + hp - 1) / hp * hp;
		j->iomem = map_on(j->iomem_len, node, true);
		if (j->iomem) {
			j->iomem_huge = true;
			return 0;
		}
		/* documented: the job runs, on normal pages, and says so */
		eng_info("nvmeof: job %s: hugepages=1: no %zu kB huge pages free%s for %zu bytes (%s; see "
			 "HugePages_Free in /proc/meminfo, reserve with sysctl vm.nr_hugepages=N): using normal pages\n",
			 td->o.name, hp >> 10, on_node(node, where, sizeof(where)), j->iomem_len, strerror(errno));
	}
	j->iomem_len = (total + pg - 1) / pg * pg;
	j->iomem = map_on(j->iomem_len, node, false);
	if (!j->iomem) {
		eng_err("nvmeof: job %s: %zu bytes of I/O memory%s: %s\n", td->o.name, j->iomem_len,
			on_node(node, where, sizeof(where)), strerror(errno));
		return 1;
	}
	return 0;
}

/* Every controller's registration of the job's memory: the host buffer, or
 * one GPU allocation (on the first controller) that the others register. */
static int register_all(struct thread_data *td, struct job *j, size_t total)
{
	struct eng_opts *eo = td->eo;
	for (int k = 0; k < j->njq; k++) {
		struct nvmeof_ctrl *c = j->jq[k].sc->c;
		if (j->jq[k].mp) { /* a file with several paths: on each path's controller (host memory only) */
			if (nvmeof_mpath_mr_register(j->jq[k].mp, j->iomem, total, &j->jq[k].mmr)) {
				eng_err("nvmeof: registering the job's %zu-byte I/O buffer on every path: %s\n", total,
					nvmeof_errmsg());
				return 1;
			}
			continue;
		}
		int rc = eo->gpu < 0 ? nvmeof_mr_register(c, j->iomem, total, &j->jq[k].mr)
		       : k == 0 ? nvmeof_mr_alloc_cuda(c, eo->gpu, total, &j->jq[k].mr)
				: nvmeof_mr_register_cuda(c, nvmeof_mr_addr(j->jq[0].mr), total, &j->jq[k].mr);
		if (rc) {
			if (eo->gpu < 0)
				eng_err("nvmeof: registering the job's %zu-byte I/O buffer: %s\n", total, nvmeof_errmsg());
			else
				eng_err("nvmeof: gpu=%d: %s\n", eo->gpu, nvmeof_errmsg());
			return 1;
		}
	}
	return 0;
}

static void job_hcas(struct job *j, const char **hcas)
{
	/* over NVMe/TCP the network interface: its NUMA node is the NIC's */
	for (int k = 0; k < j->njq; k++) {
		const struct nvmeof_ctrl_info *i = nvmeof_ctrl_info(j->jq[k].sc->c);
		hcas[k] = strcmp(i->hca, "tcp") ? i->hca : i->netdev;
	}
}

static void say_placement(struct thread_data *td, struct job *j, int cpu_node, const char *why)
{
	struct eng_opts *eo = td->eo;
	char gpci[32] = "", line[900], warn[700];
	const char *hcas[MAX_QUEUES_PER_JOB];
	if (eo->gpu >= 0)
		nvmeof_cuda_pci_bus_id(eo->gpu, gpci, sizeof(gpci));
	job_hcas(j, hcas);
	for (int k = 0; k < j->njq; k++) {
		struct topo_place p = {
			.hca = hcas[k],
			.tcp = !strcmp(nvmeof_ctrl_info(j->jq[k].sc->c)->hca, "tcp"),
			.cpu_node = cpu_node,
			.mem_node = j->mem_node,
			.gpu_pci = eo->gpu >= 0 ? gpci : NULL,
			.relaxed = eo->relaxed_ordering,
			.huge = j->iomem_huge,
			.why = why,
		};
		topo_place_line("/sys", &p, line, sizeof(line));
		if (eo->gpu >= 0)
			eng_info("nvmeof: job %s: %zu bytes of GPU %d memory registered (%s)%s\n", td->o.name,
				 j->iomem_len, eo->gpu, nvmeof_mr_cuda_registration(j->jq[k].mr),
				 eo->gpu_copy ? ", gpu_copy: copies through the host, not zero-copy" : "");
		eng_info("nvmeof: job %s: placement: %zu bytes at %p; %s\n", td->o.name, j->iomem_len, j->iomem, line);
	}
	/* one line for the job, over every controller's HCA */
	topo_place_warn("/sys", hcas, (unsigned int)j->njq, cpu_node, j->mem_node, eo->gpu >= 0 ? gpci : NULL, warn,
			sizeof(warn));
	if (warn[0])
		eng_info("nvmeof: job %s: %s\n", td->o.name, warn);
}

int iomem_alloc(struct thread_data *td, size_t total)
{
	struct eng_opts *eo = td->eo;
	struct job *j = td->io_ops_data;
	eng_quiet = eo->quiet;
	int cpus[QMAP_CPUS];
	unsigned int ncpu;
	if (!j || !j->njq) {
		eng_err("nvmeof: I/O memory asked for before the job's controllers were attached\n");
		return 1;
	}
	job_cpus(cpus, &ncpu);
	int cpu_node = topo_cpus_node("/sys", cpus, ncpu);
	const char *hcas[MAX_QUEUES_PER_JOB], *why;
	job_hcas(j, hcas);
	int node = want_node(td, hcas, (unsigned int)j->njq, cpu_node, &why);
	if (node == -2 || host_memory(td, j, total, node))
		return 1;
	j->mem_node = page_node(j->iomem);
	if (node >= 0 && j->mem_node >= 0 && j->mem_node != node) {
		eng_err("nvmeof: job %s: numa_node=%d, but the kernel put the I/O memory on node %d\n", td->o.name,
			node, j->mem_node);
		return 1;
	}
	td->orig_buffer = j->iomem;
	if (register_all(td, j, total))
		return 1;
	j->gpu = eo->gpu >= 0;
	j->gpu_copy = j->gpu && eo->gpu_copy;
	j->gpu_flush = j->gpu && (eo->gpu_flush || eo->gpu_copy);
	say_placement(td, j, cpu_node, why);
	return 0;
}

void iomem_release(struct job *j)
{
	/* registrations of another controller's GPU allocation go first */
	for (int k = j->njq - 1; k >= 0; k--)
		if (j->jq[k].mr) {
			nvmeof_mr_release(j->jq[k].mr);
			j->jq[k].mr = NULL;
		}
	if (j->iomem)
		munmap(j->iomem, j->iomem_len);
	j->iomem = NULL;
}

/* fio frees the I/O memory before the engine's cleanup, while requests
 * parked for a reconnect may still point into it: cleanup releases it after
 * the queues are gone (iomem_release). */
void iomem_free(struct thread_data *td)
{
	td->orig_buffer = NULL;
}
