/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Listen and accept.  accept never blocks: each call takes the connections
 * the kernel has queued, reads whatever hello bytes have arrived, and hands
 * out a comm once every stream of one connect presented a correct hello.
 * A socket that sends anything else, closes early, or stays silent past the
 * timeout is dropped with a warning naming its address; it cannot delay or
 * take the place of a real peer.
 */
#define _GNU_SOURCE /* accept4 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/sock_internal.h"

#define ACCEPTS_PER_CALL 32

int rw_sock_listen(struct rw_net *net, int dev, void *handle,
		   struct rw_net_listen **listen_comm)
{
	struct rw_sock_net *sn;
	struct rw_sock_listen *l;
	struct rw_sock_handle h;
	struct sockaddr_storage sa;
	socklen_t len;
	int fd = -1, rc;

	if (!net || !handle || !listen_comm)
		return -EINVAL;
	sn = rw_sock_net_from(net);
	if (dev < 0 || dev >= sn->ndev) {
		RW_WARN(RW_LOG_NET, "socket: listen(dev=%d): %d devices", dev, sn->ndev);
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	sa = sn->devs[dev].addr;
	rc = rw_sock_socket(sa.ss_family, &fd);
	if (rc) {
		RW_WARN(RW_LOG_NET, "socket: listen on %s: socket() failed: %s",
			sn->devs[dev].name, strerror(-rc));
		goto err_free;
	}
	/* Accepted sockets inherit TCP_NODELAY and the buffer sizes. */
	rc = rw_sock_tune(fd, &net->cfg, "a listener");
	if (rc)
		goto err_close_fd;
	len = rw_sock_addr_len(&sa);
	if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, SOMAXCONN) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len)) {
		rc = -errno;
		RW_WARN(RW_LOG_NET, "socket: listen on %s (%s): %s", sn->devs[dev].name,
			sn->devs[dev].addr_str, strerror(errno));
		goto err_close_fd;
	}
	l->base.net = net;
	l->magic = RW_SOCK_LISTEN_MAGIC;
	l->net = sn;
	l->fd = fd;
	l->nonce = rw_sock_random64();
	rw_sock_addr_str(&sa, l->addr, sizeof(l->addr));
	rw_sock_list_init(&l->cands);
	rw_sock_list_init(&l->asms);
	rw_sock_handle_encode(&h, &sa, l->nonce);
	memset(handle, 0, RW_NET_HANDLE_MAXSIZE);
	memcpy(handle, &h, sizeof(h));
	pthread_mutex_lock(&sn->lock);
	rw_sock_list_add(&sn->listeners, &l->link);
	pthread_mutex_unlock(&sn->lock);
	rw_sock_live_add(RW_SOCK_LIVE_LISTENERS, 1);
	RW_INFO(RW_LOG_NET, "socket: listening on %s (%s)", l->addr, sn->devs[dev].name);
	*listen_comm = &l->base;
	return 0;

err_close_fd:
	rw_sock_close(&fd);
err_free:
	free(l);
	return rc;
}

static void cand_drop(struct rw_sock_listen *l, struct rw_sock_cand *c)
{
	rw_sock_list_del(&c->link);
	rw_sock_close(&c->fd);
	l->ncands--;
	free(c);
}

static void asm_drop(struct rw_sock_listen *l, struct rw_sock_asm *a)
{
	rw_sock_list_del(&a->link);
	for (int i = 0; i < RW_SOCK_MAX_STREAMS; i++)
		rw_sock_close(&a->fds[i]);
	l->nasms--;
	free(a);
}

