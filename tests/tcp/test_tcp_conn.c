/* SPDX-License-Identifier: Apache-2.0 */
/* The TCP toolbox's connect with a deadline and its bounded I/O. */
#include "support/rw_test.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/tcp/rw_tcp.h"

/* A TCP socket bound to 127.0.0.1 on a free port, listening when backlog >= 0. */
static int bound(int backlog, struct sockaddr_storage *sa)
{
	socklen_t len = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(rw_tcp_addr_parse("127.0.0.1:1", sa), 0);
	rw_tcp_addr_set_port(sa, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)sa, rw_tcp_addr_len(sa)), 0);
	if (backlog >= 0)
		assert_int_equal(listen(fd, backlog), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)sa, &len), 0);
	return fd;
}

static void closed_port_is_refused(void **state)
{
	struct sockaddr_storage sa;
	int lfd = bound(-1, &sa), fd = -7; /* bound, never listening: closed */

	(void)state;
	assert_int_equal(rw_tcp_connect(&sa, rw_now_ms() + 20000, &fd), -ECONNREFUSED);
	assert_int_equal(fd, -7); /* untouched on failure */
	close(lfd);
}

/* A listener whose one-place queue is full drops further SYNs: a connect
 * to it hangs until the deadline, and must come back then. */
static void deadline_bounds_a_blackhole(void **state)
{
	struct sockaddr_storage sa;
	int lfd = bound(0, &sa), first = -1, fd = -7, rc;
	uint64_t deadline;

	(void)state;
	assert_int_equal(rw_tcp_connect(&sa, rw_now_ms() + 20000, &first), 0); /* fills the queue */
	deadline = rw_now_ms() + 300;
	rc = rw_tcp_connect(&sa, deadline, &fd);
	assert_int_equal(rc, -ETIMEDOUT);
	assert_true(rw_now_ms() >= deadline); /* it waited for the deadline, not less */
	assert_int_equal(fd, -7);

	/* the step-wise form: not done, and no error, while the SYN is unanswered */
	assert_int_equal(rw_tcp_socket(AF_INET, &fd), 0);
	assert_int_equal(rw_tcp_connect_begin(fd, &sa), 0);
	assert_int_equal(rw_tcp_connect_done(fd), 0);
	close(fd);
	close(first);
	close(lfd);
}

static void bounded_io(void **state)
{
	struct sockaddr_storage sa;
	int lfd = bound(4, &sa), c = -1, s;
	char out[100000], in[sizeof(out)];
	size_t done = 0;

	(void)state;
	assert_int_equal(rw_tcp_connect(&sa, rw_now_ms() + 20000, &c), 0);
	s = accept(lfd, NULL, NULL);
	assert_true(s >= 0);
	rw_test_fill(out, sizeof(out), 3);

	/* nothing to read yet: the step says "would block", the bounded read times out */
	assert_int_equal(rw_tcp_io_step(c, in, 10, &done, false), 0);
	assert_int_equal(done, 0);
	assert_int_equal(rw_tcp_read_all(c, in, 10, rw_now_ms() + 50), -ETIMEDOUT);

	/* 100 kB one way (more than the socket buffers may hold at once) */
	assert_int_equal(rw_tcp_write_all(s, out, 1000, rw_now_ms() + 20000), 0);
	assert_int_equal(rw_tcp_read_all(c, in, 1000, rw_now_ms() + 20000), 0);
	assert_memory_equal(in, out, 1000);
	done = 0;
	for (size_t rd = 0; rd < sizeof(out);) {
		int rc = rw_tcp_io_step(s, out, sizeof(out), &done, true);

		assert_true(rc >= 0);
		rc = rw_tcp_io_step(c, in, done, &rd, false); /* what was written so far */
		assert_true(rc >= 0);
		if (rc == 0)
			assert_int_equal(rw_tcp_wait(c, POLLIN, rw_now_ms() + 20000), 0);
	}
	assert_memory_equal(in, out, sizeof(out));

	/* the peer closes: a read says so */
	close(s);
	done = 0;
	for (int rc = 0; rc == 0;) {
		rc = rw_tcp_io_step(c, in, sizeof(in), &done, false);
		if (rc == 0)
			assert_int_equal(rw_tcp_wait(c, POLLIN, rw_now_ms() + 20000), 0);
		else
			assert_int_equal(rc, -ECONNRESET);
	}
	assert_int_equal(rw_tcp_read_all(c, in, 1, rw_now_ms() + 20000), -ECONNRESET);
	close(c);
	close(lfd);
}

static void listen_picks_a_port_and_refuses_a_taken_one(void **state)
{
	struct sockaddr_storage sa, again;
	int lfd = -1, fd = -1, c = -1, other = -7;

	(void)state;
	assert_int_equal(rw_tcp_addr_parse("127.0.0.1:1", &sa), 0);
	rw_tcp_addr_set_port(&sa, 0);
	assert_int_equal(rw_tcp_listen(&sa, 8, false, &lfd), 0);
	assert_int_not_equal(rw_tcp_addr_port(&sa), 0); /* the port it got */
	assert_int_equal(rw_tcp_connect(&sa, rw_now_ms() + 20000, &c), 0);
	assert_int_equal(rw_tcp_wait(lfd, POLLIN, rw_now_ms() + 20000), 0);
	fd = accept(lfd, NULL, NULL);
	assert_true(fd >= 0);
	again = sa;
	assert_int_equal(rw_tcp_listen(&again, 8, true, &other), -EADDRINUSE);
	assert_int_equal(other, -7);
	assert_memory_equal(&again, &sa, sizeof(sa)); /* untouched on failure */
	close(fd);
	close(c);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(closed_port_is_refused, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(deadline_bounds_a_blackhole, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(bounded_io, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(listen_picks_a_port_and_refuses_a_taken_one,
						rw_test_setup_log, rw_test_teardown_log),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
