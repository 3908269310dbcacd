/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin/: the NCCL net plugin shell, libnccl-net-ringway.so.
 *
 * NCCL dlopen()s the library and dlsym()s ncclNetPlugin_v6 .. _v12 (const
 * data objects defined in net_tables.c).  Each is a thin adapter: it checks its
 * arguments, converts the version's types and calls the version-independent
 * rw_plugin_*() functions below, which reach the transport only through the
 * rw_net_*() inlines of transport/rw_net.h.  rw_status_to_nccl() is the one
 * place an -errno becomes an ncclResult_t.
 *
 * State.  One struct rw_plugin per process, created by the first init under
 * a lock and destroyed when its last reference goes: it holds the immutable
 * struct rw_config, the transport instance, the cached device properties
 * and every wrapper handed to NCCL.  References: each v11/v12 context
 * (init .. finalize, one per communicator) and the one context shared by
 * every v6..v10 caller (never finalized: those ABIs have no finalize).
 *
 * Handles given to NCCL.  listenComm/sendComm/recvComm name a struct
 * rw_pcomm wrapper owned by the plugin, with its generation
 * (rw_obj_handle(), transport/base/rw_base.h); a closed wrapper is kept on
 * the plugin's graveyard (the oldest reused for a later comm once
 * RW_GRAVE_MAX are kept) until the plugin is destroyed.  Requests and
 * memory handles are the transport's own objects.  Every handle given out
 * is entered in the live set (rw_live.c) with the wrapper that owns it and
 * leaves it when it ends (test() done, deregMr, close, the last finalize),
 * so a call on a stale handle returns an error instead of touching freed
 * memory.
 *
 * Threads.  init/finalize/listen/connect/accept/close take the plugin lock;
 * the data path (isend/irecv/iflush/test) takes only the live set's lock,
 * briefly, to enter or check a handle.  devices and
 * getProperties read the process-wide plugin, which NCCL keeps alive by
 * holding a context while it calls them.
 *
 * Profiler events (rw_prof.c, include/ringway_profiler.h).  From v10 on,
 * the callback NCCL gives init is kept with the context (v11/v12) or the
 * shared one (v10); each send/recv comm copies it when made, and a start
 * event goes out for each transfer posted with a phandle, its stop when
 * test() ends the request or its comm closes.
 *
 * Logging.  With an NCCL logger, every ringway message is forwarded to it
 * with "%s"; standalone (logger NULL), messages go to stderr, filtered by
 * RINGWAY_DEBUG.  Misuse by the caller is logged once where it is found.
 */
#ifndef RW_PLUGIN_H
#define RW_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/nccl_net.h"
#include "include/ringway_profiler.h"
#include "common/rw_params.h"
#include "topo/rw_topo.h"
#include "transport/base/rw_base.h"
#include "transport/rw_net.h"

#define RW_PLUGIN_NAME "ringway" /* the tables' name: what NCCL_NET matches */

/* Largest single p2p transfer advertised: test() reports sizes as int. */
#define RW_PLUGIN_MAX_P2P_BYTES ((size_t)MAX_NET_SIZE)

struct rw_prof_comm; /* rw_prof.c */

/** A v11/v12 communicator context, or the one shared by v6..v10. */
struct rw_plugin_ctx {
	uint64_t comm_id;
	int traffic_class; /**< copied from NCCL's config; -1 = undefined */
	/** NCCL's profiler callback (v10+), or NULL.  v11/v12: set before NCCL
	 *  has the context; v10: the latest init's, read atomically. */
	ncclProfilerCallback_t prof;
	struct rw_plugin *plugin;
	struct rw_plugin_ctx *next; /**< the plugin's live contexts */
};

/** The process-wide plugin state; see the file comment. */
struct rw_plugin {
	struct rw_config cfg; /**< loaded once; immutable */
	struct rw_net *net;   /**< the transport instance */
	int ndev;
	struct rw_net_props *props;  /**< ndev entries, fixed up at create */
	struct rw_topo *topo;	     /**< the machine; NULL if discovery failed */
	int abi_version;	     /**< of the first init */
	int refs;		     /**< contexts alive (plugin lock) */
	struct rw_plugin_ctx *ctxs;  /**< v11/v12 contexts (plugin lock) */
	int legacy_ready;	     /**< a v6..v10 init ran (plugin lock) */
	struct rw_plugin_ctx legacy; /**< the context of v6..v10 */
	struct rw_pcomm *pcomms;     /**< every wrapper (plugin lock) */
	struct rw_grave pcomm_grave; /**< closed ones (plugin lock) */
};

