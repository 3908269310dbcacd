/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's communicator: its links and staging, user registrations,
 * the queue of collectives and their progress, and what happens when a
 * peer fails (see rw_coll.h).
 *
 * Control links.  Each rank has a control link to and from both ring
 * neighbours.  Every collective ends with a token sent on both outgoing
 * ones, and a receive is posted on an incoming one exactly while a token is
 * due on it, so no receive waits across idle time (transports fail a
 * receive that waits longer than RINGWAY_TIMEOUT_MS).  The first rank to see
 * a failure sends a notice instead (which rank failed, who saw it) to both
 * neighbours, each of which forwards it once in the same way, so every rank
 * learns which rank failed instead of only that its neighbour went quiet.
 * After a failure the data links are closed at once, which cancels every
 * transfer into or out of the user's buffers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll_internal.h"
#include "common/rw_log.h"
#include "common/rw_nvtx.h"

#define NOTICE_MAGIC 0x42415752u /* "RWAB" */
#define TOKEN_MAGIC 0x4b4f5752u  /* "RWOK" */
#define NOTICE_GRACE_MS 200      /* how long a link error waits for a notice */
#define NOTICE_OFF (RW_COLL_CTL_BYTES / 2)

struct token {
	uint32_t magic;
	uint32_t rsvd;
	uint64_t rsvd2;
};
static_assert(sizeof(struct token) <= NOTICE_OFF, "token fits before the notice");

struct notice {
	uint32_t magic;
	int32_t failed;   /* the rank that failed */
	int32_t reporter; /* the rank that saw it */
	int32_t err;      /* -errno the reporter saw */
};
static_assert(NOTICE_OFF + sizeof(struct notice) <= RW_COLL_CTL_BYTES,
	      "notice fits the ctl buffer");

static_assert((int)RW_COLL_ALLREDUCE == (int)RW_RING_ALLREDUCE &&
		      (int)RW_COLL_REDUCE_SCATTER == (int)RW_RING_REDUCE_SCATTER &&
		      (int)RW_COLL_ALLGATHER == (int)RW_RING_ALLGATHER &&
		      (int)RW_COLL_BROADCAST == (int)RW_RING_BROADCAST,
	      "collective kinds are the ring's");

static int next_rank(const struct rw_coll_comm *c)
{
	return (c->rank + 1) % c->nranks;
}

static int prev_rank(const struct rw_coll_comm *c)
{
	return (c->rank + c->nranks - 1) % c->nranks;
}

int rw_coll_comm_nranks(const struct rw_coll_comm *c)
{
	return c->nranks;
}

int rw_coll_comm_rank(const struct rw_coll_comm *c)
{
	return c->rank;
}

int rw_coll_comm_error(const struct rw_coll_comm *c)
{
	return c->error;
}

/* --- links and staging -------------------------------------------------------- */

static void set_link(struct rw_coll_link *l, int peer, bool is_send, int id)
{
	*l = (struct rw_coll_link){ .peer = peer, .is_send = is_send, .id = id };
}

static int links_alloc(struct rw_coll_comm *c)
{
	int next = next_rank(c), prev = prev_rank(c), n;

	c->nps = 0;
	c->ps_first = -1;
	if (c->algo == RW_COLL_ALGO_PS)
		c->nps = c->rank == 0 ? c->nranks - 1 : 1;
	c->nlinks = 2 * c->nchannels + 4 + 2 * c->nps;
	c->links = calloc((size_t)c->nlinks, sizeof(*c->links));
	if (!c->links)
		return -ENOMEM;
	for (int ch = 0; ch < c->nchannels; ch++) {
		set_link(&c->links[rw_link_send(ch)], next, true, ch);
		set_link(&c->links[rw_link_recv(ch)], prev, false, ch);
	}
	set_link(&c->links[rw_link_ctrl(c, 0)], next, true, RW_LINK_CTRL_FWD);
	set_link(&c->links[rw_link_ctrl(c, 1)], prev, false, RW_LINK_CTRL_FWD);
	set_link(&c->links[rw_link_ctrl(c, 2)], prev, true, RW_LINK_CTRL_BWD);
	set_link(&c->links[rw_link_ctrl(c, 3)], next, false, RW_LINK_CTRL_BWD);
	n = rw_link_ctrl(c, 4);
	if (c->nps)
		c->ps_first = n;
	for (int i = 0; i < c->nps; i++) {
		int peer = c->rank == 0 ? i + 1 : 0;

		set_link(&c->links[n + 2 * i], peer, true, RW_LINK_PS);
		set_link(&c->links[n + 2 * i + 1], peer, false, RW_LINK_PS);
	}
	return 0;
}

