/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_net conformance, the harder cases: closing with requests outstanding;
 * comms used from several threads; a forked peer process killed or gone
 * silent (pipes carry handles and "ready" bytes; children _exit and never
 * return into cmocka); strangers on the listen port; misuse and bad
 * arguments.  conf_run() in net_conformance.c lists them.
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
#include "net/net_conformance_int.h"

/* --- closing with work outstanding ------------------------------------------ */

/* close with requests outstanding cancels them without waiting; it also
 * drops the comm's registrations.  The other end may then report the
 * connection lost (naming its peer). */
static void timed_close(struct rw_net_comm *c, bool send)
{
	uint64_t t0 = rw_now_ms();

	assert_int_equal(send ? rw_net_close_send(c) : rw_net_close_recv(c), 0);
	assert_true(rw_now_ms() - t0 < CALL_MS);
}

void close_with_requests_outstanding(void **state)
{
	struct pair pr;
	struct buf sb, rb;
	struct op ops[2];

	(void)state;
	rw_test_log_expect(conf_be->peer_hint);
	/* receives nobody sends to */
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, 64), 0);
	assert_int_equal(conf_recv1_post(pr.r, &rb, 64, 1, &ops[0]), 0);
	assert_int_equal(conf_recv1_post(pr.r, &rb, 64, 1, &ops[1]), 0);
	timed_close(pr.r, false);
	timed_close(pr.s, true);
	free(rb.p);

	/* a send nobody receives */
	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, 8 * MIB), 0);
	assert_int_equal(rw_net_isend(pr.s, sb.p, 8 * MIB, 1, sb.mr, &ops[0].req), 0);
	timed_close(pr.s, true);
	timed_close(pr.r, false);
	free(sb.p);

	/* a large message half way through, closed from either end first */
	for (int k = 0; k < 2; k++) {
		assert_int_equal(conf_pair_open(conf_net, &pr), 0);
		assert_int_equal(conf_buf_get(pr.s, &sb, 16 * MIB), 0);
		assert_int_equal(conf_buf_get(pr.r, &rb, 16 * MIB), 0);
		assert_int_equal(conf_recv1_post(pr.r, &rb, 16 * MIB, 1, &ops[0]), 0);
		assert_int_equal(conf_send_post(pr.s, sb.p, 16 * MIB, 1, sb.mr, &ops[1]), 0);
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
	int rc; /* 0, or what went wrong */
	const char *what;
};

#define WORKER_CHECK(w, call)                                                                      \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_) {                                                                         \
			(w)->rc = rc_;                                                             \
			(w)->what = #call;                                                         \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

/* One thread: its own pair, messages of random sizes, checked. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pair pr = {0};
	struct buf sb = {0}, rb = {0};
	uint64_t x = w->seed;

	WORKER_CHECK(w, conf_pair_open(conf_net, &pr));
	WORKER_CHECK(w, conf_buf_get(pr.s, &sb, MIB));
	WORKER_CHECK(w, conf_buf_get(pr.r, &rb, MIB));
	for (int i = 0; i < 40; i++) {
		struct op ops[2];
		size_t len;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		len = (size_t)(x >> 44) % MIB;
		rw_test_fill(sb.p, len, x);
		WORKER_CHECK(w, conf_recv1_post(pr.r, &rb, MIB, i, &ops[1]));
		WORKER_CHECK(w, conf_send_post(pr.s, sb.p, len, i, sb.mr, &ops[0]));
		WORKER_CHECK(w, conf_drive(ops, 2, WAIT_MS));
		WORKER_CHECK(w, ops[0].rc);
		WORKER_CHECK(w, ops[1].rc);
		WORKER_CHECK(w, ops[1].sizes[0] == len ? 0 : -EIO);
		WORKER_CHECK(w, memcmp(sb.p, rb.p, len) ? -EIO : 0);
	}
out:
	if (sb.p)
		conf_buf_put(pr.s, &sb);
	if (rb.p)
		conf_buf_put(pr.r, &rb);
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
void comms_used_from_several_threads(void **state)
{
	struct worker w[4] = {0}, reg = {0};
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

	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(conf_buf_get(pr.s, &sb, 4096), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, 4096), 0);
	reg.seed = (uint64_t)(uintptr_t)pr.s;
	assert_int_equal(pthread_create(&reg.t, NULL, registrar_main, &reg), 0);
	for (int i = 0; i < 200; i++) {
		struct op ops[2];

		assert_int_equal(conf_recv1_post(pr.r, &rb, 4096, 0, &ops[1]), 0);
		assert_int_equal(conf_send_post(pr.s, sb.p, (size_t)i * 20, 0, sb.mr, &ops[0]), 0);
		assert_int_equal(conf_drive(ops, 2, WAIT_MS), 0);
		assert_int_equal(ops[0].rc, 0);
		assert_int_equal(ops[1].rc, 0);
	}
	assert_int_equal(pthread_join(reg.t, NULL), 0);
	if (reg.rc)
		fail_msg("registrar: %s gave %d", reg.what, reg.rc);
	conf_buf_put(pr.s, &sb);
	conf_buf_put(pr.r, &rb);
	conf_pair_close(&pr);
}

/* --- fault cases: a second process ------------------------------------------ */

