/*
 * nvmeof failover-check: writes versioned blocks from several queues over
 * one controller or several paths while fault commands run, keeps every
 * unit's write history, and after the hold reads every block back: an
 * acknowledged write overwritten by an older one (a lost update), a version
 * never written, a torn or corrupt block each count against the verdict.
 * Exit 0 only when none is found. Its own option parsing: paths as
 * `-a ADDR` each, the -t/-s/-w after one that path's.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmds.h"
#include "fcheck_run.h"
#include "nvmeof.h"
#include "out.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nvmeof failover-check -a ADDR [-a ADDR2 ...] -n NQN [OPTIONS]\n"
		"write versioned blocks through one path or several while fault commands run, then\n"
		"read every block back: lost updates, versions never written, torn blocks (exit 0: none)\n\n"
		"  -a, --traddr=ADDR        a path's target address; each -a starts a path (up to 4)\n"
		"  -t, --transport=rdma     rdma or tcp: after an -a that path's, before any every path's\n"
		"  -s, --trsvcid=PORT       port (4420), per path as -t\n"
		"  -w, --src=ADDR           local address, per path as -t; also --host-traddr\n"
		"  -n, --nqn=NQN            subsystem NQN (required)\n"
		"  -q, --hostnqn=NQN        host NQN\n"
		"  -N, --namespace-id=NSID  namespace (1); overwritten where the units lie\n"
		"      --timeout=MS         command timeout (5000): a partition must last longer\n"
		"      --kato=MS            keep-alive timeout (the library's default)\n"
		"      --reconnect-delay=MS a lost path's reconnect tries, every MS (1000)\n"
		"      --ctrl-loss-tmo=MS   a path given up after (the library's default)\n"
		"      --iopolicy=POLICY    several paths: queue-depth (default), round-robin, numa\n"
		"      --quiesce-time=MS    several paths: the hold of a lost write where the\n"
		"                           controller reports no CQT (the library's default)\n"
		"  -B, --start-block=LBA    first block (0)\n"
		"      --units=N            write units (64), each written by one queue\n"
		"  -c, --block-count=N      blocks per write (1); above MDTS a write is split\n"
		"      --queues=N           writer queues, one thread each (2, up to 16)\n"
		"      --queue-depth=N      writes outstanding per queue (4)\n"
		"      --runtime=S          seconds of writing (default: until the last fault command ran)\n"
		"      --drain=MS           after the writes stop, how long to wait for those\n"
		"                           outstanding before abandoning them (30000)\n"
		"      --hold=MS            after the writes and faults, the wait before reading back,\n"
		"                           for late copies of old writes to land (15000)\n"
		"      --cut-cmd=CMD        a command that cuts a path (/bin/sh -c), run at --cut-at\n"
		"      --cut-at=S           seconds into the writes (2)\n"
		"      --heal-cmd=CMD       the command that heals it, run at --heal-at\n"
		"      --heal-at=S          seconds into the writes (--cut-at + 3 command timeouts)\n"
		"      --fault-script=FILE  more fault commands, a line each: SECONDS COMMAND\n"
		"  -o, --output-format=FMT  normal or json\n"
		"  -h, --help               this text\n");
}

enum { O_TIMEOUT = 0x100, O_KATO, O_RECONNECT, O_LOSS, O_QUIESCE, O_UNITS, O_QUEUES, O_DEPTH, O_RUNTIME,
       O_DRAIN, O_HOLD, O_IOPOLICY, O_CUT, O_CUT_AT, O_HEAL, O_HEAL_AT, O_SCRIPT };

static int bad(const char *opt, const char *v, const char *why)
{
	fprintf(stderr, "nvmeof failover-check: %s: '%s' %s\n", opt, v, why);
	return -1;
}

static int num(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (!*s || *end || errno || s[0] == '-' || x < min || x > max) {
		char why[80];
		snprintf(why, sizeof(why), "is not a number from %llu to %llu", (unsigned long long)min,
			 (unsigned long long)max);
		return bad(opt, s, why);
	}
	*v = x;
	return 0;
}

static int secs(const char *opt, const char *s, uint32_t *ms)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (!*s || *end || errno || !(x >= 0) || x > 86400)
		return bad(opt, s, "is not seconds from 0 to 86400");
	*ms = (uint32_t)(x * 1000 + 0.5);
	return 0;
}

static int add_fault(struct fc_cfg *c, uint32_t at, const char *what, const char *cmd)
{
	if (c->nfaults == FC_MAX_FAULTS) {
		fprintf(stderr, "nvmeof failover-check: more than %d fault commands\n", FC_MAX_FAULTS);
		return -1;
	}
	char *copy = strdup(cmd);
	if (!copy)
		return -1;
	/* in time order; equal times keep their order */
	uint32_t i = c->nfaults++;
	for (; i && c->fault[i - 1].at_ms > at; i--)
		c->fault[i] = c->fault[i - 1];
	c->fault[i] = (struct fc_fault){.at_ms = at, .what = what, .cmd = copy};
	return 0;
}

