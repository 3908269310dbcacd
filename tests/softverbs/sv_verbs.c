/* SPDX-License-Identifier: Apache-2.0 */
/*
 * softverbs: completion queues, the RC QP state machine and the data-path
 * verbs (protection domains and memory regions are in sv_mr.c).
 */
#define _GNU_SOURCE
#include "sv_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* --- CQ ------------------------------------------------------------------- */

static struct ibv_cq *sv_create_cq(struct ibv_context *context, int cqe,
				   struct ibv_comp_channel *channel, int vector)
{
	struct sv_cq *cq;

	(void)context, (void)vector;
	if (cqe < 1 || cqe > SV_MAX_CQE || channel) {
		errno = channel ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		goto err_nomem;
	cq->cap = (uint32_t)cqe;
	cq->ring = calloc(cq->cap, sizeof(*cq->ring));
	if (!cq->ring)
		goto err_free;
	cq->cq.cqe = cqe;
	return &cq->cq;

err_free:
	free(cq);
err_nomem:
	errno = ENOMEM;
	return NULL;
}

static int sv_destroy_cq(struct ibv_cq *ibcq)
{
	struct sv_ctx *ctx = sv_ctx_of(ibcq->context);
	struct sv_cq *cq = (struct sv_cq *)ibcq;
	int busy = 0;

	pthread_mutex_lock(&ctx->lock);
	for (struct sv_qp *qp = ctx->qps; qp; qp = qp->next)
		busy |= qp->vqp.qp.send_cq == ibcq || qp->vqp.qp.recv_cq == ibcq;
	pthread_mutex_unlock(&ctx->lock);
	if (busy)
		return EBUSY;
	free(cq->ring);
	free(cq);
	return 0;
}

/* Called with ctx->lock held. */
void sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc)
{
	if (cq->count == cq->cap) {
		if (!cq->overflowed)
			sv_async_event(sv_ctx_of(cq->cq.context), (uint64_t)(uintptr_t)&cq->cq,
				       IBV_EVENT_CQ_ERR);
		cq->overflowed = true;
		return;
	}
	cq->ring[(cq->head + cq->count) % cq->cap] = *wc;
	cq->count++;
}

static int sv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct sv_ctx *ctx = sv_ctx_of(ibcq->context);
	struct sv_cq *cq = (struct sv_cq *)ibcq;
	int got = 0;

	pthread_mutex_lock(&ctx->lock);
	while (got < n && cq->count) {
		wc[got++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
	}
	pthread_mutex_unlock(&ctx->lock);
	/* The emulated NIC runs on the host's cores: an application spinning
	 * on an empty CQ must leave them to the progress threads. */
	if (!got)
		sched_yield();
	return got;
}

static int sv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)cq, (void)solicited_only;
	return 0;
}

/* --- QP ------------------------------------------------------------------- */

