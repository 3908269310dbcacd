/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NCCL proxy replay: libnccl-net-ringway.so driven the way NCCL's proxy
 * thread drives a net plugin (src/transport/net.cc sendProxyProgress /
 * recvProxyProgress, src/proxy.cc, src/plugin/net.cc of NVIDIA/nccl),
 * between two forked processes, every byte checked.
 *
 * The plugin is reached only through the ncclNetPlugin_vN table, with the
 * ABI harness's flattening layer (tests/abi/harness_bind.c: h_init, h_isend,
 * ...) and its child helpers (tests/abi/harness_child.c: h_spawn,
 * h_wait_children, h_pattern_*).  What is NCCL's and not the harness's
 * lives here:
 *
 *   replay_util.c   the two processes: control pipes, connection set-up
 *                   (listen / connect / accept loops returning NULL), the
 *                   message contents, the seeded RNG, the shared match log.
 *   replay_proxy.c  the proxy: send subs and grouped receive ops with
 *                   NCCL's counters (posted / transmitted / received /
 *                   done), NCCL_STEPS slots, maxDepth, isend retried while
 *                   it returns NULL, grouped irecv with tags, test() with
 *                   NCCL's zeroed sizes array, iflush and irecvConsumed.
 *   case_*.c        the patterns (the cmocka tests).
 *
 * Everything that touches the plugin runs in children; a child reports
 * through its exit status (H_CHECK prints what failed, with the plugin's
 * last warning, and exits 1).
 */
#ifndef RW_TEST_NCCL_REPLAY_H
#define RW_TEST_NCCL_REPLAY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

/* --- NCCL's constants (src/include/device.h, src/transport/net.cc) -------- */

#define RP_STEPS	   8			    /* NCCL_STEPS */
#define RP_SHARED_STEPS	   16			    /* NCCL_SHARED_STEPS */
#define RP_BUFFSIZE	   (4u << 20)		    /* DEFAULT_BUFFSIZE, Simple */
#define RP_STEP_BYTES	   (RP_BUFFSIZE / RP_STEPS) /* stepSize: 512 KiB */
#define RP_MAX_SUBS	   8			    /* tags one test here groups */
#define RP_MAX_REQUESTS	   32			    /* NCCL_NET_MAX_REQUESTS */
#define RP_PROXY_SIZES	   64			    /* NCCL_PROXY_MAX_SUBS (MAXCHANNELS) */
#define RP_MAX_CH	   8			    /* channels per peer pair */
#define RP_GUARD	   0xee			    /* receive-buffer bytes past a message */
#define RP_GUARD_CHECK	   4096			    /* guard bytes checked past a message */
#define RP_STEP_TIMEOUT_MS 60000		    /* no progress at all for this long: hang */

/* --- the run (test_nccl_replay.c) ------------------------------------------ */

enum rp_transport { RP_SOCKET, RP_SHM, RP_AUTO, RP_IB };

extern enum rp_transport rp_transport;
extern const char *rp_transport_name;
extern uint64_t rp_seed; /* printed with every failure */

/* --- children (replay_util.c) -------------------------------------------- */

/* Two children, A and B, and two pipes between them (plus one from each to
 * the parent for the tests that kill a child). */
struct rp_pair {
	int version;
	int a_to_b[2], b_to_a[2];
	int a_to_parent[2], b_to_parent[2];
	int parent_to_a[2], parent_to_b[2];
	void *arg; /* the case's parameters */
};

/* In a child: its end of the control pipes. */
struct rp_ctl {
	int in, out;	/* from / to the peer */
	int parent_in;	/* from the parent */
	int parent_out; /* to the parent */
	char name;	/* 'A' or 'B' */
	struct rp_pair *pair;
};

typedef void (*rp_child_fn)(struct rp_ctl *ctl);

void rp_pair_init(struct rp_pair *p, int version, void *arg);
/** Fork A and B; returns their pids.  The parent keeps only its pipes. */
void rp_pair_spawn(struct rp_pair *p, rp_child_fn a, rp_child_fn b, pid_t pids[2]);
/** Spawn, then wait for both to exit 0 (the harness's deadline). */
void rp_pair_run(struct rp_pair *p, rp_child_fn a, rp_child_fn b, const char *what);
void rp_pair_close_parent(struct rp_pair *p);

void rp_ctl_send(int fd, const void *buf, size_t len);
/** Blocks up to RP_STEP_TIMEOUT_MS. */
void rp_ctl_recv(int fd, void *buf, size_t len);
/** Non-blocking: 1 and the message when one is there, else 0. */
int rp_ctl_try_recv(int fd, void *buf, size_t len);
/** A one-byte rendezvous with the peer (both call it). */
void rp_ctl_sync(struct rp_ctl *ctl);

