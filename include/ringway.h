/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ringway public C API (libringway.so): collectives over a pipelined,
 * chunked, multi-channel ring (scatter-reduce, then allgather).
 *
 * Conventions.
 *  - Every function returns 0 or a negative errno; rw_strerror() says what
 *    it means.  A call that fails has no effect on the buffers it was given
 *    beyond what the collective had written when it failed.
 *  - Collectives block until this rank's part is done.  Every rank of the
 *    communicator must call the same collectives in the same order with the
 *    same count, dtype, op and root; a communicator is used by one thread at
 *    a time.
 *  - Buffers may be host memory or CUDA device memory (sendbuf and recvbuf
 *    both of one kind, and the same kind on every rank).  Device memory
 *    moves by CUDA IPC between ranks of one host, elsewhere through host
 *    staging unless the network reaches device memory itself, and is
 *    reduced by ringway's CUDA kernels on the calling thread's current
 *    device.
 *  - Out of place (sendbuf != recvbuf) and in place work for every
 *    collective; the in-place forms are given with each.
 *  - Peers that die or stall: a collective that cannot progress for
 *    RINGWAY_TIMEOUT_MS (default 600000 ms, PyTorch's 10 min watchdog),
 *    or whose peer's connection breaks, fails on every rank (-ETIMEDOUT,
 *    -ECONNRESET, -ECONNABORTED, ...) with a warning naming the failed
 *    rank; the communicator is then only good for rw_comm_destroy().
 *  - Tuning: RINGWAY_ALGO (default auto, by size), RINGWAY_NCHANNELS
 *    (default 4, used by size unless set), RINGWAY_CHUNK_BYTES (default 4M,
 *    at most, by size unless set), RINGWAY_TRANSPORT (default auto),
 *    read from the environment by rw_comm_init(), or given to
 *    rw_comm_init_config() in an rw_config_t (see the README for every
 *    variable).
 */
#ifndef RINGWAY_H
#define RINGWAY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RW_API __attribute__((visibility("default")))
#else
#define RW_API
#endif

/** The most ranks a communicator may have (rw_comm_init() refuses more at
 *  once with -EINVAL).  Rank 0 holds one rendezvous connection per rank:
 *  large jobs need `ulimit -n` above nranks there. */
#define RW_MAX_RANKS 65536

/** A communicator: nranks processes joined in rings. */
typedef struct rw_comm rw_comm_t;

/** Element types; the values are ncclDataType_t's. */
typedef enum {
	RW_INT8 = 0,
	RW_UINT8 = 1,
	RW_INT32 = 2,
	RW_UINT32 = 3,
	RW_INT64 = 4,
	RW_UINT64 = 5,
	RW_FLOAT16 = 6,
	RW_FLOAT32 = 7,
	RW_FLOAT64 = 8,
	RW_BFLOAT16 = 9,
	RW_FLOAT8E4M3 = 10,
	RW_FLOAT8E5M2 = 11,
} rw_dtype_t;

/**
 * Reductions; the values are ncclRedOp_t's.  Integers wrap in sum and
 * prod; RW_AVG sums, then divides once by nranks (integers truncate toward
 * zero); float16, bfloat16 and fp8 are computed in float32 and rounded once
 * per operation.
 */
typedef enum {
	RW_SUM = 0,
	RW_PROD = 1,
	RW_MAX = 2,
	RW_MIN = 3,
	RW_AVG = 4,
} rw_op_t;

/** "0.1.0": the library's version. */
RW_API const char *rw_version(void);

/** 1 when this libringway was built with CUDA (device buffers are reduced
 *  on the GPU; a program may pass them), else 0 (host memory only). */
RW_API int rw_cuda_support(void);

/** Text for a value returned by a ringway call (0 or -errno).  Static. */
RW_API const char *rw_strerror(int err);

