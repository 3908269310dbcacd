/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Comms of the same-host transport: life cycle, the request pool,
 * registrations, test, flush and close.  The progress of each direction is
 * in shm_tx.c and shm_rx.c.
 */
#include "transport/shm/shm_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/rw_log.h"
#include "gpu/rw_cuda.h"
#include "gpu/rw_cuda_ipc.h"

/* --- life cycle ------------------------------------------------------------ */

int rw_shm_comm_new(struct rw_shm_net *net, bool is_send, struct rw_shm_comm **out)
{
	/* A full graveyard gives its oldest shell (its generation and its free
	 * requests go on): closed comms cost no more than RW_GRAVE_MAX shells
	 * however many come and go. */
	struct rw_shm_comm *c = rw_grave_alloc(
		&net->dead_comms, &net->lock, sizeof(*c), offsetof(struct rw_shm_comm, link),
		offsetof(struct rw_shm_comm, obj), offsetof(struct rw_shm_comm, reqs));

	if (!c)
		return -ENOMEM;
	if (!c->reqs.size)
		rw_slab_init(&c->reqs, sizeof(struct rw_shm_req), offsetof(struct rw_shm_req, obj),
			     RW_SHM_REQ_MAGIC, RW_SHM_SLAB_REQS, RW_SHM_MAX_REQS);
	c->base.net = &net->base;
	rw_obj_open(&c->obj, is_send ? RW_SHM_SEND_MAGIC : RW_SHM_RECV_MAGIC);
	c->is_send = is_send;
	c->d.ctl_fd = -1;
	c->d.seg_fd = -1;
	c->d.pidfd = -1;
	c->d.cur_idx = -1;
	snprintf(c->peer, sizeof(c->peer), "an unconnected peer");
	pthread_mutex_init(&c->mr_lock, NULL);
	rw_shm_live_add(RW_SHM_LIVE_COMMS, 1);
	*out = c;
	return 0;
}

static void cuda_release(struct rw_shm_comm *c)
{
	struct rw_shm_data *d = &c->d;
	struct rw_shm_ipc_cache *e, *next;

	if (d->stream)
		rw_cuda_stream_sync(d->stream); /* no copy may outlive what we free */
	rw_shm_up_release(c);
	if (d->event)
		rw_cuda_event_destroy(d->event);
	if (d->stream)
		rw_cuda_stream_destroy(d->stream);
	for (e = d->ipc; e; e = next) {
		next = e->next;
		rw_cuda_ipc_close(e->base);
		free(e);
	}
}

void rw_shm_comm_close(struct rw_shm_comm *c)
{
	struct rw_shm_data *d = &c->d;
	struct rw_shm_mr *m, *next;

	if (d->seg) {
		/* tell the peer, which fails what it still waits for */
		if (c->is_send) {
			__atomic_store_n(&d->seg->tx.closed, 1, __ATOMIC_RELEASE);
		} else {
			if (d->rx == RW_SHM_RX_CMA)
				rw_shm_cma_job_retire(c); /* no write into our buffers after this */
			__atomic_store_n(&d->seg->rx.closed, 1, __ATOMIC_RELEASE);
		}
		rw_shm_ring(c);
	}
	cuda_release(c);
	rw_shm_live_add(RW_SHM_LIVE_REQS, -c->reqs.used);
	rw_slab_reset(&c->reqs); /* the memory stays with the shell */
	rw_shm_unmap(d->peer_db, RW_SHM_DB_BYTES);
	rw_shm_unmap(d->seg, d->seg_bytes);
	rw_shm_close_fd(&d->ctl_fd);
	rw_shm_close_fd(&d->seg_fd);
	rw_shm_close_fd(&d->pidfd);
	memset(d, 0, sizeof(*d));
	pthread_mutex_lock(&c->mr_lock);
	for (m = c->mrs; m; m = next) {
		next = m->next;
		rw_obj_close(&m->obj);
		free(m);
		rw_shm_live_add(RW_SHM_LIVE_MRS, -1);
	}
	c->mrs = NULL;
	pthread_mutex_unlock(&c->mr_lock);
	pthread_mutex_destroy(&c->mr_lock); /* a shell takes no lock */
	rw_obj_close(&c->obj);
	rw_shm_live_add(RW_SHM_LIVE_COMMS, -1);
	rw_shm_bury(rw_shm_comm_net(c), &rw_shm_comm_net(c)->dead_comms, &c->link);
}

static const uint32_t shm_comm_kinds[2] = {RW_SHM_SEND_MAGIC, RW_SHM_RECV_MAGIC};

int rw_shm_comm_check(struct rw_net_comm *comm, uint32_t magic, const char *call,
		      struct rw_shm_comm **out)
{
	struct rw_shm_comm *c;
	int any;

