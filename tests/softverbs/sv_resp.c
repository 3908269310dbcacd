/* SPDX-License-Identifier: Apache-2.0 */
/*
 * softverbs: the responder side of a QP.  Requests arrive on the stream the
 * peer opened; each is checked (QP state, rkey, PD, access flags, bounds)
 * before its payload is received straight into the target memory, and is
 * answered with an ACK, a NAK or READ data.
 */
#define _GNU_SOURCE
#include "sv_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* --- responder -------------------------------------------------------------- */

static void queue_rsp(struct sv_qp *qp, enum sv_rsp_type type, uint8_t status, uint32_t verr,
		      uint8_t *data, uint32_t len)
{
	struct sv_rsp *r = calloc(1, sizeof(*r));

	if (!r) {
		free(data);
		fprintf(stderr, "softverbs: out of memory for a response\n");
		return;
	}
	r->hdr = (struct sv_rsp_hdr){.type = (uint8_t)type,
				     .status = status,
				     .vendor_err = verr,
				     .seq = qp->rx_hdr.seq,
				     .len = len};
	r->data = data;
	if (qp->rsp_tail)
		qp->rsp_tail->next = r;
	else
		qp->rsp_head = r;
	qp->rsp_tail = r;
}

void sv_resp_tx(struct sv_qp *qp)
{
	while (qp->rsp_head && qp->rsp_fd >= 0 && qp->rsp_writable) {
		struct sv_rsp *r = qp->rsp_head;
		size_t total = sizeof(r->hdr) + (r->data ? r->hdr.len : 0);
		struct iovec iov[2];
		struct msghdr mh = {.msg_iov = iov};
		ssize_t n;

		if (r->done < sizeof(r->hdr)) {
			iov[mh.msg_iovlen++] =
				(struct iovec){(char *)&r->hdr + r->done, sizeof(r->hdr) - r->done};
			if (r->data)
				iov[mh.msg_iovlen++] = (struct iovec){r->data, r->hdr.len};
		} else {
			iov[mh.msg_iovlen++] = (struct iovec){r->data + (r->done - sizeof(r->hdr)),
							      total - r->done};
		}
		n = sendmsg(qp->rsp_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				qp->rsp_writable = false;
			} else {
				sv_close_stream(qp->ctx, &qp->rsp_fd);
				sv_free_responses(qp);
			}
			return;
		}
		r->done += (size_t)n;
		if (r->done == total) {
			qp->rsp_head = r->next;
			if (!qp->rsp_head)
				qp->rsp_tail = NULL;
			free(r->data);
			free(r);
		}
	}
}

