/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CollNet operations on ringway's own types (collnet.h): argument checks,
 * the window arithmetic of iallgather/ireducescatter, and the calls into
 * the ring engine.  The tables of collnet_tables.c convert each ABI
 * version's types and call these.
 */
#include "plugin/collnet.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll/place.h"
#include "coll/rw_coll.h"
#include "common/rw_log.h"

/* Object kinds (transport/base/rw_base.h).  What NCCL holds is the
 * object's handle (rw_obj_handle()): the live set knows it by that. */
#define COMM_KIND 0x72776363u /* "rwcc" */
#define REQ_KIND  0x72776371u /* "rwcq" */

struct rw_collnet_comm {
	struct rw_obj obj; /* first */
	struct rw_plugin *plugin;
	struct rw_coll_comm *coll;
	int nranks, rank;
};

struct rw_collnet_req {
	struct rw_obj obj; /* first */
	struct rw_coll_req *req;
	char *tmp;  /* a contiguous copy of scattered parts */
	int nparts; /* iallgather: parts to scatter tmp into */
	struct rw_collnet_sge parts[RW_COLLNET_MAX_PARTS];
	size_t size; /* what test() reports */
};

static int get_comm(void *handle, const char *call, struct rw_collnet_comm **out)
{
	struct rw_collnet_comm *cc = (struct rw_collnet_comm *)rw_obj_from_handle(handle);

	/* Not live: closed (and freed), or never ours; do not read it. */
	if (!rw_live_has(handle, NULL, true) || rw_obj_check(&cc->obj, COMM_KIND) ||
	    rw_obj_handle_check(&cc->obj, handle)) {
		RW_WARN(RW_LOG_NET | RW_LOG_COLL,
			"CollNet/%s %s(collComm=%p): not an open collComm", RW_PLUGIN_NAME, call,
			handle);
		return -EINVAL;
	}
	*out = cc;
	return 0;
}

int rw_collnet_connect(void *const *handles, int nranks, int rank, void *listen_comm,
		       void **coll_comm)
{
	struct rw_pcomm *pc = rw_pcomm_check(listen_comm, RW_PCOMM_LISTEN);
	struct rw_collnet_comm *cc;
	struct rw_coll_comm_args a;
	int rc;

	if (!pc)
		return rw_plugin_bad_arg("CollNet connect", "listenComm is not an open listener");
	if (!handles || !coll_comm || nranks < 1 || rank < 0 || rank >= nranks)
		return rw_plugin_bad_arg("CollNet connect",
					 "bad handles, nranks, rank or collComm");
	for (int r = 0; r < nranks; r++)
		if (!handles[r])
			return rw_plugin_bad_arg("CollNet connect", "a handle is NULL");
	cc = rw_obj_zalloc(sizeof(*cc));
	if (!cc)
		return -ENOMEM;
	a = (struct rw_coll_comm_args){
		.net = pc->plugin->net,
		.dev = pc->dev,
		.nranks = nranks,
		.rank = rank,
		.handles = (const void *const *)handles,
		.listen = pc->u.listen,
		.cfg = &pc->plugin->cfg,
	};
	rc = rw_coll_comm_create(&a, &cc->coll); /* blocks, bounded: NCCL expects it */
	if (rc) {
		free(cc);
		return rc;
	}
	/* placement (coll/place.h): NCCL gives only the handles, so the ranks
	 * tell each other where they are over this rank-order comm, then
	 * reconnect in ring order on the NICs the topology names when that
	 * differs */
	if (nranks > 1) {
		struct rw_topo_place place;

		rc = rw_place_coll_comm(&a, &cc->coll, &place);
		rw_topo_place_free(&place);
		if (rc) {
			rw_coll_comm_destroy(cc->coll);
			free(cc);
			return rc;
		}
	}
	rw_obj_open(&cc->obj, COMM_KIND);
	cc->plugin = pc->plugin;
	cc->nranks = nranks;
	cc->rank = rank;
	rc = rw_live_add(rw_obj_handle(&cc->obj), NULL);
	if (rc) {
		rw_coll_comm_destroy(cc->coll);
		free(cc);
		return rc;
	}
	*coll_comm = rw_obj_handle(&cc->obj);
	return 0;
}

