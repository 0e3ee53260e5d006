/* Transport-ID filenames, as SPDK's fio plugin users write them:
 *   trtype=RDMA adrfam=IPv4 traddr=192.0.2.1 trsvcid=4420 subnqn=NQN ns=1
 * (trtype=TCP: NVMe/TCP, for every path of the filename; where the
 * filename's trtypes differ, each is the path's whose traddr follows it:
 *   trtype=RDMA traddr=192.0.2.1 trtype=TCP traddr=198.51.100.1 ...)
 * (fio splits filenames on ':', so NQNs are written with '\:').
 * Several paths to one namespace: traddr again starts the next path, and
 * the srcaddr and trsvcid after it are that path's:
 *   traddr=192.0.2.1 srcaddr=192.0.2.1 traddr=198.51.100.1 srcaddr=198.51.100.1 trsvcid=4421 ...
 * A path without a trsvcid of its own takes the first path's. */
#ifndef NVMEOF_TID_H
#define NVMEOF_TID_H

#include <stddef.h>
#include <stdint.h>

#define TID_MAX_PATHS 4
struct tid_path {
	int trtype;              /* as struct tid's: the path's own where the filename's differ */
	char traddr[256];
	char trsvcid[32];
	char srcaddr[256];
};

/* the first path's fields are sized as struct tid_path's (tid.c relies on it) */
struct tid {
	char traddr[256];
	char trsvcid[32];
	char subnqn[224];
	char hostnqn[224];
	char srcaddr[256];
	uint32_t nsid;           /* 0 when not given */
	int adrfam;              /* 0 unspecified, 4, 6 */
	int trtype;              /* 0 unspecified (RDMA), 1 RDMA, 3 TCP (the NVMe-oF TRTYPE values) */
	/* the paths after the first (traddr, trsvcid, srcaddr above) */
	struct tid_path alt[TID_MAX_PATHS - 1];
	unsigned nalt;
};

/* 0, or -1 with a message in err naming the key and what is wrong. A key
 * given twice is refused (trsvcid and srcaddr: twice for one path); so is
 * a path named twice. hostaddr= is SPDK's name of srcaddr=. */
int tid_parse(const char *s, struct tid *t, char *err, size_t errlen);
/* fio cut a filename at an unescaped ':' into prev and next, two files of
 * one job: -1 with a message when next begins with the rest of a value (a
 * word that is not key=value), else 0. */
int tid_cut(const char *prev, const char *next, char *err, size_t errlen);
/* 0 when t has a traddr and a subnqn; else -1 with what is missing in err
 * and, for a subnqn, the nvmeof discover command that prints it. */
int tid_missing(const struct tid *t, char *err, size_t errlen);

#endif
