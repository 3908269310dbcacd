/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclNetPlugin_v6 .. _v12: the seven tables NCCL dlsym()s.  Every slot
 * holds a function of exactly its type: the shared entry points of
 * net_common.c (rw_abi_*, declared in rw_plugin.h) wherever the types of
 * several versions agree, and the few adapters below where they do not
 * (init, which tells the plugin the caller's ABI version, and v10's
 * connect, which takes a config).
 *
 *   version  NCCL natively   what changed
 *   v6       2.13-2.18       int sizes, no device handles
 *   v7       2.19            device handles (connect/accept), int regMr size
 *   v8       2.20-2.23       size_t regMr, int isend/irecv
 *   v9       2.24-2.25       size_t isend/irecv sizes
 *   v10      2.26-2.27       profiler (init), per-connect config, phandles
 *                            (ringway's network events, rw_prof.c)
 *   v11      2.28-2.29       a context per communicator (init .. finalize)
 *   v12      2.30            v11's calls with the wider v12 properties
 *
 * Slots left NULL: getDeviceMr (v7+; a host plugin has no device offload),
 * irecvConsumed (v7+; requests are recycled at test time), setNetAttr
 * (v11+; hints are optional, none used yet).  makeVDevice (v9+) is NIC
 * fusion (rw_vdev.c, transport/fuse/).
 */
#include "plugin/rw_plugin.h"
#include "plugin/rw_vdev.h"

/* --- init: v6..v10 share one context; v11/v12 make one per communicator -------- */

#define RW_NET_INIT_LEGACY(v)                                                                      \
	static ncclResult_t init_v##v(ncclDebugLogger_t logger)                                    \
	{                                                                                          \
		return rw_status_to_nccl(rw_plugin_init_legacy(v, logger));                        \
	}

/* config points to NCCL's stack: the traffic class is copied. */
#define RW_NET_INIT_CTX(v)                                                                         \
	static ncclResult_t init_v##v(void **ctx, uint64_t comm_id,                                \
				      ncclNetCommConfig_v##v##_t *config,                          \
				      ncclDebugLogger_t logger, ncclProfilerCallback_t prof)       \
	{                                                                                          \
		int tc = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;             \
		int rc = rw_plugin_ctx_create(v, comm_id, tc, logger, ctx);                        \
                                                                                                   \
		if (rc == 0)                                                                       \
			rw_plugin_ctx_set_prof(*ctx, prof);                                        \
		return rw_status_to_nccl(rc);                                                      \
	}

RW_NET_INIT_LEGACY(6)
RW_NET_INIT_LEGACY(7)
RW_NET_INIT_LEGACY(8)
RW_NET_INIT_LEGACY(9)
RW_NET_INIT_CTX(11)
RW_NET_INIT_CTX(12)

/* The profiler callback: network events (rw_prof.c), v10 on. */
static ncclResult_t init_v10(ncclDebugLogger_t logger, ncclProfilerCallback_t prof)
{
	int rc = rw_plugin_init_legacy(10, logger);

	if (rc == 0)
		rw_plugin_set_legacy_prof(prof);
	return rw_status_to_nccl(rc);
}

/* v10 gives the communicator's config (its traffic class) to each connect. */
static ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t *config, void *handle,
				void **send_comm, ncclNetDeviceHandle_v10_t **dev_comm)
{
	(void)dev_comm;
	return rw_abi_connect_tc(dev, config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF,
				 handle, send_comm);
}

/* --- the tables ---------------------------------------------------------------- */

/* The slots whose type no version changed, in every table. */
#define RW_NET_SLOTS_EVERY_VERSION                                                                 \
	.name = RW_PLUGIN_NAME, .devices = rw_abi_devices, .regMrDmaBuf = rw_abi_reg_mr_dmabuf,    \
	.deregMr = rw_abi_dereg_mr, .iflush = rw_abi_iflush, .test = rw_abi_test,                  \
	.closeSend = rw_abi_close_send, .closeRecv = rw_abi_close_recv,                            \
	.closeListen = rw_abi_close_listen

