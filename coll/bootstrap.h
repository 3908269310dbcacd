/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TCP rendezvous behind rw_comm_init(): rank 0 listens on "host:port",
 * every other rank connects to it, and the star of connections carries the
 * little the ranks must agree on before the ring exists (each rank's rw_net
 * listen handle) and the barriers of init and destroy.  Control plane only:
 * no collective data goes through here.
 *
 * Every call blocks, bounded by the timeout given at create (a peer that
 * stays silent, dies or speaks garbage fails the call: -ETIMEDOUT,
 * -ECONNRESET or -EPROTO, logged once here with the peer's rank and
 * address).  The object is used by one thread at a time.
 */
#ifndef RW_BOOTSTRAP_H
#define RW_BOOTSTRAP_H

#include <stddef.h>

struct rw_bootstrap;

/**
 * Split "host:port" or "[v6addr]:port".
 * \param[out] host room for hostlen bytes.  \param[out] port 1..65535.
 * \return 0 or -EINVAL.
 */
int rw_bootstrap_parse(const char *hostport, char *host, size_t hostlen, int *port);

/**
 * Join the rendezvous.  Rank 0 binds the port of root on every address
 * (or uses listen_fd, an already listening socket it then owns, when
 * listen_fd >= 0: tests and --local pass one so no port is raced for) and
 * waits for nranks - 1 peers; the others connect to root, retrying while
 * rank 0 is not up yet.  All ranks must pass the same nranks.
 * \param[out] out set only on success.
 * \return 0, -EINVAL (bad arguments), -EADDRINUSE, -ETIMEDOUT, -EPROTO
 * (a peer with another nranks, a duplicate rank), or another -errno.
 * On failure listen_fd is closed.
 */
int rw_bootstrap_create(const char *root, int listen_fd, int nranks, int rank, int timeout_ms,
			struct rw_bootstrap **out);

/**
 * Every rank contributes len bytes (the same len everywhere) and receives
 * all nranks contributions, rank order, in all (nranks * len bytes).
 */
int rw_bootstrap_allgather(struct rw_bootstrap *b, const void *mine, void *all, size_t len);

/** Returns once every rank has entered it. */
int rw_bootstrap_barrier(struct rw_bootstrap *b);

/** Close every connection; NULL is ignored. */
void rw_bootstrap_destroy(struct rw_bootstrap *b);

#endif /* RW_BOOTSTRAP_H */
