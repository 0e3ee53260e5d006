/* The engine's NVMe/TCP socket options (tcp_priority=, tcp_tos=,
 * tcp_busy_poll=, tcp_zerocopy=) and disable_sqflow=: their entries in the option table and what they set in
 * the library's options (docs/engine.md, "NVMe/TCP sockets"). */
#ifndef NVMEOF_ENGINE_TCP_OPTS_H
#define NVMEOF_ENGINE_TCP_OPTS_H

#include <stddef.h>

struct eng_opts;
struct nvmeof_ctrl_opts;

int tcp_opt_priority(void *data, const char *v);
int tcp_opt_tos(void *data, const char *v);
int tcp_opt_busy_poll(void *data, const char *v);
int tcp_opt_zerocopy(void *data, const char *v);
/* The socket options into the library's (which refuses them over RDMA). */
void tcp_opts_cfg(struct nvmeof_ctrl_opts *o, const struct eng_opts *eo);
/* A file whose paths mix RDMA and TCP: the job's NVMe/TCP options (socket
 * options, digests) are its TCP paths' only, an RDMA path of it (trtype)
 * keeps the library's defaults. A file all over RDMA keeps them, for the
 * library to refuse by name. tcp_opts_job keeps the job's in k and applies
 * them to k's own (first) path; tcp_opts_path to another path's options. */
struct conn_cfg;
void tcp_opts_job(struct conn_cfg *k);
void tcp_opts_path(struct nvmeof_ctrl_opts *o, const struct conn_cfg *k, int trtype);

#define TCP_SOCKET_OPTIONS                                                                                      \
	{.name = "tcp_priority", .lname = "NVMe/TCP socket priority", .type = FIO_OPT_STR,                     \
	 .cb = (void *)tcp_opt_priority, .def = "-1",                                                          \
	 .help = "NVMe/TCP: SO_PRIORITY of every queue's socket, 0 to 15 (above 6 needs CAP_NET_ADMIN). "     \
		 "-1: the system's",                                                                            \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},                                            \
	{.name = "tcp_tos", .lname = "NVMe/TCP type of service", .type = FIO_OPT_STR, .cb = (void *)tcp_opt_tos, \
	 .def = "-1",                                                                                          \
	 .help = "NVMe/TCP: IP_TOS (IPv6: IPV6_TCLASS) of every queue's socket, 0 to 255, the DSCP in its "    \
		 "upper six bits. -1: the system's",                                                            \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},                                            \
	{.name = "tcp_busy_poll", .lname = "NVMe/TCP socket busy polling", .type = FIO_OPT_STR,                \
	 .cb = (void *)tcp_opt_busy_poll, .def = "0",                                                          \
	 .help = "NVMe/TCP: SO_BUSY_POLL; reads never block, so any value above 0 polls the NIC's "           \
		 "receive queue once per read (above net.core.busy_read needs CAP_NET_ADMIN). 0: the system's", \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},                                            \
	{.name = "tcp_zerocopy", .lname = "NVMe/TCP zerocopy writes", .type = FIO_OPT_STR,                     \
	 .cb = (void *)tcp_opt_zerocopy, .def = "0",                                                           \
	 .help = "NVMe/TCP: a write's H2CData payloads of at least this many bytes (e.g. 64k) are sent with "  \
		 "MSG_ZEROCOPY; the end-of-job line says how many the kernel copied anyway. 0: all copied",    \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},                                            \
	{.name = "disable_sqflow", .lname = "NVMe/TCP SQ flow control disabled", .type = FIO_OPT_BOOL,         \
	 .off1 = offsetof(struct eng_opts, disable_sqflow), .def = "0",                                        \
	 .help = "NVMe/TCP: every Connect asks for SQ flow control off (nvme-cli's --disable-sqflow), so a "   \
		 "read completes with its data PDU alone, no response capsule; refused over RDMA",             \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},                                            \
	{.name = "tls", .lname = "NVMe/TCP over TLS", .type = FIO_OPT_BOOL,                                    \
	 .off1 = offsetof(struct eng_opts, tls), .def = "0",                                                   \
	 .help = "NVMe/TCP: TLS 1.3 with a pre-shared key on every queue (nvme-cli's --tls); needs tls_key "   \
		 "or tls_key_file, which imply it",                                                            \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},                                            \
	{.name = "tls_key", .lname = "NVMe/TCP TLS PSK", .type = FIO_OPT_STR_STORE,                            \
	 .off1 = offsetof(struct eng_opts, tls_key),                                                           \
	 .help = "NVMe/TCP: the TLS PSK, NVMeTLSkey-1:01:<base64>: (or 02) as nvme gen-tls-key makes it. fio "  \
		 "lists job options in its JSON output: prefer tls_key_file",                                  \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},                                            \
	{.name = "tls_key_file", .lname = "NVMe/TCP TLS PSK file", .type = FIO_OPT_STR_STORE,                  \
	 .off1 = offsetof(struct eng_opts, tls_key_file),                                                      \
	 .help = "A file holding tls_key (its first line), which keeps the key out of job files and ps",       \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},                                            \
	{.name = "keyring", .lname = "NVMe/TCP TLS keyring", .type = FIO_OPT_STR_STORE,                        \
	 .off1 = offsetof(struct eng_opts, keyring),                                                           \
	 .help = "NVMe/TCP: the TLS PSK from this kernel keyring (.nvme, where nvme gen-tls-key --insert puts " \
		 "it), by its PSK identity, when no tls_key is given; implies tls",                            \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},                                            \
	{.name = "tls_identity", .lname = "NVMe/TCP TLS PSK identity version", .type = FIO_OPT_INT,            \
	 .off1 = offsetof(struct eng_opts, tls_identity), .def = "0", .minval = 0, .maxval = 1,                \
	 .help = "NVMe/TCP: the PSK identity offered: 0 NVMe0R.. (what every target knows), 1 NVMe1R.. with "   \
		 "the PSK's digest",                                                                           \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID},                                            \
	{.name = "tls_key_compat", .lname = "NVMe/TCP TLS PSK as nvme-cli <= 2.14", .type = FIO_OPT_BOOL,      \
	 .off1 = offsetof(struct eng_opts, tls_key_compat), .def = "0",                                        \
	 .help = "NVMe/TCP: derive the TLS PSK from tls_key as nvme-cli up to 2.14 (libnvme 1.14) did, "        \
		 "nvme-cli's --compat",                                                                        \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID}

/* SPDK's fio plugin's digest_enable=NONE|HEADER|DATA|BOTH (fio matches case) */
#define DIGEST_VALUE(up, low, v, h) {.ival = up, .oval = v, .help = h}, {.ival = low, .oval = v, .help = h}
#define TCP_DIGEST_ENABLE_OPTION                                                                              \
	{.name = "digest_enable", .lname = "digests, as SPDK's plugin", .type = FIO_OPT_STR,                   \
	 .off1 = offsetof(struct eng_opts, digest_enable),                                                     \
	 .help = "NVMe/TCP digests as SPDK's fio plugin names them (hdr_digest= and data_digest= win over it)", \
	 .posval = {DIGEST_VALUE("NONE", "none", 1, "neither"), DIGEST_VALUE("HEADER", "header", 2, "hdr_digest=1"), \
		    DIGEST_VALUE("DATA", "data", 3, "data_digest=1"), DIGEST_VALUE("BOTH", "both", 4, "both")},   \
	 .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID}

#endif
