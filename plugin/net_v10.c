/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v10: NCCL 2.26-2.27 natively; profiler, per-connect config. */
#include "plugin/rw_plugin.h"

/* The profiler callback is accepted and unused: ringway emits no events. */
static ncclResult_t v10_init(ncclDebugLogger_t logger, ncclProfilerCallback_t prof)
{
	(void)prof;
	return rw_status_to_nccl(rw_plugin_init_legacy(10, logger));
}

/* The traffic class of config is not applied by the socket transport. */
static ncclResult_t v10_connect(int dev, ncclNetCommConfig_v10_t *config, void *handle,
				void **send_comm, ncclNetDeviceHandle_v10_t **dev_comm)
{
	(void)config;
	return rw_abi_connect_legacy(dev, handle, send_comm, dev_comm);
}

const ncclNet_v10_t ncclNetPlugin_v10 = {
	.name = RW_PLUGIN_NAME,
	.init = v10_init,
	.devices = rw_abi_devices,
	.getProperties = rw_abi_get_properties_v9, /* v10 props are v9's */
	.listen = rw_abi_listen_legacy,
	.connect = v10_connect,
	.accept = rw_abi_accept,
	.regMr = rw_abi_reg_mr,
	.regMrDmaBuf = rw_abi_reg_mr_dmabuf,
	.deregMr = rw_abi_dereg_mr,
	.isend = rw_abi_isend_ph,
	.irecv = rw_abi_irecv_ph,
	.iflush = rw_abi_iflush,
	.test = rw_abi_test,
	.closeSend = rw_abi_close_send,
	.closeRecv = rw_abi_close_recv,
	.closeListen = rw_abi_close_listen,
	.getDeviceMr = NULL,   /* host plugin: no device offload */
	.irecvConsumed = NULL, /* requests are recycled at test time */
	.makeVDevice = NULL,   /* no NIC fusion yet */
};
