/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The send side, calling thread's part: the receives the peer posted
 * (struct rw_sock_post, read from stream 0), matching, and stream 0's queue.
 *
 * isend takes a message only when it can be matched, as NCCL's IB transport
 * does: the oldest receive of the peer not yet filled must have a free
 * buffer with the message's tag (the first such buffer is taken).  Until
 * then isend answers "not now" (*req == NULL) and NCCL tries again; no
 * message is taken ahead of the receive it belongs to, so receives fill in
 * posting order.  When nothing can be matched for RINGWAY_TIMEOUT_MS while
 * the caller keeps trying and nothing moves, the comm fails -ETIMEDOUT.
 *
 * A send comm set to send ahead (rw_net_ahead) matches nothing: its peer
 * posts nothing, every receive has one buffer, so message k goes out at
 * once to receive k, and the receiver checks it (sock_proto.h).
 *
 * A message larger than the buffer it matched is refused: its request fails
 * -EMSGSIZE at its first test, and only its header (RW_SOCK_MSG_TRUNC)
 * goes out, so that the receiver fails the same way.  From then on the comm
 * answers every call with -EMSGSIZE; its connection ends once that header
 * is out (at once, if a request still moving bytes is tested before).
 *
 * Stream 0 carries every header, small messages (< min_stripe) whole and
 * slice 0 of striped ones: isend queues them and writes what the kernel
 * takes at once (several per sendmsg), test writes the rest.  Slices j > 0
 * go to helper j (sock_stream.c).  Sends complete once the kernel has all
 * their bytes.  No logging here but for errors, each reported once.
 */
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "transport/socket/sock_internal.h"

static bool again(ssize_t n)
{
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static void tags_str(const int32_t *tags, const bool *used, int n, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && at < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%d%s", i ? "," : "", tags[i],
				 used[i] ? "(filled)" : "");

		at += w > 0 ? (size_t)w : 0;
	}
}

/* Bytes of this comm still on their way into the kernel? */
static bool tx_busy(struct rw_sock_data *d)
{
	if (d->tx.q0_head != d->tx.q0_tail)
		return true;
	for (int i = 1; i < d->nstreams; i++)
		if (!rw_sock_stream_idle(&d->streams[i]))
			return true;
	return false;
}

/* A refused send comes first: the peer resets the connection because of it
 * (it fails on the TRUNC header), so a reset seen afterwards by a helper
 * still writing an earlier message is its consequence, not a new error. */
int rw_sock_tx_error(struct rw_sock_comm *c)
{
	int err = atomic_load_explicit(&c->d->err, memory_order_acquire);

	return c->d->tx.refused ? c->d->tx.refused : err;
}

/* --- the peer's posts ------------------------------------------------------ */

/* Check one post from the peer and queue it.  0 or -errno. */
static int post_take(struct rw_sock_comm *c, const struct rw_sock_post *p)
{
	struct rw_sock_tx *tx = &c->d->tx;
	struct rw_sock_rpost *rp;

	if (c->ahead)
		return rw_sock_comm_fail(c, -EPROTO,
					 "stream 0: the peer posted receive #%u, but this comm "
					 "sends ahead: its receiving end was not set so",
					 p->seq);
	if (p->marker != RW_SOCK_MSG_MARKER || p->kind != RW_SOCK_MSG_POST || p->n < 1 ||
	    p->n > RW_SOCK_MAX_RECVS || p->seq != tx->post_seq)
		return rw_sock_comm_fail(c, -EPROTO,
					 "stream 0: expected the post of receive #%u, got marker "
					 "0x%04x, kind %u, %u buffer(s), number %u",
					 tx->post_seq, p->marker, p->kind, p->n, p->seq);
	if (tx->r_tail - tx->r_head >= RW_SOCK_MAX_REQS)
		return rw_sock_comm_fail(
			c, -EPROTO,
			"stream 0: receive #%u posted with %d receives unfilled already", p->seq,
			RW_SOCK_MAX_REQS);
	rp = &tx->posts[tx->r_tail % RW_SOCK_MAX_REQS];
	rp->seq = p->seq;
	rp->n = p->n;
	rp->left = p->n;
	for (int i = 0; i < p->n; i++) {
		if (p->sizes[i] > RW_SOCK_MAX_BYTES)
			return rw_sock_comm_fail(
				c, -EPROTO,
				"stream 0: buffer %d of receive #%u has %llu bytes (at most %llu)",
				i, p->seq, (unsigned long long)p->sizes[i], RW_SOCK_MAX_BYTES);
		rp->tags[i] = p->tags[i];
		rp->caps[i] = p->sizes[i];
		rp->used[i] = false;
	}
	tx->r_tail++;
	tx->post_seq++;
	return 0;
}

