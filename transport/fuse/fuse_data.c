/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path of a fused comm (protocol: transport/fuse/README.md).
 *
 * Connection 0 (control) carries, per message, a header (struct
 * rw_fuse_hdr: size, piece size, piece count) and the first piece
 * (FUSE_PIECE0 bytes at most); the receiver posts both as one grouped
 * receive, so the fused isend is taken exactly when that receive is
 * matched, in posting order, like any rw_net send.  The other pieces go
 * over the data connections (one per member NIC), completion-driven: the
 * receiver posts each next piece on the data connection with the fewest
 * pieces outstanding (at most FUSE_WINDOW), so a NIC that finishes sooner
 * gets the next piece sooner; the sender offers every piece the receiver
 * may have posted to every data connection, and the member transport takes
 * it where the receive with its tag is the oldest (rw_net matching).
 *
 * Failures: any member call failing fails the fused comm, logged once with
 * the NIC's name; a comm with work outstanding and nothing moving for
 * RINGWAY_TIMEOUT_MS fails -ETIMEDOUT, naming the NICs still waited on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_log.h"
#include "transport/fuse/fuse_internal.h"

static int piece_tag(uint32_t seq, int k)
{
	return FUSE_TAG_PIECE | (int)((seq & 0x7fffu) << 15) | (k & 0x7fff);
}

/* Fail the comm (once, logged where found); later calls answer rc. */
static int comm_fail(struct rw_fuse_comm *c, int sub, int rc, const char *what)
{
	if (c->failed)
		return c->failed;
	c->failed = rc;
	if (sub >= 0)
		RW_WARN(RW_LOG_NET,
			"fuse: %s: NIC %s (%s connection %d) failed in %s: %s; the fused %s comm "
			"fails",
			c->vname, c->sub[sub].nic, sub ? "data" : "control", sub, what,
			strerror(-rc), c->send ? "send" : "receive");
	else
		RW_WARN(RW_LOG_NET, "fuse: %s: %s: %s; the fused %s comm fails", c->vname, what,
			strerror(-rc), c->send ? "send" : "receive");
	return rc;
}

/* --- requests ---------------------------------------------------------------- */

static struct fuse_req *req_get(struct rw_fuse_comm *c)
{
	for (int i = 0; i < FUSE_MAX_REQS; i++) {
		struct fuse_req *r = &c->reqs[i];

		if (rw_obj_state(&r->obj) != RW_OBJ_OPEN) {
			uint32_t gen = r->obj.gen;

			memset(r, 0, sizeof(*r));
			r->obj.gen = gen;
			r->base.comm = &c->base;
			rw_obj_open(&r->obj, FUSE_REQ_KIND);
			return r;
		}
	}
	return NULL;
}

static void queue_del(struct rw_fuse_comm *c, struct fuse_req *r)
{
	for (int i = 0; i < c->nqueue; i++)
		if (c->queue[i] == r) {
			memmove(&c->queue[i], &c->queue[i + 1],
				sizeof(c->queue[0]) * (size_t)(c->nqueue - i - 1));
			c->nqueue--;
			return;
		}
}

static void req_put(struct rw_fuse_comm *c, struct fuse_req *r)
{
	queue_del(c, r);
	free(r->taken);
	r->taken = NULL;
	rw_obj_close(&r->obj);
}

static int sreq_free_slots(const struct rw_fuse_comm *c)
{
	int n = 0;

	for (int i = 0; i < FUSE_MAX_SREQS; i++)
		n += c->sreqs[i].r == NULL;
	return n;
}

static struct fuse_sreq *sreq_add(struct rw_fuse_comm *c, struct rw_net_req *r,
				  struct fuse_req *msg, int sub, int piece, size_t len,
				  enum fuse_sreq_kind kind)
{
	for (int i = 0; i < FUSE_MAX_SREQS; i++) {
		struct fuse_sreq *s = &c->sreqs[i];

		if (!s->r) {
			*s = (struct fuse_sreq){.r = r,
						.msg = msg,
						.sub = sub,
						.piece = piece,
						.len = len,
						.kind = kind,
						.id = ++c->sreq_ids};
			return s;
		}
	}
	return NULL; /* not reached: callers check sreq_free_slots first */
}

