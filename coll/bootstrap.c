/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rendezvous of rw_comm_init() (see bootstrap.h for the wire format and
 * who may join): a star of TCP connections around rank 0.  Rank 0 serves
 * every accepted connection from one poll loop, each in its own state
 * (challenge sent, hello partly read), so no connection waits on another.
 * The parser, the hashes and the verdicts on each message are in
 * bootstrap_auth.c.
 */
#define _GNU_SOURCE /* accept4 */
#include "coll/bootstrap.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "common/rw_log.h"
#include "include/ringway.h"
#include "transport/tcp/rw_tcp.h"

#define BOOT_NAME  RW_TCP_ADDRSTRLEN
#define BOOT_WARNS 8 /* refusals logged as warnings; the rest at INFO */

struct boot_hdr {
	uint32_t magic;
	uint32_t rsvd;
	uint64_t len;
};

struct rw_bootstrap {
	int nranks, rank, timeout_ms;
	int nfds;		  /* entries of fds and names: nranks on rank 0, else 1 */
	int *fds;		  /* root: fds[r], r >= 1; peer: fds[0] */
	char (*names)[BOOT_NAME]; /* address of the other end of fds[i] */
	struct rw_boot_key key;
};

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* Which rank sits at the other end of fds[i]. */
static int peer_rank(const struct rw_bootstrap *b, int i)
{
	return b->rank == 0 ? i : 0;
}

/* Log a failed exchange with fds[i] once, naming the peer. */
static int io_fail(const struct rw_bootstrap *b, int i, const char *what, int rc)
{
	RW_WARN(RW_LOG_INIT | RW_LOG_NET, "bootstrap: rank %d: %s rank %d (%s): %s%s", b->rank,
		what, peer_rank(b, i), b->names[i], strerror(-(rc)),
		rc == -ETIMEDOUT ? " (RINGWAY_TIMEOUT_MS)" : "");
	return rc;
}

/* --- rank 0 -------------------------------------------------------------- */

/* A listening socket on sa (SO_REUSEADDR: the port is the job's); -errno. */
static int listen_on(const struct sockaddr *sa, socklen_t sl)
{
	struct sockaddr_storage ss = {0};
	int fd = -1, rc;

	if ((size_t)sl > sizeof(ss))
		return -EAFNOSUPPORT;
	memcpy(&ss, sa, (size_t)sl);
	rc = rw_tcp_listen(&ss, 1024, true, &fd);
	return rc ? rc : fd;
}

/*
 * Listen on the address root names.  Every address of the port only where
 * that cannot serve the other hosts: the name is not an address of this
 * host (a NAT or service address), or a host name resolves to loopback
 * here (Debian maps its own name to 127.0.1.1) -- the secret guards those.
 */
static int root_listen(const char *root, int *fd_out)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV},
			*ai = NULL;
	struct sockaddr_storage any = {0};
	char host[256], port_s[16], name[BOOT_NAME];
	int port, fd = -EADDRNOTAVAIL, rc, family = AF_INET;
	bool numeric;

	rc = rw_bootstrap_parse(root, host, sizeof(host), &port);
	if (rc) {
		RW_WARN(RW_LOG_INIT, "bootstrap: rendezvous '%.*s' is not host:port",
			rw_boot_shown(root), root);
		return rc;
	}
	snprintf(port_s, sizeof(port_s), "%d", port);
	numeric = strcmp(host, "localhost") == 0 || inet_pton(AF_INET, host, &any) == 1 ||
		  inet_pton(AF_INET6, host, &any) == 1;
	rc = getaddrinfo(host, port_s, &hints, &ai);
	if (rc) {
		RW_WARN(RW_LOG_INIT, "bootstrap: rank 0 cannot resolve '%s': %s", host,
			gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		family = a->ai_family;
		struct sockaddr_storage ss = {0};

		memcpy(&ss, a->ai_addr, RW_MIN((size_t)a->ai_addrlen, sizeof(ss)));
		if (!numeric && rw_tcp_is_loopback(&ss))
			break;
		fd = listen_on(a->ai_addr, a->ai_addrlen);
		if (fd >= 0 || fd != -EADDRNOTAVAIL)
			break;
	}
	freeaddrinfo(ai);
	if (fd == -EADDRNOTAVAIL) {
		memset(&any, 0, sizeof(any)); /* the zero address is every address */
		any.ss_family = (sa_family_t)family;
		rw_tcp_addr_set_port(&any, port);
		RW_INFO(RW_LOG_INIT,
			"bootstrap: '%s' is not an address other hosts reach rank 0 at: listening "
			"on every address of port %d",
			host, port);
		fd = listen_on((struct sockaddr *)&any, rw_tcp_addr_len(&any));
	}
	if (fd < 0) {
		snprintf(name, sizeof(name), "%.*s", rw_boot_shown(root), root);
		RW_WARN(RW_LOG_INIT, "bootstrap: rank 0 cannot listen on %s: %s", name,
			strerror(-fd));
		return fd;
	}
	*fd_out = fd;
	return 0;
}

