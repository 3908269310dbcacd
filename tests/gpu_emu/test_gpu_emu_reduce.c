/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernels/ _dev reductions on the host-emulated GPU: every datatype x op,
 * k-source folds (in place too), avg and scale, each bit-equal to the host
 * call on the same inputs; run in stream order with the copies around them
 * (held behind a gate, nothing runs early); pageable host memory refused as
 * a GPU kernel would fault on it, pinned memory taken.
 */
#include "support/rw_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rw_common.h"
#include "gpu/rw_cuda.h"
#include "gpu/rw_gpu_emu.h"
#include "kernels/rw_reduce.h"

#define COUNT 1001 /* odd: no kernel sees only whole vectors */

static void *stream;

struct gate {
	int open;
};

/* Static, opened by teardown: a failed check leaves no stream held. */
static struct gate gate;

static int group_setup(void **state)
{
	(void)state;
	rw_test_log_install();
	if (rw_gpu_emu_enable(1, 0) != 0)
		return -1;
	return rw_cuda_stream_create(&stream);
}

static int group_teardown(void **state)
{
	(void)state;
	rw_cuda_stream_destroy(stream);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	rw_test_log_reset();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	__atomic_store_n(&gate.open, 1, __ATOMIC_RELEASE);
	RW_TEST_ASSERT_LOG_CLEAN();
	return 0;
}

static void *dev_from(const void *host, size_t n)
{
	void *d = NULL;

	assert_int_equal(rw_cuda_malloc(&d, n), 0);
	assert_int_equal(rw_cuda_memcpy(d, host, n), 0);
	return d;
}

static void every_dtype_and_op(void **state)
{
	(void)state;
	for (int t = 0; t < RW_DTYPE_COUNT; t++) {
		size_t bytes = COUNT * rw_dtype_size((enum rw_dtype)t);
		char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes),
		     *got = malloc(bytes);

		assert_true(a && b && want && got);
		for (int op = 0; op < RW_OP_COUNT; op++) {
			void *da, *db, *dd;

			rw_test_fill(a, bytes, (uint64_t)(t * 16 + op));
			rw_test_fill(b, bytes, (uint64_t)(t * 16 + op + 1000));
			da = dev_from(a, bytes);
			db = dev_from(b, bytes);
			assert_int_equal(rw_cuda_malloc(&dd, bytes), 0);
			assert_int_equal(
				rw_reduce(want, a, b, COUNT, (enum rw_dtype)t, (enum rw_op)op), 0);
			assert_int_equal(rw_reduce_dev(dd, da, db, COUNT, (enum rw_dtype)t,
						       (enum rw_op)op, stream),
					 0);
			/* in place as well: da = da op db */
			assert_int_equal(rw_reduce_dev(da, da, db, COUNT, (enum rw_dtype)t,
						       (enum rw_op)op, stream),
					 0);
			assert_int_equal(rw_cuda_stream_sync(stream), 0);
			assert_int_equal(rw_cuda_memcpy(got, dd, bytes), 0);
			if (memcmp(got, want, bytes))
				fail_msg("%s %s: device result differs from the host's",
					 rw_dtype_name((enum rw_dtype)t),
					 rw_op_name((enum rw_op)op));
			assert_int_equal(rw_cuda_memcpy(got, da, bytes), 0);
			if (memcmp(got, want, bytes))
				fail_msg("%s %s in place: differs", rw_dtype_name((enum rw_dtype)t),
					 rw_op_name((enum rw_op)op));
			rw_cuda_free(da);
			rw_cuda_free(db);
			rw_cuda_free(dd);
		}
		free(a);
		free(b);
		free(want);
		free(got);
	}
}

static const enum rw_dtype some_types[] = {RW_DTYPE_INT32,     RW_DTYPE_UINT8,	 RW_DTYPE_FLOAT32,
					   RW_DTYPE_FLOAT64,   RW_DTYPE_FLOAT16, RW_DTYPE_BFLOAT16,
					   RW_DTYPE_FLOAT8E4M3};