/* Byte offset and length of piece k of a message. */
static size_t piece_off(const struct fuse_req *m, int k)
{
	return k == 0 ? 0 : FUSE_PIECE0 + (size_t)(k - 1) * m->piece;
}

static size_t piece_len(const struct fuse_req *m, int k)
{
	size_t off = piece_off(m, k);
	size_t len = k == 0 ? FUSE_PIECE0 : m->piece;

	return RW_MIN(len, m->size - off);
}

/* --- progress ---------------------------------------------------------------- */

/* The receiver learnt a message's shape from its header (checked here). */
static int recv_header(struct rw_fuse_comm *c, struct fuse_req *m, const size_t *got)
{
	const struct rw_fuse_hdr *h = &c->ctrl[m - c->reqs];
	uint64_t rest;

	if (got[0] != sizeof(*h) || h->magic != RW_FUSE_MAGIC || h->seq != m->seq)
		return comm_fail(c, 0, -EPROTO, "a message header (garbled or out of order)");
	if (h->size > m->cap) {
		RW_WARN(RW_LOG_NET, "fuse: %s: message #%u has %llu bytes, the buffer %zu",
			c->vname, m->seq, (unsigned long long)h->size, m->cap);
		/* The sender fails too, and at once: its piece 1 meets an empty
		 * receive (its first piece fitted, or this header would not have
		 * come), which the member transport refuses on both sides. */
		if (h->npieces > 1) {
			struct rw_net_req *r = NULL;
			void *data = m->data;
			size_t zero = 0;
			int tag = piece_tag(m->seq, 1);

			if (rw_net_irecv(c->sub[1].c, 1, &data, &zero, &tag,
					 m->mr ? &m->mr->sub[1] : NULL, &r) == 0 &&
			    r)
				sreq_add(c, r, m, 1, 1, 0, FUSE_SR_PIECE);
		}
		return comm_fail(c, -1, -EMSGSIZE, "a message larger than its receive buffer");
	}
	rest = h->size > FUSE_PIECE0 ? h->size - FUSE_PIECE0 : 0;
	if (got[1] != RW_MIN(h->size, (uint64_t)FUSE_PIECE0) ||
	    (rest && (h->piece == 0 || h->npieces != 1 + (rest + h->piece - 1) / h->piece)) ||
	    (!rest && h->npieces != 1) || h->npieces > FUSE_MAX_PIECES)
		return comm_fail(c, 0, -EPROTO, "a message header (inconsistent sizes)");
	m->size = h->size;
	m->piece = h->piece;
	m->npieces = (int)h->npieces;
	m->next = 1;
	m->need = m->npieces; /* the group (header + piece 0), then one per piece */
	c->sub[0].bytes += got[1];
	c->sub[0].pieces++;
	return 0;
}

/* The oldest member request on connection j, or NULL. */
static struct fuse_sreq *oldest(struct rw_fuse_comm *c, int j)
{
	struct fuse_sreq *o = NULL;

	for (int i = 0; i < FUSE_MAX_SREQS; i++) {
		struct fuse_sreq *s = &c->sreqs[i];

		if (s->r && s->sub == j && (!o || s->id < o->id))
			o = s;
	}
	return o;
}

/* One member request completed: account for it. */
static int sreq_done(struct rw_fuse_comm *c, struct fuse_sreq *s, const size_t *got)
{
	int rc;

	s->r = NULL;
	c->moved_ms = rw_now_ms();
	switch (s->kind) {
	case FUSE_SR_GROUP:
		rc = recv_header(c, s->msg, got);
		if (rc)
			return rc;
		break;
	case FUSE_SR_PIECE:
		if (!c->send && got[0] != s->len)
			return comm_fail(c, s->sub, -EPROTO, "a piece of the wrong size");
		c->sub[s->sub].inflight--;
		c->sub[s->sub].bytes += s->len;
		c->sub[s->sub].pieces++;
		break;
	case FUSE_SR_HDR:
	case FUSE_SR_FLUSH:
		break;
	}
	s->msg->done++;
	if (s->msg->need > 0 && s->msg->done == s->msg->need)
		s->msg->complete = true;
	return 0;
}

