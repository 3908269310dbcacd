/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the engine's files share (coll/ only; the API is rw_coll.h):
 *   coll_conn.c   the links: connection setup over rw_net with a hello
 *   coll_comm.c   the comm: links, staging, registrations, the op queue
 *   coll_ctl.c    the control links: tokens, failure notices, the warning
 *   coll_start.c  starting a collective; the blocking wait
 *   ring_op.c     the ring collectives' per-channel state machine
 *   ring_recv.c,  its receives and sends (ring_chan.h: the state they
 *   ring_send.c   share with ring_op.c)
 *   ps.c          RINGWAY_ALGO=ps: everything through rank 0
 *   small_op.c    the latency algorithms: recursive doubling, direct exchange
 *   small_win.c   direct exchange through the shm links' windows
 *   tune.c        which algorithm, channels and chunk for a collective
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
#define RW_COLL_CTL_BYTES 416

/* Link ids carried by the hello: channels are 0..nchannels-1.  Failure
 * notices travel both ways round the ring, so there are two control links
 * per neighbour pair: CTRL_FWD (rank -> rank+1) and CTRL_BWD (rank -> rank-1). */
#define RW_LINK_CTRL_FWD 0x10000
#define RW_LINK_CTRL_BWD 0x10001
#define RW_LINK_PS	 0x10002
#define RW_LINK_P2P	 0x10003 /* the latency algorithms' links (3+ ranks) */

/* Up to this many ranks the latency algorithms' links reach every peer and
 * direct exchange runs; above, only recursive doubling's partners are
 * linked (log2(P), plus the fold partner): auto picks rd or the ring and a
 * forced direct runs as rd. */
#define RW_COLL_DIRECT_MAX 8

/* What ops->waiting says of a send the peer has not taken (compared by
 * rw_coll_win_stray()). */
#define RW_COLL_WAIT_SEND "waiting for a send to be taken by"

/* The clock (clock_gettime, ~25 ns) costs more than a poll that finds
 * nothing: the idle checks read it once every this many idle polls. */
#define RW_COLL_CLOCK_POLLS 16u

/** A registered little buffer for hellos, tokens and failure notices:
 *  a hello lands at 0, an incoming link's k-th posted receive at k *
 *  RW_COLL_CTL_MSG; a sender keeps a notice at 32, a mismatch
 *  notice at 96 and a token per send in flight from 160 (coll_ctl.c). */
struct rw_coll_ctl {
	uint8_t buf[RW_COLL_CTL_BYTES];
	struct rw_net_mr *mr;
};

#define RW_COLL_CTL_SENDS 8 /* control messages in flight per link */
/* Receives kept posted per incoming control link, each with RW_COLL_CTL_MSG
 * bytes of the ctl buffer: room for a token, a notice and a mismatch notice
 * while the rank is idle (a neighbour that fails must find one posted). */
#define RW_COLL_CTL_RECVS 4
#define RW_COLL_CTL_MSG	  64
static_assert(RW_COLL_CTL_RECVS * RW_COLL_CTL_MSG <= RW_COLL_CTL_BYTES,
	      "the posted control receives fit the ctl buffer");

/**
 * What every rank must agree on for one collective: 16 bytes, carried by
 * the token each rank sends its neighbours at the end of the collective
 * (no extra message) and by failure notices.  Fields a kind ignores are
 * normalised (op of allgather/broadcast, root of all but broadcast).
 */
/** rw_coll_sig's flags */
enum {
	RW_COLL_SIG_VALID = 1u << 0,  /**< a collective (0: nothing) */
	RW_COLL_SIG_DEVICE = 1u << 1, /**< device buffers where that changes the
				       *  ring's plan (one host: tune.c) */
};

struct rw_coll_sig {
	uint8_t kind, dtype, op, flags;
	int32_t root;
	uint64_t count;
};
static_assert(sizeof(struct rw_coll_sig) == 16, "compact signature");

/** A control link that failed: the neighbour left or failed; a failure of
 *  the next collective (coll_ctl.c). */
struct rw_coll_lost {
	int peer; /**< -1: none */
	int err;
	uint64_t coll; /**< the collective that saw it */
};

