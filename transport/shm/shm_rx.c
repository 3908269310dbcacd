/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The receiver's side of a connection.  Messages are taken from the ring in
 * order; each goes to the oldest posted receive that has an unfilled buffer,
 * to its buffer with the message's tag: the sender matched it the same way
 * before it published it (shm_tx.c), so a message that matches no buffer,
 * or does not fit its buffer, is a protocol error that fails the comm.
 * Every message is acked, in order, once its bytes are in place.  When the
 * sender failed its comm, the messages it completed are still taken, then
 * this comm fails too.
 */
#include "transport/shm/shm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_log.h"
#include "gpu/rw_cuda.h"
#include "gpu/rw_cuda_ipc.h"

#define RX_BUDGET_BYTES (8u << 20) /* most bytes one progress call copies */

static_assert((4096 - RW_SHM_SLOT_HDR_BYTES) % RW_NET_SINK_ALIGN == 0,
	      "a slot's payload holds whole sink pieces");

static uint32_t payload_bytes(const struct rw_shm_comm *c)
{
	return c->d.slot_bytes - RW_SHM_SLOT_HDR_BYTES;
}

static int proto_error(struct rw_shm_comm *c, const char *what, const struct rw_shm_slot *s)
{
	char why[160];

	snprintf(why, sizeof(why),
		 "%s (slot %llu: kind %u, message %llu, offset %llu, %u of %llu bytes; expected "
		 "message %llu)",
		 what, (unsigned long long)c->d.head, s->kind, (unsigned long long)s->seq,
		 (unsigned long long)s->offset, s->len, (unsigned long long)s->size,
		 (unsigned long long)c->d.rx_seq);
	rw_shm_conn_fail(c, -EPROTO, why);
	return -EPROTO;
}

/* Give a consumed slot back to the sender at once (it may be waiting). */
static void consume_slot(struct rw_shm_comm *c)
{
	c->d.head++;
	__atomic_store_n(&c->d.seg->rx.head, c->d.head, __ATOMIC_RELEASE);
}

/* The current message is complete (or failed): settle its receive, ack. */
static void finish_message(struct rw_shm_comm *c)
{
	struct rw_shm_req *r = c->d.cur_req;
	int st = c->d.cur_err;

	if (!st && c->d.cur_land && c->d.cur_size) {
		const struct rw_shm_rbuf *b = &r->buf[c->d.cur_idx];

		st = b->sink->put(b->sink->arg, 0, b->data, (size_t)c->d.cur_size);
	}
	if (c->d.cur_idx >= 0)
		r->buf[c->d.cur_idx].got = st ? 0 : c->d.cur_size;
	if (st && !r->err)
		r->err = st;
	if (++r->nfinished == r->n) {
		r->done = true;
		rw_shm_queue_remove(c, r);
	}
	c->d.seg->ack[c->d.cur_seq % RW_SHM_ACK_RING] = st;
	c->d.acked++;
	__atomic_store_n(&c->d.seg->rx.acked, c->d.acked, __ATOMIC_RELEASE);
	c->d.rx = RW_SHM_RX_IDLE;
	c->d.cur_req = NULL;
	c->d.rx_seq++;
	if (st) { /* an error is final */
		char why[96];

		snprintf(why, sizeof(why), "message %llu (%llu bytes) could not be taken",
			 (unsigned long long)c->d.cur_seq, (unsigned long long)c->d.cur_size);
		rw_shm_conn_fail(c, st, why);
	}
}

/* Bytes [off, off + len) of the current message, at src, into its host
 * receive buffer or to its sink (a device buffer's are staged up). */
static int copy_in(const struct rw_shm_comm *c, struct rw_shm_rbuf *b, uint64_t off,
		   const void *src, size_t len)
{
	if (!len)
		return 0;
	if (b->sink && !c->d.cur_land)
		return b->sink->put(b->sink->arg, (size_t)off, src, len);
	memcpy(b->data + off, src, len);
	return 0;
}

/*
 * Bytes [off, off + len) of the current message, in the slot at head, into
 * its buffer: copied, or staged up to the device (shm_up.c) from where
 * c->d.cur_up says the last call stopped.  0 once all of them are (the
 * slot may be consumed), -EAGAIN when the pinned pieces are all in flight
 * (the slot stays: call again), or -errno (the message fails).
 */
