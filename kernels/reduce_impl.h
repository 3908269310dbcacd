/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host kernels, written once and compiled once per instruction set.
 * reduce_host.c, reduce_avx2.c and reduce_avx512.c define RW_VB (bytes per
 * vector: 16, 32 or 64) and, where the CPU converts float16 in hardware,
 * RW_F16C; then they include this file, which defines every kernel named in
 * rw_types.def as a static function plus this set's tables rw_reduce_fns and
 * rw_div_fns.  Internal to kernels/.
 *
 * GCC vector extensions (clang reads them too) carry the arithmetic, so one
 * source becomes SSE2, AVX2 or AVX-512 code.  A kernel walks its buffers in
 * blocks of RW_VB bytes with unaligned loads and stores; the last partial
 * block goes through a zeroed block on the stack, so every count and every
 * alignment run the same vector code, and dst may be a or b (a block is
 * loaded whole before it is stored).
 *
 * Narrow floating types are widened exactly to float32 lanes, combined and
 * rounded back to nearest-even (float32 has more than twice their precision
 * plus two bits, so the double rounding is harmless: each op is correctly
 * rounded).  bfloat16 splits each 32-bit lane into its two elements with a
 * shift and a mask; fp8 takes a 32-bit lane byte by byte; float16 uses F16C
 * or the integer decoder/encoder below, which also serves fp8.
 */
#ifndef RW_VB
#error "define RW_VB (vector bytes) before including kernels/reduce_impl.h"
#endif

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "common/rw_common.h"
#include "kernels/reduce_internal.h"

#ifdef RW_F16C
#include <immintrin.h>
#endif

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the host kernels read integers' low bytes with memcpy: little-endian only"
#endif

#define RW_INLINE static inline __attribute__((always_inline))

typedef int8_t rw_vi8 __attribute__((vector_size(RW_VB)));
typedef uint8_t rw_vu8 __attribute__((vector_size(RW_VB)));
typedef int16_t rw_vi16 __attribute__((vector_size(RW_VB)));
typedef uint16_t rw_vu16 __attribute__((vector_size(RW_VB)));
typedef int32_t rw_vi32 __attribute__((vector_size(RW_VB)));
typedef uint32_t rw_vu32 __attribute__((vector_size(RW_VB)));
typedef int64_t rw_vi64 __attribute__((vector_size(RW_VB)));
typedef uint64_t rw_vu64 __attribute__((vector_size(RW_VB)));
typedef float rw_vf32 __attribute__((vector_size(RW_VB)));
typedef double rw_vf64 __attribute__((vector_size(RW_VB)));
/* The float16 codes of one rw_vf32: as many lanes, half the bytes. */
typedef uint16_t rw_vh16 __attribute__((vector_size(RW_VB / 2)));

/* ---- integers ----------------------------------------------------------- */

/*
 * One block of integers.  Sum and prod run on the unsigned type (wrapping
 * is defined there and gives two's complement bits); max/min compare with
 * the signedness of kind and select with the comparison mask.
 */
#define RW_INT_BLOCK(fn, VS, VU)                                                                   \
	RW_INLINE void fn(char *d, const char *a, const char *b, enum rw_kind kind, enum rw_op op) \
	{                                                                                          \
		VU x, y, r, m;                                                                     \
                                                                                                   \
		memcpy(&x, a, RW_VB);                                                              \
		memcpy(&y, b, RW_VB);                                                              \
		if (op == RW_OP_PROD) {                                                            \
			r = x * y;                                                                 \
		} else if (op == RW_OP_MAX || op == RW_OP_MIN) {                                   \
			if (kind == RW_KIND_SINT)                                                  \
				m = (VU)((VS)x > (VS)y);                                           \
			else                                                                       \
				m = (VU)(x > y);                                                   \
			if (op == RW_OP_MIN)                                                       \
				m = ~m;                                                            \
			r = (x & m) | (y & ~m);                                                    \
		} else {                                                                           \
			r = x + y;                                                                 \
		}                                                                                  \
		memcpy(d, &r, RW_VB);                                                              \
	}
