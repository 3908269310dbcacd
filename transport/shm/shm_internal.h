/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Objects of the same-host transport, shared by its files:
 *   shm_net.c     instance, device, properties, doorbell, live counters,
 *                 the shells of closed objects
 *   shm_conn.c    listen / connect / accept, the rendezvous
 *   shm_seg.c     segment and doorbell memfds: create, check, map
 *   shm_comm.c    comms, requests, reg_mr, test, close
 *   shm_tx.c      isend and the sender's progress (publishing slots, acks)
 *   shm_rx.c      irecv and the receiver's progress (matching, copies)
 *   shm_cma.c     cross-memory attach jobs
 *   shm_wait.c    spinning, sleeping, ringing, peer liveness and stalls
 *
 * Ownership.  The rw_shm_net owns every listener and comm it created.  A
 * closed comm or listener gives back everything it held but keeps its small
 * shell (its rw_obj closed, transport/base/rw_base.h) on one of the net's
 * graveyards until rw_net_destroy(), so a late call on it gets -EBADF
 * instead of touching freed memory; once RW_GRAVE_MAX shells of a type are
 * kept, a new object reuses the oldest.  A comm owns its segment mapping,
 * the peer's doorbell mapping and its registrations; its request slab stays
 * with the shell (a late test() reads a free request).
 *
 * Threads.  The data path of a comm runs on one thread at a time (rw_net's
 * rule); reg_mr/dereg_mr may run beside it and only touch the comm's
 * registration list, under mr_lock.  The net's graveyard is under its lock.
 * What two processes share is only the segment and the doorbells, through
 * the atomics described in shm_layout.h.
 */
#ifndef RW_SHM_INTERNAL_H
#define RW_SHM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/rw_common.h"
#include "transport/base/rw_base.h"
#include "transport/rw_net.h"
#include "transport/shm/shm.h"
#include "transport/shm/shm_layout.h"

#define RW_SHM_MAX_REQS	       (RW_NET_MAX_REQUESTS * RW_NET_MAX_RECVS) /* per comm */
#define RW_SHM_SLAB_REQS       32		/* requests allocated together */
#define RW_SHM_CMA_CHUNK       (1u << 20)	/* bytes one side copies per claim */
#define RW_SHM_CMA_BUDGET      4		/* claims per progress call and side */
#define RW_SHM_UP_PIECES       4		/* host -> device pieces in flight */
#define RW_SHM_UP_PIECE_BYTES  RW_SHM_CMA_CHUNK /* one CMA chunk per piece */
#define RW_SHM_PAUSE_NS	       5000ull		/* pure polling before yielding */
#define RW_SHM_SLEEP_MAX_NS    1000000ull	/* longest sleep in one test() */
#define RW_SHM_SLEEP_SHARED_NS 100000ull	/* ... when other transports share the thread */
#define RW_SHM_CHECK_NS	       1000000ull	/* peer liveness checked this often */
#define RW_SHM_MAX_P2P_BYTES   (1ull << 40)	/* one message (NCCL's ceiling) */

static_assert(RW_SHM_MAX_REQS < RW_SHM_ACK_RING, "ack ring too small");
static_assert(RW_SHM_MAX_REQS < RW_SHM_POST_RING, "post ring too small");
static_assert(RW_SHM_MAX_RECVS == RW_NET_MAX_RECVS, "post entries hold RW_NET_MAX_RECVS");
static_assert(RW_SHM_MAX_REQS % RW_SHM_SLAB_REQS == 0, "whole slabs");

/* Object kinds (struct rw_obj), checked on every entry point. */
enum rw_shm_magic {
	RW_SHM_LISTEN_MAGIC = 0x4c4d4853, /* open listener */
	RW_SHM_SEND_MAGIC = 0x534d4853,	  /* open send comm */
	RW_SHM_RECV_MAGIC = 0x524d4853,	  /* open receive comm */
	RW_SHM_MR_MAGIC = 0x4d4d4853,	  /* registration */
	RW_SHM_REQ_MAGIC = 0x514d4853,	  /* request (free or in use) */
};

/* --- live counters (shm_net.c) ----------------------------------------- */

enum rw_shm_live_kind {
	RW_SHM_LIVE_NETS,
	RW_SHM_LIVE_LISTENERS,
	RW_SHM_LIVE_COMMS,
	RW_SHM_LIVE_REQS,
	RW_SHM_LIVE_MRS,
	RW_SHM_LIVE_MAPS,
	RW_SHM_LIVE_FDS,
	RW_SHM_LIVE_SHELLS, /* closed comm shells kept (not counted as live) */
	RW_SHM_LIVE_COUNT
};

