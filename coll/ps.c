/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RINGWAY_ALGO=ps: the parameter-server (driver) pattern the ring replaces,
 * kept as the baseline that shows why.  Every rank sends its whole buffer
 * to rank 0; rank 0 reduces chunk by chunk (all P-1 received chunks and its
 * own in one k-source pass) and sends each reduced chunk back to every
 * rank.  Pipelined by chunk like the ring, so the comparison is fair, but
 * rank 0's link carries (P-1) x N bytes each way where a ring link carries
 * 2 (P-1)/P x N.  Allreduce on host memory only.
 *
 * Rank 0 hears from every rank, but its ring neighbours' tokens vouch only
 * for them: so each peer pair first swaps the collective's signature (16
 * bytes, sent and received ahead of the data, no extra round trip) and
 * nothing is reduced or reported done before it matched.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_internal.h"
#include "common/rw_log.h"

struct ps_peer {
	int rank;
	int send_link, recv_link;
	size_t r_posted, r_done, s_posted, s_done;
	struct rw_net_req *sig_rreq, *sig_sreq;
	bool sig_rposted, sig_in, sig_sposted, sig_out;
	struct rw_net_req *rreq[RW_COLL_MAX_RECVS];
	struct rw_net_req *sreq[RW_COLL_MAX_SENDS];
};

struct ps_state {
	size_t nchunks, chunk_elems;
	size_t reduced; /* rank 0: chunks reduced into recvbuf */
	int npeers;
	struct ps_peer peer[];
};

static struct ps_state *state_of(const struct rw_coll_req *r)
{
	return r->algo;
}

static int ps_init(struct rw_coll_req *r)
{
	struct rw_coll_comm *c = r->comm;
	struct ps_state *st;
	int rc = rw_coll_stage_ps(c);

	if (rc)
		return rc;
	st = calloc(1, sizeof(*st) + (size_t)c->nps * sizeof(st->peer[0]));
	if (!st)
		return -ENOMEM;
	st->chunk_elems = c->chunk_bytes / r->esize;
	st->nchunks = RW_DIV_UP(r->a.count, st->chunk_elems);
	st->npeers = c->nps;
	for (int i = 0; i < c->nps; i++) {
		st->peer[i].rank = c->rank == 0 ? i + 1 : 0;
		st->peer[i].send_link = c->ps_first + 2 * i;
		st->peer[i].recv_link = c->ps_first + 2 * i + 1;
	}
	r->algo = st;
	return 0;
}

static void ps_fini(struct rw_coll_req *r)
{
	free(state_of(r));
}

static size_t chunk_count(const struct rw_coll_req *r, const struct ps_state *st, size_t k)
{
	return RW_MIN(st->chunk_elems, r->a.count - k * st->chunk_elems);
}

static char *chunk_ptr(const void *base, const struct rw_coll_req *r, const struct ps_state *st,
		       size_t k)
{
	return (char *)base + k * st->chunk_elems * r->esize;
}

static char *slot_of(const struct rw_coll_comm *c, int peer, size_t k)
{
	return c->ps_stage[peer].buf + (k % RW_COLL_NSLOTS) * c->chunk_bytes;
}

/* The signatures: ours goes out first on the send link, the peer's is the
 * first message on the recv link (in the links' ctl buffers). */
