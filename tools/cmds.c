/* The subcommands: connect, ask, print as nvme-cli would, close. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "secret.h"
#include "nvmeof.h"
#include "out.h"
#include "protocol.h"

static int fail(const struct args *a, const char *what)
{
	fprintf(stderr, "nvmeof %s: %s%s%s\n", a->name, what ? what : "", what ? ": " : "", nvmeof_errmsg());
	return 1;
}

/* The library's defaults, overridden only where the user gave a value, and
 * where the tool needs less: one I/O queue of 32 commands carries it all. */
void tool_ctrl_opts(const struct args *a, struct nvmeof_ctrl_opts *o)
{
	nvmeof_ctrl_opts_init(o);
	o->traddr = a->traddr;
	o->trtype = a->trtype;
	if (a->trsvcid)
		o->trsvcid = a->trsvcid;
	o->src_addr = a->src;
	o->hostnqn = a->hostnqn;
	o->dhchap_secret = a->dhchap_secret;
	o->dhchap_ctrl_secret = a->dhchap_ctrl_secret;
	if (tool_secret_wiped()) /* refused by the library: never a connect without them */
		o->dhchap_secret = o->dhchap_ctrl_secret = "(wiped)";
	o->dhchap_hashes = a->dhchap_hashes;
	o->dhchap_dhgroups = a->dhchap_dhgroups;
	o->allow_unauthenticated_ctrl = a->allow_unauth_ctrl;
	o->tls = a->tls || a->tls_key || a->tls_keyring;
	o->tls_key = a->tls_key;
	o->tls_keyring = a->tls_keyring;
	o->tls_identity = a->tls_identity;
	o->tls_compat = a->tls_compat;
	if (tool_secret_wiped() && a->tls_key)
		o->tls_key = "(wiped)";
	o->hdr_digest = a->hdgst;
	o->data_digest = a->ddgst;
	o->tcp_priority = a->tcp_priority;
	o->tcp_tos = a->tcp_tos;
	o->tcp_busy_poll_us = a->tcp_busy_poll_us;
	o->tcp_zerocopy = a->tcp_zerocopy;
	o->disable_sqflow = a->disable_sqflow;
	o->hostid = a->hostid;
	o->subnqn = a->nqn;
	if (a->timeout_ms)
		o->cmd_timeout_ms = a->timeout_ms;
	o->num_io_queues = 1;
	o->queue_depth = 32;
}

static struct nvmeof_ctrl *connect(const struct args *a)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	tool_ctrl_opts(a, &o);
	int rc = nvmeof_ctrl_connect(&o, &c);
	tool_secret_wipe();
	if (rc) {
		fail(a, NULL);
		return NULL;
	}
	return c;
}

static int done(const struct args *a, struct nvmeof_ctrl *c, int rc)
{
	if (c && nvmeof_ctrl_close(c) && !rc)
		rc = fail(a, NULL);
	return rc;
}

/* ---- discover ---- */

/* s with every ':' written '\:', as fio splits filenames at ':' */
static void put_escaped(const char *s)
{
	for (; *s; s++)
		printf("%s%c", *s == ':' ? "\\" : "", *s);
}

/* discover -o fio: one fio filename per NVM subsystem entry, ready to paste
 * into --filename='...' or a job file (namespace 1: list-ns lists the others) */
static void print_fio_filenames(const struct nvmeof_disc_log *l)
{
	for (uint32_t i = 0; i < l->nentries; i++) {
		const struct nvmeof_disc_entry *e = &l->entries[i];
		if (e->subtype != 2 || (e->trtype != 1 && e->trtype != 3))
			continue; /* referrals and discovery controllers; transports the engine lacks */
		printf("trtype=%s adrfam=%s traddr=", e->trtype == 3 ? "TCP" : "RDMA", e->adrfam == 2 ? "IPv6" : "IPv4");
		put_escaped(e->traddr);
		printf(" trsvcid=%s subnqn=", e->trsvcid);
		put_escaped(e->subnqn);
		printf(" ns=1\n");
	}
}

