/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring schedule: which bytes a rank sends and receives, message by
 * message, for one collective on one channel.  Pure arithmetic: no memory
 * other than the plan's own tables, no I/O, so every case (count 0, counts
 * smaller than the number of ranks, odd sizes, many channels) is checked by
 * tests/coll/test_ring_plan.c without a network.
 *
 * Element space.  A collective works on `nseg` segments of one element space
 * (offsets and counts in elements): the buffer for allreduce and broadcast,
 * the reduce-scatter input / allgather output for those two.  Segment s
 * belongs to rank s.  Channel c takes the c-th of nchannels near-equal
 * pieces of every segment; each piece is cut into chunks of chunk_elems
 * (the last one shorter).  Empty pieces have no chunks, so no empty message
 * is ever sent.
 *
 * Steps.  With P ranks, at step s rank r sends segment (r - s + rot) mod P
 * to rank r+1 and receives segment (r - s - 1 + rot) mod P from rank r-1:
 *   allreduce       2(P-1) steps, rot 0: P-1 scatter-reduce steps, after
 *                   which rank r holds the reduced segment r+1, then P-1
 *                   allgather steps;
 *   reduce-scatter  P-1 steps, rot -1, so rank r ends with segment r;
 *   allgather       P-1 steps, rot 0: rank r starts with segment r;
 *   broadcast       one step over one segment, along the chain
 *                   root -> root+1 -> ... -> root-1 (pipelined by chunk).
 *
 * Order.  A channel's messages go round by round: round k is chunk k of
 * every step (steps whose piece has no chunk k are skipped), as NCCL's ring
 * loop does.  Both neighbours walk the same order, so the receiver posts
 * exactly what the sender sends.  Round-major order is what keeps a bounded
 * pipeline deadlock-free: a rank holds a staging slot only for a chunk it
 * forwards within the same round, and a rank never injects round k+1 before
 * it has forwarded round k, so the waits around the ring cannot close a
 * cycle with two or more slots per channel (step-major order, all of step 0
 * first, deadlocks as soon as a segment has more chunks than slots).
 *
 * Forwarding.  The segment sent at step s+1 is the one received at step s,
 * with the same chunks: a send is either local data (step 0; every send of
 * the broadcast root) or the forward of one receive of the same round.
 *
 * Ownership: rw_ring_plan_init() allocates the plan's tables, freed by
 * rw_ring_plan_fini().  Nothing blocks.
 */
#ifndef RW_RING_PLAN_H
#define RW_RING_PLAN_H

#include <stdbool.h>
#include <stddef.h>

enum rw_ring_kind {
	RW_RING_ALLREDUCE,
	RW_RING_REDUCE_SCATTER,
	RW_RING_ALLGATHER,
	RW_RING_BROADCAST,
	RW_RING_KIND_COUNT
};

/** What the receiver does with a received chunk. */
enum rw_ring_action {
	/** reduce with the local contribution; the result is forwarded */
	RW_RING_REDUCE_FWD,
	/** reduce with the local contribution into the output: final value */
	RW_RING_REDUCE_FINAL,
	/** the chunk is final data for the output (allgather, broadcast) */
	RW_RING_COPY,
};

/** A place in a channel's message order: chunk (round) and step. */
struct rw_ring_pos {
	size_t round;
	int step;
};

/** One message, in the element space. */
struct rw_ring_msg {
	int step;
	int seg;		    /**< segment (rank) the data belongs to */
	size_t chunk;		    /**< chunk index within the channel's piece (round) */
	size_t off;		    /**< first element, in the element space */
	size_t count;		    /**< elements, > 0 */
	enum rw_ring_action action; /**< receives only */
	bool forwarded;		    /**< receives: a send of this round forwards it */
	bool local;		    /**< sends: local data, else the forward of `from` */
	struct rw_ring_pos from;    /**< sends: the receive forwarded */
};

