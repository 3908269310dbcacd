/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring collectives' state machine, one per channel, driven by the plan
 * (ring_plan.h).  Each call to progress does, per channel, as much as it can
 * without waiting:
 *   1. post receives ahead (up to RW_COLL_MAX_RECVS, a staging slot each when
 *      the chunk is reduced before it is used);
 *   2. complete receives in order and process them at once: reduce with the
 *      local contribution (k-source fold, straight into recvbuf on the last
 *      reduction step), or nothing when the chunk landed in recvbuf;
 *   3. post sends in order (up to RW_COLL_MAX_SENDS): local data from
 *      sendbuf, or the forward of a processed receive of the same round;
 *   4. complete sends in order, freeing the slots they sent from.
 * So while chunk k is being reduced, chunk k+1 is on the wire and chunk k-1
 * is being forwarded.  Host buffers are sent from and received into where
 * they are; device buffers go through host staging (coll_mem.c).
 *
 * The first message each way on channel 0 is the collective's signature
 * (16 bytes, sent with the first data, no extra round trip), and no
 * received chunk is processed before prev's matched: so what a rank
 * forwards vouches for its predecessors, and ranks that called different
 * collectives fail (with both named) instead of returning wrong data,
 * however far apart they are on the ring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_internal.h"
#include "common/rw_log.h"
#include "common/rw_nvtx.h"

struct pend_recv {
	struct rw_net_req *req;
	struct rw_ring_pos pos;
	int slot; /* -1: straight into recvbuf */
};

struct held {
	struct rw_ring_pos pos;
	int slot;
};

struct pend_send {
	struct rw_net_req *req;
	struct rw_ring_pos pos;
	int free_slot; /* staging slot to free on completion, or -1 */
	int out_slot;  /* device sends: host copy slot, or -1 */
};

struct ring_chan {
	struct rw_ring_pos spos, rpos; /* next send / receive to post */
	bool smore, rmore;
	struct pend_recv pr[RW_COLL_MAX_RECVS];
	unsigned pr_head, pr_n;
	struct held held[RW_COLL_NSLOTS]; /* processed, waiting to be forwarded */
	unsigned held_head, held_n;
	struct pend_send ps[RW_COLL_MAX_SENDS];
	unsigned ps_head, ps_n;
	int free_slots[RW_COLL_NSLOTS], nfree;
	int free_out[RW_COLL_NSLOTS], nfree_out;
};

struct ring_state {
	struct rw_ring_plan plan;
	bool phase_pushed, in_allgather;
	/* the signature swap with the neighbours, first on channel 0's links */
	struct rw_net_req *sig_rreq, *sig_sreq;
	bool sig_rposted, sig_in, sig_sposted, sig_out;
	struct ring_chan ch[];
};

static struct ring_state *state_of(const struct rw_coll_req *r)
{
	return r->algo;
}

static int ring_init(struct rw_coll_req *r)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_ring_plan_args pa = {
		.kind = (enum rw_ring_kind)r->a.kind,
		.nranks = c->nranks,
		.rank = c->rank,
		.root = r->a.root,
		.nchannels = c->nchannels,
		.chunk_elems = c->chunk_bytes / r->esize,
		.seg_off = r->a.seg_off,
		.seg_count = r->a.seg_count,
	};
	struct ring_state *st;
	int rc;

	st = calloc(1, sizeof(*st) + (size_t)c->nchannels * sizeof(st->ch[0]));
	if (!st)
		return -ENOMEM;
	rc = rw_ring_plan_init(&st->plan, &pa);
	if (rc) {
		free(st);
		return rc;
	}
	for (int ch = 0; ch < c->nchannels; ch++) {
		struct ring_chan *cs = &st->ch[ch];

		cs->smore = rw_ring_plan_send_first(&st->plan, ch, &cs->spos);
		cs->rmore = rw_ring_plan_recv_first(&st->plan, ch, &cs->rpos);
		for (int i = 0; i < RW_COLL_NSLOTS; i++) {
			cs->free_slots[i] = RW_COLL_NSLOTS - 1 - i;
			cs->free_out[i] = RW_COLL_NSLOTS - 1 - i;
		}
		cs->nfree = cs->nfree_out = RW_COLL_NSLOTS;
	}
	r->algo = st;
	return 0;
}

