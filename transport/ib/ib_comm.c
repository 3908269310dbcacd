/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Comms of the ib transport: their resources (CQ, QPs, FIFO or CTS
 * staging, flush QP, requests), RESET -> INIT -> RTR -> RTS towards the
 * peer's set-up record, and close.
 */
#define _GNU_SOURCE
#include "transport/ib/ib_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- comms: resources ---------------------------------------------------------- */

void rw_ib_comm_fail(struct rw_ib_comm *c, int rc)
{
	if (!c->failed)
		c->failed = rc;
}

struct rw_ib_comm *rw_ib_comm_by_qp(struct rw_ib_net *net, const struct ibv_qp *qp)
{
	for (struct rw_list *l = net->comms.next; l != &net->comms; l = l->next) {
		struct rw_ib_comm *c = rw_container_of(l, struct rw_ib_comm, link);

		for (int i = 0; i < c->nqps; i++)
			if (c->qps[i] == qp)
				return c;
		if (c->flush_qp == qp)
			return c;
	}
	return NULL;
}

struct rw_ib_comm *rw_ib_comm_by_cq(struct rw_ib_net *net, const struct ibv_cq *cq)
{
	for (struct rw_list *l = net->comms.next; l != &net->comms; l = l->next) {
		struct rw_ib_comm *c = rw_container_of(l, struct rw_ib_comm, link);

		if (c->cq == cq)
			return c;
	}
	return NULL;
}

static const char *qp_state_str(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_INIT:
		return "INIT";
	case IBV_QPS_RTR:
		return "RTR";
	case IBV_QPS_RTS:
		return "RTS";
	default:
		return "?";
	}
}

/*
 * ibv_modify_qp, and again while it times out, for RINGWAY_TIMEOUT_MS at
 * most: towards RTR on RoCE the kernel resolves the peer's MAC address
 * (ARP or neighbour discovery), which times out on a cold cache or a
 * neighbour table under load, as at a large job's start; NCCL retries the
 * same way.
 */
static int qp_modify(struct rw_ib_comm *c, struct ibv_qp *qp, uint32_t rqpn, struct ibv_qp_attr *a,
		     int mask)
{
	uint64_t start = rw_now_ms(), limit = (uint64_t)c->net->base.cfg.timeout_ms;
	int rc, tries = 1;

	while ((rc = c->net->v.modify_qp(qp, a, mask)) == ETIMEDOUT &&
	       rw_now_ms() - start + 100u * (unsigned)tries < limit) {
		RW_INFO(RW_LOG_NET,
			"NET/IB: %s: ibv_modify_qp(QP %#x -> %s) for peer %s (GID %s) timed out "
			"(try %d): the peer's address did not resolve yet; trying again in %d ms",
			c->dev->name, qp->qp_num, qp_state_str(a->qp_state), c->peer, c->peer_gid,
			tries, 100 * tries);
		usleep(100000u * (unsigned)tries);
		tries++;
	}
	if (rc) {
		RW_WARN(RW_LOG_NET,
			"NET/IB: %s: ibv_modify_qp(QP %#x -> %s) for peer %s (GID %s, QPN %#x) "
			"failed: %s%s",
			c->dev->name, qp->qp_num, qp_state_str(a->qp_state), c->peer, c->peer_gid,
			rqpn, strerror(rc),
			rc == ETIMEDOUT && c->dev->link_layer == IBV_LINK_LAYER_ETHERNET
				? " (RoCE: is the peer's address reachable from this port's "
				  "interface? RINGWAY_IB_GID_INDEX picks another GID)"
				: "");
		return -rc;
	}
	return 0;
}

/* A new RC QP on the comm's CQ, moved to INIT. */
static int qp_new(struct rw_ib_comm *c, uint32_t sq, uint32_t rq, struct ibv_qp **out)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = c->cq,
		.recv_cq = c->cq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = sq, .max_recv_wr = rq, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = c->dev->port,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	struct ibv_qp *qp = c->net->v.create_qp(c->dev->hca->pd, &ia);
	int rc;

	if (!qp) {
		rc = errno ? -errno : -ENOMEM;
		RW_WARN(RW_LOG_NET,
			"NET/IB: %s: ibv_create_qp(RC, %u send, %u receive WRs) for "
			"peer %s failed: %s",
			c->dev->name, sq, rq, c->peer, strerror(-rc));
		return rc;
	}
	rw_ib_live_add(RW_IB_LIVE_QPS, 1);
	rc = qp_modify(c, qp, 0, &a,
		       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc) {
		c->net->v.destroy_qp(qp);
		rw_ib_live_add(RW_IB_LIVE_QPS, -1);
		return rc;
	}
	*out = qp;
	return 0;
}