/*
 * Test each connection's member requests oldest first, up to the first
 * that is not done: requests on one connection complete in order as a rule,
 * and a member transport's test may yield the CPU when nothing is ready, so
 * one such test per connection and pass is enough.
 */
static int test_sreqs(struct rw_fuse_comm *c)
{
	for (int j = 0; j < c->nsubs && !c->failed; j++) {
		struct fuse_sreq *s;

		while ((s = oldest(c, j)) != NULL) {
			size_t got[2] = {0, 0};
			int done = 0, rc = rw_net_test(s->r, &done, got);

			if (rc) {
				s->r = NULL;
				return comm_fail(c, s->sub, rc, "test");
			}
			if (!done)
				break;
			rc = sreq_done(c, s, got);
			if (rc)
				return rc;
		}
	}
	return c->failed;
}

/* Sender: offer piece k of m on connection j; 1 if taken. */
static int offer(struct rw_fuse_comm *c, struct fuse_req *m, int k, int j)
{
	struct rw_net_req *r = NULL;
	size_t len = piece_len(m, k);
	int rc;

	rc = rw_net_isend(c->sub[j].c, m->data + piece_off(m, k), len, piece_tag(m->seq, k),
			  m->mr ? m->mr->sub[j] : NULL, &r);
	if (rc)
		return comm_fail(c, j, rc, "isend");
	if (!r)
		return 0;
	m->taken[k] = 1;
	c->moved_ms = rw_now_ms();
	if (k == 0) { /* part of the group: counted with the header */
		sreq_add(c, r, m, 0, 0, len, FUSE_SR_HDR);
		c->sub[0].bytes += len;
		c->sub[0].pieces++;
	} else {
		sreq_add(c, r, m, j, k, len, FUSE_SR_PIECE);
		c->sub[j].inflight++;
	}
	return 1;
}

#define FUSE_CANDIDATES (RW_FUSE_MAX_MEMBERS * FUSE_WINDOW)

static int send_progress(struct rw_fuse_comm *c)
{
	struct {
		struct fuse_req *m;
		int k;
	} cand[FUSE_CANDIDATES];
	int ncand = 0, rc;

	/* the first pieces, on the control connection, in message order */
	for (int q = 0; q < c->nqueue; q++) {
		struct fuse_req *m = c->queue[q];

		if (m->taken[0])
			continue;
		if (sreq_free_slots(c) < 1)
			return 0;
		rc = offer(c, m, 0, 0);
		if (rc < 0)
			return rc;
		if (rc == 0)
			break; /* later ones queue behind it */
	}
	/* the pieces the receiver may have posted: the first untaken ones */
	for (int q = 0; q < c->nqueue && ncand < FUSE_CANDIDATES; q++) {
		struct fuse_req *m = c->queue[q];

		while (m->next < m->npieces && m->taken[m->next])
			m->next++;
		for (int k = m->next; k < m->npieces && ncand < FUSE_CANDIDATES; k++)
			if (!m->taken[k]) {
				cand[ncand].m = m;
				cand[ncand++].k = k;
			}
	}
	for (int j = 1; j < c->nsubs && ncand; j++)
		for (int i = 0; i < ncand; i++) {
			if (cand[i].m->taken[cand[i].k])
				continue;
			if (sreq_free_slots(c) < 1)
				return 0;
			rc = offer(c, cand[i].m, cand[i].k, j);
			if (rc < 0)
				return rc;
		}
	return 0;
}

/* Receiver: the data connection for the next piece (fewest outstanding,
 * ties in turn), or -1. */
