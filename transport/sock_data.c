/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path, calling thread's side: isend, irecv, test, iflush.
 *
 * Small messages (< min_stripe) go header + payload on stream 0: the
 * calling thread writes them with one non-blocking sendmsg when the stream
 * is idle, and reads them (header, payload and whatever follows, into a
 * read-ahead buffer) with non-blocking recv calls from test.  Only what the
 * kernel cannot take at once is handed to the stream's helper thread.
 * Large messages are striped: slice j goes to helper j (sock_stream.c).
 *
 * Sends are eager.  irecv sends a clear-to-send record (sizes, tags) to
 * the sender; a send completes once its bytes are out and it has been
 * matched against that record, which is where a too-large send is found.
 * The receiver finds the same mismatch from the header and drops the
 * payload, so both sides report -EMSGSIZE and the streams stay in step.
 * No logging here but for errors, each reported once.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

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

/* Parse the next cts record into tx->cts.  DONE, AGAIN (none yet) or -errno. */
static int cts_next(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_tx *tx = &d->tx;

	for (;;) {
		size_t avail = tx->in_len - tx->in_pos;
		struct rw_sock_cts_hdr h;
		ssize_t n;

		if (avail >= sizeof(h)) {
			size_t need;

			memcpy(&h, tx->in + tx->in_pos, sizeof(h));
			if (h.marker != RW_SOCK_MSG_MARKER || h.kind != RW_SOCK_MSG_CTS ||
			    h.n < 1 || h.n > RW_SOCK_MAX_RECVS)
				return rw_sock_comm_fail(c, -EPROTO,
					"stream 0: not a clear-to-send record (marker 0x%04x, kind %u, n %u)",
					h.marker, h.kind, h.n);
			if (h.seq != tx->cts_seq)
				return rw_sock_comm_fail(c, -EPROTO,
					"stream 0: clear-to-send for receive #%u, expected #%u",
					h.seq, tx->cts_seq);
			need = sizeof(h) + h.n * sizeof(struct rw_sock_cts_entry);
			if (avail >= need) {
				for (int i = 0; i < h.n; i++) {
					struct rw_sock_cts_entry e;

					memcpy(&e, tx->in + tx->in_pos + sizeof(h) + i * sizeof(e),
					       sizeof(e));
					tx->cts[i] = (struct rw_sock_entry){
						.tag = e.tag, .cap = e.size };
				}
				tx->in_pos += need;
				tx->cts_n = h.n;
				tx->cts_bound = 0;
				tx->cts_cur = h.seq;
				tx->cts_seq++;
				tx->have_cts = true;
				return RW_SOCK_STEP_DONE;
			}
		}
		if (tx->in_pos && tx->in_len == sizeof(tx->in)) {
			memmove(tx->in, tx->in + tx->in_pos, avail);
			tx->in_pos = 0;
			tx->in_len = avail;
		}
		n = recv(d->streams[0].fd, tx->in + tx->in_len, sizeof(tx->in) - tx->in_len,
			 MSG_DONTWAIT);
		if (n > 0) {
			tx->in_len += (size_t)n;
			if (tx->in_pos == tx->in_len)
				tx->in_pos = tx->in_len = 0;
			rw_sock_progress(d);
			continue;
		}
		if (again(n))
			return RW_SOCK_STEP_AGAIN;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return rw_sock_comm_fail(c, -ECONNRESET,
				"the peer closed the connection with %u send(s) waiting for its receives",
				tx->ub_tail - tx->ub_head);
		return rw_sock_comm_fail(c, -errno, "stream 0: reading clear-to-send records");
	}
}

