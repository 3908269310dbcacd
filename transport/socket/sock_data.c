/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path, calling thread's side: irecv, test, iflush (isend and the
 * send side are in sock_send.c).
 *
 * irecv posts the receive to the sender (struct rw_sock_post on stream 0),
 * which matches its messages against it (sock_send.c).  Each message header
 * names the receive and buffer it fills; the receiver checks that this is
 * the next match it expects and fails the comm (-EPROTO) otherwise.  Small
 * messages are read through a read-ahead buffer, large ones straight into
 * the user's buffer, and the message of a lone receive of one buffer
 * (nothing else can be on the stream) header and payload in one call, the
 * payload into place; slice j > 0 of a striped message goes to helper j
 * (sock_stream.c).  A TRUNC header (the sender refused a message larger
 * than its buffer) fails the comm with -EMSGSIZE.
 *
 * A comm that takes messages sent ahead (rw_net_ahead) posts nothing: it
 * reads each message once its receive is posted and checks it as the
 * sender would have.
 *
 * A failed comm answers at once: every later irecv, isend and test on it
 * returns the comm's first error (a request whose bytes had all moved before
 * still completes).  A request still moving bytes is let go of first: the
 * streams are shut down, so helpers drop it within a system call.  No
 * logging here but for errors, each reported once.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "common/rw_nvtx.h"
#include "transport/socket/sock_internal.h"

int rw_sock_data_comm(struct rw_net_comm *comm, uint32_t magic, const char *call,
		      struct rw_sock_comm **out)
{
	struct rw_sock_comm *c;

	if (!comm)
		return -EINVAL;
	c = rw_sock_comm_from(comm);
	if (rw_obj_check(&c->obj, magic) == 0) {
		*out = c;
		return 0;
	}
	if (rw_obj_check_any(&c->obj, rw_sock_comm_kinds, 2) == -EBADF) {
		RW_WARN(RW_LOG_NET, "socket: %s on a closed comm (peer %s)", call, c->peer);
		return -EBADF;
	}
	RW_WARN(RW_LOG_NET, "socket: %s on a %s", call,
		rw_obj_check_any(&c->obj, rw_sock_comm_kinds, 2) == 0
			? "comm of the other direction"
			: "foreign object");
	return -EINVAL;
}

static void tags_str(const struct rw_sock_entry *e, int n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%d%s", i ? "," : "", e[i].tag,
				 e[i].used ? "(filled)" : "");

		used += w > 0 ? (size_t)w : 0;
	}
}

static bool again(ssize_t n)
{
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* --- receive side ---------------------------------------------------------- */

/* Write the posts not yet written.  0 or -errno. */
static int posts_flush(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_rx *rx = &d->rx;

	while (rx->out_pos < rx->out_len) {
		ssize_t n = send(d->streams[0].fd, rx->out + rx->out_pos, rx->out_len - rx->out_pos,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			rx->out_pos += (size_t)n;
			continue;
		}
		if (again(n))
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return rw_sock_comm_fail(c, n < 0 ? -errno : -EPIPE,
					 "stream 0: posting a receive to the peer");
	}
	rx->out_pos = rx->out_len = 0;
	return 0;
}

/* Room in rx->out for one more post (compacting it first)?  A post not
 * yet written normally belongs to a receive still in posted[], so there
 * is; but a peer that sends without reading our posts (a sender that
 * sends ahead to a receiver that does not take messages so, or a foreign
 * one) completes receives whose posts stay queued, and they would pile up
 * past the buffer. */
static bool post_room(struct rw_sock_rx *rx)
{
	if (sizeof(rx->out) - rx->out_len >= sizeof(struct rw_sock_post))
		return true;
	memmove(rx->out, rx->out + rx->out_pos, rx->out_len - rx->out_pos);
	rx->out_len -= rx->out_pos;
	rx->out_pos = 0;
	return sizeof(rx->out) - rx->out_len >= sizeof(struct rw_sock_post);
}

/* Queue the post of receive r (post_room() said there is room). */
static void post_queue(struct rw_sock_rx *rx, const struct rw_sock_req *r)
{
	struct rw_sock_post p = {.marker = RW_SOCK_MSG_MARKER,
				 .kind = RW_SOCK_MSG_POST,
				 .n = (uint8_t)r->n,
				 .seq = r->seq};

	for (int i = 0; i < r->n; i++) {
		p.tags[i] = r->e[i].tag;
		p.sizes[i] = r->e[i].cap;
	}
	memcpy(rx->out + rx->out_len, &p, sizeof(p));
	rx->out_len += sizeof(p);
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
			return rw_sock_comm_fail(
				c, -ECONNRESET,
				"the peer closed the connection with %u receive(s) waiting",
				rx->p_tail - rx->p_head);
		return rw_sock_comm_fail(c, -errno, "stream 0: recv failed");
	}
	return RW_SOCK_STEP_DONE;
}

