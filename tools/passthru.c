/*
 * nvmeof io-passthru / admin-passthru: one raw command, with nvme-cli's
 * options and output (nvme io-passthru, nvme admin-passthru), over
 * nvmeof_io_raw_sync / nvmeof_admin_raw_sync. Its own option parsing: the
 * connection options as the other subcommands take them, then the
 * command's.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmds.h"
#include "secret.h"
#include "nvmeof.h"
#include "out.h"

struct pt {
	struct args a;
	uint8_t opcode, flags;
	uint16_t rsvd;
	uint32_t cdw[16];       /* cdw[2], cdw[3], cdw[10..15] used */
	uint64_t metadata;
	uint32_t data_len;
	bool opcode_set, read, write;
	const char *input;
};

static void usage(FILE *f, const char *name)
{
	fprintf(f,
		"usage: nvmeof %s -a ADDR -n NQN --opcode=OPC [options]\n"
		"  send one raw %s command, as nvme-cli's %s\n"
		"  -a, --traddr=ADDR        target address\n"
		"  -s, --trsvcid=PORT       port (4420)\n"
		"  -n, --nqn=NQN            subsystem NQN\n"
		"  -q, --hostnqn=NQN        host NQN\n"
		"  -w, --host-traddr=ADDR   local address (chooses the HCA)\n"
		"  -t, --timeout=MS         command timeout in ms; -t rdma or -t tcp: the transport\n"
		"  -g, --hdr-digest         NVMe/TCP header digest (CRC32C), as nvme-cli's -g\n"
		"  -G, --data-digest        NVMe/TCP data digest (CRC32C), as nvme-cli's -G\n"
		"  -S, --dhchap-secret=KEY, -C, --dhchap-ctrl-secret=KEY  in-band authentication,\n"
		"                           as the other subcommands take it; also\n"
		"      --dhchap-secret-file=FILE, --dhchap-ctrl-secret-file=FILE,\n"
		"      --dhchap-hashes=LIST, --dhchap-dhgroups=LIST, --allow-unauthenticated-ctrl\n"
		"  -O, --opcode=OPC         the command's opcode (required; 0x7f, Fabrics, is refused)\n"
		"  -f, --flags=N            CDW0 bits 15:8 (PSDT is the library's; fused commands are refused)\n"
		"  -n, -N, --namespace-id=NSID  NSID (default 0); a number for -n is the namespace\n"
		"  -2, -3, --cdw2, --cdw3=N command dwords 2 and 3\n"
		"  -4..-9, --cdw10..--cdw15=N  command dwords 10 to 15\n"
		"  -l, --data-len=BYTES     data to transfer (default 0)\n"
		"  -r, --read               the data comes from the controller (opcode bit 1 says so too)\n"
		"  -W, --write              the data goes to the controller (opcode bit 0 says so too)\n"
		"  -i, --input-file=FILE    the data to write (default: standard input)\n"
		"  -b, --raw-binary         read data to stdout as bytes, not a hex dump\n"
		"  -o, --output-format=FMT  normal or json (the completion's fields)\n",
		name, strcmp(name, "admin-passthru") ? "I/O" : "admin", name);
}

static int num(const char *s, uint64_t max, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (errno || !*s || *end || x > max)
		return -1;
	*v = x;
	return 0;
}

/* OPT_CDW + n: --cdwN; the authentication options after them */
enum { OPT_CDW = 0x100, OPT_SECRET_FILE = 0x120, OPT_CTRL_SECRET_FILE, OPT_HASHES, OPT_DHGROUPS, OPT_ALLOW_UNAUTH };