	if (!comm)
		return -EINVAL;
	c = rw_shm_comm_from(comm);
	any = rw_obj_check_any(&c->obj, shm_comm_kinds, 2);
	if (any == 0 && (!magic || c->obj.kind == magic)) {
		*out = c;
		return 0;
	}
	if (any == -EBADF) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: %s on a closed comm (peer %s)", call,
			c->peer);
		return -EBADF;
	}
	RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: %s on %s", call,
		any == 0 ? "a comm of the other direction" : "a foreign object");
	return -EINVAL;
}

/* Sender: the first message not complete here (every earlier one was
 * published whole, and acked when the receiver copies it from us). */
static uint64_t first_incomplete(const struct rw_shm_comm *c)
{
	uint64_t seq = c->d.next_seq;

	for (const struct rw_shm_req *r = c->d.q_head; r; r = r->next)
		seq = RW_MIN(seq, r->seq);
	return seq;
}

void rw_shm_conn_fail(struct rw_shm_comm *c, int rc, const char *why)
{
	struct rw_shm_seg *seg = c->d.seg;

	if (c->fail)
		return;
	/* a control channel's peer that left: the caller says whether that
	 * was a failure (rw_net_patient) */
	if (why && !c->fail_logged)
		RW_LOG(c->patient && rc == -ECONNRESET ? RW_LOG_INFO : RW_LOG_WARN,
		       RW_LOG_NET | RW_LOG_SHM, "shm: %s %s: %s (%s)",
		       c->is_send ? "send comm to" : "receive comm from", c->peer, why,
		       strerror(-rc));
	c->fail_logged = true;
	if (!seg) {
		c->fail = rc;
		return;
	}
	/* tell the peer, which fails too (shm_layout.h, "Failure") */
	if (c->is_send) {
		__atomic_store_n(&seg->tx.failed_seq, first_incomplete(c), __ATOMIC_RELAXED);
		__atomic_store_n(&seg->tx.failed, rc, __ATOMIC_RELEASE);
	} else {
		if (c->d.rx == RW_SHM_RX_CMA)
			rw_shm_cma_job_retire(c); /* no write into our buffers after this */
		/* nor a device copy still queued (an IPC copy, pieces staged
		 * up): the receives fail once this returns, and their owners may
		 * free the buffers at once */
		if (c->d.stream)
			rw_cuda_stream_sync(c->d.stream);
		__atomic_store_n(&seg->rx.failed, rc, __ATOMIC_RELEASE);
	}
	c->fail = rc;
	rw_shm_ring(c);
}

void rw_shm_comm_moved(struct rw_shm_comm *c, uint64_t now)
{
	struct rw_shm_net *net = rw_shm_comm_net(c);

	c->progress_ns = now;
	__atomic_store_n(&net->last_progress_ns, now, __ATOMIC_RELAXED);
}

/* --- requests -------------------------------------------------------------- */

struct rw_shm_req *rw_shm_req_get(struct rw_shm_comm *c, enum rw_shm_req_kind kind)
{
	struct rw_shm_req *r = rw_slab_get(&c->reqs);

	if (!r)
		return NULL;
	/* buffers: irecv writes the n it uses, nothing reads the others */
	memset((char *)r + offsetof(struct rw_shm_req, kind), 0,
	       offsetof(struct rw_shm_req, buf) - offsetof(struct rw_shm_req, kind));
	r->base.comm = &c->base;
	r->kind = kind;
	rw_shm_live_add(RW_SHM_LIVE_REQS, 1);
	return r;
}

static void req_put(struct rw_shm_comm *c, struct rw_shm_req *r)
{
	r->kind = RW_SHM_REQ_FREE;
	rw_slab_put(&c->reqs, r);
	rw_shm_live_add(RW_SHM_LIVE_REQS, -1);
}

void rw_shm_queue_push(struct rw_shm_comm *c, struct rw_shm_req *r)
{
	r->next = NULL;
	if (c->d.q_tail)
		c->d.q_tail->next = r;
	else
		c->d.q_head = r;
	c->d.q_tail = r;
}

void rw_shm_queue_remove(struct rw_shm_comm *c, struct rw_shm_req *r)
{
	struct rw_shm_req **pp = &c->d.q_head, *prev = NULL;

	while (*pp && *pp != r) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (!*pp)
		return;
	*pp = r->next;
	if (c->d.q_tail == r)
		c->d.q_tail = prev;
	r->next = NULL;
}

/* --- registrations -------------------------------------------------------- */

int rw_shm_reg_mr(struct rw_net_comm *comm, void *data, size_t size, int type,
		  struct rw_net_mr **mr)
{
	struct rw_shm_comm *c;
	struct rw_shm_mr *m;
	int rc = rw_shm_comm_check(comm, 0, "regMr", &c);

