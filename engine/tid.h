/* Transport-ID filenames, as SPDK's fio plugin users write them:
 *   trtype=RDMA adrfam=IPv4 traddr=192.0.2.1 trsvcid=4420 subnqn=NQN ns=1
 * (fio splits filenames on ':', so NQNs are written with '\:'). */
#ifndef NVMEOF_TID_H
#define NVMEOF_TID_H

#include <stddef.h>
#include <stdint.h>

struct tid {
	char traddr[256];
	char trsvcid[32];
	char subnqn[224];
	char hostnqn[224];
	char srcaddr[256];
	uint32_t nsid;           /* 0 when not given */
	int adrfam;              /* 0 unspecified, 4, 6 */
};

/* 0, or -1 with a message in err naming the key and what is wrong. */
int tid_parse(const char *s, struct tid *t, char *err, size_t errlen);

#endif
