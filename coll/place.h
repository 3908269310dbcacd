/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placement at comm creation (rw_world_create, CollNet connect): what this
 * rank says about itself for topo/rw_topo_place.h, and the INFO lines.
 *
 *   host     rw_shm_host_id_get(): boot id, hostname, network namespace
 *            (the identity auto/shm use), hashed;
 *   GPU      RINGWAY_GPU (bus id or index into the topology's GPUs), else
 *            CUDA_VISIBLE_DEVICES' numeric entries picked by LOCAL_RANK
 *            (or OMPI_COMM_WORLD_LOCAL_RANK) modulo their number, else
 *            LOCAL_RANK modulo the topology's GPUs, else the rank's index
 *            among the ranks of its host (from the rendezvous) modulo
 *            them; none on a host without GPU;
 *   channels per channel rw_topo_channel_nic() for that GPU, matched to
 *            the rw_net device whose name is the NIC's netdev, RDMA device
 *            or name, else whose PCI path is the NIC's; dev 0 when none
 *            matches (the reason says so).
 *
 * The topology is RINGWAY_TOPO_XML's when set (per process: a test gives
 * each rank its own fixture), else this machine's.  RINGWAY_PLACEMENT=rank
 * skips all of it: rank order, every channel on device 0.
 */
#ifndef RW_PLACE_H
#define RW_PLACE_H

#include <stdbool.h>

#include "common/rw_params.h"
#include "topo/rw_topo_place.h"
#include "transport/rw_net.h"

/** RINGWAY_PLACEMENT is topo (the default; also when the registry has no
 *  such variable). */
bool rw_place_by_topo(const struct rw_config *cfg);

/** This process's host identity (the hash placement compares). */
uint64_t rw_place_host_id(void);

/** Ranks of host ids[rank] before rank: its rank on its host. */
int rw_place_local_rank(const uint64_t *ids, int rank);

/**
 * This rank's part: *me and its nchannels channels (ch[c]).  local_rank:
 * its rank on its host as the rendezvous found it, the GPU's index when no
 * variable names one (-1: unknown).  Never fails
 * for want of facts: a topology that cannot be read leaves the rank
 * without GPU, every channel on device 0, the reason saying why.
 * \return 0 or -ENOMEM.
 */
int rw_place_local(const struct rw_config *cfg, struct rw_net *net, bool by_topo, int nchannels,
		   int local_rank, struct rw_topo_place_rank *me, struct rw_topo_place_chan *ch);

/** The INFO lines of rank `rank` (its own line, the rings, its hops). */
void rw_place_log(const struct rw_topo_place *p, int rank);

/** One channel of a rank as it travels to the others. */
struct rw_place_wire_chan {
	char handle[RW_NET_HANDLE_MAXSIZE]; /**< the listener of the channel's device */
	struct rw_topo_place_chan place;
};

/** This rank's listeners: the comm's own (on device main_dev) and one per
 *  other device its channels use. */
struct rw_place_listens {
	struct rw_net_listen *main;
	int main_dev;
	int n;
	int dev[RW_TOPO_MAX_CHANNELS];
	struct rw_net_listen *l[RW_TOPO_MAX_CHANNELS];
	char handle[RW_TOPO_MAX_CHANNELS][RW_NET_HANDLE_MAXSIZE];
};

/**
 * Listen on each channel's device (ls->main_dev: ls->main, main_handle)
 * and put the handles into ch[0..nch-1].  A device that cannot listen
 * falls back to main_dev, one warning, and its channels' reasons say so.
 * \return 0 or -ENOMEM.
 */
int rw_place_listen(struct rw_net *net, struct rw_place_listens *ls, const void *main_handle,
		    struct rw_place_wire_chan *ch, int nch);

/** The listener of device dev (ls->main when it has none of its own). */
struct rw_net_listen *rw_place_listener(const struct rw_place_listens *ls, int dev);

/** Close the listeners rw_place_listen() opened (not ls->main). */
void rw_place_listens_close(struct rw_place_listens *ls);

struct rw_coll_comm;
struct rw_coll_comm_args;

/**
 * Placement for a comm that was connected in rank order (CollNet: NCCL
 * gives only the handles): allgather every rank's part over *c, compute
 * the placement, and unless it is rank order with every channel on a->dev
 * already, connect a placed comm (a's handles and listener for the
 * control links, new listeners for the channels) and replace *c by it.
 * a: what *c was created with.  p: the placement, for the caller to free.
 * \return 0, or -errno (*c is then still the rank-order comm, usable).
 */
int rw_place_coll_comm(const struct rw_coll_comm_args *a, struct rw_coll_comm **c,
		       struct rw_topo_place *p);

#endif /* RW_PLACE_H */
