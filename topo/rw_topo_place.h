/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placement of a job's ranks: the ring order and each channel's NIC, as
 * every rank computes it from what all ranks said about themselves (their
 * host, where their GPU stands in their host's ring, the NIC each channel
 * of theirs uses and why).  Pure arithmetic and text: the facts come from
 * topo (rw_topo_ring_rank, rw_topo_channel_nic) on each rank, and the
 * exchange is coll/'s.  The lines below are what the INFO log, ringway-perf
 * and ringway-topo --ranks print, word for word.
 *
 * The ring: hosts in the order of their lowest rank, each host's ranks
 * together, sorted by ring_rank (NVLink neighbours adjacent, entered and
 * left where rw_topo_channels() puts channel 0), then by rank; so the ring
 * crosses between hosts once per host (nhosts crossings, one per direction
 * per channel on 2 hosts), the fewest a ring through them can.  With
 * by_topo false the ring is rank order.
 */
#ifndef RW_TOPO_PLACE_H
#define RW_TOPO_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topo/rw_topo.h"

#define RW_TOPO_HOSTNAME_MAX 64

/** One channel of one rank: the NIC it is bound to and the net device its
 *  links are made on. */
struct rw_topo_place_chan {
	int32_t dev;			 /**< rw_net device index */
	char nic[RW_TOPO_NAME_MAX];	 /**< topology NIC ("mlx5_0"), "none" */
	char devname[RW_TOPO_NAME_MAX];	 /**< the rw_net device's name */
	char reason[RW_TOPO_REASON_MAX]; /**< in ringway-topo's words */
};

/** What one rank says about itself (fixed size: it travels as is). */
struct rw_topo_place_rank {
	uint64_t host;	   /**< host identity: equal on one host */
	int32_t ring_rank; /**< rw_topo_ring_rank() of its GPU, -1 without */
	int32_t rsvd;
	char hostname[RW_TOPO_HOSTNAME_MAX];
	char gpu[RW_TOPO_BUSID_MAX]; /**< bus id, "" without GPU */
};

struct rw_topo_place {
	int nranks, nchannels, nhosts;
	bool by_topo;
	int *order;			 /**< nranks: the rank at each ring position */
	int *pos;			 /**< nranks: each rank's ring position */
	int *host_of;			 /**< nranks: host index (numbered by lowest rank) */
	struct rw_topo_place_rank *rank; /**< nranks, filled by the caller */
	struct rw_topo_place_chan *chan; /**< nranks * nchannels, [r * nchannels + c] */
};

/** Allocate for nranks x nchannels (zeroed).  \return 0, -EINVAL, -ENOMEM. */
int rw_topo_place_alloc(struct rw_topo_place *p, int nranks, int nchannels, bool by_topo);
/** Free what alloc took; p may be zeroed. */
void rw_topo_place_free(struct rw_topo_place *p);

/** Compute order, pos, host_of, nhosts from rank[] (see above); n log n.
 *  \return 0 or -ENOMEM. */
int rw_topo_place_ring(struct rw_topo_place *p);

static inline struct rw_topo_place_chan *rw_topo_place_chan_of(const struct rw_topo_place *p,
							       int rank, int ch)
{
	return &p->chan[(size_t)rank * (size_t)p->nchannels + (size_t)ch];
}

/** Times a channel's ring goes from one host to another: nhosts when > 1. */
int rw_topo_place_crossings(const struct rw_topo_place *p);

/**
 * The lines (no newline):
 *   "place: rank R of N: host H of NH (hostname), GPU busid|none, ring position P"
 *   "place: channel C ring R0 R1 ... (K host crossings)"
 *   "place: channel C rank R -> rank NEXT over NIC nic (net dev D name): reason"
 * \return buf.
 */
const char *rw_topo_place_line_rank(const struct rw_topo_place *p, int rank, char *buf, size_t len);
const char *rw_topo_place_line_ring(const struct rw_topo_place *p, int ch, char *buf, size_t len);
const char *rw_topo_place_line_hop(const struct rw_topo_place *p, int ch, int rank, char *buf,
				   size_t len);

/** Every line: each rank's, then per channel the ring and every rank's
 *  hop, each after `prefix`.  \return 0 or -EIO. */
int rw_topo_place_write(const struct rw_topo_place *p, const char *prefix, FILE *f);

/**
 * What rw_comm_init would place for nranks ranks dealt round-robin over
 * nhosts hosts like t (rank r on host r % nhosts, LOCAL_RANK r / nhosts:
 * its GPU is that index modulo t's GPUs), nchannels channels each: for
 * ringway-topo --ranks and the tests.  No net is known here: each
 * channel's device is -1 and named by the NIC's netdev.
 * \param[out] p allocated; free with rw_topo_place_free().
 * \return 0, -EINVAL, -ENOMEM.
 */
int rw_topo_place_simulate(const struct rw_topo *t, int nhosts, int nranks, int nchannels,
			   struct rw_topo_place *p);

#endif /* RW_TOPO_PLACE_H */
