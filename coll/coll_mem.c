/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a collective's data lives and how it moves.  Host buffers are
 * reduced in place by the host kernels.  Device buffers, with transports
 * that move host memory, go through the channel's staging: a received chunk
 * lands in a host slot, is copied to device scratch and reduced there by
 * the CUDA kernels, and what must be forwarded is copied back to host
 * memory for the next send.  Device work runs on the channel's stream and
 * is waited for before the chunk counts as processed.  Nothing here calls
 * CUDA directly: kernels/rw_cuda.h and kernels/rw_reduce.h do.
 */
#include <errno.h>
#include <string.h>

#include "coll/coll_internal.h"
#include "common/rw_log.h"
#include "gpu/rw_cuda.h"

/* The public API promises ncclDataType_t / ncclRedOp_t values; the kernels
 * carry them (include/ringway.h's enums are checked in rw_api_coll.c). */
static_assert(RW_DTYPE_FLOAT8E5M2 == 11 && RW_DTYPE_COUNT == 12, "dtype values");
static_assert(RW_OP_AVG == 4 && RW_OP_COUNT == 5, "op values");

static const char *kind_str(enum rw_mem_kind k)
{
	return k == RW_MEM_DEVICE ? "device" : "host";
}

int rw_coll_mem_classify(const void *a, const void *b, enum rw_coll_mem *out)
{
	enum rw_mem_kind ka = a ? rw_cuda_mem_kind(a) : RW_MEM_HOST;
	enum rw_mem_kind kb = b ? rw_cuda_mem_kind(b) : RW_MEM_HOST;
	bool da = ka == RW_MEM_DEVICE, db = kb == RW_MEM_DEVICE;

	/* pinned and managed memory are host-addressable: the host path */
	if (a && b && da != db) {
		RW_WARN(RW_LOG_COLL,
			"coll: sendbuf %p is %s memory but recvbuf %p is %s memory: pass both on "
			"the host or both on a device",
			a, kind_str(ka), b, kind_str(kb));
		return -EINVAL;
	}
	*out = da || db ? RW_COLL_MEM_DEVICE : RW_COLL_MEM_HOST;
	return 0;
}

void rw_coll_stage_device_free(struct rw_coll_stage *s)
{
	if (s->stream)
		rw_cuda_stream_destroy(s->stream);
	rw_cuda_free(s->dev);
	rw_cuda_host_free(s->out);
	s->stream = NULL;
	s->dev = NULL;
	s->out = NULL;
	s->out_mr = NULL;
}

int rw_coll_stage_device(struct rw_coll_comm *c)
{
	size_t bytes = RW_COLL_NSLOTS * c->chunk_bytes;
	int rc;

	for (int ch = 0; ch < c->nchannels; ch++) {
		struct rw_coll_stage *s = &c->stage[ch];
		struct rw_net_comm *send = c->links[rw_link_send(ch)].comm;

		if (s->dev)
			continue;
		if (!send)
			return c->error ? c->error : -ENOTCONN;
		rc = rw_cuda_malloc((void **)&s->dev, bytes);
		if (!rc)
			rc = rw_cuda_host_alloc((void **)&s->out, bytes);
		if (!rc)
			rc = rw_cuda_stream_create(&s->stream);
		if (!rc)
			rc = rw_net_reg_mr(send, s->out, bytes, RW_PTR_HOST, &s->out_mr);
		if (rc) {
			rw_coll_stage_device_free(s);
			return rc;
		}
	}
	c->ndev_ops++;
	return 0;
}

int rw_coll_copy(const struct rw_coll_req *r, void *dst, const void *src, size_t bytes)
{
	if (!bytes || dst == src)
		return 0;
	if (r->mem == RW_COLL_MEM_DEVICE)
		return rw_cuda_memcpy(dst, src, bytes);
	memmove(dst, src, bytes);
	return 0;
}

int rw_coll_fold(const struct rw_coll_req *r, int ch, void *dst, const void *local, void *slot,
		 int slot_idx, size_t count, bool final, void *fwd_host)
{
	struct rw_coll_comm *c = r->comm;
	bool avg = final && r->a.op == RW_OP_AVG;
	unsigned int nranks = (unsigned int)c->nranks;
	size_t bytes = count * r->esize;
	struct rw_coll_stage *s = &c->stage[ch];
	const void *srcs[2] = {local, slot};
	void *scratch, *target;
	int rc;

	if (r->mem == RW_COLL_MEM_HOST) {
		if (avg)
			return rw_reduce_multi_avg(dst, srcs, 2, count, r->a.dtype, nranks);
		return rw_reduce_multi(dst, srcs, 2, count, r->a.dtype, r->redop);
	}
	scratch = s->dev + (size_t)slot_idx * c->chunk_bytes;
	target = dst ? dst : scratch;
	srcs[1] = scratch;
	rc = rw_cuda_memcpy_async(scratch, slot, bytes, s->stream);
	if (!rc)
		rc = avg ? rw_reduce_multi_avg_dev(target, srcs, 2, count, r->a.dtype, nranks,
						   s->stream)
			 : rw_reduce_multi_dev(target, srcs, 2, count, r->a.dtype, r->redop,
					       s->stream);
	if (!rc && fwd_host)
		rc = rw_cuda_memcpy_async(fwd_host, target, bytes, s->stream);
	if (!rc)
		rc = rw_cuda_stream_sync(s->stream);
	return rc;
}

int rw_coll_h2d(const struct rw_coll_req *r, int ch, void *dst, const void *slot, size_t bytes)
{
	void *stream = r->comm->stage[ch].stream;
	int rc = rw_cuda_memcpy_async(dst, slot, bytes, stream);

	return rc ? rc : rw_cuda_stream_sync(stream);
}

int rw_coll_d2h(const struct rw_coll_req *r, int ch, void *dst, const void *src, size_t bytes)
{
	void *stream = r->comm->stage[ch].stream;
	int rc = rw_cuda_memcpy_async(dst, src, bytes, stream);

	return rc ? rc : rw_cuda_stream_sync(stream);
}