RW_INT_BLOCK(rw_block_int8, rw_vi8, rw_vu8)
RW_INT_BLOCK(rw_block_int16, rw_vi16, rw_vu16)
RW_INT_BLOCK(rw_block_int32, rw_vi32, rw_vu32)
RW_INT_BLOCK(rw_block_int64, rw_vi64, rw_vu64)
#undef RW_INT_BLOCK

/* One element of an integer avg: truncating division, as C and NCCL do. */
RW_INLINE void rw_div_int(char *d, const char *s, enum rw_kind kind, size_t size, unsigned int n)
{
	if (kind == RW_KIND_SINT) {
		uint64_t u = 0;
		int64_t v;

		memcpy(&u, s, size); /* little-endian: the low bytes */
		if (size < 8 && (u >> (8 * size - 1)))
			u |= ~0ull << (8 * size); /* sign-extend */
		v = (int64_t)u / (int64_t)n;
		memcpy(d, &v, size);
	} else {
		uint64_t v = 0;

		memcpy(&v, s, size); /* little-endian: the low bytes */
		v /= n;
		memcpy(d, &v, size);
	}
}

/*
 * A block of 8- or 16-bit integers divided in float32, one 32-bit lane per
 * element position: the quotient of |x| < 2^16 by n is an integer or at
 * least 1/|x| away from one, far more than float32's rounding error, so
 * truncating the float quotient gives C's (and NCCL's) integer quotient.
 */
RW_INLINE void rw_div_small_int(char *d, const char *s, enum rw_kind kind, size_t size,
				unsigned int n)
{
	unsigned int bits = 8 * (unsigned int)size;
	uint32_t mask = (1u << bits) - 1;
	rw_vu32 x, r;

	memcpy(&x, s, RW_VB);
	r = x * 0;
	for (unsigned int k = 0; k < 32; k += bits) {
		rw_vi32 v;

		if (kind == RW_KIND_SINT)
			v = (rw_vi32)(x << (32 - bits - k)) >> (32 - bits);
		else
			v = (rw_vi32)((x >> k) & mask);
		v = __builtin_convertvector(__builtin_convertvector(v, rw_vf32) / (float)n,
					    rw_vi32);
		r |= ((rw_vu32)v & mask) << k;
	}
	memcpy(d, &r, RW_VB);
}

/*
 * A block of 32-bit integers divided in float64, which holds them exactly:
 * the quotient is an integer or at least 2^-32 of its value away from one,
 * far more than float64's rounding error.  Unsigned values go through the
 * signed conversion offset by 2^31.
 */
typedef int32_t rw_vi32h __attribute__((vector_size(RW_VB / 2)));

RW_INLINE void rw_div_int32(char *d, const char *s, enum rw_kind kind, unsigned int n)
{
	for (int k = 0; k < 2; k++) {
		rw_vi32h x, r;
		rw_vf64 q;

		memcpy(&x, s + k * (RW_VB / 2), RW_VB / 2);
		if (kind == RW_KIND_SINT) {
			q = __builtin_convertvector(x, rw_vf64) / (double)n;
			r = __builtin_convertvector(q, rw_vi32h); /* truncates */
		} else {
			rw_vi32h big;

			q = (__builtin_convertvector(x ^ INT32_MIN, rw_vf64) + 0x1p31) / (double)n;
			big = __builtin_convertvector(q >= 0x1p31, rw_vi32h);
			r = __builtin_convertvector(q - 0x1p31, rw_vi32h) ^
			    INT32_MIN; /* q >= 2^31 */
			r = (big & r) | (~big & __builtin_convertvector(q, rw_vi32h));
		}
		memcpy(d + k * (RW_VB / 2), &r, RW_VB / 2);
	}
}

/* ---- float32 / float64 ---------------------------------------------------- */

/*
 * a op b on float lanes.  max/min: maximumNumber/minimumNumber, -0 < +0:
 * take b where b is larger (smaller) or a is NaN; where a == b (which
 * covers +0 == -0) AND the bits for max (a +0 wins) or OR them for min.
 */
