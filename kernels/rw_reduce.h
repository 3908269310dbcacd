/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reduction kernels: dst = a op b for every NCCL datatype and op, vectorised
 * C on host memory (portable, AVX2+F16C or AVX-512, picked at run time) and
 * CUDA on device memory.  The arithmetic of the allreduce; no communication.
 *
 * Datatypes and ops come from one list each (rw_types.def, rw_ops.def) and
 * carry ncclDataType_t / ncclRedOp_t's numbers.  Every call checks its
 * arguments: a bad dtype or op, a NULL buffer, a count whose byte size
 * overflows or a partial overlap gives -EINVAL and a warning, and nothing
 * is written.
 *
 * Semantics (host and device give the same bits, NaN payloads aside):
 *  - Integers wrap (two's complement) in sum and prod.
 *  - float32/float64 follow IEEE 754 in round-to-nearest-even.  The host
 *    kernels assume the default floating-point environment (no flush-to-zero
 *    or denormals-are-zero); denormals are kept.
 *  - float16, bfloat16 and fp8 are widened exactly to float32, combined
 *    there and rounded back to nearest-even: each op is correctly rounded.
 *    float16 and bfloat16 overflow to +-Inf.  fp8 rounds with saturation,
 *    as NCCL's __NV_SATFINITE conversions do: any result beyond the largest
 *    finite value, +-Inf included, becomes +-448 (e4m3) or +-57344 (e5m2),
 *    so an e5m2 Inf input leaves every op as +-57344.  A NaN result is
 *    stored as 0x7f/0xff in both fp8 formats.
 *  - max and min return the number when one operand is NaN (IEEE 754-2019
 *    maximumNumber/minimumNumber), NaN only when both are, and order -0
 *    below +0.  This is what NCCL does (fmaxf/fminf on float and double,
 *    __hmax/__hmin on half, bfloat16 and, through half, fp8); CUDA leaves the
 *    sign of a zero result from fmaxf unspecified, ringway fixes it.
 *  - avg reduces with sum; the last step divides the sum by nranks once
 *    (rw_scale() or rw_reduce_multi_avg()).  Integers divide truncating
 *    toward zero, as NCCL's SumPostDiv does; floating types divide
 *    correctly rounded (NCCL multiplies by 1/nranks rounded to the element
 *    type, which for bfloat16 and nranks = 3 is 0.2% off).
 *  - NaN payloads and the sign of a NaN are unspecified.
 *
 * All host calls are synchronous, thread-safe and allocate nothing.  Device
 * calls only enqueue work on the caller's stream (a cudaStream_t passed as
 * void *, NULL for the default stream) and return; the buffers must stay
 * valid until the stream has run it.
 */
#ifndef RW_REDUCE_H
#define RW_REDUCE_H

#include <stddef.h>

/* How a datatype is stored and computed (the kind column of rw_types.def). */
enum rw_kind {
	RW_KIND_SINT,  /* two's complement integer */
	RW_KIND_UINT,  /* unsigned integer */
	RW_KIND_FLOAT, /* IEEE binary32 / binary64 */
	RW_KIND_F16,   /* IEEE binary16 */
	RW_KIND_BF16,  /* bfloat16 */
	RW_KIND_E4M3,  /* OCP fp8 E4M3 (no Inf; NaN = S.1111.111) */
	RW_KIND_E5M2,  /* OCP fp8 E5M2 (IEEE-like) */
};

enum rw_dtype {
#define RW_DTYPE(e, nccl, ...) e = nccl,
#include "kernels/rw_types.def"
};
enum {
#define RW_DTYPE(...) +1
	RW_DTYPE_COUNT = 0
#include "kernels/rw_types.def"
};

enum rw_op {
#define RW_OP(e, nccl, name) e = nccl,
#include "kernels/rw_ops.def"
};
enum {
#define RW_OP(...) +1
	RW_OP_COUNT = 0
#include "kernels/rw_ops.def"
};

/** Most sources one rw_reduce_multi*() call folds. */
#define RW_REDUCE_MAX_SRCS 8

/** Bytes per element, or 0 for a bad dtype. */
size_t rw_dtype_size(enum rw_dtype dtype);
/** "float32", ...; "invalid" for a bad dtype.  Static storage. */
const char *rw_dtype_name(enum rw_dtype dtype);
/** "sum", ...; "invalid" for a bad op.  Static storage. */
const char *rw_op_name(enum rw_op op);

/* ---- host memory -------------------------------------------------------- */

