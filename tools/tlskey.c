/*
 * gen-tls-key and check-tls-key: nvme-cli's, for NVMe/TCP's TLS PSK in its
 * interchange form (NVMeTLSkey-1:HH:<base64 of the key and its CRC-32>:).
 * gen-tls-key prints a new key (random, or the --secret given in hex);
 * check-tls-key checks one and, given the subsystem, prints the PSK identity
 * a host offers with it. With --insert either puts the key's TLS PSK in a
 * kernel keyring (.nvme by default) under its PSK identity, as nvme-cli
 * does, where the kernel host, tlshd and this library's --keyring find it.
 * Neither ever prints a key in a message, nor any derived key: the
 * identity is all nvme-cli shows.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "auth.h"
#include "nvmeof.h"
#include "secret.h"
#include "tls.h"
#include "tlskey.h"

static const char insert_help[] =
	"  -i, --insert             put the key's TLS PSK in the kernel keyring under its PSK\n"
	"                           identity, as nvme-cli does (needs --subsysnqn)\n"
	"  -n, --hostnqn=NQN        the host NQN (default /etc/nvme/hostnqn)\n"
	"  -c, --subsysnqn=NQN      the subsystem NQN\n"
	"  -I, --identity=0|1       the identity's version (0 NVMe0R..., the default; 1 NVMe1R...)\n"
	"  -C, --compat             derive as nvme-cli up to 2.14 (libnvme 1.14) did\n"
	"  -k, --keyring=NAME       the keyring (default .nvme); -t, --keytype=TYPE (default psk)\n";

static void gen_usage(FILE *f)
{
	fprintf(f, "usage: nvmeof gen-tls-key [-m 1|2] [-s HEX] [-i -c SUBNQN [-n HOSTNQN] [-I 0|1] [-k KEYRING]]\n"
		   "a TLS PSK for NVMe/TCP in the interchange format, as nvme gen-tls-key\n\n"
		   "  -m, --hmac=1|2           the key's hash: 1 SHA-256 (32 bytes, the default), 2 SHA-384 (48)\n"
		   "  -s, --secret=HEX         the key's bytes in hex (64 or 96 digits); default: random\n"
		   "%s"
		   "  -h, --help               this text\n", insert_help);
}

static void check_usage(FILE *f)
{
	fprintf(f, "usage: nvmeof check-tls-key [-d KEY] [-n HOSTNQN] [-c SUBNQN] [-I 0|1]\n"
		   "checks a TLS PSK in the interchange format, as nvme check-tls-key; with the\n"
		   "subsystem's NQN prints the PSK identity the host offers\n\n"
		   "  -d, --keydata=KEY        the key, NVMeTLSkey-1:HH:<base64>:; default: stdin's first line\n"
		   "  -n, --hostnqn=NQN        the host NQN (default /etc/nvme/hostnqn)\n"
		   "  -c, --subsysnqn=NQN      the subsystem NQN: print the PSK identity\n"
		   "  -I, --identity=0|1       the identity's version (0, NVMe0R..., the default; 1,\n"
		   "                           NVMe1R... with the PSK's digest)\n"
		   "  -C, --compat             derive as nvme-cli up to 2.14 (libnvme 1.14) did\n"
		   "  -i, --insert             put the TLS PSK in the kernel keyring (needs --subsysnqn)\n"
		   "  -k, --keyring=NAME       that keyring (default .nvme); -t, --keytype=TYPE (psk)\n"
		   "  -h, --help               this text\n");
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* key (len bytes) in the interchange form, nvme-cli's: the hash is the
 * key's length's (01 for 32 bytes, 02 for 48). */
static void print_key(const uint8_t *key, size_t len)
{
	uint8_t raw[TLS_KEY_MAX + 4];
	char b64[(TLS_KEY_MAX + 4) / 3 * 4 + 8];
	uint32_t crc = auth_crc32(key, len);
	memcpy(raw, key, len);
	for (int i = 0; i < 4; i++)
		raw[len + (size_t)i] = (uint8_t)(crc >> (8 * i));
	EVP_EncodeBlock((unsigned char *)b64, raw, (int)len + 4);
	printf("NVMeTLSkey-1:%02u:%s:\n", len == 32 ? 1u : 2u, b64);
	fflush(stdout);
	OPENSSL_cleanse(raw, sizeof(raw));
	OPENSSL_cleanse(b64, sizeof(b64));
}

