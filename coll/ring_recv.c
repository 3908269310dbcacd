/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring's receives, per channel (ring_chan.h; the state machine is
 * described in ring_op.c): posted ahead into a staging slot or straight
 * into recvbuf, completed in order, processed at once (a fold, a copy, or
 * device work enqueued), then retired: held for their forward or their
 * slot freed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll/ring_chan.h"
#include "common/rw_log.h"
#include "common/rw_nvtx.h"

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

static void phase(struct rw_coll_req *r, const struct rw_ring_msg *m)
{
	struct ring_state *st = ring_state_of(r);

	if (r->a.kind != RW_COLL_ALLREDUCE || st->in_allgather || m->action != RW_RING_COPY)
		return;
	st->in_allgather = true;
	if (st->phase_pushed) {
		RW_NVTX_POP();
		RW_NVTX_PUSH("allgather");
	}
}

/* --- receives ----------------------------------------------------------------- */

int rw_ring_post_recvs(struct rw_coll_req *r, int ch, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_state *st = ring_state_of(r);
	struct ring_chan *cs = &st->ch[ch];
	int l = rw_link_recv(ch), tag = RW_COLL_TAG, rc;
	struct rw_net_comm *comm = c->links[l].comm;

	/* out of place, an allreduce's recvbuf holds every segment: a partial
	 * sum may land in its segment's place, scratch until the allgather
	 * brings the segment back */
	bool partials = r->disjoint && r->a.kind == RW_COLL_ALLREDUCE;

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
		 * goes and is folded there: a partial sum (above), or the final
		 * value's place in recvbuf over a link without a sink */
		rbuf_fwd = partials && m.action == RW_RING_REDUCE_FWD;
		staged = r->mem == RW_COLL_MEM_DEVICE ||
			 (m.action == RW_RING_REDUCE_FWD && !rbuf_fwd) ||
			 (m.action == RW_RING_REDUCE_FINAL && (sink || !r->disjoint));
		if (rbuf_fwd && cs->rbuf_due >= RW_COLL_NSLOTS)
			break; /* as many held as slots would be: the pipeline's bound */
		if (partials && m.action == RW_RING_COPY && rbuf_busy(cs, cs->rpos.round, m.seg))
			break; /* its partial sum is still ours */
		if (staged) {
			const struct rw_coll_stage *sg = &c->stage[ch];

			if (!cs->nfree)
				break;
			slot = cs->free_slots[cs->nfree - 1];
			data = ring_slot(r, ch, slot);
			mr = ring_hstage(r, ch)->mr_recv;
			if (r->mem == RW_COLL_MEM_DEVICE && sg->recv_dev) {
				data = rw_coll_dslot(c, ch, slot);
				mr = sg->dmr_recv;
			}
		} else {
			data = ring_at(r->a.recvbuf, m.off, r->dst_base, r->esize);
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
					fwd ? data
					    : ring_at(r->a.recvbuf, m.off, r->dst_base, r->esize),
					ring_at(r->a.sendbuf, m.off, r->src_base, r->esize), !fwd);
			else /* a result kept, not forwarded: around the cache */
				rw_coll_sink_copy(&p->sink, r, data,
						  r->nontemporal && !m.forwarded);
			rc = rw_net_irecv_sink(comm, data, size, tag, mr, &p->sink.sink, &req);
		} else {
			rc = rw_net_irecv(comm, 1, &data, &size, &tag, &mr, &req);
		}
		if (rc)
			return rw_coll_fail(r, rc, rw_coll_prev(c), "posting a receive from",
					    m.step, m.chunk);
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

/*
 * What a received chunk turns into (see the file comment): host
 * collectives do it here and now; device ones enqueue it and the receive
 * enters RECV_DEVICE.  Sets p->keep when the slot is held for a forward.
 */
static int process(struct rw_coll_req *r, int ch, const struct rw_ring_msg *m, struct pend_recv *p)
{
	struct ring_chan *cs = &ring_state_of(r)->ch[ch];
	char *sp = p->slot >= 0 ? ring_slot(r, ch, p->slot) : NULL;
	const void *local = NULL;
	char *out = NULL;

	/* only what the action touches: the other pointer may lie outside
	 * its buffer (reduce-scatter's recvbuf holds one segment) */
	if (m->action != RW_RING_COPY)
		local = ring_at(r->a.sendbuf, m->off, r->src_base, r->esize);
	if (m->action != RW_RING_REDUCE_FWD || p->rseg >= 0)
		out = ring_at(r->a.recvbuf, m->off, r->dst_base, r->esize);
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
	case RW_RING_REDUCE_FWD: {
		/* the partial sum is forwarded from where it arrived */
		char *ps = sp ? sp : out;

		return rw_coll_fold(r, ps, local, ps, m->count, false);
	}
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
	struct ring_chan *cs = &ring_state_of(r)->ch[ch];

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
			ring_free_slot(cs, p->slot);
		cs->pr_head = (cs->pr_head + 1) % RW_COLL_MAX_RECVS;
		cs->pr_n--;
		*progressed = true;
	}
	return 0;
}

int rw_ring_complete_recvs(struct rw_coll_req *r, int ch, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_state *st = ring_state_of(r);
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
			return rw_coll_fail(r, rc, rw_coll_prev(c), "receiving from", m.step,
					    m.chunk);
		if (!done)
			break;
		p->req = NULL;
		if (got != m.count * r->esize) {
			RW_WARN(RW_LOG_COLL,
				"coll: rank %d: %s: rank %d sent %zu bytes for step %d, chunk %zu; "
				"expected %zu (do all ranks pass the same count?)",
				c->rank, rw_coll_kind_name(r->a.kind), rw_coll_prev(c), got, m.step,
				m.chunk, m.count * r->esize);
			return rw_coll_fail(r, -EPROTO, rw_coll_prev(c), "receiving from", m.step,
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