/* Rank 0's gathering: the connections that owe their hello wait in the
 * toolbox's gate (tag: the nonce of the challenge each was sent). */
struct gather {
	struct rw_bootstrap *b;
	struct rw_tcp_gate gate;
	int joined, refused;
};

static struct rw_boot_hello pend_hello(const struct gather *g, int i)
{
	struct rw_boot_hello h;

	memcpy(&h, g->gate.c[i].hello, sizeof(h));
	return h;
}

/* Refuse pending i: tell it why (best effort, never waits) and close it. */
static void pend_refuse(struct gather *g, int i, int status, const char *why)
{
	const struct rw_tcp_cand *p = &g->gate.c[i];
	struct rw_boot_hello h = pend_hello(g, i);
	struct rw_boot_welcome w = {.magic = RW_BOOT_MAGIC, .status = status};

	if (status != -EBADMSG)
		(void)!send(p->fd, &w, sizeof(w), MSG_NOSIGNAL | MSG_DONTWAIT);
	if (status != -EBADMSG && g->refused++ < BOOT_WARNS)
		RW_WARN(RW_LOG_INIT, "bootstrap: rank 0: refused %s (says rank %d of %d): %s%s",
			p->name, h.rank, h.nranks, why,
			g->refused == BOOT_WARNS ? " (further refusals at INFO)" : "");
	else
		RW_INFO(RW_LOG_INIT, "bootstrap: rank 0: dropped %s: %s", p->name, why);
	rw_tcp_gate_close(&g->gate, i);
}

/* A whole hello from pending i: take its rank or refuse it.  0, or the
 * error that fails rank 0 (a peer that proved the secret and disagrees). */
