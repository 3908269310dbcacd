/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host reduction kernels against the reference of reduce_ref.c: every
 * datatype x op on every instruction set this CPU runs (portable always),
 * with edge values, odd counts, unaligned pointers, in place, k-source
 * folds, avg; plus the lists' NCCL values and the refusal of bad arguments.
 */
#include "support/rw_test.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "abi/nccl_common.h"
#include "common/rw_common.h"
#include "kernels/reduce_internal.h"
#include "kernels/rw_reduce.h"
#include "reduce_ref.h"

/* Room around every buffer, checked for stray writes. */
#define GUARD  64
#define CANARY 0xa5

static enum rw_isa isas[RW_ISA_COUNT];
static int nisas;

static int group_setup(void **state)
{
	(void)state;
	rw_test_log_install();
	for (int i = 0; i < RW_ISA_COUNT; i++)
		if (rw_reduce_set_isa((enum rw_isa)i) == 0)
			isas[nisas++] = (enum rw_isa)i;
	return rw_reduce_set_isa(rw_reduce_best_isa());
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
	RW_TEST_ASSERT_LOG_CLEAN();
	return rw_reduce_set_isa(rw_reduce_best_isa());
}

/* A buffer with GUARD canary bytes before and after count elements. */
struct tbuf {
	unsigned char *mem;
	char *p; /* the elements, at mem + GUARD + off */
	size_t bytes;
};

static void tbuf_init(struct tbuf *t, size_t bytes, size_t off)
{
	t->mem = malloc(bytes + off + 2 * GUARD);
	assert_non_null(t->mem);
	memset(t->mem, CANARY, bytes + off + 2 * GUARD);
	t->p = (char *)t->mem + GUARD + off;
	t->bytes = bytes;
}

static void tbuf_check_guards(const struct tbuf *t)
{
	const unsigned char *p = (const unsigned char *)t->p;

	for (size_t i = 1; i <= GUARD; i++)
		if (p[-(ptrdiff_t)i] != CANARY)
			fail_msg("byte %zu before the buffer was written", i);
	for (size_t i = 0; i < GUARD; i++)
		if (p[t->bytes + i] != CANARY)
			fail_msg("byte %zu after the buffer was written", i);
}

static void tbuf_free(struct tbuf *t)
{
	free(t->mem);
}

/* ---- the lists ---------------------------------------------------------- */

static void lists_have_nccl_values(void **state)
{
	static const struct {
		enum rw_dtype dt;
		ncclDataType_t nccl;
		size_t size;
		const char *name;
	} dts[] = {
		{RW_DTYPE_INT8, ncclInt8, 1, "int8"},
		{RW_DTYPE_UINT8, ncclUint8, 1, "uint8"},
		{RW_DTYPE_INT32, ncclInt32, 4, "int32"},
		{RW_DTYPE_UINT32, ncclUint32, 4, "uint32"},
		{RW_DTYPE_INT64, ncclInt64, 8, "int64"},
		{RW_DTYPE_UINT64, ncclUint64, 8, "uint64"},
		{RW_DTYPE_FLOAT16, ncclFloat16, 2, "float16"},
		{RW_DTYPE_FLOAT32, ncclFloat32, 4, "float32"},
		{RW_DTYPE_FLOAT64, ncclFloat64, 8, "float64"},
		{RW_DTYPE_BFLOAT16, ncclBfloat16, 2, "bfloat16"},
		{RW_DTYPE_FLOAT8E4M3, ncclFloat8e4m3, 1, "float8e4m3"},
		{RW_DTYPE_FLOAT8E5M2, ncclFloat8e5m2, 1, "float8e5m2"},
	};
	static const struct {
		enum rw_op op;
		ncclRedOp_t nccl;
		const char *name;
	} ops[] = {
		{RW_OP_SUM, ncclSum, "sum"}, {RW_OP_PROD, ncclProd, "prod"},
		{RW_OP_MAX, ncclMax, "max"}, {RW_OP_MIN, ncclMin, "min"},
		{RW_OP_AVG, ncclAvg, "avg"},
	};

	(void)state;
	static_assert((int)RW_DTYPE_COUNT == (int)ncclNumTypes, "one rw_dtype per ncclDataType_t");
	static_assert((int)RW_OP_COUNT == (int)ncclNumOps, "one rw_op per built-in ncclRedOp_t");
	assert_int_equal(RW_ARRAY_SIZE(dts), RW_DTYPE_COUNT);
	for (size_t i = 0; i < RW_ARRAY_SIZE(dts); i++) {
		assert_int_equal(dts[i].dt, dts[i].nccl);
		assert_int_equal(rw_dtype_size(dts[i].dt), dts[i].size);
		assert_string_equal(rw_dtype_name(dts[i].dt), dts[i].name);
	}
	for (size_t i = 0; i < RW_ARRAY_SIZE(ops); i++) {
		assert_int_equal(ops[i].op, ops[i].nccl);
		assert_string_equal(rw_op_name(ops[i].op), ops[i].name);
	}
	assert_int_equal(rw_dtype_size((enum rw_dtype)RW_DTYPE_COUNT), 0);
	assert_int_equal(rw_dtype_size((enum rw_dtype) - 1), 0);
	assert_string_equal(rw_dtype_name((enum rw_dtype)99), "invalid");
	assert_string_equal(rw_op_name((enum rw_op)RW_OP_COUNT), "invalid");
}

