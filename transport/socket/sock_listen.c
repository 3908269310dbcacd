/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Listen and accept.  accept never blocks: each call takes the connections
 * the kernel has queued, reads whatever hello bytes have arrived, and hands
 * out a comm once every stream of one connect presented a correct hello.
 * A socket that sends anything else, closes early, or stays silent past
 * RINGWAY_SOCKET_HELLO_MS is dropped with a warning naming its address; it
 * cannot delay or take the place of a real peer.
 *
 * Lock-out.  Anyone who can reach the port can open connections, and a
 * peer holding the handle can open connections that bring only some of
 * their streams.  Neither may starve a real peer, whose streams prove the
 * nonce in their first bytes, all sent at once.  Sockets owing their hello
 * wait in the TCP toolbox's gate (transport/tcp/tcp_gate.c: kept
 * RINGWAY_SOCKET_HELLO_MS, RW_SOCK_MAX_CANDS of them, RW_SOCK_CANDS_PER_HOST
 * from one address, each read as soon as it is accepted, drop warnings
 * limited to RW_SOCK_DROP_WARNS per RW_SOCK_DROP_WINDOW_MS).  Connections
 * still missing streams follow the same rules here: kept
 * RINGWAY_SOCKET_HELLO_MS, and a full table evicts the oldest incomplete
 * one, never a complete connection.
 */
#define _GNU_SOURCE /* accept4 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/socket/sock_internal.h"
#include "transport/tcp/rw_tcp.h"

#define ACCEPTS_PER_CALL 128 /* bounds the time one accept call takes */

static_assert(RW_SOCK_DROP_WINDOW_MS == RW_TCP_DROP_WINDOW_MS, "the gate's warning window");
static_assert(sizeof(struct rw_sock_hello) <= RW_TCP_HELLO_MAX, "the gate holds a hello");
static_assert(RW_SOCK_MAX_CANDS <= RW_TCP_GATE_MAX, "the gate holds the candidates");

/* The gate counts the fds it accepts and closes with the transport's. */
static void fd_count(long delta)
{
	rw_sock_live_add(RW_SOCK_LIVE_FDS, delta);
}

static int gate_init(struct rw_sock_listen *l)
{
	char who[32 + RW_SOCK_ADDRSTRLEN];
	const struct rw_tcp_gate_cfg cfg = {
		.who = who,
		.param = "RINGWAY_SOCKET_HELLO_MS",
		.max = RW_SOCK_MAX_CANDS,
		.per_host = RW_SOCK_CANDS_PER_HOST,
		.hello_ms = l->hello_ms,
		.starve_ms = l->base.net->cfg.timeout_ms,
		.hello_len = sizeof(struct rw_sock_hello),
		.warns = RW_SOCK_DROP_WARNS,
		.fd_count = fd_count,
	};

	snprintf(who, sizeof(who), "socket: listener %s", l->addr);
	return rw_tcp_gate_init(&l->gate, &cfg);
}

int rw_sock_listen(struct rw_net *net, int dev, void *handle, struct rw_net_listen **listen_comm)
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
	l = rw_grave_alloc(&sn->dead_listeners, &sn->lock, sizeof(*l),
			   offsetof(struct rw_sock_listen, link),
			   offsetof(struct rw_sock_listen, obj), 0);
	if (!l)
		return -ENOMEM;
	rw_obj_open(&l->obj, RW_SOCK_LISTEN_MAGIC);
	sa = sn->devs[dev].addr;
	rc = rw_sock_socket(sa.ss_family, &fd);
	if (rc) {
		RW_WARN(RW_LOG_NET, "socket: listen on %s: socket() failed: %s", sn->devs[dev].name,
			strerror(-rc));
		goto err_free;
	}
	/* Accepted sockets inherit TCP_NODELAY and the buffer sizes. */
	rc = rw_sock_tune(fd, &net->cfg, "a listener");
	if (rc)
		goto err_close_fd;
	len = rw_tcp_addr_len(&sa);
	if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, SOMAXCONN) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len)) {
		rc = -errno;
		RW_WARN(RW_LOG_NET, "socket: listen on %s (%s): %s", sn->devs[dev].name,
			sn->devs[dev].addr_str, strerror(errno));
		goto err_close_fd;
	}
	l->base.net = net;
	l->net = sn;
	l->fd = fd;
	l->nonce = rw_tcp_nonce64();
	l->hello_ms = RW_MIN(net->cfg.socket_hello_ms, net->cfg.timeout_ms);
	rw_tcp_addr_str(&sa, l->addr, sizeof(l->addr));
	rc = gate_init(l);
	if (rc)
		goto err_close_fd;
	rw_list_init(&l->asms);
	rw_sock_handle_encode(&h, &sa, l->nonce);
	memset(handle, 0, RW_NET_HANDLE_MAXSIZE);
	memcpy(handle, &h, sizeof(h));
	pthread_mutex_lock(&sn->lock);
	rw_list_add(&sn->listeners, &l->link);
	pthread_mutex_unlock(&sn->lock);
	rw_sock_live_add(RW_SOCK_LIVE_LISTENERS, 1);
	RW_INFO(RW_LOG_NET, "socket: listening on %s (%s)", l->addr, sn->devs[dev].name);
	*listen_comm = &l->base;
	return 0;