static int take_bytes(struct rw_shm_comm *c, struct rw_shm_rbuf *b, uint64_t off, const char *src,
		      size_t len)
{
	int rc;

	if (b->type != RW_PTR_CUDA)
		return copy_in(c, b, off, src, len);
	rc = rw_shm_up_stage(c, b->data + off, src, len, &c->d.cur_up);
	if (rc != -EAGAIN)
		c->d.cur_up = 0;
	return rc;
}

/* Every byte of the current message is in, or on its way up to the device
 * (which the drain waits for): finish it, or drain first. */
static void message_in(struct rw_shm_comm *c)
{
	if (c->d.cur_idx >= 0 && c->d.cur_req->buf[c->d.cur_idx].type == RW_PTR_CUDA)
		c->d.rx = RW_SHM_RX_DRAIN;
	else
		finish_message(c);
}

/* The oldest receive still owed a message, or NULL. */
static struct rw_shm_req *oldest_receive(struct rw_shm_comm *c)
{
	for (struct rw_shm_req *r = c->d.q_head; r; r = r->next) {
		if (r->nmatched < r->n)
			return r;
	}
	return NULL;
}

/* The buffer of r that takes a message with tag, or -1. */
static int match_tag(const struct rw_shm_req *r, int tag)
{
	for (int i = 0; i < r->n; i++) {
		if (!r->buf[i].matched && r->buf[i].tag == tag)
			return i;
	}
	return -1;
}

static void tags_str(const struct rw_shm_req *r, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < r->n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%d", i ? "," : "", r->buf[i].tag);

		used += w > 0 ? (size_t)w : 0;
	}
}

/* One fragment of the current message, in the slot at head. */
static int take_fragment(struct rw_shm_comm *c, const struct rw_shm_slot *slot)
{
	struct rw_shm_slot h = *slot; /* the peer could rewrite the slot */
	int rc;

	if (h.kind != RW_SHM_SLOT_FRAG || h.seq != c->d.cur_seq || h.offset != c->d.cur_off ||
	    h.len == 0 || h.len > payload_bytes(c) || h.offset + h.len > c->d.cur_size)
		return proto_error(c, "fragment out of order", &h);
	/* every fragment but the last fills its slot (a sink relies on it) */
	if (h.len != payload_bytes(c) && h.offset + h.len != c->d.cur_size)
		return proto_error(c, "short fragment inside a message", &h);
	if (!c->d.cur_err) {
		rc = take_bytes(c, &c->d.cur_req->buf[c->d.cur_idx], h.offset,
				rw_shm_slot_payload((struct rw_shm_slot *)slot), h.len);
		if (rc == -EAGAIN)
			return 0; /* the rest of this slot at the next call */
		if (rc)
			c->d.cur_err = rc;
	}
	c->d.cur_off += h.len;
	consume_slot(c);
	if (c->d.cur_off == c->d.cur_size)
		message_in(c);
	return (int)h.len;
}

/*
 * The sender's allocations this receiver has opened (CUDA IPC), most
 * recently used first.  A handle names one allocation for its life, so an
 * entry never goes stale, but an allocation the sender frees stays mapped
 * here, and its memory with it, until the entry goes: so at most
 * RW_SHM_IPC_KEPT are kept, and the least recently used one is closed
 * for a new one.  It is in no copy then: a message's copy ends before the
 * next message starts (RW_SHM_RX_CUDA).
 */
static int ipc_lookup(struct rw_shm_comm *c, const struct rw_shm_cuda_desc *d,
		      struct rw_shm_ipc_cache **out)
{
	struct rw_shm_ipc_cache *e, **link, **last = NULL;
	struct rw_cuda_ipc_handle h;
	int rc, n = 0;