static int sig_swap(struct rw_coll_req *r, struct ps_peer *p, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_coll_link *sl = &c->links[p->send_link], *rl = &c->links[p->recv_link];
	int tag = RW_COLL_TAG, done, rc;

	if (!p->sig_sposted) {
		memcpy(sl->ctl->buf, &r->sig, sizeof(r->sig));
		rc = rw_net_isend(sl->comm, sl->ctl->buf, sizeof(r->sig), RW_COLL_TAG, sl->ctl->mr,
				  &p->sig_sreq);
		if (rc)
			return rw_coll_fail(r, rc, p->rank, "sending to", 0, 0);
		p->sig_sposted = p->sig_sreq != NULL;
		*progressed |= p->sig_sposted;
	}
	if (!p->sig_rposted) {
		void *data = rl->ctl->buf;
		size_t size = RW_COLL_CTL_BYTES;

		rc = rw_net_irecv(rl->comm, 1, &data, &size, &tag, &rl->ctl->mr, &p->sig_rreq);
		if (rc)
			return rw_coll_fail(r, rc, p->rank, "posting a receive from", 0, 0);
		p->sig_rposted = p->sig_rreq != NULL;
		*progressed |= p->sig_rposted;
	}
	if (p->sig_sposted && !p->sig_out) {
		done = 0;
		rc = rw_net_test(p->sig_sreq, &done, NULL);
		if (rc)
			return rw_coll_fail(r, rc, p->rank, "sending to", 0, 0);
		p->sig_out = done;
		*progressed |= p->sig_out;
	}
	if (p->sig_rposted && !p->sig_in) {
		struct rw_coll_sig theirs = {0};
		size_t got = 0;

		done = 0;
		rc = rw_net_test(p->sig_rreq, &done, &got);
		if (rc)
			return rw_coll_fail(r, rc, p->rank, "receiving from", 0, 0);
		if (!done)
			return 0;
		if (got == sizeof(theirs))
			memcpy(&theirs, rl->ctl->buf, sizeof(theirs));
		if (!rw_coll_sig_same(&theirs, &r->sig))
			return rw_coll_fail_mismatch(r, p->rank, &theirs);
		p->sig_in = true;
		*progressed = true;
	}
	return 0;
}

/* Receives from peer i: rank 0 into staging, the others into recvbuf. */
static int recvs(struct rw_coll_req *r, int i, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ps_state *st = state_of(r);
	struct ps_peer *p = &st->peer[i];
	struct rw_net_comm *comm = c->links[p->recv_link].comm;
	bool root = c->rank == 0;
	int tag = RW_COLL_TAG, rc;

	if (!p->sig_rposted)
		return 0; /* the signature is the first message */

	while (p->r_posted < st->nchunks && p->r_posted - p->r_done < RW_COLL_MAX_RECVS &&
	       (!root || p->r_posted < st->reduced + RW_COLL_NSLOTS)) {
		size_t k = p->r_posted, size = chunk_count(r, st, k) * r->esize;
		void *data = root ? slot_of(c, i, k) : chunk_ptr(r->a.recvbuf, r, st, k);
		struct rw_net_mr *mr =
			root ? c->ps_stage[i].mr_recv : rw_coll_mr_on(r->a.recv_mr, p->recv_link);
		struct rw_net_req *req = NULL;

		rc = rw_net_irecv(comm, 1, &data, &size, &tag, &mr, &req);
		if (rc)
			return rw_coll_fail(r, rc, p->rank, "posting a receive from", 0, k);
		if (!req)
			break;
		p->rreq[k % RW_COLL_MAX_RECVS] = req;
		p->r_posted++;
		*progressed = true;
	}
	while (p->r_done < p->r_posted) {
		size_t k = p->r_done, got = 0;
		int done = 0;

		rc = rw_net_test(p->rreq[k % RW_COLL_MAX_RECVS], &done, &got);
		if (rc)
			return rw_coll_fail(r, rc, p->rank, "receiving from", 0, k);
		if (!done)
			break;
		if (got != chunk_count(r, st, k) * r->esize) {
			RW_WARN(RW_LOG_COLL,
				"coll: rank %d: ps allreduce: rank %d sent %zu bytes for chunk "
				"%zu; expected %zu (do all ranks pass the same count?)",
				c->rank, p->rank, got, k, chunk_count(r, st, k) * r->esize);
			return rw_coll_fail(r, -EPROTO, p->rank, "receiving from", 0, k);
		}
		p->r_done++;
		c->stats.chunks_recv++;
		*progressed = true;
	}
	return 0;
}

/* Sends to peer i: the others send sendbuf, rank 0 the reduced chunks. */
static int sends(struct rw_coll_req *r, int i, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ps_state *st = state_of(r);
	struct ps_peer *p = &st->peer[i];
	struct rw_net_comm *comm = c->links[p->send_link].comm;
	bool root = c->rank == 0;
	size_t ready = root ? st->reduced : st->nchunks;
	int rc;

	if (!p->sig_sposted)
		return 0; /* the signature goes first */

	while (p->s_posted < ready && p->s_posted - p->s_done < RW_COLL_MAX_SENDS) {
		size_t k = p->s_posted;
		void *data = chunk_ptr(root ? r->a.recvbuf : r->a.sendbuf, r, st, k);
		struct rw_net_mr *mr =
			rw_coll_mr_on(root ? r->a.recv_mr : r->a.send_mr, p->send_link);
		struct rw_net_req *req = NULL;

		rc = rw_net_isend(comm, data, chunk_count(r, st, k) * r->esize, RW_COLL_TAG, mr,
				  &req);
		if (rc)
			return rw_coll_fail(r, rc, p->rank, "sending to", 0, k);
		if (!req)
			break;
		p->sreq[k % RW_COLL_MAX_SENDS] = req;
		p->s_posted++;
		c->stats.chunks_sent++;
		*progressed = true;
	}
	while (p->s_done < p->s_posted) {
		int done = 0;

		rc = rw_net_test(p->sreq[p->s_done % RW_COLL_MAX_SENDS], &done, NULL);
		if (rc)
			return rw_coll_fail(r, rc, p->rank, "sending to", 0, p->s_done);
		if (!done)
			break;
		p->s_done++;
		*progressed = true;
	}
	return 0;
}

