/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ib transport's requests and completions: the per-comm request slab,
 * and polling the comm's CQ (a receive's pieces delivered by their
 * immediate, a send's or flush's completion, a failed work request failing
 * the comm).  ib_data.c posts the work; nothing here blocks.
 */
#define _GNU_SOURCE
#include "transport/ib/ib_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* --- requests --------------------------------------------------------------------- */

void rw_ib_reqs_free(struct rw_ib_comm *c)
{
	rw_ib_live_add(RW_IB_LIVE_REQS, -c->reqs.used);
	rw_slab_reset(&c->reqs);
}

struct rw_ib_req *rw_ib_req_get(struct rw_ib_comm *c, enum rw_ib_req_kind kind)
{
	struct rw_ib_req *r = rw_slab_get(&c->reqs);
	struct rw_obj obj;

	if (!r)
		return NULL;
	obj = r->obj;
	memset(r, 0, sizeof(*r));
	r->obj = obj;
	r->base.comm = &c->base;
	r->kind = kind;
	if (c->npending++ == 0)
		c->progress_ms = rw_now_ms(); /* the clock starts with the first request */
	c->nsends += kind == RW_IB_REQ_SEND;
	rw_ib_live_add(RW_IB_LIVE_REQS, 1);
	return r;
}

void rw_ib_req_put(struct rw_ib_comm *c, struct rw_ib_req *r)
{
	c->nsends -= r->kind == RW_IB_REQ_SEND;
	rw_slab_put(&c->reqs, r);
	c->npending--;
	rw_ib_live_add(RW_IB_LIVE_REQS, -1);
}

/* --- completions --------------------------------------------------------------------- */

const char *rw_ib_wr_kind_str(int kind)
{
	switch (kind) {
	case RW_IB_WR_DATA:
		return "RDMA WRITE WITH IMM (data)";
	case RW_IB_WR_CTRL:
		return "RDMA WRITE (clear-to-send or notice)";
	case RW_IB_WR_RECV:
		return "receive";
	case RW_IB_WR_FLUSH:
		return "RDMA READ (flush)";
	default:
		return "work request";
	}
}

static void wc_failed(struct rw_ib_comm *c, const struct ibv_wc *wc, int kind, int qpi)
{
	uint32_t rqpn = qpi == RW_IB_FLUSH_QPI ? wc->qp_num : c->rqpn[qpi];

	char b;
	bool gone;

	if (c->failed)
		return; /* the flushes that follow the first error */
	/* a peer whose set-up connection ended closed the comm or exited: that
	 * is why its QP stopped answering (retries exhausted, ...) */
	gone = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
	RW_WARN(RW_LOG_NET,
		"NET/IB: %s: %s on QP %#x to peer %s (GID %s, LID %u, QPN %#x) "
		"failed: %s (status %d, vendor error %#x)%s",
		c->dev->name, rw_ib_wr_kind_str(kind), wc->qp_num, c->peer, c->peer_gid,
		c->peer_lid, rqpn, c->net->v.wc_status_str(wc->status), (int)wc->status,
		wc->vendor_err, gone ? "; the peer is gone (it closed the connection)" : "");
	rw_ib_comm_fail(c, gone ? -ECONNRESET : rw_ibv_status_errno(wc->status));
}

/* An immediate arrived: account it to its receive request. */
static void deliver(struct rw_ib_comm *c, uint32_t imm, uint32_t byte_len)
{
	uint32_t seq24 = rw_ib_imm_seq(imm);
	unsigned int idx = rw_ib_imm_idx(imm), pieces = rw_ib_imm_pieces(imm);
	struct rw_ib_req *r = c->rreqs[seq24 % RW_IB_FIFO_SLOTS];

	if (!r || (r->seq & 0xffffffu) != seq24 || (int)idx >= r->n ||
	    (r->pieces[idx] && r->got[idx] == r->pieces[idx]))
		return; /* for a receive that already failed and was given back */
	c->progress_ms = c->life_ms = rw_now_ms();
	if (pieces == RW_IB_IMM_ERR_TAG || pieces == RW_IB_IMM_ERR_SIZE) {
		/* the receive fails, and the comm with it (an error is final) */
		if (!r->rc) {
			r->rc = pieces == RW_IB_IMM_ERR_SIZE ? -EMSGSIZE : -EPROTO;
			if (!c->failed)
				RW_WARN(RW_LOG_NET,
					"NET/IB: %s: peer %s (GID %s) sent a message %s buffer "
					"%u (%zu bytes) of receive %u",
					c->dev->name, c->peer, c->peer_gid,
					pieces == RW_IB_IMM_ERR_SIZE ? "larger than"
								     : "with a tag matching no",
					idx, r->cap[idx], r->seq);
		}
		r->pieces[idx] = r->got[idx] = 1;
		r->left--;
		rw_ib_comm_fail(c, r->rc);
		return;
	}
	if (r->pieces[idx] && r->pieces[idx] != pieces) {
		RW_WARN(RW_LOG_NET,
			"NET/IB: %s: peer %s (GID %s) sent buffer %u of receive %u in %u "
			"pieces, then said %u",
			c->dev->name, c->peer, c->peer_gid, idx, r->seq, r->pieces[idx], pieces);
		rw_ib_comm_fail(c, -EPROTO);
		return;
	}
	r->pieces[idx] = (uint8_t)pieces;
	r->got_bytes[idx] += byte_len;
	if (++r->got[idx] == pieces)
		r->left--;
}

void rw_ib_comm_poll(struct rw_ib_comm *c)
{
	struct ibv_wc wc[32];
	int n = 0;

	while (c->cq && (n = ibv_poll_cq(c->cq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			int kind = (int)(wc[i].wr_id & 7), qpi = (int)((wc[i].wr_id >> 3) & 31);
			struct rw_ib_req *r = (struct rw_ib_req *)(uintptr_t)(wc[i].wr_id >> 8);

			if (kind == RW_IB_WR_RECV)
				c->rq_posted[qpi]--;
			else
				c->sq_used[qpi]--;
			if (wc[i].status != IBV_WC_SUCCESS) {
				wc_failed(c, &wc[i], kind, qpi);
				continue;
			}
			/* a failed comm's sends and flushes may be given back
			 * already; its receives are found by sequence number, and
			 * data that did arrive still completes them */
			if (c->failed && kind != RW_IB_WR_RECV)
				continue;
			switch (kind) {
			case RW_IB_WR_DATA:
				r->pending--;
				c->progress_ms = c->life_ms = rw_now_ms();
				break;
			case RW_IB_WR_FLUSH:
				r->pending--;
				break;
			case RW_IB_WR_RECV:
				/* a receive queue that cannot be refilled would
				 * leave the peer's writes waiting for receives
				 * (receiver not ready, retried for ever): fail */
				if (!c->failed && rw_ib_post_recvs(c, qpi, 1))
					rw_ib_comm_fail(c, -EIO);
				deliver(c, ntohl(wc[i].imm_data), wc[i].byte_len);
				break;
			default:
				c->progress_ms = c->life_ms = rw_now_ms();
				break;
			}
		}
	}
	if (n < 0 && !c->failed) {
		RW_WARN(RW_LOG_NET, "NET/IB: %s: ibv_poll_cq for peer %s failed (%d)", c->dev->name,
			c->peer, n);
		rw_ib_comm_fail(c, -EIO);
	}
}
