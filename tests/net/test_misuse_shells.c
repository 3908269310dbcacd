/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Closed comm shells are bounded (issue 13, item 6): 5 000 connect/close
 * cycles on one listener used to keep every shell until rw_net_destroy()
 * (+0.6 KiB per socket connection, +1.2 KiB per shm connection).  The
 * graveyard now keeps about 64 comm shells per instance (a new comm reuses
 * the oldest once 64 are kept: at most 64 plus the comms open at once); the
 * most recently closed handles still answer -EBADF.  Counted through the transports'
 * shell counters, and (outside ASan, whose allocator mallinfo2 does not
 * see) through the heap: it must not grow with the cycles.
 */
#include "support/rw_test.h"

#include <errno.h>
#include <malloc.h>
#include <string.h>

#include "common/rw_common.h"
#include "transport/rw_net.h"
#include "transport/shm/shm.h"
#include "transport/socket/sock.h"

#define CYCLES	   5000
#define MAX_SHELLS 64		 /* RW_GRAVE_MAX (transport/base/rw_base.h) */
#define WARM	   1000		 /* cycles before the heap is measured */
#define HEAP_SLACK (1024 * 1024) /* 4 000 kept shells were 2.4 to 4.8 MB */
#define WAIT_MS	   20000

struct backend {
	const char *name;
	int (*create)(const struct rw_config *cfg, struct rw_net **out);
	long (*shells)(void);
	long (*live)(void);
	const char *const *env;
};

static void pair(struct rw_net *n, struct rw_net_listen *l, const void *handle,
		 struct rw_net_comm **s, struct rw_net_comm **r)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	*s = *r = NULL;
	while (!*s || !*r) {
		if (!*s)
			assert_int_equal(rw_net_connect(n, 0, handle, s), 0);
		if (!*r)
			assert_int_equal(rw_net_accept(l, r), 0);
		if (rw_now_ms() > deadline)
			fail_msg("connect/accept did not finish in %d ms", WAIT_MS);
	}
}

static void cycles(const struct backend *b)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l = NULL;
	struct rw_net_comm *s, *r;
	struct rw_config cfg;
	struct rw_net *n = NULL;
	size_t heap_warm = 0;
	long base = b->shells();

	rw_test_log_reset();
	rw_test_log_expect("on a closed comm"); /* the stale calls below */
	assert_int_equal(rw_test_config(&cfg, b->env), 0);
	assert_int_equal(b->create(&cfg, &n), 0);
	assert_int_equal(rw_net_listen(n, 0, handle, &l), 0);
	for (int i = 0; i < CYCLES; i++) {
		long kept;

		pair(n, l, handle, &s, &r);
		assert_int_equal(rw_net_close_send(s), 0);
		assert_int_equal(rw_net_close_recv(r), 0);
		/* the handles just closed are stale, and say so */
		assert_int_equal(rw_net_close_send(s), -EBADF);
		assert_int_equal(rw_net_close_recv(r), -EBADF);
		kept = b->shells() - base;
		/* 64 shells, plus at most the two comms open at once: a new comm
		 * reuses the oldest shell once 64 are kept. */
		if (kept > MAX_SHELLS + 2 || (i < MAX_SHELLS / 2 && kept != 2L * (i + 1)))
			fail_msg("%s: %ld comm shells kept after %d cycles", b->name, kept, i + 1);
		if (i + 1 == WARM)
			heap_warm = mallinfo2().uordblks;
	}
	{
		size_t heap = mallinfo2().uordblks;

		if (heap_warm && heap > heap_warm + HEAP_SLACK)
			fail_msg("%s: the heap grew by %zu bytes in %d connect/close cycles",
				 b->name, heap - heap_warm, CYCLES - WARM);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
	rw_net_destroy(n);
	assert_int_equal(b->shells(), base);
	assert_int_equal(b->live(), 0);
	if (rw_test_log_unexpected())
		fail_msg("%s: unexpected warning: %s", b->name, rw_test_log_last_unexpected());
	assert_true(rw_test_log_count("on a closed comm") > 0); /* said (rate-limited) */
}

static const char *const sock_env[] = {
	"RINGWAY_SOCKET_IFNAME", "lo", "RINGWAY_SOCKET_NSTREAMS", "1", NULL,
};
static const char *const shm_env[] = {NULL};

static void sock_shells_bounded(void **state)
{
	const struct backend b = {"socket", rw_sock_create, rw_sock_live_shells, rw_sock_live_total,
				  sock_env};

	(void)state;
	cycles(&b);
}

static void shm_shells_bounded(void **state)
{
	const struct backend b = {"shm", rw_shm_create, rw_shm_live_shells, rw_shm_live_total,
				  shm_env};

	(void)state;
	cycles(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sock_shells_bounded),
		cmocka_unit_test(shm_shells_bounded),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
