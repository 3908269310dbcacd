/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sock_p2p: the socket transport against plain TCP, between two forked
 * processes on loopback, in the same run:
 *   - bandwidth: `iters` messages of `size` bytes rank 0 -> rank 1, 8 in
 *     flight (NCCL_STEPS), through rw_net; then the same bytes through one
 *     plain blocking TCP stream;
 *   - latency: 8-byte ping-pong through rw_net (post, test until done, as
 *     NCCL's proxy does), then over a plain blocking TCP socket.
 * Each repeat measures both back to back; the last lines give the medians
 * and the median of the per-repeat ratios, which a busy machine disturbs
 * least.
 * The transport is configured by the usual RINGWAY_* variables
 * (RINGWAY_SOCKET_NSTREAMS, RINGWAY_SOCKET_MIN_STRIPE, ...); the interface
 * defaults to lo.
 *
 * usage: sock_p2p [-s size] [-n iters] [-p pingpong_iters] [-r repeats]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "common/rw_params.h"
#include "transport/rw_net.h"

#define WINDOW	 8
#define LIMIT_MS 120000

struct opts {
	size_t size;
	int iters, pp_iters, repeats;
};

struct peer {
	int rank, boot;
	struct rw_net *net;
	struct rw_net_comm *s, *r;
	struct rw_net_mr *smr, *rmr;
	char *buf;
	size_t len;
};

static double now_us(void)
{
	return (double)rw_now_ns() / 1e3;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "sock_p2p[%d]: %s: %s\n", (int)getpid(), what, strerror(-rc));
	exit(1);
}