static int pick_sub(struct rw_fuse_comm *c, unsigned blocked)
{
	unsigned *turn = &c->turn;
	int best = -1;

	for (int t = 0; t < c->nsubs - 1; t++) {
		int j = 1 + (int)((*turn + (unsigned)t) % (unsigned)(c->nsubs - 1));

		if ((blocked >> j) & 1u || c->sub[j].inflight >= FUSE_WINDOW)
			continue;
		if (best < 0 || c->sub[j].inflight < c->sub[best].inflight)
			best = j;
	}
	if (best > 0)
		(*turn)++;
	return best;
}

static int recv_progress(struct rw_fuse_comm *c)
{
	unsigned blocked = 0;

	for (int q = 0; q < c->nqueue; q++) {
		struct fuse_req *m = c->queue[q];

		/* pieces are posted in message order (the sender offers the
		 * first ones not taken): stop at a header not tested yet */
		if (!m->npieces)
			return 0;
		while (m->next < m->npieces) {
			struct rw_net_req *r = NULL;
			size_t off = piece_off(m, m->next), len = piece_len(m, m->next);
			void *data = m->data + off;
			int tag = piece_tag(m->seq, m->next), rc, j;

			j = pick_sub(c, blocked);
			if (j < 0 || sreq_free_slots(c) < 1)
				return 0;
			rc = rw_net_irecv(c->sub[j].c, 1, &data, &len, &tag,
					  m->mr ? &m->mr->sub[j] : NULL, &r);
			if (rc)
				return comm_fail(c, j, rc, "irecv");
			if (!r) {
				blocked |= 1u << j;
				continue;
			}
			sreq_add(c, r, m, j, m->next, len, FUSE_SR_PIECE);
			c->sub[j].inflight++;
			m->next++;
		}
	}
	return 0;
}

static void describe_wait(struct rw_fuse_comm *c, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int j = 0; j < c->nsubs && used < len; j++) {
		int n = 0;

		for (int i = 0; i < FUSE_MAX_SREQS; i++)
			n += c->sreqs[i].r && c->sreqs[i].sub == j;
		if (n)
			used += (size_t)snprintf(buf + used, len - used, "%s%s: %d request(s)",
						 used ? ", " : "", c->sub[j].nic, n);
	}
	if (!used)
		snprintf(buf, len, "the peer (nothing posted or offered)");
}

static int progress(struct rw_fuse_comm *c)
{
	bool busy = false;
	int rc;

	if (c->failed)
		return c->failed;
	rc = test_sreqs(c);
	if (!rc)
		rc = c->send ? send_progress(c) : recv_progress(c);
	if (rc)
		return rc;
	for (int q = 0; q < c->nqueue; q++)
		busy |= !c->queue[q]->complete;
	if (!busy) {
		c->moved_ms = rw_now_ms();
	} else if (rw_now_ms() - c->moved_ms >= (uint64_t)c->timeout_ms) {
		char what[256];

		describe_wait(c, what, sizeof(what));
		RW_WARN(RW_LOG_NET, "fuse: %s: nothing moved for %d ms; waiting on %s", c->vname,
			c->timeout_ms, what);
		return comm_fail(c, -1, -ETIMEDOUT, "no progress");
	}
	return 0;
}

/* --- isend, irecv, iflush, test ------------------------------------------------------ */

static int tag_check(struct rw_fuse_comm *c, int tag, const char *call)
{
	if (tag >= 0 && tag < FUSE_TAG_PIECE)
		return 0;
	RW_WARN(RW_LOG_NET, "fuse: %s: %s(tag=%d): fused devices take tags 0..%d", c->vname, call,
		tag, FUSE_TAG_PIECE - 1);
	return -EINVAL;
}

/* The piece plan of a send: a first piece of FUSE_PIECE0 bytes, then about
 * 4 x FUSE_WINDOW pieces per data connection (so that within one message
 * a faster NIC gets more of them, beyond the first window), within
 * [FUSE_PIECE_MIN, FUSE_PIECE_MAX] (larger when the message would need
 * more than FUSE_MAX_PIECES). */