	for (link = &c->d.ipc; (e = *link); link = &e->next, n++) {
		if (memcmp(e->handle, d->handle, sizeof(e->handle)) == 0) {
			*link = e->next; /* to the front */
			e->next = c->d.ipc;
			c->d.ipc = e;
			*out = e;
			return 0;
		}
		last = link;
	}
	if (n >= RW_SHM_IPC_KEPT && last) {
		e = *last;
		*last = NULL;
		rw_cuda_ipc_close(e->base);
		free(e);
		rw_shm_stat_add(&rw_shm_stats_g.ipc_evicted, 1);
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	memcpy(h.bytes, d->handle, sizeof(h.bytes));
	rc = rw_cuda_ipc_open(&h, (void **)&e->base, &e->size);
	if (rc) {
		free(e);
		return rc;
	}
	memcpy(e->handle, d->handle, sizeof(e->handle));
	e->next = c->d.ipc;
	c->d.ipc = e;
	*out = e;
	return 0;
}

/* Start a CUDA IPC copy of the current message.  0, or -errno (message fails). */
static int start_cuda(struct rw_shm_comm *c, const struct rw_shm_slot *slot)
{
	struct rw_shm_rbuf *b = &c->d.cur_req->buf[c->d.cur_idx];
	struct rw_shm_cuda_desc d;
	struct rw_shm_ipc_cache *e;
	int rc;

	memcpy(&d, rw_shm_slot_payload((struct rw_shm_slot *)slot), sizeof(d));
	rc = ipc_lookup(c, &d, &e);
	if (rc == 0 && (d.offset > e->size || c->d.cur_size > e->size - d.offset)) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: message %llu from %s: %llu bytes at offset %llu leave the %zu-byte "
			"CUDA allocation",
			(unsigned long long)c->d.cur_seq, c->peer,
			(unsigned long long)c->d.cur_size, (unsigned long long)d.offset, e->size);
		rc = -EPROTO;
	}
	if (rc == 0 && !c->d.stream)
		rc = rw_cuda_stream_create(&c->d.stream);
	if (rc == 0 && !c->d.event)
		rc = rw_cuda_event_create(&c->d.event);
	if (rc == 0)
		rc = rw_cuda_memcpy_async(b->data, e->base + d.offset, (size_t)c->d.cur_size,
					  c->d.stream);
	if (rc == 0)
		rc = rw_cuda_event_record(c->d.event, c->d.stream);
	if (rc)
		return rc;
	c->d.rx = RW_SHM_RX_CUDA;
	return 0;
}

/* Start a CMA job of the current message.  0, or -errno (message fails). */
static int start_cma(struct rw_shm_comm *c, const struct rw_shm_slot *h)
{
	struct rw_shm_rbuf *b = &c->d.cur_req->buf[c->d.cur_idx];
	bool device = b->type == RW_PTR_CUDA;

	if (!c->d.cma)
		return -EPROTO; /* we never told the sender it could */
	/* into device memory the sender does not help: we read each chunk
	 * into a pinned piece, then copy it up (shm_up.c) */
	c->d.cur_src = h->addr;
	rw_shm_cma_job_start(c, h->seq, h->addr, b->data, h->size, !device);
	c->d.rx = RW_SHM_RX_CMA;
	return 0;
}

/* The inline message in the slot at head, whose header start_message
 * checked: its bytes into the buffer (perhaps over several calls, when it
 * is staged up to a device), then the slot is consumed.  Bytes taken. */
static int take_inline(struct rw_shm_comm *c)
{
	const struct rw_shm_slot *slot = rw_shm_slot_at(c, c->d.head);
	uint32_t len = (uint32_t)c->d.cur_size;
	int rc;

	if (!c->d.cur_err) {
		rc = take_bytes(c, &c->d.cur_req->buf[c->d.cur_idx], 0,
				(const char *)slot + rw_shm_inline_off(len), len);
		if (rc == -EAGAIN)
			return 0;
		c->d.cur_err = rc;
	}
	consume_slot(c);
	message_in(c);
	return (int)RW_MAX(len, 1u);
}

/*
 * The slot at head starts a message.  \return bytes taken (> 0, or 1 for a
 * descriptor), 0 when no receive is posted for it yet, or -EPROTO.
 */
