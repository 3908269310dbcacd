/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operations every ABI version shares, on ringway's own types: argument
 * checks, comm wrappers, and the calls into rw_net.  The net_tables.c adapters
 * only convert their version's types and call these.
 */
#include "plugin/rw_plugin.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "common/rw_log.h"

static const char *const kind_names[] = {
	[RW_PCOMM_CLOSED] = "closed",
	[RW_PCOMM_LISTEN] = "listen",
	[RW_PCOMM_SEND] = "send",
	[RW_PCOMM_RECV] = "recv",
};

/* The caller broke the ABI contract: say which call and what. */
int rw_plugin_bad_arg(const char *call, const char *what)
{
	RW_WARN(RW_LOG_NET, "NET/%s %s: %s", RW_PLUGIN_NAME, call, what);
	return -EINVAL;
}

static int get_comm(void *handle, enum rw_pcomm_kind kind, const char *call, struct rw_pcomm **out)
{
	struct rw_pcomm *pc = rw_pcomm_check(handle, kind);

	if (!pc) {
		RW_WARN(RW_LOG_NET, "NET/%s %s(comm=%p): not an open %s comm", RW_PLUGIN_NAME, call,
			handle, kind_names[kind]);
		return handle ? -EBADF : -EINVAL;
	}
	*out = pc;
	return 0;
}

/* regMr/deregMr take either side of a connection. */
static int get_data_comm(void *handle, const char *call, struct rw_pcomm **out)
{
	struct rw_pcomm *pc = rw_pcomm_check(handle, RW_PCOMM_SEND);

	if (!pc)
		pc = rw_pcomm_check(handle, RW_PCOMM_RECV);
	if (!pc) {
		RW_WARN(RW_LOG_NET, "NET/%s %s(comm=%p): not an open send or recv comm",
			RW_PLUGIN_NAME, call, handle);
		return handle ? -EBADF : -EINVAL;
	}
	*out = pc;
	return 0;
}

/* Enter a new request or memory handle of pc in the live set. */
static int enter(const void *h, struct rw_pcomm *pc, const char *call)
{
	int rc;

	if (!h) /* no request: the caller retries */
		return 0;
	rc = rw_live_add(h, pc);
	if (rc)
		RW_WARN(RW_LOG_NET, "NET/%s %s(comm=%p): cannot track handle %p: %s",
			RW_PLUGIN_NAME, call, (void *)pc, h, strerror(-rc));
	return rc;
}

static int check_dev(const struct rw_plugin *p, int dev, const char *call)
{
	int ndev = __atomic_load_n(&p->ndev, __ATOMIC_ACQUIRE); /* makeVDevice may add one */

	if (dev < 0 || dev >= ndev) {
		RW_WARN(RW_LOG_NET, "NET/%s %s(dev=%d): ringway has %d device(s)", RW_PLUGIN_NAME,
			call, dev, ndev);
		return -EINVAL;
	}
	return 0;
}

/* --- connection setup ------------------------------------------------------ */

int rw_plugin_listen(struct rw_plugin_ctx *ctx, int dev, void *handle, void **listen_comm)
{
	struct rw_plugin *p = ctx->plugin;
	struct rw_net_listen *l;
	struct rw_pcomm *pc;
	int rc;

	rc = check_dev(p, dev, "listen");
	if (rc)
		return rc;
	if (!handle || !listen_comm)
		return rw_plugin_bad_arg("listen", "handle or listenComm is NULL");
	rc = rw_pcomm_alloc(p, RW_PCOMM_LISTEN, dev, &pc);
	if (rc)
		return rc;
	rc = rw_net_listen(p->net, dev, handle, &l);
	if (rc)
		goto err_retire;
	pc->u.listen = l;
	pc->prof_fn = __atomic_load_n(&ctx->prof, __ATOMIC_ACQUIRE);
	*listen_comm = rw_pcomm_handle(pc);
	return 0;

err_retire:
	rw_pcomm_retire(pc);
	return rc;
}

