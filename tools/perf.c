/*
 * nvmeof perf: spdk_nvme_perf's measurement without fio, over the library's
 * fast path. Its options are spdk_nvme_perf's where they mean the same
 * (-q depth, -o size, -w pattern, -M mix, -t seconds, -c CPUs, -r a
 * transport ID, -H/-I digests) and the tool's for the connection; a word
 * that could be either is told apart by its form, as the tool's -n and -t
 * are: -o json is the output format and -o 4096 the size, -t tcp the
 * transport and -t 5 the time, -q 32 the depth and -q nqn... the host NQN,
 * -w randread the pattern and -w 10.0.0.1 the local address.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmds.h"
#include "perf.h"
#include "secret.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nvmeof perf -a ADDR -n NQN -q DEPTH -o BYTES -w PATTERN -t SECONDS [OPTIONS]\n"
		"I/O at a fixed queue depth for a time, as spdk_nvme_perf: IOPS, bandwidth, latency\n"
		"percentiles and CPU time per I/O\n\n"
		"  -q, --queue-depth=N      commands in flight per queue, 1 to 1024 (a number; -q NQN\n"
		"                           is the host NQN)\n"
		"  -o, --io-size=BYTES      bytes per I/O, a multiple of the block size (k, m: KiB, MiB);\n"
		"                           -o json / -o normal is the output format\n"
		"  -w, --pattern=PATTERN    read, write, randread, randwrite, rw, randrw (a pattern; any\n"
		"                           other word is the local address, --src)\n"
		"  -M, --rwmixread=PCT      rw, randrw: percent of reads (50)\n"
		"  -t, --time=SECONDS       measured time, 1 to 86400 (a number; -t rdma|tcp is the\n"
		"                           transport)\n"
		"      --warmup=SECONDS     I/O before the measured time, not counted (0; spdk_nvme_perf's -a)\n"
		"  -c, --cpus=LIST          one thread and one queue per CPU, pinned: 0x3 (a mask, as\n"
		"                           spdk_nvme_perf's) or 0,2-3 (a list); default one queue, not pinned\n"
		"      --wait=MODE          poll (default: a core per queue, as spdk_nvme_perf), hybrid,\n"
		"                           sleep or adaptive\n"
		"  -r, --trid=TRID          spdk_nvme_perf's transport ID: 'trtype:TCP traddr:A trsvcid:P\n"
		"                           subnqn:NQN ns:N' (sets -t -a -s -n -N)\n"
		"  -t, --transport=rdma     rdma or tcp\n"
		"  -a, --traddr=ADDR        target address\n"
		"  -s, --trsvcid=PORT       port (4420)\n"
		"  -w, --src=ADDR           local address; also --host-traddr\n"
		"  -n, --nqn=NQN            subsystem NQN\n"
		"  -N, --namespace-id=NSID  namespace (1)\n"
		"  -q, --hostnqn=NQN        host NQN\n"
		"  -H, --hdr-digest         NVMe/TCP header digest\n"
		"  -I, -G, --data-digest    NVMe/TCP data digest\n"
		"      --tcp-busy-poll=US   NVMe/TCP: SO_BUSY_POLL of the sockets\n"
		"      --timeout=MS         command timeout (the library's)\n"
		"  -o, --output-format=FMT  normal or json\n"
		"  -h, --help               this text\n");
}

enum { O_WARMUP = 0x100, O_WAIT, O_TIMEOUT, O_BUSY, O_OUT, O_SRC, O_HOSTNQN, O_TRANSPORT, O_HDGST };

static int bad(const char *opt, const char *v, const char *why)
{
	fprintf(stderr, "nvmeof perf: %s: '%s' %s\n", opt, tool_shown(v), why);
	return 2;
}

static bool is_num(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int num(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || x < min || x > max) {
		char why[80];
		snprintf(why, sizeof(why), "is not a number from %llu to %llu", (unsigned long long)min,
			 (unsigned long long)max);
		return bad(opt, s, why);
	}
	*v = x;
	return 0;
}

/* BYTES with an optional k or m (KiB, MiB). */
static int size_arg(const char *s, uint32_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	unsigned long long mul = !strcasecmp(end, "k") ? 1024 : !strcasecmp(end, "m") ? 1024 * 1024 : 1;
	if (end == s || s[0] == '-' || errno || (*end && mul == 1) || !x || x * mul > (1u << 30))
		return bad("--io-size", s, "is not a size from 1 byte to 1 GiB (BYTES, or with k or m)");
	*v = (uint32_t)(x * mul);
	return 0;
}

