/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring collectives' state machine, one per channel, driven by the plan
 * (ring_plan.h).  Each call to progress does, per channel, as much as it can
 * without waiting:
 *   1. post receives ahead (up to RW_COLL_MAX_RECVS, a staging slot each when
 *      the chunk is to be reduced and does not land in recvbuf: see "Out
 *      of place" below for those that do);
 *   2. complete receives in order and process them at once: reduce with the
 *      local contribution where the chunk landed (into recvbuf on the last
 *      reduction step), or nothing when a chunk to keep landed in recvbuf;
 *   3. post sends in order (up to RW_COLL_MAX_SENDS): local data from
 *      sendbuf, or the forward of a processed receive of the same round;
 *   4. complete sends in order, freeing the slots they sent from.
 * So while chunk k is being reduced, chunk k+1 is on the wire and chunk k-1
 * is being forwarded.  Host buffers are sent from and received into where
 * they are; device buffers go through the channel's staging, on the device
 * where the links move device memory (coll_mem.c).
 *
 * Nothing waits for a device.  A received chunk of a device collective has
 * its copies and reduction enqueued on the channel's stream at once and is
 * "in device work" until its event has run (polled here, from test()); the
 * chunks behind it are received, enqueued and sent meanwhile, so copy,
 * kernel and wire overlap.  A local chunk to send is first copied to an out
 * slot (enqueued too); when the transport has no room for a send, what was
 * staged for it stays, and the send is posted later without redoing it.
 *
 * The first message each way on channel 0 is the collective's signature
 * (16 bytes, sent with the first data, no extra round trip), and no
 * received chunk is processed (forwarded, or counted done) before prev's
 * matched: so what a rank forwards vouches for its predecessors, and ranks
 * that called different collectives fail (with both named) instead of
 * returning wrong data, however far apart they are on the ring.  Chunks do
 * land in recvbuf, and a sink (below) folds them there, before that check:
 * a collective that fails leaves recvbuf undefined, in place its input too.
 *
 * Where a link takes receives with a sink (rw_net_irecv_sink: shm), a host
 * chunk is taken where the link holds it as it arrives, folded from there
 * (a chunk to reduce) or copied (a chunk to keep), with no copy out of the
 * transport first; its receive is then done when test() says so.
 *
 * Out of place, a host chunk to reduce is received into recvbuf and folded
 * there, not through a slot: over links without a sink (socket, ib) the
 * last reduction's chunk, where its result goes (a sink folds that one
 * from the transport's memory into recvbuf anyway); and over every link,
 * an allreduce's partial sums (its recvbuf holds every segment) in their
 * segment's place, which is scratch until the allgather brings the
 * segment back, forwarded from there.  Two rules keep that exact:
 *   - the allgather's receive of a chunk is not posted while that chunk's
 *     partial sum is still ours (received, held or its send not complete:
 *     rbuf_busy), since a transport may read a send's buffer until test()
 *     says it is done;
 *   - partial sums held in recvbuf are bounded by RW_COLL_NSLOTS, as slots
 *     bound them in place, so the pipeline's order argument (ring_plan.h)
 *     is unchanged.
 * A slot's trip through the cache costs: the slots cycle through 4 chunks
 * x 4 channels, past the last-level cache at large sizes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_internal.h"
#include "common/rw_log.h"
#include "common/rw_nvtx.h"

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
		.nchannels = r->nch,
		.chunk_elems = r->chunk_bytes / r->esize,
		.seg_off = r->a.seg_off,
		.seg_count = r->a.seg_count,
	};
	struct ring_state *st;
	size_t *ring_seg = NULL;
	int rc;

	rc = rw_coll_ring_args(r, &pa, &ring_seg); /* ring positions (placement) */
	if (rc)
		return rc;
	st = calloc(1, sizeof(*st) + (size_t)r->nch * sizeof(st->ch[0]));
	if (!st) {
		free(ring_seg);
		return -ENOMEM;
	}
	rc = rw_ring_plan_init(&st->plan, &pa);
	free(ring_seg);
	if (rc) {
		free(st);
		return rc;
	}
	for (int ch = 0; ch < r->nch; ch++) {
		struct ring_chan *cs = &st->ch[ch];

		cs->smore = rw_ring_plan_send_first(&st->plan, ch, &cs->spos);
		cs->rmore = rw_ring_plan_recv_first(&st->plan, ch, &cs->rpos);
		for (int i = 0; i < RW_COLL_NSLOTS; i++) {
			cs->free_slots[i] = RW_COLL_NSLOTS - 1 - i;
			cs->free_out[i] = RW_COLL_NSLOTS - 1 - i;
		}
		cs->nfree = cs->nfree_out = RW_COLL_NSLOTS;
	}
	/* A chunk received at step s left rank pos-s-1 and was processed by
	 * every rank after it, each only once its predecessor's signature
	 * matched its own: one received at step P-2 or later proves that all
	 * P ranks ran this collective (coll_ctl.c waits for no token then).
	 * The step P-2 receive carries segment pos+1+rot; broadcast's single
	 * step proves it only for the chain's last rank: it waits. */
	if (st->plan.kind != RW_RING_BROADCAST && c->nranks > 1)
		r->proven = st->plan.seg_count[(st->plan.rank + 1 + st->plan.rot + c->nranks) %
					       c->nranks] > 0;
	r->algo = st;
	return 0;
}