static void plan(struct rw_fuse_comm *c, struct fuse_req *m)
{
	size_t rest = m->size > FUSE_PIECE0 ? m->size - FUSE_PIECE0 : 0;
	size_t p;

	if (!rest) {
		m->piece = 0;
		m->npieces = 1;
		return;
	}
	p = rest / ((size_t)(c->nsubs - 1) * FUSE_WINDOW * 4);
	p = (p + 4095) & ~(size_t)4095;
	p = RW_MAX(p, (size_t)FUSE_PIECE_MIN);
	p = RW_MIN(p, (size_t)FUSE_PIECE_MAX);
	p = RW_MAX(p, (rest + FUSE_MAX_PIECES - 2) / (FUSE_MAX_PIECES - 1));
	m->piece = p;
	m->npieces = 1 + (int)((rest + p - 1) / p);
}

int rw_fuse_isend(struct rw_net_comm *comm, void *data, size_t size, int tag, struct rw_net_mr *mr,
		  struct rw_net_req **req)
{
	struct rw_fuse_comm *c;
	struct rw_net_req *r = NULL;
	struct rw_fuse_mr *m;
	struct fuse_req *q;
	struct rw_fuse_hdr *h;
	int rc = rw_fuse_comm_check(comm, "isend", 1, &c);

	if (rc)
		return rc;
	if (c->failed)
		return c->failed;
	rc = tag_check(c, tag, "isend");
	if (!rc)
		rc = rw_fuse_mr_check(c, mr, "isend", &m);
	if (!rc)
		rc = progress(c);
	if (rc)
		return rc;
	*req = NULL;
	if (c->nqueue == FUSE_MAX_REQS || sreq_free_slots(c) < 2)
		return 0;
	q = req_get(c);
	if (!q)
		return 0;
	q->kind = FUSE_REQ_SEND;
	q->seq = c->seq;
	q->data = data;
	q->size = size;
	q->tag = tag;
	q->mr = m;
	plan(c, q);
	q->taken = calloc((size_t)q->npieces, 1);
	if (!q->taken) {
		req_put(c, q);
		return -ENOMEM;
	}
	h = &c->ctrl[q - c->reqs];
	*h = (struct rw_fuse_hdr){.magic = RW_FUSE_MAGIC,
				  .seq = q->seq,
				  .size = size,
				  .piece = (uint32_t)q->piece,
				  .npieces = (uint32_t)q->npieces};
	rc = rw_net_isend(c->sub[0].c, h, sizeof(*h), tag, c->ctrl_mr, &r);
	if (rc || !r) {
		req_put(c, q);
		return rc ? comm_fail(c, 0, rc, "isend (header)") : 0;
	}
	sreq_add(c, r, q, 0, -1, sizeof(*h), FUSE_SR_HDR);
	q->need = 1 + 1 + (q->npieces - 1); /* header, piece 0, the others */
	c->queue[c->nqueue++] = q;
	c->seq++;
	c->moved_ms = rw_now_ms();
	rc = offer(c, q, 0, 0); /* its receive is the header's: taken at once, as a rule */
	if (rc < 0)
		return rc;
	*req = &q->base;
	return 0;
}

