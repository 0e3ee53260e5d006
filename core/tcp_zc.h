/* MSG_ZEROCOPY for an NVMe/TCP queue's large writes (the kernel's
 * Documentation/networking/msg_zerocopy.rst): an H2CData payload of at least
 * tcp_zerocopy bytes is sent without copying, and the kernel holds the
 * command's pages until it notifies on the socket's error queue that it is
 * done with them. Each successful MSG_ZEROCOPY sendmsg, partial or whole,
 * takes the socket's next ID, counted from 0; a notification names a range
 * of IDs. Until every ID of a write is notified the buffer is the kernel's,
 * so the write's response is held (its completion would hand the buffer
 * back to the user) and delivered when the last of them is. */
#ifndef NVMEOF_TCP_ZC_H
#define NVMEOF_TCP_ZC_H

#include <stdbool.h>
#include <stdint.h>

struct tcp_conn;
struct tcp_cmd;

struct tcp_zc {
	uint32_t min;          /* payloads of this many bytes go zerocopy; 0: none */
	uint32_t cap;          /* IDs that may be unnotified at once: more go by copy */
	uint32_t head, next;   /* the oldest unnotified ID; the ID the next send takes */
	struct tcp_zc_id { uint16_t slot; bool done; } *ring; /* by ID % cap */
	uint32_t ready;        /* held responses all of whose IDs are notified */
	uint64_t sends, copied; /* IDs taken; of them, the kernel copied after all */
	uint64_t refused;      /* sends the kernel refused to pin (ENOBUFS): sent by copy */
};

/* Sized by the queue's depth, before the first connect (the I/O path
 * allocates nothing); min 0 turns it off. -ENOMEM. */
int tcp_zc_init(struct tcp_conn *t, uint32_t min);
void tcp_zc_free(struct tcp_conn *t);
/* An H2CData payload of len bytes is to go with MSG_ZEROCOPY. */
bool tcp_zc_wants(const struct tcp_conn *t, uint32_t len);
/* A MSG_ZEROCOPY sendmsg of slot's data succeeded: it took the next ID. */
void tcp_zc_sent(struct tcp_conn *t, uint16_t slot);
static inline bool tcp_zc_outstanding(const struct tcp_zc *z) { return z->head != z->next; }
/* A response for c, whose data the kernel may still hold, or whose PDUs
 * are still in the send queue (a target that answered a write before
 * taking all its data): kept in c until its last ID is notified and its
 * last PDU has left. False: nothing to wait for. */
bool tcp_zc_hold(struct tcp_conn *t, struct tcp_cmd *c, const uint8_t *cqe);
/* Takes the error queue's notifications; delivers the responses whose
 * last ID they cover, while receives are posted. */
void tcp_zc_reap(struct tcp_conn *t);
/* IDs lo..hi (inclusive, as the kernel counts: modulo 2^32) are reported
 * done, copied or not; false: IDs not outstanding (reap's, and tests') */
bool tcp_zc_notified(struct tcp_conn *t, uint32_t lo, uint32_t hi, bool copied);
/* Responses whose IDs are all notified, as receives allow. */
void tcp_zc_release(struct tcp_conn *t);
/* A new socket, or the end of one (its close purges what the kernel had
 * not notified, see tcp_conn_fail): IDs start at 0, nothing held. The
 * held responses are forgotten: their commands complete with the flush,
 * as every other. */
void tcp_zc_reset(struct tcp_conn *t);

#endif