static int pend_verdict(struct gather *g, int i)
{
	struct rw_bootstrap *b = g->b;
	const struct rw_tcp_cand *p = &g->gate.c[i];
	struct rw_boot_hello h = pend_hello(g, i);
	struct rw_boot_welcome w = {.magic = RW_BOOT_MAGIC};
	int rc = rw_bootstrap_check_hello(&b->key, p->tag, b->nranks, &h), r = h.rank;

	if (rc == -EPROTO && b->key.set) {
		RW_WARN(RW_LOG_INIT,
			"bootstrap: rank 0: %s holds the job secret but says it is rank %d of %d; "
			"this job has %d ranks",
			p->name, r, h.nranks, b->nranks);
		w.status = -EPROTO;
		(void)!send(p->fd, &w, sizeof(w), MSG_NOSIGNAL | MSG_DONTWAIT);
		rw_tcp_gate_close(&g->gate, i);
		return -EPROTO;
	}
	if (rc == 0 && b->fds[r] >= 0)
		rc = -EEXIST;
	switch (rc) {
	case 0:
		break;
	case -EBADMSG:
		pend_refuse(g, i, rc, "not a ringway rank");
		return 0;
	case -EPROTONOSUPPORT:
		pend_refuse(g, i, rc, "another ringway version");
		return 0;
	case -EACCES:
		pend_refuse(g, i, rc,
			    "it did not prove the job secret (RINGWAY_SECRET or host:port#key)");
		return 0;
	case -EEXIST:
		pend_refuse(g, i, rc, "that rank already joined");
		return 0;
	default:
		pend_refuse(g, i, rc, "another nranks, or a rank out of range");
		return 0;
	}
	w.mac = rw_bootstrap_mac(&b->key, RW_BOOT_LABEL_ROOT, p->tag, h.nonce, r, 0);
	if (send(p->fd, &w, sizeof(w), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(w)) {
		RW_INFO(RW_LOG_INIT, "bootstrap: rank 0: rank %d (%s) left before its welcome", r,
			p->name);
		rw_tcp_gate_close(&g->gate, i);
		return 0;
	}
	snprintf(b->names[r], BOOT_NAME, "%s", p->name);
	b->fds[r] = rw_tcp_gate_take(&g->gate, i);
	g->joined++;
	RW_INFO(RW_LOG_INIT, "bootstrap: rank 0: rank %d joined from %s (%d of %d)", r, b->names[r],
		g->joined + 1, b->nranks);
	return 0;
}

/* Read what pending i sent; 0, or the error that fails rank 0. */
static int pend_read(struct gather *g, int i, uint64_t now)
{
	int rc = rw_tcp_gate_read(&g->gate, i, now);

	if (rc < 0)
		return 0; /* dropped by the gate, which said why */
	if (rc == 0) {
		if (g->gate.c[i].got >= sizeof(uint32_t) && pend_hello(g, i).magic != RW_BOOT_MAGIC)
			pend_refuse(g, i, -EBADMSG, "not a ringway rank");
		return 0;
	}
	return pend_verdict(g, i);
}

/* Accept what waits on lfd, challenging each; 0 or a fatal -errno (logged). */
static int root_accept(struct gather *g, int lfd, uint64_t now)
{
	for (int k = 0; k < 16; k++) {
		struct rw_boot_challenge c = {.magic = RW_BOOT_MAGIC,
					      .version = RW_BOOT_VERSION,
					      .flags = g->b->key.set ? RW_BOOT_F_SECRET : 0};
		struct rw_tcp_cand *p;
		int i, one = 1, rc = rw_tcp_gate_accept(&g->gate, lfd, now, &i);

		if (rc <= 0)
			return rc; /* 0: all taken */
		p = &g->gate.c[i];
		p->tag = c.nonce = rw_tcp_nonce64();
		setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (send(p->fd, &c, sizeof(c), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(c)) {
			RW_INFO(RW_LOG_INIT, "bootstrap: rank 0: %s left at once", p->name);
			rw_tcp_gate_close(&g->gate, i);
		}
	}
	return 0;
}

static void log_missing(const struct gather *g)
{
	char list[128] = "";
	size_t len = 0;
	int shown_n = 0;

	for (int r = 1; r < g->b->nranks && shown_n < 8 && len < sizeof(list) - 16; r++) {
		if (g->b->fds[r] >= 0)
			continue;
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d",
					shown_n++ ? ", " : "", r);
	}
	RW_WARN(RW_LOG_INIT,
		"bootstrap: rank 0: only %d of %d ranks joined within RINGWAY_TIMEOUT_MS=%d "
		"(missing: %s%s)",
		g->joined + 1, g->b->nranks, g->b->timeout_ms, list,
		g->b->nranks - 1 - g->joined > shown_n ? ", ..." : "");
}

/* Accept nranks - 1 peers, each proving itself by its hello. */
static int root_gather_peers(struct rw_bootstrap *b, int lfd, uint64_t deadline)
{
	const struct rw_tcp_gate_cfg cfg = {
		.who = "bootstrap: rank 0",
		.param = "5 s, or RINGWAY_TIMEOUT_MS when shorter",
		.max = RW_BOOT_PENDING_MAX,
		.hello_ms = RW_MIN(RW_BOOT_HELLO_MS, b->timeout_ms),
		.hello_len = sizeof(struct rw_boot_hello),
	};
	struct pollfd pfd[RW_BOOT_PENDING_MAX + 1];
	struct gather *g = calloc(1, sizeof(*g));
	int rc;

	static_assert(sizeof(struct rw_boot_hello) <= RW_TCP_HELLO_MAX, "the gate holds a hello");
	if (!g)
		return -ENOMEM;
	g->b = b;
	rc = rw_tcp_gate_init(&g->gate, &cfg);
	if (rc) {
		free(g);
		return rc;
	}
	rc = set_nonblock(lfd);
	while (!rc && g->joined < b->nranks - 1) {
		uint64_t now = rw_now_ms(), wake;
		int n, np;

		wake = RW_MIN(deadline, rw_tcp_gate_expire(&g->gate, now));
		if (now >= deadline) {
			log_missing(g);
			rc = -ETIMEDOUT;
			break;
		}
		np = g->gate.n;
		pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int i = 0; i < np; i++)
			pfd[i + 1] = (struct pollfd){.fd = g->gate.c[i].fd, .events = POLLIN};
		n = poll(pfd, (nfds_t)np + 1, wake > now ? (int)RW_MIN(wake - now, 60000) : 0);
		if (n < 0 && errno != EINTR) {
			rc = -errno;
			RW_WARN(RW_LOG_INIT, "bootstrap: rank 0: poll failed: %s", strerror(-rc));
			break;
		}
		if (n <= 0)
			continue;
		now = rw_now_ms();
		/* back to front: a removal moves the later entries down */
		for (int i = np - 1; i >= 0 && !rc; i--) {
			if (pfd[i + 1].revents)
				rc = pend_read(g, i, now);
		}
		if (!rc && pfd[0].revents)
			rc = root_accept(g, lfd, now);
	}
	rw_tcp_gate_fini(&g->gate);
	free(g);
	return rc;
}

