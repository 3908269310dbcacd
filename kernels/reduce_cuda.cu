/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device kernels: one template fold, instantiated for every datatype and
 * op of rw_types.def / rw_ops.def, launched on the caller's stream.
 *
 * A fold reads up to RW_REDUCE_MAX_SRCS sources and writes dst once:
 * dst = ((src0 op src1) op src2) ... [/ nranks], rounded after each op like
 * the host kernels, whose bits it reproduces (the arithmetic below is the
 * host's: narrow types in float32, max/min as maximumNumber with -0 < +0,
 * correctly rounded division for avg, truncating division on integers).
 *
 * Memory access: when every buffer has the same address modulo 16 and is
 * element-aligned, a few scalar elements reach the 16-byte boundary (head),
 * the body moves in 16-byte vectors (one per thread per round of a
 * grid-stride loop) and scalar elements finish the tail.  Buffers that
 * disagree modulo 16 go element by element, with byte loads when an element
 * is not even aligned to its size.  So any count and any pointer work.
 *
 * Two sources (the engine's case) get their own instance that names them
 * statically; more sources are indexed at run time, which costs a copy of
 * the arguments to local memory.  Keeping the source loop rolled keeps the
 * 48 x 2 instances small enough to compile in seconds.
 */
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

extern "C" {
#include "common/rw_log.h"
}
#include "gpu/rw_cuda.h"
#include "kernels/reduce_internal.h"

namespace
{

constexpr int kThreads = 256;

struct FoldArgs {
	char *dst;
	const char *src[RW_REDUCE_MAX_SRCS];
	unsigned int nsrcs;
	unsigned int nranks;
	size_t count;
	size_t head; /* scalar elements before the first 16-byte boundary */
	size_t nvec; /* 16-byte vectors after them */
};

/* ---- element types: storage S, arithmetic in A ------------------------ */

template <typename T> struct IntElem {
	typedef T S;
	typedef T A;
	static __device__ __forceinline__ A load(S v)
	{
		return v;
	}
	static __device__ __forceinline__ S store(A v)
	{
		return v;
	}
	static __device__ __forceinline__ A apply(A a, A b, int op)
	{
		typedef typename std::make_unsigned<T>::type U;

		switch (op) {
		case RW_OP_PROD:
			return (T)(U)((unsigned long long)(U)a * (unsigned long long)(U)b);
		case RW_OP_MAX:
			return a > b ? a : b;
		case RW_OP_MIN:
			return a < b ? a : b;
		default:
			return (T)(U)((unsigned long long)(U)a + (unsigned long long)(U)b);
		}
	}
	static __device__ __forceinline__ A divide(A a, unsigned int n)
	{
		if (std::is_signed<T>::value)
			return (T)((long long)a / (long long)n);
		return (T)((unsigned long long)a / n);
	}
};

/* maximumNumber / minimumNumber with -0 < +0, as on the host. */
__device__ __forceinline__ float fmax_num(float a, float b)
{
	if (a == b)
		return __int_as_float(__float_as_int(a) & __float_as_int(b));
	return (b > a || a != a) ? b : a;
}
__device__ __forceinline__ float fmin_num(float a, float b)
{
	if (a == b)
		return __int_as_float(__float_as_int(a) | __float_as_int(b));
	return (b < a || a != a) ? b : a;
}
__device__ __forceinline__ double fmax_num(double a, double b)
{
	if (a == b)
		return __longlong_as_double(__double_as_longlong(a) & __double_as_longlong(b));
	return (b > a || a != a) ? b : a;
}
__device__ __forceinline__ double fmin_num(double a, double b)
{
	if (a == b)
		return __longlong_as_double(__double_as_longlong(a) | __double_as_longlong(b));
	return (b < a || a != a) ? b : a;
}

template <typename F> __device__ __forceinline__ F float_apply(F a, F b, int op)
{
	switch (op) {
	case RW_OP_PROD:
		return a * b;
	case RW_OP_MAX:
		return fmax_num(a, b);
	case RW_OP_MIN:
		return fmin_num(a, b);
	default:
		return a + b;
	}
}

template <typename T> struct FloatElem {
	typedef T S;
	typedef T A;
	static __device__ __forceinline__ A load(S v)
	{
		return v;
	}
	static __device__ __forceinline__ S store(A v)
	{
		return v;
	}
	static __device__ __forceinline__ A apply(A a, A b, int op)
	{
		return float_apply(a, b, op);
	}
	static __device__ __forceinline__ A divide(A a, unsigned int n)
	{
		return a / (A)n;
	}
};

/* Narrow floats: codes in S, arithmetic in float32, round to nearest even. */
template <typename Codec, typename T> struct NarrowElem {
	typedef T S;
	typedef float A;
	static __device__ __forceinline__ A load(S v)
	{
		return Codec::to_float(v);
	}
	static __device__ __forceinline__ S store(A v)
	{
		return Codec::from_float(v);
	}
	static __device__ __forceinline__ A apply(A a, A b, int op)
	{
		return float_apply(a, b, op);
	}
	static __device__ __forceinline__ A divide(A a, unsigned int n)
	{
		return a / (float)n;
	}
};

struct F16Codec {
	static __device__ __forceinline__ float to_float(uint16_t v)
	{
		return __half2float(__ushort_as_half(v));
	}
	static __device__ __forceinline__ uint16_t from_float(float v)
	{
		return __half_as_ushort(__float2half_rn(v));
	}
};
struct BF16Codec {
	static __device__ __forceinline__ float to_float(uint16_t v)
	{
		return __uint_as_float((uint32_t)v << 16);
	}
	static __device__ __forceinline__ uint16_t from_float(float v)
	{
		return __bfloat16_as_ushort(__float2bfloat16_rn(v));
	}
};
template <__nv_fp8_interpretation_t I> struct FP8Codec {
	static __device__ __forceinline__ float to_float(uint8_t v)
	{
		__half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)v, I);
		return __half2float(__half(h));
	}
	static __device__ __forceinline__ uint8_t from_float(float v)
	{
		return (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, I);
	}
};

