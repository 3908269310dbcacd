/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connection set-up of the ib transport: listeners, the non-blocking
 * connect and accept state machines (TCP exchange of struct
 * rw_ib_conn_info, then RW_IB_READY), and what a net still holds at
 * destroy.  The comms themselves are in ib_comm.c.
 */
#define _GNU_SOURCE
#include "transport/ib/ib_internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* States of a connect, in order. */
enum {
	RW_IB_CONN_TCP,	  /* the TCP connect is under way */
	RW_IB_CONN_SEND,  /* writing our record */
	RW_IB_CONN_RECV,  /* reading the listener's record */
	RW_IB_CONN_READY, /* QPs at RTS: writing RW_IB_READY */
};

/* States of an accepted candidate, in order. */
enum {
	RW_IB_CAND_RECV,  /* reading the connector's record */
	RW_IB_CAND_SEND,  /* writing ours */
	RW_IB_CAND_READY, /* waiting for RW_IB_READY */
};

/* --- TCP helpers ---------------------------------------------------------------- */

static void tcp_tune(int fd, int64_t timeout_ms)
{
	int one = 1, idle = (int)RW_MAX(1, timeout_ms / 3000), cnt = 3;

	/* keepalive: a host that vanished is noticed within about the timeout */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* --- listen ------------------------------------------------------------------------ */

int rw_ib_listen(struct rw_net *base, int dev, void *handle, struct rw_net_listen **out)
{
	struct rw_ib_net *net = rw_ib_net_from(base);
	struct sockaddr_storage sa = net->boot;
	struct rw_ib_handle h = {.magic = RW_IB_MAGIC, .version = RW_IB_VERSION};
	struct rw_ib_listen *l;
	int rc;

	if (!handle || !out || dev < 0 || dev >= net->ndev)
		return -EINVAL;
	l = rw_grave_alloc(&net->dead_listeners, &net->lock, sizeof(*l),
			   offsetof(struct rw_ib_listen, link), offsetof(struct rw_ib_listen, obj),
			   0);
	if (!l)
		return -ENOMEM;
	rw_obj_open(&l->obj, RW_IB_LISTEN_MAGIC);
	l->base.net = base;
	l->net = net;
	l->dev = dev;
	l->nonce = rw_tcp_nonce64();
	rw_list_init(&l->cands);
	l->fd = -1;
	rc = rw_tcp_listen(&sa, 128, true, &l->fd);
	if (rc)
		goto err_log;
	rw_tcp_addr_str(&sa, l->addr, sizeof(l->addr));
	if (sa.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&sa;

		h.family = 4;
		h.port = in->sin_port;
		memcpy(h.addr, &in->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&sa;

		h.family = 6;
		h.port = in6->sin6_port;
		memcpy(h.addr, &in6->sin6_addr, 16);
		h.scope_id = in6->sin6_scope_id;
	}
	h.nonce = l->nonce;
	memset(handle, 0, RW_NET_HANDLE_MAXSIZE);
	memcpy(handle, &h, sizeof(h));
	pthread_mutex_lock(&net->lock);
	rw_list_add(&net->listeners, &l->link);
	pthread_mutex_unlock(&net->lock);
	rw_ib_live_add(RW_IB_LIVE_LISTENERS, 1);
	*out = &l->base;
	return 0;

err_log:
	RW_WARN(RW_LOG_NET, "NET/IB: %s: listen on %s failed: %s", net->devs[dev].name,
		net->boot_str, strerror(-rc));
	rw_close_fd(&l->fd);
	/* never handed out, but perhaps a reused shell: back to the graveyard */
	rw_obj_close(&l->obj);
	pthread_mutex_lock(&net->lock);
	rw_grave_bury(&net->dead_listeners, &l->link);
	pthread_mutex_unlock(&net->lock);
	return rc;
}

static struct rw_ib_listen *listen_of(struct rw_net_listen *base)
{
	struct rw_ib_listen *l = rw_container_of(base, struct rw_ib_listen, base);

	return rw_obj_check(&l->obj, RW_IB_LISTEN_MAGIC) == 0 ? l : NULL;
}

static void cand_drop(struct rw_ib_listen *l, struct rw_ib_cand *k, const char *why, int err)
{
	RW_WARN(RW_LOG_NET, "NET/IB: %s: dropping connection from %s: %s%s%s", l->addr, k->peer,
		why, err ? ": " : "", err ? strerror(err) : "");
	rw_list_del(&k->link);
	l->ncands--;
	rw_close_fd(&k->fd);
	if (k->comm)
		rw_ib_comm_discard(k->comm);
	free(k);
}

/* Take new TCP connections off the listening socket. */
static void accept_new(struct rw_ib_listen *l)
{
	for (;;) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		struct rw_ib_cand *k;
		int fd = accept4(l->fd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED &&
			    errno != EINTR)
				RW_WARN(RW_LOG_NET, "NET/IB: %s: accept: %s", l->addr,
					strerror(errno));
			if (errno == ECONNABORTED || errno == EINTR)
				continue;
			return;
		}
		k = calloc(1, sizeof(*k));
		if (!k) {
			close(fd);
			return;
		}
		k->fd = fd;
		k->state = RW_IB_CAND_RECV;
		k->deadline_ms = rw_now_ms() + (uint64_t)l->net->base.cfg.timeout_ms;
		rw_tcp_addr_str(&sa, k->peer, sizeof(k->peer));
		rw_list_add(&l->cands, &k->link);
		if (++l->ncands > RW_IB_MAX_CANDS)
			cand_drop(l, rw_container_of(l->cands.next, struct rw_ib_cand, link),
				  "too many connections in set-up", 0);
	}
}

