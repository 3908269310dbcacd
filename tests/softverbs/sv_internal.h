/* SPDX-License-Identifier: Apache-2.0 */
/*
 * softverbs: an emulated RDMA provider for the real libibverbs (test code).
 *
 * libibverbs finds the emulated devices in a fake sysfs tree (SYSFS_PATH),
 * opens /dev/infiniband/uverbsN (any character device) and loads this
 * provider (RDMAV_DRIVERS=<dir>/libsoftverbs).  Every verb then runs here:
 *
 *   sv_device.c  registration, devices, contexts, device/port queries read
 *                from the same sysfs tree, async events, fault knobs, QPNs
 *   sv_verbs.c   PD, MR (lkey/rkey, bounds, access flags), CQ, the RC QP
 *                state machine, post_send/post_recv/poll_cq
 *   sv_wire.c    the "wire": one UNIX stream per QP direction between
 *                processes, the requester side, and one progress thread
 *                per context that drives it all
 *   sv_resp.c    the responder side: checks, placement, ACK/NAK/READ data
 *
 * Wire.  Every QP listens from creation on an abstract UNIX socket named by
 * the fabric and its QPN (QPNs are unique across processes: a counter file
 * in the fabric directory).  At RTR a QP connects to its destination QP's
 * socket and sends a hello naming the GID or LID it addressed; that stream
 * carries this QP's requests (WRITE, WRITE_WITH_IMM, SEND, READ) and, back,
 * the peer's responses (ACK, NAK, READ data).  The peer's requests arrive
 * on the stream the peer opened, which this QP accepted.
 *
 * Requester: post_send validates the WR (state, opcode, local keys and
 * bounds) and queues it; the progress thread (or post_send itself, when the
 * stream has room) sends header + payload straight from the registered
 * memory.  A completion is queued when the responder's ACK arrives (remote
 * placement done), or with the NAK's status.  No ACK for longer than the
 * QP's timeout x (retry_cnt + 1) gives IBV_WC_RETRY_EXC_ERR.
 *
 * Responder: the progress thread reads the header, checks the QP state,
 * the rkey, the MR's PD, the access flags and the bounds, and only then
 * receives the payload directly into the target MR.  WRITE_WITH_IMM and SEND
 * consume a receive WQE (waiting, with RNR semantics, when none is posted).
 * An access violation NAKs the requester and moves the responder QP to ERR
 * (with an IBV_EVENT_QP_ACCESS_ERR async event), as rxe does.
 *
 * Locking: one mutex per context guards every object of the context; the
 * progress thread holds it while it works, verbs hold it briefly.
 *
 * Fault knobs: SOFTVERBS_FAULTS, read when a context is opened; see
 * faults_parse() in sv_device.c and tests/softverbs/README.md.
 */
#ifndef SV_INTERNAL_H
#define SV_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sv_abi.h"

#define SV_MAX_PORTS  4
#define SV_MAX_GIDS   16
#define SV_MAX_SGE    16
#define SV_MAX_QP_WR  16384
#define SV_MAX_CQE    (1 << 20)
#define SV_MAX_INLINE 256
#define SV_MAX_MSG    (1u << 31)
#define SV_RECV_CHUNK (1u << 20) /* most payload bytes taken per readv */
/* Payloads up to this size are staged and placed after their ACK left
 * (sv_resp.c): the host never sees a small write before its requester is
 * answered. */
#define SV_ACK_FIRST_MAX 4096u
#define SV_MAGIC	 0x53567631u /* "SVv1" */
#define SV_MIN(a, b)	 ((a) < (b) ? (a) : (b))

