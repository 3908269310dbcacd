/* SPDX-License-Identifier: Apache-2.0 */
/* Comms: set-up, failure, close; memory registrations; request slabs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/socket/sock_internal.h"

/* Most bytes close reads from a stream so that unread input (messages or
 * posts of receives nobody filled) does not turn the close into a reset. */
#define CLOSE_DRAIN_BYTES (1 << 20)

const uint32_t rw_sock_comm_kinds[2] = {RW_SOCK_SEND_MAGIC, RW_SOCK_RECV_MAGIC};

struct rw_sock_comm *rw_sock_comm_alloc(struct rw_sock_net *net, uint32_t kind, const char *peer)
{
	/* A full graveyard gives its oldest shell (its generation and its free
	 * requests go on): closed comms cost no more than RW_GRAVE_MAX shells
	 * however many come and go. */
	struct rw_sock_comm *c = rw_grave_alloc(
		&net->dead_comms, &net->lock, sizeof(*c), offsetof(struct rw_sock_comm, link),
		offsetof(struct rw_sock_comm, obj), offsetof(struct rw_sock_comm, reqs));

	if (!c)
		return NULL;
	if (!c->reqs.size)
		rw_slab_init(&c->reqs, sizeof(struct rw_sock_req),
			     offsetof(struct rw_sock_req, obj), RW_SOCK_REQ_MAGIC,
			     RW_SOCK_SLAB_REQS, RW_SOCK_MAX_REQS);
	c->base.net = &net->base;
	rw_obj_open(&c->obj, kind);
	c->net = net;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->min_stripe = net->base.cfg.socket_min_stripe;
	c->timeout_ms = net->base.cfg.timeout_ms;
	pthread_mutex_init(&c->mr_lock, NULL);
	rw_list_init(&c->mrs);
	rw_sock_live_add(RW_SOCK_LIVE_COMMS, 1);
	return c;
}

/* Helper threads wake up this often to look for a stalled peer. */
static int64_t slice_ms(int64_t timeout_ms)
{
	return RW_MIN(RW_MAX(timeout_ms / 8, 10), 1000);
}

int rw_sock_comm_start(struct rw_sock_comm *c, int *fds, int nstreams)
{
	struct rw_sock_data *d;
	int rc;

	for (int i = 0; i < nstreams; i++) {
		rc = rw_sock_set_blocking(fds[i], slice_ms(c->timeout_ms));
		if (rc) {
			RW_WARN(RW_LOG_NET, "socket: %s %s: setting up stream %d: %s",
				rw_sock_comm_dir(c), c->peer, i, strerror(-rc));
			return rc;
		}
	}
	d = calloc(1, sizeof(*d) + (size_t)nstreams * sizeof(d->streams[0]));
	if (!d)
		return -ENOMEM;
	d->nstreams = nstreams;
	atomic_init(&d->err, 0);
	atomic_init(&d->progress_ms, rw_now_ms());
	for (int i = 0; i < nstreams; i++) {
		struct rw_sock_stream *s = &d->streams[i];

		s->comm = c;
		s->index = i;
		s->fd = fds[i];
		fds[i] = -1;
		pthread_mutex_init(&s->lock, NULL);
		pthread_cond_init(&s->cond, NULL);
		atomic_init(&s->outstanding, 0);
	}
	c->d = d;
	return 0;
}

void rw_sock_comm_free(struct rw_sock_comm *c)
{
	/* Never handed out, but perhaps a reused shell: back to the graveyard. */
	free(c->conn);
	c->conn = NULL;
	pthread_mutex_destroy(&c->mr_lock);
	rw_obj_close(&c->obj);
	rw_sock_live_add(RW_SOCK_LIVE_COMMS, -1);
	pthread_mutex_lock(&c->net->lock);
	rw_grave_bury(&c->net->dead_comms, &c->link);
	pthread_mutex_unlock(&c->net->lock);
}

int rw_sock_comm_fail(struct rw_sock_comm *c, int err, const char *fmt, ...)
{
	struct rw_sock_data *d = c->d;
	char what[256];
	int expected = 0;
	va_list ap;

	if (!atomic_compare_exchange_strong(&d->err, &expected, err))
		return expected;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* a control channel's peer that left: the caller says whether that
	 * was a failure (rw_net_patient) */
	RW_LOG(c->patient && (err == -ECONNRESET || err == -EPIPE) ? RW_LOG_INFO : RW_LOG_WARN,
	       RW_LOG_NET, "socket: %s %s: %s: %s", rw_sock_comm_dir(c), c->peer, what,
	       strerror(-err));
	/* Wake helpers blocked in send/recv: the connection is dead anyway. */
	for (int i = 0; i < d->nstreams; i++)
		shutdown(d->streams[i].fd, SHUT_RDWR);
	return err;
}

