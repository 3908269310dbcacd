/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The windows of direct exchange (the latency algorithms' other half is
 * small_op.c).
 *
 * Where every rank shares the host over shm, each latency link has a window
 * (rw_net_window): memory its sending side writes and its receiving side
 * reads, with no post, match, copy out or ack.  Direct exchange moves a
 * collective whose message fits half a window through them, as Open MPI's
 * fastboxes do: each rank writes its message (the signature, then its
 * buffer) into half w % 2 of every send link's window and stores the
 * half's stamp w last (release), polls the stamp of the same half of every
 * receive link (acquire), and folds straight from the peers' windows into
 * recvbuf.
 *
 * w is c->win_seq, the window collectives so far, counted alike on every
 * rank (each makes the same choice from the same size and links).  A rank
 * writes half w % 2 again only for w + 2, after finishing w + 1, which took
 * every peer's message of w + 1, which each peer wrote after finishing w,
 * fold included: two halves suffice and no writer waits for a reader.
 *
 * Ranks that call different collectives: a window message's signature is
 * checked as a staged one's is; a stamp beyond w means a peer ran more
 * window collectives than we did.  A collective that does not use the
 * windows and makes no progress while a peer's window collective w + 1 is
 * written (rw_coll_win_stray, at two idle checks in a row) means that peer
 * called another collective: with 2 ranks whatever waits, with more when
 * what waits is a send that peer has not taken.  The peer can be one
 * collective ahead, but then it took everything of ours it needed and all
 * it sent us is visible once its stamp is, so a collective of host memory
 * that still does not move after a round of polls waits for nothing that
 * will come.  Not caught: at 3+ ranks, a window collective whose peers all
 * run one that only waits for data from the window's ranks (each side
 * waits to receive); that fails at RINGWAY_TIMEOUT_MS, naming the rank
 * waited on.  Nothing polls a link while a window collective waits, so
 * the wait checks its receive links (rw_net_check) every WIN_CHECK_POLLS
 * polls: a peer that failed, closed or exited is named at once, not at
 * the timeout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll/small_internal.h"
#include "common/rw_log.h"

struct win_msg {
	uint64_t stamp; /* the window collective, stored last */
	uint64_t bytes; /* of the payload: the signature, then the data */
	unsigned char payload[];
};

#define WIN_CHECK_POLLS 64u

int rw_coll_win_setup(struct rw_coll_comm *c)
{
	size_t half = SIZE_MAX;

	if (!c->links_shm || c->nranks > RW_COLL_DIRECT_MAX || !rw_coll_has_p2p(c))
		return 0;
	c->win = calloc((size_t)c->nlinks, sizeof(*c->win));
	if (!c->win)
		return -ENOMEM;
	for (int q = 0; q < c->nranks; q++) {
		for (int k = 0; k < 2 && q != c->rank; k++) {
			int l = k ? rw_coll_p2p_recv_link(c, q) : rw_coll_p2p_send_link(c, q);
			void *addr;
			size_t bytes;

			if (l < 0 || !c->links[l].comm ||
			    rw_net_window(c->links[l].comm, &addr, &bytes) || bytes < 4096) {
				free(c->win);
				c->win = NULL;
				return 0; /* no windows: the messages serve */
			}
			c->win[l] = addr;
			half = RW_MIN(half, bytes / 2);
		}
	}
	c->win_half = half & ~(size_t)63;
	return 0;
}

void rw_coll_win_drop(struct rw_coll_comm *c)
{
	free(c->win);
	c->win = NULL;
	c->win_half = 0;
}

static struct win_msg *win_at(const struct rw_coll_comm *c, int link, uint64_t w)
{
	return (struct win_msg *)(c->win[link] + (w & 1) * c->win_half);
}

bool rw_coll_win_used(const struct rw_coll_req *r)
{
	const struct rw_coll_small *s = r->comm->small;
	const struct rw_small_state *st = s ? s->state : NULL;

	return st && st->owner == r && st->win;
}

/* The peer of r's first send not taken yet, or this rank when none: the
 * latency algorithms' sends the peer answered "not now" to count, which
 * their waiting() leaves to the receives (what the timeout names). */
static int unsent_to(const struct rw_coll_req *r)
{
	const struct rw_coll_comm *c = r->comm;
	const struct rw_coll_small *s = c->small;
	const struct rw_small_state *st = s ? s->state : NULL;
	const char *what = NULL;
	size_t chunk = 0;
	int peer = c->rank, step = -1;

	if (r->ops == &rw_coll_rd_ops || r->ops == &rw_coll_direct_ops) {
		for (int i = 0; st && st->owner == r && i < st->nsend; i++)
			if (!st->send[i].done)
				return st->send[i].peer;
		return c->rank;
	}
	r->ops->waiting(r, &peer, &step, &chunk, &what);
	return what && strcmp(what, RW_COLL_WAIT_SEND) == 0 ? peer : c->rank;
}