int rw_fuse_irecv(struct rw_net_comm *comm, int n, void **data, const size_t *sizes,
		  const int *tags, struct rw_net_mr **mrs, struct rw_net_req **req)
{
	struct rw_fuse_comm *c;
	struct rw_net_req *r = NULL;
	struct rw_fuse_mr *m;
	struct fuse_req *q;
	void *bufs[2];
	size_t lens[2];
	int gtags[2], rc = rw_fuse_comm_check(comm, "irecv", 0, &c);
	struct rw_net_mr *gmrs[2];

	if (rc)
		return rc;
	if (c->failed)
		return c->failed;
	if (n != 1 || !data || !sizes || !tags) {
		RW_WARN(RW_LOG_NET,
			"fuse: %s: irecv(n=%d): a fused device takes one buffer per "
			"receive (maxRecvs 1)",
			c->vname, n);
		return -EINVAL;
	}
	rc = tag_check(c, tags[0], "irecv");
	if (!rc)
		rc = rw_fuse_mr_check(c, mrs ? mrs[0] : NULL, "irecv", &m);
	if (!rc)
		rc = progress(c);
	if (rc)
		return rc;
	*req = NULL;
	if (c->nqueue == FUSE_MAX_REQS || sreq_free_slots(c) < 1)
		return 0;
	q = req_get(c);
	if (!q)
		return 0;
	q->kind = FUSE_REQ_RECV;
	q->seq = c->seq;
	q->data = data[0];
	q->cap = sizes[0];
	q->tag = tags[0];
	q->mr = m;
	q->need = -1; /* known from the header */
	bufs[0] = &c->ctrl[q - c->reqs];
	lens[0] = sizeof(struct rw_fuse_hdr);
	gtags[0] = tags[0];
	gmrs[0] = c->ctrl_mr;
	bufs[1] = data[0];
	lens[1] = RW_MIN(sizes[0], (size_t)FUSE_PIECE0);
	gtags[1] = piece_tag(q->seq, 0);
	gmrs[1] = m ? m->sub[0] : NULL;
	rc = rw_net_irecv(c->sub[0].c, 2, bufs, lens, gtags, gmrs, &r);
	if (rc || !r) {
		req_put(c, q);
		return rc ? comm_fail(c, 0, rc, "irecv (header)") : 0;
	}
	sreq_add(c, r, q, 0, 0, lens[1], FUSE_SR_GROUP);
	c->queue[c->nqueue++] = q;
	c->seq++;
	*req = &q->base;
	return 0;
}

int rw_fuse_iflush(struct rw_net_comm *comm, int n, void **data, const int *sizes,
		   struct rw_net_mr **mrs, struct rw_net_req **req)
{
	struct rw_net_mr *smrs[RW_NET_MAX_RECVS];
	struct rw_fuse_comm *c;
	struct fuse_req *q;
	int rc = rw_fuse_comm_check(comm, "iflush", 0, &c);

	if (rc)
		return rc;
	if (c->failed)
		return c->failed;
	if (n < 1 || n > RW_NET_MAX_RECVS || !mrs)
		return -EINVAL;
	*req = NULL;
	if (sreq_free_slots(c) < c->nsubs)
		return -EAGAIN;
	q = req_get(c);
	if (!q)
		return -EAGAIN;
	q->kind = FUSE_REQ_FLUSH;
	for (int j = 0; j < c->nsubs; j++) {
		struct rw_net_req *r = NULL;

		for (int i = 0; i < n; i++) {
			struct rw_fuse_mr *m;

			rc = rw_fuse_mr_check(c, mrs[i], "iflush", &m);
			if (rc)
				break;
			smrs[i] = m ? m->sub[j] : NULL;
		}
		if (!rc)
			rc = rw_net_iflush(c->sub[j].c, n, data, sizes, smrs, &r);
		if (rc) {
			req_put(c, q); /* flushes already started complete on their own */
			return rc == -EINVAL ? rc : comm_fail(c, j, rc, "iflush");
		}
		if (r) {
			sreq_add(c, r, q, j, -1, 0, FUSE_SR_FLUSH);
			q->need++;
		}
	}
	if (q->need == 0) {
		req_put(c, q);
		return 0; /* nothing to flush */
	}
	*req = &q->base;
	return 0;
}

int rw_fuse_test(struct rw_net_req *base, int *done, size_t *sizes)
{
	struct fuse_req *q = base ? rw_container_of(base, struct fuse_req, base) : NULL;
	struct rw_fuse_comm *c;
	int rc;

	if (!q || rw_obj_check(&q->obj, FUSE_REQ_KIND)) {
		RW_WARN(RW_LOG_NET, "fuse: test(req=%p): not a request in flight", (void *)base);
		return q ? -EBADF : -EINVAL;
	}
	c = rw_fuse_comm_of(q->base.comm);
	rc = progress(c);
	if (rc) {
		req_put(c, q);
		return rc;
	}
	*done = q->complete;
	if (!q->complete)
		return 0;
	if (sizes && q->kind != FUSE_REQ_FLUSH)
		sizes[0] = q->size;
	req_put(c, q);
	return 0;
}