static int pattern(const char *s, struct perf_cfg *cfg)
{
	static const char *const names[] = {"read", "write", "randread", "randwrite", "rw", "randrw"};
	for (unsigned i = 0; i < 6; i++)
		if (!strcmp(s, names[i])) {
			cfg->random = i == 2 || i == 3 || i == 5;
			cfg->write = i == 1 || i == 3;
			cfg->mixed = i >= 4;
			return 1;
		}
	return 0;
}

/* 0x mask, or a list of CPUs and ranges ("0,2-3", brackets allowed). */
static int cpus_arg(const char *s, struct perf_cfg *cfg)
{
	bool set[PERF_MAX_CPUS] = {0};
	if (!strncasecmp(s, "0x", 2)) {
		char *end;
		errno = 0;
		unsigned long long m = strtoull(s + 2, &end, 16);
		if (!s[2] || *end || errno || !m)
			return bad("--cpus", s, "is not a CPU mask (0x1 to 0xffffffffffffffff)");
		for (int i = 0; i < PERF_MAX_CPUS; i++)
			set[i] = m >> i & 1;
	} else {
		const char *p = s + (*s == '[');
		while (*p && *p != ']') {
			char *end;
			unsigned long a = strtoul(p, &end, 10), b = a;
			if (end == p)
				return bad("--cpus", s, "is not a CPU list (0,2-3) or mask (0x3)");
			if (*end == '-') {
				p = end + 1;
				b = strtoul(p, &end, 10);
				if (end == p)
					return bad("--cpus", s, "is not a CPU list (0,2-3) or mask (0x3)");
			}
			if (b < a || b >= PERF_MAX_CPUS)
				return bad("--cpus", s, "names a CPU past 63, or a range backwards");
			for (unsigned long i = a; i <= b; i++)
				set[i] = true;
			p = end + (*end == ',');
			if (*end && *end != ',' && *end != ']')
				return bad("--cpus", s, "is not a CPU list (0,2-3) or mask (0x3)");
		}
	}
	cfg->ncpus = 0;
	for (int i = 0; i < PERF_MAX_CPUS; i++)
		if (set[i])
			cfg->cpus[cfg->ncpus++] = i;
	return cfg->ncpus ? 0 : bad("--cpus", s, "names no CPU");
}