/** Arguments of rw_ring_plan_init(). */
struct rw_ring_plan_args {
	enum rw_ring_kind kind;
	int nranks;
	int rank;
	int root;	    /**< broadcast only */
	int nchannels;	    /**< >= 1 */
	size_t chunk_elems; /**< >= 1 */
	/** nranks segments (1 for broadcast); copied by init. */
	const size_t *seg_off;
	const size_t *seg_count;
};

struct rw_ring_plan {
	enum rw_ring_kind kind;
	int nranks, rank, root, nchannels;
	int nsteps; /**< steps in which this rank takes part */
	int rot;
	int nseg;
	bool sends, receives; /**< broadcast: this rank's part in the chain */
	size_t chunk_elems;
	size_t *seg_off;   /**< nseg */
	size_t *seg_count; /**< nseg */
	size_t *nck;	   /**< chunks of segment s on channel c: [c * nseg + s] */
	size_t *rounds;	   /**< nchannels: most chunks of any segment */
	size_t *nsend;	   /**< nchannels */
	size_t *nrecv;	   /**< nchannels */
};

/**
 * Split count elements into n near-equal segments (the first count % n get
 * one more), writing n offsets and counts.  Counts smaller than n leave the
 * last segments empty.
 */
void rw_ring_split(size_t count, int n, size_t *off, size_t *cnt);

/**
 * Build the plan.  \param[out] plan filled only on success.
 * \return 0, -EINVAL (rank/root out of range, nchannels or chunk_elems 0,
 * NULL segments), -ENOMEM.
 */
int rw_ring_plan_init(struct rw_ring_plan *plan, const struct rw_ring_plan_args *args);

/** Free the tables; plan may be zeroed or initialized. */
void rw_ring_plan_fini(struct rw_ring_plan *plan);

/** Messages channel ch sends / receives in all. */
static inline size_t rw_ring_plan_nsend(const struct rw_ring_plan *p, int ch)
{
	return p->nsend[ch];
}

static inline size_t rw_ring_plan_nrecv(const struct rw_ring_plan *p, int ch)
{
	return p->nrecv[ch];
}

/**
 * Walk a channel's sends / receives in order: first() sets pos to the
 * first message, next() moves it to the following one.  Both return false
 * (pos then undefined) when there is none.
 */
bool rw_ring_plan_send_first(const struct rw_ring_plan *p, int ch, struct rw_ring_pos *pos);
bool rw_ring_plan_send_next(const struct rw_ring_plan *p, int ch, struct rw_ring_pos *pos);
bool rw_ring_plan_recv_first(const struct rw_ring_plan *p, int ch, struct rw_ring_pos *pos);
bool rw_ring_plan_recv_next(const struct rw_ring_plan *p, int ch, struct rw_ring_pos *pos);

/** The send / receive at pos (which must be one). */
void rw_ring_plan_send(const struct rw_ring_plan *p, int ch, struct rw_ring_pos pos,
		       struct rw_ring_msg *msg);
void rw_ring_plan_recv(const struct rw_ring_plan *p, int ch, struct rw_ring_pos pos,
		       struct rw_ring_msg *msg);

/** <0, 0, >0 as a comes before, is, or comes after b in the order. */
static inline int rw_ring_pos_cmp(struct rw_ring_pos a, struct rw_ring_pos b)
{
	if (a.round != b.round)
		return a.round < b.round ? -1 : 1;
	return (a.step > b.step) - (a.step < b.step);
}

/** The segment this rank holds the final value of after the reduction
 *  steps (allreduce: rank+1; reduce-scatter: rank), or -1. */
int rw_ring_plan_owned_seg(const struct rw_ring_plan *p);

/** Elements of channel ch's piece of segment seg, and its first element. */
void rw_ring_plan_piece(const struct rw_ring_plan *p, int seg, int ch, size_t *off, size_t *count);

/** Name of a kind ("allreduce"), for messages. */
const char *rw_ring_kind_name(enum rw_ring_kind kind);

#endif /* RW_RING_PLAN_H */
