/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_net conformance: the behaviour every transport owes its callers (the
 * NCCL ABI adapters and the ring engine), checked through rw_net.h alone.
 * Single-process cases drive both ends from one thread, which works because
 * no call may block.  Fault cases fork a peer process (pipes carry handles
 * and "ready" bytes; children _exit and never return into cmocka).
 */
#include "support/rw_test.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "net/net_conformance_int.h"

const struct conf_backend *conf_be;
struct rw_config conf_cfg;
struct rw_net *conf_net;
struct rw_net_props conf_props;

/* --- helpers usable in both processes (no cmocka asserts) ---------------- */

/* listen on dev 0, then poll connect and accept until both are there. */
int conf_pair_open(struct rw_net *n, struct pair *pr)
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

int conf_wait_connect(struct rw_net *n, const void *handle, struct rw_net_comm **s)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc;

	*s = NULL;
	do
		rc = rw_net_connect(n, 0, handle, s);
	while (!rc && !*s && rw_now_ms() < deadline);
	return rc ? rc : *s ? 0 : -ETIMEDOUT;
}

int conf_wait_accept(struct rw_net_listen *l, struct rw_net_comm **r)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc;

	*r = NULL;
	do
		rc = rw_net_accept(l, r);
	while (!rc && !*r && rw_now_ms() < deadline);
	return rc ? rc : *r ? 0 : -ETIMEDOUT;
}

int conf_buf_get(struct rw_net_comm *c, struct buf *b, size_t len)
{
	b->len = len;
	b->p = malloc(len ? len : 1);
	if (!b->p)
		return -ENOMEM;
	return rw_net_reg_mr(c, b->p, len, RW_PTR_HOST, &b->mr);
}

void conf_buf_put(struct rw_net_comm *c, struct buf *b)
{
	if (b->mr)
		rw_net_dereg_mr(c, b->mr);
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* isend, retried while the transport has no room. */
int conf_send_post(struct rw_net_comm *s, void *data, size_t size, int tag, struct rw_net_mr *mr,
		   struct op *op)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc;

	memset(op, 0, sizeof(*op));
	do
		rc = rw_net_isend(s, data, size, tag, mr, &op->req);
	while (!rc && !op->req && rw_now_ms() < deadline);
	return rc ? rc : op->req ? 0 : -ETIMEDOUT;
}

int conf_recv_post(struct rw_net_comm *r, int n, void **data, const size_t *sizes, const int *tags,
		   struct rw_net_mr **mrs, struct op *op)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc;

	memset(op, 0, sizeof(*op));
	do
		rc = rw_net_irecv(r, n, data, sizes, tags, mrs, &op->req);
	while (!rc && !op->req && rw_now_ms() < deadline);
	return rc ? rc : op->req ? 0 : -ETIMEDOUT;
}

int conf_recv1_post(struct rw_net_comm *r, struct buf *b, size_t size, int tag, struct op *op)
{
	void *data = b->p;

	return conf_recv_post(r, 1, &data, &size, &tag, &b->mr, op);
}

/* test every unfinished op until all finished; -ETIMEDOUT past limit_ms. */
int conf_drive(struct op *ops, int n, int64_t limit_ms)
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

void conf_delivered(struct op *ops, const void *sent, const void *got, size_t size)
{
	assert_int_equal(conf_drive(ops, 2, WAIT_MS), 0);
	assert_int_equal(ops[0].rc, 0);
	assert_int_equal(ops[1].rc, 0);
	assert_int_equal(ops[1].sizes[0], size);
	assert_memory_equal(sent, got, size);
}

/* --- setup ------------------------------------------------------------------ */

