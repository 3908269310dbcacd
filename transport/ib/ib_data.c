/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ib transport's data path: irecv posts clear-to-send entries into the
 * sender's FIFO; isend matches them as NCCL's IB transport does (p2p.cc,
 * ncclIbIsend): only the FIFO slot of the oldest receive not yet fully
 * matched, only a free entry of it with the send's tag, else "not now"
 * (*req NULL, the caller retries); a taken send is written at once with
 * immediate, in pieces over the QPs.  iflush reads back through a loopback
 * QP; test polls the comm's CQ and watches the peer.  An error fails the
 * comm: every later call answers with it at once.  Protocol and layouts
 * are in ib_proto.h.  Nothing here blocks.
 */
#define _GNU_SOURCE
#include "transport/ib/ib_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define WR_ID(val, qpi, kind) ((uint64_t)(val) << 8 | (uint64_t)(qpi) << 3 | (uint64_t)(kind))

static uint32_t seq_next(uint32_t s)
{
	return s + 1 ? s + 1 : 1;
}

/* --- sending ----------------------------------------------------------------------------- */

/* Copy a CTS entry if it is complete for seq (the NIC may still be placing it). */
static bool cts_read(const struct rw_ib_cts *e, uint32_t seq, struct rw_ib_cts *out)
{
	if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != seq)
		return false;
	memcpy(out, (const void *)e, sizeof(*out));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return out->seq == seq && out->check == rw_ib_cts_check(out);
}

int rw_ib_cts_parse(const struct rw_ib_cts *slot, uint32_t seq, struct rw_ib_cts *e)
{
	unsigned int nreqs;

	if (!cts_read(&slot[0], seq, &e[0]))
		return 0;
	nreqs = e[0].nreqs;
	if (nreqs < 1 || nreqs > RW_NET_MAX_RECVS)
		return -EPROTO;
	for (unsigned int i = 1; i < nreqs; i++)
		if (!cts_read(&slot[i], seq, &e[i]))
			return 0; /* the rest of the slot is still on its way */
	return (int)nreqs;
}

static int post_send(struct rw_ib_comm *c, int qpi, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(c->qps[qpi], wr, &bad);

	if (rc) {
		RW_WARN(RW_LOG_NET,
			"NET/IB: %s: ibv_post_send(QP %#x, %s) to peer %s (GID %s, QPN %#x) "
			"failed: %s",
			c->dev->name, c->qps[qpi]->qp_num, rw_ib_wr_kind_str((int)(wr->wr_id & 7)),
			c->peer, c->peer_gid, c->rqpn[qpi], strerror(rc));
		rw_ib_comm_fail(c, -rc);
		return -rc;
	}
	c->sq_used[qpi]++;
	return 0;
}

/* Tell the receiver that entry idx of the current slot fails (code). */
static int post_notice(struct rw_ib_comm *c, const struct rw_ib_cts *e, unsigned int idx,
		       unsigned int code)
{
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(0, c->rr, RW_IB_WR_CTRL),
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(rw_ib_imm(c->cts_seq, idx, code)),
		.wr.rdma = {.remote_addr = e->addr, .rkey = e->rkey},
	};

	return post_send(c, c->rr, &wr);
}

