/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control links of a comm (see coll_comm.c for the links themselves):
 * a token per collective each way, failure and timeout notices, and the
 * one warning a rank logs when a collective fails.
 *
 * Each rank has a control link to and from both ring neighbours.  The
 * incoming ones are patient (rw_net_patient: a receive waits for its
 * message without RINGWAY_TIMEOUT_MS) and always have RW_COLL_CTL_RECVS
 * receives posted (room for a token, a notice and a mismatch notice), so a
 * failure notice reaches a rank whatever it is doing, idle included.
 *
 * Tokens.  A collective whose data path proves on every rank alike that
 * every rank ran it (r->no_tokens: the latency algorithms, whose every
 * message carries the signature and whose every rank needs every rank's
 * contribution) sends none: a token costs a send and a receive each way,
 * which on an oversubscribed host is most of a small collective.  The
 * others end with a token on both outgoing links, carrying the token's
 * number on the link, the collective's number on the comm and its
 * signature.  A token for the running collective is compared with it (a
 * token where this rank runs a collective without tokens is a mismatch
 * too); one for a collective not yet started here is kept and compared
 * when it starts; one for a collective that finished here is taken.
 *
 * Waiting for the neighbours' tokens costs a round trip at the end of every
 * collective (next must receive our last chunk, finish, and send its token
 * back), so a collective whose data path already proved that every rank ran
 * it (r->proven: a chunk it received went all round the ring, each rank
 * checking its predecessor's signature before using its data) waits only
 * for the tokens of the collective with tokens before it, which left before
 * the neighbours sent this one's data; its own are taken, unchecked, while a
 * later collective runs or at quiesce.  The others (count 0, counts
 * smaller than the ranks, broadcast, ps) wait for their own tokens, so
 * mismatched calls fail everywhere.
 *
 * Neighbours that finish at different times.  A neighbour that finished
 * its last collective may close the comm while this rank still completes
 * it: a control link that fails does not fail the collective that saw it
 * (which then finishes, or fails on its own links or timeout), but the
 * next one.  A notice from a later collective than the running one (a
 * neighbour that finished it failed in the next) is held until that one
 * starts.
 *
 * Failures.  The first rank to see a failure sends a notice (which rank
 * failed, who saw it, in which collective) to both neighbours, each of
 * which forwards it once in the same way, so every rank learns which rank
 * failed instead of only that its neighbour went quiet.  After a failure
 * the data links are closed at once, which cancels every transfer into or
 * out of the user's buffers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll_internal.h"
#include "common/rw_log.h"
#include "common/rw_nvtx.h"

#define NOTICE_MAGIC	0x42415752u /* "RWAB" */
#define TOKEN_MAGIC	0x4b4f5752u /* "RWOK" */
#define NOTICE_GRACE_MS 1000	    /* how long a link error waits for a notice */
#define SIZE_GRACE_MS	1000	    /* how long a wrong size waits for a signature */
#define NOTICE_OFF	32	    /* a notice in the ctl buffer; a mismatch notice at 96 */
#define MISMATCH_OFF	96
#define TOKEN_OFF	160 /* then one token per send in flight */

/* The token carries the collective's number and signature: a neighbour
 * that called another collective is caught when its token arrives, before
 * this rank reports success, at the cost of 32 bytes instead of 8 in a
 * message that flows anyway. */
struct token {
	uint32_t magic;
	uint32_t seq;  /* the token's number on this link (low bits) */
	uint64_t coll; /* the collective's number on the comm (rw_coll_req.coll_no) */
	struct rw_coll_sig sig;
};
static_assert(sizeof(struct token) <= RW_COLL_CTL_MSG, "a received token fits its receive");
static_assert(TOKEN_OFF + RW_COLL_CTL_SENDS * sizeof(struct token) <= RW_COLL_CTL_BYTES,
	      "a token per send in flight");

#define NOTICE_MISMATCH 1u /* failed called another collective than reporter */
#define NOTICE_ALIVE	2u /* failed is alive: tell it too */
#define NOTICE_NUMBERED 4u /* coll is the reporter's collective */

struct notice {
	uint32_t magic;
	int32_t failed;	  /* the rank that failed */
	int32_t reporter; /* the rank that saw it */
	int32_t err;	  /* -errno the reporter saw */
	uint32_t flags;	  /* NOTICE_* */
	uint32_t coll;	  /* with NOTICE_NUMBERED: the reporter's collective (low bits) */
	struct rw_coll_sig sig_failed;	 /* with NOTICE_MISMATCH */
	struct rw_coll_sig sig_reporter; /* what the reporter was running */
};
static_assert(sizeof(struct notice) <= sizeof(((struct rw_coll_comm *)0)->held_notice) &&
		      sizeof(struct notice) <= RW_COLL_CTL_MSG,
	      "a notice can be held, and fits a posted receive");
static_assert(NOTICE_OFF + sizeof(struct notice) <= MISMATCH_OFF &&
		      MISMATCH_OFF + sizeof(struct notice) <= RW_COLL_CTL_BYTES,
	      "notices fit the ctl buffer");

/* --- control links: tokens and failure notices --------------------------------- */

/* Outgoing control links are rw_link_ctrl(c, 0) (next) and (c, 2) (prev);
 * incoming ones (c, 1) (prev) and (c, 3) (next). */

static void ctl_sends_reap(struct rw_coll_link *l)
{
	while (l->sq_n) {
		int done = 0, rc = rw_net_test(l->sq[l->sq_head], &done, NULL);

		if (!rc && !done)
			return;
		/* an error freed the request: the neighbour is gone, which the
		 * data links report */
		l->sq_head = (l->sq_head + 1) % RW_COLL_CTL_SENDS;
		l->sq_n--;
	}
}

/* Send len bytes at off of l's ctl buffer.  -EAGAIN: no room now. */
static int ctl_send(struct rw_coll_link *l, size_t off, size_t len)
{
	struct rw_net_req *req = NULL;
	int rc;

	if (!l->comm)
		return -ENOTCONN;
	ctl_sends_reap(l);
	if (l->sq_n == RW_COLL_CTL_SENDS)
		return -EAGAIN;
	rc = rw_net_isend(l->comm, l->ctl->buf + off, len, RW_COLL_TAG, l->ctl->mr, &req);
	if (rc)
		return rc;
	if (!req)
		return -EAGAIN;
	l->sq[(l->sq_head + l->sq_n++) % RW_COLL_CTL_SENDS] = req;
	return 0;
}

/* Send token t from a place of its own in l's ctl buffer: tokens differ
 * (number, signature), and an earlier one may still be in flight. */
static int ctl_send_token(struct rw_coll_link *l, const struct token *t)
{
	size_t off;

	if (!l->comm)
		return -ENOTCONN;
	ctl_sends_reap(l);
	if (l->sq_n == RW_COLL_CTL_SENDS)
		return -EAGAIN;
	/* the request index ctl_send() takes (reaping keeps head + n) */
	off = TOKEN_OFF + (l->sq_head + l->sq_n) % RW_COLL_CTL_SENDS * sizeof(*t);
	memcpy(l->ctl->buf + off, t, sizeof(*t));
	return ctl_send(l, off, sizeof(*t));
}

/* Keep RW_COLL_CTL_RECVS receives posted on incoming control link l (the
 * link is patient: they may wait across idle time).  They complete in
 * posting order, the k-th posted into its own RW_COLL_CTL_MSG bytes. */
static int post_ctl_recvs(struct rw_coll_link *l)
{
	while (l->rq_n < RW_COLL_CTL_RECVS) {
		unsigned k = (l->rq_head + l->rq_n) % RW_COLL_CTL_RECVS;
		size_t size = RW_COLL_CTL_MSG;
		int tag = RW_COLL_TAG;
		void *data = l->ctl->buf + k * RW_COLL_CTL_MSG;
		struct rw_net_req *req = NULL;
		int rc = rw_net_irecv(l->comm, 1, &data, &size, &tag, &l->ctl->mr, &req);

		if (rc || !req)
			return rc;
		l->rq[k] = req;
		l->rq_n++;
	}
	return 0;
}

static void ctl_link_lost(struct rw_coll_link *l)
{
	l->ctl_req = NULL;
	l->rq_n = 0; /* the close cancels them */
	if (l->is_send)
		rw_net_close_send(l->comm);
	else
		rw_net_close_recv(l->comm); /* takes the ctl registration */
	l->comm = NULL;
	free(l->ctl);
	l->ctl = NULL;
}

/* A token from l's peer (theirs: its collective's signature) for r: a
 * mismatch notice when r differs, or sends no token (the same signature
 * with another algorithm: the ranks chose differently). */
static bool token_differs(const struct rw_coll_comm *c, const struct rw_coll_link *l,
			  const struct rw_coll_sig *theirs, const struct rw_coll_req *r,
			  struct notice *n)
{
	if (rw_coll_sig_same(theirs, &r->sig) && !r->no_tokens)
		return false;
	*n = (struct notice){.magic = NOTICE_MAGIC,
			     .failed = l->peer,
			     .reporter = c->rank,
			     .err = -EINVAL,
			     .flags = NOTICE_MISMATCH | NOTICE_ALIVE | NOTICE_NUMBERED,
			     .coll = (uint32_t)r->coll_no,
			     .sig_failed = *theirs,
			     .sig_reporter = r->sig};
	return true;
}

/* A token arrived on l (its number checked): compare it with the running
 * collective r when it is r's (a collective without tokens here that is a
 * token collective on the neighbour differs too), take it unchecked when
 * it is for a collective that finished here (a proven one: every rank ran
 * it), keep it when its collective has not started here and compare it
 * then.  That happens: a ring collective of nothing (count 0) ends on the
 * tokens alone, so a neighbour that had ours runs the next one and sends
 * its token while this rank still waits for its other neighbour's
 * (test_coll_ring's count-0 cases).  One at most: finishing that next one
 * takes this rank's token for it.  1: they differ (*n says so). */
static int token_in(struct rw_coll_comm *c, const struct rw_coll_req *r, struct rw_coll_link *l,
		    const struct token *t, struct notice *n)
{
	l->tokens++;
	if (r && t->coll == r->coll_no)
		return token_differs(c, l, &t->sig, r, n);
	if (!r || t->coll > r->coll_no) {
		l->early = true;
		l->early_coll = t->coll;
		l->early_sig = t->sig;
	}
	return 0;
}

/*
 * Take what arrived on the incoming control links and keep their receives
 * posted: tokens are counted (and compared with r, token_in()); with no r
 * (quiesce) the links are looked at only while a token is due.  1: a
 * notice arrived (in *n; a token of another collective arrives as a
 * mismatch notice); 2: a link failed (*dead = its peer, *err = the
 * error); 0: nothing new.
 */
static int ctl_poll(struct rw_coll_comm *c, const struct rw_coll_req *r, struct notice *n,
		    int *dead, int *err)
{
	for (int i = 0; i < 4; i += 2)
		if (c->links[rw_link_ctrl(c, i)].comm)
			ctl_sends_reap(&c->links[rw_link_ctrl(c, i)]);
	for (int i = 1; i < 4; i += 2) {
		struct rw_coll_link *l = &c->links[rw_link_ctrl(c, i)];

		if (r && l->early && l->early_coll <= r->coll_no) {
			/* a token that came before its collective started */
			l->early = false;
			if (l->early_coll == r->coll_no && token_differs(c, l, &l->early_sig, r, n))
				return 1;
		}
		/* in quiesce (no r), only while a token is due: a neighbour
		 * that closed after its last token fails the receive */
		while (l->comm && (r || l->tokens < c->tokens_due)) {
			unsigned k = l->rq_head;
			const uint8_t *msg = l->ctl->buf + k * RW_COLL_CTL_MSG;
			const struct token *t = (const void *)msg;
			size_t got = 0;
			int done = 0, rc = post_ctl_recvs(l);

			if (!rc && l->rq_n)
				rc = rw_net_test(l->rq[k], &done, &got);
			if (rc) {
				*dead = l->peer;
				*err = rc;
				ctl_link_lost(l);
				return 2;
			}
			if (!done)
				break;
			/* its buffer is read before a receive is posted into it again */
			l->rq_head = (k + 1) % RW_COLL_CTL_RECVS;
			l->rq_n--;
			if (got == sizeof(*t) && t->magic == TOKEN_MAGIC &&
			    t->seq == (uint32_t)(l->tokens + 1)) {
				if (token_in(c, r, l, t, n))
					return 1;
				continue;
			}
			memcpy(n, msg, sizeof(*n));
			if (got == sizeof(*n) && n->magic == NOTICE_MAGIC && n->failed >= 0 &&
			    n->failed < c->nranks)
				return 1;
			RW_WARN(RW_LOG_COLL,
				"coll: rank %d: garbled control message (%zu bytes) from rank %d",
				c->rank, got, l->peer);
			*n = (struct notice){.magic = NOTICE_MAGIC,
					     .failed = l->peer,
					     .reporter = c->rank,
					     .err = -EPROTO,
					     .flags = r ? NOTICE_NUMBERED : 0,
					     .coll = r ? (uint32_t)r->coll_no : 0};
			return 1;
		}
	}
	return 0;
}

/* A collective finished here: one token to each neighbour.  -EAGAIN: try
 * again (the collective is not reported done before its tokens left). */
int rw_coll_tokens_send(struct rw_coll_req *r)
{
	struct rw_coll_comm *c = r->comm;
	const struct token t = {.magic = TOKEN_MAGIC,
				.seq = (uint32_t)r->token_no,
				.coll = r->coll_no,
				.sig = r->sig};

	for (int i = 0; i < 2; i++) {
		struct rw_coll_link *l = &c->links[rw_link_ctrl(c, 2 * i)];
		int rc;

		if (r->tokens_sent & (1u << i))
			continue;
		if (l->comm) {
			rc = ctl_send_token(l, &t);
			if (rc == -EAGAIN)
				return rc;
			/* other errors: the neighbour is gone; its link says so */
		}
		r->tokens_sent |= 1u << i;
	}
	return 0;
}

bool rw_coll_tokens_in(const struct rw_coll_req *r)
{
	const struct rw_coll_comm *c = r->comm;
	/* proven: the previous collective's token is enough (see the top) */
	uint64_t need = r->token_no - (r->proven ? 1 : 0);

	for (int i = 1; i < 4; i += 2) {
		const struct rw_coll_link *l = &c->links[rw_link_ctrl(c, i)];

		if (l->comm && l->tokens < need)
			return false;
	}
	return true;
}

/*
 * Send a notice and see it leave, bounded by NOTICE_GRACE_MS: a transport
 * takes a send only into a receive the neighbour posted (-EAGAIN until its
 * credit arrives), and a rank that failed may not call in again to push it,
 * so "best effort" alone lost notices under load (the neighbour then named
 * this rank instead of the one that failed).  A neighbour that is gone or
 * never posts costs at most the grace; its link says what happened.
 */
static void notice_push(struct rw_coll_link *l, size_t off, size_t len)
{
	uint64_t until = rw_now_ms() + NOTICE_GRACE_MS;
	int rc;

	while ((rc = ctl_send(l, off, len)) == -EAGAIN && rw_now_ms() < until)
		usleep(200);
	if (rc)
		return;
	while (l->comm && l->sq_n && rw_now_ms() < until) {
		ctl_sends_reap(l);
		if (l->sq_n)
			usleep(200);
	}
}

/* Tell both neighbours (but not the failed rank, unless it is alive) once;
 * a mismatch notice may follow a plain one (a wrong size was seen first). */
static void notices_send(struct rw_coll_comm *c, const struct notice *n)
{
	uint8_t bit = n->flags & NOTICE_MISMATCH ? 2 : 1;

	for (int i = 0; i < 4; i += 2) {
		struct rw_coll_link *l = &c->links[rw_link_ctrl(c, i)];

		if (!l->comm || (l->notice_sent & bit) ||
		    (l->peer == n->failed && !(n->flags & NOTICE_ALIVE)))
			continue;
		size_t off = bit == 2 ? MISMATCH_OFF : NOTICE_OFF;

		memcpy(l->ctl->buf + off, n, sizeof(*n));
		l->notice_sent |= bit;
		notice_push(l, off, sizeof(*n));
	}
}

/* Close the channel and ps links: cancels every transfer of user data. */
static void close_data_links(struct rw_coll_comm *c)
{
	rw_coll_win_drop(c); /* the windows go with their links */
	for (int i = 0; i < c->nlinks; i++) {
		struct rw_coll_link *l = &c->links[i];

		if (!l->comm || rw_link_is_ctrl(l))
			continue;
		/* staging registrations go with the comm */
		if (l->is_send)
			rw_net_close_send(l->comm);
		else
			rw_net_close_recv(l->comm);
		l->comm = NULL;
		free(l->ctl); /* the close took its registration */
		l->ctl = NULL;
		l->ctl_req = NULL;
	}
}

static const char *kind_of(const struct rw_coll_req *r)
{
	return r ? rw_coll_kind_name(r->a.kind) : "collective";
}

/* A notice arrived: fail the comm, say which rank failed, pass it on. */
/* Where r stands, for messages: what it waits on. */
struct where {
	int peer, step;
	size_t chunk;
	const char *what;
};

static struct where where_of(const struct rw_coll_req *r)
{
	struct where w = {.peer = r ? r->comm->rank : 0, .step = -1, .what = "waiting on"};

	if (r && r->algo)
		r->ops->waiting(r, &w.peer, &w.step, &w.chunk, &w.what);
	return w;
}

/* Two ranks called different collectives (n has NOTICE_MISMATCH): fail
 * with both signatures, pass it on. */
static void fail_mismatch(struct rw_coll_comm *c, const struct notice *n)
{
	char a[RW_COLL_SIG_STR], b[RW_COLL_SIG_STR];

	c->error = -EINVAL;
	c->failed_rank = n->failed;
	if (rw_coll_sig_same(&n->sig_failed, &n->sig_reporter))
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: ranks %d and %d ran %s with different algorithms (host "
			"memory on one, device memory on the other, or another RINGWAY_ALGO: "
			"every rank must choose alike)",
			c->rank, n->failed, n->reporter,
			rw_coll_sig_str(&n->sig_failed, a, sizeof(a)));
	else
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: the ranks called different collectives: rank %d called %s "
			"but rank %d %s (every rank must make the same calls in the same order)",
			c->rank, n->failed, rw_coll_sig_str(&n->sig_failed, a, sizeof(a)),
			n->reporter, rw_coll_sig_str(&n->sig_reporter, b, sizeof(b)));
	RW_NVTX_MARK("ringway: collectives differ");
	notices_send(c, n);
	close_data_links(c);
}

