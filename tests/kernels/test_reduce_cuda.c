/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device kernels and the CUDA helpers.  With a GPU: every datatype x op,
 * odd counts, buffers that agree or disagree modulo 16 or are not even
 * element-aligned, in place, k-source folds and avg, each bit-equal to the
 * host kernels (which test_reduce holds to the reference).  Without one:
 * those tests skip, and device calls must fail cleanly with -ENODEV (or
 * -ENOTSUP in a build without CUDA), leaving their outputs alone.
 *
 * `test_reduce_cuda quick` runs a short case list (every datatype x op, fewer
 * counts, offsets and fold widths), sized for compute-sanitizer, under which
 * each CUDA call costs far more (scripts/gpu-check.sh).
 */
#include "support/rw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_build.h"
#include "common/rw_common.h"
#include "gpu/rw_cuda.h"
#include "kernels/rw_reduce.h"
#include "reduce_ref.h"

static int have_gpu;
static int quick; /* argv[1] == "quick" */
static void *stream;

static int group_setup(void **state)
{
	int n = 0;

	(void)state;
	rw_test_log_install();
	have_gpu = rw_cuda_device_count(&n) == 0 && n > 0;
	if (have_gpu)
		return rw_cuda_stream_create(&stream);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	rw_cuda_stream_destroy(stream);
	return 0;
}

/* ---- without a GPU ------------------------------------------------------- */

static void without_gpu_device_calls_fail_cleanly(void **state)
{
	float a[16] = {1}, b[16] = {2}, d[16] = {0};
	void *p = (void *)0x1234, *s = (void *)0x5678;
	int n = -7, want = RW_HAVE_CUDA ? -ENODEV : -ENOTSUP;

	(void)state;
	if (have_gpu)
		skip();
	rw_test_log_expect(RW_HAVE_CUDA ? "failed" : "built without CUDA");
	assert_int_equal(rw_cuda_device_count(&n), want);
	assert_int_equal(n, -7);
	assert_int_equal(rw_cuda_mem_kind(a), RW_MEM_HOST);
	assert_int_equal(rw_cuda_ptr_device(a), -1);
	assert_int_equal(rw_reduce_dev(d, a, b, 16, RW_DTYPE_FLOAT32, RW_OP_SUM, NULL), want);
	assert_int_equal(rw_reduce_multi_avg_dev(d, (const void *[]){a, b}, 2, 16,
						 RW_DTYPE_BFLOAT16, 2, NULL),
			 want);
	assert_int_equal(rw_scale_dev(d, a, 16, RW_DTYPE_INT32, 2, NULL), want);
	assert_int_equal(d[0], 0.0f);
	assert_int_equal(rw_cuda_malloc(&p, 64), want);
	assert_ptr_equal(p, (void *)0x1234);
	assert_int_equal(rw_cuda_stream_create(&s), want);
	assert_ptr_equal(s, (void *)0x5678);
	assert_int_equal(rw_cuda_memcpy(d, a, sizeof(a)), want);
	rw_cuda_free(NULL);
	rw_cuda_stream_destroy(NULL);
	assert_true(rw_test_log_count(RW_HAVE_CUDA ? "failed" : "built without CUDA") >= 6);
}

/* ---- with a GPU ------------------------------------------------------------ */

/* Device copies of host buffers at byte offsets from 256-byte aligned bases. */
struct dbuf {
	char *base;
	char *p;
	size_t bytes;
};

static void dbuf_init(struct dbuf *d, size_t bytes, size_t off)
{
	void *m = NULL;

	assert_int_equal(rw_cuda_malloc(&m, bytes + off + 64), 0);
	assert_int_equal(rw_cuda_memset(m, 0xa5, bytes + off + 64), 0);
	d->base = m;
	d->p = (char *)m + off;
	d->bytes = bytes;
}

static void dbuf_free(struct dbuf *d)
{
	rw_cuda_free(d->base);
}

static void *host_copy(const struct dbuf *d)
{
	void *h = malloc(d->bytes + 1);

	assert_non_null(h);
	assert_int_equal(rw_cuda_memcpy(h, d->p, d->bytes), 0);
	return h;
}

enum alias { ALIAS_NONE, ALIAS_DST_IS_A, ALIAS_DST_IS_B };

static void check_dev(enum rw_dtype dt, enum rw_op op, size_t count, const size_t off[3],
		      enum alias alias, uint64_t seed)
{
	size_t bytes = count * ref_size(dt);
	char *a = malloc(bytes + 1), *b = malloc(bytes + 1), *want = malloc(bytes + 1), *got;
	struct dbuf da, db, dd;
	char *dst;