int rw_collnet_reduce_support(int dtype, int op, int *supported)
{
	if (!supported)
		return rw_plugin_bad_arg("CollNet reduceSupport", "supported is NULL");
	*supported = rw_coll_reduce_supported(dtype, op);
	return 0;
}

int rw_collnet_reg_mr(void *coll_comm, void *data, size_t size, int type, void **mhandle)
{
	struct rw_collnet_comm *cc;
	int rc = get_comm(coll_comm, "regMr", &cc);

	if (rc)
		return rc;
	if (!mhandle)
		return rw_plugin_bad_arg("CollNet regMr", "mhandle is NULL");
	return rw_coll_reg_mr(cc->coll, data, size, type, (struct rw_coll_mr **)mhandle);
}

int rw_collnet_reg_mr_dmabuf(void *coll_comm, void *data, size_t size, int type, uint64_t offset,
			     int fd, void **mhandle)
{
	struct rw_collnet_comm *cc;
	int rc = get_comm(coll_comm, "regMrDmaBuf", &cc);

	if (rc)
		return rc;
	if (!mhandle)
		return rw_plugin_bad_arg("CollNet regMrDmaBuf", "mhandle is NULL");
	return rw_coll_reg_mr_dmabuf(cc->coll, data, size, type, offset, fd,
				     (struct rw_coll_mr **)mhandle);
}

int rw_collnet_dereg_mr(void *coll_comm, void *mhandle)
{
	struct rw_collnet_comm *cc;
	int rc = get_comm(coll_comm, "deregMr", &cc);

	return rc ? rc : rw_coll_dereg_mr(cc->coll, mhandle);
}

/* Start a and wrap it in a request for NCCL. */
static int start(struct rw_collnet_comm *cc, const struct rw_coll_args *a, struct rw_collnet_req *w,
		 void **request)
{
	int rc;

	if (!request) {
		rc = rw_plugin_bad_arg("CollNet collective", "request is NULL");
		goto err_free;
	}
	rw_obj_open(&w->obj, REQ_KIND);
	rc = rw_live_add(rw_obj_handle(&w->obj), cc);
	if (rc)
		goto err_free;
	rc = rw_coll_start(cc->coll, a, &w->req);
	if (rc) {
		rw_live_del(rw_obj_handle(&w->obj), cc, false);
		goto err_free;
	}
	*request = rw_obj_handle(&w->obj);
	return 0;

err_free:
	free(w->tmp);
	free(w);
	return rc;
}

int rw_collnet_iallreduce(void *coll_comm, void *send, void *recv, size_t count, int dtype, int op,
			  void *send_mh, void *recv_mh, void **request)
{
	struct rw_coll_args a = {
		.kind = RW_COLL_ALLREDUCE,
		.sendbuf = send,
		.recvbuf = recv,
		.count = count,
		.dtype = (enum rw_dtype)dtype,
		.op = (enum rw_op)op,
		.send_mr = send_mh,
		.recv_mr = recv_mh,
	};
	struct rw_collnet_comm *cc;
	struct rw_collnet_req *w;
	int rc = get_comm(coll_comm, "iallreduce", &cc);

	if (rc)
		return rc;
	w = rw_obj_zalloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->size = count * rw_dtype_size((enum rw_dtype)dtype);
	return start(cc, &a, w, request);
}

/*
 * Segment r of a window: the part of rank r's block [r * bpr, (r + 1) * bpr)
 * inside [wo, wo + wb), as an offset from wo and a length, in units of unit
 * bytes.  An empty intersection is (0, 0).
 */
