/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The network-event descriptors of NCCL's own transports, as NCCL's
 * profiler plugins read them (NCCL's profiler_net.h, net_socket_v1.h,
 * net_ib_v1.h, identical in 2.26 .. 2.30): ringway sends these with
 * RINGWAY_PROFILER_EVENTS=nccl so that a profiler that knows only NCCL's
 * transports (NCCL's example profiler) shows its transfers.  ringway's own
 * descriptor is in include/ringway_profiler.h.
 */
#ifndef RW_ABI_NCCL_PROFILER_NET_H
#define RW_ABI_NCCL_PROFILER_NET_H

#include "abi/nccl_common.h"

/* pluginId = type | version. */
#define NCCL_PROFILER_NET_VER_BITS  16
#define NCCL_PROFILER_NET_VER_MASK  (~0U >> NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_MASK (~0U << NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_IB   (1U << NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_SOCK (2U << NCCL_PROFILER_NET_VER_BITS)

#define NCCL_PROFILER_NET_SOCKET_VER 1
#define NCCL_PROFILER_NET_IB_VER     1

/* The profiler's event-mask bit for these events (NCCL_PROFILE_EVENT_MASK). */
#define NCCL_PROFILE_NET_PLUGIN_BIT (1 << 7) /* ncclProfileNetPlugin */

enum { ncclProfileSocket = 1 << 0 }; /* ncclProfilerNetSockDescr_v1_t.type */
enum { ncclProfileQp = 1 << 0 };     /* ncclProfilerNetIbDescr_v1_t.type */

/* op of a socket event: NCCL_SOCKET_SEND / NCCL_SOCKET_RECV. */
#define NCCL_PROFILER_SOCKET_SEND 0
#define NCCL_PROFILER_SOCKET_RECV 1

typedef struct {
	uint8_t type; /* ncclProfileSocket */
	union {
		struct {
			int fd;
			int op;
			size_t length;
		} sock;
	};
} ncclProfilerNetSockDescr_v1_t;

typedef struct {
	uint8_t type; /* ncclProfileQp */
	union {
		struct {
			int device;	/* net device index */
			uint64_t wr_id; /* work request id */
			int opcode;	/* ibv_wr_opcode */
			int qpNum;
			size_t length;
		} qp;
	};
} ncclProfilerNetIbDescr_v1_t;

RW_ABI_SIZE(ncclProfilerNetSockDescr_v1_t, 24);
RW_ABI_OFFSET(ncclProfilerNetSockDescr_v1_t, sock.length, 16);
RW_ABI_SIZE(ncclProfilerNetIbDescr_v1_t, 40);
RW_ABI_OFFSET(ncclProfilerNetIbDescr_v1_t, qp.wr_id, 16);
RW_ABI_OFFSET(ncclProfilerNetIbDescr_v1_t, qp.qpNum, 28);
RW_ABI_OFFSET(ncclProfilerNetIbDescr_v1_t, qp.length, 32);

#endif /* RW_ABI_NCCL_PROFILER_NET_H */
