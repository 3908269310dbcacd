/* SPDX-License-Identifier: Apache-2.0 */
/* Reference arithmetic for the reduction tests (see reduce_ref.h). */
#include "support/rw_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rw_common.h"
#include "reduce_ref.h"

#if defined(__SIZEOF_FLOAT128__)
typedef __float128 ref_quad; /* 113 bits: float64 ops round once */
#else
typedef long double ref_quad;
#endif

static const struct {
	enum rw_kind kind;
	size_t size;
} dts[RW_DTYPE_COUNT] = {
#define RW_DTYPE(e, nccl, name, bytes, kind, ...) [e] = {kind, bytes},
#include "kernels/rw_types.def"
};

enum rw_kind ref_kind(enum rw_dtype dt)
{
	return dts[dt].kind;
}

size_t ref_size(enum rw_dtype dt)
{
	return dts[dt].size;
}

int ref_is_float(enum rw_dtype dt)
{
	return dts[dt].kind != RW_KIND_SINT && dts[dt].kind != RW_KIND_UINT;
}

uint64_t ref_get(const void *buf, size_t i, enum rw_dtype dt)
{
	uint64_t v = 0;

	memcpy(&v, (const char *)buf + i * dts[dt].size, dts[dt].size);
	return v;
}

void ref_put(void *buf, size_t i, enum rw_dtype dt, uint64_t v)
{
	memcpy((char *)buf + i * dts[dt].size, &v, dts[dt].size);
}

/* ---- narrow formats ---------------------------------------------------- */

struct ref_fmt {
	int ebits, mbits, bias;
	int has_inf;  /* all-ones exponent: Inf (mantissa 0) / NaN; else only S.1..1.1..1 is NaN */
	int saturate; /* results past the largest finite value become it */
	uint32_t maxcode; /* largest finite positive code */
};

static const struct ref_fmt *ref_fmt_of(enum rw_kind kind)
{
	static const struct ref_fmt f16 = {5, 10, 15, 1, 0, 0x7bff};
	static const struct ref_fmt bf16 = {8, 7, 127, 1, 0, 0x7f7f};
	static const struct ref_fmt e4m3 = {4, 3, 7, 0, 1, 0x7e};
	static const struct ref_fmt e5m2 = {5, 2, 15, 1, 1, 0x7b};

	switch (kind) {
	case RW_KIND_F16:
		return &f16;
	case RW_KIND_BF16:
		return &bf16;
	case RW_KIND_E4M3:
		return &e4m3;
	default:
		return &e5m2;
	}
}

/* Value of a positive code by the field formula (maxcode + 1 gives the
 * value one ulp past the largest finite one). */
static double ref_pos_value(const struct ref_fmt *f, uint32_t c)
{
	uint32_t ex = c >> f->mbits, man = c & ((1u << f->mbits) - 1);

	if (ex)
		return ldexp(1.0 + ldexp(man, -f->mbits), (int)ex - f->bias);
	return ldexp(ldexp(man, -f->mbits), 1 - f->bias);
}

double ref_decode(enum rw_kind kind, uint32_t code)
{
	const struct ref_fmt *f = ref_fmt_of(kind);
	uint32_t all = (1u << f->ebits) - 1, mall = (1u << f->mbits) - 1;
	uint32_t sign = (code >> (f->ebits + f->mbits)) & 1;
	uint32_t ex = (code >> f->mbits) & all, man = code & mall;
	double v;

	if (!f->has_inf && ex == all && man == mall)
		return NAN;
	if (f->has_inf && ex == all)
		return man ? NAN : sign ? -INFINITY : INFINITY;
	v = ref_pos_value(f, code & ((1u << (f->ebits + f->mbits)) - 1));
	return sign ? -v : v;
}

