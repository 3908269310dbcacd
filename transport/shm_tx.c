/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sender's side of a connection: isend queues a message and publishes
 * what fits at once; progress publishes the rest, helps the receiver with a
 * cross-memory-attach job of ours, and completes sends the receiver acked.
 *
 * A message goes out as one of (chosen when its first slot is written):
 *   INLINE  the message fits one slot's payload;
 *   CMA     host memory of at least RINGWAY_SHM_CMA_MIN bytes, when the
 *           receiver can read our memory: one descriptor slot;
 *   CUDA    device memory: one descriptor slot with the IPC handle;
 *   FRAG    otherwise: pieces of one slot payload each, pipelined.
 * A send completes when the receiver acked it, with the status it acked, so
 * a message that did not fit fails on both sides.
 */
#include "transport/shm_internal.h"

#include <string.h>

#include "common/rw_log.h"

static uint32_t payload_bytes(const struct rw_shm_comm *c)
{
	return c->d.slot_bytes - RW_SHM_SLOT_HDR_BYTES;
}

/* Pick how r goes out.  0 when it cannot be decided yet (no reply). */
static uint32_t choose_mode(struct rw_shm_comm *c, struct rw_shm_req *r)
{
	const struct rw_config *cfg = &c->base.net->cfg;
	bool cma_size = cfg->shm_cma && r->size >= cfg->shm_cma_min;

	if (r->type == RW_PTR_CUDA)
		return RW_SHM_SLOT_CUDA;
	if (cma_size && !c->d.accepted)
		return 0; /* whether the receiver can read us is in the reply */
	if (cma_size && c->d.cma)
		return RW_SHM_SLOT_CMA;
	return r->size <= payload_bytes(c) ? RW_SHM_SLOT_INLINE : RW_SHM_SLOT_FRAG;
}

static struct rw_shm_slot *slot_begin(struct rw_shm_comm *c, struct rw_shm_req *r, uint32_t kind)
{
	struct rw_shm_slot *s = rw_shm_slot_at(c, c->d.tail);

	s->kind = kind;
	s->tag = r->tag;
	s->size = r->size;
	s->seq = r->seq;
	s->offset = 0;
	s->len = 0;
	s->addr = 0;
	return s;
}

/*
 * Publish what fits of r into free slots.  \return slots written; *stall
 * is set when r could not be finished now (ring full, or mode unknown).
 */
static uint32_t publish(struct rw_shm_comm *c, struct rw_shm_req *r, uint64_t head, bool *stall)
{
	uint32_t written = 0, free_slots = c->d.nslots - (uint32_t)(c->d.tail - head);
	struct rw_shm_slot *s;

	if (!r->mode)
		r->mode = choose_mode(c, r);
	if (!r->mode || !free_slots) {
		*stall = true;
		return 0;
	}
	switch (r->mode) {
	case RW_SHM_SLOT_INLINE:
		s = slot_begin(c, r, RW_SHM_SLOT_INLINE);
		s->len = (uint32_t)r->size;
		if (r->size)
			memcpy(rw_shm_slot_payload(s), r->data, r->size);
		c->d.tail++;
		written = 1;
		break;
	case RW_SHM_SLOT_CMA:
		s = slot_begin(c, r, RW_SHM_SLOT_CMA);
		s->addr = (uint64_t)(uintptr_t)r->data;
		c->d.tail++;
		written = 1;
		break;
	case RW_SHM_SLOT_CUDA: {
		struct rw_shm_cuda_desc d = {
			.offset = r->mr->ipc_offset + (uint64_t)(r->data - r->mr->addr),
		};

		memcpy(d.handle, r->mr->ipc, sizeof(d.handle));
		s = slot_begin(c, r, RW_SHM_SLOT_CUDA);
		s->len = sizeof(d);
		memcpy(rw_shm_slot_payload(s), &d, sizeof(d));
		c->d.tail++;
		written = 1;
		break;
	}
	default: /* FRAG */
		while (written < free_slots && r->sent < r->size) {
			size_t len = RW_MIN((size_t)payload_bytes(c), r->size - r->sent);

			s = slot_begin(c, r, RW_SHM_SLOT_FRAG);
			s->offset = r->sent;
			s->len = (uint32_t)len;
			memcpy(rw_shm_slot_payload(s), r->data + r->sent, len);
			r->sent += len;
			c->d.tail++;
			written++;
			/* let the receiver start on this piece while we copy the next */
			__atomic_store_n(&c->d.seg->tx.tail, c->d.tail, __ATOMIC_RELEASE);
		}
		if (r->sent < r->size) {
			*stall = true;
			return written;
		}
		break;
	}
	r->published = true;
	rw_shm_stat_add(r->mode == RW_SHM_SLOT_INLINE ? &rw_shm_stats_g.msgs_inline
			: r->mode == RW_SHM_SLOT_CMA  ? &rw_shm_stats_g.msgs_cma
			: r->mode == RW_SHM_SLOT_CUDA ? &rw_shm_stats_g.msgs_cuda
						      : &rw_shm_stats_g.msgs_frag,
			1);
	return written;
}