static struct ibv_qp *sv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct sv_ctx *ctx = sv_ctx_of(pd->context);
	struct ibv_qp_cap *c = &a->cap;
	struct sv_qp *qp;
	uint32_t qpn;
	int rc;

	if (a->qp_type != IBV_QPT_RC || a->srq || !a->send_cq || !a->recv_cq) {
		errno = a->qp_type != IBV_QPT_RC ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	if (c->max_send_wr < 1 || c->max_send_wr > SV_MAX_QP_WR || c->max_recv_wr > SV_MAX_QP_WR ||
	    c->max_send_sge > SV_MAX_SGE || c->max_recv_sge > SV_MAX_SGE ||
	    c->max_inline_data > SV_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	rc = sv_alloc_qpn(ctx, &qpn);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		goto err_nomem;
	qp->ctx = ctx;
	qp->cap = *c;
	if (qp->cap.max_send_sge < 1)
		qp->cap.max_send_sge = 1;
	qp->sq_sig_all = a->sq_sig_all;
	qp->sq_cap = c->max_send_wr;
	qp->rq_cap = c->max_recv_wr ? c->max_recv_wr : 1;
	qp->sq = calloc(qp->sq_cap, sizeof(*qp->sq));
	qp->rq = calloc(qp->rq_cap, sizeof(*qp->rq));
	if (!qp->sq || !qp->rq)
		goto err_free;
	qp->lfd = qp->req_fd = qp->rsp_fd = -1;
	qp->vqp.qp.context = pd->context;
	qp->vqp.qp.qp_context = a->qp_context;
	qp->vqp.qp.pd = pd;
	qp->vqp.qp.send_cq = a->send_cq;
	qp->vqp.qp.recv_cq = a->recv_cq;
	qp->vqp.qp.handle = qpn;
	qp->vqp.qp.qp_num = qpn;
	qp->vqp.qp.state = IBV_QPS_RESET;
	qp->vqp.qp.qp_type = IBV_QPT_RC;
	pthread_mutex_init(&qp->vqp.qp.mutex, NULL);
	pthread_cond_init(&qp->vqp.qp.cond, NULL);
	pthread_mutex_lock(&ctx->lock);
	rc = sv_wire_listen(qp);
	if (rc) {
		pthread_mutex_unlock(&ctx->lock);
		errno = -rc;
		goto err_free_errno;
	}
	qp->next = ctx->qps;
	ctx->qps = qp;
	pthread_mutex_unlock(&ctx->lock);
	a->cap = qp->cap;
	return &qp->vqp.qp;

err_free:
	errno = ENOMEM;
err_free_errno:
	free(qp->sq);
	free(qp->rq);
	free(qp);
	return NULL;
err_nomem:
	errno = ENOMEM;
	return NULL;
}

/* Always-complete a send WQE: a CQE when signaled or failed. */
static void complete_send(struct sv_qp *qp, struct sv_swqe *w, enum ibv_wc_status status,
			  uint32_t verr)
{
	static const enum ibv_wc_opcode opc[] = {
		[SV_OP_WRITE] = IBV_WC_RDMA_WRITE,
		[SV_OP_WRITE_IMM] = IBV_WC_RDMA_WRITE,
		[SV_OP_SEND] = IBV_WC_SEND,
		[SV_OP_READ] = IBV_WC_RDMA_READ,
	};
	struct ibv_wc wc = {
		.wr_id = w->wr_id,
		.status = status,
		.opcode = opc[w->op],
		.vendor_err = verr,
		.byte_len = w->op == SV_OP_READ ? w->len : 0,
		.qp_num = qp->vqp.qp.qp_num,
		.src_qp = qp->dest_qpn,
	};

	if (status != IBV_WC_SUCCESS || w->signaled || qp->sq_sig_all)
		sv_cq_push((struct sv_cq *)qp->vqp.qp.send_cq, &wc);
}

/* Called with ctx->lock held: retire the oldest send WQE. */
void sv_qp_complete_head(struct sv_qp *qp, enum ibv_wc_status status, uint32_t verr)
{
	struct sv_swqe *w = &qp->sq[qp->sq_head];

	complete_send(qp, w, status, verr);
	qp->sq_head = (qp->sq_head + 1) % qp->sq_cap;
	qp->sq_count--;
	if (qp->sq_tx)
		qp->sq_tx--;
}

static void flush_rq(struct sv_qp *qp)
{
	while (qp->rq_count) {
		struct ibv_wc wc = {
			.wr_id = qp->rq[qp->rq_head].wr_id,
			.status = IBV_WC_WR_FLUSH_ERR,
			.opcode = IBV_WC_RECV,
			.vendor_err = SV_VERR_FLUSH,
			.qp_num = qp->vqp.qp.qp_num,
		};

		sv_cq_push((struct sv_cq *)qp->vqp.qp.recv_cq, &wc);
		qp->rq_head = (qp->rq_head + 1) % qp->rq_cap;
		qp->rq_count--;
	}
}

void sv_qp_to_error(struct sv_qp *qp)
{
	if (qp->vqp.qp.state == IBV_QPS_ERR)
		return;
	qp->vqp.qp.state = IBV_QPS_ERR;
	while (qp->sq_count)
		sv_qp_complete_head(qp, IBV_WC_WR_FLUSH_ERR, SV_VERR_FLUSH);
	qp->sq_tx = 0;
	qp->ack_deadline_ns = 0;
	flush_rq(qp);
}

static void qp_reset(struct sv_qp *qp)
{
	sv_wire_drop_link(qp);
	qp->sq_head = qp->sq_count = qp->sq_tx = 0;
	qp->rq_head = qp->rq_count = 0;
	qp->ack_deadline_ns = 0;
	qp->link_dead = false;
	qp->vqp.qp.state = IBV_QPS_RESET;
}

/* Required and allowed attribute masks per transition (RC). */
struct sv_trans {
	int req, opt;
};

static bool transition(enum ibv_qp_state cur, enum ibv_qp_state next, struct sv_trans *t)
{
	const int S = IBV_QP_STATE;

	*t = (struct sv_trans){S, 0};
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return true;
	switch (cur) {
	case IBV_QPS_RESET:
		*t = (struct sv_trans){S | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				       0};
		return next == IBV_QPS_INIT;
	case IBV_QPS_INIT:
		if (next == IBV_QPS_INIT) {
			*t = (struct sv_trans){0, S | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							  IBV_QP_ACCESS_FLAGS};
			return true;
		}
		*t = (struct sv_trans){S | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					       IBV_QP_MIN_RNR_TIMER,
				       IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX};
		return next == IBV_QPS_RTR;
	case IBV_QPS_RTR:
		*t = (struct sv_trans){S | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
				       IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					       IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE};
		return next == IBV_QPS_RTS;
	case IBV_QPS_RTS:
		*t = (struct sv_trans){0, S | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS |
						  IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
						  IBV_QP_MIN_RNR_TIMER};
		return next == IBV_QPS_RTS;
	default:
		return false;
	}
}

/* Value checks of the attributes being set.  0 or EINVAL. */
static int check_values(struct sv_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	struct sv_ctx *ctx = qp->ctx;
	int port = mask & IBV_QP_PORT ? a->port_num : qp->port;

	if ((mask & IBV_QP_PORT) && (a->port_num < 1 || a->port_num > ctx->dev->nports))
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)))
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return EINVAL;
	if (mask & IBV_QP_AV) {
		const struct sv_port *p = &ctx->ports[port];

		if (p->link_layer == IBV_LINK_LAYER_ETHERNET && !a->ah_attr.is_global)
			return EINVAL; /* RoCE needs a GRH */
		if (a->ah_attr.is_global &&
		    (a->ah_attr.grh.sgid_index >= p->ngids || a->ah_attr.grh.hop_limit == 0))
			return EINVAL;
		if (!a->ah_attr.is_global && a->ah_attr.dlid == 0)
			return EINVAL;
		if (a->ah_attr.port_num && a->ah_attr.port_num != port)
			return EINVAL;
	}
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > 16)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > 16)
		return EINVAL;
	return 0;
}