/* Write the send into entry e, in pieces.  -EAGAIN: no room on a QP yet. */
static int post_pieces(struct rw_ib_comm *c, struct rw_ib_req *r, const struct rw_ib_cts *e,
		       unsigned int idx)
{
	size_t size = r->size, piece;
	size_t npieces = 1;
	int need[RW_IB_MAX_QPS] = {0};
	int q0 = c->rr;

	if (c->nqps > 1 && size >= 2 * RW_IB_MIN_PIECE)
		npieces = RW_MIN((size_t)c->nqps, size / RW_IB_MIN_PIECE);
	npieces = RW_MAX(npieces, RW_DIV_UP(size, RW_IB_MAX_PIECE));
	piece = RW_DIV_UP(RW_DIV_UP(size, npieces), RW_IB_PIECE_ALIGN) * RW_IB_PIECE_ALIGN;
	npieces = size ? RW_DIV_UP(size, piece) : 1;
	for (size_t k = 0; k < npieces; k++)
		need[(q0 + k) % (size_t)c->nqps]++;
	for (int q = 0; q < c->nqps; q++)
		if (c->sq_used[q] + need[q] > RW_IB_SQ_DEPTH)
			return -EAGAIN;
	r->seq = c->cts_seq;
	r->pending = (int)npieces;
	for (size_t k = 0; k < npieces; k++) {
		size_t off = k * piece, len = size ? RW_MIN(piece, size - off) : 0;
		int q = (int)((q0 + k) % (size_t)c->nqps);
		struct ibv_sge sge = {
			.addr = (uintptr_t)r->data + off, .length = (uint32_t)len, .lkey = r->lkey};
		struct ibv_send_wr wr = {
			.wr_id = WR_ID((uintptr_t)r, q, RW_IB_WR_DATA),
			.sg_list = &sge,
			.num_sge = len ? 1 : 0,
			.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED,
			.imm_data = htonl(rw_ib_imm(c->cts_seq, idx, (unsigned int)npieces)),
			.wr.rdma = {.remote_addr = e->addr + off, .rkey = e->rkey},
		};
		int rc = post_send(c, q, &wr);

		if (rc)
			return rc;
	}
	c->rr = (q0 + 1) % c->nqps;
	return 0;
}

/*
 * The CTS slot of the oldest receive not yet fully matched (cts_seq), read
 * whole into e.  \return its entries (1..RW_NET_MAX_RECVS), 0 when it has
 * not (all) arrived, or -EPROTO (garbled: the comm failed).
 */
static int cts_slot(struct rw_ib_comm *c, struct rw_ib_cts *e)
{
	const struct rw_ib_cts *slot =
		&c->fifo[(size_t)(c->cts_seq % RW_IB_FIFO_SLOTS) * RW_NET_MAX_RECVS];
	int nreqs = rw_ib_cts_parse(slot, c->cts_seq, e);

	if (nreqs < 0) {
		RW_WARN(RW_LOG_NET, "NET/IB: %s: peer %s (GID %s) posted a receive of %u buffers",
			c->dev->name, c->peer, c->peer_gid, e[0].nreqs);
		rw_ib_comm_fail(c, -EPROTO);
		return -EPROTO;
	}
	if (nreqs == 0)
		return 0;
	if (c->cts_seen != c->cts_seq) {
		c->cts_seen = c->cts_seq; /* a new receive: a sign of life */
		c->progress_ms = c->life_ms = rw_now_ms();
	}
	return nreqs;
}

/* Entry idx of the current slot is taken; the next slot once all are. */
static void cts_take(struct rw_ib_comm *c, int idx, int nreqs)
{
	c->slot_used |= (uint8_t)(1u << idx);
	if (c->slot_used == (1u << nreqs) - 1) {
		c->slot_used = 0;
		c->cts_seq = seq_next(c->cts_seq);
	}
}

/* --- progress and the peer's health ------------------------------------------------------ */

/* Has the set-up connection ended (the peer process is gone, or closed
 * the comm)?  It stays silent after the set-up, so any end of it means
 * that.  0: no; else the errno to report.  At most one probe per
 * millisecond; with nothing pending only when idle_too. */
static int peer_gone(struct rw_ib_comm *c, bool idle_too)
{
	uint64_t now = rw_now_ms();
	char b;
	ssize_t n;

	if (c->failed || (c->npending == 0 && !idle_too) || now == c->probe_ms)
		return 0;
	c->probe_ms = now;
	n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		return ECONNRESET;
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		return errno;
	return 0;
}

/* Requests still waiting on the peer (finished ones may wait for test). */
static int incomplete(const struct rw_ib_comm *c)
{
	int n = 0;

	for (int i = 0; i < c->reqs.nitems; i++) {
		const struct rw_ib_req *r = rw_slab_item(&c->reqs, i);

		if (rw_obj_state(&r->obj) != RW_OBJ_OPEN || r->rc)
			continue;
		switch (r->kind) {
		case RW_IB_REQ_SEND:
			n += r->pending > 0;
			break;
		case RW_IB_REQ_RECV:
			n += r->left > 0;
			break;
		case RW_IB_REQ_FLUSH:
			n += r->pending > 0;
			break;
		}
	}
	return n;
}

#define RW_IB_GONE_GRACE_MS 500 /* see comm_watch() */

/* After the completions were taken: fail what still waits on a peer that
 * is gone, silent too long, or behind a port that went down. */