static void ring_fini(struct rw_coll_req *r)
{
	struct ring_state *st = state_of(r);

	/* requests still in flight were cancelled by closing the links */
	rw_ring_plan_fini(&st->plan);
	free(st);
}

static char *at(const void *base, size_t elem, size_t bias, size_t es)
{
	return (char *)base + (elem - bias) * es;
}

static char *slot_ptr(const struct rw_coll_comm *c, int ch, int slot)
{
	return c->stage[ch].buf + (size_t)slot * c->chunk_bytes;
}

static int prev_rank(const struct rw_coll_comm *c)
{
	return (c->rank + c->nranks - 1) % c->nranks;
}

static int next_rank(const struct rw_coll_comm *c)
{
	return (c->rank + 1) % c->nranks;
}

static void hold(struct ring_chan *cs, struct rw_ring_pos pos, int slot)
{
	cs->held[(cs->held_head + cs->held_n++) % RW_COLL_NSLOTS] =
		(struct held){.pos = pos, .slot = slot};
}

/* Is the receive at pos processed?  (Receives are processed in order.) */
static bool processed(const struct ring_chan *cs, struct rw_ring_pos pos)
{
	if (cs->pr_n)
		return rw_ring_pos_cmp(pos, cs->pr[cs->pr_head].pos) < 0;
	return !cs->rmore || rw_ring_pos_cmp(pos, cs->rpos) < 0;
}

static void phase(struct rw_coll_req *r, const struct rw_ring_msg *m)
{
	struct ring_state *st = state_of(r);

	if (r->a.kind != RW_COLL_ALLREDUCE || st->in_allgather || m->action != RW_RING_COPY)
		return;
	st->in_allgather = true;
	if (st->phase_pushed) {
		RW_NVTX_POP();
		RW_NVTX_PUSH("allgather");
	}
}

/* --- the signature swap ------------------------------------------------------- */

static int sig_swap(struct rw_coll_req *r, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_state *st = state_of(r);
	struct rw_coll_link *sl = &c->links[rw_link_send(0)], *rl = &c->links[rw_link_recv(0)];
	int tag = RW_COLL_TAG, done, rc;

	if (!st->sig_sposted) {
		memcpy(sl->ctl->buf, &r->sig, sizeof(r->sig));
		rc = rw_net_isend(sl->comm, sl->ctl->buf, sizeof(r->sig), RW_COLL_TAG, sl->ctl->mr,
				  &st->sig_sreq);
		if (rc)
			return rw_coll_fail(r, rc, next_rank(c), "sending to", 0, 0);
		st->sig_sposted = st->sig_sreq != NULL;
		*progressed |= st->sig_sposted;
	}
	if (!st->sig_rposted) {
		void *data = rl->ctl->buf;
		size_t size = RW_COLL_CTL_BYTES;

		rc = rw_net_irecv(rl->comm, 1, &data, &size, &tag, &rl->ctl->mr, &st->sig_rreq);
		if (rc)
			return rw_coll_fail(r, rc, prev_rank(c), "posting a receive from", 0, 0);
		st->sig_rposted = st->sig_rreq != NULL;
		*progressed |= st->sig_rposted;
	}
	if (st->sig_sposted && !st->sig_out) {
		done = 0;
		rc = rw_net_test(st->sig_sreq, &done, NULL);
		if (rc)
			return rw_coll_fail(r, rc, next_rank(c), "sending to", 0, 0);
		st->sig_out = done;
		*progressed |= st->sig_out;
	}
	if (st->sig_rposted && !st->sig_in) {
		struct rw_coll_sig theirs = {0};
		size_t got = 0;

		done = 0;
		rc = rw_net_test(st->sig_rreq, &done, &got);
		if (rc)
			return rw_coll_fail(r, rc, prev_rank(c), "receiving from", 0, 0);
		if (!done)
			return 0;
		if (got == sizeof(theirs))
			memcpy(&theirs, rl->ctl->buf, sizeof(theirs));
		if (!rw_coll_sig_same(&theirs, &r->sig))
			return rw_coll_fail_mismatch(r, prev_rank(c), &theirs);
		st->sig_in = true;
		*progressed = true;
	}
	return 0;
}