static int io_all(int fd, void *p, size_t n, int send_dir)
{
	char *c = p;

	while (n) {
		ssize_t k = send_dir ? send(fd, c, n, MSG_NOSIGNAL) : recv(fd, c, n, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -ECONNRESET;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static void barrier(int fd)
{
	char c = 0;

	if (io_all(fd, &c, 1, 1) || io_all(fd, &c, 1, 0))
		die("barrier", -EPIPE);
}

static void wait_req(struct rw_net_req *req)
{
	uint64_t end = rw_now_ms() + LIMIT_MS;
	size_t sizes[RW_NET_MAX_RECVS];
	int done = 0, rc;

	while (!done) {
		rc = rw_net_test(req, &done, sizes);
		if (rc)
			die("test", rc);
		if (rw_now_ms() > end)
			die("test", -ETIMEDOUT);
	}
}

static struct rw_net_req *post(struct peer *p, int send_dir, size_t size)
{
	struct rw_net_req *req = NULL;
	int tag = 0, rc;
	void *data = p->buf;

	do {
		rc = send_dir ? rw_net_isend(p->s, p->buf, size, 0, p->smr, &req)
			      : rw_net_irecv(p->r, 1, &data, &size, &tag, &p->rmr, &req);
		if (rc)
			die(send_dir ? "isend" : "irecv", rc);
	} while (!req);
	return req;
}

static void setup(struct peer *p)
{
	char mine[RW_NET_HANDLE_MAXSIZE], theirs[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l;
	struct rw_config cfg;
	int rc;

	rw_config_load(&cfg, NULL, NULL);
	if (!cfg.socket_ifname[0])
		snprintf(cfg.socket_ifname, sizeof(cfg.socket_ifname), "=lo");
	rc = rw_sock_create(&cfg, &p->net);
	if (rc)
		die("rw_sock_create", rc);
	rc = rw_net_listen(p->net, 0, mine, &l);
	if (rc)
		die("listen", rc);
	if (io_all(p->boot, mine, sizeof(mine), 1) || io_all(p->boot, theirs, sizeof(theirs), 0))
		die("bootstrap", -EPIPE);
	while (!p->s || !p->r) {
		if (!p->s && (rc = rw_net_connect(p->net, 0, theirs, &p->s)))
			die("connect", rc);
		if (!p->r && (rc = rw_net_accept(l, &p->r)))
			die("accept", rc);
	}
	rw_net_close_listen(l);
	if (rw_net_reg_mr(p->s, p->buf, p->len, RW_PTR_HOST, &p->smr) ||
	    rw_net_reg_mr(p->r, p->buf, p->len, RW_PTR_HOST, &p->rmr))
		die("reg_mr", -EINVAL);
	if (p->rank == 0)
		printf("# rw_net socket: nstreams %lld, min_stripe %zu, dev %s\n",
		       (long long)cfg.socket_nstreams, cfg.socket_min_stripe, cfg.socket_ifname);
}

/* Rank 0 sends iters messages (WINDOW in flight), rank 1 receives; one
 * byte back ends the run.  Returns GB/s (1e9) on rank 0. */
static double rw_bandwidth(struct peer *p, size_t size, int iters)
{
	struct rw_net_req *reqs[WINDOW] = {0};
	double t0;

	barrier(p->boot);
	t0 = now_us();
	for (int i = 0; i < iters + WINDOW; i++) {
		struct rw_net_req **slot = &reqs[i % WINDOW];

		if (*slot) {
			wait_req(*slot);
			*slot = NULL;
		}
		if (i < iters)
			*slot = post(p, p->rank == 0, size);
	}
	wait_req(post(p, p->rank != 0, 1));
	return (double)size * iters / ((now_us() - t0) * 1e3);
}

static double rw_pingpong(struct peer *p, int iters)
{
	double t0;

	barrier(p->boot);
	t0 = now_us();
	for (int i = 0; i < iters; i++) {
		if (p->rank == 0) {
			wait_req(post(p, 1, 8));
			wait_req(post(p, 0, 8));
		} else {
			wait_req(post(p, 0, 8));
			wait_req(post(p, 1, 8));
		}
	}
	return (now_us() - t0) / iters;
}

static int raw_socket(struct peer *p)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int one = 1, fd;

	if (p->rank == 0) {
		int lfd = socket(AF_INET, SOCK_STREAM, 0);

		if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
		    getsockname(lfd, (struct sockaddr *)&a, &len))
			die("raw listen", -errno);
		if (io_all(p->boot, &a.sin_port, sizeof(a.sin_port), 1))
			die("bootstrap", -EPIPE);
		fd = accept(lfd, NULL, NULL);
		close(lfd);
	} else {
		if (io_all(p->boot, &a.sin_port, sizeof(a.sin_port), 0))
			die("bootstrap", -EPIPE);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
			die("raw connect", -errno);
	}
	if (fd < 0)
		die("raw accept", -errno);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static double raw_bandwidth(struct peer *p, int fd, size_t size, int iters)
{
	char c = 0;
	double t0;

	barrier(p->boot);
	t0 = now_us();
	for (int i = 0; i < iters; i++)
		if (io_all(fd, p->buf, size, p->rank == 0))
			die("raw transfer", -EPIPE);
	if (io_all(fd, &c, 1, p->rank != 0))
		die("raw ack", -EPIPE);
	return (double)size * iters / ((now_us() - t0) * 1e3);
}

static double raw_pingpong(struct peer *p, int fd, int iters)
{
	char b[8] = {0};
	double t0;

	barrier(p->boot);
	t0 = now_us();
	for (int i = 0; i < iters; i++) {
		int first = p->rank == 0;

		if (io_all(fd, b, 8, first) || io_all(fd, b, 8, !first))
			die("raw ping-pong", -EPIPE);
	}
	return (now_us() - t0) / iters;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void run(struct peer *p, const struct opts *o)
{
	double *col[6];
	int fd;

	for (int i = 0; i < 6; i++)
		col[i] = calloc((size_t)o->repeats, sizeof(double));

	setup(p);
	fd = raw_socket(p);
	if (p->rank == 0)
		printf("# %zu B x %d, %d in flight; ping-pong 8 B x %d\n"
		       "# %-8s %14s %14s %14s %14s\n",
		       o->size, o->iters, WINDOW, o->pp_iters, "repeat", "rw GB/s", "raw GB/s",
		       "rw rtt us", "raw rtt us");
	for (int k = 0; k < o->repeats; k++) {
		double bw = rw_bandwidth(p, o->size, o->iters);
		double rbw = raw_bandwidth(p, fd, o->size, o->iters);
		double rtt = rw_pingpong(p, o->pp_iters);
		double rrtt = raw_pingpong(p, fd, o->pp_iters);

		if (p->rank == 0)
			printf("  %-8d %14.3f %14.3f %14.2f %14.2f\n", k, bw, rbw, rtt, rrtt);
		col[0][k] = bw, col[1][k] = rbw, col[2][k] = rtt, col[3][k] = rrtt;
		col[4][k] = bw / rbw, col[5][k] = rtt / rrtt;
	}
	if (p->rank == 0) {
		double m[6];

		for (int i = 0; i < 6; i++)
			m[i] = median(col[i], o->repeats);
		printf("  %-8s %14.3f %14.3f %14.2f %14.2f\n", "median", m[0], m[1], m[2], m[3]);
		printf("# median of per-repeat ratios: bandwidth rw/raw %.2f, rtt rw/raw %.2f\n",
		       m[4], m[5]);
	}
	for (int i = 0; i < 6; i++)
		free(col[i]);
	close(fd);
	rw_net_dereg_mr(p->s, p->smr);
	rw_net_dereg_mr(p->r, p->rmr);
	rw_net_close_send(p->s);
	rw_net_close_recv(p->r);
	rw_net_destroy(p->net);
}

int main(int argc, char **argv)
{
	struct opts o = {.size = 64 << 20, .iters = 16, .pp_iters = 2000, .repeats = 3};
	struct peer p = {0};
	int sv[2], c, status = 0;
	pid_t child;

	while ((c = getopt(argc, argv, "s:n:p:r:")) != -1) {
		switch (c) {
		case 's':
			if (rw_parse_size(optarg, &o.size))
				return 2;
			break;
		case 'n':
			o.iters = atoi(optarg);
			break;
		case 'p':
			o.pp_iters = atoi(optarg);
			break;
		case 'r':
			o.repeats = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: sock_p2p [-s size] [-n iters] [-p pingpong_iters] "
					"[-r repeats]\n");
			return 2;
		}
	}
	if (o.iters < 1 || o.pp_iters < 1 || o.repeats < 1 || o.size < 8)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	p.len = o.size;
	p.buf = mmap(NULL, p.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p.buf == MAP_FAILED)
		return 1;
	memset(p.buf, 0x5a, p.len);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	p.rank = child == 0;
	p.boot = sv[p.rank];
	close(sv[1 - p.rank]);
	run(&p, &o);
	if (child == 0)
		_exit(0);
	waitpid(child, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
