/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The baselines of ringway-reduce-bench, in their own file so that they are
 * compiled as plain C at -O3 for the default target: the loop a user would
 * write, vectorised as far as the compiler goes on its own.
 */
#include <string.h>

#include "tools/reduce-bench/rb.h"

void rb_plain_add_f32(float *restrict c, const float *restrict a, const float *restrict b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		c[i] = a[i] + b[i];
}

void rb_memcpy(void *dst, const void *src, size_t bytes)
{
	memcpy(dst, src, bytes);
}
