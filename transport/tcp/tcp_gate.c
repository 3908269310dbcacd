/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Accept, and the policy for connections that have not proven themselves
 * yet (rw_tcp.h describes it).  Anyone who can reach a listening port can
 * open connections; the gate keeps them from starving the real peers,
 * whose hellos arrive in their first bytes: an unproven connection is held
 * briefly, the oldest goes first, one address cannot crowd out the others,
 * and a flood of strangers does not flood the log.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rw_log.h"
#include "transport/tcp/rw_tcp.h"

#define TRANSIENT_PER_CALL 128 /* failed accepts one call skips at most */

int rw_tcp_gate_init(struct rw_tcp_gate *g, const struct rw_tcp_gate_cfg *cfg)
{
	if (!g || !cfg || cfg->max < 1 || cfg->max > RW_TCP_GATE_MAX || cfg->per_host < 0 ||
	    cfg->hello_len < 1 || cfg->hello_len > RW_TCP_HELLO_MAX || cfg->hello_ms < 0 ||
	    cfg->starve_ms < 0 || cfg->warns < 0)
		return -EINVAL;
	memset(g, 0, sizeof(*g));
	g->cfg = *cfg;
	if (!g->cfg.per_host)
		g->cfg.per_host = cfg->max;
	snprintf(g->who, sizeof(g->who), "%s", cfg->who ? cfg->who : "tcp");
	snprintf(g->param, sizeof(g->param), "%s", cfg->param ? cfg->param : "hello deadline");
	g->cfg.who = g->who;
	g->cfg.param = g->param;
	g->window_ms = rw_now_ms();
	return 0;
}

/* --- drop warnings ---------------------------------------------------- */

static void quiet_report(struct rw_tcp_gate *g)
{
	if (g->nquiet == 0)
		return;
	RW_WARN(RW_LOG_NET,
		"%s: dropped %ld more connection(s) without a warning each (the last from %s)",
		g->who, g->nquiet, g->quiet_last);
	g->nquiet = 0;
}

void rw_tcp_gate_tick(struct rw_tcp_gate *g, uint64_t now)
{
	if (now - g->window_ms < RW_TCP_DROP_WINDOW_MS)
		return;
	quiet_report(g);
	g->window_ms = now;
	g->nwarned = 0;
}

void rw_tcp_gate_note(struct rw_tcp_gate *g, const char *peer, const char *why)
{
	if (g->cfg.warns == 0) {
		RW_INFO(RW_LOG_NET, "%s: dropping connection from %s: %s", g->who, peer, why);
		return;
	}
	rw_tcp_gate_tick(g, rw_now_ms());
	if (g->nwarned < g->cfg.warns) {
		g->nwarned++;
		RW_WARN(RW_LOG_NET, "%s: dropping connection from %s: %s%s", g->who, peer, why,
			g->nwarned == g->cfg.warns
				? " (further drops are counted, and reported every 10 s)"
				: "");
		return;
	}
	g->nquiet++;
	snprintf(g->quiet_last, sizeof(g->quiet_last), "%s: %s", peer, why);
}

/* --- the table ---------------------------------------------------------- */

static void forget(struct rw_tcp_gate *g, int i)
{
	memmove(&g->c[i], &g->c[i + 1], (size_t)(g->n - i - 1) * sizeof(g->c[0]));
	g->n--;
}

void rw_tcp_gate_close(struct rw_tcp_gate *g, int i)
{
	if (i < 0 || i >= g->n)
		return;
	rw_close_fd(&g->c[i].fd);
	if (g->cfg.fd_count)
		g->cfg.fd_count(-1);
	forget(g, i);
}

void rw_tcp_gate_drop(struct rw_tcp_gate *g, int i, const char *fmt, ...)
{
	char why[160];
	va_list ap;

	if (i < 0 || i >= g->n)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	rw_tcp_gate_note(g, g->c[i].name, why);
	rw_tcp_gate_close(g, i);
}

int rw_tcp_gate_take(struct rw_tcp_gate *g, int i)
{
	int fd;

	if (i < 0 || i >= g->n)
		return -1;
	fd = g->c[i].fd;
	forget(g, i);
	return fd;
}

void rw_tcp_gate_fini(struct rw_tcp_gate *g)
{
	if (!g)
		return;
	quiet_report(g);
	while (g->n)
		rw_tcp_gate_close(g, g->n - 1);
	free(g->c);
	g->c = NULL;
	g->cap = 0;
}

/* Room for one more entry (make_room keeps n < max). */
static int grow(struct rw_tcp_gate *g)
{
	int cap = RW_MIN(g->cap ? 2 * g->cap : 4, g->cfg.max);
	struct rw_tcp_cand *c;

	if (g->n < g->cap)
		return 0;
	c = realloc(g->c, (size_t)cap * sizeof(*c));
	if (!c)
		return -ENOMEM;
	g->c = c;
	g->cap = cap;
	return 0;
}

static void drop_late(struct rw_tcp_gate *g, int i)
{
	const struct rw_tcp_cand *c = &g->c[i];

	rw_tcp_gate_drop(g, i, "sent %zu of %zu hello bytes in %lld ms (%s)", c->got,
			 g->cfg.hello_len, (long long)g->cfg.hello_ms, g->param);
}

