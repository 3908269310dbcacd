/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket transport: sending ahead (rw_net_ahead, sock_proto.h).  With both
 * ends set, the receiver posts nothing and a message goes out before its
 * receive is posted and lands there once it is, byte for byte, several per
 * read included, striped ones too; a message its receive cannot take fails
 * the receiver (and the connection) instead of waiting; a receive of
 * several buffers is refused; what a sender sent before it closed is all
 * read; and thousands of messages against receives posted in random bursts
 * all arrive.  Without the setting, the same send waits for its post.
 */
#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "net/test_sock_pair.h"
#include "transport/rw_net.h"
#include "transport/socket/sock.h"

#define KIB 1024
#define MIB (1024 * 1024)

static struct rw_config cfg;
static struct rw_net *net;

static int make(const char *nstreams, const char *min_stripe)
{
	rw_test_log_reset();
	return sock_net_make(&cfg, nstreams, min_stripe, &net) ? -1 : 0;
}

static int setup(void **state)
{
	(void)state;
	return make("1", "1M");
}

static int setup_striped(void **state)
{
	(void)state;
	return make("3", "4096");
}

/* Socket buffers of 4 KiB (no autotuning): bytes left unread pile up in
 * the sender's queue soon. */
static int setup_small_buffers(void **state)
{
	(void)state;
	rw_test_log_reset();
	return sock_net_make_buf(&cfg, "1", "1M", "4096", &net) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	sock_net_teardown(&net);
	return 0;
}

static void pair_ahead(struct pair *pr)
{
	pair_open(net, pr);
	assert_int_equal(rw_net_ahead(pr->s), 0);
	assert_int_equal(rw_net_ahead(pr->r), 0);
}

/* isend that must be taken on the first call. */
static struct rw_net_req *send_now(struct rw_net_comm *s, void *data, size_t len, int tag,
				   struct rw_net_mr *mr)
{
	struct rw_net_req *req = NULL;

	assert_int_equal(rw_net_isend(s, data, len, tag, mr, &req), 0);
	if (!req)
		fail_msg("isend of %zu bytes (tag %d) answered \"not now\"", len, tag);
	return req;
}

/*
 * Without the setting a send waits for its receive's post; with it, twelve
 * messages (0 bytes to 300 KiB) go out before any receive exists, and the
 * small ones are complete before it does.  Then one receive at a time,
 * each with room to spare (so that one read takes a message and the start
 * of the next ones), they fill in order, byte for byte.
 */
