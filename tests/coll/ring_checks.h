/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checked collectives and sweeps shared by the engine's test programs
 * (ring_checks.c).  Every function runs in a forked rank (coll_fork) and
 * blocks until its collectives are done; each returns its failures (0:
 * all right).  Buffers are the function's own, freed before it returns.
 */
#ifndef RW_RING_CHECKS_H
#define RW_RING_CHECKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coll/rw_coll.h"

struct rw_comm;

/** One collective of count elements (reduce-scatter: recvcount;
 *  allgather: sendcount), in place or not, against the reference. */
int coll_check_allreduce(struct rw_coll_comm *c, int rank, int p, size_t count, enum rw_dtype dt,
			 enum rw_op op, bool inplace, uint64_t seed);
int coll_check_reduce_scatter(struct rw_coll_comm *c, int rank, int p, size_t count,
			      enum rw_dtype dt, enum rw_op op, bool inplace, uint64_t seed);
int coll_check_allgather(struct rw_coll_comm *c, int rank, int p, size_t count, enum rw_dtype dt,
			 bool inplace, uint64_t seed);
int coll_check_broadcast(struct rw_coll_comm *c, int rank, size_t count, enum rw_dtype dt, int root,
			 bool inplace, uint64_t seed);

/** A coll_fn: every collective for counts 0, 1, < nranks, odd and
 *  *(size_t *)arg (large), for three dtype x op pairs. */
int coll_shapes(struct rw_comm *w, int rank, int p, void *arg);

/** A coll_fn: allreduces out of place at 3+ ranks put their partial sums
 *  in recvbuf (rw_coll_stats.recvbuf_partials), in place, at 2 ranks and
 *  in reduce-scatters they do not; results checked either way. */
int coll_partials(struct rw_comm *w, int rank, int p, void *arg);

/** The ring settings coll_partials runs under: 16 KiB chunks (many per
 *  segment), two channels. */
#define COLL_RING_PARTIALS                                                                         \
	"RINGWAY_ALGO", "ring", "RINGWAY_CHUNK_BYTES", "16K", "RINGWAY_NCHANNELS", "2"

#endif /* RW_RING_CHECKS_H */