static int start_message(struct rw_shm_comm *c)
{
	struct rw_shm_slot *slot = rw_shm_slot_at(c, c->d.head);
	struct rw_shm_slot h = *slot;
	struct rw_shm_rbuf *b = NULL;
	struct rw_shm_req *r;
	char tags[96];
	int idx, rc = 0;

	if (h.seq != c->d.rx_seq)
		return proto_error(c, "message out of order", &h);
	r = oldest_receive(c);
	if (!r)
		return 0;
	idx = match_tag(r, h.tag);
	if (idx < 0) {
		char why[200];

		tags_str(r, tags, sizeof(tags));
		snprintf(why, sizeof(why),
			 "message %llu of %llu bytes with tag %d matches no free buffer of the "
			 "oldest receive (tags %s): the sender broke the matching rule",
			 (unsigned long long)h.seq, (unsigned long long)h.size, h.tag, tags);
		rw_shm_conn_fail(c, -EPROTO, why);
		return -EPROTO;
	}
	b = &r->buf[idx];
	if (h.size > b->cap) {
		char why[200];

		snprintf(why, sizeof(why),
			 "message %llu of %llu bytes with tag %d does not fit buffer %d (%zu "
			 "bytes)",
			 (unsigned long long)h.seq, (unsigned long long)h.size, h.tag, idx, b->cap);
		rw_shm_conn_fail(c, -EMSGSIZE, why);
		return -EMSGSIZE;
	}
	r->nmatched++;
	b->matched = true;
	c->d.cur_req = r;
	c->d.cur_idx = idx;
	c->d.cur_seq = h.seq;
	c->d.cur_size = h.size;
	c->d.cur_off = 0;
	c->d.cur_err = 0;
	/* a sink takes an inline message and the fragments straight from the
	 * slots (each but the last fills its slot: a multiple of
	 * RW_NET_SINK_ALIGN, since rw_shm_seg_check() holds slot_bytes to
	 * pages); a CMA or CUDA message lands in the buffer first */
	c->d.cur_land = b->sink && h.kind != RW_SHM_SLOT_INLINE && h.kind != RW_SHM_SLOT_FRAG;
	switch (h.kind) {
	case RW_SHM_SLOT_INLINE:
		if (h.len != h.size || h.len > payload_bytes(c))
			return proto_error(c, "bad inline message", &h);
		c->d.rx = RW_SHM_RX_UP;
		rc = take_inline(c);
		return rc ? rc : 1; /* matched: progress either way */
	case RW_SHM_SLOT_FRAG:
		if (h.offset != 0 || h.size <= payload_bytes(c))
			return proto_error(c, "bad first fragment", &h);
		c->d.rx = RW_SHM_RX_FRAG;
		return take_fragment(c, slot);
	case RW_SHM_SLOT_CMA:
		consume_slot(c);
		if (!c->d.cur_err && h.size)
			rc = start_cma(c, &h);
		break;
	case RW_SHM_SLOT_CUDA:
		if (h.len != sizeof(struct rw_shm_cuda_desc))
			return proto_error(c, "bad CUDA descriptor", &h);
		if (!c->d.cur_err && h.size)
			rc = start_cuda(c, slot);
		consume_slot(c);
		break;
	default:
		return proto_error(c, "unknown slot kind", &h);
	}
	if (rc && !c->d.cur_err)
		c->d.cur_err = rc;
	if (c->d.rx == RW_SHM_RX_IDLE)
		finish_message(c); /* failed, or empty */
	return 1;
}

static bool peer_failed(struct rw_shm_comm *c);

/*
 * A message copied out of the sender's own memory (CMA, CUDA IPC) is whole
 * only if the sender had not failed it meanwhile: once it has, its caller
 * may reuse that memory while our copy still read it.  So the failure word
 * is read again after the copy (the fence keeps the copy's reads before
 * it); a failure at or before this message fails it (and the comm).
 */
static bool copied_from_a_failed_sender(struct rw_shm_comm *c)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return peer_failed(c);
}

/* Drive the current message.  \return bytes moved (> 0), 0 if waiting. */
static long continue_message(struct rw_shm_comm *c)
{
	long n;
	int err = 0, rc;

	switch (c->d.rx) {
	case RW_SHM_RX_FRAG:
		if (!rw_shm_slot_ready(c, c->d.head))
			return 0;
		return take_fragment(c, rw_shm_slot_at(c, c->d.head));
	case RW_SHM_RX_CMA:
		n = rw_shm_cma_work(c);
		if (n > 0)
			rw_shm_stat_add(&rw_shm_stats_g.cma_read, n);
		if (n == -ESRCH) {
			rw_shm_conn_fail(c, -ECONNRESET, "the sender exited during a copy");
			return -ECONNRESET;
		}
		if (!rw_shm_cma_job_done(c, &err))
			return n > 0 ? n : 0;
		if (err == -ESRCH) {
			rw_shm_conn_fail(c, -ECONNRESET, "the sender exited during a copy");
			return -ECONNRESET;
		}
		if (err && !c->d.cur_err)
			c->d.cur_err = err;
		if (copied_from_a_failed_sender(c))
			return c->fail;
		message_in(c);
		return RW_MAX(n, 1);
	case RW_SHM_RX_UP:
		return take_inline(c);
	case RW_SHM_RX_CUDA:  /* the IPC copy's event */
	case RW_SHM_RX_DRAIN: /* the pieces staged up */
		rc = c->d.rx == RW_SHM_RX_CUDA ? rw_cuda_event_query(c->d.event)
					       : rw_shm_up_reap(c);
		if (rc == -EAGAIN)
			return 0;
		if (rc && !c->d.cur_err)
			c->d.cur_err = rc;
		if (c->d.rx == RW_SHM_RX_CUDA && copied_from_a_failed_sender(c))
			return c->fail;
		finish_message(c);
		return 1;
	default:
		return 0;
	}
}

