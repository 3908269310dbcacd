/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the latency algorithms of allreduce (small_op.c: rd and direct by
 * messages; small_win.c: direct through the windows): the schedule the
 * comm's staging keeps for the running collective, and what the two files
 * share.  Only they include it.  Nothing here blocks.
 */
#ifndef RW_COLL_SMALL_INTERNAL_H
#define RW_COLL_SMALL_INTERNAL_H

#include "coll/coll_internal.h"

#define RW_SMALL_SIG_BYTES sizeof(struct rw_coll_sig)
#define RW_SMALL_MAX_MSGS  64 /* sends or receives of one rank: direct P-1, rd log2(P)+1 */

/* One message of this rank's schedule. */
struct rw_small_msg {
	int peer, link, slot;
	int round; /* for messages: rd's round (-1 the fold, L the result) */
	struct rw_net_req *req;
	bool posted, done;
};

struct rw_small_state {
	const struct rw_coll_req *owner; /* the collective it is for, or NULL */
	bool rd;
	int nsend, nrecv;
	struct rw_small_msg send[RW_SMALL_MAX_MSGS], recv[RW_SMALL_MAX_MSGS];
	/* rd: where this rank is */
	int p2, extra, rounds;
	int stage;	 /* rd: the next receive to fold (index into recv) */
	int next_out;	 /* rd: the next free out slot */
	const char *cur; /* rd: this rank's partial (sendbuf's copy or an out slot) */
	bool folded;	 /* everything reduced into recvbuf */
	bool win;	 /* direct through the windows: window collective seq */
	uint64_t seq;
	unsigned polls; /* window: polls that found a message missing */
};

static inline struct rw_small_state *rw_small_state_of(const struct rw_coll_req *r)
{
	return r->comm->small->state;
}

/** Bytes of r's message: the signature, then the buffer. */
size_t rw_small_msg_bytes(const struct rw_coll_req *r);
/** The link to peer failed with err while r was `what` it: fail r, naming
 *  the rank that really failed when a notice says so (bounded wait). */
int rw_small_link_failed(struct rw_coll_req *r, int err, int peer, const char *what, int round);
/** Message m of r arrived (msg, got bytes): its signature and size are
 *  checked (a mismatch fails every rank naming both collectives), then m
 *  is done.  0 or -errno. */
int rw_small_msg_in(struct rw_coll_req *r, struct rw_small_msg *m, const void *msg, size_t got,
		    bool *progressed);
/** Direct's end, once every peer's buffer is in (in[i]: the i-th receive's
 *  data): all of them and ours folded in rank order into recvbuf, once. */
int rw_small_fold_all(struct rw_coll_req *r, struct rw_small_state *st, const void *ours,
		      const void *const *in, bool *progressed);

/** small_win.c: does r go through the windows? */
bool rw_small_win_fits(const struct rw_coll_req *r);
/** Our message into every send link's window (r starts). */
void rw_small_win_write(struct rw_coll_req *r, struct rw_small_state *st);
/** Take what came through the windows; fold once all came.  0 or -errno. */
int rw_small_win_step(struct rw_coll_req *r, bool *progressed);

#endif
