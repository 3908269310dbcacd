/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring's sends, per channel (ring_chan.h; the state machine is
 * described in ring_op.c): local data from sendbuf (a device collective's
 * staged to an out slot first) or the forward of a processed receive of
 * the same round, posted in order and completed in order, freeing the
 * slots they sent from.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll/ring_chan.h"
#include "common/rw_log.h"
#include "common/rw_nvtx.h"

/* Is the receive at pos processed?  (Receives are processed in order.) */
static bool processed(const struct ring_chan *cs, struct rw_ring_pos pos)
{
	if (cs->pr_n)
		return rw_ring_pos_cmp(pos, cs->pr[cs->pr_head].pos) < 0;
	return !cs->rmore || rw_ring_pos_cmp(pos, cs->rpos) < 0;
}

/* --- sends ------------------------------------------------------------------ */

/*
 * A device collective's local chunk for the send at cs->spos: its copy to an
 * out slot is enqueued once; 0 with *ready when it has run, 0 without
 * when it has not yet (or no out slot is free).
 */
static int stage_local(struct rw_coll_req *r, int ch, const void *src, size_t size, bool *ready)
{
	struct ring_chan *cs = &ring_state_of(r)->ch[ch];
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

int rw_ring_post_sends(struct rw_coll_req *r, int ch, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_state *st = ring_state_of(r);
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
			data = ring_at(r->a.sendbuf, m.off, r->src_base, r->esize);
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
			const struct held *h = NULL; /* a forward held for this send */

			if (!processed(cs, m.from))
				break;
			rw_ring_plan_recv(&st->plan, ch, m.from, &rm);
			if (dev || rm.action == RW_RING_REDUCE_FWD) {
				h = &cs->held[cs->held_head];
				if (!cs->held_n || rw_ring_pos_cmp(h->pos, m.from) != 0) {
					RW_WARN(RW_LOG_COLL,
						"coll: rank %d: internal error: no staged chunk "
						"for step %d, chunk %zu",
						c->rank, m.step, m.chunk);
					return -EPROTO;
				}
				free_slot_idx = h->slot;
				rseg = h->rseg; /* a partial sum folded in recvbuf */
				from_held = true;
			}
			if (h && h->dev) {
				data = rw_coll_dslot(c, ch, h->slot);
				mr = c->stage[ch].dmr_send;
			} else if (h && h->slot >= 0) {
				data = ring_slot(r, ch, h->slot);
				mr = ring_hstage(r, ch)->mr_send;
			} else { /* results, and partial sums folded in recvbuf */
				data = ring_at(r->a.recvbuf, rm.off, r->dst_base, r->esize);
				mr = rw_coll_mr_on(r->a.recv_mr, l);
			}
		}
		rc = rw_net_isend(comm, data, size, RW_COLL_TAG, mr, &req);
		if (rc)
			return rw_coll_fail(r, rc, rw_coll_next(c), "sending to", m.step, m.chunk);
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

int rw_ring_complete_sends(struct rw_coll_req *r, int ch, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_chan *cs = &ring_state_of(r)->ch[ch];

	while (cs->ps_n) {
		struct pend_send *p = &cs->ps[cs->ps_head];
		int done = 0, rc = rw_net_test(p->req, &done, NULL);

		if (rc)
			return rw_coll_fail(r, rc, rw_coll_next(c), "sending to", p->pos.step,
					    p->pos.round);
		if (!done)
			break;
		if (p->free_slot >= 0)
			ring_free_slot(cs, p->free_slot);
		if (p->out_slot >= 0)
			cs->free_out[cs->nfree_out++] = p->out_slot;
		cs->ps_head = (cs->ps_head + 1) % RW_COLL_MAX_SENDS;
		cs->ps_n--;
		*progressed = true;
	}
	return 0;
}