static void comm_watch(struct rw_ib_comm *c, int gone)
{
	uint64_t now = rw_now_ms();
	/* a patient comm's receives wait for their messages as long as it
	 * takes (a message lands whole: nothing of it is ever half there) */
	bool late = !c->patient && now - c->progress_ms > (uint64_t)c->net->base.cfg.timeout_ms;
	bool down;
	int waiting, aerr;

	if (c->failed)
		return;
	aerr = atomic_load(&c->async_err);
	if (aerr) {
		RW_WARN(RW_LOG_NET,
			"NET/IB: %s: peer %s (GID %s): the NIC reported the connection's queue in "
			"error (async event above): %d request(s) fail",
			c->dev->name, c->peer, c->peer_gid, incomplete(c));
		rw_ib_comm_fail(c, aerr);
		return;
	}
	if (c->npending == 0)
		return;
	down = atomic_load(&c->dev->port_down);
	if (!gone && !late && !down)
		return;
	if (gone && !c->gone_ms)
		c->gone_ms = now; /* idle_watch() fails the comm if nothing is waiting */
	waiting = incomplete(c);
	if (waiting == 0) {
		c->progress_ms = now; /* all done, only not yet tested */
		return;
	}
	if (down) {
		RW_WARN(RW_LOG_NET,
			"NET/IB: %s port %u is down: %d request(s) to peer %s (GID %s) "
			"fail",
			c->dev->name, c->dev->port, waiting, c->peer, c->peer_gid);
		rw_ib_comm_fail(c, -ENETDOWN);
		return;
	}
	if (gone) {
		/* Acknowledgements the peer's NIC sent before its process left
		 * may still be on their way: fail only once nothing has arrived
		 * for a short while after the end was seen. */
		if (now - RW_MAX(c->gone_ms, c->progress_ms) < RW_IB_GONE_GRACE_MS)
			return;
		/* a control channel's peer that left: the caller says whether
		 * that was a failure (rw_net_patient) */
		RW_LOG(c->patient ? RW_LOG_INFO : RW_LOG_WARN, RW_LOG_NET,
		       "NET/IB: %s: peer %s (GID %s, QPN %#x) is gone (%s) with %d "
		       "request(s) pending",
		       c->dev->name, c->peer, c->peer_gid, c->rqpn[0],
		       gone == ECONNRESET ? "it closed the connection" : strerror(gone), waiting);
		rw_ib_comm_fail(c, gone == ETIMEDOUT ? -ETIMEDOUT : -ECONNRESET);
		return;
	}
	RW_WARN(RW_LOG_NET,
		"NET/IB: %s: no word from peer %s (GID %s, QPN %#x) for %llu ms "
		"with %d request(s) pending (RINGWAY_TIMEOUT_MS)",
		c->dev->name, c->peer, c->peer_gid, c->rqpn[0],
		(unsigned long long)(now - c->progress_ms), waiting);
	rw_ib_comm_fail(c, -ETIMEDOUT);
}

/* Probe first, then take completions: what arrived before the peer left
 * still counts. */
static void comm_progress(struct rw_ib_comm *c)
{
	int gone = peer_gone(c, false);

	rw_ib_comm_poll(c);
	comm_watch(c, gone);
}

/* With nothing waiting on the peer (requests done, if not yet tested), a
 * peer that is gone fails the comm at once: no acknowledgement can be on
 * its way.  call: the caller, for the message. */
static void idle_watch(struct rw_ib_comm *c, const char *call)
{
	int gone;

	if (c->failed)
		return;
	gone = peer_gone(c, true);
	if (gone && !c->gone_ms)
		c->gone_ms = rw_now_ms();
	if (!gone && c->gone_ms)
		gone = ECONNRESET; /* seen earlier, with requests pending */
	if (!gone || incomplete(c))
		return; /* those requests fail in comm_watch(), after its grace */
	RW_LOG(c->patient ? RW_LOG_INFO : RW_LOG_WARN, RW_LOG_NET,
	       "NET/IB: %s: %s: peer %s (GID %s, QPN %#x) is gone (%s)", c->dev->name, call,
	       c->peer, c->peer_gid, c->rqpn[0],
	       gone == ECONNRESET ? "it closed the connection" : strerror(gone));
	rw_ib_comm_fail(c, gone == ETIMEDOUT ? -ETIMEDOUT : -ECONNRESET);
}