/* Values of the positive codes 0..maxcode+1 of a format, ascending. */
static const double *ref_values(enum rw_kind kind)
{
	static double *tab[RW_KIND_E5M2 + 1];
	const struct ref_fmt *f = ref_fmt_of(kind);

	if (!tab[kind]) {
		double *t = malloc((f->maxcode + 2) * sizeof(*t));

		assert_non_null(t);
		for (uint32_t c = 0; c <= f->maxcode + 1; c++)
			t[c] = ref_pos_value(f, c);
		tab[kind] = t;
	}
	return tab[kind];
}

uint32_t ref_encode(enum rw_kind kind, double v)
{
	const struct ref_fmt *f = ref_fmt_of(kind);
	const double *val = ref_values(kind);
	uint32_t top = f->maxcode + 1, c, sign;
	double a;

	if (isnan(v))
		return f->has_inf ? (((1u << f->ebits) - 1) << f->mbits) | (1u << (f->mbits - 1))
				  : 0x7f;
	sign = signbit(v) ? 1 : 0;
	a = fabs(v);
	if (a >= val[top]) {
		c = top;
	} else {
		uint32_t lo = 0, hi = f->maxcode;

		while (lo < hi) { /* the largest code whose value is <= a */
			uint32_t mid = (lo + hi + 1) / 2;

			if (val[mid] <= a)
				lo = mid;
			else
				hi = mid - 1;
		}
		c = lo;
		if (val[c] != a) {
			double dl = a - val[c], dh = val[c + 1] - a;

			if (dh < dl || (dh == dl && (c & 1)))
				c++;
		}
	}
	if (c == top && f->saturate)
		c = f->maxcode;
	return c | sign << (f->ebits + f->mbits);
}

/* ---- ops --------------------------------------------------------------- */

static int64_t ref_sext(uint64_t v, size_t size)
{
	if (size == 8)
		return (int64_t)v;
	v &= (1ull << (8 * size)) - 1;
	if (v >> (8 * size - 1))
		v |= ~0ull << (8 * size);
	return (int64_t)v;
}

/* maximumNumber / minimumNumber with -0 < +0. */
static double ref_maxmin(double a, double b, int is_max)
{
	if (isnan(a))
		return b;
	if (isnan(b))
		return a;
	if (a == b) {
		if (a != 0)
			return a;
		if (is_max)
			return signbit(a) && signbit(b) ? -0.0 : 0.0;
		return signbit(a) || signbit(b) ? -0.0 : 0.0;
	}
	if (is_max)
		return a > b ? a : b;
	return a < b ? a : b;
}

static double ref_op_double(enum rw_op op, double a, double b)
{
	switch (op) {
	case RW_OP_PROD:
		return a * b;
	case RW_OP_MAX:
		return ref_maxmin(a, b, 1);
	case RW_OP_MIN:
		return ref_maxmin(a, b, 0);
	default:
		return a + b;
	}
}

uint64_t ref_op(enum rw_dtype dt, enum rw_op op, uint64_t a, uint64_t b)
{
	size_t size = dts[dt].size;
	uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;

	a &= mask;
	b &= mask;
	switch (dts[dt].kind) {
	case RW_KIND_SINT:
	case RW_KIND_UINT: {
		int s = dts[dt].kind == RW_KIND_SINT;
		int a_gt_b = s ? ref_sext(a, size) > ref_sext(b, size) : a > b;

		switch (op) {
		case RW_OP_PROD:
			return (a * b) & mask;
		case RW_OP_MAX:
			return a_gt_b ? a : b;
		case RW_OP_MIN:
			return a_gt_b ? b : a;
		default:
			return (a + b) & mask;
		}
	}
	case RW_KIND_FLOAT:
		if (size == 4) {
			uint32_t ua = (uint32_t)a, ub = (uint32_t)b, ur;
			float fa, fb, fr;

			memcpy(&fa, &ua, 4);
			memcpy(&fb, &ub, 4);
			/* double has 2*24+2 bits: rounding twice equals rounding once */
			fr = (float)ref_op_double(op, fa, fb);
			memcpy(&ur, &fr, 4);
			return ur;
		} else {
			double fa, fb, fr;
			uint64_t ur;

			memcpy(&fa, &a, 8);
			memcpy(&fb, &b, 8);
			if (op == RW_OP_PROD)
				fr = (double)((ref_quad)fa * (ref_quad)fb);
			else if (op == RW_OP_MAX || op == RW_OP_MIN)
				fr = ref_maxmin(fa, fb, op == RW_OP_MAX);
			else
				fr = (double)((ref_quad)fa + (ref_quad)fb);
			memcpy(&ur, &fr, 8);
			return ur;
		}
	default: {
		enum rw_kind k = dts[dt].kind;

		return ref_encode(k, ref_op_double(op, ref_decode(k, (uint32_t)a),
						   ref_decode(k, (uint32_t)b)));
	}
	}
}

