/* The nvmeof tool's subcommands. Each returns 0, or non-zero after printing
 * "nvmeof SUBCOMMAND: <the library's message>" to stderr. */
#ifndef NVMEOF_TOOL_CMDS_H
#define NVMEOF_TOOL_CMDS_H

#include <stdbool.h>
#include <stdint.h>

enum { ARG_OUT = 1, ARG_NSID = 2, ARG_ENTRIES = 4, ARG_LOG = 8, ARG_IO = 16, ARG_LOCAL = 32 /* no target */,
       ARG_ZONE = 64 /* a zone subcommand's options */, ARG_CSI = 128 };

struct args {
	const char *name;
	const char *traddr, *trsvcid, *src, *hostnqn, *hostid, *nqn, *data;
	const char *trtype; /* NULL: rdma */
	const char *dhchap_secret, *dhchap_ctrl_secret, *dhchap_hashes, *dhchap_dhgroups;
	bool allow_unauth_ctrl;
	bool hdgst, ddgst; /* NVMe/TCP's digests */
	bool tls;          /* NVMe/TCP over TLS (--tls; --tls-key implies it) */
	const char *tls_key;
	const char *tls_keyring; /* --keyring */
	uint8_t tls_identity;    /* --tls-identity */
	bool tls_compat;         /* --tls-compat */
	bool disable_sqflow; /* NVMe/TCP: SQ flow control off */
	int tcp_priority, tcp_tos;  /* -1: the system's */
	uint32_t tcp_busy_poll_us;
	uint32_t tcp_zerocopy;      /* bytes; 0: none */
	const char *sysfs; /* list-rdma: the sysfs root (/sys) */
	uint32_t timeout_ms; /* trsvcid NULL, timeout_ms 0: not given, the library's default */
	uint32_t nsid, entries, log_len, nlb;
	uint64_t lpo, slba;
	uint8_t lid, lsp;
	bool lid_set, rae, raw, json, fua, deac;
	bool fio; /* discover -o fio */
	int gpu;
	/* zoned namespaces (zns.c): nvme-cli's zns plugin's options */
	uint8_t csi;         /* id-ns --csi */
	uint8_t zsa;         /* zone-mgmt-send --zsa; 0: not given */
	uint8_t state;       /* report-zones --state (reporting option, 0: all) */
	bool select_all, partial;
	uint32_t descs;      /* report-zones --descs; 0: every zone */
};

struct nvmeof_ctrl_opts;
struct nvmeof_ctrl;
/* The controller options of the command line. */
void tool_ctrl_opts(const struct args *a, struct nvmeof_ctrl_opts *o);

int cmd_discover(struct args *a);
int cmd_id_ctrl(struct args *a);
int cmd_id_ns(struct args *a);
int cmd_list_ns(struct args *a);
int cmd_smart_log(struct args *a);
int cmd_error_log(struct args *a);
int cmd_ana_log(struct args *a);
int cmd_get_log(struct args *a);
int cmd_read(struct args *a);
int cmd_write(struct args *a);
int cmd_write_zeroes(struct args *a);
int cmd_flush(struct args *a);
int cmd_list_rdma(struct args *a);
int cmd_report_zones(struct args *a);
int cmd_zone_mgmt_send(struct args *a);
int cmd_zone_append(struct args *a);
/* id-ns --csi 2: the ZNS Identify data (id_ns: the CNS 00h data) */
int tool_zns_id_ns(const struct args *a, struct nvmeof_ctrl *c, const uint8_t *id_ns);
/* io-passthru, admin-passthru (passthru.c): its own options; argv[1] names which */
int tool_passthru(int argc, char **argv);
/* failover-check (fcheck.c): its own options, paths as repeated -a */
int tool_failover_check(int argc, char **argv);
/* perf (perf.c): spdk_nvme_perf's options where they mean the same */
int tool_perf(int argc, char **argv);

#endif
