/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v12: NCCL 2.30; v11's calls with the wider v12 props. */
#include "plugin/rw_plugin.h"

static ncclResult_t v12_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_v12_t *config,
			     ncclDebugLogger_t logger, ncclProfilerCallback_t prof)
{
	int tc = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;

	(void)prof;
	return rw_status_to_nccl(rw_plugin_ctx_create(12, comm_id, tc, logger, ctx));
}

const ncclNet_v12_t ncclNetPlugin_v12 = {
	.name = RW_PLUGIN_NAME,
	.init = v12_init,
	.devices = rw_abi_devices,
	.getProperties = rw_abi_get_properties_v12,
	.listen = rw_abi_listen_ctx,
	.connect = rw_abi_connect_ctx,
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
	.finalize = rw_abi_finalize,
	.setNetAttr = NULL, /* hints are optional; none used yet */
};