/* Rank 0: fold every chunk that all peers have delivered. */
static int reduce_ready(struct rw_coll_req *r, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ps_state *st = state_of(r);

	for (;;) {
		size_t k = st->reduced, n;
		const void *srcs[RW_REDUCE_MAX_SRCS];
		char *dst;
		int used = 0, rc;

		if (k >= st->nchunks)
			return 0;
		for (int i = 0; i < st->npeers; i++)
			if (st->peer[i].r_done <= k || !st->peer[i].sig_in)
				return 0;
		n = chunk_count(r, st, k);
		dst = chunk_ptr(r->a.recvbuf, r, st, k);
		srcs[used++] = chunk_ptr(r->a.sendbuf, r, st, k);
		for (int i = 0; i < st->npeers; i++) {
			bool last = i == st->npeers - 1;

			srcs[used++] = slot_of(c, i, k);
			if (used < RW_REDUCE_MAX_SRCS && !last)
				continue;
			if (last && r->a.op == RW_OP_AVG)
				rc = rw_reduce_multi_avg(dst, srcs, (unsigned)used, n, r->a.dtype,
							 (unsigned)c->nranks);
			else
				rc = rw_reduce_multi(dst, srcs, (unsigned)used, n, r->a.dtype,
						     r->redop);
			if (rc)
				return rc;
			used = 0;
			srcs[used++] = dst; /* the next group folds onto the partial */
		}
		st->reduced++;
		*progressed = true;
	}
}

static int ps_progress(struct rw_coll_req *r, bool *progressed)
{
	struct ps_state *st = state_of(r);
	bool moved, all_done;
	int rc;

	do {
		moved = false;
		for (int i = 0; i < st->npeers; i++) {
			rc = sig_swap(r, &st->peer[i], &moved);
			if (rc)
				return rc;
			rc = recvs(r, i, &moved);
			if (rc)
				return rc;
		}
		if (r->comm->rank == 0) {
			rc = reduce_ready(r, &moved);
			if (rc)
				return rc;
		}
		for (int i = 0; i < st->npeers; i++) {
			rc = sends(r, i, &moved);
			if (rc)
				return rc;
		}
		*progressed |= moved;
	} while (moved);
	all_done = true;
	for (int i = 0; i < st->npeers; i++) {
		const struct ps_peer *p = &st->peer[i];

		if (p->r_done < st->nchunks || p->s_done < st->nchunks || !p->sig_in || !p->sig_out)
			all_done = false;
	}
	return all_done ? 1 : 0;
}

static void ps_waiting(const struct rw_coll_req *r, int *peer, int *step, size_t *chunk,
		       const char **what)
{
	const struct ps_state *st = state_of(r);

	*step = 0;
	for (int i = 0; i < st->npeers; i++) {
		const struct ps_peer *p = &st->peer[i];

		if (p->s_done < p->s_posted) {
			*peer = p->rank;
			*chunk = p->s_done;
			*what = RW_COLL_WAIT_SEND;
			return;
		}
	}
	for (int i = 0; i < st->npeers; i++) {
		const struct ps_peer *p = &st->peer[i];

		if (p->r_done < st->nchunks) {
			*peer = p->rank;
			*chunk = p->r_done;
			*what = "waiting for data from";
			return;
		}
	}
}

const struct rw_coll_algo_ops rw_coll_ps_ops = {
	.name = "ps",
	.init = ps_init,
	.progress = ps_progress,
	.waiting = ps_waiting,
	.fini = ps_fini,
};