/* (kind, bytes) of rw_types.def -> element type. */
template <int Kind, int Bytes> struct Elem;
template <> struct Elem<RW_KIND_SINT, 1> : IntElem<int8_t> {
};
template <> struct Elem<RW_KIND_SINT, 2> : IntElem<int16_t> {
};
template <> struct Elem<RW_KIND_SINT, 4> : IntElem<int32_t> {
};
template <> struct Elem<RW_KIND_SINT, 8> : IntElem<int64_t> {
};
template <> struct Elem<RW_KIND_UINT, 1> : IntElem<uint8_t> {
};
template <> struct Elem<RW_KIND_UINT, 2> : IntElem<uint16_t> {
};
template <> struct Elem<RW_KIND_UINT, 4> : IntElem<uint32_t> {
};
template <> struct Elem<RW_KIND_UINT, 8> : IntElem<uint64_t> {
};
template <> struct Elem<RW_KIND_FLOAT, 4> : FloatElem<float> {
};
template <> struct Elem<RW_KIND_FLOAT, 8> : FloatElem<double> {
};
template <> struct Elem<RW_KIND_F16, 2> : NarrowElem<F16Codec, uint16_t> {
};
template <> struct Elem<RW_KIND_BF16, 2> : NarrowElem<BF16Codec, uint16_t> {
};
template <> struct Elem<RW_KIND_E4M3, 1> : NarrowElem<FP8Codec<__NV_E4M3>, uint8_t> {
};
template <> struct Elem<RW_KIND_E5M2, 1> : NarrowElem<FP8Codec<__NV_E5M2>, uint8_t> {
};

/* ---- loads and the fold ------------------------------------------------- */

template <typename S, bool Bytes> __device__ __forceinline__ S load_elem(const char *p)
{
	if (Bytes) {
		S v;
		memcpy(&v, p, sizeof(S)); /* no alignment known: byte loads */
		return v;
	}
	return *reinterpret_cast<const S *>(p);
}

template <typename S, bool Bytes> __device__ __forceinline__ void store_elem(char *p, S v)
{
	if (Bytes)
		memcpy(p, &v, sizeof(S));
	else
		*reinterpret_cast<S *>(p) = v;
}