void child_start(struct child *k, void (*fn)(struct child *k))
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
void from_child(struct child *k, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd p = {.fd = k->from[0], .events = POLLIN};
		ssize_t r;

		assert_int_equal(poll(&p, 1, WAIT_MS), 1);
		r = read(k->from[0], (char *)buf + got, n - got);
		assert_true(r > 0);
		got += (size_t)r;
	}
}

void child_reap(struct child *k, bool killed)
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

void child_write(struct child *k, const void *buf, size_t n)
{
	CHILD_CHECK(write(k->from[1], buf, n) == (ssize_t)n);
}

struct rw_net *conf_net_timeout(int64_t timeout_ms)
{
	struct rw_config cfg = conf_cfg;
	struct rw_net *n = NULL;

	cfg.timeout_ms = timeout_ms;
	return conf_be->create(&cfg, &n) == 0 ? n : NULL;
}

struct rw_net *child_net(void)
{
	struct rw_net *n = conf_net_timeout(conf_cfg.timeout_ms);

	CHILD_CHECK(n != NULL);
	return n;
}

/* Child: connect to the parent's handle and send 1 MiB messages, 4 in
 * flight, until killed.  Its third send waits for a receive the parent
 * never posts, so its own timeout is long: with the test's 2 s it failed
 * once on a loaded host before the parent's second receive had its data
 * (the child gone, that receive saw a reset instead of a message). */
static void child_sender(struct child *k)
{
	struct rw_net *n = conf_net_timeout(60000);
	struct rw_net_comm *s;
	struct buf b;
	struct op ops[4];
	uint64_t end = rw_now_ms() + 30000;

	CHILD_CHECK(n != NULL);
	CHILD_CHECK(conf_wait_connect(n, k->handle, &s) == 0);
	CHILD_CHECK(conf_buf_get(s, &b, MIB) == 0);
	for (int i = 0; i < 4; i++)
		CHILD_CHECK(conf_send_post(s, b.p, MIB, 0, b.mr, &ops[i]) == 0);
	while (rw_now_ms() < end) {
		for (int i = 0; i < 4; i++) {
			int done = 0;

			CHILD_CHECK(rw_net_test(ops[i].req, &done, NULL) == 0);
			if (done)
				CHILD_CHECK(conf_send_post(s, b.p, MIB, 0, b.mr, &ops[i]) == 0);
		}
	}
	_exit(0);
}

/* Child: listen, hand the handle over, receive one message, then hold
 * the connection without reading (until killed). */