/* Match the oldest unbound send against the current cts record. */
static void bind_one(struct rw_sock_comm *c, struct rw_sock_req *r)
{
	struct rw_sock_tx *tx = &c->d->tx;
	int i = rw_sock_match(tx->cts, tx->cts_n, r->tag);
	char tags[96];

	if (i < 0) {
		tags_str(tx->cts, tx->cts_n, tags, sizeof(tags));
		RW_WARN(RW_LOG_NET,
			"socket: send comm to %s: send of %zu bytes with tag %d matches no buffer of the peer's receive #%u (tags %s); the peer drops it",
			c->peer, r->size, r->tag, tx->cts_cur, tags);
		r->err = -ENOMSG;
	} else {
		tx->cts[i].used = true;
		if (r->size > tx->cts[i].cap) {
			RW_WARN(RW_LOG_NET,
				"socket: send comm to %s: send of %zu bytes with tag %d is larger than the peer's buffer %d of receive #%u (%zu bytes); the peer drops it",
				c->peer, r->size, r->tag, i, tx->cts_cur, tx->cts[i].cap);
			r->err = -EMSGSIZE;
		}
	}
	r->bound = true;
	if (++tx->cts_bound == tx->cts_n)
		tx->have_cts = false;
}

static int tx_progress(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_tx *tx = &d->tx;
	int rc = atomic_load_explicit(&d->err, memory_order_acquire);

	if (rc)
		return rc;
	while (tx->ub_head != tx->ub_tail) {
		if (!tx->have_cts) {
			rc = cts_next(c);
			if (rc != RW_SOCK_STEP_DONE)
				return rc < 0 ? rc : 0;
		}
		bind_one(c, tx->unbound[tx->ub_head % RW_SOCK_MAX_REQS]);
		tx->ub_head++;
	}
	return 0;
}

static int send_eager(struct rw_sock_comm *c, struct rw_sock_req *r,
		      const struct rw_sock_msg_hdr *h)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_stream *s0 = &d->streams[0];
	struct rw_sock_op op = { .req = r, .buf = (char *)r->data, .len = r->size,
				 .hdr = *h, .hdr_len = sizeof(*h) };
	size_t sent = 0;
	int rc;

	if (rw_sock_stream_idle(s0)) {
		struct iovec iov[2] = { { (void *)h, sizeof(*h) },
					{ (void *)r->data, r->size } };
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = r->size ? 2 : 1 };
		ssize_t n;

		do
			n = sendmsg(s0->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		while (n < 0 && errno == EINTR);
		if (n < 0 && !again(n))
			return rw_sock_comm_fail(c, -errno,
						 "stream 0: send of a %zu-byte message failed",
						 r->size);
		if (n > 0) {
			sent = (size_t)n;
			rw_sock_progress(d);
		}
		if (sent == sizeof(*h) + r->size)
			return 0;
	}
	/* The kernel took only part of it (or the stream is busy): the
	 * helper finishes it, behind what it already has. */
	rc = rw_sock_streams_start(c);
	if (rc)
		return sent ? rw_sock_comm_fail(c, rc, "stream 0: no helper thread") : rc;
	op.hdr_done = (uint32_t)RW_MIN(sent, sizeof(*h));
	op.done = sent - op.hdr_done;
	atomic_store_explicit(&r->parts, 1, memory_order_relaxed);
	rw_sock_stream_push(s0, &op);
	return 0;
}

