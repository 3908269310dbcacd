/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway's own declarations of the types NCCL shares with every plugin:
 * result codes, datatypes, reduction ops, the logger, the profiler callback,
 * and the enumerations the v11+ net attributes refer to.
 *
 * Binary-compatible with NCCL 2.28.9 / 2.30 on LP64 Linux: every enum is a
 * 4-byte int and has NCCL's values (tests/abi/test_abi_values.c compares
 * them with the installed nccl.h when there is one).  Only plugin/, tools/
 * and tests include abi/; nothing here is used inside the library.
 */
#ifndef RW_ABI_NCCL_COMMON_H
#define RW_ABI_NCCL_COMMON_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

/* A member of a plugin function table sits in slot `index` (8 bytes each). */
#define RW_ABI_SLOT(type, member, index)                                                           \
	static_assert(offsetof(type, member) == 8 * (index),                                       \
		      #type "." #member " is not in slot " #index)
#define RW_ABI_OFFSET(type, member, off)                                                           \
	static_assert(offsetof(type, member) == (off), #type "." #member " is not at "             \
							     "offset " #off)
#define RW_ABI_SIZE(type, size) static_assert(sizeof(type) == (size), "sizeof(" #type ") != " #size)

/* --- result codes -------------------------------------------------------- */

typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,   /* network or system call failed */
	ncclInternalError = 3, /* misuse by NCCL core, or a plugin bug */
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5, /* user or configuration error */
	ncclRemoteError = 6,  /* the peer went away or misbehaved */
	ncclInProgress = 7,   /* public API only; a plugin never returns it */
	ncclNumResults = 8
} ncclResult_t;

/* --- datatypes (NCCL 2.28: 0..11) ---------------------------------------- */

typedef enum {
	ncclInt8 = 0,
	ncclChar = 0,
	ncclUint8 = 1,
	ncclInt32 = 2,
	ncclInt = 2,
	ncclUint32 = 3,
	ncclInt64 = 4,
	ncclUint64 = 5,
	ncclFloat16 = 6,
	ncclHalf = 6,
	ncclFloat32 = 7,
	ncclFloat = 7,
	ncclFloat64 = 8,
	ncclDouble = 8,
	ncclBfloat16 = 9,
	ncclFloat8e4m3 = 10,
	ncclFloat8e5m2 = 11,
	ncclNumTypes = 12
} ncclDataType_t;

/* --- reduction ops -------------------------------------------------------- */

/*
 * Values >= ncclNumOps are user-created (PreMulSum) ops; ncclMaxRedOp keeps
 * the enum int-sized.  The network only ever sees Sum, Prod, Max, Min: NCCL
 * sends Avg and PreMulSum as Sum and scales on the GPU.
 */
typedef enum {
	ncclSum = 0,
	ncclProd = 1,
	ncclMax = 2,
	ncclMin = 3,
	ncclAvg = 4,
	ncclNumOps = 5,
	ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

/* --- logging ------------------------------------------------------------- */

typedef enum {
	NCCL_LOG_NONE = 0,
	NCCL_LOG_VERSION = 1,
	NCCL_LOG_WARN = 2,
	NCCL_LOG_INFO = 3,
	NCCL_LOG_ABORT = 4,
	NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

/* Subsystem flags.  NCCL's default mask is INIT|BOOTSTRAP|ENV, so a message
 * that should be seen with plain NCCL_DEBUG=INFO carries NCCL_INIT. */
typedef enum {
	NCCL_INIT = 0x1,
	NCCL_COLL = 0x2,
	NCCL_P2P = 0x4,
	NCCL_SHM = 0x8,
	NCCL_NET = 0x10,
	NCCL_GRAPH = 0x20,
	NCCL_TUNING = 0x40,
	NCCL_ENV = 0x80,
	NCCL_ALLOC = 0x100,
	NCCL_CALL = 0x200,
	NCCL_PROXY = 0x400,
	NCCL_NVLS = 0x800,
	NCCL_BOOTSTRAP = 0x1000,
	NCCL_REG = 0x2000,
	NCCL_PROFILE = 0x4000,
	NCCL_RAS = 0x8000,
	NCCL_DESTROY = 0x10000,	   /* 2.30 */
	NCCL_ALLOC_HOST = 0x20000, /* 2.30 */
	NCCL_ALL = ~0
} ncclDebugLogSubSys;

/* NCCL's logger.  `file` is printed only on WARN and TRACE lines. */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file,
				  int line, const char *fmt, ...);

/* --- profiler callback (net v10+) ----------------------------------------- */

enum {
	ncclProfilerNetEventStart = 0,
	ncclProfilerNetEventStop = 1,
	ncclProfilerNetEventUpdate = 2,
	ncclProfilerNetEventUpdateAndStop = 3
};

/* pluginId: network type in the upper 16 bits, struct version in the low 16.
 * A Start call dereferences pHandle, which must be the phandle NCCL passed
 * to that isend/irecv; a plugin may ignore the callback altogether. */
typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type, void *pHandle,
					       int64_t pluginId, void *extData);

/* --- what ncclNetAttr_vN_t bitmasks refer to (bit = 1 << value) ------------ */

typedef enum {
	ncclFuncBroadcast = 0,
	ncclFuncReduce = 1,
	ncclFuncAllGather = 2,
	ncclFuncReduceScatter = 3,
	ncclFuncAllReduce = 4,
	ncclFuncSendRecv = 5,
	ncclFuncSend = 6,
	ncclFuncRecv = 7,
	ncclFuncAlltoAll = 8,
	ncclFuncScatter = 9,
	ncclFuncGather = 10,
	ncclNumFuncs = 11
} ncclFunc_t;

#define NCCL_ALGO_UNDEF		 (-1)
#define NCCL_ALGO_TREE		 0
#define NCCL_ALGO_RING		 1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN	 3
#define NCCL_ALGO_NVLS		 4
#define NCCL_ALGO_NVLS_TREE	 5
#define NCCL_ALGO_PAT		 6

#define NCCL_PROTO_UNDEF  (-1)
#define NCCL_PROTO_LL	  0
#define NCCL_PROTO_LL128  1
#define NCCL_PROTO_SIMPLE 2

RW_ABI_SIZE(ncclResult_t, 4);
RW_ABI_SIZE(ncclDataType_t, 4);
RW_ABI_SIZE(ncclRedOp_t, 4);
RW_ABI_SIZE(ncclDebugLogLevel, 4);

#endif /* RW_ABI_NCCL_COMMON_H */
