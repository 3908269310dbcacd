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
 * nonce in their first bytes, all sent at once:
 *   - a socket owing its hello, and a connection still missing streams,
 *     is kept RINGWAY_SOCKET_HELLO_MS (a few seconds, at most the timeout);
 *   - a full table evicts its oldest entry of the same kind, never a socket
 *     that proved the nonce nor a complete connection; one source address
 *     holds at most RW_SOCK_CANDS_PER_HOST sockets owing a hello, evicting
 *     its own oldest, so it cannot push out other hosts' connections;
 *   - a socket is read as soon as it is accepted, so a peer whose hello has
 *     arrived proves itself before newer connections could evict it;
 *   - warnings about drops are limited per listener (RW_SOCK_DROP_WARNS per
 *     RW_SOCK_DROP_WINDOW_MS, the others counted), so a flood of strangers
 *     does not flood the log.
 */
#define _GNU_SOURCE /* accept4 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/socket/sock_internal.h"

#define ACCEPTS_PER_CALL 128 /* bounds the time one accept call takes */

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
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
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
	l->hello_ms = RW_MIN(net->cfg.socket_hello_ms, net->cfg.timeout_ms);
	l->warn_window_ms = rw_now_ms();
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

/*
 * Drop warnings.  Each names the address and the reason, but a listener
 * warns about RW_SOCK_DROP_WARNS drops per RW_SOCK_DROP_WINDOW_MS at most:
 * the others are counted, and the count is reported (naming the last one)
 * once the window is over, or when the listener closes.
 */
static void quiet_report(struct rw_sock_listen *l)
{
	if (l->nquiet == 0)
		return;
	RW_WARN(RW_LOG_NET,
		"socket: listener %s: dropped %ld more connection(s) without a warning each (the "
		"last from %s)",
		l->addr, l->nquiet, l->quiet_last);
	l->nquiet = 0;
}

static void quiet_tick(struct rw_sock_listen *l, uint64_t now)
{
	if (now - l->warn_window_ms < RW_SOCK_DROP_WINDOW_MS)
		return;
	quiet_report(l);
	l->warn_window_ms = now;
	l->nwarned = 0;
}

static void drop_note(struct rw_sock_listen *l, const char *peer, const char *why)
{
	quiet_tick(l, rw_now_ms());
	if (l->nwarned < RW_SOCK_DROP_WARNS) {
		l->nwarned++;
		RW_WARN(RW_LOG_NET, "socket: listener %s: dropping connection from %s: %s%s",
			l->addr, peer, why,
			l->nwarned == RW_SOCK_DROP_WARNS
				? " (further drops are counted, and reported every 10 s)"
				: "");
		return;
	}
	l->nquiet++;
	snprintf(l->quiet_last, sizeof(l->quiet_last), "%s: %s", peer, why);
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

/* The same source address (the port aside)? */
static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return true; /* other families are all one "host" */
}

static struct rw_sock_cand *cand_of(struct rw_sock_link *it)
{
	return rw_container_of(it, struct rw_sock_cand, link);
}

/*
 * Make room for a connection just accepted from src: evict the oldest
 * connection still owing a hello from the same address when that address
 * holds RW_SOCK_CANDS_PER_HOST of them, else the oldest of all when the
 * table is full.  Connections that proved the nonce are not in this table.
 */
static void cands_make_room(struct rw_sock_listen *l, const struct sockaddr_storage *src,
			    uint64_t now)
{
	struct rw_sock_cand *victim = NULL, *oldest_same = NULL;
	int same = 0;
	char why[160];

	for (struct rw_sock_link *it = l->cands.next; it != &l->cands; it = it->next) {
		struct rw_sock_cand *c = cand_of(it);

		if (same_host(&c->src, src) && same++ == 0)
			oldest_same = c;
	}
	if (same >= RW_SOCK_CANDS_PER_HOST) {
		victim = oldest_same;
		snprintf(why, sizeof(why),
			 "no hello after %llu ms; evicted: its address holds %d connections owing "
			 "a hello",
			 (unsigned long long)(now - victim->accepted_ms), same);
	} else if (l->ncands >= RW_SOCK_MAX_CANDS) {
		victim = cand_of(l->cands.next);
		snprintf(why, sizeof(why),
			 "no hello after %llu ms; evicted: %d connections owe a hello",
			 (unsigned long long)(now - victim->accepted_ms), l->ncands);
	}
	if (victim) {
		drop_note(l, victim->peer, why);
		cand_drop(l, victim);
	}
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
	for (struct rw_sock_link *it = l->asms.next; it != &l->asms; it = it->next) {
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

/* File a correct hello's stream under its connection. */
static void cand_adopt(struct rw_sock_listen *l, struct rw_sock_cand *c, uint64_t now)
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
	if (!a && l->nasms >= RW_SOCK_MAX_ASMS && !asms_make_room(l, now))
		why = "too many connections waiting for accept";
	else if (a && a->nstreams != c->hello.nstreams)
		why = "its stream count differs from its other streams'";
	else if (a && a->fds[c->hello.stream] >= 0)
		why = "it repeats a stream already connected";
	if (why) {
		drop_note(l, c->peer, why);
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
		a->created_ms = now;
		a->deadline_ms = now + (uint64_t)l->hello_ms;
		rw_sock_list_add(&l->asms, &a->link);
		l->nasms++;
	}
	if (c->hello.stream == 0 || !a->peer[0])
		memcpy(a->peer, c->peer, sizeof(a->peer));
	a->fds[c->hello.stream] = c->fd;
	a->have++;
	c->fd = -1;
	cand_drop(l, c);
}

/* Read the hello bytes that arrived on c: file it under its connection
 * once complete and correct, drop it when it is not a peer or its time is
 * up, else leave it for later. */
static void cand_progress(struct rw_sock_listen *l, struct rw_sock_cand *c, uint64_t now)
{
	char why[160];
	const char *problem;
	ssize_t n = 1;

	while (c->got < sizeof(c->hello) && n > 0) {
		n = recv(c->fd, (char *)&c->hello + c->got, sizeof(c->hello) - c->got,
			 MSG_DONTWAIT);
		if (n > 0)
			c->got += (size_t)n;
	}
	if (c->got == sizeof(c->hello)) {
		problem = hello_problem(l, &c->hello, why, sizeof(why));
	} else if (n == 0) {
		snprintf(why, sizeof(why), "closed after %zu of %zu hello bytes", c->got,
			 sizeof(c->hello));
		problem = why;
	} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		snprintf(why, sizeof(why), "recv failed after %zu hello bytes: %s", c->got,
			 strerror(errno));
		problem = why;
	} else if (now >= c->deadline_ms) {
		snprintf(why, sizeof(why),
			 "sent %zu of %zu hello bytes in %lld ms (RINGWAY_SOCKET_HELLO_MS)", c->got,
			 sizeof(c->hello), (long long)l->hello_ms);
		problem = why;
	} else {
		return; /* more to come */
	}
	if (problem) {
		drop_note(l, c->peer, problem);
		cand_drop(l, c);
	} else {
		cand_adopt(l, c, now);
	}
}