/* Vendor error codes in completions: what exactly went wrong. */
enum sv_vendor_err {
	SV_VERR_NONE = 0,
	SV_VERR_RKEY = 0x81,	/* no MR with this rkey */
	SV_VERR_PD = 0x82,	/* MR of another PD */
	SV_VERR_ACCESS = 0x83,	/* MR lacks the remote access flag */
	SV_VERR_BOUNDS = 0x84,	/* range outside the MR */
	SV_VERR_RQ_SGE = 0x85,	/* receive WQE too small or bad lkey */
	SV_VERR_LKEY = 0x86,	/* local SGE: bad lkey, bounds or access */
	SV_VERR_TIMEOUT = 0x91, /* no ACK within timeout x (retry_cnt + 1) */
	SV_VERR_RNR = 0x92,	/* receiver not ready for too long */
	SV_VERR_FLUSH = 0xf1,	/* flushed: the QP is in the error state */
};

/* --- fault knobs (SOFTVERBS_FAULTS="name=N,...") --------------------------- */

struct sv_faults {
	long retry_exceeded; /* message N and later are never delivered */
	long remote_access;  /* message N carries a corrupt rkey */
	long conn_drop;	     /* at message N the QP's streams are closed */
	long port_down;	     /* at message N every port goes down (0: at open) */
	long mr_no_remote;   /* registration N loses its remote access flags */
	long rtr_timeout;    /* the first N moves to RTR fail with ETIMEDOUT */
	long qp_fatal;	     /* at message N the QP raises QP_FATAL and freezes */
	bool dmabuf_unsupported;
	bool placement_reverse; /* place payloads back to front, 64 B at a time */
};

/* --- device and context ------------------------------------------------- */

struct sv_port {
	int link_layer; /* IBV_LINK_LAYER_* */
	uint16_t lid;
	int ngids;
	union ibv_gid gids[SV_MAX_GIDS];
	int rate_gbps;
};

struct sv_dev {
	struct verbs_device vdev;
	char path[IBV_SYSFS_PATH_MAX]; /* $SYSFS_PATH/class/infiniband/<name> */
	int nports;
	uint64_t node_guid;
};

static inline struct sv_dev *sv_dev_of(struct ibv_device *d)
{
	return (struct sv_dev *)((char *)d - offsetof(struct sv_dev, vdev.device));
}

struct sv_qp;
struct sv_cq;
struct sv_mr;

struct sv_ctx {
	struct verbs_context vctx;
	struct sv_dev *dev;
	pthread_mutex_t lock;
	struct sv_port ports[SV_MAX_PORTS + 1]; /* 1-based */
	int async_wr;				/* write end of the async_fd pipe */
	int wake_fd;				/* eventfd: kicks the progress thread */
	int epfd;
	pthread_t thread;
	atomic_bool stop;
	atomic_bool running; /* the progress thread reached its loop */
	char fabric[IBV_SYSFS_PATH_MAX];
	uint32_t fabric_hash;
	struct sv_faults faults;
	long nmsgs;	    /* data messages sent so far (faults count them) */
	long nregs;	    /* registrations so far */
	long nrtr_timeouts; /* moves to RTR failed by rtr_timeout so far */
	bool port_down;
	/* MR table: key = index << 8 | generation */
	struct sv_mr **mrs;
	uint32_t nmrs_cap;
	uint8_t mr_gen;
	struct sv_qp *qps;	  /* list of live QPs */
	struct sv_ctx *fork_next; /* the process's contexts (sv_device.c, fork) */
};

static inline struct sv_ctx *sv_ctx_of(struct ibv_context *c)
{
	return (struct sv_ctx *)((char *)c - offsetof(struct sv_ctx, vctx.context));
}

/* --- PD, MR, CQ ------------------------------------------------------------ */

struct sv_pd {
	struct ibv_pd pd;
};

struct sv_mr {
	struct verbs_mr vmr;
	struct sv_pd *pd;
	uint64_t iova; /* what remote addresses and SGEs are relative to */
	uint64_t len;
	uint8_t *host; /* where iova lives in this process */
	int access;
	void *dmabuf_map; /* mmap of a dma-buf MR, else NULL */
	size_t dmabuf_map_len;
};

struct sv_cq {
	struct ibv_cq cq;
	struct ibv_wc *ring;
	uint32_t cap, head, count;
	bool overflowed;
};

