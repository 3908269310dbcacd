/* SPDX-License-Identifier: Apache-2.0 */
/* Socket transport helpers: socket options, handles, counters (addresses: transport/tcp/). */
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/time.h>

#include "transport/socket/sock_internal.h"
#include "transport/tcp/rw_tcp.h"

struct rw_live rw_sock_live = {.name = "socket", .nkinds = RW_SOCK_LIVE_COUNT};

void rw_sock_live_objects(struct rw_sock_live *out)
{
	const struct rw_live *t = &rw_sock_live;

	if (!out)
		return;
	*out = (struct rw_sock_live){
		.nets = rw_live_get(t, RW_SOCK_LIVE_NETS),
		.listeners = rw_live_get(t, RW_SOCK_LIVE_LISTENERS),
		.comms = rw_live_get(t, RW_SOCK_LIVE_COMMS),
		.reqs = rw_live_get(t, RW_SOCK_LIVE_REQS),
		.mrs = rw_live_get(t, RW_SOCK_LIVE_MRS),
		.threads = rw_live_get(t, RW_SOCK_LIVE_THREADS),
		.fds = rw_live_get(t, RW_SOCK_LIVE_FDS),
	};
}

long rw_sock_live_shells(void)
{
	return rw_live_get(&rw_sock_live, RW_SOCK_LIVE_SHELLS);
}

long rw_sock_live_total(void)
{
	return rw_live_sum(&rw_sock_live, 1u << RW_SOCK_LIVE_SHELLS);
}

int rw_sock_socket(int family, int *fd)
{
	int rc = rw_tcp_socket(family, fd);

	if (!rc)
		rw_sock_live_add(RW_SOCK_LIVE_FDS, 1);
	return rc;
}

void rw_sock_fd_adopted(void)
{
	rw_sock_live_add(RW_SOCK_LIVE_FDS, 1);
}

void rw_sock_close(int *fd)
{
	if (*fd < 0)
		return;
	rw_close_fd(fd);
	rw_sock_live_add(RW_SOCK_LIVE_FDS, -1);
}

void rw_sock_close_abort(int *fd)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	if (*fd >= 0)
		setsockopt(*fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	rw_sock_close(fd);
}

int rw_sock_tune(int fd, const struct rw_config *cfg, const char *what)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))) {
		RW_WARN(RW_LOG_NET, "socket: setsockopt(TCP_NODELAY) on %s failed: %s", what,
			strerror(errno));
		return -errno;
	}
	if (cfg->socket_buffer) {
		int sz = (int)RW_MIN(cfg->socket_buffer, (size_t)INT32_MAX);

		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)) ||
		    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz))) {
			RW_WARN(RW_LOG_NET,
				"socket: setsockopt(SO_SNDBUF/SO_RCVBUF=%d) on %s failed: %s", sz,
				what, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

int rw_sock_set_blocking(int fd, int64_t slice_ms)
{
	struct timeval tv = {.tv_sec = slice_ms / 1000, .tv_usec = (slice_ms % 1000) * 1000};
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -errno;
	return 0;
}

void rw_sock_handle_encode(struct rw_sock_handle *h, const struct sockaddr_storage *sa,
			   uint64_t nonce)
{
	memset(h, 0, sizeof(*h));
	h->magic = RW_SOCK_MAGIC;
	h->version = RW_SOCK_PROTO_VERSION;
	h->nonce = nonce;
	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		h->family = RW_SOCK_FAMILY_IPV6;
		h->port = in6->sin6_port;
		memcpy(h->addr, &in6->sin6_addr, 16);
		h->scope_id = in6->sin6_scope_id;
	} else {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		h->family = RW_SOCK_FAMILY_IPV4;
		h->port = in->sin_port;
		memcpy(h->addr, &in->sin_addr, 4);
	}
}

int rw_sock_handle_decode(const void *buf, struct rw_sock_handle *h, struct sockaddr_storage *sa)
{
	struct rw_sock_handle tmp;

	memcpy(&tmp, buf, sizeof(tmp));
	if (tmp.magic != RW_SOCK_MAGIC || tmp.version != RW_SOCK_PROTO_VERSION ||
	    (tmp.family != RW_SOCK_FAMILY_IPV4 && tmp.family != RW_SOCK_FAMILY_IPV6) ||
	    tmp.port == 0)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	if (tmp.family == RW_SOCK_FAMILY_IPV6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = tmp.port;
		memcpy(&in6->sin6_addr, tmp.addr, 16);
		in6->sin6_scope_id = tmp.scope_id;
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;

		in->sin_family = AF_INET;
		in->sin_port = tmp.port;
		memcpy(&in->sin_addr, tmp.addr, 4);
	}
	*h = tmp;
	return 0;
}

int rw_sock_handle_addr(const void *handle, struct sockaddr_storage *out)
{
	struct rw_sock_handle h;
	struct sockaddr_storage sa;

	if (!handle || !out || rw_sock_handle_decode(handle, &h, &sa))
		return -EINVAL;
	*out = sa;
	return 0;
}