int rw_coll_win_stray(struct rw_coll_req *r)
{
	struct rw_coll_comm *c = r->comm;
	uint64_t next = c->win_seq + 1;
	struct rw_coll_sig theirs;
	const struct win_msg *m;
	int peer = c->rank, l;

	if (!c->win_half || r->mem != RW_COLL_MEM_HOST || rw_coll_win_used(r))
		return 0;
	if (c->nranks == 2) {
		peer = 1 - c->rank;
	} else {
		/* 3+ ranks: only a peer that has not taken our send (one it
		 * needs to finish this collective) yet wrote its next window
		 * collective; a stall on another rank proves nothing */
		peer = unsent_to(r);
		if (peer == c->rank) {
			r->win_suspect = false;
			return 0;
		}
	}
	l = rw_coll_p2p_recv_link(c, peer);
	if (l < 0 || !c->win[l])
		return 0;
	m = win_at(c, l, next);
	if (__atomic_load_n(&m->stamp, __ATOMIC_ACQUIRE) != next)
		return 0;
	/* the progress before this read may have missed what the peer sent
	 * last: only a second sighting, with a round of idle polls after the
	 * first and no progress (which clears it), is a mismatch */
	if (!r->win_suspect) {
		r->win_suspect = true;
		return 0;
	}
	memcpy(&theirs, m->payload, RW_SMALL_SIG_BYTES);
	return rw_coll_fail_mismatch(r, peer, &theirs);
}

/* Does r go through the windows? */
bool rw_small_win_fits(const struct rw_coll_req *r)
{
	const struct rw_coll_comm *c = r->comm;

	return r->ops == &rw_coll_direct_ops && c->win_half && r->mem == RW_COLL_MEM_HOST &&
	       sizeof(struct win_msg) + rw_small_msg_bytes(r) <= c->win_half;
}

/* Our message into half seq % 2 of every send link's window, stamp last. */
void rw_small_win_write(struct rw_coll_req *r, struct rw_small_state *st)
{
	struct rw_coll_comm *c = r->comm;
	size_t n = r->a.count * r->esize;

	st->seq = ++c->win_seq;
	for (int i = 0; i < st->nsend; i++) {
		struct win_msg *m = win_at(c, st->send[i].link, st->seq);

		memcpy(m->payload, &r->sig, RW_SMALL_SIG_BYTES);
		if (n)
			memcpy(m->payload + RW_SMALL_SIG_BYTES, r->a.sendbuf, n);
		m->bytes = rw_small_msg_bytes(r);
		__atomic_store_n(&m->stamp, st->seq, __ATOMIC_RELEASE);
		st->send[i].posted = st->send[i].done = true;
		c->stats.chunks_sent++;
	}
}

/* A receive's message, once its stamp is there: checked, then done. */
static int win_take(struct rw_coll_req *r, struct rw_small_state *st, struct rw_small_msg *m,
		    bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	const struct win_msg *w = win_at(c, m->link, st->seq);
	uint64_t stamp = __atomic_load_n(&w->stamp, __ATOMIC_ACQUIRE);
	struct rw_coll_sig theirs;

	if (stamp + 2 == st->seq || stamp == 0)
		return 0;	/* not yet: the half still holds the collective before */
	if (stamp != st->seq) { /* a peer ran more window collectives than we did */
		memcpy(&theirs, w->payload, RW_SMALL_SIG_BYTES);
		return rw_coll_fail_mismatch(r, m->peer, &theirs);
	}
	m->posted = true;
	return rw_small_msg_in(r, m, w->payload,
			       (size_t)RW_MIN(w->bytes, (uint64_t)c->win_half - sizeof(*w)),
			       progressed);
}

int rw_small_win_step(struct rw_coll_req *r, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_small_state *st = rw_small_state_of(r);
	const void *in[RW_COLL_DIRECT_MAX];
	bool missing = false;
	int rc;

	for (int i = 0; i < st->nrecv; i++) {
		struct rw_small_msg *m = &st->recv[i];

		if (m->done)
			continue;
		rc = win_take(r, st, m, progressed);
		if (rc)
			return rc;
		missing |= !m->done;
	}
	if (missing) {
		if (++st->polls % WIN_CHECK_POLLS)
			return 0;
		for (int i = 0; i < st->nrecv; i++) {
			struct rw_small_msg *m = &st->recv[i];

			rc = m->done ? 0 : rw_net_check(c->links[m->link].comm);
			if (!rc)
				continue;
			/* a peer that finished may close at once: its message
			 * may have come since the stamp was read */
			rc = win_take(r, st, m, progressed);
			if (rc || m->done)
				return rc;
			return rw_small_link_failed(r, rw_net_check(c->links[m->link].comm),
						    m->peer, "receiving from", m->round);
		}
		return 0;
	}
	/* straight from the windows, ours from sendbuf (one group of at
	 * most RW_COLL_DIRECT_MAX sources: recvbuf may be sendbuf) */
	for (int i = 0; i < st->nrecv; i++)
		in[i] = win_at(c, st->recv[i].link, st->seq)->payload + RW_SMALL_SIG_BYTES;
	return rw_small_fold_all(r, st, r->a.sendbuf, in, progressed);
}