uint64_t rw_tcp_gate_expire(struct rw_tcp_gate *g, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (int i = 0; i < g->n;) {
		if (now >= g->c[i].deadline_ms) {
			drop_late(g, i);
			continue;
		}
		next = RW_MIN(next, g->c[i].deadline_ms);
		i++;
	}
	return next;
}

/*
 * Make room for a connection just accepted from src: evict the oldest
 * connection still owing a hello from the same address when that address
 * holds per_host of them, else the oldest of all when the table is full.
 */
static void make_room(struct rw_tcp_gate *g, const struct sockaddr_storage *src, uint64_t now)
{
	int same = 0, oldest_same = -1;

	for (int i = 0; i < g->n; i++) {
		if (rw_tcp_same_host(&g->c[i].src, src) && same++ == 0)
			oldest_same = i;
	}
	if (same >= g->cfg.per_host)
		rw_tcp_gate_drop(
			g, oldest_same,
			"no hello after %llu ms; evicted: its address holds %d connections "
			"owing a hello",
			(unsigned long long)(now - g->c[oldest_same].accepted_ms), same);
	else if (g->n >= g->cfg.max)
		rw_tcp_gate_drop(g, 0,
				 "no hello after %llu ms; evicted: %d connections owe a hello",
				 (unsigned long long)(now - g->c[0].accepted_ms), g->n);
}

/*
 * accept4 found no free fd.  Give it one of ours (the oldest connection
 * owing a hello) and try again; with none to give, wait for fds to free up
 * (the connections stay queued in the kernel), but at most starve_ms.
 * 1: try again, 0: not now, -errno: fail the accept.
 */
static int starved(struct rw_tcp_gate *g, int err, uint64_t now)
{
	if (g->n > 0) {
		rw_tcp_gate_drop(g, 0,
				 "no hello after %llu ms; evicted: the process has no free fd (%s)",
				 (unsigned long long)(now - g->c[0].accepted_ms), strerror(err));
		return 1;
	}
	if (!g->starved_ms && g->cfg.starve_ms > 0) {
		g->starved_ms = now;
		RW_WARN(RW_LOG_NET,
			"%s: accept4 failed: %s; waiting up to %lld ms for fds to free up", g->who,
			strerror(err), (long long)g->cfg.starve_ms);
		return 0;
	}
	if (g->starved_ms && now - g->starved_ms < (uint64_t)g->cfg.starve_ms)
		return 0;
	if (g->starved_ms)
		RW_WARN(RW_LOG_NET, "%s: accept4 failed for %lld ms: %s", g->who,
			(long long)(now - g->starved_ms), strerror(err));
	else
		RW_WARN(RW_LOG_NET, "%s: accept4 failed: %s%s", g->who, strerror(err),
			err == EMFILE ? " (raise ulimit -n)" : "");
	return -err;
}

int rw_tcp_gate_accept(struct rw_tcp_gate *g, int lfd, uint64_t now, int *idx)
{
	for (int skipped = 0; skipped < TRANSIENT_PER_CALL;) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		struct rw_tcp_cand *c;
		int fd = accept4(lfd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		int rc;

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
			case EPERM: /* a firewall rule refused it */
			case ENETDOWN:
			case ENETUNREACH:
			case EHOSTDOWN:
			case EHOSTUNREACH:
				skipped++;
				continue; /* that connection is gone; not ours to fail */
			case EMFILE:
			case ENFILE:
			case ENOBUFS:
			case ENOMEM:
				rc = starved(g, errno, now);
				if (rc == 1)
					continue;
				return rc;
			default:
				rc = -errno;
				RW_WARN(RW_LOG_NET, "%s: accept4 failed: %s", g->who,
					strerror(-rc));
				return rc;
			}
		}
		if (g->cfg.fd_count)
			g->cfg.fd_count(1);
		g->starved_ms = 0;
		make_room(g, &sa, now);
		if (grow(g)) {
			rw_close_fd(&fd);
			if (g->cfg.fd_count)
				g->cfg.fd_count(-1);
			RW_WARN(RW_LOG_NET, "%s: no memory to hold a connection", g->who);
			return -ENOMEM;
		}
		c = &g->c[g->n];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->src = sa;
		c->accepted_ms = now;
		c->deadline_ms = now + (uint64_t)g->cfg.hello_ms;
		rw_tcp_addr_str(&sa, c->name, sizeof(c->name));
		*idx = g->n++;
		return 1;
	}
	return 0;
}

int rw_tcp_gate_read(struct rw_tcp_gate *g, int i, uint64_t now)
{
	struct rw_tcp_cand *c = &g->c[i];
	ssize_t n = 1;

	while (c->got < g->cfg.hello_len && n > 0) {
		n = recv(c->fd, c->hello + c->got, g->cfg.hello_len - c->got, MSG_DONTWAIT);
		if (n > 0)
			c->got += (size_t)n;
	}
	if (c->got == g->cfg.hello_len)
		return 1;
	if (n == 0)
		rw_tcp_gate_drop(g, i, "closed after %zu of %zu hello bytes", c->got,
				 g->cfg.hello_len);
	else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		rw_tcp_gate_drop(g, i, "recv failed after %zu hello bytes: %s", c->got,
				 strerror(errno));
	else if (now >= c->deadline_ms)
		drop_late(g, i);
	else
		return 0; /* more to come */
	return -1;
}
