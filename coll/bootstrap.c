/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rendezvous of rw_comm_init() (see bootstrap.h): a star of TCP
 * connections around rank 0.  Wire format, host byte order (every rank runs
 * the same build):
 *   peer -> root, once:  struct boot_hello
 *   per allgather:       peer -> root: struct boot_hdr + len bytes;
 *                        root -> peer: struct boot_hdr + nranks * len bytes.
 */
#define _GNU_SOURCE /* accept4 */
#include "coll/bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "common/rw_log.h"

#define BOOT_MAGIC   0x53425752u /* "RWBS" */
#define BOOT_VERSION 1
#define BOOT_NAME    64

struct boot_hello {
	uint32_t magic;
	uint32_t version;
	int32_t rank;
	int32_t nranks;
};

struct boot_hdr {
	uint32_t magic;
	uint32_t rsvd;
	uint64_t len;
};

struct rw_bootstrap {
	int nranks, rank, timeout_ms;
	int *fds;		  /* root: fds[r], r >= 1; peer: fds[0] */
	char (*names)[BOOT_NAME]; /* address of the other end of fds[i] */
};

int rw_bootstrap_parse(const char *hostport, char *host, size_t hostlen, int *port)
{
	const char *colon, *h = hostport;
	size_t n;
	char *end;
	long p;

	if (!hostport || !*hostport)
		return -EINVAL;
	if (*h == '[') {
		const char *close = strchr(h, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		h++;
		n = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(h, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - h);
	}
	if (n == 0 || n >= hostlen)
		return -EINVAL;
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || p < 1 || p > 65535)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	*port = (int)p;
	return 0;
}

/* --- bounded I/O ------------------------------------------------------------ */

static int remaining_ms(uint64_t deadline)
{
	uint64_t now = rw_now_ms();

	return now >= deadline ? 0 : (int)RW_MIN(deadline - now, (uint64_t)INT32_MAX);
}

/* Wait for events on fd: 0, -ETIMEDOUT, or -errno. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events};

	for (;;) {
		int n = poll(&pfd, 1, remaining_ms(deadline));

		if (n > 0)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int write_all(int fd, const void *buf, size_t len, uint64_t deadline)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int rc = wait_fd(fd, POLLOUT, deadline);

			if (rc)
				return rc;
			continue;
		}
		return n < 0 ? -errno : -EPIPE;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len, uint64_t deadline)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET; /* the peer closed or died */
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int rc = wait_fd(fd, POLLIN, deadline);

			if (rc)
				return rc;
			continue;
		}
		return -errno;
	}
	return 0;
}

static void addr_name(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(buf, len, "%s:%d", host, port);
}

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

static int root_listen(const char *root, int *fd_out)
{
	char host[256];
	int port, fd, one = 1, rc;
	struct sockaddr_storage ss = {0};
	socklen_t sl;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;

	rc = rw_bootstrap_parse(root, host, sizeof(host), &port);
	if (rc) {
		RW_WARN(RW_LOG_INIT, "bootstrap: rendezvous '%s' is not host:port", root);
		return rc;
	}
	/* Bind every address of the family the name resolves to. */
	if (getaddrinfo(host, NULL, &hints, &ai) == 0 && ai && ai->ai_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (void *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_any;
		in6->sin6_port = htons((uint16_t)port);
		sl = sizeof(*in6);
	} else {
		struct sockaddr_in *in = (void *)&ss;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_ANY);
		in->sin_port = htons((uint16_t)port);
		sl = sizeof(*in);
	}
	if (ai)
		freeaddrinfo(ai);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		RW_WARN(RW_LOG_INIT, "bootstrap: socket() for %s failed: %s", root,
			strerror(-(rc)));
		return rc;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 1024) < 0) {
		rc = -errno;
		RW_WARN(RW_LOG_INIT, "bootstrap: rank 0 cannot listen on port %d of %s: %s", port,
			root, strerror(-(rc)));
		close(fd);
		return rc;
	}
	*fd_out = fd;
	return 0;
}

/* Accept nranks - 1 peers, each identified by its hello. */
static int root_gather_peers(struct rw_bootstrap *b, int lfd, uint64_t deadline)
{
	int joined = 0, rc;

	rc = set_nonblock(lfd);
	if (rc)
		return rc;
	while (joined < b->nranks - 1) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct boot_hello h;
		char name[BOOT_NAME];
		int fd, one = 1;

		rc = wait_fd(lfd, POLLIN, deadline);
		if (rc) {
			RW_WARN(RW_LOG_INIT,
				"bootstrap: rank 0: only %d of %d ranks joined within "
				"RINGWAY_TIMEOUT_MS=%d",
				joined + 1, b->nranks, b->timeout_ms);
			return rc;
		}
		fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				continue;
			rc = -errno;
			RW_WARN(RW_LOG_INIT, "bootstrap: rank 0: accept failed: %s",
				strerror(-(rc)));
			return rc;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		addr_name((struct sockaddr *)&ss, name, sizeof(name));
		rc = read_all(fd, &h, sizeof(h), deadline);
		if (rc || h.magic != BOOT_MAGIC || h.version != BOOT_VERSION) {
			/* not one of ours (a port scanner, a stale rank): drop it */
			RW_INFO(RW_LOG_INIT, "bootstrap: rank 0: dropped a connection from %s: %s",
				name, rc ? strerror(-(rc)) : "not a ringway rank");
			close(fd);
			continue;
		}
		if (h.nranks != b->nranks || h.rank <= 0 || h.rank >= b->nranks ||
		    b->fds[h.rank] >= 0) {
			RW_WARN(RW_LOG_INIT,
				"bootstrap: rank 0: %s says it is rank %d of %d, but this job has "
				"%d ranks%s",
				name, h.rank, h.nranks, b->nranks,
				h.rank > 0 && h.rank < b->nranks && b->fds[h.rank] >= 0
					? " and that rank already joined"
					: "");
			close(fd);
			return -EPROTO;
		}
		b->fds[h.rank] = fd;
		snprintf(b->names[h.rank], BOOT_NAME, "%s", name);
		joined++;
	}
	return 0;
}

