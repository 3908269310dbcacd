/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The loopback self-test: for each usable transport (socket, shm, ib), two
 * connections through rw_net inside this process, an 8-byte ping-pong and a
 * stream of 4 MiB messages, every byte checked, next to a yardstick measured
 * in the same run (socket: one raw TCP stream over 127.0.0.1; shm: a
 * one-thread memcpy; ib: the port's rate).  The budget (5 s by default) is
 * shared by the transports.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/doctor/doctor.h"
#include "transport/ib/ib.h"
#include "transport/rw_net.h"

#define BW_BYTES    (4u << 20)
#define BW_INFLIGHT 4
#define STEP_S	    10.0 /* longest connect or wait for a transfer before giving up */

struct pair {
	struct rw_net_comm *send, *recv;
	struct rw_net_mr *smr, *rmr;
};

struct loop {
	struct rw_net *net;
	struct rw_net_listen *l;
	struct pair p[2]; /* 0: ping direction, 1: pong direction */
	char *sbuf, *rbuf;
};

static int connect_pair(struct loop *lp, const void *handle, struct pair *p, char *why, size_t len)
{
	double t0 = dr_now();
	int rc = 0;

	while ((!p->send || !p->recv) && dr_now() - t0 < STEP_S) {
		if (!p->send && (rc = rw_net_connect(lp->net, 0, handle, &p->send)))
			break;
		if (!p->recv && (rc = rw_net_accept(lp->l, &p->recv)))
			break;
	}
	if (rc || !p->send || !p->recv) {
		snprintf(why, len, "connect/accept: %s", rc ? strerror(-rc) : "timed out");
		return rc ? rc : -ETIMEDOUT;
	}
	rc = rw_net_reg_mr(p->send, lp->sbuf, BW_BYTES * BW_INFLIGHT, RW_PTR_HOST, &p->smr);
	if (!rc)
		rc = rw_net_reg_mr(p->recv, lp->rbuf, BW_BYTES * BW_INFLIGHT, RW_PTR_HOST, &p->rmr);
	if (rc)
		snprintf(why, len, "reg_mr: %s", strerror(-rc));
	return rc;
}

static void loop_close(struct loop *lp)
{
	for (int i = 0; i < 2; i++) {
		struct pair *p = &lp->p[i];

		if (p->smr)
			rw_net_dereg_mr(p->send, p->smr);
		if (p->rmr)
			rw_net_dereg_mr(p->recv, p->rmr);
		if (p->send)
			rw_net_close_send(p->send);
		if (p->recv)
			rw_net_close_recv(p->recv);
	}
	if (lp->l)
		rw_net_close_listen(lp->l);
	rw_net_destroy(lp->net);
	free(lp->sbuf);
	free(lp->rbuf);
}

/* One message through pair p: post, then drive both ends to completion. */
static int transfer(struct pair *p, char *sbuf, char *rbuf, size_t size, int tag)
{
	struct rw_net_req *sr = NULL, *rr = NULL;
	void *data[1] = {rbuf};
	size_t sizes[1] = {size};
	int tags[1] = {tag};
	struct rw_net_mr *mrs[1] = {p->rmr};
	bool sdone = false, rdone = false;
	double t0 = dr_now();
	int rc;

	rc = rw_net_irecv(p->recv, 1, data, sizes, tags, mrs, &rr);
	while (!rc && !rr && dr_now() - t0 < STEP_S)
		rc = rw_net_irecv(p->recv, 1, data, sizes, tags, mrs, &rr);
	while (!rc && !sr && dr_now() - t0 < STEP_S)
		rc = rw_net_isend(p->send, sbuf, size, tag, p->smr, &sr);
	while (!rc && (!sdone || !rdone) && sr && rr && dr_now() - t0 < STEP_S) {
		int done = 0;

		if (!sdone && !(rc = rw_net_test(sr, &done, NULL)))
			sdone = done;
		done = 0;
		if (!rc && !rdone && !(rc = rw_net_test(rr, &done, sizes)))
			rdone = done;
	}
	if (rc)
		return rc;
	if (!sdone || !rdone)
		return -ETIMEDOUT;
	return sizes[0] == size ? 0 : -EPROTO;
}

static int pingpong(struct loop *lp, double budget, double *rtt_us)
{
	double t0 = dr_now();
	int n = 0, rc = 0;

	/* ping: sbuf[0..8) -> rbuf[0..8) over pair 0; the echo goes back from
	 * sbuf[64..72) to rbuf[64..72) over pair 1 (each inside its registration) */
	while (n < 20000 && dr_now() - t0 < budget) {
		memset(lp->sbuf, 0x5a ^ (n & 0xff), 8);
		rc = transfer(&lp->p[0], lp->sbuf, lp->rbuf, 8, 1);
		memcpy(lp->sbuf + 64, lp->rbuf, 8);
		if (!rc)
			rc = transfer(&lp->p[1], lp->sbuf + 64, lp->rbuf + 64, 8, 1);
		if (rc)
			return rc;
		if (memcmp(lp->rbuf + 64, lp->sbuf, 8))
			return -EBADMSG;
		n++;
	}
	*rtt_us = (dr_now() - t0) * 1e6 / RW_MAX(n, 1);
	return 0;
}

/* Stream BW_BYTES messages, BW_INFLIGHT at a time, over pair 0. */
static int stream(struct loop *lp, double budget, double *gbps, long *wrong)
{
	struct slot {
		struct rw_net_req *sr, *rr;
		bool posted, sent, sdone, rdone;
		size_t got;
	} sl[BW_INFLIGHT] = {0};
	struct pair *p = &lp->p[0];
	double t0, last;
	long done_n = 0;
	int rc = 0;

	for (size_t i = 0; i < (size_t)BW_BYTES * BW_INFLIGHT; i++)
		lp->sbuf[i] = (char)(i * 131 + i / 4093);
	memset(lp->rbuf, 0, (size_t)BW_BYTES * BW_INFLIGHT);
	t0 = last = dr_now(); /* after the fill, which a loaded machine makes slow */
	while (!rc) {
		/* post until the budget is spent, and at least until one message
		 * has arrived */
		bool more = dr_now() - t0 < budget || done_n == 0;
		int busy = 0;

		for (int k = 0; k < BW_INFLIGHT && !rc; k++) {
			struct slot *x = &sl[k];
			char *src = lp->sbuf + (size_t)k * BW_BYTES;
			char *dst = lp->rbuf + (size_t)k * BW_BYTES;

			if (!x->posted && more) {
				void *data[1] = {dst};
				size_t sz[1] = {BW_BYTES};
				int tg[1] = {k};
				struct rw_net_mr *m[1] = {p->rmr};

				rc = rw_net_irecv(p->recv, 1, data, sz, tg, m, &x->rr);
				x->posted = !rc && x->rr;
			}
			if (!x->posted)
				continue;
			busy++;
			if (!x->sent && !rc) {
				rc = rw_net_isend(p->send, src, BW_BYTES, k, p->smr, &x->sr);
				x->sent = !rc && x->sr;
			}
			if (x->sent && !x->sdone && !rc) {
				int d = 0;

				rc = rw_net_test(x->sr, &d, NULL);
				x->sdone = d;
			}
			if (!x->rdone && !rc) {
				int d = 0;
				size_t got[1] = {0};

				rc = rw_net_test(x->rr, &d, got);
				x->rdone = d;
				x->got = got[0];
			}
			if (x->sdone && x->rdone) {
				if (x->got != BW_BYTES || memcmp(src, dst, BW_BYTES))
					(*wrong)++;
				memset(dst, 0, 64);
				memset(x, 0, sizeof(*x));
				done_n++;
				last = dr_now();
			}
		}
		if (!more && !busy)
			break;
		if (!rc && dr_now() - last > STEP_S)
			rc = -ETIMEDOUT;
	}
	if (rc)
		return rc;
	*gbps = (double)done_n * BW_BYTES / (dr_now() - t0) / 1e9;
	return done_n > 0 ? 0 : -ETIMEDOUT;
}

/* --- yardsticks, measured in the same run ------------------------------------ */

struct raw_writer {
	int fd;
	double until;
	char *buf;
};

static void *raw_write_main(void *arg)
{
	struct raw_writer *w = arg;

	while (dr_now() < w->until) {
		size_t off = 0;

		while (off < BW_BYTES) {
			ssize_t n = send(w->fd, w->buf + off, BW_BYTES - off, MSG_NOSIGNAL);

			if (n <= 0)
				goto out;
			off += (size_t)n;
		}
	}
out:
	shutdown(w->fd, SHUT_WR);
	return NULL;
}

/* One raw TCP stream over 127.0.0.1 for `budget` seconds: GB/s, 0 on error. */
static double raw_tcp_gbps(double budget)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int lfd, cfd = -1, afd = -1, one = 1;
	struct raw_writer w = {0};
	pthread_t th;
	double t0, gbps = 0;
	size_t total = 0;
	char *rbuf = malloc(BW_BYTES);

	w.buf = calloc(1, BW_BYTES);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || !rbuf || !w.buf || bind(lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(lfd, 1) || getsockname(lfd, (struct sockaddr *)&a, &alen))
		goto out;
	cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&a, sizeof(a)))
		goto out;
	afd = accept(lfd, NULL, NULL);
	if (afd < 0)
		goto out;
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	w.fd = cfd;
	t0 = dr_now();
	w.until = t0 + budget;
	if (pthread_create(&th, NULL, raw_write_main, &w))
		goto out;
	for (;;) {
		ssize_t n = recv(afd, rbuf, BW_BYTES, 0);

		if (n <= 0)
			break;
		total += (size_t)n;
	}
	pthread_join(th, NULL);
	gbps = (double)total / (dr_now() - t0) / 1e9;