/* With the read-ahead empty and one receive of one buffer posted, nothing
 * but its message can be on stream 0 (nothing is sent that no receive
 * takes): read its header into the read-ahead and its payload straight
 * into the buffer, in one call (rx->pre: payload bytes read so;
 * rx_header checks them against the header).  A comm that takes messages
 * sent ahead (rw_net_ahead) may find the next messages behind it: it reads
 * no more than the read-ahead could hold, and rx_header moves what follows
 * the payload there.  DONE (perhaps nothing read: the caller goes on with
 * rx_fill), AGAIN or -errno. */
static int rx_direct(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_rx *rx = &d->rx;
	struct rw_sock_req *r = rx->posted[rx->p_head % RW_SOCK_MAX_REQS];
	struct iovec iov[2] = {
		{rx->buf, sizeof(struct rw_sock_msg_hdr)},
		{r->e[0].data,
		 c->ahead ? RW_MIN(r->e[0].cap, sizeof(rx->buf) - sizeof(struct rw_sock_msg_hdr))
			  : r->e[0].cap}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
	ssize_t n;

	if (rx->pos != rx->len || rx->p_tail - rx->p_head != 1 || r->n != 1 || r->msgs_left != 1 ||
	    !r->e[0].cap)
		return RW_SOCK_STEP_DONE;
	rx->pos = rx->len = 0;
	do
		n = recvmsg(d->streams[0].fd, &m, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		rx->len = RW_MIN((size_t)n, iov[0].iov_len);
		rx->pre = (size_t)n - rx->len;
		rw_sock_progress(d);
		return RW_SOCK_STEP_DONE;
	}
	if (again(n))
		return RW_SOCK_STEP_AGAIN;
	if (n == 0)
		return rw_sock_comm_fail(
			c, -ECONNRESET, "the peer closed the connection with %u receive(s) waiting",
			rx->p_tail - rx->p_head);
	return rw_sock_comm_fail(c, -errno, "stream 0: recv failed");
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

			memcpy(rx->dst, rx->buf + rx->pos, k);
			rx->dst += k;
			rx->pos += k;
			rx->left -= k;
			continue;
		}
		if (rx->left >= sizeof(rx->buf) / 2) {
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
						 "the peer closed the connection in the middle of "
						 "a message (%zu bytes missing)",
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
static void rx_route(struct rw_sock_comm *c, struct rw_sock_req *r, const struct rw_sock_msg_hdr *h,
		     char *dst)
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
		struct rw_sock_op op = {.req = r};

		rw_sock_stripe(h->size, n, j, &off, &len);
		if (!len)
			continue;
		op.buf = dst + off;
		op.len = len;
		rw_sock_stream_push(&d->streams[j], &op);
	}
}

/* Is h the next message receive r expects?  0, or -EPROTO / -EMSGSIZE
 * (logged, comm failed). */