int cmd_discover(struct args *a)
{
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *c = NULL;
	struct nvmeof_disc_log *l = NULL;
	tool_ctrl_opts(a, &o);
	int rc = nvmeof_discovery_connect(&o, &c);
	tool_secret_wipe();
	if (rc)
		return fail(a, NULL);
	if (nvmeof_discover(c, &l))
		return done(a, c, fail(a, NULL));
	if (a->fio) {
		print_fio_filenames(l);
	} else if (!a->json) {
		printf("\nDiscovery Log Number of Records %llu, Generation counter %llu\n",
		       (unsigned long long)l->numrec, (unsigned long long)l->genctr);
		for (uint32_t i = 0; i < l->nentries; i++) {
			const struct nvmeof_disc_entry *e = &l->entries[i];
			printf("=====Discovery Log Entry %u======\n", i);
			printf("trtype:  %s\n", nvmeof_trtype_str(e->trtype));
			printf("adrfam:  %s\n", nvmeof_adrfam_str(e->adrfam));
			printf("subtype: %s\n", nvmeof_subtype_str(e->subtype));
			printf("treq:    %s\n", nvmeof_treq_str(e->treq));
			printf("portid:  %u\n", e->portid);
			printf("trsvcid: %s\n", e->trsvcid);
			printf("subnqn:  %s\n", e->subnqn);
			printf("traddr:  %s\n", e->traddr);
			printf("eflags:  %s\n", nvmeof_eflags_str(e->eflags));
			if (e->trtype == 1) {
				printf("rdma_prtype: %s\n", nvmeof_rdma_prtype_str(e->rdma_prtype));
				printf("rdma_qptype: %s\n", nvmeof_rdma_qptype_str(e->rdma_qptype));
				printf("rdma_cms:    %s\n", nvmeof_rdma_cms_str(e->rdma_cms));
				printf("rdma_pkey: 0x%04x\n", e->rdma_pkey);
			} else if (e->trtype == 3) {
				printf("sectype: %s\n", nvmeof_tcp_sectype_str(e->tcp_sectype));
			}
		}
	} else {
		struct out p;
		out_init(&p, stdout, true, 0);
		out_u64(&p, "genctr", l->genctr);
		out_arr_begin(&p, "records");
		for (uint32_t i = 0; i < l->nentries; i++) {
			const struct nvmeof_disc_entry *e = &l->entries[i];
			out_obj_begin(&p, NULL);
			out_str(&p, "trtype", nvmeof_trtype_str(e->trtype));
			out_str(&p, "adrfam", nvmeof_adrfam_str(e->adrfam));
			out_str(&p, "subtype", nvmeof_subtype_str(e->subtype));
			out_str(&p, "treq", nvmeof_treq_str(e->treq));
			out_u64(&p, "portid", e->portid);
			out_str(&p, "trsvcid", e->trsvcid);
			out_str(&p, "subnqn", e->subnqn);
			out_str(&p, "traddr", e->traddr);
			out_str(&p, "eflags", nvmeof_eflags_str(e->eflags));
			out_u64(&p, "cntlid", e->cntlid);
			out_u64(&p, "asqsz", e->asqsz);
			if (e->trtype == 1) {
				out_str(&p, "rdma_prtype", nvmeof_rdma_prtype_str(e->rdma_prtype));
				out_str(&p, "rdma_qptype", nvmeof_rdma_qptype_str(e->rdma_qptype));
				out_str(&p, "rdma_cms", nvmeof_rdma_cms_str(e->rdma_cms));
				out_u64(&p, "rdma_pkey", e->rdma_pkey);
			} else if (e->trtype == 3) {
				out_str(&p, "sectype", nvmeof_tcp_sectype_str(e->tcp_sectype));
			}
			out_obj_end(&p);
		}
		out_arr_end(&p);
		out_end(&p);
	}
	nvmeof_disc_log_free(l);
	return done(a, c, 0);
}

/* ---- identify ---- */

static void uuidstr(char *dst, const uint8_t *u);

/* a 128-bit little-endian field, as nvme-cli's JSON gives it (a string) */
static void u128_at(struct out *p, const char *name, const uint8_t *at)
{
	const uint64_t v[2] = {get_le64(at), get_le64(at + 8)};
	out_u128_str(p, name, v);
}

