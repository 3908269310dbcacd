/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v6: NCCL 2.13-2.18 natively; int sizes, no device handles. */
#include "plugin/rw_plugin.h"

static ncclResult_t v6_init(ncclDebugLogger_t logger)
{
	return rw_status_to_nccl(rw_plugin_init_legacy(6, logger));
}

const ncclNet_v6_t ncclNetPlugin_v6 = {
	.name = RW_PLUGIN_NAME,
	.init = v6_init,
	.devices = rw_abi_devices,
	.getProperties = rw_abi_get_properties_v6,
	.listen = rw_abi_listen_legacy,
	.connect = rw_abi_connect_v6,
	.accept = rw_abi_accept_v6,
	.regMr = rw_abi_reg_mr_int,
	.regMrDmaBuf = rw_abi_reg_mr_dmabuf,
	.deregMr = rw_abi_dereg_mr,
	.isend = rw_abi_isend_int,
	.irecv = rw_abi_irecv_int,
	.iflush = rw_abi_iflush,
	.test = rw_abi_test,
	.closeSend = rw_abi_close_send,
	.closeRecv = rw_abi_close_recv,
	.closeListen = rw_abi_close_listen,
};
