/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The links of a comm: every send link connects to its peer's listen handle
 * and sends a hello (rank, link id); every accepted connection is matched to
 * its receive link by that hello, so one listener per rank serves all
 * channels and links, whatever order the connections arrive in.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll_internal.h"
#include "coll/coll_place.h"
#include "common/rw_log.h"

#define HELLO_MAGIC 0x4c485752u /* "RWHL" */
/* 2: signatures (first data message, tokens, notices); 3: tokens and
 * notices carry the collective's number, patient control links; 4: the
 * signature flags device buffers on one host, whose chunks differ; 5:
 * links send ahead (rw_net_ahead): no receive posts on the socket */
#define HELLO_VERSION 5

struct hello {
	uint32_t magic;
	uint32_t version;
	int32_t rank;
	int32_t nranks;
	int32_t id;
};
static_assert(sizeof(struct hello) <= RW_COLL_CTL_BYTES, "hello fits the ctl buffer");

/* An accepted connection whose hello has not arrived yet. */
struct pending {
	struct rw_net_comm *comm;
	struct rw_coll_ctl *ctl;
	struct rw_net_req *req;
	int dev; /* the net device of the listener it arrived on */
};

static int ctl_open(struct rw_net_comm *comm, struct rw_coll_ctl **out)
{
	struct rw_coll_ctl *ctl = calloc(1, sizeof(*ctl));
	int rc;

	if (!ctl)
		return -ENOMEM;
	rc = rw_net_reg_mr(comm, ctl->buf, sizeof(ctl->buf), RW_PTR_HOST, &ctl->mr);
	if (rc) {
		free(ctl);
		return rc;
	}
	*out = ctl;
	return 0;
}

static void ctl_close(struct rw_net_comm *comm, struct rw_coll_ctl *ctl)
{
	if (!ctl)
		return;
	if (comm && ctl->mr)
		rw_net_dereg_mr(comm, ctl->mr);
	free(ctl);
}

static void close_comm(struct rw_net_comm *comm, bool is_send)
{
	if (is_send)
		rw_net_close_send(comm);
	else
		rw_net_close_recv(comm);
}

static const char *link_name(const struct rw_coll_link *l, char *buf, size_t len)
{
	if (rw_link_is_ctrl(l))
		snprintf(buf, len, "control link");
	else if (l->id == RW_LINK_PS)
		snprintf(buf, len, "ps link");
	else if (l->id == RW_LINK_P2P)
		snprintf(buf, len, "mesh link");
	else
		snprintf(buf, len, "channel %d", l->id);
	return buf;
}

/* Both ends of every link are ours, and every receive is of one buffer
 * posted in the order of the sends: let messages go ahead of the posts
 * (rw_net_ahead), so that a message does not wait for its receive's post
 * to cross the connection first.  Transports without it match as NCCL
 * does.  0 or -errno. */
static int send_ahead(struct rw_net_comm *comm)
{
	int rc = rw_net_ahead(comm);

	return rc == -ENOTSUP ? 0 : rc;
}

/* One step of a send link: connect, register, say hello, see it leave.
 * 1 when the link is ready. */
static int send_step(struct rw_coll_comm *c, struct rw_coll_link *l,
		     const struct rw_coll_comm_args *a, bool *progressed)
{
	int rc, done = 0;

	if (!l->comm) {
		int dev = c->dev;
		const void *handle = a->handles[l->peer];

		if (l->id >= 0 && l->id < c->nchannels && a->chan_dev)
			dev = a->chan_dev[l->id];
		if (l->id >= 0 && l->id < c->nchannels && a->chan_handles && a->chan_listen)
			handle = a->chan_handles[(size_t)l->peer * (size_t)c->nchannels +
						 (size_t)l->id];
		rc = rw_net_connect(c->net, dev, handle, &l->comm);
		if (rc || !l->comm)
			return rc;
		l->dev = dev;
		*progressed = true;
		rc = send_ahead(l->comm);
		if (!rc)
			rc = ctl_open(l->comm, &l->ctl);
		if (rc)
			return rc;
		*(struct hello *)l->ctl->buf = (struct hello){.magic = HELLO_MAGIC,
							      .version = HELLO_VERSION,
							      .rank = c->rank,
							      .nranks = c->nranks,
							      .id = l->id};
	}
	if (!l->ctl_req) {
		rc = rw_net_isend(l->comm, l->ctl->buf, sizeof(struct hello), RW_COLL_TAG,
				  l->ctl->mr, &l->ctl_req);
		if (rc || !l->ctl_req)
			return rc;
		*progressed = true;
	}
	rc = rw_net_test(l->ctl_req, &done, NULL);
	if (rc) {
		l->ctl_req = NULL; /* test frees on error */
		return rc;
	}
	if (!done)
		return 0;
	l->ctl_req = NULL;
	*progressed = true;
	return 1;
}

