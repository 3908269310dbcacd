/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Objects of the ib transport, shared by its files:
 *   ib_verbs.c  libibverbs by dlopen/dlvsym: the function table, port query
 *   ib_dev.c    HCAs and ports: filter, GID choice, properties, GPUDirect
 *               detection, the async-event thread
 *   ib_net.c    create/destroy, the ops table, devices, listen, set-up
 *               address
 *   ib_conn.c   listeners, connect/accept state machines (TCP set-up)
 *   ib_comm.c   comm resources, QPs to RTS, close
 *   ib_mr.c     the registration cache, reg_mr/reg_mr_dmabuf/dereg_mr
 *   ib_data.c   isend/irecv/iflush/test: CTS matching (NCCL's rule), pieces,
 *               completions, failed comms
 *   ib_util.c   pure helpers and the live-object counters (ib.h)
 *
 * Ownership.  The rw_ib_net owns the HCAs (context, PD, registration cache,
 * async thread) and every listener and comm; a closed comm or listener
 * keeps a small shell (its rw_obj closed, transport/base/rw_base.h) on one
 * of the net's graveyards, so a late call on it gets -EBADF, until
 * rw_net_destroy(); once RW_GRAVE_MAX shells of a type are kept, a new
 * object reuses the oldest.  A comm owns its QPs, CQ, FIFO or CTS staging
 * area and rw_net_mr handles; close frees them.  Its request slab stays
 * with the shell (a late test() reads a free request).
 *
 * Threads.  One comm's data path is driven by one thread at a time (the
 * caller's); reg_mr/dereg_mr may run beside it (the cache has its lock, a
 * comm's list of handles has the comm's lock).  The net's lists have the
 * net's lock.  Each HCA has one async-event thread that only logs and
 * flags ports down.
 */
#ifndef RW_IB_INTERNAL_H
#define RW_IB_INTERNAL_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include "common/rw_common.h"
#include "common/rw_log.h"
#include "transport/base/rw_base.h"
#include "transport/ib/ib.h"
#include "transport/ib/ib_live.h"
#include "transport/ib/ib_proto.h"
#include "transport/rw_net.h"
#include "transport/tcp/rw_tcp.h"

#define RW_IB_MAX_HCAS	  16
#define RW_IB_MAX_DEVS	  32
#define RW_IB_MAX_GIDS	  128
#define RW_IB_SQ_DEPTH	  512	       /* send WRs per QP */
#define RW_IB_RQ_DEPTH	  512	       /* receive WRs per QP (receive side) */
#define RW_IB_MAX_PIECE	  (1ull << 30) /* bytes of one WRITE */
#define RW_IB_MIN_PIECE	  (32u << 10)  /* smaller sends are not split */
#define RW_IB_PIECE_ALIGN 128
#define RW_IB_MAX_MSG	  ((size_t)(RW_IB_MAX_PIECES * RW_IB_MAX_PIECE))
#define RW_IB_MAX_COMMS	  65536
#define RW_IB_MAX_CANDS	  64			 /* accepted sockets still in set-up */
#define RW_IB_REQS	  (2 * RW_IB_FIFO_SLOTS) /* requests per comm */
#define RW_IB_ADDRSTRLEN  RW_TCP_ADDRSTRLEN
#define RW_IB_GIDSTRLEN	  48

/* Object kinds (struct rw_obj), checked on every entry point. */
enum rw_ib_magic {
	RW_IB_LISTEN_MAGIC = 0x4c424952, /* open listener */
	RW_IB_SEND_MAGIC = 0x53424952,	 /* send comm */
	RW_IB_RECV_MAGIC = 0x52424952,	 /* recv comm */
	RW_IB_MR_MAGIC = 0x4d424952,
	RW_IB_REQ_MAGIC = 0x51424952,
};

/* --- libibverbs (ib_verbs.c) --------------------------------------------------- */

/** The library's functions, resolved with their symbol versions. */
struct rw_ibv {
	void *lib;
	char path[RW_PARAM_STR_MAX];
	/* IBVERBS_1.1, all required */
	struct ibv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	int (*get_async_event)(struct ibv_context *ctx, struct ibv_async_event *ev);
	void (*ack_async_event)(struct ibv_async_event *ev);
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
	int (*query_port_compat)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
	int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context,
				    struct ibv_comp_channel *channel, int vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	int (*destroy_qp)(struct ibv_qp *qp);
	const char *(*event_type_str)(enum ibv_event_type type);
	const char *(*wc_status_str)(enum ibv_wc_status status);
	int (*fork_init)(void);
	/* optional (NULL when the library is older) */
	enum ibv_fork_status (*is_fork_initialized)(void); /* 1.13 */
	struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
				       unsigned int access); /* 1.8 */
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t len,
					uint64_t iova, int fd, int access); /* 1.12 */
	int (*query_gid_ex)(struct ibv_context *ctx, uint32_t port, uint32_t index,
			    struct ibv_gid_entry *entry, uint32_t flags,
			    size_t entry_size); /* 1.11 */
};