/* min_rnr_timer codes in units of 10 us (IBTA table). */
static const uint32_t rnr_10us[32] = {
	65536, 1,    2,	   3,	 4,    6,     8,     12,    16,	   24,	  32,
	48,    64,   96,   128,	 192,  256,   384,   512,   768,   1024,  1536,
	2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

/* Check a remote access against the MR table; IBV_WC_SUCCESS or why not. */
static enum ibv_wc_status check_remote(struct sv_qp *qp, int flag, uint32_t *verr,
				       struct sv_mr **out)
{
	const struct sv_req_hdr *h = &qp->rx_hdr;
	struct sv_mr *mr = sv_mr_lookup(qp->ctx, h->rkey);

	*verr = SV_VERR_NONE;
	if (!mr)
		*verr = SV_VERR_RKEY;
	else if (&mr->pd->pd != qp->vqp.qp.pd)
		*verr = SV_VERR_PD;
	else if (!(mr->access & flag) || !(qp->access & flag))
		*verr = SV_VERR_ACCESS;
	else if (h->raddr < mr->iova || h->raddr + h->len > mr->iova + mr->len ||
		 h->raddr + h->len < h->raddr)
		*verr = SV_VERR_BOUNDS;
	if (*verr)
		return IBV_WC_REM_ACCESS_ERR;
	*out = mr;
	return IBV_WC_SUCCESS;
}

/* Take a receive WQE for a SEND or WRITE_WITH_IMM.  False: none posted. */
static bool take_rwqe(struct sv_qp *qp)
{
	if (!qp->rq_count) {
		if (!qp->rx_stalled_rnr) {
			uint8_t retry = qp->rx_hdr.rnr_retry;

			qp->rx_stalled_rnr = true;
			qp->rx_rnr_deadline_ns =
				retry == 7 ? 0
					   : sv_now_ns() +
						     10000ull * rnr_10us[qp->min_rnr_timer & 31] *
							     (retry + 1u);
		}
		if (!qp->rx_rnr_sent) {
			queue_rsp(qp, SV_RSP_RNR_WAIT, 0, 0, NULL, 0);
			qp->rx_rnr_sent = true;
		}
		return false;
	}
	qp->rx_rwqe = qp->rq[qp->rq_head];
	qp->rq_head = (qp->rq_head + 1) % qp->rq_cap;
	qp->rq_count--;
	qp->rx_has_rwqe = true;
	qp->rx_stalled_rnr = false;
	qp->rx_rnr_deadline_ns = 0;
	return true;
}

static void nak(struct sv_qp *qp, enum ibv_wc_status status, uint32_t verr)
{
	qp->rx_nak = true;
	qp->rx_status = (uint8_t)status;
	qp->rx_verr = verr;
	qp->rx_dst = NULL;
}

/* A complete header is in rx_hdr: decide where its payload goes.
 * False: wait (no receive WQE yet). */
static bool rx_start(struct sv_qp *qp)
{
	const struct sv_req_hdr *h = &qp->rx_hdr;
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	struct sv_mr *mr = NULL;
	uint32_t verr = 0;

	switch (h->op) {
	case SV_OP_WRITE_IMM:
	case SV_OP_SEND:
		if (!qp->rx_has_rwqe && !take_rwqe(qp))
			return false;
		break;
	default:
		break;
	}
	switch (h->op) {
	case SV_OP_WRITE:
	case SV_OP_WRITE_IMM:
		if (h->len)
			st = check_remote(qp, IBV_ACCESS_REMOTE_WRITE, &verr, &mr);
		if (st != IBV_WC_SUCCESS)
			nak(qp, st, verr);
		else if (mr)
			qp->rx_dst = mr->host + (h->raddr - mr->iova);
		break;
	case SV_OP_SEND: {
		uint64_t room = 0;

		for (int i = 0; i < qp->rx_rwqe.nsge; i++) {
			struct sv_mr *m = sv_mr_lookup(qp->ctx, qp->rx_rwqe.sge[i].lkey);
			const struct ibv_sge *s = &qp->rx_rwqe.sge[i];

			if (!m || !(m->access & IBV_ACCESS_LOCAL_WRITE) || s->addr < m->iova ||
			    s->addr + s->length > m->iova + m->len) {
				room = 0;
				break;
			}
			room += s->length;
		}
		if (room < h->len)
			nak(qp, IBV_WC_REM_INV_REQ_ERR, SV_VERR_RQ_SGE);
		break;
	}
	case SV_OP_READ:
		st = h->len ? check_remote(qp, IBV_ACCESS_REMOTE_READ, &verr, &mr) : IBV_WC_SUCCESS;
		if (st != IBV_WC_SUCCESS)
			nak(qp, st, verr);
		break;
	default:
		nak(qp, IBV_WC_REM_INV_REQ_ERR, 0);
		break;
	}
	return true;
}

/* The request in rx_hdr is fully received: complete it on this side and
 * answer the requester. */
static void rx_finish(struct sv_qp *qp)
{
	const struct sv_req_hdr *h = &qp->rx_hdr;
	struct sv_cq *rcq = (struct sv_cq *)qp->vqp.qp.recv_cq;
	struct ibv_wc wc = {
		.wr_id = qp->rx_rwqe.wr_id,
		.qp_num = qp->vqp.qp.qp_num,
		.src_qp = qp->dest_qpn,
		.byte_len = h->len,
	};

	if (qp->rx_nak) {
		queue_rsp(qp, SV_RSP_NAK, qp->rx_status, qp->rx_verr, NULL, 0);
		if (qp->rx_status == IBV_WC_REM_ACCESS_ERR) {
			sv_async_event(qp->ctx, (uint64_t)(uintptr_t)&qp->vqp.qp,
				       IBV_EVENT_QP_ACCESS_ERR);
			sv_qp_to_error(qp);
		} else if (qp->rx_has_rwqe) {
			wc.status = IBV_WC_LOC_LEN_ERR;
			wc.opcode = IBV_WC_RECV;
			wc.vendor_err = qp->rx_verr;
			sv_cq_push(rcq, &wc);
			sv_qp_to_error(qp);
		}
	} else if (h->op == SV_OP_READ) {
		uint8_t *copy = NULL;

		if (h->len) {
			struct sv_mr *mr = sv_mr_lookup(qp->ctx, h->rkey);

			copy = malloc(h->len);
			if (!copy || !mr) {
				free(copy);
				queue_rsp(qp, SV_RSP_NAK, IBV_WC_REM_OP_ERR, 0, NULL, 0);
				goto out;
			}
			memcpy(copy, mr->host + (h->raddr - mr->iova), h->len);
		}
		queue_rsp(qp, SV_RSP_READ, 0, 0, copy, h->len);
	} else {
		if (h->op == SV_OP_WRITE_IMM) {
			wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
			wc.wc_flags = IBV_WC_WITH_IMM;
			wc.imm_data = h->imm;
			sv_cq_push(rcq, &wc);
		} else if (h->op == SV_OP_SEND) {
			wc.opcode = IBV_WC_RECV;
			sv_cq_push(rcq, &wc);
		}
		if (!qp->rx_acked)
			queue_rsp(qp, SV_RSP_ACK, 0, 0, NULL, 0);
	}
out:
	sv_reset_rx(qp);
}

/* Place n bytes that are in the bounce buffer: back to front under the
 * placement_reverse knob, else in order. */
static void place_staged(uint8_t *dst, const uint8_t *src, size_t n, bool reverse)
{
	size_t off = n;

	if (!reverse) {
		memcpy(dst, src, n);
		return;
	}

	while (off) {
		size_t c = off % 64 ? off % 64 : 64;

		off -= c;
		memcpy(dst + off, src + off, c);
		atomic_thread_fence(memory_order_release);
	}
}

/* iovecs for the next payload bytes of the current request. */
static int rx_iov(struct sv_qp *qp, struct iovec *iov, uint8_t *discard, size_t dlen)
{
	const struct sv_req_hdr *h = &qp->rx_hdr;
	size_t left = h->len - qp->rx_got;
	size_t want = left < SV_RECV_CHUNK ? left : SV_RECV_CHUNK;
	size_t skip = qp->rx_got;
	int n = 0;

	if (qp->rx_nak || (h->op != SV_OP_SEND && !qp->rx_dst)) {
		iov[0] = (struct iovec){discard, want < dlen ? want : dlen};
		return 1;
	}
	if (qp->rx_bounce) {
		iov[0] = (struct iovec){qp->rx_bounce + skip, left};
		return 1;
	}
	if (h->op != SV_OP_SEND) {
		iov[0] = (struct iovec){qp->rx_dst + skip, want};
		return 1;
	}
	for (int i = 0; i < qp->rx_rwqe.nsge && want; i++) {
		const struct ibv_sge *s = &qp->rx_rwqe.sge[i];
		struct sv_mr *m = sv_mr_lookup(qp->ctx, s->lkey);
		size_t l = s->length;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		l -= skip;
		if (l > want)
			l = want;
		iov[n++] = (struct iovec){m->host + (s->addr - m->iova) + skip, l};
		want -= l;
		skip = 0;
	}
	return n;
}

static void rsp_lost(struct sv_qp *qp)
{
	sv_close_stream(qp->ctx, &qp->rsp_fd);
	sv_free_responses(qp);
	sv_reset_rx(qp);
}

void sv_resp_rx(struct sv_qp *qp)
{
	static __thread uint8_t discard[65536];

	while (qp->rsp_fd >= 0 && qp->rsp_readable) {
		enum ibv_qp_state st = qp->vqp.qp.state;
		ssize_t n;

		/* Not yet RTR, or in error: the packets are not taken in. */
		if (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_ERR || qp->link_dead)
			return;
		if (qp->rx_state == SV_RX_HDR) {
			if (qp->rx_got < sizeof(qp->rx_hdr)) {
				n = recv(qp->rsp_fd, (char *)&qp->rx_hdr + qp->rx_got,
					 sizeof(qp->rx_hdr) - qp->rx_got, MSG_DONTWAIT);
				if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
					qp->rsp_readable = false;
					return;
				}
				if (n <= 0) {
					rsp_lost(qp);
					return;
				}
				qp->rx_got += (size_t)n;
				continue;
			}
			if (!rx_start(qp))
				return; /* waiting for a receive WQE */
			qp->rx_got = 0;
			qp->rx_state = SV_RX_PAYLOAD;
			if (qp->ctx->faults.placement_reverse && !qp->rx_nak &&
			    qp->rx_hdr.op != SV_OP_READ && qp->rx_hdr.len) {
				qp->rx_bounce = malloc(qp->rx_hdr.len);
				if (!qp->rx_bounce)
					nak(qp, IBV_WC_REM_OP_ERR, 0);
			} else if (!qp->rx_nak && qp->rx_hdr.op != SV_OP_READ && qp->rx_hdr.len &&
				   qp->rx_hdr.len <= SV_ACK_FIRST_MAX) {
				qp->rx_bounce = qp->rx_small;
			}
		}
		if (qp->rx_hdr.op != SV_OP_READ && qp->rx_got < qp->rx_hdr.len) {
			struct iovec iov[SV_MAX_SGE];
			int niov = rx_iov(qp, iov, discard, sizeof(discard));

			n = readv(qp->rsp_fd, iov, niov);
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				qp->rsp_readable = false;
				return;
			}
			if (n <= 0) {
				rsp_lost(qp);
				return;
			}
			qp->rx_got += (size_t)n;
			if (qp->rx_got < qp->rx_hdr.len)
				continue;
		}
		/*
		 * A NIC acknowledges a write or send on its own: a process that
		 * exits as soon as it sees the data cannot strand the requester
		 * (whose work request would then fail at its ack timeout).  So
		 * the ACK leaves first: before a staged payload is placed, and
		 * always before the completion is pushed.
		 */
		if (!qp->rx_nak && qp->rx_hdr.op != SV_OP_READ) {
			queue_rsp(qp, SV_RSP_ACK, 0, 0, NULL, 0);
			qp->rx_acked = true;
			sv_resp_tx(qp);
		}
		if (qp->rx_bounce) {
			bool reverse = qp->ctx->faults.placement_reverse;

			if (qp->rx_hdr.op == SV_OP_SEND) {
				size_t off = 0;

				for (int i = 0; i < qp->rx_rwqe.nsge && off < qp->rx_hdr.len; i++) {
					const struct ibv_sge *s = &qp->rx_rwqe.sge[i];
					struct sv_mr *m = sv_mr_lookup(qp->ctx, s->lkey);
					size_t l = SV_MIN(s->length, qp->rx_hdr.len - off);

					place_staged(m->host + (s->addr - m->iova),
						     qp->rx_bounce + off, l, reverse);
					off += l;
				}
			} else if (qp->rx_dst) {
				place_staged(qp->rx_dst, qp->rx_bounce, qp->rx_hdr.len, reverse);
			}
			if (qp->rx_bounce != qp->rx_small)
				free(qp->rx_bounce);
			qp->rx_bounce = NULL;
		}
		atomic_thread_fence(memory_order_release);
		rx_finish(qp);
	}
}

/* The requester's RNR retries are spent: refuse the waiting message. */
void sv_resp_rnr_expired(struct sv_qp *qp)
{
	qp->rx_stalled_rnr = false;
	qp->rx_rnr_deadline_ns = 0;
	nak(qp, IBV_WC_RNR_RETRY_EXC_ERR, SV_VERR_RNR);
	qp->rx_got = 0;
	qp->rx_state = SV_RX_PAYLOAD;
}
