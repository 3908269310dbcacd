/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring engine's internal API: used by the public C API
 * (coll/rw_api_coll.c), the tools and the plugin's CollNet adapters.
 *
 * Objects.
 *   struct rw_coll_comm  nranks ranks joined in rings over rw_net: per
 *                        channel a send comm to rank+1 and a recv comm from
 *                        rank-1 (plus a control link for failure notices,
 *                        and the star around rank 0 for RINGWAY_ALGO=ps),
 *                        registered staging buffers reused by every call.
 *   struct rw_coll_mr    a user buffer registered on every connection.
 *   struct rw_coll_req   one collective in flight.
 *
 * Progress.  rw_coll_start() posts nothing that can block and returns; the
 * collective moves only inside rw_coll_test() (any request of the comm
 * advances all of them), so NCCL's proxy thread is never blocked on a peer.
 * Collectives of one comm run in the order they were started, the same
 * order on every rank.  A comm is used by one thread at a time.
 *
 * Failures.  A transport error, a failure notice from another rank, or no
 * progress for RINGWAY_TIMEOUT_MS fails the collective in flight and every
 * later one of that comm with the same -errno (the comm is then only good
 * for destroy).  The rank that detects it logs one warning naming the peer
 * (rank and address), the step and the chunk, and tells the other ranks
 * around the ring, which each log which rank failed.
 */
#ifndef RW_COLL_H
#define RW_COLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rw_params.h"
#include "kernels/rw_reduce.h"
#include "transport/rw_net.h"

struct rw_coll_comm;
struct rw_coll_mr;
struct rw_coll_req;

/** RINGWAY_ALGO values (the order of its "ring|ps|auto|rd|direct" choices). */
enum rw_coll_algo {
	RW_COLL_ALGO_RING,
	RW_COLL_ALGO_PS,
	RW_COLL_ALGO_AUTO, /**< by size and rank count (coll/tune.c) */
	RW_COLL_ALGO_RD,   /**< recursive doubling (coll/small_op.c) */
	RW_COLL_ALGO_DIRECT,
	RW_COLL_ALGO_COUNT
};

/** "ring", "ps", "auto", "rd", "direct"; "?" out of range. */
const char *rw_coll_algo_name(enum rw_coll_algo algo);

/** Collectives; same values as enum rw_ring_kind. */
enum rw_coll_kind {
	RW_COLL_ALLREDUCE,
	RW_COLL_REDUCE_SCATTER,
	RW_COLL_ALLGATHER,
	RW_COLL_BROADCAST,
	RW_COLL_KIND_COUNT
};

/** Arguments of rw_coll_comm_create(); everything is copied or borrowed. */
struct rw_coll_comm_args {
	struct rw_net *net; /**< borrowed: outlives the comm */
	int dev;	    /**< net device of every connection */
	int nranks, rank;
	/** nranks listen handles of RW_NET_HANDLE_MAXSIZE bytes, rank order */
	const void *const *handles;
	/** this rank's listener (handles[rank]); borrowed, still open after */
	struct rw_net_listen *listen;
	/** optional "host pid 123" per rank for messages; copied */
	const char *const *peer_names;
	const struct rw_config *cfg; /**< chunk size, channels, algo, timeout */
	/* Placement (coll/place.h), each optional: NULL keeps rank order and
	 * makes every link on `dev` through `handles` and `listen`. */
	/** nranks: the rank at each ring position (a permutation) */
	const int *order;
	/** cfg->nchannels: this rank's net device of channel c (its send link
	 *  connects from it; its receive link is accepted on chan_listen[c]) */
	const int *chan_dev;
	/** nranks * cfg->nchannels: rank r's listen handle for channel c at
	 *  [r * nchannels + c] (needs chan_listen) */
	const void *const *chan_handles;
	/** cfg->nchannels: this rank's listener of channel c (may repeat, may
	 *  be `listen`); borrowed, still open after */
	struct rw_net_listen *const *chan_listen;
};

/**
 * Connect the rings: every rank calls this with the same handles.  Blocks
 * until every connection is up, at most cfg->timeout_ms (then -ETIMEDOUT,
 * naming the missing peers).  \param[out] out set only on success.
 */
int rw_coll_comm_create(const struct rw_coll_comm_args *a, struct rw_coll_comm **out);

/**
 * Close every connection and free the comm, cancelling collectives still in
 * flight (their requests become invalid).  A failure notice this rank still
 * owes its neighbour is given up to a second to leave first.  NULL is
 * ignored.
 */
void rw_coll_comm_destroy(struct rw_coll_comm *c);

int rw_coll_comm_nranks(const struct rw_coll_comm *c);
int rw_coll_comm_rank(const struct rw_coll_comm *c);
/** The sticky error of a failed comm, else 0. */
int rw_coll_comm_error(const struct rw_coll_comm *c);

/** What a comm runs with, as it took it from rw_config (chunk rounded up). */
struct rw_coll_settings {
	enum rw_coll_algo algo;
	int nchannels;
	size_t chunk_bytes;
	size_t dev_chunk_bytes; /**< device collectives' largest chunk */
	int timeout_ms;
};
void rw_coll_comm_settings(const struct rw_coll_comm *c, struct rw_coll_settings *out);

/** What the engine's data path did since the comm was made (every
 *  collective; tests read it through rw_coll_comm_stats()). */
