/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Network events for NCCL's profiler (include/ringway_profiler.h).
 *
 * A send/recv comm whose context had a profiler callback gets a struct
 * rw_prof_comm: the callback, a descriptor template filled once from the
 * transport's description of the comm (rw_net_describe()), and one slot per
 * request in flight that started events, holding the eHandle of each (NCCL
 * writes *eHandle at start and reads it at stop, so it lives here until
 * then).  The slots are used by the comm's data path (one thread at a time,
 * rw_net.h) and by its close, never at once: no lock.
 *
 * Pairing: a start call is always followed by exactly one stop call with
 * the same eHandle, whatever the start returned: at test() done or failed,
 * or at close / finalize for what is still in flight.  A request that finds
 * every slot busy (more than RW_PROF_SLOTS in flight) starts no event, said
 * once.
 */
#include <stdlib.h>
#include <string.h>

#include "abi/nccl_profiler_net.h"
#include "common/rw_log.h"
#include "plugin/rw_plugin.h"

#define RW_PROF_SLOTS RW_NET_MAX_REQUESTS

static_assert(sizeof(ringwayProfilerNetDescr_v1_t) == 112, "ringway descriptor v1 is 112 bytes");
static_assert(offsetof(ringwayProfilerNetDescr_v1_t, connId) == 16 &&
		      offsetof(ringwayProfilerNetDescr_v1_t, peer) == 48,
	      "ringway descriptor v1 layout");
static_assert(RINGWAY_PROFILER_SOCKET == (int)RW_NET_KIND_SOCKET &&
		      RINGWAY_PROFILER_SHM == (int)RW_NET_KIND_SHM &&
		      RINGWAY_PROFILER_IB == (int)RW_NET_KIND_IB &&
		      RINGWAY_PROFILER_UNKNOWN == (int)RW_NET_KIND_UNKNOWN,
	      "transport kinds differ");
static_assert(sizeof(((struct rw_net_desc *)0)->peer) ==
		      sizeof(((ringwayProfilerNetDescr_v1_t *)0)->peer),
	      "peer strings differ");

#define RW_IBV_WR_RDMA_WRITE_WITH_IMM 1	  /* ibv_wr_opcode: ringway's data writes */
#define RW_IBV_WC_RECV		      128 /* ibv_wc_opcode: a receive */

struct rw_prof_slot {
	const void *req;  /* NULL: free */
	int n;		  /* buffers of the request */
	unsigned started; /* bit i: buffer i has an event */
	void *eh[RW_NET_MAX_RECVS];
};

struct rw_prof_comm {
	ncclProfilerCallback_t fn; /* NULL: no events on this comm */
	int format;		   /* enum rw_prof_format */
	int nbusy;		   /* slots in use */
	bool full_said;
	bool err_said;
	uint64_t seq; /* transfers posted */
	ringwayProfilerNetDescr_v1_t tmpl;
	struct rw_prof_slot slots[RW_PROF_SLOTS];
};

void rw_prof_attach(struct rw_pcomm *pc, ncclProfilerCallback_t fn)
{
	int format = pc->plugin->cfg.profiler_events;
	struct rw_prof_comm *pr = pc->prof;
	struct rw_net_desc d;

	if (pr)
		pr->fn = NULL;
	if (!fn || format == RW_PROF_OFF || !pc->u.comm)
		return;
	if (!pr) {
		pr = calloc(1, sizeof(*pr));
		if (!pr) {
			RW_WARN(RW_LOG_NET, "NET/%s: no memory for profiler events of comm %p",
				RW_PLUGIN_NAME, rw_pcomm_handle(pc));
			return;
		}
		pc->prof = pr;
	}
	memset(pr, 0, sizeof(*pr));
	(void)rw_net_describe(pc->u.comm, &d); /* kind UNKNOWN when it cannot */
	pr->tmpl.type = ringwayProfileTransfer;
	pr->tmpl.transport = (uint8_t)d.kind;
	pr->tmpl.device = pc->dev;
	pr->tmpl.channels = d.nchannels;
	pr->tmpl.connId = d.kind == RW_NET_KIND_UNKNOWN ? UINT64_MAX : d.conn_id;
	pr->tmpl.comm = (uint64_t)(uintptr_t)rw_pcomm_handle(pc);
	memcpy(pr->tmpl.peer, d.peer, sizeof(pr->tmpl.peer));
	pr->tmpl.peer[sizeof(pr->tmpl.peer) - 1] = '\0';
	pr->format = format;
	pr->fn = fn;
}

static struct rw_prof_slot *slot_of(struct rw_prof_comm *pr, const void *req)
{
	for (int i = 0, seen = 0; i < RW_PROF_SLOTS && seen < pr->nbusy; i++) {
		if (!pr->slots[i].req)
			continue;
		if (pr->slots[i].req == req)
			return &pr->slots[i];
		seen++;
	}
	return NULL;
}