int rw_plugin_connect(struct rw_plugin_ctx *ctx, int dev, void *handle, void **send_comm)
{
	struct rw_plugin *p = ctx->plugin;
	struct rw_net_comm *c = NULL;
	struct rw_pcomm *pc;
	int rc;

	rc = check_dev(p, dev, "connect");
	if (rc)
		return rc;
	if (!handle || !send_comm)
		return rw_plugin_bad_arg("connect", "handle or sendComm is NULL");
	rc = rw_net_connect_tc(p->net, dev, handle, ctx->traffic_class, &c);
	if (rc)
		return rc;
	if (!c) { /* in progress: NCCL calls again */
		*send_comm = NULL;
		return 0;
	}
	rc = rw_pcomm_alloc(p, RW_PCOMM_SEND, dev, &pc);
	if (rc)
		goto err_close;
	pc->u.comm = c;
	pc->prof_fn = __atomic_load_n(&ctx->prof, __ATOMIC_ACQUIRE);
	rw_prof_attach(pc, pc->prof_fn);
	*send_comm = rw_pcomm_handle(pc);
	return 0;

err_close:
	rw_net_close_send(c);
	return rc;
}

int rw_plugin_accept(void *listen_comm, void **recv_comm)
{
	struct rw_net_comm *c = NULL;
	struct rw_pcomm *lpc, *pc;
	int rc;

	rc = get_comm(listen_comm, RW_PCOMM_LISTEN, "accept", &lpc);
	if (rc)
		return rc;
	if (!recv_comm)
		return rw_plugin_bad_arg("accept", "recvComm is NULL");
	rc = rw_net_accept(lpc->u.listen, &c);
	if (rc)
		return rc;
	if (!c) { /* no peer yet: NCCL calls again */
		*recv_comm = NULL;
		return 0;
	}
	rc = rw_pcomm_alloc(lpc->plugin, RW_PCOMM_RECV, lpc->dev, &pc);
	if (rc)
		goto err_close;
	pc->u.comm = c;
	pc->prof_fn = lpc->prof_fn;
	rw_prof_attach(pc, pc->prof_fn);
	*recv_comm = rw_pcomm_handle(pc);
	return 0;

err_close:
	rw_net_close_recv(c);
	return rc;
}

/* --- memory registration ------------------------------------------------- */

static int check_mr_type(const struct rw_pcomm *pc, int type, const char *call)
{
	if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA && type != NCCL_PTR_DMABUF)
		return rw_plugin_bad_arg(call, "type is not one NCCL_PTR_* value");
	if (!(pc->ptr_support & type)) {
		RW_WARN(RW_LOG_NET, "NET/%s %s(type=%#x): device %d supports only %#x",
			RW_PLUGIN_NAME, call, type, pc->dev, pc->ptr_support);
		return -ENOTSUP;
	}
	return 0;
}

int rw_plugin_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	struct rw_net_mr *mr;
	struct rw_pcomm *pc;
	int rc;

	rc = get_data_comm(comm, "regMr", &pc);
	if (rc)
		return rc;
	if (!mhandle || (!data && size))
		return rw_plugin_bad_arg("regMr", "mhandle is NULL, or data is NULL with size > 0");
	rc = check_mr_type(pc, type, "regMr");
	if (rc)
		return rc;
	rc = rw_net_reg_mr(pc->u.comm, data, size, type, &mr);
	if (rc)
		return rc;
	rc = enter(mr, pc, "regMr");
	if (rc) {
		rw_net_dereg_mr(pc->u.comm, mr);
		return rc;
	}
	*mhandle = mr;
	return 0;
}

int rw_plugin_reg_mr_int(void *comm, void *data, int size, int type, void **mhandle)
{
	if (size < 0)
		return rw_plugin_bad_arg("regMr", "negative size");
	return rw_plugin_reg_mr(comm, data, (size_t)size, type, mhandle);
}

int rw_plugin_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
			    void **mhandle)
{
	struct rw_net_mr *mr;
	struct rw_pcomm *pc;
	int rc;

	rc = get_data_comm(comm, "regMrDmaBuf", &pc);
	if (rc)
		return rc;
	if (!mhandle || fd < 0)
		return rw_plugin_bad_arg("regMrDmaBuf", "mhandle is NULL or fd < 0");
	rc = check_mr_type(pc, type, "regMrDmaBuf");
	if (rc)
		return rc;
	rc = rw_net_reg_mr_dmabuf(pc->u.comm, data, size, type, offset, fd, &mr);
	if (rc)
		return rc;
	rc = enter(mr, pc, "regMr");
	if (rc) {
		rw_net_dereg_mr(pc->u.comm, mr);
		return rc;
	}
	*mhandle = mr;
	return 0;
}

