/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVTX ranges for Nsight Systems.  nvtx3 is header-only (shipped with the
 * CUDA toolkit) and costs a predictable branch when no tool is attached; a
 * build without it compiles these to nothing.  Not CUDA: any layer may use it.
 *
 *   RW_NVTX_PUSH("ring allreduce");  ...  RW_NVTX_POP();
 *   RW_NVTX_MARK("peer 3 timed out");
 *
 * Names must be string literals or strings that outlive the call.
 */
#ifndef RW_NVTX_H
#define RW_NVTX_H

#include "common/rw_build.h"

#if RW_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#define RW_NVTX_PUSH(name) nvtxRangePushA(name)
#define RW_NVTX_POP()	   nvtxRangePop()
#define RW_NVTX_MARK(name) nvtxMarkA(name)
#else
#define RW_NVTX_PUSH(name) ((void)(name))
#define RW_NVTX_POP()	   ((void)0)
#define RW_NVTX_MARK(name) ((void)(name))
#endif

#endif /* RW_NVTX_H */