static int read_script(struct fc_cfg *c, const char *file)
{
	FILE *f = fopen(file, "r");
	if (!f) {
		fprintf(stderr, "nvmeof failover-check: --fault-script: %s: %s\n", file, strerror(errno));
		return -1;
	}
	char line[1024];
	int rc = 0, n = 0;
	while (!rc && fgets(line, sizeof(line), f)) {
		n++;
		line[strcspn(line, "\n")] = 0;
		char *p = line + strspn(line, " \t");
		if (!*p || *p == '#')
			continue;
		char *cmd = p + strcspn(p, " \t");
		if (*cmd)
			*cmd++ = 0;
		cmd += strspn(cmd, " \t");
		uint32_t at;
		if (!*cmd) {
			fprintf(stderr, "nvmeof failover-check: %s:%d: SECONDS COMMAND, no command\n", file, n);
			rc = -1;
		} else {
			rc = secs("--fault-script", p, &at) ? -1 : add_fault(c, at, "fault", cmd);
		}
	}
	fclose(f);
	return rc;
}

static int parse(int argc, char **argv, struct fc_cfg *c)
{
	static const struct option lo[] = {
		{"traddr", required_argument, 0, 'a'}, {"transport", required_argument, 0, 't'},
		{"trsvcid", required_argument, 0, 's'}, {"src", required_argument, 0, 'w'},
		{"host-traddr", required_argument, 0, 'w'}, {"nqn", required_argument, 0, 'n'},
		{"hostnqn", required_argument, 0, 'q'}, {"namespace-id", required_argument, 0, 'N'},
		{"timeout", required_argument, 0, O_TIMEOUT}, {"kato", required_argument, 0, O_KATO},
		{"reconnect-delay", required_argument, 0, O_RECONNECT}, {"ctrl-loss-tmo", required_argument, 0, O_LOSS},
		{"quiesce-time", required_argument, 0, O_QUIESCE}, {"start-block", required_argument, 0, 'B'},
		{"units", required_argument, 0, O_UNITS}, {"block-count", required_argument, 0, 'c'},
		{"queues", required_argument, 0, O_QUEUES}, {"queue-depth", required_argument, 0, O_DEPTH},
		{"runtime", required_argument, 0, O_RUNTIME}, {"drain", required_argument, 0, O_DRAIN},
		{"hold", required_argument, 0, O_HOLD}, {"iopolicy", required_argument, 0, O_IOPOLICY}, {"cut-cmd", required_argument, 0, O_CUT},
		{"cut-at", required_argument, 0, O_CUT_AT}, {"heal-cmd", required_argument, 0, O_HEAL},
		{"heal-at", required_argument, 0, O_HEAL_AT}, {"fault-script", required_argument, 0, O_SCRIPT},
		{"output-format", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
	};
	struct fc_path all = {0}, *p = &all;
	const char *cut = NULL, *heal = NULL, *script = NULL;
	uint32_t cut_at = 2000, heal_at = 0;
	bool heal_at_set = false;
	uint64_t v;
	int ch;
	optind = 2;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":a:t:s:w:n:q:N:B:c:o:h", lo, NULL)) != -1) {
		const char *opt = argv[optind - 1];
		switch (ch) {
		case 'a':
			if (c->npaths == FC_MAX_PATHS) {
				fprintf(stderr, "nvmeof failover-check: more than %d paths\n", FC_MAX_PATHS);
				return 2;
			}
			p = &c->path[c->npaths++];
			p->traddr = optarg;
			break;
		case 't':
			if (strcasecmp(optarg, "rdma") && strcasecmp(optarg, "tcp"))
				return bad("--transport", optarg, "is not rdma or tcp") ? 2 : 2;
			p->trtype = optarg;
			break;
		case 's': p->trsvcid = optarg; break;
		case 'w': p->src = optarg; break;
		case 'n': c->nqn = optarg; break;
		case 'q': c->hostnqn = optarg; break;
		case 'N': if (num("--namespace-id", optarg, 1, 0xffffffffu, &v)) return 2; c->nsid = (uint32_t)v; break;
		case O_TIMEOUT: if (num("--timeout", optarg, 1, 3600000, &v)) return 2; c->timeout_ms = (uint32_t)v; break;
		case O_KATO: if (num("--kato", optarg, 0, 3600000, &v)) return 2; c->kato_ms = (int64_t)v; break;
		case O_RECONNECT: if (num("--reconnect-delay", optarg, 0, 3600000, &v)) return 2; c->reconnect_ms = (uint32_t)v; break;
		case O_LOSS: if (num("--ctrl-loss-tmo", optarg, 1, 86400000, &v)) return 2; c->loss_tmo_ms = (uint32_t)v; break;
		case O_QUIESCE: if (num("--quiesce-time", optarg, 0, 3600000, &v)) return 2; c->quiesce_ms = (int64_t)v; break;
		case 'B': if (num("--start-block", optarg, 0, UINT64_MAX / 2, &v)) return 2; c->slba = v; break;
		case O_UNITS: if (num("--units", optarg, 1, 1u << 20, &v)) return 2; c->units = (uint32_t)v; break;
		case 'c': if (num("--block-count", optarg, 1, 65536, &v)) return 2; c->nlb = (uint32_t)v; break;
		case O_QUEUES: if (num("--queues", optarg, 1, FC_MAX_QUEUES, &v)) return 2; c->queues = (uint32_t)v; break;
		case O_DEPTH: if (num("--queue-depth", optarg, 1, 1024, &v)) return 2; c->depth = (uint32_t)v; break;
		case O_RUNTIME: { uint32_t ms; if (secs("--runtime", optarg, &ms)) return 2; c->runtime_ms = ms; break; }
		case O_DRAIN: if (num("--drain", optarg, 0, 3600000, &v)) return 2; c->drain_ms = (uint32_t)v; break;
		case O_HOLD: if (num("--hold", optarg, 0, 3600000, &v)) return 2; c->hold_ms = (uint32_t)v; break;
		case O_IOPOLICY:
			if (nvmeof_iopolicy_parse(optarg, &c->iopolicy)) {
				fprintf(stderr, "nvmeof failover-check: --iopolicy: %s\n", nvmeof_errmsg());
				return 2;
			}
			break;
		case O_CUT: cut = optarg; break;
		case O_HEAL: heal = optarg; break;
		case O_CUT_AT: if (secs("--cut-at", optarg, &cut_at)) return 2; break;
		case O_HEAL_AT: if (secs("--heal-at", optarg, &heal_at)) return 2; heal_at_set = true; break;
		case O_SCRIPT: script = optarg; break;
		case 'o':
			if (!strcmp(optarg, "json"))
				c->json = true;
			else if (strcmp(optarg, "normal"))
				return bad("--output-format", optarg, "is not normal or json") ? 2 : 2;
			break;
		case 'h': usage(stdout); return 1;
		case ':': fprintf(stderr, "nvmeof failover-check: option %s needs a value\n", opt); return 2;
		default: fprintf(stderr, "nvmeof failover-check: unknown option %s (see --help)\n", opt); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nvmeof failover-check: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!c->npaths || !c->nqn) {
		fprintf(stderr, "nvmeof failover-check: %s is missing\n", !c->npaths ? "a path (-a ADDR)" : "the subsystem NQN (-n NQN)");
		return 2;
	}
	if (c->units < c->queues) {
		fprintf(stderr, "nvmeof failover-check: --units (%u) fewer than --queues (%u): a queue would write nothing\n",
			c->units, c->queues);
		return 2;
	}
	for (uint32_t i = 0; i < c->npaths; i++) {
		struct fc_path *x = &c->path[i];
		x->trtype = x->trtype ? x->trtype : all.trtype;
		x->trsvcid = x->trsvcid ? x->trsvcid : all.trsvcid;
		x->src = x->src ? x->src : all.src;
	}
	if (!heal_at_set)
		heal_at = cut_at + 3 * c->timeout_ms;
	if ((cut && add_fault(c, cut_at, "cut", cut)) || (heal && add_fault(c, heal_at, "heal", heal)) ||
	    (script && read_script(c, script)))
		return 2;
	if (c->runtime_ms < 0 && !c->nfaults)
		c->runtime_ms = 5000;
	return 0;
}