/* Read the posts that arrived.  A close by the receiver is fine while
 * nothing is going out; the next isend fails.  0 or -errno. */
static int posts_read(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_tx *tx = &d->tx;

	while (!tx->peer_closed) {
		size_t room = sizeof(tx->in) - tx->in_len, off = 0;
		ssize_t n = recv(d->streams[0].fd, tx->in + tx->in_len, room, MSG_DONTWAIT);

		if (n > 0) {
			tx->in_len += (size_t)n;
			rw_sock_progress(d);
			while (tx->in_len - off >= sizeof(struct rw_sock_post)) {
				struct rw_sock_post p;
				int rc;

				memcpy(&p, tx->in + off, sizeof(p));
				off += sizeof(p);
				rc = post_take(c, &p);
				if (rc)
					return rc;
			}
			memmove(tx->in, tx->in + off, tx->in_len - off);
			tx->in_len -= off;
			if ((size_t)n < room)
				return 0; /* drained: spare the call that says so */
			continue;
		}
		if (again(n))
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rw_sock_comm_fail(c, -errno, "stream 0: recv failed");
		if (tx_busy(d))
			return rw_sock_comm_fail(
				c, -ECONNRESET,
				"the peer closed the connection with sends under way");
		tx->peer_closed = true;
	}
	return 0;
}

/* --- stream 0's queue ------------------------------------------------------- */

/* The connection is gone: let go of what stream 0 still had. */
static void q0_drop(struct rw_sock_tx *tx)
{
	for (; tx->q0_head != tx->q0_tail; tx->q0_head++) {
		struct rw_sock_op *op = &tx->q0[tx->q0_head % RW_SOCK_MAX_REQS];

		if (!op->req)
			continue;
		atomic_store_explicit(&op->req->cut, true, memory_order_relaxed);
		atomic_fetch_sub_explicit(&op->req->parts, 1, memory_order_relaxed);
	}
}

/* Write what the kernel takes of stream 0's queue, several pieces per
 * sendmsg.  0 or -errno. */
static int tx_pump(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_tx *tx = &d->tx;
	int err = atomic_load_explicit(&d->err, memory_order_acquire);

	if (err) {
		q0_drop(tx);
		return err;
	}
	while (tx->q0_head != tx->q0_tail) {
		struct iovec iov[2 * RW_SOCK_TX_BATCH];
		struct msghdr m = {.msg_iov = iov};
		ssize_t n;

		/* up to two pieces per op: stop while two slots are left */
		for (unsigned i = tx->q0_head;
		     i != tx->q0_tail && m.msg_iovlen + 2 <= RW_ARRAY_SIZE(iov); i++) {
			struct rw_sock_op *op = &tx->q0[i % RW_SOCK_MAX_REQS];

			if (op->hdr_done < op->hdr_len)
				iov[m.msg_iovlen++] =
					(struct iovec){(char *)&op->hdr + op->hdr_done,
						       op->hdr_len - op->hdr_done};
			if (op->done < op->len)
				iov[m.msg_iovlen++] =
					(struct iovec){op->buf + op->done, op->len - op->done};
		}
		n = sendmsg(d->streams[0].fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (again(n))
			return 0;
		if (n <= 0) {
			err = rw_sock_comm_fail(c, n < 0 ? -errno : -EPIPE,
						"stream 0: sendmsg failed");
			q0_drop(tx);
			return err;
		}
		rw_sock_progress(d);
		/* account the bytes, piece by piece */
		while (n > 0) {
			struct rw_sock_op *op = &tx->q0[tx->q0_head % RW_SOCK_MAX_REQS];
			size_t h = RW_MIN((size_t)n, (size_t)(op->hdr_len - op->hdr_done));
			size_t b = RW_MIN((size_t)n - h, op->len - op->done);

			op->hdr_done += (uint32_t)h;
			op->done += b;
			n -= (ssize_t)(h + b);
			if (op->hdr_done == op->hdr_len && op->done == op->len) {
				if (op->req)
					atomic_fetch_sub_explicit(&op->req->parts, 1,
								  memory_order_relaxed);
				tx->q0_head++;
			}
		}
	}
	return 0;
}

int rw_sock_tx_progress(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	int rc = tx_pump(c);

	if (!rc)
		rc = posts_read(c);
	/* a refused send's header is out, and all before it: end here */
	if (!rc && d->tx.refused && !tx_busy(d))
		rc = rw_sock_comm_abort(c, d->tx.refused);
	return rc && !d->tx.refused ? rc : rw_sock_tx_error(c);
}

/* Queue a message: its header and first slice (all of it when eager) on
 * stream 0, the other slices for the helpers. */
static int tx_queue(struct rw_sock_comm *c, struct rw_sock_req *r, const struct rw_sock_msg_hdr *h)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_tx *tx = &d->tx;
	unsigned n = h->kind == RW_SOCK_MSG_STRIPED ? (unsigned)d->nstreams : 1;
	int parts = 1;

	if (n > 1) {
		int rc = rw_sock_streams_start(c);

		if (rc)
			return rc;
	}
	for (unsigned j = 1; j < n; j++) {
		uint64_t off, len;

		rw_sock_stripe(r->size, n, j, &off, &len);
		parts += len != 0;
	}
	atomic_store_explicit(&r->parts, parts, memory_order_relaxed);
	for (unsigned j = 0; j < n; j++) {
		struct rw_sock_op op = {.req = r};
		uint64_t off = 0, len = r->size;

		if (n > 1)
			rw_sock_stripe(r->size, n, j, &off, &len);
		op.buf = (char *)r->data + off;
		op.len = len;
		if (j == 0) {
			op.hdr = *h;
			op.hdr_len = sizeof(*h);
			tx->q0[tx->q0_tail % RW_SOCK_MAX_REQS] = op;
			tx->q0_tail++;
		} else if (len) {
			rw_sock_stream_push(&d->streams[j], &op);
		}
	}
	return 0;
}