#define RW_FLOAT_OP(fn, VF, VI)                                                                    \
	RW_INLINE VF fn(VF a, VF b, enum rw_op op)                                                 \
	{                                                                                          \
		VI ia = (VI)a, ib = (VI)b, take_b, eq, r;                                          \
                                                                                                   \
		switch (op) {                                                                      \
		case RW_OP_PROD:                                                                   \
			return a * b;                                                              \
		case RW_OP_MAX:                                                                    \
		case RW_OP_MIN:                                                                    \
			if (op == RW_OP_MAX)                                                       \
				take_b = (b > a) | (a != a);                                       \
			else                                                                       \
				take_b = (b < a) | (a != a);                                       \
			eq = a == b;                                                               \
			r = (ib & take_b) | (ia & ~take_b);                                        \
			if (op == RW_OP_MAX)                                                       \
				r = (eq & (ia & ib)) | (~eq & r);                                  \
			else                                                                       \
				r = (eq & (ia | ib)) | (~eq & r);                                  \
			return (VF)r;                                                              \
		default:                                                                           \
			return a + b;                                                              \
		}                                                                                  \
	}
RW_FLOAT_OP(rw_f32_op, rw_vf32, rw_vi32)
RW_FLOAT_OP(rw_f64_op, rw_vf64, rw_vi64)
#undef RW_FLOAT_OP

RW_INLINE void rw_block_f32(char *d, const char *a, const char *b, enum rw_op op)
{
	rw_vf32 x, y;

	memcpy(&x, a, RW_VB);
	memcpy(&y, b, RW_VB);
	x = rw_f32_op(x, y, op);
	memcpy(d, &x, RW_VB);
}

RW_INLINE void rw_block_f64(char *d, const char *a, const char *b, enum rw_op op)
{
	rw_vf64 x, y;

	memcpy(&x, a, RW_VB);
	memcpy(&y, b, RW_VB);
	x = rw_f64_op(x, y, op);
	memcpy(d, &x, RW_VB);
}

/* ---- small floats: float16 and fp8 codes <-> float32 lanes ---------------- */

/* A narrow binary format, for the integer decoder and encoder. */
struct rw_small_fmt {
	uint32_t mag_mask; /* magnitude bits of a code (sign is the next bit) */
	uint32_t shift;	   /* 23 - mantissa bits */
	float scale;	   /* 2^(127 - bias) */
	uint32_t special;  /* magnitudes >= this have an all-ones exponent */
	int nan_only;	   /* the specials are all NaN (e4m3: no Inf) */
	uint32_t rebias;   /* (127 - bias) << 23 */
	uint32_t minnorm;  /* float32 bits of the smallest normal */
	uint32_t big;	   /* float32 bits from which the code is big_code */
	uint32_t big_code; /* largest finite (saturating) or Inf */
	uint32_t nan_code;
	float magic;	     /* 2^(23 + exponent of the smallest subnormal) */
	uint32_t sign_shift; /* 31 - position of the sign bit */
};

static const struct rw_small_fmt rw_fmt_f16 = {
	.mag_mask = 0x7fff,
	.shift = 13,
	.scale = 0x1p112f,
	.special = 0x7c00,
	.nan_only = 0,
	.rebias = 112u << 23,
	.minnorm = 113u << 23,
	.big = 0x477ff000u, /* 65520: halfway to 2^16, rounds to Inf */
	.big_code = 0x7c00,
	.nan_code = 0x7e00,
	.magic = 0x1p-1f,
	.sign_shift = 16,
};
static const struct rw_small_fmt rw_fmt_e4m3 = {
	.mag_mask = 0x7f,
	.shift = 20,
	.scale = 0x1p120f,
	.special = 0x7f,
	.nan_only = 1,
	.rebias = 120u << 23,
	.minnorm = 121u << 23,
	.big = 0x43e00001u, /* above 448: saturates */
	.big_code = 0x7e,
	.nan_code = 0x7f,
	.magic = 0x1p14f,
	.sign_shift = 24,
};
static const struct rw_small_fmt rw_fmt_e5m2 = {
	.mag_mask = 0x7f,
	.shift = 21,
	.scale = 0x1p112f,
	.special = 0x7c,
	.nan_only = 0,
	.rebias = 112u << 23,
	.minnorm = 113u << 23,
	.big = 0x47600001u, /* above 57344: saturates */
	.big_code = 0x7b,
	.nan_code = 0x7f,
	.magic = 0x1p7f,
	.sign_shift = 24,
};