static void event(const struct fc_event *e, struct out *o)
{
	if (o->json) {
		out_obj_begin(o, NULL);
		out_u64(o, "version", e->version);
		out_str(o, "state", fc_state_str(e->state));
		out_u64(o, "sent_ms", e->sent_ms);
		out_u64(o, "t_ms", e->t_ms);
		out_u64(o, "queue", e->queue);
		out_i64(o, "error", e->err);
		if (e->err == NVMEOF_ENVME)
			out_u64(o, "status", e->status);
		out_obj_end(o);
		return;
	}
	char st[32] = "";
	if (e->err == NVMEOF_ENVME)
		snprintf(st, sizeof(st), ", status 0x%03x", e->status);
	printf("      v%llu queue %u, sent %u.%03u s, %s at %u.%03u s%s\n", (unsigned long long)e->version, e->queue,
	       e->sent_ms / 1000, e->sent_ms % 1000, fc_state_str(e->state), e->t_ms / 1000, e->t_ms % 1000, st);
}

/* A unit's writes in doubt or slow, then its last ones, oldest first. */
static void history(const struct fc_unit *u, struct out *o)
{
	uint32_t n = u->nodd < FC_ODD ? u->nodd : FC_ODD;
	if (!o->json)
		printf("    writes in doubt or answered %u ms or more after they were sent (the last %u):%s\n", FC_SLOW_MS,
		       FC_ODD, n ? "" : " none");
	else
		out_arr_begin(o, "in_doubt_or_slow");
	for (uint32_t k = 0; k < n; k++)
		event(&u->odd[(u->nodd - n + k) % FC_ODD], o);
	n = u->nev < FC_HIST ? u->nev : FC_HIST;
	if (!o->json) {
		printf("    the last %u writes:\n", n);
	} else {
		out_arr_end(o);
		out_arr_begin(o, "last");
	}
	for (uint32_t k = 0; k < n; k++)
		event(&u->ev[(u->nev - n + k) % FC_HIST], o);
	if (o->json)
		out_arr_end(o);
}

