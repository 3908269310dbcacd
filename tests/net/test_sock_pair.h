/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket transport tests: a connected pair on one net, registered buffers,
 * and bounded waits (isend retried while "not now", test until done).  No
 * cmocka asserts in the buffer helpers: a forked child uses them too.
 */
#ifndef RW_TEST_SOCK_PAIR_H
#define RW_TEST_SOCK_PAIR_H

#include "support/rw_test.h"

#include <stdlib.h>

#include "common/rw_common.h"
#include "transport/rw_net.h"
#include "transport/socket/sock.h"

#define SOCK_PAIR_WAIT_MS 30000

struct pair {
	struct rw_net_comm *s, *r;
};

struct buf {
	char *p;
	size_t len;
	struct rw_net_mr *mr;
};

/* A socket net on loopback (IPv4, a 20 s timeout) with nstreams streams
 * per connection, striping from min_stripe bytes, socket buffers of buffer
 * bytes ("0": the kernel's autotuning), registry syntax. */
static inline int sock_net_make_buf(struct rw_config *cfg, const char *nstreams,
				    const char *min_stripe, const char *buffer, struct rw_net **out)
{
	const char *env[] = {"RINGWAY_SOCKET_IFNAME",
			     "=lo",
			     "RINGWAY_SOCKET_FAMILY",
			     "ipv4",
			     "RINGWAY_TIMEOUT_MS",
			     "20000",
			     "RINGWAY_SOCKET_NSTREAMS",
			     nstreams,
			     "RINGWAY_SOCKET_MIN_STRIPE",
			     min_stripe,
			     "RINGWAY_SOCKET_BUFFER",
			     buffer,
			     NULL};

	if (rw_test_config(cfg, env))
		return -EINVAL;
	return rw_sock_create(cfg, out);
}

static inline int sock_net_make(struct rw_config *cfg, const char *nstreams, const char *min_stripe,
				struct rw_net **out)
{
	return sock_net_make_buf(cfg, nstreams, min_stripe, "0", out);
}

/* Teardown: destroy the net, then no socket object may be left and no
 * warning unexpected. */
static inline void sock_net_teardown(struct rw_net **net)
{
	rw_net_destroy(*net);
	*net = NULL;
	if (rw_sock_live_total())
		fail_msg("%ld socket objects still alive", rw_sock_live_total());
	RW_TEST_ASSERT_LOG_CLEAN();
}

static inline int buf_get(struct rw_net_comm *c, struct buf *b, size_t len)
{
	b->len = len;
	b->p = malloc(len ? len : 1);
	if (!b->p)
		return -ENOMEM;
	return rw_net_reg_mr(c, b->p, len, RW_PTR_HOST, &b->mr);
}

static inline void buf_put(struct rw_net_comm *c, struct buf *b)
{
	rw_net_dereg_mr(c, b->mr);
	free(b->p);
}

/* A send comm and the recv comm it reached, through a listener on dev 0. */
static inline void pair_open(struct rw_net *net, struct pair *pr)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l;
	uint64_t deadline = rw_now_ms() + SOCK_PAIR_WAIT_MS;

	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	pr->s = pr->r = NULL;
	while (!pr->s || !pr->r) {
		if (!pr->s)
			assert_int_equal(rw_net_connect(net, 0, handle, &pr->s), 0);
		if (!pr->r)
			assert_int_equal(rw_net_accept(l, &pr->r), 0);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
}

static inline void pair_close(struct pair *pr)
{
	assert_int_equal(rw_net_close_send(pr->s), 0);
	assert_int_equal(rw_net_close_recv(pr->r), 0);
}

/* isend, retried (bounded) while it answers "not now". */
static inline struct rw_net_req *send_taken(struct rw_net_comm *s, void *data, size_t len, int tag,
					    struct rw_net_mr *mr)
{
	struct rw_net_req *req = NULL;
	uint64_t deadline = rw_now_ms() + SOCK_PAIR_WAIT_MS;

	while (!req) {
		assert_int_equal(rw_net_isend(s, data, len, tag, mr, &req), 0);
		if (!req && rw_now_ms() > deadline)
			fail_msg("isend of %zu bytes with tag %d never taken", len, tag);
	}
	return req;
}

/* irecv that must be taken at once (a few receives only: there is room). */
static inline struct rw_net_req *recv_posted(struct rw_net_comm *r, int n, void **data,
					     size_t *sizes, int *tags, struct rw_net_mr **mrs)
{
	struct rw_net_req *req = NULL;

	assert_int_equal(rw_net_irecv(r, n, data, sizes, tags, mrs, &req), 0);
	assert_non_null(req);
	return req;
}

/* test until done; returns test's result (sizes filled when 0). */
static inline int finish(struct rw_net_req *req, size_t *sizes)
{
	uint64_t deadline = rw_now_ms() + SOCK_PAIR_WAIT_MS;
	int done = 0, rc;

	do {
		rc = rw_net_test(req, &done, sizes);
		if (!rc && !done && rw_now_ms() > deadline)
			fail_msg("request %p never finished", (void *)req);
	} while (!rc && !done);
	return rc;
}

#endif /* RW_TEST_SOCK_PAIR_H */