/**
 * dst[i] = a[i] op b[i] for i < count.  avg reduces as sum.
 * \param dst may be a or b (in place); no other overlap is allowed.
 * \return 0, or -EINVAL (dst untouched).
 */
int rw_reduce(void *dst, const void *a, const void *b, size_t count, enum rw_dtype dtype,
	      enum rw_op op);

/**
 * dst = srcs[0] op srcs[1] op ... op srcs[nsrcs-1], folded left to right
 * and rounded after each op, so the bits equal nsrcs-1 rw_reduce() calls,
 * in one pass over memory.  nsrcs = 1 copies.
 * \param srcs 1..RW_REDUCE_MAX_SRCS buffers; dst may be any of them.
 */
int rw_reduce_multi(void *dst, const void *const *srcs, unsigned int nsrcs, size_t count,
		    enum rw_dtype dtype, enum rw_op op);

/**
 * The last step of an avg: dst = (srcs[0] + ... + srcs[nsrcs-1]) / nranks
 * in one pass; equal to rw_reduce_multi(sum) then rw_scale().
 * \param nranks >= 1.
 */
int rw_reduce_multi_avg(void *dst, const void *const *srcs, unsigned int nsrcs, size_t count,
			enum rw_dtype dtype, unsigned int nranks);

/**
 * Finish an avg: dst[i] = src[i] / nranks (see the semantics above).
 * \param dst may be src.  \param nranks >= 1.
 */
int rw_scale(void *dst, const void *src, size_t count, enum rw_dtype dtype, unsigned int nranks);

/**
 * memcpy whose stores bypass the caches (non-temporal), for results no one
 * here reads again soon: they leave the cache to the data that is (a
 * collective's inputs, its slots), and a line written whole is not read
 * from memory first.  Copies below 256 bytes are plain memcpy.  dst and src
 * must not overlap; any alignment works.  Stores are fenced before return.
 */
void rw_copy_nontemporal(void *dst, const void *src, size_t len);

/* ---- device memory (CUDA) ----------------------------------------------- */
/*
 * The same operations on device memory, enqueued on stream.  Any pointer
 * alignment and count work; 16-byte vector loads are used where the
 * buffers share their alignment.  Return 0 once the kernel is enqueued,
 * -EINVAL for bad arguments, -ENOTSUP in a build without CUDA, -ENODEV
 * without a usable GPU, or the errno of the launch failure (logged with
 * CUDA's message).  Errors of the kernel itself surface on the stream.
 * Under the host-emulated GPU (gpu/rw_gpu_emu.h, tests) the host kernels
 * run on the stream's thread in stream order, with the same bits; a buffer
 * in pageable host memory gives -EFAULT there (a GPU kernel would fault).
 */
int rw_reduce_dev(void *dst, const void *a, const void *b, size_t count, enum rw_dtype dtype,
		  enum rw_op op, void *stream);
int rw_reduce_multi_dev(void *dst, const void *const *srcs, unsigned int nsrcs, size_t count,
			enum rw_dtype dtype, enum rw_op op, void *stream);
int rw_reduce_multi_avg_dev(void *dst, const void *const *srcs, unsigned int nsrcs, size_t count,
			    enum rw_dtype dtype, unsigned int nranks, void *stream);
int rw_scale_dev(void *dst, const void *src, size_t count, enum rw_dtype dtype, unsigned int nranks,
		 void *stream);

/* ---- instruction set of the host kernels --------------------------------- */

enum rw_isa {
	RW_ISA_PORTABLE, /* C with 16-byte GCC vectors: any CPU */
	RW_ISA_AVX2,	 /* AVX2 + F16C */
	RW_ISA_AVX512,	 /* AVX-512 F/BW/DQ/VL + F16C */
	RW_ISA_COUNT,
};

/** The best set this build and CPU support (chosen on first use). */
enum rw_isa rw_reduce_best_isa(void);
/** The set the host calls use now. */
enum rw_isa rw_reduce_get_isa(void);
/**
 * Use isa for every later host call in the process (tests and benchmarks
 * compare the sets; not meant to be changed while other threads reduce).
 * \return 0, -ENOTSUP when this build or CPU lacks it, -EINVAL when isa
 * is no set.
 */
int rw_reduce_set_isa(enum rw_isa isa);
/** "portable", "avx2", "avx512"; "invalid" otherwise. */
const char *rw_isa_name(enum rw_isa isa);

#endif /* RW_REDUCE_H */