static void tables_are_complete(void **state)
{
	const struct rw_reduce_isa_ops *sets[] = {
		&rw_reduce_isa_portable,
#if defined(__x86_64__)
		&rw_reduce_isa_avx2,
		&rw_reduce_isa_avx512,
#endif
	};

	(void)state;
	for (size_t s = 0; s < RW_ARRAY_SIZE(sets); s++) {
		assert_non_null(sets[s]->name);
		for (int op = 0; op < RW_OP_COUNT; op++)
			for (int dt = 0; dt < RW_DTYPE_COUNT; dt++)
				if (!sets[s]->reduce[op][dt])
					fail_msg("%s: no kernel for %s %s", sets[s]->name,
						 rw_op_name((enum rw_op)op),
						 rw_dtype_name((enum rw_dtype)dt));
		for (int dt = 0; dt < RW_DTYPE_COUNT; dt++)
			assert_non_null(sets[s]->div[dt]);
	}
}

static void isa_selection(void **state)
{
	enum rw_isa best = rw_reduce_best_isa();

	(void)state;
	assert_int_equal(rw_reduce_set_isa(RW_ISA_PORTABLE), 0);
	assert_int_equal(rw_reduce_get_isa(), RW_ISA_PORTABLE);
	assert_int_equal(rw_reduce_set_isa(best), 0);
	assert_int_equal(rw_reduce_get_isa(), best);
	for (int i = best + 1; i < RW_ISA_COUNT; i++)
		assert_int_equal(rw_reduce_set_isa((enum rw_isa)i), -ENOTSUP);
	assert_int_equal(rw_reduce_set_isa(RW_ISA_COUNT), -EINVAL);
	assert_int_equal(rw_reduce_set_isa((enum rw_isa) - 1), -EINVAL);
	assert_string_equal(rw_isa_name(RW_ISA_AVX2), "avx2");
	assert_string_equal(rw_isa_name(RW_ISA_COUNT), "invalid");
	assert_int_equal(rw_reduce_get_isa(), best);
	print_message("host kernels: best instruction set here is %s; %d set(s) tested\n",
		      rw_isa_name(best), nisas);
}

/* ---- bad arguments ------------------------------------------------------ */

static void bad_arguments_are_refused(void **state)
{
	float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	unsigned char dst[64];
	const void *srcs[RW_REDUCE_MAX_SRCS + 1] = {a, b, a, b, a, b, a, b, a};

	(void)state;
	memset(dst, CANARY, sizeof(dst));
	rw_test_log_expect("unknown datatype");
	rw_test_log_expect("unknown op");
	rw_test_log_expect("no destination");
	rw_test_log_expect("no source");
	rw_test_log_expect("overlap");
	rw_test_log_expect("sources");
	rw_test_log_expect("nranks");
	rw_test_log_expect("overflows");

	assert_int_equal(rw_reduce(dst, a, b, 4, (enum rw_dtype)RW_DTYPE_COUNT, RW_OP_SUM),
			 -EINVAL);
	assert_int_equal(rw_reduce(dst, a, b, 4, (enum rw_dtype) - 1, RW_OP_SUM), -EINVAL);
	assert_int_equal(rw_reduce(dst, a, b, 4, RW_DTYPE_FLOAT32, (enum rw_op)RW_OP_COUNT),
			 -EINVAL);
	assert_int_equal(rw_reduce(dst, a, b, 4, RW_DTYPE_FLOAT32, (enum rw_op) - 3), -EINVAL);
	assert_int_equal(rw_reduce(NULL, a, b, 4, RW_DTYPE_FLOAT32, RW_OP_SUM), -EINVAL);
	assert_int_equal(rw_reduce(dst, NULL, b, 4, RW_DTYPE_FLOAT32, RW_OP_SUM), -EINVAL);
	assert_int_equal(rw_reduce(dst, a, NULL, 4, RW_DTYPE_FLOAT32, RW_OP_SUM), -EINVAL);
	/* dst overlaps a without being a */
	assert_int_equal(rw_reduce((char *)a + 4, a, b, 4, RW_DTYPE_FLOAT32, RW_OP_SUM), -EINVAL);
	assert_int_equal(rw_reduce(dst, a, b, SIZE_MAX / 2, RW_DTYPE_FLOAT32, RW_OP_SUM), -EINVAL);
	assert_int_equal(rw_reduce_multi(dst, srcs, 0, 4, RW_DTYPE_FLOAT32, RW_OP_SUM), -EINVAL);
	assert_int_equal(
		rw_reduce_multi(dst, srcs, RW_REDUCE_MAX_SRCS + 1, 4, RW_DTYPE_FLOAT32, RW_OP_SUM),
		-EINVAL);
	assert_int_equal(rw_reduce_multi(dst, NULL, 2, 4, RW_DTYPE_FLOAT32, RW_OP_SUM), -EINVAL);
	assert_int_equal(rw_reduce_multi_avg(dst, srcs, 2, 4, RW_DTYPE_FLOAT32, 0), -EINVAL);
	assert_int_equal(rw_scale(dst, a, 4, RW_DTYPE_FLOAT32, 0), -EINVAL);
	assert_int_equal(rw_scale(dst, a, 4, (enum rw_dtype)42, 2), -EINVAL);
	/* device calls check their arguments before anything else */
	assert_int_equal(rw_reduce_dev(dst, a, b, 4, (enum rw_dtype)42, RW_OP_SUM, NULL), -EINVAL);
	assert_int_equal(rw_reduce_dev(dst, a, b, 4, RW_DTYPE_INT8, (enum rw_op)9, NULL), -EINVAL);
	assert_int_equal(rw_scale_dev(dst, a, 4, RW_DTYPE_FLOAT32, 0, NULL), -EINVAL);

	for (size_t i = 0; i < sizeof(dst); i++)
		assert_int_equal(dst[i], CANARY);
	assert_int_equal(rw_test_log_count("unknown datatype"), 4);
	assert_int_equal(rw_test_log_count("unknown op"), 3);
	assert_int_equal(rw_test_log_count("overlap"), 1);
	assert_int_equal(rw_test_log_count("nranks"), 3);
}