/* Does notice in say that two ranks called different collectives (or
 * come from a rank that ran another one than r)?  Then *out says so. */
static bool as_mismatch(const struct rw_coll_comm *c, const struct rw_coll_req *r,
			const struct notice *in, struct notice *out)
{
	if (in->flags & NOTICE_MISMATCH) {
		*out = *in;
		return true;
	}
	/* the reporter's signature says what it ran in its collective,
	 * which is r only if the numbers agree */
	if (!r || !(in->sig_reporter.flags & RW_COLL_SIG_VALID) || !(in->flags & NOTICE_NUMBERED) ||
	    in->coll != (uint32_t)r->coll_no || rw_coll_sig_same(&in->sig_reporter, &r->sig))
		return false;
	*out = (struct notice){.magic = NOTICE_MAGIC,
			       .failed = in->reporter,
			       .reporter = c->rank,
			       .err = -EINVAL,
			       .flags = NOTICE_MISMATCH | NOTICE_ALIVE | NOTICE_NUMBERED,
			       .sig_failed = in->sig_reporter,
			       .coll = (uint32_t)r->coll_no,
			       .sig_reporter = r->sig};
	return true;
}

/* A notice arrived: fail the comm, say which rank failed, pass it on. */
static void accept_notice(struct rw_coll_comm *c, const struct rw_coll_req *r,
			  const struct notice *n)
{
	struct where w = where_of(r);
	struct notice m;

	if (c->error)
		return;
	if (as_mismatch(c, r, n, &m)) {
		fail_mismatch(c, &m);
		return;
	}
	if (r && (n->err == -EMSGSIZE || n->err == -EPROTO)) {
		/* a wrong size: a mismatch notice may be on its way; pass
		 * this one on first, it may be what brings it */
		uint64_t until = rw_now_ms() + SIZE_GRACE_MS;
		struct notice next;
		int dead = -1, lost = 0, got;

		notices_send(c, n);

		while ((got = ctl_poll(c, r, &next, &dead, &lost)) != 2 && rw_now_ms() < until) {
			if (got == 1 && as_mismatch(c, r, &next, &m)) {
				fail_mismatch(c, &m);
				return;
			}
			usleep(1000);
		}
	}
	c->error = -ECONNABORTED;
	c->failed_rank = n->failed;
	if (n->err == -ETIMEDOUT)
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: %s aborted: rank %d gave up waiting on rank %d (%s) after "
			"RINGWAY_TIMEOUT_MS; here %s rank %d (%s) at step %d, chunk %zu",
			c->rank, kind_of(r), n->reporter, n->failed, c->names[n->failed], w.what,
			w.peer, c->names[w.peer], w.step, w.chunk);
	else
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: %s aborted at step %d, chunk %zu: rank %d (%s) failed, as "
			"rank %d reports (%s)",
			c->rank, kind_of(r), w.step, w.chunk, n->failed, c->names[n->failed],
			n->reporter, strerror(-n->err));
	RW_NVTX_MARK("ringway: peer failed");
	notices_send(c, n);
	close_data_links(c);
}