static int parse(int argc, char **argv, struct pt *p)
{
	static const struct option lo[] = {
		{"traddr", required_argument, 0, 'a'}, {"trsvcid", required_argument, 0, 's'},
		{"nqn", required_argument, 0, 'n'}, {"hostnqn", required_argument, 0, 'q'},
		{"host-traddr", required_argument, 0, 'w'}, {"src", required_argument, 0, 'w'},
		{"timeout", required_argument, 0, 't'}, {"opcode", required_argument, 0, 'O'},
		{"flags", required_argument, 0, 'f'}, {"namespace-id", required_argument, 0, 'N'},
		{"data-len", required_argument, 0, 'l'}, {"read", no_argument, 0, 'r'},
		{"write", no_argument, 0, 'W'}, {"input-file", required_argument, 0, 'i'},
		{"raw-binary", no_argument, 0, 'b'}, {"output-format", required_argument, 0, 'o'},
		{"metadata", required_argument, 0, 'M'}, {"help", no_argument, 0, 'h'},
		{"hdr-digest", no_argument, 0, 'g'}, {"data-digest", no_argument, 0, 'G'},
		{"cdw2", required_argument, 0, OPT_CDW + 2}, {"cdw3", required_argument, 0, OPT_CDW + 3},
		{"cdw10", required_argument, 0, OPT_CDW + 10}, {"cdw11", required_argument, 0, OPT_CDW + 11},
		{"cdw12", required_argument, 0, OPT_CDW + 12}, {"cdw13", required_argument, 0, OPT_CDW + 13},
		{"cdw14", required_argument, 0, OPT_CDW + 14}, {"cdw15", required_argument, 0, OPT_CDW + 15},
		{"dhchap-secret", required_argument, 0, 'S'}, {"dhchap-ctrl-secret", required_argument, 0, 'C'},
		{"dhchap-secret-file", required_argument, 0, OPT_SECRET_FILE},
		{"dhchap-ctrl-secret-file", required_argument, 0, OPT_CTRL_SECRET_FILE},
		{"dhchap-hashes", required_argument, 0, OPT_HASHES}, {"dhchap-dhgroups", required_argument, 0, OPT_DHGROUPS},
		{"allow-unauthenticated-ctrl", no_argument, 0, OPT_ALLOW_UNAUTH},
		{0, 0, 0, 0},
	};
	int ch, li = -1;
	uint64_t v;
	optind = 2;
	/* getopt's own messages would print a whole "--option=value", which
	 * may be a secret: ours name the option only */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":a:s:n:q:w:t:O:f:N:l:rWi:bo:M:hgGS:C:2:3:4:5:6:7:8:9:", lo, &li)) != -1) {
		const char *bad = NULL;
		char optbuf[48];
		const char *opt = tool_optlabel(lo, &li, ch, argv, optbuf, sizeof(optbuf));
		switch (ch) {
		case 'S': tool_secret_arg(&p->a, SECRET_HOST, optarg); break;
		case 'C': tool_secret_arg(&p->a, SECRET_CTRL, optarg); break;
		case OPT_SECRET_FILE:
		case OPT_CTRL_SECRET_FILE:
			if (tool_secret_file(&p->a, ch == OPT_SECRET_FILE ? SECRET_HOST : SECRET_CTRL, optarg))
				return 2;
			break;
		case OPT_HASHES: p->a.dhchap_hashes = optarg; break;
		case OPT_DHGROUPS: p->a.dhchap_dhgroups = optarg; break;
		case OPT_ALLOW_UNAUTH: p->a.allow_unauth_ctrl = true; break;
		case ':':
			fprintf(stderr, "nvmeof %s: option %s needs a value\n", p->a.name, opt);
			return 2;
		case '?':
			fprintf(stderr, "nvmeof %s: unknown option %s (see --help)\n", p->a.name, opt);
			return 2;
		case 'a': p->a.traddr = optarg; break;
		case 's': p->a.trsvcid = optarg; break;
		case 'n':
			/* the NQN as in `nvme connect`, and the namespace as in
			 * `nvme io-passthru -n 1`: a number can only be the latter */
			if (!num(optarg, UINT32_MAX, &v) && optarg[0] >= '0' && optarg[0] <= '9')
				p->a.nsid = (uint32_t)v;
			else
				p->a.nqn = optarg;
			break;
		case '2': case '3':
			ch = OPT_CDW + ch - '0';
			goto cdw;
		case '4': case '5': case '6': case '7': case '8': case '9':
			ch = OPT_CDW + 10 + ch - '4';
			goto cdw;
		case 'q': p->a.hostnqn = optarg; break;
		case 'w': p->a.src = optarg; break;
		case 't':
			/* nvme-cli's transport beside -a, else its timeout in ms */
			if (!strcasecmp(optarg, "rdma") || !strcasecmp(optarg, "tcp")) {
				p->a.trtype = optarg;
				break;
			}
			if (num(optarg, UINT32_MAX, &v) || !v)
				bad = "timeout";
			else
				p->a.timeout_ms = (uint32_t)v;
			break;
		case 'O': if (num(optarg, 0xff, &v)) bad = "opcode"; else { p->opcode = (uint8_t)v; p->opcode_set = true; } break;
		case 'f': if (num(optarg, 0xff, &v)) bad = "flags"; else p->flags = (uint8_t)v; break;
		case 'N': if (num(optarg, UINT32_MAX, &v)) bad = "namespace-id"; else p->a.nsid = (uint32_t)v; break;
		case 'l': if (num(optarg, UINT32_MAX, &v)) bad = "data-len"; else p->data_len = (uint32_t)v; break;
		case 'g': p->a.hdgst = true; break;
		case 'G': p->a.ddgst = true; break;
		case 'r': p->read = true; break;
		case 'W': p->write = true; break;
		case 'i': p->input = optarg; break;
		case 'b': p->a.raw = true; break;
		case 'M': bad = "metadata (separate metadata buffers are not supported)"; break;
		case 'o':
			if (!strcmp(optarg, "json"))
				p->a.json = true;
			else if (strcmp(optarg, "normal"))
				bad = "output-format";
			break;
		case 'h': usage(stdout, p->a.name); return 1;
		default:
		cdw:
			if (ch >= OPT_CDW && ch <= OPT_CDW + 15) {
				if (num(optarg, UINT32_MAX, &v))
					bad = "cdw";
				else
					p->cdw[ch - OPT_CDW] = (uint32_t)v;
				break;
			}
			usage(stderr, p->a.name);
			return 2;
		}
		if (bad) {
			fprintf(stderr, "nvmeof %s: bad --%s value '%s'\n", p->a.name, bad, tool_shown(optarg ? optarg : ""));
			return 2;
		}
	}
	if (tool_secret_check())
		return 2;
	const char *missing = optind < argc ? "no further arguments" : !p->a.traddr ? "the target address (-a ADDR)"
				: !p->a.nqn ? "the subsystem NQN (-n NQN)" : !p->opcode_set ? "--opcode" : NULL;
	if (missing) {
		fprintf(stderr, "nvmeof %s: %s %s\n", p->a.name, optind < argc ? "expected" : "missing", missing);
		return 2;
	}
	/* as nvme-cli: the opcode's data direction (bits 1:0) sets --write
	 * and --read too, and data needs one */
	p->write |= p->opcode & 1;
	p->read |= (p->opcode & 2) != 0;
	if (p->data_len && !p->read && !p->write) {
		fprintf(stderr, "nvmeof %s: data direction not given (--read or --write)\n", p->a.name);
		return 2;
	}
	return 0;
}