/**
 * Join a communicator of nranks ranks as rank `rank`.  Collective: every
 * rank calls it, and it returns once all have joined and the rings are
 * connected (at most RINGWAY_TIMEOUT_MS per phase).  Its parameters come
 * from the RINGWAY_* environment variables; rw_comm_init_config() below
 * takes them from the program instead.
 *
 * \param[out] comm set only on success; free with rw_comm_destroy().
 * \param nranks 1 to RW_MAX_RANKS.
 * \param rendezvous rank 0's "host:port" ("[v6addr]:port" for IPv6),
 *   optionally followed by "#key", the job secret: rank 0 listens on that
 *   address, the others connect to it.  NULL reads RINGWAY_ROOT, then
 *   torchrun's MASTER_ADDR and MASTER_PORT, using port MASTER_PORT + 1
 *   (torchrun's own store holds MASTER_PORT).  Ignored when nranks is 1.
 *
 * Job secret: "#key", else RINGWAY_SECRET (the same on every rank; e.g.
 * `export RINGWAY_SECRET=$(openssl rand -hex 16)` in the job script, which
 * torchrun, srun and `mpirun -x RINGWAY_SECRET` pass to every rank).  With
 * one, a rank joins only by proving the secret (a keyed hash over fresh
 * nonces; the secret never crosses the wire) and rank 0 proves it back.
 * Without one, anyone who can reach the port can take a free rank.  Either
 * way a stranger cannot stall rank 0 or make the job fail: connections that
 * do not prove themselves within 5 s are dropped, and a hello with another
 * nranks, a taken rank or a wrong secret is refused on its own connection.
 * \return 0; -EINVAL (bad arguments, nranks above RW_MAX_RANKS, no
 *   rendezvous known, an empty "#key"); -ETIMEDOUT (a rank did not join in
 *   time); -EADDRINUSE (rank 0 cannot listen); -EPROTO (rank 0 refused this
 *   rank: another nranks, or its rank already joined; on rank 0: a rank that
 *   proved the secret has another nranks); -EACCES (the ranks' secrets
 *   differ, or only some have one); -ENODEV (no usable network interface);
 *   -ENOMEM.
 */
RW_API int rw_comm_init(rw_comm_t **comm, int nranks, int rank, const char *rendezvous);

/** "Not set: use the environment's value" for an integer of rw_config_t. */
#define RW_CONFIG_UNSET INT64_MIN

/** rw_config_t.magic: the struct was initialised with RW_CONFIG_INIT. */
#define RW_CONFIG_MAGIC 0x72776366u /* "rwcf" */

/**
 * A communicator's configuration, for rw_comm_init_config(): each field
 * stands for the RINGWAY_* variable of the same name and takes the same
 * values; a field left unset (NULL, RW_CONFIG_UNSET) takes the variable's
 * value, else its default.  Always start from RW_CONFIG_INIT:
 *
 *     rw_config_t cfg = RW_CONFIG_INIT;
 *     cfg.algo = "ps";
 *     cfg.chunk_bytes = 1 << 20;
 *     rc = rw_comm_init_config(&comm, nranks, rank, "node0:29500", &cfg);
 *
 * Versions: `size` is sizeof(rw_config_t) of the ringway.h the program was
 * built with.  Fields are only ever added at the end; a library reads the
 * fields that `size` covers and treats later ones as unset, and refuses a
 * size it does not know (a program built against a newer ringway.h).
 * The struct and its strings are the caller's and only read during the call.
 */
typedef struct rw_comm_config {
	size_t size;	    /**< sizeof(rw_config_t), set by RW_CONFIG_INIT */
	unsigned int magic; /**< RW_CONFIG_MAGIC, set by RW_CONFIG_INIT */
	/** RINGWAY_ALGO: "auto" (by size), "ring", "rd" (recursive doubling),
	 *  "direct" (all to all) or "ps" (every rank through rank 0) */
	const char *algo;
	/** RINGWAY_NCHANNELS: rings per communicator, 1 to 32 */
	int64_t nchannels;
	/** RINGWAY_CHUNK_BYTES: bytes per pipelined chunk, 4096 to 256 MiB
	 *  (the engine rounds it up to a multiple of 64) */
	int64_t chunk_bytes;
	/** RINGWAY_TRANSPORT: "auto", "shm", "socket" or "ib" */
	const char *transport;
	/** RINGWAY_TIMEOUT_MS: longest wait on a peer, 1 to 86 400 000 ms */
	int64_t timeout_ms;
	/** RINGWAY_SECRET: the job secret, the same on every rank; "" is none.
	 *  A "#key" in the rendezvous string wins.  Never logged. */
	const char *secret;
} rw_config_t;

/** Every field unset: rw_comm_init_config() then behaves as rw_comm_init(). */
#define RW_CONFIG_INIT                                                                             \
	{                                                                                          \
		sizeof(rw_config_t), RW_CONFIG_MAGIC, NULL, RW_CONFIG_UNSET, RW_CONFIG_UNSET,      \
			NULL, RW_CONFIG_UNSET, NULL                                                \
	}

/**
 * rw_comm_init() with a configuration: the fields config sets win over the
 * environment; NULL (or RW_CONFIG_INIT unchanged) is exactly rw_comm_init().
 * Collective and blocking as rw_comm_init(); config is only read, and may
 * be freed once the call returns.
 * \return as rw_comm_init(); -EINVAL, with one warning naming the field and
 *   its value (never the secret's), for a config that is not valid: a size
 *   or magic RW_CONFIG_INIT did not set, an unknown algo or transport, a
 *   number out of its bounds (chunk_bytes 0 or negative, ...), a secret of
 *   256 bytes or more.
 */
RW_API int rw_comm_init_config(rw_comm_t **comm, int nranks, int rank, const char *rendezvous,
			       const rw_config_t *config);