/* INIT -> RTR -> RTS towards (gid/lid of peer, QP rqpn). */
static int qp_connect(struct rw_ib_comm *c, struct ibv_qp *qp, uint32_t rqpn,
		      const struct rw_ib_conn_info *peer)
{
	struct rw_ib_net *net = c->net;
	struct rw_ib_dev *d = c->dev;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = c->mtu,
		.dest_qp_num = rqpn,
		.rq_psn = peer->psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {.port_num = d->port, .sl = net->sl},
	};
	int rc;

	/* RoCE always routes by GID; InfiniBand by LID, by GID across subnets
	 * and where the port requires a GRH (some virtual functions) */
	if (d->link_layer == IBV_LINK_LAYER_ETHERNET || d->grh_required ||
	    memcmp(peer->gid, d->gid.raw, 8)) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
		a.ah_attr.grh.hop_limit = 255;
		a.ah_attr.grh.traffic_class = c->tc;
	}
	a.ah_attr.dlid = peer->lid;
	rc = qp_modify(c, qp, rqpn, &a,
		       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS,
		.sq_psn = c->psn,
		.timeout = net->ib_timeout,
		.retry_cnt = net->retry_cnt,
		.rnr_retry = 7,
		.max_rd_atomic = 1,
	};
	return qp_modify(c, qp, rqpn, &a,
			 IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

int rw_ib_post_recvs(struct rw_ib_comm *c, int i, int count)
{
	for (int k = 0; k < count; k++) {
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i << 3 | RW_IB_WR_RECV}, *bad;
		int rc = ibv_post_recv(c->qps[i], &wr, &bad);

		if (rc) {
			RW_WARN(RW_LOG_NET,
				"NET/IB: %s: ibv_post_recv(QP %#x) for peer %s (GID %s, QPN %#x) "
				"failed: %s",
				c->dev->name, c->qps[i]->qp_num, c->peer, c->peer_gid, c->rqpn[i],
				strerror(rc));
			return -rc;
		}
		c->rq_posted[i]++;
	}
	return 0;
}

static void *page_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

#define RW_IB_FIFO_BYTES ((size_t)RW_IB_FIFO_SLOTS * RW_NET_MAX_RECVS * sizeof(struct rw_ib_cts))

static void comm_free(struct rw_ib_comm *c)
{
	struct rw_ibv *v = &c->net->v;

	for (int i = 0; i < c->nqps; i++) {
		if (c->qps[i]) {
			v->destroy_qp(c->qps[i]);
			rw_ib_live_add(RW_IB_LIVE_QPS, -1);
			c->qps[i] = NULL;
		}
	}
	if (c->flush_qp) {
		v->destroy_qp(c->flush_qp);
		rw_ib_live_add(RW_IB_LIVE_QPS, -1);
		c->flush_qp = NULL;
	}
	if (c->cq)
		v->destroy_cq(c->cq);
	c->cq = NULL;
	if (c->fifo_mr)
		v->dereg_mr(c->fifo_mr);
	if (c->stage_mr)
		v->dereg_mr(c->stage_mr);
	if (c->flush_mr)
		v->dereg_mr(c->flush_mr);
	c->fifo_mr = c->stage_mr = c->flush_mr = NULL;
	free(c->fifo);
	free(c->stage);
	free(c->flush_buf);
	c->fifo = c->stage = NULL;
	c->flush_buf = NULL;
	rw_ib_mr_drop_all(c);
	rw_ib_reqs_free(c);
	rw_close_fd(&c->fd);
}

static const uint32_t comm_kinds[2] = {RW_IB_SEND_MAGIC, RW_IB_RECV_MAGIC};

int rw_ib_comm_check(struct rw_net_comm *base, uint32_t kind, struct rw_ib_comm **out)
{
	struct rw_ib_comm *c;
	int rc;

	if (!base)
		return -EINVAL;
	c = rw_ib_comm_from(base);
	rc = rw_obj_check_any(&c->obj, comm_kinds, 2);
	if (rc == 0 && kind && c->obj.kind != kind)
		rc = -EINVAL;
	if (rc == 0)
		*out = c;
	return rc;
}

/* Give a closed or failed comm back: its resources go, the shell stays. */
void rw_ib_comm_bury(struct rw_ib_net *net, struct rw_ib_comm *c, bool listed)
{
	pthread_mutex_lock(&net->lock);
	if (listed)
		rw_list_del(&c->link);
	rw_obj_close(&c->obj);
	pthread_mutex_unlock(&net->lock);
	comm_free(c);
	pthread_mutex_destroy(&c->mr_lock); /* a shell takes no lock */
	pthread_mutex_lock(&net->lock);
	rw_grave_bury(&net->dead_comms, &c->link);
	pthread_mutex_unlock(&net->lock);
	rw_ib_live_add(RW_IB_LIVE_COMMS, -1);
}

