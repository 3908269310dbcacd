/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside kernels/: what rw_reduce.c (argument checks, dispatch) shares with
 * the per-instruction-set kernel files and with the CUDA file.  Nothing
 * outside kernels/ includes this.
 */
#ifndef RW_REDUCE_INTERNAL_H
#define RW_REDUCE_INTERNAL_H

#include <stddef.h>

#include "kernels/rw_reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A host kernel: dst[i] = a[i] op b[i]; arguments already checked. */
typedef void rw_reduce_fn(void *dst, const void *a, const void *b, size_t count);
/* A host avg finisher: dst[i] = src[i] / nranks. */
typedef void rw_div_fn(void *dst, const void *src, size_t count, unsigned int nranks);

/* One instruction set's kernels.  Every entry is set (the tests check). */
struct rw_reduce_isa_ops {
	const char *name;
	rw_reduce_fn *const (*reduce)[RW_DTYPE_COUNT]; /* [RW_OP_COUNT] rows */
	rw_div_fn *const *div;			       /* [RW_DTYPE_COUNT] */
};

extern const struct rw_reduce_isa_ops rw_reduce_isa_portable; /* reduce_host.c */
extern const struct rw_reduce_isa_ops rw_reduce_isa_avx2;     /* reduce_avx2.c */
extern const struct rw_reduce_isa_ops rw_reduce_isa_avx512;   /* reduce_avx512.c */

/* One device fold: dst = (srcs[0] op ... op srcs[nsrcs-1]) [/ nranks]. */
struct rw_dev_fold {
	void *dst;
	const void *srcs[RW_REDUCE_MAX_SRCS];
	unsigned int nsrcs;  /* 1..RW_REDUCE_MAX_SRCS */
	unsigned int nranks; /* 0: no division; else divide the result */
	size_t count;
};

/*
 * Enqueue f on stream (reduce_cuda.cu; rw_cuda_none.c without CUDA).
 * Arguments are checked by the caller; op is never RW_OP_AVG here.
 * Returns 0 or -errno, logged.
 */
int rw_cuda_fold(const struct rw_dev_fold *f, enum rw_dtype dtype, enum rw_op op, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* RW_REDUCE_INTERNAL_H */
