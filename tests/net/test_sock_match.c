/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket transport: matching as NCCL's IB transport does it (sock_send.c).
 * A send is taken only when the oldest receive not yet filled has a free
 * buffer with its tag; grouped receives in every tag order, driven the way
 * NCCL's proxy drives them (one sub-connection per tag, each on its own
 * schedule, retrying when isend answers "not now"); a send larger than its
 * buffer fails on both sides; limits refused before anything moves; and a
 * second process sending 10 000 messages in random tag order into grouped
 * receives of 8, every byte checked; and dozens of sends queued on stream 0
 * behind a receiver that reads nothing for a while.
 * Usage: test_sock_match [stripe]   (stripe: 3 streams, striping from 4 KiB)
 */
#include "support/rw_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "transport/rw_net.h"
#include "transport/socket/sock.h"
#include "net/test_sock_pair.h"

#define WAIT_MS 30000
#define KIB	1024
#define MIB	(1024 * 1024)

static bool stripe;
static struct rw_config cfg;
static struct rw_net *net;

/* --- helpers (no cmocka asserts: the child uses them too) -------------------- */

static int net_make(struct rw_net **out)
{
	return sock_net_make(&cfg, stripe ? "3" : "1", stripe ? "4096" : "256K", out);
}

/* xorshift */
static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Message (k, t): receive k, tag t; its size and content follow from them. */
static size_t msg_len(uint64_t seed, int k, int t, size_t cap)
{
	uint64_t x = seed ^ ((uint64_t)k * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)t << 48) ^ 1;

	for (int i = 0; i < 3; i++)
		rnd(&x);
	return (size_t)(rnd(&x) % (cap + 1));
}

static void random_perm(int *tags, int n, uint64_t *x)
{
	for (int i = 0; i < n; i++)
		tags[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(rnd(x) % (uint64_t)(i + 1)), t = tags[i];

		tags[i] = tags[j];
		tags[j] = t;
	}
}

/* --- parent-side helpers -------------------------------------------------------- */

static int setup(void **state)
{
	(void)state;
	rw_test_log_reset();
	return net_make(&net) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	sock_net_teardown(&net);
	return 0;
}

/* --- cases --------------------------------------------------------------------- */

static void properties_are_the_truth(void **state)
{
	struct rw_net_props p;

	(void)state;
	assert_int_equal(rw_net_get_properties(net, 0, &p), 0);
	assert_int_equal(p.max_recvs, RW_NET_MAX_RECVS); /* grouped receives, matched */
	assert_true(p.max_p2p_bytes == (1ull << 40));
	assert_true(p.max_coll_bytes == (1ull << 40));
	assert_int_equal(p.max_multi_request_size, 1);
	assert_int_equal(p.reg_is_global, 0);
	assert_int_equal(p.ptr_support, RW_PTR_HOST);
	assert_true(p.latency_us == 0.0f); /* not measured: NCCL uses its default */
	assert_true(p.speed_mbps > 0);
}

/*
 * Receive #0 = {tag 8}, receive #1 = {tags 0..7}: a send with tag 0 is not
 * taken (not taken and dropped either) until receive #0 has its message;
 * then everything arrives where its tag says, byte for byte.
 */
