/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The latency algorithms of allreduce, for small host buffers (tune.c
 * decides when): every message is the whole buffer behind the collective's
 * 16-byte signature, in one send, on one link per peer (the mesh of
 * RW_LINK_P2P links; with 2 ranks channel 0's links).  No chunks, no
 * channels; receives are all posted before the first send.
 *
 *   direct  every rank sends its buffer to every other and folds the P
 *           buffers in rank order: 1 message time, P-1 sends and receives.
 *   rd      recursive doubling: round k swaps the partial sum with rank
 *           r ^ 2^k, ceil(log2 P) message times.  With P not a power of
 *           two (p2 the largest power of two below P), rank p2 + i first
 *           sends its buffer to rank i, which folds it in, and gets the
 *           result back from rank i at the end.
 *
 * Exact and the same bits on every rank: every reduction combines the
 * lower ranks' partial with the higher ranks' (lower first), so two
 * partners compute the same value, and the tree of the sum is the same for
 * every rank (direct: one left fold in rank order, the same on every rank;
 * rd: ((r0 op r(p2)) op r1) op (r2 op r3) ... as the rounds pair them).
 * avg sums and divides once, at the last reduction.
 *
 * The staging (struct rw_coll_small) is the comm's: out slots the sends
 * read (the signature, then the data) and in slots the receives fill; the
 * user's buffers are only read and written by memcpy and the kernels, never
 * registered.  A received signature that differs from ours fails every rank
 * with both collectives named (rw_coll_fail_mismatch) before anything
 * received is used.
 *
 * Where every rank is on this host over shm, direct exchange of a message
 * that fits half a window goes through the links' windows instead of
 * messages (small_win.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll/small_internal.h"
#include "common/rw_log.h"

#define NOTICE_HOPS_MS 1000 /* how long a lost link to a non-neighbour waits for a notice */

/* --- links and staging ------------------------------------------------------- */

int rw_coll_p2p_peers(int nranks, int rank, enum rw_coll_algo algo, int *peers)
{
	int n = 0, p2 = 1;

	if (nranks < 3 || rank < 0 || rank >= nranks)
		return 0; /* 2 ranks: channel 0's links */
	if (algo != RW_COLL_ALGO_AUTO && algo != RW_COLL_ALGO_RD && algo != RW_COLL_ALGO_DIRECT)
		return 0;
	if (nranks <= RW_COLL_DIRECT_MAX) {
		for (int q = 0; q < nranks; q++)
			if (q != rank)
				peers[n++] = q;
		return n;
	}
	while (p2 <= nranks / 2)
		p2 *= 2;
	if (rank >= p2) {
		peers[n++] = rank - p2; /* folds into it */
		return n;
	}
	/* the xor partners ascend with k once sorted by value; the fold
	 * partner (above p2) is the largest */
	for (int k = 1; k < p2; k *= 2)
		peers[n++] = rank ^ k;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && peers[j - 1] > peers[j]; j--) {
			int t = peers[j];

			peers[j] = peers[j - 1];
			peers[j - 1] = t;
		}
	if (rank < nranks - p2)
		peers[n++] = rank + p2;
	return n;
}

bool rw_coll_has_p2p(const struct rw_coll_comm *c)
{
	return c->nranks == 2 || c->p2p_first >= 0;
}

int rw_coll_p2p_send_link(const struct rw_coll_comm *c, int peer)
{
	if (c->nranks == 2)
		return rw_link_send(0);
	for (int i = 0; c->p2p_first >= 0 && i < c->np2p; i++)
		if (c->links[c->p2p_first + 2 * i].peer == peer)
			return c->p2p_first + 2 * i;
	return -1;
}

int rw_coll_p2p_recv_link(const struct rw_coll_comm *c, int peer)
{
	int l = rw_coll_p2p_send_link(c, peer);

	return c->nranks == 2 ? rw_link_recv(0) : l < 0 ? -1 : l + 1;
}

void rw_coll_small_free(struct rw_coll_comm *c)
{
	struct rw_coll_small *s = c->small;

	if (!s)
		return;
	for (int i = 0; i < s->nlinks; i++)
		if (s->mr[i] && c->links[i].comm) /* a closed link took it along */
			rw_net_dereg_mr(c->links[i].comm, s->mr[i]);
	free(s->mr);
	free(s->buf);
	free(s->state);
	free(s);
	c->small = NULL;
}

static int slots_needed(int nranks)
{
	int rounds = 0;

	while ((2 << rounds) <= nranks)
		rounds++;
	return nranks <= RW_COLL_DIRECT_MAX ? RW_MAX(nranks - 1, rounds + 2) : rounds + 2;
}

/* Staging with slots of at least stride bytes, registered on every link of
 * the latency algorithms.  Only called while no collective uses it. */
static int small_stage(struct rw_coll_comm *c, size_t stride)
{
	struct rw_coll_small *s;
	void *state = NULL; /* kept: the running collective's */
	size_t bytes;
	int rc = 0;

	if (c->small && c->small->stride >= stride)
		return 0;
	/* at least double: a sweep of sizes re-registers a few times only */
	if (c->small && c->small->stride <= SIZE_MAX / 4)
		stride = RW_MAX(stride, 2 * c->small->stride);
	if (c->small) {
		state = c->small->state;
		c->small->state = NULL;
	}
	rw_coll_small_free(c);
	stride = (RW_MAX(stride, (size_t)4096) + 4095) & ~(size_t)4095;
	s = calloc(1, sizeof(*s));
	if (!s) {
		free(state);
		return -ENOMEM;
	}
	s->state = state ? state : calloc(1, sizeof(struct rw_small_state));
	s->stride = stride;
	s->nslots = slots_needed(c->nranks);
	s->nlinks = c->nlinks;
	bytes = 2 * (size_t)s->nslots * stride;
	s->buf = aligned_alloc(4096, bytes);
	s->mr = calloc((size_t)c->nlinks, sizeof(*s->mr));
	c->small = s;
	if (!s->buf || !s->mr || !s->state) {
		rw_coll_small_free(c);
		return -ENOMEM;
	}
	for (int peer = 0; peer < c->nranks && !rc; peer++) {
		int ls = rw_coll_p2p_send_link(c, peer), lr = rw_coll_p2p_recv_link(c, peer);

		if (peer == c->rank)
			continue;
		if (ls >= 0 && !s->mr[ls] && c->links[ls].comm)
			rc = rw_net_reg_mr(c->links[ls].comm, s->buf, bytes, RW_PTR_HOST,
					   &s->mr[ls]);
		if (!rc && lr >= 0 && !s->mr[lr] && c->links[lr].comm)
			rc = rw_net_reg_mr(c->links[lr].comm, s->buf, bytes, RW_PTR_HOST,
					   &s->mr[lr]);
	}
	if (rc)
		rw_coll_small_free(c);
	return rc;
}

static char *out_slot(const struct rw_coll_comm *c, int k)
{
	return c->small->buf + (size_t)k * c->small->stride;
}

static char *in_slot(const struct rw_coll_comm *c, int k)
{
	return c->small->buf + (size_t)(c->small->nslots + k) * c->small->stride;
}

/* --- the schedules ----------------------------------------------------------- */

static void add(struct rw_small_msg *m, int *n, int peer, int link, int slot, int round)
{
	m[*n] = (struct rw_small_msg){.peer = peer, .link = link, .slot = slot, .round = round};
	(*n)++;
}

static int small_init(struct rw_coll_req *r, bool rd)
{
	struct rw_coll_comm *c = r->comm;
	int p = c->nranks;

	if (!rw_coll_has_p2p(c) || p < 2 || (!rd && p > RW_COLL_DIRECT_MAX))
		return -EINVAL; /* tune.c never picks it then */
	/* every message carries the signature, checked before its data is
	 * folded or forwarded, and a rank finishes only with every rank's
	 * contribution: its own end proves that every rank ran this collective,
	 * on every rank alike, so it needs no token at all (the control links
	 * keep their receives posted for the notices; coll_ctl.c).  Tokens
	 * cost a send and a receive each way per call: 2 ranks 8 B, shm 1.38
	 * -> 0.58 us, socket 32.3 -> 10.6 us; 4 ranks on 2 cores, socket 8 B
	 * 102 -> 51 us, 64 KiB 200 -> 150 us (medians of 5). */
	r->proven = true;
	r->no_tokens = true;
	/* the schedule is made in the comm's staging when the collective runs
	 * (one at a time): nothing allocated per call; algo set: fini runs */
	r->algo = c;
	return 0;
}

/* The schedule of r, in the state the staging keeps. */
static void schedule(struct rw_coll_req *r, struct rw_small_state *st, bool rd)
{
	struct rw_coll_comm *c = r->comm;
	int me = c->rank, p = c->nranks;

	st->owner = r;
	st->rd = rd;
	st->nsend = st->nrecv = 0;
	st->p2 = st->extra = st->rounds = st->stage = 0;
	st->folded = st->win = false;
	st->polls = 0;
	if (!rd) {
		/* direct: out slot 0 to everyone, in slot i from the i-th peer */
		for (int q = 0, i = 0; q < p; q++) {
			if (q == me)
				continue;
			add(st->recv, &st->nrecv, q, rw_coll_p2p_recv_link(c, q), i++, 0);
			add(st->send, &st->nsend, q, rw_coll_p2p_send_link(c, q), 0, 0);
		}
		return;
	}
	for (st->p2 = 1; st->p2 * 2 <= p; st->p2 *= 2)
		st->rounds++;
	st->extra = p - st->p2;
	if (me >= st->p2) {
		/* sends its buffer to me - p2, gets the result back */
		int q = me - st->p2;

		add(st->send, &st->nsend, q, rw_coll_p2p_send_link(c, q), 0, -1);
		add(st->recv, &st->nrecv, q, rw_coll_p2p_recv_link(c, q), 0, st->rounds);
		return;
	}
	/* receives: the fold, then one per round; sends are added as the
	 * partials are made (their out slots are known only then) */
	if (me < st->extra)
		add(st->recv, &st->nrecv, me + st->p2, rw_coll_p2p_recv_link(c, me + st->p2),
		    st->nrecv, -1);
	for (int k = 0; k < st->rounds; k++) {
		int q = me ^ (1 << k);

		add(st->recv, &st->nrecv, q, rw_coll_p2p_recv_link(c, q), st->nrecv, k);
	}
}

static int direct_init(struct rw_coll_req *r)
{
	return small_init(r, false);
}

static int rd_init(struct rw_coll_req *r)
{
	return small_init(r, true);
}

static void small_fini(struct rw_coll_req *r)
{
	struct rw_coll_small *s = r->comm->small;
	struct rw_small_state *st = s ? s->state : NULL;

	if (st && st->owner == r)
		st->owner = NULL;
}

/* --- moving messages ---------------------------------------------------------- */

size_t rw_small_msg_bytes(const struct rw_coll_req *r)
{
	return RW_SMALL_SIG_BYTES + r->a.count * r->esize;
}

/*
 * The link to peer failed.  Failure notices travel round the ring on the
 * control links, but these links reach ranks that are not ring neighbours:
 * a peer that closed its links because a third rank died has told only its
 * ring neighbours, and the notice needs a few hops to get here.  So before
 * blaming a peer that is no ring neighbour, listen on the control links a
 * while (bounded) for a notice naming the rank that really failed.
 */
int rw_small_link_failed(struct rw_coll_req *r, int err, int peer, const char *what, int round)
{
	struct rw_coll_comm *c = r->comm;
	uint64_t until = rw_now_ms() + NOTICE_HOPS_MS;

	if (err != -EMSGSIZE && err != -EPROTO && peer != rw_coll_next(c) &&
	    peer != rw_coll_prev(c)) {
		while (!c->error && rw_now_ms() < until) {
			if (rw_coll_ctl_progress(r))
				break;
			usleep(1000);
		}
		if (c->error)
			return c->error; /* a notice: the failed rank is named */
	}
	return rw_coll_fail(r, err, peer, what, round, 0);
}

static int post_send(struct rw_coll_req *r, struct rw_small_msg *m, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_coll_link *l = &c->links[m->link];
	int rc;

	if (m->posted)
		return 0;
	rc = rw_net_isend(l->comm, out_slot(c, m->slot), rw_small_msg_bytes(r), RW_COLL_TAG,
			  c->small->mr[m->link], &m->req);
	if (rc)
		return rw_small_link_failed(r, rc, m->peer, "sending to", m->round);
	m->posted = m->req != NULL;
	if (m->posted)
		c->stats.chunks_sent++;
	*progressed |= m->posted;
	return 0;
}

static int post_recv(struct rw_coll_req *r, struct rw_small_msg *m, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_coll_link *l = &c->links[m->link];
	void *data = in_slot(c, m->slot);
	size_t size = c->small->stride;
	int tag = RW_COLL_TAG, rc;

	if (m->posted)
		return 0;
	rc = rw_net_irecv(l->comm, 1, &data, &size, &tag, &c->small->mr[m->link], &m->req);
	if (rc)
		return rw_small_link_failed(r, rc, m->peer, "posting a receive from", m->round);
	m->posted = m->req != NULL;
	*progressed |= m->posted;
	return 0;
}

static int test_send(struct rw_coll_req *r, struct rw_small_msg *m, bool *progressed)
{
	int done = 0, rc;

	if (!m->posted || m->done)
		return 0;
	rc = rw_net_test(m->req, &done, NULL);
	if (rc)
		return rw_small_link_failed(r, rc, m->peer, "sending to", m->round);
	m->done = done;
	*progressed |= m->done;
	return 0;
}

/* A receive that completed is checked: its signature and size are ours. */
static int test_recv(struct rw_coll_req *r, struct rw_small_msg *m, bool *progressed)
{
	size_t got = 0;
	int done = 0, rc;

	if (!m->posted || m->done)
		return 0;
	rc = rw_net_test(m->req, &done, &got);
	if (rc)
		return rw_small_link_failed(r, rc, m->peer, "receiving from", m->round);
	if (!done)
		return 0;
	return rw_small_msg_in(r, m, in_slot(r->comm, m->slot), got, progressed);
}

int rw_small_msg_in(struct rw_coll_req *r, struct rw_small_msg *m, const void *msg, size_t got,
		    bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_coll_sig theirs = {0};

	if (got >= RW_SMALL_SIG_BYTES)
		memcpy(&theirs, msg, RW_SMALL_SIG_BYTES);
	if (!rw_coll_sig_same(&theirs, &r->sig))
		return rw_coll_fail_mismatch(r, m->peer, &theirs);
	if (got != rw_small_msg_bytes(r)) {
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: %s allreduce: rank %d sent %zu bytes; expected %zu (do all "
			"ranks pass the same RINGWAY_* settings?)",
			c->rank, r->ops->name, m->peer, got, rw_small_msg_bytes(r));
		return rw_coll_fail(r, -EPROTO, m->peer, "receiving from", m->round, 0);
	}
	c->stats.chunks_recv++;
	m->done = true;
	*progressed = true;
	return 0;
}

/* dst = srcs[0] op ... op srcs[n-1], left to right; final: avg divides. */
static int fold(const struct rw_coll_req *r, void *dst, const void **srcs, int n, bool final)
{
	size_t count = r->a.count;
	const void *grp[RW_REDUCE_MAX_SRCS];
	int used = 0, rc;

	for (int i = 0; i < n; i++) {
		bool last = i == n - 1;

		grp[used++] = srcs[i];
		if (used < RW_REDUCE_MAX_SRCS && !last)
			continue;
		if (last && final && r->a.op == RW_OP_AVG)
			rc = rw_reduce_multi_avg(dst, grp, (unsigned)used, count, r->a.dtype,
						 (unsigned)r->comm->nranks);
		else
			rc = rw_reduce_multi(dst, grp, (unsigned)used, count, r->a.dtype, r->redop);
		if (rc)
			return rc;
		used = 0;
		grp[used++] = dst; /* the next group folds onto the partial */
	}
	return 0;
}

/* Direct's end, once every peer's buffer is in (in[i]: the i-th receive's
 * data): all of them and ours folded in rank order into recvbuf, once. */
int rw_small_fold_all(struct rw_coll_req *r, struct rw_small_state *st, const void *ours,
		      const void *const *in, bool *progressed)
{
	const struct rw_coll_comm *c = r->comm;
	const void *srcs[RW_COLL_DIRECT_MAX];

	if (st->folded)
		return 0;
	st->folded = true;
	*progressed = true;
	if (!r->a.count)
		return 0;
	for (int q = 0, i = 0; q < c->nranks; q++)
		srcs[q] = q == c->rank ? ours : in[i++];
	return fold(r, r->a.recvbuf, srcs, c->nranks, true);
}

/* First call: staging, our signature in every out slot, our buffer in out
 * slot 0, every receive posted. */
static int start(struct rw_coll_req *r, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	bool win = rw_small_win_fits(r);
	struct rw_small_state *st;
	int rc = small_stage(c, win ? 0 : rw_small_msg_bytes(r)); /* the window: state only */

	if (rc)
		return rc;
	st = rw_small_state_of(r);
	schedule(r, st, r->ops == &rw_coll_rd_ops);
	if (win) {
		st->win = true;
		rw_small_win_write(r, st);
		*progressed = true;
		return 0;
	}
	for (int k = 0; k < c->small->nslots; k++)
		memcpy(out_slot(c, k), &r->sig, RW_SMALL_SIG_BYTES);
	if (r->a.count)
		memcpy(out_slot(c, 0) + RW_SMALL_SIG_BYTES, r->a.sendbuf, r->a.count * r->esize);
	st->cur = out_slot(c, 0) + RW_SMALL_SIG_BYTES;
	st->next_out = 1;
	*progressed = true;
	return 0;
}

static int direct_step(struct rw_coll_req *r, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_small_state *st = rw_small_state_of(r);
	const void *in[RW_COLL_DIRECT_MAX];
	int rc;

	for (int i = 0; i < st->nrecv; i++) {
		rc = post_recv(r, &st->recv[i], progressed);
		if (rc)
			return rc;
	}
	for (int i = 0; i < st->nsend; i++) {
		rc = post_send(r, &st->send[i], progressed);
		if (!rc)
			rc = test_send(r, &st->send[i], progressed);
		if (rc)
			return rc;
	}
	for (int i = 0; i < st->nrecv; i++) {
		rc = test_recv(r, &st->recv[i], progressed);
		if (rc)
			return rc;
		if (!st->recv[i].done)
			return 0;
	}
	for (int i = 0; i < st->nrecv; i++)
		in[i] = in_slot(c, st->recv[i].slot) + RW_SMALL_SIG_BYTES;
	return rw_small_fold_all(r, st, st->cur, in, progressed);
}

/* rd: send this rank's partial (st->cur, in an out slot) to peer. */
static void rd_send(struct rw_coll_req *r, int peer, int round)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_small_state *st = rw_small_state_of(r);
	int slot =
		(int)((st->cur - RW_SMALL_SIG_BYTES - c->small->buf) / (ptrdiff_t)c->small->stride);

	add(st->send, &st->nsend, peer, rw_coll_p2p_send_link(c, peer), slot, round);
}