extern struct rw_live rw_shm_live;

static inline void rw_shm_live_add(enum rw_shm_live_kind k, long delta)
{
	rw_live_bump(&rw_shm_live, (int)k, delta);
}
void rw_shm_stat_add(long *counter, long delta);
extern struct rw_shm_stats rw_shm_stats_g;

/** close() an fd this transport counted, and set it to -1. */
void rw_shm_close_fd(int *fd);

/* --- instance ------------------------------------------------------------ */

struct rw_shm_net {
	struct rw_net base;
	struct rw_net_props props;
	struct rw_shm_host_id host;
	uint32_t uid;
	pid_t pid;
	uint32_t nslots;
	uint32_t slot_bytes; /* rounded up to 4 KiB */
	uint64_t spin_ns;
	uint64_t sleep_ns; /* longest sleep in one test() */
	int db_fd;	   /* our doorbell memfd, sent to every peer */
	struct rw_shm_doorbell *db;
	uint64_t last_progress_ns; /* atomic: any comm moved anything */
	uint64_t idle_since_ns;	   /* atomic: this idle spell began (shm_wait.c) */
	uint32_t idle_seq;	   /* atomic: our doorbell's seq when it began */
	uint64_t clock_ns;	   /* atomic: rw_shm_now()'s last reading */
	unsigned clock_calls;	   /* atomic: its calls since */
	bool cuda;		   /* CUDA IPC usable */
	pthread_mutex_t lock;	   /* the graveyards */
	struct rw_grave dead_comms;
	struct rw_grave dead_listeners;
};

static inline struct rw_shm_net *rw_shm_net_from(struct rw_net *n)
{
	return rw_container_of(n, struct rw_shm_net, base);
}

/** Keep the shell of a closed object on graveyard g until the net is
 *  destroyed (under the net's lock). */
void rw_shm_bury(struct rw_shm_net *net, struct rw_grave *g, struct rw_list *link);

/* --- listener -------------------------------------------------------------- */

/** A connection accepted by the kernel whose hello has not arrived yet. */
struct rw_shm_pending {
	int fd;
	pid_t pid; /* SO_PEERCRED, this namespace; 0 unknown */
	uint64_t since_ns;
	struct rw_shm_pending *next;
};

struct rw_shm_listen {
	struct rw_net_listen base;
	struct rw_obj obj;   /* RW_SHM_LISTEN_MAGIC */
	struct rw_list link; /* graveyard, once closed */
	int fd;
	uint64_t nonce;
	struct rw_shm_pending *pending;
};

static inline struct rw_shm_listen *rw_shm_listen_from(struct rw_net_listen *l)
{
	return rw_container_of(l, struct rw_shm_listen, base);
}

/* --- registrations ----------------------------------------------------- */

struct rw_shm_mr {
	struct rw_net_mr base;
	struct rw_obj obj; /* RW_SHM_MR_MAGIC */
	char *addr;
	size_t size;
	int type;      /* RW_PTR_HOST or RW_PTR_CUDA */
	bool exported; /* CUDA send buffer: ipc/ipc_offset valid */
	uint8_t ipc[RW_SHM_CUDA_HANDLE_BYTES];
	uint64_t ipc_offset;	/* addr's offset in the exported allocation */
	struct rw_shm_mr *next; /* the comm's list */
};

static inline struct rw_shm_mr *rw_shm_mr_from(struct rw_net_mr *m)
{
	return rw_container_of(m, struct rw_shm_mr, base);
}

/* --- requests ----------------------------------------------------------- */

enum rw_shm_req_kind {
	RW_SHM_REQ_FREE = 0,
	RW_SHM_REQ_SEND,
	RW_SHM_REQ_RECV,
};

struct rw_shm_rbuf {
	char *data;
	size_t cap;
	size_t got;
	int tag;
	int type; /* RW_PTR_HOST or RW_PTR_CUDA */
	bool matched;
	const struct rw_net_sink *sink; /* irecv_sink: the bytes go here */
};

