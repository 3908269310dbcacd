/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fixture of the shm transport's own tests (test_shm, test_shm_auto):
 * one shm net per test made from a config, a connected pair on it, and one
 * message through a pair checked byte for byte.  Header-only: each test
 * program has its own net.
 */
#ifndef RW_TEST_SHM_FIXTURE_H
#define RW_TEST_SHM_FIXTURE_H

#include "support/rw_test.h"

#include "common/rw_log.h"
#include "net/test_shm_util.h"
#include "transport/shm/shm.h"

#define MIB (1024 * 1024)

static struct rw_config cfg;
static struct rw_net *net;

static const char *const env_default[] = {"RINGWAY_TIMEOUT_MS", "5000", NULL};

static inline int make_net(const char *const *env)
{
	if (rw_test_config(&cfg, env) != 0)
		return -1;
	return rw_shm_create(&cfg, &net);
}

static inline int setup(void **state)
{
	(void)state;
	rw_test_log_reset();
	return make_net(env_default);
}

static inline int teardown(void **state)
{
	(void)state;
	rw_net_destroy(net);
	net = NULL;
	if (rw_shm_live_total())
		fail_msg("%ld shm objects still alive after destroy", rw_shm_live_total());
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

struct pair {
	struct rw_net_comm *s, *r;
};

static inline void pair_open(struct pair *p)
{
	char h[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l;
	uint64_t end = rw_now_ms() + SHM_WAIT_MS;

	p->s = p->r = NULL;
	assert_int_equal(rw_net_listen(net, 0, h, &l), 0);
	while (!p->s || !p->r) {
		if (!p->s)
			assert_int_equal(rw_net_connect(net, 0, h, &p->s), 0);
		if (!p->r)
			assert_int_equal(rw_net_accept(l, &p->r), 0);
		assert_true(rw_now_ms() < end);
	}
	assert_int_equal(rw_net_close_listen(l), 0);
}

static inline void pair_close(struct pair *p)
{
	assert_int_equal(rw_net_close_send(p->s), 0);
	assert_int_equal(rw_net_close_recv(p->r), 0);
}

/* One message of size bytes through p, checked byte for byte. */
static inline void exchange(struct pair *p, size_t size)
{
	char *a = malloc(size + 1), *b = malloc(size + 1);
	struct rw_net_mr *ma, *mb;
	struct rw_net_req *rs, *rr;
	uint64_t end = rw_now_ms() + SHM_WAIT_MS;
	int ds = 0, dr = 0;
	size_t got = 0;

	assert_non_null(a);
	assert_non_null(b);
	rw_test_fill(a, size, size);
	memset(b, 0, size);
	assert_int_equal(rw_net_reg_mr(p->s, a, size, RW_PTR_HOST, &ma), 0);
	assert_int_equal(rw_net_reg_mr(p->r, b, size, RW_PTR_HOST, &mb), 0);
	assert_int_equal(shm_recv(p->r, b, size, 7, mb, &rr), 0);
	assert_int_equal(shm_send(p->s, a, size, 7, ma, &rs), 0);
	while (!ds || !dr) {
		if (!ds)
			assert_int_equal(rw_net_test(rs, &ds, NULL), 0);
		if (!dr)
			assert_int_equal(rw_net_test(rr, &dr, &got), 0);
		assert_true(rw_now_ms() < end);
	}
	assert_int_equal(got, size);
	assert_memory_equal(a, b, size);
	assert_int_equal(rw_net_dereg_mr(p->s, ma), 0);
	assert_int_equal(rw_net_dereg_mr(p->r, mb), 0);
	free(a);
	free(b);
}

#endif /* RW_TEST_SHM_FIXTURE_H */