static void child_receiver(struct child *k)
{
	/* its receive waits on the parent's send: a long clock, as the
	 * sender child's, so a delayed parent is not a failure */
	struct rw_net *n = conf_net_timeout(60000);
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct buf b;
	struct op op;
	char c = 'r';

	CHILD_CHECK(n != NULL);
	CHILD_CHECK(rw_net_listen(n, 0, k->handle, &l) == 0);
	child_write(k, k->handle, sizeof(k->handle));
	CHILD_CHECK(conf_wait_accept(l, &r) == 0);
	CHILD_CHECK(conf_buf_get(r, &b, MIB) == 0);
	CHILD_CHECK(conf_recv1_post(r, &b, MIB, 0, &op) == 0);
	child_write(k, "p", 1); /* posted: the sender's clock may start */
	CHILD_CHECK(conf_drive(&op, 1, WAIT_MS) == 0 && op.rc == 0);
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

	CHILD_CHECK(conf_wait_connect(n, k->handle, &s) == 0);
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
	CHILD_CHECK(conf_wait_accept(l, &r) == 0);
	sleep(30);
	_exit(0);
}

bool connection_error(int rc)
{
	return rc == -ECONNRESET || rc == -EPIPE || rc == -ETIMEDOUT;
}

/* The parent's own transport for the killed-peer cases.  Their first
 * messages go between two live processes and must not fail: the suite's
 * 2 s is short for a child still starting on a loaded host (ASan, two
 * suites at once), so the parent's clock is long.  What is tested, the
 * error after the kill, stays bounded by this timeout and is in practice
 * the peer's closed connection, found within a second.  (The CI failures
 * that led here were children whose emulated NIC had hung at fork, which
 * softverbs' fork handler ended; the log these cases print on failure
 * showed it.) */
#define KILLED_PEER_TIMEOUT_MS 10000

static struct rw_net *killed_peer_net(void)
{
	struct rw_net *n = conf_net_timeout(KILLED_PEER_TIMEOUT_MS);

	assert_non_null(n);
	return n;
}

/* A message between live processes failed: say why before failing. */
static void live_message_ok(const struct op *op, const char *what)
{
	if (op->rc == 0)
		return;
	rw_test_log_dump(stderr, "    log: ");
	fail_msg("%s between live processes failed: %d (%s)", what, op->rc, strerror(-op->rc));
}

void peer_killed_while_sending(void **state)
{
	struct child k;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct buf b;
	struct op op;
	struct rw_net *n = killed_peer_net();
	uint64_t t0;
	int rc = 0;

	(void)state;
	rw_test_log_expect(conf_be->peer_hint);
	assert_int_equal(rw_net_listen(n, 0, k.handle, &l), 0);
	child_start(&k, child_sender);
	assert_int_equal(conf_wait_accept(l, &r), 0);
	assert_int_equal(rw_net_close_listen(l), 0);
	assert_int_equal(conf_buf_get(r, &b, MIB), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(conf_recv1_post(r, &b, MIB, 0, &op), 0);
		assert_int_equal(conf_drive(&op, 1, WAIT_MS), 0);
		live_message_ok(&op, "a receive");
	}
	child_reap(&k, true);
	/* What the peer had sent before it died may still arrive; then an
	 * error, within the timeout. */
	t0 = rw_now_ms();
	for (int i = 0; i < 64 && !rc; i++) {
		rc = conf_recv1_post(r, &b, MIB, 0, &op);
		if (!rc) {
			assert_int_equal(conf_drive(&op, 1, KILLED_PEER_TIMEOUT_MS + 3000), 0);
			rc = op.rc;
		}
	}
	if (!connection_error(rc))
		fail_msg("expected a connection error, got %d", rc);
	assert_true(rw_now_ms() - t0 <= (uint64_t)KILLED_PEER_TIMEOUT_MS + 2000);
	assert_true(rw_test_log_count(conf_be->peer_hint) > 0);
	conf_buf_put(r, &b);
	assert_int_equal(rw_net_close_recv(r), 0);
	rw_net_destroy(n);
}

