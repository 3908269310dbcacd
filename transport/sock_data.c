/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path, calling thread's side: isend, irecv, test, iflush.
 *
 * Stream 0 is this thread's: every message's header, small messages
 * (< min_stripe) whole, and slice 0 of striped ones.  isend queues them and
 * writes what the kernel takes at once (several per sendmsg); test writes
 * the rest.  The receiver reads headers and payloads with non-blocking recv
 * calls, small ones through a read-ahead buffer, large ones straight into
 * the user's buffer.  Slice j > 0 of a striped message goes to helper j
 * (sock_stream.c), which sleeps in blocking calls.
 *
 * Sends are eager and complete once the kernel has all their bytes.  The
 * receiver checks each header against the buffer its tag picks; a message
 * that does not fit is dropped (never an overrun), the receive fails with
 * -EMSGSIZE, and a nack tells the sender, which fails its send comm with
 * the same error (the send, if still under way, or its next call).  A
 * message whose tag no buffer takes goes the same way with -ENOMSG.  No
 * per-message traffic flows back otherwise, so a small message costs one
 * write and one read, like plain TCP.  No logging here but for errors,
 * each reported once.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "common/rw_nvtx.h"
#include "transport/sock_internal.h"

static int comm_check(struct rw_net_comm *comm, uint32_t magic, const char *call,
		      struct rw_sock_comm **out)
{
	struct rw_sock_comm *c;

	if (!comm)
		return -EINVAL;
	c = rw_sock_comm_from(comm);
	if (c->magic == magic) {
		*out = c;
		return 0;
	}
	if (c->magic == RW_SOCK_DEAD_MAGIC) {
		RW_WARN(RW_LOG_NET, "socket: %s on a closed comm (peer %s)", call, c->peer);
		return -EBADF;
	}
	RW_WARN(RW_LOG_NET, "socket: %s on a %s", call,
		c->magic == RW_SOCK_SEND_MAGIC || c->magic == RW_SOCK_RECV_MAGIC
			? "comm of the other direction" : "foreign object");
	return -EINVAL;
}

static void tags_str(const struct rw_sock_entry *e, int n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%d", i ? "," : "", e[i].tag);

		used += w > 0 ? (size_t)w : 0;
	}
}

