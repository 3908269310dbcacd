/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring engine end to end: forked ranks over the socket transport on
 * loopback run allreduce, reduce-scatter, allgather and broadcast for every
 * datatype and op, counts 0, 1, smaller than the ranks, odd and large, in
 * place and out of place, and compare with references reduced by the host
 * kernels.  Large counts run with small chunks so that a segment has more
 * chunks than a channel has staging slots (the pipeline's hard case).
 */
#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/coll_internal.h"
#include "coll/rw_coll.h"
#include "coll_test.h"
#include "ring_checks.h"
#include "common/rw_log.h"
#include "gpu/rw_cuda.h"

/* --- sweeps, run in each child ----------------------------------------------- */

static int every_dtype_op(struct rw_comm *w, int rank, int p, void *arg)
{
	static const size_t counts[] = {0, 1, 2, 7, 1000}; /* 2 < p = 3 */
	struct rw_coll_comm *c = coll_of(w);
	enum rw_coll_kind kind = *(enum rw_coll_kind *)arg;
	uint64_t seed = 1;
	int bad = 0;

	for (int dt = 0; dt < RW_DTYPE_COUNT; dt++) {
		for (int op = 0; op < RW_OP_COUNT; op++) {
			for (size_t i = 0; i < RW_ARRAY_SIZE(counts); i++) {
				for (int ip = 0; ip < 2; ip++, seed++) {
					if (kind == RW_COLL_ALLREDUCE)
						bad += coll_check_allreduce(c, rank, p, counts[i],
									    dt, op, ip, seed);
					else if (counts[i] <= 7) /* recvcount */
						bad += coll_check_reduce_scatter(
							c, rank, p, counts[i], dt, op, ip, seed);
				}
			}
		}
	}
	return bad;
}

static void allreduce_every_dtype_and_op(void **state)
{
	enum rw_coll_kind k = RW_COLL_ALLREDUCE;

	(void)state;
	assert_int_equal(coll_fork(3, NULL, every_dtype_op, &k, 120), 0);
}

static void reduce_scatter_every_dtype_and_op(void **state)
{
	enum rw_coll_kind k = RW_COLL_REDUCE_SCATTER;

	(void)state;
	assert_int_equal(coll_fork(3, NULL, every_dtype_op, &k, 120), 0);
}

static int gather_and_bcast(struct rw_comm *w, int rank, int p, void *arg)
{
	static const size_t counts[] = {0, 1, 2, 333, 1001};
	struct rw_coll_comm *c = coll_of(w);
	uint64_t seed = 100;
	int bad = 0;

	(void)arg;
	for (int dt = 0; dt < RW_DTYPE_COUNT; dt++) {
		for (size_t i = 0; i < RW_ARRAY_SIZE(counts); i++) {
			for (int ip = 0; ip < 2; ip++, seed++) {
				bad += coll_check_allgather(c, rank, p, counts[i], dt, ip, seed);
				for (int root = 0; root < p; root++)
					bad += coll_check_broadcast(c, rank, counts[i], dt, root,
								    ip, seed);
			}
		}
	}
	return bad;
}

static void allgather_and_broadcast_every_dtype(void **state)
{
	(void)state;
	assert_int_equal(coll_fork(3, NULL, gather_and_bcast, NULL, 120), 0);
}

static void one_to_five_ranks(void **state)
{
	/* 300001 floats in 16 KiB chunks: a segment has 15-75 chunks, more
	 * than the 8 staging slots of a channel */
	static const char *const env[] = {"RINGWAY_CHUNK_BYTES", "16K", NULL};
	size_t large = 300001;

	(void)state;
	for (int p = 1; p <= 5; p++)
		assert_int_equal(coll_fork(p, env, coll_shapes, &large, 120), 0);
}

static void three_channels_small_chunks(void **state)
{
	static const char *const env[] = {"RINGWAY_CHUNK_BYTES", "4K", "RINGWAY_NCHANNELS", "3",
					  NULL};
	size_t large = 100003;

	(void)state;
	assert_int_equal(coll_fork(4, env, coll_shapes, &large, 120), 0);
}

/* Every dtype and op through the ring over shm, where a host chunk is
 * taken as it arrives (rw_net_irecv_sink): folded straight from the slots
 * when it is to be reduced, copied from them when it is kept; 4 KiB slots
 * cut every chunk into fragments, and the 64 KiB chunks, large enough for
 * cross-memory attach, go through the slots too.  Allgather and broadcast
 * (copies only) as well; the reduce-scatter's own layout and in place. */
static int folds_on_arrival(struct rw_comm *w, int rank, int p, void *arg)
{
	static const size_t counts[] = {0, 1, 2, 7, 1000, 30001};
	struct rw_coll_comm *c = coll_of(w);
	struct rw_coll_stats s0, s1;
	uint64_t seed = 7000;
	int bad = 0;

	(void)arg;
	rw_coll_comm_stats(c, &s0);
	for (int dt = 0; dt < RW_DTYPE_COUNT; dt++) {
		for (int op = 0; op < RW_OP_COUNT; op++) {
			for (size_t i = 0; i < RW_ARRAY_SIZE(counts); i++) {
				for (int ip = 0; ip < 2; ip++, seed++) {
					bad += coll_check_allreduce(c, rank, p, counts[i], dt, op,
								    ip, seed);
					if (counts[i] <= 1000)
						bad += coll_check_reduce_scatter(
							c, rank, p, counts[i], dt, op, ip, seed);
				}
			}
		}
	}
	rw_coll_comm_stats(c, &s1);
	if (s1.arrival_folds == s0.arrival_folds) {
		fprintf(stderr, "rank %d: no chunk was folded on arrival over shm\n", rank);
		bad++;
	}
	return bad;
}

/* The ring over shm with 64 KiB chunks cut into 4 KiB slots. */
#define RING_SHM_SMALL_SLOTS                                                                       \
	"RINGWAY_TRANSPORT", "shm", "RINGWAY_ALGO", "ring", "RINGWAY_CHUNK_BYTES", "64K",          \
		"RINGWAY_SHM_SLOT_BYTES", "4K"

static void ring_folds_chunks_on_arrival(void **state)
{
	static const char *const env[] = {RING_SHM_SMALL_SLOTS, "RINGWAY_SHM_CMA_MIN", "32K", NULL};

	(void)state;
	assert_int_equal(coll_fork(2, env, folds_on_arrival, NULL, 200), 0);
	assert_int_equal(coll_fork(3, env, folds_on_arrival, NULL, 200), 0);
	assert_int_equal(coll_fork(3, env, gather_and_bcast, NULL, 200), 0);
}

/* Results kept with non-temporal stores (RINGWAY_NONTEMPORAL_BYTES = 64K
 * here): a collective whose buffers on the host pass the threshold copies
 * the chunks it keeps from the slots that way, at any alignment (odd
 * counts of narrow types, allgather's offsets), and gets the same bits; one
 * below it does not.  arg: the threshold the ranks were given. */
static int nontemporal_results(struct rw_comm *w, int rank, int p, void *arg)
{
	static const size_t small[] = {0, 1, 7, 1000};
	static const size_t large[] = {30001, 100003};
	static const enum rw_dtype dts[] = {RW_DTYPE_INT8, RW_DTYPE_FLOAT16, RW_DTYPE_FLOAT32,
					    RW_DTYPE_FLOAT64};
	const char *threshold = arg;
	/* 64K: the large ones pass it; 4M: above them all (3.2 MB at most) */
	bool expect = strcmp(threshold, "64K") == 0;
	struct rw_coll_comm *c = coll_of(w);
	struct rw_coll_stats s0, s1, s2;
	uint64_t seed = 9000;
	int bad = 0;

	rw_coll_comm_stats(c, &s0);
	for (size_t i = 0; i < RW_ARRAY_SIZE(small); i++)
		for (int ip = 0; ip < 2; ip++, seed++)
			bad += coll_check_allreduce(c, rank, p, small[i], RW_DTYPE_FLOAT32,
						    RW_OP_SUM, ip, seed);
	rw_coll_comm_stats(c, &s1);
	if (s1.nontemporal_copied != s0.nontemporal_copied) {
		fprintf(stderr, "rank %d: %llu bytes of small collectives went around the cache\n",
			rank, (unsigned long long)(s1.nontemporal_copied - s0.nontemporal_copied));
		bad++;
	}
	for (size_t d = 0; d < RW_ARRAY_SIZE(dts); d++) {
		for (size_t i = 0; i < RW_ARRAY_SIZE(large); i++) {
			for (int ip = 0; ip < 2; ip++, seed++) {
				bad += coll_check_allreduce(c, rank, p, large[i], dts[d], RW_OP_SUM,
							    ip, seed);
				bad += coll_check_allreduce(c, rank, p, large[i] + 2, dts[d],
							    RW_OP_MAX, ip, seed);
				bad += coll_check_allgather(c, rank, p, large[i] / (size_t)p,
							    dts[d], ip, seed);
			}
		}
	}
	rw_coll_comm_stats(c, &s2);
	if ((s2.nontemporal_copied > s1.nontemporal_copied) != expect) {
		fprintf(stderr, "rank %d: %llu bytes went around the cache at threshold %s\n", rank,
			(unsigned long long)(s2.nontemporal_copied - s1.nontemporal_copied),
			threshold);
		bad++;
	}
	return bad;
}

/* The largest value means never: not even 16 TiB per rank streams. */
static int nontemporal_never(struct rw_comm *w, int rank, int p, void *arg)
{
	struct rw_coll_comm *c = coll_of(w);
	size_t huge = (size_t)1 << 44;
	bool never = strcmp(arg, "1024G") == 0;

	(void)p;
	if (rw_coll_nontemporal(c, NULL, huge, NULL, huge) == never) {
		fprintf(stderr, "rank %d: threshold %s: %s\n", rank, (const char *)arg,
			never ? "16 TiB still streams" : "16 TiB does not stream");
		return 1;
	}
	return 0;
}

static void ring_keeps_large_results_around_the_cache(void **state)
{
	static const char *const env[] = {RING_SHM_SMALL_SLOTS, "RINGWAY_NONTEMPORAL_BYTES", "64K",
					  NULL};
	static const char *const above[] = {RING_SHM_SMALL_SLOTS, "RINGWAY_NONTEMPORAL_BYTES", "4M",
					    NULL};
	static const char *const never[] = {RING_SHM_SMALL_SLOTS, "RINGWAY_NONTEMPORAL_BYTES",
					    "1024G", NULL};

	(void)state;
	assert_int_equal(coll_fork(2, env, nontemporal_results, "64K", 200), 0);
	assert_int_equal(coll_fork(3, env, nontemporal_results, "64K", 200), 0);
	assert_int_equal(coll_fork(2, above, nontemporal_results, "4M", 200), 0);
	assert_int_equal(coll_fork(2, never, nontemporal_never, "1024G", 60), 0);
	assert_int_equal(coll_fork(2, above, nontemporal_never, "4M", 60), 0);
}

static int ps_sweep(struct rw_comm *w, int rank, int p, void *arg)
{
	static const size_t counts[] = {0, 1, 2, 7, 100003};
	struct rw_coll_comm *c = coll_of(w);
	uint64_t seed = 5000;
	int bad = 0;

	(void)arg;
	for (size_t i = 0; i < RW_ARRAY_SIZE(counts); i++) {
		for (int ip = 0; ip < 2; ip++, seed++) {
			bad += coll_check_allreduce(c, rank, p, counts[i], RW_DTYPE_FLOAT32,
						    RW_OP_SUM, ip, seed);
			if (counts[i] > 1000)
				continue;
			bad += coll_check_allreduce(c, rank, p, counts[i], RW_DTYPE_INT64,
						    RW_OP_PROD, ip, seed);
			bad += coll_check_allreduce(c, rank, p, counts[i], RW_DTYPE_FLOAT16,
						    RW_OP_AVG, ip, seed);
			bad += coll_check_allreduce(c, rank, p, counts[i], RW_DTYPE_UINT8,
						    RW_OP_MIN, ip, seed);
		}
	}
	/* the other collectives run on the ring of a ps comm */
	bad += coll_check_reduce_scatter(c, rank, p, 5, RW_DTYPE_FLOAT32, RW_OP_SUM, false, seed);
	bad += coll_check_broadcast(c, rank, 77, RW_DTYPE_INT8, p - 1, false, seed);
	return bad;
}

static void parameter_server_baseline(void **state)
{
	static const char *const env[] = {"RINGWAY_ALGO", "ps", "RINGWAY_CHUNK_BYTES", "16K", NULL};

	(void)state;
	assert_int_equal(coll_fork(4, env, ps_sweep, NULL, 120), 0);
	assert_int_equal(coll_fork(2, env, ps_sweep, NULL, 120), 0);
}

/* Several collectives in flight; tested out of order, from the last. */
static int queue(struct rw_comm *w, int rank, int p, void *arg)
{
	enum { N = 4, COUNT = 5000 };
	struct rw_coll_comm *c = coll_of(w);
	struct rw_coll_req *req[N];
	float *buf[N], *ref = coll_xmalloc(COUNT * sizeof(float));
	int left = N, bad = 0;

	(void)arg;
	for (int i = 0; i < N; i++) {
		struct rw_coll_args a = {.kind = RW_COLL_ALLREDUCE,
					 .count = COUNT,
					 .dtype = RW_DTYPE_FLOAT32,
					 .op = RW_OP_SUM};

		buf[i] = coll_xmalloc(COUNT * sizeof(float));
		coll_fill(buf[i], COUNT, RW_DTYPE_FLOAT32, RW_OP_SUM, rank, 77 + (uint64_t)i);
		a.sendbuf = a.recvbuf = buf[i];
		if (rw_coll_start(c, &a, &req[i]))
			return 1;
	}
	for (uint64_t until = rw_now_ms() + 20000; left && rw_now_ms() < until;) {
		for (int i = N - 1; i >= 0; i--) {
			int done = 0;

			if (!req[i])
				continue;
			if (rw_coll_test(req[i], &done, NULL))
				return 1;
			if (done) {
				req[i] = NULL;
				left--;
			}
		}
	}
	for (int i = 0; i < N; i++) {
		coll_reference(ref, COUNT, RW_DTYPE_FLOAT32, RW_OP_SUM, p, 77 + (uint64_t)i);
		bad += !coll_same("queued allreduce", buf[i], ref, COUNT, RW_DTYPE_FLOAT32);
		free(buf[i]);
	}
	free(ref);
	return bad + left;
}

static void nonblocking_collectives_in_order(void **state)
{
	(void)state;
	assert_int_equal(coll_fork(3, NULL, queue, NULL, 60), 0);
}

/* Reduce-scatter and allgather over an uneven segment layout (CollNet's
 * windows): segment r has r + 2 elements, the last one none. */
static int windows(struct rw_comm *w, int rank, int p, void *arg)
{
	struct rw_coll_comm *c = coll_of(w);
	size_t off[8], cnt[8], space = 0;
	float *in, *ref, *out;
	int bad = 0, rc;

	(void)arg;
	for (int r = 0; r < p; r++) {
		off[r] = space;
		cnt[r] = r == p - 1 ? 0 : (size_t)r + 2;
		space += cnt[r];
	}
	in = coll_xmalloc(space * 4);
	ref = coll_xmalloc(space * 4);
	out = coll_xmalloc(space * 4);
	coll_fill(in, space, RW_DTYPE_FLOAT32, RW_OP_SUM, rank, 9);
	coll_reference(ref, space, RW_DTYPE_FLOAT32, RW_OP_SUM, p, 9);
	rc = rw_coll_run(c, &(struct rw_coll_args){.kind = RW_COLL_REDUCE_SCATTER,
						   .sendbuf = in,
						   .recvbuf = out,
						   .count = 0,
						   .dtype = RW_DTYPE_FLOAT32,
						   .op = RW_OP_SUM,
						   .seg_off = off,
						   .seg_count = cnt});
	bad += rc || !coll_same("windowed reduce-scatter", out, ref + off[rank], cnt[rank],
				RW_DTYPE_FLOAT32);
	/* allgather: rank r contributes its reduced segment */
	rc = rw_coll_run(c, &(struct rw_coll_args){.kind = RW_COLL_ALLGATHER,
						   .sendbuf = out,
						   .recvbuf = in,
						   .count = 0,
						   .dtype = RW_DTYPE_FLOAT32,
						   .seg_off = off,
						   .seg_count = cnt});
	bad += rc || !coll_same("windowed allgather", in, ref, space, RW_DTYPE_FLOAT32);
	free(in);
	free(ref);
	free(out);
	return bad;
}

static void segment_layouts(void **state)
{
	(void)state;
	assert_int_equal(coll_fork(4, NULL, windows, NULL, 60), 0);
}

static int bad_calls(struct rw_comm *w, int rank, int p, void *arg)
{
	struct rw_coll_comm *c = coll_of(w);
	struct rw_coll_req *req = NULL;
	float x = 1;
	int bad = 0;

	(void)arg;
	(void)p;
	(void)rank;
	rw_test_log_expect("coll: rank");
	bad += rw_coll_start(c,
			     &(struct rw_coll_args){.kind = RW_COLL_ALLREDUCE,
						    .sendbuf = &x,
						    .recvbuf = &x,
						    .count = 1,
						    .dtype = (enum rw_dtype)12},
			     &req) != -EINVAL;
	bad += rw_coll_start(c,
			     &(struct rw_coll_args){.kind = RW_COLL_ALLREDUCE,
						    .sendbuf = &x,
						    .recvbuf = &x,
						    .count = 1,
						    .dtype = RW_DTYPE_FLOAT32,
						    .op = (enum rw_op)5},
			     &req) != -EINVAL;
	bad += rw_coll_start(c,
			     &(struct rw_coll_args){.kind = RW_COLL_BROADCAST,
						    .sendbuf = &x,
						    .recvbuf = &x,
						    .count = 1,
						    .dtype = RW_DTYPE_FLOAT32,
						    .root = 3},
			     &req) != -EINVAL;
	bad += rw_coll_start(c,
			     &(struct rw_coll_args){.kind = RW_COLL_ALLREDUCE,
						    .recvbuf = &x,
						    .count = 1,
						    .dtype = RW_DTYPE_FLOAT32},
			     &req) != -EINVAL;
	bad += req != NULL; /* untouched on failure */
	/* the comm still works */
	bad += coll_check_allreduce(c, rank, p, 3, RW_DTYPE_FLOAT32, RW_OP_SUM, false, 3);
	return bad;
}

static void bad_arguments_are_refused(void **state)
{
	(void)state;
	assert_int_equal(coll_fork(3, NULL, bad_calls, NULL, 60), 0);
	assert_true(rw_coll_reduce_supported(RW_DTYPE_FLOAT8E5M2, RW_OP_AVG));
	assert_false(rw_coll_reduce_supported(12, RW_OP_SUM));
	assert_false(rw_coll_reduce_supported(RW_DTYPE_FLOAT32, 5));
}

static void partial_sums_in_recvbuf(void **state)
{
	static const char *const env[] = {COLL_RING_PARTIALS, NULL};
	static const char *const shm[] = {RING_SHM_SMALL_SLOTS, "RINGWAY_NCHANNELS", "2", NULL};

	(void)state;
	for (int p = 2; p <= 4; p++)
		assert_int_equal(coll_fork(p, env, coll_partials, NULL, 120), 0);
	/* shm's sink folds them into recvbuf as they arrive */
	assert_int_equal(coll_fork(3, shm, coll_partials, NULL, 120), 0);
}

/* Device buffers: staged through host memory, reduced by the CUDA kernels. */
static int device(struct rw_comm *w, int rank, int p, void *arg)
{
	enum { COUNT = 200003 };
	struct rw_coll_comm *c = coll_of(w);
	float *h = coll_xmalloc(COUNT * 4), *ref = coll_xmalloc(COUNT * 4);
	void *d = NULL;
	int bad = 0;

	(void)arg;
	if (rw_cuda_malloc(&d, COUNT * 4))
		return 1;
	coll_fill(h, COUNT, RW_DTYPE_FLOAT32, RW_OP_SUM, rank, 31);
	coll_reference(ref, COUNT, RW_DTYPE_FLOAT32, RW_OP_SUM, p, 31);
	bad += rw_cuda_memcpy(d, h, COUNT * 4) != 0;
	bad += rw_coll_run(c, &(struct rw_coll_args){.kind = RW_COLL_ALLREDUCE,
						     .sendbuf = d,
						     .recvbuf = d,
						     .count = COUNT,
						     .dtype = RW_DTYPE_FLOAT32,
						     .op = RW_OP_SUM}) != 0;
	bad += rw_cuda_memcpy(h, d, COUNT * 4) != 0;
	bad += !coll_same("device allreduce", h, ref, COUNT, RW_DTYPE_FLOAT32);
	rw_cuda_free(d);
	free(h);
	free(ref);
	return bad;
}

/* Is there a GPU?  Asked in a child: CUDA initialised in this process
 * would not survive the fork of the ranks (cudaErrorInitializationError). */
static bool gpu_present(void)
{
	pid_t pid = fork();
	int st = 0;

	if (pid == 0) {
		int n = 0;

		_exit(rw_cuda_device_count(&n) == 0 && n > 0 ? 0 : 1);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void device_buffers(void **state)
{
	static const char *const env[] = {"RINGWAY_CHUNK_BYTES", "64K", NULL};

	(void)state;
	if (!gpu_present())
		skip(); /* no GPU here: the device path is compiled, not run */
	assert_int_equal(coll_fork(2, env, device, NULL, 120), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(allreduce_every_dtype_and_op, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(reduce_scatter_every_dtype_and_op,
						rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(allgather_and_broadcast_every_dtype,
						rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(one_to_five_ranks, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(three_channels_small_chunks, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(ring_folds_chunks_on_arrival, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(ring_keeps_large_results_around_the_cache,
						rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(parameter_server_baseline, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(nonblocking_collectives_in_order, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(segment_layouts, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(bad_arguments_are_refused, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(partial_sums_in_recvbuf, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(device_buffers, rw_test_setup_log,
						rw_test_teardown_log),
	};

	rw_test_log_install();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
