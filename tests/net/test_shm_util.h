/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the shm tests (test_shm*.c): blocking-with-a-bound
 * wrappers over rw_net, usable in a forked child (no cmocka asserts: they
 * return -errno), and a child process with two pipes.
 */
#ifndef RW_TEST_SHM_UTIL_H
#define RW_TEST_SHM_UTIL_H

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "transport/rw_net.h"

#define SHM_WAIT_MS 20000

#define CHILD_CHECK(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "child %d: %s:%d: %s failed\n", (int)getpid(), __FILE__,   \
				__LINE__, #cond);                                                  \
			_exit(3);                                                                  \
		}                                                                                  \
	} while (0)

struct shm_child {
	pid_t pid;
	int to[2], from[2]; /* parent -> child, child -> parent */
	char handle[RW_NET_HANDLE_MAXSIZE];
};

static inline int shm_wait_connect(struct rw_net *n, const void *h, struct rw_net_comm **s)
{
	uint64_t end = rw_now_ms() + SHM_WAIT_MS;
	int rc;

	*s = NULL;
	do
		rc = rw_net_connect(n, 0, h, s);
	while (!rc && !*s && rw_now_ms() < end);
	return rc ? rc : *s ? 0 : -ETIMEDOUT;
}

static inline int shm_wait_accept(struct rw_net_listen *l, struct rw_net_comm **r)
{
	uint64_t end = rw_now_ms() + SHM_WAIT_MS;
	int rc;

	*r = NULL;
	do
		rc = rw_net_accept(l, r);
	while (!rc && !*r && rw_now_ms() < end);
	return rc ? rc : *r ? 0 : -ETIMEDOUT;
}

/* Test req until it ends; its result, or -ETIMEDOUT after limit_ms. */
static inline int shm_wait_req(struct rw_net_req *req, size_t *size, int64_t limit_ms)
{
	uint64_t end = rw_now_ms() + (uint64_t)limit_ms;
	size_t sizes[RW_NET_MAX_RECVS];
	int done = 0, rc;

	do {
		rc = rw_net_test(req, &done, sizes);
		if (rc)
			return rc;
	} while (!done && rw_now_ms() < end);
	if (!done)
		return -ETIMEDOUT;
	if (size)
		*size = sizes[0];
	return 0;
}

static inline int shm_send(struct rw_net_comm *s, void *p, size_t n, int tag, struct rw_net_mr *mr,
			   struct rw_net_req **req)
{
	uint64_t end = rw_now_ms() + SHM_WAIT_MS;
	int rc;

	*req = NULL;
	do
		rc = rw_net_isend(s, p, n, tag, mr, req);
	while (!rc && !*req && rw_now_ms() < end);
	return rc ? rc : *req ? 0 : -ETIMEDOUT;
}

static inline int shm_recv(struct rw_net_comm *r, void *p, size_t n, int tag, struct rw_net_mr *mr,
			   struct rw_net_req **req)
{
	uint64_t end = rw_now_ms() + SHM_WAIT_MS;
	int rc;

	*req = NULL;
	do
		rc = rw_net_irecv(r, 1, &p, &n, &tag, &mr, req);
	while (!rc && !*req && rw_now_ms() < end);
	return rc ? rc : *req ? 0 : -ETIMEDOUT;
}

/* Fork a child running fn (which must _exit); the parent keeps pipe ends. */
static inline pid_t shm_child_start(struct shm_child *k, void (*fn)(struct shm_child *k))
{
	if (pipe(k->to) || pipe(k->from))
		return -1;
	fflush(NULL);
	k->pid = fork();
	if (k->pid == 0) {
		close(k->to[1]);
		close(k->from[0]);
		alarm(60); /* never outlive a broken parent */
		fn(k);
		_exit(0);
	}
	close(k->to[0]);
	close(k->from[1]);
	return k->pid;
}

/* Read n bytes from the other side's pipe, waiting at most SHM_WAIT_MS. */
static inline int shm_pipe_read(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (poll(&p, 1, SHM_WAIT_MS) != 1)
			return -ETIMEDOUT;
		r = read(fd, (char *)buf + got, n - got);
		if (r <= 0)
			return -EPIPE;
		got += (size_t)r;
	}
	return 0;
}

static inline int shm_pipe_write(int fd, const void *buf, size_t n)
{
	return write(fd, buf, n) == (ssize_t)n ? 0 : -EPIPE;
}

/* Reap the child (SIGKILL first when kill_it); its wait status. */
static inline int shm_child_reap(struct shm_child *k, bool kill_it)
{
	int status = 0;

	if (kill_it)
		kill(k->pid, SIGKILL);
	waitpid(k->pid, &status, 0);
	close(k->to[1]);
	close(k->from[0]);
	return status;
}

/*
 * A receiver child that listens and writes its handle to its pipe, then a
 * sender child given that handle; both reaped.  0 when both exited 0, else
 * -1 (each child says what failed on stderr).
 */
static inline int shm_pair_run(void (*receiver)(struct shm_child *k),
			       void (*sender)(struct shm_child *k))
{
	struct shm_child rx, tx;
	int st_rx, st_tx;

	if (shm_child_start(&rx, receiver) <= 0)
		return -1;
	if (shm_pipe_read(rx.from[0], rx.handle, sizeof(rx.handle)) != 0 ||
	    shm_child_start(&tx, sender) <= 0) {
		shm_child_reap(&rx, true);
		return -1;
	}
	if (shm_pipe_write(tx.to[1], rx.handle, sizeof(rx.handle)) != 0) {
		shm_child_reap(&tx, true);
		shm_child_reap(&rx, true);
		return -1;
	}
	st_tx = shm_child_reap(&tx, false);
	st_rx = shm_child_reap(&rx, false);
	return WIFEXITED(st_tx) && WEXITSTATUS(st_tx) == 0 && WIFEXITED(st_rx) &&
			       WEXITSTATUS(st_rx) == 0
		       ? 0
		       : -1;
}

#endif /* RW_TEST_SHM_UTIL_H */