/* The receive link a hello names, or NULL. */
static struct rw_coll_link *match_hello(struct rw_coll_comm *c, const struct hello *h)
{
	for (int i = 0; i < c->nlinks; i++) {
		struct rw_coll_link *l = &c->links[i];

		if (!l->is_send && !l->comm && l->peer == h->rank && l->id == h->id)
			return l;
	}
	return NULL;
}

/* One step of an accepted connection: post the hello receive, match it.
 * 1 when it was handed to its link. */
static int pending_step(struct rw_coll_comm *c, struct pending *p, bool *progressed)
{
	size_t size = RW_COLL_CTL_BYTES, got = 0;
	int tag = RW_COLL_TAG, done = 0, rc;
	void *data = p->ctl->buf;
	const struct hello *h = (const void *)p->ctl->buf;
	struct rw_coll_link *l;

	if (!p->req) {
		rc = rw_net_irecv(p->comm, 1, &data, &size, &tag, &p->ctl->mr, &p->req);
		if (rc || !p->req)
			return rc;
		*progressed = true;
	}
	rc = rw_net_test(p->req, &done, &got);
	if (rc) {
		p->req = NULL;
		return rc;
	}
	if (!done)
		return 0;
	p->req = NULL;
	*progressed = true;
	if (got != sizeof(*h) || h->magic != HELLO_MAGIC || h->version != HELLO_VERSION ||
	    h->nranks != c->nranks || !(l = match_hello(c, h))) {
		RW_WARN(RW_LOG_INIT | RW_LOG_COLL,
			"coll: rank %d: unexpected hello (%zu bytes: rank %d of %d, link %d, "
			"version %d, this build's %d): is another job, or another build of "
			"ringway, using this listener?",
			c->rank, got, got >= sizeof(*h) ? h->rank : -1,
			got >= sizeof(*h) ? h->nranks : -1, got >= sizeof(*h) ? h->id : -1,
			got >= sizeof(*h) ? (int)h->version : -1, HELLO_VERSION);
		return -EPROTO;
	}
	l->comm = p->comm;
	l->ctl = p->ctl;
	l->dev = p->dev;
	p->comm = NULL;
	p->ctl = NULL;
	/* a control link keeps a receive posted across idle time (coll_ctl.c) */
	if (rw_link_is_ctrl(l) && (rc = rw_net_patient(l->comm)) != 0) {
		RW_WARN(RW_LOG_INIT | RW_LOG_COLL,
			"coll: rank %d: the control link from rank %d (%s): transport %s cannot "
			"keep a receive posted across idle time: %s",
			c->rank, l->peer, c->names[l->peer], rw_net_name(l->comm->net),
			strerror(-rc));
		return rc;
	}
	return 1;
}

