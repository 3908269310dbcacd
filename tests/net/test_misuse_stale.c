/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stale handles that alias reused memory (issue 14), through the object
 * base's generations and request slabs:
 *   - the plugin reuses a closed comm's wrapper for a later comm: a call on
 *     the old handle must fail as a closed comm, not act on the new one;
 *   - test() straight on a transport request after close_send (socket,
 *     shm): the request's memory must still be the transport's and say
 *     "completed", not be a freed slab;
 *   - closed listeners (socket, shm, auto) keep at most RW_GRAVE_MAX shells
 *     (they were unbounded), and a stale listener stays closed.
 * The plugin is linked in (the sources of plugin/) and driven through its v10 table,
 * on the socket transport over lo (the test's environment).
 */
#include "support/rw_test.h"

#include <errno.h>
#include <string.h>

#include "common/rw_common.h"
#include "plugin/rw_plugin.h"
#include "transport/rw_net.h"

#define WAIT_MS 20000

static const char *const sock_env[] = {
	"RINGWAY_SOCKET_IFNAME", "lo", "RINGWAY_SOCKET_NSTREAMS", "1", NULL,
};
static const char *const shm_env[] = {NULL};

static void plugin_pair(void *lc, void *handle, void **sc, void **rc)
{
	const ncclNet_v10_t *t = &ncclNetPlugin_v10;
	ncclNetDeviceHandle_v10_t *dev = NULL;
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	*sc = *rc = NULL;
	while (!*sc || !*rc) {
		if (!*sc)
			assert_int_equal(t->connect(0, NULL, handle, sc, &dev), ncclSuccess);
		if (!*rc)
			assert_int_equal(t->accept(lc, rc, &dev), ncclSuccess);
		if (rw_now_ms() > deadline)
			fail_msg("connect/accept did not finish in %d ms", WAIT_MS);
	}
}

/* A closed comm's handle stays closed when its wrapper serves a new comm. */
static void plugin_reused_wrapper(void **state)
{
	const ncclNet_v10_t *t = &ncclNetPlugin_v10;
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	char buf[64] = "x";
	void *lc = NULL, *sc, *rc, *sc2, *rc2, *mh = NULL, *req = NULL;
	int rounds = 0;

	(void)state;
	rw_test_log_expect("not an open"); /* the stale calls below */
	assert_int_equal(t->init(NULL, NULL), ncclSuccess);
	assert_int_equal(t->listen(0, handle, &lc), ncclSuccess);
	plugin_pair(lc, handle, &sc, &rc);
	assert_int_equal(t->closeSend(sc), ncclSuccess);
	assert_int_equal(t->closeRecv(rc), ncclSuccess);
	/* Until the graveyard is full closed wrappers wait; then the oldest
	 * (sc's or rc's) serves a new comm.  Every old handle stays closed. */
	do {
		plugin_pair(lc, handle, &sc2, &rc2);
		assert_true(sc2 != sc && rc2 != rc);
		assert_int_not_equal(t->closeSend(sc), ncclSuccess);
		assert_int_not_equal(t->closeRecv(rc), ncclSuccess);
		assert_int_not_equal(t->regMr(sc, buf, sizeof(buf), NCCL_PTR_HOST, &mh),
				     ncclSuccess);
		assert_int_not_equal(t->isend(sc, buf, sizeof(buf), 1, NULL, NULL, &req),
				     ncclSuccess);
		assert_null(mh);
		/* the new comms are untouched by the stale calls */
		assert_int_equal(t->regMr(sc2, buf, sizeof(buf), NCCL_PTR_HOST, &mh), ncclSuccess);
		assert_int_equal(t->deregMr(sc2, mh), ncclSuccess);
		mh = NULL;
		assert_int_equal(t->closeSend(sc2), ncclSuccess);
		assert_int_equal(t->closeRecv(rc2), ncclSuccess);
	} while (++rounds < RW_GRAVE_MAX + 2 && rw_obj_from_handle(sc2) != rw_obj_from_handle(sc) &&
		 rw_obj_from_handle(rc2) != rw_obj_from_handle(sc));
	/* a wrapper was reused (the loop ended on it) */
	assert_true(rounds < RW_GRAVE_MAX + 2);
	assert_int_equal(t->closeListen(lc), ncclSuccess);
}

static void test_after_close(int (*create)(const struct rw_config *, struct rw_net **),
			     const char *const *env)
{
	char handle[RW_NET_HANDLE_MAXSIZE], sbuf[256] = "stale", rbuf[256];
	struct rw_net_listen *l = NULL;
	struct rw_net_comm *s = NULL, *r = NULL;
	struct rw_net_mr *smr = NULL, *rmr = NULL;
	struct rw_net_req *sreq = NULL, *rreq = NULL;
	struct rw_config cfg;
	struct rw_net *n = NULL;
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	void *data = rbuf;
	size_t size = sizeof(rbuf), got[RW_NET_MAX_RECVS];
	int tag = 7, done = 0;

	rw_test_log_reset();
	rw_test_log_expect("test on a completed request");
	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_int_equal(create(&cfg, &n), 0);
	assert_int_equal(rw_net_listen(n, 0, handle, &l), 0);
	while (!s || !r) {
		if (!s)
			assert_int_equal(rw_net_connect(n, 0, handle, &s), 0);
		if (!r)
			assert_int_equal(rw_net_accept(l, &r), 0);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_reg_mr(s, sbuf, sizeof(sbuf), RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(r, rbuf, sizeof(rbuf), RW_PTR_HOST, &rmr), 0);
	assert_int_equal(rw_net_irecv(r, 1, &data, &size, &tag, &rmr, &rreq), 0);
	assert_non_null(rreq);
	while (!sreq) {
		assert_int_equal(rw_net_isend(s, sbuf, sizeof(sbuf), tag, smr, &sreq), 0);
		assert_true(rw_now_ms() < deadline);
	}
	while (!done) {
		assert_int_equal(rw_net_test(rreq, &done, got), 0);
		assert_true(rw_now_ms() < deadline);
	}
	assert_int_equal(rw_net_close_send(s), 0);
	/* the send request was never tested: closing cancelled it */
	assert_int_equal(rw_net_test(sreq, &done, got), -EBADF);
	assert_int_equal(rw_net_test(rreq, &done, got), -EBADF); /* completed */
	assert_int_equal(rw_net_close_recv(r), 0);
	assert_int_equal(rw_net_test(rreq, &done, got), -EBADF);
	assert_int_equal(rw_net_close_listen(l), 0);
	rw_net_destroy(n);
	assert_int_equal(rw_test_log_unexpected(), 0);
}

static void sock_test_after_close(void **state)
{
	(void)state;
	test_after_close(rw_sock_create, sock_env);
}

static void shm_test_after_close(void **state)
{
	(void)state;
	test_after_close(rw_shm_create, shm_env);
}

/* 4 * RW_GRAVE_MAX listen/close cycles use at most RW_GRAVE_MAX + 1 shells. */
static void listener_shells_bounded(int (*create)(const struct rw_config *, struct rw_net **),
				    const char *const *env)
{
	enum { CYCLES = 4 * RW_GRAVE_MAX };
	static struct rw_net_listen *seen[CYCLES];
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *first = NULL, *l;
	struct rw_net_comm *c = NULL;
	struct rw_config cfg;
	struct rw_net *n = NULL;
	int distinct = 0;

	rw_test_log_reset();
	rw_test_log_expect("on a closed listener");
	assert_int_equal(rw_test_config(&cfg, env), 0);
	assert_int_equal(create(&cfg, &n), 0);
	for (int i = 0; i < CYCLES; i++) {
		bool known = false;

		assert_int_equal(rw_net_listen(n, 0, handle, &l), 0);
		for (int j = 0; j < distinct && !known; j++)
			known = seen[j] == l;
		if (!known)
			seen[distinct++] = l;
		if (!first)
			first = l;
		assert_int_equal(rw_net_close_listen(l), 0);
		if (i < RW_GRAVE_MAX) /* until its shell is reused */
			assert_int_equal(rw_net_accept(first, &c), -EBADF);
	}
	assert_true(distinct <= RW_GRAVE_MAX + 1);
	assert_null(c);
	rw_net_destroy(n);
}

static void sock_listener_shells(void **state)
{
	(void)state;
	listener_shells_bounded(rw_sock_create, sock_env);
}

static void shm_listener_shells(void **state)
{
	(void)state;
	listener_shells_bounded(rw_shm_create, shm_env);
}

static const char *const auto_env[] = {"RINGWAY_TRANSPORT", "auto", "RINGWAY_SOCKET_IFNAME", "lo",
				       NULL};

static void auto_listener_shells(void **state)
{
	(void)state;
	listener_shells_bounded(rw_net_create, auto_env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sock_test_after_close),
		cmocka_unit_test(shm_test_after_close),
		cmocka_unit_test(sock_listener_shells),
		cmocka_unit_test(shm_listener_shells),
		cmocka_unit_test(auto_listener_shells),
		/* last: it installs its logger */
		cmocka_unit_test(plugin_reused_wrapper),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
