/* The tool's DH-HMAC-CHAP options: secrets from the command line or from a
 * file, what the host offers, and the rule that no message shows a secret. */
#ifndef NVMEOF_TOOL_SECRET_H
#define NVMEOF_TOOL_SECRET_H

#include <stdbool.h>

struct args;
/* Secrets read from files live here until the tool exits (wiped then). */
enum { SECRET_HOST = 0, SECRET_CTRL = 1 };
/* A secret file's first line into the args (which = SECRET_*). Warns when
 * the file is readable by group or others. 0, or -1 after saying why. */
int tool_secret_file(struct args *a, int which, const char *path);
/* A secret given on the command line. */
void tool_secret_arg(struct args *a, int which, const char *val);
/* After the options: refuses a secret given both ways; warns when one was
 * given on the command line (other users see it in ps). 0 or -1. */
int tool_secret_check(void);
/* What a message may show of a command-line word: the word, or a
 * placeholder when it holds a DH-HMAC-CHAP secret. */
const char *tool_shown(const char *word);
/* An option as typed, for a message: its name, never a value joined to it
 * ("--dhchap-secret=..." shows "--dhchap-secret", "-SDHHC-1..." "-S"). */
const char *tool_optname(const char *word);

#endif