int rw_ib_patient(struct rw_net_comm *comm)
{
	struct rw_ib_comm *c;
	int rc = rw_ib_comm_check(comm, RW_IB_RECV_MAGIC, &c);

	if (rc)
		return rc;
	c->patient = true;
	return 0;
}

/* A comm of the given kind: 0, -EINVAL (wrong kind) or -EBADF (closed). */
static int comm_check(struct rw_net_comm *base, uint32_t kind, struct rw_ib_comm **out)
{
	return rw_ib_comm_check(base, kind, out);
}

/*
 * isend found nothing to take: the caller will try again.  Retrying is still
 * a wait on the peer, so it is bounded: a peer that is gone fails the comm
 * now, one that posts nothing taking the send for RINGWAY_TIMEOUT_MS
 * (nothing arriving) fails it then.  The clock starts at the first "not
 * now" of a run of retries.  \return 0 or the comm's error.
 */
static int isend_wait(struct rw_ib_comm *c, int tag, size_t size)
{
	uint64_t now = rw_now_ms(), limit = (uint64_t)c->net->base.cfg.timeout_ms;

	if (!c->wait_since_ms || now - c->wait_last_ms > limit)
		c->wait_since_ms = now;
	c->wait_last_ms = now;
	idle_watch(c, "isend");
	if (!c->failed && now - RW_MAX(c->wait_since_ms, c->life_ms) > limit) {
		RW_WARN(RW_LOG_NET,
			"NET/IB: %s: no receive of peer %s (GID %s, QPN %#x) took the send of %zu "
			"bytes with tag %d for %llu ms (RINGWAY_TIMEOUT_MS)",
			c->dev->name, c->peer, c->peer_gid, c->rqpn[0], size, tag,
			(unsigned long long)(now - RW_MAX(c->wait_since_ms, c->life_ms)));
		rw_ib_comm_fail(c, -ETIMEDOUT);
	}
	return c->failed;
}

/* The send is larger than entry e: it fails, and the connection with it on
 * both sides (the receiver learns it from the notice).  0, or -EAGAIN when
 * the notice finds no room yet. */
static int refuse_oversize(struct rw_ib_comm *c, struct rw_ib_req *r, const struct rw_ib_cts *e,
			   unsigned int idx)
{
	if (c->sq_used[c->rr] >= RW_IB_SQ_DEPTH)
		return -EAGAIN;
	RW_WARN(RW_LOG_NET,
		"NET/IB: %s: message of %zu bytes (tag %d) is larger than buffer %u of peer %s's "
		"receive %u (%llu bytes, GID %s): both fail",
		c->dev->name, r->size, r->tag, idx, c->peer, c->cts_seq,
		(unsigned long long)e->size, c->peer_gid);
	post_notice(c, e, idx, RW_IB_IMM_ERR_SIZE); /* a failure fails the comm too */
	r->rc = -EMSGSIZE;
	rw_ib_comm_fail(c, -EMSGSIZE);
	return 0;
}

int rw_ib_isend(struct rw_net_comm *base, void *data, size_t size, int tag, struct rw_net_mr *mr,
		struct rw_net_req **req)
{
	struct rw_ib_cts e[RW_NET_MAX_RECVS];
	struct rw_ib_comm *c;
	struct rw_ib_mr *m;
	struct rw_ib_req *r = NULL;
	int rc = comm_check(base, RW_IB_SEND_MAGIC, &c), nreqs, idx = -1;

