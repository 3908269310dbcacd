/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring collectives' state machine, one per channel, driven by the plan
 * (ring_plan.h).  This file holds a collective's life, the signature swap
 * and the progress loop; steps 1-2 below are ring_recv.c's, 3-4
 * ring_send.c's, and ring_chan.h the per-channel state they share.  Each
 * call to progress does, per channel, as much as it can without waiting:
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

#include "coll/ring_chan.h"
#include "common/rw_log.h"
#include "common/rw_nvtx.h"

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
	struct ring_state *st = ring_state_of(r);

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

/* --- the signature swap ------------------------------------------------------- */

static int sig_swap(struct rw_coll_req *r, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_state *st = ring_state_of(r);
	struct rw_coll_link *sl = &c->links[rw_link_send(0)], *rl = &c->links[rw_link_recv(0)];
	int tag = RW_COLL_TAG, done, rc;

	if (!st->sig_sposted) {
		memcpy(sl->ctl->buf, &r->sig, sizeof(r->sig));
		rc = rw_net_isend(sl->comm, sl->ctl->buf, sizeof(r->sig), RW_COLL_TAG, sl->ctl->mr,
				  &st->sig_sreq);
		if (rc)
			return rw_coll_fail(r, rc, rw_coll_next(c), "sending to", 0, 0);
		st->sig_sposted = st->sig_sreq != NULL;
		*progressed |= st->sig_sposted;
	}
	if (!st->sig_rposted) {
		void *data = rl->ctl->buf;
		size_t size = RW_COLL_CTL_BYTES;

		rc = rw_net_irecv(rl->comm, 1, &data, &size, &tag, &rl->ctl->mr, &st->sig_rreq);
		if (rc)
			return rw_coll_fail(r, rc, rw_coll_prev(c), "posting a receive from", 0, 0);
		st->sig_rposted = st->sig_rreq != NULL;
		*progressed |= st->sig_rposted;
	}
	if (st->sig_sposted && !st->sig_out) {
		done = 0;
		rc = rw_net_test(st->sig_sreq, &done, NULL);
		if (rc)
			return rw_coll_fail(r, rc, rw_coll_next(c), "sending to", 0, 0);
		st->sig_out = done;
		*progressed |= st->sig_out;
	}
	if (st->sig_rposted && !st->sig_in) {
		struct rw_coll_sig theirs = {0};
		size_t got = 0;

		done = 0;
		rc = rw_net_test(st->sig_rreq, &done, &got);
		if (rc)
			return rw_coll_fail(r, rc, rw_coll_prev(c), "receiving from", 0, 0);
		if (!done)
			return 0;
		if (got == sizeof(theirs))
			memcpy(&theirs, rl->ctl->buf, sizeof(theirs));
		if (!rw_coll_sig_same(&theirs, &r->sig))
			return rw_coll_fail_mismatch(r, rw_coll_prev(c), &theirs);
		st->sig_in = true;
		*progressed = true;
	}
	return 0;
}

/* --- the algorithm ops ---------------------------------------------------------- */

static int ring_progress(struct rw_coll_req *r, bool *progressed)
{
	struct rw_coll_comm *c = r->comm;
	struct ring_state *st = ring_state_of(r);
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
			rc = rw_ring_post_recvs(r, ch, &moved);
			if (!rc)
				rc = rw_ring_complete_recvs(r, ch, &moved);
			if (!rc)
				rc = rw_ring_post_sends(r, ch, &moved);
			if (!rc)
				rc = rw_ring_complete_sends(r, ch, &moved);
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
	const struct ring_state *st = ring_state_of(r);

	for (int ch = 0; ch < r->nch; ch++) {
		const struct ring_chan *cs = &st->ch[ch];

		if (cs->ps_n) {
			const struct pend_send *p = &cs->ps[cs->ps_head];

			*peer = rw_coll_next(c);
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

			*peer = rw_coll_prev(c);
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
