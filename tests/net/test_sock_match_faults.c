/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket transport: a failed comm answers at once.  RINGWAY_TIMEOUT_MS is
 * 10 minutes here, so a transport that waited for it instead would run into
 * the test's (ctest) time limit.  A raw TCP peer speaks the wire protocol
 * (sock_proto.h) to check both ends byte by byte: the receiver's posts, the
 * sender's headers, the refusal of an oversized message, a lone message read
 * whole (header and payload in one call), and what each end
 * does with a peer that breaks the protocol.  Then peers that close or die
 * with a pipeline in flight: everything outstanding fails at once, and so
 * does every later call.
 */
#include "support/rw_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "transport/rw_net.h"
#include "transport/socket/sock.h"
#include "transport/socket/sock_proto.h"
#include "net/test_sock_pair.h"

#define WAIT_MS 20000
#define SOON_MS 10000 /* "at once": far below RINGWAY_TIMEOUT_MS */
#define MIB	(1024 * 1024)

static struct rw_config cfg;
static struct rw_net *net;

static int make_buf(const char *nstreams, const char *buffer)
{
	/* clang-format off */
	const char *env[] = {
		"RINGWAY_SOCKET_IFNAME", "=lo",
		"RINGWAY_SOCKET_FAMILY", "ipv4",
		"RINGWAY_TIMEOUT_MS", "600000",
		"RINGWAY_SOCKET_NSTREAMS", nstreams,
		"RINGWAY_SOCKET_MIN_STRIPE", "64K",
		"RINGWAY_SOCKET_BUFFER", buffer,
		NULL,
	};
	/* clang-format on */

	if (rw_test_config(&cfg, env))
		return -EINVAL;
	return rw_sock_create(&cfg, &net);
}

static int make(const char *nstreams)
{
	return make_buf(nstreams, "0");
}

static int setup(void **state)
{
	(void)state;
	rw_test_log_reset();
	net = NULL;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sock_net_teardown(&net);
	return 0;
}

/* --- a raw peer ----------------------------------------------------------------- */