/* --- isend ------------------------------------------------------------------- */

/* Nothing to match the message with (p: the oldest receive not yet filled,
 * or NULL): "not now", or -ETIMEDOUT once the caller has been trying for
 * RINGWAY_TIMEOUT_MS with nothing moving. */
static int tx_wait(struct rw_sock_comm *c, const struct rw_sock_rpost *p, size_t size, int tag,
		   struct rw_net_req **req)
{
	struct rw_sock_tx *tx = &c->d->tx;
	uint64_t now = rw_now_ms(), last;
	char tags[160];

	/* a caller that paused longer than the timeout starts a new wait */
	if (!tx->wait_ms || now - tx->wait_last_ms >= (uint64_t)c->timeout_ms)
		tx->wait_ms = now;
	tx->wait_last_ms = now;
	last = RW_MAX(tx->wait_ms, atomic_load_explicit(&c->d->progress_ms, memory_order_relaxed));
	if (now < last || now - last < (uint64_t)c->timeout_ms) {
		/* no yield here: NCCL's proxy answers "not now" by progressing
		 * its other sub-connections (as with ncclIbIsend); idle waiting
		 * is test()'s business */
		*req = NULL;
		return 0;
	}
	if (!p)
		return rw_sock_comm_fail(c, -ETIMEDOUT,
					 "the peer posted no receive for %lld ms (message #%u, %zu "
					 "bytes, tag %d, waits)",
					 (long long)c->timeout_ms, tx->seq, size, tag);
	tags_str(p->tags, p->used, p->n, tags, sizeof(tags));
	return rw_sock_comm_fail(c, -ETIMEDOUT,
				 "for %lld ms no free buffer of the peer's receive #%u (tags %s) "
				 "took message #%u (%zu bytes, tag %d)",
				 (long long)c->timeout_ms, p->seq, tags, tx->seq, size, tag);
}

/* The oldest receive not yet filled (NULL: none posted), and in *i its
 * first free buffer with that tag (-1: none). */
static struct rw_sock_rpost *head_match(struct rw_sock_tx *tx, int tag, int *i)
{
	struct rw_sock_rpost *p;

	*i = -1;
	if (tx->r_head == tx->r_tail)
		return NULL;
	p = &tx->posts[tx->r_head % RW_SOCK_MAX_REQS];
	for (int k = 0; k < p->n; k++) {
		if (!p->used[k] && p->tags[k] == tag) {
			*i = k;
			break;
		}
	}
	return p;
}

int rw_sock_isend(struct rw_net_comm *comm, void *data, size_t size, int tag, struct rw_net_mr *mr,
		  struct rw_net_req **req)
{
	struct rw_sock_comm *c;
	struct rw_sock_data *d;
	struct rw_sock_tx *tx;
	struct rw_sock_rpost *p, ahead;
	struct rw_sock_req *r;
	struct rw_sock_msg_hdr h;
	bool striped;
	int i, rc = rw_sock_data_comm(comm, RW_SOCK_SEND_MAGIC, "isend", &c);

