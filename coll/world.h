/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A communicator of the public C API (struct rw_comm, rw_comm_t in
 * include/ringway.h): the transport instance, the rendezvous connections
 * and the engine comm, created together by rw_world_create() and torn down
 * by rw_world_destroy().  Used by coll/rw_api_coll.c (libringway.so) and by
 * tests that need a pre-bound rendezvous socket.
 */
#ifndef RW_WORLD_H
#define RW_WORLD_H

#include <stddef.h>

#include "common/rw_params.h"
#include "include/ringway.h"

struct rw_comm;
struct rw_coll_comm;

struct rw_world_args {
	int nranks, rank;
	/** rank 0's "host:port" or "host:port#key" (the job secret, else
	 *  cfg's RINGWAY_SECRET); may be NULL on rank 0 when listen_fd >= 0 */
	const char *root;
	/** rank 0 only: an already listening TCP socket it takes over, or -1 */
	int listen_fd;
	/** parameters; NULL loads them from the environment */
	const struct rw_config *cfg;
};

/**
 * Join nranks ranks: create the transport (RINGWAY_TRANSPORT), meet at the
 * rendezvous, exchange listen handles and connect the rings.  Blocks, each
 * phase bounded by RINGWAY_TIMEOUT_MS.  nranks: 1 to RW_MAX_RANKS.
 * \param[out] out set only on success.  On failure listen_fd is closed
 * and nothing else is touched.
 */
int rw_world_create(const struct rw_world_args *a, struct rw_comm **out);

/**
 * Wait for every rank (unless the comm already failed: its peers may be
 * gone), then close everything.  NULL is ignored.
 * \return 0, or the barrier's error (everything is freed anyway).
 */
int rw_world_destroy(struct rw_comm *w);

/** The engine comm of w. */
struct rw_coll_comm *rw_world_coll(struct rw_comm *w);

struct rw_topo_place;

/** Where w's ranks stand round the ring and each channel's NIC
 *  (topo/rw_topo_place.h), as every rank computed it at creation. */
const struct rw_topo_place *rw_world_place(const struct rw_comm *w);

/**
 * The rendezvous rw_comm_init(NULL) uses: RINGWAY_ROOT, else MASTER_ADDR
 * and MASTER_PORT + 1 (torchrun's own store listens on MASTER_PORT itself).
 * \return 0, or -ENOENT when neither is set (buf untouched), -EINVAL when
 * MASTER_PORT is not a port.
 */
int rw_world_default_root(const struct rw_config *cfg, char *buf, size_t len);

/**
 * Let the fields pub sets (include/ringway.h's rw_config_t) replace cfg's,
 * checked by the registry's own parser and bounds.  NULL changes nothing.
 * \return 0, or -EINVAL after one warning per bad field naming it and its
 * value (the secret's only by its length); cfg may then be half changed.
 */
int rw_world_config_apply(struct rw_config *cfg, const rw_config_t *pub);

/** rw_comm_get_config(): what w runs with.  \return 0 or -EINVAL (logged). */
int rw_world_get_config(const struct rw_comm *w, rw_config_t *out);

/**
 * rw_comm_get_error(): w's sticky error, the rank that failed (-1 when
 * unknown) and a line naming it in buf (may be NULL).  Reads what the
 * engine recorded; does not block.
 */
int rw_world_error(const struct rw_comm *w, int *failed_rank, char *buf, size_t len);

/* --- rw_get_unique_id() (world_id.c) ------------------------------------------ */

/**
 * Listen on an ephemeral port of every address (cfg's socket interface
 * choice names the one put in the id) and describe it, with a fresh job
 * secret, in *id.  The listener is held for rw_world_id_root().
 * \return 0, -EINVAL, -ENODEV or the -errno of listen (logged).
 */
int rw_world_id_make(const struct rw_config *cfg, rw_unique_id_t *id);

/**
 * The rendezvous "host:port#key" of id in root (len bytes); on rank 0 also
 * the listener rw_world_id_make() held for it, in *listen_fd (else -1).
 * \return 0, or -EINVAL (not an id; on rank 0: not made by this process,
 * or already taken), logged.
 */
int rw_world_id_root(const rw_unique_id_t *id, int rank, char *root, size_t len, int *listen_fd);

#endif /* RW_WORLD_H */
