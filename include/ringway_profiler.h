/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway's network events for NCCL's profiler: what a profiler plugin
 * receives from libnccl-net-ringway.so.
 *
 * From net ABI v10 (NCCL 2.26) on, NCCL passes the net plugin a profiler
 * callback at init and a profiler handle (phandle) with every isend and
 * every buffer of an irecv.  For each transfer ringway calls
 *
 *   callback(&eHandle, 0 (start), phandle, RINGWAY_PROFILER_NET_ID, &descr)
 *
 * when the transfer is posted (isend/irecv returned a request), and
 *
 *   callback(&eHandle, 1 (stop), NULL, 0, NULL)
 *
 * once, with the same eHandle, when test() reports the request done or
 * failed, or when its comm is closed (or the plugin finalized) with the
 * request still in flight.  A grouped irecv of n buffers is n events, each
 * with its own phandle (as NCCL's IB transport does).  Nothing is emitted
 * when NCCL gave no callback (net ABI v6..v9, or NULL) or no phandle.
 *
 * NCCL copies pluginId and extData into the ncclProfileNetPlugin event
 * descriptor it hands the profiler's startEvent (eDescr->netPlugin.id,
 * eDescr->netPlugin.data).  The descriptor is ringway's memory and valid
 * only during that call: copy what you keep (NCCL's socket transport does
 * the same).
 *
 * pluginId follows NCCL's profiler_net.h: the source in bits 16..31
 * (NCCL's own: IB 1 << 16, socket 2 << 16), the descriptor version in bits
 * 0..15.  A profiler recognises ringway's events by
 *
 *   (id & 0xffff0000) == RINGWAY_PROFILER_NET_TYPE
 *
 * and reads the descriptor of version (id & 0xffff).  Versions only ever
 * grow by appending fields; a field's meaning never changes.
 *
 * With RINGWAY_PROFILER_EVENTS=nccl, ringway sends NCCL's own descriptors
 * instead (socket v1 for socket and shm, IB v1 for ib), so profilers that
 * know only NCCL's transports, like NCCL's example profiler, show them; =off
 * emits nothing.
 */
#ifndef RINGWAY_PROFILER_H
#define RINGWAY_PROFILER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RINGWAY_PROFILER_NET_TYPE 0x52570000u /* "RW" << 16 */
#define RINGWAY_PROFILER_NET_VER  1
#define RINGWAY_PROFILER_NET_ID	  ((int64_t)(RINGWAY_PROFILER_NET_TYPE | RINGWAY_PROFILER_NET_VER))

/* descr.type: the event (one so far). */
enum { ringwayProfileTransfer = 1 };

/* descr.transport. */
enum {
	RINGWAY_PROFILER_UNKNOWN = 0, /* a transport that does not describe itself */
	RINGWAY_PROFILER_SOCKET = 1,  /* TCP */
	RINGWAY_PROFILER_SHM = 2,     /* same host: shared memory, CMA, CUDA IPC */
	RINGWAY_PROFILER_IB = 3,      /* InfiniBand / RoCE verbs */
};

/* descr.op. */
enum {
	RINGWAY_PROFILER_SEND = 0,
	RINGWAY_PROFILER_RECV = 1,
};

/*
 * Version 1: 112 bytes, x86_64 and aarch64 alike (every field at its
 * natural alignment, no padding).
 */
typedef struct {
	uint8_t type;	   /* ringwayProfileTransfer (first, like NCCL's descriptors) */
	uint8_t transport; /* RINGWAY_PROFILER_SOCKET, _SHM, _IB */
	uint8_t op;	   /* RINGWAY_PROFILER_SEND or _RECV */
	uint8_t index;	   /* recv: this buffer's place in a grouped irecv (0..n-1); send: 0 */
	int32_t device;	   /* NCCL's net device index */
	int32_t channels;  /* socket: TCP streams; ib: QPs; shm: 1 */
	int32_t tag;	   /* the isend/irecv tag */
	uint64_t connId;   /* socket: fd of stream 0; shm: connection id; ib: number
			      of the comm's first QP; UINT64_MAX unknown */
	uint64_t bytes;	   /* send: the message size; recv: this buffer's size (the
			      most it can take) */
	uint64_t seq;	   /* the comm's transfer number, from 0 (a grouped irecv's
			      buffers share one) */
	uint64_t comm;	   /* the comm (sendComm/recvComm as NCCL holds it) */
	char peer[64];	   /* the peer: "10.0.0.2<45678>" (socket, ib: its TCP
			      address), "pid 1234 (conn ...)" (shm); NUL-terminated */
} ringwayProfilerNetDescr_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* RINGWAY_PROFILER_H */