/*
 * The sender failed its comm: the messages before failed_seq it completed,
 * so they are still taken; at failed_seq this comm fails too.  \return
 * true once it failed.
 */
static bool peer_failed(struct rw_shm_comm *c)
{
	int st = __atomic_load_n(&c->d.seg->tx.failed, __ATOMIC_ACQUIRE);
	uint64_t upto, next;
	char why[160];

	if (!st)
		return false;
	upto = __atomic_load_n(&c->d.seg->tx.failed_seq, __ATOMIC_RELAXED);
	next = c->d.rx == RW_SHM_RX_IDLE ? c->d.rx_seq : c->d.cur_seq;
	if (next < upto)
		return false;
	if (st == -EMSGSIZE)
		snprintf(why, sizeof(why),
			 "the sender's message %llu is larger than the buffer it matched",
			 (unsigned long long)upto);
	else
		snprintf(why, sizeof(why), "the sender failed the connection (%s)",
			 strerror(st < 0 && st > -4096 ? -st : EPROTO));
	rw_shm_conn_fail(c, st == -EMSGSIZE || st == -EPROTO ? st : -ECONNRESET, why);
	return true;
}

int rw_shm_rx_progress(struct rw_shm_comm *c, uint64_t now)
{
	struct rw_shm_data *d = &c->d;
	uint64_t acked0 = d->acked, head0 = d->head;
	unsigned long moved = 0;

	if (c->fail)
		return 0;
	while (moved < RX_BUDGET_BYTES && !peer_failed(c)) {
		long n;

		if (d->rx == RW_SHM_RX_IDLE) {
			if (!rw_shm_slot_ready(c, d->head))
				break;
			n = start_message(c);
		} else {
			n = continue_message(c);
		}
		if (n <= 0)
			break;
		moved += (unsigned long)n;
	}
	if (moved || d->acked != acked0 || d->head != head0 || c->fail) {
		rw_shm_ring(c);
		if (moved > RW_SHM_CLOCK_BYTES)
			now = rw_shm_now(c, true);
		rw_shm_comm_moved(c, now);
		return 1;
	}
	return 0;
}

/* Tell the sender about receive r (shm_layout.h: posted receives). */
static void post(struct rw_shm_comm *c, const struct rw_shm_req *r)
{
	struct rw_shm_post *p = &c->d.post[c->d.posted % RW_SHM_POST_RING];
	struct rw_shm_post e = {.n = (uint32_t)r->n | (r->buf[0].sink ? RW_SHM_POST_SLOTS : 0),
				.seq = c->d.posted};
	size_t len = r->n <= 2 ? RW_SHM_CACHELINE : sizeof(e);

	for (int i = 0; i < r->n; i++) {
		e.tag[i] = r->buf[i].tag;
		e.size[i] = r->buf[i].cap;
	}
	/* everything but the stamp, which the sender polls: it stays old until
	 * the entry is whole (no plain store to a word read concurrently) */
	p->n = e.n;
	memcpy(&p->seq, &e.seq, len - offsetof(struct rw_shm_post, seq));
	__atomic_store_n(&p->stamp, (uint32_t)(c->d.posted + 1), __ATOMIC_RELEASE);
	c->d.posted++;
	__atomic_store_n(&c->d.seg->rx.posted, c->d.posted, __ATOMIC_RELEASE);
}