/* --- receives ----------------------------------------------------------------- */

static int post_recvs(struct rw_coll_req *r, int ch, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_state *st = state_of(r);
	struct ring_chan *cs = &st->ch[ch];
	int l = rw_link_recv(ch), tag = RW_COLL_TAG, rc;
	struct rw_net_comm *comm = c->links[l].comm;

	if (ch == 0 && !st->sig_rposted)
		return 0; /* the signature is the first message */
	while (cs->rmore && cs->pr_n < RW_COLL_MAX_RECVS) {
		struct rw_ring_msg m;
		size_t size;
		bool staged;
		void *data;
		struct rw_net_mr *mr;
		struct rw_net_req *req = NULL;
		int slot = -1;

		rw_ring_plan_recv(&st->plan, ch, cs->rpos, &m);
		size = m.count * r->esize;
		staged = r->mem == RW_COLL_MEM_DEVICE || m.action != RW_RING_COPY;
		if (staged) {
			if (!cs->nfree)
				break;
			slot = cs->free_slots[cs->nfree - 1];
			data = slot_ptr(c, ch, slot);
			mr = c->stage[ch].mr_recv;
		} else {
			data = at(r->a.recvbuf, m.off, r->dst_base, r->esize);
			mr = rw_coll_mr_on(r->a.recv_mr, l);
		}
		rc = rw_net_irecv(comm, 1, &data, &size, &tag, &mr, &req);
		if (rc)
			return rw_coll_fail(r, rc, prev_rank(c), "posting a receive from", m.step,
					    m.chunk);
		if (!req)
			break;
		if (staged)
			cs->nfree--;
		cs->pr[(cs->pr_head + cs->pr_n++) % RW_COLL_MAX_RECVS] =
			(struct pend_recv){.req = req, .pos = cs->rpos, .slot = slot};
		cs->rmore = rw_ring_plan_recv_next(&st->plan, ch, &cs->rpos);
		*progressed = true;
	}
	return 0;
}

static void free_slot(struct ring_chan *cs, int slot)
{
	cs->free_slots[cs->nfree++] = slot;
}

/* What a received chunk turns into (see the file comment). */
static int process(struct rw_coll_req *r, int ch, const struct rw_ring_msg *m,
		   struct rw_ring_pos pos, int slot)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_chan *cs = &state_of(r)->ch[ch];
	char *sp = slot >= 0 ? slot_ptr(c, ch, slot) : NULL;
	const void *local = NULL;
	char *out = NULL;
	bool dev = r->mem == RW_COLL_MEM_DEVICE;
	int rc = 0;

	/* only what the action touches: the other pointer may lie outside
	 * its buffer (reduce-scatter's recvbuf holds one segment) */
	if (m->action != RW_RING_COPY)
		local = at(r->a.sendbuf, m->off, r->src_base, r->esize);
	if (m->action != RW_RING_REDUCE_FWD)
		out = at(r->a.recvbuf, m->off, r->dst_base, r->esize);
	switch (m->action) {
	case RW_RING_REDUCE_FWD:
		/* the partial sum is forwarded from the slot it arrived in */
		rc = rw_coll_fold(r, ch, dev ? NULL : sp, local, sp, slot, m->count, false,
				  dev ? sp : NULL);
		if (!rc)
			hold(cs, pos, slot);
		break;
	case RW_RING_REDUCE_FINAL:
		rc = rw_coll_fold(r, ch, out, local, sp, slot, m->count, true,
				  dev && m->forwarded ? sp : NULL);
		if (!rc && dev && m->forwarded)
			hold(cs, pos, slot);
		else
			free_slot(cs, slot); /* forwarded from recvbuf, if at all */
		break;
	case RW_RING_COPY:
	default:
		if (!dev)
			break; /* it landed in recvbuf */
		rc = rw_coll_h2d(r, ch, out, sp, m->count * r->esize);
		if (!rc && m->forwarded)
			hold(cs, pos, slot);
		else
			free_slot(cs, slot);
		break;
	}
	return rc;
}

