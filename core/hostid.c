/* Who the host is: its NQN and host ID, as nvme-cli finds them. */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cpriv.h"

static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, " \t\r\n")] = '\0';
	fclose(f);
}

/* One random identity per process, so every controller a process opens
 * presents the same host to the target. */
static pthread_once_t proc_id_once = PTHREAD_ONCE_INIT;

static uint8_t proc_hostid[16];

static char proc_hostnqn[NVME_NQN_MAX + 1];

static void make_proc_id(void)
{
	if (getrandom(proc_hostid, 16, 0) != 16) {
		uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&proc_hostid;
		memcpy(proc_hostid, &t, 8);
		memcpy(proc_hostid + 8, &t, 8);
	}
	proc_hostid[6] = (uint8_t)((proc_hostid[6] & 0x0f) | 0x40); /* version 4 */
	proc_hostid[8] = (uint8_t)((proc_hostid[8] & 0x3f) | 0x80);
	const uint8_t *u = proc_hostid;
	snprintf(proc_hostnqn, sizeof(proc_hostnqn),
		 "nqn.2014-08.org.nvmexpress:uuid:%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}

int ctrl_host_identity(struct nvmeof_ctrl *c)
{
	char buf[512];
	pthread_once(&proc_id_once, make_proc_id);
	if (c->o.hostnqn) {
		snprintf(buf, sizeof(buf), "%s", c->o.hostnqn);
	} else {
		read_line("/etc/nvme/hostnqn", buf, sizeof(buf));
		if (!buf[0])
			snprintf(buf, sizeof(buf), "%s", proc_hostnqn);
	}
	if (!buf[0] || strlen(buf) > NVME_NQN_MAX)
		return nvmeof_err(NVMEOF_EINVAL, "host NQN '%.40s%s' is %s (at most %d bytes)", buf,
				  strlen(buf) > 40 ? "..." : "", buf[0] ? "too long" : "empty", NVME_NQN_MAX);
	snprintf(c->hostnqn, sizeof(c->hostnqn), "%s", buf);
	if (c->o.hostid) {
		if (nvme_parse_uuid(c->o.hostid, c->hostid))
			/* no longer than a UUID's 36 characters, or not shown: a
			 * longer value may be a secret put in the wrong option */
			return strlen(c->o.hostid) > 36
				       ? nvmeof_err(NVMEOF_EINVAL, "host ID (not shown, %zu characters) is not a UUID",
						    strlen(c->o.hostid))
				       : nvmeof_err(NVMEOF_EINVAL, "host ID '%s' is not a UUID", c->o.hostid);
		return 0;
	}
	/* as nvme-cli: /etc/nvme/hostid, else the UUID of a uuid-form host
	 * NQN, so one host presents one identity; else this process's own */
	read_line("/etc/nvme/hostid", buf, sizeof(buf));
	if ((!buf[0] || nvme_parse_uuid(buf, c->hostid)) && nvme_hostid_from_nqn(c->hostnqn, c->hostid))
		memcpy(c->hostid, proc_hostid, 16);
	return 0;
}