static int rx_check(struct rw_sock_comm *c, struct rw_sock_req *r, const struct rw_sock_msg_hdr *h)
{
	struct rw_sock_rx *rx = &c->d->rx;
	struct rw_sock_entry *e = h->index < r->n ? &r->e[h->index] : NULL;
	char tags[160];

	if (c->ahead && e && h->recv == r->seq && e->tag != h->tag)
		return rw_sock_comm_fail(c, -EPROTO,
					 "message #%u (%llu bytes), sent ahead, has tag %d, but "
					 "receive #%u takes tag %d",
					 rx->msg_seq, (unsigned long long)h->size, h->tag, r->seq,
					 e->tag);
	if (h->recv != r->seq || !e || e->used || e->tag != h->tag) {
		tags_str(r->e, r->n, tags, sizeof(tags));
		return rw_sock_comm_fail(
			c, -EPROTO,
			"stream 0: message #%u (tag %d, %llu bytes) names buffer %u of receive "
			"#%u, but the next receive to fill is #%u (tags %s)",
			rx->msg_seq, h->tag, (unsigned long long)h->size, h->index, h->recv, r->seq,
			tags);
	}
	if (h->kind == RW_SOCK_MSG_TRUNC && h->size > e->cap)
		return rw_sock_comm_fail(c, -EMSGSIZE,
					 "message #%u (tag %d, %llu bytes) is larger than buffer "
					 "%u of receive #%u (%zu bytes); the sender refused it",
					 rx->msg_seq, h->tag, (unsigned long long)h->size, h->index,
					 r->seq, e->cap);
	if (h->kind != RW_SOCK_MSG_TRUNC && h->size > e->cap && c->ahead)
		return rw_sock_comm_fail(c, -EMSGSIZE,
					 "message #%u (tag %d, %llu bytes), sent ahead, is larger "
					 "than buffer %u of receive #%u (%zu bytes)",
					 rx->msg_seq, h->tag, (unsigned long long)h->size, h->index,
					 r->seq, e->cap);
	if (h->kind == RW_SOCK_MSG_TRUNC || h->size > e->cap)
		return rw_sock_comm_fail(c, -EPROTO,
					 "stream 0: message #%u (kind %u, tag %d, %llu bytes) for "
					 "buffer %u of receive #%u (%zu bytes)",
					 rx->msg_seq, h->kind, h->tag, (unsigned long long)h->size,
					 h->index, r->seq, e->cap);
	return 0;
}

/* Read the next message header and route its payload.  DONE, AGAIN or
 * -errno. */
static int rx_header(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_rx *rx = &d->rx;
	struct rw_sock_msg_hdr h;
	struct rw_sock_entry *e;
	struct rw_sock_req *r;
	size_t pre = 0;
	int rc;

	if (rx->p_head == rx->p_tail)
		return RW_SOCK_STEP_AGAIN; /* no receive posted: nothing to read into */
	rc = rx_direct(c);
	if (rc != RW_SOCK_STEP_DONE)
		return rc;
	rc = rx_fill(c, sizeof(h));
	if (rc != RW_SOCK_STEP_DONE)
		return rc;
	memcpy(&h, rx->buf + rx->pos, sizeof(h));
	if (h.marker != RW_SOCK_MSG_MARKER ||
	    (h.kind != RW_SOCK_MSG_EAGER && h.kind != RW_SOCK_MSG_STRIPED &&
	     h.kind != RW_SOCK_MSG_TRUNC) ||
	    h.size > RW_SOCK_MAX_BYTES)
		return rw_sock_comm_fail(
			c, -EPROTO,
			"stream 0: not a message header (marker 0x%04x, kind %u, size %llu)",
			h.marker, h.kind, (unsigned long long)h.size);
	r = rx->posted[rx->p_head % RW_SOCK_MAX_REQS];
	rc = rx_check(c, r, &h);
	if (rc)
		return rc;
	if (h.kind == RW_SOCK_MSG_STRIPED) {
		if (d->nstreams == 1)
			return rw_sock_comm_fail(
				c, -EPROTO,
				"stream 0: a striped message on a one-stream connection");
		if (!rw_sock_stripe_room(d, h.size))
			return RW_SOCK_STEP_AGAIN;
		rc = rw_sock_streams_start(c);
		if (rc)
			return rw_sock_comm_fail(c, rc, "no helper threads for a striped message");
	}
	rx->pos += sizeof(h);
	e = &r->e[h.index];
	if (rx->pre) {
		/* rx_direct read that much of the payload on stream 0 (all of
		 * an eager one, slice 0 of a striped one) into place already,
		 * and on a comm that takes messages sent ahead perhaps the
		 * start of the next messages: those go to the read-ahead
		 * (rx_direct read no more than it holds), before the helpers
		 * are given the rest of the buffer */
		uint64_t off, len0 = h.size;
		size_t next;

		if (h.kind == RW_SOCK_MSG_STRIPED)
			rw_sock_stripe(h.size, (unsigned)d->nstreams, 0, &off, &len0);
		pre = RW_MIN(rx->pre, (size_t)len0);
		next = rx->pre - pre;
		if (next && !c->ahead)
			return rw_sock_comm_fail(
				c, -EPROTO,
				"stream 0: %zu bytes after the header of message "
				"#%u (%llu bytes), more than its payload on stream 0",
				rx->pre, rx->msg_seq, (unsigned long long)h.size);
		memcpy(rx->buf + rx->len, e->data + pre, next);
		rx->len += next;
		rx->pre = 0;
	}
	e->used = true;
	e->size = h.size;
	rx->msg_seq++;
	if (--r->msgs_left == 0)
		rx->p_head++;
	rx_route(c, r, &h, e->data);
	if (pre) {
		rx->dst += pre;
		rx->left -= pre;
	}
	return RW_SOCK_STEP_DONE;
}

