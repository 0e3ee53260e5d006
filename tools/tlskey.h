/* gen-tls-key, check-tls-key (tlskey.c): nvme-cli's, with their own
 * options; argv[1] is the subcommand. 0, 1 (a bad key), 2 (usage). */
#ifndef NVMEOF_TOOL_TLSKEY_H
#define NVMEOF_TOOL_TLSKEY_H

int tool_gen_tls_key(int argc, char **argv);
int tool_check_tls_key(int argc, char **argv);

#endif
