/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the engine's multi-process tests.
 *
 * coll_fork() runs fn in nranks forked processes that have joined one
 * communicator over the socket transport on loopback (a rendezvous socket
 * bound by the parent, so parallel tests never race for a port).  Each
 * child _exits with 0 when fn returned 0 and no unexpected warning was
 * logged; the parent waits, bounded, and kills what is left.
 *
 * Data: coll_fill() writes small integers chosen so that every reduction
 * order gives the same bits (sums stay within +-8, products are +-powers
 * of two), so a reference reduced in rank order with the host kernels must
 * equal the ring's result exactly.
 */
#ifndef RW_COLL_TEST_H
#define RW_COLL_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coll/rw_coll.h"

struct rw_comm;

/** What a child runs; return 0 on success. */
typedef int (*coll_fn)(struct rw_comm *w, int rank, int nranks, void *arg);

/**
 * Run fn on nranks ranks.  env: {"RINGWAY_X", "v", ..., NULL} on top of
 * the tests' defaults (socket transport on lo, 10 s timeout), or NULL.
 * \return number of ranks that failed (0 = all passed).
 */
int coll_fork(int nranks, const char *const *env, coll_fn fn, void *arg, int timeout_s);

/** As coll_fork(), reporting each rank's end in codes[]: its exit code, or
 *  128 + the signal that killed it. */
int coll_fork_codes(int nranks, const char *const *env, coll_fn fn, void *arg, int timeout_s,
		    int *codes);

/** As coll_fork(), with fn called without a communicator (it makes its own):
 *  the rendezvous is "127.0.0.1:<port>" in *root. */
typedef int (*coll_raw_fn)(const char *root, int rank, int nranks, void *arg);
int coll_fork_raw(int nranks, coll_raw_fn fn, void *arg, int timeout_s);

/** Fill count elements for rank with values suited to op (see above). */
void coll_fill(void *buf, size_t count, enum rw_dtype dt, enum rw_op op, int rank, uint64_t seed);

/** ref = op over nranks of coll_fill(rank) (avg: sum, then divided). */
void coll_reference(void *ref, size_t count, enum rw_dtype dt, enum rw_op op, int nranks,
		    uint64_t seed);

/** Compare; on a mismatch print the first bad element to stderr. */
bool coll_same(const char *what, const void *got, const void *want, size_t count, enum rw_dtype dt);

/** malloc that aborts on failure and fills with garbage (0xa5), so that
 *  results must land where they are checked; 0 bytes gives 1. */
void *coll_xmalloc(size_t n);

/** The communicator's engine comm. */
struct rw_coll_comm *coll_of(struct rw_comm *w);

#endif /* RW_COLL_TEST_H */