static int complete_recvs(struct rw_coll_req *r, int ch, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_state *st = state_of(r);
	struct ring_chan *cs = &st->ch[ch];

	if (!st->sig_in)
		return 0; /* nothing of prev's is used before its signature matched */
	while (cs->pr_n) {
		struct pend_recv *p = &cs->pr[cs->pr_head];
		struct rw_ring_msg m;
		size_t got = 0;
		int done = 0, rc;

		rw_ring_plan_recv(&st->plan, ch, p->pos, &m);
		rc = rw_net_test(p->req, &done, &got);
		if (rc)
			return rw_coll_fail(r, rc, prev_rank(c), "receiving from", m.step, m.chunk);
		if (!done)
			break;
		if (got != m.count * r->esize) {
			RW_WARN(RW_LOG_COLL,
				"coll: rank %d: %s: rank %d sent %zu bytes for step %d, chunk %zu; "
				"expected %zu (do all ranks pass the same count?)",
				c->rank, rw_coll_kind_name(r->a.kind), prev_rank(c), got, m.step,
				m.chunk, m.count * r->esize);
			return rw_coll_fail(r, -EPROTO, prev_rank(c), "receiving from", m.step,
					    m.chunk);
		}
		phase(r, &m);
		rc = process(r, ch, &m, p->pos, p->slot);
		if (rc)
			return rc; /* a local failure: the caller reports it */
		cs->pr_head = (cs->pr_head + 1) % RW_COLL_MAX_RECVS;
		cs->pr_n--;
		*progressed = true;
	}
	return 0;
}

/* --- sends ------------------------------------------------------------------ */

static int post_sends(struct rw_coll_req *r, int ch, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_state *st = state_of(r);
	struct ring_chan *cs = &st->ch[ch];
	int l = rw_link_send(ch), rc;
	struct rw_net_comm *comm = c->links[l].comm;
	bool dev = r->mem == RW_COLL_MEM_DEVICE;

	if (ch == 0 && !st->sig_sposted)
		return 0; /* the signature goes first */
	while (cs->smore && cs->ps_n < RW_COLL_MAX_SENDS) {
		struct rw_ring_msg m;
		struct rw_net_mr *mr;
		struct rw_net_req *req = NULL;
		void *data;
		size_t size;
		int free_slot_idx = -1, out = -1;
		bool from_held = false;

		rw_ring_plan_send(&st->plan, ch, cs->spos, &m);
		size = m.count * r->esize;
		if (m.local) {
			data = at(r->a.sendbuf, m.off, r->src_base, r->esize);
			mr = rw_coll_mr_on(r->a.send_mr, l);
			if (dev) {
				if (!cs->nfree_out)
					break;
				out = cs->free_out[cs->nfree_out - 1];
				rc = rw_coll_d2h(r, ch,
						 c->stage[ch].out + (size_t)out * c->chunk_bytes,
						 data, size);
				if (rc)
					return rc;
				data = c->stage[ch].out + (size_t)out * c->chunk_bytes;
				mr = c->stage[ch].out_mr;
			}
		} else {
			struct rw_ring_msg rm;

			if (!processed(cs, m.from))
				break;
			rw_ring_plan_recv(&st->plan, ch, m.from, &rm);
			if (dev || rm.action == RW_RING_REDUCE_FWD) {
				struct held *h = &cs->held[cs->held_head];

				if (!cs->held_n || rw_ring_pos_cmp(h->pos, m.from) != 0) {
					RW_WARN(RW_LOG_COLL,
						"coll: rank %d: internal error: no staged chunk "
						"for step %d, chunk %zu",
						c->rank, m.step, m.chunk);
					return -EPROTO;
				}
				data = slot_ptr(c, ch, h->slot);
				mr = c->stage[ch].mr_send;
				free_slot_idx = h->slot;
				from_held = true;
			} else {
				data = at(r->a.recvbuf, rm.off, r->dst_base, r->esize);
				mr = rw_coll_mr_on(r->a.recv_mr, l);
			}
		}
		rc = rw_net_isend(comm, data, size, RW_COLL_TAG, mr, &req);
		if (rc)
			return rw_coll_fail(r, rc, next_rank(c), "sending to", m.step, m.chunk);
		if (!req)
			break; /* no room: the device copy, if any, is redone */
		if (out >= 0)
			cs->nfree_out--;
		if (from_held) {
			cs->held_head = (cs->held_head + 1) % RW_COLL_NSLOTS;
			cs->held_n--;
		}
		cs->ps[(cs->ps_head + cs->ps_n++) % RW_COLL_MAX_SENDS] = (struct pend_send){
			.req = req, .pos = cs->spos, .free_slot = free_slot_idx, .out_slot = out};
		cs->smore = rw_ring_plan_send_next(&st->plan, ch, &cs->spos);
		*progressed = true;
	}
	return 0;
}