static void count_zero_does_nothing(void **state)
{
	const void *none[2] = {NULL, NULL};

	(void)state;
	for (int dt = 0; dt < RW_DTYPE_COUNT; dt++) {
		assert_int_equal(rw_reduce(NULL, NULL, NULL, 0, (enum rw_dtype)dt, RW_OP_SUM), 0);
		assert_int_equal(rw_reduce_multi(NULL, none, 2, 0, (enum rw_dtype)dt, RW_OP_MAX),
				 0);
		assert_int_equal(rw_scale(NULL, NULL, 0, (enum rw_dtype)dt, 3), 0);
	}
}

/* ---- every dtype x op against the reference ------------------------------- */

enum alias { ALIAS_NONE, ALIAS_DST_IS_A, ALIAS_DST_IS_B };

/* One rw_reduce() call checked element by element, plus its guards. */
static void check_one(enum rw_dtype dt, enum rw_op op, size_t count, size_t off_d, size_t off_a,
		      size_t off_b, enum alias alias, uint64_t seed)
{
	size_t size = ref_size(dt), bytes = count * size;
	struct tbuf d, a, b, want, a0, b0;
	char *dst;

	tbuf_init(&d, bytes, off_d);
	tbuf_init(&a, bytes, off_a);
	tbuf_init(&b, bytes, off_b);
	tbuf_init(&want, bytes, 0);
	tbuf_init(&a0, bytes, 0);
	tbuf_init(&b0, bytes, 0);
	ref_fill(a.p, count, dt, seed);
	ref_fill(b.p, count, dt, seed + 1000003);
	memcpy(a0.p, a.p, bytes);
	memcpy(b0.p, b.p, bytes);
	for (size_t i = 0; i < count; i++)
		ref_put(want.p, i, dt, ref_op(dt, op, ref_get(a.p, i, dt), ref_get(b.p, i, dt)));

	dst = alias == ALIAS_DST_IS_A ? a.p : alias == ALIAS_DST_IS_B ? b.p : d.p;
	assert_int_equal(rw_reduce(dst, a.p, b.p, count, dt, op), 0);
	ref_check(alias == ALIAS_NONE ? "rw_reduce" : "rw_reduce in place", dt, op, dst, want.p,
		  a0.p, b0.p, count);
	tbuf_check_guards(&d);
	tbuf_check_guards(&a);
	tbuf_check_guards(&b);
	if (alias != ALIAS_DST_IS_A)
		assert_memory_equal(a.p, a0.p, bytes);
	if (alias != ALIAS_DST_IS_B)
		assert_memory_equal(b.p, b0.p, bytes);
	tbuf_free(&d);
	tbuf_free(&a);
	tbuf_free(&b);
	tbuf_free(&want);
	tbuf_free(&a0);
	tbuf_free(&b0);
}

static const size_t counts[] = {1,  2,	3,  7,	8,   15,  16,	17,  31,
				33, 63, 64, 65, 127, 129, 1000, 4097};
/* byte offsets of dst, a, b from 64-byte aligned storage */
static const size_t offs[][3] = {{0, 0, 0}, {1, 1, 1}, {3, 5, 7}, {8, 0, 16}, {13, 2, 1}};

static void every_dtype_and_op_matches_reference(void **state)
{
	uint64_t seed = 1;

	(void)state;
	for (int s = 0; s < nisas; s++) {
		assert_int_equal(rw_reduce_set_isa(isas[s]), 0);
		for (int dt = 0; dt < RW_DTYPE_COUNT; dt++)
			for (int op = 0; op < RW_OP_COUNT; op++)
				for (size_t c = 0; c < RW_ARRAY_SIZE(counts); c++)
					for (size_t o = 0; o < RW_ARRAY_SIZE(offs); o++)
						check_one((enum rw_dtype)dt, (enum rw_op)op,
							  counts[c], offs[o][0], offs[o][1],
							  offs[o][2], ALIAS_NONE, seed++);
	}
}

