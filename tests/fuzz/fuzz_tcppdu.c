/* The NVMe/TCP receiver fed a hostile controller's stream: any bytes, cut
 * into any pieces, under any negotiated digests. It must never write
 * outside the one command's buffer (exactly sized, so ASan sees a byte
 * over), never ask for zero bytes (a read that never ends), and every
 * refusal must come with a message. Input: byte 0 the digests, whether
 * the ICResp is still due and whether pieces go through the read-ahead
 * (tcp_rx_feed), byte 1 the piece size, then the stream. */
#include <stdlib.h>
#include <string.h>

#include "tcp_pdu.h"

#define BUF_LEN 9000

static uint8_t *dest(void *ctx, const struct tcp_pdu *p, const char **why)
{
	if (p->cccid != 7) {
		*why = "C2HData: CCCID names no command in flight";
		return NULL;
	}
	if ((uint64_t)p->datao + p->datal > BUF_LEN) {
		*why = "C2HData: data beyond the command's buffer";
		return NULL;
	}
	return (uint8_t *)ctx + p->datao;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t mode = data[0];
	size_t piece = data[1] ? data[1] : 4096;
	data += 2;
	size -= 2;
	uint8_t *buf = malloc(BUF_LEN);
	if (!buf)
		return 0;
	struct tcp_rx r;
	tcp_rx_init(&r, dest, buf);
	struct tcp_neg n = {.hdgst = mode & 1, .ddgst = mode & 2, .cpda = 0, .maxh2cdata = 8192};
	if (!(mode & 4))
		tcp_rx_negotiated(&r, &n);
	while (size) {
		size_t room;
		const char *why = NULL;
		int rc;
		if (mode & 8) {
			/* the read-ahead: a piece read at once, parsed a PDU at a time */
			size_t len = piece < size ? piece : size;
			rc = tcp_rx_feed(&r, data, len, &room, &why);
			if (room > len || (!room && rc >= 0))
				abort(); /* taken more than given, or nothing: a loop that never ends */
		} else {
			uint8_t *to = tcp_rx_want(&r, &room);
			if (!room)
				abort(); /* a read of nothing: the socket layer would spin forever */
			if (room > piece)
				room = piece;
			if (room > size)
				room = size;
			memcpy(to, data, room);
			rc = tcp_rx_advance(&r, room, &why);
		}
		data += room;
		size -= room;
		if (rc < 0) {
			if (!why || !*why)
				abort();
			break;
		}
		if (rc == TCP_RX_PDU && r.pdu.type == NVME_TCP_ICRESP) {
			struct tcp_neg got;
			if (tcp_icresp_parse(r.hdr, NVME_TCP_IC_SIZE, n.hdgst, n.ddgst, &got, &why) == 0)
				tcp_rx_negotiated(&r, &got);
			else if (!why)
				abort();
		}
		if (rc == TCP_RX_PDU && r.pdu.type == NVME_TCP_C2H_TERM)
			(void)tcp_fes_name(r.pdu.fes);
	}
	free(buf);
	return 0;
}