/* Identify Controller's power state descriptors, as nvme-cli's "psds" */
static void power_states(struct out *p, const uint8_t *d)
{
	if (!p->json)
		return; /* nvme-cli's own line format for them: not copied */
	out_arr_begin(p, "psds");
	for (unsigned i = 0; i <= d[263] && i < 32; i++) {
		const uint8_t *ps = d + 2048 + 32 * i;
		out_obj_begin(p, NULL);
		out_u64(p, "max_power", get_le16(ps));
		out_u64(p, "flags", ps[3]); /* MXPS bit 0, NOPS bit 1 */
		out_u64(p, "entry_lat", get_le32(ps + 4));
		out_u64(p, "exit_lat", get_le32(ps + 8));
		out_u64(p, "read_tput", ps[12]);
		out_u64(p, "read_lat", ps[13]);
		out_u64(p, "write_tput", ps[14]);
		out_u64(p, "write_lat", ps[15]);
		out_u64(p, "idle_power", get_le16(ps + 16));
		out_u64(p, "idle_scale", ps[18] >> 6);
		out_u64(p, "active_power", get_le16(ps + 20));
		out_u64(p, "active_power_work", ps[22] & 7);
		out_u64(p, "active_scale", ps[22] >> 6);
		out_obj_end(p);
	}
	out_arr_end(p);
}

static void ascii(char *dst, const uint8_t *src, size_t n, bool json)
{
	/* nvme-cli's JSON keeps the field's padding; its normal output too */
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? (char)src[i] : src[i] ? '?' : ' ';
	dst[n] = '\0';
	(void)json;
}