/**
 * dlopen path and resolve every symbol with its version.
 * \param[out] v set only on success.  \param[out] why on failure.
 * \return 0, -ENOENT (cannot open), -ENOSYS (a required symbol is missing).
 */
int rw_ibv_load(const char *path, struct rw_ibv *v, char *why, size_t why_len);
void rw_ibv_unload(struct rw_ibv *v);
/** ibv_query_port the way the inline does it, without linking. 0 or errno value. */
int rw_ibv_query_port(const struct rw_ibv *v, struct ibv_context *ctx, uint8_t port,
		      struct ibv_port_attr *attr);
/** A failed completion's status as -errno for rw_net callers. */
int rw_ibv_status_errno(enum ibv_wc_status status);
const char *rw_ibv_mtu_str(enum ibv_mtu mtu);

/* --- HCAs, ports, GPUDirect (ib_dev.c) ---------------------------------------- */

enum rw_ib_gdr {
	RW_IB_GDR_OFF,
	RW_IB_GDR_PEERMEM, /* nvidia-peermem: ibv_reg_mr on device pointers */
	RW_IB_GDR_DMABUF,  /* ibv_reg_dmabuf_mr with a dma-buf fd from CUDA */
};

struct rw_ib_reg;

/** One opened HCA: context, PD, registration cache, async thread. */
struct rw_ib_hca {
	struct rw_ib_net *net;
	char name[IBV_SYSFS_NAME_MAX];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	uint64_t guid;	/* host order */
	char *pci_path; /* NULL when not PCI */
	enum rw_ib_gdr gdr;
	int access; /* flags of every registration */
	pthread_t async;
	int stop_fd; /* eventfd that stops the async thread */
	bool async_started;
	atomic_bool async_running; /* the thread reached its loop (async_start waits) */
	pthread_mutex_t reg_lock;
	struct rw_ib_reg **regs; /* sorted by start address */
	int nregs, regs_cap;
};

/** One active port: one rw_net device. */
struct rw_ib_dev {
	struct rw_ib_hca *hca;
	char name[IBV_SYSFS_NAME_MAX + 8];
	uint8_t port;
	int link_layer;
	bool grh_required; /* the port takes no address without a GRH (IBV_QPF_GRH_REQUIRED) */
	uint16_t lid;
	enum ibv_mtu mtu;
	int gid_index;
	union ibv_gid gid;
	char gid_str[RW_IB_GIDSTRLEN];
	int speed_mbps;
	atomic_bool port_down; /* set by the async thread */
};

/**
 * Open the devices the config selects; fills net->hcas and net->devs.
 * \return 0, or -ENODEV with why set (nothing selected, no active port).
 */
int rw_ib_devs_open(struct rw_ib_net *net, char *why, size_t why_len);
void rw_ib_devs_close(struct rw_ib_net *net);
void rw_ib_dev_props(const struct rw_ib_dev *d, struct rw_net_props *props);

/* --- the transport instance (ib_net.c) ------------------------------------------ */

struct rw_ib_net {
	struct rw_net base;
	struct rw_ibv v;
	pthread_mutex_t lock; /* guards the lists */
	struct rw_list listeners, comms;
	struct rw_grave dead_listeners, dead_comms; /* shells of closed ones */
	struct rw_list connecting;		    /* connects under way */
	int nhcas;
	struct rw_ib_hca *hcas[RW_IB_MAX_HCAS];
	int ndev;
	struct rw_ib_dev devs[RW_IB_MAX_DEVS];
	struct sockaddr_storage boot; /* set-up address (port 0) */
	char boot_str[RW_IB_ADDRSTRLEN];
	uint8_t ib_timeout, retry_cnt, sl;
	int tc; /* RINGWAY_IB_TC; -1: the communicator's (connect_tc), else 0 */
	int nqps;
};

static inline struct rw_ib_net *rw_ib_net_from(struct rw_net *n)
{
	return rw_container_of(n, struct rw_ib_net, base);
}