/* The connection is gone: let go of the payload being read. */
static void rx_drop(struct rw_sock_rx *rx)
{
	if (rx->state == RW_SOCK_RX_PAYLOAD) {
		atomic_store_explicit(&rx->cur->cut, true, memory_order_relaxed);
		atomic_fetch_sub_explicit(&rx->cur->parts, 1, memory_order_relaxed);
		rx->cur = NULL;
		rx->state = RW_SOCK_RX_HDR;
	}
}

/* Write posts, read headers and payloads.  0 or the comm's error. */
static int rx_progress(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	int rc = atomic_load_explicit(&d->err, memory_order_acquire);

	if (!rc)
		rc = posts_flush(c);
	while (!rc) {
		rc = d->rx.state == RW_SOCK_RX_PAYLOAD ? rx_payload(c) : rx_header(c);
		rc = rc == RW_SOCK_STEP_DONE ? 0 : rc == RW_SOCK_STEP_AGAIN ? 1 : rc;
	}
	if (rc < 0)
		rx_drop(&d->rx);
	return rc < 0 ? rc : 0;
}

int rw_sock_irecv(struct rw_net_comm *comm, int n, void **data, const size_t *sizes,
		  const int *tags, struct rw_net_mr **mrs, struct rw_net_req **req)
{
	struct rw_sock_comm *c;
	struct rw_sock_data *d;
	struct rw_sock_rx *rx;
	struct rw_sock_req *r;
	int rc = rw_sock_data_comm(comm, RW_SOCK_RECV_MAGIC, "irecv", &c);

	if (rc)
		return rc;
	if (!req || n < 1 || n > (c->ahead ? 1 : RW_NET_MAX_RECVS) || !data || !sizes || !tags ||
	    !mrs) {
		RW_WARN(RW_LOG_NET,
			"socket: irecv(n=%d, data=%p, sizes=%p, tags=%p, mrs=%p, req=%p) from %s: "
			"bad arguments (n must be 1..%d%s)",
			n, (void *)data, (const void *)sizes, (const void *)tags, (void *)mrs,
			(void *)req, c->peer, c->ahead ? 1 : RW_NET_MAX_RECVS,
			c->ahead ? ": the comm takes messages sent ahead" : "");
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		if (!data[i] && sizes[i]) {
			RW_WARN(RW_LOG_NET,
				"socket: irecv from %s: buffer %d is NULL with size %zu", c->peer,
				i, sizes[i]);
			return -EINVAL;
		}
		if (sizes[i] > RW_SOCK_MAX_BYTES) {
			RW_WARN(RW_LOG_NET,
				"socket: irecv from %s: buffer %d (tag %d) has %zu bytes, more "
				"than max_p2p_bytes (%llu); refused",
				c->peer, i, tags[i], sizes[i], RW_SOCK_MAX_BYTES);
			return -EMSGSIZE;
		}
		rc = rw_sock_mr_check(c, mrs[i], data[i], sizes[i], "irecv");
		if (rc)
			return rc;
	}
	d = c->d;
	rx = &d->rx;
	rc = atomic_load_explicit(&d->err, memory_order_acquire);
	if (rc)
		return rc; /* logged where it was found */
	if (rx->p_tail - rx->p_head >= RW_SOCK_MAX_REQS) {
		rc = rx_progress(c); /* headers due may make room */
		if (rc)
			return rc;
	}
	if (c->reqs.used >= RW_SOCK_MAX_REQS || rx->p_tail - rx->p_head >= RW_SOCK_MAX_REQS) {
		*req = NULL;
		return 0;
	}
	if (!c->ahead && !post_room(rx))
		return rw_sock_comm_fail(c, -EPROTO,
					 "stream 0: the peer has read none of our last %zu receive "
					 "posts while its messages filled them: it sends without "
					 "them (is it set to send ahead, and we not?)",
					 sizeof(rx->out) / sizeof(struct rw_sock_post));
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
		r->e[i] = (struct rw_sock_entry){.data = data[i], .cap = sizes[i], .tag = tags[i]};
	rx->posted[rx->p_tail % RW_SOCK_MAX_REQS] = r;
	rx->p_tail++;
	if (!c->ahead) {
		post_queue(rx, r);
		posts_flush(c); /* a failure shows in test */
	}
	RW_TRACE(RW_LOG_NET, "socket: irecv #%u, %d buffer(s), from %s", r->seq, n, c->peer);
	*req = &r->base;
	return 0;
}