static void hexdump(const uint8_t *b, uint32_t n)
{
	printf("       0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f\n");
	for (uint32_t i = 0; i < n; i += 16) {
		printf("%04x:", i);
		for (uint32_t j = i; j < i + 16 && j < n; j++)
			printf(" %02x", b[j]);
		printf("\n");
	}
}

static int run(struct pt *p)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_queue *q = NULL;
	struct nvmeof_mr *mr = NULL;
	struct nvmeof_cpl cpl;
	uint8_t sqe[64] = {0};
	bool admin = !strcmp(p->a.name, "admin-passthru");
	int rc, ret = 1;
	tool_ctrl_opts(&p->a, &o);
	rc = nvmeof_ctrl_connect(&o, &c);
	tool_secret_wipe();
	if (rc)
		goto fail;
	if (p->data_len && (rc = nvmeof_mr_alloc(c, p->data_len, &mr)))
		goto fail;
	if (p->write && mr) {
		FILE *f = p->input ? fopen(p->input, "rb") : stdin;
		if (!f) {
			fprintf(stderr, "nvmeof %s: %s: %s\n", p->a.name, tool_shown_path(p->input), strerror(errno));
			goto out;
		}
		size_t got = fread(nvmeof_mr_addr(mr), 1, p->data_len, f);
		if (f != stdin)
			fclose(f);
		if (got != p->data_len) {
			fprintf(stderr, "nvmeof %s: %s holds fewer than the %u bytes of --data-len\n", p->a.name,
				p->input ? tool_shown_path(p->input) : "standard input", p->data_len);
			goto out;
		}
	}
	sqe[0] = p->opcode;
	sqe[1] = p->flags;
	memcpy(sqe + 4, &p->a.nsid, 4);
	memcpy(sqe + 8, &p->cdw[2], 8);
	for (int k = 10; k <= 15; k++)
		memcpy(sqe + 4 * k, &p->cdw[k], 4);
	if (admin) {
		rc = nvmeof_admin_raw_sync(c, sqe, mr, 0, p->data_len, 0, &cpl, 0);
	} else {
		if ((rc = nvmeof_queue_create(c, NULL, &q)))
			goto fail;
		rc = nvmeof_io_raw_sync(q, sqe, mr, 0, p->data_len, 0, &cpl, 0);
	}
	if (rc && rc != NVMEOF_ENVME)
		goto fail;
	if (p->a.json) {
		struct out j;
		out_init(&j, stdout, true, 0);
		out_u64(&j, "result", cpl.cdw0);
		out_u64(&j, "result_dw1", cpl.cdw1);
		out_u64(&j, "sq_head", cpl.sqhd);
		out_u64(&j, "sq_id", cpl.sqid);
		out_u64(&j, "command_id", cpl.cid);
		out_u64(&j, "status", cpl.status);
		out_u64(&j, "status_code_type", NVMEOF_STATUS_SCT(cpl.status));
		out_u64(&j, "status_code", NVMEOF_STATUS_SC(cpl.status));
		out_u64(&j, "do_not_retry", NVMEOF_STATUS_DNR(cpl.status));
		out_str(&j, "status_name", rc ? nvmeof_cmd_status_name(cpl.status, admin, p->opcode, 0) : "success");
		out_end(&j);
	} else if (rc) {
		/* nvme-cli's words for a failed passthru */
		fprintf(stderr, "NVMe status: %s(%#x)\n", nvmeof_cmd_status_name(cpl.status, admin, p->opcode, 0),
			cpl.status);
	} else {
		/* with -b, stdout carries the data alone */
		fprintf(p->a.raw ? stderr : stdout, "NVMe command result:%08x\n", cpl.cdw0);
		if (mr && p->read) {
			if (p->a.raw)
				fwrite(nvmeof_mr_addr(mr), 1, p->data_len, stdout);
			else
				hexdump(nvmeof_mr_addr(mr), p->data_len);
		}
	}
	ret = rc ? 1 : 0;
	goto out;
fail:
	fprintf(stderr, "nvmeof %s: %s\n", p->a.name, nvmeof_errmsg());
out:
	if (q)
		nvmeof_queue_destroy(q);
	if (mr)
		nvmeof_mr_release(mr);
	if (c)
		nvmeof_ctrl_close(c);
	return ret;
}

int tool_passthru(int argc, char **argv)
{
	struct pt p;
	memset(&p, 0, sizeof(p));
	p.a.name = argv[1];
	p.a.gpu = -1;
	p.a.tcp_priority = p.a.tcp_tos = -1; /* the system's */
	int rc = parse(argc, argv, &p);
	if (rc)
		return rc == 1 ? 0 : rc;
	return run(&p);
}
