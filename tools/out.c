/* The tool's two output forms. */
#include <string.h>

#include "out.h"

void out_init(struct out *o, FILE *f, bool json, int width)
{
	memset(o, 0, sizeof(*o));
	o->f = f;
	o->json = json;
	o->width = width;
	o->first[0] = true;
	if (json)
		fputc('{', f);
}

static void sep(struct out *o)
{
	if (!o->first[o->depth])
		fputc(',', o->f);
	o->first[o->depth] = false;
	fputc('\n', o->f);
	for (int i = 0; i <= o->depth; i++)
		fputs("  ", o->f);
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void key(struct out *o, const char *name)
{
	sep(o);
	if (name) {
		json_string(o->f, name);
		fputs(": ", o->f);
	}
}

static void open_(struct out *o, const char *name, char ch)
{
	if (!o->json)
		return;
	key(o, name);
	fputc(ch, o->f);
	o->depth++;
	o->first[o->depth] = true;
}

static void close_(struct out *o, char ch)
{
	if (!o->json)
		return;
	o->depth--;
	fputc('\n', o->f);
	for (int i = 0; i <= o->depth; i++)
		fputs("  ", o->f);
	fputc(ch, o->f);
}

void out_obj_begin(struct out *o, const char *name) { open_(o, name, '{'); }
void out_obj_end(struct out *o) { close_(o, '}'); }
void out_arr_begin(struct out *o, const char *name) { open_(o, name, '['); }
void out_arr_end(struct out *o) { close_(o, ']'); }

void out_i64(struct out *o, const char *name, int64_t v)
{
	if (o->json) {
		key(o, name);
		fprintf(o->f, "%lld", (long long)v);
	} else {
		fprintf(o->f, "%-*s: %lld\n", o->width, name, (long long)v);
	}
}

void out_u64(struct out *o, const char *name, uint64_t v)
{
	if (o->json) {
		key(o, name);
		fprintf(o->f, "%llu", (unsigned long long)v);
	} else {
		fprintf(o->f, "%-*s: %llu\n", o->width, name, (unsigned long long)v);
	}
}

void out_hex(struct out *o, const char *name, uint64_t v)
{
	if (o->json) {
		key(o, name);
		fprintf(o->f, "%llu", (unsigned long long)v);
	} else {
		fprintf(o->f, "%-*s: %#llx\n", o->width, name, (unsigned long long)v);
	}
}

void out_str(struct out *o, const char *name, const char *v)
{
	if (o->json) {
		key(o, name);
		json_string(o->f, v);
	} else {
		fprintf(o->f, "%-*s: %s\n", o->width, name, v);
	}
}

static void u128_dec(char buf[48], const uint64_t v[2])
{
	if (!v[1]) {
		snprintf(buf, 48, "%llu", (unsigned long long)v[0]);
	} else {
		/* 128-bit decimal by repeated division */
		unsigned __int128 x = ((unsigned __int128)v[1] << 64) | v[0];
		char tmp[48];
		int n = 0;
		while (x) {
			tmp[n++] = (char)('0' + (int)(x % 10));
			x /= 10;
		}
		for (int i = 0; i < n; i++)
			buf[i] = tmp[n - 1 - i];
		buf[n] = '\0';
	}
}

void out_u128(struct out *o, const char *name, const uint64_t v[2])
{
	char buf[48];
	u128_dec(buf, v);
	if (o->json) {
		key(o, name);
		fputs(buf, o->f);
	} else {
		fprintf(o->f, "%-*s: %s\n", o->width, name, buf);
	}
}

void out_end(struct out *o)
{
	if (o->json)
		fputs("\n}\n", o->f);
}

void out_u128_str(struct out *o, const char *name, const uint64_t v[2])
{
	char buf[48];
	u128_dec(buf, v);
	out_str(o, name, buf);
}