int rw_sock_iflush(struct rw_net_comm *comm, int n, void **data, const int *sizes,
		   struct rw_net_mr **mrs, struct rw_net_req **req)
{
	struct rw_sock_comm *c;
	int rc = rw_sock_data_comm(comm, RW_SOCK_RECV_MAGIC, "iflush", &c);

	if (rc)
		return rc;
	if (!req || n < 1 || n > RW_NET_MAX_RECVS || !data || !sizes || !mrs) {
		RW_WARN(RW_LOG_NET, "socket: iflush(n=%d) from %s: bad arguments", n, c->peer);
		return -EINVAL;
	}
	*req = NULL; /* host memory: nothing to flush */
	return 0;
}

int rw_sock_patient(struct rw_net_comm *comm)
{
	struct rw_sock_comm *c;
	int rc = rw_sock_data_comm(comm, RW_SOCK_RECV_MAGIC, "patient", &c);

	if (rc)
		return rc;
	c->patient = true; /* read by this comm's data path only (one thread) */
	return 0;
}

int rw_sock_ahead(struct rw_net_comm *comm)
{
	struct rw_sock_comm *c;

	if (!comm)
		return -EINVAL;
	c = rw_sock_comm_from(comm);
	if (rw_obj_check_any(&c->obj, rw_sock_comm_kinds, 2) || !c->d) {
		RW_WARN(RW_LOG_NET, "socket: ahead on a closed, unconnected or foreign comm");
		return -EINVAL;
	}
	if (c->obj.kind == RW_SOCK_SEND_MAGIC ? c->d->tx.seq || c->d->tx.post_seq
					      : c->d->rx.recv_seq) {
		RW_WARN(RW_LOG_NET, "socket: ahead on the comm with %s after its first message",
			c->peer);
		return -EINVAL;
	}
	c->ahead = true; /* read by this comm's data path only (one thread) */
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
	if (r->kind == RW_SOCK_REQ_RECV && c->patient && r->msgs_left == r->n &&
	    c->d->rx.cur != r && c->d->rx.pos == c->d->rx.len)
		return 0; /* not a byte of it arrived yet: a patient receive waits */
	if (r->kind == RW_SOCK_REQ_SEND)
		return rw_sock_comm_fail(
			c, -ETIMEDOUT,
			"the peer took no data for %lld ms (message #%u, %zu bytes, tag %d)",
			(long long)c->timeout_ms, r->seq, r->size, r->tag);
	return rw_sock_comm_fail(c, -ETIMEDOUT,
				 "nothing moved for %lld ms with receive #%u (%d buffer(s)) "
				 "waiting for %d message(s)",
				 (long long)c->timeout_ms, r->seq, r->n, r->msgs_left);
}