static void stage_free(struct rw_coll_comm *c, struct rw_coll_stage *s,
		       int send_link, int recv_link)
{
	struct rw_net_comm *sc = send_link >= 0 ? c->links[send_link].comm : NULL;
	struct rw_net_comm *rc = recv_link >= 0 ? c->links[recv_link].comm : NULL;

	if (s->mr_send && sc)
		rw_net_dereg_mr(sc, s->mr_send);
	if (s->mr_recv && rc)
		rw_net_dereg_mr(rc, s->mr_recv);
	if (s->out_mr && sc)
		rw_net_dereg_mr(sc, s->out_mr);
	free(s->buf);
	rw_coll_stage_device_free(s);
	memset(s, 0, sizeof(*s));
}

/* Staging of NSLOTS slots, registered on the given links (-1: none). */
static int stage_alloc(struct rw_coll_comm *c, struct rw_coll_stage *s,
		       int send_link, int recv_link)
{
	size_t bytes = RW_COLL_NSLOTS * c->chunk_bytes;
	int rc;

	s->buf = aligned_alloc(4096, bytes);
	if (!s->buf)
		return -ENOMEM;
	if (send_link >= 0) {
		rc = rw_net_reg_mr(c->links[send_link].comm, s->buf, bytes, RW_PTR_HOST,
				   &s->mr_send);
		if (rc)
			goto err_free;
	}
	if (recv_link >= 0) {
		rc = rw_net_reg_mr(c->links[recv_link].comm, s->buf, bytes, RW_PTR_HOST,
				   &s->mr_recv);
		if (rc)
			goto err_free;
	}
	return 0;

err_free:
	stage_free(c, s, send_link, recv_link);
	return rc;
}

int rw_coll_stage_ps(struct rw_coll_comm *c)
{
	int rc;

	if (c->ps_stage || c->rank != 0 || c->nps == 0)
		return 0;
	c->ps_stage = calloc((size_t)c->nps, sizeof(*c->ps_stage));
	if (!c->ps_stage)
		return -ENOMEM;
	for (int i = 0; i < c->nps; i++) {
		rc = stage_alloc(c, &c->ps_stage[i], -1, c->ps_first + 2 * i + 1);
		if (rc) {
			while (i-- > 0)
				stage_free(c, &c->ps_stage[i], -1, c->ps_first + 2 * i + 1);
			free(c->ps_stage);
			c->ps_stage = NULL;
			return rc;
		}
	}
	return 0;
}

static void stages_free(struct rw_coll_comm *c)
{
	if (c->stage) {
		for (int ch = 0; ch < c->nchannels; ch++)
			stage_free(c, &c->stage[ch], rw_link_send(ch), rw_link_recv(ch));
	}
	if (c->ps_stage) {
		for (int i = 0; i < c->nps; i++)
			stage_free(c, &c->ps_stage[i], -1, c->ps_first + 2 * i + 1);
	}
	free(c->stage);
	free(c->ps_stage);
	c->stage = c->ps_stage = NULL;
}

/* --- control links: tokens and failure notices --------------------------------- */

/* Outgoing control links are rw_link_ctrl(c, 0) (next) and (c, 2) (prev);
 * incoming ones (c, 1) (prev) and (c, 3) (next). */

static void ctl_sends_reap(struct rw_coll_link *l)
{
	while (l->sq_n) {
		int done = 0, rc = rw_net_test(l->sq[l->sq_head], &done, NULL);

		if (!rc && !done)
			return;
		/* an error freed the request: the neighbour is gone, which the
		 * data links report */
		l->sq_head = (l->sq_head + 1) % RW_COLL_CTL_SENDS;
		l->sq_n--;
	}
}

