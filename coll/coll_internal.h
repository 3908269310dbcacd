/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the engine's files share (coll/ only; the API is rw_coll.h):
 *   coll_conn.c   the links: connection setup over rw_net with a hello
 *   coll_comm.c   the comm: links, staging, registrations, the op queue
 *   coll_ctl.c    the control links: tokens, failure notices, the warning
 *   coll_start.c  starting a collective; the blocking wait
 *   ring_op.c     the ring collectives' per-channel state machine
 *   ps.c          RINGWAY_ALGO=ps: everything through rank 0
 *   coll_mem.c    where data lives (host or device) and how it moves
 */
#ifndef RW_COLL_INTERNAL_H
#define RW_COLL_INTERNAL_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coll/ring_plan.h"
#include "coll/rw_coll.h"

/* Pipeline depth per channel: staging slots (receives in flight that need
 * a buffer; at least 2 keep the round-major order deadlock-free), and
 * sends in flight.  Concurrency comes mostly from channels (measured on a
 * 2-core host: 4 slots x 4 channels beat 8 x 1 by 1.2-2x at 4 ranks). */
#define RW_COLL_NSLOTS	  4
#define RW_COLL_MAX_RECVS 4
#define RW_COLL_MAX_SENDS 4

#define RW_COLL_TAG	  0x7277 /* every data message */
#define RW_COLL_CTL_BYTES 352

/* Link ids carried by the hello: channels are 0..nchannels-1.  Failure
 * notices travel both ways round the ring, so there are two control links
 * per neighbour pair: CTRL_FWD (rank -> rank+1) and CTRL_BWD (rank -> rank-1). */
#define RW_LINK_CTRL_FWD 0x10000
#define RW_LINK_CTRL_BWD 0x10001
#define RW_LINK_PS	 0x10002

/** A registered little buffer for hellos, tokens and failure notices:
 *  received messages land at 0; a sender keeps a notice at 32, a mismatch
 *  notice at 96 and a token per send in flight from 160 (coll_ctl.c). */
struct rw_coll_ctl {
	uint8_t buf[RW_COLL_CTL_BYTES];
	struct rw_net_mr *mr;
};

#define RW_COLL_CTL_SENDS 8 /* control messages in flight per link */

/** One direction of one connection. */
struct rw_coll_link {
	struct rw_net_comm *comm;
	int peer;
	bool is_send;
	int id; /**< channel, RW_LINK_CTRL_* or RW_LINK_PS */
	struct rw_coll_ctl *ctl;
	struct rw_net_req *ctl_req; /**< the hello, or an incoming control message */
	/* outgoing control links: tokens and the notice in flight */
	struct rw_net_req *sq[RW_COLL_CTL_SENDS];
	unsigned sq_head, sq_n;
	uint8_t notice_sent; /**< bit 0: a notice, bit 1: a mismatch notice */
	/* incoming control links: tokens received so far */
	uint64_t tokens;
};

/** Host staging of one channel, registered once on its two links. */
struct rw_coll_stage {
	char *buf;		   /**< NSLOTS * stride bytes */
	struct rw_net_mr *mr_send; /**< buf on the send link */
	struct rw_net_mr *mr_recv; /**< buf on the recv link */
	/* device collectives only, allocated at the first one */
	char *dev;		  /**< NSLOTS * stride bytes of device memory */
	char *out;		  /**< NSLOTS * stride pinned host, sends */
	struct rw_net_mr *out_mr; /**< out on the send link */
	void *stream;
};

struct rw_coll_mr {
	void *data;
	size_t size;
	int type;
	int nlinks;
	struct rw_net_mr *mrs[]; /**< per link (NULL on ctrl links) */
};

enum rw_coll_state {
	RW_COLL_QUEUED,
	RW_COLL_RUNNING,
	RW_COLL_DONE,
	RW_COLL_FAILED,
};

/** Where the buffers of a collective live. */
enum rw_coll_mem {
	RW_COLL_MEM_HOST,
	RW_COLL_MEM_DEVICE,
};

/**
 * What every rank must agree on for one collective: 16 bytes, carried by
 * the token each rank sends its neighbours at the end of the collective
 * (no extra message) and by failure notices.  Fields a kind ignores are
 * normalised (op of allgather/broadcast, root of all but broadcast).
 */
