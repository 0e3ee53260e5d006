/* An NVMe/TCP command from the SQE the queue layer built for RDMA: the
 * capsule's PDU header, and where its data lives and goes. */
#include "tcp_cmd.h"

#include <errno.h>
#include <string.h>

#include "protocol.h"
#include "tcp_crc32c.h"

static uint8_t data_dir(const uint8_t *sqe)
{
	/* the opcode's (a Fabrics command's FCTYPE's) low bits: 01b to the
	 * controller, 10b from it (NVMe Base, Figure "Opcodes") */
	uint8_t op = sqe[0] == NVME_FABRICS_OPCODE ? sqe[4] : sqe[0];
	return op & 3;
}

int tcp_cmd_build(struct tcp_cmd *c, const struct ibv_send_wr *wr, uint32_t icd_max, const struct tcp_neg *neg)
{
	const uint8_t *in = (const uint8_t *)(uintptr_t)wr->sg_list[0].addr;
	uint8_t sqe[64];
	memcpy(sqe, in, 64);
	uint8_t type = sqe[39];
	c->cid = nvme_sqe_cid(sqe);
	c->dir = data_dir(sqe);
	c->icd = NULL;
	c->icd_len = 0;
	c->data = NULL;
	c->len = 0;
	c->h2c_active = false;
	c->h2c_done = c->c2h_next = 0;
	c->data_bad = false;
	c->wr_id = wr->wr_id;
	c->signaled = wr->send_flags & IBV_SEND_SIGNALED;
	if (type == NVME_SGL_TYPE_DATA_OFFSET) {
		if (wr->num_sge < 2)
			return EINVAL;
		c->icd = (uint8_t *)(uintptr_t)wr->sg_list[1].addr;
		c->icd_len = wr->sg_list[1].length;
	} else if (type == NVME_SGL_TYPE_KEYED_DATA) {
		c->data = (uint8_t *)(uintptr_t)get_le64(sqe + 24);
		c->len = get_le32(sqe + 32) & 0xffffff;
		/* nvmet waits for a write's data in the capsule when it fits
		 * its in-capsule size, and sends no R2T for it: such data goes
		 * in the capsule, as the kernel's host sends it */
		bool icd = c->dir == DIR_H2C && c->len && c->len <= icd_max;
		/* a Fabrics command's data (Connect, DH-HMAC-CHAP) goes in the
		 * capsule up to 8 KiB on every queue, as the kernel's host sends
		 * it (NVME_TCP_ADMIN_CCSZ): a target may wait for it there */
		if (sqe[0] == NVME_FABRICS_OPCODE && c->dir == DIR_H2C && c->len && c->len <= NVME_TCP_FABRICS_ICD)
			icd = true;
		if (icd) {
			c->icd = c->data;
			c->icd_len = c->len;
		}
		tcp_sqe_sgl(sqe, c->len, icd);
	} else {
		return EINVAL; /* a user's SGL of another kind: no meaning over TCP */
	}
	c->hlen = tcp_cmd_hdr(c->hdr, sqe, c->icd_len, neg);
	if (c->icd_len && neg->ddgst)
		put_le32(c->cmd_dd, crc32c(c->icd, c->icd_len));
	return 0;
}
