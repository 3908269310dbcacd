/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The socket listener under attack (issue 13, "listener lock-out"): sockets
 * that never prove the handle's nonce are dropped after
 * RINGWAY_SOCKET_HELLO_MS with one warning naming them; a full table evicts
 * its oldest unproven socket, never one that proved the nonce; one source
 * address cannot push out the others; connections that bring only some of
 * their streams are evicted oldest first; and a real peer gets through
 * 1 000 idle strangers and 100 half-open connections (the time it took is
 * printed, not asserted), with the drop warnings limited.
 *
 * White-box: the tests read the listener's table sizes from
 * transport/sock_internal.h to know when the listener has taken a socket.
 */
#include "support/rw_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "transport/rw_net.h"
#include "transport/socket/sock.h"
#include "transport/socket/sock_internal.h"
#include "transport/socket/sock_proto.h"

#define WAIT_MS	    20000 /* bound of every wait; far below the timeouts set */
#define NSTRANGERS  1000
#define NHALF	    100
#define MAX_CLIENTS (NSTRANGERS + NHALF + 8)

static struct rw_net *net;
static struct rw_net_listen *lc;
static unsigned char handle[RW_NET_HANDLE_MAXSIZE];
static int clients[MAX_CLIENTS];
static int nclients;

static int setup(void **state)
{
	(void)state;
	net = NULL;
	lc = NULL;
	nclients = 0;
	rw_test_log_reset();
	return 0;
}

static int teardown(void **state)
{
	long live;

	(void)state;
	for (int i = 0; i < nclients; i++)
		if (clients[i] >= 0)
			close(clients[i]);
	nclients = 0;
	if (lc)
		assert_int_equal(rw_net_close_listen(lc), 0);
	lc = NULL;
	rw_net_destroy(net);
	net = NULL;
	live = rw_sock_live_total();
	if (live)
		fail_msg("%ld socket-transport objects alive after destroy", live);
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

static struct rw_sock_listen *lsn(void)
{
	return rw_container_of(lc, struct rw_sock_listen, base);
}

/* A socket transport on loopback, and a listener on it. */
static void make(const char *hello_ms, const char *timeout_ms)
{
	const char *env[] = {"RINGWAY_SOCKET_IFNAME",
			     "=lo",
			     "RINGWAY_SOCKET_FAMILY",
			     "ipv4",
			     "RINGWAY_TIMEOUT_MS",
			     timeout_ms,
			     "RINGWAY_SOCKET_HELLO_MS",
			     hello_ms,
			     NULL};
	struct rw_config cfg;

	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_int_equal(rw_sock_create(&cfg, &net), 0);
	assert_int_equal(rw_net_listen(net, 0, handle, &lc), 0);
}

/* One accept call, which must not hand out a comm. */
static void accept_none(void)
{
	struct rw_net_comm *none = NULL;

	assert_int_equal(rw_net_accept(lc, &none), 0);
	assert_null(none);
}

/* A TCP connection to the listener from src (127.0.0.x; NULL: any), not
 * waited for when nonblock. */
static int client(const char *src, bool nonblock)
{
	struct sockaddr_storage sa;
	int fd, rc;

	assert_true(nclients < MAX_CLIENTS);
	assert_int_equal(rw_sock_handle_addr(handle, &sa), 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	assert_true(fd >= 0);
	if (src) {
		struct sockaddr_in me = {.sin_family = AF_INET};

		assert_int_equal(inet_pton(AF_INET, src, &me.sin_addr), 1);
		assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	}
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(struct sockaddr_in));
	assert_true(rc == 0 || (nonblock && errno == EINPROGRESS));
	clients[nclients++] = fd;
	return fd;
}

/* "127.0.0.1:port" of a client, as the listener names it. */
static void client_name(int fd, char *buf, size_t len)
{
	struct sockaddr_in me;
	socklen_t slen = sizeof(me);
	char ip[INET_ADDRSTRLEN];

	assert_int_equal(getsockname(fd, (struct sockaddr *)&me, &slen), 0);
	assert_non_null(inet_ntop(AF_INET, &me.sin_addr, ip, sizeof(ip)));
	snprintf(buf, len, "%s:%u", ip, ntohs(me.sin_port));
}

/* A connection that proves the nonce for stream `stream` of `nstreams`. */
static int hello_client(const char *src, uint64_t conn_id, uint8_t stream, uint8_t nstreams)
{
	struct rw_sock_handle h;
	struct rw_sock_hello hello;
	int fd = client(src, false);

	memcpy(&h, handle, sizeof(h));
	hello = (struct rw_sock_hello){.magic = RW_SOCK_MAGIC,
				       .version = RW_SOCK_PROTO_VERSION,
				       .stream = stream,
				       .nstreams = nstreams,
				       .nonce = h.nonce,
				       .conn_id = conn_id};
	assert_int_equal(write(fd, &hello, sizeof(hello)), (ssize_t)sizeof(hello));
	return fd;
}

/* Has the listener closed its end of fd? */
static bool dropped(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b;

	if (poll(&p, 1, 0) <= 0)
		return false;
	return recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK) <= 0;
}