static void ring_fini(struct rw_coll_req *r)
{
	struct ring_state *st = state_of(r);

	/* requests still in flight were cancelled by closing the links (a
	 * failure), or are never tested again (rw_coll_comm_destroy closes
	 * them after): a sink's put runs only inside irecv or test on its
	 * link, so none touches p->sink once we are freed; device
	 * work still in flight (a failed collective) must end before we do,
	 * so that nothing is written into the user's buffers afterwards */
	if (r->mem == RW_COLL_MEM_DEVICE && r->comm->nranks > 1) {
		for (int ch = 0; ch < r->nch; ch++) {
			struct ring_chan *cs = &st->ch[ch];
			bool busy = cs->staged;

			for (unsigned i = 0; i < cs->pr_n; i++)
				busy |= cs->pr[(cs->pr_head + i) % RW_COLL_MAX_RECVS].state ==
					RECV_DEVICE;
			if (busy)
				rw_coll_dev_drain(r->comm, ch);
		}
	}
	rw_coll_act_fini(r);
	rw_ring_plan_fini(&st->plan);
	free(st);
}

static char *at(const void *base, size_t elem, size_t bias, size_t es)
{
	return (char *)base + (elem - bias) * es;
}

/* Host slot of channel ch: a device collective's staging through host
 * memory has its own stride (rw_coll_hslot). */
static char *slot_ptr(const struct rw_coll_req *r, int ch, int slot)
{
	const struct rw_coll_comm *c = r->comm;

	if (r->mem == RW_COLL_MEM_DEVICE)
		return rw_coll_hslot(c, ch, slot);
	return c->stage[ch].buf + (size_t)slot * c->chunk_bytes;
}

/* Where r's host slots of channel ch are registered (mr_send, mr_recv). */
static const struct rw_coll_stage *hstage(const struct rw_coll_req *r, int ch)
{
	if (r->mem == RW_COLL_MEM_DEVICE)
		return rw_coll_hstage(r->comm, ch);
	return &r->comm->stage[ch];
}

static int prev_rank(const struct rw_coll_comm *c)
{
	return rw_coll_prev(c);
}

static int next_rank(const struct rw_coll_comm *c)
{
	return rw_coll_next(c);
}

static void hold(struct ring_chan *cs, const struct pend_recv *p)
{
	cs->held[(cs->held_head + cs->held_n++) % RW_COLL_NSLOTS] =
		(struct held){.pos = p->pos, .slot = p->slot, .rseg = p->rseg, .dev = p->fwd_dev};
}