static int setup(void **state)
{
	(void)state;
	rw_test_log_reset();
	if (rw_test_config(&conf_cfg, conf_be->env) != 0 ||
	    conf_be->create(&conf_cfg, &conf_net) != 0 ||
	    rw_net_get_properties(conf_net, 0, &conf_props) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	long live;

	(void)state;
	rw_net_destroy(conf_net);
	conf_net = NULL;
	live = conf_be->live_objects();
	if (live)
		fail_msg("%s: %ld objects still alive after destroy", conf_be->name, live);
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

void conf_one_message(struct pair *pr, size_t size, int tag)
{
	struct buf sb, rb;
	struct op ops[2];

	assert_int_equal(conf_buf_get(pr->s, &sb, size), 0);
	assert_int_equal(conf_buf_get(pr->r, &rb, size), 0);
	rw_test_fill(sb.p, size, size + 1);
	assert_int_equal(conf_recv1_post(pr->r, &rb, size, tag, &ops[1]), 0);
	assert_int_equal(conf_send_post(pr->s, sb.p, size, tag, sb.mr, &ops[0]), 0);
	conf_delivered(ops, sb.p, rb.p, size);
	conf_buf_put(pr->s, &sb);
	conf_buf_put(pr->r, &rb);
}

void conf_pair_close(struct pair *pr)
{
	assert_int_equal(rw_net_close_send(pr->s), 0);
	assert_int_equal(rw_net_close_recv(pr->r), 0);
}

/* --- cases ------------------------------------------------------------------ */

static void devices_and_properties(void **state)
{
	int ndev = -1;

	(void)state;
	assert_int_equal(rw_net_devices(conf_net, &ndev), 0);
	assert_true(ndev >= 1);
	for (int d = 0; d < ndev; d++) {
		struct rw_net_props p;

		memset(&p, 0xa5, sizeof(p)); /* NCCL passes garbage */
		assert_int_equal(rw_net_get_properties(conf_net, d, &p), 0);
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

			assert_int_equal(rw_net_get_properties(conf_net, e, &q), 0);
			assert_string_not_equal(p.name, q.name);
		}
	}
	rw_test_log_expect(""); /* bad device numbers may be logged */
	assert_int_equal(rw_net_get_properties(conf_net, ndev, &conf_props), -EINVAL);
	assert_int_equal(rw_net_get_properties(conf_net, -1, &conf_props), -EINVAL);
}

/* Each call of the connection set-up returns at once. */
void conf_timed_connect(const void *handle, struct rw_net_comm **s)
{
	uint64_t t0 = rw_now_ms();

	assert_int_equal(rw_net_connect(conf_net, 0, handle, s), 0);
	assert_true(rw_now_ms() - t0 < CALL_MS);
}

void conf_timed_accept(struct rw_net_listen *l, struct rw_net_comm **r)
{
	uint64_t t0 = rw_now_ms();

	assert_int_equal(rw_net_accept(l, r), 0);
	assert_true(rw_now_ms() - t0 < CALL_MS);
}

static void accept_polled_before_connect(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l = NULL;
	struct pair pr = {0};
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	(void)state;
	assert_int_equal(rw_net_listen(conf_net, 0, handle, &l), 0);
	assert_non_null(l);
	for (int i = 0; i < 5; i++) {
		conf_timed_accept(l, &pr.r);
		assert_null(pr.r); /* nobody there yet: NULL, not a wait */
	}
	while (!pr.s || !pr.r) {
		if (!pr.s)
			conf_timed_connect(handle, &pr.s);
		if (!pr.r)
			conf_timed_accept(l, &pr.r);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
	conf_one_message(&pr, 100, 3);
	conf_pair_close(&pr);
}

static void connect_polled_before_accept(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l = NULL;
	struct pair pr = {0};
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	(void)state;
	assert_int_equal(rw_net_listen(conf_net, 0, handle, &l), 0);
	/* The connect may finish on its own or wait for accept; either way
	 * every call returns at once. */
	for (int i = 0; i < 20 && !pr.s; i++) {
		conf_timed_connect(handle, &pr.s);
		usleep(1000);
	}
	while (!pr.s || !pr.r) {
		if (!pr.r)
			conf_timed_accept(l, &pr.r);
		if (!pr.s)
			conf_timed_connect(handle, &pr.s);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
	conf_one_message(&pr, 5000, 0);
	conf_pair_close(&pr);
}

static void listener_closed_unused(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l[3];

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_int_equal(rw_net_listen(conf_net, 0, handle, &l[i]), 0);
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
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	conf_one_message(&pr, 8, 1);
	conf_one_message(&pr, 1, 1);

	/* zero bytes, into an empty and into a non-empty buffer */
	assert_int_equal(conf_buf_get(pr.s, &sb, 8192), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, 8192), 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(conf_recv1_post(pr.r, &rb, k ? 16 : 0, 2, &ops[1]), 0);
		assert_int_equal(conf_send_post(pr.s, sb.p, 0, 2, sb.mr, &ops[0]), 0);
		assert_int_equal(conf_drive(ops, 2, WAIT_MS), 0);
		assert_int_equal(ops[0].rc, 0);
		assert_int_equal(ops[1].rc, 0);
		assert_int_equal(ops[1].sizes[0], 0);
	}

	/* 1000 bytes into 8192: the real size is reported, nothing beyond
	 * it is written */
	rw_test_fill(sb.p, 1000, 77);
	memset(rb.p, 0x5c, rb.len);
	assert_int_equal(conf_recv1_post(pr.r, &rb, rb.len, 4, &ops[1]), 0);
	assert_int_equal(conf_send_post(pr.s, sb.p, 1000, 4, sb.mr, &ops[0]), 0);
	conf_delivered(ops, sb.p, rb.p, 1000);
	for (size_t i = 1000; i < rb.len; i++)
		assert_int_equal((unsigned char)rb.p[i], 0x5c);

	/* host memory needs no flush: done at once or a request that ends */
	assert_int_equal(rw_net_iflush(pr.r, 1, (void **)&rb.p, &fsize, &rb.mr,
				       (struct rw_net_req **)&flush_req),
			 0);
	if (flush_req) {
		struct op f = {.req = flush_req};

		assert_int_equal(conf_drive(&f, 1, WAIT_MS), 0);
		assert_int_equal(f.rc, 0);
	}
	conf_buf_put(pr.s, &sb);
	conf_buf_put(pr.r, &rb);
	conf_pair_close(&pr);
}

/* A message larger than the posted buffer fails on both sides, naming the
 * peer, and nothing past the buffer is written.  The send itself fails: it
 * never reports success first (NCCL would reuse the buffer and go on). */
static void truncation_fails_both_sides(void **state)
{
	const size_t sizes[][2] = {
		{2000, 1000},		  /* small */
		{4 * MIB + 123, 1 * MIB}, /* striped */
		{conf_cfg.socket_min_stripe, conf_cfg.socket_min_stripe - 1},
	};

	(void)state;
	rw_test_log_expect(conf_be->peer_hint);
	for (size_t k = 0; k < RW_ARRAY_SIZE(sizes); k++) {
		struct pair pr;
		struct buf sb, rb;
		struct op ops[2];
		int before = rw_test_log_count(conf_be->peer_hint);

		assert_int_equal(conf_pair_open(conf_net, &pr), 0);
		assert_int_equal(conf_buf_get(pr.s, &sb, 5 * MIB), 0);
		assert_int_equal(conf_buf_get(pr.r, &rb, 5 * MIB), 0);
		memset(rb.p, 0x33, rb.len);
		assert_int_equal(conf_recv1_post(pr.r, &rb, sizes[k][1], 9, &ops[1]), 0);
		assert_int_equal(conf_send_post(pr.s, sb.p, sizes[k][0], 9, sb.mr, &ops[0]), 0);
		assert_int_equal(conf_drive(ops, 2, WAIT_MS), 0);
		assert_int_equal(ops[1].rc, -EMSGSIZE);
		assert_int_equal(ops[0].rc, -EMSGSIZE);
		for (size_t i = sizes[k][1]; i < rb.len; i++)
			if ((unsigned char)rb.p[i] != 0x33)
				fail_msg("byte %zu past the %zu-byte buffer was written", i,
					 sizes[k][1]);
		/* both sides said so, naming the peer */
		assert_true(rw_test_log_count(conf_be->peer_hint) >= before + 2);
		conf_buf_put(pr.s, &sb);
		conf_buf_put(pr.r, &rb);
		conf_pair_close(&pr);
	}
}

/* Grouped receives: the tag picks the buffer; groups match in order. */
static void tags_and_grouped_receives(void **state)
{
	const int n = conf_props.max_recvs;
	const size_t big = conf_cfg.socket_min_stripe * 2 + 123;
	struct pair pr;
	struct buf sb, rb;
	void *data[RW_NET_MAX_RECVS];
	size_t sizes[RW_NET_MAX_RECVS], len[RW_NET_MAX_RECVS];
	int tags[RW_NET_MAX_RECVS];
	struct rw_net_mr *mrs[RW_NET_MAX_RECVS];
	struct op ops[2 * RW_NET_MAX_RECVS + 2];

	(void)state;
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, RW_NET_MAX_RECVS * big), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, RW_NET_MAX_RECVS * big), 0);
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
		assert_int_equal(conf_recv_post(pr.r, n, data, sizes, tags, mrs, &ops[0]), 0);
		/* send in reverse tag order: each lands in its tag's buffer */
		for (int k = 0; k < n; k++) {
			int i = n - 1 - k;

			assert_int_equal(conf_send_post(pr.s, sb.p + (size_t)i * big, len[i],
							tags[i], sb.mr, &ops[1 + k]),
					 0);
		}
		assert_int_equal(conf_drive(ops, n + 1, WAIT_MS), 0);
		for (int k = 0; k <= n; k++)
			assert_int_equal(ops[k].rc, 0);
		for (int i = 0; i < n; i++) {
			assert_int_equal(ops[0].sizes[i], len[i]);
			assert_memory_equal(rb.p + (size_t)i * big, sb.p + (size_t)i * big, len[i]);
		}
	}

	/* two receives with the same tag take the sends in posting order */
	for (int k = 0; k < 2; k++)
		assert_int_equal(conf_recv1_post(pr.r, &rb, 64, 5, &ops[k]), 0);
	/* (both into rb: compare sizes only) */
	assert_int_equal(conf_send_post(pr.s, sb.p, 11, 5, sb.mr, &ops[2]), 0);
	assert_int_equal(conf_send_post(pr.s, sb.p, 22, 5, sb.mr, &ops[3]), 0);
	assert_int_equal(conf_drive(ops, 4, WAIT_MS), 0);
	for (int k = 0; k < 4; k++)
		assert_int_equal(ops[k].rc, 0);
	assert_int_equal(ops[0].sizes[0], 11);
	assert_int_equal(ops[1].sizes[0], 22);
	conf_buf_put(pr.s, &sb);
	conf_buf_put(pr.r, &rb);
	conf_pair_close(&pr);
}