/* Sources of a fold: Two (the engine's case) indexes them statically, so
 * the arguments stay in the parameter bank; otherwise they are indexed at
 * run time (the compiler copies them to local memory). */
template <bool Two> __device__ __forceinline__ unsigned int nsrcs_of(const FoldArgs &p)
{
	return Two ? 2 : p.nsrcs;
}

/* Element i of the fold. */
template <class E, int Op, bool Two, bool Bytes>
__device__ __forceinline__ void fold_elem(const FoldArgs &p, size_t i)
{
	typedef typename E::S S;
	size_t at = i * sizeof(S);
	S acc = load_elem<S, Bytes>(p.src[0] + at);

	for (unsigned int j = 1; j < nsrcs_of<Two>(p); j++)
		acc = E::store(
			E::apply(E::load(acc), E::load(load_elem<S, Bytes>(p.src[j] + at)), Op));
	if (p.nranks)
		acc = E::store(E::divide(E::load(acc), p.nranks));
	store_elem<S, Bytes>(p.dst + at, acc);
}

template <class E> union Vec16 {
	uint4 u;
	typename E::S e[16 / sizeof(typename E::S)];
};

template <class E, int Op>
__device__ __forceinline__ void vec_apply(Vec16<E> &acc, const Vec16<E> &t)
{
#pragma unroll
	for (int k = 0; k < (int)(16 / sizeof(typename E::S)); k++)
		acc.e[k] = E::store(E::apply(E::load(acc.e[k]), E::load(t.e[k]), Op));
}

template <class E> __device__ __forceinline__ void vec_divide(Vec16<E> &acc, unsigned int n)
{
#pragma unroll
	for (int k = 0; k < (int)(16 / sizeof(typename E::S)); k++)
		acc.e[k] = E::store(E::divide(E::load(acc.e[k]), n));
}

enum FoldMode {
	MODE_VEC16, /* buffers share their address modulo 16: head, body, tail */
	MODE_ELEMS, /* element-aligned, different modulo 16 */
	MODE_BYTES, /* not even element-aligned */
};

/*
 * The fold kernel.  Each thread takes one 16-byte vector (or one element)
 * per round of a grid-stride loop; with a full GPU that keeps enough bytes
 * in flight, and the loop over sources stays rolled to keep the code small.
 */
template <class E, int Op, bool Two>
__global__ void __launch_bounds__(kThreads) fold_kernel(FoldArgs p, int mode)
{
	typedef typename E::S S;
	constexpr size_t per = 16 / sizeof(S);
	size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	if (mode == MODE_BYTES) {
		for (size_t i = tid; i < p.count; i += stride)
			fold_elem<E, Op, Two, true>(p, i);
		return;
	}
	if (mode == MODE_ELEMS) {
		for (size_t i = tid; i < p.count; i += stride)
			fold_elem<E, Op, Two, false>(p, i);
		return;
	}

	size_t tail0 = p.head + p.nvec * per;
	size_t base = p.head * sizeof(S);

	if (tid < p.head + (p.count - tail0))
		fold_elem<E, Op, Two, false>(p, tid < p.head ? tid : tail0 + (tid - p.head));
	for (size_t v = tid; v < p.nvec; v += stride) {
		size_t at = base + v * 16;
		Vec16<E> acc, t;

		acc.u = *reinterpret_cast<const uint4 *>(p.src[0] + at);
		for (unsigned int j = 1; j < nsrcs_of<Two>(p); j++) {
			t.u = *reinterpret_cast<const uint4 *>(p.src[j] + at);
			vec_apply<E, Op>(acc, t);
		}
		if (p.nranks)
			vec_divide<E>(acc, p.nranks);
		*reinterpret_cast<uint4 *>(p.dst + at) = acc.u;
	}
}

/* ---- launch ------------------------------------------------------------- */

int launch_failed(const char *what, cudaError_t e, const struct rw_dev_fold *f, cudaStream_t stream)
{
	RW_WARN(RW_LOG_COLL,
		"reduce on device: %s(dst=%p, nsrcs=%u, count=%zu, stream=%p) failed: %s (%s)",
		what, f->dst, f->nsrcs, f->count, (void *)stream, cudaGetErrorString(e),
		cudaGetErrorName(e));
	return rw_cuda_errno(e);
}