int cmd_id_ctrl(struct args *a)
{
	static uint8_t d[4096];
	char s[260];
	struct out p;
	struct nvmeof_ctrl *c = connect(a);
	if (!c)
		return 1;
	if (nvmeof_identify(c, 0x01, 0, d))
		return done(a, c, fail(a, NULL));
	if (!a->json)
		printf("NVME Identify Controller:\n");
	out_init(&p, stdout, a->json, 9);
	out_hex(&p, "vid", get_le16(d));
	out_hex(&p, "ssvid", get_le16(d + 2));
	ascii(s, d + 4, 20, a->json);
	out_str(&p, "sn", s);
	ascii(s, d + 24, 40, a->json);
	out_str(&p, "mn", s);
	ascii(s, d + 64, 8, a->json);
	out_str(&p, "fr", s);
	out_u64(&p, "rab", d[72]);
	out_u64(&p, "ieee", (uint32_t)d[73] | (uint32_t)d[74] << 8 | (uint32_t)d[75] << 16);
	out_hex(&p, "cmic", d[76]);
	out_u64(&p, "mdts", d[77]);
	out_hex(&p, "cntlid", get_le16(d + 78));
	out_hex(&p, "ver", get_le32(d + 80));
	out_hex(&p, "rtd3r", get_le32(d + 84));
	out_hex(&p, "rtd3e", get_le32(d + 88));
	out_hex(&p, "oaes", get_le32(d + 92));
	out_hex(&p, "ctratt", get_le32(d + 96));
	out_hex(&p, "rrls", get_le16(d + 100));
	out_hex(&p, "cntrltype", d[111]);
	uuidstr(s, d + 112);
	out_str(&p, "fguid", s);
	out_u64(&p, "crdt1", get_le16(d + 128));
	out_u64(&p, "crdt2", get_le16(d + 130));
	out_u64(&p, "crdt3", get_le16(d + 132));
	out_hex(&p, "nvmsr", d[253]);
	out_hex(&p, "vwci", d[254]);
	out_hex(&p, "mec", d[255]);
	out_hex(&p, "oacs", get_le16(d + 256));
	out_u64(&p, "acl", d[258]);
	out_u64(&p, "aerl", d[259]);
	out_hex(&p, "frmw", d[260]);
	out_hex(&p, "lpa", d[261]);
	out_u64(&p, "elpe", d[262]);
	out_u64(&p, "npss", d[263]);
	out_hex(&p, "avscc", d[264]);
	out_hex(&p, "apsta", d[265]);
	out_u64(&p, "wctemp", get_le16(d + 266));
	out_u64(&p, "cctemp", get_le16(d + 268));
	out_u64(&p, "mtfa", get_le16(d + 270));
	out_u64(&p, "hmpre", get_le32(d + 272));
	out_u64(&p, "hmmin", get_le32(d + 276));
	u128_at(&p, "tnvmcap", d + 280);
	u128_at(&p, "unvmcap", d + 296);
	out_u64(&p, "rpmbs", get_le32(d + 312));
	out_u64(&p, "edstt", get_le16(d + 316));
	out_u64(&p, "dsto", d[318]);
	out_u64(&p, "fwug", d[319]);
	out_u64(&p, "kas", get_le16(d + 320));
	out_u64(&p, "hctma", get_le16(d + 322));
	out_u64(&p, "mntmt", get_le16(d + 324));
	out_u64(&p, "mxtmt", get_le16(d + 326));
	out_hex(&p, "sanicap", get_le32(d + 328));
	out_u64(&p, "hmminds", get_le32(d + 332));
	out_u64(&p, "hmmaxd", get_le16(d + 336));
	out_u64(&p, "nsetidmax", get_le16(d + 338));
	out_u64(&p, "endgidmax", get_le16(d + 340));
	out_u64(&p, "anatt", d[342]);
	out_hex(&p, "anacap", d[343]);
	out_u64(&p, "anagrpmax", get_le32(d + 344));
	out_u64(&p, "nanagrpid", get_le32(d + 348));
	out_u64(&p, "pels", get_le32(d + 352));
	out_u64(&p, "domainid", get_le16(d + 356));
	u128_at(&p, "megcap", d + 368);
	out_hex(&p, "sqes", d[512]);
	out_hex(&p, "cqes", d[513]);
	out_u64(&p, "maxcmd", get_le16(d + 514));
	out_u64(&p, "nn", get_le32(d + 516));
	out_hex(&p, "oncs", get_le16(d + 520));
	out_hex(&p, "fuses", get_le16(d + 522));
	out_hex(&p, "fna", d[524]);
	out_hex(&p, "vwc", d[525]);
	out_u64(&p, "awun", get_le16(d + 526));
	out_u64(&p, "awupf", get_le16(d + 528));
	out_hex(&p, "icsvscc", d[530]);
	out_hex(&p, "nwpc", d[531]);
	out_u64(&p, "acwu", get_le16(d + 532));
	out_hex(&p, "ocfs", get_le16(d + 534));
	out_hex(&p, "sgls", get_le32(d + 536));
	out_u64(&p, "mnan", get_le32(d + 540));
	u128_at(&p, "maxdna", d + 544);
	out_u64(&p, "maxcna", get_le32(d + 560));
	ascii(s, d + 768, 256, a->json);
	for (size_t i = strlen(s); i > 0 && s[i - 1] == ' '; i--)
		s[i - 1] = '\0'; /* the NQN is NUL padded: no blanks */
	out_str(&p, "subnqn", s);
	out_u64(&p, "ioccsz", get_le32(d + 1792));
	out_u64(&p, "iorcsz", get_le32(d + 1796));
	out_u64(&p, "icdoff", get_le16(d + 1800));
	out_hex(&p, "fcatt", d[1802]);
	out_u64(&p, "msdbd", d[1803]);
	out_hex(&p, "ofcs", get_le16(d + 1804));
	power_states(&p, d);
	out_end(&p);
	return done(a, c, 0);
}

static void hexstr(char *dst, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(dst + 2 * i, "%02x", b[i]);
}