static void folds_avg_and_scale(void **state)
{
	(void)state;
	for (size_t i = 0; i < RW_ARRAY_SIZE(some_types); i++) {
		enum rw_dtype t = some_types[i];
		size_t bytes = COUNT * rw_dtype_size(t);
		const void *hs[RW_REDUCE_MAX_SRCS], *ds[RW_REDUCE_MAX_SRCS];
		char *h[RW_REDUCE_MAX_SRCS], *want = malloc(bytes), *got = malloc(bytes);
		void *d[RW_REDUCE_MAX_SRCS], *out;

		assert_true(want && got);
		for (int k = 0; k < RW_REDUCE_MAX_SRCS; k++) {
			h[k] = malloc(bytes);
			assert_non_null(h[k]);
			rw_test_fill(h[k], bytes, 7000 + i * 100 + (size_t)k);
			d[k] = dev_from(h[k], bytes);
			hs[k] = h[k];
			ds[k] = d[k];
		}
		assert_int_equal(rw_cuda_malloc(&out, bytes), 0);
		for (unsigned int n = 1; n <= RW_REDUCE_MAX_SRCS; n += 3) {
			assert_int_equal(rw_reduce_multi(want, hs, n, COUNT, t, RW_OP_MAX), 0);
			assert_int_equal(
				rw_reduce_multi_dev(out, ds, n, COUNT, t, RW_OP_MAX, stream), 0);
			assert_int_equal(rw_cuda_stream_sync(stream), 0);
			assert_int_equal(rw_cuda_memcpy(got, out, bytes), 0);
			assert_memory_equal(got, want, bytes);

			assert_int_equal(rw_reduce_multi_avg(want, hs, n, COUNT, t, 3), 0);
			assert_int_equal(rw_reduce_multi_avg_dev(out, ds, n, COUNT, t, 3, stream),
					 0);
			assert_int_equal(rw_cuda_stream_sync(stream), 0);
			assert_int_equal(rw_cuda_memcpy(got, out, bytes), 0);
			assert_memory_equal(got, want, bytes);
		}
		assert_int_equal(rw_scale(want, hs[2], COUNT, t, 5), 0);
		assert_int_equal(rw_scale_dev(out, ds[2], COUNT, t, 5, stream), 0);
		/* avg through rw_reduce_dev reduces as sum */
		assert_int_equal(rw_reduce_dev(d[0], d[0], d[1], COUNT, t, RW_OP_AVG, stream), 0);
		assert_int_equal(rw_cuda_stream_sync(stream), 0);
		assert_int_equal(rw_cuda_memcpy(got, out, bytes), 0);
		assert_memory_equal(got, want, bytes);
		assert_int_equal(rw_reduce(want, hs[0], hs[1], COUNT, t, RW_OP_SUM), 0);
		assert_int_equal(rw_cuda_memcpy(got, d[0], bytes), 0);
		assert_memory_equal(got, want, bytes);
		for (int k = 0; k < RW_REDUCE_MAX_SRCS; k++) {
			rw_cuda_free(d[k]);
			free(h[k]);
		}
		rw_cuda_free(out);
		free(want);
		free(got);
	}
}

static void gate_fn(void *arg)
{
	struct gate *g = arg;
	uint64_t end = rw_now_ms() + 20000;

	while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE) && rw_now_ms() < end)
		usleep(200);
}

/* copy in, reduce, copy out, all enqueued behind a closed gate: nothing
 * runs before it opens, and the result is right without a sync between. */
