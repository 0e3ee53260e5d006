/*
 * In-band authentication, DH-HMAC-CHAP (NVMe Base 2.x section 8.13,
 * NVMe-oF "Authentication"): secrets, messages, the response computation
 * and the host's side of one transaction as a state machine. Nothing here
 * does I/O: the caller sends the commands auth_tx_next builds and feeds
 * their answers to auth_tx_answer, synchronously at bring-up (auth_run.c)
 * or from a queue's poll after a reconnect.
 */
#ifndef NVMEOF_AUTH_H
#define NVMEOF_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvmeof.h"

/* Connect response DW0: the controller asks for authentication (ATR) or
 * for a secure channel (ASCR, TLS) -- bit numbers as the kernel's nvme.h. */
#define NVMF_CONNECT_AUTHREQ_ATR (1u << 17)
#define NVMF_CONNECT_AUTHREQ_ASCR (1u << 18)

/* Hash function identifiers (also the DHHC-1 transformation XX, 1..3) */
enum { AUTH_HASH_SHA256 = 1, AUTH_HASH_SHA384 = 2, AUTH_HASH_SHA512 = 3 };
/* DH group identifiers */
enum { AUTH_DH_NULL = 0, AUTH_DH_FFDHE2048 = 1, AUTH_DH_FFDHE3072 = 2, AUTH_DH_FFDHE4096 = 3,
       AUTH_DH_FFDHE6144 = 4, AUTH_DH_FFDHE8192 = 5 };
#define AUTH_HASH_MAX 64   /* SHA-512 */
#define AUTH_KEY_MAX 64    /* a DHHC-1 secret: 32, 48 or 64 bytes */
#define AUTH_DH_MAX 1024   /* ffdhe8192 */

/* Message types (AUTH-Type) and identifiers (AUTH-Id) */
enum { AUTH_TYPE_COMMON = 0x00, AUTH_TYPE_DHCHAP = 0x01 };
enum {
	AUTH_MSG_NEGOTIATE = 0x00,
	AUTH_MSG_CHALLENGE = 0x01,
	AUTH_MSG_REPLY = 0x02,
	AUTH_MSG_SUCCESS1 = 0x03,
	AUTH_MSG_SUCCESS2 = 0x04,
	AUTH_MSG_FAILURE2 = 0xf0,
	AUTH_MSG_FAILURE1 = 0xf1,
};
/* AUTH_Failure reason code and its explanations */
#define AUTH_FAIL_REASON_FAILED 0x01
enum {
	AUTH_FAIL_FAILED = 0x01,
	AUTH_FAIL_NOT_USABLE = 0x02,
	AUTH_FAIL_CONCAT_MISMATCH = 0x03,
	AUTH_FAIL_HASH_UNUSABLE = 0x04,
	AUTH_FAIL_DHGROUP_UNUSABLE = 0x05,
	AUTH_FAIL_INCORRECT_PAYLOAD = 0x06,
	AUTH_FAIL_INCORRECT_MESSAGE = 0x07,
};
#define AUTH_PROTO_DHCHAP 0x01 /* AUTH-ID of a Negotiate protocol descriptor */
#define AUTH_RECV_MAX 4096     /* what an AUTH_Receive asks for (the kernel host's buffer) */

const char *auth_hash_name(uint8_t hashid);     /* "SHA-256"; "unknown" */
const char *auth_dhgroup_name(uint8_t dhgid);   /* "null", "ffdhe2048"; "unknown" */
const char *auth_failure_name(uint8_t exp);     /* "Authentication failed" ... */
size_t auth_hash_len(uint8_t hashid);           /* 0: not a hash we know */
size_t auth_dh_len(uint8_t dhgid);              /* the group's size in bytes; 0 for null or unknown */

/* ---- secrets (auth_key.c) ---- */
struct auth_key {
	uint8_t key[AUTH_KEY_MAX];
	uint8_t len;       /* 32, 48 or 64 */
	uint8_t transform; /* 0 none, else the hash (1..3) HMAC'd with the NQN */
};
/* A secret in the DHHC-1:XX:<base64 of key and CRC-32>: form (the final
 * colon optional). Refuses, naming `what` and never the secret: a wrong
 * prefix, an unknown XX, bad base64, a length other than 32/48/64, a CRC
 * that does not match. NVMEOF_EINVAL. */
