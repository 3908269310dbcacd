/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v9: NCCL 2.24-2.25 natively; size_t isend/irecv sizes. */
#include "plugin/rw_plugin.h"

static ncclResult_t v9_init(ncclDebugLogger_t logger)
{
	return rw_status_to_nccl(rw_plugin_init_legacy(9, logger));
}

const ncclNet_v9_t ncclNetPlugin_v9 = {
	.name = RW_PLUGIN_NAME,
	.init = v9_init,
	.devices = rw_abi_devices,
	.getProperties = rw_abi_get_properties_v9,
	.listen = rw_abi_listen_legacy,
	.connect = rw_abi_connect_legacy,
	.accept = rw_abi_accept,
	.regMr = rw_abi_reg_mr,
	.regMrDmaBuf = rw_abi_reg_mr_dmabuf,
	.deregMr = rw_abi_dereg_mr,
	.isend = rw_abi_isend,
	.irecv = rw_abi_irecv,
	.iflush = rw_abi_iflush,
	.test = rw_abi_test,
	.closeSend = rw_abi_close_send,
	.closeRecv = rw_abi_close_recv,
	.closeListen = rw_abi_close_listen,
	.getDeviceMr = NULL,   /* host plugin: no device offload */
	.irecvConsumed = NULL, /* requests are recycled at test time */
	.makeVDevice = NULL,   /* no NIC fusion yet */
};