int rw_plugin_dereg_mr(void *comm, void *mhandle)
{
	struct rw_pcomm *pc;
	int rc;

	rc = get_data_comm(comm, "deregMr", &pc);
	if (rc)
		return rc;
	if (!mhandle)
		return rw_plugin_bad_arg("deregMr", "mhandle is NULL");
	if (!rw_live_del(mhandle, pc, false)) {
		RW_WARN(RW_LOG_NET,
			"NET/%s deregMr(comm=%p, mhandle=%p): not a memory handle registered on "
			"this comm (deregistered already?)",
			RW_PLUGIN_NAME, comm, mhandle);
		return -EBADF;
	}
	return rw_net_dereg_mr(pc->u.comm, mhandle);
}

/* --- data path ------------------------------------------------------------- */

int rw_plugin_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
		    void **request)
{
	struct rw_net_req *req = NULL;
	struct rw_pcomm *pc;
	int rc;

	if (!request)
		return rw_plugin_bad_arg("isend", "request is NULL");
	*request = NULL;
	rc = get_comm(send_comm, RW_PCOMM_SEND, "isend", &pc);
	if (rc)
		return rc;
	if (!data && size)
		return rw_plugin_bad_arg("isend", "data is NULL with size > 0");
	rc = rw_net_isend(pc->u.comm, data, size, tag, mhandle, &req);
	if (rc)
		return rc;
	rc = enter(req, pc, "isend");
	if (rc)
		return rc;
	if (phandle && pc->prof)
		rw_prof_start(pc, req, false, 1, &size, &tag, &phandle);
	*request = req;
	return 0;
}

int rw_plugin_isend_int(void *send_comm, void *data, int size, int tag, void *mhandle,
			void **request)
{
	if (size < 0) {
		if (request)
			*request = NULL;
		return rw_plugin_bad_arg("isend", "negative size");
	}
	return rw_plugin_isend(send_comm, data, (size_t)size, tag, mhandle, NULL, request);
}

int rw_plugin_irecv(void *recv_comm, int n, void **data, const size_t *sizes, const int *tags,
		    void **mhandles, void **phandles, void **request)
{
	struct rw_net_mr *mrs[RW_NET_MAX_RECVS];
	struct rw_net_req *req = NULL;
	struct rw_pcomm *pc;
	int rc;

	if (!request)
		return rw_plugin_bad_arg("irecv", "request is NULL");
	*request = NULL; /* NCCL may have stored OPTIONAL_RECV_COMPLETION */
	rc = get_comm(recv_comm, RW_PCOMM_RECV, "irecv", &pc);
	if (rc)
		return rc;
	if (n < 1 || n > pc->plugin->props[pc->dev].max_recvs)
		return rw_plugin_bad_arg("irecv", "n is outside 1..maxRecvs");
	if (!data || !sizes || !tags || !mhandles)
		return rw_plugin_bad_arg("irecv", "data, sizes, tags or mhandles is NULL");
	for (int i = 0; i < n; i++)
		mrs[i] = mhandles[i];
	rc = rw_net_irecv(pc->u.comm, n, data, sizes, tags, mrs, &req);
	if (rc)
		return rc;
	rc = enter(req, pc, "irecv");
	if (rc)
		return rc;
	if (phandles && pc->prof)
		rw_prof_start(pc, req, true, n, sizes, tags, phandles);
	*request = req;
	return 0;
}

int rw_plugin_irecv_int(void *recv_comm, int n, void **data, const int *sizes, const int *tags,
			void **mhandles, void **request)
{
	size_t wide[RW_NET_MAX_RECVS];

	if (n < 1 || n > RW_NET_MAX_RECVS || !sizes) {
		if (request)
			*request = NULL;
		return rw_plugin_bad_arg("irecv", "n is outside 1..maxRecvs, or sizes is NULL");
	}
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0) {
			if (request)
				*request = NULL;
			return rw_plugin_bad_arg("irecv", "negative size");
		}
		wide[i] = (size_t)sizes[i];
	}
	return rw_plugin_irecv(recv_comm, n, data, wide, tags, mhandles, NULL, request);
}

