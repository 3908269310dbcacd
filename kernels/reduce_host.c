/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The portable host kernels: 16-byte GCC vectors, which any target lowers
 * (SSE2 on x86-64, NEON on arm64, scalar code elsewhere).  float16 goes
 * through the integer decoder/encoder of reduce_impl.h.
 */
#define RW_VB 16
#include "kernels/reduce_impl.h"

const struct rw_reduce_isa_ops rw_reduce_isa_portable = {
	.name = "portable",
	.reduce = rw_reduce_fns,
	.div = rw_div_fns,
};
