/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The public C API (include/ringway.h) as a program sees it: linked against
 * libringway.so, forked ranks meeting at a "host:port" rendezvous, at
 * RINGWAY_ROOT, or at torchrun's MASTER_ADDR/MASTER_PORT.
 */
#define _GNU_SOURCE /* setenv */
#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_test.h"
#include "include/ringway.h"

static int collectives(const char *root, int rank, int p, void *arg)
{
	enum { N = 10007 };
	float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
	float *ref = malloc(N * sizeof(float));
	int32_t rs_in[3 * 5], rs_out[5], rs_ref[3 * 5];
	uint8_t ag[3 * 4];
	uint16_t bc[333], bc_ref[333];
	rw_comm_t *c = NULL;
	int bad = 0, rc;

	(void)arg;
	rc = rw_comm_init(&c, p, rank, root);
	if (rc) {
		fprintf(stderr, "rank %d: rw_comm_init: %s\n", rank, rw_strerror(rc));
		return 1;
	}
	/* allreduce, out of place and in place */
	coll_fill(a, N, RW_DTYPE_FLOAT32, RW_OP_SUM, rank, 1);
	coll_reference(ref, N, RW_DTYPE_FLOAT32, RW_OP_SUM, p, 1);
	bad += rw_allreduce(c, a, b, N, RW_FLOAT32, RW_SUM) != 0;
	bad += !coll_same("rw_allreduce", b, ref, N, RW_DTYPE_FLOAT32);
	bad += rw_allreduce(c, a, a, N, RW_FLOAT32, RW_SUM) != 0;
	bad += !coll_same("rw_allreduce in place", a, ref, N, RW_DTYPE_FLOAT32);
	/* reduce-scatter */
	coll_fill(rs_in, 15, RW_DTYPE_INT32, RW_OP_MAX, rank, 2);
	coll_reference(rs_ref, 15, RW_DTYPE_INT32, RW_OP_MAX, p, 2);
	bad += rw_reduce_scatter(c, rs_in, rs_out, 5, RW_INT32, RW_MAX) != 0;
	bad += !coll_same("rw_reduce_scatter", rs_out, rs_ref + 5 * rank, 5, RW_DTYPE_INT32);
	/* allgather, in place */
	memset(ag, 0, sizeof(ag));
	for (int i = 0; i < 4; i++)
		ag[4 * rank + i] = (uint8_t)(10 * rank + i);
	bad += rw_allgather(c, ag + 4 * rank, ag, 4, RW_UINT8) != 0;
	for (int i = 0; i < 12; i++)
		bad += ag[i] != (uint8_t)(10 * (i / 4) + i % 4);
	/* broadcast from the last rank; the others pass no sendbuf */
	coll_fill(bc_ref, 333, RW_DTYPE_BFLOAT16, RW_OP_SUM, 7, 3);
	memset(bc, 0, sizeof(bc));
	bad += rw_broadcast(c, rank == p - 1 ? bc_ref : NULL, bc, 333, RW_BFLOAT16, p - 1) != 0;
	bad += !coll_same("rw_broadcast", bc, bc_ref, 333, RW_DTYPE_BFLOAT16);
	/* a bad call fails without breaking the communicator */
	bad += rw_allreduce(c, a, b, N, (rw_dtype_t)12, RW_SUM) != -EINVAL;
	bad += rw_allreduce(c, a, b, 1, RW_FLOAT32, RW_SUM) != 0;
	bad += rw_comm_destroy(c) != 0;
	free(a);
	free(b);
	free(ref);
	return bad;
}

static void collectives_through_the_api(void **state)
{
	(void)state;
	assert_int_equal(coll_fork_raw(3, collectives, NULL, 60), 0);
}

/* rw_comm_init(NULL): RINGWAY_ROOT, then MASTER_ADDR and MASTER_PORT + 1. */
static int from_env(const char *root, int rank, int p, void *arg)
{
	const char *how = arg;
	rw_comm_t *c = NULL;
	int32_t x = rank + 1, y = 0, rc;

	if (strcmp(how, "ringway") == 0) {
		setenv("RINGWAY_ROOT", root, 1);
	} else {
		char port[16];

		snprintf(port, sizeof(port), "%d", atoi(strrchr(root, ':') + 1) - 1);
		setenv("MASTER_ADDR", "127.0.0.1", 1);
		setenv("MASTER_PORT", port, 1);
	}
	rc = rw_comm_init(&c, p, rank, NULL);
	if (rc) {
		fprintf(stderr, "rank %d: rw_comm_init(NULL) with %s: %s\n", rank, how,
			rw_strerror(rc));
		return 1;
	}
	rc = rw_allreduce(c, &x, &y, 1, RW_INT32, RW_SUM);
	rw_comm_destroy(c);
	return rc || y != p * (p + 1) / 2;
}

static void rendezvous_from_the_environment(void **state)
{
	(void)state;
	assert_int_equal(coll_fork_raw(2, from_env, "ringway", 60), 0);
	assert_int_equal(coll_fork_raw(3, from_env, "torchrun", 60), 0);
}

static void bad_arguments(void **state)
{
	rw_comm_t *c = (rw_comm_t *)0x1;
	double one = 1.5, out = 0;

	(void)state;
	assert_int_equal(rw_comm_init(NULL, 2, 0, "127.0.0.1:1"), -EINVAL);
	assert_int_equal(rw_comm_init(&c, 0, 0, "127.0.0.1:1"), -EINVAL);
	assert_int_equal(rw_comm_init(&c, 2, 2, "127.0.0.1:1"), -EINVAL);
	assert_ptr_equal(c, (rw_comm_t *)0x1); /* untouched on failure */
	assert_int_equal(rw_allreduce(NULL, &one, &out, 1, RW_FLOAT64, RW_SUM), -EINVAL);
	assert_string_equal(rw_strerror(0), "success");
	assert_true(strlen(rw_strerror(-ETIMEDOUT)) > 0);
	/* one rank needs no rendezvous; avg of one is the value */
	assert_int_equal(rw_comm_init(&c, 1, 0, NULL), 0);
	assert_int_equal(rw_allreduce(c, &one, &out, 1, RW_FLOAT64, RW_AVG), 0);
	assert_true(out == 1.5);
	assert_int_equal(rw_comm_destroy(c), 0);
	assert_int_equal(rw_comm_destroy(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(collectives_through_the_api),
		cmocka_unit_test(rendezvous_from_the_environment),
		cmocka_unit_test(bad_arguments),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