/* One step of a candidate.  1: its comm is ready; 0: not yet; <0: dropped. */
static int cand_step(struct rw_ib_listen *l, struct rw_ib_cand *k)
{
	struct rw_ib_net *net = l->net;
	const char *bad;
	uint8_t ready = 0;
	size_t one = 0;
	int rc;

	if (k->state == RW_IB_CAND_RECV) {
		rc = rw_tcp_io_step(k->fd, &k->theirs, sizeof(k->theirs), &k->done, false);
		if (rc < 0) {
			cand_drop(l, k,
				  rc == -ECONNRESET ? "closed before its set-up record"
						    : "reading its set-up record",
				  rc == -ECONNRESET ? 0 : -rc);
			return -1;
		}
		if (k->done >= 4 && k->theirs.magic != RW_IB_MAGIC) {
			cand_drop(l, k, "not a ringway ib peer (bad magic)", 0);
			return -1;
		}
		if (rc == 0)
			return 0;
		bad = rw_ib_info_check(NULL, &k->theirs, l->nonce);
		if (!bad && k->theirs.link_layer != net->devs[l->dev].link_layer)
			bad = "its device is of another link layer (InfiniBand vs RoCE)";
		if (bad) {
			cand_drop(l, k, bad, 0);
			return -1;
		}
		rc = rw_ib_comm_new(net, l->dev, false, k->theirs.nqps, k->peer, &k->comm);
		if (!rc) {
			k->comm->tc = k->theirs.tc; /* both ends: the connecting side's */
			rc = rw_ib_comm_connect_qps(k->comm, &k->theirs);
		}
		if (rc) {
			cand_drop(l, k, "setting up the QPs failed", -rc);
			return -1;
		}
		rw_ib_info_fill(k->comm, k->theirs.nonce, &k->mine);
		k->done = 0;
		k->state = RW_IB_CAND_SEND;
	}
	if (k->state == RW_IB_CAND_SEND) {
		rc = rw_tcp_io_step(k->fd, &k->mine, sizeof(k->mine), &k->done, true);
		if (rc < 0) {
			cand_drop(l, k, "writing our set-up record", -rc);
			return -1;
		}
		if (rc == 0)
			return 0;
		k->state = RW_IB_CAND_READY;
	}
	rc = rw_tcp_io_step(k->fd, &ready, 1, &one, false);
	if (rc < 0 || (rc == 1 && ready != RW_IB_READY)) {
		cand_drop(l, k, "the peer did not finish the set-up", rc < 0 ? -rc : EPROTO);
		return -1;
	}
	return rc;
}

int rw_ib_accept(struct rw_net_listen *base, struct rw_net_comm **out)
{
	struct rw_ib_listen *l = listen_of(base);
	struct rw_list *it, *nx;
	uint64_t now = rw_now_ms();

	if (!out || !base)
		return -EINVAL;
	if (!l)
		return -EBADF;
	accept_new(l);
	for (it = l->cands.next; it != &l->cands; it = nx) {
		struct rw_ib_cand *k = rw_container_of(it, struct rw_ib_cand, link);
		struct rw_ib_comm *c;

		nx = it->next;
		if (now > k->deadline_ms) {
			cand_drop(l, k, "no set-up within RINGWAY_TIMEOUT_MS", 0);
			continue;
		}
		if (cand_step(l, k) != 1)
			continue;
		c = k->comm;
		c->fd = k->fd;
		c->progress_ms = c->life_ms = rw_now_ms();
		tcp_tune(c->fd, l->net->base.cfg.timeout_ms);
		rw_list_del(&k->link);
		l->ncands--;
		free(k);
		pthread_mutex_lock(&l->net->lock);
		rw_list_add(&l->net->comms, &c->link);
		pthread_mutex_unlock(&l->net->lock);
		rw_ib_comm_announce(c);
		*out = &c->base;
		return 0;
	}
	*out = NULL;
	return 0;
}