/* 32 x max_recvs requests in flight per comm; beyond that "no room" (and
 * a send with no receive left is not taken either). */
static void many_requests_in_flight(void **state)
{
	const int max = RW_NET_MAX_REQUESTS * conf_props.max_recvs;
	const size_t sz = 64;
	struct pair pr;
	struct buf sb, rb;
	struct op *ops = calloc((size_t)max * 2, sizeof(*ops));
	struct rw_net_req *extra = (void *)0x1;
	int tag = 0;
	size_t size = sz;

	(void)state;
	assert_non_null(ops);
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, (size_t)max * sz), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, (size_t)max * sz), 0);
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
	/* every send is taken (retried while the receiver's posting is on its
	 * way: NULL means "not now"), all in flight at once */
	for (int i = 0; i < max; i++) {
		struct op *o = &ops[max + i];

		if (conf_send_post(pr.s, sb.p + (size_t)i * sz, sz, tag, sb.mr, o))
			fail_msg("isend %d of %d was never taken", i, max);
	}
	extra = (void *)0x1;
	assert_int_equal(rw_net_isend(pr.s, sb.p, sz, tag, sb.mr, &extra), 0);
	assert_null(extra);
	assert_int_equal(conf_drive(ops, 2 * max, WAIT_MS), 0);
	for (int i = 0; i < 2 * max; i++)
		assert_int_equal(ops[i].rc, 0);
	assert_memory_equal(sb.p, rb.p, (size_t)max * sz);
	conf_one_message(&pr, 10, 0); /* and there is room again */
	conf_buf_put(pr.s, &sb);
	conf_buf_put(pr.r, &rb);
	conf_pair_close(&pr);
	free(ops);
}

