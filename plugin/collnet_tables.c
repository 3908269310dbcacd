/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclCollNetPlugin_v6 .. _v12: each slot holds a function of exactly its
 * type that converts the version's arguments (int sizes and counts up to
 * v8, 32-bit scatter-gather sizes in v8, contexts from v11) and calls the
 * version-independent operations of collnet_adapt.c.  Device enumeration,
 * listen and closeListen are the net plugin's own, so CollNet devices are
 * the net devices under the same names.
 */
#include <stddef.h>

#include "plugin/collnet.h"

/* v9..v12 scatter-gather entries have ringway's layout. */
static_assert(sizeof(ncclNetSGE_v9_t) == sizeof(struct rw_collnet_sge) &&
		      offsetof(ncclNetSGE_v9_t, mhandle) ==
			      offsetof(struct rw_collnet_sge, mhandle) &&
		      offsetof(ncclNetSGE_v9_t, address) ==
			      offsetof(struct rw_collnet_sge, address) &&
		      offsetof(ncclNetSGE_v9_t, size) == offsetof(struct rw_collnet_sge, size),
	      "SGE layout");

/* --- init: v6..v10 share one context; v11/v12 make one per communicator -------- */

#define RW_CN_INIT_LEGACY(v)                                                                       \
	static ncclResult_t cn_init_v##v(ncclDebugLogger_t logger)                                 \
	{                                                                                          \
		return rw_status_to_nccl(rw_plugin_init_legacy(v, logger));                        \
	}

/* CollNet's init has no config: the traffic class is undefined. */
#define RW_CN_INIT_CTX(v)                                                                          \
	static ncclResult_t cn_init_v##v(void **ctx, uint64_t comm_id, ncclDebugLogger_t logger)   \
	{                                                                                          \
		return rw_status_to_nccl(rw_plugin_ctx_create(                                     \
			v, comm_id, NCCL_NET_TRAFFIC_CLASS_UNDEF, logger, ctx));                   \
	}

RW_CN_INIT_LEGACY(6)
RW_CN_INIT_LEGACY(7)
RW_CN_INIT_LEGACY(8)
RW_CN_INIT_LEGACY(9)
RW_CN_INIT_LEGACY(10)
RW_CN_INIT_CTX(11)
RW_CN_INIT_CTX(12)

/* --- shared by every version -------------------------------------------------- */

static ncclResult_t cn_connect(void *handles[], int nranks, int rank, void *listen_comm,
			       void **coll_comm)
{
	return rw_status_to_nccl(
		rw_collnet_connect((void *const *)handles, nranks, rank, listen_comm, coll_comm));
}

static ncclResult_t cn_reduce_support(ncclDataType_t dtype, ncclRedOp_t op, int *supported)
{
	return rw_status_to_nccl(rw_collnet_reduce_support((int)dtype, (int)op, supported));
}

static ncclResult_t cn_reg_mr_int(void *coll_comm, void *data, int size, int type, void **mhandle)
{
	if (size < 0)
		return rw_status_to_nccl(rw_plugin_bad_arg("CollNet regMr", "negative size"));
	return rw_status_to_nccl(rw_collnet_reg_mr(coll_comm, data, (size_t)size, type, mhandle));
}

static ncclResult_t cn_reg_mr(void *coll_comm, void *data, size_t size, int type, void **mhandle)
{
	return rw_status_to_nccl(rw_collnet_reg_mr(coll_comm, data, size, type, mhandle));
}

static ncclResult_t cn_reg_mr_dmabuf(void *coll_comm, void *data, size_t size, int type,
				     uint64_t offset, int fd, void **mhandle)
{
	return rw_status_to_nccl(
		rw_collnet_reg_mr_dmabuf(coll_comm, data, size, type, offset, fd, mhandle));
}

static ncclResult_t cn_dereg_mr(void *coll_comm, void *mhandle)
{
	return rw_status_to_nccl(rw_collnet_dereg_mr(coll_comm, mhandle));
}