struct rw_coll_sig {
	uint8_t kind, dtype, op, valid;
	int32_t root;
	uint64_t count;
};
static_assert(sizeof(struct rw_coll_sig) == 16, "compact signature");

#define RW_COLL_SIG_STR 96 /* "allreduce(count=..., float16, sum)" */

/** Signature of args a (checked by rw_coll_start). */
struct rw_coll_sig rw_coll_sig_of(const struct rw_coll_args *a);
bool rw_coll_sig_same(const struct rw_coll_sig *a, const struct rw_coll_sig *b);
/** "allreduce(count=1000, float32, sum)"; buf of RW_COLL_SIG_STR. */
const char *rw_coll_sig_str(const struct rw_coll_sig *s, char *buf, size_t len);

struct rw_coll_req;

/** One algorithm: start its state, advance it, free it. */
struct rw_coll_algo_ops {
	const char *name;
	int (*init)(struct rw_coll_req *r);
	/** *progressed set when anything moved; 1 when finished. */
	int (*progress)(struct rw_coll_req *r, bool *progressed);
	/** Fill where/step/chunk of what r waits for, for the timeout warning. */
	void (*waiting)(const struct rw_coll_req *r, int *peer, int *step, size_t *chunk,
			const char **what);
	void (*fini)(struct rw_coll_req *r);
};

extern const struct rw_coll_algo_ops rw_coll_ring_ops;
extern const struct rw_coll_algo_ops rw_coll_ps_ops;

struct rw_coll_req {
	struct rw_coll_comm *comm;
	struct rw_coll_req *next; /**< the comm's queue */
	const struct rw_coll_algo_ops *ops;
	enum rw_coll_state state;
	int rc;
	struct rw_coll_args a; /**< seg arrays point into seg below */
	struct rw_coll_sig sig;
	size_t *seg; /**< 2 * nranks: offsets, counts */
	enum rw_coll_mem mem;
	size_t esize;
	enum rw_op redop;	   /**< op used for reductions (avg -> sum) */
	size_t space;		   /**< elements of the element space */
	size_t src_base, dst_base; /**< element offset of sendbuf / recvbuf */
	size_t bytes;		   /**< received into recvbuf */
	bool own_send_mr, own_recv_mr;
	unsigned tokens_sent; /**< bit per outgoing control link */
	uint64_t token_no;    /**< tokens_due once it started */
	uint64_t last_progress_ms;
	int nvtx_depth;
	void *algo; /**< the algorithm's state */
};

struct rw_coll_comm {
	struct rw_net *net;
	int dev;
	int nranks, rank;
	int nchannels;
	enum rw_coll_algo algo;
	size_t chunk_bytes; /**< stride of a staging slot */
	int timeout_ms;
	char (*names)[64]; /**< per rank, for messages */
	struct rw_coll_link *links;
	int nlinks;
	int ps_first;			/**< index of the first ps link, or -1 */
	struct rw_coll_stage *stage;	/**< per channel */
	struct rw_coll_stage *ps_stage; /**< per ps recv link, or NULL */
	int nps;			/**< ps link pairs */
	int ndev_ops;			/**< device collectives ever run */
	struct rw_coll_req *head, *tail;
	uint64_t moves;	     /**< times anything moved (waiters back off) */
	uint64_t tokens_due; /**< collectives started: tokens expected per link */
	int error;	     /**< sticky */
	int failed_rank;     /**< who failed, -1 if unknown */
};

/* Link indices: channel links first, then the four control links
 * (send next, recv prev, send prev, recv next), then the ps star. */
static inline int rw_link_send(int ch)
{
	return 2 * ch;
}

static inline int rw_link_recv(int ch)
{
	return 2 * ch + 1;
}

static inline int rw_link_ctrl(const struct rw_coll_comm *c, int i)
{
	return 2 * c->nchannels + i;
}

static inline bool rw_link_is_ctrl(const struct rw_coll_link *l)
{
	return l->id == RW_LINK_CTRL_FWD || l->id == RW_LINK_CTRL_BWD;
}

/* --- coll_conn.c ------------------------------------------------------------ */