	assert_true(a && b && want);
	ref_fill(a, count, dt, seed);
	ref_fill(b, count, dt, seed + 7);
	assert_int_equal(rw_reduce(want, a, b, count, dt, op), 0);
	dbuf_init(&dd, bytes, off[0]);
	dbuf_init(&da, bytes, off[1]);
	dbuf_init(&db, bytes, off[2]);
	assert_int_equal(rw_cuda_memcpy(da.p, a, bytes), 0);
	assert_int_equal(rw_cuda_memcpy(db.p, b, bytes), 0);
	dst = alias == ALIAS_DST_IS_A ? da.p : alias == ALIAS_DST_IS_B ? db.p : dd.p;
	assert_int_equal(rw_reduce_dev(dst, da.p, db.p, count, dt, op, stream), 0);
	assert_int_equal(rw_cuda_stream_sync(stream), 0);
	got = host_copy(alias == ALIAS_DST_IS_A ? &da : alias == ALIAS_DST_IS_B ? &db : &dd);
	ref_check("rw_reduce_dev", dt, op, got, want, a, b, count);
	if (alias == ALIAS_NONE) {
		unsigned char after[16];

		assert_int_equal(rw_cuda_memcpy(after, dd.p + bytes, sizeof(after)), 0);
		for (size_t i = 0; i < sizeof(after); i++)
			assert_int_equal(after[i], 0xa5);
	}
	free(got);
	dbuf_free(&da);
	dbuf_free(&db);
	dbuf_free(&dd);
	free(a);
	free(b);
	free(want);
}

static void device_matches_host(void **state)
{
	static const size_t counts[] = {1, 3, 17, 1000, 65537, (1u << 20) + 3};
	/* same mod 16 | different mod 16 | not element-aligned | mixed */
	static const size_t offs[][3] = {{0, 0, 0}, {4, 4, 4}, {0, 4, 8}, {1, 1, 1}, {3, 5, 7}};
	/* quick: 1, 17 and 65537 elements; offsets { 0, 4, 8 } and { 3, 5, 7 } */
	static const size_t quick_counts[] = {0, 2, 4}, quick_offs[] = {2, 4};
	size_t ncounts = quick ? RW_ARRAY_SIZE(quick_counts) : RW_ARRAY_SIZE(counts);
	size_t noffs = quick ? RW_ARRAY_SIZE(quick_offs) : RW_ARRAY_SIZE(offs);
	uint64_t seed = 1;

	(void)state;
	if (!have_gpu)
		skip();
	for (int dt = 0; dt < RW_DTYPE_COUNT; dt++)
		for (int op = 0; op < RW_OP_COUNT; op++)
			for (size_t c = 0; c < ncounts; c++)
				for (size_t o = 0; o < noffs; o++)
					check_dev((enum rw_dtype)dt, (enum rw_op)op,
						  counts[quick ? quick_counts[c] : c],
						  offs[quick ? quick_offs[o] : o], ALIAS_NONE,
						  seed++);
}

static void device_in_place(void **state)
{
	static const size_t off[3] = {0, 8, 8};

	(void)state;
	if (!have_gpu)
		skip();
	for (int dt = 0; dt < RW_DTYPE_COUNT; dt++)
		for (int op = 0; op < RW_OP_COUNT; op++) {
			check_dev((enum rw_dtype)dt, (enum rw_op)op, 4099, off, ALIAS_DST_IS_A, 11);
			check_dev((enum rw_dtype)dt, (enum rw_op)op, 4099, off, ALIAS_DST_IS_B, 12);
		}
}