/** dlopen, bind vN, init, devices, properties (h_child_setup); returns
 *  the properties of device 0. */
void rp_child_setup(int version, void **ctx, struct h_props *props);

/* --- connections ----------------------------------------------------------- */

/* nch send comms to the peer and nch recv comms from it, set up the way
 * NCCL's proxy does: listen, ship the handle, then connect and accept in
 * one loop that calls each until it returns a comm (NULL many times). */
struct rp_link {
	int nch;
	void *send[RP_MAX_CH];
	void *recv[RP_MAX_CH];
	uint32_t connect_nulls, accept_nulls; /* NULL comms before the last */
};

void rp_link_open(struct rp_ctl *ctl, void *ctx, int nch, struct rp_link *l);
void rp_link_close(struct rp_link *l);

/* --- contents ---------------------------------------------------------------- */

/** The seed of message k of stream (conn, tag). */
uint64_t rp_msg_seed(uint32_t conn, int tag, uint32_t k);
void *rp_alloc(size_t len);
uint64_t rp_rand(uint64_t *state);
/** Uniform in [0, n). */
uint32_t rp_rand_below(uint64_t *state, uint32_t n);

/* --- the shared match log (checked by the parent after the run) ------------ */

#define RP_LOG_MAX 16384

struct rp_log_post {
	uint8_t n;
	int8_t tags[RP_MAX_SUBS];
};

/* One per shared comm: the receiver appends each grouped irecv the plugin
 * took, the sender each isend it took; nothing else writes. */
struct rp_match_log {
	uint32_t nposts, naccepts;
	struct rp_log_post posts[RP_LOG_MAX];
	int8_t accepts[RP_LOG_MAX];
	uint32_t nulls;	 /* isend calls that returned NULL */
	uint32_t shared; /* set by the receiver: several tags shared this comm */
};

/** n logs, MAP_SHARED and zeroed: the children's writes reach the parent. */
struct rp_match_log *rp_log_create(int n);
void rp_log_destroy(struct rp_match_log *logs, int n);
/**
 * NCCL's IB rule (src/transport/net_ib/p2p.cc ncclIbIsend): an isend with
 * tag t is taken only into the oldest receive that still has a buffer, and
 * only if that receive has a free buffer with tag t.  Fails the cmocka test
 * (parent side) naming the first send that broke it.
 */
void rp_log_check(const struct rp_match_log *log, const char *what);

/* --- the proxy (replay_proxy.c) ---------------------------------------------- */

/* Message sizes: the same function on both sides. */
typedef size_t (*rp_size_fn)(const void *plan, uint32_t conn, int tag, uint32_t k);

/* How a sub or op is scheduled: each progress call acts with probability
 * 1/every (1 = every call), standing for a GPU that fills or drains
 * buffers on its own clock. */
struct rp_sched {
	uint64_t rng;
	uint32_t every;
};

/* One sender (NCCL: a sub of a send op; its tag is its rank, tpRank). */
struct rp_send_sub {
	void *comm, *mh;
	unsigned char *slots; /* RP_STEPS x cap */
	size_t cap;
	uint32_t conn;
	int tag;
	uint32_t total;	      /* messages */
	uint32_t depth;	      /* in flight at most (NCCL: maxDepth) */
	uint32_t posted;      /* filled by "the GPU" */
	uint32_t transmitted; /* taken by isend */
	uint32_t done;	      /* completed by test */
	void *req[RP_STEPS];
	size_t size[RP_STEPS];
	uint32_t nulls; /* isend returned NULL */
	struct rp_sched sched;
	struct rp_match_log *log;
	const void *plan;
	rp_size_fn size_of;
};

/* One receiving sub inside an op (NCCL: its tag is tpRemoteRank). */
struct rp_recv_sub {
	int tag;
	uint32_t nsteps;
	uint32_t first_k;     /* stream index of step 0 */
	uint32_t done;	      /* consumed by "the GPU" */
	unsigned char *slots; /* RP_STEPS x cap */
	void *mh;
};

/* A request the op has in flight: which subs, which messages. */
struct rp_recv_req {
	void *req, *flush;
	int n;
	int sub[RP_MAX_SUBS];
	uint32_t step;
	size_t total; /* bytes received */
};

/* One receive op on one recv comm (NCCL: a ncclProxyArgs with nsubs subs
 * sharing netRecvComm, grouped by maxRecvs). */