/* Send len bytes at off of l's ctl buffer.  -EAGAIN: no room now. */
static int ctl_send(struct rw_coll_link *l, size_t off, size_t len)
{
	struct rw_net_req *req = NULL;
	int rc;

	if (!l->comm)
		return -ENOTCONN;
	ctl_sends_reap(l);
	if (l->sq_n == RW_COLL_CTL_SENDS)
		return -EAGAIN;
	rc = rw_net_isend(l->comm, l->ctl->buf + off, len, RW_COLL_TAG, l->ctl->mr, &req);
	if (rc)
		return rc;
	if (!req)
		return -EAGAIN;
	l->sq[(l->sq_head + l->sq_n++) % RW_COLL_CTL_SENDS] = req;
	return 0;
}

static int post_ctl_recv(struct rw_coll_link *l)
{
	size_t size = RW_COLL_CTL_BYTES;
	int tag = RW_COLL_TAG;
	void *data = l->ctl->buf;

	return rw_net_irecv(l->comm, 1, &data, &size, &tag, &l->ctl->mr, &l->ctl_req);
}

static void ctl_link_lost(struct rw_coll_link *l)
{
	l->ctl_req = NULL;
	if (l->is_send)
		rw_net_close_send(l->comm);
	else
		rw_net_close_recv(l->comm); /* takes the ctl registration */
	l->comm = NULL;
	free(l->ctl);
	l->ctl = NULL;
}

/*
 * Take what arrived on the incoming control links: tokens are counted, a
 * receive stays posted while one is due.  1: a notice arrived (in *n);
 * 2: a link failed (*dead = its peer, *err = the error); 0: nothing new.
 */
static int ctl_poll(struct rw_coll_comm *c, struct notice *n, int *dead, int *err)
{
	for (int i = 0; i < 4; i += 2)
		if (c->links[rw_link_ctrl(c, i)].comm)
			ctl_sends_reap(&c->links[rw_link_ctrl(c, i)]);
	for (int i = 1; i < 4; i += 2) {
		struct rw_coll_link *l = &c->links[rw_link_ctrl(c, i)];

		while (l->comm) {
			const struct token *t = (const void *)l->ctl->buf;
			size_t got = 0;
			int done = 0, rc = 0;

			if (!l->ctl_req) {
				if (l->tokens >= c->tokens_due)
					break;
				rc = post_ctl_recv(l);
			}
			if (!rc && l->ctl_req)
				rc = rw_net_test(l->ctl_req, &done, &got);
			if (rc) {
				*dead = l->peer;
				*err = rc;
				ctl_link_lost(l);
				return 2;
			}
			if (!done)
				break;
			l->ctl_req = NULL;
			if (got >= sizeof(*t) && t->magic == TOKEN_MAGIC) {
				l->tokens++;
				continue;
			}
			memcpy(n, l->ctl->buf, sizeof(*n));
			if (got == sizeof(*n) && n->magic == NOTICE_MAGIC && n->failed >= 0 &&
			    n->failed < c->nranks)
				return 1;
			RW_WARN(RW_LOG_COLL,
				"coll: rank %d: garbled control message (%zu bytes) from rank %d",
				c->rank, got, l->peer);
			*n = (struct notice){ .magic = NOTICE_MAGIC, .failed = l->peer,
					      .reporter = c->rank, .err = -EPROTO };
			return 1;
		}
	}
	return 0;
}

/* A collective finished here: one token to each neighbour.  -EAGAIN: try
 * again (the collective is not reported done before its tokens left). */
static int tokens_send(struct rw_coll_req *r)
{
	struct rw_coll_comm *c = r->comm;
	const struct token t = { .magic = TOKEN_MAGIC };

	for (int i = 0; i < 2; i++) {
		struct rw_coll_link *l = &c->links[rw_link_ctrl(c, 2 * i)];
		int rc;

		if (r->tokens_sent & (1u << i))
			continue;
		if (l->comm) {
			memcpy(l->ctl->buf, &t, sizeof(t));
			rc = ctl_send(l, 0, sizeof(t));
			if (rc == -EAGAIN)
				return rc;
			/* other errors: the neighbour is gone; its link says so */
		}
		r->tokens_sent |= 1u << i;
	}
	return 0;
}

/* Tell both neighbours (but not the failed rank) once. */
static void notices_send(struct rw_coll_comm *c, const struct notice *n)
{
	for (int i = 0; i < 4; i += 2) {
		struct rw_coll_link *l = &c->links[rw_link_ctrl(c, i)];

		if (!l->comm || l->notice_sent || l->peer == n->failed)
			continue;
		memcpy(l->ctl->buf + NOTICE_OFF, n, sizeof(*n));
		l->notice_sent = true;
		ctl_send(l, NOTICE_OFF, sizeof(*n)); /* best effort */
	}
}