/**
 * Connect every link of c (peer, is_send and id filled in): sends connect
 * to handles[peer] and say hello, receives are accepted on listen and
 * matched by their hello.  Blocks up to c->timeout_ms.
 */
int rw_coll_links_connect(struct rw_coll_comm *c, const void *const *handles,
			  struct rw_net_listen *listen);

/** Close every link that is open. */
void rw_coll_links_close(struct rw_coll_comm *c);

/* --- coll_ctl.c ------------------------------------------------------------- */

/**
 * Take what arrived on the control links for r: tokens, or a notice (the
 * comm fails) or a lost link (a failure).  \return the comm's error.
 */
int rw_coll_ctl_progress(struct rw_coll_req *r);

/** r finished here: one token to each neighbour.  -EAGAIN: try again. */
int rw_coll_tokens_send(struct rw_coll_req *r);
/** Have both neighbours' tokens for r arrived? */
bool rw_coll_tokens_in(const struct rw_coll_req *r);

/** Before closing: take the tokens owed and let ours leave (bounded). */
void rw_coll_quiesce(struct rw_coll_comm *c);

/**
 * Record a failure detected by this rank while running r: sets the comm's
 * sticky error, logs the one warning (peer rank and name, what, step,
 * chunk) and tells the rest of the ring.  A connection error first gives a
 * failure notice from the neighbours a moment to arrive, so that a rank
 * which closed its links because a third rank died is not blamed.
 * \return the comm's error, for "return rw_coll_fail(...)".
 */
int rw_coll_fail(struct rw_coll_req *r, int err, int peer, const char *what, int step,
		 size_t chunk);

/** peer ran the collective theirs, not r's: fail every rank, saying both. */
int rw_coll_fail_mismatch(struct rw_coll_req *r, int peer, const struct rw_coll_sig *theirs);

/* --- coll_comm.c ------------------------------------------------------------ */

/** Stage of the ps links (rank 0: one per peer), allocated at first use. */
int rw_coll_stage_ps(struct rw_coll_comm *c);

/** Append a started collective to the comm's queue. */
int rw_coll_enqueue(struct rw_coll_req *r);
void rw_coll_req_free(struct rw_coll_req *r);

/* --- coll_start.c ------------------------------------------------------------ */

/**
 * The collective reaches the head of the queue: the local copies that come
 * before any message (allgather's own block, the broadcast root's buffer,
 * one rank's whole buffer) and the NVTX range.
 */
int rw_coll_activate(struct rw_coll_req *r);

/** The registration of mr on link l (NULL when mr is NULL). */
static inline struct rw_net_mr *rw_coll_mr_on(const struct rw_coll_mr *mr, int l)
{
	return mr ? mr->mrs[l] : NULL;
}

/* --- coll_mem.c --------------------------------------------------------------- */

/** Host or device, for a pair of user buffers; -EINVAL when mixed. */
int rw_coll_mem_classify(const void *a, const void *b, enum rw_coll_mem *out);

/** Make sure channel staging for device collectives exists. */
int rw_coll_stage_device(struct rw_coll_comm *c);
/** Free a stage's device part (its out_mr is already deregistered). */
void rw_coll_stage_device_free(struct rw_coll_stage *s);

/** Copy bytes between user buffers of the collective's memory. */
int rw_coll_copy(const struct rw_coll_req *r, void *dst, const void *src, size_t bytes);

/**
 * dst = local op slot (count elements), in the collective's memory: on
 * the host directly; on a device through the channel's device scratch.
 * final: the last step of the reduction (avg divides here).
 * fwd_host (device only, may be NULL): also bring the result back there.
 */
int rw_coll_fold(const struct rw_coll_req *r, int ch, void *dst, const void *local, void *slot,
		 int slot_idx, size_t count, bool final, void *fwd_host);

/** Device only: slot (host) -> dst (device); and dev src -> host out. */
int rw_coll_h2d(const struct rw_coll_req *r, int ch, void *dst, const void *slot, size_t bytes);
int rw_coll_d2h(const struct rw_coll_req *r, int ch, void *dst, const void *src, size_t bytes);

#endif /* RW_COLL_INTERNAL_H */
