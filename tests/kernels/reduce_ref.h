/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reference arithmetic for the reduction tests, written apart from
 * kernels/: narrow formats are decoded with ldexp() from their bit fields
 * and encoded by searching the nearest representable value (ties to the
 * even code); ops run in double, or binary128 for float64, and round once.
 * Elements travel as their raw bits in a uint64_t.
 */
#ifndef RW_TEST_REDUCE_REF_H
#define RW_TEST_REDUCE_REF_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/rw_reduce.h"

enum rw_kind ref_kind(enum rw_dtype dt);
size_t ref_size(enum rw_dtype dt);
int ref_is_float(enum rw_dtype dt);

uint64_t ref_get(const void *buf, size_t i, enum rw_dtype dt);
void ref_put(void *buf, size_t i, enum rw_dtype dt, uint64_t v);

/* Value of a narrow code (F16, BF16, E4M3, E5M2), NaN for NaN codes. */
double ref_decode(enum rw_kind kind, uint32_t code);
/* Nearest code to v, ties to even; Inf or saturation past the largest. */
uint32_t ref_encode(enum rw_kind kind, double v);

/* a op b (avg: sum), and a / n for an avg, as raw bits. */
uint64_t ref_op(enum rw_dtype dt, enum rw_op op, uint64_t a, uint64_t b);
uint64_t ref_div(enum rw_dtype dt, uint64_t a, unsigned int n);

/* got equals want: same bits, or both NaN for floating types. */
int ref_same(enum rw_dtype dt, uint64_t got, uint64_t want);
int ref_is_nan(enum rw_dtype dt, uint64_t v);

/* Describe an element for failure messages (static buffer per call slot). */
const char *ref_str(enum rw_dtype dt, uint64_t v, int slot);

/* Fill n elements: random bits, moderate values and the type's edge values. */
void ref_fill(void *buf, size_t n, enum rw_dtype dt, uint64_t seed);

/* Compare n elements; on a mismatch fail with dtype, op, index and values.
 * a/b may be NULL (then not shown). */
void ref_check(const char *what, enum rw_dtype dt, enum rw_op op, const void *got, const void *want,
	       const void *a, const void *b, size_t n);

#endif /* RW_TEST_REDUCE_REF_H */
