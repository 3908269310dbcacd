/* SPDX-License-Identifier: Apache-2.0 */
/* Bootstrap channel and raw TCP baselines for ringway-netperf. */
#include "tools/netperf/np.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

double np_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double np_memcpy_gbps(void *dst, const void *src, size_t bytes, int iters)
{
	double t0;

	memcpy(dst, src, bytes);
	t0 = np_now_us();
	for (int i = 0; i < iters; i++) {
		memcpy(dst, src, bytes);
		__asm__ __volatile__("" : : "r"(dst) : "memory"); /* keep every copy */
	}
	return (double)bytes * iters / ((np_now_us() - t0) * 1e3);
}

int np_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int np_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* np_read_all without sleeping in the kernel: spin on MSG_DONTWAIT. */
static int poll_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int np_barrier(int fd)
{
	char c = 'b';
	int rc = np_write_all(fd, &c, 1);

	return rc ? rc : np_read_all(fd, &c, 1);
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int np_boot_server(int port, int *fd_out)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6,
				 .sin6_port = htons((uint16_t)port),
				 .sin6_addr = IN6ADDR_ANY_INIT};
	int one = 1, zero = 0, lfd, fd;

	lfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1)) {
		int rc = -errno;

		close(lfd);
		return rc;
	}
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	if (fd < 0)
		return -errno;
	set_nodelay(fd);
	*fd_out = fd;
	return 0;
}

int np_boot_client(const char *host, int port, int timeout_ms, int *fd_out)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
	char portstr[16];
	double deadline = np_now_us() + timeout_ms * 1e3;
	int rc;

	snprintf(portstr, sizeof(portstr), "%d", port);
	rc = getaddrinfo(host, portstr, &hints, &res);
	if (rc)
		return -EHOSTUNREACH;
	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

			if (fd < 0)
				continue;
			if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
				set_nodelay(fd);
				freeaddrinfo(res);
				*fd_out = fd;
				return 0;
			}
			close(fd);
		}
		if (np_now_us() > deadline)
			break;
		usleep(100 * 1000); /* server not up yet */
	}
	freeaddrinfo(res);
	return -ETIMEDOUT;
}

/* Rank 0 listens, rank 1 connects; returns the data socket. */
static int raw_connect(int boot, int rank, const char *host, int *fd_out)
{
	int rc;

	if (rank == 0) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
		int zero = 0, lfd, fd;
		uint16_t port;

		lfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (lfd < 0)
			return -errno;
		setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
		    getsockname(lfd, (struct sockaddr *)&ss, &len)) {
			rc = -errno;
			close(lfd);
			return rc;
		}
		port = ((struct sockaddr_in6 *)&ss)->sin6_port;
		rc = np_write_all(boot, &port, sizeof(port));
		fd = rc ? -1 : accept(lfd, NULL, NULL);
		close(lfd);
		if (rc)
			return rc;
		if (fd < 0)
			return -errno;
		*fd_out = fd;
	} else {
		uint16_t port;

		rc = np_read_all(boot, &port, sizeof(port));
		if (rc)
			return rc;
		rc = np_boot_client(host, ntohs(port), 10000, fd_out);
		if (rc)
			return rc;
	}
	set_nodelay(*fd_out);
	return 0;
}

int np_raw_tcp(int boot, int rank, const char *host, size_t bytes, int iters, int pp_iters,
	       struct np_raw_result *out)
{
	char small[8] = {0};
	char *buf;
	double t0, t1;
	int fd = -1, rc;

	buf = malloc(bytes);
	if (!buf)
		return -ENOMEM;
	memset(buf, 0x5a, bytes);
	rc = raw_connect(boot, rank, host, &fd);
	if (rc)
		goto out;

	/* one stream, rank 0 -> rank 1, acknowledged by one byte */
	rc = np_barrier(boot);
	t0 = np_now_us();
	for (int i = 0; i < iters && !rc; i++)
		rc = rank == 0 ? np_write_all(fd, buf, bytes) : np_read_all(fd, buf, bytes);
	if (!rc)
		rc = rank == 0 ? np_read_all(fd, small, 1) : np_write_all(fd, small, 1);
	t1 = np_now_us();
	if (rc)
		goto out;
	out->gbps = (double)bytes * iters / ((t1 - t0) * 1e3);
	out->bytes = bytes;
	out->iters = iters;

	/* 8-byte ping-pong */
	rc = np_barrier(boot);
	t0 = np_now_us();
	for (int i = 0; i < pp_iters && !rc; i++) {
		if (rank == 0) {
			rc = np_write_all(fd, small, sizeof(small));
			rc = rc ? rc : np_read_all(fd, small, sizeof(small));
		} else {
			rc = np_read_all(fd, small, sizeof(small));
			rc = rc ? rc : np_write_all(fd, small, sizeof(small));
		}
	}
	t1 = np_now_us();
	out->rtt_us = (t1 - t0) / pp_iters;

	/* the same with busy-polling reads, as ringway polls in test() */
	rc = np_barrier(boot);
	t0 = np_now_us();
	for (int i = 0; i < pp_iters && !rc; i++) {
		if (rank == 0) {
			rc = np_write_all(fd, small, sizeof(small));
			rc = rc ? rc : poll_read_all(fd, small, sizeof(small));
		} else {
			rc = poll_read_all(fd, small, sizeof(small));
			rc = rc ? rc : np_write_all(fd, small, sizeof(small));
		}
	}
	t1 = np_now_us();
	out->rtt_poll_us = (t1 - t0) / pp_iters;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}