/* --- listener and set-up (ib_conn.c) -------------------------------------------- */

/** An accepted TCP connection still in the set-up handshake. */
struct rw_ib_cand {
	struct rw_list link;
	int fd;
	int state; /* enum in ib_conn.c */
	uint64_t deadline_ms;
	char peer[RW_IB_ADDRSTRLEN];
	struct rw_ib_conn_info theirs, mine;
	size_t done;
	struct rw_ib_comm *comm;
};

struct rw_ib_listen {
	struct rw_net_listen base;
	struct rw_obj obj;   /* RW_IB_LISTEN_MAGIC */
	struct rw_list link; /* net->listeners, then dead_listeners */
	struct rw_ib_net *net;
	int dev;
	int fd;
	uint64_t nonce;
	char addr[RW_IB_ADDRSTRLEN];
	int ncands;
	struct rw_list cands;
};

/** A connect under way, keyed by (dev, handle). */
struct rw_ib_connect {
	struct rw_list link;
	int dev;
	struct rw_ib_handle h;
	int state; /* enum in ib_conn.c */
	int fd;
	uint64_t deadline_ms;
	char peer[RW_IB_ADDRSTRLEN];
	struct rw_ib_conn_info theirs, mine;
	size_t done;
	struct rw_ib_comm *comm;
};

/* --- comms, registrations, requests ----------------------------------------------- */

/** What the wr_id of a work request names (low 3 bits). */
enum rw_ib_wr_kind {
	RW_IB_WR_DATA = 1,  /* a piece of a send: upper bits are the request */
	RW_IB_WR_CTRL = 2,  /* a CTS write or an error notice */
	RW_IB_WR_RECV = 3,  /* a receive WR for immediates */
	RW_IB_WR_FLUSH = 4, /* a flush READ: upper bits are the request */
};

enum rw_ib_req_kind {
	RW_IB_REQ_SEND,
	RW_IB_REQ_RECV,
	RW_IB_REQ_FLUSH,
};

struct rw_ib_req {
	struct rw_net_req base;
	struct rw_obj obj; /* RW_IB_REQ_MAGIC: free in the slab, or open */
	enum rw_ib_req_kind kind;
	struct rw_ib_req *next; /* the send queue */
	int rc;			/* an error of this request alone */
	int pending;		/* completions still to come */
	uint32_t seq;
	/* send */
	void *data;
	size_t size;
	int tag;
	uint32_t lkey;
	bool matched; /* its CTS entry was taken (always, once handed out) */
	/* receive */
	int n;
	int left;    /* entries not yet complete */
	bool posted; /* its CTS write went out */
	size_t cap[RW_NET_MAX_RECVS];
	size_t got_bytes[RW_NET_MAX_RECVS];
	uint8_t pieces[RW_NET_MAX_RECVS];
	uint8_t got[RW_NET_MAX_RECVS];
};