static void send_waits_for_the_head_receive(void **state)
{
	const size_t cap = 64 * KIB;
	const int order[] = {0, 7, 3, 5, 1, 6, 2, 4};
	struct pair pr;
	struct buf sb, rb;
	void *data[8];
	size_t sizes[8], got[8], len[9];
	int tags[8], t8 = 8;
	struct rw_net_req *r0, *r1, *sreq[9] = {0};

	(void)state;
	pair_open(net, &pr);
	assert_int_equal(buf_get(pr.s, &sb, 9 * cap), 0);
	assert_int_equal(buf_get(pr.r, &rb, 9 * cap), 0);
	rw_test_fill(sb.p, sb.len, 11);
	memset(rb.p, 0, rb.len);
	for (int t = 0; t <= 8; t++)
		len[t] = 100 + (size_t)t * 7000 + (t == 3 ? 20000 : 0);
	data[0] = rb.p + 8 * cap;
	sizes[0] = cap;
	r0 = recv_posted(pr.r, 1, data, sizes, &t8, &rb.mr);
	for (int i = 0; i < 8; i++) {
		data[i] = rb.p + (size_t)i * cap;
		sizes[i] = cap;
		tags[i] = i;
	}
	r1 = recv_posted(
		pr.r, 8, data, sizes, tags,
		(struct rw_net_mr *[]){rb.mr, rb.mr, rb.mr, rb.mr, rb.mr, rb.mr, rb.mr, rb.mr});
	/* tag 0 belongs to receive #1: "not now", however often it is tried */
	for (int k = 0; k < 3000; k++) {
		int done = 1;

		assert_int_equal(rw_net_isend(pr.s, sb.p, len[0], 0, sb.mr, &sreq[0]), 0);
		assert_null(sreq[0]);
		assert_int_equal(rw_net_test(r0, &done, got), 0);
		assert_int_equal(done, 0);
		assert_int_equal(rw_net_test(r1, &done, got), 0);
		assert_int_equal(done, 0);
		if (k % 300 == 0)
			usleep(2000); /* the posts have long arrived */
	}
	sreq[8] = send_taken(pr.s, sb.p + 8 * cap, len[8], 8, sb.mr);
	assert_int_equal(finish(r0, got), 0);
	assert_int_equal(got[0], len[8]);
	assert_memory_equal(rb.p + 8 * cap, sb.p + 8 * cap, len[8]);
	for (int k = 0; k < 8; k++) {
		int t = order[k];

		sreq[t] = send_taken(pr.s, sb.p + (size_t)t * cap, len[t], t, sb.mr);
	}
	assert_int_equal(finish(r1, got), 0);
	for (int t = 0; t < 8; t++) {
		assert_int_equal(got[t], len[t]);
		assert_memory_equal(rb.p + (size_t)t * cap, sb.p + (size_t)t * cap, len[t]);
		assert_int_equal(finish(sreq[t], sizes), 0);
		assert_int_equal(sizes[0], len[t]);
	}
	assert_int_equal(finish(sreq[8], sizes), 0);
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/*
 * NCCL's pattern: n sub-connections share one comm, each sending with its
 * own tag, in order, on its own schedule; receives of n buffers (tags in
 * random order) are posted up to 8 ahead while sends race them.  For n =
 * 1..8, every message lands in its tag's buffer of its receive.
 */
static void grouped_receives_in_random_tag_orders(void **state)
{
	enum { NRECV = 24, AHEAD = 8 };
	const size_t cap = stripe ? 24 * KIB : 8 * KIB;
	uint64_t x = 0x5eed1234abcdull;
	long nulls = 0;

	(void)state;
	for (int n = 1; n <= RW_NET_MAX_RECVS; n++) {
		struct pair pr;
		struct buf sb, rb;
		struct rw_net_req *rreq[NRECV] = {0}, *sreq[RW_NET_MAX_RECVS][NRECV] = {{0}};
		int tags[NRECV][RW_NET_MAX_RECVS], next[RW_NET_MAX_RECVS] = {0};
		int posted = 0, received = 0, sent = 0;
		uint64_t deadline = rw_now_ms() + WAIT_MS;
		/* message (k, t) sits at sb/rb + (k * 8 + t) * cap */
		const size_t slot = cap;

		pair_open(net, &pr);
		assert_int_equal(buf_get(pr.s, &sb, (size_t)NRECV * 8 * slot), 0);
		assert_int_equal(buf_get(pr.r, &rb, (size_t)NRECV * 8 * slot), 0);
		rw_test_fill(sb.p, sb.len, (uint64_t)n);
		memset(rb.p, 0xee, rb.len);
		while (received < NRECV || sent < n * NRECV) {
			uint64_t a = rnd(&x) % 4;

			assert_true(rw_now_ms() < deadline);
			if (a == 0 && posted < NRECV && posted - received < AHEAD) {
				void *data[RW_NET_MAX_RECVS];
				size_t sizes[RW_NET_MAX_RECVS];
				struct rw_net_mr *mrs[RW_NET_MAX_RECVS];

				random_perm(tags[posted], n, &x);
				for (int i = 0; i < n; i++) {
					int t = tags[posted][i];

					data[i] = rb.p + ((size_t)posted * 8 + (size_t)t) * slot;
					sizes[i] = cap;
					mrs[i] = rb.mr;
				}
				rreq[posted] = recv_posted(pr.r, n, data, sizes, tags[posted], mrs);
				posted++;
			} else if (a == 1 || a == 2) {
				/* sub t tries its next message */
				int t = (int)(rnd(&x) % (uint64_t)n), k = next[t];
				size_t len;

				if (k == NRECV)
					continue;
				len = msg_len(0, k, t, cap);
				assert_int_equal(
					rw_net_isend(pr.s,
						     sb.p + ((size_t)k * 8 + (size_t)t) * slot, len,
						     t, sb.mr, &sreq[t][k]),
					0);
				if (!sreq[t][k]) {
					nulls++;
					continue;
				}
				next[t]++;
				sent++;
			} else {
				/* the proxy's progress loop: test what is in flight */
				for (int k = received; k < posted; k++) {
					size_t got[RW_NET_MAX_RECVS];
					int done = 0;

					if (!rreq[k])
						continue;
					assert_int_equal(rw_net_test(rreq[k], &done, got), 0);
					if (!done)
						break; /* they finish in order */
					for (int i = 0; i < n; i++) {
						int t = tags[k][i];
						size_t off = ((size_t)k * 8 + (size_t)t) * slot;

						assert_int_equal(got[i], msg_len(0, k, t, cap));
						if (memcmp(rb.p + off, sb.p + off, got[i]))
							fail_msg("n=%d: receive %d, tag %d: "
								 "content differs",
								 n, k, t);
					}
					rreq[k] = NULL;
					received++;
				}
				for (int t = 0; t < n; t++)
					for (int k = 0; k < next[t]; k++) {
						int done = 0;

						if (!sreq[t][k])
							continue;
						assert_int_equal(
							rw_net_test(sreq[t][k], &done, NULL), 0);
						if (done)
							sreq[t][k] = NULL;
					}
			}
		}
		for (int t = 0; t < n; t++)
			for (int k = 0; k < NRECV; k++)
				if (sreq[t][k])
					assert_int_equal(finish(sreq[t][k], NULL), 0);
		buf_put(pr.s, &sb);
		buf_put(pr.r, &rb);
		pair_close(&pr);
	}
	print_message("isend answered \"not now\" %ld times\n", nulls);
}

/* A send larger than its buffer: the send fails at its first test, the
 * receive fails too, nothing of it is written, and the comms fail for good. */
static void oversized_send_fails_both_sides(void **state)
{
	const size_t cases[][2] = {{2000, 1000}, {4 * MIB + 123, MIB}, {4097, 4096}};

	(void)state;
	rw_test_log_expect("127.0.0.1");
	for (size_t c = 0; c < RW_ARRAY_SIZE(cases); c++) {
		struct pair pr;
		struct buf sb, rb;
		struct rw_net_req *ok_r, *big_r, *ok_s, *big_s, *req = NULL;
		size_t cap = 64 * KIB, small = cases[c][1], got[1];
		int t1 = 1, t2 = 2, done = 0, before = rw_test_log_count("larger than buffer");
		void *d1, *d2;
		int rc;

		pair_open(net, &pr);
		assert_int_equal(buf_get(pr.s, &sb, 6 * MIB), 0);
		assert_int_equal(buf_get(pr.r, &rb, 6 * MIB), 0);
		rw_test_fill(sb.p, sb.len, c);
		memset(rb.p, 0x33, rb.len);
		d1 = rb.p;
		d2 = rb.p + cap;
		ok_r = recv_posted(pr.r, 1, &d1, &cap, &t1, &rb.mr);
		big_r = recv_posted(pr.r, 1, &d2, &small, &t2, &rb.mr);
		ok_s = send_taken(pr.s, sb.p, cap, 1, sb.mr);
		big_s = send_taken(pr.s, sb.p + cap, cases[c][0], 2, sb.mr);
		/* the sender's first test says so */
		assert_int_equal(rw_net_test(big_s, &done, got), -EMSGSIZE);
		/* the receive before it is whole, or fails with the comm (its
		 * slices still moving); the oversized one fails */
		rc = finish(ok_r, got);
		if (rc == 0) {
			assert_int_equal(got[0], cap);
			assert_memory_equal(rb.p, sb.p, cap);
		} else {
			assert_int_equal(rc, -EMSGSIZE);
		}
		assert_int_equal(finish(big_r, got), -EMSGSIZE);
		for (size_t i = cap; i < rb.len; i++)
			if ((unsigned char)rb.p[i] != 0x33)
				fail_msg("byte %zu was written", i);
		/* its bytes had all left: success, or the comm's error */
		rc = finish(ok_s, got);
		if (rc != 0 && rc != -EMSGSIZE)
			fail_msg("case %zu: the send before the oversized one ended with %d (%s)",
				 c, rc, strerror(-rc));
		/* both ends said so, once each */
		assert_int_equal(rw_test_log_count("larger than buffer"), before + 2);
		/* and both comms answer every later call at once */
		assert_int_equal(rw_net_isend(pr.s, sb.p, 1, 1, sb.mr, &req), -EMSGSIZE);
		assert_int_equal(rw_net_irecv(pr.r, 1, &d1, &cap, &t1, &rb.mr, &req), -EMSGSIZE);
		assert_null(req);
		buf_put(pr.s, &sb);
		buf_put(pr.r, &rb);
		pair_close(&pr);
	}
}

/* Larger than max_p2p_bytes: refused before anything moves; the comms
 * stay fine. */
static void limits_refused_before_anything_moves(void **state)
{
	struct pair pr;
	struct buf sb, rb;
	struct rw_net_req *req = NULL, *rr, *sr;
	size_t huge = ((size_t)1 << 40) + 1, cap = 100, got[1];
	int tag = 3;
	void *d;

	(void)state;
	rw_test_log_expect("max_p2p_bytes");
	pair_open(net, &pr);
	assert_int_equal(buf_get(pr.s, &sb, 4096), 0);
	assert_int_equal(buf_get(pr.r, &rb, 4096), 0);
	d = rb.p;
	/* the buffer is small: a transport that touched it would crash */
	assert_int_equal(rw_net_irecv(pr.r, 1, &d, &huge, &tag, &rb.mr, &req), -EMSGSIZE);
	assert_null(req);
	rr = recv_posted(pr.r, 1, &d, &cap, &tag, &rb.mr);
	assert_int_equal(rw_net_isend(pr.s, sb.p, huge, 3, sb.mr, &req), -EMSGSIZE);
	assert_null(req);
	assert_int_equal(rw_test_log_count("max_p2p_bytes"), 2);
	/* nothing of it went out: the receive takes the next message */
	rw_test_fill(sb.p, 77, 5);
	sr = send_taken(pr.s, sb.p, 77, 3, sb.mr);
	assert_int_equal(finish(rr, got), 0);
	assert_int_equal(got[0], 77);
	assert_memory_equal(rb.p, sb.p, 77);
	assert_int_equal(finish(sr, got), 0);
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/* --- two processes: 10 000 sends in random tag order --------------------------- */

enum { TP_N = 8, TP_RECVS = 1250, TP_AHEAD = 8, TP_STEPS = 8 };
static const size_t tp_cap = 6000;

/* Child: 8 sub-connections, each sending its 1250 messages in order, at
 * most NCCL_STEPS in flight each, picked at random; exits 0 when all were
 * sent and completed. */
static void tp_sender(const char *handle)
{
	struct rw_net *n = NULL;
	struct rw_net_comm *s = NULL;
	struct buf b;
	struct rw_net_req *fl[TP_N][TP_STEPS] = {{0}};
	int next[TP_N] = {0}, doneq[TP_N] = {0}, left = TP_N * TP_RECVS;
	uint64_t x = 0xc0ffee, deadline = rw_now_ms() + 120000;

	if (net_make(&n))
		_exit(2);
	while (!s) {
		if (rw_net_connect(n, 0, handle, &s) || rw_now_ms() > deadline)
			_exit(3);
	}
	if (buf_get(s, &b, (size_t)TP_N * TP_STEPS * tp_cap))
		_exit(4);
	while (left) {
		int t = (int)(rnd(&x) % TP_N), k = next[t];

		if (rw_now_ms() > deadline)
			_exit(5);
		/* complete the oldest in flight of sub t */
		if (doneq[t] < k) {
			int done = 0;

			if (rw_net_test(fl[t][doneq[t] % TP_STEPS], &done, NULL))
				_exit(6);
			if (done) {
				doneq[t]++;
				left--;
			}
		}
		if (k < TP_RECVS && k - doneq[t] < TP_STEPS) {
			char *p = b.p + ((size_t)t * TP_STEPS + (size_t)(k % TP_STEPS)) * tp_cap;
			size_t len = msg_len(7, k, t, tp_cap);
			struct rw_net_req *req = NULL;

			rw_test_fill(p, len, (uint64_t)k * TP_N + (uint64_t)t);
			if (rw_net_isend(s, p, len, t, b.mr, &req))
				_exit(7);
			if (req) {
				fl[t][k % TP_STEPS] = req;
				next[t]++;
			}
		}
	}
	buf_put(s, &b);
	rw_net_close_send(s);
	rw_net_destroy(n);
	_exit(0);
}

static void two_processes_10000_sends_random_tags(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l;
	struct rw_net_comm *r = NULL;
	struct buf rb;
	struct rw_net_req *rreq[TP_AHEAD] = {0};
	int tags[TP_AHEAD][TP_N], posted = 0, received = 0, status;
	uint64_t x = 0xfeed, deadline = rw_now_ms() + 120000;
	char *expect = malloc(tp_cap);
	pid_t pid;

	(void)state;
	assert_non_null(expect);
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		tp_sender(handle);
	while (!r) {
		assert_int_equal(rw_net_accept(l, &r), 0);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
	assert_int_equal(buf_get(r, &rb, (size_t)TP_AHEAD * TP_N * tp_cap), 0);
	while (received < TP_RECVS) {
		assert_true(rw_now_ms() < deadline);
		if (posted < TP_RECVS && posted - received < TP_AHEAD) {
			int w = posted % TP_AHEAD;
			void *data[TP_N];
			size_t sizes[TP_N];
			struct rw_net_mr *mrs[TP_N];

			random_perm(tags[w], TP_N, &x);
			for (int i = 0; i < TP_N; i++) {
				data[i] = rb.p + ((size_t)w * TP_N + (size_t)tags[w][i]) * tp_cap;
				sizes[i] = tp_cap;
				mrs[i] = rb.mr;
			}
			assert_int_equal(rw_net_irecv(r, TP_N, data, sizes, tags[w], mrs, &rreq[w]),
					 0);
			posted += rreq[w] != NULL;
		}
		if (received < posted) {
			int w = received % TP_AHEAD, done = 0;
			size_t got[TP_N];

			assert_int_equal(rw_net_test(rreq[w], &done, got), 0);
			if (!done)
				continue;
			for (int i = 0; i < TP_N; i++) {
				int t = tags[w][i];
				size_t len = msg_len(7, received, t, tp_cap);

				assert_int_equal(got[i], len);
				rw_test_fill(expect, len, (uint64_t)received * TP_N + (uint64_t)t);
				if (memcmp(rb.p + ((size_t)w * TP_N + (size_t)t) * tp_cap, expect,
					   len))
					fail_msg("receive %d, tag %d: content differs", received,
						 t);
			}
			received++;
		}
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	buf_put(r, &rb);
	assert_int_equal(rw_net_close_recv(r), 0);
	free(expect);
}

/*
 * A receiver that posts many receives and reads nothing for a while: the
 * kernel's buffers fill, and stream 0's queue holds a partly written
 * message and dozens behind it, which each isend's write gathers into one
 * sendmsg (an op gives one or two pieces: the gather stops in time; ASan
 * saw it write past its array).  Then everything arrives, byte for byte.
 */
static void many_sends_queued_behind_a_full_socket(void **state)
{
	enum { NMSG = 96 };
	const size_t len = 128 * KIB;
	struct rw_net_req *rreq[NMSG], *sreq[NMSG];
	struct pair pr;
	struct buf sb, rb;
	int tag = 3;
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	(void)state;
	pair_open(net, &pr);
	assert_int_equal(buf_get(pr.s, &sb, NMSG * len), 0);
	assert_int_equal(buf_get(pr.r, &rb, NMSG * len), 0);
	rw_test_fill(sb.p, sb.len, 29);
	memset(rb.p, 0, rb.len);
	for (int k = 0; k < NMSG; k++) {
		void *data = rb.p + (size_t)k * len;
		size_t size = len;

		rreq[k] = recv_posted(pr.r, 1, &data, &size, &tag, &rb.mr);
	}
	for (int k = 0; k < NMSG; k++)
		sreq[k] = send_taken(pr.s, sb.p + (size_t)k * len, len, tag, sb.mr);
	/* one thread: every pass tests what is left on both sides */
	for (int left = 2 * NMSG; left;) {
		assert_true(rw_now_ms() < deadline);
		for (int k = 0; k < NMSG; k++) {
			size_t got = 0;
			int done = 0;

			if (sreq[k]) {
				assert_int_equal(rw_net_test(sreq[k], &done, NULL), 0);
				sreq[k] = done ? NULL : sreq[k];
				left -= done;
			}
			if (rreq[k]) {
				done = 0;
				assert_int_equal(rw_net_test(rreq[k], &done, &got), 0);
				if (done)
					assert_int_equal(got, len);
				rreq[k] = done ? NULL : rreq[k];
				left -= done;
			}
		}
	}
	assert_memory_equal(rb.p, sb.p, sb.len);
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(properties_are_the_truth, setup, teardown),
		cmocka_unit_test_setup_teardown(send_waits_for_the_head_receive, setup, teardown),
		cmocka_unit_test_setup_teardown(grouped_receives_in_random_tag_orders, setup,
						teardown),
		cmocka_unit_test_setup_teardown(oversized_send_fails_both_sides, setup, teardown),
		cmocka_unit_test_setup_teardown(limits_refused_before_anything_moves, setup,
						teardown),
		cmocka_unit_test_setup_teardown(two_processes_10000_sends_random_tags, setup,
						teardown),
		cmocka_unit_test_setup_teardown(many_sends_queued_behind_a_full_socket, setup,
						teardown),
	};

	stripe = argc > 1 && strcmp(argv[1], "stripe") == 0;
	signal(SIGPIPE, SIG_IGN);
	rw_test_log_install();
	return _cmocka_run_group_tests(stripe ? "socket matching, 3 streams, stripes from 4 KiB"
					      : "socket matching, 1 stream",
				       tests, RW_ARRAY_SIZE(tests), NULL, NULL);
}