static void device_folds_and_avg(void **state)
{
	uint64_t seed = 100;

	(void)state;
	if (!have_gpu)
		skip();
	for (int dt = 0; dt < RW_DTYPE_COUNT; dt++) {
		size_t count = 70001, bytes = count * ref_size((enum rw_dtype)dt);

		for (unsigned int k = 1; k <= RW_REDUCE_MAX_SRCS; k++) {
			if (quick && k != 2 && k != RW_REDUCE_MAX_SRCS)
				continue; /* quick: the pair and the widest fold */
			char *h[RW_REDUCE_MAX_SRCS], *want = malloc(bytes + 1), *got;
			const void *hs[RW_REDUCE_MAX_SRCS], *ds[RW_REDUCE_MAX_SRCS];
			struct dbuf d[RW_REDUCE_MAX_SRCS], dd;
			enum rw_op op = (enum rw_op)((k + (unsigned int)dt) % RW_OP_COUNT);

			assert_non_null(want);
			for (unsigned int j = 0; j < k; j++) {
				h[j] = malloc(bytes + 1);
				assert_non_null(h[j]);
				ref_fill(h[j], count, (enum rw_dtype)dt, seed++);
				hs[j] = h[j];
				dbuf_init(&d[j], bytes, (j % 2) * 16);
				assert_int_equal(rw_cuda_memcpy(d[j].p, h[j], bytes), 0);
				ds[j] = d[j].p;
			}
			dbuf_init(&dd, bytes, 0);

			assert_int_equal(rw_reduce_multi(want, hs, k, count, (enum rw_dtype)dt, op),
					 0);
			assert_int_equal(rw_reduce_multi_dev(dd.p, ds, k, count, (enum rw_dtype)dt,
							     op, stream),
					 0);
			assert_int_equal(rw_cuda_stream_sync(stream), 0);
			got = host_copy(&dd);
			ref_check("rw_reduce_multi_dev", (enum rw_dtype)dt, op, got, want, NULL,
				  NULL, count);
			free(got);

			/* avg into the last source, as the engine's last step does */
			assert_int_equal(
				rw_reduce_multi_avg(want, hs, k, count, (enum rw_dtype)dt, k), 0);
			assert_int_equal(rw_reduce_multi_avg_dev(d[k - 1].p, ds, k, count,
								 (enum rw_dtype)dt, k, stream),
					 0);
			assert_int_equal(rw_cuda_stream_sync(stream), 0);
			got = host_copy(&d[k - 1]);
			ref_check("rw_reduce_multi_avg_dev", (enum rw_dtype)dt, RW_OP_AVG, got,
				  want, NULL, NULL, count);
			free(got);

			/* scale the first source in place */
			assert_int_equal(rw_scale(want, h[0], count, (enum rw_dtype)dt, 3 + k), 0);
			assert_int_equal(rw_cuda_memcpy(d[0].p, h[0], bytes), 0);
			assert_int_equal(rw_scale_dev(d[0].p, d[0].p, count, (enum rw_dtype)dt,
						      3 + k, stream),
					 0);
			assert_int_equal(rw_cuda_stream_sync(stream), 0);
			got = host_copy(&d[0]);
			ref_check("rw_scale_dev", (enum rw_dtype)dt, RW_OP_AVG, got, want, h[0],
				  NULL, count);
			free(got);

			for (unsigned int j = 0; j < k; j++) {
				dbuf_free(&d[j]);
				free(h[j]);
			}
			dbuf_free(&dd);
			free(want);
		}
	}
}

static void helpers_on_gpu(void **state)
{
	void *dev = NULL, *pinned = NULL, *ev0 = NULL, *ev1 = NULL;
	char host[4096];
	float ms = -1;
	int cur = -1, rc;
	uint64_t deadline;

	(void)state;
	if (!have_gpu)
		skip();
	assert_int_equal(rw_cuda_get_device(&cur), 0);
	assert_int_equal(rw_cuda_malloc(&dev, 1 << 20), 0);
	assert_int_equal(rw_cuda_host_alloc(&pinned, 1 << 20), 0);
	assert_int_equal(rw_cuda_mem_kind(dev), RW_MEM_DEVICE);
	assert_int_equal(rw_cuda_mem_kind(pinned), RW_MEM_HOST_PINNED);
	assert_int_equal(rw_cuda_mem_kind(host), RW_MEM_HOST);
	assert_int_equal(rw_cuda_ptr_device(dev), cur);
	assert_int_equal(rw_cuda_ptr_device(host), -1);

	memset(pinned, 0x3c, 1 << 20);
	assert_int_equal(rw_cuda_event_create(&ev0), 0);
	assert_int_equal(rw_cuda_event_create(&ev1), 0);
	assert_int_equal(rw_cuda_event_record(ev0, stream), 0);
	assert_int_equal(rw_cuda_memcpy_async(dev, pinned, 1 << 20, stream), 0);
	assert_int_equal(rw_cuda_memcpy_async(host, dev, sizeof(host), stream), 0);
	assert_int_equal(rw_cuda_event_record(ev1, stream), 0);
	deadline = rw_now_ms() + 10000;
	while ((rc = rw_cuda_stream_query(stream)) == -EAGAIN && rw_now_ms() < deadline)
		;
	assert_int_equal(rc, 0);
	assert_int_equal(rw_cuda_event_query(ev1), 0);
	assert_int_equal(rw_cuda_event_elapsed_ms(ev0, ev1, &ms), 0);
	assert_true(ms >= 0);
	for (size_t i = 0; i < sizeof(host); i++)
		assert_int_equal((unsigned char)host[i], 0x3c);
	rw_cuda_event_destroy(ev0);
	rw_cuda_event_destroy(ev1);
	rw_cuda_host_free(pinned);
	rw_cuda_free(dev);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(without_gpu_device_calls_fail_cleanly,
						rw_test_setup_log, rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(helpers_on_gpu, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(device_matches_host, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(device_in_place, rw_test_setup_log,
						rw_test_teardown_log),
		cmocka_unit_test_setup_teardown(device_folds_and_avg, rw_test_setup_log,
						rw_test_teardown_log),
	};

	if (argc > 2 || (argc == 2 && strcmp(argv[1], "quick") != 0)) {
		fprintf(stderr, "usage: %s [quick]\n", argv[0]);
		return 2;
	}
	quick = argc == 2;
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