/* A new comm: the oldest shell once the graveyard is full (its generation
 * and its free requests go on), else new memory. */
static struct rw_ib_comm *comm_alloc(struct rw_ib_net *net)
{
	struct rw_ib_comm *c = rw_grave_alloc(
		&net->dead_comms, &net->lock, sizeof(*c), offsetof(struct rw_ib_comm, link),
		offsetof(struct rw_ib_comm, obj), offsetof(struct rw_ib_comm, reqs));

	if (c && !c->reqs.size)
		rw_slab_init(&c->reqs, sizeof(struct rw_ib_req), offsetof(struct rw_ib_req, obj),
			     RW_IB_REQ_MAGIC, RW_IB_REQS, RW_IB_REQS);
	return c;
}

/* A comm with its CQ, QPs in INIT, and its FIFO (send) or CTS staging and
 * flush QP (receive).  The peer's address is for messages. */
int rw_ib_comm_new(struct rw_ib_net *net, int dev, bool send, int nqps, const char *peer,
		   struct rw_ib_comm **out)
{
	struct rw_ib_dev *d = &net->devs[dev];
	struct rw_ib_comm *c = comm_alloc(net);
	int cqe, rc;

	if (!c)
		return -ENOMEM;
	c->base.net = &net->base;
	rw_obj_open(&c->obj, send ? RW_IB_SEND_MAGIC : RW_IB_RECV_MAGIC);
	c->net = net;
	c->dev = d;
	c->fd = -1;
	c->nqps = nqps;
	c->tc = (uint8_t)(net->tc >= 0 ? net->tc : 0);
	c->psn = (uint32_t)rw_tcp_nonce64() & 0xffffff;
	c->mtu = d->mtu;
	c->cts_seq = 1;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	snprintf(c->peer_gid, sizeof(c->peer_gid), "?");
	pthread_mutex_init(&c->mr_lock, NULL);
	rw_list_init(&c->mrs);
	rw_ib_live_add(RW_IB_LIVE_COMMS, 1);
	cqe = nqps * (RW_IB_SQ_DEPTH + (send ? 0 : RW_IB_RQ_DEPTH)) + 2 * RW_IB_FIFO_SLOTS;
	c->cq = net->v.create_cq(d->hca->ctx, cqe, NULL, NULL, 0);
	if (!c->cq) {
		rc = errno ? -errno : -ENOMEM;
		RW_WARN(RW_LOG_NET, "NET/IB: %s: ibv_create_cq(%d) for peer %s failed: %s", d->name,
			cqe, peer, strerror(-rc));
		goto err_free;
	}
	for (int i = 0; i < nqps; i++) {
		rc = qp_new(c, RW_IB_SQ_DEPTH, send ? 1 : RW_IB_RQ_DEPTH, &c->qps[i]);
		if (rc)
			goto err_free;
	}
	if (send) {
		c->fifo = page_alloc(RW_IB_FIFO_BYTES);
		if (!c->fifo) {
			rc = -ENOMEM;
			goto err_free;
		}
		c->fifo_mr = rw_ib_reg_internal(d, c->fifo, RW_IB_FIFO_BYTES,
						IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
						"CTS FIFO");
	} else {
		c->stage = page_alloc(RW_IB_FIFO_BYTES);
		if (!c->stage) {
			rc = -ENOMEM;
			goto err_free;
		}
		c->stage_mr = rw_ib_reg_internal(d, c->stage, RW_IB_FIFO_BYTES,
						 IBV_ACCESS_LOCAL_WRITE, "CTS staging");
	}
	if (!c->fifo_mr && !c->stage_mr) {
		rc = -ENOMEM;
		goto err_free;
	}
	if (!send && d->hca->gdr != RW_IB_GDR_OFF) {
		rc = qp_new(c, RW_IB_SQ_DEPTH, 1, &c->flush_qp);
		if (rc)
			goto err_free;
		c->flush_buf = page_alloc(4096);
		if (!c->flush_buf) {
			rc = -ENOMEM;
			goto err_free;
		}
		c->flush_mr = rw_ib_reg_internal(d, c->flush_buf, sizeof(*c->flush_buf),
						 IBV_ACCESS_LOCAL_WRITE, "flush buffer");
		if (!c->flush_mr) {
			rc = -ENOMEM;
			goto err_free;
		}
	}
	*out = c;
	return 0;

err_free:
	rw_ib_comm_discard(c);
	return rc;
}