/*
 * Is chunk `round` of segment seg in recvbuf still a partial sum of ours,
 * received, held or being sent?  The allgather's receive of the same bytes
 * waits until its send has completed: the final value cannot arrive before
 * the next rank has taken the partial sum (the ring passes through it), but
 * a transport may still read the buffer after that (an RDMA retry), and
 * the send's completion is the only word it gives.
 */
static bool rbuf_busy(const struct ring_chan *cs, size_t round, int seg)
{
	for (unsigned i = 0; i < cs->pr_n; i++) {
		const struct pend_recv *p = &cs->pr[(cs->pr_head + i) % RW_COLL_MAX_RECVS];

		if (p->rseg == seg && p->pos.round == round)
			return true;
	}
	for (unsigned i = 0; i < cs->held_n; i++) {
		const struct held *h = &cs->held[(cs->held_head + i) % RW_COLL_NSLOTS];

		if (h->rseg == seg && h->pos.round == round)
			return true;
	}
	for (unsigned i = 0; i < cs->ps_n; i++) {
		const struct pend_send *p = &cs->ps[(cs->ps_head + i) % RW_COLL_MAX_SENDS];

		if (p->rseg == seg && p->pos.round == round)
			return true;
	}
	return false;
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
		struct pend_recv *p = &cs->pr[(cs->pr_head + cs->pr_n) % RW_COLL_MAX_RECVS];
		struct rw_ring_msg m;
		size_t size;
		bool staged, sink, rbuf_fwd;
		void *data;
		struct rw_net_mr *mr;
		struct rw_net_req *req = NULL;
		int slot = -1;

		rw_ring_plan_recv(&st->plan, ch, cs->rpos, &m);
		size = m.count * r->esize;
		sink = rw_coll_can_sink(r, comm);
		/* out of place, a host chunk to reduce lands where its result
		 * goes and is folded there: the final value's place in recvbuf,
		 * or (allreduce, whose recvbuf holds every segment) a partial
		 * sum's, scratch until the allgather brings the segment back */
		rbuf_fwd = m.action == RW_RING_REDUCE_FWD && r->disjoint &&
			   r->a.kind == RW_COLL_ALLREDUCE;
		staged = r->mem == RW_COLL_MEM_DEVICE ||
			 (m.action == RW_RING_REDUCE_FWD && !rbuf_fwd) ||
			 (m.action == RW_RING_REDUCE_FINAL && (sink || !r->disjoint));
		if (rbuf_fwd && cs->rbuf_due >= RW_COLL_NSLOTS)
			break; /* as many held as slots would be: the pipeline's bound */
		if (!staged && m.action == RW_RING_COPY && r->disjoint &&
		    rbuf_busy(cs, cs->rpos.round, m.seg))
			break; /* its partial sum is still ours */
		if (staged) {
			const struct rw_coll_stage *sg = &c->stage[ch];

			if (!cs->nfree)
				break;
			slot = cs->free_slots[cs->nfree - 1];
			data = slot_ptr(r, ch, slot);
			mr = hstage(r, ch)->mr_recv;
			if (r->mem == RW_COLL_MEM_DEVICE && sg->recv_dev) {
				data = rw_coll_dslot(c, ch, slot);
				mr = sg->dmr_recv;
			}
		} else {
			data = at(r->a.recvbuf, m.off, r->dst_base, r->esize);
			mr = rw_coll_mr_on(r->a.recv_mr, l);
		}
		/* a host chunk is taken where the link holds it, as it
		 * arrives, when the link can: folded, or copied to recvbuf
		 * (its sink may run in this very call) */
		*p = (struct pend_recv){
			.pos = cs->rpos, .slot = slot, .rseg = rbuf_fwd ? m.seg : -1, .sunk = sink};
		if (sink) {
			bool fwd = m.action == RW_RING_REDUCE_FWD;

			if (staged || rbuf_fwd)
				rw_coll_sink_fold(
					&p->sink, r,
					fwd ? data : at(r->a.recvbuf, m.off, r->dst_base, r->esize),
					at(r->a.sendbuf, m.off, r->src_base, r->esize), !fwd);
			else /* a result kept, not forwarded: around the cache */
				rw_coll_sink_copy(&p->sink, r, data,
						  r->nontemporal && !m.forwarded);
			rc = rw_net_irecv_sink(comm, data, size, tag, mr, &p->sink.sink, &req);
		} else {
			rc = rw_net_irecv(comm, 1, &data, &size, &tag, &mr, &req);
		}
		if (rc)
			return rw_coll_fail(r, rc, prev_rank(c), "posting a receive from", m.step,
					    m.chunk);
		if (!req)
			break;
		if (staged)
			cs->nfree--;
		cs->rbuf_due += rbuf_fwd;
		p->req = req;
		cs->pr_n++;
		cs->rmore = rw_ring_plan_recv_next(&st->plan, ch, &cs->rpos);
		*progressed = true;
	}
	return 0;
}

