/*
 * tests/unit/tls-spdk.sh's helper: a discovery log entry, as a program that
 * connects from discovery would take it. Reads the log at ADDR:DISC_PORT,
 * takes SUBNQN's entry through nvmeof_disc_entry_opts (with the key, when
 * KEYFILE is given) and connects to what it says.
 *   tls_disc ADDR DISC_PORT HOSTNQN SUBNQN [KEYFILE]
 * Prints the entry's TREQ and security type, then "connected tls=0|1";
 * exit 0, 3 when nvmeof_disc_entry_opts refused the entry (its message on
 * stderr), 1 on any other failure.
 */
#include <stdio.h>
#include <string.h>

#include "nvmeof.h"

int main(int argc, char **argv)
{
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: tls_disc ADDR DISC_PORT HOSTNQN SUBNQN [KEYFILE]\n");
		return 2;
	}
	char key[256] = "";
	if (argc == 6) {
		FILE *f = fopen(argv[5], "r");
		if (!f || !fgets(key, sizeof(key), f)) {
			fprintf(stderr, "tls_disc: cannot read the key file\n");
			return 1;
		}
		fclose(f);
	}
	struct nvmeof_ctrl_opts o;
	struct nvmeof_ctrl *d = NULL, *c = NULL;
	struct nvmeof_disc_log *l = NULL;
	int rc = 1;
	nvmeof_ctrl_opts_init(&o);
	o.trtype = "tcp";
	o.traddr = argv[1];
	o.trsvcid = argv[2];
	o.hostnqn = argv[3];
	o.cmd_timeout_ms = 10000;
	if (nvmeof_discovery_connect(&o, &d) || nvmeof_discover(d, &l)) {
		fprintf(stderr, "tls_disc: discover: %s\n", nvmeof_errmsg());
		goto out;
	}
	const struct nvmeof_disc_entry *e = NULL;
	for (uint32_t i = 0; i < l->nentries; i++)
		if (!strcmp(l->entries[i].subnqn, argv[4]))
			e = &l->entries[i];
	if (!e) {
		fprintf(stderr, "tls_disc: no entry for %s\n", argv[4]);
		goto out;
	}
	printf("entry: treq %s, sectype %s\n", nvmeof_treq_str(e->treq), nvmeof_tcp_sectype_str(e->tcp_sectype));
	struct nvmeof_ctrl_opts co;
	nvmeof_ctrl_opts_init(&co);
	co.hostnqn = argv[3];
	co.cmd_timeout_ms = 10000;
	co.tls_key = key[0] ? key : NULL;
	if (nvmeof_disc_entry_opts(e, &co)) {
		fprintf(stderr, "tls_disc: %s\n", nvmeof_errmsg());
		rc = 3;
		goto out;
	}
	if (nvmeof_ctrl_connect(&co, &c)) {
		fprintf(stderr, "tls_disc: connect: %s\n", nvmeof_errmsg());
		goto out;
	}
	printf("connected tls=%d\n", co.tls ? 1 : 0);
	rc = 0;
out:
	memset(key, 0, sizeof(key));
	if (c)
		nvmeof_ctrl_close(c);
	if (l)
		nvmeof_disc_log_free(l);
	if (d)
		nvmeof_ctrl_close(d);
	return rc;
}