enum rw_pcomm_kind {
	RW_PCOMM_CLOSED = 0,
	RW_PCOMM_LISTEN,
	RW_PCOMM_SEND,
	RW_PCOMM_RECV,
};

/* The object kind (transport/base/rw_base.h) of a wrapper of each kind. */
#define RW_PCOMM_OBJ(kind) (0x72770000u | (uint32_t)(kind)) /* "rw" */

/**
 * What NCCL holds as a listenComm, sendComm or recvComm: the wrapper's
 * handle (rw_pcomm_handle()), which carries its generation, so a handle of
 * a closed comm whose wrapper a newer comm reuses fails as a closed one.
 * Closed wrappers wait on the plugin's graveyard (at most RW_GRAVE_MAX,
 * then the oldest is reused).
 */
struct rw_pcomm {
	struct rw_obj obj; /**< first: the handle is its address + generation */
	struct rw_plugin *plugin;
	int dev;
	int ptr_support; /**< the device's RW_PTR_* mask */
	union {
		struct rw_net_listen *listen;
		struct rw_net_comm *comm;
	} u;
	ncclProfilerCallback_t prof_fn; /**< of the context that made it (listen:
					     passed on to accept), or NULL */
	struct rw_prof_comm *prof;	/**< event state (send/recv), or NULL;
					     kept with the wrapper */
	struct rw_pcomm *next_all;	/**< plugin->pcomms */
	struct rw_list link;		/**< plugin->pcomm_grave, once closed */
};

/* --- status (rw_status.c) -------------------------------------------------- */

/** 0 -> ncclSuccess; -errno -> the ncclResult_t NCCL expects (see .c). */
ncclResult_t rw_status_to_nccl(int rc);

/* --- lifecycle (rw_plugin.c) ------------------------------------------------ */

/**
 * v6..v10 init: create the plugin if needed and take the shared context's
 * reference (once per process; later calls only update the logger).
 * \param abi_version the ABI of the caller, for the startup message.
 * \param logger NCCL's logger, or NULL when standalone.
 * \return 0, or -errno (transport creation failed; nothing holds).
 */
int rw_plugin_init_legacy(int abi_version, ncclDebugLogger_t logger);

/**
 * v11/v12 init: a new context for one communicator (plugin created if
 * needed).  \param[out] ctx set only on success.
 * \param traffic_class NCCL's config value (-1 when the config is NULL).
 */
int rw_plugin_ctx_create(int abi_version, uint64_t comm_id, int traffic_class,
			 ncclDebugLogger_t logger, void **ctx);

/**
 * finalize: drop a context made by rw_plugin_ctx_create().  NULL is a
 * no-op (NCCL 2.28.9 calls finalize after a failed init); a pointer that is
 * not a live context is rejected without being dereferenced.  The last
 * reference destroys the plugin, closing any comm NCCL left open.
 */
int rw_plugin_ctx_destroy(void *ctx);

/** The plugin behind a live v11/v12 context (checked against the list). */
int rw_plugin_from_ctx(void *ctx, const char *call, struct rw_plugin **out);

/** The plugin for v6..v10 calls; -EINVAL if no v6..v10 init ran. */
int rw_plugin_from_legacy(const char *call, struct rw_plugin **out);

/** v10 init: the profiler callback of the shared context (NULL: none). */
void rw_plugin_set_legacy_prof(ncclProfilerCallback_t prof);
/** v11/v12 init: ctx (just made by rw_plugin_ctx_create) gets prof. */
void rw_plugin_ctx_set_prof(void *ctx, ncclProfilerCallback_t prof);

/* --- operations shared by every version (rw_adapt.c) ----------------------- */

/** Log "call: what" as misuse by the caller; returns -EINVAL. */
int rw_plugin_bad_arg(const char *call, const char *what);
int rw_plugin_devices(int *ndev);
/** Fixed-up properties of dev (strings owned by the transport). */
int rw_plugin_props(int dev, struct rw_net_props *out);
/* listen/connect: ctx is a live context (or the plugin's shared one). */
int rw_plugin_listen(struct rw_plugin_ctx *ctx, int dev, void *handle, void **listen_comm);
int rw_plugin_connect(struct rw_plugin_ctx *ctx, int dev, void *handle, void **send_comm);
int rw_plugin_accept(void *listen_comm, void **recv_comm);
int rw_plugin_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle);
/** v6/v7 regMr: int size. */
int rw_plugin_reg_mr_int(void *comm, void *data, int size, int type, void **mhandle);
int rw_plugin_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
			    void **mhandle);
int rw_plugin_dereg_mr(void *comm, void *mhandle);
/** *request is always overwritten: a request, or NULL (try again).
 *  phandle: NCCL's profiler handle (v10+), or NULL. */
