/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fuse transport: NIC fusion (NCCL's makeVDevice).  A fuse net stands
 * in front of one or more transport instances ("bases") and lists their
 * devices, physical, in order, then the virtual devices made by
 * rw_fuse_make_vdev().  A call on a physical device passes straight to its
 * base (the comms it returns are the base's own); a virtual device fuses
 * 2..RW_FUSE_MAX_MEMBERS physical devices of one network transport (ib or
 * socket) and stripes every message over them, completion-driven
 * (transport/fuse/README.md has the protocol).
 */
#ifndef RW_FUSE_H
#define RW_FUSE_H

#include <stdint.h>

#include "transport/rw_net.h"

/* Most physical devices in one virtual device: NCCL's vProps of v9..v11
 * hold 4 (v12: 8), and every member's listen handle must fit NCCL's
 * 128-byte handle. */
#define RW_FUSE_MAX_MEMBERS 4
#define RW_FUSE_MAX_VDEVS   16 /* virtual devices one fuse net makes */
#define RW_FUSE_MAX_BASES   4

/**
 * A fuse net over nbases transport instances, which it owns from then on
 * (destroyed with it, also when this fails).  Each base's member
 * connections are made on rw_net_wire(base): the network transport inside
 * the auto composite, so that a fused device never takes shm.
 * \param[out] out set only on success.  \return 0 or -errno.
 */
int rw_fuse_create(const struct rw_config *cfg, struct rw_net *const *bases, int nbases,
		   struct rw_net **out);

/** Whether net is a fuse net. */
int rw_fuse_is(const struct rw_net *net);

/**
 * makeVDevice: a new virtual device over the physical devices devs[0..n-1]
 * (n >= 2, at most RW_FUSE_MAX_MEMBERS, each a physical device of this
 * net, no device twice, all of one network transport).  Refusals are
 * -EINVAL, logged naming the value.  \param[out] d its index (after every
 * physical device and earlier virtual one); set only on success.
 */
int rw_fuse_make_vdev(struct rw_net *net, int n, const int *devs, int *d);

/** Physical devices of a fuse net (its virtual ones follow them). */
int rw_fuse_nphys(const struct rw_net *net);

/** What one member connection of a fused comm moved (its NIC's name). */
struct rw_fuse_member_stats {
	char nic[64];
	uint64_t bytes;	 /**< payload bytes through this connection */
	uint64_t pieces; /**< pieces of messages through it */
};

/**
 * Per-connection counters of a fused comm (send or receive side).  The
 * first entry is the control connection (headers and each message's first
 * piece, on the first member NIC); the others are data connections, one
 * per member of the listening side.
 * \param[out] n entries written (at most RW_FUSE_MAX_MEMBERS + 1).
 * \return 0, or -EINVAL when comm is not a fused comm.
 */
int rw_fuse_comm_stats(struct rw_net_comm *comm, int *n, struct rw_fuse_member_stats *out);

#endif /* RW_FUSE_H */