/*
 * Codes (one per 32-bit lane, upper bits clear) to float32, exactly: the
 * magnitude bits placed under float32's exponent and scaled by 2^(127-bias)
 * give normals and subnormals alike; all-ones exponents become Inf/NaN.
 */
RW_INLINE rw_vf32 rw_small_decode(rw_vu32 c, const struct rw_small_fmt f)
{
	rw_vu32 mag = c & f.mag_mask;
	rw_vu32 sign = (c & (f.mag_mask + 1)) << f.sign_shift;
	rw_vu32 bits = mag << f.shift;
	rw_vu32 u = (rw_vu32)((rw_vf32)bits * f.scale);
	rw_vu32 sp = (rw_vu32)((rw_vi32)mag >= (int32_t)f.special); /* < 2^31: signed compare */
	rw_vu32 s;

	if (f.nan_only)
		s = bits * 0 + 0x7fc00000u;
	else
		s = bits | 0x7f800000u;
	return (rw_vf32)((sp & s) | (~sp & u) | sign);
}

/*
 * float32 to codes (one per lane), round to nearest even.  Normals: add
 * half an ulp minus one plus the ulp bit and truncate.  Subnormals: adding
 * the magic number makes the FPU round at the subnormal ulp.  Above big:
 * big_code (Inf, or the largest finite value when saturating).
 */
RW_INLINE rw_vu32 rw_small_encode(rw_vf32 v, const struct rw_small_fmt f)
{
	rw_vu32 u = (rw_vu32)v;
	rw_vu32 sign = u & 0x80000000u;
	rw_vu32 a = u ^ sign;
	/* a < 2^31: signed compares, which every x86 vector set has */
	rw_vu32 nan = (rw_vu32)((rw_vi32)a > 0x7f800000);
	rw_vu32 big = (rw_vu32)((rw_vi32)a >= (int32_t)f.big);
	rw_vu32 norm = (rw_vu32)((rw_vi32)a >= (int32_t)f.minnorm);
	rw_vu32 on =
		(a - f.rebias + ((1u << (f.shift - 1)) - 1) + ((a >> f.shift) & 1u)) >> f.shift;
	rw_vu32 os, o;
	uint32_t magic_bits;

	memcpy(&magic_bits, &f.magic, sizeof(magic_bits));
	os = (rw_vu32)((rw_vf32)a + f.magic) - magic_bits;
	o = (norm & on) | (~norm & os);

	o = (big & f.big_code) | (~big & o);
	o = (nan & f.nan_code) | (~nan & o);
	return o | (sign >> f.sign_shift);
}

/* RW_VB / 2 bytes of float16 codes <-> one rw_vf32. */
RW_INLINE rw_vf32 rw_f16_load(const char *p)
{
#if defined(RW_F16C) && RW_VB == 32
	__m128i h;

	memcpy(&h, p, 16);
	return (rw_vf32)_mm256_cvtph_ps(h);
#elif defined(RW_F16C) && RW_VB == 64
	__m256i h;

	memcpy(&h, p, 32);
	return (rw_vf32)_mm512_cvtph_ps(h);
#else
	rw_vh16 h;

	memcpy(&h, p, RW_VB / 2);
	return rw_small_decode(__builtin_convertvector(h, rw_vu32), rw_fmt_f16);
#endif
}