static bool again(ssize_t n)
{
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* --- send side ----------------------------------------------------------- */

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

/* The receiver dropped a message: from now on every send call on this comm
 * fails with the same error.  The streams stay in step (the receiver drains
 * what was sent), so helpers finish what they have.  Returns the error. */
static int nack_handle(struct rw_sock_comm *c, const struct rw_sock_nack *k)
{
	struct rw_sock_tx *tx = &c->d->tx;

	if (k->marker != RW_SOCK_MSG_MARKER || k->kind != RW_SOCK_MSG_NACK)
		return rw_sock_comm_fail(c, -EPROTO,
			"stream 0: not a nack from the receiver (marker 0x%04x, kind %u)",
			k->marker, k->kind);
	tx->in_len = 0;
	if (tx->nack_err)
		return tx->nack_err;
	if (k->reason == RW_SOCK_NACK_TOO_BIG) {
		RW_WARN(RW_LOG_NET,
			"socket: send comm to %s: the peer dropped message #%u (tag %d, %llu bytes): larger than the %llu-byte buffer of its receive #%u",
			c->peer, k->seq, k->tag, (unsigned long long)k->size,
			(unsigned long long)k->cap, k->recv);
		tx->nack_err = -EMSGSIZE;
	} else {
		RW_WARN(RW_LOG_NET,
			"socket: send comm to %s: the peer dropped message #%u (tag %d, %llu bytes): no buffer of its receive #%u takes that tag",
			c->peer, k->seq, k->tag, (unsigned long long)k->size, k->recv);
		tx->nack_err = -ENOMSG;
	}
	return tx->nack_err;
}

/* Read what came back from the receiver: nothing, or a nack (which fails
 * the comm).  0 or -errno. */
static int tx_progress(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_tx *tx = &d->tx;
	int rc = atomic_load_explicit(&d->err, memory_order_acquire);

	if (rc)
		return rc;
	while (!tx->peer_closed && !tx->nack_err) {
		ssize_t n = recv(d->streams[0].fd, tx->in + tx->in_len,
				 sizeof(tx->in) - tx->in_len, MSG_DONTWAIT);

		if (n > 0) {
			tx->in_len += (size_t)n;
			if (tx->in_len == sizeof(tx->in)) {
				struct rw_sock_nack k;

				memcpy(&k, tx->in, sizeof(k));
				return nack_handle(c, &k);
			}
			continue;
		}
		if (again(n))
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rw_sock_comm_fail(c, -errno, "stream 0: recv failed");
		/* The receiver closed.  Fine unless bytes are still going out;
		 * a later send fails. */
		if (tx_busy(d))
			return rw_sock_comm_fail(c, -ECONNRESET,
				"the peer closed the connection with sends under way");
		tx->peer_closed = true;
	}
	return tx->nack_err;
}

/*
 * Write what the kernel takes of stream 0's queue: headers, eager messages
 * and slice 0 of striped ones, several per sendmsg.  0 or -errno.
 */
static int tx_pump(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_tx *tx = &d->tx;
	int err = atomic_load_explicit(&d->err, memory_order_acquire);

	if (err) {
		/* the connection is gone: let go of what was still queued */
		for (; tx->q0_head != tx->q0_tail; tx->q0_head++)
			atomic_fetch_sub_explicit(&tx->q0[tx->q0_head % RW_SOCK_MAX_REQS].req->parts,
						  1, memory_order_relaxed);
		return err;
	}
	while (tx->q0_head != tx->q0_tail) {
		struct iovec iov[2 * RW_SOCK_TX_BATCH];
		struct msghdr m = { .msg_iov = iov };
		ssize_t n;

		for (unsigned i = tx->q0_head; i != tx->q0_tail &&
		     m.msg_iovlen < RW_ARRAY_SIZE(iov); i++) {
			struct rw_sock_op *op = &tx->q0[i % RW_SOCK_MAX_REQS];

			if (op->hdr_done < op->hdr_len)
				iov[m.msg_iovlen++] = (struct iovec){
					(char *)&op->hdr + op->hdr_done,
					op->hdr_len - op->hdr_done };
			if (op->done < op->len)
				iov[m.msg_iovlen++] = (struct iovec){ op->buf + op->done,
								      op->len - op->done };
		}
		n = sendmsg(d->streams[0].fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (again(n))
			return 0;
		if (n <= 0)
			return rw_sock_comm_fail(c, n < 0 ? -errno : -EPIPE,
						 "stream 0: sendmsg failed");
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
				atomic_fetch_sub_explicit(&op->req->parts, 1,
							  memory_order_relaxed);
				tx->q0_head++;
			}
		}
	}
	return 0;
}

/* Queue a message: its header and first slice (all of it when eager) on
 * stream 0, the other slices for the helpers. */
static int tx_queue(struct rw_sock_comm *c, struct rw_sock_req *r,
		    const struct rw_sock_msg_hdr *h)
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
		struct rw_sock_op op = { .req = r };
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

int rw_sock_isend(struct rw_net_comm *comm, void *data, size_t size, int tag,
		  struct rw_net_mr *mr, struct rw_net_req **req)
{
	struct rw_sock_comm *c;
	struct rw_sock_data *d;
	struct rw_sock_tx *tx;
	struct rw_sock_req *r;
	struct rw_sock_msg_hdr h;
	bool striped;
	int rc = comm_check(comm, RW_SOCK_SEND_MAGIC, "isend", &c);