static void uuidstr(char *dst, const uint8_t *u)
{
	sprintf(dst, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
		u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

int cmd_id_ns(struct args *a)
{
	static uint8_t d[4096];
	char s[64];
	struct out p;
	struct nvmeof_ns_ids ids;
	struct nvmeof_ctrl *c = connect(a);
	if (!c)
		return 1;
	if (nvmeof_identify(c, 0x00, a->nsid, d))
		return done(a, c, fail(a, NULL));
	if (get_le64(d) == 0) {
		fprintf(stderr, "nvmeof id-ns: namespace %u is not active on %s\n", a->nsid, a->nqn);
		return done(a, c, 1);
	}
	if (a->csi == 2)
		return done(a, c, tool_zns_id_ns(a, c, d));
	bool have_ids = nvmeof_ns_ids(c, a->nsid, &ids) == 0;
	if (!a->json)
		printf("NVME Identify Namespace %u:\n", a->nsid);
	out_init(&p, stdout, a->json, 8);
	out_hex(&p, "nsze", get_le64(d));
	out_hex(&p, "ncap", get_le64(d + 8));
	out_hex(&p, "nuse", get_le64(d + 16));
	out_hex(&p, "nsfeat", d[24]);
	out_u64(&p, "nlbaf", d[25]);
	out_hex(&p, "flbas", d[26]);
	out_hex(&p, "mc", d[27]);
	out_hex(&p, "dpc", d[28]);
	out_hex(&p, "dps", d[29]);
	out_hex(&p, "nmic", d[30]);
	out_hex(&p, "rescap", d[31]);
	out_hex(&p, "fpi", d[32]);
	out_hex(&p, "dlfeat", d[33]);
	out_u64(&p, "nawun", get_le16(d + 34));
	out_u64(&p, "nawupf", get_le16(d + 36));
	out_u64(&p, "nacwu", get_le16(d + 38));
	out_u64(&p, "noiob", get_le16(d + 46));
	out_u64(&p, "anagrpid", get_le32(d + 92));
	out_hex(&p, "nsattr", d[99]);
	out_u64(&p, "endgid", get_le16(d + 102));
	hexstr(s, d + 104, 16);
	out_str(&p, "nguid", s);
	hexstr(s, d + 120, 8);
	out_str(&p, "eui64", s);
	/* CNS 03h: the namespace's identifiers as descriptors */
	if (have_ids && ids.has_uuid) {
		uuidstr(s, ids.uuid);
		out_str(&p, "uuid", s);
	}
	if (have_ids && ids.has_nguid && !a->json) {
		hexstr(s, ids.nguid, 16);
		out_str(&p, "desc nguid", s);
	}
	if (have_ids && ids.has_eui64 && !a->json) {
		hexstr(s, ids.eui64, 8);
		out_str(&p, "desc eui64", s);
	}
	out_arr_begin(&p, "lbafs");
	for (unsigned i = 0; i <= d[25] && i < 64; i++) {
		const uint8_t *f = d + 128 + 4 * i;
		if (a->json) {
			out_obj_begin(&p, NULL);
			out_u64(&p, "ms", get_le16(f));
			out_u64(&p, "ds", f[2]);
			out_u64(&p, "rp", f[3] & 3);
			out_obj_end(&p);
		} else {
			printf("lbaf %2u : ms:%-3u lbads:%-2u rp:%#x %s\n", i, get_le16(f), f[2], f[3] & 3,
			       nvme_id_ns_lbaf_index(d) == i ? "(in use)" : "");
		}
	}
	out_arr_end(&p);
	out_end(&p);
	return done(a, c, 0);
}

int cmd_list_ns(struct args *a)
{
	static uint8_t d[4096];
	struct out p;
	struct nvmeof_ctrl *c = connect(a);
	if (!c)
		return 1;
	if (nvmeof_identify(c, 0x02, 0, d))
		return done(a, c, fail(a, NULL));
	out_init(&p, stdout, a->json, 0);
	out_arr_begin(&p, "nsid_list");
	for (uint32_t i = 0; i < 1024 && get_le32(d + 4 * i); i++) {
		if (a->json) {
			out_obj_begin(&p, NULL);
			out_u64(&p, "nsid", get_le32(d + 4 * i));
			out_obj_end(&p);
		} else {
			printf("[%4u]:%#x\n", i, get_le32(d + 4 * i));
		}
	}
	out_arr_end(&p);
	out_end(&p);
	return done(a, c, 0);
}

/* ---- logs ---- */

int cmd_smart_log(struct args *a)
{
	struct nvmeof_smart_log s;
	struct out p;
	struct nvmeof_ctrl *c = connect(a);
	if (!c)
		return 1;
	if (nvmeof_get_log_smart(c, a->nsid, &s))
		return done(a, c, fail(a, NULL));
	if (!a->json)
		printf("Smart Log for NVMe-oF controller %s namespace-id:%x\n", a->nqn,
		       a->nsid ? a->nsid : 0xffffffffu);
	out_init(&p, stdout, a->json, 38);
	out_hex(&p, "critical_warning", s.critical_warning);
	out_u64(&p, "temperature", s.temperature);
	out_u64(&p, "avail_spare", s.avail_spare);
	out_u64(&p, "spare_thresh", s.spare_thresh);
	out_u64(&p, "percent_used", s.percent_used);
	out_u64(&p, "endurance_grp_critical_warning_summary", s.endu_grp_crit_warn_sumry);
	/* nvme-cli's JSON writes the 128-bit counters as strings */
	struct { const char *n; const uint64_t *v; } big[] = {
		{"data_units_read", s.data_units_read}, {"data_units_written", s.data_units_written},
		{"host_read_commands", s.host_reads}, {"host_write_commands", s.host_writes},
		{"controller_busy_time", s.ctrl_busy_time}, {"power_cycles", s.power_cycles},
		{"power_on_hours", s.power_on_hours}, {"unsafe_shutdowns", s.unsafe_shutdowns},
		{"media_errors", s.media_errors}, {"num_err_log_entries", s.num_err_log_entries},
	};
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		if (a->json) {
			out_u128_str(&p, big[i].n, big[i].v);
		} else {
			out_u128(&p, big[i].n, big[i].v);
		}
	}
	out_u64(&p, "warning_temp_time", s.warning_temp_time);
	out_u64(&p, "critical_comp_time", s.critical_comp_time);
	for (int i = 0; i < 8; i++)
		if (s.temp_sensor[i]) {
			char n[32];
			snprintf(n, sizeof(n), "temperature_sensor_%d", i + 1);
			out_u64(&p, n, s.temp_sensor[i]);
		}
	out_end(&p);
	return done(a, c, 0);
}

int cmd_error_log(struct args *a)
{
	struct out p;
	struct nvmeof_ctrl *c = connect(a);
	if (!c)
		return 1;
	uint32_t max = a->entries ? a->entries : (uint32_t)nvmeof_ctrl_info(c)->elpe + 1, n = 0;
	struct nvmeof_error_entry *e = calloc(max, sizeof(*e));
	if (!e) {
		fprintf(stderr, "nvmeof error-log: out of memory\n");
		return done(a, c, 1);
	}
	if (nvmeof_get_log_error(c, e, max, &n)) {
		free(e);
		return done(a, c, fail(a, NULL));
	}
	if (!a->json)
		printf("Error Log Entries for NVMe-oF controller %s\n", a->nqn);
	out_init(&p, stdout, a->json, 21);
	out_arr_begin(&p, "errors");
	for (uint32_t i = 0; i < n; i++) {
		if (!a->json)
			printf(" Entry[%2u]   \n.................\n", i);
		out_obj_begin(&p, NULL);
		out_u64(&p, "error_count", e[i].error_count);
		out_u64(&p, "sqid", e[i].sqid);
		out_u64(&p, "cmdid", e[i].cmdid);
		out_hex(&p, "status_field", e[i].status);
		out_u64(&p, "phase_tag", 0);
		out_hex(&p, "parm_error_location", e[i].parm_error_location);
		out_u64(&p, "lba", e[i].lba);
		out_u64(&p, "nsid", e[i].nsid);
		out_u64(&p, "vs", e[i].vs);
		out_u64(&p, "trtype", e[i].trtype);
		out_u64(&p, "cs", e[i].cs);
		out_hex(&p, "trtype_spec_info", e[i].trtype_spec_info);
		out_obj_end(&p);
		if (!a->json)
			printf(".................\n");
	}
	out_arr_end(&p);
	out_end(&p);
	free(e);
	return done(a, c, 0);
}

int cmd_get_log(struct args *a)
{
	struct nvmeof_ctrl *c = connect(a);
	if (!c)
		return 1;
	uint8_t *buf = calloc(1, a->log_len);
	if (!buf) {
		fprintf(stderr, "nvmeof get-log: out of memory for %u bytes\n", a->log_len);
		return done(a, c, 1);
	}
	struct nvmeof_log_req r = {.lid = a->lid, .lsp = a->lsp, .rae = a->rae, .nsid = a->nsid,
				   .offset = a->lpo};
	int rc = nvmeof_get_log_page(c, &r, buf, a->log_len);
	if (rc) {
		free(buf);
		return done(a, c, fail(a, NULL));
	}
	if (a->raw) {
		rc = fwrite(buf, 1, a->log_len, stdout) != a->log_len;
	} else if (a->json) {
		struct out p;
		out_init(&p, stdout, true, 0);
		out_u64(&p, "log_id", a->lid);
		out_u64(&p, "log_len", a->log_len);
		char *hex = malloc(2 * (size_t)a->log_len + 1);
		if (hex) {
			hexstr(hex, buf, a->log_len);
			out_str(&p, "data", hex);
			free(hex);
		}
		out_end(&p);
	} else {
		printf("Device:%s log-id:%u namespace-id:%#x\n", a->nqn, a->lid, a->nsid ? a->nsid : 0xffffffffu);
		printf("       0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f\n");
		for (uint32_t i = 0; i < a->log_len; i += 16) {
			printf("%04x:", i);
			for (uint32_t j = i; j < i + 16 && j < a->log_len; j++)
				printf(" %02x", buf[j]);
			printf("\n");
		}
	}
	free(buf);
	return done(a, c, rc);
}

/* nvme-cli's ana-log: its field names, its "ANA DESC LIST " key (trailing
 * space included) and nvme_ana_state_to_string's words. */
int cmd_ana_log(struct args *a)
{
	struct out p;
	struct nvmeof_ctrl *c = connect(a);
	if (!c)
		return 1;
	struct nvmeof_ana_caps caps = {.size = sizeof(caps)};
	if (nvmeof_ctrl_ana_caps(c, &caps))
		return done(a, c, fail(a, NULL));
	if (!caps.reporting) {
		fprintf(stderr, "nvmeof %s: the controller does not report ANA (CMIC bit 3 clear)\n", a->name);
		return done(a, c, 1);
	}
	/* header, a descriptor per group, every NSID once: the largest log */
	size_t len = 16 + (size_t)caps.nanagrpid * 32 + (size_t)nvmeof_ctrl_info(c)->nn * 4;
	if (len > (1u << 20))
		len = 1u << 20;
	uint8_t *log = calloc(1, len);
	if (!log) {
		fprintf(stderr, "nvmeof %s: out of memory\n", a->name);
		return done(a, c, 1);
	}
	if (nvmeof_get_log_ana(c, false, log, len)) {
		free(log);
		return done(a, c, fail(a, NULL));
	}
	struct nvmeof_ana_group g;
	uint64_t chgcnt = 0;
	uint16_t ngrps = 0;
	nvmeof_ana_group(log, len, 0, &g, &chgcnt, &ngrps);
	out_init(&p, stdout, a->json, 6);
	if (a->json)
		out_str(&p, "Asymmetric Namespace Access Log for NVMe device", a->nqn);
	else
		printf("Asymmetric Namespace Access Log for NVMe-oF controller %s\nANA LOG HEADER :-\n", a->nqn);
	out_u64(&p, "chgcnt", chgcnt);
	out_u64(&p, "ngrps", ngrps);
	out_arr_begin(&p, "ANA DESC LIST ");
	int rc = 0;
	for (uint32_t i = 0; i < ngrps; i++) {
		if (nvmeof_ana_group(log, len, i, &g, NULL, NULL)) {
			fprintf(stderr, "nvmeof %s: group descriptor %u runs past the log\n", a->name, i);
			rc = 1;
			break;
		}
		if (!a->json)
			printf("ANA Log Desc :-\n");
		out_obj_begin(&p, NULL);
		out_u64(&p, "grpid", g.grpid);
		out_u64(&p, "nnsids", g.nnsids);
		out_u64(&p, "chgcnt", g.chgcnt);
		out_str(&p, "state", nvmeof_ana_state_str(g.state & 0xf));
		out_arr_begin(&p, "NSIDS");
		for (uint32_t k = 0; k < g.nnsids; k++) {
			const uint8_t *n = log + g.nsids_off + 4 * (size_t)k;
			out_obj_begin(&p, NULL);
			out_u64(&p, "nsid", (uint32_t)n[0] | (uint32_t)n[1] << 8 | (uint32_t)n[2] << 16 | (uint32_t)n[3] << 24);
			out_obj_end(&p);
		}
		out_arr_end(&p);
		out_obj_end(&p);
	}
	out_arr_end(&p);
	out_end(&p);
	free(log);
	return done(a, c, rc);
}
