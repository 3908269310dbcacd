/* SPDX-License-Identifier: Apache-2.0 */
/* Live-object counters of the ib transport (ib_util.c), for leak checks. */
#ifndef RW_IB_LIVE_H
#define RW_IB_LIVE_H

#include "transport/base/rw_base.h"

enum rw_ib_live_kind {
	RW_IB_LIVE_NETS,      /* transport instances */
	RW_IB_LIVE_LISTENERS, /* open listeners */
	RW_IB_LIVE_COMMS,     /* comms, connecting or open */
	RW_IB_LIVE_REQS,      /* requests handed out and not yet completed */
	RW_IB_LIVE_MRS,	      /* rw_net_mr handles */
	RW_IB_LIVE_REGS,      /* verbs memory registrations (the cache's) */
	RW_IB_LIVE_QPS,	      /* queue pairs */
	RW_IB_LIVE_THREADS,   /* async-event threads */
	RW_IB_LIVE_COUNT
};

/** The table (transport/base/rw_base.h), defined in ib_util.c. */
extern struct rw_live rw_ib_live;

/** Add delta to a counter. */
static inline void rw_ib_live_add(enum rw_ib_live_kind kind, long delta)
{
	rw_live_bump(&rw_ib_live, (int)kind, delta);
}

#endif /* RW_IB_LIVE_H */