int rw_plugin_iflush(void *recv_comm, int n, void **data, const int *sizes, void **mhandles,
		     void **request)
{
	struct rw_net_mr *mrs[RW_NET_MAX_RECVS];
	struct rw_net_req *req = NULL;
	struct rw_pcomm *pc;
	int rc;

	if (!request)
		return rw_plugin_bad_arg("iflush", "request is NULL");
	*request = NULL;
	rc = get_comm(recv_comm, RW_PCOMM_RECV, "iflush", &pc);
	if (rc)
		return rc;
	if (n < 1 || n > RW_NET_MAX_RECVS || !data || !sizes || !mhandles)
		return rw_plugin_bad_arg("iflush", "n is outside 1..maxRecvs, or an array is NULL");
	/* Only GPU memory written by a NIC needs a flush; host memory is
	 * coherent, so a device without CUDA support is done at once. */
	if (!(pc->ptr_support & (RW_PTR_CUDA | RW_PTR_DMABUF)))
		return 0;
	for (int i = 0; i < n; i++)
		mrs[i] = mhandles[i];
	rc = rw_net_iflush(pc->u.comm, n, data, sizes, mrs, &req);
	if (rc)
		return rc;
	rc = enter(req, pc, "iflush");
	if (rc)
		return rc;
	*request = req;
	return 0;
}

/* struct rw_obj comes first in struct rw_pcomm: an owner is checked as one. */
static_assert(offsetof(struct rw_pcomm, obj) == 0, "rw_pcomm starts with its rw_obj");
static const uint32_t data_kinds[2] = {RW_PCOMM_OBJ(RW_PCOMM_SEND), RW_PCOMM_OBJ(RW_PCOMM_RECV)};

int rw_plugin_test(void *request, int *done, int *sizes)
{
	/* The transport writes one size per buffer of the request (1 for a
	 * send); SIZE_MAX marks the entries it did not write. */
	size_t got[RW_NET_MAX_RECVS];
	const void *owner = NULL;
	int finished = 0;
	int rc;

	if (!request || request == (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION)
		return rw_plugin_bad_arg("test", "request is NULL or the 0x1 hint, not a request");
	if (!done)
		return rw_plugin_bad_arg("test", "done is NULL");
	/* A request ends when test() says done (or fails), or with its comm. */
	if (!rw_live_owner(request, &owner)) {
		RW_WARN(RW_LOG_NET,
			"NET/%s test(request=%p): not a pending request (completed already, or "
			"its comm was closed)",
			RW_PLUGIN_NAME, request);
		return -EBADF;
	}
	if (sizes)
		memset(got, 0xff, sizeof(got));
	rc = rw_net_test(request, &finished, sizes ? got : NULL);
	if (rc || finished) {
		rw_live_del(request, NULL, true);
		/* owner: the wrapper of the request's comm (enter()), unless the
		 * caller passed a CollNet request here */
		if (owner && rw_obj_check_any(owner, data_kinds, 2) == 0)
			rw_prof_stop((struct rw_pcomm *)owner, request);
	}
	if (rc)
		return rc;
	if (finished && sizes) {
		for (size_t i = 0; i < RW_ARRAY_SIZE(got) && got[i] != SIZE_MAX; i++) {
			if (got[i] > INT_MAX) {
				RW_WARN(RW_LOG_NET,
					"NET/%s test: %zu bytes received do not fit the ABI's int "
					"size",
					RW_PLUGIN_NAME, got[i]);
				return -EOVERFLOW;
			}
			sizes[i] = (int)got[i];
		}
	}
	*done = finished;
	return 0;
}

/* --- teardown -------------------------------------------------------------- */

/* closeSend, closeRecv, closeListen: the wrapper goes whatever the close says. */
static int close_one(void *handle, enum rw_pcomm_kind kind, const char *call)
{
	struct rw_pcomm *pc;
	int rc;

	rc = get_comm(handle, kind, call, &pc);
	if (rc)
		return rc;
	rw_prof_stop_all(pc); /* its requests end with it */
	switch (kind) {
	case RW_PCOMM_SEND:
		rc = rw_net_close_send(pc->u.comm);
		break;
	case RW_PCOMM_RECV:
		rc = rw_net_close_recv(pc->u.comm);
		break;
	default:
		rc = rw_net_close_listen(pc->u.listen);
		break;
	}
	rw_pcomm_retire(pc);
	return rc;
}

int rw_plugin_close_send(void *send_comm)
{
	return close_one(send_comm, RW_PCOMM_SEND, "closeSend");
}

int rw_plugin_close_recv(void *recv_comm)
{
	return close_one(recv_comm, RW_PCOMM_RECV, "closeRecv");
}

int rw_plugin_close_listen(void *listen_comm)
{
	return close_one(listen_comm, RW_PCOMM_LISTEN, "closeListen");
}