struct rp_recv_op {
	void *comm;
	uint32_t conn;
	int nsubs;
	struct rp_recv_sub subs[RP_MAX_SUBS];
	int group_size; /* maxRecvs */
	uint32_t depth; /* maxDepth */
	size_t cap;
	/* per group (index = first sub / group_size): NCCL's subGroup
	 * counters, posted >= received >= flushed >= consumed */
	uint32_t g_posted[RP_MAX_SUBS], g_received[RP_MAX_SUBS];
	uint32_t g_flushed[RP_MAX_SUBS], g_consumed[RP_MAX_SUBS];
	struct rp_recv_req g_req[RP_MAX_SUBS][RP_STEPS];
	int flush;	/* call iflush after a receive, as for GPU memory */
	uint32_t ndone; /* subs finished */
	struct rp_sched sched;
	struct rp_match_log *log;
	const void *plan;
	rp_size_fn size_of;
	uint32_t *outstanding; /* the comm's requests in flight (<= 32) */
};

/** NCCL's maxDepth for an op of nsubs subs on shared buffers. */
uint32_t rp_max_depth(int nsubs);

void rp_send_sub_init(struct rp_send_sub *s, void *comm, void *mh, unsigned char *slots, size_t cap,
		      uint32_t conn, int tag, uint32_t total, uint32_t depth);
/** sendProxyProgress for one sub: 1 if it did something. */
int rp_send_progress(struct rp_send_sub *s);
int rp_send_finished(const struct rp_send_sub *s);

void rp_recv_op_init(struct rp_recv_op *op, void *comm, uint32_t conn, int max_recvs, size_t cap,
		     uint32_t *outstanding);
/** Adds a sub; slots (RP_STEPS x cap) and mh are the caller's. */
void rp_recv_op_add(struct rp_recv_op *op, int tag, uint32_t nsteps, uint32_t first_k,
		    unsigned char *slots, void *mh);
/** Call after the last add: NCCL's maxDepth for this op. */
void rp_recv_op_start(struct rp_recv_op *op);
/** recvProxyProgress for one op: 1 if it did something. */
int rp_recv_progress(struct rp_recv_op *op);
int rp_recv_finished(const struct rp_recv_op *op);

/** Back off when a whole round did nothing; fails after RP_STEP_TIMEOUT_MS
 *  without progress. */
void rp_idle(int progressed, uint64_t *last_progress_ms, unsigned *spins, const char *what);

/* --- NCCL's step pipeline, both directions of every channel (case_pipeline.c) - */

/* What each direction of each channel carries: NCCL ops of nbytes each, cut
 * into Simple-protocol steps of RP_STEP_BYTES x slice (sliceSteps), at most
 * RP_STEPS / slice requests in flight, consumed by "the GPU" on a random
 * clock.  recv_delay_ms holds the first receive back, so sends come first. */
struct rp_pipe_spec {
	int nops;
	size_t nbytes[8];
	int slice;	   /* 1 (p2p, rings' slices) or 2 (allreduce's) */
	int flush;	   /* iflush after each receive, as for GPU memory */
	int recv_delay_ms; /* receives start this late */
};

struct rp_pipes;

/** Registers buffers on every comm of the links; rank is this process's
 *  (its sends' tag; the peer's is 1 - rank).  conn_base keeps streams of
 *  successive runs apart. */
struct rp_pipes *rp_pipes_start(struct rp_link *const *links, int nlinks, uint32_t conn_base,
				int rank, const struct rp_pipe_spec *spec);
/** One round of the proxy's loop over every channel; 1 if anything moved. */
int rp_pipes_progress(struct rp_pipes *p);
int rp_pipes_finished(const struct rp_pipes *p);
/** Deregisters and frees (after finished). */
void rp_pipes_end(struct rp_pipes *p);
/** start, progress until finished (bounded), end. */
void rp_pipes_run(struct rp_link *const *links, int nlinks, uint32_t conn_base, int rank,
		  const struct rp_pipe_spec *spec, const char *what);

/* --- the cases (case_*.c) ---------------------------------------------------- */

void rp_case_grouped_scripted(void **state);
void rp_case_grouped_random(void **state);
void rp_case_grouped_legacy(void **state);
void rp_case_pipeline(void **state);
void rp_case_pipeline_legacy(void **state);
void rp_case_channels(void **state);
void rp_case_lifecycle(void **state);
void rp_case_connect_busy(void **state);
void rp_case_peer_killed_recv(void **state);
void rp_case_peer_killed_send(void **state);
void rp_case_peer_closed_recv(void **state);
void rp_case_peer_closed_send(void **state);

#endif /* RW_TEST_NCCL_REPLAY_H */