const ncclNet_v6_t ncclNetPlugin_v6 = {
	RW_NET_SLOTS_EVERY_VERSION,
	.init = init_v6,
	.getProperties = rw_abi_get_properties_v6,
	.listen = rw_abi_listen_legacy,
	.connect = rw_abi_connect_v6,
	.accept = rw_abi_accept_v6,
	.regMr = rw_abi_reg_mr_int,
	.isend = rw_abi_isend_int,
	.irecv = rw_abi_irecv_int,
};

const ncclNet_v7_t ncclNetPlugin_v7 = {
	RW_NET_SLOTS_EVERY_VERSION,
	.init = init_v7,
	.getProperties = rw_abi_get_properties_v7,
	.listen = rw_abi_listen_legacy,
	.connect = rw_abi_connect_legacy,
	.accept = rw_abi_accept,
	.regMr = rw_abi_reg_mr_int,
	.isend = rw_abi_isend_int,
	.irecv = rw_abi_irecv_int,
};

const ncclNet_v8_t ncclNetPlugin_v8 = {
	RW_NET_SLOTS_EVERY_VERSION,
	.init = init_v8,
	.getProperties = rw_abi_get_properties_v8,
	.listen = rw_abi_listen_legacy,
	.connect = rw_abi_connect_legacy,
	.accept = rw_abi_accept,
	.regMr = rw_abi_reg_mr,
	.isend = rw_abi_isend_int,
	.irecv = rw_abi_irecv_int,
};

const ncclNet_v9_t ncclNetPlugin_v9 = {
	RW_NET_SLOTS_EVERY_VERSION,
	.init = init_v9,
	.getProperties = rw_abi_get_properties_v9,
	.listen = rw_abi_listen_legacy,
	.connect = rw_abi_connect_legacy,
	.accept = rw_abi_accept,
	.regMr = rw_abi_reg_mr,
	.isend = rw_abi_isend,
	.irecv = rw_abi_irecv,
	.makeVDevice = rw_abi_make_vdevice_v9,
};

const ncclNet_v10_t ncclNetPlugin_v10 = {
	RW_NET_SLOTS_EVERY_VERSION,
	.init = init_v10,
	.getProperties = rw_abi_get_properties_v9, /* v10 props are v9's */
	.listen = rw_abi_listen_legacy,
	.connect = connect_v10,
	.accept = rw_abi_accept,
	.regMr = rw_abi_reg_mr,
	.isend = rw_abi_isend_ph,
	.irecv = rw_abi_irecv_ph,
	.makeVDevice = rw_abi_make_vdevice_v9, /* v10's vProps are v9's */
};

/* v11 and v12: a context per communicator (listen, connect, finalize);
 * v12 only widens the properties. */
#define RW_NET_SLOTS_V11_V12                                                                       \
	.listen = rw_abi_listen_ctx, .connect = rw_abi_connect_ctx, .accept = rw_abi_accept,       \
	.regMr = rw_abi_reg_mr, .isend = rw_abi_isend_ph, .irecv = rw_abi_irecv_ph,                \
	.finalize = rw_abi_finalize

const ncclNet_v11_t ncclNetPlugin_v11 = {
	RW_NET_SLOTS_EVERY_VERSION,
	RW_NET_SLOTS_V11_V12,
	.init = init_v11,
	.getProperties = rw_abi_get_properties_v11,
	.makeVDevice = rw_abi_make_vdevice_v11,
};

const ncclNet_v12_t ncclNetPlugin_v12 = {
	RW_NET_SLOTS_EVERY_VERSION,
	RW_NET_SLOTS_V11_V12,
	.init = init_v12,
	.getProperties = rw_abi_get_properties_v12,
	.makeVDevice = rw_abi_make_vdevice_v12,
};
