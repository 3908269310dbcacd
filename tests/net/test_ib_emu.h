/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the tests of the ib transport on the emulated fabric share
 * (test_ib_emu.c: devices, data, GPUDirect, registrations;
 * test_ib_emu_faults.c: faults and connection set-up): a net on the fake
 * machine under sv_run, connected pairs, requests driven to the end.
 */
#ifndef RW_TEST_IB_EMU_H
#define RW_TEST_IB_EMU_H

#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_common.h"
#include "transport/base/rw_base.h"
#include "transport/ib/ib.h"

#define WAIT_MS	   10000
#define TIMEOUT_MS 3000
#define MIB	   (1024 * 1024)

static const char *root; /* the fake machine's "/" (sv_run) */

struct pair {
	struct rw_net_comm *s, *r;
};

struct op {
	struct rw_net_req *req;
	int rc;
	bool done;
	size_t sizes[RW_NET_MAX_RECVS];
};

/* A config: the common settings, then "NAME", "value" pairs (NULL ends). */
static inline void config(struct rw_config *cfg, const char *const *extra)
{
	char timeout[16];
	const char *pairs[48] = {
		"RINGWAY_SOCKET_IFNAME", "=lo", "RINGWAY_SOCKET_FAMILY", "ipv4",
		"RINGWAY_SYSFS_ROOT",	 root,	"RINGWAY_TIMEOUT_MS",	 timeout,
	};
	int n = 8;

	snprintf(timeout, sizeof(timeout), "%d", TIMEOUT_MS);
	for (int i = 0; extra && extra[i] && n < 46; i++)
		pairs[n++] = extra[i];
	pairs[n] = NULL;
	assert_int_equal(rw_test_config(cfg, pairs), 0);
}

/* An ib instance with these settings and NIC fault knobs (may be NULL). */
static inline int net_open(const char *const *extra, const char *faults, struct rw_net **net,
			   char *why, size_t len)
{
	struct rw_config cfg;
	int rc;

	config(&cfg, extra);
	if (faults)
		setenv("SOFTVERBS_FAULTS", faults, 1);
	rc = rw_ib_create_why(&cfg, net, why, len);
	unsetenv("SOFTVERBS_FAULTS");
	return rc;
}

static inline struct rw_net *net_new(const char *const *extra, const char *faults)
{
	struct rw_net *n = NULL;
	char why[512] = "";

	if (net_open(extra, faults, &n, why, sizeof(why)))
		fail_msg("rw_ib_create: %s", why);
	return n;
}

static const char *const roce[] = {"RINGWAY_IB_HCA", "=sv_roce0", NULL};

/* A connection from tx (sending) to rx (receiving), both on device 0, for
 * a communicator of traffic class tc (-1: none). */
static inline int pair_open_tc(struct rw_net *tx, struct rw_net *rx, int tc, struct pair *p)
{
	char handle[RW_NET_HANDLE_MAXSIZE];
	struct rw_net_listen *l = NULL;
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int rc = rw_net_listen(rx, 0, handle, &l);

	p->s = p->r = NULL;
	while (!rc && (!p->s || !p->r)) {
		if (!p->s)
			rc = rw_net_connect_tc(tx, 0, handle, tc, &p->s);
		if (!rc && !p->r)
			rc = rw_net_accept(l, &p->r);
		if (!rc && rw_now_ms() > deadline)
			rc = -ETIMEDOUT;
	}
	if (l)
		rw_net_close_listen(l);
	return rc;
}

static inline int pair_open(struct rw_net *tx, struct rw_net *rx, struct pair *p)
{
	return pair_open_tc(tx, rx, -1, p);
}

static inline void pair_close(struct pair *p)
{
	assert_int_equal(rw_net_close_send(p->s), 0);
	assert_int_equal(rw_net_close_recv(p->r), 0);
}

/* Test ops until all are done (or failed); false past limit_ms. */
static inline bool drive(struct op *ops, int n, uint64_t limit_ms)
{
	uint64_t deadline = rw_now_ms() + limit_ms;
	int left = 0;

	for (int i = 0; i < n; i++)
		left += !ops[i].done;
	while (left && rw_now_ms() < deadline) {
		for (int i = 0; i < n; i++) {
			int done = 0, rc;

			if (ops[i].done)
				continue;
			rc = rw_net_test(ops[i].req, &done, ops[i].sizes);
			if (rc || done) {
				ops[i].done = true;
				ops[i].rc = rc;
				left--;
			}
		}
	}
	return left == 0;
}

static inline void post_recv(struct rw_net_comm *r, void *buf, size_t size, struct rw_net_mr *mr,
			     struct op *op)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;
	int tag = 1;

	memset(op, 0, sizeof(*op));
	do
		assert_int_equal(rw_net_irecv(r, 1, &buf, &size, &tag, &mr, &op->req), 0);
	while (!op->req && rw_now_ms() < deadline);
	assert_non_null(op->req);
}

static inline void post_send(struct rw_net_comm *s, void *buf, size_t size, struct rw_net_mr *mr,
			     struct op *op)
{
	uint64_t deadline = rw_now_ms() + WAIT_MS;

	memset(op, 0, sizeof(*op));
	do
		assert_int_equal(rw_net_isend(s, buf, size, 1, mr, &op->req), 0);
	while (!op->req && rw_now_ms() < deadline);
	assert_non_null(op->req);
}

/* One message of size bytes, checked byte for byte. */
static inline void one_message(struct pair *p, size_t size)
{
	char *sb = malloc(size + 1), *rb = calloc(1, size + 1);
	struct rw_net_mr *smr, *rmr;
	struct op ops[2];

	rw_test_fill(sb, size, size * 3 + 1);
	assert_int_equal(rw_net_reg_mr(p->s, sb, size, RW_PTR_HOST, &smr), 0);
	assert_int_equal(rw_net_reg_mr(p->r, rb, size, RW_PTR_HOST, &rmr), 0);
	post_recv(p->r, rb, size, rmr, &ops[1]);
	post_send(p->s, sb, size, smr, &ops[0]);
	assert_true(drive(ops, 2, WAIT_MS));
	assert_int_equal(ops[0].rc, 0);
	assert_int_equal(ops[1].rc, 0);
	assert_int_equal(ops[1].sizes[0], size);
	assert_memory_equal(sb, rb, size);
	assert_int_equal(rw_net_dereg_mr(p->s, smr), 0);
	assert_int_equal(rw_net_dereg_mr(p->r, rmr), 0);
	free(sb);
	free(rb);
}

static inline int setup(void **state)
{
	(void)state;
	rw_test_log_reset();
	return 0;
}

static inline int teardown(void **state)
{
	(void)state;
	if (rw_ib_live_total() != 0)
		fail_msg("%ld ib objects still alive", rw_ib_live_total());
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

/* main(): SOFTVERBS_ROOT, or 77 (skip) outside sv_run. */
static inline int ib_emu_run(const char *name, const struct CMUnitTest *tests, size_t n)
{
	root = rw_env_get("SOFTVERBS_ROOT");
	if (!root) {
		fprintf(stderr, "%s: run it under sv_run (tests/softverbs)\n", name);
		return 77;
	}
	rw_test_log_install();
	return _cmocka_run_group_tests(name, tests, n, NULL, NULL);
}

#endif /* RW_TEST_IB_EMU_H */