/* --- other ranks ------------------------------------------------------------ */

static int try_connect(const struct addrinfo *a, uint64_t deadline, int *fd_out)
{
	struct sockaddr_storage ss = {0};

	if ((size_t)a->ai_addrlen > sizeof(ss))
		return -EAFNOSUPPORT;
	memcpy(&ss, a->ai_addr, (size_t)a->ai_addrlen);
	return rw_tcp_connect(&ss, deadline, fd_out);
}

/*
 * Challenge, hello, welcome on a fresh connection to rank 0.  0 (joined);
 * -ECONNRESET when rank 0 dropped the connection first (knock again); any
 * other error is final and logged here.
 */
static int peer_handshake(struct rw_bootstrap *b, int fd, uint64_t deadline)
{
	struct rw_boot_challenge c;
	struct rw_boot_welcome w;
	struct rw_boot_hello h = {.magic = RW_BOOT_MAGIC,
				  .version = RW_BOOT_VERSION,
				  .rank = b->rank,
				  .nranks = b->nranks,
				  .nonce = rw_tcp_nonce64()};
	const char *why = "";
	int rc;

	rc = rw_tcp_read_all(fd, &c, sizeof(c), deadline);
	if (!rc)
		rc = rw_bootstrap_check_challenge(&b->key, &c);
	if (rc == -EACCES)
		why = b->key.set ? ": this rank has a job secret and rank 0 none"
				 : ": rank 0 requires the job secret (RINGWAY_SECRET or "
				   "host:port#key) and this rank has none";
	if (!rc) {
		h.mac = rw_bootstrap_mac(&b->key, RW_BOOT_LABEL_PEER, c.nonce, h.nonce, h.rank,
					 h.nranks);
		rc = rw_tcp_write_all(fd, &h, sizeof(h), deadline);
	}
	if (!rc)
		rc = rw_tcp_read_all(fd, &w, sizeof(w), deadline);
	if (!rc) {
		rc = rw_bootstrap_check_welcome(&b->key, c.nonce, &h, &w);
		why = rc == -EEXIST	       ? ": rank 0 refused: this rank already joined"
		      : rc == -EPROTONOSUPPORT ? ": rank 0 runs another ringway version"
		      : rc == -EPROTO	       ? ": rank 0 refused: it has another nranks"
		      : rc == -EACCES && w.status
			      ? ": rank 0 refused: this rank's job secret is not rank 0's"
		      : rc == -EACCES ? ": rank 0 did not prove the job secret"
				      : "";
	}
	if (rc == -EPIPE || rc == -ECONNRESET)
		return -ECONNRESET;
	if (rc == -EEXIST)
		rc = -EPROTO; /* the API's "two claim one rank" */
	if (rc == -EPROTONOSUPPORT)
		rc = -EPROTO;
	if (rc == -ETIMEDOUT)
		why = " (RINGWAY_TIMEOUT_MS)";
	if (rc)
		RW_WARN(RW_LOG_INIT, "bootstrap: rank %d of %d: joining rank 0 at %s: %s%s",
			b->rank, b->nranks, b->names[0], strerror(-rc), why);
	return rc;
}