static void in_place_matches_reference(void **state)
{
	static const size_t n[] = {1, 5, 33, 255, 1031};
	uint64_t seed = 77;

	(void)state;
	for (int s = 0; s < nisas; s++) {
		assert_int_equal(rw_reduce_set_isa(isas[s]), 0);
		for (int dt = 0; dt < RW_DTYPE_COUNT; dt++)
			for (int op = 0; op < RW_OP_COUNT; op++)
				for (size_t c = 0; c < RW_ARRAY_SIZE(n); c++) {
					check_one((enum rw_dtype)dt, (enum rw_op)op, n[c], 0, 3, 1,
						  ALIAS_DST_IS_A, seed++);
					check_one((enum rw_dtype)dt, (enum rw_op)op, n[c], 0, 2, 9,
						  ALIAS_DST_IS_B, seed++);
				}
	}
}

/*
 * Every pair of fp8 codes, every float16/bfloat16 code against a shuffled
 * partner and against each edge code: the encoders and decoders meet every
 * input they can get.
 */
static void narrow_types_exhaustive(void **state)
{
	static const enum rw_dtype narrow[] = {RW_DTYPE_FLOAT8E4M3, RW_DTYPE_FLOAT8E5M2,
					       RW_DTYPE_FLOAT16, RW_DTYPE_BFLOAT16};
	size_t n = 65536;
	uint8_t *a = malloc(2 * n), *b = malloc(2 * n), *d = malloc(2 * n), *w = malloc(2 * n);

	(void)state;
	assert_true(a && b && d && w);
	for (size_t t = 0; t < RW_ARRAY_SIZE(narrow); t++) {
		enum rw_dtype dt = narrow[t];
		int passes = ref_size(dt) == 1 ? 1 : 2;

		for (int pass = 0; pass < passes; pass++) {
			for (size_t i = 0; i < n; i++) {
				uint64_t x, y;

				if (ref_size(dt) == 1) {
					x = i & 0xff;
					y = i >> 8;
				} else {
					x = i;
					y = pass == 0 ? (i * 40503u + 12345u) & 0xffff
						      : ref_encode(ref_kind(dt), 1.0);
				}
				ref_put(a, i, dt, x);
				ref_put(b, i, dt, y);
			}
			for (int op = 0; op < RW_OP_COUNT; op++) {
				for (size_t i = 0; i < n; i++)
					ref_put(w, i, dt,
						ref_op(dt, (enum rw_op)op, ref_get(a, i, dt),
						       ref_get(b, i, dt)));
				for (int s = 0; s < nisas; s++) {
					assert_int_equal(rw_reduce_set_isa(isas[s]), 0);
					assert_int_equal(rw_reduce(d, a, b, n, dt, (enum rw_op)op),
							 0);
					ref_check("exhaustive", dt, (enum rw_op)op, d, w, a, b, n);
				}
			}
			for (unsigned int nr = 3; nr <= 7; nr += 4) {
				for (size_t i = 0; i < n; i++)
					ref_put(w, i, dt, ref_div(dt, ref_get(a, i, dt), nr));
				for (int s = 0; s < nisas; s++) {
					assert_int_equal(rw_reduce_set_isa(isas[s]), 0);
					assert_int_equal(rw_scale(d, a, n, dt, nr), 0);
					ref_check("exhaustive rw_scale", dt, RW_OP_AVG, d, w, a,
						  NULL, n);
				}
			}
		}
	}
	free(a);
	free(b);
	free(d);
	free(w);
}

/* ---- the documented semantics, value by value ----------------------------- */

struct known {
	enum rw_dtype dt;
	enum rw_op op;
	uint64_t a, b, want;
	const char *why;
};