static ncclResult_t cn_iallreduce_int(void *coll_comm, void *send, void *recv, int count,
				      ncclDataType_t dtype, ncclRedOp_t op, void *send_mh,
				      void *recv_mh, void **request)
{
	if (count < 0)
		return rw_status_to_nccl(rw_plugin_bad_arg("CollNet iallreduce", "negative count"));
	return rw_status_to_nccl(rw_collnet_iallreduce(coll_comm, send, recv, (size_t)count,
						       (int)dtype, (int)op, send_mh, recv_mh,
						       request));
}

static ncclResult_t cn_iallreduce(void *coll_comm, void *send, void *recv, size_t count,
				  ncclDataType_t dtype, ncclRedOp_t op, void *send_mh,
				  void *recv_mh, void **request)
{
	return rw_status_to_nccl(rw_collnet_iallreduce(coll_comm, send, recv, count, (int)dtype,
						       (int)op, send_mh, recv_mh, request));
}

static ncclResult_t cn_iflush(void *coll_comm, void *data, int size, void *mhandle, void **request)
{
	return rw_status_to_nccl(rw_collnet_iflush(coll_comm, data, size, mhandle, request));
}

static ncclResult_t cn_test(void *request, int *done, int *size)
{
	return rw_status_to_nccl(rw_collnet_test(request, done, size));
}

static ncclResult_t cn_close_coll(void *coll_comm)
{
	return rw_status_to_nccl(rw_collnet_close_coll(coll_comm));
}

/* --- scatter-gather lists: v8 has 32-bit sizes, v9..v12 ringway's layout ------ */

static int sge_from_v8(int n, const ncclNetSGE_v8_t *in, struct rw_collnet_sge *out)
{
	if (n < 1 || n > RW_COLLNET_MAX_PARTS || !in)
		return rw_plugin_bad_arg("CollNet iallgather/ireducescatter",
					 "bad number of parts");
	for (int i = 0; i < n; i++)
		out[i] = (struct rw_collnet_sge){
			.mhandle = in[i].mhandle, .address = in[i].address, .size = in[i].size};
	return 0;
}

static ncclResult_t cn_iallgather_v8(void *coll_comm, void *send, int nparts,
				     ncclNetSGE_v8_t *parts, size_t bpr, size_t wo, size_t wb,
				     void *send_mh, void **request)
{
	struct rw_collnet_sge sge[RW_COLLNET_MAX_PARTS];
	int rc = sge_from_v8(nparts, parts, sge);

	if (rc == 0)
		rc = rw_collnet_iallgather(coll_comm, send, nparts, sge, bpr, wo, wb, send_mh,
					   request);
	return rw_status_to_nccl(rc);
}

static ncclResult_t cn_ireducescatter_v8(void *coll_comm, int nparts, ncclNetSGE_v8_t *parts,
					 void *recv, size_t bpr, size_t wo, size_t wb,
					 ncclDataType_t dtype, ncclRedOp_t op, void *recv_mh,
					 void **request)
{
	struct rw_collnet_sge sge[RW_COLLNET_MAX_PARTS];
	int rc = sge_from_v8(nparts, parts, sge);

	if (rc == 0)
		rc = rw_collnet_ireducescatter(coll_comm, nparts, sge, recv, bpr, wo, wb,
					       (int)dtype, (int)op, recv_mh, request);
	return rw_status_to_nccl(rc);
}

/* v9..v12 share one SGE type (abi/nccl_net_v10.h). */
static ncclResult_t cn_iallgather_v9(void *coll_comm, void *send, int nparts,
				     ncclNetSGE_v9_t *parts, size_t bpr, size_t wo, size_t wb,
				     void *send_mh, void **request)
{
	return rw_status_to_nccl(rw_collnet_iallgather(coll_comm, send, nparts,
						       (const struct rw_collnet_sge *)parts, bpr,
						       wo, wb, send_mh, request));
}

static ncclResult_t cn_ireducescatter_v9(void *coll_comm, int nparts, ncclNetSGE_v9_t *parts,
					 void *recv, size_t bpr, size_t wo, size_t wb,
					 ncclDataType_t dtype, ncclRedOp_t op, void *recv_mh,
					 void **request)
{
	return rw_status_to_nccl(rw_collnet_ireducescatter(
		coll_comm, nparts, (const struct rw_collnet_sge *)parts, recv, bpr, wo, wb,
		(int)dtype, (int)op, recv_mh, request));
}