	if (rc)
		return rc;
	if (req && size > RW_IB_MAX_MSG) {
		RW_WARN(RW_LOG_NET,
			"NET/IB: %s: send of %zu bytes (tag %d) to peer %s: larger than the %zu "
			"bytes one message may have (maxP2pBytes); refused",
			c->dev->name, size, tag, c->peer, RW_IB_MAX_MSG);
		return -EMSGSIZE;
	}
	m = rw_ib_mr_of(c, mr);
	if (!req || !data || !m)
		return -EINVAL;
	comm_progress(c);
	if (c->failed)
		return c->failed;
	nreqs = cts_slot(c, e);
	if (nreqs < 0)
		return c->failed;
	for (int i = 0; i < nreqs && idx < 0; i++)
		if (!(c->slot_used & (1u << i)) && e[i].tag == tag)
			idx = i;
	if (idx < 0 || c->nsends >= RW_IB_FIFO_SLOTS || !(r = rw_ib_req_get(c, RW_IB_REQ_SEND))) {
		*req = NULL;
		return isend_wait(c, tag, size);
	}
	r->data = data;
	r->size = size;
	r->tag = tag;
	r->lkey = m->lkey;
	if (size > e[idx].size)
		rc = refuse_oversize(c, r, &e[idx], (unsigned int)idx);
	else
		rc = post_pieces(c, r, &e[idx], (unsigned int)idx);
	if (rc) {
		rw_ib_req_put(c, r);
		if (rc != -EAGAIN)
			return rc; /* the comm failed (logged) */
		*req = NULL;	   /* no room on a QP yet: like no CTS */
		return isend_wait(c, tag, size);
	}
	r->matched = true;
	cts_take(c, idx, nreqs);
	c->wait_since_ms = 0;
	*req = &r->base;
	return 0;
}

/* --- receiving ------------------------------------------------------------------------------- */

int rw_ib_irecv(struct rw_net_comm *base, int n, void **data, const size_t *sizes, const int *tags,
		struct rw_net_mr **mrs, struct rw_net_req **req)
{
	struct rw_ib_comm *c;
	struct rw_ib_cts *st;
	struct rw_ib_req *r;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	uint32_t seq, slot;
	uint32_t rkeys[RW_NET_MAX_RECVS];
	int rc = comm_check(base, RW_IB_RECV_MAGIC, &c);

	if (rc)
		return rc;
	if (!req || !data || !sizes || !tags || !mrs || n < 1 || n > RW_NET_MAX_RECVS)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (sizes[i] > RW_IB_MAX_MSG) {
			RW_WARN(RW_LOG_NET,
				"NET/IB: %s: receive buffer %d of %zu bytes from peer %s: larger "
				"than the %zu bytes one message may have (maxP2pBytes); refused",
				c->dev->name, i, sizes[i], c->peer, RW_IB_MAX_MSG);
			return -EMSGSIZE;
		}
	}
	for (int i = 0; i < n; i++) {
		struct rw_ib_mr *m = rw_ib_mr_of(c, mrs[i]);

		if (!m || (!data[i] && sizes[i]))
			return -EINVAL;
		rkeys[i] = m->rkey;
	}
	comm_progress(c);
	idle_watch(c, "irecv");
	if (c->failed)
		return c->failed;
	if (c->nrecvs >= RW_IB_FIFO_SLOTS || c->sq_used[0] >= RW_IB_SQ_DEPTH ||
	    !(r = rw_ib_req_get(c, RW_IB_REQ_RECV))) {
		*req = NULL;
		return 0;
	}
	seq = seq_next(c->recv_seq);
	slot = seq % RW_IB_FIFO_SLOTS;
	st = &c->stage[(size_t)slot * RW_NET_MAX_RECVS];
	for (int i = 0; i < n; i++) {
		st[i] = (struct rw_ib_cts){.addr = (uintptr_t)data[i],
					   .size = sizes[i],
					   .rkey = rkeys[i],
					   .tag = tags[i],
					   .nreqs = (uint8_t)n,
					   .idx = (uint8_t)i,
					   .seq = seq};
		st[i].check = rw_ib_cts_check(&st[i]);
		r->cap[i] = sizes[i];
	}
	sge = (struct ibv_sge){.addr = (uintptr_t)st,
			       .length = (uint32_t)((size_t)n * sizeof(*st)),
			       .lkey = c->stage_mr->lkey};
	wr = (struct ibv_send_wr){
		.wr_id = WR_ID(seq, 0, RW_IB_WR_CTRL),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr =
				    c->rfifo_addr + (uint64_t)slot * RW_NET_MAX_RECVS * sizeof(*st),
			    .rkey = c->rfifo_rkey},
	};
	rc = post_send(c, 0, &wr);
	if (rc) {
		rw_ib_req_put(c, r);
		return rc;
	}
	r->seq = seq;
	r->n = n;
	r->left = n;
	r->posted = true;
	c->recv_seq = seq;
	c->rreqs[slot] = r;
	c->nrecvs++;
	*req = &r->base;
	return 0;
}