/**
 * What comm runs with: every field of *out that out->size covers is set
 * (algo and transport to static strings, chunk_bytes as the engine rounded
 * it); out->secret is always NULL.  Initialise out with RW_CONFIG_INIT.
 * Does not block.  \return 0, or -EINVAL (comm or out NULL, bad size or
 * magic).
 */
RW_API int rw_comm_get_config(const rw_comm_t *comm, rw_config_t *out);

/** Bytes of an rw_unique_id_t. */
#define RW_UNIQUE_ID_BYTES 128

/**
 * A rendezvous as opaque bytes (NCCL's ncclUniqueId): rank 0's address
 * and port and a fresh job secret.  Made by rw_get_unique_id() on rank 0,
 * passed to every other rank by any means (a c10d Store, MPI_Bcast, a
 * file), given to rw_comm_init_id() by all.  It holds the job secret:
 * share it only with the job's ranks.
 */
typedef struct rw_unique_id {
	char internal[RW_UNIQUE_ID_BYTES];
} rw_unique_id_t;

/**
 * Rank 0, before rw_comm_init_id(): open the rendezvous listener on an
 * ephemeral port of every address (no port to agree on in advance) and
 * describe it in *id with the address other ranks reach it at (the first
 * interface RINGWAY_SOCKET_IFNAME and RINGWAY_SOCKET_FAMILY choose, as
 * the socket transport does; loopback when there is no other) and a fresh
 * random job secret.  The listener belongs to the calling process until
 * its rw_comm_init_id() as rank 0 takes it; at most 16 ids are held at
 * once (the oldest unused one is closed for a 17th).  Does not block.
 * \return 0; -EINVAL (id NULL); -ENODEV (no interface with an address);
 *   or the -errno of listen.
 */
RW_API int rw_get_unique_id(rw_unique_id_t *id);

/**
 * rw_comm_init_config() at the rendezvous id describes: every rank passes
 * the same id; rank 0 must be the process whose rw_get_unique_id() made
 * it (it takes over that listener).  The id's job secret wins over
 * config->secret and RINGWAY_SECRET.  Each id serves one communicator.
 * \return as rw_comm_init_config(); -EINVAL also for an id that is not
 *   one (logged), or, on rank 0, one this process did not make or already
 *   used.
 */
RW_API int rw_comm_init_id(rw_comm_t **comm, int nranks, int rank, const rw_unique_id_t *id,
			   const rw_config_t *config);

/**
 * Why comm failed, for an exception's message: 0 while it has not failed,
 * else the failure's -errno (the one every later collective returns).
 * \param[out] failed_rank (may be NULL) the rank that died, stalled or
 *   called another collective; -1 while comm has not failed or nobody
 *   knows which.
 * \param[out] buf (may be NULL) len bytes, always terminated: one line
 *   such as "rank 2 (node1 pid 4242) failed: Connection reset by peer",
 *   "" while comm has not failed.
 * Does not block; call it from the thread that uses comm.
 */
RW_API int rw_comm_get_error(const rw_comm_t *comm, int *failed_rank, char *buf, size_t len);

/**
 * recvbuf[i] = op over all ranks of sendbuf[i], for i < count, on every rank.
 * In place: sendbuf == recvbuf.  Every collective accepts a count of 0 (and
 * counts smaller than nranks) and then returns at once.
 */
RW_API int rw_allreduce(rw_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
			rw_dtype_t dtype, rw_op_t op);

/**
 * sendbuf holds nranks * recvcount elements; rank r receives in recvbuf the
 * reduction over all ranks of elements [r * recvcount, (r + 1) * recvcount).
 * In place: recvbuf == sendbuf + rank * recvcount (in elements).
 */
RW_API int rw_reduce_scatter(rw_comm_t *comm, const void *sendbuf, void *recvbuf, size_t recvcount,
			     rw_dtype_t dtype, rw_op_t op);

/**
 * Every rank contributes sendcount elements; recvbuf (nranks * sendcount
 * elements) receives rank r's at [r * sendcount, (r + 1) * sendcount) on
 * every rank.  In place: sendbuf == recvbuf + rank * sendcount.
 */
RW_API int rw_allgather(rw_comm_t *comm, const void *sendbuf, void *recvbuf, size_t sendcount,
			rw_dtype_t dtype);

/**
 * Copy count elements of root's sendbuf into every rank's recvbuf.
 * sendbuf is read on the root only (others may pass NULL).  In place:
 * sendbuf == recvbuf on the root.
 */
RW_API int rw_broadcast(rw_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
			rw_dtype_t dtype, int root);

/**
 * Leave and free the communicator.  Waits (bounded) for the other ranks to
 * leave too, unless the communicator failed.  NULL is ignored.
 * \return 0, or the error of that last wait (everything is freed anyway).
 */
RW_API int rw_comm_destroy(rw_comm_t *comm);

#ifdef __cplusplus
}
#endif

#endif /* RINGWAY_H */