static const struct known knowns[] = {
	/* integers wrap; max/min respect signedness */
	{RW_DTYPE_INT8, RW_OP_SUM, 0x7f, 0x01, 0x80, "int8 127 + 1 wraps to -128"},
	{RW_DTYPE_UINT8, RW_OP_SUM, 0xff, 0x01, 0x00, "uint8 255 + 1 wraps to 0"},
	{RW_DTYPE_INT8, RW_OP_PROD, 0x80, 0xff, 0x80, "int8 -128 * -1 wraps to -128"},
	{RW_DTYPE_INT8, RW_OP_MAX, 0xff, 0x00, 0x00, "int8 max(-1, 0) = 0"},
	{RW_DTYPE_UINT8, RW_OP_MAX, 0xff, 0x00, 0xff, "uint8 max(255, 0) = 255"},
	{RW_DTYPE_INT32, RW_OP_MIN, 0x80000000u, 0x7fffffffu, 0x80000000u,
	 "int32 min(INT_MIN, INT_MAX)"},
	{RW_DTYPE_UINT32, RW_OP_PROD, 0xffffffffu, 0xffffffffu, 0x1,
	 "uint32 (2^32-1)^2 wraps to 1"},
	{RW_DTYPE_INT64, RW_OP_SUM, 0x7fffffffffffffffull, 1, 0x8000000000000000ull,
	 "int64 max + 1"},
	{RW_DTYPE_INT64, RW_OP_MIN, 0x8000000000000000ull, 0, 0x8000000000000000ull,
	 "int64 min(INT64_MIN, 0)"},
	{RW_DTYPE_UINT64, RW_OP_MAX, 0xffffffffffffffffull, 1, 0xffffffffffffffffull, "uint64 max"},
	/* IEEE: signed zeros, Inf, NaN, denormals */
	{RW_DTYPE_FLOAT32, RW_OP_SUM, 0x80000000u, 0x80000000u, 0x80000000u, "-0 + -0 = -0"},
	{RW_DTYPE_FLOAT32, RW_OP_SUM, 0x80000000u, 0x00000000u, 0x00000000u, "-0 + +0 = +0"},
	{RW_DTYPE_FLOAT32, RW_OP_SUM, 0x7f800000u, 0xff800000u, 0x7fc00000u, "Inf - Inf = NaN"},
	{RW_DTYPE_FLOAT32, RW_OP_SUM, 0x00000001u, 0x00000001u, 0x00000002u, "denormals add"},
	{RW_DTYPE_FLOAT32, RW_OP_PROD, 0x7f800000u, 0x00000000u, 0x7fc00000u, "Inf * 0 = NaN"},
	{RW_DTYPE_FLOAT32, RW_OP_SUM, 0x7f7fffffu, 0x7f7fffffu, 0x7f800000u, "max + max = Inf"},
	/* max/min: the number wins over NaN; -0 < +0 */
	{RW_DTYPE_FLOAT32, RW_OP_MAX, 0x7fc00000u, 0x3f800000u, 0x3f800000u, "max(NaN, 1) = 1"},
	{RW_DTYPE_FLOAT32, RW_OP_MAX, 0x3f800000u, 0x7fc00000u, 0x3f800000u, "max(1, NaN) = 1"},
	{RW_DTYPE_FLOAT32, RW_OP_MIN, 0xffc00000u, 0xbf800000u, 0xbf800000u, "min(-NaN, -1) = -1"},
	{RW_DTYPE_FLOAT32, RW_OP_MAX, 0x7fc00000u, 0x7fc00000u, 0x7fc00000u, "max(NaN, NaN) = NaN"},
	{RW_DTYPE_FLOAT32, RW_OP_MAX, 0x80000000u, 0x00000000u, 0x00000000u, "max(-0, +0) = +0"},
	{RW_DTYPE_FLOAT32, RW_OP_MAX, 0x00000000u, 0x80000000u, 0x00000000u, "max(+0, -0) = +0"},
	{RW_DTYPE_FLOAT32, RW_OP_MIN, 0x00000000u, 0x80000000u, 0x80000000u, "min(+0, -0) = -0"},
	{RW_DTYPE_FLOAT64, RW_OP_MAX, 0x7ff8000000000000ull, 0xc000000000000000ull,
	 0xc000000000000000ull, "f64 max(NaN, -2) = -2"},
	{RW_DTYPE_FLOAT64, RW_OP_MIN, 0x0000000000000000ull, 0x8000000000000000ull,
	 0x8000000000000000ull, "f64 min(+0, -0) = -0"},
	{RW_DTYPE_FLOAT64, RW_OP_SUM, 0x3ff0000000000000ull, 0x3ca0000000000000ull,
	 0x3ff0000000000000ull, "f64 1 + 2^-53 ties to even"},
	/* float16 / bfloat16: overflow to Inf, ties to even, denormals */
	{RW_DTYPE_FLOAT16, RW_OP_SUM, 0x7bff, 0x7bff, 0x7c00, "half 65504 + 65504 = Inf"},
	{RW_DTYPE_FLOAT16, RW_OP_SUM, 0x0001, 0x0001, 0x0002, "half denormals add"},
	{RW_DTYPE_FLOAT16, RW_OP_SUM, 0x3c00, 0x1000, 0x3c00, "half 1 + 2^-11 ties to even (1)"},
	{RW_DTYPE_FLOAT16, RW_OP_SUM, 0x3c01, 0x1000, 0x3c02,
	 "half (1+2^-10) + 2^-11 ties to even (1+2^-9)"},
	{RW_DTYPE_FLOAT16, RW_OP_MAX, 0x7e00, 0xbc00, 0xbc00, "half max(NaN, -1) = -1"},
	{RW_DTYPE_FLOAT16, RW_OP_MIN, 0x0000, 0x8000, 0x8000, "half min(+0, -0) = -0"},
	{RW_DTYPE_BFLOAT16, RW_OP_SUM, 0x7f7f, 0x7f7f, 0x7f80, "bf16 max + max = Inf"},
	{RW_DTYPE_BFLOAT16, RW_OP_SUM, 0x3f80, 0x3b80, 0x3f80, "bf16 1 + 2^-8 ties to even (1)"},
	{RW_DTYPE_BFLOAT16, RW_OP_SUM, 0x3f81, 0x3b80, 0x3f82, "bf16 (1+2^-7) + 2^-8 ties to even"},
	{RW_DTYPE_BFLOAT16, RW_OP_SUM, 0x0001, 0x0001, 0x0002, "bf16 denormals add"},
	{RW_DTYPE_BFLOAT16, RW_OP_MAX, 0xffc0, 0x3f80, 0x3f80, "bf16 max(-NaN, 1) = 1"},
	/* fp8: saturation, NaN encodings, Inf inputs (e5m2) */
	{RW_DTYPE_FLOAT8E4M3, RW_OP_SUM, 0x7e, 0x7e, 0x7e, "e4m3 448 + 448 saturates to 448"},
	{RW_DTYPE_FLOAT8E4M3, RW_OP_SUM, 0xfe, 0xfe, 0xfe, "e4m3 -448 - 448 saturates to -448"},
	{RW_DTYPE_FLOAT8E4M3, RW_OP_PROD, 0x7e, 0x40, 0x7e, "e4m3 448 * 2 saturates"},
	{RW_DTYPE_FLOAT8E4M3, RW_OP_SUM, 0x7f, 0x38, 0x7f, "e4m3 NaN + 1 = NaN"},
	{RW_DTYPE_FLOAT8E4M3, RW_OP_MAX, 0x7f, 0x38, 0x38, "e4m3 max(NaN, 1) = 1"},
	{RW_DTYPE_FLOAT8E4M3, RW_OP_SUM, 0x01, 0x01, 0x02, "e4m3 denormals add"},
	{RW_DTYPE_FLOAT8E4M3, RW_OP_SUM, 0x38, 0x30, 0x3c, "e4m3 1 + 0.5 = 1.5"},
	{RW_DTYPE_FLOAT8E5M2, RW_OP_SUM, 0x7c, 0x3c, 0x7b, "e5m2 Inf + 1 saturates to 57344"},
	{RW_DTYPE_FLOAT8E5M2, RW_OP_MAX, 0xfc, 0x3c, 0x3c, "e5m2 max(-Inf, 1) = 1"},
	{RW_DTYPE_FLOAT8E5M2, RW_OP_MIN, 0xfc, 0x3c, 0xfb, "e5m2 min(-Inf, 1) saturates to -57344"},
	{RW_DTYPE_FLOAT8E5M2, RW_OP_SUM, 0x7b, 0x7b, 0x7b, "e5m2 57344 + 57344 saturates"},
	{RW_DTYPE_FLOAT8E5M2, RW_OP_SUM, 0x7e, 0x3c, 0x7f, "e5m2 NaN + 1 = NaN"},
	{RW_DTYPE_FLOAT8E5M2, RW_OP_SUM, 0x7c, 0xfc, 0x7f, "e5m2 Inf - Inf = NaN"},
};