int rw_coll_fail_mismatch(struct rw_coll_req *r, int peer, const struct rw_coll_sig *theirs)
{
	struct rw_coll_comm *c = r->comm;
	const struct notice n = {.magic = NOTICE_MAGIC,
				 .failed = peer,
				 .reporter = c->rank,
				 .err = -EINVAL,
				 .flags = NOTICE_MISMATCH | NOTICE_ALIVE | NOTICE_NUMBERED,
				 .sig_failed = *theirs,
				 .coll = (uint32_t)r->coll_no,
				 .sig_reporter = r->sig};

	if (!c->error)
		fail_mismatch(c, &n);
	return c->error;
}

static bool is_connection_error(int err)
{
	switch (-err) {
	case ECONNRESET:
	case ECONNREFUSED:
	case ECONNABORTED:
	case EPIPE:
	case ENOTCONN:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return true;
	default:
		return false;
	}
}

int rw_coll_fail(struct rw_coll_req *r, int err, int peer, const char *what, int step, size_t chunk)
{
	struct rw_coll_comm *c = r->comm;
	struct notice n = {.magic = NOTICE_MAGIC,
			   .failed = peer,
			   .reporter = c->rank,
			   .err = err,
			   .flags = NOTICE_NUMBERED,
			   .coll = (uint32_t)r->coll_no,
			   .sig_reporter = r->sig};

	if (c->error)
		return c->error;
	if (peer != c->rank && (err == -EMSGSIZE || err == -EPROTO)) {
		/* A message of the wrong size: the peer may have called
		 * another collective.  Tell it (and the other neighbour) what
		 * ran here; its own notice, or its token, says what it ran. */
		uint64_t until = rw_now_ms() + SIZE_GRACE_MS;
		struct notice got_n;
		int dead = -1, lost = 0;

		n.flags |= NOTICE_ALIVE;
		notices_send(c, &n);
		while (rw_now_ms() < until) {
			int got = ctl_poll(c, r, &got_n, &dead, &lost);

			if (got == 1) {
				accept_notice(c, r, &got_n);
				break;
			}
			if (got == 2 && dead == peer)
				break;
			usleep(1000);
		}
		if (c->error)
			return c->error; /* the collectives differ, or a notice: logged */
	}
	if (peer != c->rank && is_connection_error(err) && c->held) {
		/* a rank that finished r failed in the next collective, and
		 * closed its links: its notice names the rank that failed */
		memcpy(&n, c->held_notice, sizeof(n));
		c->held = false;
		accept_notice(c, r, &n);
		return c->error;
	}
	if (peer != c->rank && is_connection_error(err)) {
		/* A neighbour that closed its links because a third rank
		 * failed has sent a notice first: give it a moment. */
		uint64_t until = rw_now_ms() + NOTICE_GRACE_MS;
		int dead = -1, lost = 0, got;

		while ((got = ctl_poll(c, r, &n, &dead, &lost)) != 1 && rw_now_ms() < until) {
			if (got == 2 && dead == peer)
				break;
			usleep(1000);
		}
		if (got == 1) {
			accept_notice(c, r, &n);
			return c->error;
		}
		n = (struct notice){.magic = NOTICE_MAGIC,
				    .failed = peer,
				    .reporter = c->rank,
				    .err = err,
				    .flags = NOTICE_NUMBERED,
				    .coll = (uint32_t)r->coll_no,
				    .sig_reporter = r->sig};
	}
	if (err == -ETIMEDOUT) {
		/* the transport's timeout or ours: name what is most stuck */
		struct where w = where_of(r);

		if (w.peer == c->rank) /* nothing of the data path is pending */
			w = (struct where){
				.peer = peer, .step = step, .chunk = chunk, .what = what};
		peer = w.peer;
		n.failed = peer;
		c->error = err;
		c->failed_rank = peer;
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: %s: nothing moved for RINGWAY_TIMEOUT_MS=%d ms %s rank %d "
			"(%s) at step %d, chunk %zu",
			c->rank, kind_of(r), c->timeout_ms, w.what, peer, c->names[peer], w.step,
			w.chunk);
		RW_NVTX_MARK("ringway: collective timed out");
		notices_send(c, &n);
		close_data_links(c);
		return err;
	}
	struct where w = where_of(r);

	if (step < 0) { /* not from the data path: say where the collective is */
		step = w.step;
		chunk = w.chunk;
	}
	c->error = err;
	c->failed_rank = peer;
	if (peer == c->rank)
		RW_WARN(RW_LOG_COLL, "coll: rank %d: %s failed here (%s) at step %d, chunk %zu: %s",
			c->rank, kind_of(r), what, step, chunk, strerror(-err));
	else if (w.peer != c->rank && w.peer != peer)
		/* the failed link is not what the collective waits on: say both */
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: %s: %s rank %d (%s) failed at step %d, chunk %zu: %s; "
			"here %s rank %d (%s)",
			c->rank, kind_of(r), what, peer, c->names[peer], step, chunk,
			strerror(-err), w.what, w.peer, c->names[w.peer]);
	else
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: %s: %s rank %d (%s) failed at step %d, chunk %zu: %s",
			c->rank, kind_of(r), what, peer, c->names[peer], step, chunk,
			strerror(-err));
	RW_NVTX_MARK("ringway: collective failed");
	notices_send(c, &n);
	close_data_links(c);
	return err;
}