int rw_ib_iflush(struct rw_net_comm *base, int n, void **data, const int *sizes,
		 struct rw_net_mr **mrs, struct rw_net_req **req)
{
	struct rw_ib_comm *c;
	struct rw_ib_req *r;
	int rc = comm_check(base, RW_IB_RECV_MAGIC, &c), reads = 0;
	bool need = false;

	if (rc)
		return rc;
	if (!req || !data || !sizes || !mrs || n < 1 || n > RW_NET_MAX_RECVS)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		struct rw_ib_mr *m = rw_ib_mr_of(c, mrs[i]);

		if (!m)
			return -EINVAL;
		need |= m->type == RW_PTR_CUDA && sizes[i] > 0;
	}
	if (c->failed)
		return c->failed;
	if (!need || !c->flush_qp) {
		*req = NULL; /* host memory: nothing to make visible */
		return 0;
	}
	if (c->sq_used[RW_IB_FLUSH_QPI] + n > RW_IB_SQ_DEPTH ||
	    !(r = rw_ib_req_get(c, RW_IB_REQ_FLUSH))) {
		*req = NULL;
		return -EAGAIN;
	}
	for (int i = 0; i < n; i++) {
		struct rw_ib_mr *m = rw_ib_mr_of(c, mrs[i]);
		struct ibv_sge sge = {
			.addr = (uintptr_t)c->flush_buf, .length = 1, .lkey = c->flush_mr->lkey};
		struct ibv_send_wr wr = {
			.wr_id = WR_ID((uintptr_t)r, RW_IB_FLUSH_QPI, RW_IB_WR_FLUSH),
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = {.remote_addr = (uintptr_t)data[i], .rkey = m->rkey},
		};
		struct ibv_send_wr *bad = NULL;

		if (m->type != RW_PTR_CUDA || sizes[i] <= 0)
			continue;
		rc = ibv_post_send(c->flush_qp, &wr, &bad);
		if (rc) {
			RW_WARN(RW_LOG_NET,
				"NET/IB: %s: ibv_post_send(flush QP %#x, RDMA READ %p) "
				"failed: %s",
				c->dev->name, c->flush_qp->qp_num, data[i], strerror(rc));
			rw_ib_comm_fail(c, -rc);
			break;
		}
		c->sq_used[RW_IB_FLUSH_QPI]++;
		reads++;
	}
	r->pending = reads;
	*req = &r->base;
	return 0;
}

/* --- test -------------------------------------------------------------------------------- */

static void recv_forget(struct rw_ib_comm *c, struct rw_ib_req *r)
{
	uint32_t slot = r->seq % RW_IB_FIFO_SLOTS;

	if (r->posted && c->rreqs[slot] == r)
		c->rreqs[slot] = NULL;
	if (r->posted)
		c->nrecvs--;
}

int rw_ib_test(struct rw_net_req *base, int *done, size_t *sizes)
{
	struct rw_ib_req *r;
	struct rw_ib_comm *c;
	int rc = 0;
	bool fin = false;

	if (!base || !done)
		return -EINVAL;
	r = rw_container_of(base, struct rw_ib_req, base);
	if (rw_obj_check(&r->obj, RW_IB_REQ_MAGIC) || !r->base.comm)
		return -EINVAL; /* completed (a free request of the slab) or foreign */
	c = rw_ib_comm_from(r->base.comm);
	comm_progress(c);
	*done = 0;
	switch (r->kind) {
	case RW_IB_REQ_SEND:
		/* a request that finished stays finished when the comm fails after */
		if (r->rc)
			rc = r->rc;
		else if (r->matched && r->pending == 0)
			fin = true;
		else if (c->failed)
			rc = c->failed;
		if (fin && sizes)
			sizes[0] = r->size;
		break;
	case RW_IB_REQ_RECV:
		if (r->rc)
			rc = r->rc;
		else if (r->left == 0)
			fin = true;
		else if (c->failed)
			rc = c->failed;
		if (fin && sizes)
			for (int i = 0; i < r->n; i++)
				sizes[i] = r->got_bytes[i];
		if (rc || fin)
			recv_forget(c, r);
		break;
	case RW_IB_REQ_FLUSH:
		if (r->pending == 0)
			fin = true;
		else if (c->failed)
			rc = c->failed;
		break;
	}
	if (!rc && !fin)
		return 0;
	rw_ib_req_put(c, r);
	if (rc)
		return rc;
	*done = 1;
	return 0;
}
