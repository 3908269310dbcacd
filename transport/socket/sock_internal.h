/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Objects of the TCP socket transport, shared by its files:
 *   sock_net.c      create/destroy, devices, properties, the ops table
 *   sock_util.c     addresses, socket options, handles, live counters
 *   sock_listen.c   listen, accept (hello checks), close_listen
 *   sock_connect.c  the non-blocking connect state machine
 *   sock_comm.c     comm set-up and close, memory registrations, requests
 *   sock_send.c     isend: the posts of the peer's receives, matching,
 *                   stream 0's send queue
 *   sock_data.c     irecv/test/iflush: receiving, and every request's end
 *   sock_stream.c   helper threads, one per stream, and their op rings
 *
 * Ownership.  The rw_sock_net owns every listener and comm it created; a
 * closed comm or listener keeps a small shell (its rw_obj closed,
 * transport/base/rw_base.h) on one of the net's graveyards (so that a late
 * call on it gets -EBADF instead of touching freed memory) until
 * rw_net_destroy().  Once RW_GRAVE_MAX shells of a type are kept, a new
 * object reuses the oldest (never freed, so a very old stale handle reads
 * valid memory, but may name the new object).  A comm owns its streams,
 * helper threads and registrations, freed by close_send/close_recv; its
 * request slab stays with the shell (a late test() reads a free request).
 *
 * Threads.  The calling thread (NCCL's progress thread) owns everything of a
 * comm but the op rings of streams 1..n-1, which it shares with their helper
 * threads under each stream's lock.  Stream 0 has no helper: the calling
 * thread moves all of its bytes (headers, eager messages, slice 0 of striped
 * ones, the posts of receives) with non-blocking calls from isend, irecv and
 * test.  Stream j > 0 is read or written only by its helper.
 */
#ifndef RW_SOCK_INTERNAL_H
#define RW_SOCK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/rw_common.h"
#include "common/rw_log.h"
#include "transport/base/rw_base.h"
#include "transport/rw_net.h"
#include "transport/socket/sock.h"
#include "transport/socket/sock_proto.h"
#include "transport/tcp/rw_tcp.h"

static_assert(RW_SOCK_MAX_RECVS == RW_NET_MAX_RECVS, "one entry per buffer of a receive");

#define RW_SOCK_ADDRSTRLEN RW_TCP_ADDRSTRLEN /* "[v6addr%scope]:port" */
#define RW_SOCK_MAX_DEVS   32
#define RW_SOCK_MAX_REQS   (RW_NET_MAX_REQUESTS * RW_NET_MAX_RECVS)
#define RW_SOCK_SLAB_REQS  32		/* requests allocated together */
#define RW_SOCK_RING	   64		/* ops queued per helper stream */
#define RW_SOCK_TX_BATCH   32		/* stream-0 pieces per sendmsg */
#define RW_SOCK_RXBUF	   16384	/* calling thread's read-ahead, stream 0 */
#define RW_SOCK_POST_BATCH 16		/* posts read per recv call */
#define RW_SOCK_MAX_CANDS  64		/* accepted sockets still owing a hello */
#define RW_SOCK_MAX_ASMS   16		/* connections with streams missing */
#define RW_SOCK_MAX_COMMS  65536	/* what get_properties promises */
#define RW_SOCK_MAX_BYTES  (1ull << 40) /* max_p2p_bytes: NCCL checks <= 1 TiB */
/* Listener limits (sock_listen.c) */
#define RW_SOCK_CANDS_PER_HOST 16    /* of RW_SOCK_MAX_CANDS, from one source address */
#define RW_SOCK_DROP_WARNS     8     /* drop warnings per listener per window ... */
#define RW_SOCK_DROP_WINDOW_MS 10000 /* ... then a count of the others per window */
/* Link speed when sysfs does not know it (virtual and loopback interfaces
 * report -1 or fail): NCCL's own assumption for such devices, 10 Gb/s. */
#define RW_SOCK_DEFAULT_SPEED_MBPS 10000

/* Object tags, checked on every entry point.  Comms, registrations and
 * requests carry them as the kind of their struct rw_obj header
 * (transport/base/rw_base.h), whose state says open or closed. */
enum rw_sock_magic {
	RW_SOCK_LISTEN_MAGIC = 0x4c4b5357, /* open listener */
	RW_SOCK_SEND_MAGIC = 0x534b5357,   /* send comm, connecting or open */
	RW_SOCK_RECV_MAGIC = 0x524b5357,   /* recv comm */
	RW_SOCK_MR_MAGIC = 0x4d4b5357,
	RW_SOCK_REQ_MAGIC = 0x514b5357,
};

/* --- live-object counters (sock_util.c) ---------------------------------- */

enum rw_sock_live_kind {
	RW_SOCK_LIVE_NETS,
	RW_SOCK_LIVE_LISTENERS,
	RW_SOCK_LIVE_COMMS,
	RW_SOCK_LIVE_REQS,
	RW_SOCK_LIVE_MRS,
	RW_SOCK_LIVE_THREADS,
	RW_SOCK_LIVE_FDS,
	RW_SOCK_LIVE_SHELLS, /* closed comm shells kept (rw_sock_live_shells(); not live) */
	RW_SOCK_LIVE_COUNT
};

/** The table (transport/base/rw_base.h), defined in sock_util.c. */
extern struct rw_live rw_sock_live;

static inline void rw_sock_live_add(enum rw_sock_live_kind kind, long delta)
{
	rw_live_bump(&rw_sock_live, (int)kind, delta);
}

/* --- devices and the transport instance ----------------------------------- */

struct rw_sock_dev {
	char name[IF_NAMESIZE];
	struct sockaddr_storage addr;	   /* port 0 */
	char addr_str[RW_SOCK_ADDRSTRLEN]; /* for messages */
	char *pci_path;			   /* NULL when not PCI */
	uint64_t guid;
	int speed_mbps;
};

struct rw_sock_net {
	struct rw_net base;
	pthread_mutex_t lock;		/* guards the lists */
	struct rw_list comms;		/* open comms */
	struct rw_list connecting;	/* send comms whose connect is under way */
	struct rw_list listeners;	/* open listeners */
	struct rw_grave dead_comms;	/* shells of closed comms (RW_GRAVE_MAX) */
	struct rw_grave dead_listeners; /* and of closed listeners */
	int ndev;
	struct rw_sock_dev devs[RW_SOCK_MAX_DEVS];
};

static inline struct rw_sock_net *rw_sock_net_from(struct rw_net *net)
{
	return rw_container_of(net, struct rw_sock_net, base);
}

/* --- listener --------------------------------------------------------------- */

/** Streams of one connect (same conn_id) collected so far.  On the
 *  listener's list in the order created: while incomplete, the oldest is
 *  evicted first when the list is full. */
struct rw_sock_asm {
	struct rw_list link;
	uint64_t conn_id;
	uint64_t created_ms;
	uint64_t deadline_ms;
	int nstreams;
	int have;
	int fds[RW_SOCK_MAX_STREAMS];
	char peer[RW_SOCK_ADDRSTRLEN];
};

struct rw_sock_listen {
	struct rw_net_listen base;
	struct rw_obj obj;	 /* RW_SOCK_LISTEN_MAGIC */
	struct rw_tcp_gate gate; /* sockets owing their hello (tcp_gate.c's policy) */
	struct rw_list link;	 /* net->listeners, then net->dead_listeners */
	struct rw_sock_net *net;
	int fd;
	uint64_t nonce;
	char addr[RW_SOCK_ADDRSTRLEN];
	int nasms;
	struct rw_list asms;
	int64_t hello_ms; /* RINGWAY_SOCKET_HELLO_MS, at most the timeout */
};

/* --- connect ------------------------------------------------------------ */

/** States of the non-blocking connect, in order. */
enum rw_sock_conn_state {
	RW_SOCK_CONN_START,	 /* open the sockets, start the TCP connects */
	RW_SOCK_CONN_CONNECTING, /* wait until every TCP connect finished */
	RW_SOCK_CONN_HELLO,	 /* write the hello on every stream */
	RW_SOCK_CONN_READY,	 /* the comm can be handed out */
};

/** What a state step returns besides a negative errno. */
enum rw_sock_step {
	RW_SOCK_STEP_AGAIN = 0, /* waiting on the network: call again later */
	RW_SOCK_STEP_DONE = 1,	/* finished: go on with the next state */
};

struct rw_sock_connect {
	enum rw_sock_conn_state state;
	int dev;
	struct rw_sock_handle handle; /* a copy: the key of the pending connect */
	struct sockaddr_storage peer;
	uint64_t start_ms;
	uint64_t conn_id;
	int nstreams;
	int fds[RW_SOCK_MAX_STREAMS];
	bool connected[RW_SOCK_MAX_STREAMS];
	size_t sent[RW_SOCK_MAX_STREAMS]; /* hello bytes written */
};

/* --- requests ------------------------------------------------------------- */

enum rw_sock_req_kind {
	RW_SOCK_REQ_FREE,
	RW_SOCK_REQ_SEND,
	RW_SOCK_REQ_RECV,
};

/** One buffer of a (grouped) receive. */
struct rw_sock_entry {
	char *data;
	size_t cap;
	int tag;
	bool used;   /* a message was matched to it */
	size_t size; /* bytes that message had */
};

struct rw_sock_req {
	struct rw_net_req base;
	struct rw_obj obj; /* RW_SOCK_REQ_MAGIC; free in the slab, or open */
	enum rw_sock_req_kind kind;
	atomic_int parts; /* pieces still moving (helpers, eager payload) */
	atomic_bool cut;  /* a piece was let go of unfinished (comm failed) */
	int err;	  /* its own failure (a send refused as too large) */
	uint64_t post_ms;
	uint32_t seq; /* message (send) or receive number */
	/* send */
	const char *data;
	size_t size;
	int tag;
	/* receive */
	int n;
	int msgs_left; /* headers not read yet */
	struct rw_sock_entry e[RW_SOCK_MAX_RECVS];
};

/** A receive the peer posted, as its sender sees it. */
struct rw_sock_rpost {
	uint32_t seq;
	int n;
	int left; /* buffers not yet matched */
	int32_t tags[RW_SOCK_MAX_RECVS];
	uint64_t caps[RW_SOCK_MAX_RECVS];
	bool used[RW_SOCK_MAX_RECVS];
};

/* --- streams and helper threads -------------------------------------------- */

/** A piece of a message on one stream: header (send side, stream 0 only)
 *  then buf[0..len). */
struct rw_sock_op {
	struct rw_sock_req *req; /* NULL: a header no request waits for */
	char *buf;
	size_t len, done;
	struct rw_sock_msg_hdr hdr;
	uint32_t hdr_len, hdr_done;
};

struct rw_sock_comm;

struct rw_sock_stream {
	struct rw_sock_comm *comm;
	int index;
	int fd;
	bool thread_running;
	pthread_t thread;
	pthread_mutex_t lock; /* guards head, tail, stop */
	pthread_cond_t cond;  /* helper sleeps here when idle */
	bool stop;
	unsigned head, tail;	 /* ops[head % RING] .. ops[(tail-1) % RING] */
	atomic_uint outstanding; /* tail - head */
	struct rw_sock_op ops[RW_SOCK_RING];
};

/* --- comm -------------------------------------------------------------- */

enum rw_sock_rx_state {
	RW_SOCK_RX_HDR,	    /* next: a message header on stream 0 */
	RW_SOCK_RX_PAYLOAD, /* next: the rest of an eager payload */
};

/** Send side: the peer's posted receives, stream 0's queue. */
struct rw_sock_tx {
	struct rw_sock_op q0[RW_SOCK_MAX_REQS]; /* stream 0's pieces, in order */
	unsigned q0_head, q0_tail;
	uint32_t seq;				      /* number of the next message */
	struct rw_sock_rpost posts[RW_SOCK_MAX_REQS]; /* not yet filled */
	unsigned r_head, r_tail;		      /* posts[r_head] is the one sends match */
	uint32_t post_seq;			      /* number of the next post expected */
	bool peer_closed;			      /* the receiver closed its end */
	int refused;				      /* a send was too large: the comm fails
							 once the TRUNC header is out */
	uint64_t wait_ms;			      /* since when isend finds nothing to match */
	uint64_t wait_last_ms;			      /* last time it found nothing */
	size_t in_len;				      /* in[0..in_len): posts read, not parsed */
	char in[RW_SOCK_POST_BATCH * sizeof(struct rw_sock_post)];
};

/** Receive side: posted receives take messages in order. */
struct rw_sock_rx {
	struct rw_sock_req *posted[RW_SOCK_MAX_REQS]; /* headers still due */
	unsigned p_head, p_tail;
	uint32_t recv_seq; /* number of the next receive */
	uint32_t msg_seq;  /* number of the next message */
	enum rw_sock_rx_state state;
	struct rw_sock_req *cur; /* eager payload or slice 0 being read */
	char *dst;
	size_t left;
	size_t pos, len; /* buf[pos..len) read ahead from stream 0 */
	size_t pre;	 /* payload bytes read into place with the header (rx_direct) */
	char buf[RW_SOCK_RXBUF];
	size_t out_pos, out_len; /* posts not yet written */
	char out[RW_SOCK_MAX_REQS * sizeof(struct rw_sock_post)];
};

/** Everything a comm frees at close. */
struct rw_sock_data {
	atomic_int err;		      /* first connection error, sticky */
	_Atomic uint64_t progress_ms; /* last time bytes moved */
	bool helpers_started;	      /* threads of streams 1..n-1 */
	union {
		struct rw_sock_tx tx;
		struct rw_sock_rx rx;
	};
	int nstreams;
	struct rw_sock_stream streams[];
};

struct rw_sock_mr {
	struct rw_net_mr base;
	struct rw_obj obj; /* RW_SOCK_MR_MAGIC */
	struct rw_list link;
	char *addr;
	size_t size;
};

struct rw_sock_comm {
	struct rw_net_comm base;
	struct rw_obj obj;   /* kind SEND or RECV; closed: a shell */
	struct rw_list link; /* one of the net's lists */
	struct rw_sock_net *net;
	char peer[RW_SOCK_ADDRSTRLEN];
	size_t min_stripe;
	int64_t timeout_ms;
	bool patient;		      /* recv: a receive waits for its first header unbounded */
	bool ahead;		      /* no posts: message k fills receive k (rw_net_ahead) */
	struct rw_sock_connect *conn; /* send side, until connected */
	pthread_mutex_t mr_lock;      /* reg_mr may race the data path */
	struct rw_list mrs;
	struct rw_sock_data *d; /* NULL while connecting and once closed */
	/* Requests (RW_SOCK_REQ_MAGIC): kept with the shell, so test() on a
	 * request of a closed comm reads a free request, not freed memory. */
	struct rw_slab reqs;
};

static inline struct rw_sock_comm *rw_sock_comm_from(struct rw_net_comm *c)
{
	return rw_container_of(c, struct rw_sock_comm, base);
}

/** The kinds of a comm, either direction (sock_comm.c). */
extern const uint32_t rw_sock_comm_kinds[2];

static inline const char *rw_sock_comm_dir(const struct rw_sock_comm *c)
{
	return c->obj.kind == RW_SOCK_RECV_MAGIC ? "recv comm from" : "send comm to";
}

/* --- sock_util.c ---------------------------------------------------------- */

/** Non-blocking, close-on-exec TCP socket, counted.  0 or -errno. */
int rw_sock_socket(int family, int *fd);
/** Count an fd that accept4() created. */
void rw_sock_fd_adopted(void);
/** Close a counted fd and set it to -1.  An abortive close sends RST. */
void rw_sock_close(int *fd);
void rw_sock_close_abort(int *fd);
/** TCP_NODELAY, and SO_SNDBUF/SO_RCVBUF when cfg->socket_buffer is set. */
int rw_sock_tune(int fd, const struct rw_config *cfg, const char *what);
/** Switch a connected stream to blocking mode with send/receive time-outs
 *  of slice_ms, so helper threads sleep in the kernel and wake up to check
 *  for a stalled peer.  0 or -errno. */
int rw_sock_set_blocking(int fd, int64_t slice_ms);
void rw_sock_handle_encode(struct rw_sock_handle *h, const struct sockaddr_storage *sa,
			   uint64_t nonce);
/** Decode and check a handle.  0 or -EINVAL. */
int rw_sock_handle_decode(const void *buf, struct rw_sock_handle *h, struct sockaddr_storage *sa);

/* --- sock_listen.c / sock_connect.c --------------------------------------------- */

int rw_sock_listen(struct rw_net *net, int dev, void *handle, struct rw_net_listen **listen_comm);
int rw_sock_accept(struct rw_net_listen *listen_comm, struct rw_net_comm **recv_comm);
int rw_sock_close_listen(struct rw_net_listen *listen_comm);
int rw_sock_connect(struct rw_net *net, int dev, const void *handle,
		    struct rw_net_comm **send_comm);
/** Abandon a connect under way (destroy): close its sockets. */
void rw_sock_connect_abandon(struct rw_sock_comm *c);

/* --- sock_comm.c --------------------------------------------------------- */

/** A comm of kind RW_SOCK_SEND_MAGIC or RW_SOCK_RECV_MAGIC without streams
 *  yet (counted).  NULL when out of memory. */
struct rw_sock_comm *rw_sock_comm_alloc(struct rw_sock_net *net, uint32_t kind, const char *peer);
/** Give the comm its streams; takes the fds (sets them to -1) on success. */
int rw_sock_comm_start(struct rw_sock_comm *c, int *fds, int nstreams);
/** Give up a comm that never started (connect or accept failed): what it
 *  holds goes, its shell waits on the graveyard.  Unlinks it. */
void rw_sock_comm_free(struct rw_sock_comm *c);
/** Close an open comm (cancelling its requests) and keep its shell. */
void rw_sock_comm_close(struct rw_sock_comm *c);
int rw_sock_close_send(struct rw_net_comm *comm);
int rw_sock_close_recv(struct rw_net_comm *comm);
int rw_sock_reg_mr(struct rw_net_comm *comm, void *data, size_t size, int type,
		   struct rw_net_mr **mr);
int rw_sock_dereg_mr(struct rw_net_comm *comm, struct rw_net_mr *mr);
/** Is mr one of c's registrations?  0 or -EINVAL (logged).  A buffer
 *  outside the registration's range is accepted (warned about once). */
int rw_sock_mr_check(struct rw_sock_comm *c, struct rw_net_mr *mr, const void *data, size_t size,
		     const char *call);
struct rw_sock_req *rw_sock_req_alloc(struct rw_sock_comm *c);
void rw_sock_req_free(struct rw_sock_comm *c, struct rw_sock_req *r);
/**
 * Record the comm's first connection error and log it once, naming the
 * peer; shut the streams down so helper threads stop at once.  Returns err
 * (or the error recorded before).
 */
int rw_sock_comm_fail(struct rw_sock_comm *c, int err, const char *fmt, ...) RW_PRINTF(3, 4);
/** The same without a message, for an error logged already. */
int rw_sock_comm_abort(struct rw_sock_comm *c, int err);
static inline void rw_sock_progress(struct rw_sock_data *d)
{
	atomic_store_explicit(&d->progress_ms, rw_now_ms(), memory_order_relaxed);
}

/* --- sock_send.c / sock_data.c ------------------------------------------------- */

int rw_sock_isend(struct rw_net_comm *comm, void *data, size_t size, int tag, struct rw_net_mr *mr,
		  struct rw_net_req **req);
/** Move the send side on: write stream 0's queue, read the peer's posts,
 *  fail the comm once a refused send is out.  0 or the comm's error. */
int rw_sock_tx_progress(struct rw_sock_comm *c);
/** The send comm's error as callers see it (0 while it is fine). */
int rw_sock_tx_error(struct rw_sock_comm *c);
int rw_sock_irecv(struct rw_net_comm *comm, int n, void **data, const size_t *sizes,
		  const int *tags, struct rw_net_mr **mrs, struct rw_net_req **req);
int rw_sock_iflush(struct rw_net_comm *comm, int n, void **data, const int *sizes,
		   struct rw_net_mr **mrs, struct rw_net_req **req);
int rw_sock_test(struct rw_net_req *req, int *done, size_t *sizes);
/** An open comm of the given kind, or -EBADF (closed) / -EINVAL (logged). */
int rw_sock_data_comm(struct rw_net_comm *comm, uint32_t magic, const char *call,
		      struct rw_sock_comm **out);

/* --- sock_stream.c -------------------------------------------------------- */

/** Start the helper threads of streams 1..n-1 (once).  0 or -errno. */
int rw_sock_streams_start(struct rw_sock_comm *c);
/** Stop and join the helper threads; ops still queued are dropped. */
void rw_sock_streams_stop(struct rw_sock_comm *c);
/** Room for one more op on stream s? */
static inline bool rw_sock_stream_room(struct rw_sock_stream *s)
{
	return atomic_load_explicit(&s->outstanding, memory_order_acquire) < RW_SOCK_RING;
}
static inline bool rw_sock_stream_idle(struct rw_sock_stream *s)
{
	return atomic_load_explicit(&s->outstanding, memory_order_acquire) == 0;
}
/** Queue op on helper stream s (room checked before) and wake its helper. */
void rw_sock_stream_push(struct rw_sock_stream *s, const struct rw_sock_op *op);
/** Room on every helper stream that a message of size bytes striped over
 *  the comm's streams would use. */
bool rw_sock_stripe_room(struct rw_sock_data *d, uint64_t size);

/** patient (rw_net.h): receives wait for their first header unbounded. */
int rw_sock_patient(struct rw_net_comm *comm);
/** ahead (rw_net.h): a send comm sends without posts, a recv comm takes
 *  messages sent so and posts nothing (one buffer per receive). */
int rw_sock_ahead(struct rw_net_comm *comm);

/** describe (rw_net.h): kind, streams, fd of stream 0, peer (sock_describe.c). */
int rw_sock_describe(struct rw_net_comm *comm, struct rw_net_desc *desc);

#endif /* RW_SOCK_INTERNAL_H */
