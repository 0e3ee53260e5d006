/* Where the engine's informational lines go. */
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
	log_info("%s", line);
}
