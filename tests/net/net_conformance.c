/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_net conformance: the behaviour every transport owes its callers (the
 * NCCL ABI adapters and the ring engine), checked through rw_net.h alone.
 * Single-process cases drive both ends from one thread, which works because
 * no call may block.  Fault cases fork a peer process (pipes carry handles
 * and "ready" bytes; children _exit and never return into cmocka).
 */
#include "support/rw_test.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "net/net_conformance.h"

#define WAIT_MS 20000       /* bound on a wait that should succeed */
#define CALL_MS 1000        /* no single call may take this long */
#define MIB (1024 * 1024)

static const struct conf_backend *B;
static struct rw_config cfg;
static struct rw_net *net;
static struct rw_net_props props;

/* --- helpers usable in both processes (no cmocka asserts) ---------------- */

struct pair {
	struct rw_net_comm *s, *r;
};

struct op {
	struct rw_net_req *req;
	bool done;
	int rc;
	size_t sizes[RW_NET_MAX_RECVS];
};

struct buf {
	char *p;
	size_t len;
	struct rw_net_mr *mr;
};

/* listen on dev 0, then poll connect and accept until both are there. */
static int pair_open(struct rw_net *n, struct pair *pr)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l = NULL;
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc = rw_net_listen(n, 0, handle, &l);

	pr->s = pr->r = NULL;
	while (!rc && (!pr->s || !pr->r)) {
		if (!pr->s)
			rc = rw_net_connect(n, 0, handle, &pr->s);
		if (!rc && !pr->r)
			rc = rw_net_accept(l, &pr->r);
		if (!rc && rw_now_ms() > deadline)
			rc = -ETIMEDOUT;
	}
	if (l)
		rw_net_close_listen(l);
	return rc;
}

static int wait_connect(struct rw_net *n, const void *handle, struct rw_net_comm **s)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc;

	*s = NULL;
	do
		rc = rw_net_connect(n, 0, handle, s);
	while (!rc && !*s && rw_now_ms() < deadline);
	return rc ? rc : *s ? 0 : -ETIMEDOUT;
}

static int wait_accept(struct rw_net_listen *l, struct rw_net_comm **r)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc;

	*r = NULL;
	do
		rc = rw_net_accept(l, r);
	while (!rc && !*r && rw_now_ms() < deadline);
	return rc ? rc : *r ? 0 : -ETIMEDOUT;
}

static int buf_get(struct rw_net_comm *c, struct buf *b, size_t len)
{
	b->len = len;
	b->p = malloc(len ? len : 1);
	if (!b->p)
		return -ENOMEM;
	return rw_net_reg_mr(c, b->p, len, RW_PTR_HOST, &b->mr);
}

static void buf_put(struct rw_net_comm *c, struct buf *b)
{
	if (b->mr)
		rw_net_dereg_mr(c, b->mr);
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* isend, retried while the transport has no room. */
static int send_post(struct rw_net_comm *s, void *data, size_t size, int tag,
		     struct rw_net_mr *mr, struct op *op)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc;

	memset(op, 0, sizeof(*op));
	do
		rc = rw_net_isend(s, data, size, tag, mr, &op->req);
	while (!rc && !op->req && rw_now_ms() < deadline);
	return rc ? rc : op->req ? 0 : -ETIMEDOUT;
}

static int recv_post(struct rw_net_comm *r, int n, void **data, const size_t *sizes,
		     const int *tags, struct rw_net_mr **mrs, struct op *op)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc;

	memset(op, 0, sizeof(*op));
	do
		rc = rw_net_irecv(r, n, data, sizes, tags, mrs, &op->req);
	while (!rc && !op->req && rw_now_ms() < deadline);
	return rc ? rc : op->req ? 0 : -ETIMEDOUT;
}

static int recv1_post(struct rw_net_comm *r, struct buf *b, size_t size, int tag,
		      struct op *op)
{
	void *data = b->p;

	return recv_post(r, 1, &data, &size, &tag, &b->mr, op);
}

/* test every unfinished op until all finished; -ETIMEDOUT past limit_ms. */
static int drive(struct op *ops, int n, int64_t limit_ms)
{
	uint64_t deadline = rw_now_ms() + (uint64_t)limit_ms;
	int left = 0;

	for (int i = 0; i < n; i++)
		left += !ops[i].done;
	while (left) {
		for (int i = 0; i < n; i++) {
			int done = 0, rc;

			if (ops[i].done)
				continue;
			rc = rw_net_test(ops[i].req, &done, ops[i].sizes);
			if (rc || done) {
				ops[i].done = true;
				ops[i].rc = rc;
				left--;
			}
		}
		if (left && rw_now_ms() > deadline)
			return -ETIMEDOUT;
	}
	return 0;
}

/* --- setup ------------------------------------------------------------------ */

