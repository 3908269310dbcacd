/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sender's side of a connection: isend takes a message only when a
 * posted receive takes it (NCCL's IB rule: the oldest receive with a free
 * buffer, the buffer with the send's tag; otherwise "not now", *req NULL),
 * queues it and publishes what fits at once; progress publishes the rest,
 * helps the receiver with a cross-memory-attach job of ours, and completes
 * sends the receiver acked.
 *
 * A message goes out as one of (chosen when its first slot is written):
 *   INLINE  the message fits one slot's payload;
 *   CMA     host memory of at least RINGWAY_SHM_CMA_MIN bytes, when the
 *           receiver can read our memory and its receive does not take
 *           the message from the slots (RW_SHM_POST_SLOTS, a sink): one
 *           descriptor slot;
 *   CUDA    device memory: one descriptor slot with the IPC handle;
 *   FRAG    otherwise: pieces of one slot payload each, pipelined.
 * A message through the slots completes once it is out; one the receiver
 * copies from our buffer (CMA, CUDA) when acked, with the status acked.  A
 * send larger than its buffer is known at isend: it fails, and the
 * connection with it on both sides (shm_layout.h, "Failure").
 */
#include "transport/shm/shm_internal.h"

#include <stdio.h>
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
	bool cma_size = cfg->shm_cma && r->size >= cfg->shm_cma_min && !r->slots_only;

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

/* The slot at tail is whole: stamp it (the receiver polls the stamp). */
static void slot_end(struct rw_shm_comm *c, struct rw_shm_slot *s)
{
	__atomic_store_n(&s->stamp, (uint32_t)(c->d.tail + 1), __ATOMIC_RELEASE);
	c->d.tail++;
}

/*
 * Free slots: the head seen last tells, and the receiver's head line is
 * read again only when that leaves fewer than want (a message that fits
 * costs no read of a line the receiver writes on every message).
 */
static uint32_t free_slot_count(struct rw_shm_comm *c, uint32_t want)
{
	struct rw_shm_data *d = &c->d;
	uint32_t n = d->nslots - (uint32_t)(d->tail - d->seen_head);

	if (n < want) {
		d->seen_head = __atomic_load_n(&d->seg->rx.head, __ATOMIC_ACQUIRE);
		n = d->nslots - (uint32_t)(d->tail - d->seen_head);
	}
	return n;
}

/*
 * Publish what fits of r into free slots.  \return slots written; *stall
 * is set when r could not be finished now (ring full, or mode unknown).
 */
static uint32_t publish(struct rw_shm_comm *c, struct rw_shm_req *r, bool *stall)
{
	uint32_t written = 0, free_slots;
	struct rw_shm_slot *s;

	if (!r->mode)
		r->mode = choose_mode(c, r);
	if (!r->mode) {
		*stall = true;
		return 0;
	}
	/* a message over several slots takes all it can: its pipeline */
	free_slots = free_slot_count(c, r->mode == RW_SHM_SLOT_FRAG ? c->d.nslots : 1);
	if (!free_slots) {
		*stall = true;
		return 0;
	}
	switch (r->mode) {
	case RW_SHM_SLOT_INLINE:
		s = slot_begin(c, r, RW_SHM_SLOT_INLINE);
		s->len = (uint32_t)r->size;
		if (r->size)
			memcpy((char *)s + rw_shm_inline_off(r->size), r->data, r->size);
		c->d.copied += r->size;
		slot_end(c, s);
		written = 1;
		break;
	case RW_SHM_SLOT_CMA:
		s = slot_begin(c, r, RW_SHM_SLOT_CMA);
		s->addr = (uint64_t)(uintptr_t)r->data;
		slot_end(c, s);
		c->d.await_ack++;
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
		slot_end(c, s);
		c->d.await_ack++;
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
			c->d.copied += len;
			/* the receiver starts on this piece while we copy the next */
			slot_end(c, s);
			written++;
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
 * Complete the sends that are over: one that went through the slots once
 * it is out (the receive it goes to was known when isend took it); one the
 * receiver copies from our buffer (CMA, CUDA) once acked, with the ack's
 * status.
 */
static int complete_sends(struct rw_shm_comm *c)
{
	struct rw_shm_data *d = &c->d;
	uint64_t acked = d->seen_acked;
	struct rw_shm_req *r, *next;
	int moved = 0;

	if (d->await_ack) { /* the acks matter only to these */
		acked = __atomic_load_n(&d->seg->rx.acked, __ATOMIC_ACQUIRE);
		moved = acked != d->seen_acked;
		d->seen_acked = acked;
	}
	for (r = d->q_head; r && r->published; r = next) {
		next = r->next;
		if (r->mode == RW_SHM_SLOT_CMA || r->mode == RW_SHM_SLOT_CUDA) {
			int st;

			if (r->seq >= acked)
				continue;
			st = d->seg->ack[r->seq % RW_SHM_ACK_RING];
			r->err = st > 0 || st < -4095 ? -EPROTO : st;
			d->await_ack--;
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
	uint64_t claim;
	int moved;
	long n;

	if (!c->d.await_ack)
		return 0; /* no job of ours can run */
	claim = __atomic_load_n(&c->d.seg->job.claim, __ATOMIC_ACQUIRE);
	moved = claim != c->d.seen_claim;
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

/* The receiver failed its comm: what was acked stays done, the rest fails. */
static bool peer_failed(struct rw_shm_comm *c)
{
	int st = __atomic_load_n(&c->d.seg->rx.failed, __ATOMIC_ACQUIRE);
	char why[96];

	if (!st)
		return false;
	complete_sends(c);
	snprintf(why, sizeof(why), "the receiver failed the connection (%s)",
		 strerror(st < 0 && st > -4096 ? -st : EPROTO));
	rw_shm_conn_fail(c, st == -EMSGSIZE || st == -EPROTO ? st : -ECONNRESET, why);
	return true;
}

int rw_shm_tx_progress(struct rw_shm_comm *c, uint64_t now)
{
	struct rw_shm_data *d = &c->d;
	uint64_t tail0 = d->tail, head0 = d->seen_head;
	int moved = 0;
	bool stall = false;

	if (c->fail)
		return 0;
	if (!d->accepted) {
		if (rw_shm_poll_reply(c))
			return 0;
		moved = d->accepted;
	}
	if (peer_failed(c))
		return 1;
	if (d->accepted && help_cma(c))
		moved = 1;
	for (struct rw_shm_req *r = d->q_head; r && !stall; r = r->next) {
		if (!r->published)
			publish(c, r, &stall);
	}
	moved |= d->seen_head != head0; /* slots the receiver gave back */
	if (d->tail != tail0) {
		__atomic_store_n(&d->seg->tx.tail, d->tail, __ATOMIC_RELEASE);
		moved = 1;
	}
	moved |= complete_sends(c);
	if (moved) {
		rw_shm_ring(c);
		if (d->copied > RW_SHM_CLOCK_BYTES)
			now = rw_shm_now(c, true);
		rw_shm_comm_moved(c, now);
	}
	d->copied = 0;
	return moved;
}

/*
 * NCCL's IB rule (p2p.cc, ncclIbIsend): the send goes to the oldest posted
 * receive that still has a free buffer, and only to a free buffer of that
 * receive with its tag.  \return the buffer's index, -1 when there is none
 * now (receive not posted yet, or its buffers with this tag are taken),
 * or -EPROTO (the comm failed: a garbled post entry).
 */
static int match(struct rw_shm_comm *c, int tag, struct rw_shm_post *e, uint32_t *flags)
{
	struct rw_shm_data *d = &c->d;
	const struct rw_shm_post *p = &d->post[d->post_cur % RW_SHM_POST_RING];

	if (!rw_shm_post_ready(c, d->post_cur))
		return -1;
	/* up to two buffers, the entry's first line holds all we read */
	memcpy(e, p, RW_SHM_CACHELINE);
	*flags = e->n & ~RW_SHM_POST_N_MASK;
	e->n &= RW_SHM_POST_N_MASK;
	if (e->n > 2)
		memcpy(&e->tag, &p->tag, sizeof(*e) - offsetof(struct rw_shm_post, tag));
	if (e->n < 1 || e->n > RW_SHM_MAX_RECVS || e->seq != d->post_cur ||
	    (*flags & ~RW_SHM_POST_SLOTS)) {
		rw_shm_conn_fail(c, -EPROTO, "a posted receive is garbled");
		return -EPROTO;
	}
	for (int i = 0; i < (int)e->n; i++) {
		if (!(d->post_used & (1u << i)) && e->tag[i] == tag)
			return i;
	}
	return -1;
}

/* Buffer i of the current posted receive is taken. */
static void take(struct rw_shm_comm *c, const struct rw_shm_post *e, int i)
{
	struct rw_shm_data *d = &c->d;

	d->post_used |= 1u << i;
	if (++d->post_taken == (int)e->n) {
		d->post_cur++;
		d->post_used = 0;
		d->post_taken = 0;
		__atomic_store_n(&d->seg->tx.replayed, d->post_cur, __ATOMIC_RELEASE);
	}
}

/*
 * isend found no buffer for tag: the caller will try again.  Retrying is
 * still a wait on the peer, so it is bounded: a peer that closed or exited
 * fails the comm now, one that posts nothing taking the send for
 * RINGWAY_TIMEOUT_MS (nothing moving) fails it then.  The clock starts at
 * the first "not now" of a run of retries.
 */
static int isend_wait(struct rw_shm_comm *c, uint64_t now, int tag, size_t size)
{
	struct rw_shm_data *d = &c->d;
	uint64_t limit = (uint64_t)c->base.net->cfg.timeout_ms * 1000000ull;
	char what[96];

	if (!d->wait_since_ns || now - d->wait_last_ns > limit)
		d->wait_since_ns = now;
	d->wait_last_ns = now;
	if (now - c->last_check_ns >= RW_SHM_CHECK_NS) { /* check_peer's own pace */
		snprintf(what, sizeof(what),
			 "an isend of %zu bytes with tag %d waiting for its receive", size, tag);
		if (rw_shm_check_peer(c, now, d->wait_since_ns, what))
			return c->fail;
	}
	/* never sleep here: NCCL's proxy answers a NULL isend by progressing
	 * its other sub-connections, one of which may hold the send this
	 * receive waits for (the replay's random run: 0.45 ms per retry when
	 * this slept like test()).  Idle waiting is test()'s business. */
	return 0;
}

/* The send is larger than its buffer: it fails, and so does the connection
 * on both sides (the receiver learns it from our failure word). */
static void refuse_oversize(struct rw_shm_comm *c, struct rw_shm_req *r,
			    const struct rw_shm_post *e, int i)
{
	char why[200];

	snprintf(why, sizeof(why),
		 "send of %zu bytes with tag %d is larger than buffer %d (%llu bytes) of the "
		 "peer's receive #%llu",
		 r->size, r->tag, i, (unsigned long long)e->size[i], (unsigned long long)e->seq);
	r->err = -EMSGSIZE;
	r->done = true;
	rw_shm_conn_fail(c, -EMSGSIZE, why);
}

int rw_shm_isend(struct rw_net_comm *comm, void *data, size_t size, int tag, struct rw_net_mr *mr,
		 struct rw_net_req **req)
{
	struct rw_shm_comm *c;
	struct rw_shm_mr *m = mr ? rw_shm_mr_from(mr) : NULL;
	struct rw_shm_post e;
	struct rw_shm_req *r;
	uint64_t now;
	uint32_t flags = 0;
	int rc = rw_shm_comm_check(comm, RW_SHM_SEND_MAGIC, "isend", &c), i;

	if (rc)
		return rc;
	if (req && size > rw_shm_comm_net(c)->props.max_p2p_bytes) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: isend of %zu bytes (tag %d) to %s: larger than the %zu bytes one "
			"message may have (maxP2pBytes); refused",
			size, tag, c->peer, rw_shm_comm_net(c)->props.max_p2p_bytes);
		return -EMSGSIZE;
	}
	if (!req || !m || rw_obj_check(&m->obj, RW_SHM_MR_MAGIC) || mr->comm != comm ||
	    (size && !data) ||
	    (size && ((char *)data < m->addr || (char *)data + size > m->addr + m->size)) ||
	    (m->type == RW_PTR_CUDA && !m->exported)) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: isend(%p, %zu bytes, tag %d, mr %p) to %s: bad arguments (the data "
			"must lie in a registration of this comm)",
			data, size, tag, (void *)mr, c->peer);
		return -EINVAL;
	}
	if (c->fail)
		return c->fail;
	/* a caller retrying a "not now" answers from the poll loop's clock;
	 * the first try (the start of its wait) and the send that goes out
	 * (posted_ns) read it fresh */
	now = rw_shm_now(c, !c->d.wait_since_ns);
	/* sends still queued move first (a caller retrying a "not now" may
	 * wait on them); with none, the new one goes out below */
	if (!c->d.accepted || c->d.q_head || peer_failed(c))
		rw_shm_tx_progress(c, now);
	if (c->fail)
		return c->fail;
	i = match(c, tag, &e, &flags);
	if (i == -EPROTO)
		return c->fail;
	if (i < 0 || !(r = rw_shm_req_get(c, RW_SHM_REQ_SEND))) {
		*req = NULL;
		return isend_wait(c, now, tag, size);
	}
	if (c->d.wait_since_ns) {
		c->d.wait_since_ns = 0;
		now = rw_shm_now(c, true);
	}
	r->data = data;
	r->size = size;
	r->tag = tag;
	r->mr = m;
	r->type = m->type;
	r->slots_only = flags & RW_SHM_POST_SLOTS;
	r->posted_ns = now;
	take(c, &e, i);
	if (size > e.size[i]) {
		refuse_oversize(c, r, &e, i);
		*req = &r->base;
		return 0;
	}
	r->seq = c->d.next_seq++;
	rw_shm_queue_push(c, r);
	rw_shm_tx_progress(c, now);
	*req = &r->base;
	return 0;
}
