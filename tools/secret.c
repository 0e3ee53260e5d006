/*
 * Secrets on the tool's command line and in files. A secret is never part
 * of a message, whatever option or word it came in: the tool's own
 * messages show option names and, of values, only those that do not look
 * like a DHHC-1 secret; the library's never contain one.
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "cmds.h"
#include "secret.h"

static char file_secret[SECRETS][128];
static bool given_inline[SECRETS], given_file[SECRETS];
static const char *const names[SECRETS] = {"--dhchap-secret", "--dhchap-ctrl-secret", "--tls-key"};
static char *inline_secret[SECRETS]; /* in argv */
static bool wiped;

static void wipe(void) { OPENSSL_cleanse(file_secret, sizeof(file_secret)); }

int tool_secret_file(struct args *a, int which, const char *path)
{
	static bool registered;
	if (!registered && !atexit(wipe))
		registered = true;
	FILE *fp = fopen(path, "re");
	struct stat st;
	if (!fp) {
		fprintf(stderr, "nvmeof: %s-file '%s': %s\n", names[which], tool_shown_path(path), strerror(errno));
		return -1;
	}
	/* SPDK's keyring refuses such files; a warning keeps nvme-cli's habits working */
	if (!fstat(fileno(fp), &st) && (st.st_mode & (S_IRWXG | S_IRWXO)))
		fprintf(stderr, "nvmeof: warning: %s-file '%s' is readable by group or others (mode %03o): "
			"chmod 600 it\n", names[which], tool_shown_path(path), (unsigned)(st.st_mode & 0777));
	char *out = file_secret[which];
	size_t len = sizeof(file_secret[which]);
	/* stdio reads through a buffer of ours, wiped after fclose: its own
	 * (malloc'd) would go back to the heap with the secret in it */
	char iobuf[256];
	setvbuf(fp, iobuf, _IOFBF, sizeof(iobuf));
	char *got = fgets(out, (int)len, fp);
	fclose(fp);
	OPENSSL_cleanse(iobuf, sizeof(iobuf));
	size_t n = got ? strcspn(out, "\r\n") : 0;
	if (!got || !n || (n == strlen(out) && n == len - 1)) {
		OPENSSL_cleanse(out, len);
		fprintf(stderr, "nvmeof: %s-file '%s': %s\n", names[which], tool_shown_path(path),
			!got || !n ? "empty: no secret on its first line" : "its first line is longer than any secret");
		return -1;
	}
	out[n] = 0;
	given_file[which] = true;
	if (which == SECRET_HOST)
		a->dhchap_secret = out;
	else if (which == SECRET_CTRL)
		a->dhchap_ctrl_secret = out;
	else
		a->tls_key = out;
	return 0;
}

void tool_secret_arg(struct args *a, int which, char *val)
{
	given_inline[which] = true;
	inline_secret[which] = val;
	if (which == SECRET_HOST)
		a->dhchap_secret = val;
	else if (which == SECRET_CTRL)
		a->dhchap_ctrl_secret = val;
	else
		a->tls_key = val;
}

int tool_secret_check(void)
{
	for (int w = 0; w < SECRETS; w++) {
		if (given_inline[w] && given_file[w]) {
			fprintf(stderr, "nvmeof: give %s or %s-file, not both\n", names[w], names[w]);
			return -1;
		}
		if (given_inline[w])
			fprintf(stderr, "nvmeof: warning: %s on the command line is visible to other users "
				"(ps, /proc/PID/cmdline): prefer %s-file\n", names[w], names[w]);
	}
	return 0;
}

void tool_secret_wipe(void)
{
	for (int w = 0; w < SECRETS; w++)
		if (inline_secret[w])
			OPENSSL_cleanse(inline_secret[w], strlen(inline_secret[w]));
	wipe();
	wiped = true;
}

bool tool_secret_wiped(void) { return wiped; }

static bool secret_like(const char *word)
{
	return word && (strcasestr(word, "DHHC-1") || strcasestr(word, "NVMeTLSkey-1"));
}

const char *tool_shown(const char *word)
{
	if (secret_like(word))
		return "<a secret, not shown>";
	/* no word the tool echoes (a number, a port, a format, a transport,
	 * a subcommand) is this long; a secret's body without its prefix is */
	return word && strlen(word) > TOOL_SHOWN_MAX ? "<a value too long to show>" : word;
}

const char *tool_shown_path(const char *path)
{
	return secret_like(path) ? "<a secret, not shown>" : path;
}

const char *tool_optlabel(const struct option *lo, int *li, int ch, char *const argv[], char *buf, size_t n)
{
	const char *opt = buf;
	if (*li >= 0)
		snprintf(buf, n, "--%s", lo[*li].name);
	else if (ch != '?' && ch != ':')
		snprintf(buf, n, "-%c", ch);
	else
		opt = tool_optname(argv[optind - 1]);
	*li = -1;
	return opt;
}

const char *tool_optname(const char *word)
{
	static char buf[64];
	size_t n = word[0] == '-' && word[1] == '-' ? strcspn(word, "=") : word[0] == '-' && word[1] ? 2 : 0;
	if (!n)
		return tool_shown(word);
	snprintf(buf, sizeof(buf), "%.*s", (int)(n < sizeof(buf) - 1 ? n : sizeof(buf) - 1), word);
	return buf;
}