static int small_number(const char *sub, const char *opt, const char *v, unsigned lo, unsigned hi, unsigned *out)
{
	if (v[0] >= '0' && v[0] <= '9' && !v[1] && (unsigned)(v[0] - '0') >= lo && (unsigned)(v[0] - '0') <= hi) {
		*out = (unsigned)(v[0] - '0');
		return 0;
	}
	fprintf(stderr, "nvmeof %s: %s: '%s' is not %u or %u\n", sub, opt, tool_shown(v), lo, hi);
	return -1;
}

/* An NQN as NVMe Base 4.7 has it: "nqn." and at most 223 bytes. Checked
 * because the identity printed holds it: a key typed in the wrong place is
 * refused without being shown. */
static int nqn_ok(const char *sub, const char *opt, const char *v)
{
	if (!strncmp(v, "nqn.", 4) && strlen(v) <= 223 && !strpbrk(v, " \t\n"))
		return 0;
	fprintf(stderr, "nvmeof %s: %s: not an NQN (nqn.YYYY-MM.domain:..., at most 223 bytes, no spaces)\n",
		sub, opt);
	return -1;
}

struct insert_args {
	bool insert, compat;
	unsigned ident;
	const char *hostnqn, *subnqn, *keyring, *keytype;
};

static int default_hostnqn(const char *sub, char *buf, size_t cap);

/* --insert: k's TLS PSK for the host and subsystem into the keyring under
 * its identity (nvme-cli's nvme_insert_tls_key_versioned); prints the
 * key's serial and the identity. */
static int insert_key(const char *sub, const struct tls_key *k, const struct insert_args *ia)
{
	char hbuf[256], id[TLS_IDENTITY_MAX];
	uint8_t psk[TLS_KEY_MAX];
	int32_t serial;
	const char *host = ia->hostnqn;
	if (!ia->subnqn) {
		fprintf(stderr, "nvmeof %s: --insert needs the subsystem: --subsysnqn\n", sub);
		return 2;
	}
	if (!host) {
		if (default_hostnqn(sub, hbuf, sizeof(hbuf)))
			return 2;
		host = hbuf;
	}
	int rc = tls_psk_derive(k, (int)ia->ident | (ia->compat ? TLS_PSK_COMPAT : 0), host, ia->subnqn, id, sizeof(id),
				psk);
	if (!rc)
		rc = tls_keyring_insert(ia->keyring ? ia->keyring : ".nvme", ia->keytype ? ia->keytype : "psk", id, psk,
					k->len, &serial);
	OPENSSL_cleanse(psk, sizeof(psk));
	if (rc) {
		fprintf(stderr, "nvmeof %s: %s\n", sub, nvmeof_errmsg());
		return 1;
	}
	printf("Inserted TLS key %08x: %s\n", (unsigned)serial, id);
	return 0;
}