/*
 * Before closing: take the tokens the neighbours owe for the last
 * collectives and see ours (and a notice) leave, so that no transfer is
 * cut by the close.  Bounded by the timeout; a failed comm only gives its
 * sends a second.
 */
void rw_coll_quiesce(struct rw_coll_comm *c)
{
	uint64_t until = rw_now_ms() + (c->error ? 1000 : (uint64_t)c->timeout_ms);

	if (c->nranks == 1 || !c->links)
		return;
	for (;;) {
		bool pending = false;
		struct notice n;
		int dead, lost;

		if (!c->error) {
			ctl_poll(c, NULL, &n, &dead, &lost); /* a late notice changes nothing now */
		} else {
			for (int i = 0; i < 4; i += 2)
				if (c->links[rw_link_ctrl(c, i)].comm)
					ctl_sends_reap(&c->links[rw_link_ctrl(c, i)]);
		}
		for (int i = 0; i < 4; i++) {
			const struct rw_coll_link *l = &c->links[rw_link_ctrl(c, i)];

			if (!l->comm)
				continue;
			if (l->is_send ? l->sq_n > 0 : !c->error && l->tokens < c->tokens_due)
				pending = true;
		}
		if (!pending || rw_now_ms() > until)
			return;
		usleep(200);
	}
}