int rw_sock_comm_abort(struct rw_sock_comm *c, int err)
{
	struct rw_sock_data *d = c->d;
	int expected = 0;

	if (!atomic_compare_exchange_strong(&d->err, &expected, err))
		err = expected;
	/* Wake helpers blocked in send/recv; the peer sees the end after
	 * what was written before. */
	for (int i = 0; i < d->nstreams; i++)
		shutdown(d->streams[i].fd, SHUT_RDWR);
	return err;
}

/* Read and drop what is readable now, so close does not reset the peer. */
static void drain_input(int fd)
{
	char buf[4096];
	size_t total = 0;
	ssize_t n;

	do {
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		total += n > 0 ? (size_t)n : 0;
	} while (n > 0 && total < CLOSE_DRAIN_BYTES);
}

static bool comm_busy(const struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;

	if (c->reqs.used || (c->obj.kind == RW_SOCK_RECV_MAGIC ? d->rx.state != RW_SOCK_RX_HDR
							       : d->tx.q0_head != d->tx.q0_tail))
		return true;
	for (int i = 0; i < d->nstreams; i++)
		if (!rw_sock_stream_idle(&d->streams[i]))
			return true;
	return false;
}

void rw_sock_comm_close(struct rw_sock_comm *c)
{
	struct rw_sock_data *d = c->d;
	struct rw_sock_net *sn = c->net;
	bool abort = comm_busy(c);

	if (abort) {
		/* Cancel quietly: mark the comm failed, wake helpers. */
		int expected = 0;

		atomic_compare_exchange_strong(&d->err, &expected, -ECANCELED);
		for (int i = 0; i < d->nstreams; i++)
			shutdown(d->streams[i].fd, SHUT_RDWR);
	}
	rw_sock_streams_stop(c);
	for (int i = 0; i < d->nstreams; i++) {
		struct rw_sock_stream *s = &d->streams[i];

		if (abort) {
			rw_sock_close_abort(&s->fd);
		} else {
			drain_input(s->fd);
			rw_sock_close(&s->fd);
		}
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cond);
	}
	rw_sock_live_add(RW_SOCK_LIVE_REQS, -c->reqs.used);
	rw_slab_reset(&c->reqs); /* the memory stays with the shell */
	free(d);
	c->d = NULL;

	pthread_mutex_lock(&c->mr_lock);
	while (!rw_list_empty(&c->mrs)) {
		struct rw_sock_mr *m = rw_container_of(c->mrs.next, struct rw_sock_mr, link);

		rw_list_del(&m->link);
		rw_obj_close(&m->obj);
		free(m);
		rw_sock_live_add(RW_SOCK_LIVE_MRS, -1);
	}
	pthread_mutex_unlock(&c->mr_lock);
	pthread_mutex_destroy(&c->mr_lock); /* a shell takes no lock */

	rw_obj_close(&c->obj);
	rw_sock_live_add(RW_SOCK_LIVE_COMMS, -1);
	pthread_mutex_lock(&sn->lock);
	rw_grave_bury(&sn->dead_comms, &c->link);
	pthread_mutex_unlock(&sn->lock);
}

static int close_comm(struct rw_net_comm *comm, uint32_t magic, const char *call)
{
	struct rw_sock_comm *c;
	int rc = rw_sock_data_comm(comm, magic, call, &c);

	if (rc)
		return rc;
	rw_sock_comm_close(c);
	return 0;
}

int rw_sock_close_send(struct rw_net_comm *comm)
{
	return close_comm(comm, RW_SOCK_SEND_MAGIC, "close_send");
}

int rw_sock_close_recv(struct rw_net_comm *comm)
{
	return close_comm(comm, RW_SOCK_RECV_MAGIC, "close_recv");
}

/* An open comm of either direction, or -EBADF/-EINVAL (logged). */
static int comm_check(struct rw_net_comm *comm, const char *call)
{
	int rc;

	if (!comm)
		return -EINVAL;
	rc = rw_obj_check_any(&rw_sock_comm_from(comm)->obj, rw_sock_comm_kinds, 2);
	if (rc)
		RW_WARN(RW_LOG_NET, "socket: %s on a %s comm", call,
			rc == -EBADF ? "closed" : "foreign");
	return rc;
}

int rw_sock_reg_mr(struct rw_net_comm *comm, void *data, size_t size, int type,
		   struct rw_net_mr **mr)
{
	struct rw_sock_comm *c;
	struct rw_sock_mr *m;
	int rc = comm_check(comm, "reg_mr");

