/* Numbers and times of the engine's options (optval.h). */
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

int optval_time(const char *v, long long lo_ms, long long hi_ms, long long *ms, int *sub_ms)
{
	static const struct { const char *sfx; long long us; } units[] = {
		{"", 1000000}, {"us", 1}, {"usec", 1}, {"ms", 1000}, {"msec", 1000}, {"s", 1000000},
		{"sec", 1000000}, {"m", 60000000}, {"min", 60000000}, {"h", 3600000000ll}, {"d", 86400000000ll}};
	*sub_ms = 0;
	if (!v)
		return -1;
	int count;
	long long n, us = -1;
	const char *p = digits(v, &n, &count);
	for (unsigned i = 0; count && !(*p >= '0' && *p <= '9') && i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcasecmp(p, units[i].sfx))
			us = n * units[i].us;
	if (us < 0)
		return -1;
	*sub_ms = us % 1000 != 0;
	if (*sub_ms || us / 1000 < lo_ms || us / 1000 > hi_ms)
		return -1;
	*ms = us / 1000;
	return 0;
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