uint64_t ref_div(enum rw_dtype dt, uint64_t a, unsigned int n)
{
	size_t size = dts[dt].size;
	uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;

	a &= mask;
	switch (dts[dt].kind) {
	case RW_KIND_SINT:
		return (uint64_t)(ref_sext(a, size) / (int64_t)n) & mask;
	case RW_KIND_UINT:
		return a / n;
	case RW_KIND_FLOAT:
		if (size == 4) {
			uint32_t ua = (uint32_t)a, ur;
			float fa, fr;

			memcpy(&fa, &ua, 4);
			fr = (float)((double)fa / n);
			memcpy(&ur, &fr, 4);
			return ur;
		} else {
			double fa, fr;
			uint64_t ur;

			memcpy(&fa, &a, 8);
			fr = (double)((ref_quad)fa / n);
			memcpy(&ur, &fr, 8);
			return ur;
		}
	default:
		return ref_encode(dts[dt].kind, ref_decode(dts[dt].kind, (uint32_t)a) / n);
	}
}

int ref_is_nan(enum rw_dtype dt, uint64_t v)
{
	switch (dts[dt].kind) {
	case RW_KIND_SINT:
	case RW_KIND_UINT:
		return 0;
	case RW_KIND_FLOAT:
		if (dts[dt].size == 4)
			return (v & 0x7fffffffu) > 0x7f800000u;
		return (v & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
	default:
		return isnan(ref_decode(dts[dt].kind, (uint32_t)v));
	}
}

int ref_same(enum rw_dtype dt, uint64_t got, uint64_t want)
{
	size_t size = dts[dt].size;
	uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;

	if (ref_is_nan(dt, got) && ref_is_nan(dt, want))
		return 1;
	return (got & mask) == (want & mask);
}

const char *ref_str(enum rw_dtype dt, uint64_t v, int slot)
{
	static char buf[4][96];
	char *s = buf[slot & 3];
	size_t size = dts[dt].size;

	switch (dts[dt].kind) {
	case RW_KIND_SINT:
		snprintf(s, sizeof(buf[0]), "%lld", (long long)ref_sext(v, size));
		break;
	case RW_KIND_UINT:
		snprintf(s, sizeof(buf[0]), "%llu", (unsigned long long)v);
		break;
	case RW_KIND_FLOAT:
		if (size == 4) {
			uint32_t u = (uint32_t)v;
			float f;

			memcpy(&f, &u, 4);
			snprintf(s, sizeof(buf[0]), "%a (0x%08x)", (double)f, u);
		} else {
			double d;

			memcpy(&d, &v, 8);
			snprintf(s, sizeof(buf[0]), "%a (0x%016llx)", d, (unsigned long long)v);
		}
		break;
	default:
		snprintf(s, sizeof(buf[0]), "%a (0x%0*llx)", ref_decode(dts[dt].kind, (uint32_t)v),
			 (int)(2 * size), (unsigned long long)v);
		break;
	}
	return s;
}

/* ---- data -------------------------------------------------------------- */

static uint64_t ref_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t ref_edge(enum rw_dtype dt, uint64_t r)
{
	static const uint32_t f32[] = {
		0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
		0x7f800001, 0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff,
		0xff7fffff, 0x3f800000, 0xbf800000, 0x3f800001, 0x33800000,
	};
	static const uint64_t f64[] = {
		0x0000000000000000ull, 0x8000000000000000ull, 0x7ff0000000000000ull,
		0xfff0000000000000ull, 0x7ff8000000000000ull, 0xfff8000000000000ull,
		0x7ff0000000000001ull, 0x0000000000000001ull, 0x800fffffffffffffull,
		0x0010000000000000ull, 0x7fefffffffffffffull, 0xffefffffffffffffull,
		0x3ff0000000000000ull, 0xbff0000000000000ull, 0x3ff0000000000001ull,
	};
	size_t size = dts[dt].size;
	uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
	uint64_t sign = 1ull << (8 * size - 1);

	switch (dts[dt].kind) {
	case RW_KIND_SINT:
	case RW_KIND_UINT: {
		const uint64_t e[] = {0, 1, mask, mask - 1, sign, sign - 1, sign + 1, 2};

		return e[r % RW_ARRAY_SIZE(e)];
	}
	case RW_KIND_FLOAT:
		return size == 4 ? f32[r % RW_ARRAY_SIZE(f32)] : f64[r % RW_ARRAY_SIZE(f64)];
	default: {
		const struct ref_fmt *f = ref_fmt_of(dts[dt].kind);
		uint32_t s = (uint32_t)sign, all = (uint32_t)mask;
		const uint32_t e[] = {0,
				      s,
				      f->maxcode,
				      f->maxcode | s,
				      1,
				      1 | s,
				      f->maxcode + 1,
				      (f->maxcode + 1) | s,
				      all,
				      all & ~s,
				      (uint32_t)ref_encode(dts[dt].kind, 1.0)};

		return e[r % RW_ARRAY_SIZE(e)];
	}
	}
}

void ref_fill(void *buf, size_t n, enum rw_dtype dt, uint64_t seed)
{
	size_t size = dts[dt].size;
	uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
	uint64_t s = seed * 0x2545f4914f6cdd1dull + dt;

	for (size_t i = 0; i < n; i++) {
		uint64_t r = ref_next(&s), v;
		double m = (double)((int64_t)((r >> 8) % 2001) - 1000) / 8.0;

		switch (r % 8) {
		case 0:
		case 1:
		case 2:
			v = ref_next(&s) & mask;
			break;
		case 6:
		case 7:
			v = ref_edge(dt, r >> 3);
			break;
		default: /* moderate values: sums and products that mean something */
			switch (dts[dt].kind) {
			case RW_KIND_SINT:
			case RW_KIND_UINT:
				v = (uint64_t)(int64_t)(m * 8.0 / 10.0) & mask;
				break;
			case RW_KIND_FLOAT:
				if (size == 4) {
					float f = (float)m;
					uint32_t u;

					memcpy(&u, &f, 4);
					v = u;
				} else {
					memcpy(&v, &m, 8);
				}
				break;
			default:
				v = ref_encode(dts[dt].kind, m / 16.0);
				break;
			}
			break;
		}
		ref_put(buf, i, dt, v);
	}
}

void ref_check(const char *what, enum rw_dtype dt, enum rw_op op, const void *got, const void *want,
	       const void *a, const void *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t g = ref_get(got, i, dt), w = ref_get(want, i, dt);

		if (!ref_same(dt, g, w))
			fail_msg("%s %s %s [isa %s]: element %zu of %zu: got %s, want %s (a=%s, "
				 "b=%s)",
				 what, rw_dtype_name(dt), rw_op_name(op),
				 rw_isa_name(rw_reduce_get_isa()), i, n, ref_str(dt, g, 0),
				 ref_str(dt, w, 1), a ? ref_str(dt, ref_get(a, i, dt), 2) : "-",
				 b ? ref_str(dt, ref_get(b, i, dt), 3) : "-");
	}
}
