/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The AVX-512 host kernels: 64-byte vectors, float16 through the AVX-512F
 * forms of the F16C conversions.  Compiled with -mavx512f -mavx512bw
 * -mavx512dq -mavx512vl -mf16c (kernels/CMakeLists.txt) and used only when
 * the CPU reports all of them (rw_reduce.c).
 */
#define RW_VB	64
#define RW_F16C 1
#include "kernels/reduce_impl.h"

const struct rw_reduce_isa_ops rw_reduce_isa_avx512 = {
	.name = "avx512",
	.reduce = rw_reduce_fns,
	.div = rw_div_fns,
};
