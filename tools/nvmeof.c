/*
 * nvmeof: discovery, identify, logs and block I/O over NVMe/RDMA from user
 * space, with nvme-cli's subcommand names and output, no kernel initiator.
 *   nvmeof discover -t rdma -a ADDR -s PORT
 *   nvmeof id-ctrl -a ADDR -n NQN [-o json]
 *   nvmeof write -a ADDR -n NQN --namespace-id=1 --start-block=0 --data=FILE
 * `nvmeof SUBCOMMAND --help` lists a subcommand's options.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmds.h"
#include "nvmeof.h"
#include "secret.h"
#include "tcp_crc32c.h"
#include "tlskey.h"

static const struct cmd {
	const char *name, *help;
	int (*fn)(struct args *a);
	unsigned what; /* ARG_* this subcommand takes beyond the connection */
} cmds[] = {
	{"discover", "read the Discovery Log Page of a discovery controller", cmd_discover, ARG_OUT},
	{"id-ctrl", "Identify Controller", cmd_id_ctrl, ARG_OUT},
	{"id-ns", "Identify Namespace and its identifiers (CNS 00h, 03h; --csi 2: the zoned data)", cmd_id_ns,
	 ARG_OUT | ARG_NSID | ARG_CSI},
	{"list-ns", "the active namespace list", cmd_list_ns, ARG_OUT},
	{"smart-log", "SMART / Health Information log", cmd_smart_log, ARG_OUT | ARG_NSID},
	{"error-log", "Error Information log", cmd_error_log, ARG_OUT | ARG_ENTRIES},
	{"ana-log", "Asymmetric Namespace Access log", cmd_ana_log, ARG_OUT},
	{"get-log", "any log page, as a hex dump or raw bytes", cmd_get_log, ARG_OUT | ARG_NSID | ARG_LOG},
	{"read", "read blocks into a file", cmd_read, ARG_NSID | ARG_IO},
	{"write", "write a file's bytes to blocks", cmd_write, ARG_NSID | ARG_IO},
	{"write-zeroes", "Write Zeroes over blocks", cmd_write_zeroes, ARG_NSID | ARG_IO},
	{"flush", "Flush a namespace's volatile write cache", cmd_flush, ARG_NSID},
	{"report-zones", "Report Zones of a zoned namespace", cmd_report_zones, ARG_OUT | ARG_NSID | ARG_ZONE},
	{"zone-mgmt-send", "Zone Management Send: open, close, finish, reset, offline a zone or all",
	 cmd_zone_mgmt_send, ARG_NSID | ARG_ZONE},
	{"zone-append", "Zone Append a file's bytes to a zone; prints the LBA they got", cmd_zone_append,
	 ARG_NSID | ARG_IO | ARG_ZONE},
	{"list-rdma", "this host's RDMA devices: ports, addresses, PCIe and NUMA place, GPUs near them",
	 cmd_list_rdma, ARG_OUT | ARG_LOCAL},
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

enum { OPT_LSP = 0x100, OPT_DHCHAP_FILE, OPT_DHCHAP_CTRL_FILE, OPT_DHCHAP_HASHES, OPT_DHCHAP_DHGROUPS,
       OPT_ALLOW_UNAUTH, OPT_TIMEOUT, OPT_SYSFS, OPT_HDGST,
       OPT_TCP_PRIORITY, OPT_TCP_TOS, OPT_TCP_BUSY_POLL, OPT_TCP_ZEROCOPY, OPT_DISABLE_SQFLOW, OPT_TLS, OPT_TLS_KEY, OPT_TLS_KEY_FILE,
       OPT_KEYRING, OPT_TLS_IDENTITY, OPT_TLS_COMPAT,
       OPT_CSI, OPT_START_LBA, OPT_DESCS, OPT_STATE, OPT_PARTIAL, OPT_ZSA, OPT_SELECT_ALL, OPT_ZSLBA };

static void usage(FILE *f)
{
	fprintf(f, "usage: nvmeof SUBCOMMAND [OPTIONS]   (nvmeof SUBCOMMAND --help)\n"
		   "       nvmeof --version\n\n");
	for (size_t i = 0; i < NCMDS; i++)
		fprintf(f, "  %-15s %s\n", cmds[i].name, cmds[i].help);
	/* parsed apart, with nvme-cli's own options (passthru.c) */
	fprintf(f, "  %-15s %s\n  %-15s %s\n", "io-passthru", "one raw I/O command, nvme-cli's options",
		"admin-passthru", "one raw admin command, nvme-cli's options");
	fprintf(f, "  %-15s %s\n", "failover-check",
		"write versioned blocks while paths fail and heal; report lost updates");
	fprintf(f, "  %-15s %s\n", "perf", "I/O at a queue depth for a time, as spdk_nvme_perf: IOPS, latency, CPU");
	fprintf(f, "  %-15s %s\n  %-15s %s\n", "gen-tls-key", "a new NVMe/TCP TLS PSK, as nvme gen-tls-key",
		"check-tls-key", "check a TLS PSK; print its PSK identity");
}

/* The subcommand being parsed: every usage error starts "nvmeof SUBCOMMAND:". */
static const char *sub = "";

static void cmd_usage(FILE *f, const struct cmd *c)
{
	if (c->what & ARG_LOCAL) {
		fprintf(f, "usage: nvmeof %s [-o json] [--sysfs=DIR]\n%s\n\n"
			   "  -o, --output-format=FMT  normal or json\n"
			   "      --sysfs=DIR          read this tree instead of /sys\n"
			   "  -h, --help               this text\n", c->name, c->help);
		return;
	}
	bool disc = c->fn == cmd_discover;
	struct nvmeof_ctrl_opts d; /* the defaults shown are the library's */
	nvmeof_ctrl_opts_init(&d);
	fprintf(f, "usage: nvmeof %s -a ADDR %s[OPTIONS]\n%s\n\n", c->name, disc ? "" : "-n NQN ", c->help);
	fprintf(f, "  -t, --transport=rdma     the transport: rdma or tcp (as nvme-cli's -t)\n"
		   "  -a, --traddr=ADDR        target address\n"
		   "  -s, --trsvcid=PORT       port, 1 to 65535 (%s%s)\n"
		   "  -w, --src=ADDR           local address (chooses the RDMA device); also --host-traddr\n"
		   "  -q, --hostnqn=NQN        host NQN (default /etc/nvme/hostnqn, else a generated one)\n"
		   "  -I, --hostid=UUID        host ID\n"
		   "  -S, --dhchap-secret=KEY  in-band authentication: the host's DH-HMAC-CHAP secret,\n"
		   "                           DHHC-1:XX:<base64>: (nvme gen-dhchap-key); used when the\n"
		   "                           target asks for it\n"
		   "  -C, --dhchap-ctrl-secret=KEY  the controller's secret: the controller is\n"
		   "                           authenticated too, also when it does not ask\n"
		   "      --dhchap-secret-file=FILE, --dhchap-ctrl-secret-file=FILE  the same from a\n"
		   "                           file's first line (other users see a command line)\n"
		   "      --dhchap-hashes=LIST, --dhchap-dhgroups=LIST  what the host offers\n"
		   "                           (sha256,sha384,sha512; null,ffdhe2048..ffdhe8192; all)\n"
		   "      --allow-unauthenticated-ctrl  accept a controller that does not require\n"
		   "                           authentication without authenticating it\n"
		   "  %s--hdr-digest         NVMe/TCP header digest (CRC32C), as nvme-cli's -g\n"
		   "  -G, --data-digest        NVMe/TCP data digest (CRC32C), as nvme-cli's -G\n"
		   "      --tls                NVMe/TCP over TLS 1.3 with a pre-shared key, as nvme-cli's\n"
		   "      --tls-key=KEY        the configured PSK, NVMeTLSkey-1:01:<base64>: (or 02;\n"
		   "                           nvme gen-tls-key); implies --tls\n"
		   "      --tls-key-file=FILE  the same from a file's first line\n"
		   "      --keyring=NAME       the TLS PSK from this kernel keyring (.nvme: where nvme\n"
		   "                           gen-tls-key --insert puts it) if no --tls-key; implies --tls\n"
		   "      --tls-identity=0|1   the PSK identity offered: 0 NVMe0R.. (default), 1 NVMe1R..\n"
		   "      --tls-compat         derive the TLS PSK from --tls-key as nvme-cli up to 2.14\n",
		d.trsvcid, disc ? "; over TCP " NVMEOF_TCP_DISC_PORT : "", c->what & ARG_IO && c->fn != cmd_write_zeroes ? "    " : "-g, ");
	fprintf(f, "      --tcp-priority=N     NVMe/TCP: SO_PRIORITY of the sockets, 0 to 15 (system's)\n"
		   "      --tcp-tos=N          NVMe/TCP: IP_TOS / IPV6_TCLASS of the sockets, 0 to 255\n"
		   "      --tcp-busy-poll=US   NVMe/TCP: SO_BUSY_POLL; above 0, each (non-blocking) read\n"
		   "                           polls the NIC once (0: system's)\n"
		   "      --tcp-zerocopy=BYTES NVMe/TCP: write payloads this large go with MSG_ZEROCOPY (0: none)\n"
		   "      --disable-sqflow     NVMe/TCP: SQ flow control off on every queue, as nvme-cli's;\n"
		   "                           a read completes with its data PDU alone\n");
	if (disc)
		fprintf(f, "  -n, --nqn=NQN            discovery NQN (%s)\n", NVMEOF_DISCOVERY_NQN);
	else
		fprintf(f, "  -n, --nqn=NQN            subsystem NQN (required)\n");
	fprintf(f, "      --timeout=MS         command timeout in ms (%u); connect steps: %u;\n"
		   "                           -t MS, a number, means the same\n", d.cmd_timeout_ms,
		d.connect_timeout_ms);
	if (c->what & ARG_OUT)
		fprintf(f, "  -o, --output-format=FMT  normal or json%s\n",
			disc ? ", or fio: each subsystem as an fio filename, ready to paste" : "");
	if (c->what & ARG_NSID)
		fprintf(f, "  -N, --namespace-id=NSID  namespace (%s); -n N with a number means the same\n",
			c->fn == cmd_smart_log || c->fn == cmd_get_log ? "0, the default: the controller" : "1");
	if (c->what & ARG_ENTRIES)
		fprintf(f, "  -e, --log-entries=N      entries (ELPE + 1)\n");
	if (c->what & ARG_LOG)
		fprintf(f, "  -i, --log-id=LID         log page identifier (required)\n"
			   "  -l, --log-len=BYTES      bytes to read (required, a multiple of 4)\n"
			   "  -L, --lpo=OFFSET         byte offset into the log (0)\n"
			   "      --lsp=LSP            log specific field (0)\n"
			   "  -r, --rae                retain the asynchronous event\n"
			   "  -b, --raw-binary         write the bytes to stdout instead of a hex dump\n");
	if (c->what & ARG_CSI)
		fprintf(f, "      --csi=CSI            2: the Zoned Namespace Command Set's data (CNS 05h, 06h)\n");
	if (c->fn == cmd_report_zones)
		fprintf(f, "      --start-lba=LBA      the first zone's LBA (0)\n"
			   "      --descs=N            zones to report (every zone)\n"
			   "      --state=N            only zones in this state: 0 all, 1 empty, 2 implicitly open,\n"
			   "                           3 explicitly open, 4 closed, 5 full, 6 read only, 7 offline\n"
			   "      --partial            the count is of the zones reported, not all that match\n");
	if (c->fn == cmd_zone_mgmt_send)
		fprintf(f, "      --zsa=ACTION         close, finish, open, reset or offline (required)\n"
			   "      --start-lba=LBA      the zone's first LBA (0)\n"
			   "      --select-all         every zone the action applies to\n");
	if (c->fn == cmd_zone_append)
		fprintf(f, "      --zslba=LBA          the zone's first LBA (0); also --start-block\n"
			   "  -c, --block-count=N      blocks (default: the file's size, rounded up)\n"
			   "  -d, --data=FILE          data to append (- for stdin)\n"
			   "  -f, --force-unit-access  FUA: on media before completion\n");
	if ((c->what & ARG_IO) && c->fn != cmd_zone_append) {
		fprintf(f, "  -B, --start-block=LBA    first block (0)\n"
			   "  -c, --block-count=N      blocks (1-based, unlike nvme-cli's 0-based count)%s\n",
			c->fn == cmd_write ? "; default: the file's size" : "");
		if (c->fn != cmd_write_zeroes)
			fprintf(f, "  -d, --data=FILE          %s (- for std%s)\n",
				c->fn == cmd_read ? "where the data goes" : "data to write",
				c->fn == cmd_read ? "out" : "in");
		if (c->fn != cmd_read)
			fprintf(f, "  -f, --force-unit-access  FUA: on media before completion\n");
		if (c->fn == cmd_write_zeroes)
			fprintf(f, "  -D, --deac               let the target deallocate the blocks\n");
		else
			fprintf(f, "  -g, --gpu=N              move the data through CUDA GPU N's memory\n");
	}
	fprintf(f, "  -h, --help               this text\n");
}

static int parse_u64(const char *opt, const char *s, uint64_t max, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (!*s || *end || errno || s[0] == '-' || x > max) {
		fprintf(stderr, "nvmeof %s: --%s: '%s' is not a number from 0 to %llu\n", sub, opt, tool_shown(s),
			(unsigned long long)max);
		return -1;
	}
	*v = x;
	return 0;
}

/* A port as nvme-cli's -s takes it: a decimal number, 1 to 65535 (the
 * resolver would take 0, or answer "Servname not supported" for a name). */
static int parse_port(const char *s)
{
	uint64_t v = 0;
	for (const char *p = s; *p && v <= 65535; p++)
		v = *p >= '0' && *p <= '9' ? v * 10 + (uint64_t)(*p - '0') : 65536;
	if (!*s || !v || v > 65535) {
		fprintf(stderr, "nvmeof %s: --trsvcid: '%s' is not a port number from 1 to 65535\n", sub, tool_shown(s));
		return -1;
	}
	return 0;
}

static bool is_number(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

int main(int argc, char **argv)
{
	/* nvme-cli's `nvme help SUBCOMMAND`: that subcommand's usage */
	if (argc == 3 && !strcmp(argv[1], "help"))
		for (size_t i = 0; i < NCMDS; i++)
			if (!strcmp(argv[2], cmds[i].name)) {
				sub = cmds[i].name;
				cmd_usage(stdout, &cmds[i]);
				return 0;
			}
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	/* nvme-cli's `nvme --version` and `nvme version` */
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version")) {
		/* the second line as nvme-cli's libnvme line: what the build chose */
		printf("nvmeof version %s\ncrc32c: %s\n", nvmeof_version(), crc32c_impl());
		return 0;
	}
	if (!strcmp(argv[1], "io-passthru") || !strcmp(argv[1], "admin-passthru"))
		return tool_passthru(argc, argv);
	if (!strcmp(argv[1], "failover-check"))
		return tool_failover_check(argc, argv);
	if (!strcmp(argv[1], "perf"))
		return tool_perf(argc, argv);
	if (!strcmp(argv[1], "gen-tls-key"))
		return tool_gen_tls_key(argc, argv);
	if (!strcmp(argv[1], "check-tls-key"))
		return tool_check_tls_key(argc, argv);
	const struct cmd *c = NULL;
	for (size_t i = 0; i < NCMDS; i++)
		if (!strcmp(argv[1], cmds[i].name))
			c = &cmds[i];
	if (!c) {
		/* nvme-cli's: this tool keeps no connection between commands */
		const char *name = argv[1];
		fprintf(stderr, "nvmeof: unknown subcommand '%s'%s\n", tool_shown(argv[1]),
			strcmp(name, "connect") && strcmp(name, "list") ? "" :
			": each subcommand connects and disconnects by itself (-a ADDR -n NQN), no connection "
			"stays; list-ns lists a subsystem's namespaces");
		usage(stderr);
		return 2;
	}
	sub = c->name;
	static const struct option lo[] = {
		{"traddr", required_argument, 0, 'a'}, {"trsvcid", required_argument, 0, 's'},
		{"src", required_argument, 0, 'w'}, {"host-traddr", required_argument, 0, 'w'},
		{"hostnqn", required_argument, 0, 'q'}, {"hostid", required_argument, 0, 'I'},
		{"nqn", required_argument, 0, 'n'}, {"timeout", required_argument, 0, OPT_TIMEOUT},
		{"transport", required_argument, 0, 't'},
		{"output-format", required_argument, 0, 'o'}, {"namespace-id", required_argument, 0, 'N'},
		{"log-entries", required_argument, 0, 'e'}, {"log-id", required_argument, 0, 'i'},
		{"log-len", required_argument, 0, 'l'}, {"lpo", required_argument, 0, 'L'},
		{"lsp", required_argument, 0, OPT_LSP}, {"rae", no_argument, 0, 'r'},
		{"raw-binary", no_argument, 0, 'b'}, {"start-block", required_argument, 0, 'B'},
		{"block-count", required_argument, 0, 'c'}, {"data", required_argument, 0, 'd'},
		{"force-unit-access", no_argument, 0, 'f'}, {"deac", no_argument, 0, 'D'},
		{"gpu", required_argument, 0, 'g'}, {"help", no_argument, 0, 'h'},
		/* in-band authentication, with nvme-cli's letters (secret.c) */
		{"dhchap-secret", required_argument, 0, 'S'}, {"dhchap-ctrl-secret", required_argument, 0, 'C'},
		{"dhchap-secret-file", required_argument, 0, OPT_DHCHAP_FILE},
		{"dhchap-ctrl-secret-file", required_argument, 0, OPT_DHCHAP_CTRL_FILE},
		{"dhchap-hashes", required_argument, 0, OPT_DHCHAP_HASHES},
		{"dhchap-dhgroups", required_argument, 0, OPT_DHCHAP_DHGROUPS},
		{"allow-unauthenticated-ctrl", no_argument, 0, OPT_ALLOW_UNAUTH},
		{"sysfs", required_argument, 0, OPT_SYSFS},
		{"hdr-digest", no_argument, 0, OPT_HDGST}, {"data-digest", no_argument, 0, 'G'},
		{"tcp-priority", required_argument, 0, OPT_TCP_PRIORITY},
		{"tcp-tos", required_argument, 0, OPT_TCP_TOS},
		{"tcp-busy-poll", required_argument, 0, OPT_TCP_BUSY_POLL},
		{"tcp-zerocopy", required_argument, 0, OPT_TCP_ZEROCOPY},
		{"disable-sqflow", no_argument, 0, OPT_DISABLE_SQFLOW},
		{"tls", no_argument, 0, OPT_TLS}, {"tls-key", required_argument, 0, OPT_TLS_KEY},
		{"tls-key-file", required_argument, 0, OPT_TLS_KEY_FILE}, {"keyring", required_argument, 0, OPT_KEYRING},
		{"tls-identity", required_argument, 0, OPT_TLS_IDENTITY}, {"tls-compat", no_argument, 0, OPT_TLS_COMPAT},
		/* nvme-cli's, refused with how this tool differs */
		/* zoned namespaces, with the zns plugin's long names (its letters
		 * are this tool's connection options) */
		{"csi", required_argument, 0, OPT_CSI}, {"start-lba", required_argument, 0, OPT_START_LBA},
		{"descs", required_argument, 0, OPT_DESCS}, {"state", required_argument, 0, OPT_STATE},
		{"partial", no_argument, 0, OPT_PARTIAL}, {"zsa", required_argument, 0, OPT_ZSA},
		{"select-all", no_argument, 0, OPT_SELECT_ALL}, {"zslba", required_argument, 0, OPT_ZSLBA},
		{"human-readable", no_argument, 0, 'H'}, {"data-size", required_argument, 0, 'z'},
		{0, 0, 0, 0},
	};
	struct args a = {.nsid = 1, .gpu = -1, .tcp_priority = -1, .tcp_tos = -1};
	uint64_t v;
	int ch;
	bool nsid_set = false;
	optind = 2;
	opterr = 0;
	int li = -1;
	/* -g: nvme-cli's header digest, but --gpu=N where the data moves */
	/* write-zeroes moves no data: its -g is nvme-cli's, the header digest */
	bool gpu = c->what & ARG_IO && c->fn != cmd_write_zeroes;
	const char *shorts = gpu ? ":a:s:w:q:I:n:t:o:N:e:i:l:L:S:C:rbB:c:d:fDg:GhHz:"
					      : ":a:s:w:q:I:n:t:o:N:e:i:l:L:S:C:rbB:c:d:fDgGhHz:";
	while ((ch = getopt_long(argc, argv, shorts, lo, &li)) != -1) {
		/* the option by its name, never its value (which may be a secret) */
		char optbuf[48];
		const char *opt = tool_optlabel(lo, &li, ch, argv, optbuf, sizeof(optbuf));
		/* an option this subcommand does not take is an error, not ignored */
		unsigned need = 0;
		switch (ch) {
		case 'o': need = ARG_OUT; break;
		case 'N': need = ARG_NSID; break;
		case 'e': need = ARG_ENTRIES; break;
		case 'i': case 'l': case 'L': case OPT_LSP: case 'r': case 'b': need = ARG_LOG; break;
		case 'B': case 'c': case 'd': case 'f': case 'D': case 'z': need = ARG_IO; break;
		case OPT_CSI: need = ARG_CSI; break;
		case OPT_START_LBA: case OPT_DESCS: case OPT_STATE: case OPT_PARTIAL: case OPT_ZSA: case OPT_SELECT_ALL:
		case OPT_ZSLBA: need = ARG_ZONE; break;
		}
		/* each zone subcommand takes only its own of them */
		bool mine = c->fn == cmd_report_zones ? ch == OPT_START_LBA || ch == OPT_DESCS || ch == OPT_STATE ||
								ch == OPT_PARTIAL
			    : c->fn == cmd_zone_mgmt_send ? ch == OPT_START_LBA || ch == OPT_ZSA || ch == OPT_SELECT_ALL
							  : ch == OPT_ZSLBA;
		if (need == ARG_ZONE && c->what & ARG_ZONE && !mine)
			need = ARG_LOCAL;
		if (c->fn == cmd_zone_append && (ch == 'D' || ch == 'g' || ch == 'z'))
			need = ARG_LOCAL;
		/* a subcommand without a target takes none of a target's options */
		if (c->what & ARG_LOCAL && ch != 'o' && ch != 'h' && ch != OPT_SYSFS && ch != ':' && ch != '?')
			need = ARG_IO;
		else if (ch == OPT_SYSFS && !(c->what & ARG_LOCAL))
			need = ARG_LOCAL;
		if (need && !(c->what & need)) {
			fprintf(stderr, "nvmeof %s: option %s is not one of this subcommand's (see --help)\n",
				c->name, opt);
			return 2;
		}
		switch (ch) {
		case 'a': a.traddr = optarg; break;
		case 's':
			if (parse_port(optarg))
				return 2;
			a.trsvcid = optarg;
			break;
		case 'w': a.src = optarg; break;
		case 'q': a.hostnqn = optarg; break;
		case 'S': tool_secret_arg(&a, SECRET_HOST, optarg); break;
		case 'C': tool_secret_arg(&a, SECRET_CTRL, optarg); break;
		case OPT_TLS: a.tls = true; break;
		case OPT_KEYRING: a.tls_keyring = optarg; break;
		case OPT_TLS_COMPAT: a.tls_compat = true; break;
		case OPT_TLS_IDENTITY:
			if (strcmp(optarg, "0") && strcmp(optarg, "1")) {
				fprintf(stderr, "nvmeof %s: --tls-identity: '%s' is not 0 or 1\n", c->name, tool_shown(optarg));
				return 2;
			}
			a.tls_identity = (uint8_t)(optarg[0] - '0');
			break;
		case OPT_TLS_KEY: tool_secret_arg(&a, SECRET_TLS, optarg); break;
		case OPT_TLS_KEY_FILE:
			if (tool_secret_file(&a, SECRET_TLS, optarg))
				return 2;
			break;
		case OPT_DHCHAP_FILE:
		case OPT_DHCHAP_CTRL_FILE:
			if (tool_secret_file(&a, ch == OPT_DHCHAP_FILE ? SECRET_HOST : SECRET_CTRL, optarg))
				return 2;
			break;
		case OPT_DHCHAP_HASHES: a.dhchap_hashes = optarg; break;
		case OPT_DHCHAP_DHGROUPS: a.dhchap_dhgroups = optarg; break;
		case OPT_ALLOW_UNAUTH: a.allow_unauth_ctrl = true; break;
		case OPT_TCP_PRIORITY:
		case OPT_TCP_TOS:
			if (parse_u64(ch == OPT_TCP_TOS ? "tcp-tos" : "tcp-priority", optarg, ch == OPT_TCP_TOS ? 255 : 15, &v))
				return 2;
			*(ch == OPT_TCP_TOS ? &a.tcp_tos : &a.tcp_priority) = (int)v;
			break;
		case OPT_TCP_BUSY_POLL:
			if (parse_u64("tcp-busy-poll", optarg, 1000000, &v))
				return 2;
			a.tcp_busy_poll_us = (uint32_t)v;
			break;
		case OPT_TCP_ZEROCOPY:
			if (parse_u64("tcp-zerocopy", optarg, 1u << 30, &v))
				return 2;
			a.tcp_zerocopy = (uint32_t)v;
			break;
		case 'I': a.hostid = optarg; break;
		case 'n':
			/* -n is the NQN as in `nvme connect`, and the namespace as in
			 * `nvme id-ns -n 1`: a number can only be the latter */
			if ((c->what & ARG_NSID) && is_number(optarg)) {
				if (parse_u64("namespace-id", optarg, 0xffffffffu, &v))
					return 2;
				a.nsid = (uint32_t)v;
				nsid_set = true;
			} else if (is_number(optarg)) {
				fprintf(stderr, "nvmeof %s: -n %s: a number is a namespace ID, and %s takes none: -n is the %s "
					"NQN (NQNs are never numbers)\n", sub, optarg, sub,
					c->fn == cmd_discover ? "discovery" : "subsystem");
				return 2;
			} else {
				a.nqn = optarg;
			}
			break;
		case 't':
			/* -t is nvme-cli's transport with -a (discover, connect)
			 * and its timeout in ms elsewhere: a number can only be
			 * the latter */
			if (!is_number(optarg)) {
				if (!strcasecmp(optarg, "rdma") || !strcasecmp(optarg, "tcp")) {
					a.trtype = optarg;
					break;
				}
				fprintf(stderr, "nvmeof %s: --transport: '%s' is not one this tool speaks: rdma or tcp "
					"(a number for -t is the timeout in ms)\n", sub, tool_shown(optarg));
				return 2;
			}
			/* fall through */
		case OPT_TIMEOUT:
			if (parse_u64("timeout", optarg, 3600000, &v) || !v) {
				if (!v)
					fprintf(stderr, "nvmeof %s: --timeout must be at least 1 ms\n", sub);
				return 2;
			}
			a.timeout_ms = (uint32_t)v;
			break;
		case 'o':
			if (!strcmp(optarg, "json"))
				a.json = true;
			else if (!strcmp(optarg, "fio") && !strcmp(sub, "discover"))
				a.fio = true; /* each subsystem as an fio filename */
			else if (strcmp(optarg, "normal")) {
				fprintf(stderr, "nvmeof %s: --output-format: '%s' is not normal or json%s\n", sub,
					tool_shown(optarg), strcmp(sub, "discover") ? "" : " or fio");
				return 2;
			}
			break;
		case 'N':
			if (parse_u64("namespace-id", optarg, 0xffffffffu, &v))
				return 2;
			a.nsid = (uint32_t)v;
			nsid_set = true;
			break;
		case 'e':
			if (parse_u64("log-entries", optarg, 4096, &v) || !v) {
				if (!v)
					fprintf(stderr, "nvmeof %s: --log-entries must be at least 1\n", sub);
				return 2;
			}
			a.entries = (uint32_t)v;
			break;
		case 'i':
			if (parse_u64("log-id", optarg, 255, &v))
				return 2;
			a.lid = (uint8_t)v;
			a.lid_set = true;
			break;
		case 'l':
			if (parse_u64("log-len", optarg, 1u << 30, &v))
				return 2;
			a.log_len = (uint32_t)v;
			break;
		case 'L':
			if (parse_u64("lpo", optarg, UINT64_MAX, &v))
				return 2;
			a.lpo = v;
			break;
		case OPT_LSP:
			if (parse_u64("lsp", optarg, 127, &v))
				return 2;
			a.lsp = (uint8_t)v;
			break;
		case 'r': a.rae = true; break;
		case 'b': a.raw = true; break;
		case 'B':
			if (parse_u64("start-block", optarg, UINT64_MAX, &v))
				return 2;
			a.slba = v;
			break;
		case 'c':
			if (parse_u64("block-count", optarg, 0xffffffffu, &v) || !v) {
				if (!v)
					fprintf(stderr, "nvmeof %s: --block-count must be at least 1 (it counts from 1, "
						"unlike nvme-cli's -c: -c 1 reads one block)\n", sub);
				return 2;
			}
			a.nlb = (uint32_t)v;
			break;
		case 'd': a.data = optarg; break;
		case OPT_CSI:
			if (parse_u64("csi", optarg, 255, &v))
				return 2;
			if (v != 0 && v != 2) {
				fprintf(stderr, "nvmeof %s: --csi %llu: 0 (NVM) or 2 (Zoned Namespace)\n", sub,
					(unsigned long long)v);
				return 2;
			}
			a.csi = (uint8_t)v;
			break;
		case OPT_START_LBA:
		case OPT_ZSLBA:
			if (parse_u64(ch == OPT_ZSLBA ? "zslba" : "start-lba", optarg, UINT64_MAX, &v))
				return 2;
			a.slba = v;
			break;
		case OPT_DESCS:
			if (parse_u64("descs", optarg, 1u << 20, &v) || !v) {
				if (!v)
					fprintf(stderr, "nvmeof %s: --descs must be at least 1\n", sub);
				return 2;
			}
			a.descs = (uint32_t)v;
			break;
		case OPT_STATE:
			if (parse_u64("state", optarg, 7, &v))
				return 2;
			a.state = (uint8_t)v;
			break;
		case OPT_PARTIAL: a.partial = true; break;
		case OPT_SELECT_ALL: a.select_all = true; break;
		case OPT_ZSA: {
			static const char *const zsa[] = {NULL, "close", "finish", "open", "reset", "offline"};
			for (uint8_t i = 1; i < 6; i++)
				if (!strcasecmp(optarg, zsa[i]) || (optarg[0] == '0' + i && !optarg[1]))
					a.zsa = i;
			if (!a.zsa) {
				fprintf(stderr, "nvmeof %s: --zsa: '%s' is none of close, finish, open, reset, offline\n",
					sub, tool_shown(optarg));
				return 2;
			}
			break;
		}
		case 'f': a.fua = true; break;
		case 'D': a.deac = true; break;
		case 'g':
			if (!gpu && ch == 'g' && opt[1] == '-') {
				fprintf(stderr, "nvmeof %s: option --gpu is not one of this subcommand's (see --help)\n", sub);
				return 2;
			}
			if (!gpu) {
				a.hdgst = true;
				break;
			}
			if (parse_u64("gpu", optarg, 64, &v))
				return 2;
			a.gpu = (int)v;
			break;
		case OPT_HDGST: a.hdgst = true; break;
		case OPT_DISABLE_SQFLOW: a.disable_sqflow = true; break;
		case 'G': a.ddgst = true; break;
		case OPT_SYSFS: a.sysfs = optarg; break;
		case 'H':
			fprintf(stderr, "nvmeof %s: -H (nvme-cli's human-readable decoding) is not here: the normal "
				"output is nvme-cli's plain one, and -o json has every field\n", sub);
			return 2;
		case 'z':
			fprintf(stderr, "nvmeof %s: -z/--data-size is nvme-cli's; here the size is --block-count (-c N "
				"blocks, from 1) of the namespace's block size%s\n", sub,
				c->fn == cmd_write ? ", by default the file's size" : "");
			return 2;
		case 'h':
			cmd_usage(stdout, c);
			return 0;
		case ':':
			if (optopt == 'g')
				fprintf(stderr, "nvmeof %s: -g is --gpu=N here; nvme-cli's header digest is --hdr-digest\n",
					c->name);
			else
				fprintf(stderr, "nvmeof %s: option %s needs a value\n", c->name, opt);
			return 2;
		default:
			fprintf(stderr, "nvmeof %s: unknown option %s (see --help)\n", c->name, opt);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nvmeof %s: unexpected argument '%s'\n", c->name, tool_shown(argv[optind]));
		return 2;
	}
	if (tool_secret_check())
		return 2;
	if (c->what & ARG_LOCAL) {
		a.name = c->name;
		return c->fn(&a) ? 1 : 0;
	}
	if (!a.traddr) {
		fprintf(stderr, "nvmeof %s: the target address is missing (-a ADDR)\n", c->name);
		return 2;
	}
	if (c->fn != cmd_discover && !a.nqn) {
		fprintf(stderr, "nvmeof %s: the subsystem NQN is missing (-n NQN)\n", c->name);
		return 2;
	}
	if ((c->what & ARG_NSID) && !nsid_set && c->fn == cmd_smart_log)
		a.nsid = 0;
	if ((c->what & ARG_LOG) && (!a.lid_set || !a.log_len)) {
		fprintf(stderr, "nvmeof get-log: --log-id and --log-len are required\n");
		return 2;
	}
	if (c->fn == cmd_get_log && !nsid_set)
		a.nsid = 0;
	if ((c->what & ARG_NSID) && !a.nsid && c->fn != cmd_smart_log && c->fn != cmd_get_log) {
		fprintf(stderr, "nvmeof %s: namespace ID 0 is not a namespace\n", c->name);
		return 2;
	}
	a.name = c->name;
	return c->fn(&a) ? 1 : 0;
}