static int sv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask)
{
	struct sv_qp *qp = sv_qp_of(ibqp);
	struct sv_ctx *ctx = qp->ctx;
	enum ibv_qp_state cur, next;
	struct sv_trans t;
	int rc;

	pthread_mutex_lock(&ctx->lock);
	cur = ibqp->state;
	next = mask & IBV_QP_STATE ? a->qp_state : cur;
	rc = EINVAL;
	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != cur)
		goto out;
	if (!transition(cur, next, &t) || (mask & t.req) != t.req || (mask & ~(t.req | t.opt)))
		goto out;
	rc = check_values(qp, a, mask);
	if (rc)
		goto out;
	if (next == IBV_QPS_RTR && cur != IBV_QPS_RTR &&
	    ctx->nrtr_timeouts < ctx->faults.rtr_timeout) {
		ctx->nrtr_timeouts++;
		rc = ETIMEDOUT;
		goto out;
	}

	if (mask & IBV_QP_PORT)
		qp->port = a->port_num;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->access = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		qp->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PATH_MTU)
		qp->mtu = a->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		qp->dest_qpn = a->dest_qp_num;
	if (mask & IBV_QP_AV)
		qp->ah = a->ah_attr;
	if (mask & IBV_QP_RQ_PSN)
		qp->rq_psn = a->rq_psn;
	if (mask & IBV_QP_SQ_PSN)
		qp->sq_psn = a->sq_psn;
	if (mask & IBV_QP_TIMEOUT)
		qp->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = a->max_dest_rd_atomic;

	if (next == IBV_QPS_RESET) {
		qp_reset(qp);
	} else if (next == IBV_QPS_ERR) {
		sv_qp_to_error(qp);
	} else {
		ibqp->state = next;
		if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR)
			sv_wire_connect(qp);
	}
	sv_wire_kick(ctx);