	if (rc)
		return rc;
	if (!req || (!data && size) || size > RW_SOCK_MAX_BYTES) {
		RW_WARN(RW_LOG_NET, "socket: isend(data=%p, size=%zu, req=%p) to %s: bad arguments",
			data, size, (void *)req, c->peer);
		return -EINVAL;
	}
	rc = rw_sock_mr_check(c, mr, data, size, "isend");
	if (rc)
		return rc;
	d = c->d;
	tx = &d->tx;
	/* State found by earlier calls; nacks are read after writing, so no
	 * system call comes before this message's bytes. */
	rc = atomic_load_explicit(&d->err, memory_order_acquire);
	if (!rc)
		rc = tx->nack_err;
	if (!rc && tx->peer_closed)
		rc = rw_sock_comm_fail(c, -ECONNRESET, "the peer closed the connection");
	if (rc)
		return rc; /* logged where it was found */
	striped = size >= c->min_stripe && d->nstreams > 1;
	if (d->nreqs >= RW_SOCK_MAX_REQS || tx->q0_tail - tx->q0_head >= RW_SOCK_MAX_REQS ||
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
	h = (struct rw_sock_msg_hdr){ .marker = RW_SOCK_MSG_MARKER,
				      .kind = striped ? RW_SOCK_MSG_STRIPED
						      : RW_SOCK_MSG_EAGER,
				      .tag = tag, .size = size };
	rc = tx_queue(c, r, &h);
	if (rc) {
		rw_sock_req_free(c, r);
		return rc;
	}
	tx->seq++; /* numbered like the receiver counts them */
	if (!tx_pump(c)) /* a failure shows in test */
		tx_progress(c);
	RW_TRACE(RW_LOG_NET, "socket: isend %zu bytes tag %d to %s (%s)", size, tag,
		 c->peer, striped ? "striped" : "eager");
	*req = &r->base;
	return 0;
}

/* --- receive side ---------------------------------------------------------- */

static int nack_flush(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_rx *rx = &d->rx;

	while (rx->out_pos < rx->out_len) {
		ssize_t n = send(d->streams[0].fd, rx->out + rx->out_pos,
				 rx->out_len - rx->out_pos, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			rx->out_pos += (size_t)n;
			continue;
		}
		if (again(n))
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return rw_sock_comm_fail(c, n < 0 ? -errno : -EPIPE,
					 "stream 0: telling the peer a message was dropped");
	}
	rx->out_pos = rx->out_len = 0;
	return 0;
}

/* Room for one more nack?  (The sender reads them as it goes; if it does
 * not, headers wait.) */
static bool nack_room(struct rw_sock_comm *c)
{
	struct rw_sock_rx *rx = &c->d->rx;

	if (sizeof(rx->out) - rx->out_len >= sizeof(struct rw_sock_nack))
		return true;
	if (rx->out_pos) {
		memmove(rx->out, rx->out + rx->out_pos, rx->out_len - rx->out_pos);
		rx->out_len -= rx->out_pos;
		rx->out_pos = 0;
	}
	return sizeof(rx->out) - rx->out_len >= sizeof(struct rw_sock_nack);
}

static void nack_queue(struct rw_sock_comm *c, const struct rw_sock_nack *k)
{
	struct rw_sock_rx *rx = &c->d->rx;

	memcpy(rx->out + rx->out_len, k, sizeof(*k));
	rx->out_len += sizeof(*k);
	nack_flush(c); /* a failure shows in test */
}

/* At least want bytes in rx->buf[pos..len)?  DONE, AGAIN or -errno. */
static int rx_fill(struct rw_sock_comm *c, size_t want)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_rx *rx = &d->rx;

	while (rx->len - rx->pos < want) {
		ssize_t n;

		if (rx->pos == rx->len) {
			rx->pos = rx->len = 0;
		} else if (rx->pos && sizeof(rx->buf) - rx->len < want) {
			memmove(rx->buf, rx->buf + rx->pos, rx->len - rx->pos);
			rx->len -= rx->pos;
			rx->pos = 0;
		}
		n = recv(d->streams[0].fd, rx->buf + rx->len, sizeof(rx->buf) - rx->len,
			 MSG_DONTWAIT);
		if (n > 0) {
			rx->len += (size_t)n;
			rw_sock_progress(d);
			continue;
		}
		if (again(n))
			return RW_SOCK_STEP_AGAIN;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return rw_sock_comm_fail(c, -ECONNRESET,
				"the peer closed the connection with %u receive(s) waiting",
				rx->p_tail - rx->p_head);
		return rw_sock_comm_fail(c, -errno, "stream 0: recv failed");
	}
	return RW_SOCK_STEP_DONE;
}

/* The rest of an eager payload or of slice 0: from the read-ahead, then
 * straight from the socket into the user's buffer when much is left. */
static int rx_payload(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_rx *rx = &d->rx;

	while (rx->left) {
		size_t avail = rx->len - rx->pos;
		ssize_t n;

		if (avail) {
			size_t k = RW_MIN(avail, rx->left);

			if (rx->dst) {
				memcpy(rx->dst, rx->buf + rx->pos, k);
				rx->dst += k;
			}
			rx->pos += k;
			rx->left -= k;
			continue;
		}
		if (rx->dst && rx->left >= sizeof(rx->buf) / 2) {
			n = recv(d->streams[0].fd, rx->dst, rx->left, MSG_DONTWAIT);
			if (n > 0) {
				rx->dst += n;
				rx->left -= (size_t)n;
			}
		} else {
			rx->pos = rx->len = 0;
			n = recv(d->streams[0].fd, rx->buf, sizeof(rx->buf), MSG_DONTWAIT);
			if (n > 0)
				rx->len = (size_t)n;
		}
		if (n > 0) {
			rw_sock_progress(d);
			continue;
		}
		if (again(n))
			return RW_SOCK_STEP_AGAIN;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return rw_sock_comm_fail(c, -ECONNRESET,
				"the peer closed the connection in the middle of a message (%zu bytes missing)",
				rx->left);
		return rw_sock_comm_fail(c, -errno, "stream 0: recv of a message failed");
	}
	atomic_fetch_sub_explicit(&rx->cur->parts, 1, memory_order_relaxed);
	rx->cur = NULL;
	rx->state = RW_SOCK_RX_HDR;
	return RW_SOCK_STEP_DONE;
}

