/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The AVX2 host kernels: 32-byte vectors, float16 through F16C.  Compiled
 * with -mavx2 -mf16c (kernels/CMakeLists.txt) and used only when the CPU
 * reports both (rw_reduce.c).
 */
#define RW_VB	32
#define RW_F16C 1
#include "kernels/reduce_impl.h"

const struct rw_reduce_isa_ops rw_reduce_isa_avx2 = {
	.name = "avx2",
	.reduce = rw_reduce_fns,
	.div = rw_div_fns,
};