int rw_plugin_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
		    void **request);
/** v6..v8 isend: int size. */
int rw_plugin_isend_int(void *send_comm, void *data, int size, int tag, void *mhandle,
			void **request);
/** phandles: n profiler handles (v10+), or NULL. */
int rw_plugin_irecv(void *recv_comm, int n, void **data, const size_t *sizes, const int *tags,
		    void **mhandles, void **phandles, void **request);
/** v6..v8 irecv: int sizes. */
int rw_plugin_irecv_int(void *recv_comm, int n, void **data, const int *sizes, const int *tags,
			void **mhandles, void **request);
int rw_plugin_iflush(void *recv_comm, int n, void **data, const int *sizes, void **mhandles,
		     void **request);
/** sizes may be NULL; received sizes that do not fit an int fail. */
int rw_plugin_test(void *request, int *done, int *sizes);
int rw_plugin_close_send(void *send_comm);
int rw_plugin_close_recv(void *recv_comm);
int rw_plugin_close_listen(void *listen_comm);

/*
 * --- ABI-typed entry points shared by several tables (net_common.c) ---------
 * Each is the exact type of a slot in every table that uses it (the device
 * handle types of v7..v12 are one type); net_tables.c adds what differs.
 */
ncclResult_t rw_abi_devices(int *ndev);
ncclResult_t rw_abi_listen_legacy(int dev, void *handle, void **listen_comm);
ncclResult_t rw_abi_listen_ctx(void *ctx, int dev, void *handle, void **listen_comm);
ncclResult_t rw_abi_connect_v6(int dev, void *handle, void **send_comm);
/* connect of the legacy context with a communicator's traffic class (v10). */
ncclResult_t rw_abi_connect_tc(int dev, int traffic_class, void *handle, void **send_comm);
ncclResult_t rw_abi_connect_legacy(int dev, void *handle, void **send_comm,
				   ncclNetDeviceHandle_v7_t **dev_comm);
ncclResult_t rw_abi_connect_ctx(void *ctx, int dev, void *handle, void **send_comm,
				ncclNetDeviceHandle_v7_t **dev_comm);
ncclResult_t rw_abi_accept_v6(void *listen_comm, void **recv_comm);
ncclResult_t rw_abi_accept(void *listen_comm, void **recv_comm,
			   ncclNetDeviceHandle_v7_t **dev_comm);
ncclResult_t rw_abi_reg_mr_int(void *comm, void *data, int size, int type, void **mhandle);
ncclResult_t rw_abi_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle);
ncclResult_t rw_abi_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
				  int fd, void **mhandle);
ncclResult_t rw_abi_dereg_mr(void *comm, void *mhandle);
ncclResult_t rw_abi_isend_int(void *send_comm, void *data, int size, int tag, void *mhandle,
			      void **request);
ncclResult_t rw_abi_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
			  void **request);
ncclResult_t rw_abi_isend_ph(void *send_comm, void *data, size_t size, int tag, void *mhandle,
			     void *phandle, void **request);
ncclResult_t rw_abi_irecv_int(void *recv_comm, int n, void **data, int *sizes, int *tags,
			      void **mhandles, void **request);
ncclResult_t rw_abi_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
			  void **mhandles, void **request);
ncclResult_t rw_abi_irecv_ph(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
			     void **mhandles, void **phandles, void **request);
ncclResult_t rw_abi_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
			   void **request);
ncclResult_t rw_abi_test(void *request, int *done, int *sizes);
ncclResult_t rw_abi_close_send(void *send_comm);
ncclResult_t rw_abi_close_recv(void *recv_comm);
ncclResult_t rw_abi_close_listen(void *listen_comm);
ncclResult_t rw_abi_finalize(void *ctx);

/* --- wrappers (rw_plugin.c) -------------------------------------------------- */

/** A wrapper for a new comm of plugin p (plugin lock taken inside). */
int rw_pcomm_alloc(struct rw_plugin *p, enum rw_pcomm_kind kind, int dev, struct rw_pcomm **out);
/** Mark closed and bury; the transport object is already gone. */
void rw_pcomm_retire(struct rw_pcomm *pc);
/** What NCCL is given for pc (its address and generation). */
void *rw_pcomm_handle(struct rw_pcomm *pc);
/**
 * handle as a wrapper of the given kind, or NULL when it is NULL, not a
 * ringway wrapper, closed (or of a closed comm whose wrapper was reused),
 * or of another kind.  Takes only the live set's lock.
 */
struct rw_pcomm *rw_pcomm_check(void *handle, enum rw_pcomm_kind kind);