/* Route a message's payload: all of it (eager) or slice 0 (striped) is
 * read here, from the read-ahead and then the socket; slices 1..n-1 go to
 * the helpers. */
static void rx_route(struct rw_sock_comm *c, struct rw_sock_req *r,
		     const struct rw_sock_msg_hdr *h, char *dst)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_rx *rx = &d->rx;
	unsigned n = h->kind == RW_SOCK_MSG_STRIPED ? (unsigned)d->nstreams : 1;
	uint64_t off, len = h->size;
	int parts = 0;

	for (unsigned j = 1; j < n; j++) {
		rw_sock_stripe(h->size, n, j, &off, &len);
		parts += len != 0;
	}
	if (n > 1)
		rw_sock_stripe(h->size, n, 0, &off, &len);
	parts += len != 0;
	atomic_fetch_add_explicit(&r->parts, parts, memory_order_relaxed);
	if (len) {
		rx->cur = r;
		rx->dst = dst;
		rx->left = len;
		rx->state = RW_SOCK_RX_PAYLOAD;
	}
	for (unsigned j = 1; j < n; j++) {
		struct rw_sock_op op = { .req = r };

		rw_sock_stripe(h->size, n, j, &off, &len);
		if (!len)
			continue;
		op.buf = dst ? dst + off : NULL;
		op.len = len;
		rw_sock_stream_push(&d->streams[j], &op);
	}
}

/* Read the next message header and route its payload.  DONE, AGAIN or
 * -errno. */
static int rx_header(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_rx *rx = &d->rx;
	struct rw_sock_msg_hdr h;
	struct rw_sock_req *r;
	char *dst = NULL;
	char tags[96];
	int rc, i;

	if (rx->p_head == rx->p_tail)
		return RW_SOCK_STEP_AGAIN; /* no receive posted */
	rc = rx_fill(c, sizeof(h));
	if (rc != RW_SOCK_STEP_DONE)
		return rc;
	memcpy(&h, rx->buf + rx->pos, sizeof(h));
	if (h.marker != RW_SOCK_MSG_MARKER ||
	    (h.kind != RW_SOCK_MSG_EAGER && h.kind != RW_SOCK_MSG_STRIPED) ||
	    h.size > RW_SOCK_MAX_BYTES)
		return rw_sock_comm_fail(c, -EPROTO,
			"stream 0: not a message header (marker 0x%04x, kind %u, size %llu)",
			h.marker, h.kind, (unsigned long long)h.size);
	if (h.kind == RW_SOCK_MSG_STRIPED) {
		if (d->nstreams == 1)
			return rw_sock_comm_fail(c, -EPROTO,
				"stream 0: a striped message on a one-stream connection");
		if (!rw_sock_stripe_room(d, h.size))
			return RW_SOCK_STEP_AGAIN;
		rc = rw_sock_streams_start(c);
		if (rc)
			return rw_sock_comm_fail(c, rc, "no helper threads for a striped message");
	}
	r = rx->posted[rx->p_head % RW_SOCK_MAX_REQS];
	i = rw_sock_match(r->e, r->n, h.tag);
	if ((i < 0 || h.size > r->e[i].cap) && !nack_room(c))
		return RW_SOCK_STEP_AGAIN;
	rx->pos += sizeof(h);
	if (i < 0) {
		tags_str(r->e, r->n, tags, sizeof(tags));
		RW_WARN(RW_LOG_NET,
			"socket: recv comm from %s: message #%u of %llu bytes with tag %d matches no buffer of receive #%u (tags %s); dropped",
			c->peer, rx->msg_seq, (unsigned long long)h.size, h.tag, r->seq, tags);
		r->err = r->err ? r->err : -ENOMSG;
		nack_queue(c, &(struct rw_sock_nack){
			.marker = RW_SOCK_MSG_MARKER, .kind = RW_SOCK_MSG_NACK,
			.reason = RW_SOCK_NACK_NO_TAG, .seq = rx->msg_seq, .tag = h.tag,
			.recv = r->seq, .size = h.size });
	} else {
		r->e[i].used = true;
		r->e[i].size = h.size;
		if (h.size > r->e[i].cap) {
			RW_WARN(RW_LOG_NET,
				"socket: recv comm from %s: message #%u of %llu bytes with tag %d does not fit buffer %d of receive #%u (%zu bytes); dropped",
				c->peer, rx->msg_seq, (unsigned long long)h.size, h.tag, i,
				r->seq, r->e[i].cap);
			r->err = r->err ? r->err : -EMSGSIZE;
			nack_queue(c, &(struct rw_sock_nack){
				.marker = RW_SOCK_MSG_MARKER, .kind = RW_SOCK_MSG_NACK,
				.reason = RW_SOCK_NACK_TOO_BIG, .seq = rx->msg_seq,
				.tag = h.tag, .recv = r->seq, .size = h.size,
				.cap = r->e[i].cap });
		} else {
			dst = r->e[i].data;
		}
	}
	rx->msg_seq++;
	if (--r->msgs_left == 0)
		rx->p_head++;
	rx_route(c, r, &h, dst);
	return RW_SOCK_STEP_DONE;
}