/* --- QP ---------------------------------------------------------------------- */

/* Requester messages and responder replies on the wire (host byte order:
 * both ends are processes of one machine). */
enum sv_op {
	SV_OP_WRITE = 1,
	SV_OP_WRITE_IMM = 2,
	SV_OP_SEND = 3,
	SV_OP_READ = 4,
};

struct sv_req_hdr {
	uint8_t op;	   /* enum sv_op */
	uint8_t rnr_retry; /* the requester's, for RNR waits (7: forever) */
	uint8_t pad[2];
	uint32_t len;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t imm; /* network byte order, carried unchanged */
	uint64_t seq;
};
static_assert(sizeof(struct sv_req_hdr) == 32, "wire request header");

enum sv_rsp_type {
	SV_RSP_ACK = 1,
	SV_RSP_NAK = 2,	     /* status says why; the requester QP goes to ERR */
	SV_RSP_READ = 3,     /* len bytes of READ data follow */
	SV_RSP_RNR_WAIT = 4, /* no receive WQE yet: stop the ack timer */
};

struct sv_rsp_hdr {
	uint8_t type;	/* enum sv_rsp_type */
	uint8_t status; /* enum ibv_wc_status for a NAK */
	uint16_t pad;
	uint32_t vendor_err;
	uint64_t seq;
	uint32_t len;
	uint32_t pad2;
};
static_assert(sizeof(struct sv_rsp_hdr) == 24, "wire response header");

struct sv_hello {
	uint32_t magic;
	uint32_t src_qpn;
	uint32_t dst_qpn;
	uint8_t is_global;
	uint8_t pad;
	uint16_t dlid;
	uint8_t dgid[16];
};

enum sv_swqe_state {
	SV_SWQE_QUEUED,	 /* waiting for its turn on the stream */
	SV_SWQE_SENDING, /* header and part of the payload written */
	SV_SWQE_SENT,	 /* all written, waiting for the response */
};

struct sv_swqe {
	uint64_t wr_id;
	enum sv_op op;
	bool signaled;
	enum sv_swqe_state state;
	uint32_t len;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t imm;
	uint64_t seq;
	int nsge;
	struct ibv_sge sge[SV_MAX_SGE];
	uint8_t inline_data[SV_MAX_INLINE];
	bool is_inline;
	size_t done; /* bytes of header + payload written (or READ data read) */
	/* an error found at post time, completed in order */
	enum ibv_wc_status post_status;
	uint32_t post_verr;
};

struct sv_rwqe {
	uint64_t wr_id;
	int nsge;
	struct ibv_sge sge[SV_MAX_SGE];
};

/* Responder side of a QP: parsing the peer's requests. */
enum sv_rx_state {
	SV_RX_HDR,     /* reading a request header */
	SV_RX_PAYLOAD, /* receiving payload into the target (or discarding) */
};

/* One queued response of the responder. */
struct sv_rsp {
	struct sv_rsp_hdr hdr;
	uint8_t *data; /* READ data (owned copy) */
	size_t done;
	struct sv_rsp *next;
};

