/* What kTLS hands up that is not data (tls_ktls_classify: alerts, handshake
 * messages after the handshake, other record types), and the key log lines
 * OpenSSL hands over (tls_ktls_keylog), from a controller or a library
 * build we do not control. First byte: the record type; the rest: the
 * record's plaintext, or with type 0 a key log line. */
#include <stdlib.h>
#include <string.h>

#include "tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (!data[0]) {
		char *line = malloc(size);
		memcpy(line, data + 1, size - 1);
		line[size - 1] = '\0';
		struct tls_secrets sec;
		memset(&sec, 0, sizeof(sec));
		tls_ktls_keylog(&sec, line);
		if (sec.len > sizeof(sec.tx))
			abort();
		free(line);
		return 0;
	}
	/* the record's bytes in a buffer of their own size, so that a read past
	 * them is ASan's to see */
	uint8_t *rec = malloc(size - 1 ? size - 1 : 1);
	memcpy(rec, data + 1, size - 1);
	char why[256] = "";
	int rc = tls_ktls_classify(data[0], rec, size - 1, why, sizeof(why));
	if (rc != TLS_CTRL_REKEY && rc != TLS_CTRL_FAIL && rc != TLS_CTRL_DROP && rc != TLS_CTRL_CLOSE)
		abort();
	if ((rc == TLS_CTRL_FAIL || rc == TLS_CTRL_REKEY) && !why[0])
		abort(); /* an end of the connection always says why */
	free(rec);
	return 0;
}