/* --- other ranks ------------------------------------------------------------ */

static int try_connect(const struct addrinfo *a, uint64_t deadline, int *fd_out)
{
	int fd, rc, err = 0;
	socklen_t el = sizeof(err);

	fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = wait_fd(fd, POLLOUT, deadline);
	if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err)
		rc = -err;
	if (rc) {
		close(fd);
		return rc;
	}
	*fd_out = fd;
	return 0;
}

static int peer_connect(struct rw_bootstrap *b, const char *root, uint64_t deadline)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	struct boot_hello h = {
		.magic = BOOT_MAGIC, .version = BOOT_VERSION, .rank = b->rank, .nranks = b->nranks};
	char host[256], port_s[16];
	int port, fd = -1, one = 1, rc;

	rc = rw_bootstrap_parse(root, host, sizeof(host), &port);
	if (rc) {
		RW_WARN(RW_LOG_INIT, "bootstrap: rendezvous '%s' is not host:port", root);
		return rc;
	}
	snprintf(port_s, sizeof(port_s), "%d", port);
	snprintf(b->names[0], BOOT_NAME, "%s", root);
	rc = getaddrinfo(host, port_s, &hints, &ai);
	if (rc) {
		RW_WARN(RW_LOG_INIT, "bootstrap: rank %d: cannot resolve '%s': %s", b->rank, host,
			gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	/* Rank 0 may not listen yet: knock until the deadline. */
	for (;;) {
		rc = -ECONNREFUSED;
		for (struct addrinfo *a = ai; a && rc; a = a->ai_next)
			rc = try_connect(a, deadline, &fd);
		if (rc == 0 || remaining_ms(deadline) == 0)
			break;
		usleep(20000);
	}
	freeaddrinfo(ai);
	if (rc) {
		RW_WARN(RW_LOG_INIT,
			"bootstrap: rank %d: cannot reach rank 0 at %s within "
			"RINGWAY_TIMEOUT_MS=%d: %s",
			b->rank, root, b->timeout_ms, strerror(-(rc)));
		return rc == -ECONNREFUSED ? -ETIMEDOUT : rc;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	b->fds[0] = fd;
	rc = write_all(fd, &h, sizeof(h), deadline);
	return rc ? io_fail(b, 0, "saying hello to", rc) : 0;
}

int rw_bootstrap_create(const char *root, int listen_fd, int nranks, int rank, int timeout_ms,
			struct rw_bootstrap **out)
{
	uint64_t deadline = rw_now_ms() + (uint64_t)timeout_ms;
	struct rw_bootstrap *b;
	int n, rc;

	if (nranks < 1 || rank < 0 || rank >= nranks || timeout_ms < 1 || !out ||
	    (!root && nranks > 1 && (rank != 0 || listen_fd < 0))) {
		RW_WARN(RW_LOG_INIT, "bootstrap: bad arguments (rank %d of %d, root %s)", rank,
			nranks, root ? root : "NULL");
		rc = -EINVAL;
		goto err_close_listen;
	}
	b = calloc(1, sizeof(*b));
	n = rank == 0 ? nranks : 1;
	if (!b) {
		rc = -ENOMEM;
		goto err_close_listen;
	}
	b->nranks = nranks;
	b->rank = rank;
	b->timeout_ms = timeout_ms;
	b->fds = malloc((size_t)n * sizeof(*b->fds));
	b->names = calloc((size_t)n, sizeof(*b->names));
	if (!b->fds || !b->names) {
		rc = -ENOMEM;
		goto err_free;
	}
	for (int i = 0; i < n; i++)
		b->fds[i] = -1;

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
	struct boot_hdr h = {.magic = BOOT_MAGIC, .len = len};
	size_t total = (size_t)b->nranks * len;
	char *out = all;
	int rc;

	memmove(out + (size_t)b->rank * len, mine, len);
	if (b->rank != 0) {
		rc = write_all(b->fds[0], &h, sizeof(h), deadline);
		if (!rc)
			rc = write_all(b->fds[0], mine, len, deadline);
		if (!rc)
			rc = read_all(b->fds[0], &h, sizeof(h), deadline);
		if (!rc && (h.magic != BOOT_MAGIC || h.len != total))
			rc = -EPROTO;
		if (!rc)
			rc = read_all(b->fds[0], out, total, deadline);
		return rc ? io_fail(b, 0, "exchanging handles with", rc) : 0;
	}
	for (int r = 1; r < b->nranks; r++) {
		rc = read_all(b->fds[r], &h, sizeof(h), deadline);
		if (!rc && (h.magic != BOOT_MAGIC || h.len != len))
			rc = -EPROTO;
		if (!rc)
			rc = read_all(b->fds[r], out + (size_t)r * len, len, deadline);
		if (rc)
			return io_fail(b, r, "gathering from", rc);
	}
	h.len = total;
	for (int r = 1; r < b->nranks; r++) {
		rc = write_all(b->fds[r], &h, sizeof(h), deadline);
		if (!rc)
			rc = write_all(b->fds[r], out, total, deadline);
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
	if (b->fds) {
		for (int i = 0; i < (b->rank == 0 ? b->nranks : 1); i++)
			rw_close_fd(&b->fds[i]);
	}
	free(b->fds);
	free(b->names);
	free(b);
}