/*
 * Replay the receiver's matching for the messages whose receive is posted:
 * message after message, the oldest receive still owed one, the buffer with
 * the message's tag.  The result is what the receiver will do with it.
 */
static int resolve(struct rw_shm_comm *c)
{
	struct rw_shm_data *d = &c->d;
	uint64_t posted = __atomic_load_n(&d->seg->rx.posted, __ATOMIC_ACQUIRE);
	int moved = posted != d->seen_posted;

	d->seen_posted = posted;
	for (struct rw_shm_req *r = d->q_head; r; r = r->next) {
		struct rw_shm_post e;
		int i;

		if (r->resolved)
			continue;
		if (d->post_cur >= posted)
			break; /* its receive is not posted yet */
		memcpy(&e, &d->post[d->post_cur % RW_SHM_POST_RING], sizeof(e));
		if (e.n < 1 || e.n > RW_SHM_MAX_RECVS || e.seq != d->post_cur) {
			rw_shm_conn_fail(c, -EPROTO, "a posted receive is garbled");
			return moved;
		}
		for (i = 0; i < (int)e.n; i++) {
			if (!(d->post_used & (1u << i)) && e.tag[i] == r->tag)
				break;
		}
		if (i == (int)e.n) {
			r->rstatus = -ENOMSG;
			RW_WARN(RW_LOG_NET | RW_LOG_SHM,
				"shm: send comm to %s: send of %zu bytes with tag %d matches no "
				"buffer of the peer's receive #%llu; the peer drops it",
				c->peer, r->size, r->tag, (unsigned long long)e.seq);
		} else {
			d->post_used |= 1u << i;
			r->rstatus = r->size > e.size[i] ? -EMSGSIZE : 0;
			if (r->rstatus)
				RW_WARN(RW_LOG_NET | RW_LOG_SHM,
					"shm: send comm to %s: send of %zu bytes with tag %d is "
					"larger than the peer's buffer %d of receive #%llu (%llu "
					"bytes); the peer drops it",
					c->peer, r->size, r->tag, i, (unsigned long long)e.seq,
					(unsigned long long)e.size[i]);
		}
		r->resolved = true;
		moved = 1;
		if (++d->post_taken == (int)e.n) {
			d->post_cur++;
			d->post_used = 0;
			d->post_taken = 0;
			__atomic_store_n(&d->seg->tx.replayed, d->post_cur, __ATOMIC_RELEASE);
		}
	}
	return moved;
}

/*
 * Complete the sends that are over: a message that went through the slots
 * once it is out and resolved (our buffer is free, its fate known); one the
 * receiver copies from our buffer (CMA, CUDA) once acked, with the ack's
 * status.
 */