out:
	if (afd >= 0)
		close(afd);
	if (cfd >= 0)
		close(cfd);
	if (lfd >= 0)
		close(lfd);
	free(rbuf);
	free(w.buf);
	return gbps;
}

static double memcpy_gbps(char *dst, const char *src, double budget)
{
	double t0 = dr_now();
	long n = 0;

	do { /* over the whole buffers: out of cache, as a transfer is */
		size_t off = (size_t)(n % BW_INFLIGHT) * BW_BYTES;

		memcpy(dst + off, src + off, BW_BYTES);
		__asm__ __volatile__("" ::"r"(dst) : "memory");
		n++;
	} while (dr_now() - t0 < budget);
	return (double)n * BW_BYTES / (dr_now() - t0) / 1e9;
}

/* --- the test -------------------------------------------------------------------- */

enum which { T_SOCKET, T_SHM, T_IB };

static int create(struct dr_state *st, enum which w, struct rw_net **net)
{
	char why[256];

	switch (w) {
	case T_SOCKET:
		return rw_sock_create(&st->cfg, net);
	case T_SHM:
		return rw_shm_create(&st->cfg, net);
	default:
		return rw_ib_create_why(&st->cfg, net, why, sizeof(why));
	}
}

static void run_one(struct dr_state *st, struct dr_section *s, enum which w, double budget)
{
	static const char *const names[] = {"socket", "shm", "ib"};
	const char *name = names[w];
	struct loop lp = {0};
	char handle[RW_NET_HANDLE_MAXSIZE] = {0}, why[256] = "", key[48], dev[64];
	struct rw_net_props props = {0};
	double rtt = 0, gbps = 0, expect = 0;
	long wrong = 0;
	const char *yard = "";
	int rc;

	lp.sbuf = malloc((size_t)BW_BYTES * BW_INFLIGHT);
	lp.rbuf = malloc((size_t)BW_BYTES * BW_INFLIGHT);
	if (!lp.sbuf || !lp.rbuf) {
		dr_add(s, DR_FAIL, name, "out of memory");
		free(lp.sbuf);
		free(lp.rbuf);
		return;
	}
	rc = create(st, w, &lp.net);
	if (rc) {
		snprintf(why, sizeof(why), "create: %s", strerror(-rc));
		lp.net = NULL;
		goto fail;
	}
	rw_net_get_properties(lp.net, 0, &props);
	rc = rw_net_listen(lp.net, 0, handle, &lp.l);
	if (rc) {
		snprintf(why, sizeof(why), "listen: %s", strerror(-rc));
		goto fail;
	}
	rc = connect_pair(&lp, handle, &lp.p[0], why, sizeof(why));
	if (!rc)
		rc = connect_pair(&lp, handle, &lp.p[1], why, sizeof(why));
	if (rc)
		goto fail;
	rc = pingpong(&lp, budget * 0.2, &rtt);
	if (rc) {
		snprintf(why, sizeof(why), "8-byte ping-pong: %s", strerror(-rc));
		goto fail;
	}
	rc = stream(&lp, budget * 0.6, &gbps, &wrong);
	if (rc) {
		snprintf(why, sizeof(why), "4 MiB messages: %s", strerror(-rc));
		goto fail;
	}
	switch (w) {
	case T_SOCKET:
		expect = raw_tcp_gbps(budget * 0.2);
		yard = "one raw TCP stream over 127.0.0.1, same run";
		break;
	case T_SHM:
		expect = memcpy_gbps(lp.rbuf, lp.sbuf, budget * 0.2);
		yard = "one-thread memcpy over 16 MiB, same run";
		break;
	default:
		expect = props.speed_mbps / 8000.0;
		yard = "the port's rate";
		break;
	}
	snprintf(dev, sizeof(dev), "%s", props.name ? props.name : "?");
	loop_close(&lp);
	dr_log_take(s, "WARN "); /* connection chatter stays out */
	snprintf(key, sizeof(key), "%s rtt", name);
	dr_add_value(s, DR_INFO, key, rtt, "us", "8-byte round trip %.1f us (device %s)", rtt, dev);
	snprintf(key, sizeof(key), "%s expected", name);
	dr_add_value(s, DR_INFO, key, expect, "GB/s", "%.2f GB/s (%s)", expect, yard);
	snprintf(key, sizeof(key), "%s bandwidth", name);
	if (wrong)
		dr_add_value(s, DR_FAIL, key, gbps, "GB/s",
			     "%ld message(s) of 4 MiB arrived wrong: the transport corrupts data",
			     wrong);
	else
		dr_add_value(s, expect > 0 && gbps < 0.1 * expect ? DR_WARN : DR_OK, key, gbps,
			     "GB/s",
			     "%.2f GB/s with 4 MiB messages (both ends in this thread), every byte "
			     "checked; %.2fx the expected%s",
			     gbps, expect > 0 ? gbps / expect : 0,
			     expect > 0 && gbps < 0.1 * expect
				     ? ": below a tenth of it (a loaded machine, or a slow path)"
				     : "");
	return;
fail:
	if (lp.net)
		loop_close(&lp);
	else {
		free(lp.sbuf);
		free(lp.rbuf);
	}
	dr_log_take(s, "WARN "); /* connection chatter stays out */
	if (rc == -ETIMEDOUT)	 /* slow is not broken: an overloaded machine looks the same */
		dr_add(s, DR_WARN, name,
		       "self-test incomplete: %s (no progress for %.0f s: the machine is "
		       "overloaded, or the transport hangs; run it again on a quiet machine)",
		       why, STEP_S);
	else
		dr_add(s, DR_FAIL, name, "self-test failed: %s", why);
}

void dr_selftest(struct dr_state *st, struct dr_report *r)
{
	struct dr_section *s = dr_section(r, "selftest", "Loopback self-test");
	enum which list[3];
	int n = 0;

	if (st->selftest_s <= 0) {
		dr_add(s, DR_INFO, "skipped", "--selftest 0");
		return;
	}
	if (st->socket_ok)
		list[n++] = T_SOCKET;
	if (st->shm_ok)
		list[n++] = T_SHM;
	if (st->ib_ok)
		list[n++] = T_IB;
	if (!n) {
		dr_add(s, DR_FAIL, "transports", "no transport usable: nothing to test");
		return;
	}
	for (int i = 0; i < n; i++)
		run_one(st, s, list[i], st->selftest_s / n);
}
