/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Data of ringway-perf's check: small integers chosen per op so that every
 * reduction order gives the same bits (sums of -1..1, products of +-1 and
 * 2, any values for max/min), so the expected result, reduced here with
 * the host kernels in rank order, must match the ring's exactly.
 */
#include <stdio.h>
#include <string.h>

#include "kernels/rw_reduce.h"
#include "tools/perf/perf.h"

static const char *const dtype_names[] = {
	[RW_INT8] = "int8",	    [RW_UINT8] = "uint8",	[RW_INT32] = "int32",
	[RW_UINT32] = "uint32",	    [RW_INT64] = "int64",	[RW_UINT64] = "uint64",
	[RW_FLOAT16] = "half",	    [RW_FLOAT32] = "float",	[RW_FLOAT64] = "double",
	[RW_BFLOAT16] = "bfloat16", [RW_FLOAT8E4M3] = "f8e4m3", [RW_FLOAT8E5M2] = "f8e5m2",
};
static const char *const op_names[] = {
	[RW_SUM] = "sum", [RW_PROD] = "prod", [RW_MAX] = "max", [RW_MIN] = "min", [RW_AVG] = "avg",
};

size_t perf_dtype_size(int dtype)
{
	return rw_dtype_size((enum rw_dtype)dtype);
}

const char *perf_dtype_name(int dtype)
{
	return dtype >= 0 && dtype < (int)(sizeof(dtype_names) / sizeof(dtype_names[0]))
		       ? dtype_names[dtype]
		       : "?";
}

const char *perf_op_name(int op)
{
	return op >= 0 && op < (int)(sizeof(op_names) / sizeof(op_names[0])) ? op_names[op] : "?";
}

int perf_dtype_parse(const char *s)
{
	static const struct {
		const char *name;
		int dtype;
	} alias[] = {
		{"char", RW_INT8},	    {"int", RW_INT32},		{"float16", RW_FLOAT16},
		{"float32", RW_FLOAT32},    {"float64", RW_FLOAT64},	{"bf16", RW_BFLOAT16},
		{"fp8e4m3", RW_FLOAT8E4M3}, {"fp8e5m2", RW_FLOAT8E5M2},
	};

	if (strcmp(s, "all") == 0)
		return -1;
	for (int i = 0; i < (int)(sizeof(dtype_names) / sizeof(dtype_names[0])); i++)
		if (strcmp(s, dtype_names[i]) == 0)
			return i;
	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (strcmp(s, alias[i].name) == 0)
			return alias[i].dtype;
	return -2;
}

int perf_op_parse(const char *s)
{
	if (strcmp(s, "all") == 0)
		return -1;
	for (int i = 0; i < (int)(sizeof(op_names) / sizeof(op_names[0])); i++)
		if (strcmp(s, op_names[i]) == 0)
			return i;
	return -2;
}

/* A small integer as a minifloat (exact for the values used here). */
static uint32_t mini(int v, int ebits, int mbits, int bias)
{
	uint32_t a = (uint32_t)(v < 0 ? -v : v), s = v < 0;
	int e;

	if (!a)
		return 0;
	e = 31 - __builtin_clz(a);
	return s << (ebits + mbits) | (uint32_t)(e + bias) << mbits |
	       ((a << mbits >> e) & ((1u << mbits) - 1));
}

static int value(size_t i, int dtype, int op, int rank)
{
	bool u = dtype == RW_UINT8 || dtype == RW_UINT32 || dtype == RW_UINT64;
	size_t h = i * 2654435761u + (size_t)rank * 40503u;

	h ^= h >> 13;
	switch (op) {
	case RW_PROD:
		return u ? (h % 5 == 0 ? 2 : 1) : (h % 5 == 0 ? 2 : h % 5 == 1 ? -1 : 1);
	case RW_MAX:
	case RW_MIN:
		return u ? (int)(h % 7) : (int)(h % 7) - 3;
	default:
		return u ? (int)(h % 3) : (int)(h % 3) - 1;
	}
}

void perf_fill(void *buf, size_t count, int dtype, int op, int rank)
{
	for (size_t i = 0; i < count; i++) {
		int v = value(i, dtype, op, rank);
		float f = (float)v;
		uint32_t fb;

		switch (dtype) {
		case RW_INT8:
			((int8_t *)buf)[i] = (int8_t)v;
			break;
		case RW_UINT8:
			((uint8_t *)buf)[i] = (uint8_t)v;
			break;
		case RW_INT32:
			((int32_t *)buf)[i] = v;
			break;
		case RW_UINT32:
			((uint32_t *)buf)[i] = (uint32_t)v;
			break;
		case RW_INT64:
			((int64_t *)buf)[i] = v;
			break;
		case RW_UINT64:
			((uint64_t *)buf)[i] = (uint64_t)v;
			break;
		case RW_FLOAT16:
			((uint16_t *)buf)[i] = (uint16_t)mini(v, 5, 10, 15);
			break;
		case RW_FLOAT32:
			((float *)buf)[i] = f;
			break;
		case RW_FLOAT64:
			((double *)buf)[i] = v;
			break;
		case RW_BFLOAT16:
			memcpy(&fb, &f, 4);
			((uint16_t *)buf)[i] = (uint16_t)(fb >> 16);
			break;
		case RW_FLOAT8E4M3:
			((uint8_t *)buf)[i] = (uint8_t)mini(v, 4, 3, 7);
			break;
		case RW_FLOAT8E5M2:
			((uint8_t *)buf)[i] = (uint8_t)mini(v, 5, 2, 15);
			break;
		default:
			break;
		}
	}
}

void perf_expect(void *ref, void *tmp, size_t count, int dtype, int op, int nranks)
{
	perf_fill(ref, count, dtype, op, 0);
	for (int r = 1; r < nranks && count; r++) {
		perf_fill(tmp, count, dtype, op, r);
		rw_reduce(ref, ref, tmp, count, (enum rw_dtype)dtype, (enum rw_op)op);
	}
	if (op == RW_AVG && count)
		rw_scale(ref, ref, count, (enum rw_dtype)dtype, (unsigned)nranks);
}

int64_t perf_wrong(const void *got, const void *want, size_t count, int dtype)
{
	size_t es = perf_dtype_size(dtype);
	int64_t wrong = 0;

	if (!count || memcmp(got, want, count * es) == 0)
		return 0;
	for (size_t i = 0; i < count; i++)
		wrong += memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0;
	return wrong;
}