void peer_killed_while_receiving(void **state)
{
	struct child k;
	struct rw_net_comm *s;
	struct buf b;
	struct op op;
	struct rw_net *n = killed_peer_net();
	uint64_t t0;
	char c;
	int rc = 0;

	(void)state;
	rw_test_log_expect(conf_be->peer_hint);
	child_start(&k, child_receiver);
	from_child(&k, k.handle, sizeof(k.handle));
	assert_int_equal(conf_wait_connect(n, k.handle, &s), 0);
	assert_int_equal(conf_buf_get(s, &b, MIB), 0);
	/* The send waits at most RINGWAY_TIMEOUT_MS for the receive: post it
	 * once the child's is posted, not while a loaded host still starts
	 * the child's transport (ASan and the emulated verbs once took the
	 * 2 s of test_ib_conf_multi there). */
	from_child(&k, &c, 1);
	assert_int_equal(c, 'p');
	assert_int_equal(conf_send_post(s, b.p, MIB, 0, b.mr, &op), 0);
	assert_int_equal(conf_drive(&op, 1, WAIT_MS), 0);
	live_message_ok(&op, "a send");
	from_child(&k, &c, 1);
	child_reap(&k, true);
	t0 = rw_now_ms();
	for (int i = 0; i < 64 && !rc; i++) {
		rc = conf_send_post(s, b.p, MIB, 0, b.mr, &op);
		if (!rc) {
			assert_int_equal(conf_drive(&op, 1, KILLED_PEER_TIMEOUT_MS + 3000), 0);
			rc = op.rc;
		}
	}
	if (!connection_error(rc))
		fail_msg("expected a connection error, got %d", rc);
	assert_true(rw_now_ms() - t0 <= (uint64_t)KILLED_PEER_TIMEOUT_MS + 2000);
	assert_true(rw_test_log_count(conf_be->peer_hint) > 0);
	conf_buf_put(s, &b);
	assert_int_equal(rw_net_close_send(s), 0);
	rw_net_destroy(n);
}

static void check_timed_out(struct op *op, uint64_t t0)
{
	uint64_t el;

	assert_int_equal(conf_drive(op, 1, conf_cfg.timeout_ms + 5000), 0);
	el = rw_now_ms() - t0;
	assert_int_equal(op->rc, -ETIMEDOUT);
	if (el + 100 < (uint64_t)conf_cfg.timeout_ms || el > (uint64_t)conf_cfg.timeout_ms + 3000)
		fail_msg("timed out after %llu ms with RINGWAY_TIMEOUT_MS=%lld",
			 (unsigned long long)el, (long long)conf_cfg.timeout_ms);
	assert_true(rw_test_log_count(conf_be->peer_hint) > 0);
}

void silent_sender_times_out(void **state)
{
	struct child k;
	struct rw_net_listen *l;
	struct rw_net_comm *r;
	struct buf b;
	struct op op;
	uint64_t t0;
	char c;

	(void)state;
	rw_test_log_expect(conf_be->peer_hint);
	assert_int_equal(rw_net_listen(conf_net, 0, k.handle, &l), 0);
	child_start(&k, child_silent_sender);
	assert_int_equal(conf_wait_accept(l, &r), 0);
	assert_int_equal(rw_net_close_listen(l), 0);
	from_child(&k, &c, 1);
	assert_int_equal(conf_buf_get(r, &b, 4096), 0);
	/* the transport's clock starts inside the post: read ours before it, so
	 * that a pause after the post cannot make the timeout look early */
	t0 = rw_now_ms();
	assert_int_equal(conf_recv1_post(r, &b, 4096, 0, &op), 0);
	check_timed_out(&op, t0);
	child_reap(&k, true);
	conf_buf_put(r, &b);
	assert_int_equal(rw_net_close_recv(r), 0);
}

/* A receiver that accepted and posts nothing: the send is never taken, and
 * an isend retried against it is a wait on the peer like any other, bounded
 * by RINGWAY_TIMEOUT_MS (isend fails, or the request it gave does). */
