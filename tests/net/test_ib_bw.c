/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Throughput of the ib transport between two processes, through rw_net:
 * the figure to compare with ib_write_bw on the same NIC (see the README).
 * It prints figures and checks only that the data arrived intact (every
 * byte of the last window of messages).
 *
 *   test_ib_bw [size [count [window]]]      (sizes take K/M/G; 1M 64 8)
 *
 * The environment picks the device and QPs (RINGWAY_IB_HCA,
 * RINGWAY_IB_QPS_PER_CONN, ...) and the set-up interface
 * (RINGWAY_SOCKET_IFNAME, lo by default here).  On the emulated fabric,
 * run it under sv_run.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "common/rw_params.h"
#include "transport/ib/ib.h"

#define WAIT_MS 60000

static int fail(const char *who, const char *what, int rc)
{
	fprintf(stderr, "test_ib_bw %s: %s: %s\n", who, what, strerror(-rc));
	return 1;
}

static void pattern(unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131u + seed);
}

static int wait_req(struct rw_net_req *req, size_t *size)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int done = 0, rc;

	do
		rc = rw_net_test(req, &done, size);
	while (!rc && !done && rw_now_ms() < deadline);
	return rc ? rc : done ? 0 : -ETIMEDOUT;
}

/* The child: accept, receive count messages through window buffers. */
static int receiver(struct rw_net *net, int fd, size_t size, int count, int window)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l;
	struct rw_net_comm *r = NULL;
	struct rw_net_req *reqs[64];
	unsigned char *buf = malloc((size_t)window * size), *want = malloc(size);
	struct rw_net_mr *mr;
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc = rw_net_listen(net, 0, handle, &l), tag = 0;

	if (rc || write(fd, handle, sizeof(handle)) != (ssize_t)sizeof(handle))
		return fail("receiver", "listen", rc ? rc : -EIO);
	while (!rc && !r && rw_now_ms() < deadline)
		rc = rw_net_accept(l, &r);
	if (rc || !r)
		return fail("receiver", "accept", rc ? rc : -ETIMEDOUT);
	rw_net_close_listen(l);
	if ((rc = rw_net_reg_mr(r, buf, (size_t)window * size, RW_PTR_HOST, &mr)))
		return fail("receiver", "regMr", rc);
	memset(buf, 0, (size_t)window * size);
	for (int i = 0; i < count + window; i++) {
		int slot = i % window;
		size_t got = 0;
		void *data = buf + (size_t)slot * size;

		if (i >= window) {
			if ((rc = wait_req(reqs[slot], &got)))
				return fail("receiver", "receive", rc);
			if (got != size)
				return fail("receiver", "received size", -EMSGSIZE);
			if (i >= count) {
				pattern(want, size, (unsigned int)(i - window));
				if (memcmp(want, data, size))
					return fail("receiver", "the data arrived corrupted",
						    -EPROTO);
			}
		}
		if (i >= count)
			continue;
		do
			rc = rw_net_irecv(r, 1, &data, &size, &tag, &mr, &reqs[slot]);
		while (!rc && !reqs[slot]);
		if (rc)
			return fail("receiver", "irecv", rc);
	}
	rw_net_dereg_mr(r, mr);
	rw_net_close_recv(r);
	free(buf);
	free(want);
	return 0;
}

/* The parent: connect, send count messages, window in flight; time it. */
static int sender(struct rw_net *net, int fd, size_t size, int count, int window)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_comm *s = NULL;
	struct rw_net_req *reqs[64];
	unsigned char *buf = malloc((size_t)window * size);
	struct rw_net_mr *mr;
	struct rw_net_props p;
	uint64_t deadline = rw_now_ms() + WAIT_MS, t0, t1;
	int rc = 0;
	double sec;

	if (read(fd, handle, sizeof(handle)) != (ssize_t)sizeof(handle))
		return fail("sender", "reading the handle", -EIO);
	while (!rc && !s && rw_now_ms() < deadline)
		rc = rw_net_connect(net, 0, handle, &s);
	if (rc || !s)
		return fail("sender", "connect", rc ? rc : -ETIMEDOUT);
	if ((rc = rw_net_reg_mr(s, buf, (size_t)window * size, RW_PTR_HOST, &mr)))
		return fail("sender", "regMr", rc);
	t0 = rw_now_ns();
	for (int i = 0; i < count + window; i++) {
		int slot = i % window;
		unsigned char *data = buf + (size_t)slot * size;
		size_t got = 0;

		if (i >= window && (rc = wait_req(reqs[slot], &got)))
			return fail("sender", "send", rc);
		if (i >= count)
			continue;
		if (i >= count - window)
			pattern(data, size, (unsigned int)i); /* checked at the far end */
		do
			rc = rw_net_isend(s, data, size, 0, mr, &reqs[slot]);
		while (!rc && !reqs[slot]);
		if (rc)
			return fail("sender", "isend", rc);
	}
	t1 = rw_now_ns();
	sec = (double)(t1 - t0) / 1e9;
	rw_net_get_properties(net, 0, &p);
	printf("ib on %s, %zu-byte messages x %d, %d in flight, %lld QP(s): %.2f GB/s "
	       "(%.1f Gb/s), %.0f messages/s\n",
	       p.name, size, count, window, (long long)net->cfg.ib_qps_per_conn,
	       (double)size * count / sec / 1e9, (double)size * count * 8 / sec / 1e9, count / sec);
	rw_net_dereg_mr(s, mr);
	rw_net_close_send(s);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	size_t size = 1 << 20;
	int count = 64, window = 8, fds[2], rc, status = 0;
	struct rw_config cfg;
	struct rw_net *net;
	pid_t pid;

	if ((argc > 1 && rw_parse_size(argv[1], &size)) || size == 0 ||
	    (argc > 2 && (count = atoi(argv[2])) < 1) ||
	    (argc > 3 && ((window = atoi(argv[3])) < 1 || window > 64))) {
		fprintf(stderr, "usage: %s [size [count [window<=64]]]\n", argv[0]);
		return 2;
	}
	if (!rw_env_get("RINGWAY_SOCKET_IFNAME"))
		setenv("RINGWAY_SOCKET_IFNAME", "lo", 1);
	rw_config_load(&cfg, NULL, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (pipe(fds))
		return 1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		rc = rw_ib_create(&cfg, &net);
		if (!rc) {
			rc = receiver(net, fds[1], size, count, window);
			rw_net_destroy(net);
		}
		_exit(rc ? 1 : 0);
	}
	close(fds[1]);
	rc = rw_ib_create(&cfg, &net);
	if (!rc) {
		rc = sender(net, fds[0], size, count, window);
		rw_net_destroy(net);
	}
	if (rc)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return rc || !WIFEXITED(status) || WEXITSTATUS(status) ? 1 : 0;
}