static void report(const struct fc_cfg *c, const struct fc_result *r)
{
	uint64_t nbad = r->nbads;
	if (!c->json) {
		for (uint32_t i = 0; i < r->nbads; i++) {
			const struct fc_bad *b = &r->bads[i];
			const struct fc_unit *u = &r->unit[b->unit];
			printf("LBA %llu: %s: holds version %llu (writer %u), newest acknowledged %llu, %llu issued, "
			       "%llu in doubt\n", (unsigned long long)b->lba, fc_kind_str(b->kind),
			       (unsigned long long)b->version, b->writer, (unsigned long long)u->acked,
			       (unsigned long long)u->issued, (unsigned long long)u->in_doubt);
			history(u, &(struct out){.json = false});
		}
		printf("verdict: %llu bad block(s): %llu lost update(s), %llu version(s) never written, %llu torn or "
		       "corrupt, %llu unreadable; %u unit(s) of %u block(s) of %u B, %llu write(s) acknowledged, %llu in "
		       "doubt\n", (unsigned long long)nbad, (unsigned long long)r->bad[FC_LOST],
		       (unsigned long long)r->bad[FC_NEVER], (unsigned long long)r->bad[FC_CORRUPT],
		       (unsigned long long)r->bad[FC_UNREAD], c->units, c->nlb, r->bsz, (unsigned long long)r->acked,
		       (unsigned long long)r->in_doubt);
		return;
	}
	struct out o;
	out_init(&o, stdout, true, 0);
	out_arr_begin(&o, "paths");
	for (uint32_t i = 0; i < c->npaths; i++) {
		out_obj_begin(&o, NULL);
		out_str(&o, "transport", c->path[i].trtype ? c->path[i].trtype : "rdma");
		out_str(&o, "traddr", c->path[i].traddr);
		out_str(&o, "trsvcid", c->path[i].trsvcid ? c->path[i].trsvcid : "4420");
		out_obj_end(&o);
	}
	out_arr_end(&o);
	out_u64(&o, "nsid", c->nsid);
	out_u64(&o, "units", c->units);
	out_u64(&o, "blocks_per_write", c->nlb);
	out_u64(&o, "block_size", r->bsz);
	out_arr_begin(&o, "timeline");
	for (uint32_t i = 0; i < r->ntl; i++) {
		out_obj_begin(&o, NULL);
		out_u64(&o, "t_ms", r->tl[i].t_ms);
		out_str(&o, "event", r->tl[i].text);
		out_obj_end(&o);
	}
	out_arr_end(&o);
	out_u64(&o, "writes_acknowledged", r->acked);
	out_u64(&o, "writes_in_doubt", r->in_doubt);
	out_u64(&o, "lost_updates", r->bad[FC_LOST]);
	out_u64(&o, "never_written", r->bad[FC_NEVER]);
	out_u64(&o, "torn_or_corrupt", r->bad[FC_CORRUPT]);
	out_u64(&o, "unreadable", r->bad[FC_UNREAD]);
	out_u64(&o, "bad_blocks", nbad);
	out_arr_begin(&o, "bad");
	for (uint32_t i = 0; i < r->nbads; i++) {
		const struct fc_bad *b = &r->bads[i];
		const struct fc_unit *u = &r->unit[b->unit];
		out_obj_begin(&o, NULL);
		out_u64(&o, "lba", b->lba);
		out_str(&o, "kind", fc_kind_str(b->kind));
		out_u64(&o, "version", b->version);
		out_u64(&o, "writer", b->writer);
		out_u64(&o, "acknowledged", u->acked);
		out_u64(&o, "issued", u->issued);
		out_obj_begin(&o, "history");
		history(u, &o);
		out_obj_end(&o);
		out_obj_end(&o);
	}
	out_arr_end(&o);
	out_end(&o);
}

