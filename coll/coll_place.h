/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's side of placement (coll/ only): links made on the net
 * device and listener each channel was given (rw_coll_comm_args' order,
 * chan_dev, chan_handles, chan_listen).  What the placement is comes from
 * coll/place.h.
 */
#ifndef RW_COLL_PLACE_H
#define RW_COLL_PLACE_H

#include "coll/rw_coll.h"

struct rw_coll_comm;

/* Most listeners one comm accepts on: its own and one per channel. */
#define RW_COLL_MAX_LISTENS 33

/**
 * Connect every link of c as a says: a channel's send link connects from
 * a->chan_dev[ch] to the peer's a->chan_handles entry for the channel (when
 * given), every other link from c->dev to a->handles[peer]; receives are
 * accepted on a->listen and every a->chan_listen, matched by their hello.
 * Blocks up to c->timeout_ms.
 */
int rw_coll_links_connect_args(struct rw_coll_comm *c, const struct rw_coll_comm_args *a);

#endif /* RW_COLL_PLACE_H */