int rw_ib_close_listen(struct rw_net_listen *base)
{
	struct rw_ib_listen *l = base ? listen_of(base) : NULL;
	struct rw_ib_net *net;

	if (!base)
		return -EINVAL;
	if (!l)
		return -EBADF;
	net = l->net;
	while (!rw_list_empty(&l->cands)) {
		struct rw_ib_cand *k = rw_container_of(l->cands.next, struct rw_ib_cand, link);

		rw_list_del(&k->link);
		rw_close_fd(&k->fd);
		if (k->comm)
			rw_ib_comm_discard(k->comm);
		free(k);
	}
	l->ncands = 0;
	rw_close_fd(&l->fd);
	pthread_mutex_lock(&net->lock);
	rw_obj_close(&l->obj);
	rw_grave_bury(&net->dead_listeners, &l->link);
	pthread_mutex_unlock(&net->lock);
	rw_ib_live_add(RW_IB_LIVE_LISTENERS, -1);
	return 0;
}

/* --- connect ------------------------------------------------------------------------- */

static void connect_free(struct rw_ib_connect *k)
{
	rw_list_del(&k->link);
	rw_close_fd(&k->fd);
	if (k->comm)
		rw_ib_comm_discard(k->comm);
	free(k);
}

static int connect_start(struct rw_ib_net *net, int dev, const struct rw_ib_handle *h, int tc,
			 struct rw_ib_connect **out)
{
	struct rw_ib_connect *k = calloc(1, sizeof(*k));
	struct sockaddr_storage sa;
	int rc;

	if (!k)
		return -ENOMEM;
	rw_list_init(&k->link);
	k->dev = dev;
	k->h = *h;
	k->fd = -1;
	k->deadline_ms = rw_now_ms() + (uint64_t)net->base.cfg.timeout_ms;
	rw_ib_handle_addr(h, &sa);
	rw_tcp_addr_str(&sa, k->peer, sizeof(k->peer));
	if (atomic_load(&net->devs[dev].port_down)) {
		RW_WARN(RW_LOG_NET, "NET/IB: %s: connect to %s: the port is down",
			net->devs[dev].name, k->peer);
		free(k);
		return -ENETDOWN;
	}
	rc = rw_ib_comm_new(net, dev, true, net->nqps, k->peer, &k->comm);
	if (rc) {
		free(k);
		return rc;
	}
	/* RINGWAY_IB_TC, else the communicator's class, else 0 (NCCL's order) */
	if (net->tc < 0 && tc >= 0)
		k->comm->tc = (uint8_t)tc;
	k->fd = -1;
	rc = rw_tcp_socket(sa.ss_family, &k->fd);
	if (!rc)
		rc = rw_tcp_connect_begin(k->fd, &sa);
	if (rc) {
		RW_WARN(RW_LOG_NET, "NET/IB: %s: connect to %s failed: %s", net->devs[dev].name,
			k->peer, strerror(-rc));
		connect_free(k);
		return rc;
	}
	k->state = RW_IB_CONN_TCP;
	pthread_mutex_lock(&net->lock);
	rw_list_add(&net->connecting, &k->link);
	pthread_mutex_unlock(&net->lock);
	*out = k;
	return 0;
}

