/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CollNet: ncclCollNetPlugin_v6 .. _v12 over the ring engine (coll/rw_coll.h).
 *
 * NCCL's CollNet is the "network does the collective" interface: every
 * node's proxy calls connect() with all nodes' listen handles, then posts
 * iallreduce (v8+: iallgather, ireducescatter over scatter-gather windows)
 * and polls test().  ringway answers with its ring over the same rw_net
 * transport as the net plugin, so CollNet devices are the net devices, with
 * the same names (NCCL matches them by name).
 *
 * collnet_adapt.c has the version-independent operations on ringway's own
 * types (below); collnet_tables.c the seven tables and the ABI-typed
 * functions that convert each version's arguments.  Objects handed to NCCL:
 *   collComm  a struct rw_collnet_comm (owns the engine comm);
 *   mhandle   the engine's struct rw_coll_mr (registered on every link);
 *   request   a struct rw_collnet_req, freed by the test() that completes
 *             it (or fails it).
 * Host memory only: the devices advertise what the transport moves.
 */
#ifndef RW_PLUGIN_COLLNET_H
#define RW_PLUGIN_COLLNET_H

#include <stddef.h>

#include "plugin/rw_plugin.h"

/** One piece of a scatter-gather list, any version. */
struct rw_collnet_sge {
	void *mhandle;
	void *address;
	size_t size;
};

#define RW_COLLNET_MAX_PARTS 64 /* pieces of one iallgather/ireducescatter */

int rw_collnet_connect(void *const *handles, int nranks, int rank, void *listen_comm,
		       void **coll_comm);
int rw_collnet_reduce_support(int dtype, int op, int *supported);
int rw_collnet_reg_mr(void *coll_comm, void *data, size_t size, int type, void **mhandle);
int rw_collnet_reg_mr_dmabuf(void *coll_comm, void *data, size_t size, int type, uint64_t offset,
			     int fd, void **mhandle);
int rw_collnet_dereg_mr(void *coll_comm, void *mhandle);
int rw_collnet_iallreduce(void *coll_comm, void *send, void *recv, size_t count, int dtype, int op,
			  void *send_mh, void *recv_mh, void **request);
/** Every rank gives bytes_per_rank bytes; recv_parts receive the window
 *  [window_off, + window_bytes) of the gathered nranks * bytes_per_rank. */
int rw_collnet_iallgather(void *coll_comm, void *send, int nparts,
			  const struct rw_collnet_sge *recv_parts, size_t bytes_per_rank,
			  size_t window_off, size_t window_bytes, void *send_mh, void **request);
/** send_parts hold the window [window_off, + window_bytes) of every rank's
 *  nranks * bytes_per_rank input; recv gets this rank's part of it, reduced. */
int rw_collnet_ireducescatter(void *coll_comm, int nparts, const struct rw_collnet_sge *send_parts,
			      void *recv, size_t bytes_per_rank, size_t window_off,
			      size_t window_bytes, int dtype, int op, void *recv_mh,
			      void **request);
/** Host memory: nothing to flush (*request = NULL). */
int rw_collnet_iflush(void *coll_comm, void *data, int size, void *mhandle, void **request);
/** \param[out] size bytes received into the caller's buffers, once done. */
int rw_collnet_test(void *request, int *done, int *size);
int rw_collnet_close_coll(void *coll_comm);

RW_PLUGIN_EXPORT extern const ncclCollNet_v6_t ncclCollNetPlugin_v6;
RW_PLUGIN_EXPORT extern const ncclCollNet_v7_t ncclCollNetPlugin_v7;
RW_PLUGIN_EXPORT extern const ncclCollNet_v8_t ncclCollNetPlugin_v8;
RW_PLUGIN_EXPORT extern const ncclCollNet_v9_t ncclCollNetPlugin_v9;
RW_PLUGIN_EXPORT extern const ncclCollNet_v10_t ncclCollNetPlugin_v10;
RW_PLUGIN_EXPORT extern const ncclCollNet_v11_t ncclCollNetPlugin_v11;
RW_PLUGIN_EXPORT extern const ncclCollNet_v12_t ncclCollNetPlugin_v12;

#endif /* RW_PLUGIN_COLLNET_H */