static void window_segments(int nranks, size_t bpr, size_t wo, size_t wb, size_t unit, size_t *off,
			    size_t *cnt)
{
	for (int r = 0; r < nranks; r++) {
		size_t lo = RW_MAX((size_t)r * bpr, wo);
		size_t hi = RW_MIN((size_t)(r + 1) * bpr, wo + wb);

		off[r] = hi > lo ? (lo - wo) / unit : 0;
		cnt[r] = hi > lo ? (hi - lo) / unit : 0;
	}
}

static int check_parts(const char *call, int nparts, const struct rw_collnet_sge *parts,
		       size_t window_bytes)
{
	size_t total = 0;

	if (nparts < 1 || nparts > RW_COLLNET_MAX_PARTS || !parts)
		return rw_plugin_bad_arg(call, "bad number of parts");
	for (int i = 0; i < nparts; i++) {
		if (!parts[i].address && parts[i].size)
			return rw_plugin_bad_arg(call, "a part has no address");
		total += parts[i].size;
	}
	if (total < window_bytes)
		return rw_plugin_bad_arg(call, "the parts are smaller than the window");
	return 0;
}

int rw_collnet_iallgather(void *coll_comm, void *send, int nparts,
			  const struct rw_collnet_sge *recv_parts, size_t bpr, size_t wo, size_t wb,
			  void *send_mh, void **request)
{
	struct rw_coll_args a = {
		.kind = RW_COLL_ALLGATHER, .dtype = RW_DTYPE_UINT8, .send_mr = send_mh};
	struct rw_collnet_comm *cc;
	struct rw_collnet_req *w;
	size_t *seg, lo;
	int rc = get_comm(coll_comm, "iallgather", &cc);

	if (rc)
		return rc;
	rc = check_parts("CollNet iallgather", nparts, recv_parts, wb);
	if (rc)
		return rc;
	if (wo > (size_t)cc->nranks * bpr || wb > (size_t)cc->nranks * bpr - wo)
		return rw_plugin_bad_arg("CollNet iallgather", "the window lies outside the data");
	w = rw_obj_zalloc(sizeof(*w));
	seg = calloc(2 * (size_t)cc->nranks, sizeof(*seg));
	if (!w || !seg) {
		free(w);
		free(seg);
		return -ENOMEM;
	}
	window_segments(cc->nranks, bpr, wo, wb, 1, seg, seg + cc->nranks);
	lo = RW_MAX((size_t)cc->rank * bpr, wo);
	a.sendbuf =
		seg[cc->nranks + cc->rank] ? (char *)send + (lo - (size_t)cc->rank * bpr) : send;
	a.seg_off = seg;
	a.seg_count = seg + cc->nranks;
	if (nparts == 1) {
		a.recvbuf = recv_parts[0].address;
		a.recv_mr = recv_parts[0].mhandle;
	} else {
		/* gather into one buffer, scattered into the parts by test() */
		w->tmp = malloc(wb ? wb : 1);
		if (!w->tmp) {
			free(w);
			free(seg);
			return -ENOMEM;
		}
		w->nparts = nparts;
		memcpy(w->parts, recv_parts, (size_t)nparts * sizeof(*recv_parts));
		a.recvbuf = w->tmp;
	}
	w->size = wb;
	rc = start(cc, &a, w, request); /* the engine copied the segments */
	free(seg);
	return rc;
}