static void free_slot(struct ring_chan *cs, int slot)
{
	cs->free_slots[cs->nfree++] = slot;
}

/*
 * What a received chunk turns into (see the file comment): host
 * collectives do it here and now; device ones enqueue it and the receive
 * enters RECV_DEVICE.  Sets p->keep when the slot is held for a forward.
 */
static int process(struct rw_coll_req *r, int ch, const struct rw_ring_msg *m, struct pend_recv *p)
{
	struct ring_chan *cs = &state_of(r)->ch[ch];
	char *sp = p->slot >= 0 ? slot_ptr(r, ch, p->slot) : NULL;
	const void *local = NULL;
	char *out = NULL;

	/* only what the action touches: the other pointer may lie outside
	 * its buffer (reduce-scatter's recvbuf holds one segment) */
	if (m->action != RW_RING_COPY)
		local = at(r->a.sendbuf, m->off, r->src_base, r->esize);
	if (m->action != RW_RING_REDUCE_FWD || p->rseg >= 0)
		out = at(r->a.recvbuf, m->off, r->dst_base, r->esize);
	p->keep = m->action == RW_RING_REDUCE_FWD || m->forwarded;
	r->comm->stats.recvbuf_partials += p->rseg >= 0;
	if (r->mem == RW_COLL_MEM_DEVICE) {
		int ev = (int)(p - cs->pr); /* its place in the ring: its event */

		p->state = RECV_DEVICE;
		return rw_coll_dev_chunk(r, ch, (int)m->action, out, local, p->slot, m->count,
					 m->forwarded, ev, &p->fwd_dev);
	}
	if (p->sunk) {
		/* its sink did the fold (into the slot, forwarded from there,
		 * or into recvbuf) or the copy into recvbuf */
		p->keep = m->action == RW_RING_REDUCE_FWD;
		if (m->action != RW_RING_COPY)
			r->comm->stats.arrival_folds++;
		return 0;
	}
	switch (m->action) {
	case RW_RING_REDUCE_FWD:
		/* the partial sum is forwarded from where it arrived */
		if (!sp)
			return rw_coll_fold(r, out, local, out, m->count, false);
		return rw_coll_fold(r, sp, local, sp, m->count, false);
	case RW_RING_REDUCE_FINAL:
		p->keep = false; /* forwarded from recvbuf, if at all */
		return rw_coll_fold(r, out, local, sp ? sp : out, m->count, true);
	case RW_RING_COPY:
	default:
		p->keep = false;
		return 0; /* it landed in recvbuf */
	}
}

/* Processed receives leave the queue in order: held for their forward or
 * their slot freed.  One in device work leaves once its event has run. */
static int retire_recvs(struct rw_coll_req *r, int ch, bool *progressed)
{
	struct ring_chan *cs = &state_of(r)->ch[ch];

	while (cs->pr_n) {
		struct pend_recv *p = &cs->pr[cs->pr_head];

		if (p->state == RECV_POSTED)
			break;
		if (p->state == RECV_DEVICE) {
			int rc = rw_coll_dev_poll(r->comm, ch, (int)(p - cs->pr));

			if (rc == -EAGAIN) {
				r->comm->stats.dev_waits++;
				break;
			}
			if (rc)
				return rc; /* a local failure: the caller reports it */
		}
		if (p->keep)
			hold(cs, p);
		else if (p->slot >= 0)
			free_slot(cs, p->slot);
		cs->pr_head = (cs->pr_head + 1) % RW_COLL_MAX_RECVS;
		cs->pr_n--;
		*progressed = true;
	}
	return 0;
}