static void reductions_run_in_stream_order(void **state)
{
	const size_t n = 4096, bytes = n * sizeof(float);
	float *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes),
	      *got = calloc(n, sizeof(float));
	struct rw_gpu_emu_stats s0, s1;
	struct gate *g = &gate;
	void *da, *db, *ev;

	(void)state;
	assert_true(a && b && want && got);
	__atomic_store_n(&g->open, 0, __ATOMIC_RELEASE); /* earlier teardowns opened it */
	for (size_t i = 0; i < n; i++) {
		a[i] = (float)i * 0.5f;
		b[i] = 3.0f - (float)i;
	}
	assert_int_equal(rw_reduce(want, a, b, n, RW_DTYPE_FLOAT32, RW_OP_SUM), 0);
	assert_int_equal(rw_cuda_malloc(&da, bytes), 0);
	assert_int_equal(rw_cuda_malloc(&db, bytes), 0);
	assert_int_equal(rw_cuda_event_create(&ev), 0);
	rw_gpu_emu_stats(&s0);
	assert_int_equal(rw_cuda_launch_host(stream, gate_fn, g), 0);
	assert_int_equal(rw_cuda_memcpy_async(da, a, bytes, stream), 0);
	assert_int_equal(rw_cuda_memcpy_async(db, b, bytes, stream), 0);
	assert_int_equal(rw_reduce_dev(da, da, db, n, RW_DTYPE_FLOAT32, RW_OP_SUM, stream), 0);
	assert_int_equal(rw_cuda_memcpy_async(got, da, bytes, stream), 0);
	assert_int_equal(rw_cuda_event_record(ev, stream), 0);
	assert_int_equal(rw_cuda_event_query(ev), -EAGAIN);
	rw_gpu_emu_stats(&s1);
	assert_int_equal(s1.kernels, s0.kernels); /* enqueued, not run */
	for (size_t i = 0; i < n; i++)
		assert_true(got[i] == 0.0f);
	__atomic_store_n(&g->open, 1, __ATOMIC_RELEASE);
	assert_int_equal(rw_cuda_event_sync(ev), 0);
	assert_memory_equal(got, want, bytes);
	rw_gpu_emu_stats(&s1);
	assert_int_equal(s1.kernels - s0.kernels, 1);
	assert_int_equal(s1.copies_h2d - s0.copies_h2d, 2);
	assert_int_equal(s1.copies_d2h - s0.copies_d2h, 1);
	rw_cuda_event_destroy(ev);
	rw_cuda_free(da);
	rw_cuda_free(db);
	free(a);
	free(b);
	free(want);
	free(got);
}

static void host_memory_refused_pinned_taken(void **state)
{
	struct rw_gpu_emu_stats s0, s1;
	int32_t *h = calloc(64, sizeof(int32_t)), *p, *q;
	void *d;

	(void)state;
	assert_non_null(h);
	assert_int_equal(rw_cuda_malloc(&d, 64 * sizeof(int32_t)), 0);
	assert_int_equal(rw_cuda_memset(d, 0, 64 * sizeof(int32_t)), 0);
	rw_gpu_emu_stats(&s0);
	rw_test_log_expect("host memory given to a device reduction");
	assert_int_equal(rw_reduce_dev(d, d, h, 64, RW_DTYPE_INT32, RW_OP_SUM, stream), -EFAULT);
	assert_int_equal(rw_reduce_dev(h, d, d, 64, RW_DTYPE_INT32, RW_OP_SUM, stream), -EFAULT);
	rw_test_log_expect("unknown datatype");
	assert_int_equal(rw_reduce_dev(d, d, d, 64, (enum rw_dtype)99, RW_OP_SUM, stream), -EINVAL);
	assert_int_equal(rw_reduce_dev(d, d, d, 0, RW_DTYPE_INT32, RW_OP_SUM, stream), 0);
	assert_int_equal(rw_cuda_stream_sync(stream), 0);
	rw_gpu_emu_stats(&s1);
	assert_int_equal(s1.kernels, s0.kernels);

	assert_int_equal(rw_cuda_host_alloc((void **)&p, 64 * sizeof(int32_t)), 0);
	assert_int_equal(rw_cuda_host_alloc((void **)&q, 64 * sizeof(int32_t)), 0);
	for (int i = 0; i < 64; i++) {
		p[i] = i;
		q[i] = 1000 * i;
	}
	assert_int_equal(rw_reduce_dev(p, p, q, 64, RW_DTYPE_INT32, RW_OP_SUM, stream), 0);
	assert_int_equal(rw_cuda_stream_sync(stream), 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(p[i], 1001 * i);
	rw_cuda_host_free(p);
	rw_cuda_host_free(q);
	rw_cuda_free(d);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_dtype_and_op, setup, teardown),
		cmocka_unit_test_setup_teardown(folds_avg_and_scale, setup, teardown),
		cmocka_unit_test_setup_teardown(reductions_run_in_stream_order, setup, teardown),
		cmocka_unit_test_setup_teardown(host_memory_refused_pinned_taken, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