/* Close the channel and ps links: cancels every transfer of user data. */
static void close_data_links(struct rw_coll_comm *c)
{
	for (int i = 0; i < c->nlinks; i++) {
		struct rw_coll_link *l = &c->links[i];

		if (!l->comm || rw_link_is_ctrl(l))
			continue;
		/* staging registrations go with the comm */
		if (l->is_send)
			rw_net_close_send(l->comm);
		else
			rw_net_close_recv(l->comm);
		l->comm = NULL;
		free(l->ctl); /* the close took its registration */
		l->ctl = NULL;
		l->ctl_req = NULL;
	}
}

static const char *kind_of(const struct rw_coll_req *r)
{
	return r ? rw_coll_kind_name(r->a.kind) : "collective";
}

/* A notice arrived: fail the comm, say which rank failed, pass it on. */
/* Where r stands, for messages: what it waits on. */
struct where {
	int peer, step;
	size_t chunk;
	const char *what;
};

static struct where where_of(const struct rw_coll_req *r)
{
	struct where w = { .peer = r ? r->comm->rank : 0, .step = -1, .what = "waiting on" };

	if (r && r->algo)
		r->ops->waiting(r, &w.peer, &w.step, &w.chunk, &w.what);
	return w;
}

/* A notice arrived: fail the comm, say which rank failed, pass it on. */
static void accept_notice(struct rw_coll_comm *c, const struct rw_coll_req *r,
			  const struct notice *n)
{
	struct where w = where_of(r);

	if (c->error)
		return;
	c->error = -ECONNABORTED;
	c->failed_rank = n->failed;
	if (n->err == -ETIMEDOUT)
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: %s aborted: rank %d gave up waiting on rank %d (%s) after RINGWAY_TIMEOUT_MS; here %s rank %d (%s) at step %d, chunk %zu",
			c->rank, kind_of(r), n->reporter, n->failed, c->names[n->failed], w.what,
			w.peer, c->names[w.peer], w.step, w.chunk);
	else
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: %s aborted at step %d, chunk %zu: rank %d (%s) failed, as rank %d reports (%s)",
			c->rank, kind_of(r), w.step, w.chunk, n->failed, c->names[n->failed],
			n->reporter, strerror(-n->err));
	RW_NVTX_MARK("ringway: peer failed");
	notices_send(c, n);
	close_data_links(c);
}

static bool is_connection_error(int err)
{
	switch (-err) {
	case ECONNRESET:
	case ECONNREFUSED:
	case ECONNABORTED:
	case EPIPE:
	case ENOTCONN:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return true;
	default:
		return false;
	}
}

int rw_coll_fail(struct rw_coll_req *r, int err, int peer, const char *what,
		 int step, size_t chunk)
{
	struct rw_coll_comm *c = r->comm;
	struct notice n = { .magic = NOTICE_MAGIC, .failed = peer,
			    .reporter = c->rank, .err = err };

	if (c->error)
		return c->error;
	if (peer != c->rank && is_connection_error(err)) {
		/* A neighbour that closed its links because a third rank
		 * failed has sent a notice first: give it a moment. */
		uint64_t until = rw_now_ms() + NOTICE_GRACE_MS;
		int dead = -1, lost = 0, got;

		while ((got = ctl_poll(c, &n, &dead, &lost)) != 1 && rw_now_ms() < until) {
			if (got == 2 && dead == peer)
				break;
			usleep(1000);
		}
		if (got == 1) {
			accept_notice(c, r, &n);
			return c->error;
		}
		n = (struct notice){ .magic = NOTICE_MAGIC, .failed = peer,
				     .reporter = c->rank, .err = err };
	}
	if (err == -ETIMEDOUT) {
		/* the transport's timeout or ours: name what is most stuck */
		struct where w = where_of(r);

		if (w.peer == c->rank) /* nothing of the data path is pending */
			w = (struct where){ .peer = peer, .step = step, .chunk = chunk,
					    .what = what };
		peer = w.peer;
		n.failed = peer;
		c->error = err;
		c->failed_rank = peer;
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: %s: nothing moved for RINGWAY_TIMEOUT_MS=%d ms %s rank %d (%s) at step %d, chunk %zu",
			c->rank, kind_of(r), c->timeout_ms, w.what, peer, c->names[peer], w.step,
			w.chunk);
		RW_NVTX_MARK("ringway: collective timed out");
		notices_send(c, &n);
		close_data_links(c);
		return err;
	}
	if (step < 0) { /* not from the data path: say where the collective is */
		struct where w = where_of(r);

		step = w.step;
		chunk = w.chunk;
	}
	c->error = err;
	c->failed_rank = peer;
	if (peer == c->rank)
		RW_WARN(RW_LOG_COLL, "coll: rank %d: %s failed here (%s) at step %d, chunk %zu: %s",
			c->rank, kind_of(r), what, step, chunk, strerror(-err));
	else
		RW_WARN(RW_LOG_COLL,
			"coll: rank %d: %s: %s rank %d (%s) failed at step %d, chunk %zu: %s",
			c->rank, kind_of(r), what, peer, c->names[peer], step, chunk,
			strerror(-err));
	RW_NVTX_MARK("ringway: collective failed");
	notices_send(c, &n);
	close_data_links(c);
	return err;
}