struct rw_shm_req {
	struct rw_net_req base;
	struct rw_obj obj; /* RW_SHM_REQ_MAGIC: free in the slab, or open */
	enum rw_shm_req_kind kind;
	bool done;
	int err;		 /* first error, reported by test */
	struct rw_shm_req *next; /* posting order, while not finished */
	uint64_t posted_ns;
	/* send */
	const char *data;
	size_t size;
	int tag;
	int type;
	struct rw_shm_mr *mr;
	uint64_t seq;	 /* message number */
	uint32_t mode;	 /* enum rw_shm_slot_kind, 0 until chosen */
	bool slots_only; /* send: its receive takes it from the slots (no CMA) */
	size_t sent;	 /* bytes published into slots (FRAG) */
	bool published;	 /* every slot of the message is out */
	/* receive: n messages, each to the buffer with its tag */
	int n;
	int nmatched;
	int nfinished;
	struct rw_shm_rbuf buf[RW_NET_MAX_RECVS]; /* last: rw_shm_req_get clears up to it */
};
static_assert(offsetof(struct rw_shm_req, buf) + sizeof(((struct rw_shm_req *)0)->buf) ==
		      sizeof(struct rw_shm_req),
	      "buf is the request's last member");

static inline struct rw_shm_req *rw_shm_req_from(struct rw_net_req *r)
{
	return rw_container_of(r, struct rw_shm_req, base);
}

/* --- comms ---------------------------------------------------------------- */

/** What the receiver is doing with the message at the head of the ring. */
enum rw_shm_rx_state {
	RW_SHM_RX_IDLE = 0,
	RW_SHM_RX_FRAG,	 /* waiting for / copying the next fragment */
	RW_SHM_RX_CMA,	 /* a CMA job is running */
	RW_SHM_RX_CUDA,	 /* a CUDA copy is in flight */
	RW_SHM_RX_UP,	 /* an inline message is being staged up to the device */
	RW_SHM_RX_DRAIN, /* every byte is staged up; the device copies run */
};

/** Pinned pieces staging host bytes up to a device buffer (shm_up.c). */
struct rw_shm_up {
	char *pinned; /* RW_SHM_UP_PIECES x RW_SHM_UP_PIECE_BYTES, made on first use */
	void *ev[RW_SHM_UP_PIECES];
	unsigned head, n; /* pieces in flight, oldest first */
	int err;	  /* the first failed copy */
};

/** One opened peer allocation (CUDA IPC), cached per comm. */
struct rw_shm_ipc_cache {
	uint8_t handle[RW_SHM_CUDA_HANDLE_BYTES];
	char *base;
	size_t size;
	struct rw_shm_ipc_cache *next;
};

/** What a comm holds while open; freed by close (the shell stays). */
struct rw_shm_data {
	int seg_fd;
	struct rw_shm_seg *seg;
	struct rw_shm_post *post; /* the post ring */
	char *slots;
	size_t seg_bytes;
	uint32_t nslots;
	uint32_t slot_bytes;
	struct rw_shm_doorbell *peer_db; /* NULL until known */
	int ctl_fd;			 /* the rendezvous socket (sender: until the reply) */
	int pidfd;			 /* -1 when pidfd_open is unavailable */
	uint64_t probe_word;		 /* the peer reads this to test CMA */

	struct rw_shm_req *q_head, *q_tail; /* unfinished, in posting order */

	/* sender */
	bool accepted;	    /* the reply arrived */
	bool cma;	    /* the receiver reads our memory */
	bool coop;	    /* we may write the receiver's memory */
	uint64_t tail;	    /* slots published */
	uint64_t next_seq;  /* number of the next message */
	uint64_t post_cur;  /* posted receive the next message goes to */
	uint32_t post_used; /* its buffers taken so far (bit mask) */
	int post_taken;	    /* its messages so far */
	uint64_t seen_head, seen_acked, seen_claim, seen_posted;
	uint32_t await_ack;	/* published CMA/CUDA sends not acked yet */
	size_t copied;		/* bytes this progress call copied into slots */
	uint64_t wait_since_ns; /* isend has answered "not now" since; 0: it took */
	uint64_t wait_last_ns;	/* the last "not now" */