/* Call accept until the listener holds `cands` sockets owing a hello and
 * `asms` connections being assembled. */
static void accept_until_held(int cands, int asms)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	for (;;) {
		accept_none();
		if (lsn()->gate.n == cands && lsn()->nasms == asms)
			return;
		if (rw_now_ms() >= deadline)
			fail_msg("listener holds %d and %d, not %d and %d", lsn()->gate.n,
				 lsn()->nasms, cands, asms);
		usleep(1000);
	}
}

static void accept_until_dropped(int fd)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	while (!dropped(fd)) {
		accept_none();
		assert_true(rw_now_ms() < deadline);
		usleep(2000);
	}
}

/* Connect and accept a real peer; returns the ms it took. */
static uint64_t real_peer(struct rw_net_comm **s, struct rw_net_comm **r)
{
	uint64_t t0 = rw_now_ms(), deadline = t0 + WAIT_MS;

	*s = *r = NULL;
	while (!*s || !*r) {
		if (!*s)
			assert_int_equal(rw_net_connect(net, 0, handle, s), 0);
		if (!*r)
			assert_int_equal(rw_net_accept(lc, r), 0);
		if (rw_now_ms() >= deadline)
			fail_msg("the real peer did not get through in %d ms (send %p recv %p)",
				 WAIT_MS, (void *)*s, (void *)*r);
	}
	return rw_now_ms() - t0;
}

/* One message of size bytes s -> r, checked. */
static void exchange(struct rw_net_comm *s, struct rw_net_comm *r, size_t size)
{
	char *sbuf = malloc(size), *rbuf = calloc(1, size);
	struct rw_net_mr *smr, *rmr;
	struct rw_net_req *sreq = NULL, *rreq = NULL;
	size_t got = 0, ssize = 0;
	int tag = 7, sdone = 0, rdone = 0;
	void *d = rbuf;
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	assert_non_null(sbuf);
	assert_non_null(rbuf);
	rw_test_fill(sbuf, size, 13);
	assert_int_equal(rw_net_reg_mr(s, sbuf, size, RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(r, rbuf, size, RW_PTR_HOST, &rmr), 0);
	assert_int_equal(rw_net_irecv(r, 1, &d, &size, &tag, &rmr, &rreq), 0);
	assert_non_null(rreq);
	while (!sreq) {
		assert_int_equal(rw_net_isend(s, sbuf, size, tag, smr, &sreq), 0);
		assert_true(rw_now_ms() < deadline);
	}
	while (!sdone || !rdone) {
		if (!sdone)
			assert_int_equal(rw_net_test(sreq, &sdone, &ssize), 0);
		if (!rdone)
			assert_int_equal(rw_net_test(rreq, &rdone, &got), 0);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(ssize, size);
	assert_int_equal(got, size);
	assert_memory_equal(sbuf, rbuf, size);
	assert_int_equal(rw_net_dereg_mr(s, smr), 0);
	assert_int_equal(rw_net_dereg_mr(r, rmr), 0);
	free(sbuf);
	free(rbuf);
}

/* Raise the fd limit to the hard one; skip when it cannot hold `need`. */
static void need_fds(long need)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)need) {
		printf("skipped: RLIMIT_NOFILE %llu < %ld fds this test holds\n",
		       (unsigned long long)rl.rlim_cur, need);
		skip();
	}
}

/* Silent, slow and half-open connections go after RINGWAY_SOCKET_HELLO_MS
 * (far below the timeout), each with one warning naming its address. */