static int complete_recvs(struct rw_coll_req *r, int ch, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_state *st = state_of(r);
	struct ring_chan *cs = &st->ch[ch];

	if (!st->sig_in)
		return 0; /* nothing of prev's is used before its signature matched */
	for (unsigned i = 0; i < cs->pr_n; i++) {
		struct pend_recv *p = &cs->pr[(cs->pr_head + i) % RW_COLL_MAX_RECVS];
		struct rw_ring_msg m;
		size_t got = 0;
		int done = 0, rc;

		if (p->state != RECV_POSTED)
			continue; /* in device work already */
		rw_ring_plan_recv(&st->plan, ch, p->pos, &m);
		rc = rw_net_test(p->req, &done, &got);
		if (rc)
			return rw_coll_fail(r, rc, prev_rank(c), "receiving from", m.step, m.chunk);
		if (!done)
			break;
		p->req = NULL;
		if (got != m.count * r->esize) {
			RW_WARN(RW_LOG_COLL,
				"coll: rank %d: %s: rank %d sent %zu bytes for step %d, chunk %zu; "
				"expected %zu (do all ranks pass the same count?)",
				c->rank, rw_coll_kind_name(r->a.kind), prev_rank(c), got, m.step,
				m.chunk, m.count * r->esize);
			return rw_coll_fail(r, -EPROTO, prev_rank(c), "receiving from", m.step,
					    m.chunk);
		}
		c->stats.chunks_recv++;
		phase(r, &m);
		rc = process(r, ch, &m, p);
		if (rc)
			return rc; /* a local failure: the caller reports it */
		if (p->state == RECV_POSTED)
			p->state = RECV_DONE; /* processed on the host */
		*progressed = true;
	}
	if (r->mem == RW_COLL_MEM_DEVICE) {
		uint64_t n = cs->staged;

		for (unsigned i = 0; i < cs->pr_n; i++)
			n += cs->pr[(cs->pr_head + i) % RW_COLL_MAX_RECVS].state == RECV_DEVICE;
		if (n > c->stats.dev_inflight_max)
			c->stats.dev_inflight_max = n;
	}
	return retire_recvs(r, ch, progressed);
}

/* --- sends ------------------------------------------------------------------ */

/*
 * A device collective's local chunk for the send at cs->spos: its copy to an
 * out slot is enqueued once; 0 with *ready when it has run, 0 without
 * when it has not yet (or no out slot is free).
 */