/* --- create / destroy ----------------------------------------------------- */

int rw_coll_comm_create(const struct rw_coll_comm_args *a, struct rw_coll_comm **out)
{
	struct rw_coll_comm *c;
	int rc;

	if (!a || !a->net || !a->cfg || !out || a->nranks < 1 || a->rank < 0 ||
	    a->rank >= a->nranks || (a->nranks > 1 && (!a->handles || !a->listen))) {
		RW_WARN(RW_LOG_COLL | RW_LOG_INIT, "coll: comm_create: bad arguments (rank %d of %d)",
			a ? a->rank : -1, a ? a->nranks : -1);
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->net = a->net;
	c->dev = a->dev;
	c->nranks = a->nranks;
	c->rank = a->rank;
	c->nchannels = (int)a->cfg->nchannels;
	c->algo = a->cfg->algo == RW_COLL_ALGO_PS ? RW_COLL_ALGO_PS : RW_COLL_ALGO_RING;
	c->chunk_bytes = RW_MAX(a->cfg->chunk_bytes, (size_t)4096);
	c->chunk_bytes = (c->chunk_bytes + 63) & ~(size_t)63;
	c->timeout_ms = (int)a->cfg->timeout_ms;
	c->failed_rank = -1;
	c->names = calloc((size_t)c->nranks, sizeof(*c->names));
	if (!c->names) {
		rc = -ENOMEM;
		goto err_free;
	}
	for (int r = 0; r < c->nranks; r++)
		snprintf(c->names[r], sizeof(c->names[r]), "%s",
			 a->peer_names && a->peer_names[r] ? a->peer_names[r] : "no address");
	if (c->nranks == 1) {
		*out = c;
		return 0;
	}
	rc = links_alloc(c);
	if (rc)
		goto err_free;
	rc = rw_coll_links_connect(c, a->handles, a->listen);
	if (rc)
		goto err_close;
	c->stage = calloc((size_t)c->nchannels, sizeof(*c->stage));
	if (!c->stage) {
		rc = -ENOMEM;
		goto err_close;
	}
	for (int ch = 0; ch < c->nchannels; ch++) {
		rc = stage_alloc(c, &c->stage[ch], rw_link_send(ch), rw_link_recv(ch));
		if (rc)
			goto err_close;
	}
	RW_INFO(RW_LOG_INIT | RW_LOG_COLL,
		"coll: rank %d of %d: %d channel(s), next rank %d at %s, chunk %zu bytes, %s",
		c->rank, c->nranks, c->nchannels, next_rank(c), c->names[next_rank(c)],
		c->chunk_bytes, c->algo == RW_COLL_ALGO_PS ? "ps" : "ring");
	*out = c;
	return 0;

err_close:
	stages_free(c);
	rw_coll_links_close(c);
err_free:
	free(c->links);
	free(c->names);
	free(c);
	return rc;
}

/*
 * Before closing: take the tokens the neighbours owe for the last
 * collectives and see ours (and a notice) leave, so that no transfer is
 * cut by the close.  Bounded by the timeout; a failed comm only gives its
 * sends a second.
 */
static void quiesce(struct rw_coll_comm *c)
{
	uint64_t until = rw_now_ms() + (c->error ? 1000 : (uint64_t)c->timeout_ms);

	if (c->nranks == 1 || !c->links)
		return;
	for (;;) {
		bool pending = false;
		struct notice n;
		int dead, lost;

		if (!c->error) {
			ctl_poll(c, &n, &dead, &lost); /* a late notice changes nothing now */
		} else {
			for (int i = 0; i < 4; i += 2)
				if (c->links[rw_link_ctrl(c, i)].comm)
					ctl_sends_reap(&c->links[rw_link_ctrl(c, i)]);
		}
		for (int i = 0; i < 4; i++) {
			const struct rw_coll_link *l = &c->links[rw_link_ctrl(c, i)];

			if (!l->comm)
				continue;
			if (l->is_send ? l->sq_n > 0 : !c->error && l->tokens < c->tokens_due)
				pending = true;
		}
		if (!pending || rw_now_ms() > until)
			return;
		usleep(200);
	}
}

static void req_free(struct rw_coll_req *r)
{
	free(r->seg);
	free(r);
}

static void finish(struct rw_coll_req *r, enum rw_coll_state state, int rc);

void rw_coll_comm_destroy(struct rw_coll_comm *c)
{
	if (!c)
		return;
	while (c->head) {
		struct rw_coll_req *r = c->head;

		finish(r, RW_COLL_FAILED, -ECANCELED);
		req_free(r);
	}
	quiesce(c);
	stages_free(c);
	rw_coll_links_close(c);
	free(c->links);
	free(c->names);
	free(c);
}

/* --- registrations ------------------------------------------------------------ */

static int reg_common(struct rw_coll_comm *c, void *data, size_t size, int type,
		      bool dmabuf, uint64_t offset, int fd, struct rw_coll_mr **out)
{
	struct rw_coll_mr *mr;
	int rc = 0;

	if (!c || !out || (!data && size)) {
		RW_WARN(RW_LOG_COLL, "coll: reg_mr(data=%p, size=%zu): bad arguments", data, size);
		return -EINVAL;
	}
	mr = calloc(1, sizeof(*mr) + (size_t)c->nlinks * sizeof(mr->mrs[0]));
	if (!mr)
		return -ENOMEM;
	mr->data = data;
	mr->size = size;
	mr->type = type;
	mr->nlinks = c->nlinks;
	for (int i = 0; i < c->nlinks && !rc; i++) {
		struct rw_coll_link *l = &c->links[i];

		if (!l->comm || rw_link_is_ctrl(l))
			continue;
		rc = dmabuf ? rw_net_reg_mr_dmabuf(l->comm, data, size, type, offset, fd,
						   &mr->mrs[i])
			    : rw_net_reg_mr(l->comm, data, size, type, &mr->mrs[i]);
	}
	if (rc) {
		rw_coll_dereg_mr(c, mr);
		return rc;
	}
	*out = mr;
	return 0;
}

int rw_coll_reg_mr(struct rw_coll_comm *c, void *data, size_t size, int type,
		   struct rw_coll_mr **mr)
{
	return reg_common(c, data, size, type, false, 0, -1, mr);
}

int rw_coll_reg_mr_dmabuf(struct rw_coll_comm *c, void *data, size_t size,
			  int type, uint64_t offset, int fd, struct rw_coll_mr **mr)
{
	return reg_common(c, data, size, type, true, offset, fd, mr);
}

int rw_coll_dereg_mr(struct rw_coll_comm *c, struct rw_coll_mr *mr)
{
	int rc = 0;

	if (!mr)
		return 0;
	for (int i = 0; i < mr->nlinks && i < c->nlinks; i++) {
		struct rw_coll_link *l = &c->links[i];

		/* a closed link took its registrations with it */
		if (mr->mrs[i] && l->comm) {
			int r = rw_net_dereg_mr(l->comm, mr->mrs[i]);

			rc = rc ? rc : r;
		}
	}
	free(mr);
	return rc;
}

/* --- the queue ------------------------------------------------------------- */

/* Leave the queue: release what the collective held. */
static void finish(struct rw_coll_req *r, enum rw_coll_state state, int rc)
{
	struct rw_coll_comm *c = r->comm;
	struct rw_coll_req **link;

	for (link = &c->head; *link && *link != r; link = &(*link)->next)
		;
	if (*link) {
		*link = r->next;
		if (c->tail == r) {
			c->tail = NULL;
			for (struct rw_coll_req *q = c->head; q; q = q->next)
				c->tail = q;
		}
	}
	r->next = NULL;
	if (r->algo)
		r->ops->fini(r);
	r->algo = NULL;
	if (r->own_send_mr)
		rw_coll_dereg_mr(c, r->a.send_mr);
	if (r->own_recv_mr)
		rw_coll_dereg_mr(c, r->a.recv_mr);
	r->own_send_mr = r->own_recv_mr = false;
	while (r->nvtx_depth > 0) {
		RW_NVTX_POP();
		r->nvtx_depth--;
	}
	r->state = state;
	r->rc = rc;
}

static void fail_queue(struct rw_coll_comm *c)
{
	while (c->head)
		finish(c->head, RW_COLL_FAILED, c->error);
}

static void progress_comm(struct rw_coll_comm *c)
{
	struct rw_coll_req *r;

	while ((r = c->head) != NULL) {
		bool progressed = false;
		uint64_t now;
		int rc;

		if (c->error) {
			fail_queue(c);
			return;
		}
		if (r->state == RW_COLL_QUEUED) {
			rc = rw_coll_activate(r);
			if (rc) {
				finish(r, RW_COLL_FAILED, rc); /* nothing was sent */
				continue;
			}
			r->state = RW_COLL_RUNNING;
			r->last_progress_ms = rw_now_ms();
			if (c->nranks > 1)
				c->tokens_due++;
		}
		if (c->nranks > 1) {
			struct notice n;
			int dead = -1, lost = 0, got = ctl_poll(c, &n, &dead, &lost);

			if (got == 1)
				accept_notice(c, r, &n);
			else if (got == 2)
				rw_coll_fail(r, lost, dead, "the control link from", -1, 0);
			if (c->error)
				continue; /* the loop fails the queue */
		}
		rc = r->ops->progress(r, &progressed);
		if (rc < 0) {
			if (!c->error) /* a local failure: the others must hear of it */
				rw_coll_fail(r, rc, c->rank, "local", -1, 0);
			finish(r, RW_COLL_FAILED, c->error ? c->error : rc);
			continue;
		}
		if (rc == 1 && c->nranks > 1 && tokens_send(r) == -EAGAIN)
			rc = 0; /* done once the tokens have left */
		if (rc == 1) {
			c->moves++;
			finish(r, RW_COLL_DONE, 0);
			continue;
		}
		now = rw_now_ms();
		if (progressed) {
			c->moves++;
			r->last_progress_ms = now;
		} else if (now - r->last_progress_ms > (uint64_t)c->timeout_ms) {
			int peer = c->rank, step = -1;
			size_t chunk = 0;
			const char *what = "waiting on";

			r->ops->waiting(r, &peer, &step, &chunk, &what);
			rw_coll_fail(r, -ETIMEDOUT, peer, what, step, chunk);
			continue; /* the loop fails the queue */
		}
		return;
	}
}

int rw_coll_test(struct rw_coll_req *r, int *done, size_t *bytes)
{
	int rc;

	if (!r || !done) {
		RW_WARN(RW_LOG_COLL, "coll: test(req=%p, done=%p): bad arguments", (void *)r,
			(void *)done);
		return -EINVAL;
	}
	if (r->state == RW_COLL_QUEUED || r->state == RW_COLL_RUNNING)
		progress_comm(r->comm);
	switch (r->state) {
	case RW_COLL_DONE:
		*done = 1;
		if (bytes)
			*bytes = r->bytes;
		req_free(r);
		return 0;
	case RW_COLL_FAILED:
		rc = r->rc;
		req_free(r);
		return rc;
	default:
		*done = 0;
		return 0;
	}
}

int rw_coll_enqueue(struct rw_coll_req *r)
{
	struct rw_coll_comm *c = r->comm;

	r->state = RW_COLL_QUEUED;
	r->next = NULL;
	if (c->tail)
		c->tail->next = r;
	else
		c->head = r;
	c->tail = r;
	return 0;
}

void rw_coll_req_free(struct rw_coll_req *r)
{
	req_free(r);
}