	if (rc)
		return rc;
	if (!mr || (type != RW_PTR_HOST && type != RW_PTR_CUDA) || (size && !data)) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: regMr(%p, %zu bytes, type %d) on the comm of %s: "
			"bad arguments (type must be host or CUDA)",
			data, size, type, c->peer);
		return -EINVAL;
	}
	if (type == RW_PTR_CUDA && !rw_shm_comm_net(c)->cuda) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: regMr(%p, %zu bytes) of CUDA memory, but this process has no GPU",
			data, size);
		return -ENOTSUP;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->base.comm = comm;
	rw_obj_open(&m->obj, RW_SHM_MR_MAGIC);
	m->addr = data;
	m->size = size;
	m->type = type;
	if (type == RW_PTR_CUDA && c->is_send) {
		struct rw_cuda_ipc_handle h;

		static_assert(sizeof(h.bytes) == sizeof(m->ipc), "IPC handle size");
		rc = rw_cuda_ipc_export(data, size, &h, &m->ipc_offset);
		if (rc) {
			RW_WARN(RW_LOG_NET | RW_LOG_SHM,
				"shm: regMr(%p, %zu bytes) for %s: cannot export it by CUDA IPC: "
				"%s",
				data, size, c->peer, strerror(-rc));
			free(m);
			return rc;
		}
		memcpy(m->ipc, h.bytes, sizeof(m->ipc));
		m->exported = true;
	}
	pthread_mutex_lock(&c->mr_lock);
	m->next = c->mrs;
	c->mrs = m;
	pthread_mutex_unlock(&c->mr_lock);
	rw_shm_live_add(RW_SHM_LIVE_MRS, 1);
	*mr = &m->base;
	return 0;
}

/* A dma-buf registration (the auto composite advertises dma-buf when its
 * network transport can): shm moves device memory by CUDA IPC, which needs
 * only the pointer, so the fd and offset are not used. */
int rw_shm_reg_mr_dmabuf(struct rw_net_comm *comm, void *data, size_t size, int type,
			 uint64_t offset, int fd, struct rw_net_mr **mr)
{
	(void)offset, (void)fd;
	if (type != RW_PTR_CUDA) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: regMrDmaBuf(%p, %zu bytes, type %d): only device memory comes as "
			"a dma-buf",
			data, size, type);
		return -EINVAL;
	}
	return rw_shm_reg_mr(comm, data, size, type, mr);
}

int rw_shm_dereg_mr(struct rw_net_comm *comm, struct rw_net_mr *mr)
{
	struct rw_shm_comm *c = comm ? rw_shm_comm_from(comm) : NULL;
	struct rw_shm_mr *m = mr ? rw_shm_mr_from(mr) : NULL, **pp;

	bool found = false;

	int rc = c ? rw_obj_check_any(&c->obj, shm_comm_kinds, 2) : -EINVAL;

	if (rc || !m) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: deregMr(comm=%p, %p): not an open comm",
			(void *)comm, (void *)mr);
		return rc ? rc : -EINVAL;
	}
	/* Look m up by address before reading it: a second deregMr must not
	 * touch the registration the first one freed. */
	pthread_mutex_lock(&c->mr_lock);
	for (pp = &c->mrs; *pp && *pp != m; pp = &(*pp)->next)
		;
	if (*pp) {
		*pp = m->next;
		found = true;
	}
	pthread_mutex_unlock(&c->mr_lock);
	if (!found || rw_obj_check(&m->obj, RW_SHM_MR_MAGIC)) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM,
			"shm: deregMr(%p) from %s: not registered on this comm (deregistered "
			"already?)",
			(void *)mr, c->peer);
		return -EINVAL;
	}
	rw_obj_close(&m->obj);
	free(m);
	rw_shm_live_add(RW_SHM_LIVE_MRS, -1);
	return 0;
}

int rw_shm_iflush(struct rw_net_comm *comm, int n, void **data, const int *sizes,
		  struct rw_net_mr **mrs, struct rw_net_req **req)
{
	struct rw_shm_comm *c;
	int rc = rw_shm_comm_check(comm, RW_SHM_RECV_MAGIC, "iflush", &c);

	if (rc)
		return rc;
	if (!req || n < 1 || n > RW_NET_MAX_RECVS || !data || !sizes || !mrs) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: iflush(n=%d) from %s: bad arguments", n,
			c->peer);
		return -EINVAL;
	}
	/* Host copies are done when the receive completes, and a CUDA copy's
	 * event has completed before it does: nothing is left to flush. */
	*req = NULL;
	return 0;
}

/* --- test --------------------------------------------------------------- */

static int progress(struct rw_shm_comm *c, uint64_t now)
{
	return c->is_send ? rw_shm_tx_progress(c, now) : rw_shm_rx_progress(c, now);
}

/* Since when r waits on the peer, for the timeout: a patient comm's
 * receive that no message has begun to fill does not wait on it (now). */