	if (rc)
		return rc;
	c = rw_sock_comm_from(comm);
	if (!mr || (!data && size)) {
		RW_WARN(RW_LOG_NET,
			"socket: reg_mr(data=%p, size=%zu, mr=%p) on %s %s: bad arguments", data,
			size, (void *)mr, rw_sock_comm_dir(c), c->peer);
		return -EINVAL;
	}
	if (type == RW_PTR_CUDA || type == RW_PTR_DMABUF) {
		RW_WARN(RW_LOG_NET,
			"socket: reg_mr of %s memory (%p, %zu bytes): the socket transport moves "
			"host memory only",
			type == RW_PTR_CUDA ? "CUDA" : "dma-buf", data, size);
		return -ENOTSUP;
	}
	if (type != RW_PTR_HOST) {
		RW_WARN(RW_LOG_NET, "socket: reg_mr: unknown memory type %d", type);
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->base.comm = comm;
	rw_obj_open(&m->obj, RW_SOCK_MR_MAGIC);
	m->addr = data;
	m->size = size;
	pthread_mutex_lock(&c->mr_lock);
	rw_list_add(&c->mrs, &m->link);
	pthread_mutex_unlock(&c->mr_lock);
	rw_sock_live_add(RW_SOCK_LIVE_MRS, 1);
	*mr = &m->base;
	return 0;
}

/* Is mr one of c's registrations?  Compares pointers only: an unknown mr
 * is never dereferenced.  Caller holds mr_lock. */
static struct rw_sock_mr *mr_find(struct rw_sock_comm *c, struct rw_net_mr *mr)
{
	for (struct rw_list *it = c->mrs.next; it != &c->mrs; it = it->next) {
		struct rw_sock_mr *m = rw_container_of(it, struct rw_sock_mr, link);

		if (&m->base == mr)
			return m;
	}
	return NULL;
}

int rw_sock_dereg_mr(struct rw_net_comm *comm, struct rw_net_mr *mr)
{
	struct rw_sock_comm *c;
	struct rw_sock_mr *m;
	int rc = comm_check(comm, "dereg_mr");

	if (rc)
		return rc;
	c = rw_sock_comm_from(comm);
	pthread_mutex_lock(&c->mr_lock);
	m = mr ? mr_find(c, mr) : NULL;
	if (m)
		rw_list_del(&m->link);
	pthread_mutex_unlock(&c->mr_lock);
	if (!m) {
		RW_WARN(RW_LOG_NET, "socket: dereg_mr(%p): not a registration of %s %s", (void *)mr,
			rw_sock_comm_dir(c), c->peer);
		return -EINVAL;
	}
	rw_obj_close(&m->obj);
	free(m);
	rw_sock_live_add(RW_SOCK_LIVE_MRS, -1);
	return 0;
}

int rw_sock_mr_check(struct rw_sock_comm *c, struct rw_net_mr *mr, const void *data, size_t size,
		     const char *call)
{
	struct rw_sock_mr *m;
	bool inside;

	pthread_mutex_lock(&c->mr_lock);
	m = mr ? mr_find(c, mr) : NULL;
	inside = m && (size == 0 || ((uintptr_t)data >= (uintptr_t)m->addr &&
				     (uintptr_t)data - (uintptr_t)m->addr <= m->size &&
				     size <= m->size - ((uintptr_t)data - (uintptr_t)m->addr)));
	pthread_mutex_unlock(&c->mr_lock);
	if (!m) {
		RW_WARN(RW_LOG_NET, "socket: %s on %s %s: mr %p is not a registration of this comm",
			call, rw_sock_comm_dir(c), c->peer, (void *)mr);
		return -EINVAL;
	}
	/* Host memory needs no registration, so a buffer outside its mr still
	 * works here; say so once, as it would fail on an RDMA transport. */
	if (!inside)
		RW_WARN_ONCE(RW_LOG_NET,
			     "socket: %s on %s %s: buffer %p (+%zu bytes) lies outside its "
			     "registration %p (+%zu bytes); accepted, host memory needs none",
			     call, rw_sock_comm_dir(c), c->peer, data, size, (void *)m->addr,
			     m->size);
	return 0;
}

struct rw_sock_req *rw_sock_req_alloc(struct rw_sock_comm *c)
{
	struct rw_sock_req *r = rw_slab_get(&c->reqs);

	if (!r)
		return NULL;
	r->base.comm = &c->base;
	r->err = 0;
	atomic_store_explicit(&r->parts, 0, memory_order_relaxed);
	atomic_store_explicit(&r->cut, false, memory_order_relaxed);
	r->post_ms = rw_now_ms();
	rw_sock_live_add(RW_SOCK_LIVE_REQS, 1);
	return r;
}

void rw_sock_req_free(struct rw_sock_comm *c, struct rw_sock_req *r)
{
	r->kind = RW_SOCK_REQ_FREE;
	rw_slab_put(&c->reqs, r);
	rw_sock_live_add(RW_SOCK_LIVE_REQS, -1);
}
