/* Numbers and times of the engine's options (optval.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "optval.h"

/* at most 12 digits: no overflow below, whatever the unit */
static const char *digits(const char *p, long long *n, int *count)
{
	*n = 0;
	*count = 0;
	for (; *p >= '0' && *p <= '9' && *count < 12; p++, (*count)++)
		*n = *n * 10 + (*p - '0');
	return p;
}

int optval_num(const char *v, long long lo, long long hi, long long *out)
{
	if (!v)
		return -1;
	int neg = *v == '-', count;
	long long n;
	const char *p = digits(v + neg, &n, &count);
	n = neg ? -n : n;
	if (!count || *p || n < lo || n > hi)
		return -1;
	*out = n;
	return 0;
}

/* v as microseconds, a bare number being bare_us each: -1 if not a time */
static long long time_us(const char *v, long long bare_us)
{
	static const struct { const char *sfx; long long us; } units[] = {
		{"us", 1}, {"usec", 1}, {"ms", 1000}, {"msec", 1000}, {"s", 1000000},
		{"sec", 1000000}, {"m", 60000000}, {"min", 60000000}, {"h", 3600000000ll}, {"d", 86400000000ll}};
	if (!v)
		return -1;
	int count;
	long long n;
	const char *p = digits(v, &n, &count);
	if (!count || (*p >= '0' && *p <= '9'))
		return -1;
	if (!*p)
		return n * bare_us;
	for (unsigned i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcasecmp(p, units[i].sfx))
			return n > LLONG_MAX / units[i].us ? -1 : n * units[i].us;
	return -1;
}

int optval_time(const char *v, long long lo_ms, long long hi_ms, long long *ms, int *sub_ms)
{
	long long us = time_us(v, 1000000);
	*sub_ms = 0;
	if (us < 0)
		return -1;
	*sub_ms = us % 1000 != 0;
	if (*sub_ms || us / 1000 < lo_ms || us / 1000 > hi_ms)
		return -1;
	*ms = us / 1000;
	return 0;
}

int optval_count(const char *v, long long lo, long long hi, long long *out)
{
	static const struct { const char *sfx; long long mult; } mults[] = {
		{"", 1}, {"k", 1ll << 10}, {"kb", 1ll << 10}, {"kib", 1ll << 10}, {"m", 1ll << 20}, {"mb", 1ll << 20},
		{"mib", 1ll << 20}, {"g", 1ll << 30}, {"gb", 1ll << 30}, {"gib", 1ll << 30}};
	if (!v)
		return -1;
	int neg = *v == '-', count = 0;
	long long n = 0, mult = -1;
	const char *p = v + neg;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		/* at most 12 hex digits: no overflow below */
		for (p += 2; count < 12 && ((*p >= '0' && *p <= '9') || ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'f'));
		     p++, count++)
			n = n * 16 + (*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
	} else {
		p = digits(p, &n, &count);
	}
	for (unsigned i = 0; count && !(*p >= '0' && *p <= '9') && i < sizeof(mults) / sizeof(mults[0]); i++)
		if (!strcasecmp(p, mults[i].sfx))
			mult = mults[i].mult;
	if (mult < 0 || n > (neg ? -lo : hi) / mult)
		return -1;
	n = (neg ? -n : n) * mult;
	if (n < lo || n > hi)
		return -1;
	*out = n;
	return 0;
}

int optval_count_of(const char *name, const char *v, const char *shown, long long lo, long long hi, const char *what,
		    long long *out, char *err, size_t el)
{
	if (!optval_count(v, lo, hi, out))
		return 0;
	snprintf(err, el, "%s=%s: expected a whole number from %lld to %lld (%s%sdecimal, 0x hex, or with k, m, g: "
		 "1k is 1024)", name, shown, lo, hi, what, *what ? "; " : "");
	return -1;
}

int optval_us_of(const char *name, const char *v, const char *shown, long long lo, long long hi, long long *out,
		 char *err, size_t el)
{
	long long us = time_us(v, 1);
	if (us >= lo && us <= hi) {
		*out = us;
		return 0;
	}
	snprintf(err, el, "%s=%s: expected a time from %lld to %lld us (a bare number is microseconds, or 20us, 1ms, "
		 "1s)", name, shown, lo, hi);
	return -1;
}

int optval_time_of(const char *name, const char *v, long long lo_ms, long long *ms, char *err, size_t el)
{
	int sub_ms;
	long long n;
	if ((!strcmp(name, "cmd_timeout") || !strcmp(name, "kato")) && !optval_num(v, 1000, 999999999999ll, &n)) {
		snprintf(err, el, "%s=%s: a bare number is seconds, and %s s is over %lld minutes: did you mean %sms? "
			 "(write %ss if you do mean seconds)", name, v, v, n / 60, v, v);
		return -1;
	}
	if (!optval_time(v, lo_ms, TIME_MAX_MS, ms, &sub_ms))
		return 0;
	snprintf(err, el, "%s=%s: expected a time from %s to 1d%s: a bare number is seconds (as in nvme-cli), "
		 "or give a unit: 500ms, 5s, 2m", name, v ? v : "", lo_ms ? "1ms" : "0",
		 sub_ms ? ", in whole milliseconds" : "");
	return -1;
}
