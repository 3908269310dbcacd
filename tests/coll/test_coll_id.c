/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_get_unique_id() / rw_comm_init_id() (NCCL-style rendezvous: rank 0
 * listens on an ephemeral port, the id travels by other means -- here a
 * shared page, in torch a c10d Store) and rw_comm_get_error() (which rank
 * failed), through libringway.so with forked ranks.
 */
#define _GNU_SOURCE /* setenv */
#include "support/rw_test.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coll_test.h"
#include "common/rw_build.h"
#include "common/rw_common.h"
#include "include/ringway.h"

/* What rank 0 hands the others: the id, then ready; and how many
 * survivors of a killed rank have checked what they saw. */
struct board {
	volatile int ready;
	int checked;
	rw_unique_id_t id;
};

static struct board *board;

/* Rank 0 makes the id and posts it; the others wait for it (bounded). */
static int share_id(int rank, rw_unique_id_t *id)
{
	uint64_t until = rw_now_ms() + 20000;
	int rc;

	if (rank == 0) {
		rc = rw_get_unique_id(id);
		if (rc) {
			fprintf(stderr, "rw_get_unique_id: %s\n", rw_strerror(rc));
			return rc;
		}
		board->id = *id;
		__atomic_store_n(&board->ready, 1, __ATOMIC_RELEASE);
		return 0;
	}
	while (!__atomic_load_n(&board->ready, __ATOMIC_ACQUIRE)) {
		if (rw_now_ms() > until) {
			fprintf(stderr, "rank %d: no id from rank 0\n", rank);
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
	*id = board->id;
	return 0;
}

static void board_reset(void)
{
	if (!board) {
		board = mmap(NULL, sizeof(*board), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		assert_true(board != MAP_FAILED);
	}
	memset((void *)board, 0, sizeof(*board));
}

static int join_and_reduce(const char *root, int rank, int p, void *arg)
{
	rw_unique_id_t id;
	rw_comm_t *c = NULL;
	int64_t x = rank + 1, y = 0;
	char why[128] = "x";
	int who = 7, rc, bad = 0;

	(void)root;
	(void)arg;
	rc = share_id(rank, &id);
	if (!rc)
		rc = rw_comm_init_id(&c, p, rank, &id, NULL);
	if (rc) {
		fprintf(stderr, "rank %d: rw_comm_init_id: %s\n", rank, rw_strerror(rc));
		return 1;
	}
	bad += rw_allreduce(c, &x, &y, 1, RW_INT64, RW_SUM) != 0;
	bad += y != (int64_t)p * (p + 1) / 2;
	/* no failure: 0, no rank, an empty line */
	bad += rw_comm_get_error(c, &who, why, sizeof(why)) != 0;
	bad += who != -1 || why[0] != '\0';
	bad += rw_comm_get_error(c, NULL, NULL, 0) != 0;
	bad += rw_comm_destroy(c) != 0;
	/* rank 0: the id served its communicator; a second use is refused */
	if (rank == 0) {
		rw_test_log_expect("no listener in this process");
		bad += rw_comm_init_id(&c, p, 0, &id, NULL) != -EINVAL;
	}
	return bad;
}

static void ranks_meet_at_an_id(void **state)
{
	static const int sizes[] = {1, 2, 3, 4};

	(void)state;
	for (size_t i = 0; i < RW_ARRAY_SIZE(sizes); i++) {
		board_reset();
		assert_int_equal(coll_fork_raw(sizes[i], join_and_reduce, NULL, 60), 0);
	}
}

/* A rank dies after init: the others' collective fails and
 * rw_comm_get_error() names it. */
static int one_dies(const char *root, int rank, int p, void *arg)
{
	rw_unique_id_t id;
	rw_comm_t *c = NULL;
	float x[4096] = {0}, y[4096];
	char why[256] = "";
	int who = -2, rc, err, bad = 0;

	(void)root;
	(void)arg;
	rc = share_id(rank, &id);
	if (!rc)
		rc = rw_comm_init_id(&c, p, rank, &id, NULL);
	if (rc) {
		fprintf(stderr, "rank %d: rw_comm_init_id: %s\n", rank, rw_strerror(rc));
		return 1;
	}
	bad += rw_allreduce(c, x, y, 4096, RW_FLOAT32, RW_SUM) != 0;
	if (rank == p - 1)
		_exit(0); /* dies without a word, its connections reset */
	rw_test_log_expect("coll: rank");
	rw_test_log_expect("failed");
	rw_test_log_expect("RINGWAY_TIMEOUT_MS");
	err = rw_allreduce(c, x, y, 4096, RW_FLOAT32, RW_SUM);
	bad += err == 0;
	bad += rw_comm_get_error(c, &who, why, sizeof(why)) != err;
	if (who != p - 1 || !strstr(why, "rank ")) {
		fprintf(stderr, "rank %d: error %d, failed rank %d, '%s'\n", rank, err, who, why);
		bad++;
	} else {
		char want[32];

		snprintf(want, sizeof(want), "rank %d", p - 1);
		bad += strstr(why, want) == NULL;
		fprintf(stderr, "rank %d sees: %s\n", rank, why);
	}
	/* the failure is sticky */
	bad += rw_allreduce(c, x, y, 1, RW_FLOAT32, RW_SUM) != err;
	/* The survivors leave together: a rank that destroys its comm closes
	 * its links, and a failure notice naming the dead rank that a slower
	 * survivor has not read yet would go with them (test_coll_fail's
	 * survivor_leaves). */
	fflush(stderr);
	__atomic_add_fetch(&board->checked, 1, __ATOMIC_ACQ_REL);
	for (uint64_t until = rw_now_ms() + 30000;
	     __atomic_load_n(&board->checked, __ATOMIC_ACQUIRE) < p - 1 && rw_now_ms() < until;)
		usleep(1000);
	rw_comm_destroy(c);
	return bad;
}

static void a_dead_rank_is_named(void **state)
{
	(void)state;
	board_reset();
	setenv("RINGWAY_TIMEOUT_MS", "5000", 1);
	assert_int_equal(coll_fork_raw(3, one_dies, NULL, 60), 0);
	unsetenv("RINGWAY_TIMEOUT_MS");
}

static void bad_ids(void **state)
{
	rw_unique_id_t id, junk;
	rw_comm_t *c = (rw_comm_t *)0x1;

	(void)state;
	memset(&junk, 0x5a, sizeof(junk));
	rw_test_log_expect("rw_comm_init_id");
	assert_int_equal(rw_comm_init_id(&c, 2, 1, NULL, NULL), -EINVAL);
	assert_int_equal(rw_comm_init_id(&c, 2, 1, &junk, NULL), -EINVAL);
	assert_int_equal(rw_comm_init_id(&c, 2, 0, &junk, NULL), -EINVAL);
	rw_test_log_expect("rw_get_unique_id");
	assert_int_equal(rw_get_unique_id(NULL), -EINVAL);
	assert_ptr_equal(c, (rw_comm_t *)0x1);
	/* a 17th id closes the oldest listener: that id no longer serves rank 0 */
	assert_int_equal(rw_get_unique_id(&id), 0);
	for (int i = 0; i < 16; i++) {
		assert_int_equal(rw_get_unique_id(&junk), 0);
	}
	assert_int_equal(rw_comm_init_id(&c, 1, 0, &id, NULL), -EINVAL);
	/* the newest still does (one rank: no peer needed) */
	assert_int_equal(rw_comm_init_id(&c, 1, 0, &junk, NULL), 0);
	assert_int_equal(rw_comm_get_error(c, NULL, NULL, 0), 0);
	assert_int_equal(rw_comm_destroy(c), 0);
	assert_int_equal(rw_comm_get_error(NULL, NULL, NULL, 0), 0);
	/* what ringway_torch registers "cuda" by */
	assert_int_equal(rw_cuda_support(), RW_HAVE_CUDA ? 1 : 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ranks_meet_at_an_id),
		cmocka_unit_test(a_dead_rank_is_named),
		cmocka_unit_test(bad_ids),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