out:
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

static int sv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask,
		       struct ibv_qp_init_attr *init)
{
	struct sv_qp *qp = sv_qp_of(ibqp);

	(void)mask;
	pthread_mutex_lock(&qp->ctx->lock);
	memset(a, 0, sizeof(*a));
	a->qp_state = ibqp->state;
	a->cur_qp_state = ibqp->state;
	a->path_mtu = qp->mtu;
	a->qp_access_flags = qp->access;
	a->pkey_index = qp->pkey_index;
	a->port_num = qp->port;
	a->dest_qp_num = qp->dest_qpn;
	a->ah_attr = qp->ah;
	a->rq_psn = qp->rq_psn;
	a->sq_psn = qp->sq_psn;
	a->timeout = qp->timeout;
	a->retry_cnt = qp->retry_cnt;
	a->rnr_retry = qp->rnr_retry;
	a->min_rnr_timer = qp->min_rnr_timer;
	a->max_rd_atomic = qp->max_rd_atomic;
	a->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	a->cap = qp->cap;
	memset(init, 0, sizeof(*init));
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->cap = qp->cap;
	init->qp_type = IBV_QPT_RC;
	init->sq_sig_all = qp->sq_sig_all;
	pthread_mutex_unlock(&qp->ctx->lock);
	return 0;
}

static int sv_destroy_qp(struct ibv_qp *ibqp)
{
	struct sv_qp *qp = sv_qp_of(ibqp);
	struct sv_ctx *ctx = qp->ctx;

	pthread_mutex_lock(&ctx->lock);
	for (struct sv_qp **pp = &ctx->qps; *pp; pp = &(*pp)->next) {
		if (*pp == qp) {
			*pp = qp->next;
			break;
		}
	}
	sv_wire_close(qp);
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	if (qp->rx_bounce != qp->rx_small)
		free(qp->rx_bounce);
	free(qp->sq);
	free(qp->rq);
	free(qp);
	return 0;
}

/* A local SGE list against the MR table: IBV_WC_SUCCESS or why not. */
static enum ibv_wc_status check_sges(struct sv_qp *qp, const struct ibv_sge *sg, int n,
				     bool local_write, uint64_t *total)
{
	uint64_t sum = 0;

	for (int i = 0; i < n; i++) {
		struct sv_mr *mr = sv_mr_lookup(qp->ctx, sg[i].lkey);

		if (sg[i].length == 0)
			continue;
		if (!mr || &mr->pd->pd != qp->vqp.qp.pd || sg[i].addr < mr->iova ||
		    sg[i].addr + sg[i].length > mr->iova + mr->len ||
		    (local_write && !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
			return IBV_WC_LOC_PROT_ERR;
		sum += sg[i].length;
	}
	*total = sum;
	return IBV_WC_SUCCESS;
}

static int post_one_send(struct sv_qp *qp, const struct ibv_send_wr *wr)
{
	struct sv_swqe *w;
	uint64_t total = 0;
	enum sv_op op;

	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
		op = SV_OP_WRITE;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		op = SV_OP_WRITE_IMM;
		break;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		op = SV_OP_SEND;
		break;
	case IBV_WR_RDMA_READ:
		op = SV_OP_READ;
		break;
	default:
		return EINVAL;
	}
	if (wr->num_sge < 0 || wr->num_sge > (int)qp->cap.max_send_sge)
		return EINVAL;
	if (qp->sq_count == qp->sq_cap)
		return ENOMEM;
	w = &qp->sq[(qp->sq_head + qp->sq_count) % qp->sq_cap];
	memset(w, 0, offsetof(struct sv_swqe, inline_data));
	w->wr_id = wr->wr_id;
	w->op = op;
	w->signaled = wr->send_flags & IBV_SEND_SIGNALED;
	w->raddr = wr->wr.rdma.remote_addr;
	w->rkey = wr->wr.rdma.rkey;
	w->imm = wr->imm_data;
	w->nsge = wr->num_sge;
	w->post_status = IBV_WC_SUCCESS;
	if (wr->num_sge)
		memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*w->sge));
	if ((wr->send_flags & IBV_SEND_INLINE) && op != SV_OP_READ) {
		size_t off = 0;

		for (int i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > qp->cap.max_inline_data)
			return EINVAL;
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(w->inline_data + off, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			off += wr->sg_list[i].length;
		}
		w->is_inline = true;
	} else {
		w->post_status = check_sges(qp, w->sge, w->nsge, op == SV_OP_READ, &total);
		if (w->post_status != IBV_WC_SUCCESS)
			w->post_verr = SV_VERR_LKEY;
	}
	if (total > SV_MAX_MSG)
		return EINVAL;
	w->len = (uint32_t)total;
	w->seq = qp->next_seq++;
	qp->sq_count++;
	return 0;
}