/** One direction of one connection. */
struct rw_coll_link {
	struct rw_net_comm *comm;
	int peer;
	bool is_send;
	int id;	 /**< channel, RW_LINK_CTRL_* or RW_LINK_PS */
	int dev; /**< the net device it was made on (coll_conn.c) */
	struct rw_coll_ctl *ctl;
	struct rw_net_req *ctl_req; /**< the hello, or an incoming control message */
	/* outgoing control links: tokens and the notice in flight */
	struct rw_net_req *sq[RW_COLL_CTL_SENDS];
	unsigned sq_head, sq_n;
	uint8_t notice_sent; /**< bit 0: a notice, bit 1: a mismatch notice */
	/* incoming control links (patient: RW_COLL_CTL_RECVS receives posted) */
	struct rw_net_req *rq[RW_COLL_CTL_RECVS]; /**< message k lands at k * CTL_MSG */
	unsigned rq_head, rq_n;
	uint64_t tokens;	      /**< tokens received so far */
	bool early;		      /**< a token for a collective not yet started here */
	uint64_t early_coll;	      /**< its collective's number (rw_coll_req.coll_no) */
	struct rw_coll_sig early_sig; /**< checked when that collective starts */
};

/* Events of a channel's device work: one per receive in flight (by its
 * place in the receive ring), one per out slot (a local chunk staged for
 * sending). */
#define RW_COLL_EV_OUT RW_COLL_MAX_RECVS
#define RW_COLL_NEV    (RW_COLL_MAX_RECVS + RW_COLL_NSLOTS)

/** Staging of one channel, registered once on its two links.  Host slots
 *  always (coll_comm.c); the device part at the first device collective
 *  (coll_mem.c). */