int rw_collnet_ireducescatter(void *coll_comm, int nparts, const struct rw_collnet_sge *send_parts,
			      void *recv, size_t bpr, size_t wo, size_t wb, int dtype, int op,
			      void *recv_mh, void **request)
{
	struct rw_coll_args a = {.kind = RW_COLL_REDUCE_SCATTER,
				 .recvbuf = recv,
				 .dtype = (enum rw_dtype)dtype,
				 .op = (enum rw_op)op,
				 .recv_mr = recv_mh};
	size_t es = rw_dtype_size((enum rw_dtype)dtype);
	struct rw_collnet_comm *cc;
	struct rw_collnet_req *w;
	size_t *seg;
	int rc = get_comm(coll_comm, "ireducescatter", &cc);

	if (rc)
		return rc;
	rc = check_parts("CollNet ireducescatter", nparts, send_parts, wb);
	if (rc)
		return rc;
	if (!es || bpr % es || wo % es || wb % es)
		return rw_plugin_bad_arg("CollNet ireducescatter",
					 "bad datatype, or sizes not in whole elements");
	if (wo > (size_t)cc->nranks * bpr || wb > (size_t)cc->nranks * bpr - wo)
		return rw_plugin_bad_arg("CollNet ireducescatter",
					 "the window lies outside the data");
	w = rw_obj_zalloc(sizeof(*w));
	seg = calloc(2 * (size_t)cc->nranks, sizeof(*seg));
	if (!w || !seg) {
		free(w);
		free(seg);
		return -ENOMEM;
	}
	window_segments(cc->nranks, bpr, wo, wb, es, seg, seg + cc->nranks);
	a.seg_off = seg;
	a.seg_count = seg + cc->nranks;
	if (nparts == 1) {
		a.sendbuf = send_parts[0].address;
		a.send_mr = send_parts[0].mhandle;
	} else {
		size_t at = 0;

		w->tmp = malloc(wb ? wb : 1);
		if (!w->tmp) {
			free(w);
			free(seg);
			return -ENOMEM;
		}
		for (int i = 0; i < nparts && at < wb; i++) {
			size_t n = RW_MIN(send_parts[i].size, wb - at);

			memcpy(w->tmp + at, send_parts[i].address, n);
			at += n;
		}
		a.sendbuf = w->tmp;
	}
	w->size = seg[cc->nranks + cc->rank] * es;
	rc = start(cc, &a, w, request);
	free(seg);
	return rc;
}

int rw_collnet_iflush(void *coll_comm, void *data, int size, void *mhandle, void **request)
{
	struct rw_collnet_comm *cc;
	int rc = get_comm(coll_comm, "iflush", &cc);

	(void)data, (void)size, (void)mhandle;
	if (rc)
		return rc;
	if (!request)
		return rw_plugin_bad_arg("CollNet iflush", "request is NULL");
	*request = NULL; /* host memory: nothing to flush */
	return 0;
}

int rw_collnet_test(void *request, int *done, int *size)
{
	struct rw_collnet_req *w = (struct rw_collnet_req *)rw_obj_from_handle(request);
	size_t bytes = 0;
	int rc;

	/* A finished request was freed: check the live set before reading. */
	if (!rw_live_has(request, NULL, true) || rw_obj_check(&w->obj, REQ_KIND) ||
	    rw_obj_handle_check(&w->obj, request) || !done)
		return rw_plugin_bad_arg("CollNet test",
					 "not a live CollNet request (finished already, or its "
					 "collComm closed), or done is NULL");
	rc = rw_coll_test(w->req, done, &bytes);
	if (rc == 0 && !*done)
		return 0;
	rw_live_del(request, NULL, true);
	if (rc == 0 && w->nparts) {
		size_t at = 0;

		for (int i = 0; i < w->nparts && at < w->size; i++) {
			size_t n = RW_MIN(w->parts[i].size, w->size - at);

			memcpy(w->parts[i].address, w->tmp + at, n);
			at += n;
		}
	}
	if (rc == 0 && size)
		*size = (int)RW_MIN(w->size, (size_t)INT32_MAX);
	rw_obj_close(&w->obj);
	free(w->tmp);
	free(w);
	return rc;
}

int rw_collnet_close_coll(void *coll_comm)
{
	struct rw_collnet_comm *cc;
	int rc = get_comm(coll_comm, "closeColl", &cc);

	if (rc)
		return rc;
	rw_live_del(coll_comm, NULL, true);
	rw_live_del_owned(cc); /* its requests end with it */
	rw_obj_close(&cc->obj);
	rw_coll_comm_destroy(cc->coll);
	free(cc);
	return 0;
}