static int sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct sv_qp *qp = sv_qp_of(ibqp);
	int rc = 0;

	pthread_mutex_lock(&qp->ctx->lock);
	for (; wr; wr = wr->next) {
		if (ibqp->state != IBV_QPS_RTS && ibqp->state != IBV_QPS_ERR)
			rc = EINVAL;
		else
			rc = post_one_send(qp, wr);
		if (rc) {
			*bad = wr;
			break;
		}
		if (ibqp->state == IBV_QPS_ERR)
			sv_qp_complete_head(qp, IBV_WC_WR_FLUSH_ERR, SV_VERR_FLUSH);
	}
	if (ibqp->state == IBV_QPS_RTS)
		sv_wire_pump_tx(qp);
	pthread_mutex_unlock(&qp->ctx->lock);
	return rc;
}

static int sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sv_qp *qp = sv_qp_of(ibqp);
	int rc = 0;

	pthread_mutex_lock(&qp->ctx->lock);
	for (; wr; wr = wr->next) {
		struct sv_rwqe *r;

		if (ibqp->state == IBV_QPS_RESET || wr->num_sge < 0 ||
		    wr->num_sge > (int)qp->cap.max_recv_sge)
			rc = EINVAL;
		else if (qp->rq_count == qp->rq_cap)
			rc = ENOMEM;
		if (rc) {
			*bad = wr;
			break;
		}
		r = &qp->rq[(qp->rq_head + qp->rq_count) % qp->rq_cap];
		r->wr_id = wr->wr_id;
		r->nsge = wr->num_sge;
		if (wr->num_sge)
			memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*r->sge));
		qp->rq_count++;
		if (ibqp->state == IBV_QPS_ERR)
			flush_rq(qp);
	}
	if (qp->rx_stalled_rnr)
		sv_wire_kick(qp->ctx);
	pthread_mutex_unlock(&qp->ctx->lock);
	return rc;
}

const struct verbs_context_ops sv_ctx_ops = {
	.alloc_pd = sv_alloc_pd,
	.create_cq = sv_create_cq,
	.create_qp = sv_create_qp,
	.dealloc_pd = sv_dealloc_pd,
	.dereg_mr = sv_dereg_mr,
	.destroy_cq = sv_destroy_cq,
	.destroy_qp = sv_destroy_qp,
	.modify_qp = sv_modify_qp,
	.poll_cq = sv_poll_cq,
	.post_recv = sv_post_recv,
	.post_send = sv_post_send,
	.query_qp = sv_query_qp,
	.reg_dmabuf_mr = sv_reg_dmabuf_mr,
	.reg_mr = sv_reg_mr,
	.req_notify_cq = sv_req_notify_cq,
};