err_close_fd:
	rw_sock_close(&fd);
err_free:
	/* never handed out, but perhaps a reused shell: back to the graveyard */
	rw_obj_close(&l->obj);
	pthread_mutex_lock(&sn->lock);
	rw_grave_bury(&sn->dead_listeners, &l->link);
	pthread_mutex_unlock(&sn->lock);
	return rc;
}

static void drop_note(struct rw_sock_listen *l, const char *peer, const char *why)
{
	rw_tcp_gate_note(&l->gate, peer, why);
}

static void asm_drop(struct rw_sock_listen *l, struct rw_sock_asm *a)
{
	rw_list_del(&a->link);
	for (int i = 0; i < RW_SOCK_MAX_STREAMS; i++)
		rw_sock_close(&a->fds[i]);
	l->nasms--;
	free(a);
}

/* Why a complete hello is not acceptable, or NULL when it is. */
static const char *hello_problem(const struct rw_sock_listen *l, const struct rw_sock_hello *h,
				 char *buf, size_t len)
{
	const unsigned char *b = (const unsigned char *)h;

	if (h->magic != RW_SOCK_MAGIC) {
		snprintf(buf, len,
			 "not a ringway peer (first bytes %02x %02x %02x %02x %02x %02x %02x %02x)",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
		return buf;
	}
	if (h->version != RW_SOCK_PROTO_VERSION) {
		snprintf(buf, len, "protocol version %u, this side speaks %u", h->version,
			 RW_SOCK_PROTO_VERSION);
		return buf;
	}
	if (h->nonce != l->nonce)
		return "wrong nonce (the handle of another or an older listener)";
	if (h->nstreams == 0 || h->nstreams > RW_SOCK_MAX_STREAMS || h->stream >= h->nstreams) {
		snprintf(buf, len, "stream %u of %u is out of range", h->stream, h->nstreams);
		return buf;
	}
	return NULL;
}

/*
 * Room for one more connection being assembled: evict the oldest one
 * whose streams have not all arrived.  false when every one is complete
 * (they wait for accept calls to take them; none is evicted).
 */
static bool asms_make_room(struct rw_sock_listen *l, uint64_t now)
{
	for (struct rw_list *it = l->asms.next; it != &l->asms; it = it->next) {
		struct rw_sock_asm *a = rw_container_of(it, struct rw_sock_asm, link);
		char why[160];

		if (a->have == a->nstreams)
			continue;
		snprintf(why, sizeof(why),
			 "%d of %d streams arrived in %llu ms; evicted: %d connections half set up",
			 a->have, a->nstreams, (unsigned long long)(now - a->created_ms), l->nasms);
		drop_note(l, a->peer[0] ? a->peer : "?", why);
		asm_drop(l, a);
		return true;
	}
	return false;
}

/* File gate entry i, whose hello is correct, under its connection. */
static void cand_adopt(struct rw_sock_listen *l, int i, const struct rw_sock_hello *h, uint64_t now)
{
	const struct rw_tcp_cand *c = &l->gate.c[i];
	struct rw_sock_asm *a = NULL;
	struct rw_list *it;
	const char *why = NULL;

	for (it = l->asms.next; it != &l->asms; it = it->next) {
		struct rw_sock_asm *x = rw_container_of(it, struct rw_sock_asm, link);

		if (x->conn_id == h->conn_id) {
			a = x;
			break;
		}
	}
	if (!a && l->nasms >= RW_SOCK_MAX_ASMS && !asms_make_room(l, now))
		why = "too many connections waiting for accept";
	else if (a && a->nstreams != h->nstreams)
		why = "its stream count differs from its other streams'";
	else if (a && a->fds[h->stream] >= 0)
		why = "it repeats a stream already connected";
	if (why) {
		rw_tcp_gate_drop(&l->gate, i, "%s", why);
		return;
	}
	if (!a) {
		a = calloc(1, sizeof(*a));
		if (!a) {
			rw_tcp_gate_close(&l->gate, i);
			return;
		}
		for (int k = 0; k < RW_SOCK_MAX_STREAMS; k++)
			a->fds[k] = -1;
		a->conn_id = h->conn_id;
		a->nstreams = h->nstreams;
		a->created_ms = now;
		a->deadline_ms = now + (uint64_t)l->hello_ms;
		rw_list_add(&l->asms, &a->link);
		l->nasms++;
	}
	if (h->stream == 0 || !a->peer[0])
		snprintf(a->peer, sizeof(a->peer), "%s", c->name);
	a->fds[h->stream] = rw_tcp_gate_take(&l->gate, i);
	a->have++;
}

/* Read the hello bytes that arrived on gate entry i: file it under its
 * connection once complete and correct, drop it when it is not a peer
 * (the gate drops one that closed, failed or is past its time), else
 * leave it for later. */
static void cand_progress(struct rw_sock_listen *l, int i, uint64_t now)
{
	struct rw_sock_hello h;
	char why[160];
	const char *problem;

	if (rw_tcp_gate_read(&l->gate, i, now) != 1)
		return;
	memcpy(&h, l->gate.c[i].hello, sizeof(h));
	problem = hello_problem(l, &h, why, sizeof(why));
	if (problem)
		rw_tcp_gate_drop(&l->gate, i, "%s", problem);
	else
		cand_adopt(l, i, &h, now);
}

/* Take the connections the kernel has queued (a bounded number per call)
 * and read their hellos at once, before newer ones can evict them. */
static int accept_new(struct rw_sock_listen *l)
{
	for (int k = 0; k < ACCEPTS_PER_CALL; k++) {
		uint64_t now = rw_now_ms();
		int i, rc = rw_tcp_gate_accept(&l->gate, l->fd, now, &i);

		if (rc <= 0)
			return rc;
		cand_progress(l, i, now);
	}
	return 0;
}

/* Read the hello bytes that arrived; drop what is not a peer. */
static void cands_progress(struct rw_sock_listen *l)
{
	uint64_t now = rw_now_ms();

	for (int i = 0; i < l->gate.n;) {
		int before = l->gate.n;

		cand_progress(l, i, now);
		if (l->gate.n == before)
			i++; /* still there; else the next one moved into place i */
	}
}

/* Drop connections whose other streams did not come in time; return a
 * complete one, if any. */
static struct rw_sock_asm *asms_progress(struct rw_sock_listen *l)
{
	struct rw_list *it, *next;
	uint64_t now = rw_now_ms();
	struct rw_sock_asm *done = NULL;

	for (it = l->asms.next; it != &l->asms; it = next) {
		struct rw_sock_asm *a = rw_container_of(it, struct rw_sock_asm, link);

		next = it->next;
		if (a->have == a->nstreams) {
			if (!done)
				done = a;
			continue;
		}
		if (now >= a->deadline_ms) {
			char why[160];

			snprintf(why, sizeof(why),
				 "%d of %d streams arrived in %lld ms (RINGWAY_SOCKET_HELLO_MS)",
				 a->have, a->nstreams, (long long)l->hello_ms);
			drop_note(l, a->peer[0] ? a->peer : "?", why);
			asm_drop(l, a);
		}
	}
	return done;
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
	rc = rw_obj_check(&l->obj, RW_SOCK_LISTEN_MAGIC);
	if (rc) {
		RW_WARN(RW_LOG_NET, "socket: accept on a %s listener",
			rc == -EBADF ? "closed" : "foreign");
		return -EBADF;
	}
	rw_tcp_gate_tick(&l->gate, rw_now_ms());
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
	rw_list_add(&l->net->comms, &c->link);
	pthread_mutex_unlock(&l->net->lock);
	RW_INFO(RW_LOG_NET, "socket: listener %s: accepted %d stream(s) from %s", l->addr,
		c->d->nstreams, c->peer);
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
	if (rw_obj_check(&l->obj, RW_SOCK_LISTEN_MAGIC))
		return -EBADF;
	sn = l->net;
	rw_tcp_gate_fini(&l->gate);
	while (!rw_list_empty(&l->asms))
		asm_drop(l, rw_container_of(l->asms.next, struct rw_sock_asm, link));
	rw_sock_close(&l->fd);
	rw_obj_close(&l->obj);
	pthread_mutex_lock(&sn->lock);
	rw_grave_bury(&sn->dead_listeners, &l->link);
	pthread_mutex_unlock(&sn->lock);
	rw_sock_live_add(RW_SOCK_LIVE_LISTENERS, -1);
	return 0;
}