int auth_key_parse(const char *secret, const char *what, struct auth_key *out);
/* The key as used in the HMAC: the key itself (XX 00), else
 * HMAC-H(key, nqn || "NVMe-over-Fabrics"). out has AUTH_KEY_MAX bytes. */
int auth_key_transform(const struct auth_key *k, const char *nqn, uint8_t *out, size_t *out_len);
void auth_key_clear(struct auth_key *k);
/* Key material for a controller's lifetime: zeroed, on pages kept out of
 * core dumps (MADV_DONTDUMP) where the platform allows; NULL when out of
 * memory. auth_secret_free cleanses before it unmaps. */
void *auth_secret_alloc(size_t n);
void auth_secret_free(void *p, size_t n);
/* What the host offers in Negotiate: a comma-separated list of names
 * ("sha256,sha512"; "null,ffdhe2048") as a mask of identifiers (bit i:
 * identifier i). NULL or empty: everything we support. NVMEOF_EINVAL with
 * the unknown name. */
int auth_offer_parse(const char *list, bool dh, uint32_t *mask);
#define AUTH_HASHES_ALL 0x0eu /* SHA-256, SHA-384, SHA-512 */
#define AUTH_DHGROUPS_ALL 0x3fu /* null, ffdhe2048 .. ffdhe8192 */
uint32_t auth_crc32(const uint8_t *p, size_t n); /* zlib's CRC-32 */
/* The interchange forms (DHHC-1, NVMeTLSkey-1) end the key with its CRC-32,
 * little-endian: whether raw[n..n+3] holds that of raw[0..n). */
bool auth_crc32_trails(const uint8_t *raw, size_t n);
/* Strict RFC 4648 base64 (padding required, no leftover bits), as the
 * kernel reads secrets: the bytes, or -1 when malformed or over cap. */
int auth_b64_decode(const char *s, size_t n, uint8_t *out, size_t cap);

/* ---- messages (auth_msg.c) ---- */
struct auth_msg {
	uint8_t type, id;   /* AUTH_TYPE_*, AUTH_MSG_* */
	uint16_t tid;       /* transaction identifier */
	/* Negotiate */
	uint8_t sc_c;
	uint8_t nhash, ndh; /* of the one DH-HMAC-CHAP descriptor */
	uint8_t hashes[30], dhgroups[30];
	/* Challenge, Reply, Success1 */
	uint8_t hl;         /* hash length */
	uint8_t hashid, dhgid;     /* Challenge */
	uint8_t valid;      /* Reply: CVALID; Success1: RVALID */
	uint16_t dhvlen;
	uint32_t seqnum;
	const uint8_t *rval, *cval, *dhv; /* into the parsed buffer / what to encode */
	/* Failure1/2 */
	uint8_t rescode, rescode_exp;
};
/* Bytes the message takes on the wire; 0 when it does not fit cap or is not
 * one we encode. */
size_t auth_msg_encode(const struct auth_msg *m, uint8_t *buf, size_t cap);
/* Parses any of the messages above from len bytes. -1 with *why (static
 * text) when it is short, of an unknown kind, or its lengths overrun. */
int auth_msg_parse(const uint8_t *buf, size_t len, struct auth_msg *m, const char **why);

/* ---- crypto (auth_crypto.c): OpenSSL 3 ---- */
/* The DH-HMAC-CHAP response: HMAC-H(key, C || S || T_ID || SC_C || "HostHost" || NQNh || 0 || NQNs)
 * for the host's, HMAC-H(key, C || S || T_ID || SC_C || "Controller" || NQNs || 0 || NQNh) for
 * the controller's. */
int auth_response(uint8_t hashid, const uint8_t *key, size_t klen, const uint8_t *chal, uint32_t seq,
		  uint16_t tid, bool controller, const char *hostnqn, const char *subnqn, uint8_t *out);
/* The augmented challenge with a DH exchange: HMAC-H(H(g^xy mod p), C). */
int auth_augment(uint8_t hashid, const uint8_t *skey, size_t skey_len, const uint8_t *chal, uint8_t *out);
/* An ephemeral key of the group; its public value, padded to the group's
 * size, in pub (auth_dh_len bytes). */
int auth_dh_generate(uint8_t dhgid, void **key, uint8_t *pub);
/* g^xy mod p from our key and the peer's public value, padded to the group's
 * size. A peer value shorter than the group is read as left-padded with
 * zeros (an unpadded big-endian number); a longer one is refused, and so is
 * one outside 1 < Y < p-1 (RFC 7919's check for these safe-prime groups,
 * instead of OpenSSL's full subgroup check, which costs 0.2 s at ffdhe8192). */