/*
 * accept4 found no free fd.  Give it one of ours (the oldest connection
 * owing a hello) and try again; with none to give, wait for fds to free up
 * (the connections stay queued in the kernel), but at most the timeout.
 * 1: try again, 0: not now, -errno: fail the accept.
 */
static int accept_starved(struct rw_sock_listen *l, int err, uint64_t now)
{
	if (l->ncands > 0) {
		char why[160];
		struct rw_sock_cand *victim = cand_of(l->cands.next);

		snprintf(why, sizeof(why),
			 "no hello after %llu ms; evicted: the process has no free fd (%s)",
			 (unsigned long long)(now - victim->accepted_ms), strerror(err));
		drop_note(l, victim->peer, why);
		cand_drop(l, victim);
		return 1;
	}
	if (!l->starved_ms) {
		l->starved_ms = now;
		RW_WARN(RW_LOG_NET,
			"socket: listener %s: accept4 failed: %s; waiting up to %lld ms for fds to "
			"free up",
			l->addr, strerror(err), (long long)l->base.net->cfg.timeout_ms);
		return 0;
	}
	if (now - l->starved_ms < (uint64_t)l->base.net->cfg.timeout_ms)
		return 0;
	RW_WARN(RW_LOG_NET, "socket: listener %s: accept4 failed for %lld ms: %s", l->addr,
		(long long)(now - l->starved_ms), strerror(err));
	return -err;
}

/* Take the connections the kernel has queued (a bounded number per call)
 * and read their hellos at once, before newer ones can evict them. */
static int accept_new(struct rw_sock_listen *l)
{
	for (int i = 0; i < ACCEPTS_PER_CALL; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		struct rw_sock_cand *c;
		uint64_t now;
		int fd = accept4(l->fd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		now = rw_now_ms();
		if (fd < 0) {
			int rc;

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
			case EMFILE:
			case ENFILE:
			case ENOBUFS:
			case ENOMEM:
				rc = accept_starved(l, errno, now);
				if (rc == 1)
					continue;
				return rc;
			default:
				RW_WARN(RW_LOG_NET, "socket: listener %s: accept4 failed: %s",
					l->addr, strerror(errno));
				return -errno;
			}
		}
		rw_sock_fd_adopted();
		l->starved_ms = 0;
		c = calloc(1, sizeof(*c));
		if (!c) {
			rw_sock_close(&fd);
			return -ENOMEM;
		}
		c->fd = fd;
		c->accepted_ms = now;
		c->deadline_ms = now + (uint64_t)l->hello_ms;
		c->src = sa;
		rw_sock_addr_str(&sa, c->peer, sizeof(c->peer));
		cands_make_room(l, &sa, now);
		rw_sock_list_add(&l->cands, &c->link);
		l->ncands++;
		cand_progress(l, c, now);
	}
	return 0;
}

/* Read the hello bytes that arrived; drop what is not a peer. */
static void cands_progress(struct rw_sock_listen *l)
{
	struct rw_sock_link *it, *next;
	uint64_t now = rw_now_ms();

	for (it = l->cands.next; it != &l->cands; it = next) {
		next = it->next;
		cand_progress(l, cand_of(it), now);
	}
}

/* Drop connections whose other streams did not come in time; return a
 * complete one, if any. */
static struct rw_sock_asm *asms_progress(struct rw_sock_listen *l)
{
	struct rw_sock_link *it, *next;
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
	if (l->magic != RW_SOCK_LISTEN_MAGIC) {
		RW_WARN(RW_LOG_NET, "socket: accept on a %s listener",
			l->magic == RW_SOCK_DEAD_MAGIC ? "closed" : "foreign");
		return -EBADF;
	}
	quiet_tick(l, rw_now_ms());
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
	if (l->magic != RW_SOCK_LISTEN_MAGIC)
		return -EBADF;
	sn = l->net;
	quiet_report(l);
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