static const struct {
	enum rw_dtype dt;
	uint64_t a;
	unsigned int n;
	uint64_t want;
	const char *why;
} known_avgs[] = {
	{RW_DTYPE_INT32, (uint32_t)-7, 2, (uint32_t)-3, "int32 -7 / 2 truncates to -3"},
	{RW_DTYPE_INT8, 0xc8, 2, 0xe4, "int8 (100 + 100 wrapped to -56) / 2 = -28"},
	{RW_DTYPE_UINT8, 0xff, 2, 0x7f, "uint8 255 / 2 = 127"},
	{RW_DTYPE_INT64, 0x8000000000000000ull, 3, 0xd555555555555556ull, "int64 INT64_MIN / 3"},
	{RW_DTYPE_FLOAT32, 0x3f800000u, 3, 0x3eaaaaabu, "float32 1/3 correctly rounded"},
	{RW_DTYPE_BFLOAT16, 0x3f80, 3, 0x3eab, "bf16 1/3 correctly rounded"},
	{RW_DTYPE_FLOAT16, 0x3c00, 3, 0x3555, "half 1/3 correctly rounded"},
	{RW_DTYPE_FLOAT8E4M3, 0x38, 3, 0x2b, "e4m3 1/3 = 0.34375"},
	{RW_DTYPE_FLOAT8E5M2, 0x7c, 2, 0x7b, "e5m2 Inf / 2 saturates"},
	{RW_DTYPE_FLOAT32, 0x7f800000u, 4, 0x7f800000u, "float32 Inf / 4 = Inf"},
};