struct sv_qp {
	struct verbs_qp vqp;
	struct sv_ctx *ctx;
	struct sv_qp *next; /* ctx->qps */
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	/* attributes */
	uint8_t port;
	int access;
	uint16_t pkey_index;
	enum ibv_mtu mtu;
	uint32_t dest_qpn;
	struct ibv_ah_attr ah;
	uint32_t rq_psn, sq_psn;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	/* send queue: ring of cap.max_send_wr */
	struct sv_swqe *sq;
	uint32_t sq_cap, sq_head, sq_count; /* head: oldest outstanding */
	uint32_t sq_tx;			    /* index (from head) of the next to transmit */
	uint64_t next_seq;
	uint64_t ack_deadline_ns; /* 0: timer stopped */
	bool rnr_waiting;
	/* receive queue */
	struct sv_rwqe *rq;
	uint32_t rq_cap, rq_head, rq_count;
	/* streams */
	int lfd;    /* listener, from creation to destroy */
	int req_fd; /* ours: requests out, responses in */
	int rsp_fd; /* the peer's: requests in, responses out */
	bool req_writable, req_readable, rsp_writable, rsp_readable;
	bool link_dead; /* nothing more is delivered (fault or EOF) */
	bool frozen;	/* qp_fatal: nothing more moves or completes, no timer runs */
	/* requester: response parsing */
	struct sv_rsp_hdr in_rsp;
	size_t in_rsp_got;
	size_t in_read_got;
	/* responder: request parsing */
	enum sv_rx_state rx_state;
	struct sv_req_hdr rx_hdr;
	size_t rx_got;
	uint8_t *rx_dst; /* NULL: discard */
	bool rx_nak;	 /* answer with a NAK once the payload is drained */
	uint8_t rx_status;
	uint32_t rx_verr;
	struct sv_rwqe rx_rwqe; /* consumed receive WQE (SEND, WRITE_IMM) */
	bool rx_has_rwqe;
	uint8_t *rx_bounce; /* SEND scatter / reverse placement / small payload staging */
	bool rx_acked;	    /* its ACK left before the payload was placed */
	uint8_t rx_small[SV_ACK_FIRST_MAX]; /* rx_bounce of a small payload (no malloc) */
	bool rx_stalled_rnr;
	bool rx_rnr_sent;
	uint64_t rx_rnr_deadline_ns;
	struct sv_rsp *rsp_head, *rsp_tail;
};

static inline struct sv_qp *sv_qp_of(struct ibv_qp *q)
{
	return (struct sv_qp *)((char *)q - offsetof(struct sv_qp, vqp.qp));
}

/* --- functions shared by the files ------------------------------------------- */

/* sv_device.c */
int sv_read_port(struct sv_dev *dev, int port, struct sv_port *out);
int sv_port_state(struct sv_ctx *ctx, int port);
void sv_async_event(struct sv_ctx *ctx, uint64_t element, enum ibv_event_type type);
int sv_alloc_qpn(struct sv_ctx *ctx, uint32_t *qpn);
void sv_fault_port_down(struct sv_ctx *ctx);
uint64_t sv_now_ns(void);

/* sv_mr.c: PD and MR verbs (for sv_ctx_ops) and key lookup */
struct ibv_pd *sv_alloc_pd(struct ibv_context *context);
int sv_dealloc_pd(struct ibv_pd *ibpd);
struct ibv_mr *sv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t hca_va, int access);
struct ibv_mr *sv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
				int fd, int access);
int sv_dereg_mr(struct verbs_mr *vmr);
struct sv_mr *sv_mr_lookup(struct sv_ctx *ctx, uint32_t key);

/* sv_verbs.c */
void sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc);
void sv_qp_to_error(struct sv_qp *qp);
void sv_qp_complete_head(struct sv_qp *qp, enum ibv_wc_status status, uint32_t verr);
extern const struct verbs_context_ops sv_ctx_ops;

/* sv_wire.c */
int sv_wire_start(struct sv_ctx *ctx);
void sv_wire_stop(struct sv_ctx *ctx);
int sv_wire_listen(struct sv_qp *qp);
int sv_wire_connect(struct sv_qp *qp);
void sv_wire_close(struct sv_qp *qp);
void sv_wire_kick(struct sv_ctx *ctx);
void sv_wire_pump_tx(struct sv_qp *qp);
void sv_wire_drop_link(struct sv_qp *qp);
uint64_t sv_ack_timeout_ns(const struct sv_qp *qp);
void sv_close_stream(struct sv_ctx *ctx, int *fd);
void sv_free_responses(struct sv_qp *qp);
void sv_reset_rx(struct sv_qp *qp);

/* sv_resp.c */
void sv_resp_rx(struct sv_qp *qp);
void sv_resp_tx(struct sv_qp *qp);
void sv_resp_rnr_expired(struct sv_qp *qp);

#endif /* SV_INTERNAL_H */