struct rw_coll_stage {
	char *buf;		   /**< NSLOTS slots of chunk_bytes */
	size_t buf_bytes;	   /**< bytes of buf */
	struct rw_net_mr *mr_send; /**< buf on the send link */
	struct rw_net_mr *mr_recv; /**< buf on the recv link */
	/* device collectives only, allocated at the first one */
	char *dev; /**< 2 * NSLOTS * stride bytes of device memory: slots, out slots */
	char *out; /**< NSLOTS * stride pinned host, sends (host-only send link) */
	struct rw_net_mr *out_mr; /**< out on the send link */
	void *stream;		  /**< the channel's device work, in order */
	void *ev[RW_COLL_NEV];
	bool recv_dev, send_dev;    /**< the link moves device memory: dev is registered on it */
	struct rw_net_mr *dmr_send; /**< dev (slots and out slots) on the send link */
	struct rw_net_mr *dmr_recv; /**< dev's slots on the recv link */
	struct rw_coll_comm *comm;  /**< to find the links when freeing */
	int ch;
	/** host slots of device collectives when a side stages through host
	 *  memory and dev_chunk_bytes slots do not fit buf (its buf, mr_send,
	 *  mr_recv; rw_coll_stage_wide), else NULL: buf serves */
	struct rw_coll_stage *wide;
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
extern const struct rw_coll_algo_ops rw_coll_rd_ops;
extern const struct rw_coll_algo_ops rw_coll_direct_ops;

struct rw_coll_req {
	struct rw_coll_comm *comm;
	struct rw_coll_req *next; /**< the comm's queue */
	const struct rw_coll_algo_ops *ops;
	enum rw_coll_state state;
	int rc;
	struct rw_coll_args a; /**< seg arrays point into seg below */
	struct rw_coll_sig sig;
	size_t *seg; /**< 2 * nranks: offsets, counts (after the request, one allocation) */
	enum rw_coll_mem mem;
	size_t esize;
	enum rw_op redop;	   /**< op used for reductions (avg -> sum) */
	size_t space;		   /**< elements of the element space */
	size_t src_base, dst_base; /**< element offset of sendbuf / recvbuf */
	size_t bytes;		   /**< received into recvbuf */
	bool own_send_mr, own_recv_mr;
	unsigned tokens_sent; /**< bit per outgoing control link */
	/** the data path proves every rank ran this collective (the algorithm
	 *  sets it at init): done without waiting for the neighbours' tokens
	 *  for it, only for those of the collective with tokens before (coll_ctl.c) */
	bool proven;
	/** proven on every rank alike (the latency algorithms, small_op.c):
	 *  no token at all, sent or waited for (coll_comm.c); the control
	 *  links' receives stay posted for the notices (coll_ctl.c) */
	bool no_tokens;
	uint64_t token_no;	   /**< tokens_due once it started */
	uint64_t coll_no;	   /**< colls once it started: its number on the comm */
	uint64_t last_progress_ms; /**< start of the idle spell, 0: not read yet */
	unsigned idle_polls;	   /**< polls without progress since it moved */
	bool win_suspect;	   /**< the peer's next window collective seen (small_win.c) */
	int nvtx_depth;
	void *act_event;    /**< device: the activation's copy, NULL when none is pending */
	void *act_stream;   /**< device, one rank: the stream it runs on (owned) */
	void *algo;	    /**< the algorithm's state */
	int nch;	    /**< ring: channels this collective uses (tune.c) */
	size_t chunk_bytes; /**< ring: its chunk, at most the comm's slot stride */
	bool nontemporal;   /**< the chunks it keeps bypass the cache (tune.c) */
	bool disjoint;	    /**< host buffers that do not overlap (out of place) */
};

/** The latency algorithms' staging (small_op.c), grown to the largest
 *  message at the start of a collective that needs more; registered on
 *  every link it sends from (out) or receives into (in). */
struct rw_coll_small {
	char *buf;	       /**< nslots * stride bytes out, then nslots * stride in */
	size_t stride;	       /**< a slot: the 16-byte signature, then the data */
	int nslots;	       /**< per direction */
	int nlinks;	       /**< entries of mr */
	struct rw_net_mr **mr; /**< per link of the comm (NULL: not registered) */
	void *state;	       /**< the running collective's schedule, reused */
};

struct rw_coll_comm {
	struct rw_net *net;
	int dev;
	int nranks, rank;
	int pos;    /**< this rank's position round the ring (placement) */
	int *order; /**< nranks: the user rank at each ring position */
	int nchannels;
	enum rw_coll_algo algo;
	size_t chunk_bytes; /**< stride of a host staging slot */
	/** stride of a device staging slot, and the largest chunk of a device
	 *  collective: RINGWAY_DEV_CHUNK_BYTES where links_shm (CUDA IPC),
	 *  else chunk_bytes (coll_comm.c) */
	size_t dev_chunk_bytes;
	int timeout_ms;
	char (*names)[64]; /**< per rank, for messages */
	struct rw_coll_link *links;
	int nlinks;
	int ps_first;			/**< index of the first ps link, or -1 */
	struct rw_coll_stage *stage;	/**< per channel */
	struct rw_coll_stage *ps_stage; /**< per ps recv link, or NULL */
	int nps;			/**< ps link pairs */
	int p2p_first;			/**< index of the first p2p link, or -1 */
	int np2p;			/**< p2p link pairs (peers) */
	struct rw_coll_small *small;	/**< small_op.c's staging, or NULL */
	char **win;			/**< per link: its window, or NULL (small_win.c) */
	size_t win_half;		/**< bytes of a window's half; 0: no windows */
	uint64_t win_seq;		/**< collectives moved through the windows */
	bool nch_set, chunk_set;	/**< RINGWAY_NCHANNELS / _CHUNK_BYTES given */
	bool dev_chunk_set;		/**< a device chunk was given: RINGWAY_DEV_CHUNK_BYTES,
					 *  or RINGWAY_CHUNK_BYTES where links_shm */
	bool links_shm;			/**< all ranks reach each other through shm,
					 *  alike on every rank (coll_comm.c; tune.c) */
	bool spin;			/**< links_shm and the ranks fit the cores
					 *  (coll_comm.c): rw_coll_run spins before it
					 *  yields (coll_start.c) */
	/** a host collective whose working set on this host passes it writes
	 *  the results it keeps non-temporally (tune.c); SIZE_MAX: never */
	size_t nontemporal_bytes;
	unsigned spin_misses;	/**< idle spells in a row that spun out */
	uint64_t spin_after_ns; /**< no spinning before then (0: spin) */
	struct rw_coll_stats stats;
	struct rw_coll_req *head, *tail;
	uint64_t moves;	     /**< times anything moved (waiters back off) */
	uint64_t tokens_due; /**< collectives with tokens started: tokens expected per link */
	uint64_t colls;	     /**< collectives started */
	struct rw_coll_lost ctl_lost; /**< the first control link lost (coll_ctl.c) */
	/** a failure notice from a later collective than the running one,
	 *  held until that one starts (coll_ctl.c's struct notice) */
	uint8_t held_notice[64];
	bool held;
	unsigned ctl_polls; /**< rw_coll_ctl_progress calls (it looks every few) */
	int error;	    /**< sticky */
	int failed_rank;    /**< who failed, -1 if unknown */
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

/* --- small_op.c, small_win.c, tune.c --------------------------------------- */

/** Send and receive links to peer for the latency algorithms: the mesh's,
 *  or channel 0's with 2 ranks.  -1 when there are none. */
int rw_coll_p2p_send_link(const struct rw_coll_comm *c, int peer);
int rw_coll_p2p_recv_link(const struct rw_coll_comm *c, int peer);
/** Does the comm have links for the latency algorithms? */
bool rw_coll_has_p2p(const struct rw_coll_comm *c);
/**
 * The peers rank links to for the latency algorithms under algo, ascending,
 * into peers (nranks entries): every other rank up to RW_COLL_DIRECT_MAX
 * ranks, else recursive doubling's partners only (r xor 2^k, and the fold
 * partner r +- p2).  The relation is symmetric.  0 with 2 ranks (channel 0's
 * links serve) or when algo needs none.
 */
int rw_coll_p2p_peers(int nranks, int rank, enum rw_coll_algo algo, int *peers);
/** Free the latency staging (before the links close). */
void rw_coll_small_free(struct rw_coll_comm *c);
/**
 * After the links connected: where every latency link has a window
 * (rw_net_window: all ranks on one host over shm, so every rank finds the
 * same), keep them for direct exchange's small collectives (small_win.c,
 * "The windows").  0, or -ENOMEM.
 */
int rw_coll_win_setup(struct rw_coll_comm *c);
/** A collective that does not use the windows while a peer wrote the next
 *  window collective: the ranks called different collectives (fails r
 *  naming both; 0 when nothing is there).  Cheap; for the idle checks. */
int rw_coll_win_stray(struct rw_coll_req *r);
/** Does r move through the windows? */
bool rw_coll_win_used(const struct rw_coll_req *r);
/** Forget the windows (before their links close). */
void rw_coll_win_drop(struct rw_coll_comm *c);

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
/** Have both neighbours' tokens for r arrived (r->proven: those of the
 *  collective before r)? */
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

/** The user ranks after and before this one round the ring (placement's
 *  order; rank order until placement set one). */
static inline int rw_coll_next(const struct rw_coll_comm *c)
{
	if (!c->order)
		return (c->rank + 1) % c->nranks;
	return c->order[(c->pos + 1) % c->nranks];
}

static inline int rw_coll_prev(const struct rw_coll_comm *c)
{
	if (!c->order)
		return (c->rank + c->nranks - 1) % c->nranks;
	return c->order[(c->pos + c->nranks - 1) % c->nranks];
}

/**
 * The ring plan's view of r: pa's rank and root become ring positions and its
 * segments are r's in ring order (plan segment p is user rank order[p]'s).
 * *tmp holds them: free() it after rw_ring_plan_init() (which copies them).
 */
int rw_coll_ring_args(const struct rw_coll_req *r, struct rw_ring_plan_args *pa, size_t **tmp);

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

/** Make sure channel staging for device collectives exists on channels
 *  0 .. nch-1 (device memory: 2 * NSLOTS * dev_chunk_bytes per channel,
 *  allocated at the first device collective that uses the channel). */
int rw_coll_stage_device(struct rw_coll_comm *c, int nch);
/** Free a stage's device part (its out_mr is already deregistered). */
void rw_coll_stage_device_free(struct rw_coll_stage *s);

/**
 * The copies of activation (before any message): on the host at once; on a
 * device enqueued (the channel 0 stream, or a stream of r's own with one
 * rank) with r->act_event recorded after it.
 */
int rw_coll_copy(struct rw_coll_req *r, void *dst, const void *src, size_t bytes);
/** 0 once the activation's copy ran (or there was none), -EAGAIN before. */
int rw_coll_act_poll(struct rw_coll_req *r);
/** Release the activation's event and stream; a copy still running (a
 *  failed collective) is waited for, so nothing writes after the end. */
void rw_coll_act_fini(struct rw_coll_req *r);

/** Host memory: dst = local op slot (count elements); final: the last
 *  step of the reduction (avg divides here). */
int rw_coll_fold(const struct rw_coll_req *r, void *dst, const void *local, const void *slot,
		 size_t count, bool final);

/** A receive that the engine takes where the link holds it, as it arrives
 *  (rw_net_irecv_sink), with no copy out first: a chunk to reduce is
 *  folded, each piece at offset off becoming dst + off = local + off op
 *  piece (rw_coll_fold); a chunk to keep is copied to dst + off.  Lives
 *  where the receive's record does, until the receive is done or its link
 *  closed. */
struct rw_coll_sink {
	struct rw_net_sink sink;
	const struct rw_coll_req *r;
	char *dst;
	const char *local; /* a fold: the local operand; NULL: a copy */
	bool final;	   /* a fold: the reduction's last step (rw_coll_fold) */
	bool nontemporal;  /* a copy: with non-temporal stores (tune.c) */
};

/** Whether a host collective's receives on comm can be taken on arrival. */
bool rw_coll_can_sink(const struct rw_coll_req *r, const struct rw_net_comm *comm);
/** A sink that folds each piece with local into dst. */
void rw_coll_sink_fold(struct rw_coll_sink *s, const struct rw_coll_req *r, void *dst,
		       const void *local, bool final);
/** A sink that copies each piece to dst (nontemporal: around the cache). */
void rw_coll_sink_copy(struct rw_coll_sink *s, const struct rw_coll_req *r, void *dst,
		       bool nontemporal);

/* Device collectives: a channel's slot in device memory and in host
 * memory (both at the stride dev_chunk_bytes). */
char *rw_coll_dslot(const struct rw_coll_comm *c, int ch, int slot);
char *rw_coll_hslot(const struct rw_coll_comm *c, int ch, int slot);
/** The host slots of device collectives on channel ch (their stride is
 *  dev_chunk_bytes): buf, or the wide staging this makes when buf is too
 *  small (coll_comm.c). */
int rw_coll_stage_wide(struct rw_coll_comm *c, int ch);
/** Where device collectives on channel ch stage through host memory. */
const struct rw_coll_stage *rw_coll_hstage(const struct rw_coll_comm *c, int ch);

/**
 * A received chunk of a device collective, in slot (device staging when
 * the recv link moves device memory, else host staging): enqueue what its
 * action does (copy in, reduce with local into out or the slot, copy out)
 * on the channel's stream and record event ev.  Never waits.
 * \param[out] fwd_dev when forwarded: true if the copy to send is the
 *             device slot, false if the host slot.
 */
int rw_coll_dev_chunk(struct rw_coll_req *r, int ch, int action, void *out, const void *local,
		      int slot, size_t count, bool forwarded, int ev, bool *fwd_dev);

/**
 * A local chunk of a device collective to send: enqueue its copy into out
 * slot k (device when the send link moves device memory, else pinned host)
 * and record the slot's event.  \param[out] data, mr what to send.
 */
int rw_coll_dev_stage_send(struct rw_coll_req *r, int ch, int k, const void *src, size_t bytes,
			   void **data, struct rw_net_mr **mr);

/** Has the channel's event ev run?  0 yes, -EAGAIN not yet, else -errno. */
int rw_coll_dev_poll(const struct rw_coll_comm *c, int ch, int ev);

/** Failure path only (never the data path): wait for a channel's device work. */
void rw_coll_dev_drain(const struct rw_coll_comm *c, int ch);

/** Do all of c's data links go through shm?  (tune.c; called once the
 *  links are connected, the answer kept in c->links_shm) */
bool rw_coll_links_on_shm(const struct rw_coll_comm *c);

/** c->nontemporal_bytes from RINGWAY_NONTEMPORAL_BYTES and this CPU's
 *  last-level cache (tune.c; at creation; the cache logged once per process). */
void rw_coll_nontemporal_init(struct rw_coll_comm *c, const struct rw_config *cfg);
/** Whether a host collective reading src_bytes at src and writing
 *  dst_bytes at dst keeps its results with non-temporal stores (tune.c).
 *  A local choice: ranks need not agree. */
bool rw_coll_nontemporal(const struct rw_coll_comm *c, const void *src, size_t src_bytes,
			 const void *dst, size_t dst_bytes);

#endif /* RW_COLL_INTERNAL_H */