/* Read exactly len bytes (bounded); returns what read() last said. */
static ssize_t raw_read(int fd, void *buf, size_t len)
{
	size_t got = 0;
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	while (got < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		assert_true(rw_now_ms() < deadline);
		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(fd, (char *)buf + got, len - got);
		if (n <= 0)
			return n;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static void raw_write(int fd, const void *buf, size_t len)
{
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
}

/* A one-stream connection to the listener's handle, hello written. */
static int raw_sender(const void *handle)
{
	struct rw_sock_handle h;
	struct sockaddr_storage sa;
	struct rw_sock_hello hello;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(rw_sock_handle_addr(handle, &sa), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(struct sockaddr_in)), 0);
	memcpy(&h, handle, sizeof(h));
	hello = (struct rw_sock_hello){.magic = RW_SOCK_MAGIC,
				       .version = RW_SOCK_PROTO_VERSION,
				       .stream = 0,
				       .nstreams = 1,
				       .nonce = h.nonce,
				       .conn_id = rw_now_ns()};
	raw_write(fd, &hello, sizeof(hello));
	return fd;
}

static struct rw_net_comm *accept_one(struct rw_net_listen *l)
{
	struct rw_net_comm *r = NULL;
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	while (!r) {
		assert_int_equal(rw_net_accept(l, &r), 0);
		assert_true(rw_now_ms() < deadline);
	}
	return r;
}

static struct rw_net_req *post1(struct rw_net_comm *r, void *data, size_t size, int tag,
				struct rw_net_mr *mr)
{
	struct rw_net_req *req = NULL;

	assert_int_equal(rw_net_irecv(r, 1, &data, &size, &tag, &mr, &req), 0);
	assert_non_null(req);
	return req;
}

/* test until it returns an error (bounded); asserts it never completes. */
static int fails(struct rw_net_req *req)
{
	uint64_t deadline = rw_now_ms() + SOON_MS;
	int done = 0, rc;

	do {
		rc = rw_net_test(req, &done, NULL);
		assert_int_equal(done, 0);
		assert_true(rw_now_ms() < deadline);
	} while (!rc);
	return rc;
}

/*
 * The receiver posts each receive to the sender as it is made; a header
 * that is not the next match, lies about the size or is no header fails
 * the comm (-EPROTO), a refused message fails it with -EMSGSIZE; either
 * way once logged, and every later call on it fails at once.
 */
static void receiver_posts_and_checks_each_header(void **state)
{
	const struct {
		struct rw_sock_msg_hdr h;
		int rc;
		const char *log;
	} bad[] = {
		{{RW_SOCK_MSG_MARKER, RW_SOCK_MSG_EAGER, 0, 5, 10, 1, 0},
		 -EPROTO,
		 "names buffer 0 of receive #1"},
		{{RW_SOCK_MSG_MARKER, RW_SOCK_MSG_EAGER, 0, 6, 10, 0, 0}, -EPROTO, "tags 5"},
		{{RW_SOCK_MSG_MARKER, RW_SOCK_MSG_EAGER, 0, 5, 200, 0, 0},
		 -EPROTO,
		 "for buffer 0 of receive #0 (100 bytes)"},
		/* a message announced as 1 TiB fails at once, not after the
		 * timeout (this file runs with a 10-minute RINGWAY_TIMEOUT_MS) */
		{{RW_SOCK_MSG_MARKER, RW_SOCK_MSG_STRIPED, 0, 5, 1ull << 40, 0, 0},
		 -EPROTO,
		 "for buffer 0 of receive #0 (100 bytes)"},
		{{RW_SOCK_MSG_MARKER, RW_SOCK_MSG_TRUNC, 0, 5, 200, 0, 0},
		 -EMSGSIZE,
		 "the sender refused it"},
		{{0x1234, RW_SOCK_MSG_EAGER, 0, 5, 10, 0, 0}, -EPROTO, "not a message header"},
	};
	char handle[RW_NET_HANDLE_MAXSIZE], buf[256];
	struct rw_net_listen *l;

	(void)state;
	assert_int_equal(make("1"), 0);
	rw_test_log_expect("127.0.0.1");
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	for (size_t k = 0; k < RW_ARRAY_SIZE(bad); k++) {
		int fd = raw_sender(handle), before, said;
		struct rw_net_comm *r = accept_one(l);
		struct rw_net_mr *mr;
		struct rw_net_req *q0, *q1, *q = NULL;
		struct rw_sock_post p;
		int tag = 5;
		size_t size = 100;
		void *d = buf;

		assert_int_equal(rw_net_reg_mr(r, buf, sizeof(buf), RW_PTR_HOST, &mr), 0);
		q0 = post1(r, buf, 100, 5, mr);
		q1 = post1(r, buf + 100, 100, 5, mr);
		/* the posts, as the wire format says */
		for (uint32_t i = 0; i < 2; i++) {
			assert_int_equal(raw_read(fd, &p, sizeof(p)), (ssize_t)sizeof(p));
			assert_int_equal(p.marker, RW_SOCK_MSG_MARKER);
			assert_int_equal(p.kind, RW_SOCK_MSG_POST);
			assert_int_equal(p.n, 1);
			assert_int_equal(p.seq, i);
			assert_int_equal(p.tags[0], 5);
			assert_int_equal(p.sizes[0], 100);
			assert_int_equal(p.sizes[1], 0);
		}
		before = rw_test_log_count("127.0.0.1");
		said = rw_test_log_count(bad[k].log);
		raw_write(fd, &bad[k].h, sizeof(bad[k].h));
		assert_int_equal(fails(q0), bad[k].rc);
		assert_int_equal(rw_test_log_count(bad[k].log), said + 1);
		/* the comm answers at once from now on, without a word more */
		assert_int_equal(rw_net_test(q1, &(int){0}, NULL), bad[k].rc);
		assert_int_equal(rw_net_irecv(r, 1, &d, &size, &tag, &mr, &q), bad[k].rc);
		assert_null(q);
		assert_int_equal(rw_test_log_count("127.0.0.1"), before + 1);
		/* the peer sees the end */
		assert_true(raw_read(fd, buf, 1) <= 0);
		close(fd);
		assert_int_equal(rw_net_dereg_mr(r, mr), 0);
		assert_int_equal(rw_net_close_recv(r), 0);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
}

/*
 * With one receive of one buffer posted, the receiver reads the header and
 * the payload behind it in one go, straight into the buffer: a header and
 * payload in one write, or split inside the header, arrive whole; payload
 * bytes beyond what the header announced (the rule leaves nothing else on
 * the stream) fail the comm with -EPROTO.
 */
static void receiver_reads_a_lone_message_whole(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE], buf[128], wire[sizeof(struct rw_sock_msg_hdr) + 40];
	const struct rw_sock_msg_hdr h = {RW_SOCK_MSG_MARKER, RW_SOCK_MSG_EAGER, 0, 5, 30, 0, 0};
	struct rw_net_listen *l;

	(void)state;
	assert_int_equal(make("1"), 0);
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	memcpy(wire, &h, sizeof(h));
	for (int i = 0; i < 40; i++)
		wire[sizeof(h) + (size_t)i] = (char)(i * 7 + 1);
	for (int k = 0; k < 3; k++) {
		int fd = raw_sender(handle), done = 0;
		struct rw_net_comm *r = accept_one(l);
		struct rw_net_mr *mr;
		struct rw_net_req *q;
		struct rw_sock_post p;
		size_t got = 0;
		uint64_t deadline = rw_now_ms() + WAIT_MS;

		memset(buf, 0, sizeof(buf));
		assert_int_equal(rw_net_reg_mr(r, buf, sizeof(buf), RW_PTR_HOST, &mr), 0);
		q = post1(r, buf, 100, 5, mr);
		assert_int_equal(raw_read(fd, &p, sizeof(p)), (ssize_t)sizeof(p));
		if (k == 0) {
			raw_write(fd, wire, sizeof(h) + 30);
		} else if (k == 1) {
			raw_write(fd, wire, 10);
			assert_int_equal(rw_net_test(q, &done, &got), 0);
			assert_int_equal(done, 0);
			raw_write(fd, wire + 10, sizeof(h) + 30 - 10);
		} else {
			rw_test_log_expect("more than its payload");
			raw_write(fd, wire, sizeof(h) + 40);
			assert_int_equal(fails(q), -EPROTO);
			assert_int_equal(rw_test_log_count("more than its payload"), 1);
		}
		while (k < 2 && !done) {
			assert_int_equal(rw_net_test(q, &done, &got), 0);
			assert_true(rw_now_ms() < deadline);
		}
		if (k < 2) {
			assert_int_equal(got, 30);
			assert_memory_equal(buf, wire + sizeof(h), 30);
			assert_int_equal(buf[30], 0); /* nothing past the message */
		}
		close(fd);
		assert_int_equal(rw_net_dereg_mr(r, mr), 0);
		assert_int_equal(rw_net_close_recv(r), 0);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
}

/* A raw listener, and a handle pointing at it. */
static int raw_listener(void *handle)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	struct rw_sock_handle h = {.magic = RW_SOCK_MAGIC,
				   .version = RW_SOCK_PROTO_VERSION,
				   .family = RW_SOCK_FAMILY_IPV4,
				   .nonce = 0x1234567};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	h.port = a.sin_port;
	memcpy(h.addr, &a.sin_addr, 4);
	memset(handle, 0, RW_NET_HANDLE_MAXSIZE);
	memcpy(handle, &h, sizeof(h));
	return fd;
}

/* Connect the transport to the raw listener; returns the raw end. */
static int raw_receiver(int lfd, const void *handle, struct rw_net_comm **s)
{
	struct rw_sock_hello hello;
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int fd = -1;

	*s = NULL;
	while (!*s || fd < 0) {
		struct pollfd p = {.fd = lfd, .events = POLLIN};

		if (!*s)
			assert_int_equal(rw_net_connect(net, 0, handle, s), 0);
		if (fd < 0 && poll(&p, 1, 10) == 1)
			fd = accept(lfd, NULL, NULL);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(raw_read(fd, &hello, sizeof(hello)), (ssize_t)sizeof(hello));
	assert_int_equal(hello.nstreams, 1);
	assert_true(hello.nonce == 0x1234567);
	return fd;
}

static struct rw_net_req *taken(struct rw_net_comm *s, void *data, size_t len, int tag,
				struct rw_net_mr *mr)
{
	struct rw_net_req *req = NULL;
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	while (!req) {
		assert_int_equal(rw_net_isend(s, data, len, tag, mr, &req), 0);
		assert_true(rw_now_ms() < deadline);
	}
	return req;
}

/*
 * The sender takes a message only into a posted buffer of its tag, names
 * receive and buffer in the header, refuses an oversized one with a TRUNC
 * header and ends the connection; it rejects a post out of sequence.
 */
static void sender_matches_posts_and_refuses_oversized(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE], data[256], in[256];
	struct rw_sock_post p = {.marker = RW_SOCK_MSG_MARKER,
				 .kind = RW_SOCK_MSG_POST,
				 .n = 2,
				 .seq = 0,
				 .tags = {4, 9},
				 .sizes = {100, 50}};
	struct rw_sock_msg_hdr h;
	struct rw_net_comm *s;
	struct rw_net_mr *mr;
	struct rw_net_req *req = NULL;
	int lfd, fd, done = 0;

	(void)state;
	assert_int_equal(make("1"), 0);
	rw_test_log_expect("127.0.0.1");
	lfd = raw_listener(handle);
	fd = raw_receiver(lfd, handle, &s);
	assert_int_equal(rw_net_reg_mr(s, data, sizeof(data), RW_PTR_HOST, &mr), 0);
	rw_test_fill(data, sizeof(data), 9);
	/* nothing posted: not now */
	for (int i = 0; i < 100; i++) {
		assert_int_equal(rw_net_isend(s, data, 50, 9, mr, &req), 0);
		assert_null(req);
	}
	raw_write(fd, &p, sizeof(p));
	req = taken(s, data, 50, 9, mr);
	assert_int_equal(raw_read(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	assert_int_equal(h.marker, RW_SOCK_MSG_MARKER);
	assert_int_equal(h.kind, RW_SOCK_MSG_EAGER);
	assert_int_equal(h.index, 1);
	assert_int_equal(h.tag, 9);
	assert_int_equal(h.size, 50);
	assert_int_equal(h.recv, 0);
	assert_int_equal(raw_read(fd, in, 50), 50);
	assert_memory_equal(in, data, 50);
	while (!done)
		assert_int_equal(rw_net_test(req, &done, NULL), 0);
	/* buffer 0 holds 100 bytes: 101 are refused, both ways */
	req = taken(s, data, 101, 4, mr);
	assert_int_equal(rw_net_test(req, &done, NULL), -EMSGSIZE);
	assert_int_equal(raw_read(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	assert_int_equal(h.kind, RW_SOCK_MSG_TRUNC);
	assert_int_equal(h.index, 0);
	assert_int_equal(h.size, 101);
	assert_true(raw_read(fd, in, 1) <= 0); /* and nothing after it */
	req = NULL;
	assert_int_equal(rw_net_isend(s, data, 1, 4, mr, &req), -EMSGSIZE);
	assert_null(req);
	assert_int_equal(rw_test_log_count("larger than buffer 0 (100 bytes)"), 1);
	close(fd);
	assert_int_equal(rw_net_close_send(s), 0);

	/* a post out of sequence */
	fd = raw_receiver(lfd, handle, &s);
	p.seq = 5;
	raw_write(fd, &p, sizeof(p));
	assert_int_equal(rw_net_reg_mr(s, data, sizeof(data), RW_PTR_HOST, &mr), 0);
	{
		uint64_t deadline = rw_now_ms() + SOON_MS;
		int rc;

		do {
			rc = rw_net_isend(s, data, 50, 9, mr, &req);
			assert_true(rw_now_ms() < deadline);
		} while (!rc);
		assert_int_equal(rc, -EPROTO);
	}
	assert_int_equal(rw_test_log_count("expected the post of receive #0"), 1);
	assert_int_equal(rw_net_isend(s, data, 50, 9, mr, &req), -EPROTO);
	close(fd);
	assert_int_equal(rw_net_close_send(s), 0);
	close(lfd);
}

/* --- peers that close or die mid-pipeline --------------------------------------- */

/* Drive every request until it finished; each either completed (then its
 * bytes are checked by the caller) or failed with a connection error.
 * Returns how many failed; asserts they all finished soon. */
static int drive_out(struct rw_net_req **reqs, int n, int *rcs)
{
	uint64_t deadline = rw_now_ms() + SOON_MS;
	int left = n, failed = 0;

	for (int i = 0; i < n; i++)
		rcs[i] = 1; /* pending */
	while (left) {
		assert_true(rw_now_ms() < deadline);
		for (int i = 0; i < n; i++) {
			int done = 0, rc;

			if (rcs[i] != 1)
				continue;
			rc = rw_net_test(reqs[i], &done, NULL);
			if (!rc && !done)
				continue;
			rcs[i] = rc;
			left--;
			if (rc) {
				failed++;
				if (rc != -ECONNRESET && rc != -EPIPE)
					fail_msg("request %d failed with %d", i, rc);
			}
		}
	}
	return failed;
}

static void open_pair(struct rw_net_comm **s, struct rw_net_comm **r)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l;
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	*s = *r = NULL;
	while (!*s || !*r) {
		if (!*s)
			assert_int_equal(rw_net_connect(net, 0, handle, s), 0);
		if (!*r)
			assert_int_equal(rw_net_accept(l, r), 0);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
}

/* After a comm failed: the next call on it fails, and says nothing new. */
static void later_calls_fail(struct rw_net_comm *c, bool send, char *buf, struct rw_net_mr *mr)
{
	struct rw_net_req *q = NULL;
	uint64_t deadline = rw_now_ms() + SOON_MS;
	size_t size = 64;
	int tag = 1, rc, before;
	void *d = buf;

	/* a sender learns of the peer's end when it next looks */
	do {
		rc = send ? rw_net_isend(c, buf, 64, 1, mr, &q)
			  : rw_net_irecv(c, 1, &d, &size, &tag, &mr, &q);
		assert_null(q);
		assert_true(rw_now_ms() < deadline);
	} while (!rc);
	before = rw_test_log_count("127.0.0.1");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(send ? rw_net_isend(c, buf, 64, 1, mr, &q)
				      : rw_net_irecv(c, 1, &d, &size, &tag, &mr, &q),
				 rc);
		assert_null(q);
	}
	assert_int_equal(rw_test_log_count("127.0.0.1"), before);
}

/* The sender closes with 3 of 6 receives' messages under way: every
 * receive not complete fails at once, and so does every later call. */
static void sender_closes_mid_pipeline(void **state)
{
	enum { NR = 6, NS = 3 };
	const size_t sz = 16 * MIB;
	struct rw_net_comm *s, *r;
	struct rw_net_mr *smr, *rmr;
	struct rw_net_req *rq[NR];
	char *sb = malloc(NS * sz), *rb = malloc(NR * sz);
	int rcs[NR];

	(void)state;
	assert_non_null(sb);
	assert_non_null(rb);
	assert_int_equal(make("3"), 0);
	rw_test_log_expect("127.0.0.1");
	open_pair(&s, &r);
	assert_int_equal(rw_net_reg_mr(s, sb, NS * sz, RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(r, rb, NR * sz, RW_PTR_HOST, &rmr), 0);
	rw_test_fill(sb, NS * sz, 3);
	for (int i = 0; i < NR; i++)
		rq[i] = post1(r, rb + (size_t)i * sz, sz, 1, rmr);
	for (int i = 0; i < NS; i++)
		taken(s, sb + (size_t)i * sz, sz, 1, smr); /* the close cancels them */
	assert_int_equal(rw_net_close_send(s), 0);
	drive_out(rq, NR, rcs);
	for (int i = 0; i < NR; i++) {
		if (i >= NS)
			assert_int_not_equal(rcs[i], 0); /* no message came */
		else if (rcs[i] == 0 && memcmp(rb + (size_t)i * sz, sb + (size_t)i * sz, sz))
			fail_msg("receive %d completed with the wrong bytes", i);
	}
	later_calls_fail(r, false, rb, rmr);
	assert_int_equal(rw_net_dereg_mr(r, rmr), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
	free(sb);
	free(rb);
}

/* The receiver closes with sends under way: each fails at once (or was
 * all in the kernel already), and every later isend fails. */
static void receiver_closes_mid_pipeline(void **state)
{
	enum { N = 3 };
	const size_t sz = 16 * MIB;
	struct rw_net_comm *s, *r;
	struct rw_net_mr *smr, *rmr;
	struct rw_net_req *sq[N];
	char *sb = malloc(N * sz), *rb = malloc(N * sz);
	int rcs[N];

	(void)state;
	assert_non_null(sb);
	assert_non_null(rb);
	assert_int_equal(make("3"), 0);
	rw_test_log_expect("127.0.0.1");
	open_pair(&s, &r);
	assert_int_equal(rw_net_reg_mr(s, sb, N * sz, RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(r, rb, N * sz, RW_PTR_HOST, &rmr), 0);
	for (int i = 0; i < N; i++)
		post1(r, rb + (size_t)i * sz, sz, 1, rmr); /* the close cancels them */
	for (int i = 0; i < N; i++)
		sq[i] = taken(s, sb + (size_t)i * sz, sz, 1, smr);
	assert_int_equal(rw_net_close_recv(r), 0);
	drive_out(sq, N, rcs);
	later_calls_fail(s, true, sb, smr);
	assert_int_equal(rw_net_dereg_mr(s, smr), 0);
	assert_int_equal(rw_net_close_send(s), 0);
	free(sb);
	free(rb);
}

/*
 * A sending process is killed with a message half way: the receive of it,
 * and those posted behind it, fail at once on this side.  Small socket
 * buffers make sure the message cannot be all in the kernel by then.
 */
static void sender_killed_mid_pipeline(void **state)
{
	enum { NR = 4 };
	const size_t sz = 16 * MIB;
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct rw_net_mr *rmr;
	struct rw_net_req *rq[NR];
	char *rb = malloc(NR * sz);
	int rcs[NR], pipefd[2], status;
	char c;
	pid_t pid;

	(void)state;
	assert_non_null(rb);
	assert_int_equal(make_buf("3", "128K"), 0);
	rw_test_log_expect("127.0.0.1");
	assert_int_equal(rw_net_listen(net, 0, handle, &l), 0);
	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* child: send one message, say it was taken, keep it going */
		struct rw_net *n = NULL;
		struct rw_net_comm *s = NULL;
		struct rw_net_mr *mr;
		struct rw_net_req *q = NULL;
		char *b = malloc(sz);
		uint64_t end = rw_now_ms() + 60000;
		int done = 0;

		if (!b || rw_sock_create(&cfg, &n))
			_exit(2);
		while (!s && rw_now_ms() < end)
			if (rw_net_connect(n, 0, handle, &s))
				_exit(3);
		if (!s || rw_net_reg_mr(s, b, sz, RW_PTR_HOST, &mr))
			_exit(4);
		while (!q && rw_now_ms() < end)
			if (rw_net_isend(s, b, sz, 1, mr, &q))
				_exit(5);
		if (write(pipefd[1], "t", 1) != 1)
			_exit(6);
		while (!done && rw_now_ms() < end)
			if (rw_net_test(q, &done, NULL))
				_exit(7);
		_exit(0);
	}
	close(pipefd[1]);
	r = accept_one(l);
	assert_int_equal(rw_net_close_listen(l), 0);
	assert_int_equal(rw_net_reg_mr(r, rb, NR * sz, RW_PTR_HOST, &rmr), 0);
	for (int i = 0; i < NR; i++)
		rq[i] = post1(r, rb + (size_t)i * sz, sz, 1, rmr);
	/* nothing here reads until the sender is dead */
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	close(pipefd[0]);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(drive_out(rq, NR, rcs), NR);
	later_calls_fail(r, false, rb, rmr);
	assert_int_equal(rw_net_dereg_mr(r, rmr), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
	free(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(receiver_posts_and_checks_each_header, setup,
						teardown),
		cmocka_unit_test_setup_teardown(receiver_reads_a_lone_message_whole, setup,
						teardown),
		cmocka_unit_test_setup_teardown(sender_matches_posts_and_refuses_oversized, setup,
						teardown),
		cmocka_unit_test_setup_teardown(sender_closes_mid_pipeline, setup, teardown),
		cmocka_unit_test_setup_teardown(receiver_closes_mid_pipeline, setup, teardown),
		cmocka_unit_test_setup_teardown(sender_killed_mid_pipeline, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