RW_INLINE void rw_f16_store(char *p, rw_vf32 v)
{
#if defined(RW_F16C) && RW_VB == 32
	__m128i h = _mm256_cvtps_ph((__m256)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

	memcpy(p, &h, 16);
#elif defined(RW_F16C) && RW_VB == 64
	__m256i h = _mm512_cvtps_ph((__m512)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

	memcpy(p, &h, 32);
#else
	rw_vh16 h = __builtin_convertvector(rw_small_encode(v, rw_fmt_f16), rw_vh16);

	memcpy(p, &h, RW_VB / 2);
#endif
}

RW_INLINE void rw_block_f16(char *d, const char *a, const char *b, enum rw_op op)
{
	const size_t h = RW_VB / 2;
	rw_vf32 x0 = rw_f16_load(a), y0 = rw_f16_load(b);
	rw_vf32 x1 = rw_f16_load(a + h), y1 = rw_f16_load(b + h);

	rw_f16_store(d, rw_f32_op(x0, y0, op));
	rw_f16_store(d + h, rw_f32_op(x1, y1, op));
}

/* ---- bfloat16 ------------------------------------------------------------ */

/* float32 lanes to bfloat16 in their upper halves, round to nearest even. */
RW_INLINE rw_vu32 rw_bf16_round(rw_vf32 v)
{
	rw_vu32 u = (rw_vu32)v;
	rw_vu32 nan = (rw_vu32)(v != v);
	rw_vu32 r = u + 0x7fffu + ((u >> 16) & 1u);

	return (nan & (u | 0x00400000u)) | (~nan & r);
}

RW_INLINE void rw_block_bf16(char *d, const char *a, const char *b, enum rw_op op)
{
	rw_vu32 x, y, lo, hi;

	memcpy(&x, a, RW_VB);
	memcpy(&y, b, RW_VB);
	lo = rw_bf16_round(rw_f32_op((rw_vf32)(x << 16), (rw_vf32)(y << 16), op));
	hi = rw_bf16_round(rw_f32_op((rw_vf32)(x & 0xffff0000u), (rw_vf32)(y & 0xffff0000u), op));
	x = (hi & 0xffff0000u) | (lo >> 16);
	memcpy(d, &x, RW_VB);
}

/* ---- fp8 ------------------------------------------------------------------ */

RW_INLINE void rw_block_fp8(char *d, const char *a, const char *b, enum rw_op op,
			    const struct rw_small_fmt f)
{
	rw_vu32 x, y, r;

	memcpy(&x, a, RW_VB);
	memcpy(&y, b, RW_VB);
	r = x * 0;
#pragma GCC unroll 4
	for (unsigned int k = 0; k < 32; k += 8) {
		rw_vf32 fx = rw_small_decode((x >> k) & 0xffu, f);
		rw_vf32 fy = rw_small_decode((y >> k) & 0xffu, f);

		r |= rw_small_encode(rw_f32_op(fx, fy, op), f) << k;
	}
	memcpy(d, &r, RW_VB);
}

#ifdef RW_F16C
/*
 * fp8 through F16C, sixteen elements per 16-bit lane op.  Both formats sit
 * inside float16: an e5m2 code is the top byte of the float16 code of its
 * value, and an e4m3 value times 2^-8 has its exponent field in float16's,
 * so decoding is a shift and encoding a round of the float16 bits.  For a
 * sum, product, max or min of fp8 operands, rounding to float32, float16,
 * then fp8 equals rounding once (each format has more than twice the next
 * one's precision plus two bits; test_reduce checks every pair of codes).
 * avg's division takes the exact encoder of rw_div_block().
 */
typedef uint8_t rw_vu8h __attribute__((vector_size(RW_VB / 2)));

/* RW_VB bytes of float16 codes in 16-bit lanes <-> two rw_vf32. */
RW_INLINE void rw_h16_widen(rw_vu16 h, rw_vf32 *lo, rw_vf32 *hi)
{
#if RW_VB == 32
	*lo = (rw_vf32)_mm256_cvtph_ps(_mm256_castsi256_si128((__m256i)h));
	*hi = (rw_vf32)_mm256_cvtph_ps(_mm256_extracti128_si256((__m256i)h, 1));
#else
	*lo = (rw_vf32)_mm512_cvtph_ps(_mm512_castsi512_si256((__m512i)h));
	*hi = (rw_vf32)_mm512_cvtph_ps(_mm512_extracti64x4_epi64((__m512i)h, 1));
#endif
}

RW_INLINE rw_vu16 rw_h16_narrow(rw_vf32 lo, rw_vf32 hi)
{
#if RW_VB == 32
	__m128i l = _mm256_cvtps_ph((__m256)lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m128i h = _mm256_cvtps_ph((__m256)hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

	return (rw_vu16)_mm256_set_m128i(h, l);
#else
	__m256i l = _mm512_cvtps_ph((__m512)lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256i h = _mm512_cvtps_ph((__m512)hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

	return (rw_vu16)_mm512_inserti64x4(_mm512_castsi256_si512(l), h, 1);
#endif
}

/* fp8 codes (low byte of each lane) to float16 codes; e4m3 scaled by 2^-8. */
RW_INLINE rw_vu16 rw_fp8_to_h16(rw_vu16 c, enum rw_kind kind)
{
	rw_vu16 mag, h, nan;

	if (kind == RW_KIND_E5M2)
		return c << 8;
	mag = c & 0x7f;
	h = (mag << 7) | ((c & 0x80) << 8);
	nan = (rw_vu16)((rw_vi16)mag == 0x7f);
	return (nan & 0x7e00) | (~nan & h);
}

/* float16 codes to fp8 codes: nearest even, saturating, NaN as 0x7f. */
RW_INLINE rw_vu16 rw_h16_to_fp8(rw_vu16 h, enum rw_kind kind)
{
	const unsigned int sh = kind == RW_KIND_E5M2 ? 8 : 7;
	const int16_t max_in = kind == RW_KIND_E5M2 ? 0x7b00 : 0x3f00; /* 57344, 448 * 2^-8 */
	const uint16_t max_code = kind == RW_KIND_E5M2 ? 0x7b : 0x7e;
	rw_vu16 m = h & 0x7fff;
	const uint16_t half_m1 = (uint16_t)((1u << (sh - 1)) - 1);
	rw_vu16 r = (m + half_m1 + ((m >> sh) & 1)) >> sh;
	rw_vu16 big = (rw_vu16)((rw_vi16)m > max_in);
	rw_vu16 nan = (rw_vu16)((rw_vi16)m > 0x7c00);

	r = (big & max_code) | (~big & r);
	r = (nan & 0x7f) | (~nan & r);
	return r | ((h & 0x8000) >> 8);
}

/* RW_VB / 2 fp8 elements: widen to 16-bit lanes, two rw_vf32, back. */
RW_INLINE void rw_fp8_f16c_half(char *d, const char *a, const char *b, enum rw_op op,
				enum rw_kind kind)
{
	rw_vu8h x, y;
	rw_vf32 xl, xh, yl, yh;

	memcpy(&x, a, RW_VB / 2);
	memcpy(&y, b, RW_VB / 2);
	rw_h16_widen(rw_fp8_to_h16(__builtin_convertvector(x, rw_vu16), kind), &xl, &xh);
	rw_h16_widen(rw_fp8_to_h16(__builtin_convertvector(y, rw_vu16), kind), &yl, &yh);
	xl = rw_f32_op(xl, yl, op);
	xh = rw_f32_op(xh, yh, op);
	if (kind == RW_KIND_E4M3 && op == RW_OP_PROD) { /* 2^-8 * 2^-8 -> 2^-8 */
		xl *= 0x1p8f;
		xh *= 0x1p8f;
	}
	x = __builtin_convertvector(rw_h16_to_fp8(rw_h16_narrow(xl, xh), kind), rw_vu8h);
	memcpy(d, &x, RW_VB / 2);
}

RW_INLINE void rw_block_fp8_f16c(char *d, const char *a, const char *b, enum rw_op op,
				 enum rw_kind kind)
{
	rw_fp8_f16c_half(d, a, b, op, kind);
	rw_fp8_f16c_half(d + RW_VB / 2, a + RW_VB / 2, b + RW_VB / 2, op, kind);
}
#endif /* RW_F16C */

/* ---- drivers -------------------------------------------------------------- */

/* One RW_VB block of any type; kind, size and op are constants. */
RW_INLINE void rw_block(char *d, const char *a, const char *b, enum rw_kind kind, size_t size,
			enum rw_op op)
{
	switch (kind) {
	case RW_KIND_SINT:
	case RW_KIND_UINT:
		if (size == 1)
			rw_block_int8(d, a, b, kind, op);
		else if (size == 2)
			rw_block_int16(d, a, b, kind, op);
		else if (size == 4)
			rw_block_int32(d, a, b, kind, op);
		else
			rw_block_int64(d, a, b, kind, op);
		break;
	case RW_KIND_FLOAT:
		if (size == 4)
			rw_block_f32(d, a, b, op);
		else
			rw_block_f64(d, a, b, op);
		break;
	case RW_KIND_F16:
		rw_block_f16(d, a, b, op);
		break;
	case RW_KIND_BF16:
		rw_block_bf16(d, a, b, op);
		break;
	case RW_KIND_E4M3:
	case RW_KIND_E5M2:
#ifdef RW_F16C
		rw_block_fp8_f16c(d, a, b, op, kind);
#else
		rw_block_fp8(d, a, b, op, kind == RW_KIND_E4M3 ? rw_fmt_e4m3 : rw_fmt_e5m2);
#endif
		break;
	}
}

RW_INLINE void rw_kernel(void *dst, const void *a, const void *b, size_t count, enum rw_kind kind,
			 size_t size, enum rw_op op)
{
	char *d = dst;
	const char *x = a, *y = b;
	size_t bytes = count * size, i = 0;

	for (; i + 2 * RW_VB <= bytes; i += 2 * RW_VB) {
		rw_block(d + i, x + i, y + i, kind, size, op);
		rw_block(d + i + RW_VB, x + i + RW_VB, y + i + RW_VB, kind, size, op);
	}
	if (i + RW_VB <= bytes) {
		rw_block(d + i, x + i, y + i, kind, size, op);
		i += RW_VB;
	}
	if (i < bytes) {
		char tx[RW_VB] = {0}, ty[RW_VB] = {0}, td[RW_VB];

		memcpy(tx, x + i, bytes - i);
		memcpy(ty, y + i, bytes - i);
		rw_block(td, tx, ty, kind, size, op);
		memcpy(d + i, td, bytes - i);
	}
}

/* One RW_VB block of an avg's last step: d = s / n. */
RW_INLINE void rw_div_block(char *d, const char *s, enum rw_kind kind, size_t size, unsigned int n)
{
	switch (kind) {
	case RW_KIND_SINT:
	case RW_KIND_UINT:
		if (size <= 2)
			rw_div_small_int(d, s, kind, size, n);
		else if (size == 4)
			rw_div_int32(d, s, kind, n);
		else
			for (size_t i = 0; i < RW_VB; i += size)
				rw_div_int(d + i, s + i, kind, size, n);
		break;
	case RW_KIND_FLOAT:
		if (size == 4) {
			rw_vf32 x;

			memcpy(&x, s, RW_VB);
			x = x / (float)n;
			memcpy(d, &x, RW_VB);
		} else {
			rw_vf64 x;

			memcpy(&x, s, RW_VB);
			x = x / (double)n;
			memcpy(d, &x, RW_VB);
		}
		break;
	case RW_KIND_F16: {
		rw_vf32 x0 = rw_f16_load(s), x1 = rw_f16_load(s + RW_VB / 2);

		rw_f16_store(d, x0 / (float)n);
		rw_f16_store(d + RW_VB / 2, x1 / (float)n);
		break;
	}
	case RW_KIND_BF16: {
		rw_vu32 x, lo, hi;

		memcpy(&x, s, RW_VB);
		lo = rw_bf16_round((rw_vf32)(x << 16) / (float)n);
		hi = rw_bf16_round((rw_vf32)(x & 0xffff0000u) / (float)n);
		x = (hi & 0xffff0000u) | (lo >> 16);
		memcpy(d, &x, RW_VB);
		break;
	}
	case RW_KIND_E4M3:
	case RW_KIND_E5M2: {
		const struct rw_small_fmt f = kind == RW_KIND_E4M3 ? rw_fmt_e4m3 : rw_fmt_e5m2;
		rw_vu32 x, r;

		memcpy(&x, s, RW_VB);
		r = x * 0;
#pragma GCC unroll 4
		for (unsigned int k = 0; k < 32; k += 8)
			r |= rw_small_encode(rw_small_decode((x >> k) & 0xffu, f) / (float)n, f)
			     << k;
		memcpy(d, &r, RW_VB);
		break;
	}
	}
}

RW_INLINE void rw_div_kernel(void *dst, const void *src, size_t count, enum rw_kind kind,
			     size_t size, unsigned int n)
{
	char *d = dst;
	const char *s = src;
	size_t bytes = count * size, i = 0;

	for (; i + RW_VB <= bytes; i += RW_VB)
		rw_div_block(d + i, s + i, kind, size, n);
	if (i < bytes) {
		char ts[RW_VB] = {0}, td[RW_VB];

		memcpy(ts, s + i, bytes - i);
		rw_div_block(td, ts, kind, size, n);
		memcpy(d + i, td, bytes - i);
	}
}

/* ---- the kernels of rw_types.def and this set's tables --------------------- */

#define RW_DTYPE(e, nccl, name, bytes, kind, f_sum, f_prod, f_max, f_min, f_div)                   \
	static void f_sum(void *d, const void *a, const void *b, size_t n)                         \
	{                                                                                          \
		rw_kernel(d, a, b, n, kind, bytes, RW_OP_SUM);                                     \
	}                                                                                          \
	static void f_prod(void *d, const void *a, const void *b, size_t n)                        \
	{                                                                                          \
		rw_kernel(d, a, b, n, kind, bytes, RW_OP_PROD);                                    \
	}                                                                                          \
	static void f_max(void *d, const void *a, const void *b, size_t n)                         \
	{                                                                                          \
		rw_kernel(d, a, b, n, kind, bytes, RW_OP_MAX);                                     \
	}                                                                                          \
	static void f_min(void *d, const void *a, const void *b, size_t n)                         \
	{                                                                                          \
		rw_kernel(d, a, b, n, kind, bytes, RW_OP_MIN);                                     \
	}                                                                                          \
	static void f_div(void *d, const void *s, size_t n, unsigned int nranks)                   \
	{                                                                                          \
		rw_div_kernel(d, s, n, kind, bytes, nranks);                                       \
	}
#include "kernels/rw_types.def"

/* [op][dtype]; avg reduces with sum and is finished by rw_div_fns. */
static rw_reduce_fn *const rw_reduce_fns[][RW_DTYPE_COUNT] = {
	[RW_OP_SUM] =
		{
#define RW_DTYPE(e, nccl, name, bytes, kind, f_sum, f_prod, f_max, f_min, f_div) [e] = f_sum,
#include "kernels/rw_types.def"
		},
	[RW_OP_PROD] =
		{
#define RW_DTYPE(e, nccl, name, bytes, kind, f_sum, f_prod, f_max, f_min, f_div) [e] = f_prod,
#include "kernels/rw_types.def"
		},
	[RW_OP_MAX] =
		{
#define RW_DTYPE(e, nccl, name, bytes, kind, f_sum, f_prod, f_max, f_min, f_div) [e] = f_max,
#include "kernels/rw_types.def"
		},
	[RW_OP_MIN] =
		{
#define RW_DTYPE(e, nccl, name, bytes, kind, f_sum, f_prod, f_max, f_min, f_div) [e] = f_min,
#include "kernels/rw_types.def"
		},
	[RW_OP_AVG] =
		{
#define RW_DTYPE(e, nccl, name, bytes, kind, f_sum, f_prod, f_max, f_min, f_div) [e] = f_sum,
#include "kernels/rw_types.def"
		},
};
static_assert(RW_ARRAY_SIZE(rw_reduce_fns) == RW_OP_COUNT,
	      "rw_reduce_fns needs one row per op of rw_ops.def");

static rw_div_fn *const rw_div_fns[RW_DTYPE_COUNT] = {
#define RW_DTYPE(e, nccl, name, bytes, kind, f_sum, f_prod, f_max, f_min, f_div) [e] = f_div,
#include "kernels/rw_types.def"
};