struct rw_coll_stats {
	uint64_t host_copies;	     /**< chunks copied between device and host memory */
	uint64_t dev_copies;	     /**< chunks copied device to device */
	uint64_t kernels;	     /**< reductions enqueued on a device */
	uint64_t chunks_sent;	     /**< data messages posted */
	uint64_t chunks_recv;	     /**< data messages received */
	uint64_t dev_collectives;    /**< collectives on device buffers */
	uint64_t dev_channels;	     /**< channels whose links both move device memory */
	uint64_t dev_waits;	     /**< polls that found device work still running */
	uint64_t dev_inflight_max;   /**< most chunks of one channel in device work at once */
	uint64_t arrival_folds;	     /**< chunks reduced by the link's sink as they arrived
					  (rw_net_irecv_sink): straight from the transport's
					  memory, or from where a large one landed */
	uint64_t nontemporal_copied; /**< bytes the ring copied into recvbuf with
					non-temporal stores (RINGWAY_NONTEMPORAL_BYTES) */
	uint64_t recvbuf_partials;   /**< partial sums (allreduce, 3+ ranks, out of
					place) received into recvbuf, folded and
					forwarded from there */
};

void rw_coll_comm_stats(const struct rw_coll_comm *c, struct rw_coll_stats *out);

/**
 * Register [data, data + size) of memory type (RW_PTR_HOST/CUDA) on every
 * connection, for collectives that pass it in rw_coll_args.  Optional: a
 * collective given no registration registers its buffers for its duration.
 * \param[out] mr set only on success.  \return 0, -EINVAL, -ENOTSUP, -ENOMEM.
 */
int rw_coll_reg_mr(struct rw_coll_comm *c, void *data, size_t size, int type,
		   struct rw_coll_mr **mr);
int rw_coll_reg_mr_dmabuf(struct rw_coll_comm *c, void *data, size_t size, int type,
			  uint64_t offset, int fd, struct rw_coll_mr **mr);
/** Undo a registration no collective in flight uses.  NULL is ignored. */
int rw_coll_dereg_mr(struct rw_coll_comm *c, struct rw_coll_mr *mr);

/**
 * One collective.  Counts are elements of dtype:
 *   allreduce       count elements in sendbuf and recvbuf;
 *   reduce-scatter  count = recvcount; sendbuf holds nranks * count;
 *   allgather       count = sendcount; recvbuf holds nranks * count;
 *   broadcast       count elements; sendbuf is read on the root only.
 * In place: sendbuf == recvbuf (allreduce, broadcast), sendbuf ==
 * recvbuf + rank * count (reduce-scatter's recvbuf inside sendbuf: recvbuf
 * == sendbuf + rank * count; allgather: sendbuf == recvbuf + rank * count).
 *
 * seg_off/seg_count (nranks entries, or NULL) replace the packed layout of
 * reduce-scatter and allgather: segment r is [seg_off[r], + seg_count[r])
 * of the reduce-scatter input / allgather output, and sendbuf (allgather)
 * or recvbuf (reduce-scatter) holds this rank's segment only.  CollNet's
 * windows are such layouts.
 */
struct rw_coll_args {
	enum rw_coll_kind kind;
	const void *sendbuf;
	void *recvbuf;
	size_t count;
	enum rw_dtype dtype;
	enum rw_op op;		    /**< ignored by allgather and broadcast */
	int root;		    /**< broadcast only */
	struct rw_coll_mr *send_mr; /**< optional, covers sendbuf */
	struct rw_coll_mr *recv_mr; /**< optional, covers recvbuf */
	const size_t *seg_off;
	const size_t *seg_count;
};

/**
 * Start a collective.  Never blocks on a peer.  Device buffers (both
 * sendbuf and recvbuf in device memory) are staged through host memory and
 * reduced by the CUDA kernels on the calling thread's device.
 * \param[out] req set only on success; rw_coll_test() frees it.
 * \return 0, -EINVAL (bad arguments, logged), -ENOMEM, or the comm's
 * sticky error.
 */
int rw_coll_start(struct rw_coll_comm *c, const struct rw_coll_args *a, struct rw_coll_req **req);

/**
 * Advance the comm's collectives and report on req.  When *done is set, or
 * on an error, req has been freed.  \param[out] bytes (may be NULL) the
 * bytes this rank received into recvbuf, once done.
 */
int rw_coll_test(struct rw_coll_req *req, int *done, size_t *bytes);

/**
 * Start and wait: calls rw_coll_test() until done, yielding the CPU when
 * nothing moved.  Bounded by the collective's own timeout.
 */
int rw_coll_run(struct rw_coll_comm *c, const struct rw_coll_args *a);

/** How one collective runs: the algorithm, and for the ring its channels
 *  and chunk (the latency algorithms use one message per peer). */
struct rw_coll_choice {
	enum rw_coll_algo algo; /**< never AUTO */
	int nchannels;
	size_t chunk_bytes;
};

/**
 * What rw_coll_start() would run for this collective of count elements of
 * dtype (device: buffers in device memory): RINGWAY_ALGO, else the table
 * of coll/tune.c by size and rank count; RINGWAY_NCHANNELS and
 * RINGWAY_CHUNK_BYTES when set, else by size.  Every rank computes the same.
 */
void rw_coll_choose(const struct rw_coll_comm *c, enum rw_coll_kind kind, size_t count,
		    enum rw_dtype dtype, bool device, struct rw_coll_choice *out);

/** "allreduce", ... */
const char *rw_coll_kind_name(enum rw_coll_kind kind);

/** Whether the kernels reduce dtype with op (CollNet's reduceSupport). */
bool rw_coll_reduce_supported(int dtype, int op);

#endif /* RW_COLL_H */