static void unproven_dropped_after_short_deadline(void **state)
{
	char silent[64], slow[64], half[64], msg[160];
	int fs, fp, fh;

	(void)state;
	make("300", "600000");
	rw_test_log_expect("dropping connection");
	fs = client(NULL, false);
	fp = client(NULL, false);
	assert_int_equal(write(fp, "RWNS\x02", 5), 5);
	fh = hello_client(NULL, 99, 0, 2);
	client_name(fs, silent, sizeof(silent));
	client_name(fp, slow, sizeof(slow));
	client_name(fh, half, sizeof(half));
	accept_until_dropped(fs);
	accept_until_dropped(fp);
	accept_until_dropped(fh);
	accept_none();
	snprintf(msg, sizeof(msg),
		 "dropping connection from %s: sent 0 of 24 hello bytes in 300 ms", silent);
	assert_int_equal(rw_test_log_count(msg), 1);
	snprintf(msg, sizeof(msg),
		 "dropping connection from %s: sent 5 of 24 hello bytes in 300 ms", slow);
	assert_int_equal(rw_test_log_count(msg), 1);
	snprintf(msg, sizeof(msg), "dropping connection from %s: 1 of 2 streams arrived in 300 ms",
		 half);
	assert_int_equal(rw_test_log_count(msg), 1);
	assert_int_equal(rw_test_log_count("dropping connection"), 3);
	assert_int_equal(lsn()->gate.n, 0);
	assert_int_equal(lsn()->nasms, 0);
}

/* The deadline is at most the timeout. */
static void hello_deadline_capped_by_timeout(void **state)
{
	(void)state;
	make("5000", "700");
	assert_int_equal(lsn()->hello_ms, 700);
}

/* A full table evicts its oldest unproven socket, one per newcomer; a
 * connection that proved the nonce stays and completes. */
static void full_table_evicts_oldest_unproven(void **state)
{
	static const char *const src[] = {"127.0.0.10", "127.0.0.11", "127.0.0.12", "127.0.0.13"};
	int fds[RW_SOCK_MAX_CANDS], proven, extra[2];
	struct rw_net_comm *r = NULL;
	uint64_t deadline;
	char msg[128];

	(void)state;
	make("600000", "600000");
	rw_test_log_expect("dropping connection");
	proven = hello_client("127.0.0.20", 77, 0, 2);
	accept_until_held(0, 1);
	/* 64 strangers from 4 addresses (16 each, the per-address cap) */
	for (int i = 0; i < RW_SOCK_MAX_CANDS; i++) {
		fds[i] = client(src[i / RW_SOCK_CANDS_PER_HOST], false);
		accept_until_held(i + 1, 1);
	}
	for (int i = 0; i < 2; i++) {
		extra[i] = client("127.0.0.14", false);
		accept_until_dropped(fds[i]);
		accept_until_held(RW_SOCK_MAX_CANDS, 1);
	}
	for (int i = 2; i < RW_SOCK_MAX_CANDS; i++)
		assert_false(dropped(fds[i]));
	assert_false(dropped(extra[0]));
	assert_false(dropped(extra[1]));
	assert_false(dropped(proven));
	snprintf(msg, sizeof(msg), "evicted: %d connections owe a hello", RW_SOCK_MAX_CANDS);
	assert_int_equal(rw_test_log_count(msg), 2);
	assert_int_equal(rw_test_log_count("dropping connection"), 2);

	/* the proven connection's second stream completes it */
	hello_client("127.0.0.20", 77, 1, 2);
	deadline = rw_now_ms() + WAIT_MS;
	while (!r) {
		assert_int_equal(rw_net_accept(lc, &r), 0);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_close_recv(r), 0);
	assert_int_equal(lsn()->nasms, 0);
}

/* One address holds at most RW_SOCK_CANDS_PER_HOST unproven sockets and
 * evicts its own oldest, even when another address's socket is older. */
static void one_address_evicts_its_own(void **state)
{
	int other, fds[RW_SOCK_CANDS_PER_HOST + 10];
	char msg[128];

	(void)state;
	make("600000", "600000");
	rw_test_log_expect("dropping connection");
	rw_test_log_expect("without a warning each");
	other = client("127.0.0.3", false);
	accept_until_held(1, 0);
	for (int i = 0; i < RW_SOCK_CANDS_PER_HOST; i++) {
		fds[i] = client("127.0.0.2", false);
		accept_until_held(i + 2, 0);
	}
	for (int i = RW_SOCK_CANDS_PER_HOST; i < RW_SOCK_CANDS_PER_HOST + 10; i++) {
		fds[i] = client("127.0.0.2", false);
		accept_until_dropped(fds[i - RW_SOCK_CANDS_PER_HOST]);
		accept_until_held(RW_SOCK_CANDS_PER_HOST + 1, 0);
	}
	assert_false(dropped(other));
	for (int i = 10; i < RW_SOCK_CANDS_PER_HOST + 10; i++)
		assert_false(dropped(fds[i]));
	snprintf(msg, sizeof(msg), "evicted: its address holds %d connections owing a hello",
		 RW_SOCK_CANDS_PER_HOST);
	assert_int_equal(rw_test_log_count(msg), 8); /* then counted, not warned */
	assert_int_equal(rw_test_log_count("further drops are counted"), 1);
	/* the 2 not warned about are counted at close */
	assert_int_equal(rw_net_close_listen(lc), 0);
	lc = NULL;
	assert_int_equal(rw_test_log_count("dropped 2 more connection(s) without a warning each"),
			 1);
}