int tool_gen_tls_key(int argc, char **argv)
{
	static const struct option lo[] = {
		{"hmac", required_argument, 0, 'm'},	  {"secret", required_argument, 0, 's'},
		{"hostnqn", required_argument, 0, 'n'},	  {"subsysnqn", required_argument, 0, 'c'},
		{"identity", required_argument, 0, 'I'},  {"insert", no_argument, 0, 'i'},
		{"keyring", required_argument, 0, 'k'},	  {"keytype", required_argument, 0, 't'},
		{"compat", no_argument, 0, 'C'},	  {"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	unsigned hmac = 1;
	struct insert_args ia = {0};
	const char *secret = NULL;
	char optbuf[64];
	int ch, li = -1;
	opterr = 0;
	while ((ch = getopt_long(argc - 1, argv + 1, ":m:s:n:c:I:ik:t:Ch", lo, &li)) != -1) {
		const char *opt = tool_optlabel(lo, &li, ch, argv + 1, optbuf, sizeof(optbuf));
		switch (ch) {
		case 'm': if (small_number("gen-tls-key", opt, optarg, 1, 2, &hmac)) return 2; break;
		case 'I': if (small_number("gen-tls-key", opt, optarg, 0, 1, &ia.ident)) return 2; break;
		case 's': secret = optarg; break;
		case 'n': if (nqn_ok("gen-tls-key", opt, optarg)) return 2; ia.hostnqn = optarg; break;
		case 'c': if (nqn_ok("gen-tls-key", opt, optarg)) return 2; ia.subnqn = optarg; break;
		case 'C': ia.compat = true; break;
		case 'i': ia.insert = true; break;
		case 'k': ia.keyring = optarg; break;
		case 't': ia.keytype = optarg; break;
		case 'h': gen_usage(stdout); return 0;
		case ':': fprintf(stderr, "nvmeof gen-tls-key: %s needs a value\n", opt); return 2;
		default: fprintf(stderr, "nvmeof gen-tls-key: option %s is not one of this subcommand's\n", opt); return 2;
		}
	}
	if (optind + 1 < argc) {
		fprintf(stderr, "nvmeof gen-tls-key: unexpected argument '%s'\n", tool_shown(argv[optind + 1]));
		return 2;
	}
	/* an --insert that cannot be done is refused before a key is made */
	int32_t kr;
	if (ia.insert && !ia.subnqn) {
		fprintf(stderr, "nvmeof gen-tls-key: --insert needs the subsystem: --subsysnqn\n");
		return 2;
	}
	if (ia.insert && tls_keyring_find(ia.keyring ? ia.keyring : ".nvme", &kr)) {
		fprintf(stderr, "nvmeof gen-tls-key: %s\n", nvmeof_errmsg());
		return 1;
	}
	size_t len = hmac == 2 ? 48 : 32;
	uint8_t key[TLS_KEY_MAX];
	if (secret) {
		size_t n = strlen(secret);
		if (n != 2 * len) {
			fprintf(stderr, "nvmeof gen-tls-key: --secret: %zu hex digits; --hmac %u needs %zu (%zu bytes)\n", n,
				hmac, 2 * len, len);
			return 2;
		}
		for (size_t i = 0; i < len; i++) {
			int h = hexval(secret[2 * i]), l = hexval(secret[2 * i + 1]);
			if (h < 0 || l < 0) {
				OPENSSL_cleanse(key, sizeof(key));
				fprintf(stderr, "nvmeof gen-tls-key: --secret: not hex (digit %zu)\n", h < 0 ? 2 * i + 1 : 2 * i + 2);
				return 2;
			}
			key[i] = (uint8_t)(h << 4 | l);
		}
	} else if (getrandom(key, len, 0) != (ssize_t)len) {
		fprintf(stderr, "nvmeof gen-tls-key: getrandom: %s\n", strerror(errno));
		return 1;
	}
	print_key(key, len);
	int rc = 0;
	if (ia.insert) {
		struct tls_key k = {.len = (uint8_t)len, .hash = (uint8_t)hmac, .cipher = (uint8_t)hmac};
		memcpy(k.key, key, len);
		rc = insert_key("gen-tls-key", &k, &ia);
		tls_key_clear(&k);
	}
	OPENSSL_cleanse(key, sizeof(key));
	return rc;
}

/* The first line of stdin, without its newline, into buf. */
static int read_stdin_key(char *buf, size_t cap)
{
	if (!fgets(buf, (int)cap, stdin)) {
		fprintf(stderr, "nvmeof check-tls-key: no key: give --keydata, or the key on stdin\n");
		return -1;
	}
	buf[strcspn(buf, "\r\n")] = 0;
	return 0;
}

static int default_hostnqn(const char *sub, char *buf, size_t cap)
{
	FILE *f = fopen("/etc/nvme/hostnqn", "r");
	buf[0] = 0;
	if (f) {
		if (fgets(buf, (int)cap, f))
			buf[strcspn(buf, " \t\r\n")] = 0;
		fclose(f);
	}
	if (!buf[0]) {
		fprintf(stderr, "nvmeof %s: no host NQN: give --hostnqn (/etc/nvme/hostnqn has none)\n", sub);
		return -1;
	}
	return 0;
}

int tool_check_tls_key(int argc, char **argv)
{
	static const struct option lo[] = {
		{"keydata", required_argument, 0, 'd'},	  {"hostnqn", required_argument, 0, 'n'},
		{"subsysnqn", required_argument, 0, 'c'}, {"identity", required_argument, 0, 'I'},
		{"insert", no_argument, 0, 'i'},	  {"keyring", required_argument, 0, 'k'},
		{"keytype", required_argument, 0, 't'},	  {"compat", no_argument, 0, 'C'},
		{"help", no_argument, 0, 'h'},		  {0, 0, 0, 0},
	};
	const char *keydata = NULL, *hostnqn = NULL, *subnqn = NULL;
	struct insert_args ia = {0};
	unsigned ident = 0;
	char optbuf[64], line[256], hbuf[256];
	int ch, li = -1, rc = 0;
	opterr = 0;
	while ((ch = getopt_long(argc - 1, argv + 1, ":d:n:c:I:ik:t:Ch", lo, &li)) != -1) {
		const char *opt = tool_optlabel(lo, &li, ch, argv + 1, optbuf, sizeof(optbuf));
		switch (ch) {
		case 'd': keydata = optarg; break;
		case 'n': if (nqn_ok("check-tls-key", opt, optarg)) return 2; hostnqn = optarg; break;
		case 'c': if (nqn_ok("check-tls-key", opt, optarg)) return 2; subnqn = optarg; break;
		case 'I': if (small_number("check-tls-key", opt, optarg, 0, 1, &ident)) return 2; break;
		case 'C': ia.compat = true; break;
		case 'i': ia.insert = true; break;
		case 'k': ia.keyring = optarg; break;
		case 't': ia.keytype = optarg; break;
		case 'h': check_usage(stdout); return 0;
		case ':': fprintf(stderr, "nvmeof check-tls-key: %s needs a value\n", opt); return 2;
		default: fprintf(stderr, "nvmeof check-tls-key: option %s is not one of this subcommand's\n", opt); return 2;
		}
	}
	if (optind + 1 < argc) {
		fprintf(stderr, "nvmeof check-tls-key: unexpected argument '%s'\n", tool_shown(argv[optind + 1]));
		return 2;
	}
	if (!keydata) {
		if (read_stdin_key(line, sizeof(line)))
			return 2;
		keydata = line;
	}
	struct tls_key k;
	if (tls_key_parse(keydata, "--keydata", &k)) {
		fprintf(stderr, "nvmeof check-tls-key: %s\n", nvmeof_errmsg());
		rc = 1;
		goto out;
	}
	if (ia.insert) {
		ia.hostnqn = hostnqn;
		ia.subnqn = subnqn;
		ia.ident = ident;
		rc = insert_key("check-tls-key", &k, &ia);
		goto out;
	}
	if (!subnqn) {
		if (ident == 1) {
			fprintf(stderr, "nvmeof check-tls-key: --identity 1 needs the subsystem: --subsysnqn\n");
			rc = 2;
			goto out;
		}
		printf("valid: a %u-byte key, hash %02u (%s), cipher suite %s\n", k.len, k.hash,
		       k.hash == 2 ? "SHA-384" : k.hash == 1 ? "SHA-256" : "none: the key is the retained PSK",
		       tls_cipher_name(k.cipher));
		goto out;
	}
	if (!hostnqn) {
		if (default_hostnqn("check-tls-key", hbuf, sizeof(hbuf))) {
			rc = 2;
			goto out;
		}
		hostnqn = hbuf;
	}
	char id[TLS_IDENTITY_MAX];
	uint8_t psk[TLS_KEY_MAX];
	if (tls_psk_derive(&k, (int)ident | (ia.compat ? TLS_PSK_COMPAT : 0), hostnqn, subnqn, id, sizeof(id), psk)) {
		fprintf(stderr, "nvmeof check-tls-key: %s\n", nvmeof_errmsg());
		rc = 1;
	} else {
		printf("%s\n", id);
	}
	OPENSSL_cleanse(psk, sizeof(psk));
out:
	tls_key_clear(&k);
	OPENSSL_cleanse(line, sizeof(line));
	return rc;
}