static int peer_connect(struct rw_bootstrap *b, const char *root, uint64_t deadline)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV},
			*ai = NULL;
	char host[256], port_s[16];
	int port, fd = -1, one = 1, rc;

	rc = rw_bootstrap_parse(root, host, sizeof(host), &port);
	if (rc) {
		RW_WARN(RW_LOG_INIT, "bootstrap: rendezvous '%.*s' is not host:port",
			rw_boot_shown(root), root);
		return rc;
	}
	snprintf(port_s, sizeof(port_s), "%d", port);
	snprintf(b->names[0], BOOT_NAME, "%.*s", rw_boot_shown(root), root);
	rc = getaddrinfo(host, port_s, &hints, &ai);
	if (rc) {
		RW_WARN(RW_LOG_INIT, "bootstrap: rank %d: cannot resolve '%s': %s", b->rank, host,
			gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	/* Rank 0 may not listen yet, or may have dropped us: knock until the deadline. */
	for (;;) {
		rc = -ECONNREFUSED;
		for (struct addrinfo *a = ai; a && rc; a = a->ai_next)
			rc = try_connect(a, deadline, &fd);
		if (rc == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			rc = peer_handshake(b, fd, deadline);
			if (rc == 0)
				break;
			close(fd);
			if (rc != -ECONNRESET)
				break;
			RW_INFO(RW_LOG_INIT,
				"bootstrap: rank %d: rank 0 dropped the connection "
				"before its welcome: knocking again",
				b->rank);
		}
		if (rw_now_ms() >= deadline)
			break;
		usleep(20000);
	}
	freeaddrinfo(ai);
	if (rc == 0) {
		b->fds[0] = fd;
		return 0;
	}
	if (rc == -ECONNREFUSED || rc == -ECONNRESET || rc == -ETIMEDOUT) {
		RW_WARN(RW_LOG_INIT,
			"bootstrap: rank %d: cannot reach rank 0 at %s within "
			"RINGWAY_TIMEOUT_MS=%d: %s",
			b->rank, b->names[0], b->timeout_ms, strerror(-(rc)));
		rc = -ETIMEDOUT;
	}
	return rc;
}

int rw_bootstrap_create(const char *root, int listen_fd, int nranks, int rank, int timeout_ms,
			const char *secret, struct rw_bootstrap **out)
{
	uint64_t deadline = rw_now_ms() + (uint64_t)RW_MAX(timeout_ms, 0);
	struct rw_bootstrap *b = NULL;
	struct rw_boot_key key;
	int n, rc;

	if (nranks < 1 || nranks > RW_MAX_RANKS || rank < 0 || rank >= nranks || timeout_ms < 1 ||
	    !out || (!root && nranks > 1 && (rank != 0 || listen_fd < 0))) {
		RW_WARN(RW_LOG_INIT,
			"bootstrap: bad arguments (rank %d of %d, at most %d ranks, timeout %d ms, "
			"root %.*s)",
			rank, nranks, RW_MAX_RANKS, timeout_ms, root ? rw_boot_shown(root) : 4,
			root ? root : "NULL");
		rc = -EINVAL;
		goto err_close_listen;
	}
	rc = rw_bootstrap_key(root, secret, &key);
	if (rc) {
		RW_WARN(RW_LOG_INIT, "bootstrap: rendezvous '%.*s#' has an empty key",
			rw_boot_shown(root), root);
		goto err_close_listen;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		rc = -ENOMEM;
		goto err_close_listen;
	}
	b->nranks = nranks;
	b->rank = rank;
	b->timeout_ms = timeout_ms;
	b->key = key;
	n = rank == 0 ? nranks : 1;
	b->fds = malloc((size_t)n * sizeof(*b->fds));
	b->names = calloc((size_t)n, sizeof(*b->names));
	if (!b->fds || !b->names) {
		RW_WARN(RW_LOG_INIT, "bootstrap: rank %d: no memory for %d connections", rank, n);
		rc = -ENOMEM;
		goto err_free;
	}
	for (int i = 0; i < n; i++)
		b->fds[i] = -1;
	b->nfds = n; /* from here on, destroy closes fds[0..n) */

	if (rank == 0) {
		if (listen_fd < 0 && nranks > 1) {
			rc = root_listen(root, &listen_fd);
			if (rc)
				goto err_free;
		}
		rc = nranks > 1 ? root_gather_peers(b, listen_fd, deadline) : 0;
		rw_close_fd(&listen_fd); /* everyone is here: no more joiners */
	} else {
		rw_close_fd(&listen_fd);
		rc = peer_connect(b, root, deadline);
	}
	if (rc)
		goto err_free;
	*out = b;
	return 0;

err_free:
	rw_bootstrap_destroy(b);
err_close_listen:
	rw_close_fd(&listen_fd);
	return rc;
}

int rw_bootstrap_allgather(struct rw_bootstrap *b, const void *mine, void *all, size_t len)
{
	uint64_t deadline = rw_now_ms() + (uint64_t)b->timeout_ms;
	struct boot_hdr h = {.magic = RW_BOOT_MAGIC, .len = len};
	size_t total = (size_t)b->nranks * len;
	char *out = all;
	int rc;

	memmove(out + (size_t)b->rank * len, mine, len);
	if (b->rank != 0) {
		rc = rw_tcp_write_all(b->fds[0], &h, sizeof(h), deadline);
		if (!rc)
			rc = rw_tcp_write_all(b->fds[0], mine, len, deadline);
		if (!rc)
			rc = rw_tcp_read_all(b->fds[0], &h, sizeof(h), deadline);
		if (!rc && (h.magic != RW_BOOT_MAGIC || h.len != total))
			rc = -EPROTO;
		if (!rc)
			rc = rw_tcp_read_all(b->fds[0], out, total, deadline);
		return rc ? io_fail(b, 0, "exchanging handles with", rc) : 0;
	}
	for (int r = 1; r < b->nranks; r++) {
		rc = rw_tcp_read_all(b->fds[r], &h, sizeof(h), deadline);
		if (!rc && (h.magic != RW_BOOT_MAGIC || h.len != len))
			rc = -EPROTO;
		if (!rc)
			rc = rw_tcp_read_all(b->fds[r], out + (size_t)r * len, len, deadline);
		if (rc)
			return io_fail(b, r, "gathering from", rc);
	}
	h.len = total;
	for (int r = 1; r < b->nranks; r++) {
		rc = rw_tcp_write_all(b->fds[r], &h, sizeof(h), deadline);
		if (!rc)
			rc = rw_tcp_write_all(b->fds[r], out, total, deadline);
		if (rc)
			return io_fail(b, r, "sending the handles to", rc);
	}
	return 0;
}

int rw_bootstrap_barrier(struct rw_bootstrap *b)
{
	char one = 0, *all;
	int rc;

	all = malloc((size_t)b->nranks);
	if (!all)
		return -ENOMEM;
	rc = rw_bootstrap_allgather(b, &one, all, 1);
	free(all);
	return rc;
}

void rw_bootstrap_destroy(struct rw_bootstrap *b)
{
	if (!b)
		return;
	for (int i = 0; i < b->nfds; i++)
		rw_close_fd(&b->fds[i]);
	free(b->fds);
	free(b->names);
	memset(&b->key, 0, sizeof(b->key));
	free(b);
}
