/* Numbers and times of the engine's options, read strictly from the text
 * the user wrote (no fio: unit-testable, and fio's own parsers read "-5" as
 * a range and take an unknown time suffix for microseconds). */
#ifndef NVMEOF_OPTVAL_H
#define NVMEOF_OPTVAL_H

#include <stddef.h>

#define TIME_MAX_MS 86400000ll /* 1d: the longest time an option takes */

/* A whole decimal number, an optional '-' and digits only, from lo to hi:
 * 0, or -1. */
int optval_num(const char *v, long long lo, long long hi, long long *out);
/* A time as fio writes one: digits and a suffix us, usec, ms, msec, s, sec,
 * m, min, h or d (any case); a bare number is seconds, as nvme-cli's kato,
 * reconnect_delay and ctrl_loss_tmo are. 0 with *ms when it is whole
 * milliseconds from lo_ms to hi_ms; -1 (*sub_ms: it was not whole ms). */
int optval_time(const char *v, long long lo_ms, long long hi_ms, long long *ms, int *sub_ms);
/* A count as fio writes one: decimal or 0x hex, an optional '-', and an
 * optional k, m or g (kb, kib...; any case; 1024 each, as fio's default
 * kb_base) from lo to hi: 0, or -1. */
int optval_count(const char *v, long long lo, long long hi, long long *out);
/* Option name=v as optval_count (0 with *out), else -1 with why in err,
 * naming the forms taken; shown is v as the message may show it, what
 * says what the number is ("" or, e.g., "0: no limit"). */
int optval_count_of(const char *name, const char *v, const char *shown, long long lo, long long hi, const char *what,
		    long long *out, char *err, size_t el);
/* Option name=v as microseconds from lo to hi: a bare number, or with a
 * time unit as optval_time's: 0 with *out, else -1 with why in err. */
int optval_us_of(const char *name, const char *v, const char *shown, long long lo, long long hi, long long *out,
		 char *err, size_t el);
/* Option name=v as a time from lo_ms to 1d (optval_time): 0 with *ms, else -1
 * with why in err. A bare cmd_timeout or kato of 1000 or more is refused as
 * milliseconds meant: the tool's --timeout and Python's keep_alive_ms are. */
int optval_time_of(const char *name, const char *v, long long lo_ms, long long *ms, char *err, size_t el);

#endif