int auth_dh_derive(void *key, uint8_t dhgid, const uint8_t *peer, size_t peer_len, uint8_t *skey);
void auth_dh_free(void *key);
int auth_random(uint8_t *p, size_t n);
bool auth_equal(const uint8_t *a, const uint8_t *b, size_t n); /* constant time */
void auth_cleanse(void *p, size_t n);

/* ---- one transaction, the host's side (auth_tx.c) ---- */
enum auth_step { AUTH_NEGOTIATE, AUTH_RECV_CHALLENGE, AUTH_DH_STEP, AUTH_REPLY, AUTH_RECV_SUCCESS1,
		 AUTH_SUCCESS2, AUTH_FAILURE2, AUTH_DONE };
struct auth_tx {
	const struct auth_key *host_key, *ctrl_key; /* ctrl_key NULL: unidirectional */
	const char *hostnqn, *subnqn;
	uint16_t qid, tid;
	enum auth_step step;
	uint8_t hashid, dhgid, hl;
	uint32_t s1, s2;
	uint8_t c1[AUTH_HASH_MAX], c2[AUTH_HASH_MAX], resp[AUTH_HASH_MAX];
	uint8_t skey[AUTH_DH_MAX];
	uint8_t pub[AUTH_DH_MAX];
	uint8_t peer[AUTH_DH_MAX]; /* the Challenge's DH value, until the DH step */
	uint16_t peer_len;
	size_t skey_len;
	uint32_t hashes, dhgroups; /* offered in Negotiate (masks, bit = identifier) */
	bool host_initiated; /* the controller did not ask (ATR clear): we started it */
	bool defer_dh;       /* the Challenge's answer stops before the DH step (AUTH_TX_DH) */
	uint8_t fail_exp; /* the Failure2 we send: its explanation */
	int err;          /* the error a Failure2 ends with */
	char why[200];    /* its message: the one the transaction fails with */
};
#define AUTH_TX_MORE 1
#define AUTH_TX_DH 2 /* defer_dh: call auth_tx_dh_step, which may take tens of ms */
void auth_tx_init(struct auth_tx *t, const struct auth_key *host_key, const struct auth_key *ctrl_key,
		  const char *hostnqn, const char *subnqn, uint16_t qid, uint16_t tid);
/* Whether a Connect's answer (cdw0) leads to a transaction on queue qid:
 * when the controller asks (ATR), which needs a host secret; and when it
 * does not but a controller secret was given, since that secret means the
 * controller must prove itself: the host starts the transaction (NVMe Base
 * lets a host send AUTH_Send Negotiate on a queue at any time; nvmet and
 * SPDK's target accept it), unless allow_unauth says to accept a
 * controller that does not require authentication. 0 with *needed and
 * *host_initiated; an error (ASCR: TLS; ATR without a host secret). */
int auth_required(uint32_t cdw0, bool host_key, bool ctrl_key, bool allow_unauth, uint16_t qid,
		  const char *subnqn, const char *hostnqn, bool *needed, bool *host_initiated);
/* The next command: its SQE, and in buf (cap bytes, registered) the data
 * to send or room for what comes back; *data_len its length. */
int auth_tx_next(struct auth_tx *t, uint8_t *sqe, uint8_t *buf, size_t cap, uint32_t *data_len);
/* The command's completion (rc: 0 or NVMEOF_E*; cpl when rc is
 * NVMEOF_ENVME) and, for an AUTH_Receive, the data in buf. AUTH_TX_MORE:
 * call auth_tx_next again; 0: authenticated; else an error with its message
 * (the reason by name, never key material). */
int auth_tx_answer(struct auth_tx *t, int rc, const struct nvmeof_cpl *cpl, const uint8_t *buf, size_t len);
/* With defer_dh, after auth_tx_answer returned AUTH_TX_DH: our DH key,
 * the shared secret and our response (0.2-25 ms by group, BENCHMARKS.md),
 * so a caller that must not block (a queue's poll) runs it on another
 * thread. AUTH_TX_MORE, as auth_tx_answer. */
int auth_tx_dh_step(struct auth_tx *t);
void auth_tx_clear(struct auth_tx *t);

#endif
