/* SPDX-License-Identifier: Apache-2.0 */
/* The TCP toolbox's accept gate: the policy for unproven connections. */
#include "support/rw_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/tcp/rw_tcp.h"

static struct sockaddr_storage where; /* the listener's address */
static int lfd = -1;
static long fds; /* what the gate reported through fd_count */

static void count(long delta)
{
	fds += delta;
}

static int setup(void **state)
{
	socklen_t len = sizeof(where);

	(void)state;
	rw_test_log_reset();
	fds = 0;
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(rw_tcp_addr_parse("127.0.0.1:1", &where), 0);
	rw_tcp_addr_set_port(&where, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&where, rw_tcp_addr_len(&where)), 0);
	assert_int_equal(listen(lfd, 64), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&where, &len), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(lfd);
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

/* A connected client, from the source address src ("127.0.0.x"). */
static int client(const char *src)
{
	struct sockaddr_in from = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, src, &from.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&where, rw_tcp_addr_len(&where)), 0);
	return fd;
}

/* Accept the next connection (it is queued: its connect returned). */
static int take_in(struct rw_tcp_gate *g)
{
	int idx = -1;

	assert_int_equal(rw_tcp_gate_accept(g, lfd, rw_now_ms(), &idx), 1);
	assert_int_equal(idx, g->n - 1);
	return idx;
}

/* Has the gate closed the server end of client fd?  (It reads EOF.) */
static bool closed_by_gate(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b;

	return poll(&p, 1, 20000) == 1 && recv(fd, &b, 1, 0) == 0;
}

static struct rw_tcp_gate_cfg cfg(int max, int per_host, int64_t hello_ms, int warns)
{
	return (struct rw_tcp_gate_cfg){.who = "test: listener",
					.param = "TEST_HELLO_MS",
					.max = max,
					.per_host = per_host,
					.hello_ms = hello_ms,
					.hello_len = 8,
					.warns = warns,
					.fd_count = count};
}