static uint64_t waits_since(const struct rw_shm_comm *c, const struct rw_shm_req *r, uint64_t now)
{
	if (c->patient && r->kind == RW_SHM_REQ_RECV && c->d.cur_req != r)
		return now;
	return r->posted_ns;
}

int rw_shm_test(struct rw_net_req *base, int *done, size_t *sizes)
{
	struct rw_shm_comm *c;
	struct rw_shm_req *r;
	uint64_t now;
	int rc;

	if (!base || !done)
		return -EINVAL;
	r = rw_shm_req_from(base);
	rc = rw_obj_check(&r->obj, RW_SHM_REQ_MAGIC);
	if (rc) {
		RW_WARN(RW_LOG_NET | RW_LOG_SHM, "shm: test on %s request %p",
			rc == -EBADF ? "a completed" : "a foreign", (void *)base);
		return rc;
	}
	c = rw_shm_comm_from(base->comm);
	now = rw_shm_now(c, false);
	if (!r->done && !progress(c, now) && !r->done && !c->fail &&
	    rw_shm_check_peer(c, now, waits_since(c, r, now),
			      c->is_send ? "a send" : "a receive") == 0) {
		if (!c->patient && rw_shm_idle(c, now))
			progress(c, rw_shm_now(c, true));
	}
	if (!r->done && c->fail) {
		r->err = c->fail;
		r->done = true;
		rw_shm_queue_remove(c, r);
		if (c->d.cur_req == r) {
			c->d.cur_req = NULL; /* the connection is dead: no more copies */
			c->d.rx = RW_SHM_RX_IDLE;
		}
	}
	if (!r->done) {
		*done = 0;
		return 0;
	}
	rc = r->err;
	if (rc == 0) {
		*done = 1;
		if (sizes && r->kind == RW_SHM_REQ_SEND)
			sizes[0] = r->size;
		for (int i = 0; sizes && r->kind == RW_SHM_REQ_RECV && i < r->n; i++)
			sizes[i] = r->buf[i].got;
	}
	req_put(c, r);
	return rc;
}

/* --- close --------------------------------------------------------------- */

/* --- the window (layout version 4) -------------------------------------- */

int rw_shm_window(struct rw_net_comm *comm, void **addr, size_t *bytes)
{
	struct rw_shm_comm *c;
	int rc = rw_shm_comm_check(comm, 0, "window", &c);

	if (rc)
		return rc;
	if (!addr || !bytes || !c->d.seg)
		return -EINVAL;
	*addr = (char *)c->d.seg + RW_SHM_WIN_OFFSET;
	*bytes = RW_SHM_WIN_BYTES;
	return 0;
}

/*
 * Whether the peer is still there, for a caller that moves data through
 * the window and so never calls test(): its line's failed word, then the
 * peer checks of every wait (rw_shm_check_peer: closed, process exited, at
 * their pace), with no timeout (since is now: nothing here says whether
 * the caller expects anything).
 */
int rw_shm_check(struct rw_net_comm *comm)
{
	struct rw_shm_comm *c;
	int rc = rw_shm_comm_check(comm, 0, "check", &c);
	uint64_t now;

	if (rc)
		return rc;
	if (c->fail || !c->d.seg)
		return c->fail ? c->fail : -ENOTCONN;
	if (__atomic_load_n(c->is_send ? &c->d.seg->rx.failed : &c->d.seg->tx.failed,
			    __ATOMIC_ACQUIRE)) {
		rw_shm_conn_fail(c, -ECONNRESET, "the peer's side failed");
		return c->fail;
	}
	now = rw_shm_now(c, false);
	return rw_shm_check_peer(c, now, now, "a window");
}

/* A control channel's receive comm: its receives wait for a message as long
 * as it takes (a closed or departed peer still fails them), and its test()
 * never sleeps or yields: the caller polls it beside other work. */
int rw_shm_patient(struct rw_net_comm *comm)
{
	struct rw_shm_comm *c;
	int rc = rw_shm_comm_check(comm, RW_SHM_RECV_MAGIC, "patient", &c);

	if (rc)
		return rc;
	c->patient = true;
	return 0;
}

int rw_shm_close_send(struct rw_net_comm *comm)
{
	struct rw_shm_comm *c;
	int rc = rw_shm_comm_check(comm, RW_SHM_SEND_MAGIC, "closeSend", &c);

	if (rc)
		return rc;
	rw_shm_comm_close(c);
	return 0;
}

int rw_shm_close_recv(struct rw_net_comm *comm)
{
	struct rw_shm_comm *c;
	int rc = rw_shm_comm_check(comm, RW_SHM_RECV_MAGIC, "closeRecv", &c);

	if (rc)
		return rc;
	rw_shm_comm_close(c);
	return 0;
}