	/* receiver */
	uint64_t head;	 /* slots consumed */
	uint64_t acked;	 /* messages finished */
	uint64_t posted; /* receives written to the post ring */
	uint64_t seen_replayed;
	uint64_t rx_seq; /* number of the next message to start */
	enum rw_shm_rx_state rx;
	struct rw_shm_req *cur_req; /* the receive of the current message */
	int cur_idx;		    /* its buffer, -1 when the message is dropped */
	uint64_t cur_seq;
	uint64_t cur_size;
	uint64_t cur_off;    /* FRAG: bytes received so far */
	uint64_t cur_src;    /* CMA: the message's address in the sender */
	int cur_err;	     /* the message fails (-EMSGSIZE ...) */
	bool cur_land;	     /* a sink's message lands in its buffer, put whole at the end */
	size_t cur_up;	     /* bytes of the slot at head already staged up */
	struct rw_shm_up up; /* host -> device staging */
	void *stream;	     /* CUDA stream of this comm's copies (lazy) */
	void *event;	     /* recorded after each CUDA copy */
	struct rw_shm_ipc_cache *ipc;
};

struct rw_shm_comm {
	struct rw_net_comm base;
	struct rw_obj obj; /* SEND or RECV; closed: a shell */
	bool is_send;
	struct rw_list link; /* graveyard, once closed */
	char peer[64];	     /* "pid 1234 (conn 0123...)" for messages */
	uint64_t conn_id;
	pid_t peer_pid; /* this namespace (SO_PEERCRED); 0 unknown */
	int fail;	/* sticky connection error */
	bool fail_logged;
	bool patient; /* recv: receives wait for a message unbounded, test never idles */
	uint64_t connected_ns;
	uint64_t progress_ns; /* last time anything moved on this comm */
	uint64_t last_check_ns;
	pthread_mutex_t mr_lock;
	struct rw_shm_mr *mrs;
	struct rw_shm_data d; /* valid while open */
	struct rw_slab reqs;  /* RW_SHM_REQ_MAGIC; kept with the shell */
};

static inline struct rw_shm_comm *rw_shm_comm_from(struct rw_net_comm *c)
{
	return rw_container_of(c, struct rw_shm_comm, base);
}

static inline struct rw_shm_net *rw_shm_comm_net(struct rw_shm_comm *c)
{
	return rw_shm_net_from(c->base.net);
}

/*
 * The clock of the poll loops: clock_gettime costs ~25 ns, more than a
 * poll that finds nothing, so test() reads it on every RW_SHM_CLOCK_EVERY
 * call of the instance and otherwise answers the last reading; isend and
 * irecv read it (fresh), and so does a progress that copied more than
 * RW_SHM_CLOCK_BYTES (a poll can take long only then), so the reading is
 * never older than a few empty polls (what it times, the pure polling before yielding and the
 * peer checks, counts in microseconds and more).
 */
#define RW_SHM_CLOCK_EVERY 16
#define RW_SHM_CLOCK_BYTES 65536 /* a progress that copied more reads it fresh */