static int irecv(struct rw_net_comm *comm, int n, void **data, const size_t *sizes, const int *tags,
		 struct rw_net_mr **mrs, const struct rw_net_sink *sink, struct rw_net_req **req)
{
	struct rw_shm_comm *c;
	struct rw_shm_req *r;
	uint64_t now;
	int rc = rw_shm_comm_check(comm, RW_SHM_RECV_MAGIC, sink ? "irecv_sink" : "irecv", &c);

	if (rc)
		return rc;
	if (!req || n < 1 || n > RW_NET_MAX_RECVS || !data || !sizes || !tags || !mrs) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: irecv(n=%d, data=%p, sizes=%p, tags=%p, mrs=%p, req=%p) from %s: bad "
			"arguments (n must be 1..%d)",
			n, (void *)data, (const void *)sizes, (const void *)tags, (void *)mrs,
			(void *)req, c->peer, RW_NET_MAX_RECVS);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		struct rw_shm_mr *m = mrs[i] ? rw_shm_mr_from(mrs[i]) : NULL;

		if (sizes[i] > rw_shm_comm_net(c)->props.max_p2p_bytes) {
			RW_WARN(RW_LOG_NET | RW_LOG_SHM,
				"shm: irecv buffer %d of %zu bytes from %s: larger than the %zu "
				"bytes one message may have (maxP2pBytes); refused",
				i, sizes[i], c->peer, rw_shm_comm_net(c)->props.max_p2p_bytes);
			return -EMSGSIZE;
		}

		if (!m || rw_obj_check(&m->obj, RW_SHM_MR_MAGIC) || mrs[i]->comm != comm ||
		    (sizes[i] && (!data[i] || (char *)data[i] < m->addr ||
				  (char *)data[i] + sizes[i] > m->addr + m->size))) {
			RW_WARN(RW_LOG_NET | RW_LOG_SHM,
				"shm: irecv buffer %d (%p, %zu bytes, mr %p) from %s: not in a "
				"registration of this comm",
				i, data[i], sizes[i], (void *)mrs[i], c->peer);
			return -EINVAL;
		}
		if (sink && m->type != RW_PTR_HOST) {
			RW_WARN(RW_LOG_NET | RW_LOG_SHM,
				"shm: irecv_sink buffer %p from %s: device memory; a sink takes "
				"host buffers only",
				data[i], c->peer);
			return -EINVAL;
		}
	}
	if (c->fail)
		return c->fail;
	/* a peer that closed or failed makes this call fail, not the next test */
	now = rw_shm_now(c, true);
	rw_shm_rx_progress(c, now);
	if (rw_shm_check_peer(c, now, now, "a receive"))
		return c->fail;
	if (c->d.posted - c->d.seen_replayed >= RW_SHM_POST_RING) /* read only when full */
		c->d.seen_replayed = __atomic_load_n(&c->d.seg->tx.replayed, __ATOMIC_ACQUIRE);
	if (c->d.posted - c->d.seen_replayed >= RW_SHM_POST_RING ||
	    !(r = rw_shm_req_get(c, RW_SHM_REQ_RECV))) {
		*req = NULL; /* no room: the sender has yet to catch up */
		return 0;
	}
	r->n = n;
	for (int i = 0; i < n; i++) {
		r->buf[i] = (struct rw_shm_rbuf){
			.data = data[i],
			.cap = sizes[i],
			.tag = tags[i],
			.type = rw_shm_mr_from(mrs[i])->type,
			.sink = sink,
		};
	}
	post(c, r);
	r->posted_ns = now;
	rw_shm_queue_push(c, r);
	/* a sender waiting to learn its messages' fate: rung here, or by the
	 * progress when it took a message for this receive */
	if (!rw_shm_rx_progress(c, now))
		rw_shm_ring(c);
	*req = &r->base;
	return 0;
}

int rw_shm_irecv(struct rw_net_comm *comm, int n, void **data, const size_t *sizes, const int *tags,
		 struct rw_net_mr **mrs, struct rw_net_req **req)
{
	return irecv(comm, n, data, sizes, tags, mrs, NULL, req);
}

int rw_shm_irecv_sink(struct rw_net_comm *comm, void *data, size_t size, int tag,
		      struct rw_net_mr *mr, const struct rw_net_sink *sink, struct rw_net_req **req)
{
	if (!sink || !sink->put) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: irecv_sink(%p, %zu bytes): no sink function",
			data, size);
		return -EINVAL;
	}
	return irecv(comm, 1, &data, &size, &tag, &mr, sink, req);
}