static int stage_local(struct rw_coll_req *r, int ch, const void *src, size_t size, bool *ready)
{
	struct ring_chan *cs = &state_of(r)->ch[ch];
	int rc;

	*ready = false;
	if (!cs->staged) {
		if (!cs->nfree_out)
			return 0;
		cs->staged_out = cs->free_out[--cs->nfree_out];
		cs->staged = true;
		rc = rw_coll_dev_stage_send(r, ch, cs->staged_out, src, size, &cs->staged_data,
					    &cs->staged_mr);
		if (rc)
			return rc;
	}
	rc = rw_coll_dev_poll(r->comm, ch, RW_COLL_EV_OUT + cs->staged_out);
	if (rc == -EAGAIN) {
		r->comm->stats.dev_waits++;
		return 0;
	}
	*ready = rc == 0;
	return rc;
}

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
		int free_slot_idx = -1, out = -1, rseg = -1;
		bool from_held = false;

		rw_ring_plan_send(&st->plan, ch, cs->spos, &m);
		size = m.count * r->esize;
		if (m.local) {
			data = at(r->a.sendbuf, m.off, r->src_base, r->esize);
			mr = rw_coll_mr_on(r->a.send_mr, l);
			if (dev) {
				bool ready, was = cs->staged;

				rc = stage_local(r, ch, data, size, &ready);
				if (rc)
					return rc; /* a local failure: the caller reports it */
				*progressed |= cs->staged && !was;
				if (!ready)
					break;
				out = cs->staged_out;
				data = cs->staged_data;
				mr = cs->staged_mr;
			}
		} else {
			struct rw_ring_msg rm;

			if (!processed(cs, m.from))
				break;
			rw_ring_plan_recv(&st->plan, ch, m.from, &rm);
			if (dev || rm.action == RW_RING_REDUCE_FWD) {
				struct held *h = &cs->held[cs->held_head];
				const struct rw_coll_stage *sg = &c->stage[ch];

				if (!cs->held_n || rw_ring_pos_cmp(h->pos, m.from) != 0) {
					RW_WARN(RW_LOG_COLL,
						"coll: rank %d: internal error: no staged chunk "
						"for step %d, chunk %zu",
						c->rank, m.step, m.chunk);
					return -EPROTO;
				}
				if (h->rseg >= 0) {
					/* a partial sum folded in recvbuf */
					data = at(r->a.recvbuf, rm.off, r->dst_base, r->esize);
					mr = rw_coll_mr_on(r->a.recv_mr, l);
					rseg = h->rseg;
				} else if (h->dev) {
					data = rw_coll_dslot(c, ch, h->slot);
					mr = sg->dmr_send;
				} else {
					data = slot_ptr(r, ch, h->slot);
					mr = hstage(r, ch)->mr_send;
				}
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
			break; /* no room: what was staged stays staged for the retry */
		if (out >= 0)
			cs->staged = false; /* the send owns the out slot now */
		if (from_held) {
			cs->held_head = (cs->held_head + 1) % RW_COLL_NSLOTS;
			cs->held_n--;
			cs->rbuf_due -= rseg >= 0;
		}
		cs->ps[(cs->ps_head + cs->ps_n++) % RW_COLL_MAX_SENDS] =
			(struct pend_send){.req = req,
					   .pos = cs->spos,
					   .free_slot = free_slot_idx,
					   .out_slot = out,
					   .rseg = rseg};
		cs->smore = rw_ring_plan_send_next(&st->plan, ch, &cs->spos);
		c->stats.chunks_sent++;
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
	int rc;

	if (c->nranks == 1) {
		/* the local copy at activation does it all */
		rc = rw_coll_act_poll(r);
		return rc == -EAGAIN ? 0 : rc ? rc : 1;
	}
	if (!st->phase_pushed &&
	    (r->a.kind == RW_COLL_ALLREDUCE || r->a.kind == RW_COLL_REDUCE_SCATTER)) {
		RW_NVTX_PUSH(st->in_allgather ? "allgather" : "scatter-reduce");
		st->phase_pushed = true;
		r->nvtx_depth++;
	}
	for (int ch = 0; ch < r->nch; ch++) {
		struct ring_chan *cs = &st->ch[ch];
		bool moved;

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
	if (!all_done || !st->sig_in || !st->sig_out)
		return 0;
	rc = rw_coll_act_poll(r); /* the activation's device copy */
	return rc == -EAGAIN ? 0 : rc ? rc : 1;
}

/* What the collective waits on: a send the next rank does not take names
 * it before a receive that does not come (the missing data may only be
 * the previous rank waiting in turn). */
static void ring_waiting(const struct rw_coll_req *r, int *peer, int *step, size_t *chunk,
			 const char **what)
{
	const struct rw_coll_comm *c = r->comm;
	const struct ring_state *st = state_of(r);

	for (int ch = 0; ch < r->nch; ch++) {
		const struct ring_chan *cs = &st->ch[ch];

		if (cs->ps_n) {
			const struct pend_send *p = &cs->ps[cs->ps_head];

			*peer = next_rank(c);
			*step = p->pos.step;
			*chunk = p->pos.round;
			*what = RW_COLL_WAIT_SEND;
			return;
		}
	}
	for (int ch = 0; ch < r->nch; ch++) {
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