struct rw_ib_comm {
	struct rw_net_comm base;
	struct rw_obj obj;   /* SEND or RECV; closed: a shell */
	struct rw_list link; /* net->comms, then dead_comms */
	struct rw_ib_net *net;
	struct rw_ib_dev *dev;
	int fd;			     /* TCP: set-up, then the liveness probe */
	char peer[RW_IB_ADDRSTRLEN]; /* the peer's TCP address */
	char peer_gid[RW_IB_GIDSTRLEN];
	uint16_t peer_lid;
	uint8_t tc; /* the QPs' traffic class: the connecting side's choice */
	struct ibv_cq *cq;
	int nqps;
	struct ibv_qp *qps[RW_IB_MAX_QPS];
	uint32_t rqpn[RW_IB_MAX_QPS];
	int sq_used[RW_IB_MAX_QPS + 1]; /* [nqps]: the flush QP */
	int rq_posted[RW_IB_MAX_QPS];
	int rr; /* next QP for a one-piece send */
	uint32_t psn;
	enum ibv_mtu mtu;
	int failed;	      /* -errno once the connection is unusable */
	atomic_int async_err; /* -errno: the NIC reported a QP or CQ error (async thread) */
	bool patient;	      /* recv: receives wait for their message unbounded */
	uint64_t progress_ms; /* last sign of life from the peer (or of all done) */
	uint64_t life_ms;     /* last sign of life from the peer, only */
	uint64_t gone_ms;     /* set-up connection first seen closed; 0: not yet */
	uint64_t probe_ms;    /* last liveness probe */
	int npending;	      /* requests handed out, not yet done */
	int nsends;	      /* of which sends */
	pthread_mutex_t mr_lock;
	struct rw_list mrs;  /* rw_ib_mr handles of this comm */
	struct rw_slab reqs; /* RW_IB_REQS of them; kept with the shell */
	/* send side */
	struct rw_ib_cts *fifo; /* [RW_IB_FIFO_SLOTS][RW_NET_MAX_RECVS] */
	struct ibv_mr *fifo_mr;
	uint32_t cts_seq;	/* the CTS slot of the oldest receive not fully matched */
	uint32_t cts_seen;	/* the last slot counted as a sign of life */
	uint8_t slot_used;	/* entries of that slot taken */
	uint64_t wait_since_ms; /* isend has answered "not now" since; 0: it took */
	uint64_t wait_last_ms;	/* the last "not now" */
	/* receive side */
	struct rw_ib_cts *stage; /* CTS entries, as written to the peer */
	struct ibv_mr *stage_mr;
	uint64_t rfifo_addr;
	uint32_t rfifo_rkey;
	uint32_t recv_seq; /* the last receive's sequence number */
	int nrecvs;	   /* receive requests in flight */
	struct rw_ib_req *rreqs[RW_IB_FIFO_SLOTS];
	struct ibv_qp *flush_qp; /* GPUDirect receives: loopback READs */
	struct ibv_mr *flush_mr;
	/* the flush READs' target: a page of its own, as the FIFO and the
	 * staging are, since with fork support on (ibv_fork_init) a
	 * registration keeps its whole pages from fork()'s children */
	uint64_t *flush_buf;
};

static inline struct rw_ib_comm *rw_ib_comm_from(struct rw_net_comm *c)
{
	return rw_container_of(c, struct rw_ib_comm, base);
}

/** A registration of the cache (one verbs MR, shared). */
struct rw_ib_reg {
	uintptr_t start, end;
	int type;
	int refs;
	struct ibv_mr *mr;
};

/** What reg_mr hands out. */
struct rw_ib_mr {
	struct rw_net_mr base;
	struct rw_obj obj;     /* RW_IB_MR_MAGIC */
	struct rw_list link;   /* comm->mrs */
	struct rw_ib_reg *reg; /* NULL for dma-buf registrations */
	struct ibv_mr *own;    /* dma-buf: this handle's own MR */
	int type;
	uint32_t lkey, rkey;
};

/* ib_comm.c */
/** A comm with its CQ, QPs in INIT, and FIFO (send) or CTS staging and
 *  flush QP (receive).  \param[out] out set only on success. */
int rw_ib_comm_new(struct rw_ib_net *net, int dev, bool send, int nqps, const char *peer,
		   struct rw_ib_comm **out);
/** Free a comm that was never handed out. */
void rw_ib_comm_discard(struct rw_ib_comm *c);
/** Free a comm's resources and keep its shell on net->dead_comms. */
void rw_ib_comm_bury(struct rw_ib_net *net, struct rw_ib_comm *c, bool listed);
/** This side's set-up record. */
void rw_ib_info_fill(const struct rw_ib_comm *c, uint64_t nonce, struct rw_ib_conn_info *m);
/** NULL when the peer's record t fits (c may be NULL before the comm exists),
 *  else what is wrong with it. */
const char *rw_ib_info_check(const struct rw_ib_comm *c, const struct rw_ib_conn_info *t,
			     uint64_t nonce);
/* The loopback QP iflush reads back through (after the data QPs). */
#define RW_IB_FLUSH_QPI RW_IB_MAX_QPS

/* ib_cq.c: the request slab and the comm's completions. */
struct rw_ib_req *rw_ib_req_get(struct rw_ib_comm *c, enum rw_ib_req_kind kind);
void rw_ib_req_put(struct rw_ib_comm *c, struct rw_ib_req *r);
/** Take what the comm's CQ holds; a failed work request fails the comm. */
void rw_ib_comm_poll(struct rw_ib_comm *c);
const char *rw_ib_wr_kind_str(int kind);

/**
 * Read CTS slot (RW_NET_MAX_RECVS entries, the peer writes them) for request
 * seq into e.  \return its entries (1..RW_NET_MAX_RECVS) when every one is
 * whole (seq and check match), 0 when not (yet), -EPROTO when the first
 * entry is whole but counts no or too many entries.  Pure; not logged.
 */