static int rd_step(struct rw_coll_req *r, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_small_state *st = rw_small_state_of(r);
	int me = c->rank, rc;

	for (int i = 0; i < st->nrecv; i++) {
		rc = post_recv(r, &st->recv[i], progressed);
		if (rc)
			return rc;
	}
	if (me >= st->p2) {
		/* the extra rank: its buffer out, the result in */
		struct rw_small_msg *m = &st->recv[0];

		rc = post_send(r, &st->send[0], progressed);
		if (!rc)
			rc = test_send(r, &st->send[0], progressed);
		if (!rc)
			rc = test_recv(r, m, progressed);
		if (rc || !m->done || st->folded)
			return rc;
		if (r->a.count)
			memcpy(r->a.recvbuf, in_slot(c, m->slot) + RW_SMALL_SIG_BYTES,
			       r->a.count * r->esize);
		st->folded = true;
		*progressed = true;
		return 0;
	}
	if (st->stage == 0 && st->nsend == 0 && me >= st->extra)
		rd_send(r, me ^ 1, 0); /* no fold: round 0 starts with our buffer */
	for (;;) {
		struct rw_small_msg *m;
		const void *srcs[2];
		bool last, lower;
		char *dst;
		int k;

		for (int i = 0; i < st->nsend; i++) {
			rc = post_send(r, &st->send[i], progressed);
			if (!rc)
				rc = test_send(r, &st->send[i], progressed);
			if (rc)
				return rc;
		}
		if (st->stage >= st->nrecv)
			return 0;
		m = &st->recv[st->stage];
		rc = test_recv(r, m, progressed);
		if (rc || !m->done)
			return rc;
		/* lower ranks' partial first: partners compute the same bits */
		lower = m->round < 0 || me < m->peer;
		srcs[0] = lower ? st->cur : in_slot(c, m->slot) + RW_SMALL_SIG_BYTES;
		srcs[1] = lower ? in_slot(c, m->slot) + RW_SMALL_SIG_BYTES : st->cur;
		last = st->stage == st->nrecv - 1;
		/* the result goes to recvbuf, unless a folded-in rank waits for it */
		dst = last && me >= st->extra ? r->a.recvbuf
					      : out_slot(c, st->next_out++) + RW_SMALL_SIG_BYTES;
		if (r->a.count) {
			rc = fold(r, dst, srcs, 2, last);
			if (rc)
				return rc;
		}
		st->stage++;
		*progressed = true;
		if (!last) {
			st->cur = dst;
			k = st->recv[st->stage].round;
			rd_send(r, me ^ (1 << k), k);
			continue;
		}
		if (me < st->extra) {
			st->cur = dst;
			rd_send(r, me + st->p2, st->rounds);
			if (r->a.count)
				memcpy(r->a.recvbuf, dst, r->a.count * r->esize);
		}
		st->folded = true;
	}
}

