/* The socket under an NVMe/TCP queue: connect with a deadline, the options
 * a latency user expects, and the connection's initialization (ICReq and
 * ICResp). Byte transfer is plain non-blocking send and recv on the
 * descriptor; a TLS layer would sit here, between these steps and the
 * queue (README.md, "NVMe/TCP"). */
#ifndef NVMEOF_TCP_SOCK_H
#define NVMEOF_TCP_SOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "tcp_pdu.h"

struct nvmeof_ctrl_opts;

/* The controller options' socket options (tcp_priority, tcp_tos,
 * tcp_busy_poll_us, tcp_zerocopy): in range, and set only over TCP. */
int tcp_sockopts_check(const struct nvmeof_ctrl_opts *o, bool tcp);
/* A connected non-blocking TCP socket with TCP_NODELAY and o's socket
 * options (o may be NULL: none), within timeout_ms: *fd, or an error with
 * *cls the retry class (connretry.h): refused is final, silence and
 * unreachable are transient once the target was reached. */
int tcp_sock_connect(const struct sockaddr *dst, const struct sockaddr *src, const struct nvmeof_ctrl_opts *o,
		     uint32_t timeout_ms, uint16_t qid, int *fd, uint8_t *cls);
/* ICReq out, ICResp in and checked, within timeout_ms: *neg is what applies
 * from now on (rx is left ready for the next PDU). ssl: OpenSSL's records;
 * tls without ssl: kTLS's. */
int tcp_sock_init_conn(int fd, void *ssl, bool tls, bool hdgst, bool ddgst, uint32_t timeout_ms, uint16_t qid,
		       struct tcp_rx *rx, struct tcp_neg *neg);
/* The interface that holds the connected socket's source address (its NIC
 * for placement: NUMA node, IRQs); "" when none is found. */
void tcp_sock_netdev(int fd, char *out, size_t len);

#endif