int rw_ib_cts_parse(const struct rw_ib_cts *slot, uint32_t seq, struct rw_ib_cts *e);
/** Every QP of c to RTS towards the peer's record; receive WRs posted. */
int rw_ib_comm_connect_qps(struct rw_ib_comm *c, const struct rw_ib_conn_info *t);
/** One INFO line: the comm is up. */
void rw_ib_comm_announce(struct rw_ib_comm *c);

/* ib_conn.c */
int rw_ib_listen(struct rw_net *net, int dev, void *handle, struct rw_net_listen **out);
int rw_ib_accept(struct rw_net_listen *l, struct rw_net_comm **out);
int rw_ib_close_listen(struct rw_net_listen *l);
int rw_ib_connect(struct rw_net *net, int dev, const void *handle, struct rw_net_comm **out);
/** connect with the communicator's traffic class (used unless RINGWAY_IB_TC is set). */
int rw_ib_connect_tc(struct rw_net *net, int dev, const void *handle, int traffic_class,
		     struct rw_net_comm **out);
int rw_ib_close_send(struct rw_net_comm *c);
int rw_ib_close_recv(struct rw_net_comm *c);
/** Free what a net still holds at destroy (listeners, connects, comms, shells). */
void rw_ib_conn_destroy_all(struct rw_ib_net *net);
/** The open comm that owns qp, for the async thread's messages; NULL when
 *  none does (closed).  Call with net->lock held. */
struct rw_ib_comm *rw_ib_comm_by_qp(struct rw_ib_net *net, const struct ibv_qp *qp);
/** The same for a completion queue. */
struct rw_ib_comm *rw_ib_comm_by_cq(struct rw_ib_net *net, const struct ibv_cq *cq);
/** Post count receive WRs on QP i.  0 or -errno (logged). */
int rw_ib_post_recvs(struct rw_ib_comm *c, int i, int count);
/** Fail the comm with rc (first failure only is kept). */
void rw_ib_comm_fail(struct rw_ib_comm *c, int rc);

/* ib_mr.c */
int rw_ib_reg_mr(struct rw_net_comm *comm, void *data, size_t size, int type,
		 struct rw_net_mr **mr);
int rw_ib_reg_mr_dmabuf(struct rw_net_comm *comm, void *data, size_t size, int type,
			uint64_t offset, int fd, struct rw_net_mr **mr);
int rw_ib_dereg_mr(struct rw_net_comm *comm, struct rw_net_mr *mr);
/** Deregister every handle of a comm (at close). */
void rw_ib_mr_drop_all(struct rw_ib_comm *c);
/** The comm's own handle or NULL (checks magic and owner). */
struct rw_ib_mr *rw_ib_mr_of(struct rw_ib_comm *c, struct rw_net_mr *mr);
/** Register a transport-internal buffer outside the cache.  NULL on failure (logged). */
struct ibv_mr *rw_ib_reg_internal(struct rw_ib_dev *d, void *buf, size_t len, int access,
				  const char *what);
void rw_ib_hca_regs_free(struct rw_ib_hca *h);

/* ib_data.c */
int rw_ib_isend(struct rw_net_comm *comm, void *data, size_t size, int tag, struct rw_net_mr *mr,
		struct rw_net_req **req);
int rw_ib_irecv(struct rw_net_comm *comm, int n, void **data, const size_t *sizes, const int *tags,
		struct rw_net_mr **mrs, struct rw_net_req **req);
int rw_ib_iflush(struct rw_net_comm *comm, int n, void **data, const int *sizes,
		 struct rw_net_mr **mrs, struct rw_net_req **req);
int rw_ib_test(struct rw_net_req *req, int *done, size_t *sizes);
/** Requests of a comm: every one back to the pool (close); the pool's memory
 *  goes with the shell (rw_slab_fini). */
void rw_ib_reqs_free(struct rw_ib_comm *c);
/** An open comm of the given kind (0: either direction): 0, -EINVAL (another
 *  kind, foreign) or -EBADF (closed).  Logs nothing (ib_comm.c). */
int rw_ib_comm_check(struct rw_net_comm *base, uint32_t kind, struct rw_ib_comm **out);

/** describe (rw_net.h): kind, QPs, the first QP's number, peer (ib_describe.c). */
int rw_ib_describe(struct rw_net_comm *comm, struct rw_net_desc *desc);
/** patient (rw_net.h): a recv comm's receives wait for their message unbounded. */
int rw_ib_patient(struct rw_net_comm *comm);

#endif /* RW_IB_INTERNAL_H */