int tool_failover_check(int argc, char **argv)
{
	static struct fc_cfg c;
	c = (struct fc_cfg){.nsid = 1, .timeout_ms = 5000, .kato_ms = -1, .quiesce_ms = -1, .reconnect_ms = 1000,
			    .units = 64, .nlb = 1, .queues = 2, .depth = 4, .runtime_ms = -1, .hold_ms = 15000,
			    .drain_ms = 30000};
	int rc = parse(argc, argv, &c);
	if (rc)
		return rc == 1 ? 0 : 2;
	static struct fc_result r;
	pthread_mutex_init(&r.lock, NULL);
	if (!c.json) {
		printf("failover-check: %u path(s):", c.npaths);
		for (uint32_t i = 0; i < c.npaths; i++)
			printf(" %s %s:%s", c.path[i].trtype ? c.path[i].trtype : "rdma", c.path[i].traddr,
			       c.path[i].trsvcid ? c.path[i].trsvcid : "4420");
		printf("; namespace %u, %u unit(s) of %u block(s) from LBA %llu\ntimeline:\n", c.nsid, c.units, c.nlb,
		       (unsigned long long)c.slba);
		fflush(stdout);
	}
	if (fc_run(&c, &r))
		return 1;
	report(&c, &r);
	free(r.unit);
	free(r.bads);
	for (uint32_t i = 0; i < c.nfaults; i++)
		free(c.fault[i].cmd);
	return r.nbads ? 1 : 0;
}
