/* SPDX-License-Identifier: Apache-2.0 */
/* Sockets, the non-blocking connect with a deadline, bounded I/O. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "transport/tcp/rw_tcp.h"

int rw_tcp_socket(int family, int *fd)
{
	int s;

	if (!fd)
		return -EINVAL;
	s = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	*fd = s;
	return 0;
}

int rw_tcp_listen(struct sockaddr_storage *sa, int backlog, bool reuse, int *fd)
{
	struct sockaddr_storage bound;
	socklen_t len = sizeof(bound);
	int s = -1, one = 1, rc;

	if (!sa || !fd)
		return -EINVAL;
	rc = rw_tcp_socket(sa->ss_family, &s);
	if (rc)
		return rc;
	if ((reuse && setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one))) ||
	    bind(s, (const struct sockaddr *)sa, rw_tcp_addr_len(sa)) || listen(s, backlog) ||
	    getsockname(s, (struct sockaddr *)&bound, &len)) {
		rc = -errno;
		close(s);
		return rc;
	}
	*sa = bound;
	*fd = s;
	return 0;
}

int rw_tcp_connect_begin(int fd, const struct sockaddr_storage *sa)
{
	if (!sa)
		return -EINVAL;
	if (connect(fd, (const struct sockaddr *)sa, rw_tcp_addr_len(sa)) && errno != EINPROGRESS &&
	    errno != EINTR)
		return -errno;
	return 0;
}

int rw_tcp_connect_done(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int err = 0, n;
	socklen_t len = sizeof(err);

	n = poll(&p, 1, 0);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (n == 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	return err ? -err : 1;
}

static int remaining_ms(uint64_t deadline_ms)
{
	uint64_t now = rw_now_ms();

	return now >= deadline_ms ? 0 : (int)RW_MIN(deadline_ms - now, (uint64_t)INT32_MAX);
}

int rw_tcp_wait(int fd, short events, uint64_t deadline_ms)
{
	struct pollfd pfd = {.fd = fd, .events = events};

	for (;;) {
		int n = poll(&pfd, 1, remaining_ms(deadline_ms));

		if (n > 0)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

int rw_tcp_connect(const struct sockaddr_storage *sa, uint64_t deadline_ms, int *fd)
{
	int s = -1, rc;

	if (!sa || !fd)
		return -EINVAL;
	rc = rw_tcp_socket(sa->ss_family, &s);
	if (rc)
		return rc;
	rc = rw_tcp_connect_begin(s, sa);
	while (!rc) {
		rc = rw_tcp_connect_done(s);
		if (rc == 1)
			break;
		if (rc == 0)
			rc = rw_tcp_wait(s, POLLOUT, deadline_ms);
	}
	if (rc < 0) {
		close(s);
		return rc;
	}
	*fd = s;
	return 0;
}

int rw_tcp_io_step(int fd, void *buf, size_t len, size_t *done, bool out)
{
	while (*done < len) {
		ssize_t n = out ? send(fd, (char *)buf + *done, len - *done,
				       MSG_NOSIGNAL | MSG_DONTWAIT)
				: recv(fd, (char *)buf + *done, len - *done, MSG_DONTWAIT);

		if (n > 0) {
			*done += (size_t)n;
			continue;
		}
		if (n == 0)
			return out ? -EPIPE : -ECONNRESET;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno == EINTR)
			continue;
		return -errno;
	}
	return 1;
}

static int move_all(int fd, void *buf, size_t len, uint64_t deadline_ms, bool out)
{
	size_t done = 0;

	for (;;) {
		int rc = rw_tcp_io_step(fd, buf, len, &done, out);

		if (rc)
			return rc < 0 ? rc : 0;
		rc = rw_tcp_wait(fd, out ? POLLOUT : POLLIN, deadline_ms);
		if (rc)
			return rc;
	}
}

int rw_tcp_write_all(int fd, const void *buf, size_t len, uint64_t deadline_ms)
{
	return move_all(fd, (void *)buf, len, deadline_ms, true);
}

int rw_tcp_read_all(int fd, void *buf, size_t len, uint64_t deadline_ms)
{
	return move_all(fd, buf, len, deadline_ms, false);
}