static int setup(void **state)
{
	(void)state;
	rw_test_log_reset();
	if (rw_test_config(&cfg, B->env) != 0 || B->create(&cfg, &net) != 0 ||
	    rw_net_get_properties(net, 0, &props) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	long live;

	(void)state;
	rw_net_destroy(net);
	net = NULL;
	live = B->live_objects();
	if (live)
		fail_msg("%s: %ld objects still alive after destroy", B->name, live);
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

static void one_message(struct pair *pr, size_t size, int tag)
{
	struct buf sb, rb;
	struct op ops[2];

	assert_int_equal(buf_get(pr->s, &sb, size), 0);
	assert_int_equal(buf_get(pr->r, &rb, size), 0);
	rw_test_fill(sb.p, size, size + 1);
	assert_int_equal(recv1_post(pr->r, &rb, size, tag, &ops[1]), 0);
	assert_int_equal(send_post(pr->s, sb.p, size, tag, sb.mr, &ops[0]), 0);
	assert_int_equal(drive(ops, 2, WAIT_MS), 0);
	assert_int_equal(ops[0].rc, 0);
	assert_int_equal(ops[1].rc, 0);
	assert_int_equal(ops[1].sizes[0], size);
	assert_memory_equal(sb.p, rb.p, size);
	buf_put(pr->s, &sb);
	buf_put(pr->r, &rb);
}

static void pair_close(struct pair *pr)
{
	assert_int_equal(rw_net_close_send(pr->s), 0);
	assert_int_equal(rw_net_close_recv(pr->r), 0);
}

/* --- cases ------------------------------------------------------------------ */

static void devices_and_properties(void **state)
{
	int ndev = -1;

	(void)state;
	assert_int_equal(rw_net_devices(net, &ndev), 0);
	assert_true(ndev >= 1);
	for (int d = 0; d < ndev; d++) {
		struct rw_net_props p;

		memset(&p, 0xa5, sizeof(p)); /* NCCL passes garbage */
		assert_int_equal(rw_net_get_properties(net, d, &p), 0);
		assert_non_null(p.name);
		assert_true(strlen(p.name) > 0);
		assert_true(p.ptr_support & RW_PTR_HOST);
		assert_true(p.speed_mbps > 0);
		assert_true(p.max_comms > 0);
		assert_in_range(p.max_recvs, 1, RW_NET_MAX_RECVS);
		assert_int_equal(p.vdev_ndevs, 1);
		assert_int_equal(p.vdev_devs[0], d);
		assert_true(p.max_p2p_bytes > 0 && p.max_p2p_bytes <= (1ull << 40));
		assert_true(p.max_coll_bytes > 0 && p.max_coll_bytes <= (1ull << 40));
		assert_true(p.max_multi_request_size >= 1);
		assert_true(p.latency_us >= 0);
		assert_true(p.rail_id == RW_NET_ID_UNDEF || p.rail_id >= 0);
		assert_true(p.plane_id == RW_NET_ID_UNDEF || p.plane_id >= 0);
		for (int e = 0; e < d; e++) {
			struct rw_net_props q;

			assert_int_equal(rw_net_get_properties(net, e, &q), 0);
			assert_string_not_equal(p.name, q.name);
		}
	}
	rw_test_log_expect(""); /* bad device numbers may be logged */
	assert_int_equal(rw_net_get_properties(net, ndev, &props), -EINVAL);
	assert_int_equal(rw_net_get_properties(net, -1, &props), -EINVAL);
}

/* Each call of the connection set-up returns at once. */
static void timed_connect(const void *handle, struct rw_net_comm **s)
{
	uint64_t t0 = rw_now_ms();

	assert_int_equal(rw_net_connect(net, 0, handle, s), 0);
	assert_true(rw_now_ms() - t0 < CALL_MS);
}

static void timed_accept(struct rw_net_listen *l, struct rw_net_comm **r)
{
	uint64_t t0 = rw_now_ms();

	assert_int_equal(rw_net_accept(l, r), 0);
	assert_true(rw_now_ms() - t0 < CALL_MS);
}

static void accept_polled_before_connect(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l = NULL;
	struct pair pr = { 0 };
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	(void)state;
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	assert_non_null(l);
	for (int i = 0; i < 5; i++) {
		timed_accept(l, &pr.r);
		assert_null(pr.r); /* nobody there yet: NULL, not a wait */
	}
	while (!pr.s || !pr.r) {
		if (!pr.s)
			timed_connect(handle, &pr.s);
		if (!pr.r)
			timed_accept(l, &pr.r);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
	one_message(&pr, 100, 3);
	pair_close(&pr);
}

static void connect_polled_before_accept(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l = NULL;
	struct pair pr = { 0 };
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	(void)state;
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	/* The connect may finish on its own or wait for accept; either way
	 * every call returns at once. */
	for (int i = 0; i < 20 && !pr.s; i++) {
		timed_connect(handle, &pr.s);
		usleep(1000);
	}
	while (!pr.s || !pr.r) {
		if (!pr.r)
			timed_accept(l, &pr.r);
		if (!pr.s)
			timed_connect(handle, &pr.s);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
	one_message(&pr, 5000, 0);
	pair_close(&pr);
}

static void listener_closed_unused(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l[3];

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_int_equal(rw_net_listen(net, 0, handle, &l[i]), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rw_net_close_listen(l[i]), 0);
}

static void small_zero_and_larger_buffer(void **state)
{
	struct pair pr;
	struct buf sb, rb;
	struct op ops[2];
	void *flush_req = NULL;
	int fsize = 0;

	(void)state;
	assert_int_equal(pair_open(net, &pr), 0);
	one_message(&pr, 8, 1);
	one_message(&pr, 1, 1);

	/* zero bytes, into an empty and into a non-empty buffer */
	assert_int_equal(buf_get(pr.s, &sb, 8192), 0);
	assert_int_equal(buf_get(pr.r, &rb, 8192), 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(recv1_post(pr.r, &rb, k ? 16 : 0, 2, &ops[1]), 0);
		assert_int_equal(send_post(pr.s, sb.p, 0, 2, sb.mr, &ops[0]), 0);
		assert_int_equal(drive(ops, 2, WAIT_MS), 0);
		assert_int_equal(ops[0].rc, 0);
		assert_int_equal(ops[1].rc, 0);
		assert_int_equal(ops[1].sizes[0], 0);
	}

	/* 1000 bytes into 8192: the real size is reported, nothing beyond
	 * it is written */
	rw_test_fill(sb.p, 1000, 77);
	memset(rb.p, 0x5c, rb.len);
	assert_int_equal(recv1_post(pr.r, &rb, rb.len, 4, &ops[1]), 0);
	assert_int_equal(send_post(pr.s, sb.p, 1000, 4, sb.mr, &ops[0]), 0);
	assert_int_equal(drive(ops, 2, WAIT_MS), 0);
	assert_int_equal(ops[0].rc, 0);
	assert_int_equal(ops[1].rc, 0);
	assert_int_equal(ops[1].sizes[0], 1000);
	assert_memory_equal(sb.p, rb.p, 1000);
	for (size_t i = 1000; i < rb.len; i++)
		assert_int_equal((unsigned char)rb.p[i], 0x5c);

	/* host memory needs no flush: done at once or a request that ends */
	assert_int_equal(rw_net_iflush(pr.r, 1, (void **)&rb.p, &fsize, &rb.mr,
				       (struct rw_net_req **)&flush_req), 0);
	if (flush_req) {
		struct op f = { .req = flush_req };

		assert_int_equal(drive(&f, 1, WAIT_MS), 0);
		assert_int_equal(f.rc, 0);
	}
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/*
 * After the receiver refused a message, the sender learns it too: the send
 * itself fails, or (when its bytes were all out before the news came) the
 * next calls on the send comm do.  Returns the error the sender saw.
 */
static int sender_error(struct pair *pr, struct buf *sb, const struct op *send)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	if (send->rc)
		return send->rc;
	while (rw_now_ms() < deadline) {
		struct op op = { 0 };
		int rc = rw_net_isend(pr->s, sb->p, 1, 0, sb->mr, &op.req);

		if (rc)
			return rc;
		if (op.req) {
			if (drive(&op, 1, WAIT_MS))
				return -ETIMEDOUT;
			if (op.rc)
				return op.rc;
		}
		usleep(1000);
	}
	return 0;
}

/* A message larger than the posted buffer fails on both sides, naming the
 * peer, and nothing past the buffer is written. */
static void truncation_fails_both_sides(void **state)
{
	const size_t sizes[][2] = {
		{ 2000, 1000 },                            /* small */
		{ 4 * MIB + 123, 1 * MIB },                /* striped */
		{ cfg.socket_min_stripe, cfg.socket_min_stripe - 1 },
	};

	(void)state;
	rw_test_log_expect(B->peer_hint);
	for (size_t k = 0; k < RW_ARRAY_SIZE(sizes); k++) {
		struct pair pr;
		struct buf sb, rb;
		struct op ops[2];
		int before = rw_test_log_count(B->peer_hint);

		assert_int_equal(pair_open(net, &pr), 0);
		assert_int_equal(buf_get(pr.s, &sb, 5 * MIB), 0);
		assert_int_equal(buf_get(pr.r, &rb, 5 * MIB), 0);
		memset(rb.p, 0x33, rb.len);
		assert_int_equal(recv1_post(pr.r, &rb, sizes[k][1], 9, &ops[1]), 0);
		assert_int_equal(send_post(pr.s, sb.p, sizes[k][0], 9, sb.mr, &ops[0]), 0);
		assert_int_equal(drive(ops, 2, WAIT_MS), 0);
		assert_int_equal(ops[1].rc, -EMSGSIZE);
		assert_int_equal(sender_error(&pr, &sb, &ops[0]), -EMSGSIZE);
		for (size_t i = sizes[k][1]; i < rb.len; i++)
			if ((unsigned char)rb.p[i] != 0x33)
				fail_msg("byte %zu past the %zu-byte buffer was written", i,
					 sizes[k][1]);
		/* both sides said so, naming the peer */
		assert_true(rw_test_log_count(B->peer_hint) >= before + 2);
		buf_put(pr.s, &sb);
		buf_put(pr.r, &rb);
		pair_close(&pr);
	}
}

/* Grouped receives: the tag picks the buffer; groups match in order. */
static void tags_and_grouped_receives(void **state)
{
	const int n = props.max_recvs;
	const size_t big = cfg.socket_min_stripe * 2 + 123;
	struct pair pr;
	struct buf sb, rb;
	void *data[RW_NET_MAX_RECVS];
	size_t sizes[RW_NET_MAX_RECVS], len[RW_NET_MAX_RECVS];
	int tags[RW_NET_MAX_RECVS];
	struct rw_net_mr *mrs[RW_NET_MAX_RECVS];
	struct op ops[2 * RW_NET_MAX_RECVS + 2];

	(void)state;
	assert_int_equal(pair_open(net, &pr), 0);
	assert_int_equal(buf_get(pr.s, &sb, RW_NET_MAX_RECVS * big), 0);
	assert_int_equal(buf_get(pr.r, &rb, RW_NET_MAX_RECVS * big), 0);
	rw_test_fill(sb.p, sb.len, 5);
	for (int round = 0; round < 2; round++) {
		/* round 0: small messages; round 1: one of them striped */
		for (int i = 0; i < n; i++) {
			data[i] = rb.p + (size_t)i * big;
			sizes[i] = big;
			tags[i] = 100 + 7 * i;
			mrs[i] = rb.mr;
			len[i] = round && i == n / 2 ? big : 10 + 1000 * (size_t)i;
		}
		memset(rb.p, 0, rb.len);
		assert_int_equal(recv_post(pr.r, n, data, sizes, tags, mrs, &ops[0]), 0);
		/* send in reverse tag order: each lands in its tag's buffer */
		for (int k = 0; k < n; k++) {
			int i = n - 1 - k;

			assert_int_equal(send_post(pr.s, sb.p + (size_t)i * big, len[i],
						   tags[i], sb.mr, &ops[1 + k]), 0);
		}
		assert_int_equal(drive(ops, n + 1, WAIT_MS), 0);
		for (int k = 0; k <= n; k++)
			assert_int_equal(ops[k].rc, 0);
		for (int i = 0; i < n; i++) {
			assert_int_equal(ops[0].sizes[i], len[i]);
			assert_memory_equal(rb.p + (size_t)i * big, sb.p + (size_t)i * big, len[i]);
		}
	}

	/* two receives with the same tag take the sends in posting order */
	for (int k = 0; k < 2; k++)
		assert_int_equal(recv1_post(pr.r, &rb, 64, 5, &ops[k]), 0);
	/* (both into rb: compare sizes only) */
	assert_int_equal(send_post(pr.s, sb.p, 11, 5, sb.mr, &ops[2]), 0);
	assert_int_equal(send_post(pr.s, sb.p, 22, 5, sb.mr, &ops[3]), 0);
	assert_int_equal(drive(ops, 4, WAIT_MS), 0);
	for (int k = 0; k < 4; k++)
		assert_int_equal(ops[k].rc, 0);
	assert_int_equal(ops[0].sizes[0], 11);
	assert_int_equal(ops[1].sizes[0], 22);
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/* A send whose tag no posted buffer takes fails on both sides. */
static void unmatched_tag_fails_both_sides(void **state)
{
	struct pair pr;
	struct buf sb, rb;
	struct op ops[2];

	(void)state;
	rw_test_log_expect(B->peer_hint);
	assert_int_equal(pair_open(net, &pr), 0);
	assert_int_equal(buf_get(pr.s, &sb, 64), 0);
	assert_int_equal(buf_get(pr.r, &rb, 64), 0);
	assert_int_equal(recv1_post(pr.r, &rb, 64, 5, &ops[1]), 0);
	assert_int_equal(send_post(pr.s, sb.p, 64, 6, sb.mr, &ops[0]), 0);
	assert_int_equal(drive(ops, 2, WAIT_MS), 0);
	assert_true(ops[1].rc < 0);
	assert_true(sender_error(&pr, &sb, &ops[0]) < 0);
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/* 32 x max_recvs requests in flight per comm; beyond that "no room". */
static void many_requests_in_flight(void **state)
{
	const int max = RW_NET_MAX_REQUESTS * props.max_recvs;
	const size_t sz = 64;
	struct pair pr;
	struct buf sb, rb;
	struct op *ops = calloc((size_t)max * 2, sizeof(*ops));
	struct rw_net_req *extra = (void *)0x1;
	int tag = 0;
	size_t size = sz;

	(void)state;
	assert_non_null(ops);
	assert_int_equal(pair_open(net, &pr), 0);
	assert_int_equal(buf_get(pr.s, &sb, (size_t)max * sz), 0);
	assert_int_equal(buf_get(pr.r, &rb, (size_t)max * sz), 0);
	rw_test_fill(sb.p, sb.len, 42);
	memset(rb.p, 0, rb.len);
	for (int i = 0; i < max; i++) {
		void *d = rb.p + (size_t)i * sz;

		assert_int_equal(rw_net_irecv(pr.r, 1, &d, &size, &tag, &rb.mr, &ops[i].req), 0);
		if (!ops[i].req)
			fail_msg("irecv %d of %d had no room", i, max);
	}
	assert_int_equal(rw_net_irecv(pr.r, 1, (void **)&rb.p, &size, &tag, &rb.mr, &extra), 0);
	assert_null(extra);
	for (int i = 0; i < max; i++) {
		struct op *o = &ops[max + i];

		assert_int_equal(rw_net_isend(pr.s, sb.p + (size_t)i * sz, sz, tag, sb.mr, &o->req), 0);
		if (!o->req)
			fail_msg("isend %d of %d had no room", i, max);
	}
	extra = (void *)0x1;
	assert_int_equal(rw_net_isend(pr.s, sb.p, sz, tag, sb.mr, &extra), 0);
	assert_null(extra);
	assert_int_equal(drive(ops, 2 * max, WAIT_MS), 0);
	for (int i = 0; i < 2 * max; i++)
		assert_int_equal(ops[i].rc, 0);
	assert_memory_equal(sb.p, rb.p, (size_t)max * sz);
	one_message(&pr, 10, 0); /* and there is room again */
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
	free(ops);
}

/* Sizes around every boundary (header, read-ahead, pages, stripe
 * threshold) and random ones, 8 in flight, checked byte for byte. */
static void random_sizes_byte_for_byte(void **state)
{
	enum { WINDOW = 8, BATCHES = 24 };
	const size_t s = cfg.socket_min_stripe;
	const size_t fixed[] = { 0, 1, 7, 8, 15, 16, 17, 4095, 4096, 4097, 8191, 8192,
				 16383, 16384, 16385, 65536, s - 1, s, s + 1, 2 * s,
				 3 * s + 4097, 4 * MIB };
	const size_t maxsz = RW_MAX(4 * MIB, 3 * s + 4097) + 4096;
	struct pair pr;
	struct buf sb, rb;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t k = 0;

	(void)state;
	assert_int_equal(pair_open(net, &pr), 0);
	assert_int_equal(buf_get(pr.s, &sb, WINDOW * maxsz), 0);
	assert_int_equal(buf_get(pr.r, &rb, WINDOW * maxsz), 0);
	for (int b = 0; b < BATCHES; b++) {
		struct op ops[2 * WINDOW];
		size_t len[WINDOW], cap[WINDOW];

		for (int i = 0; i < WINDOW; i++, k++) {
			if (k < RW_ARRAY_SIZE(fixed)) {
				len[i] = fixed[k];
			} else {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				/* log-uniform up to 4 MiB */
				len[i] = (size_t)(x >> 40) % ((size_t)1 << (x % 23));
			}
			cap[i] = len[i] + (k % 3 == 0 ? (x >> 20) % 5000 : 0);
			cap[i] = RW_MIN(cap[i], maxsz);
			rw_test_fill(sb.p + i * maxsz, len[i], k);
			assert_int_equal(recv1_post(pr.r, &(struct buf){ rb.p + i * maxsz, 0, rb.mr },
						    cap[i], (int)k, &ops[i]), 0);
		}
		for (int i = 0; i < WINDOW; i++)
			assert_int_equal(send_post(pr.s, sb.p + i * maxsz, len[i],
						   (int)(k - WINDOW + (size_t)i), sb.mr,
						   &ops[WINDOW + i]), 0);
		assert_int_equal(drive(ops, 2 * WINDOW, WAIT_MS), 0);
		for (int i = 0; i < WINDOW; i++) {
			assert_int_equal(ops[i].rc, 0);
			assert_int_equal(ops[WINDOW + i].rc, 0);
			assert_int_equal(ops[i].sizes[0], len[i]);
			if (memcmp(sb.p + i * maxsz, rb.p + i * maxsz, len[i]))
				fail_msg("message %zu (%zu bytes) arrived corrupted",
					 k - WINDOW + (size_t)i, len[i]);
		}
	}
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/* close with requests outstanding cancels them without waiting; it also
 * drops the comm's registrations.  The other end may then report the
 * connection lost (naming its peer). */
static void timed_close(struct rw_net_comm *c, bool send)
{
	uint64_t t0 = rw_now_ms();

	assert_int_equal(send ? rw_net_close_send(c) : rw_net_close_recv(c), 0);
	assert_true(rw_now_ms() - t0 < CALL_MS);
}

static void close_with_requests_outstanding(void **state)
{
	struct pair pr;
	struct buf sb, rb;
	struct op ops[2];

	(void)state;
	rw_test_log_expect(B->peer_hint);
	/* receives nobody sends to */
	assert_int_equal(pair_open(net, &pr), 0);
	assert_int_equal(buf_get(pr.r, &rb, 64), 0);
	assert_int_equal(recv1_post(pr.r, &rb, 64, 1, &ops[0]), 0);
	assert_int_equal(recv1_post(pr.r, &rb, 64, 1, &ops[1]), 0);
	timed_close(pr.r, false);
	timed_close(pr.s, true);
	free(rb.p);

	/* a send nobody receives */
	assert_int_equal(pair_open(net, &pr), 0);
	assert_int_equal(buf_get(pr.s, &sb, 8 * MIB), 0);
	assert_int_equal(rw_net_isend(pr.s, sb.p, 8 * MIB, 1, sb.mr, &ops[0].req), 0);
	timed_close(pr.s, true);
	timed_close(pr.r, false);
	free(sb.p);

	/* a large message half way through, closed from either end first */
	for (int k = 0; k < 2; k++) {
		assert_int_equal(pair_open(net, &pr), 0);
		assert_int_equal(buf_get(pr.s, &sb, 16 * MIB), 0);
		assert_int_equal(buf_get(pr.r, &rb, 16 * MIB), 0);
		assert_int_equal(recv1_post(pr.r, &rb, 16 * MIB, 1, &ops[0]), 0);
		assert_int_equal(send_post(pr.s, sb.p, 16 * MIB, 1, sb.mr, &ops[1]), 0);
		for (int i = 0; i < 20; i++) {
			int done;

			assert_int_equal(rw_net_test(ops[0].req, &done, ops[0].sizes), 0);
			if (done)
				break;
		}
		timed_close(k ? pr.r : pr.s, !k);
		timed_close(k ? pr.s : pr.r, k);
		free(sb.p);
		free(rb.p);
	}
}

/* --- threads ---------------------------------------------------------------------- */

struct worker {
	pthread_t t;
	uint64_t seed;
	int rc;           /* 0, or what went wrong */
	const char *what;
};

#define WORKER_CHECK(w, call)                          \
	do {                                           \
		int rc_ = (call);                      \
		if (rc_) {                             \
			(w)->rc = rc_;                 \
			(w)->what = #call;             \
			goto out;                      \
		}                                      \
	} while (0)

/* One thread: its own pair, messages of random sizes, checked. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pair pr = { 0 };
	struct buf sb = { 0 }, rb = { 0 };
	uint64_t x = w->seed;

	WORKER_CHECK(w, pair_open(net, &pr));
	WORKER_CHECK(w, buf_get(pr.s, &sb, MIB));
	WORKER_CHECK(w, buf_get(pr.r, &rb, MIB));
	for (int i = 0; i < 40; i++) {
		struct op ops[2];
		size_t len;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		len = (size_t)(x >> 44) % MIB;
		rw_test_fill(sb.p, len, x);
		WORKER_CHECK(w, recv1_post(pr.r, &rb, MIB, i, &ops[1]));
		WORKER_CHECK(w, send_post(pr.s, sb.p, len, i, sb.mr, &ops[0]));
		WORKER_CHECK(w, drive(ops, 2, WAIT_MS));
		WORKER_CHECK(w, ops[0].rc);
		WORKER_CHECK(w, ops[1].rc);
		WORKER_CHECK(w, ops[1].sizes[0] == len ? 0 : -EIO);
		WORKER_CHECK(w, memcmp(sb.p, rb.p, len) ? -EIO : 0);
	}
out:
	if (sb.p)
		buf_put(pr.s, &sb);
	if (rb.p)
		buf_put(pr.r, &rb);
	if (pr.s)
		rw_net_close_send(pr.s);
	if (pr.r)
		rw_net_close_recv(pr.r);
	return NULL;
}

/* Registrations come and go on a comm while another thread moves data. */
static void *registrar_main(void *arg)
{
	struct worker *w = arg;
	struct rw_net_comm *c = (struct rw_net_comm *)(uintptr_t)w->seed;
	char scratch[256];

	for (int i = 0; i < 500; i++) {
		struct rw_net_mr *mr;

		WORKER_CHECK(w, rw_net_reg_mr(c, scratch, sizeof(scratch), RW_PTR_HOST, &mr));
		WORKER_CHECK(w, rw_net_dereg_mr(c, mr));
	}
out:
	return NULL;
}

/* Different comms from different threads at once; reg_mr racing the data
 * path of one comm (rw_net.h, "Threads"). */
static void comms_used_from_several_threads(void **state)
{
	struct worker w[4] = { 0 }, reg = { 0 };
	struct pair pr;
	struct buf sb, rb;

	(void)state;
	for (int i = 0; i < 4; i++) {
		w[i].seed = 0x1234567ull * (uint64_t)(i + 1);
		assert_int_equal(pthread_create(&w[i].t, NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(w[i].t, NULL), 0);
		if (w[i].rc)
			fail_msg("thread %d: %s gave %d", i, w[i].what, w[i].rc);
	}

	assert_int_equal(pair_open(net, &pr), 0);
	assert_int_equal(buf_get(pr.s, &sb, 4096), 0);
	assert_int_equal(buf_get(pr.r, &rb, 4096), 0);
	reg.seed = (uint64_t)(uintptr_t)pr.s;
	assert_int_equal(pthread_create(&reg.t, NULL, registrar_main, &reg), 0);
	for (int i = 0; i < 200; i++) {
		struct op ops[2];

		assert_int_equal(recv1_post(pr.r, &rb, 4096, 0, &ops[1]), 0);
		assert_int_equal(send_post(pr.s, sb.p, (size_t)i * 20, 0, sb.mr, &ops[0]), 0);
		assert_int_equal(drive(ops, 2, WAIT_MS), 0);
		assert_int_equal(ops[0].rc, 0);
		assert_int_equal(ops[1].rc, 0);
	}
	assert_int_equal(pthread_join(reg.t, NULL), 0);
	if (reg.rc)
		fail_msg("registrar: %s gave %d", reg.what, reg.rc);
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/* --- fault cases: a second process ------------------------------------------ */

struct child {
	pid_t pid;
	int to[2], from[2]; /* parent -> child, child -> parent */
	char handle[RW_NET_HANDLE_MAXSIZE];
};

#define CHILD_CHECK(cond)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "child %d: %s:%d: %s failed\n",        \
				(int)getpid(), __FILE__, __LINE__, #cond);     \
			_exit(3);                                              \
		}                                                              \
	} while (0)

static void child_start(struct child *k, void (*fn)(struct child *k))
{
	assert_int_equal(pipe(k->to), 0);
	assert_int_equal(pipe(k->from), 0);
	fflush(NULL);
	k->pid = fork();
	assert_true(k->pid >= 0);
	if (k->pid == 0) {
		close(k->to[1]);
		close(k->from[0]);
		alarm(60); /* never outlive a broken parent */
		fn(k);
		_exit(0);
	}
	close(k->to[0]);
	close(k->from[1]);
}

/* Parent: wait (bounded) for n bytes from the child. */
static void from_child(struct child *k, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd p = { .fd = k->from[0], .events = POLLIN };
		ssize_t r;

		assert_int_equal(poll(&p, 1, WAIT_MS), 1);
		r = read(k->from[0], (char *)buf + got, n - got);
		assert_true(r > 0);
		got += (size_t)r;
	}
}

static void child_reap(struct child *k, bool killed)
{
	int status = 0;

	if (killed)
		kill(k->pid, SIGKILL);
	assert_int_equal(waitpid(k->pid, &status, 0), k->pid);
	if (!killed && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		fail_msg("child exited with status 0x%x", status);
	close(k->to[1]);
	close(k->from[0]);
}

static void child_write(struct child *k, const void *buf, size_t n)
{
	CHILD_CHECK(write(k->from[1], buf, n) == (ssize_t)n);
}

static struct rw_net *child_net(void)
{
	struct rw_net *n = NULL;

	CHILD_CHECK(B->create(&cfg, &n) == 0);
	return n;
}

/* Child: connect to the parent's handle and send 1 MiB messages, 4 in
 * flight, until killed. */
static void child_sender(struct child *k)
{
	struct rw_net *n = child_net();
	struct rw_net_comm *s;
	struct buf b;
	struct op ops[4];
	uint64_t end = rw_now_ms() + 30000;

	CHILD_CHECK(wait_connect(n, k->handle, &s) == 0);
	CHILD_CHECK(buf_get(s, &b, MIB) == 0);
	for (int i = 0; i < 4; i++)
		CHILD_CHECK(send_post(s, b.p, MIB, 0, b.mr, &ops[i]) == 0);
	while (rw_now_ms() < end) {
		for (int i = 0; i < 4; i++) {
			int done = 0;

			CHILD_CHECK(rw_net_test(ops[i].req, &done, NULL) == 0);
			if (done)
				CHILD_CHECK(send_post(s, b.p, MIB, 0, b.mr, &ops[i]) == 0);
		}
	}
	_exit(0);
}

/* Child: listen, hand the handle over, receive one message, then hold
 * the connection without reading (until killed). */
static void child_receiver(struct child *k)
{
	struct rw_net *n = child_net();
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct buf b;
	struct op op;
	char c = 'r';

	CHILD_CHECK(rw_net_listen(n, 0, k->handle, &l) == 0);
	child_write(k, k->handle, sizeof(k->handle));
	CHILD_CHECK(wait_accept(l, &r) == 0);
	CHILD_CHECK(buf_get(r, &b, MIB) == 0);
	CHILD_CHECK(recv1_post(r, &b, MIB, 0, &op) == 0);
	CHILD_CHECK(drive(&op, 1, WAIT_MS) == 0 && op.rc == 0);
	child_write(k, &c, 1);
	sleep(30);
	_exit(0);
}

/* Child: connect and say so, then stay silent. */
static void child_silent_sender(struct child *k)
{
	struct rw_net *n = child_net();
	struct rw_net_comm *s;
	char c = 'c';

	CHILD_CHECK(wait_connect(n, k->handle, &s) == 0);
	child_write(k, &c, 1);
	sleep(30);
	_exit(0);
}

/* Child: accept and never receive. */
static void child_silent_receiver(struct child *k)
{
	struct rw_net *n = child_net();
	struct rw_net_listen *l;
	struct rw_net_comm *r;

	CHILD_CHECK(rw_net_listen(n, 0, k->handle, &l) == 0);
	child_write(k, k->handle, sizeof(k->handle));
	CHILD_CHECK(wait_accept(l, &r) == 0);
	sleep(30);
	_exit(0);
}

static bool connection_error(int rc)
{
	return rc == -ECONNRESET || rc == -EPIPE || rc == -ETIMEDOUT;
}

static void peer_killed_while_sending(void **state)
{
	struct child k;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct buf b;
	struct op op;
	uint64_t t0;
	int rc = 0;

	(void)state;
	rw_test_log_expect(B->peer_hint);
	assert_int_equal(rw_net_listen(net, 0, k.handle, &l), 0);
	child_start(&k, child_sender);
	assert_int_equal(wait_accept(l, &r), 0);
	assert_int_equal(rw_net_close_listen(l), 0);
	assert_int_equal(buf_get(r, &b, MIB), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(recv1_post(r, &b, MIB, 0, &op), 0);
		assert_int_equal(drive(&op, 1, WAIT_MS), 0);
		assert_int_equal(op.rc, 0);
	}
	child_reap(&k, true);
	/* What the peer had sent before it died may still arrive; then an
	 * error, within the timeout. */
	t0 = rw_now_ms();
	for (int i = 0; i < 64 && !rc; i++) {
		rc = recv1_post(r, &b, MIB, 0, &op);
		if (!rc) {
			assert_int_equal(drive(&op, 1, cfg.timeout_ms + 3000), 0);
			rc = op.rc;
		}
	}
	if (!connection_error(rc))
		fail_msg("expected a connection error, got %d", rc);
	assert_true(rw_now_ms() - t0 <= (uint64_t)cfg.timeout_ms + 2000);
	assert_true(rw_test_log_count(B->peer_hint) > 0);
	buf_put(r, &b);
	assert_int_equal(rw_net_close_recv(r), 0);
}

static void peer_killed_while_receiving(void **state)
{
	struct child k;
	struct rw_net_comm *s;
	struct buf b;
	struct op op;
	uint64_t t0;
	char c;
	int rc = 0;

	(void)state;
	rw_test_log_expect(B->peer_hint);
	child_start(&k, child_receiver);
	from_child(&k, k.handle, sizeof(k.handle));
	assert_int_equal(wait_connect(net, k.handle, &s), 0);
	assert_int_equal(buf_get(s, &b, MIB), 0);
	assert_int_equal(send_post(s, b.p, MIB, 0, b.mr, &op), 0);
	assert_int_equal(drive(&op, 1, WAIT_MS), 0);
	assert_int_equal(op.rc, 0);
	from_child(&k, &c, 1);
	child_reap(&k, true);
	t0 = rw_now_ms();
	for (int i = 0; i < 64 && !rc; i++) {
		rc = send_post(s, b.p, MIB, 0, b.mr, &op);
		if (!rc) {
			assert_int_equal(drive(&op, 1, cfg.timeout_ms + 3000), 0);
			rc = op.rc;
		}
	}
	if (!connection_error(rc))
		fail_msg("expected a connection error, got %d", rc);
	assert_true(rw_now_ms() - t0 <= (uint64_t)cfg.timeout_ms + 2000);
	assert_true(rw_test_log_count(B->peer_hint) > 0);
	buf_put(s, &b);
	assert_int_equal(rw_net_close_send(s), 0);
}

static void check_timed_out(struct op *op, uint64_t t0)
{
	uint64_t el;

	assert_int_equal(drive(op, 1, cfg.timeout_ms + 5000), 0);
	el = rw_now_ms() - t0;
	assert_int_equal(op->rc, -ETIMEDOUT);
	if (el + 100 < (uint64_t)cfg.timeout_ms || el > (uint64_t)cfg.timeout_ms + 3000)
		fail_msg("timed out after %llu ms with RINGWAY_TIMEOUT_MS=%lld",
			 (unsigned long long)el, (long long)cfg.timeout_ms);
	assert_true(rw_test_log_count(B->peer_hint) > 0);
}

static void silent_sender_times_out(void **state)
{
	struct child k;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct buf b;
	struct op op;
	char c;

	(void)state;
	rw_test_log_expect(B->peer_hint);
	assert_int_equal(rw_net_listen(net, 0, k.handle, &l), 0);
	child_start(&k, child_silent_sender);
	assert_int_equal(wait_accept(l, &r), 0);
	assert_int_equal(rw_net_close_listen(l), 0);
	from_child(&k, &c, 1);
	assert_int_equal(buf_get(r, &b, 4096), 0);
	assert_int_equal(recv1_post(r, &b, 4096, 0, &op), 0);
	check_timed_out(&op, rw_now_ms());
	child_reap(&k, true);
	buf_put(r, &b);
	assert_int_equal(rw_net_close_recv(r), 0);
}

static void silent_receiver_times_out(void **state)
{
	struct child k;
	struct rw_net_comm *s;
	struct buf b;
	struct op op;

	(void)state;
	rw_test_log_expect(B->peer_hint);
	child_start(&k, child_silent_receiver);
	from_child(&k, k.handle, sizeof(k.handle));
	assert_int_equal(wait_connect(net, k.handle, &s), 0);
	assert_int_equal(buf_get(s, &b, 64 * MIB), 0);
	assert_int_equal(send_post(s, b.p, 64 * MIB, 0, b.mr, &op), 0);
	check_timed_out(&op, rw_now_ms());
	child_reap(&k, true);
	buf_put(s, &b);
	assert_int_equal(rw_net_close_send(s), 0);
}

/* --- strangers on the listen port -------------------------------------------- */

static int raw_connect(const struct sockaddr_storage *sa)
{
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	socklen_t len = sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (const struct sockaddr *)sa, len), 0);
	return fd;
}

static void strangers_are_dropped_real_peer_accepted(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE], junk[64];
	struct sockaddr_storage sa;
	struct rw_net_listen *l;
	struct pair pr = { 0 };
	struct linger lg = { 1, 0 };
	int garbage, empty, loris, partial, reset;
	uint64_t deadline;

	(void)state;
	if (!B->handle_addr)
		skip();
	rw_test_log_expect(B->drop_warning);
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	assert_int_equal(B->handle_addr(handle, &sa), 0);

	garbage = raw_connect(&sa);        /* random bytes, then gone */
	rw_test_fill(junk, sizeof(junk), 99);
	assert_int_equal(write(garbage, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(garbage);
	empty = raw_connect(&sa);          /* connect and close */
	close(empty);
	loris = raw_connect(&sa);          /* connect and say nothing */
	partial = raw_connect(&sa);        /* a few bytes, then nothing */
	assert_int_equal(write(partial, handle, 5), 5);
	reset = raw_connect(&sa);          /* a port scanner's reset */
	setsockopt(reset, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(reset);

	for (int i = 0; i < 3; i++) {
		timed_accept(l, &pr.r);
		assert_null(pr.r);
	}
	/* the real peer gets through while strangers still hang around */
	deadline = rw_now_ms() + WAIT_MS;
	while (!pr.s || !pr.r) {
		if (!pr.s)
			timed_connect(handle, &pr.s);
		if (!pr.r)
			timed_accept(l, &pr.r);
		assert_true(rw_now_ms() < deadline);
	}
	one_message(&pr, 1000, 0);
	/* the silent ones are dropped once the timeout passes */
	deadline = rw_now_ms() + (uint64_t)cfg.timeout_ms + 3000;
	while (rw_test_log_count(B->drop_warning) < 4 && rw_now_ms() < deadline) {
		struct rw_net_comm *none = NULL;

		timed_accept(l, &none);
		assert_null(none);
		usleep(10000);
	}
	if (rw_test_log_count(B->drop_warning) < 4)
		fail_msg("%d stranger(s) dropped, expected at least 4",
			 rw_test_log_count(B->drop_warning));
	close(loris);
	close(partial);
	assert_int_equal(rw_net_close_listen(l), 0);
	pair_close(&pr);
}

/* --- misuse --------------------------------------------------------------------- */

static bool misuse(int rc)
{
	return rc == -EINVAL || rc == -EBADF;
}

static void bad_arguments(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE], bad[RW_NET_HANDLE_MAXSIZE] = { 0 };
	struct rw_net_listen *l = NULL;
	struct rw_net_comm *c = NULL;
	struct rw_net_req *req = NULL;
	struct rw_net_mr *mr = NULL;
	struct pair pr;
	struct buf sb, rb;
	int ndev, tag = 0, n;
	size_t size = 64;
	void *data;

	(void)state;
	rw_test_log_expect(""); /* every complaint is expected here */
	assert_int_equal(rw_net_devices(net, &ndev), 0);
	assert_true(misuse(rw_net_devices(net, NULL)));
	assert_true(misuse(rw_net_get_properties(net, 0, NULL)));
	assert_true(misuse(rw_net_listen(net, 0, handle, NULL)));
	assert_true(misuse(rw_net_listen(net, -1, handle, &l)));
	assert_true(misuse(rw_net_listen(net, ndev, handle, &l)));
	assert_null(l);
	assert_true(misuse(rw_net_connect(net, 0, bad, &c)));
	assert_null(c);

	assert_int_equal(pair_open(net, &pr), 0);
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	assert_true(misuse(rw_net_connect(net, ndev, handle, &c)));
	assert_true(misuse(rw_net_connect(net, 0, handle, NULL)));
	assert_true(misuse(rw_net_accept(l, NULL)));
	assert_int_equal(buf_get(pr.s, &sb, 4096), 0);
	assert_int_equal(buf_get(pr.r, &rb, 4096), 0);
	data = rb.p;
	assert_true(misuse(rw_net_reg_mr(pr.s, sb.p, 64, RW_PTR_HOST, NULL)));
	assert_true(misuse(rw_net_reg_mr(pr.s, sb.p, 64, 0x40, &mr)));
	assert_null(mr);

	assert_true(misuse(rw_net_isend(pr.s, sb.p, 8, 0, sb.mr, NULL)));
	assert_true(misuse(rw_net_isend(pr.s, NULL, 8, 0, sb.mr, &req)));
	assert_true(misuse(rw_net_isend(pr.s, sb.p, 8, 0, rb.mr, &req))); /* other comm's */
	assert_true(misuse(rw_net_isend(pr.s, sb.p, 8, 0, NULL, &req)));
	assert_true(misuse(rw_net_isend(pr.r, rb.p, 8, 0, rb.mr, &req)));   /* direction */
	assert_null(req);
	n = 0;
	assert_true(misuse(rw_net_irecv(pr.r, n, &data, &size, &tag, &rb.mr, &req)));
	n = props.max_recvs + 1;
	assert_true(misuse(rw_net_irecv(pr.r, n, &data, &size, &tag, &rb.mr, &req)));
	assert_true(misuse(rw_net_irecv(pr.r, 1, &data, &size, &tag, NULL, &req)));
	assert_true(misuse(rw_net_irecv(pr.r, 1, &data, &size, &tag, &sb.mr, &req)));
	assert_true(misuse(rw_net_irecv(pr.r, 1, &data, &size, &tag, &rb.mr, NULL)));
	assert_true(misuse(rw_net_irecv(pr.s, 1, &data, &size, &tag, &rb.mr, &req)));
	assert_null(req);
	assert_true(misuse(rw_net_iflush(pr.r, 1, &data, &n, &rb.mr, NULL)));
	assert_true(misuse(rw_net_dereg_mr(pr.s, rb.mr)));
	assert_true(misuse(rw_net_close_send(pr.r)));
	assert_true(misuse(rw_net_close_recv(pr.s)));

	one_message(&pr, 16, 0); /* the comms are still fine */
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);

	/* use after close */
	pair_close(&pr);
	assert_int_equal(rw_net_close_listen(l), 0);
	assert_true(misuse(rw_net_isend(pr.s, data, 8, 0, mr, &req)));
	assert_true(misuse(rw_net_irecv(pr.r, 1, &data, &size, &tag, &mr, &req)));
	assert_true(misuse(rw_net_reg_mr(pr.s, data, 8, RW_PTR_HOST, &mr)));
	assert_true(misuse(rw_net_close_send(pr.s)));
	assert_true(misuse(rw_net_close_recv(pr.r)));
	assert_true(misuse(rw_net_accept(l, &c)));
	assert_true(misuse(rw_net_close_listen(l)));
	assert_null(req);
	assert_null(mr);
}

int conf_run(const struct conf_backend *b)
{
#define CASE(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		CASE(devices_and_properties),
		CASE(accept_polled_before_connect),
		CASE(connect_polled_before_accept),
		CASE(listener_closed_unused),
		CASE(small_zero_and_larger_buffer),
		CASE(truncation_fails_both_sides),
		CASE(tags_and_grouped_receives),
		CASE(unmatched_tag_fails_both_sides),
		CASE(many_requests_in_flight),
		CASE(random_sizes_byte_for_byte),
		CASE(close_with_requests_outstanding),
		CASE(comms_used_from_several_threads),
		CASE(peer_killed_while_sending),
		CASE(peer_killed_while_receiving),
		CASE(silent_sender_times_out),
		CASE(silent_receiver_times_out),
		CASE(strangers_are_dropped_real_peer_accepted),
		CASE(bad_arguments),
	};
#undef CASE

	B = b;
	signal(SIGPIPE, SIG_IGN);
	rw_test_log_install();
	return _cmocka_run_group_tests(b->name, tests, RW_ARRAY_SIZE(tests), NULL, NULL);
}
