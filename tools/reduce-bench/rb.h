/* SPDX-License-Identifier: Apache-2.0 */
/* ringway-reduce-bench internals: options, timing statistics, baselines. */
#ifndef RW_REDUCE_BENCH_RB_H
#define RW_REDUCE_BENCH_RB_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/rw_reduce.h"

struct rb_opts {
	size_t host_bytes; /* per buffer */
	size_t dev_bytes;  /* per buffer */
	int iters;
	unsigned int nsrcs; /* sources per reduction (2: dst = a op b) */
	bool in_place;	    /* dst is the first source */
	bool host, device;
	bool all_isas;
	bool dtypes[RW_DTYPE_COUNT];
	bool ops[RW_OP_COUNT];
};

/* Seconds of each iteration -> best and median. */
struct rb_stats {
	double best, median;
};
void rb_stats_of(double *secs, int n, struct rb_stats *out);

/* Fill count elements of dtype with normal values of order 1. */
void rb_fill(void *buf, size_t count, enum rw_dtype dt, unsigned int seed);

/* Baselines (rb_baseline.c, compiled -O3 for the default target). */
void rb_plain_add_f32(float *restrict c, const float *restrict a, const float *restrict b,
		      size_t n);
void rb_memcpy(void *dst, const void *src, size_t bytes);

/* The device half: returns 0, or 1 when there is no GPU (message printed). */
int rb_device(const struct rb_opts *o);

#endif /* RW_REDUCE_BENCH_RB_H */