/* A peer holding the handle fills the table of connections half set up:
 * the oldest is evicted for a newer one, and a real peer gets through. */
static void half_open_evicted_oldest_first(void **state)
{
	int fds[RW_SOCK_MAX_ASMS + 1];
	struct rw_net_comm *s, *r;
	char msg[128];

	(void)state;
	make("600000", "600000");
	rw_test_log_expect("dropping connection");
	for (int i = 0; i < RW_SOCK_MAX_ASMS; i++) {
		fds[i] = hello_client(NULL, 1000 + (uint64_t)i, 0, 2);
		accept_until_held(0, i + 1);
	}
	fds[RW_SOCK_MAX_ASMS] = hello_client(NULL, 5000, 0, 2);
	accept_until_dropped(fds[0]);
	accept_until_held(0, RW_SOCK_MAX_ASMS);
	for (int i = 1; i <= RW_SOCK_MAX_ASMS; i++)
		assert_false(dropped(fds[i]));
	snprintf(msg, sizeof(msg), "1 of 2 streams arrived in");
	assert_int_equal(rw_test_log_count(msg), 1);
	snprintf(msg, sizeof(msg), "evicted: %d connections half set up", RW_SOCK_MAX_ASMS);
	assert_int_equal(rw_test_log_count(msg), 1);
	real_peer(&s, &r);
	exchange(s, r, 1000);
	assert_int_equal(rw_net_close_send(s), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
}

/* The requirement: 1 000 idle strangers and 100 half-open
 * connections present, a real peer connects, is accepted and moves data. */
static void real_peer_gets_through_a_crowd(void **state)
{
	struct rw_net_comm *s, *r;
	uint64_t t0, took;
	int warned;

	(void)state;
	need_fds(2 * MAX_CLIENTS + 256);
	make("5000", "600000");
	rw_test_log_expect("dropping connection");
	rw_test_log_expect("without a warning each");
	t0 = rw_now_ms();
	/* accepted as they come, as NCCL's proxy would, but the last ones
	 * still wait in the kernel's queue when the real peer connects */
	for (int i = 0; i < NSTRANGERS; i++) {
		client(NULL, true);
		if (i % 64 == 63 && i < NSTRANGERS - 200)
			accept_none();
	}
	for (int i = 0; i < NHALF; i++) {
		hello_client(NULL, 0x4841 + (uint64_t)i, 0, 2);
		if (i % 8 == 7 && i < NHALF - 20)
			accept_none();
	}
	took = real_peer(&s, &r);
	printf("real peer through %d idle strangers and %d half-open connections: %llu ms "
	       "(connect + accept; the issue asks for < 1000 ms)\n",
	       NSTRANGERS, NHALF, (unsigned long long)took);
	exchange(s, r, 4u << 20); /* striped over every stream */
	exchange(s, r, 100);
	warned = rw_test_log_count("dropping connection");
	printf("drop warnings: %d (the listener held %d unproven, %d half set up)\n", warned,
	       lsn()->gate.n, lsn()->nasms);
	/* limited per window of RW_SOCK_DROP_WINDOW_MS, not one per stranger */
	assert_true(warned <=
		    RW_SOCK_DROP_WARNS * (int)(1 + (rw_now_ms() - t0) / RW_SOCK_DROP_WINDOW_MS));
	assert_true(lsn()->gate.n <= RW_SOCK_CANDS_PER_HOST);
	assert_true(lsn()->nasms <= RW_SOCK_MAX_ASMS);
	assert_int_equal(rw_net_close_send(s), 0);
	assert_int_equal(rw_net_close_recv(r), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(unproven_dropped_after_short_deadline, setup,
						teardown),
		cmocka_unit_test_setup_teardown(hello_deadline_capped_by_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(full_table_evicts_oldest_unproven, setup, teardown),
		cmocka_unit_test_setup_teardown(one_address_evicts_its_own, setup, teardown),
		cmocka_unit_test_setup_teardown(half_open_evicted_oldest_first, setup, teardown),
		cmocka_unit_test_setup_teardown(real_peer_gets_through_a_crowd, setup, teardown),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