/* Sizes around every boundary (header, read-ahead, pages, stripe
 * threshold) and random ones, 8 in flight, checked byte for byte. */
static void random_sizes_byte_for_byte(void **state)
{
	enum { WINDOW = 8, BATCHES = 24 };
	const size_t s = conf_cfg.socket_min_stripe;
	const size_t fixed[] = {0,     1,    7,	    8,	   15,		 16,	 17,	4095,
				4096,  4097, 8191,  8192,  16383,	 16384,	 16385, 65536,
				s - 1, s,    s + 1, 2 * s, 3 * s + 4097, 4 * MIB};
	const size_t maxsz = RW_MAX(4 * MIB, 3 * s + 4097) + 4096;
	struct pair pr;
	struct buf sb, rb;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t k = 0;

	(void)state;
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, WINDOW * maxsz), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, WINDOW * maxsz), 0);
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
			assert_int_equal(conf_recv1_post(pr.r,
							 &(struct buf){rb.p + i * maxsz, 0, rb.mr},
							 cap[i], (int)k, &ops[i]),
					 0);
		}
		for (int i = 0; i < WINDOW; i++)
			assert_int_equal(conf_send_post(pr.s, sb.p + i * maxsz, len[i],
							(int)(k - WINDOW + (size_t)i), sb.mr,
							&ops[WINDOW + i]),
					 0);
		assert_int_equal(conf_drive(ops, 2 * WINDOW, WAIT_MS), 0);
		for (int i = 0; i < WINDOW; i++) {
			assert_int_equal(ops[i].rc, 0);
			assert_int_equal(ops[WINDOW + i].rc, 0);
			assert_int_equal(ops[i].sizes[0], len[i]);
			if (memcmp(sb.p + i * maxsz, rb.p + i * maxsz, len[i]))
				fail_msg("message %zu (%zu bytes) arrived corrupted",
					 k - WINDOW + (size_t)i, len[i]);
		}
	}
	conf_buf_put(pr.s, &sb);
	conf_buf_put(pr.r, &rb);
	conf_pair_close(&pr);
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
		CASE(unmatched_tag_is_never_taken),
		CASE(send_before_receive_waits),
		CASE(tag_of_a_later_receive_waits),
		CASE(grouped_random_tag_orders),
		CASE(grouped_random_tag_orders_two_processes),
		CASE(failed_comm_answers_at_once),
		CASE(oversize_refused_before_anything_moves),
		CASE(peer_close_fails_outstanding_requests),
		CASE(patient_receive_outlasts_the_timeout),
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

	conf_be = b;
	signal(SIGPIPE, SIG_IGN);
	rw_test_log_install();
	return _cmocka_run_group_tests(b->name, tests, RW_ARRAY_SIZE(tests), NULL, NULL);
}