static int complete_sends(struct rw_shm_comm *c)
{
	struct rw_shm_data *d = &c->d;
	uint64_t acked = __atomic_load_n(&d->seg->rx.acked, __ATOMIC_ACQUIRE);
	struct rw_shm_req *r, *next;
	int moved = acked != d->seen_acked;

	d->seen_acked = acked;
	for (r = d->q_head; r && r->published; r = next) {
		next = r->next;
		/* never leave the queue unresolved: the replay walks the queue */
		if (!r->resolved)
			break;
		if (r->mode == RW_SHM_SLOT_INLINE || r->mode == RW_SHM_SLOT_FRAG) {
			r->err = r->rstatus;
		} else {
			int st;

			if (r->seq >= acked)
				continue;
			st = d->seg->ack[r->seq % RW_SHM_ACK_RING];
			r->err = st > 0 || st < -4095 ? -EPROTO : st;
		}
		r->done = true;
		rw_shm_queue_remove(c, r);
		moved = 1;
	}
	return moved;
}

/* Help with a CMA job of ours; counts what the receiver did as progress. */
static int help_cma(struct rw_shm_comm *c)
{
	uint64_t claim = __atomic_load_n(&c->d.seg->job.claim, __ATOMIC_ACQUIRE);
	int moved = claim != c->d.seen_claim;
	long n;

	c->d.seen_claim = claim;
	if (!c->d.coop)
		return moved;
	n = rw_shm_cma_work(c);
	if (n > 0) {
		rw_shm_stat_add(&rw_shm_stats_g.cma_written, n);
		c->d.seen_claim = __atomic_load_n(&c->d.seg->job.claim, __ATOMIC_ACQUIRE);
		moved = 1;
	}
	return moved;
}

int rw_shm_tx_progress(struct rw_shm_comm *c, uint64_t now)
{
	struct rw_shm_data *d = &c->d;
	uint64_t head, tail0 = d->tail;
	int moved = 0;
	bool stall = false;

	if (c->fail)
		return 0;
	if (!d->accepted) {
		if (rw_shm_poll_reply(c))
			return 0;
		moved = d->accepted;
	}
	moved |= resolve(c);
	if (c->fail)
		return 0;
	if (d->accepted && help_cma(c))
		moved = 1;
	head = __atomic_load_n(&d->seg->rx.head, __ATOMIC_ACQUIRE);
	moved |= head != d->seen_head;
	d->seen_head = head;
	for (struct rw_shm_req *r = d->q_head; r && !stall; r = r->next) {
		if (!r->published)
			publish(c, r, head, &stall);
	}
	if (d->tail != tail0) {
		__atomic_store_n(&d->seg->tx.tail, d->tail, __ATOMIC_RELEASE);
		moved = 1;
	}
	moved |= complete_sends(c);
	if (moved) {
		rw_shm_ring(c);
		rw_shm_comm_moved(c, now);
	}
	return moved;
}

int rw_shm_isend(struct rw_net_comm *comm, void *data, size_t size, int tag, struct rw_net_mr *mr,
		 struct rw_net_req **req)
{
	struct rw_shm_comm *c;
	struct rw_shm_mr *m = mr ? rw_shm_mr_from(mr) : NULL;
	struct rw_shm_req *r;
	int rc = rw_shm_comm_check(comm, RW_SHM_SEND_MAGIC, "isend", &c);

	if (rc)
		return rc;
	if (!req || !m || m->magic != RW_SHM_MR_MAGIC || mr->comm != comm || (size && !data) ||
	    (size && ((char *)data < m->addr || (char *)data + size > m->addr + m->size)) ||
	    (m->type == RW_PTR_CUDA && !m->exported)) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: isend(%p, %zu bytes, tag %d, mr %p) to %s: bad arguments (the data "
			"must "
			"lie in a registration of this comm)",
			data, size, tag, (void *)mr, c->peer);
		return -EINVAL;
	}
	if (c->fail)
		return c->fail;
	r = rw_shm_req_get(c, RW_SHM_REQ_SEND);
	if (!r) {
		*req = NULL;
		return 0;
	}
	r->data = data;
	r->size = size;
	r->tag = tag;
	r->mr = m;
	r->type = m->type;
	r->seq = c->d.next_seq++;
	r->posted_ns = rw_now_ns();
	rw_shm_queue_push(c, r);
	rw_shm_tx_progress(c, r->posted_ns);
	*req = &r->base;
	return 0;
}
