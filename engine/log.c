/* Where the engine's informational lines go: fio's log beside its normal
 * output; on stderr when fio writes JSON or terse output, so that a program
 * reading fio's stdout gets one document. Errors go through fio's log_err,
 * where fio puts its own. */
#include <stdarg.h>
#include <stdio.h>

#include "engine.h"

void eng_info(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (output_format & FIO_OUTPUT_NORMAL)
		log_info("%s", line);
	else
		fputs(line, stderr);
}
