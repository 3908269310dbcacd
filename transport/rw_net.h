/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rw_net: the one internal interface for moving bytes, shaped after the NCCL
 * net ABI (v11).  Every transport (socket, shm, ib, and the auto
 * composite) implements struct rw_net_ops; the plugin's ABI adapters and
 * the ring engine call the rw_net_*() inlines below and never a transport
 * directly.
 *
 * Objects.  Each transport object starts with the generic one (first member),
 * so a transport converts back with rw_container_of(), and gives each the
 * header of transport/base/rw_base.h (kind, generation, state) that the one
 * validity check, rw_obj_check(), reads.  Closed listeners and comms keep
 * a shell on a bounded graveyard until rw_net_destroy(), requests come from
 * a slab that stays with the comm's shell: a late call on a closed or
 * completed object is an error (-EBADF), never a read of freed memory.
 *   struct rw_net         a transport instance: device list + config.
 *                         Created by the transport's create function
 *                         (rw_sock_create(), ...), freed by rw_net_destroy().
 *   struct rw_net_listen  a listening endpoint (listen -> accept).
 *   struct rw_net_comm    one direction of a connection: a send comm only
 *                         sends, a recv comm only receives.
 *   struct rw_net_mr      a memory registration on a comm.
 *   struct rw_net_req     an operation in flight (isend, irecv, iflush).
 *
 * Errors.  Every call returns 0 or a negative errno.  When a call fails, the
 * operation it would have started does not exist and its output is untouched.
 * Connection failures use -ECONNRESET, -ECONNREFUSED, -EPIPE, -ETIMEDOUT or
 * -EPROTO (peer spoke garbage) and are logged once by the transport with the
 * peer's address; misuse (bad device, closed comm, unknown mr) is -EINVAL
 * or -EBADF; size overruns are -EMSGSIZE.
 *
 * Blocking.  No call waits on a peer.  listen/connect/accept, isend/irecv and
 * test return at once; "not ready yet" is a NULL output with a 0 return
 * (connect/accept: *comm == NULL; isend/irecv: *req == NULL, try again).
 * Waits on a peer are bounded by cfg->timeout_ms: a peer that stays silent
 * that long while a request is pending fails the request.  The one
 * exception is a receive comm made patient (rw_net_patient()): its
 * receives wait for a message to begin as long as it takes, and only a
 * peer that closed, died or broke the protocol fails them.
 *
 * Matching (NCCL's IB transport, p2p.cc ncclIbIsend; every transport).
 * Receives match in posting order.  isend takes a send (returns a request)
 * only when it can be matched now: the oldest posted receive that still has
 * a free buffer has a free buffer with the send's tag; it goes there.
 * Otherwise *req = NULL ("not now"): never accept-then-drop.  Retrying a
 * NULL isend is a wait on the peer: bounded by cfg->timeout_ms, and a peer
 * that closed or died fails it.  A send larger than its buffer fails on both
 * sides (-EMSGSIZE), the sender's request included.  The exception is a
 * connection whose two ends were set to send ahead (rw_net_ahead()): there
 * every receive has one buffer, the k-th send fills the k-th receive, and
 * a send goes out at once, whether that receive was posted yet or not.
 *
 * Failed comms.  After a protocol error or a connection failure (a
 * truncation, garbage, a peer's close or death, a timeout) a comm answers
 * every later isend/irecv with the error at once, and test() fails every
 * request that had not completed; logged once, where detected.  A size
 * above max_p2p_bytes is refused with -EMSGSIZE before anything moves (and
 * leaves the comm usable).
 *
 * Threads.  Different comms may be used from different threads at once.
 * On one comm, reg_mr/dereg_mr may run concurrently with the data path
 * (isend/irecv/test); the data path of one comm is used by one thread at a
 * time (NCCL's progress thread).
 */
#ifndef RW_NET_H
#define RW_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rw_common.h"
#include "common/rw_params.h"

#define RW_NET_HANDLE_MAXSIZE	128 /* NCCL_NET_HANDLE_MAXSIZE */
#define RW_NET_MAX_REQUESTS	32  /* NCCL_NET_MAX_REQUESTS, per comm */
#define RW_NET_MAX_RECVS	8   /* most buffers one grouped irecv takes */
#define RW_NET_MAX_DEVS_PER_NIC 8   /* vProps.devs[] in the newest ABI */

/* Memory types for reg_mr (NCCL_PTR_* values). */
#define RW_PTR_HOST   0x1
#define RW_PTR_CUDA   0x2
#define RW_PTR_DMABUF 0x4

#define RW_NET_ID_UNDEF (-1) /* rail_id / plane_id unknown */

/** What a device is and can do.  Strings are owned by the rw_net and live
 *  until rw_net_destroy(). */
struct rw_net_props {
	const char *name;     /**< unique, stable device name ("eth0") */
	const char *pci_path; /**< sysfs PCI directory, NULL if not PCI */
	uint64_t guid;
	int ptr_support; /**< RW_PTR_* mask */
	int reg_is_global;
	int force_flush;
	int speed_mbps;
	int port;
	float latency_us;
	int max_comms;
	int max_recvs;	/**< most buffers per irecv, <= RW_NET_MAX_RECVS */
	int vdev_ndevs; /**< physical devices behind this one (1) */
	int vdev_devs[RW_NET_MAX_DEVS_PER_NIC];
	size_t max_p2p_bytes;
	size_t max_coll_bytes;
	int max_multi_request_size;
	int16_t rail_id; /**< RW_NET_ID_UNDEF until topology knows */
	int16_t plane_id;
};

/** What carries a comm (rw_net_describe()). */
enum rw_net_kind {
	RW_NET_KIND_UNKNOWN = 0,
	RW_NET_KIND_SOCKET = 1,
	RW_NET_KIND_SHM = 2,
	RW_NET_KIND_IB = 3,
};

/** One open comm as a transport sees it: for profiler events and messages. */
struct rw_net_desc {
	enum rw_net_kind kind;
	int nchannels;	  /**< TCP streams (socket), QPs (ib), 1 (shm) */
	uint64_t conn_id; /**< socket: fd of stream 0; shm: the connection id;
			       ib: the number of the comm's first QP */
	char peer[64];	  /**< the peer, as the transport's messages name it */
};

/**
 * Where a receive with a sink (rw_net_irecv_sink()) hands its message: put
 * is called with every byte of it once, in order, in pieces [off, off +
 * len) at src; every piece but the last starts and ends at a multiple of
 * RW_NET_SINK_ALIGN.  src is the receive's own buffer or the transport's
 * memory (valid during the call only; a peer may be writing next to it).
 * put runs inside the transport's calls on that comm (irecv, test), on the
 * caller's thread, and must not call into the transport on that comm; it
 * returns 0, or -errno, which fails the receive (and the connection).
 */
struct rw_net_sink {
	int (*put)(void *arg, size_t off, const void *src, size_t len);
	void *arg;
};

#define RW_NET_SINK_ALIGN 64

struct rw_net;
struct rw_net_listen;
struct rw_net_comm;
struct rw_net_mr;
struct rw_net_req;

/**
 * The operations of a transport.  Every slot of the ABI is filled (a
 * transport without an operation points it at an rw_net_unsupported_*()
 * stub); the slots after destroy are ringway's own and may be NULL.  Sorted
 * in the order of the NCCL net ABI so the adapters read top to bottom.
 */
struct rw_net_ops {
	const char *name; /**< "socket", "shm", "ib" */

	int (*devices)(struct rw_net *net, int *ndev);
	int (*get_properties)(struct rw_net *net, int dev, struct rw_net_props *props);
	/** Write at most RW_NET_HANDLE_MAXSIZE bytes to handle. */
	int (*listen)(struct rw_net *net, int dev, void *handle,
		      struct rw_net_listen **listen_comm);
	/** *send_comm stays NULL (and 0 is returned) until connected. */
	int (*connect)(struct rw_net *net, int dev, const void *handle,
		       struct rw_net_comm **send_comm);
	/** *recv_comm stays NULL (and 0 is returned) until a peer arrived. */
	int (*accept)(struct rw_net_listen *listen_comm, struct rw_net_comm **recv_comm);
	int (*reg_mr)(struct rw_net_comm *comm, void *data, size_t size, int type,
		      struct rw_net_mr **mr);
	int (*reg_mr_dmabuf)(struct rw_net_comm *comm, void *data, size_t size, int type,
			     uint64_t offset, int fd, struct rw_net_mr **mr);
	int (*dereg_mr)(struct rw_net_comm *comm, struct rw_net_mr *mr);
	/** *req == NULL with 0: not now (no receive takes it yet, or no
	 *  room), try again.  See "Matching". */
	int (*isend)(struct rw_net_comm *comm, void *data, size_t size, int tag,
		     struct rw_net_mr *mr, struct rw_net_req **req);
	/** n buffers (1..max_recvs) in one request; sizes are upper bounds. */
	int (*irecv)(struct rw_net_comm *comm, int n, void **data, const size_t *sizes,
		     const int *tags, struct rw_net_mr **mrs, struct rw_net_req **req);
	/** *req == NULL with 0: nothing to flush, already done. */
	int (*iflush)(struct rw_net_comm *comm, int n, void **data, const int *sizes,
		      struct rw_net_mr **mrs, struct rw_net_req **req);
	/**
	 * Sets *done; when done, writes the received sizes (n entries for a
	 * receive, 1 for a send) to sizes unless it is NULL, and frees req.
	 * An error also frees req.
	 */
	int (*test)(struct rw_net_req *req, int *done, size_t *sizes);
	/** Closing with requests in flight cancels them; never blocks. */
	int (*close_send)(struct rw_net_comm *comm);
	int (*close_recv)(struct rw_net_comm *comm);
	int (*close_listen)(struct rw_net_listen *listen_comm);
	void (*destroy)(struct rw_net *net);

	/* --- not in the NCCL ABI ---------------------------------------- */

	/** Optional (NULL: the comm is described as RW_NET_KIND_UNKNOWN): fill
	 *  desc for an open comm; never blocks, never touches the data path. */
	int (*describe)(struct rw_net_comm *comm, struct rw_net_desc *desc);
	/** Optional (NULL: none; only shm has one): memory both ends of the
	 *  connection map, *bytes of it at *addr, which the send side writes
	 *  and the receive side reads.  What it holds, and when a side may
	 *  write or read it, is the caller's protocol alone: the transport
	 *  never touches it.  Lives as long as the comm. */
	int (*window)(struct rw_net_comm *comm, void **addr, size_t *bytes);
	/** Optional with window: 0 while the connection is sound, else the
	 *  comm's error (the peer closed, failed or exited; logged once).
	 *  Never blocks; cheap enough for a poll loop. */
	int (*check)(struct rw_net_comm *comm);
	/** Optional (NULL: -ENOTSUP): from now on the receives of recv comm
	 *  wait for a message to begin without RINGWAY_TIMEOUT_MS (once bytes
	 *  of it arrived, the timeout applies again); the peer closing,
	 *  exiting or failing still fails them, and sends are not affected.
	 *  For a control channel that keeps a receive posted across the
	 *  caller's idle time and bounds its own waits.  -EINVAL on a send
	 *  comm. */
	int (*patient)(struct rw_net_comm *comm);
	/** Optional (NULL: -ENOTSUP): send ahead, set on both ends of a
	 *  connection before its first message (else -EINVAL).  Every receive
	 *  has one buffer (irecv of more: -EINVAL), message k fills receive k,
	 *  and the receiver tells the sender nothing: isend takes a send at
	 *  once, whether or not its receive was posted yet, and the receive
	 *  takes the message once it is.  The caller must post receives in the
	 *  order of the sends, each with the send's tag and room for it: a
	 *  message that breaks that fails the receiver (-EMSGSIZE when it is
	 *  too large, else -EPROTO) and, through the connection, the sender,
	 *  instead of waiting.  A receive's buffer past the message's bytes
	 *  may be written (with the next messages' first bytes).  For callers
	 *  that own both ends, as the ring engine does; never set on NCCL's
	 *  comms. */
	int (*ahead)(struct rw_net_comm *comm);
	/** Optional (NULL: -ENOTSUP): irecv of one host buffer whose message
	 *  is handed to sink (struct rw_net_sink) as it arrives, so the caller
	 *  can consume it (fold it into a sum) where the transport holds it,
	 *  with no copy out first.  data (size bytes, in mr) is where the
	 *  transport may land bytes before handing them over; what it holds
	 *  afterwards is unspecified.  Matching, sizes, errors and the done
	 *  test are irecv's; done means put has had every byte.  *sink must
	 *  stay valid until then, or until the comm is closed. */
	int (*irecv_sink)(struct rw_net_comm *comm, void *data, size_t size, int tag,
			  struct rw_net_mr *mr, const struct rw_net_sink *sink,
			  struct rw_net_req **req);
	/** Optional (NULL: connect() and the class is not used): connect() for
	 *  a communicator with a traffic class of its own (NCCL's
	 *  ncclNetCommConfig trafficClass, 0..255), which a transport with a
	 *  priority setting of its own uses where it has none configured (ib:
	 *  the QPs' traffic class, both ends of the connection). */
	int (*connect_tc)(struct rw_net *net, int dev, const void *handle, int traffic_class,
			  struct rw_net_comm **send_comm);
};

/** Base of every transport instance. */
struct rw_net {
	const struct rw_net_ops *ops;
	struct rw_config cfg; /**< copied at create; immutable */
	char label[64];	      /**< what this instance is, when ops->name says
				   too little ("auto: shm + socket"); may be "" */
};

struct rw_net_listen {
	struct rw_net *net;
};

struct rw_net_comm {
	struct rw_net *net;
};

struct rw_net_mr {
	struct rw_net_comm *comm;
};

struct rw_net_req {
	struct rw_net_comm *comm;
};

/* --- dispatch: the only way callers reach a transport ------------------- */

/** The instance's label when it has one, else the transport's name. */
static inline const char *rw_net_name(const struct rw_net *net)
{
	return net->label[0] ? net->label : net->ops->name;
}

static inline int rw_net_devices(struct rw_net *net, int *ndev)
{
	return net->ops->devices(net, ndev);
}

static inline int rw_net_get_properties(struct rw_net *net, int dev, struct rw_net_props *props)
{
	return net->ops->get_properties(net, dev, props);
}

static inline int rw_net_listen(struct rw_net *net, int dev, void *handle,
				struct rw_net_listen **listen_comm)
{
	return net->ops->listen(net, dev, handle, listen_comm);
}

static inline int rw_net_connect(struct rw_net *net, int dev, const void *handle,
				 struct rw_net_comm **send_comm)
{
	return net->ops->connect(net, dev, handle, send_comm);
}

/* connect() with the communicator's traffic class (0..255; -1 or a
 * transport without connect_tc: plain connect()). */
static inline int rw_net_connect_tc(struct rw_net *net, int dev, const void *handle,
				    int traffic_class, struct rw_net_comm **send_comm)
{
	if (traffic_class < 0 || traffic_class > 255 || !net->ops->connect_tc)
		return net->ops->connect(net, dev, handle, send_comm);
	return net->ops->connect_tc(net, dev, handle, traffic_class, send_comm);
}

static inline int rw_net_accept(struct rw_net_listen *l, struct rw_net_comm **recv_comm)
{
	return l->net->ops->accept(l, recv_comm);
}

static inline int rw_net_reg_mr(struct rw_net_comm *c, void *data, size_t size, int type,
				struct rw_net_mr **mr)
{
	return c->net->ops->reg_mr(c, data, size, type, mr);
}

static inline int rw_net_reg_mr_dmabuf(struct rw_net_comm *c, void *data, size_t size, int type,
				       uint64_t offset, int fd, struct rw_net_mr **mr)
{
	return c->net->ops->reg_mr_dmabuf(c, data, size, type, offset, fd, mr);
}

static inline int rw_net_dereg_mr(struct rw_net_comm *c, struct rw_net_mr *mr)
{
	return c->net->ops->dereg_mr(c, mr);
}

static inline int rw_net_isend(struct rw_net_comm *c, void *data, size_t size, int tag,
			       struct rw_net_mr *mr, struct rw_net_req **req)
{
	return c->net->ops->isend(c, data, size, tag, mr, req);
}

static inline int rw_net_irecv(struct rw_net_comm *c, int n, void **data, const size_t *sizes,
			       const int *tags, struct rw_net_mr **mrs, struct rw_net_req **req)
{
	return c->net->ops->irecv(c, n, data, sizes, tags, mrs, req);
}

static inline int rw_net_iflush(struct rw_net_comm *c, int n, void **data, const int *sizes,
				struct rw_net_mr **mrs, struct rw_net_req **req)
{
	return c->net->ops->iflush(c, n, data, sizes, mrs, req);
}

static inline int rw_net_test(struct rw_net_req *req, int *done, size_t *sizes)
{
	return req->comm->net->ops->test(req, done, sizes);
}

static inline int rw_net_close_send(struct rw_net_comm *c)
{
	return c->net->ops->close_send(c);
}

static inline int rw_net_close_recv(struct rw_net_comm *c)
{
	return c->net->ops->close_recv(c);
}

static inline int rw_net_close_listen(struct rw_net_listen *l)
{
	return l->net->ops->close_listen(l);
}

/**
 * What comm is (kind, channels, connection id, peer).  A transport without
 * describe fills kind RW_NET_KIND_UNKNOWN and returns -ENOTSUP.
 */
static inline int rw_net_describe(struct rw_net_comm *c, struct rw_net_desc *desc)
{
	if (!c->net->ops->describe) {
		*desc = (struct rw_net_desc){.kind = RW_NET_KIND_UNKNOWN};
		return -ENOTSUP;
	}
	return c->net->ops->describe(c, desc);
}

/** The comm's shared window (see rw_net_ops.window), or -ENOTSUP. */
static inline int rw_net_window(struct rw_net_comm *c, void **addr, size_t *bytes)
{
	if (!c->net->ops->window || !c->net->ops->check)
		return -ENOTSUP;
	return c->net->ops->window(c, addr, bytes);
}

/** Make recv comm c's receives wait for a message without a deadline
 *  (see rw_net_ops.patient), or -ENOTSUP. */
static inline int rw_net_patient(struct rw_net_comm *c)
{
	return c->net->ops->patient ? c->net->ops->patient(c) : -ENOTSUP;
}

/** Let comm c send ahead of the peer's receives, or accept messages sent
 *  so (see rw_net_ops.ahead), or -ENOTSUP. */
static inline int rw_net_ahead(struct rw_net_comm *c)
{
	return c->net->ops->ahead ? c->net->ops->ahead(c) : -ENOTSUP;
}

/** Whether recv comm c takes receives with a sink (rw_net_irecv_sink). */
static inline bool rw_net_has_sink(const struct rw_net_comm *c)
{
	return c->net->ops->irecv_sink != NULL;
}

/** A receive whose message goes to sink (see rw_net_ops.irecv_sink), or
 *  -ENOTSUP. */
static inline int rw_net_irecv_sink(struct rw_net_comm *c, void *data, size_t size, int tag,
				    struct rw_net_mr *mr, const struct rw_net_sink *sink,
				    struct rw_net_req **req)
{
	if (!c->net->ops->irecv_sink)
		return -ENOTSUP;
	return c->net->ops->irecv_sink(c, data, size, tag, mr, sink, req);
}

/** 0 while a comm with a window is sound, else its error. */
static inline int rw_net_check(struct rw_net_comm *c)
{
	return c->net->ops->check ? c->net->ops->check(c) : 0;
}

/** Frees the instance; every comm and listener must be closed first. */
static inline void rw_net_destroy(struct rw_net *net)
{
	if (net)
		net->ops->destroy(net);
}

/* Stubs for operations a transport does not have; each returns -ENOTSUP
 * and says which transport and call, once. */
int rw_net_unsupported_reg_mr_dmabuf(struct rw_net_comm *comm, void *data, size_t size, int type,
				     uint64_t offset, int fd, struct rw_net_mr **mr);
int rw_net_unsupported_iflush(struct rw_net_comm *comm, int n, void **data, const int *sizes,
			      struct rw_net_mr **mrs, struct rw_net_req **req);

/* --- transports ---------------------------------------------------------- */

/**
 * Create the TCP socket transport: discovers interfaces per
 * cfg->socket_ifname.  \param[out] out set only on success.
 * \return 0, -ENODEV when no usable interface exists, or -errno.
 */
int rw_sock_create(const struct rw_config *cfg, struct rw_net **out);

/**
 * Create the same-host transport (transport/shm.h): one device, "shm",
 * reaching listeners on this host only; host memory by shared memory and
 * cross-memory attach, device memory by CUDA IPC.
 * \param[out] out set only on success.  \return 0 or -errno.
 */
int rw_shm_create(const struct rw_config *cfg, struct rw_net **out);

/**
 * Create the transport cfg->transport names (transport/net_auto.c): socket,
 * shm, or for auto a composite that connects to a peer on this host by shm
 * and to any other by ib when this host can use it, else by socket.  ib
 * forced but unusable: the error of rw_ib_create() (transport/ib.h), logged.
 * \param[out] out set only on success.  \return 0 or -errno.
 */
int rw_net_create(const struct rw_config *cfg, struct rw_net **out);

/**
 * The transport whose comms carry net's network devices: net itself, or
 * the network transport (ib or socket) inside the auto composite (NULL when
 * it has none).  NIC fusion (transport/fuse/) makes its member connections
 * there, never on shm.
 */
struct rw_net *rw_net_wire(struct rw_net *net);

#endif /* RW_NET_H */