/* --- the tables ------------------------------------------------------------------ */

/*
 * The slots whose type no version changed, in every table.  Per version:
 * getProperties (the net devices' own), listen (a context from v11 on),
 * int sizes and counts up to v7 (regMr) and v8 (iallreduce), iallgather and
 * ireducescatter from v8 on, finalize from v11 on.  makeVDevice (v9+) stays
 * NULL: no NIC fusion.
 */
#define RW_CN_SLOTS_EVERY_VERSION                                                                  \
	.name = RW_PLUGIN_NAME, .devices = rw_abi_devices, .connect = cn_connect,                  \
	.reduceSupport = cn_reduce_support, .regMrDmaBuf = cn_reg_mr_dmabuf,                       \
	.deregMr = cn_dereg_mr, .iflush = cn_iflush, .test = cn_test, .closeColl = cn_close_coll,  \
	.closeListen = rw_abi_close_listen

RW_PLUGIN_EXPORT const ncclCollNet_v6_t ncclCollNetPlugin_v6 = {
	RW_CN_SLOTS_EVERY_VERSION,
	.init = cn_init_v6,
	.getProperties = rw_abi_get_properties_v6,
	.listen = rw_abi_listen_legacy,
	.regMr = cn_reg_mr_int,
	.iallreduce = cn_iallreduce_int,
};

RW_PLUGIN_EXPORT const ncclCollNet_v7_t ncclCollNetPlugin_v7 = {
	RW_CN_SLOTS_EVERY_VERSION,
	.init = cn_init_v7,
	.getProperties = rw_abi_get_properties_v7,
	.listen = rw_abi_listen_legacy,
	.regMr = cn_reg_mr_int,
	.iallreduce = cn_iallreduce_int,
};

RW_PLUGIN_EXPORT const ncclCollNet_v8_t ncclCollNetPlugin_v8 = {
	RW_CN_SLOTS_EVERY_VERSION,
	.init = cn_init_v8,
	.getProperties = rw_abi_get_properties_v8,
	.listen = rw_abi_listen_legacy,
	.regMr = cn_reg_mr,
	.iallreduce = cn_iallreduce_int,
	.iallgather = cn_iallgather_v8,
	.ireducescatter = cn_ireducescatter_v8,
};

/* v9..v12: size_t sizes and counts, scatter-gather lists in ringway's layout. */
#define RW_CN_SLOTS_V9_V12                                                                         \
	.regMr = cn_reg_mr, .iallreduce = cn_iallreduce, .iallgather = cn_iallgather_v9,           \
	.ireducescatter = cn_ireducescatter_v9

RW_PLUGIN_EXPORT const ncclCollNet_v9_t ncclCollNetPlugin_v9 = {
	RW_CN_SLOTS_EVERY_VERSION,
	RW_CN_SLOTS_V9_V12,
	.init = cn_init_v9,
	.getProperties = rw_abi_get_properties_v9,
	.listen = rw_abi_listen_legacy,
};

RW_PLUGIN_EXPORT const ncclCollNet_v10_t ncclCollNetPlugin_v10 = {
	RW_CN_SLOTS_EVERY_VERSION,
	RW_CN_SLOTS_V9_V12,
	.init = cn_init_v10,
	.getProperties = rw_abi_get_properties_v9, /* v10 props are v9's */
	.listen = rw_abi_listen_legacy,
};

RW_PLUGIN_EXPORT const ncclCollNet_v11_t ncclCollNetPlugin_v11 = {
	RW_CN_SLOTS_EVERY_VERSION,   RW_CN_SLOTS_V9_V12,
	.init = cn_init_v11,	     .getProperties = rw_abi_get_properties_v11,
	.listen = rw_abi_listen_ctx, .finalize = rw_abi_finalize,
};

RW_PLUGIN_EXPORT const ncclCollNet_v12_t ncclCollNetPlugin_v12 = {
	RW_CN_SLOTS_EVERY_VERSION,   RW_CN_SLOTS_V9_V12,
	.init = cn_init_v12,	     .getProperties = rw_abi_get_properties_v12,
	.listen = rw_abi_listen_ctx, .finalize = rw_abi_finalize,
};