static inline uint64_t rw_shm_now(struct rw_shm_comm *c, bool fresh)
{
	struct rw_shm_net *net = rw_shm_comm_net(c);
	unsigned n = __atomic_load_n(&net->clock_calls, __ATOMIC_RELAXED) + 1;
	uint64_t now;

	if (fresh || n >= RW_SHM_CLOCK_EVERY) {
		now = rw_now_ns();
		__atomic_store_n(&net->clock_ns, now, __ATOMIC_RELAXED);
		n = 0;
	} else {
		now = __atomic_load_n(&net->clock_ns, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&net->clock_calls, n, __ATOMIC_RELAXED);
	return now;
}

static inline struct rw_shm_slot *rw_shm_slot_at(struct rw_shm_comm *c, uint64_t s)
{
	return (struct rw_shm_slot *)(c->d.slots + (size_t)(s % c->d.nslots) * c->d.slot_bytes);
}

static inline char *rw_shm_slot_payload(struct rw_shm_slot *s)
{
	return (char *)s + RW_SHM_SLOT_HDR_BYTES;
}

/** Has the sender published slot number s (its stamp, shm_layout.h)? */
static inline bool rw_shm_slot_ready(struct rw_shm_comm *c, uint64_t s)
{
	return __atomic_load_n(&rw_shm_slot_at(c, s)->stamp, __ATOMIC_ACQUIRE) == (uint32_t)(s + 1);
}

/** Has the receiver posted receive number p (its entry's stamp)? */
static inline bool rw_shm_post_ready(const struct rw_shm_comm *c, uint64_t p)
{
	return __atomic_load_n(&c->d.post[p % RW_SHM_POST_RING].stamp, __ATOMIC_ACQUIRE) ==
	       (uint32_t)(p + 1);
}

/* --- shm_conn.c ------------------------------------------------------------ */

int rw_shm_listen(struct rw_net *net, int dev, void *handle, struct rw_net_listen **listen_comm);
int rw_shm_connect(struct rw_net *net, int dev, const void *handle, struct rw_net_comm **send_comm);
int rw_shm_accept(struct rw_net_listen *listen_comm, struct rw_net_comm **recv_comm);
int rw_shm_close_listen(struct rw_net_listen *listen_comm);
/** Sender: read the receiver's reply if it came.  0, or the comm's error. */
int rw_shm_poll_reply(struct rw_shm_comm *c);

/* --- shm_seg.c ------------------------------------------------------------- */

/** A sealed memfd of size bytes, mode 0600.  Counted as one fd. */
int rw_shm_memfd_create(const char *name, size_t size, int *fd);
/** Check owner, mode, seals and size of a received memfd.  0, -EPERM
 *  (another owner or mode) or -EPROTO; logged. */
int rw_shm_memfd_check(int fd, size_t size, const char *what, const char *peer);
/** mmap fd shared read-write.  Counted as one map. */
int rw_shm_map(int fd, size_t size, void **out);
void rw_shm_unmap(void *p, size_t size);
/** Fill a new segment's control page. */
void rw_shm_seg_init(struct rw_shm_seg *seg, uint64_t nonce, uint64_t conn_id, uint32_t nslots,
		     uint32_t slot_bytes, uint64_t seg_bytes);
/** Check a copy of a received segment's header against the hello.
 *  \return 0, -EPERM (another owner) or -EPROTO; logged. */
int rw_shm_seg_check(const struct rw_shm_seg_hdr *s, const struct rw_shm_hello *h, uint64_t nonce,
		     const char *peer);
/** Check a received doorbell page.  0 or -EPROTO; logged. */
int rw_shm_db_check(const struct rw_shm_doorbell *db, const char *peer);

/* --- shm_comm.c ------------------------------------------------------------ */

int rw_shm_reg_mr(struct rw_net_comm *comm, void *data, size_t size, int type,
		  struct rw_net_mr **mr);
int rw_shm_reg_mr_dmabuf(struct rw_net_comm *comm, void *data, size_t size, int type,
			 uint64_t offset, int fd, struct rw_net_mr **mr);
int rw_shm_dereg_mr(struct rw_net_comm *comm, struct rw_net_mr *mr);
int rw_shm_isend(struct rw_net_comm *comm, void *data, size_t size, int tag, struct rw_net_mr *mr,
		 struct rw_net_req **req);
int rw_shm_irecv(struct rw_net_comm *comm, int n, void **data, const size_t *sizes, const int *tags,
		 struct rw_net_mr **mrs, struct rw_net_req **req);
int rw_shm_irecv_sink(struct rw_net_comm *comm, void *data, size_t size, int tag,
		      struct rw_net_mr *mr, const struct rw_net_sink *sink,
		      struct rw_net_req **req);
int rw_shm_iflush(struct rw_net_comm *comm, int n, void **data, const int *sizes,
		  struct rw_net_mr **mrs, struct rw_net_req **req);
int rw_shm_test(struct rw_net_req *req, int *done, size_t *sizes);
int rw_shm_window(struct rw_net_comm *comm, void **addr, size_t *bytes);
int rw_shm_check(struct rw_net_comm *comm);
int rw_shm_patient(struct rw_net_comm *comm);
int rw_shm_close_send(struct rw_net_comm *comm);
int rw_shm_close_recv(struct rw_net_comm *comm);
/** A new, open comm with nothing attached; the caller fills in d. */
int rw_shm_comm_new(struct rw_shm_net *net, bool is_send, struct rw_shm_comm **out);
/** Give back what an open comm holds (requests are cancelled, the peer is
 *  told) and bury its shell.  Used by close and by failed set-ups. */
void rw_shm_comm_close(struct rw_shm_comm *c);
/** Check that comm is an open comm of the given direction (kind; 0: any).
 *  0, -EBADF (closed) or -EINVAL (other direction, foreign); logged. */
int rw_shm_comm_check(struct rw_net_comm *comm, uint32_t magic, const char *call,
		      struct rw_shm_comm **out);
/** A free request of the pool, or NULL when RW_SHM_MAX_REQS are out. */
struct rw_shm_req *rw_shm_req_get(struct rw_shm_comm *c, enum rw_shm_req_kind kind);
/** Append to / remove from the queue of unfinished requests. */
void rw_shm_queue_push(struct rw_shm_comm *c, struct rw_shm_req *r);
void rw_shm_queue_remove(struct rw_shm_comm *c, struct rw_shm_req *r);
/** Fail the connection: every pending request then fails with rc, every
 *  later call at once; the peer is told (its failure word, shm_layout.h).
 *  Logs why once per comm (NULL: it was logged where detected). */
void rw_shm_conn_fail(struct rw_shm_comm *c, int rc, const char *why);
/** Note that something moved on c (and in the instance). */
void rw_shm_comm_moved(struct rw_shm_comm *c, uint64_t now);

/* --- shm_tx.c / shm_rx.c -------------------------------------------------- */

/** Move whatever can move now.  \return 1 if anything moved, else 0. */
int rw_shm_tx_progress(struct rw_shm_comm *c, uint64_t now);
int rw_shm_rx_progress(struct rw_shm_comm *c, uint64_t now);

/* --- shm_cma.c ------------------------------------------------------------- */

/** Can this process read pid's memory at addr holding val? */
bool rw_shm_cma_probe(pid_t pid, uint64_t addr, uint64_t val);
/** Receiver: start the CMA job of message seq into dst. */
void rw_shm_cma_job_start(struct rw_shm_comm *c, uint64_t seq, uint64_t src, char *dst,
			  uint64_t size, bool coop);
/**
 * Copy up to RW_SHM_CMA_BUDGET chunks of the current job (receiver: read,
 * sender: write).  \return bytes copied (>= 0) or -errno of a copy.
 */
long rw_shm_cma_work(struct rw_shm_comm *c);
/** Receiver: 1 when every byte of the job is in (err: a copy's error). */
int rw_shm_cma_job_done(struct rw_shm_comm *c, int *err);
/** Receiver closing or failing: stop new claims and wait (bounded) for the
 *  sender's. */
void rw_shm_cma_job_retire(struct rw_shm_comm *c);

/* --- shm_up.c ---------------------------------------------------------------- */

/** Retire the pieces whose copies ran.  0 when none is in flight (and none
 *  failed), -EAGAIN while some are, or the first copy's error. */
int rw_shm_up_reap(struct rw_shm_comm *c);
/** The next free piece (RW_SHM_UP_PIECE_BYTES), making the ring on first
 *  use.  -EAGAIN when every piece is in flight. */
int rw_shm_up_piece(struct rw_shm_comm *c, char **piece);
/** Copy len bytes of the piece rw_shm_up_piece() gave up to dst, async. */
int rw_shm_up_push(struct rw_shm_comm *c, void *dst, size_t len);
/** Stage [*done, len) of src up to dst + *done, as far as pieces are free;
 *  0 once all of it is, -EAGAIN when out of pieces (call again), -errno. */
int rw_shm_up_stage(struct rw_shm_comm *c, char *dst, const char *src, size_t len, size_t *done);
/** At close, after the stream was synchronised. */
void rw_shm_up_release(struct rw_shm_comm *c);

/* --- shm_wait.c ------------------------------------------------------------ */

/** Wake the peer if one of its threads sleeps. */
void rw_shm_ring(struct rw_shm_comm *c);
/** Did the peer write anything this comm waits for since last looked? */
bool rw_shm_peek(struct rw_shm_comm *c);
/** After spin_ns without progress: sleep until rung or 1 ms passed.
 *  \return true when it yielded or slept (look again), false when the
 *  caller should just poll again. */
bool rw_shm_idle(struct rw_shm_comm *c, uint64_t now);
/**
 * Is the connection still good for what has waited since since_ns (what:
 * "a receive", ... for the message)?  Rate-limited; fails the comm (logging
 * once) when the peer exited or closed its side, or when nothing moved for
 * RINGWAY_TIMEOUT_MS since then.  \return c->fail.
 */
int rw_shm_check_peer(struct rw_shm_comm *c, uint64_t now, uint64_t since_ns, const char *what);
/** Has the peer process exited (pidfd, else kill(pid, 0))? */
bool rw_shm_peer_exited(struct rw_shm_comm *c);
/** pidfd_open(pid), or -1 when unavailable. */
int rw_shm_pidfd_open(pid_t pid);

/** describe (rw_net.h): kind, connection id, peer (shm_describe.c). */
int rw_shm_describe(struct rw_net_comm *comm, struct rw_net_desc *desc);

#endif /* RW_SHM_INTERNAL_H */