static void messages_go_before_their_receives(void **state)
{
	static const size_t lens[] = {8,     0, 1,	  100, 16 * KIB - 24, 16 * KIB,
				      17000, 3, 64 * KIB, 5,   300 * KIB,     24};
	enum { N = RW_ARRAY_SIZE(lens) };
	const size_t cap = 512 * KIB;
	struct rw_net_req *sreq[N], *req = NULL;
	struct pair plain, pr;
	struct buf sb, rb, pb;
	size_t off[N], at = 0, got;
	int tag = 7;

	(void)state;
	/* plain: "not now" until the post */
	pair_open(net, &plain);
	assert_int_equal(buf_get(plain.s, &pb, 64), 0);
	for (int k = 0; k < 200; k++) {
		assert_int_equal(rw_net_isend(plain.s, pb.p, 8, tag, pb.mr, &req), 0);
		assert_null(req);
	}
	buf_put(plain.s, &pb);
	pair_close(&plain);

	pair_ahead(&pr);
	for (int k = 0; k < N; k++) {
		off[k] = at;
		at += lens[k];
	}
	assert_int_equal(buf_get(pr.s, &sb, at), 0);
	assert_int_equal(buf_get(pr.r, &rb, N * cap), 0);
	rw_test_fill(sb.p, sb.len, 41);
	memset(rb.p, 0x5a, rb.len);
	for (int k = 0; k < N; k++)
		sreq[k] = send_now(pr.s, sb.p + off[k], lens[k], tag, sb.mr);
	for (int k = 0; k < 4; k++)
		assert_int_equal(finish(sreq[k], &got), 0); /* in the kernel already */
	for (int k = 0; k < N; k++) {
		void *data = rb.p + (size_t)k * cap;
		size_t size = cap;

		assert_int_equal(finish(recv_posted(pr.r, 1, &data, &size, &tag, &rb.mr), &got), 0);
		assert_int_equal(got, lens[k]);
		assert_memory_equal(data, sb.p + off[k], lens[k]);
		if (k >= 4)
			assert_int_equal(finish(sreq[k], &got), 0);
	}
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/* A message larger than the receive that takes it fails the receiver with
 * -EMSGSIZE, named; the receive before it is whole; the sender fails with
 * the connection the receiver ended; later calls fail. */
static void oversized_ahead_fails_both_ends(void **state)
{
	struct rw_net_req *s0, *s1, *r0, *r1, *req = NULL;
	struct pair pr;
	struct buf sb, rb;
	size_t small = 1000, cap = 4096, got;
	int tag = 2, rc;
	void *d0, *d1;
	uint64_t deadline;

	(void)state;
	rw_test_log_expect("sent ahead, is larger than buffer");
	rw_test_log_expect("127.0.0.1");
	pair_ahead(&pr);
	assert_int_equal(buf_get(pr.s, &sb, 8192), 0);
	assert_int_equal(buf_get(pr.r, &rb, 8192), 0);
	rw_test_fill(sb.p, sb.len, 3);
	memset(rb.p, 0x33, rb.len);
	s0 = send_now(pr.s, sb.p, cap, tag, sb.mr);
	s1 = send_now(pr.s, sb.p + cap, 2000, tag, sb.mr);
	d0 = rb.p;
	d1 = rb.p + cap;
	r0 = recv_posted(pr.r, 1, &d0, &cap, &tag, &rb.mr);
	r1 = recv_posted(pr.r, 1, &d1, &small, &tag, &rb.mr);
	assert_int_equal(finish(r0, &got), 0);
	assert_int_equal(got, cap);
	assert_memory_equal(rb.p, sb.p, cap);
	assert_int_equal(finish(r1, &got), -EMSGSIZE);
	for (size_t i = cap + small; i < rb.len; i++)
		if ((unsigned char)rb.p[i] != 0x33)
			fail_msg("byte %zu, past the receive's buffer, was written", i);
	assert_int_equal(rw_test_log_count("sent ahead, is larger than buffer"), 1);
	assert_int_equal(rw_net_irecv(pr.r, 1, &d0, &cap, &tag, &rb.mr, &req), -EMSGSIZE);
	/* the sender's bytes had left; it learns of the failure from the
	 * connection the receiver ended */
	rc = finish(s0, &got);
	assert_true(rc == 0 || rc == -ECONNRESET || rc == -EPIPE);
	rc = finish(s1, &got);
	assert_true(rc == 0 || rc == -ECONNRESET || rc == -EPIPE);
	deadline = rw_now_ms() + SOCK_PAIR_WAIT_MS;
	do {
		req = NULL;
		rc = rw_net_isend(pr.s, sb.p, 8, tag, sb.mr, &req);
		if (!rc && req) {
			rc = finish(req, &got);
			usleep(1000);
		}
		assert_true(rw_now_ms() < deadline);
	} while (!rc);
	if (rc != -ECONNRESET && rc != -EPIPE)
		fail_msg("the sender failed with %d (%s)", rc, strerror(-rc));
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/* A message sent ahead with a tag its receive does not have fails the
 * receiver -EPROTO, naming both; a receive of two buffers is refused. */
static void wrong_tag_and_grouped_receives_refused(void **state)
{
	struct rw_net_req *s0, *r0, *req = NULL;
	struct pair pr;
	struct buf sb, rb;
	size_t sizes[2] = {64, 64}, got;
	int tags[2] = {6, 7}, rc;
	void *data[2];

	(void)state;
	rw_test_log_expect("takes messages sent ahead");
	rw_test_log_expect("has tag 5, but receive #0 takes tag 6");
	rw_test_log_expect("127.0.0.1");
	pair_ahead(&pr);
	assert_int_equal(buf_get(pr.s, &sb, 64), 0);
	assert_int_equal(buf_get(pr.r, &rb, 128), 0);
	data[0] = rb.p;
	data[1] = rb.p + 64;
	assert_int_equal(rw_net_irecv(pr.r, 2, data, sizes, tags,
				      (struct rw_net_mr *[]){rb.mr, rb.mr}, &req),
			 -EINVAL);
	assert_null(req);
	s0 = send_now(pr.s, sb.p, 16, 5, sb.mr);
	r0 = recv_posted(pr.r, 1, data, sizes, tags, &rb.mr);
	assert_int_equal(finish(r0, &got), -EPROTO);
	rc = finish(s0, &got);
	assert_true(rc == 0 || rc == -ECONNRESET || rc == -EPIPE);
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/*
 * Striped messages go ahead too.  Slice 0 of 8 KiB over 3 streams is 4 KiB,
 * so a lone receive's read takes it and the start of the 300-byte messages
 * behind it, where the helpers are about to write slice 1: those bytes
 * must be out of the way first.  300 rounds, every byte checked.
 */
static void striped_messages_and_the_ones_behind_them(void **state)
{
	enum { ROUNDS = 300, BIG = 8 * KIB, SMALL = 300, CAP = 64 * KIB };
	const size_t lens[4] = {BIG, SMALL, SMALL, SMALL};
	struct rw_net_req *sreq[4];
	struct pair pr;
	struct buf sb, rb;
	size_t got;
	int tag = 1;

	(void)state;
	pair_ahead(&pr);
	assert_int_equal(buf_get(pr.s, &sb, 4 * BIG), 0);
	assert_int_equal(buf_get(pr.r, &rb, 4 * CAP), 0);
	for (int round = 0; round < ROUNDS; round++) {
		rw_test_fill(sb.p, sb.len, (uint64_t)round);
		for (int k = 0; k < 4; k++)
			sreq[k] = send_now(pr.s, sb.p + k * BIG, lens[k], tag, sb.mr);
		for (int k = 0; k < 4; k++) {
			void *data = rb.p + (size_t)k * CAP;
			size_t size = CAP;

			assert_int_equal(
				finish(recv_posted(pr.r, 1, &data, &size, &tag, &rb.mr), &got), 0);
			assert_int_equal(got, lens[k]);
			if (memcmp(data, sb.p + k * BIG, lens[k]))
				fail_msg("round %d: message %d arrived changed", round, k);
		}
		for (int k = 0; k < 4; k++)
			assert_int_equal(finish(sreq[k], &got), 0);
	}
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/*
 * The sender sends 40 messages of 64 KiB ahead, sees them all taken by the
 * kernel and closes its end before a single receive is posted: every
 * message is still read (nothing goes back to the closed socket to reset
 * the connection), and only a receive after the last fails, with the
 * peer's close.
 */
static void messages_outlive_their_senders_close(void **state)
{
	enum { N = 40, LEN = 64 * KIB };
	struct pair pr;
	struct buf sb, rb;
	size_t got, cap = LEN;
	char *want;
	int tag = 9;

	(void)state;
	rw_test_log_expect("the peer closed the connection");
	pair_ahead(&pr);
	assert_int_equal(buf_get(pr.s, &sb, N * LEN), 0);
	assert_int_equal(buf_get(pr.r, &rb, N * LEN + LEN), 0);
	rw_test_fill(sb.p, sb.len, 77);
	for (int k = 0; k < N; k++)
		assert_int_equal(finish(send_now(pr.s, sb.p + k * LEN, LEN, tag, sb.mr), &got), 0);
	buf_put(pr.s, &sb);
	assert_int_equal(rw_net_close_send(pr.s), 0);
	for (int k = 0; k <= N; k++) {
		void *data = rb.p + (size_t)k * LEN;
		int rc = finish(recv_posted(pr.r, 1, &data, &cap, &tag, &rb.mr), &got);

		if (k == N) {
			assert_int_equal(rc, -ECONNRESET);
			break;
		}
		if (rc)
			fail_msg("receive %d of %d failed: %d (%s)", k, N, rc, strerror(-rc));
		assert_int_equal(got, LEN);
	}
	want = malloc(N * LEN);
	assert_non_null(want);
	rw_test_fill(want, N * LEN, 77);
	assert_memory_equal(rb.p, want, N * LEN);
	free(want);
	buf_put(pr.r, &rb);
	assert_int_equal(rw_net_close_recv(pr.r), 0);
}

/* xorshift */
static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * Only the sender set: it sends without reading the receiver's posts, which
 * pile up unread; once they would pass the receiver's queue of posts, the
 * receiver fails the comm with -EPROTO, named, instead of writing past it
 * (ASan would show an overflow), and every later call fails.
 */
static void a_sender_ahead_against_a_posting_receiver(void **state)
{
	struct pair pr;
	struct buf sb, rb;
	int tag = 3, rc = 0, k;

	(void)state;
	rw_test_log_expect("receive posts");
	pair_open(net, &pr);
	assert_int_equal(rw_net_ahead(pr.s), 0);
	assert_int_equal(buf_get(pr.s, &sb, 64), 0);
	assert_int_equal(buf_get(pr.r, &rb, 64), 0);
	for (k = 0; k < 100000; k++) {
		struct rw_net_req *rreq = NULL;
		void *data = rb.p;
		size_t size = 64, got = 0;

		rc = rw_net_irecv(pr.r, 1, &data, &size, &tag, &rb.mr, &rreq);
		if (rc)
			break;
		assert_non_null(rreq);
		assert_int_equal(finish(send_now(pr.s, sb.p, 8, tag, sb.mr), &got), 0);
		rc = finish(rreq, &got);
		if (rc)
			break;
		assert_int_equal(got, 8);
	}
	print_message("      the receiver failed at receive %d: %s\n", k, strerror(-rc));
	assert_int_equal(rc, -EPROTO);
	assert_true(rw_test_log_count("the peer has read none of our last") > 0);
	{
		struct rw_net_req *rreq = NULL;
		void *data = rb.p;
		size_t size = 64;

		assert_int_equal(rw_net_irecv(pr.r, 1, &data, &size, &tag, &rb.mr, &rreq), -EPROTO);
	}
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

/*
 * 5000 messages of 0..4 KiB, sent as fast as they are taken (up to 512 in
 * flight), against receives posted in bursts of 1..40 with pauses of up
 * to 3 ms, every request tested in one thread: the sender runs far ahead
 * of the receiver and every byte arrives in order.
 */
static void thousands_of_messages_against_bursts_of_receives(void **state)
{
	enum { NMSG = 5000, SLOT = 4 * KIB, WIN_S = 512, WIN_R = 64 };
	static struct rw_net_req *sreq[WIN_S], *rreq[WIN_R];
	static size_t len[NMSG];
	struct pair pr;
	struct buf sb, rb;
	int tag = 4, sent = 0, posted = 0, sdone = 0, rdone = 0, burst = 0;
	uint64_t x = 0x1234567, deadline = rw_now_ms() + 4 * SOCK_PAIR_WAIT_MS, pause_until = 0;
	char want[SLOT];

	(void)state;
	pair_ahead(&pr);
	assert_int_equal(buf_get(pr.s, &sb, (size_t)WIN_S * SLOT), 0);
	assert_int_equal(buf_get(pr.r, &rb, (size_t)WIN_R * SLOT), 0);
	for (int k = 0; k < NMSG; k++)
		len[k] = rnd(&x) % (SLOT + 1);
	while (rdone < NMSG || sdone < NMSG) {
		size_t got;
		int done;

		assert_true(rw_now_ms() < deadline);
		/* sends: slot k % WIN_S is free once send k - WIN_S completed */
		while (sent < NMSG && sent - sdone < WIN_S) {
			char *p = sb.p + (size_t)(sent % WIN_S) * SLOT;
			struct rw_net_req *req = NULL;

			rw_test_fill(p, len[sent], (uint64_t)sent);
			assert_int_equal(rw_net_isend(pr.s, p, len[sent], tag, sb.mr, &req), 0);
			if (!req)
				break;
			sreq[sent % WIN_S] = req;
			sent++;
		}
		/* receives: in bursts, then a pause */
		if (!burst && rw_now_ms() >= pause_until)
			burst = 1 + (int)(rnd(&x) % 40);
		while (burst && posted < NMSG && posted - rdone < WIN_R) {
			void *data = rb.p + (size_t)(posted % WIN_R) * SLOT;
			size_t size = SLOT;

			rreq[posted % WIN_R] = recv_posted(pr.r, 1, &data, &size, &tag, &rb.mr);
			posted++;
			if (--burst == 0)
				pause_until = rw_now_ms() + rnd(&x) % 4;
		}
		for (done = 1; done && sdone < sent;) {
			done = 0;
			assert_int_equal(rw_net_test(sreq[sdone % WIN_S], &done, &got), 0);
			if (done)
				assert_int_equal(got, len[sdone++]);
		}
		for (done = 1; done && rdone < posted;) {
			done = 0;
			assert_int_equal(rw_net_test(rreq[rdone % WIN_R], &done, &got), 0);
			if (!done)
				break;
			assert_int_equal(got, len[rdone]);
			rw_test_fill(want, len[rdone], (uint64_t)rdone);
			assert_memory_equal(rb.p + (size_t)(rdone % WIN_R) * SLOT, want,
					    len[rdone]);
			rdone++;
		}
	}
	buf_put(pr.s, &sb);
	buf_put(pr.r, &rb);
	pair_close(&pr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(messages_go_before_their_receives, setup, teardown),
		cmocka_unit_test_setup_teardown(oversized_ahead_fails_both_ends, setup, teardown),
		cmocka_unit_test_setup_teardown(wrong_tag_and_grouped_receives_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(messages_outlive_their_senders_close, setup,
						teardown),
		cmocka_unit_test_setup_teardown(striped_messages_and_the_ones_behind_them,
						setup_striped, teardown),
		cmocka_unit_test_setup_teardown(a_sender_ahead_against_a_posting_receiver,
						setup_small_buffers, teardown),
		cmocka_unit_test_setup_teardown(thousands_of_messages_against_bursts_of_receives,
						setup, teardown),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