static void documented_semantics(void **state)
{
	(void)state;
	for (int s = 0; s < nisas; s++) {
		assert_int_equal(rw_reduce_set_isa(isas[s]), 0);
		for (size_t k = 0; k < RW_ARRAY_SIZE(knowns); k++) {
			const struct known *t = &knowns[k];
			uint64_t a[5] = {t->a, t->a, t->a, t->a, t->a}, b[5], d[5] = {0};

			for (int i = 0; i < 5; i++)
				ref_put(b, (size_t)i, t->dt, t->b);
			for (int i = 0; i < 5; i++)
				ref_put(a, (size_t)i, t->dt, t->a);
			/* the reference agrees with the documented value ... */
			if (!ref_same(t->dt, ref_op(t->dt, t->op, t->a, t->b), t->want))
				fail_msg("reference: %s: got %s", t->why,
					 ref_str(t->dt, ref_op(t->dt, t->op, t->a, t->b), 0));
			/* ... and so do the kernels, also at the 5th element (tail path) */
			assert_int_equal(rw_reduce(d, a, b, 5, t->dt, t->op), 0);
			for (size_t i = 0; i < 5; i++)
				if (!ref_same(t->dt, ref_get(d, i, t->dt), t->want))
					fail_msg("[%s] %s: got %s", rw_isa_name(isas[s]), t->why,
						 ref_str(t->dt, ref_get(d, i, t->dt), 0));
		}
		for (size_t k = 0; k < RW_ARRAY_SIZE(known_avgs); k++) {
			uint64_t a[3] = {0}, d[3] = {0};
			enum rw_dtype dt = known_avgs[k].dt;

			for (size_t i = 0; i < 3; i++)
				ref_put(a, i, dt, known_avgs[k].a);
			assert_true(ref_same(dt, ref_div(dt, known_avgs[k].a, known_avgs[k].n),
					     known_avgs[k].want));
			assert_int_equal(rw_scale(d, a, 3, dt, known_avgs[k].n), 0);
			for (size_t i = 0; i < 3; i++)
				if (!ref_same(dt, ref_get(d, i, dt), known_avgs[k].want))
					fail_msg("[%s] %s: got %s", rw_isa_name(isas[s]),
						 known_avgs[k].why,
						 ref_str(dt, ref_get(d, i, dt), 0));
		}
	}
}

/* ---- k-source folds and avg ----------------------------------------------- */

/* want = left fold of k sources (then / nranks when nranks != 0). */
static void ref_fold(void *want, char *const *srcs, unsigned int k, size_t count, enum rw_dtype dt,
		     enum rw_op op, unsigned int nranks)
{
	for (size_t i = 0; i < count; i++) {
		uint64_t acc = ref_get(srcs[0], i, dt);

		for (unsigned int j = 1; j < k; j++)
			acc = ref_op(dt, op, acc, ref_get(srcs[j], i, dt));
		if (nranks)
			acc = ref_div(dt, acc, nranks);
		ref_put(want, i, dt, acc);
	}
}

static void multi_folds_match_left_fold(void **state)
{
	/* 2053 float32 and 9001 bytes cross the 8 KiB accumulator tile */
	static const size_t n[] = {1, 5, 33, 1000, 2053, 9001};
	uint64_t seed = 5000;

	(void)state;
	for (int s = 0; s < nisas; s++) {
		assert_int_equal(rw_reduce_set_isa(isas[s]), 0);
		for (int dt = 0; dt < RW_DTYPE_COUNT; dt++) {
			size_t size = ref_size((enum rw_dtype)dt);

			for (unsigned int k = 1; k <= RW_REDUCE_MAX_SRCS; k++) {
				size_t count = n[(k + (unsigned int)dt) % RW_ARRAY_SIZE(n)];
				struct tbuf src[RW_REDUCE_MAX_SRCS], d, want, orig;
				char *sp[RW_REDUCE_MAX_SRCS];
				const void *cs[RW_REDUCE_MAX_SRCS];
				enum rw_op op = (enum rw_op)((k + (unsigned int)dt) % RW_OP_COUNT);

				for (unsigned int j = 0; j < k; j++) {
					tbuf_init(&src[j], count * size, j % 5);
					ref_fill(src[j].p, count, (enum rw_dtype)dt, seed++);
					sp[j] = src[j].p;
				}
				tbuf_init(&d, count * size, 3);
				tbuf_init(&want, 2 * count * size, 0);
				tbuf_init(&orig, count * size * k, 0);
				for (unsigned int j = 0; j < k; j++)
					memcpy(orig.p + j * count * size, sp[j], count * size);

				ref_fold(want.p, sp, k, count, (enum rw_dtype)dt, op, 0);
				ref_fold(want.p + count * size, sp, k, count, (enum rw_dtype)dt,
					 RW_OP_SUM, k + 1);
				/* dst apart, then dst as each source in turn; fold and fold+avg */
				for (int alias = -1; alias < (int)k; alias++) {
					for (int avg = 0; avg < 2; avg++) {
						char *dst = alias < 0 ? d.p : sp[alias];
						unsigned int nranks = avg ? k + 1 : 0;

						for (unsigned int j = 0; j < k; j++)
							memcpy(sp[j], orig.p + j * count * size,
							       count * size);
						for (unsigned int j = 0; j < k; j++)
							cs[j] = sp[j];
						if (avg)
							assert_int_equal(rw_reduce_multi_avg(
										 dst, cs, k, count,
										 (enum rw_dtype)dt,
										 nranks),
									 0);
						else
							assert_int_equal(
								rw_reduce_multi(dst, cs, k, count,
										(enum rw_dtype)dt,
										op),
								0);
						ref_check(avg ? "rw_reduce_multi_avg"
							      : "rw_reduce_multi",
							  (enum rw_dtype)dt, avg ? RW_OP_AVG : op,
							  dst, want.p + avg * count * size, NULL,
							  NULL, count);
						for (unsigned int j = 0; j < k; j++) {
							tbuf_check_guards(&src[j]);
							if ((int)j != alias)
								assert_memory_equal(
									sp[j],
									orig.p + j * count * size,
									count * size);
						}
						tbuf_check_guards(&d);
					}
				}
				for (unsigned int j = 0; j < k; j++)
					tbuf_free(&src[j]);
				tbuf_free(&d);
				tbuf_free(&want);
				tbuf_free(&orig);
			}
		}
	}
}