static void report_missing(const struct rw_coll_comm *c, const bool *ready)
{
	char missing[512] = "", one[64];
	size_t used = 0;

	for (int i = 0; i < c->nlinks && used < sizeof(missing) - 1; i++) {
		const struct rw_coll_link *l = &c->links[i];
		int n;

		if (ready[i])
			continue;
		n = snprintf(missing + used, sizeof(missing) - used, "%s%s %s rank %d (%s)",
			     used ? ", " : "", link_name(l, one, sizeof(one)),
			     l->is_send ? "to" : "from", l->peer, c->names[l->peer]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	RW_WARN(RW_LOG_INIT | RW_LOG_COLL,
		"coll: rank %d: connections not up within RINGWAY_TIMEOUT_MS=%d: %s", c->rank,
		c->timeout_ms, missing);
}

int rw_coll_links_connect(struct rw_coll_comm *c, const void *const *handles,
			  struct rw_net_listen *listen)
{
	struct rw_coll_comm_args a = {.handles = handles, .listen = listen};

	return rw_coll_links_connect_args(c, &a);
}

int rw_coll_links_connect_args(struct rw_coll_comm *c, const struct rw_coll_comm_args *a)
{
	uint64_t deadline = rw_now_ms() + (uint64_t)c->timeout_ms;
	struct rw_net_listen *listens[RW_COLL_MAX_LISTENS];
	int listen_dev[RW_COLL_MAX_LISTENS];
	unsigned nrecv = 0;
	int accepted = 0, left = c->nlinks, nlisten = 0, turn = 0, rc = 0;
	struct pending *pend;
	bool *ready;

	/* the listeners connections arrive on: the comm's, and the channels' */
	listen_dev[nlisten] = c->dev;
	listens[nlisten++] = a->listen;
	for (int ch = 0; a->chan_listen && ch < c->nchannels; ch++) {
		bool seen = false;

		for (int i = 0; i < nlisten; i++)
			seen |= listens[i] == a->chan_listen[ch];
		if (!seen && a->chan_listen[ch] && nlisten < RW_COLL_MAX_LISTENS) {
			listen_dev[nlisten] = a->chan_dev ? a->chan_dev[ch] : c->dev;
			listens[nlisten++] = a->chan_listen[ch];
		}
	}
	for (int i = 0; i < c->nlinks; i++)
		nrecv += !c->links[i].is_send;
	pend = calloc((size_t)nrecv + 1, sizeof(*pend));
	ready = calloc((size_t)c->nlinks + 1, sizeof(*ready));
	if (!pend || !ready) {
		rc = -ENOMEM;
		goto out_free;
	}
	while (left > 0) {
		bool progressed = false;

		for (int i = 0; i < c->nlinks && !rc; i++) {
			struct rw_coll_link *l = &c->links[i];

			if (!l->is_send || ready[i])
				continue;
			rc = send_step(c, l, a, &progressed);
			if (rc == 1) {
				ready[i] = true;
				left--;
				rc = 0;
			}
		}
		for (int k = 0; k < nlisten && !rc && (unsigned)accepted < nrecv; k++) {
			struct rw_net_comm *comm = NULL;

			turn = (turn + 1) % nlisten; /* every listener gets its turn */
			rc = rw_net_accept(listens[turn], &comm);
			if (!rc && comm) {
				pend[accepted].comm = comm;
				pend[accepted].dev = listen_dev[turn];
				rc = send_ahead(comm);
				if (!rc)
					rc = ctl_open(comm, &pend[accepted].ctl);
				accepted++;
				progressed = true;
			}
		}
		for (int i = 0; i < accepted && !rc; i++) {
			if (!pend[i].comm)
				continue;
			rc = pending_step(c, &pend[i], &progressed);
			if (rc == 1) {
				left--;
				rc = 0;
			}
		}
		for (int i = 0; i < c->nlinks; i++) {
			if (!c->links[i].is_send && c->links[i].comm && !ready[i])
				ready[i] = true;
		}
		if (rc)
			goto out_free; /* the transport or the hello check logged it */
		if (left > 0 && rw_now_ms() > deadline) {
			report_missing(c, ready);
			rc = -ETIMEDOUT;
			goto out_free;
		}
		if (!progressed)
			usleep(200);
	}

out_free:
	if (pend) {
		for (int i = 0; i < accepted; i++) {
			if (!pend[i].comm)
				continue;
			if (pend[i].req)
				free(pend[i].ctl); /* the close below takes the mr */
			else
				ctl_close(pend[i].comm, pend[i].ctl);
			rw_net_close_recv(pend[i].comm); /* cancels its hello receive */
		}
	}
	free(pend);
	free(ready);
	return rc;
}

void rw_coll_links_close(struct rw_coll_comm *c)
{
	for (int i = 0; i < c->nlinks; i++) {
		struct rw_coll_link *l = &c->links[i];

		if (!l->comm) {
			free(l->ctl);
			l->ctl = NULL;
			continue;
		}
		if (l->ctl_req || l->sq_n || l->rq_n) {
			/* a request still uses the buffer: closing cancels it and
			 * takes its registration along */
			free(l->ctl);
		} else {
			ctl_close(l->comm, l->ctl);
		}
		l->ctl = NULL;
		l->ctl_req = NULL;
		l->sq_n = l->rq_n = 0;
		close_comm(l->comm, l->is_send);
		l->comm = NULL;
	}
}
