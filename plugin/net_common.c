/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ABI-typed entry points that several ncclNet_vN_t tables share: each has
 * the exact type of its slot, converts the version's arguments and turns
 * the -errno of rw_plugin_*() into an ncclResult_t.
 */
#include "plugin/rw_plugin.h"

ncclResult_t rw_abi_devices(int *ndev)
{
	return rw_status_to_nccl(rw_plugin_devices(ndev));
}

/* --- v6..v10: one process-wide context ------------------------------------- */

ncclResult_t rw_abi_listen_legacy(int dev, void *handle, void **listen_comm)
{
	struct rw_plugin *p;
	int rc;

	rc = rw_plugin_from_legacy("listen", &p);
	if (rc == 0)
		rc = rw_plugin_listen(&p->legacy, dev, handle, listen_comm);
	return rw_status_to_nccl(rc);
}

ncclResult_t rw_abi_connect_v6(int dev, void *handle, void **send_comm)
{
	struct rw_plugin *p;
	int rc;

	rc = rw_plugin_from_legacy("connect", &p);
	if (rc == 0)
		rc = rw_plugin_connect(&p->legacy, dev, handle, send_comm);
	return rw_status_to_nccl(rc);
}

ncclResult_t rw_abi_connect_tc(int dev, int traffic_class, void *handle, void **send_comm)
{
	struct rw_plugin_ctx ctx;
	struct rw_plugin *p;
	int rc;

	rc = rw_plugin_from_legacy("connect", &p);
	if (rc == 0) {
		/* the legacy context with this traffic class, for this call */
		ctx = (struct rw_plugin_ctx){
			.comm_id = p->legacy.comm_id,
			.traffic_class = traffic_class,
			.prof = __atomic_load_n(&p->legacy.prof, __ATOMIC_ACQUIRE),
			.plugin = p->legacy.plugin,
		};
		rc = rw_plugin_connect(&ctx, dev, handle, send_comm);
	}
	return rw_status_to_nccl(rc);
}

/* A host plugin leaves NCCL's device handle (a NULL pointer) alone. */
ncclResult_t rw_abi_connect_legacy(int dev, void *handle, void **send_comm,
				   ncclNetDeviceHandle_v7_t **dev_comm)
{
	(void)dev_comm;
	return rw_abi_connect_v6(dev, handle, send_comm);
}

/* --- v11/v12: a context per communicator ------------------------------------ */

ncclResult_t rw_abi_listen_ctx(void *ctx, int dev, void *handle, void **listen_comm)
{
	struct rw_plugin *p;
	int rc;

	/* rw_plugin_from_ctx found ctx among the live contexts */
	rc = rw_plugin_from_ctx(ctx, "listen", &p);
	if (rc == 0)
		rc = rw_plugin_listen(ctx, dev, handle, listen_comm);
	return rw_status_to_nccl(rc);
}

ncclResult_t rw_abi_connect_ctx(void *ctx, int dev, void *handle, void **send_comm,
				ncclNetDeviceHandle_v7_t **dev_comm)
{
	struct rw_plugin *p;
	int rc;

	(void)dev_comm;
	rc = rw_plugin_from_ctx(ctx, "connect", &p);
	if (rc == 0)
		rc = rw_plugin_connect(ctx, dev, handle, send_comm);
	return rw_status_to_nccl(rc);
}

ncclResult_t rw_abi_finalize(void *ctx)
{
	return rw_status_to_nccl(rw_plugin_ctx_destroy(ctx));
}

/* --- every version ------------------------------------------------------------ */

ncclResult_t rw_abi_accept_v6(void *listen_comm, void **recv_comm)
{
	return rw_status_to_nccl(rw_plugin_accept(listen_comm, recv_comm));
}

ncclResult_t rw_abi_accept(void *listen_comm, void **recv_comm, ncclNetDeviceHandle_v7_t **dev_comm)
{
	(void)dev_comm;
	return rw_status_to_nccl(rw_plugin_accept(listen_comm, recv_comm));
}

ncclResult_t rw_abi_reg_mr_int(void *comm, void *data, int size, int type, void **mhandle)
{
	return rw_status_to_nccl(rw_plugin_reg_mr_int(comm, data, size, type, mhandle));
}

ncclResult_t rw_abi_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	return rw_status_to_nccl(rw_plugin_reg_mr(comm, data, size, type, mhandle));
}

ncclResult_t rw_abi_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
				  int fd, void **mhandle)
{
	return rw_status_to_nccl(
		rw_plugin_reg_mr_dmabuf(comm, data, size, type, offset, fd, mhandle));
}

ncclResult_t rw_abi_dereg_mr(void *comm, void *mhandle)
{
	return rw_status_to_nccl(rw_plugin_dereg_mr(comm, mhandle));
}

ncclResult_t rw_abi_isend_int(void *send_comm, void *data, int size, int tag, void *mhandle,
			      void **request)
{
	return rw_status_to_nccl(rw_plugin_isend_int(send_comm, data, size, tag, mhandle, request));
}

ncclResult_t rw_abi_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
			  void **request)
{
	return rw_status_to_nccl(
		rw_plugin_isend(send_comm, data, size, tag, mhandle, NULL, request));
}

/* phandle: NCCL's profiler handle, for the transfer's events (rw_prof.c). */
ncclResult_t rw_abi_isend_ph(void *send_comm, void *data, size_t size, int tag, void *mhandle,
			     void *phandle, void **request)
{
	return rw_status_to_nccl(
		rw_plugin_isend(send_comm, data, size, tag, mhandle, phandle, request));
}

ncclResult_t rw_abi_irecv_int(void *recv_comm, int n, void **data, int *sizes, int *tags,
			      void **mhandles, void **request)
{
	return rw_status_to_nccl(
		rw_plugin_irecv_int(recv_comm, n, data, sizes, tags, mhandles, request));
}

ncclResult_t rw_abi_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
			  void **mhandles, void **request)
{
	return rw_status_to_nccl(
		rw_plugin_irecv(recv_comm, n, data, sizes, tags, mhandles, NULL, request));
}

ncclResult_t rw_abi_irecv_ph(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
			     void **mhandles, void **phandles, void **request)
{
	return rw_status_to_nccl(
		rw_plugin_irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request));
}

ncclResult_t rw_abi_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
			   void **request)
{
	return rw_status_to_nccl(rw_plugin_iflush(recv_comm, n, data, sizes, mhandles, request));
}

ncclResult_t rw_abi_test(void *request, int *done, int *sizes)
{
	return rw_status_to_nccl(rw_plugin_test(request, done, sizes));
}

ncclResult_t rw_abi_close_send(void *send_comm)
{
	return rw_status_to_nccl(rw_plugin_close_send(send_comm));
}

ncclResult_t rw_abi_close_recv(void *recv_comm)
{
	return rw_status_to_nccl(rw_plugin_close_recv(recv_comm));
}

ncclResult_t rw_abi_close_listen(void *listen_comm)
{
	return rw_status_to_nccl(rw_plugin_close_listen(listen_comm));
}