static int complete_sends(struct rw_coll_req *r, int ch, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_chan *cs = &state_of(r)->ch[ch];

	while (cs->ps_n) {
		struct pend_send *p = &cs->ps[cs->ps_head];
		int done = 0, rc = rw_net_test(p->req, &done, NULL);

		if (rc)
			return rw_coll_fail(r, rc, next_rank(c), "sending to", p->pos.step,
					    p->pos.round);
		if (!done)
			break;
		if (p->free_slot >= 0)
			free_slot(cs, p->free_slot);
		if (p->out_slot >= 0)
			cs->free_out[cs->nfree_out++] = p->out_slot;
		cs->ps_head = (cs->ps_head + 1) % RW_COLL_MAX_SENDS;
		cs->ps_n--;
		*progressed = true;
	}
	return 0;
}

/* --- the algorithm ops ---------------------------------------------------------- */

static int ring_progress(struct rw_coll_req *r, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_state *st = state_of(r);
	bool all_done = true;

	if (c->nranks == 1)
		return 1; /* the local copy at activation did it all */
	if (!st->phase_pushed &&
	    (r->a.kind == RW_COLL_ALLREDUCE || r->a.kind == RW_COLL_REDUCE_SCATTER)) {
		RW_NVTX_PUSH(st->in_allgather ? "allgather" : "scatter-reduce");
		st->phase_pushed = true;
		r->nvtx_depth++;
	}
	for (int ch = 0; ch < c->nchannels; ch++) {
		struct ring_chan *cs = &st->ch[ch];
		bool moved;
		int rc;

		if (ch == 0) {
			rc = sig_swap(r, progressed);
			if (rc)
				return rc;
		}
		do {
			moved = false;
			rc = post_recvs(r, ch, &moved);
			if (!rc)
				rc = complete_recvs(r, ch, &moved);
			if (!rc)
				rc = post_sends(r, ch, &moved);
			if (!rc)
				rc = complete_sends(r, ch, &moved);
			if (rc)
				return rc;
			*progressed |= moved;
		} while (moved);
		if (cs->smore || cs->rmore || cs->pr_n || cs->ps_n)
			all_done = false;
	}
	return all_done && st->sig_in && st->sig_out ? 1 : 0;
}

/* What the collective waits on: a send the next rank does not take names
 * it before a receive that does not come (the missing data may only be
 * the previous rank waiting in turn). */
static void ring_waiting(const struct rw_coll_req *r, int *peer, int *step, size_t *chunk,
			 const char **what)
{
	const struct rw_coll_comm *c = r->comm;
	const struct ring_state *st = state_of(r);

	for (int ch = 0; ch < c->nchannels; ch++) {
		const struct ring_chan *cs = &st->ch[ch];

		if (cs->ps_n) {
			const struct pend_send *p = &cs->ps[cs->ps_head];

			*peer = next_rank(c);
			*step = p->pos.step;
			*chunk = p->pos.round;
			*what = "waiting for a send to be taken by";
			return;
		}
	}
	for (int ch = 0; ch < c->nchannels; ch++) {
		const struct ring_chan *cs = &st->ch[ch];

		if (cs->pr_n) {
			const struct pend_recv *p = &cs->pr[cs->pr_head];

			*peer = prev_rank(c);
			*step = p->pos.step;
			*chunk = p->pos.round;
			*what = "waiting for data from";
			return;
		}
	}
}

const struct rw_coll_algo_ops rw_coll_ring_ops = {
	.name = "ring",
	.init = ring_init,
	.progress = ring_progress,
	.waiting = ring_waiting,
	.fini = ring_fini,
};