void silent_receiver_times_out(void **state)
{
	struct child k;
	struct rw_net_comm *s;
	struct buf b;
	struct op op = {0};
	uint64_t t0, deadline;
	int rc = 0;

	(void)state;
	rw_test_log_expect(conf_be->peer_hint);
	child_start(&k, child_silent_receiver);
	from_child(&k, k.handle, sizeof(k.handle));
	assert_int_equal(conf_wait_connect(conf_net, k.handle, &s), 0);
	assert_int_equal(conf_buf_get(s, &b, 64 * MIB), 0);
	t0 = rw_now_ms();
	deadline = t0 + (uint64_t)conf_cfg.timeout_ms + 5000;
	while (!rc && !op.req && rw_now_ms() < deadline)
		rc = rw_net_isend(s, b.p, 64 * MIB, 0, b.mr, &op.req);
	if (op.req) {
		check_timed_out(&op, t0);
	} else {
		uint64_t el = rw_now_ms() - t0;

		assert_int_equal(rc, -ETIMEDOUT);
		if (el + 100 < (uint64_t)conf_cfg.timeout_ms ||
		    el > (uint64_t)conf_cfg.timeout_ms + 3000)
			fail_msg("isend gave up after %llu ms with RINGWAY_TIMEOUT_MS=%lld",
				 (unsigned long long)el, (long long)conf_cfg.timeout_ms);
		assert_true(rw_test_log_count(conf_be->peer_hint) > 0);
	}
	/* and the comm answers at once from then on */
	t0 = rw_now_ms();
	op.req = NULL;
	assert_true(rw_net_isend(s, b.p, 64, 0, b.mr, &op.req) < 0);
	assert_null(op.req);
	assert_true(rw_now_ms() - t0 < CALL_MS);
	child_reap(&k, true);
	conf_buf_put(s, &b);
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

void strangers_are_dropped_real_peer_accepted(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE], junk[64];
	struct sockaddr_storage sa;
	struct rw_net_listen *l;
	struct pair pr = {0};
	struct linger lg = {1, 0};
	int garbage, empty, loris, partial, reset;
	uint64_t deadline;

	(void)state;
	if (!conf_be->handle_addr)
		skip();
	rw_test_log_expect(conf_be->drop_warning);
	assert_int_equal(rw_net_listen(conf_net, 0, handle, &l), 0);
	assert_int_equal(conf_be->handle_addr(handle, &sa), 0);

	garbage = raw_connect(&sa); /* random bytes, then gone */
	rw_test_fill(junk, sizeof(junk), 99);
	assert_int_equal(write(garbage, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(garbage);
	empty = raw_connect(&sa); /* connect and close */
	close(empty);
	loris = raw_connect(&sa);   /* connect and say nothing */
	partial = raw_connect(&sa); /* a few bytes, then nothing */
	assert_int_equal(write(partial, handle, 5), 5);
	reset = raw_connect(&sa); /* a port scanner's reset */
	setsockopt(reset, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(reset);

	for (int i = 0; i < 3; i++) {
		conf_timed_accept(l, &pr.r);
		assert_null(pr.r);
	}
	/* the real peer gets through while strangers still hang around */
	deadline = rw_now_ms() + WAIT_MS;
	while (!pr.s || !pr.r) {
		if (!pr.s)
			conf_timed_connect(handle, &pr.s);
		if (!pr.r)
			conf_timed_accept(l, &pr.r);
		assert_true(rw_now_ms() < deadline);
	}
	conf_one_message(&pr, 1000, 0);
	/* the silent ones are dropped once the timeout passes */
	deadline = rw_now_ms() + (uint64_t)conf_cfg.timeout_ms + 3000;
	while (rw_test_log_count(conf_be->drop_warning) < 4 && rw_now_ms() < deadline) {
		struct rw_net_comm *none = NULL;

		conf_timed_accept(l, &none);
		assert_null(none);
		usleep(10000);
	}
	if (rw_test_log_count(conf_be->drop_warning) < 4)
		fail_msg("%d stranger(s) dropped, expected at least 4",
			 rw_test_log_count(conf_be->drop_warning));
	close(loris);
	close(partial);
	assert_int_equal(rw_net_close_listen(l), 0);
	conf_pair_close(&pr);
}

/* --- misuse --------------------------------------------------------------------- */

static bool misuse(int rc)
{
	return rc == -EINVAL || rc == -EBADF;
}

void bad_arguments(void **state)
{
	char handle[RW_NET_HANDLE_MAXSIZE], bad[RW_NET_HANDLE_MAXSIZE] = {0};
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
	assert_int_equal(rw_net_devices(conf_net, &ndev), 0);
	assert_true(misuse(rw_net_devices(conf_net, NULL)));
	assert_true(misuse(rw_net_get_properties(conf_net, 0, NULL)));
	assert_true(misuse(rw_net_listen(conf_net, 0, handle, NULL)));
	assert_true(misuse(rw_net_listen(conf_net, -1, handle, &l)));
	assert_true(misuse(rw_net_listen(conf_net, ndev, handle, &l)));
	assert_null(l);
	assert_true(misuse(rw_net_connect(conf_net, 0, bad, &c)));
	assert_null(c);

	assert_int_equal(conf_pair_open(conf_net, &pr), 0);
	assert_int_equal(rw_net_listen(conf_net, 0, handle, &l), 0);
	assert_true(misuse(rw_net_connect(conf_net, ndev, handle, &c)));
	assert_true(misuse(rw_net_connect(conf_net, 0, handle, NULL)));
	assert_true(misuse(rw_net_accept(l, NULL)));
	assert_int_equal(conf_buf_get(pr.s, &sb, 4096), 0);
	assert_int_equal(conf_buf_get(pr.r, &rb, 4096), 0);
	data = rb.p;
	assert_true(misuse(rw_net_reg_mr(pr.s, sb.p, 64, RW_PTR_HOST, NULL)));
	assert_true(misuse(rw_net_reg_mr(pr.s, sb.p, 64, 0x40, &mr)));
	assert_null(mr);

	assert_true(misuse(rw_net_isend(pr.s, sb.p, 8, 0, sb.mr, NULL)));
	assert_true(misuse(rw_net_isend(pr.s, NULL, 8, 0, sb.mr, &req)));
	assert_true(misuse(rw_net_isend(pr.s, sb.p, 8, 0, rb.mr, &req))); /* other comm's */
	assert_true(misuse(rw_net_isend(pr.s, sb.p, 8, 0, NULL, &req)));
	assert_true(misuse(rw_net_isend(pr.r, rb.p, 8, 0, rb.mr, &req))); /* direction */
	assert_null(req);
	n = 0;
	assert_true(misuse(rw_net_irecv(pr.r, n, &data, &size, &tag, &rb.mr, &req)));
	n = conf_props.max_recvs + 1;
	assert_true(misuse(rw_net_irecv(pr.r, n, &data, &size, &tag, &rb.mr, &req)));
	assert_true(misuse(rw_net_irecv(pr.r, 1, &data, &size, &tag, NULL, &req)));
	assert_true(misuse(rw_net_irecv(pr.r, 1, &data, &size, &tag, &sb.mr, &req)));
	assert_true(misuse(rw_net_irecv(pr.r, 1, &data, &size, &tag, &rb.mr, NULL)));
	assert_true(misuse(rw_net_irecv(pr.s, 1, &data, &size, &tag, &rb.mr, &req)));
	assert_null(req);
	assert_true(misuse(rw_net_iflush(pr.r, 1, &data, &n, &rb.mr, NULL)));
	assert_true(misuse(rw_net_dereg_mr(pr.s, rb.mr)));
	assert_true(misuse(rw_net_patient(pr.s))); /* receives only */
	assert_true(misuse(rw_net_close_send(pr.r)));
	assert_true(misuse(rw_net_close_recv(pr.s)));

	conf_one_message(&pr, 16, 0); /* the comms are still fine */
	conf_buf_put(pr.s, &sb);
	conf_buf_put(pr.r, &rb);

	/* use after close */
	conf_pair_close(&pr);
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