static int send_striped(struct rw_sock_comm *c, struct rw_sock_req *r,
			const struct rw_sock_msg_hdr *h)
{
	struct rw_sock_data *d = c->d;
	unsigned n = (unsigned)d->nstreams;
	int parts = 0;
	int rc = rw_sock_streams_start(c);

	if (rc)
		return rc;
	for (unsigned j = 0; j < n; j++) {
		uint64_t off, len;

		rw_sock_stripe(r->size, n, j, &off, &len);
		parts += j == 0 || len;
	}
	atomic_store_explicit(&r->parts, parts, memory_order_relaxed);
	for (unsigned j = 0; j < n; j++) {
		struct rw_sock_op op = { .req = r };
		uint64_t off, len;

		rw_sock_stripe(r->size, n, j, &off, &len);
		if (j && !len)
			continue;
		op.buf = (char *)r->data + off;
		op.len = len;
		if (j == 0) {
			op.hdr = *h;
			op.hdr_len = sizeof(*h);
		}
		rw_sock_stream_push(&d->streams[j], &op);
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
	rc = tx_progress(c);
	if (rc)
		return rc;
	striped = size >= c->min_stripe;
	if (d->nreqs >= RW_SOCK_MAX_REQS || tx->ub_tail - tx->ub_head >= RW_SOCK_MAX_REQS ||
	    (striped ? !rw_sock_stripe_room(d, size)
		     : !rw_sock_stream_room(&d->streams[0]))) {
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
	h = (struct rw_sock_msg_hdr){ .marker = RW_SOCK_MSG_MARKER,
				      .kind = striped ? RW_SOCK_MSG_STRIPED
						      : RW_SOCK_MSG_EAGER,
				      .tag = tag, .size = size };
	rc = striped ? send_striped(c, r, &h) : send_eager(c, r, &h);
	if (rc) {
		rw_sock_req_free(c, r);
		return rc;
	}
	tx->unbound[tx->ub_tail % RW_SOCK_MAX_REQS] = r;
	tx->ub_tail++;
	tx_progress(c); /* a failure shows in test */
	RW_TRACE(RW_LOG_NET, "socket: isend %zu bytes tag %d to %s (%s)", size, tag,
		 c->peer, striped ? "striped" : "eager");
	*req = &r->base;
	return 0;
}

/* --- receive side ---------------------------------------------------------- */

static int cts_flush(struct rw_sock_comm *c)
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
					 "stream 0: sending clear-to-send records");
	}
	rx->out_pos = rx->out_len = 0;
	return 0;
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

/* The rest of an eager payload: from the read-ahead, then straight from the
 * socket into the user's buffer when much is left. */
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

/* Hand a striped message's slices to the helpers; slice 0 may already be
 * partly (or wholly) in the read-ahead. */
static void rx_striped(struct rw_sock_comm *c, struct rw_sock_req *r,
		       const struct rw_sock_msg_hdr *h, char *dst)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_rx *rx = &d->rx;
	unsigned n = (unsigned)d->nstreams;
	int parts = 0;

	for (unsigned j = 0; j < n; j++) {
		uint64_t off, len;

		rw_sock_stripe(h->size, n, j, &off, &len);
		parts += j == 0 || len;
	}
	atomic_fetch_add_explicit(&r->parts, parts, memory_order_relaxed);
	for (unsigned j = 0; j < n; j++) {
		struct rw_sock_op op = { .req = r };
		uint64_t off, len;

		rw_sock_stripe(h->size, n, j, &off, &len);
		if (j && !len)
			continue;
		op.buf = dst ? dst + off : NULL;
		op.len = len;
		if (j == 0) {
			size_t k = RW_MIN(rx->len - rx->pos, len);

			if (dst)
				memcpy(dst + off, rx->buf + rx->pos, k);
			rx->pos += k;
			op.done = k;
			if (k == len) {
				atomic_fetch_sub_explicit(&r->parts, 1, memory_order_relaxed);
				continue;
			}
		}
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

	if (rx->p_head == rx->p_tail || !rw_sock_stream_idle(&d->streams[0]))
		return RW_SOCK_STEP_AGAIN; /* nothing posted, or helper 0 reads */
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
		if (!rw_sock_stripe_room(d, h.size))
			return RW_SOCK_STEP_AGAIN;
		rc = rw_sock_streams_start(c);
		if (rc)
			return rw_sock_comm_fail(c, rc, "no helper threads for a striped message");
	}
	rx->pos += sizeof(h);

	r = rx->posted[rx->p_head % RW_SOCK_MAX_REQS];
	i = rw_sock_match(r->e, r->n, h.tag);
	if (i < 0) {
		tags_str(r->e, r->n, tags, sizeof(tags));
		RW_WARN(RW_LOG_NET,
			"socket: recv comm from %s: message of %llu bytes with tag %d matches no buffer of receive #%u (tags %s); dropped",
			c->peer, (unsigned long long)h.size, h.tag, r->seq, tags);
		r->err = r->err ? r->err : -ENOMSG;
	} else {
		r->e[i].used = true;
		r->e[i].size = h.size;
		if (h.size > r->e[i].cap) {
			RW_WARN(RW_LOG_NET,
				"socket: recv comm from %s: message of %llu bytes with tag %d does not fit buffer %d of receive #%u (%zu bytes); dropped",
				c->peer, (unsigned long long)h.size, h.tag, i, r->seq,
				r->e[i].cap);
			r->err = r->err ? r->err : -EMSGSIZE;
		} else {
			dst = r->e[i].data;
		}
	}
	if (--r->msgs_left == 0)
		rx->p_head++;
	if (h.kind == RW_SOCK_MSG_STRIPED) {
		rx_striped(c, r, &h, dst);
	} else if (h.size) {
		atomic_fetch_add_explicit(&r->parts, 1, memory_order_relaxed);
		rx->cur = r;
		rx->dst = dst;
		rx->left = h.size;
		rx->state = RW_SOCK_RX_PAYLOAD;
	}
	return RW_SOCK_STEP_DONE;
}