static bool all_done(const struct rw_small_state *st)
{
	if (!st->folded)
		return false;
	for (int i = 0; i < st->nsend; i++)
		if (!st->send[i].done)
			return false;
	for (int i = 0; i < st->nrecv; i++)
		if (!st->recv[i].done)
			return false;
	return true;
}

static int small_progress(struct rw_coll_req *r, bool *progressed)
{
	struct rw_coll_small *s = r->comm->small;
	struct rw_small_state *st;
	int rc;

	if (!s || ((struct rw_small_state *)s->state)->owner != r) {
		rc = start(r, progressed);
		if (rc)
			return rc;
	}
	st = rw_small_state_of(r);
	rc = st->win  ? rw_small_win_step(r, progressed)
	     : st->rd ? rd_step(r, progressed)
		      : direct_step(r, progressed);
	if (rc)
		return rc;
	return all_done(st) ? 1 : 0;
}

/* A send the peer does not take names it before a receive that does not
 * come (the missing data may only be that peer waiting in turn). */
static void small_waiting(const struct rw_coll_req *r, int *peer, int *step, size_t *chunk,
			  const char **what)
{
	const struct rw_small_state *st;

	*chunk = 0;
	if (!r->comm->small || ((struct rw_small_state *)r->comm->small->state)->owner != r)
		return; /* not started */
	st = rw_small_state_of(r);
	for (int i = 0; i < st->nsend; i++) {
		const struct rw_small_msg *m = &st->send[i];

		if (m->posted && !m->done) {
			*peer = m->peer;
			*step = m->round;
			*what = RW_COLL_WAIT_SEND;
			return;
		}
	}
	for (int i = 0; i < st->nrecv; i++) {
		const struct rw_small_msg *m = &st->recv[i];

		if (!m->done) {
			*peer = m->peer;
			*step = m->round;
			*what = "waiting for data from";
			return;
		}
	}
}

const struct rw_coll_algo_ops rw_coll_rd_ops = {
	.name = "rd",
	.init = rd_init,
	.progress = small_progress,
	.waiting = small_waiting,
	.fini = small_fini,
};

const struct rw_coll_algo_ops rw_coll_direct_ops = {
	.name = "direct",
	.init = direct_init,
	.progress = small_progress,
	.waiting = small_waiting,
	.fini = small_fini,
};