/* spdk_nvme_perf's -r: "key:value" words; keys as SPDK's, any case. */
static int trid_arg(char *s, struct args *a, struct perf_cfg *cfg)
{
	for (char *save = NULL, *w = strtok_r(s, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		char *v = strchr(w, ':');
		if (!v)
			return bad("--trid", w, "is not KEY:VALUE");
		*v++ = 0;
		uint64_t n;
		if (!strcasecmp(w, "trtype")) {
			if (strcasecmp(v, "tcp") && strcasecmp(v, "rdma"))
				return bad("--trid trtype", v, "is not rdma or tcp");
			a->trtype = v;
		} else if (!strcasecmp(w, "traddr"))
			a->traddr = v;
		else if (!strcasecmp(w, "trsvcid"))
			a->trsvcid = v;
		else if (!strcasecmp(w, "subnqn"))
			a->nqn = v;
		else if (!strcasecmp(w, "hostnqn"))
			a->hostnqn = v;
		else if (!strcasecmp(w, "ns")) {
			if (num("--trid ns", v, 1, 0xffffffffu, &n))
				return 2;
			cfg->nsid = (uint32_t)n;
		} else if (strcasecmp(w, "adrfam"))
			return bad("--trid", w, "is not a key this tool takes (trtype adrfam traddr trsvcid subnqn "
			       "hostnqn ns)");
	}
	return 0;
}

static double us(uint64_t ns) { return (double)ns / 1000.0; }

static void report(const struct args *a, const struct perf_cfg *cfg, const char *pat, struct perf_worker *w,
		   uint32_t nw, bool json)
{
	static uint64_t hist[PERF_HBUCKETS]; /* the workers' merged */
	struct perf_worker t = {.lat_min_ns = UINT64_MAX};
	double iops = 0, mibs = 0;
	for (uint32_t i = 0; i < nw; i++) {
		double sec = w[i].window_ns ? (double)w[i].window_ns / 1e9 : 1;
		iops += (double)w[i].ios / sec;
		mibs += (double)w[i].bytes / sec / 1048576.0;
		t.ios += w[i].ios, t.reads += w[i].reads, t.writes += w[i].writes, t.bytes += w[i].bytes;
		t.errors += w[i].errors, t.lat_sum_ns += w[i].lat_sum_ns;
		t.cpu_user_ns += w[i].cpu_user_ns, t.cpu_sys_ns += w[i].cpu_sys_ns;
		t.lat_min_ns = w[i].lat_min_ns < t.lat_min_ns ? w[i].lat_min_ns : t.lat_min_ns;
		t.lat_max_ns = w[i].lat_max_ns > t.lat_max_ns ? w[i].lat_max_ns : t.lat_max_ns;
		for (uint32_t b = 0; b < PERF_HBUCKETS; b++)
			hist[b] += w[i].hist[b];
	}
	static const double pcts[] = {50, 90, 99, 99.9, 99.99};
	static const char *const pname[] = {"p50", "p90", "p99", "p99_9", "p99_99"};
	double mean = t.ios ? us(t.lat_sum_ns) / (double)t.ios : 0;
	double cpu_io = t.ios ? us(t.cpu_user_ns + t.cpu_sys_ns) / (double)t.ios : 0;
	const char *tr = a->trtype && !strcasecmp(a->trtype, "tcp") ? "tcp" : "rdma";
	static const char *const waits[] = {"hybrid", "poll", "sleep", "adaptive"};
	const char *wait = waits[cfg->wait];
	if (!json) {
		printf("perf: %s, %u bytes, queue depth %u, %u queue(s), %u s (%u s warm-up), %s %s:%s, digests %s/%s, "
		       "wait %s\n", pat, cfg->io_size, cfg->qd, nw, cfg->time_s, cfg->warmup_s,
		       tr, a->traddr, a->trsvcid ? a->trsvcid : "4420",
		       a->hdgst ? "header" : "-", a->ddgst ? "data" : "-", wait);
		for (uint32_t i = 0; i < nw; i++)
			printf("  queue %u (CPU %s%d): %.1f IOPS, %.2f MiB/s, %llu I/Os\n", i, w[i].cpu < 0 ? "any" : "",
			       w[i].cpu < 0 ? 0 : w[i].cpu, w[i].window_ns ? (double)w[i].ios * 1e9 / (double)w[i].window_ns : 0,
			       w[i].window_ns ? (double)w[i].bytes * 1e9 / (double)w[i].window_ns / 1048576.0 : 0,
			       (unsigned long long)w[i].ios);
		printf("total: %.1f IOPS, %.2f MiB/s, %llu I/Os (%llu reads, %llu writes), %llu errors\n", iops, mibs,
		       (unsigned long long)t.ios, (unsigned long long)t.reads, (unsigned long long)t.writes,
		       (unsigned long long)t.errors);
		printf("latency, us: mean %.2f, min %.2f, max %.2f", mean, t.ios ? us(t.lat_min_ns) : 0, us(t.lat_max_ns));
		for (unsigned i = 0; i < 5; i++)
			printf(", %s %.2f", pname[i], us(perf_hist_pct(hist, t.ios, pcts[i])));
		printf("\nCPU per I/O: %.3f us (user %.2f s, system %.2f s)\n", cpu_io, (double)t.cpu_user_ns / 1e9,
		       (double)t.cpu_sys_ns / 1e9);
		return;
	}
	printf("{\n  \"pattern\": \"%s\",\n  \"io_size\": %u,\n  \"queue_depth\": %u,\n  \"time_s\": %u,\n"
	       "  \"warmup_s\": %u,\n  \"rwmixread\": %u,\n  \"transport\": \"%s\",\n  \"header_digest\": %s,\n"
	       "  \"data_digest\": %s,\n  \"wait\": \"%s\",\n  \"queues\": [", pat, cfg->io_size, cfg->qd,
	       cfg->time_s, cfg->warmup_s, cfg->mixed ? cfg->rwmix_read : cfg->write ? 0 : 100,
	       tr, a->hdgst ? "true" : "false", a->ddgst ? "true" : "false", wait);
	for (uint32_t i = 0; i < nw; i++)
		printf("%s\n    {\"queue\": %u, \"cpu\": %d, \"ios\": %llu, \"iops\": %.1f, \"window_s\": %.6f, "
		       "\"commands\": %llu, \"errors\": %llu}", i ? "," : "", i, w[i].cpu, (unsigned long long)w[i].ios,
		       w[i].window_ns ? (double)w[i].ios * 1e9 / (double)w[i].window_ns : 0, (double)w[i].window_ns / 1e9,
		       (unsigned long long)w[i].cmds, (unsigned long long)w[i].errors);
	printf("\n  ],\n  \"ios\": %llu,\n  \"reads\": %llu,\n  \"writes\": %llu,\n  \"bytes\": %llu,\n"
	       "  \"errors\": %llu,\n  \"iops\": %.1f,\n  \"mib_s\": %.3f,\n  \"latency_us\": {\"mean\": %.3f, "
	       "\"min\": %.3f, \"max\": %.3f", (unsigned long long)t.ios, (unsigned long long)t.reads,
	       (unsigned long long)t.writes, (unsigned long long)t.bytes, (unsigned long long)t.errors, iops, mibs,
	       mean, t.ios ? us(t.lat_min_ns) : 0, us(t.lat_max_ns));
	for (unsigned i = 0; i < 5; i++)
		printf(", \"%s\": %.3f", pname[i], us(perf_hist_pct(hist, t.ios, pcts[i])));
	printf("},\n  \"cpu_us_per_io\": %.4f,\n  \"cpu_user_s\": %.3f,\n  \"cpu_sys_s\": %.3f\n}\n", cpu_io,
	       (double)t.cpu_user_ns / 1e9, (double)t.cpu_sys_ns / 1e9);
}

int tool_perf(int argc, char **argv)
{
	static const struct option lo[] = {
		{"queue-depth", required_argument, 0, 'q'}, {"io-size", required_argument, 0, 'o'},
		{"pattern", required_argument, 0, 'w'}, {"rwmixread", required_argument, 0, 'M'},
		{"time", required_argument, 0, 't'}, {"warmup", required_argument, 0, O_WARMUP},
		{"cpus", required_argument, 0, 'c'}, {"wait", required_argument, 0, O_WAIT},
		{"trid", required_argument, 0, 'r'}, {"transport", required_argument, 0, O_TRANSPORT},
		{"traddr", required_argument, 0, 'a'}, {"trsvcid", required_argument, 0, 's'},
		{"src", required_argument, 0, O_SRC}, {"host-traddr", required_argument, 0, O_SRC},
		{"nqn", required_argument, 0, 'n'}, {"namespace-id", required_argument, 0, 'N'},
		{"hostnqn", required_argument, 0, O_HOSTNQN}, {"hdr-digest", no_argument, 0, O_HDGST},
		{"data-digest", no_argument, 0, 'G'}, {"tcp-busy-poll", required_argument, 0, O_BUSY},
		{"timeout", required_argument, 0, O_TIMEOUT}, {"output-format", required_argument, 0, O_OUT},
		{"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
	};
	struct args a = {.name = "perf", .nsid = 1, .gpu = -1, .tcp_priority = -1, .tcp_tos = -1};
	struct perf_cfg cfg = {.rwmix_read = 50, .wait = NVMEOF_WAIT_POLL, .nsid = 1};
	const char *pat = NULL;
	bool json = false, mix_set = false;
	uint64_t v;
	int ch, li = -1;
	optind = 2;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":q:o:w:M:t:c:r:a:s:n:N:HIGh", lo, &li)) != -1) {
		char optbuf[48];
		const char *opt = tool_optlabel(lo, &li, ch, argv, optbuf, sizeof(optbuf));
		switch (ch) {
		case 'q':
			if (!is_num(optarg)) {
				a.hostnqn = optarg;
				break;
			}
			if (num("--queue-depth", optarg, 1, 1024, &v))
				return 2;
			cfg.qd = (uint32_t)v;
			break;
		case O_HOSTNQN: a.hostnqn = optarg; break;
		case 'o':
		case O_OUT:
			if (!strcmp(optarg, "json") || !strcmp(optarg, "normal")) {
				json = !strcmp(optarg, "json");
				break;
			}
			if (ch == O_OUT)
				return bad("--output-format", optarg, "is not normal or json");
			if (size_arg(optarg, &cfg.io_size))
				return 2;
			break;
		case 'w':
			if (pattern(optarg, &cfg)) {
				pat = optarg;
				break;
			}
			if (opt[1] == '-') /* --pattern */
				return bad("--pattern", optarg, "is not read, write, randread, randwrite, rw or randrw");
			/* -w ADDR: the tool's local address */
			/* fall through */
		case O_SRC: a.src = optarg; break;
		case 'M':
			if (num("--rwmixread", optarg, 0, 100, &v))
				return 2;
			cfg.rwmix_read = (uint32_t)v;
			mix_set = true;
			break;
		case 't':
			if (!is_num(optarg)) {
				if (strcasecmp(optarg, "rdma") && strcasecmp(optarg, "tcp"))
					return bad("--transport", optarg, "is not rdma or tcp (a number for -t is the time)");
				a.trtype = optarg;
				break;
			}
			if (num("--time", optarg, 1, 86400, &v))
				return 2;
			cfg.time_s = (uint32_t)v;
			break;
		case O_TRANSPORT:
			if (strcasecmp(optarg, "rdma") && strcasecmp(optarg, "tcp"))
				return bad("--transport", optarg, "is not rdma or tcp");
			a.trtype = optarg;
			break;
		case O_WARMUP:
			if (num("--warmup", optarg, 0, 3600, &v))
				return 2;
			cfg.warmup_s = (uint32_t)v;
			break;
		case 'c':
			if (cpus_arg(optarg, &cfg))
				return 2;
			break;
		case O_WAIT:
			if (!strcmp(optarg, "poll"))
				cfg.wait = NVMEOF_WAIT_POLL;
			else if (!strcmp(optarg, "hybrid"))
				cfg.wait = NVMEOF_WAIT_HYBRID;
			else if (!strcmp(optarg, "sleep"))
				cfg.wait = NVMEOF_WAIT_SLEEP;
			else if (!strcmp(optarg, "adaptive"))
				cfg.wait = NVMEOF_WAIT_ADAPTIVE;
			else
				return bad("--wait", optarg, "is not poll, hybrid, sleep or adaptive");
			break;
		case 'r':
			if (trid_arg(optarg, &a, &cfg))
				return 2;
			break;
		case 'a': a.traddr = optarg; break;
		case 's':
			if (num("--trsvcid", optarg, 1, 65535, &v))
				return 2;
			a.trsvcid = optarg;
			break;
		case 'n': a.nqn = optarg; break;
		case 'N':
			if (num("--namespace-id", optarg, 1, 0xffffffffu, &v))
				return 2;
			cfg.nsid = (uint32_t)v;
			break;
		case 'H': case O_HDGST: a.hdgst = true; break;
		case 'I': case 'G': a.ddgst = true; break;
		case O_BUSY:
			if (num("--tcp-busy-poll", optarg, 0, 1000000, &v))
				return 2;
			a.tcp_busy_poll_us = (uint32_t)v;
			break;
		case O_TIMEOUT:
			if (num("--timeout", optarg, 1, 3600000, &v))
				return 2;
			a.timeout_ms = (uint32_t)v;
			break;
		case 'h': usage(stdout); return 0;
		case ':': fprintf(stderr, "nvmeof perf: option %s needs a value\n", opt); return 2;
		default: fprintf(stderr, "nvmeof perf: unknown option %s (see --help)\n", opt); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nvmeof perf: unexpected argument '%s'\n", tool_shown(argv[optind]));
		return 2;
	}
	const char *missing = !a.traddr ? "the target address (-a ADDR)" : !a.nqn ? "the subsystem NQN (-n NQN)"
			    : !cfg.qd ? "the queue depth (-q N)" : !cfg.io_size ? "the I/O size (-o BYTES)"
			    : !pat ? "the pattern (-w read|write|randread|randwrite|rw|randrw)"
			    : !cfg.time_s ? "the time (-t SECONDS)" : NULL;
	if (missing) {
		fprintf(stderr, "nvmeof perf: %s is missing\n", missing);
		return 2;
	}
	if (mix_set && !cfg.mixed) {
		fprintf(stderr, "nvmeof perf: --rwmixread is for -w rw or randrw, not %s\n", pat);
		return 2;
	}
	struct nvmeof_ctrl_opts o;
	tool_ctrl_opts(&a, &o);
	uint32_t nw = cfg.ncpus ? cfg.ncpus : 1;
	o.num_io_queues = nw;
	o.queue_depth = cfg.qd;
	o.wait_mode = cfg.wait;
	struct nvmeof_ctrl *c = NULL;
	if (nvmeof_ctrl_connect(&o, &c)) {
		fprintf(stderr, "nvmeof perf: %s\n", nvmeof_errmsg());
		return 1;
	}
	const struct nvmeof_ns *ns = nvmeof_ns_get(c, cfg.nsid);
	int rc = 0;
	struct perf_worker *w = calloc(nw, sizeof(*w));
	if (!ns) {
		fprintf(stderr, "nvmeof perf: %s\n", nvmeof_errmsg());
		rc = 1;
	} else if (cfg.io_size % ns->lba_size || cfg.io_size / ns->lba_size > ns->nsze) {
		fprintf(stderr, "nvmeof perf: --io-size %u is not a whole number of namespace %u's %u-byte blocks, or "
			"more than it holds\n", cfg.io_size, cfg.nsid, ns->lba_size);
		rc = 2;
	} else if (!w) {
		fprintf(stderr, "nvmeof perf: out of memory\n");
		rc = 1;
	} else if (!(rc = perf_run(c, ns, &cfg, w))) {
		report(&a, &cfg, pat, w, nw, json);
	}
	free(w);
	if (nvmeof_ctrl_close(c) && !rc) {
		fprintf(stderr, "nvmeof perf: %s\n", nvmeof_errmsg());
		rc = 1;
	}
	return rc;
}
