/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring collectives' per-channel state (ring_op.c describes the state
 * machine), shared by its three files:
 *   ring_op.c    the collective's life (init, fini), the signature swap,
 *                progress over the channels, what a stalled one waits on;
 *   ring_recv.c  receives: posted ahead, completed in order, processed
 *                (folded, copied, or handed to the device), retired;
 *   ring_send.c  sends: local data or forwards, posted in order, completed.
 * Everything here belongs to one rw_coll_req (r->algo), made by ring_init
 * and freed by ring_fini; nothing blocks.
 */
#ifndef RW_RING_CHAN_H
#define RW_RING_CHAN_H

#include <stdbool.h>
#include <stddef.h>

#include "coll/coll_internal.h"

/* A receive's life: on the wire, then (device collectives) in device work,
 * then processed: it leaves the queue, held for its forward or freed. */
enum recv_state {
	RECV_POSTED,
	RECV_DEVICE, /* its device work is enqueued; the event tells when it ran */
	RECV_DONE,   /* processed */
};

struct pend_recv {
	struct rw_net_req *req;
	struct rw_ring_pos pos;
	int slot; /* -1: straight into recvbuf */
	int rseg; /* a partial sum landing in recvbuf: its segment, else -1 */
	enum recv_state state;
	bool sunk;    /* its sink took it on arrival: nothing left to do */
	bool keep;    /* processed: hold the slot for a forward (else free it) */
	bool fwd_dev; /* the forward's copy is the device slot (else host) */
	struct rw_coll_sink sink;
};

struct held {
	struct rw_ring_pos pos;
	int slot; /* -1: a partial sum in recvbuf */
	int rseg; /* then its segment, else -1 */
	bool dev; /* send the device slot (else the host slot) */
};

struct pend_send {
	struct rw_net_req *req;
	struct rw_ring_pos pos;
	int free_slot; /* staging slot to free on completion, or -1 */
	int out_slot;  /* device sends: host copy slot, or -1 */
	int rseg;      /* the forward of a partial sum in recvbuf: its segment */
};

struct ring_chan {
	struct rw_ring_pos spos, rpos; /* next send / receive to post */
	bool smore, rmore;
	struct pend_recv pr[RW_COLL_MAX_RECVS];
	unsigned pr_head, pr_n;
	struct held held[RW_COLL_NSLOTS]; /* processed, waiting to be forwarded */
	unsigned held_head, held_n;
	unsigned rbuf_due; /* partial sums posted into recvbuf or held, not sent */
	struct pend_send ps[RW_COLL_MAX_SENDS];
	unsigned ps_head, ps_n;
	int free_slots[RW_COLL_NSLOTS], nfree;
	int free_out[RW_COLL_NSLOTS], nfree_out;
	/* device collectives: the next send's local chunk, staged in an out
	 * slot (its copy enqueued) and kept until the send is posted */
	bool staged;
	int staged_out;
	void *staged_data;
	struct rw_net_mr *staged_mr;
};

struct ring_state {
	struct rw_ring_plan plan;
	bool phase_pushed, in_allgather;
	/* the signature swap with the neighbours, first on channel 0's links */
	struct rw_net_req *sig_rreq, *sig_sreq;
	bool sig_rposted, sig_in, sig_sposted, sig_out;
	struct ring_chan ch[];
};

static inline struct ring_state *ring_state_of(const struct rw_coll_req *r)
{
	return r->algo;
}

/* Element elem of a buffer that starts at element bias (a collective's
 * sendbuf or recvbuf may hold one segment of the element space). */
static inline char *ring_at(const void *base, size_t elem, size_t bias, size_t es)
{
	return (char *)base + (elem - bias) * es;
}

/* Host slot of channel ch: a device collective's staging through host
 * memory has its own stride (rw_coll_hslot). */
static inline char *ring_slot(const struct rw_coll_req *r, int ch, int slot)
{
	const struct rw_coll_comm *c = r->comm;

	if (r->mem == RW_COLL_MEM_DEVICE)
		return rw_coll_hslot(c, ch, slot);
	return c->stage[ch].buf + (size_t)slot * c->chunk_bytes;
}

/* Where r's host slots of channel ch are registered (mr_send, mr_recv). */
static inline const struct rw_coll_stage *ring_hstage(const struct rw_coll_req *r, int ch)
{
	if (r->mem == RW_COLL_MEM_DEVICE)
		return rw_coll_hstage(r->comm, ch);
	return &r->comm->stage[ch];
}

static inline void ring_free_slot(struct ring_chan *cs, int slot)
{
	cs->free_slots[cs->nfree++] = slot;
}

/* Each does, for channel ch, as much as it can without waiting; *progressed
 * is set when anything moved.  0, or a negative errno (the collective has
 * failed: rw_coll_fail named the peer, or a local failure for the caller). */
int rw_ring_post_recvs(struct rw_coll_req *r, int ch, bool *progressed);
int rw_ring_complete_recvs(struct rw_coll_req *r, int ch, bool *progressed);
int rw_ring_post_sends(struct rw_coll_req *r, int ch, bool *progressed);
int rw_ring_complete_sends(struct rw_coll_req *r, int ch, bool *progressed);

#endif /* RW_RING_CHAN_H */