static int rx_progress(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	int rc = atomic_load_explicit(&d->err, memory_order_acquire);

	if (rc) {
		/* the connection is gone: let go of the payload being read */
		if (d->rx.state == RW_SOCK_RX_PAYLOAD) {
			atomic_fetch_sub_explicit(&d->rx.cur->parts, 1, memory_order_relaxed);
			d->rx.cur = NULL;
			d->rx.state = RW_SOCK_RX_HDR;
		}
		return rc;
	}
	rc = nack_flush(c);
	while (!rc) {
		rc = d->rx.state == RW_SOCK_RX_PAYLOAD ? rx_payload(c) : rx_header(c);
		rc = rc == RW_SOCK_STEP_DONE ? 0 : rc == RW_SOCK_STEP_AGAIN ? 1 : rc;
	}
	return rc < 0 ? rc : 0;
}

int rw_sock_irecv(struct rw_net_comm *comm, int n, void **data,
		  const size_t *sizes, const int *tags, struct rw_net_mr **mrs,
		  struct rw_net_req **req)
{
	struct rw_sock_comm *c;
	struct rw_sock_data *d;
	struct rw_sock_rx *rx;
	struct rw_sock_req *r;
	int rc = comm_check(comm, RW_SOCK_RECV_MAGIC, "irecv", &c);

	if (rc)
		return rc;
	if (!req || n < 1 || n > RW_NET_MAX_RECVS || !data || !sizes || !tags || !mrs) {
		RW_WARN(RW_LOG_NET,
			"socket: irecv(n=%d, data=%p, sizes=%p, tags=%p, mrs=%p, req=%p) from %s: bad arguments (n must be 1..%d)",
			n, (void *)data, (const void *)sizes, (const void *)tags,
			(void *)mrs, (void *)req, c->peer, RW_NET_MAX_RECVS);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		if (!data[i] && sizes[i]) {
			RW_WARN(RW_LOG_NET, "socket: irecv from %s: buffer %d is NULL with size %zu",
				c->peer, i, sizes[i]);
			return -EINVAL;
		}
		rc = rw_sock_mr_check(c, mrs[i], data[i], sizes[i], "irecv");
		if (rc)
			return rc;
	}
	d = c->d;
	rx = &d->rx;
	rc = rx_progress(c);
	if (rc)
		return rc;
	if (d->nreqs >= RW_SOCK_MAX_REQS || rx->p_tail - rx->p_head >= RW_SOCK_MAX_REQS) {
		*req = NULL;
		return 0;
	}
	r = rw_sock_req_alloc(c);
	if (!r) {
		*req = NULL;
		return 0;
	}
	r->kind = RW_SOCK_REQ_RECV;
	r->n = n;
	r->msgs_left = n;
	r->seq = rx->recv_seq++;
	for (int i = 0; i < n; i++)
		r->e[i] = (struct rw_sock_entry){ .data = data[i], .cap = sizes[i],
						  .tag = tags[i] };
	rx->posted[rx->p_tail % RW_SOCK_MAX_REQS] = r;
	rx->p_tail++;
	rx_progress(c); /* a failure shows in test */
	RW_TRACE(RW_LOG_NET, "socket: irecv #%u, %d buffer(s), from %s", r->seq, n, c->peer);
	*req = &r->base;
	return 0;
}