/* The comm failed with err while r still moves bytes: shut the streams
 * (helpers leave their system calls at once), drop what this thread holds,
 * and wait (bounded) for the helpers to let go.  true once r is free of
 * them. */
static bool let_go(struct rw_sock_comm *c, struct rw_sock_req *r, int err)
{
	uint64_t deadline = rw_now_ms() + 1000;

	rw_sock_comm_abort(c, err);
	if (r->kind == RW_SOCK_REQ_RECV)
		rx_progress(c);
	else
		rw_sock_tx_progress(c);
	while (atomic_load_explicit(&r->parts, memory_order_acquire)) {
		if (rw_now_ms() > deadline)
			return false;
		sched_yield();
	}
	return true;
}

int rw_sock_test(struct rw_net_req *req, int *done, size_t *sizes)
{
	struct rw_sock_comm *c;
	struct rw_sock_req *r;
	bool recv;
	int err;

	if (!req || !done)
		return -EINVAL;
	r = rw_container_of(req, struct rw_sock_req, base);
	err = rw_obj_check(&r->obj, RW_SOCK_REQ_MAGIC);
	if (err) {
		RW_WARN(RW_LOG_NET, "socket: test on %s request %p",
			err == -EBADF ? "a completed" : "a foreign", (void *)req);
		return err;
	}
	c = rw_sock_comm_from(req->comm);
	recv = r->kind == RW_SOCK_REQ_RECV;
	RW_NVTX_PUSH(recv ? "socket recv test" : "socket send test");
	if (recv)
		err = rx_progress(c);
	else if (atomic_load_explicit(&r->parts, memory_order_acquire) || c->d->tx.refused)
		err = rw_sock_tx_progress(c);
	else
		err = rw_sock_tx_error(c);
	RW_NVTX_POP();
	if (!r->err && atomic_load_explicit(&r->parts, memory_order_acquire) == 0 &&
	    !atomic_load_explicit(&r->cut, memory_order_relaxed) && (!recv || r->msgs_left == 0)) {
		/* every byte moved (perhaps before the comm failed) */
		RW_NVTX_MARK(recv ? "socket recv done" : "socket send done");
		if (sizes) {
			if (!recv)
				sizes[0] = r->size;
			else
				for (int i = 0; i < r->n; i++)
					sizes[i] = r->e[i].size;
		}
		rw_sock_req_free(c, r);
		*done = 1;
		return 0;
	}
	if (r->err)
		err = r->err;
	else if (!err)
		err = check_stall(c, r);
	if (err) {
		/* a failed comm answers at once, once r is free of the streams */
		if (atomic_load_explicit(&r->parts, memory_order_acquire) && !let_go(c, r, err)) {
			*done = 0;
			return 0;
		}
		rw_sock_req_free(c, r);
		return err;
	}
	*done = 0;
	/* The caller polls.  While helper threads move slices of r, let them
	 * run (on a small machine, perhaps on this very core); otherwise
	 * return at once: the caller's own wait decides when to yield or
	 * sleep (a yield per test, several per engine pass, gave the core
	 * away to every other runnable task: 2 ranks on a loaded 2-core
	 * host, 1 MiB allreduce 2224 -> 1229 us, 64 KiB 646 -> 372 us
	 * without it) */
	if (atomic_load_explicit(&r->parts, memory_order_relaxed) > 1)
		sched_yield();
	return 0;
}