static void a_hello_is_taken_a_stranger_dropped(void **state)
{
	struct rw_tcp_gate_cfg c = cfg(8, 0, 20000, 8);
	struct rw_tcp_gate g;
	int peer = client("127.0.0.1"), stranger = client("127.0.0.1"), i, rc, fd;
	char name[RW_TCP_ADDRSTRLEN];

	(void)state;
	assert_int_equal(rw_tcp_gate_init(&g, &c), 0);
	assert_null(g.c); /* a listener nobody knocks at holds no table */
	assert_int_equal(rw_tcp_gate_accept(&g, lfd, rw_now_ms(), &i), 1);
	assert_int_equal(g.cap, 4);
	assert_int_equal(rw_tcp_gate_accept(&g, lfd, rw_now_ms(), &i), 1);
	assert_int_equal(rw_tcp_gate_accept(&g, lfd, rw_now_ms(), &i), 0); /* none queued */
	assert_int_equal(g.n, 2);
	assert_int_equal(fds, 2);
	assert_non_null(strstr(g.c[0].name, "127.0.0.1:"));

	/* the peer's 8 bytes come in two pieces */
	assert_int_equal(send(peer, "RWHE", 4, 0), 4);
	while ((rc = rw_tcp_gate_read(&g, 0, rw_now_ms())) == 0 && g.c[0].got < 4)
		assert_int_equal(rw_tcp_wait(g.c[0].fd, POLLIN, rw_now_ms() + 20000), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(send(peer, "LLO!", 4, 0), 4);
	while ((rc = rw_tcp_gate_read(&g, 0, rw_now_ms())) == 0)
		assert_int_equal(rw_tcp_wait(g.c[0].fd, POLLIN, rw_now_ms() + 20000), 0);
	assert_int_equal(rc, 1);
	assert_memory_equal(g.c[0].hello, "RWHELLO!", 8);
	fd = rw_tcp_gate_take(&g, 0);
	assert_true(fd >= 0);
	assert_int_equal(g.n, 1);

	/* the stranger sends 3 bytes and leaves: dropped, named */
	snprintf(name, sizeof(name), "%s", g.c[0].name);
	rw_test_log_expect("closed after 3 of 8 hello bytes");
	assert_int_equal(send(stranger, "GET", 3, 0), 3);
	close(stranger);
	while ((rc = rw_tcp_gate_read(&g, 0, rw_now_ms())) == 0)
		assert_int_equal(rw_tcp_wait(g.c[0].fd, POLLIN, rw_now_ms() + 20000), 0);
	assert_int_equal(rc, -1);
	assert_int_equal(g.n, 0);
	assert_int_equal(rw_test_log_count(name), 1);
	assert_int_equal(rw_test_log_count("test: listener: dropping connection from"), 1);
	assert_int_equal(fds, 1); /* the one taken is the caller's now */

	rw_tcp_gate_fini(&g);
	rw_tcp_gate_fini(&g); /* idempotent */
	close(fd);
	close(peer);
}

static void one_address_cannot_crowd_out_others(void **state)
{
	struct rw_tcp_gate_cfg c = cfg(3, 2, 20000, 8);
	struct rw_tcp_gate g;
	int a1, a2, a3, b1, d1;

	(void)state;
	rw_test_log_expect("evicted");
	assert_int_equal(rw_tcp_gate_init(&g, &c), 0);
	a1 = client("127.0.0.1");
	take_in(&g);
	b1 = client("127.0.0.2");
	take_in(&g);
	a2 = client("127.0.0.1");
	take_in(&g);
	assert_int_equal(g.n, 3);
	/* a third from 127.0.0.1 evicts that address's oldest, not 127.0.0.2's */
	a3 = client("127.0.0.1");
	take_in(&g);
	assert_int_equal(g.n, 3);
	assert_true(closed_by_gate(a1));
	assert_int_equal(
		rw_test_log_count("evicted: its address holds 2 connections owing a hello"), 1);
	assert_non_null(strstr(g.c[0].name, "127.0.0.2:"));
	/* a full table: a newcomer from elsewhere evicts the oldest of all */
	d1 = client("127.0.0.4");
	take_in(&g);
	assert_true(closed_by_gate(b1));
	assert_int_equal(rw_test_log_count("evicted: 3 connections owe a hello"), 1);
	assert_int_equal(g.n, 3);
	assert_non_null(strstr(g.c[2].name, "127.0.0.4:"));
	assert_int_equal(fds, 3);
	rw_tcp_gate_fini(&g); /* closes the rest without a word each */
	assert_int_equal(fds, 0);
	assert_int_equal(rw_test_log_count("evicted"), 2);
	assert_true(closed_by_gate(a2) && closed_by_gate(a3) && closed_by_gate(d1));
	close(a1), close(a2), close(a3), close(b1), close(d1);
}

static void silence_past_the_deadline_is_dropped_and_warnings_are_limited(void **state)
{
	struct rw_tcp_gate_cfg c = cfg(8, 0, 0, 1);
	struct rw_tcp_gate g;
	int k[3];

	(void)state;
	rw_test_log_expect("dropping connection");
	rw_test_log_expect("without a warning each");
	assert_int_equal(rw_tcp_gate_init(&g, &c), 0);
	assert_true(rw_tcp_gate_expire(&g, rw_now_ms()) == UINT64_MAX);
	for (int i = 0; i < 3; i++) {
		k[i] = client("127.0.0.1");
		take_in(&g);
	}
	/* hello_ms 0: their time is up at once */
	assert_int_equal(rw_tcp_gate_read(&g, 0, rw_now_ms()), -1);
	assert_true(rw_tcp_gate_expire(&g, rw_now_ms()) == UINT64_MAX);
	assert_int_equal(g.n, 0);
	assert_int_equal(rw_test_log_count("sent 0 of 8 hello bytes in 0 ms (TEST_HELLO_MS)"), 1);
	assert_int_equal(rw_test_log_count("further drops are counted"), 1);
	for (int i = 0; i < 3; i++)
		assert_true(closed_by_gate(k[i]));
	rw_tcp_gate_fini(&g);
	assert_int_equal(rw_test_log_count("dropped 2 more connection(s) without a warning each"),
			 1);
	assert_int_equal(fds, 0);
	for (int i = 0; i < 3; i++)
		close(k[i]);
}

static void bad_configurations(void **state)
{
	struct rw_tcp_gate g;
	struct rw_tcp_gate_cfg c = cfg(8, 0, 100, 1);

	(void)state;
	c.max = 0;
	assert_int_equal(rw_tcp_gate_init(&g, &c), -EINVAL);
	c.max = RW_TCP_GATE_MAX + 1;
	assert_int_equal(rw_tcp_gate_init(&g, &c), -EINVAL);
	c = cfg(8, 0, 100, 1);
	c.hello_len = RW_TCP_HELLO_MAX + 1;
	assert_int_equal(rw_tcp_gate_init(&g, &c), -EINVAL);
	c.hello_len = 0;
	assert_int_equal(rw_tcp_gate_init(&g, &c), -EINVAL);
	c = cfg(8, 0, -1, 1);
	assert_int_equal(rw_tcp_gate_init(&g, &c), -EINVAL);
	assert_int_equal(rw_tcp_gate_init(NULL, &c), -EINVAL);
	assert_int_equal(rw_tcp_gate_init(&g, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_hello_is_taken_a_stranger_dropped, setup,
						teardown),
		cmocka_unit_test_setup_teardown(one_address_cannot_crowd_out_others, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			silence_past_the_deadline_is_dropped_and_warnings_are_limited, setup,
			teardown),
		cmocka_unit_test_setup_teardown(bad_configurations, setup, teardown),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