static void call(struct rw_prof_comm *pr, void **eh, int type, void *phandle, int64_t id,
		 void *data)
{
	ncclResult_t rc = pr->fn(eh, type, phandle, id, data);

	if (rc != ncclSuccess && !pr->err_said) {
		pr->err_said = true;
		RW_WARN(RW_LOG_NET, "NET/%s: the profiler callback returned %d (%s event of %s)",
			RW_PLUGIN_NAME, (int)rc,
			type == ncclProfilerNetEventStart ? "start" : "stop", pr->tmpl.peer);
	}
}

/* One start call in the configured format; data lives on this stack frame
 * (the descriptor is valid during the call only). */
static void start_one(struct rw_prof_comm *pr, void **eh, void *phandle, bool recv, int index,
		      size_t bytes, int tag)
{
	if (pr->format == RW_PROF_NCCL && pr->tmpl.transport == RINGWAY_PROFILER_IB) {
		ncclProfilerNetIbDescr_v1_t ib;

		memset(&ib, 0, sizeof(ib));
		ib.type = ncclProfileQp;
		ib.qp.device = pr->tmpl.device;
		ib.qp.wr_id = pr->seq;
		ib.qp.opcode = recv ? RW_IBV_WC_RECV : RW_IBV_WR_RDMA_WRITE_WITH_IMM;
		ib.qp.qpNum = (int)(uint32_t)pr->tmpl.connId;
		ib.qp.length = bytes;
		call(pr, eh, ncclProfilerNetEventStart, phandle,
		     (int64_t)(NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER), &ib);
	} else if (pr->format == RW_PROF_NCCL) {
		ncclProfilerNetSockDescr_v1_t so;

		memset(&so, 0, sizeof(so));
		so.type = ncclProfileSocket;
		so.sock.fd = pr->tmpl.transport == RINGWAY_PROFILER_SOCKET &&
					     pr->tmpl.connId <= INT32_MAX
				     ? (int)pr->tmpl.connId
				     : -1;
		so.sock.op = recv ? NCCL_PROFILER_SOCKET_RECV : NCCL_PROFILER_SOCKET_SEND;
		so.sock.length = bytes;
		call(pr, eh, ncclProfilerNetEventStart, phandle,
		     (int64_t)(NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER), &so);
	} else {
		ringwayProfilerNetDescr_v1_t d = pr->tmpl;

		d.op = recv ? RINGWAY_PROFILER_RECV : RINGWAY_PROFILER_SEND;
		d.index = (uint8_t)index;
		d.tag = tag;
		d.bytes = bytes;
		d.seq = pr->seq;
		call(pr, eh, ncclProfilerNetEventStart, phandle, RINGWAY_PROFILER_NET_ID, &d);
	}
}

void rw_prof_start(struct rw_pcomm *pc, const void *req, bool recv, int n, const size_t *sizes,
		   const int *tags, void *const *phandles)
{
	struct rw_prof_comm *pr = pc->prof;
	struct rw_prof_slot *s = NULL;

	if (!pr || !pr->fn || !req || !phandles || n < 1 || n > RW_NET_MAX_RECVS)
		return;
	for (int i = 0; i < RW_PROF_SLOTS; i++) {
		if (!pr->slots[i].req) {
			s = &pr->slots[i];
			break;
		}
	}
	if (!s) {
		if (!pr->full_said) {
			pr->full_said = true;
			RW_INFO(RW_LOG_NET,
				"NET/%s: more than %d requests in flight on comm %p (peer %s): "
				"the extra ones start no profiler event",
				RW_PLUGIN_NAME, RW_PROF_SLOTS, rw_pcomm_handle(pc), pr->tmpl.peer);
		}
		return;
	}
	s->n = n;
	s->started = 0;
	for (int i = 0; i < n; i++) {
		s->eh[i] = NULL;
		if (!phandles[i])
			continue;
		start_one(pr, &s->eh[i], phandles[i], recv, i, sizes[i], tags[i]);
		s->started |= 1u << i;
	}
	pr->seq++;
	if (s->started) {
		s->req = req;
		pr->nbusy++;
	}
}

static void stop_slot(struct rw_prof_comm *pr, struct rw_prof_slot *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->started & (1u << i))
			call(pr, &s->eh[i], ncclProfilerNetEventStop, NULL, 0, NULL);
	s->req = NULL;
	s->started = 0;
	pr->nbusy--;
}

void rw_prof_stop(struct rw_pcomm *pc, const void *req)
{
	struct rw_prof_comm *pr = pc->prof;
	struct rw_prof_slot *s;

	if (!pr || !pr->fn || !pr->nbusy)
		return;
	s = slot_of(pr, req);
	if (s)
		stop_slot(pr, s);
}

void rw_prof_stop_all(struct rw_pcomm *pc)
{
	struct rw_prof_comm *pr = pc->prof;

	if (!pr || !pr->fn)
		return;
	for (int i = 0; i < RW_PROF_SLOTS && pr->nbusy; i++)
		if (pr->slots[i].req)
			stop_slot(pr, &pr->slots[i]);
	pr->fn = NULL;
}

void rw_prof_free(struct rw_pcomm *pc)
{
	free(pc->prof);
	pc->prof = NULL;
}