	if (rc)
		return rc;
	if (!req || (!data && size)) {
		RW_WARN(RW_LOG_NET, "socket: isend(data=%p, size=%zu, req=%p) to %s: bad arguments",
			data, size, (void *)req, c->peer);
		return -EINVAL;
	}
	if (size > RW_SOCK_MAX_BYTES) {
		RW_WARN(RW_LOG_NET,
			"socket: isend of %zu bytes (tag %d) to %s: larger than max_p2p_bytes "
			"(%llu); refused, nothing sent",
			size, tag, c->peer, RW_SOCK_MAX_BYTES);
		return -EMSGSIZE;
	}
	rc = rw_sock_mr_check(c, mr, data, size, "isend");
	if (rc)
		return rc;
	d = c->d;
	tx = &d->tx;
	if (rw_sock_tx_error(c))
		return rw_sock_tx_progress(c); /* logged where it was found */
	if (tx->peer_closed)
		return rw_sock_comm_fail(c, -ECONNRESET, "the peer closed the connection");
	/* Read the peer's posts only when the head one takes nothing: a
	 * message that matches costs one system call, as with plain TCP.
	 * Sending ahead, there are none: message k fills receive k. */
	if (c->ahead) {
		ahead = (struct rw_sock_rpost){.seq = tx->seq,
					       .n = 1,
					       .left = 1,
					       .tags = {tag},
					       .caps = {RW_SOCK_MAX_BYTES}};
		p = &ahead;
		i = 0;
	} else {
		p = head_match(tx, tag, &i);
	}
	if (i < 0) {
		rc = rw_sock_tx_progress(c);
		if (!rc && tx->peer_closed)
			rc = rw_sock_comm_fail(c, -ECONNRESET, "the peer closed the connection");
		if (rc)
			return rc;
		p = head_match(tx, tag, &i);
		if (i < 0)
			return tx_wait(c, p, size, tag, req);
	}
	tx->wait_ms = 0;
	striped = size >= c->min_stripe && d->nstreams > 1 && size <= p->caps[i];
	if (c->reqs.used >= RW_SOCK_MAX_REQS || tx->q0_tail - tx->q0_head >= RW_SOCK_MAX_REQS ||
	    (striped && !rw_sock_stripe_room(d, size))) {
		*req = NULL; /* no room now: NCCL tries again */
		return 0;
	}
	r = rw_sock_req_alloc(c);
	if (!r) {
		*req = NULL;
		return 0;
	}
	r->kind = RW_SOCK_REQ_SEND;
	r->data = data;
	r->size = size;
	r->tag = tag;
	r->seq = tx->seq;
	h = (struct rw_sock_msg_hdr){.marker = RW_SOCK_MSG_MARKER,
				     .kind = striped ? RW_SOCK_MSG_STRIPED : RW_SOCK_MSG_EAGER,
				     .index = (uint8_t)i,
				     .tag = tag,
				     .size = size,
				     .recv = p->seq};
	if (size > p->caps[i]) {
		RW_WARN(RW_LOG_NET,
			"socket: send comm to %s: message #%u (tag %d, %zu bytes) is larger than "
			"buffer %d (%llu bytes) of the peer's receive #%u; refused, the connection "
			"fails",
			c->peer, tx->seq, tag, size, i, (unsigned long long)p->caps[i], p->seq);
		h.kind = RW_SOCK_MSG_TRUNC;
		r->err = -EMSGSIZE;
		tx->refused = -EMSGSIZE;
		tx->q0[tx->q0_tail % RW_SOCK_MAX_REQS] =
			(struct rw_sock_op){.hdr = h, .hdr_len = sizeof(h)};
		tx->q0_tail++;
	} else {
		rc = tx_queue(c, r, &h);
		if (rc) {
			rw_sock_req_free(c, r);
			return rc;
		}
	}
	p->used[i] = true;
	if (--p->left == 0 && !c->ahead)
		tx->r_head++;
	tx->seq++;
	/* write what the kernel takes now; a failure shows in test */
	if (!tx_pump(c) && tx->refused && !tx_busy(d))
		rw_sock_comm_abort(c, tx->refused);
	RW_TRACE(RW_LOG_NET, "socket: isend %zu bytes tag %d to %s into receive #%u/%d (%s)", size,
		 tag, c->peer, p->seq, i, striped ? "striped" : "eager");
	*req = &r->base;
	return 0;
}