/* One step of a connect.  1: the comm is ready; 0: not yet; <0: failed (logged). */
static int connect_step(struct rw_ib_net *net, struct rw_ib_connect *k)
{
	const char *name = net->devs[k->dev].name, *bad;
	uint8_t ready = RW_IB_READY;
	size_t one = 0;
	int rc;

	if (k->state == RW_IB_CONN_TCP) {
		rc = rw_tcp_connect_done(k->fd);
		if (rc == 0)
			return 0;
		if (rc < 0) {
			RW_WARN(RW_LOG_NET, "NET/IB: %s: connect to %s failed: %s", name, k->peer,
				strerror(-rc));
			return rc;
		}
		tcp_tune(k->fd, net->base.cfg.timeout_ms);
		rw_ib_info_fill(k->comm, k->h.nonce, &k->mine);
		k->done = 0;
		k->state = RW_IB_CONN_SEND;
	}
	if (k->state == RW_IB_CONN_SEND) {
		rc = rw_tcp_io_step(k->fd, &k->mine, sizeof(k->mine), &k->done, true);
		if (rc <= 0)
			goto io;
		k->done = 0;
		k->state = RW_IB_CONN_RECV;
	}
	if (k->state == RW_IB_CONN_RECV) {
		rc = rw_tcp_io_step(k->fd, &k->theirs, sizeof(k->theirs), &k->done, false);
		if (rc <= 0)
			goto io;
		bad = rw_ib_info_check(k->comm, &k->theirs, k->h.nonce);
		if (bad) {
			RW_WARN(RW_LOG_NET, "NET/IB: %s: connect to %s: the peer answered with %s",
				name, k->peer, bad);
			return -EPROTO;
		}
		rc = rw_ib_comm_connect_qps(k->comm, &k->theirs);
		if (rc)
			return rc;
		k->state = RW_IB_CONN_READY;
	}
	rc = rw_tcp_io_step(k->fd, &ready, 1, &one, true);
	if (rc <= 0)
		goto io;
	return 1;

io:
	if (rc == 0)
		return 0;
	RW_WARN(RW_LOG_NET, "NET/IB: %s: connect to %s: set-up exchange failed: %s", name, k->peer,
		rc == -ECONNRESET ? "the peer closed the connection" : strerror(-rc));
	return rc;
}

int rw_ib_connect_tc(struct rw_net *base, int dev, const void *handle, int traffic_class,
		     struct rw_net_comm **out)
{
	struct rw_ib_net *net = rw_ib_net_from(base);
	struct rw_ib_connect *k = NULL;
	struct rw_ib_handle h;
	struct rw_list *it;
	struct rw_ib_comm *c;
	int rc;

	if (!handle || !out || dev < 0 || dev >= net->ndev)
		return -EINVAL;
	memcpy(&h, handle, sizeof(h));
	if (h.magic != RW_IB_MAGIC || h.version != RW_IB_VERSION ||
	    (h.family != 4 && h.family != 6)) {
		RW_WARN(RW_LOG_NET,
			"NET/IB: connect: not an ib listen handle of version %d "
			"(magic %#x, version %u)",
			RW_IB_VERSION, h.magic, h.version);
		return -EINVAL;
	}
	pthread_mutex_lock(&net->lock);
	for (it = net->connecting.next; it != &net->connecting; it = it->next) {
		struct rw_ib_connect *x = rw_container_of(it, struct rw_ib_connect, link);

		if (x->dev == dev && !memcmp(&x->h, &h, sizeof(h))) {
			k = x;
			break;
		}
	}
	pthread_mutex_unlock(&net->lock);
	if (!k) {
		rc = connect_start(net, dev, &h, traffic_class, &k);
		if (rc)
			return rc;
	}
	rc = connect_step(net, k);
	if (rc == 0 && rw_now_ms() > k->deadline_ms) {
		RW_WARN(RW_LOG_NET, "NET/IB: %s: connect to %s: no set-up within %lld ms",
			net->devs[dev].name, k->peer, (long long)net->base.cfg.timeout_ms);
		rc = -ETIMEDOUT;
	}
	if (rc == 0) {
		*out = NULL;
		return 0;
	}
	pthread_mutex_lock(&net->lock);
	rw_list_del(&k->link);
	pthread_mutex_unlock(&net->lock);
	if (rc < 0) {
		connect_free(k);
		return rc;
	}
	c = k->comm;
	c->fd = k->fd;
	c->progress_ms = c->life_ms = rw_now_ms();
	free(k);
	pthread_mutex_lock(&net->lock);
	rw_list_add(&net->comms, &c->link);
	pthread_mutex_unlock(&net->lock);
	rw_ib_comm_announce(c);
	*out = &c->base;
	return 0;
}

void rw_ib_conn_destroy_all(struct rw_ib_net *net)
{
	while (!rw_list_empty(&net->connecting))
		connect_free(rw_container_of(net->connecting.next, struct rw_ib_connect, link));
	while (!rw_list_empty(&net->listeners))
		rw_ib_close_listen(
			&rw_container_of(net->listeners.next, struct rw_ib_listen, link)->base);
	while (!rw_list_empty(&net->comms))
		rw_ib_comm_bury(net, rw_container_of(net->comms.next, struct rw_ib_comm, link),
				true);
	rw_grave_free_all(&net->dead_comms, offsetof(struct rw_ib_comm, link),
			  offsetof(struct rw_ib_comm, reqs));
	rw_grave_free_all(&net->dead_listeners, offsetof(struct rw_ib_listen, link), 0);
}

int rw_ib_connect(struct rw_net *base, int dev, const void *handle, struct rw_net_comm **out)
{
	return rw_ib_connect_tc(base, dev, handle, -1, out);
}