/* Take every connection the kernel has queued. */
static int accept_new(struct rw_sock_listen *l)
{
	for (int i = 0; i < ACCEPTS_PER_CALL; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		struct rw_sock_cand *c;
		char peer[RW_SOCK_ADDRSTRLEN];
		int fd = accept4(l->fd, (struct sockaddr *)&sa, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			switch (errno) {
			case EAGAIN:
#if EAGAIN != EWOULDBLOCK
			case EWOULDBLOCK:
#endif
				return 0;
			case EINTR:
			case ECONNABORTED:
			case EPROTO:
			case ENETDOWN:
			case ENETUNREACH:
			case EHOSTDOWN:
			case EHOSTUNREACH:
				continue; /* that connection is gone; not ours to fail */
			default:
				RW_WARN(RW_LOG_NET, "socket: listener %s: accept4 failed: %s",
					l->addr, strerror(errno));
				return -errno;
			}
		}
		rw_sock_fd_adopted();
		rw_sock_addr_str(&sa, peer, sizeof(peer));
		if (l->ncands >= RW_SOCK_MAX_CANDS) {
			RW_WARN(RW_LOG_NET,
				"socket: listener %s: dropping connection from %s: %d connections already owe a hello",
				l->addr, peer, l->ncands);
			rw_sock_close(&fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			rw_sock_close(&fd);
			return -ENOMEM;
		}
		c->fd = fd;
		c->deadline_ms = rw_now_ms() + (uint64_t)l->base.net->cfg.timeout_ms;
		memcpy(c->peer, peer, sizeof(peer));
		rw_sock_list_add(&l->cands, &c->link);
		l->ncands++;
	}
	return 0;
}

/* Why a complete hello is not acceptable, or NULL when it is. */
static const char *hello_problem(const struct rw_sock_listen *l,
				 const struct rw_sock_hello *h, char *buf,
				 size_t len)
{
	const unsigned char *b = (const unsigned char *)h;

	if (h->magic != RW_SOCK_MAGIC) {
		snprintf(buf, len,
			 "not a ringway peer (first bytes %02x %02x %02x %02x %02x %02x %02x %02x)",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
		return buf;
	}
	if (h->version != RW_SOCK_PROTO_VERSION) {
		snprintf(buf, len, "protocol version %u, this side speaks %u",
			 h->version, RW_SOCK_PROTO_VERSION);
		return buf;
	}
	if (h->nonce != l->nonce)
		return "wrong nonce (the handle of another or an older listener)";
	if (h->nstreams == 0 || h->nstreams > RW_SOCK_MAX_STREAMS ||
	    h->stream >= h->nstreams) {
		snprintf(buf, len, "stream %u of %u is out of range", h->stream,
			 h->nstreams);
		return buf;
	}
	return NULL;
}

/* File a correct hello's stream under its connection. */
static void cand_adopt(struct rw_sock_listen *l, struct rw_sock_cand *c)
{
	struct rw_sock_asm *a = NULL;
	struct rw_sock_link *it;
	const char *why = NULL;

	for (it = l->asms.next; it != &l->asms; it = it->next) {
		struct rw_sock_asm *x = rw_container_of(it, struct rw_sock_asm, link);

		if (x->conn_id == c->hello.conn_id) {
			a = x;
			break;
		}
	}
	if (!a && l->nasms >= RW_SOCK_MAX_ASMS)
		why = "too many connections half set up";
	else if (a && a->nstreams != c->hello.nstreams)
		why = "its stream count differs from its other streams'";
	else if (a && a->fds[c->hello.stream] >= 0)
		why = "it repeats a stream already connected";
	if (why) {
		RW_WARN(RW_LOG_NET,
			"socket: listener %s: dropping connection from %s: %s",
			l->addr, c->peer, why);
		cand_drop(l, c);
		return;
	}
	if (!a) {
		a = calloc(1, sizeof(*a));
		if (!a) {
			cand_drop(l, c);
			return;
		}
		for (int i = 0; i < RW_SOCK_MAX_STREAMS; i++)
			a->fds[i] = -1;
		a->conn_id = c->hello.conn_id;
		a->nstreams = c->hello.nstreams;
		a->deadline_ms = rw_now_ms() + (uint64_t)l->base.net->cfg.timeout_ms;
		rw_sock_list_add(&l->asms, &a->link);
		l->nasms++;
	}
	if (c->hello.stream == 0)
		memcpy(a->peer, c->peer, sizeof(a->peer));
	a->fds[c->hello.stream] = c->fd;
	a->have++;
	c->fd = -1;
	cand_drop(l, c);
}

/* Read the hello bytes that arrived; drop what is not a peer. */
static void cands_progress(struct rw_sock_listen *l)
{
	struct rw_sock_link *it, *next;
	uint64_t now = rw_now_ms();

	for (it = l->cands.next; it != &l->cands; it = next) {
		struct rw_sock_cand *c = rw_container_of(it, struct rw_sock_cand, link);
		char why[160];
		const char *problem = NULL;
		ssize_t n = 1;

		next = it->next;
		while (c->got < sizeof(c->hello) && n > 0) {
			n = recv(c->fd, (char *)&c->hello + c->got,
				 sizeof(c->hello) - c->got, MSG_DONTWAIT);
			if (n > 0)
				c->got += (size_t)n;
		}
		if (c->got == sizeof(c->hello)) {
			problem = hello_problem(l, &c->hello, why, sizeof(why));
		} else if (n == 0) {
			snprintf(why, sizeof(why),
				 "closed after %zu of %zu hello bytes", c->got,
				 sizeof(c->hello));
			problem = why;
		} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			snprintf(why, sizeof(why), "recv failed after %zu hello bytes: %s",
				 c->got, strerror(errno));
			problem = why;
		} else if (now >= c->deadline_ms) {
			snprintf(why, sizeof(why),
				 "sent %zu of %zu hello bytes in %lld ms",
				 c->got, sizeof(c->hello),
				 (long long)l->base.net->cfg.timeout_ms);
			problem = why;
		} else {
			continue; /* more to come */
		}
		if (problem) {
			RW_WARN(RW_LOG_NET,
				"socket: listener %s: dropping connection from %s: %s",
				l->addr, c->peer, problem);
			cand_drop(l, c);
		} else {
			cand_adopt(l, c);
		}
	}
}

/* Drop connections whose other streams did not come in time; return a
 * complete one, if any. */
static struct rw_sock_asm *asms_progress(struct rw_sock_listen *l)
{
	struct rw_sock_link *it, *next;
	uint64_t now = rw_now_ms();

	for (it = l->asms.next; it != &l->asms; it = next) {
		struct rw_sock_asm *a = rw_container_of(it, struct rw_sock_asm, link);

		next = it->next;
		if (a->have == a->nstreams)
			return a;
		if (now >= a->deadline_ms) {
			RW_WARN(RW_LOG_NET,
				"socket: listener %s: dropping connection from %s: %d of %d streams arrived in %lld ms",
				l->addr, a->peer[0] ? a->peer : "?", a->have, a->nstreams,
				(long long)l->base.net->cfg.timeout_ms);
			asm_drop(l, a);
		}
	}
	return NULL;
}

int rw_sock_accept(struct rw_net_listen *listen_comm, struct rw_net_comm **recv_comm)
{
	struct rw_sock_listen *l;
	struct rw_sock_comm *c;
	struct rw_sock_asm *a;
	int rc;

	if (!listen_comm || !recv_comm)
		return -EINVAL;
	l = rw_container_of(listen_comm, struct rw_sock_listen, base);
	if (l->magic != RW_SOCK_LISTEN_MAGIC) {
		RW_WARN(RW_LOG_NET, "socket: accept on a %s listener",
			l->magic == RW_SOCK_DEAD_MAGIC ? "closed" : "foreign");
		return -EBADF;
	}
	rc = accept_new(l);
	if (rc)
		return rc;
	cands_progress(l);
	a = asms_progress(l);
	if (!a) {
		*recv_comm = NULL;
		return 0;
	}
	c = rw_sock_comm_alloc(l->net, RW_SOCK_RECV_MAGIC, a->peer);
	if (!c)
		return -ENOMEM;
	rc = rw_sock_comm_start(c, a->fds, a->nstreams);
	if (rc) {
		rw_sock_comm_free(c);
		return rc;
	}
	asm_drop(l, a);
	pthread_mutex_lock(&l->net->lock);
	rw_sock_list_add(&l->net->comms, &c->link);
	pthread_mutex_unlock(&l->net->lock);
	RW_INFO(RW_LOG_NET, "socket: listener %s: accepted %d stream(s) from %s",
		l->addr, c->d->nstreams, c->peer);
	*recv_comm = &c->base;
	return 0;
}

int rw_sock_close_listen(struct rw_net_listen *listen_comm)
{
	struct rw_sock_listen *l;
	struct rw_sock_net *sn;

	if (!listen_comm)
		return -EINVAL;
	l = rw_container_of(listen_comm, struct rw_sock_listen, base);
	if (l->magic != RW_SOCK_LISTEN_MAGIC)
		return -EBADF;
	sn = l->net;
	while (!rw_sock_list_empty(&l->cands))
		cand_drop(l, rw_container_of(l->cands.next, struct rw_sock_cand, link));
	while (!rw_sock_list_empty(&l->asms))
		asm_drop(l, rw_container_of(l->asms.next, struct rw_sock_asm, link));
	rw_sock_close(&l->fd);
	l->magic = RW_SOCK_DEAD_MAGIC;
	pthread_mutex_lock(&sn->lock);
	rw_sock_list_del(&l->link);
	rw_sock_list_add(&sn->dead_listeners, &l->link);
	pthread_mutex_unlock(&sn->lock);
	rw_sock_live_add(RW_SOCK_LIVE_LISTENERS, -1);
	return 0;
}

void rw_sock_listen_free(struct rw_sock_listen *l)
{
	free(l);
}