/* --- profiler events (rw_prof.c) ------------------------------------------- */

/* The values of RINGWAY_PROFILER_EVENTS (cfg.profiler_events). */
enum rw_prof_format {
	RW_PROF_RINGWAY = 0, /**< ringwayProfilerNetDescr_v1_t */
	RW_PROF_NCCL = 1,    /**< NCCL's socket / IB v1 descriptors */
	RW_PROF_OFF = 2,
};

/** Events of send/recv comm pc go to fn (its comm is open); NULL: none. */
void rw_prof_attach(struct rw_pcomm *pc, ncclProfilerCallback_t fn);
/**
 * Start one event per buffer of request req that has a phandle.
 * \param phandles n handles (a send: 1), or NULL.
 */
void rw_prof_start(struct rw_pcomm *pc, const void *req, bool recv, int n, const size_t *sizes,
		   const int *tags, void *const *phandles);
/** req ended (done or failed): stop its events, if it has any. */
void rw_prof_stop(struct rw_pcomm *pc, const void *req);
/** pc is closing: stop every event still open. */
void rw_prof_stop_all(struct rw_pcomm *pc);
/** Free pc's event state (the wrapper itself goes). */
void rw_prof_free(struct rw_pcomm *pc);

/* --- the live set (rw_live.c) ------------------------------------------------ */

/*
 * Every handle given to the caller, with its owner (the wrapper of its comm,
 * or NULL): checked before any read through a handle, so a stale one is an
 * error.  Process-wide, under its own lock.
 */
/** Enter key (not yet there).  \return 0, -ENOMEM or -EEXIST. */
int rw_live_add(const void *key, const void *owner);
/** Whether key is live (and, unless any_owner, owned by owner). */
bool rw_live_has(const void *key, const void *owner, bool any_owner);
/** Whether key is live; if so *owner is its owner. */
bool rw_live_owner(const void *key, const void **owner);
/** Remove key if live (and owned by owner unless any_owner): whether it was. */
bool rw_live_del(const void *key, const void *owner, bool any_owner);
/** Remove every key owned by owner (its comm closed). */
void rw_live_del_owned(const void *owner);
/** Live handles, for tests. */
size_t rw_live_count(void);

/* --- properties, one converter per struct version (rw_props.c) ------------- */

void rw_props_to_v6(const struct rw_net_props *in, ncclNetProperties_v6_t *out);
void rw_props_to_v7(const struct rw_net_props *in, ncclNetProperties_v7_t *out);
void rw_props_to_v8(const struct rw_net_props *in, ncclNetProperties_v8_t *out);
void rw_props_to_v9(const struct rw_net_props *in, ncclNetProperties_v9_t *out); /* and v10 */
void rw_props_to_v11(const struct rw_net_props *in, ncclNetProperties_v11_t *out);
void rw_props_to_v12(const struct rw_net_props *in, ncclNetProperties_v12_t *out);

/* getProperties for the net and CollNet tables of each version (rw_props.c). */
ncclResult_t rw_abi_get_properties_v6(int dev, ncclNetProperties_v6_t *props);
ncclResult_t rw_abi_get_properties_v7(int dev, ncclNetProperties_v7_t *props);
ncclResult_t rw_abi_get_properties_v8(int dev, ncclNetProperties_v8_t *props);
ncclResult_t rw_abi_get_properties_v9(int dev, ncclNetProperties_v9_t *props); /* and v10 */
ncclResult_t rw_abi_get_properties_v11(int dev, ncclNetProperties_v11_t *props);
ncclResult_t rw_abi_get_properties_v12(int dev, ncclNetProperties_v12_t *props);

/* --- the exported tables (net_tables.c); nothing else leaves the .so ---------- */

#define RW_PLUGIN_EXPORT __attribute__((visibility("default")))

RW_PLUGIN_EXPORT extern const ncclNet_v6_t ncclNetPlugin_v6;
RW_PLUGIN_EXPORT extern const ncclNet_v7_t ncclNetPlugin_v7;
RW_PLUGIN_EXPORT extern const ncclNet_v8_t ncclNetPlugin_v8;
RW_PLUGIN_EXPORT extern const ncclNet_v9_t ncclNetPlugin_v9;
RW_PLUGIN_EXPORT extern const ncclNet_v10_t ncclNetPlugin_v10;
RW_PLUGIN_EXPORT extern const ncclNet_v11_t ncclNetPlugin_v11;
RW_PLUGIN_EXPORT extern const ncclNet_v12_t ncclNetPlugin_v12;

#endif /* RW_PLUGIN_H */
