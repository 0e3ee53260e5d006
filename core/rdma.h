/* The RDMA transport seen from the queue: one RC queue pair with its CM id,
 * completion queue and completion channel. */
#ifndef NVMEOF_RDMA_H
#define NVMEOF_RDMA_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stdint.h>

struct tr_conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_cq_ex *cqx;     /* cq's extended form, when it carries timestamps */
	struct ibv_qp *qp;
	unsigned unacked;   /* CQ events not yet acknowledged */
	bool armed;         /* CQ notification requested, event not yet consumed */
	/* the last poll filled its batch: the CQ may hold more, which an
	 * arm announces to nobody (only completions added after it) */
	bool cq_full;
	bool connected;
	bool shared_cq;     /* cq and cc belong to a poll group */
	uint32_t max_inline; /* bytes a send may carry inline */
	uint8_t retry;      /* enum cr_class of the last failed CM step (connretry.h) */
	int vector;         /* the CQ's completion vector */
};

struct tr_qp_params {
	uint32_t send_wr, recv_wr, send_sge;
	uint32_t inline_bytes;          /* ask for this much inline data (0: none) */
	int vector;                     /* completion vector, modulo the device's count */
	const struct tr_conn *shared;   /* a poll group's CQ and channel, or NULL for our own */
};

/* Address and route resolution, each bounded by timeout_ms. Afterwards
 * c->id->verbs is the device the route goes through. */
int tr_resolve(struct tr_conn *c, const struct sockaddr *dst, const struct sockaddr *src,
	       int timeout_ms);
/* A CQ with its completion channel (a queue's own, or a poll group's). */
/* ts: a CQ whose completions carry the NIC's clock (tr_poll_ex reads them) */
int tr_cq_create(struct tr_conn *c, struct ibv_context *verbs, int cqe, int vector, bool ts);
/* Completions of an extended CQ as ibv_poll_cq gives them, and each one's
 * NIC clock into ts (NULL: not wanted). */
int tr_poll_ex(struct tr_conn *c, int n, struct ibv_wc *wc, uint64_t *ts);
void tr_cq_destroy(struct tr_conn *c);
/* An RC QP on pd, on its own CQ or a shared one. */
int tr_create_qp(struct tr_conn *c, struct ibv_pd *pd, const struct tr_qp_params *p);
/* The CM connect parameters for a host on a device with attributes da. */
void tr_conn_param(const struct ibv_device_attr *da, const void *priv, uint8_t priv_len,
		   struct rdma_conn_param *p);
/* CM connect with NVMe/RDMA private data; *crqsize from the accept. */
int tr_connect(struct tr_conn *c, const void *priv, uint8_t priv_len, int timeout_ms,
	       uint16_t *crqsize);
/* Requests a completion event, then the caller polls once more before
 * sleeping in tr_sleep (a completion may have landed in between). */
int tr_arm(struct tr_conn *c);
/* Sleeps on the completion channel: 1 event, 0 timeout, <0 error. */
int tr_sleep(struct tr_conn *c, int timeout_ms);
int tr_wait_fd(struct tr_conn *c);  /* the completion channel's descriptor */
int tr_take_event(struct tr_conn *c); /* its event, once a poll found it ready */
int tr_event_fd(struct tr_conn *c); /* the CM channel's; -1: none */
/* Moves the QP to error (every posted WR is flushed back) once. */
void tr_disconnect(struct tr_conn *c);
/* Non-blocking: true when the CM says the connection is gone; then
 * disconnects our side too. */
bool tr_disconnected(struct tr_conn *c);
/* Disconnect (the QP to error, the CM told) and release everything at once,
 * never waiting for the target's answer; safe on a partial conn. */
void tr_close(struct tr_conn *c);

#endif
