/* Output for the nvmeof tool: "name : value" lines as nvme-cli prints
 * them, or one JSON object with nvme-cli's field names. */
#ifndef NVMEOF_TOOL_OUT_H
#define NVMEOF_TOOL_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct out {
	FILE *f;
	bool json;
	int depth;
	bool first[16];
	int width;         /* name column in normal output */
};

void out_init(struct out *o, FILE *f, bool json, int width);
/* JSON objects and arrays; in normal output they print nothing. */
void out_obj_begin(struct out *o, const char *name);
void out_obj_end(struct out *o);
void out_arr_begin(struct out *o, const char *name);
void out_arr_end(struct out *o);
void out_u64(struct out *o, const char *name, uint64_t v);
void out_i64(struct out *o, const char *name, int64_t v);
/* normal output in hex ("0x1f"), JSON as a number, as nvme-cli does */
void out_hex(struct out *o, const char *name, uint64_t v);
void out_str(struct out *o, const char *name, const char *v);
/* a 128-bit little-endian counter: decimal in both forms */
void out_u128(struct out *o, const char *name, const uint64_t v[2]);
/* the same, as a JSON string (nvme-cli's form for 128-bit counters) */
void out_u128_str(struct out *o, const char *name, const uint64_t v[2]);
void out_end(struct out *o);

#endif