int rw_sock_iflush(struct rw_net_comm *comm, int n, void **data,
		   const int *sizes, struct rw_net_mr **mrs,
		   struct rw_net_req **req)
{
	struct rw_sock_comm *c;
	int rc = comm_check(comm, RW_SOCK_RECV_MAGIC, "iflush", &c);

	if (rc)
		return rc;
	if (!req || n < 1 || n > RW_NET_MAX_RECVS || !data || !sizes || !mrs) {
		RW_WARN(RW_LOG_NET, "socket: iflush(n=%d) from %s: bad arguments", n, c->peer);
		return -EINVAL;
	}
	*req = NULL; /* host memory: nothing to flush */
	return 0;
}

/* --- test ---------------------------------------------------------------- */

static int check_stall(struct rw_sock_comm *c, struct rw_sock_req *r)
{
	uint64_t last = atomic_load_explicit(&c->d->progress_ms, memory_order_relaxed);
	uint64_t now = rw_now_ms();

	last = RW_MAX(last, r->post_ms);
	if (now < last || now - last < (uint64_t)c->timeout_ms)
		return 0;
	if (r->kind == RW_SOCK_REQ_SEND)
		return rw_sock_comm_fail(c, -ETIMEDOUT,
			"the peer took no data for %lld ms (message #%u, %zu bytes, tag %d)",
			(long long)c->timeout_ms, r->seq, r->size, r->tag);
	return rw_sock_comm_fail(c, -ETIMEDOUT,
		"nothing moved for %lld ms with receive #%u (%d buffer(s)) waiting for %d message(s)",
		(long long)c->timeout_ms, r->seq, r->n, r->msgs_left);
}

int rw_sock_test(struct rw_net_req *req, int *done, size_t *sizes)
{
	struct rw_sock_comm *c;
	struct rw_sock_req *r;
	int parts, err;
	bool complete;

	if (!req || !done)
		return -EINVAL;
	r = rw_container_of(req, struct rw_sock_req, base);
	if (r->magic != RW_SOCK_REQ_MAGIC || r->kind == RW_SOCK_REQ_FREE) {
		RW_WARN(RW_LOG_NET, "socket: test on %s request %p",
			r->magic == RW_SOCK_REQ_MAGIC ? "a completed" : "a foreign",
			(void *)req);
		return r->magic == RW_SOCK_REQ_MAGIC ? -EBADF : -EINVAL;
	}
	c = rw_sock_comm_from(req->comm);
	parts = atomic_load_explicit(&r->parts, memory_order_acquire);
	RW_NVTX_PUSH(r->kind == RW_SOCK_REQ_RECV ? "socket recv test" : "socket send test");
	if (r->kind == RW_SOCK_REQ_RECV)
		rx_progress(c);
	else if (parts && !tx_pump(c))
		tx_progress(c);
	RW_NVTX_POP();
	parts = atomic_load_explicit(&r->parts, memory_order_acquire);
	err = atomic_load_explicit(&c->d->err, memory_order_acquire);
	complete = parts == 0 && (r->kind == RW_SOCK_REQ_SEND || r->msgs_left == 0);
	if (complete) {
		RW_NVTX_MARK(r->kind == RW_SOCK_REQ_SEND ? "socket send done" : "socket recv done");
		/* a send fails once the peer dropped a message of this comm
		 * (perhaps this very one) */
		err = r->kind == RW_SOCK_REQ_SEND && err ? err
		      : r->kind == RW_SOCK_REQ_SEND ? c->d->tx.nack_err : r->err;
		if (!err && sizes) {
			if (r->kind == RW_SOCK_REQ_SEND)
				sizes[0] = r->size;
			else
				for (int i = 0; i < r->n; i++)
					sizes[i] = r->e[i].used ? r->e[i].size : 0;
		}
		rw_sock_req_free(c, r);
		if (!err)
			*done = 1;
		return err;
	}
	if (!err)
		err = check_stall(c, r);
	if (err && parts == 0) {
		rw_sock_req_free(c, r);
		return err;
	}
	*done = 0; /* helpers are still letting go of it after an error */
	/* The caller polls: let the helper threads and the peer (on a
	 * small machine, perhaps on this very core) run meanwhile. */
	sched_yield();
	return 0;
}