static void scale_matches_reference(void **state)
{
	static const unsigned int nr[] = {1, 2, 3, 7, 8, 10, 1000, 4095};
	static const size_t n[] = {1, 17, 1001};
	uint64_t seed = 9000;

	(void)state;
	for (int s = 0; s < nisas; s++) {
		assert_int_equal(rw_reduce_set_isa(isas[s]), 0);
		for (int dt = 0; dt < RW_DTYPE_COUNT; dt++)
			for (size_t r = 0; r < RW_ARRAY_SIZE(nr); r++)
				for (size_t c = 0; c < RW_ARRAY_SIZE(n); c++) {
					size_t bytes = n[c] * ref_size((enum rw_dtype)dt);
					struct tbuf a, d, want, a0;

					tbuf_init(&a, bytes, 1);
					tbuf_init(&d, bytes, 6);
					tbuf_init(&want, bytes, 0);
					tbuf_init(&a0, bytes, 0);
					ref_fill(a.p, n[c], (enum rw_dtype)dt, seed++);
					memcpy(a0.p, a.p, bytes);
					for (size_t i = 0; i < n[c]; i++)
						ref_put(want.p, i, (enum rw_dtype)dt,
							ref_div((enum rw_dtype)dt,
								ref_get(a.p, i, (enum rw_dtype)dt),
								nr[r]));
					assert_int_equal(
						rw_scale(d.p, a.p, n[c], (enum rw_dtype)dt, nr[r]),
						0);
					ref_check("rw_scale", (enum rw_dtype)dt, RW_OP_AVG, d.p,
						  want.p, a.p, NULL, n[c]);
					assert_int_equal(
						rw_scale(a.p, a.p, n[c], (enum rw_dtype)dt, nr[r]),
						0);
					ref_check("rw_scale in place", (enum rw_dtype)dt, RW_OP_AVG,
						  a.p, want.p, a0.p, NULL, n[c]);
					tbuf_check_guards(&a);
					tbuf_check_guards(&d);
					tbuf_free(&a);
					tbuf_free(&d);
					tbuf_free(&want);
					tbuf_free(&a0);
				}
	}
}

/* rw_copy_nontemporal is memcpy at every alignment and length: the
 * unaligned head, the streamed 64-byte blocks and the tail, and not a byte
 * around the destination touched. */
static void nontemporal_copy_is_memcpy(void **state)
{
	static const size_t lens[] = {0, 1, 15, 63, 255, 256, 257, 319, 320, 1000, 4096, 65599};
	enum { NT_MAXLEN = 65599 };
	unsigned char *src = malloc(NT_MAXLEN + 64), *dst = malloc(NT_MAXLEN + 64 + 2 * GUARD);

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	for (size_t i = 0; i < NT_MAXLEN + 64; i++)
		src[i] = (unsigned char)(i * 131 + 7);
	for (size_t li = 0; li < RW_ARRAY_SIZE(lens); li++) {
		for (size_t doff = 0; doff < 33; doff += (lens[li] > 4096 ? 7 : 1)) {
			for (size_t soff = 0; soff < 33; soff += 5) {
				size_t len = lens[li];
				unsigned char *d = dst + GUARD + doff;

				memset(dst, CANARY, NT_MAXLEN + 64 + 2 * GUARD);
				rw_copy_nontemporal(d, src + soff, len);
				assert_memory_equal(d, src + soff, len);
				for (size_t g = 0; g < GUARD + doff; g++)
					assert_int_equal(dst[g], CANARY);
				for (size_t g = 0; g < GUARD; g++)
					assert_int_equal(d[len + g], CANARY);
			}
		}
	}
	free(src);
	free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(lists_have_nccl_values, setup, teardown),
		cmocka_unit_test_setup_teardown(tables_are_complete, setup, teardown),
		cmocka_unit_test_setup_teardown(isa_selection, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_arguments_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(count_zero_does_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(documented_semantics, setup, teardown),
		cmocka_unit_test_setup_teardown(every_dtype_and_op_matches_reference, setup,
						teardown),
		cmocka_unit_test_setup_teardown(in_place_matches_reference, setup, teardown),
		cmocka_unit_test_setup_teardown(narrow_types_exhaustive, setup, teardown),
		cmocka_unit_test_setup_teardown(multi_folds_match_left_fold, setup, teardown),
		cmocka_unit_test_setup_teardown(scale_matches_reference, setup, teardown),
		cmocka_unit_test_setup_teardown(nontemporal_copy_is_memcpy, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