/* Did n's reporter fail in a collective after r? */
static bool notice_is_later(const struct notice *n, const struct rw_coll_req *r)
{
	return (n->flags & NOTICE_NUMBERED) && (int32_t)(n->coll - (uint32_t)r->coll_no) > 0;
}

/* Is a token due on an incoming control link? */
static bool token_due(const struct rw_coll_comm *c)
{
	for (int i = 1; i < 4; i += 2) {
		const struct rw_coll_link *l = &c->links[rw_link_ctrl(c, i)];

		if (l->comm && l->tokens < c->tokens_due)
			return true;
	}
	return false;
}

int rw_coll_ctl_progress(struct rw_coll_req *r)
{
	struct rw_coll_comm *c = r->comm;
	struct notice n;
	int dead = -1, lost = 0, got;

	if (c->ctl_lost.peer >= 0 && r->coll_no > c->ctl_lost.coll)
		return rw_coll_fail(r, c->ctl_lost.err, c->ctl_lost.peer, "the control link from",
				    -1, 0);
	if (c->held) {
		memcpy(&n, c->held_notice, sizeof(n));
		if (!notice_is_later(&n, r)) {
			c->held = false;
			accept_notice(c, r, &n);
			return c->error;
		}
	}
	/* With no token due only a notice can come, and a notice may wait a
	 * few polls: look every RW_COLL_CLOCK_POLLS calls then. */
	if (!token_due(c) && c->ctl_polls++ % RW_COLL_CLOCK_POLLS)
		return c->error;
	got = ctl_poll(c, r, &n, &dead, &lost);
	if (got == 1 && notice_is_later(&n, r)) {
		/* A neighbour that finished r may fail in the next collective
		 * while this rank still completes r, which can finish: the
		 * notice is for the next one.  (If r cannot finish, its own
		 * links or its timeout say why.)  The first one held says it. */
		if (!c->held) {
			memcpy(c->held_notice, &n, sizeof(n));
			c->held = true;
		}
	} else if (got == 1) {
		accept_notice(c, r, &n);
	} else if (got == 2 && c->ctl_lost.peer < 0) {
		/* A neighbour that finished its last collective closes the
		 * comm while this rank still completes it, which can finish:
		 * what it owed r it sent before (a send completes before a
		 * close), and it owes no token (tokens come before a close,
		 * and rw_coll_tokens_in skips a lost link).  A neighbour that
		 * failed told us first (a notice comes before the close), and
		 * its data links tell the ranks that need its data.  The next
		 * collective cannot run without it. */
		c->ctl_lost = (struct rw_coll_lost){.peer = dead, .err = lost, .coll = r->coll_no};
	}
	return c->error;
}
