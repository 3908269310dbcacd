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
 *            LOCAL_RANK modulo the topology's GPUs; none without any (or
 *            on a host without GPU);
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

/**
 * This rank's part: *me and its nchannels channels (ch[c]).  Never fails
 * for want of facts: a topology that cannot be read leaves the rank
 * without GPU, every channel on device 0, the reason saying why.
 * \return 0 or -ENOMEM.
 */
int rw_place_local(const struct rw_config *cfg, struct rw_net *net, bool by_topo, int nchannels,
		   struct rw_topo_place_rank *me, struct rw_topo_place_chan *ch);

/** The INFO lines of rank `rank` (its own line, the rings, its hops). */
void rw_place_log(const struct rw_topo_place *p, int rank);

#endif /* RW_PLACE_H */