/* Never handed out, but perhaps a reused shell: back to the graveyard. */
void rw_ib_comm_discard(struct rw_ib_comm *c)
{
	rw_ib_comm_bury(c->net, c, false);
}

void rw_ib_info_fill(const struct rw_ib_comm *c, uint64_t nonce, struct rw_ib_conn_info *m)
{
	memset(m, 0, sizeof(*m));
	m->magic = RW_IB_MAGIC;
	m->version = RW_IB_VERSION;
	m->link_layer = (uint8_t)c->dev->link_layer;
	m->nqps = (uint8_t)c->nqps;
	m->mtu = (uint8_t)c->dev->mtu;
	m->nonce = nonce;
	memcpy(m->gid, c->dev->gid.raw, 16);
	m->lid = c->dev->lid;
	m->tc = c->tc;
	m->psn = c->psn;
	for (int i = 0; i < c->nqps; i++)
		m->qpn[i] = c->qps[i]->qp_num;
	if (c->fifo_mr) {
		m->fifo_addr = (uintptr_t)c->fifo;
		m->fifo_rkey = c->fifo_mr->rkey;
	}
}

/* Check the peer's record.  NULL, or what is wrong with it. */
const char *rw_ib_info_check(const struct rw_ib_comm *c, const struct rw_ib_conn_info *t,
			     uint64_t nonce)
{
	if (t->magic != RW_IB_MAGIC || t->version != RW_IB_VERSION)
		return "not a ringway ib set-up record of this version";
	if (t->nonce != nonce)
		return "a set-up record for another listener";
	if (t->nqps < 1 || t->nqps > RW_IB_MAX_QPS || (c && t->nqps != c->nqps))
		return "a bad number of QPs";
	if (t->mtu < IBV_MTU_256 || t->mtu > IBV_MTU_4096)
		return "an MTU that is no verbs MTU";
	if (c && t->link_layer != c->dev->link_layer)
		return c->dev->link_layer == IBV_LINK_LAYER_ETHERNET
			       ? "the peer's device is InfiniBand, this one RoCE"
			       : "the peer's device is RoCE, this one InfiniBand";
	return NULL;
}

/* Bring every QP to RTS towards the peer's record. */
int rw_ib_comm_connect_qps(struct rw_ib_comm *c, const struct rw_ib_conn_info *t)
{
	int rc = 0;

	c->mtu = RW_MIN(c->dev->mtu, (enum ibv_mtu)t->mtu);
	c->peer_lid = t->lid;
	inet_ntop(AF_INET6, t->gid, c->peer_gid, sizeof(c->peer_gid));
	for (int i = 0; i < c->nqps && !rc; i++) {
		c->rqpn[i] = t->qpn[i];
		rc = qp_connect(c, c->qps[i], t->qpn[i], t);
	}
	if (!rc && c->flush_qp) {
		struct rw_ib_conn_info self;

		rw_ib_info_fill(c, 0, &self);
		rc = qp_connect(c, c->flush_qp, c->flush_qp->qp_num, &self);
	}
	if (!rc && c->stage_mr) {
		c->rfifo_addr = t->fifo_addr;
		c->rfifo_rkey = t->fifo_rkey;
		for (int i = 0; i < c->nqps && !rc; i++)
			rc = rw_ib_post_recvs(c, i, RW_IB_RQ_DEPTH);
	}
	return rc;
}

void rw_ib_comm_announce(struct rw_ib_comm *c)
{
	RW_INFO(RW_LOG_NET,
		"NET/IB: %s: %s comm with peer %s (GID %s, LID %u, QPN %#x%s), "
		"%d QP(s), MTU %s, traffic class %u",
		c->dev->name, c->obj.kind == RW_IB_SEND_MAGIC ? "send" : "receive", c->peer,
		c->peer_gid, c->peer_lid, c->rqpn[0], c->nqps > 1 ? "..." : "", c->nqps,
		rw_ibv_mtu_str(c->mtu), c->tc);
}

/* --- close -------------------------------------------------------------- */

static int close_comm(struct rw_net_comm *base, uint32_t kind)
{
	struct rw_ib_comm *c;
	int rc = rw_ib_comm_check(base, kind, &c);

	if (rc)
		return rc;
	rw_ib_comm_bury(c->net, c, true);
	return 0;
}

int rw_ib_close_send(struct rw_net_comm *base)
{
	return close_comm(base, RW_IB_SEND_MAGIC);
}

int rw_ib_close_recv(struct rw_net_comm *base)
{
	return close_comm(base, RW_IB_RECV_MAGIC);
}
