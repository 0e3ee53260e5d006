/* The tool's DH-HMAC-CHAP and TLS PSK options: secrets from the command line or from a
 * file, what the host offers, and the rule that no message shows a secret. */
#ifndef NVMEOF_TOOL_SECRET_H
#define NVMEOF_TOOL_SECRET_H

#include <stdbool.h>

struct args;
/* Secrets read from files live here until the command's connect has taken
 * them (tool_secret_wipe), or the tool exits. */
enum { SECRET_HOST = 0, SECRET_CTRL = 1, SECRET_TLS = 2, SECRETS };
/* A secret file's first line into the args (which = SECRET_*). Warns when
 * the file is readable by group or others. 0, or -1 after saying why. */
int tool_secret_file(struct args *a, int which, const char *path);
/* A secret given on the command line. */
void tool_secret_arg(struct args *a, int which, char *val);
/* After the options: refuses a secret given both ways; warns when one was
 * given on the command line (other users see it in ps). 0 or -1. */
int tool_secret_check(void);
/* After the command's connect, whether it succeeded or not: wipes the
 * secrets, those read from files and those on the command line (argv's
 * strings: /proc/PID/cmdline no longer shows them either). A later
 * tool_ctrl_opts gives the library a secret it refuses: the tool never
 * connects again without the secrets it was given. */
void tool_secret_wipe(void);
bool tool_secret_wiped(void);
/* What a message may show of a command-line word: the word, or a
 * placeholder when it holds a secret (DHHC-1 or NVMeTLSkey-1, any case) or
 * is longer than TOOL_SHOWN_MAX (a secret's body without its prefix). */
#define TOOL_SHOWN_MAX 32
const char *tool_shown(const char *word);
/* The same for a file's path, which may be long: only a secret's prefix
 * hides it. */
const char *tool_shown_path(const char *path);
/* An option as typed, for a message: its name, never a value joined to it
 * ("--dhchap-secret=..." shows "--dhchap-secret", "-SDHHC-1..." "-S"). */
const char *tool_optname(const char *word);
/* The option getopt_long just returned (ch, and *li the long option's index,
 * reset to -1 for the next call), by its name: "--name" or "-c", or for an
 * unknown or valueless one ('?', ':') the word it stopped at, as
 * tool_optname shows it. buf holds the name; never a value. */
struct option;
const char *tool_optlabel(const struct option *lo, int *li, int ch, char *const argv[], char *buf, size_t n);

#endif
