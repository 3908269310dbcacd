/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v8: NCCL 2.20-2.23 natively; size_t regMr, int isend/irecv. */
#include "plugin/rw_plugin.h"

static ncclResult_t v8_init(ncclDebugLogger_t logger)
{
	return rw_status_to_nccl(rw_plugin_init_legacy(8, logger));
}

const ncclNet_v8_t ncclNetPlugin_v8 = {
	.name = RW_PLUGIN_NAME,
	.init = v8_init,
	.devices = rw_abi_devices,
	.getProperties = rw_abi_get_properties_v8,
	.listen = rw_abi_listen_legacy,
	.connect = rw_abi_connect_legacy,
	.accept = rw_abi_accept,
	.regMr = rw_abi_reg_mr,
	.regMrDmaBuf = rw_abi_reg_mr_dmabuf,
	.deregMr = rw_abi_dereg_mr,
	.isend = rw_abi_isend_int,
	.irecv = rw_abi_irecv_int,
	.iflush = rw_abi_iflush,
	.test = rw_abi_test,
	.closeSend = rw_abi_close_send,
	.closeRecv = rw_abi_close_recv,
	.closeListen = rw_abi_close_listen,
	.getDeviceMr = NULL,   /* host plugin: no device offload */
	.irecvConsumed = NULL, /* requests are recycled at test time */
};