static int rx_progress(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	int rc = atomic_load_explicit(&d->err, memory_order_acquire);

	if (rc)
		return rc;
	rc = cts_flush(c);
	while (!rc) {
		rc = d->rx.state == RW_SOCK_RX_PAYLOAD ? rx_payload(c) : rx_header(c);
		rc = rc == RW_SOCK_STEP_DONE ? 0 : rc == RW_SOCK_STEP_AGAIN ? 1 : rc;
	}
	return rc < 0 ? rc : 0;
}

/* Room for one more cts record of n buffers in the outbox? */
static bool cts_room(struct rw_sock_rx *rx, int n)
{
	size_t need = sizeof(struct rw_sock_cts_hdr) + n * sizeof(struct rw_sock_cts_entry);

	if (rx->out_pos && sizeof(rx->out) - rx->out_len < need) {
		memmove(rx->out, rx->out + rx->out_pos, rx->out_len - rx->out_pos);
		rx->out_len -= rx->out_pos;
		rx->out_pos = 0;
	}
	return sizeof(rx->out) - rx->out_len >= need;
}

int rw_sock_irecv(struct rw_net_comm *comm, int n, void **data,
		  const size_t *sizes, const int *tags, struct rw_net_mr **mrs,
		  struct rw_net_req **req)
{
	struct rw_sock_comm *c;
	struct rw_sock_data *d;
	struct rw_sock_rx *rx;
	struct rw_sock_req *r;
	struct rw_sock_cts_hdr ch;
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
	if (d->nreqs >= RW_SOCK_MAX_REQS || rx->p_tail - rx->p_head >= RW_SOCK_MAX_REQS ||
	    !cts_room(rx, n)) {
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
	r->seq = rx->seq++;
	ch = (struct rw_sock_cts_hdr){ .marker = RW_SOCK_MSG_MARKER,
				       .kind = RW_SOCK_MSG_CTS, .n = (uint8_t)n,
				       .seq = r->seq };
	memcpy(rx->out + rx->out_len, &ch, sizeof(ch));
	rx->out_len += sizeof(ch);
	for (int i = 0; i < n; i++) {
		struct rw_sock_cts_entry ce = { .tag = tags[i], .size = sizes[i] };

		r->e[i] = (struct rw_sock_entry){ .data = data[i], .cap = sizes[i],
						  .tag = tags[i] };
		memcpy(rx->out + rx->out_len, &ce, sizeof(ce));
		rx->out_len += sizeof(ce);
	}
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
			"nothing moved for %lld ms with a send of %zu bytes (tag %d) %s",
			(long long)c->timeout_ms, r->size, r->tag,
			r->bound ? "still being written" : "waiting for the peer's receive");
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
	if (r->kind == RW_SOCK_REQ_SEND)
		tx_progress(c);
	else
		rx_progress(c);
	parts = atomic_load_explicit(&r->parts, memory_order_acquire);
	complete = parts == 0 && (r->kind == RW_SOCK_REQ_SEND ? r->bound : r->msgs_left == 0);
	if (complete) {
		err = r->err;
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
	err = atomic_load_explicit(&c->d->err, memory_order_acquire);
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
