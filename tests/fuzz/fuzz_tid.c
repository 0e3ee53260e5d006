/* Transport-ID filenames, as fio hands them over. */
#include <stdlib.h>
#include <string.h>

#include "tid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), err[256];
	struct tid t;
	memcpy(s, data, size);
	s[size] = '\0';
	if (tid_parse(s, &t, err, sizeof(err)) == 0) {
		if (strlen(t.subnqn) > 223 || strlen(t.hostnqn) > 223 || strlen(t.traddr) > 255)
			abort();
	} else if (!err[0]) {
		abort(); /* a refusal always says why */
	}
	free(s);
	return 0;
}