template <class E, int Op> int launch(const struct rw_dev_fold *f, cudaStream_t stream)
{
	typedef typename E::S S;
	FoldArgs p = {};
	uintptr_t mis = (uintptr_t)f->dst % 16, any = (uintptr_t)f->dst;
	int same = 1, dev = 0, sms = 0;
	size_t work;
	cudaError_t e;

	if (f->count == 0)
		return 0;
	p.dst = (char *)f->dst;
	p.nsrcs = f->nsrcs;
	p.nranks = f->nranks;
	p.count = f->count;
	for (unsigned int j = 0; j < f->nsrcs; j++) {
		p.src[j] = (const char *)f->srcs[j];
		same &= (uintptr_t)f->srcs[j] % 16 == mis;
		any |= (uintptr_t)f->srcs[j];
	}
	e = cudaGetDevice(&dev);
	if (e == cudaSuccess)
		e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		return launch_failed("cudaGetDevice", e, f, stream);
	}
	int mode = any % sizeof(S) ? MODE_BYTES : same ? MODE_VEC16 : MODE_ELEMS;
	if (mode == MODE_VEC16) {
		size_t per = 16 / sizeof(S);

		p.head = ((16 - mis) % 16) / sizeof(S);
		if (p.head > p.count)
			p.head = p.count;
		p.nvec = (p.count - p.head) / per;
		work = p.nvec;
		if (work < p.count - p.nvec * per)
			work = p.count - p.nvec * per; /* scalar head + tail */
	} else {
		work = p.count;
	}
	size_t blocks = (work + kThreads - 1) / kThreads;
	size_t cap = (size_t)(sms > 0 ? sms : 1) * 16;
	if (blocks > cap)
		blocks = cap;

	if (p.nsrcs == 2)
		fold_kernel<E, Op, true><<<(unsigned int)blocks, kThreads, 0, stream>>>(p, mode);
	else
		fold_kernel<E, Op, false><<<(unsigned int)blocks, kThreads, 0, stream>>>(p, mode);
	e = cudaGetLastError();
	return e == cudaSuccess ? 0 : launch_failed("kernel launch", e, f, stream);
}

typedef int rw_dev_fn(const struct rw_dev_fold *f, cudaStream_t stream);

/* The kernels of rw_types.def.  Device folds divide inside the sum kernel
 * (nranks), so the rw_div_* names exist on the host only. */
#define RW_DTYPE(e, nccl, name, bytes, kind, f_sum, f_prod, f_max, f_min, f_div)                   \
	int f_sum(const struct rw_dev_fold *f, cudaStream_t s)                                     \
	{                                                                                          \
		return launch<Elem<kind, bytes>, RW_OP_SUM>(f, s);                                 \
	}                                                                                          \
	int f_prod(const struct rw_dev_fold *f, cudaStream_t s)                                    \
	{                                                                                          \
		return launch<Elem<kind, bytes>, RW_OP_PROD>(f, s);                                \
	}                                                                                          \
	int f_max(const struct rw_dev_fold *f, cudaStream_t s)                                     \
	{                                                                                          \
		return launch<Elem<kind, bytes>, RW_OP_MAX>(f, s);                                 \
	}                                                                                          \
	int f_min(const struct rw_dev_fold *f, cudaStream_t s)                                     \
	{                                                                                          \
		return launch<Elem<kind, bytes>, RW_OP_MIN>(f, s);                                 \
	}
#include "kernels/rw_types.def"

/* [op][dtype]; avg folds with sum (the caller passes nranks). */
rw_dev_fn *const rw_reduce_fns[][RW_DTYPE_COUNT] = {
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
static_assert(sizeof(rw_reduce_fns) / sizeof(rw_reduce_fns[0]) == RW_OP_COUNT,
	      "rw_reduce_fns needs one row per op of rw_ops.def");

} /* namespace */

extern "C" int rw_cuda_fold(const struct rw_dev_fold *f, enum rw_dtype dtype, enum rw_op op,
			    void *stream)
{
	return rw_reduce_fns[op][dtype](f, (cudaStream_t)stream);
}
